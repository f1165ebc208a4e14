//! Fine-grained metrics of one case: the prediction against each gold alternative, keeping the
//! best F1 (ties: the first alternative). The spec is silent on alternatives [R]; a prediction
//! equal to any acceptable gold scores 1/1/1, as EX does.

use std::collections::BTreeMap;
use std::path::Path;

use super::{fine_grained_executions, MetricError, Options, Regime, Scores};
use crate::exec::QueryRunner;

/// Scores under each regime, keyed by the regime's name (`EC-EC-IE`).
pub fn case_scores(
    gold: &[String],
    db: &Path,
    pred_sql: &str,
    regimes: &[Regime],
    options: &Options<'_>,
    runner: &dyn QueryRunner,
) -> Result<BTreeMap<String, Scores>, MetricError> {
    let pred = runner.pred(db, pred_sql);
    let golds: Vec<_> = gold.iter().map(|sql| runner.gold(db, sql)).collect();
    let mut scores = BTreeMap::new();
    for &regime in regimes {
        let mut best: Option<Scores> = None;
        for gold in &golds {
            let candidate = fine_grained_executions(gold, &pred, regime, options)?;
            if best.is_none_or(|b| candidate.f1 > b.f1) {
                best = Some(candidate);
            }
        }
        if let Some(best) = best {
            scores.insert(regime.to_string(), best);
        }
    }
    Ok(scores)
}
