//! How the filter is calibrated (docs/paraphrase.md's tables): on a benchmark's golds with their
//! questions, the verbalizer's own paraphrases (faithful) and deliberately wrong ones (the next
//! gold's question, the readings of the gold with one condition negated or flipped, or one
//! aggregate swapped), each scored against the question and judged as [`judge`] does.

use sqlgate_eval::error::AskError;
use sqlgate_eval::metrics::sqlmorph::Embedder;

use super::{judge, similarities, verbalizations, wrong_queries, SchemaNames, Verdict};
use crate::mutate::registry::Operator;
use crate::mutate::DEFAULT_SEED;

/// The paraphrases of one kind, each with its similarity and the gold it is judged against.
pub struct Kind {
    /// As docs/paraphrase.md's tables name it.
    pub name: &'static str,
    /// (cs, gold SQL, paraphrase).
    pub scored: Vec<(f64, String, String)>,
}

impl Kind {
    /// The share kept at `threshold`: by the threshold alone, or (`checked`) by the threshold
    /// and the agreement check.
    pub fn kept(&self, threshold: f64, checked: bool) -> f64 {
        let kept = self
            .scored
            .iter()
            .filter(|(cs, sql, text)| {
                if checked {
                    judge(*cs, threshold, sql, text, &SchemaNames::default()) == Verdict::Kept
                } else {
                    *cs >= threshold
                }
            })
            .count();
        kept as f64 / self.scored.len().max(1) as f64
    }

    /// The kind's row of a calibration table: n, percentiles of `cs`, and the shares kept at
    /// each of `thresholds` (threshold alone / with the agreement check).
    pub fn row(&self, thresholds: &[f64]) -> String {
        let mut cs: Vec<f64> = self.scored.iter().map(|(cs, _, _)| *cs).collect();
        cs.sort_by(f64::total_cmp);
        let percentile = |p: usize| cs.get(cs.len().saturating_sub(1) * p / 100).copied();
        let percentiles: Vec<String> = [5, 25, 50, 75, 95]
            .iter()
            .map(|p| percentile(*p).map_or_else(|| "-".to_string(), |v| format!("{v:.2}")))
            .collect();
        let cells: Vec<String> = thresholds
            .iter()
            .map(|t| {
                format!(
                    "{:.0}% / {:.0}%",
                    100.0 * self.kept(*t, false),
                    100.0 * self.kept(*t, true)
                )
            })
            .collect();
        format!(
            "| {} | {} | {} | {} |",
            self.name,
            cs.len(),
            percentiles.join(" | "),
            cells.join(" | ")
        )
    }
}

/// The four kinds for `golds` (first gold query, question), k = 5 paraphrases each, seed 42,
/// scored by `embedder`. Another gold's question is the next gold's (the previous one's for
/// the last).
pub fn calibrate(
    embedder: &dyn Embedder,
    golds: &[(String, String)],
) -> Result<[Kind; 4], AskError> {
    let names = SchemaNames::default();
    let mut kinds = [
        "faithful (verbalizer)",
        "another gold's question",
        "negated condition",
        "different aggregate",
    ]
    .map(|name| Kind {
        name,
        scored: Vec::new(),
    });
    for (i, (sql, question)) in golds.iter().enumerate() {
        let id = i.to_string();
        let paraphrases =
            |sql: &str| verbalizations(&id, sql, question, 5, DEFAULT_SEED, None, &names);
        let Ok(own) = paraphrases(sql) else {
            continue;
        };
        let other = if i + 1 < golds.len() {
            i + 1
        } else {
            i.saturating_sub(1)
        };
        let mut texts: [Vec<String>; 4] = [own, Vec::new(), Vec::new(), Vec::new()];
        if other != i {
            texts[1].push(golds[other].1.clone());
        }
        for (op, mutant) in wrong_queries(&id, sql) {
            let kind = match op {
                Operator::WhereConditionFlip => 2,
                Operator::AggregationSwap => 3,
                _ => continue,
            };
            texts[kind].extend(paraphrases(&mutant).unwrap_or_default());
        }
        for (kind, texts) in kinds.iter_mut().zip(texts) {
            let scores = similarities(embedder, question, &texts)?;
            let judged = scores.into_iter().zip(texts);
            kind.scored
                .extend(judged.map(|(cs, text)| (cs, sql.clone(), text)));
        }
    }
    Ok(kinds)
}
