//! Metrics of the TQA families, pure functions of per-case facts:
//! - schema retrieval (SQLMorph Table VIII): false-positive rate and schema-linking recall of
//!   the schema elements a system says it retrieved, against those the gold query names;
//! - ΔEX per family (SQLMorph Table VII; Riahi 2025 thesis Tables 3.7 and 4.6): each generated
//!   case against its seed, or against the same seed's case in a control family (TQA's O/O).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use std::ops::ControlFlow;

use sqlparser::ast::{visit_expressions, visit_relations, Expr, ObjectName, ObjectNamePart};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

/// Schema elements as bare lowercased names, tables and columns in one set (a reported
/// `table.column` counts as its column), as the paper counts retrieved schema elements.
pub type Elements = BTreeSet<String>;

/// The tables and columns a gold query names.
pub fn gold_elements(sql: &str) -> Result<Elements, GoldParseError> {
    let statements = Parser::parse_sql(&SQLiteDialect {}, sql)?;
    let mut names = Vec::new();
    let _ = visit_relations(&statements, |name: &ObjectName| {
        if let Some(ObjectNamePart::Identifier(ident)) = name.0.last() {
            names.push(ident.value.clone());
        }
        ControlFlow::<()>::Continue(())
    });
    let _ = visit_expressions(&statements, |expr: &Expr| {
        match expr {
            Expr::Identifier(ident) => names.push(ident.value.clone()),
            Expr::CompoundIdentifier(parts) => {
                names.extend(parts.last().map(|p| p.value.clone()));
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(elements(&names))
}

/// A gold query the parser cannot read: it names no elements, and the case's retrieval rates
/// are not computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(transparent)]
pub struct GoldParseError(#[from] sqlparser::parser::ParserError);

/// One case's retrieval scores. A rate whose denominator is empty is `None` (not computable,
/// never a silent 0 or 1).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Retrieval {
    /// Retrieved elements the gold does not use, over all retrieved.
    pub false_positive_rate: Option<f64>,
    /// Gold elements retrieved, over all gold elements.
    pub recall: Option<f64>,
}

/// Normalises reported names (trimmed, lowercased, quotes and any `table.` dropped) into a set.
pub fn elements<S: AsRef<str>>(names: &[S]) -> Elements {
    names
        .iter()
        .map(|n| {
            let name = n.as_ref().trim().replace(['"', '`', '[', ']'], "");
            name.rsplit('.').next().unwrap_or_default().to_lowercase()
        })
        .filter(|n| !n.is_empty())
        .collect()
}

/// One case's rates: `retrieved` (the system's reported elements) against `gold`'s.
pub fn retrieval(gold: &Elements, retrieved: &Elements) -> Retrieval {
    let hits = retrieved.intersection(gold).count();
    let rate = |num: usize, den: usize| (den > 0).then(|| num as f64 / den as f64);
    Retrieval {
        false_positive_rate: rate(retrieved.len() - hits, retrieved.len()),
        recall: rate(hits, gold.len()),
    }
}

/// Mean rates over cases (per setting), each over the cases where it was computable, with the
/// number of cases where it was not.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RetrievalSummary {
    /// Cases summarised.
    pub n: usize,
    /// Mean false positive rate, `None` when no case had one.
    pub false_positive_rate: Option<f64>,
    /// Mean recall, `None` when no case had one.
    pub recall: Option<f64>,
    /// Cases missing at least one of the two rates.
    pub not_computable: usize,
}

/// The means over `cases`, each over the cases where it was computable.
pub fn summarize(cases: &[Retrieval]) -> RetrievalSummary {
    let mean = |values: Vec<f64>| {
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    let fpr: Vec<f64> = cases.iter().filter_map(|c| c.false_positive_rate).collect();
    let recall: Vec<f64> = cases.iter().filter_map(|c| c.recall).collect();
    RetrievalSummary {
        n: cases.len(),
        not_computable: cases
            .iter()
            .filter(|c| c.false_positive_rate.is_none() || c.recall.is_none())
            .count(),
        false_positive_rate: mean(fpr),
        recall: mean(recall),
    }
}

/// What the ΔEX report needs to know about a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseFact {
    /// The case's id.
    pub id: String,
    /// The `family` tag of a generated case; `None` for a benchmark case.
    pub family: Option<String>,
    /// The `seed` tag: the id of the benchmark case it came from.
    pub seed: Option<String>,
    /// EX = 1 under the run's mode.
    pub correct: bool,
}

/// ΔEX of one family against its baseline, over the pairs found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeltaEx {
    /// Cases paired with their baseline.
    pub pairs: usize,
    /// EX of the family's cases over the pairs.
    pub ex: f64,
    /// EX of their baselines over the same pairs.
    pub baseline_ex: f64,
    /// `ex - baseline_ex`.
    pub delta: f64,
    /// Baseline wrong, case right (ΔEX = +1).
    pub gained: usize,
    /// Baseline right, case wrong (ΔEX = −1).
    pub lost: usize,
    /// Pairs where both are right.
    pub both_right: usize,
    /// Pairs where both are wrong.
    pub both_wrong: usize,
    /// Cases whose baseline is missing from the facts: shown, never silently dropped.
    pub unpaired: Vec<String>,
}

/// ΔEX of every family (except the control itself) in `facts`: each case against its seed
/// case, or, with `control = Some("tqa-oo")`, against the control family's case of the same seed.
pub fn delta_ex_by_family(facts: &[CaseFact], control: Option<&str>) -> BTreeMap<String, DeltaEx> {
    let seeds: HashMap<&str, bool> = facts
        .iter()
        .filter(|f| f.family.is_none())
        .map(|f| (f.id.as_str(), f.correct))
        .collect();
    let controls: HashMap<&str, bool> = facts
        .iter()
        .filter(|f| f.family.as_deref() == control && control.is_some())
        .filter_map(|f| Some((f.seed.as_deref()?, f.correct)))
        .collect();
    let mut out: BTreeMap<String, DeltaEx> = BTreeMap::new();
    for fact in facts {
        let Some(family) = fact.family.as_deref() else {
            continue;
        };
        if Some(family) == control {
            continue;
        }
        let entry = out.entry(family.to_string()).or_default();
        let seed = fact.seed.as_deref().unwrap_or_default();
        let baseline = match control {
            Some(_) => controls.get(seed),
            None => seeds.get(seed),
        };
        let Some(&baseline) = baseline else {
            entry.unpaired.push(fact.id.clone());
            continue;
        };
        entry.pairs += 1;
        match (baseline, fact.correct) {
            (false, true) => entry.gained += 1,
            (true, false) => entry.lost += 1,
            (true, true) => entry.both_right += 1,
            (false, false) => entry.both_wrong += 1,
        }
    }
    for delta in out.values_mut() {
        if delta.pairs > 0 {
            let n = delta.pairs as f64;
            delta.ex = (delta.gained + delta.both_right) as f64 / n;
            delta.baseline_ex = (delta.lost + delta.both_right) as f64 / n;
            delta.delta = delta.ex - delta.baseline_ex;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retrieval_rates_follow_table_viii() {
        let gold = gold_elements(
            "SELECT T1.element FROM atom AS T1 JOIN bond ON T1.molecule_id = bond.molecule_id",
        )
        .unwrap();
        assert_eq!(gold, elements(&["atom", "bond", "element", "molecule_id"]));
        let retrieved = elements(&["ATOM", "\"atom\".\"element\"", "molecule", "connected"]);
        let r = retrieval(&gold, &retrieved);
        assert_eq!(r.false_positive_rate, Some(0.5));
        assert_eq!(r.recall, Some(2.0 / 4.0));
        let nothing = retrieval(&gold, &Elements::new());
        assert_eq!(nothing.false_positive_rate, None);
        assert_eq!(nothing.recall, Some(0.0));
        let summary = summarize(&[r, nothing]);
        assert_eq!(summary.not_computable, 1);
        assert_eq!(summary.false_positive_rate, Some(0.5));
        assert_eq!(summary.recall, Some(1.0 / 4.0));
    }

    fn fact(id: &str, family: Option<&str>, seed: Option<&str>, correct: bool) -> CaseFact {
        CaseFact {
            id: id.into(),
            family: family.map(Into::into),
            seed: seed.map(Into::into),
            correct,
        }
    }

    #[test]
    fn delta_ex_pairs_each_case_with_its_seed_or_control() {
        let facts = [
            fact("q1", None, None, true),
            fact("q2", None, None, false),
            fact("q1::tqa-oo::n3", Some("tqa-oo"), Some("q1"), true),
            fact("q2::tqa-oo::n3", Some("tqa-oo"), Some("q2"), true),
            fact("q1::tqa-ll::n3", Some("tqa-ll"), Some("q1"), false),
            fact("q2::tqa-ll::n3", Some("tqa-ll"), Some("q2"), true),
            fact("q9::tqa-ll::n3", Some("tqa-ll"), Some("q9"), true),
        ];
        let by_seed = delta_ex_by_family(&facts, None);
        let ll = &by_seed["tqa-ll"];
        assert_eq!((ll.pairs, ll.gained, ll.lost), (2, 1, 1));
        assert_eq!(ll.delta, 0.0);
        assert_eq!(ll.unpaired, ["q9::tqa-ll::n3"]);
        assert_eq!(by_seed["tqa-oo"].delta, 0.5);
        let by_control = delta_ex_by_family(&facts, Some("tqa-oo"));
        assert!(!by_control.contains_key("tqa-oo"));
        let ll = &by_control["tqa-ll"];
        assert_eq!((ll.pairs, ll.both_right, ll.lost), (2, 1, 1));
        assert_eq!((ll.ex, ll.baseline_ex, ll.delta), (0.5, 1.0, -0.5));
    }
}
