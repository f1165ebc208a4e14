//! Modes `bird` and `bird-rowsorted`: BIRD `evaluation.py` set comparison (spec §3.1, §4).

use std::collections::HashSet;
use std::time::Duration;

use crate::exec::value::{py_str, Value};
use crate::exec::Execution;

use super::{
    any_alternative, blame, usable, CaseInput, Decoding, Failure, FailureKind, ModeOptions,
    Outcome, PredRuns, QueryRunner, Side, Verdict,
};

/// How rows enter the set comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rows {
    /// `set(pred) == set(gold)` on positional tuples (the official script).
    Positional,
    /// Every row's values first sorted by `str(v)` (the PR #162 variant).
    Sorted,
}

pub(super) fn evaluate(
    opts: &ModeOptions,
    case: &CaseInput,
    pred_sql: &str,
    runner: &dyn QueryRunner,
    rows: Rows,
) -> Outcome {
    let db = &case.db_files[0];
    let mut preds = PredRuns::new(runner);
    any_alternative(case.gold, |gold| {
        // The reference executes the prediction, then the gold, under one pair budget.
        let pred = preds.get(db, pred_sql);
        // The reference stops at a failed prediction; the gold still runs to see whose it is.
        let pred_failed = |failure| {
            Outcome::failed(
                blame(failure, &runner.gold(db, gold), Decoding::Strict),
                0.0,
            )
        };
        if let Some(failure) = over_budget(Side::Pred, opts.pair_budget, &pred, None) {
            return pred_failed(failure);
        }
        let pred_rows = match usable(Side::Pred, &pred, Decoding::Strict) {
            Ok(rs) => rs,
            Err(failure) => return pred_failed(failure),
        };
        let gold = runner.gold(db, gold);
        if let Some(failure) = over_budget(Side::Gold, opts.pair_budget, &gold, Some(&pred)) {
            return Outcome::failed(failure, 0.0);
        }
        let gold_rows = match usable(Side::Gold, &gold, Decoding::Strict) {
            Ok(rs) => rs,
            Err(failure) => return Outcome::failed(failure, 0.0),
        };
        if same_row_sets(&pred_rows.rows, &gold_rows.rows, rows) {
            Outcome::new(Verdict::Correct, 1.0)
        } else {
            Outcome::new(Verdict::Incorrect, 0.0)
        }
    })
}

/// The pair deadline falls during `exec` when the time spent so far exceeds the budget.
fn over_budget(
    side: Side,
    budget: Option<Duration>,
    exec: &Execution,
    before: Option<&Execution>,
) -> Option<Failure> {
    let budget = budget?;
    let spent = exec.elapsed + before.map_or(Duration::ZERO, |e| e.elapsed);
    (spent > budget).then(|| {
        let message = format!(
            "prediction and gold together exceeded the {:.3}s pair budget ({:.3}s spent)",
            budget.as_secs_f64(),
            spent.as_secs_f64()
        );
        Failure::of(side, FailureKind::Timeout, message)
    })
}

fn same_row_sets(pred: &[Vec<Value>], gold: &[Vec<Value>], rows: Rows) -> bool {
    match rows {
        Rows::Positional => {
            let pred: HashSet<&[Value]> = pred.iter().map(Vec::as_slice).collect();
            let gold: HashSet<&[Value]> = gold.iter().map(Vec::as_slice).collect();
            pred == gold
        }
        Rows::Sorted => {
            let pred: HashSet<Vec<&Value>> = pred.iter().map(|r| sort_by_str(r)).collect();
            let gold: HashSet<Vec<&Value>> = gold.iter().map(|r| sort_by_str(r)).collect();
            pred == gold
        }
    }
}

/// `tuple(sorted(row, key=str))`: a stable sort on Python `str()`.
fn sort_by_str(row: &[Value]) -> Vec<&Value> {
    let mut keyed: Vec<_> = row.iter().map(|v| (py_str(v), v)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed.into_iter().map(|(_, v)| v).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rowsorted_sort_is_stable_on_equal_strings() {
        let row = [Value::Text("1".into()), Value::Int(1), Value::Real(0.5)];
        let sorted = sort_by_str(&row);
        assert!(matches!(sorted[0], Value::Real(_)));
        assert!(matches!(sorted[1], Value::Text(_)));
        assert!(matches!(sorted[2], Value::Int(_)));
        // ('1', 1) and (1, '1') sort to different tuples, so the sets differ.
        let a = vec![vec![Value::Text("1".into()), Value::Int(1)]];
        let b = vec![vec![Value::Int(1), Value::Text("1".into())]];
        assert!(!same_row_sets(&a, &b, Rows::Sorted));
        assert!(same_row_sets(&a, &a, Rows::Sorted));
    }
}
