//! `duplicate`: one question asked in several cases on one database with different golds, so
//! that at least one of the cases marks a right answer wrong.

use std::collections::BTreeMap;

use sqlgate_eval::loaders::Case;

use super::{Finding, Kind};

/// The most case ids a `duplicate` finding lists; it counts the rest.
const MAX_LISTED: usize = 20;

/// One finding per question (case and spacing aside) that several cases on one database ask
/// with different golds, on the first of those cases, by its index: its size is bounded
/// however many cases share the question.
pub(super) fn findings(cases: &[Case]) -> Vec<(usize, Finding)> {
    let mut groups: BTreeMap<(&str, String), Vec<usize>> = BTreeMap::new();
    for (index, case) in cases.iter().enumerate() {
        let question = normalized(&case.question).to_lowercase();
        if !question.is_empty() && !case.gold.is_empty() {
            groups.entry((&case.db, question)).or_default().push(index);
        }
    }
    let mut found = Vec::new();
    for members in groups.values() {
        let gold = |i: usize| {
            cases[i]
                .gold
                .iter()
                .map(|sql| normalized(sql))
                .collect::<Vec<_>>()
        };
        let first = gold(members[0]);
        if members.iter().all(|&i| gold(i) == first) {
            continue;
        }
        let listed: Vec<&str> = members
            .iter()
            .take(MAX_LISTED)
            .map(|&i| cases[i].id.as_str())
            .collect();
        let more = match members.len() - listed.len() {
            0 => String::new(),
            unlisted => format!(" and {unlisted} more"),
        };
        let case = &cases[members[0]];
        found.push((
            members[0],
            Finding {
                id: case.id.clone(),
                db: case.db.clone(),
                kind: Kind::Duplicate,
                detail: format!(
                    "{} cases ask the same question with different golds: {}{more}",
                    members.len(),
                    listed.join(", ")
                ),
            },
        ));
    }
    found
}

/// Whitespace runs as one space, trimmed.
fn normalized(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10,000 cases asking one question made 691 MB of JSON when each listed all the others:
    /// now one finding of bounded size.
    #[test]
    fn many_cases_sharing_a_question_make_one_bounded_finding() {
        let template = crate::audit::tests::case("c0", "Who scored most?", &["SELECT 0"]);
        let cases: Vec<Case> = (0..10_000)
            .map(|k| Case {
                id: format!("c{k}"),
                gold: vec![format!("SELECT {}", k % 2)],
                ..template.clone()
            })
            .collect();
        let found = findings(&cases);
        assert_eq!(found.len(), 1);
        let (index, finding) = &found[0];
        assert_eq!((*index, finding.id.as_str()), (0, "c0"));
        assert!(
            finding
                .detail
                .starts_with("10000 cases ask the same question with different golds: c0, c1, c2,"),
            "{}",
            finding.detail
        );
        assert!(
            finding.detail.ends_with(", c19 and 9980 more"),
            "{}",
            finding.detail
        );
        let json =
            serde_json::to_string(&found.iter().map(|(_, f)| f).collect::<Vec<_>>()).unwrap();
        assert!(json.len() < 400, "{} bytes", json.len());
    }
}
