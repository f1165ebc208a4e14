//! `duplicate`: one question asked twice on one database with different golds, so that at
//! least one of the cases marks a right answer wrong.

use std::collections::BTreeMap;

use sqlgate_eval::loaders::Case;

use super::{Finding, Kind};

/// Findings for every case whose question (case and spacing aside) another case on its
/// database asks with another gold, by case index.
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
        for &i in members {
            let others: Vec<&str> = members
                .iter()
                .filter(|&&j| j != i)
                .map(|&j| cases[j].id.as_str())
                .collect();
            found.push((
                i,
                Finding {
                    id: cases[i].id.clone(),
                    db: cases[i].db.clone(),
                    kind: Kind::Duplicate,
                    detail: format!(
                        "the same question as case(s) {} with a different gold",
                        others.join(", ")
                    ),
                },
            ));
        }
    }
    found
}

/// Whitespace runs as one space, trimmed.
fn normalized(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
