//! BIRD mini-dev Soft-F1 (`evaluation_f1.py`, spec `evaluators.md` §3.5): a graded score of
//! how much of the gold result a prediction's result holds, row by row in order.
//!
//! Values compare with Python equality ([`py_eq`](crate::exec::value::py_eq) through [`Value`]'s `Eq` and `Hash`), as the
//! reference compares what `sqlite3` returns. The reference prints 100 × the mean; sqlgate
//! keeps the 0..1 scale of its other metrics.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use crate::exec::{Execution, QueryRunner, ResultSet, Value};

/// Soft-F1 of one prediction result against one gold result (rows of values).
pub fn soft_f1(pred: &[Vec<Value>], gold: &[Vec<Value>]) -> f64 {
    if pred.is_empty() && gold.is_empty() {
        return 1.0;
    }
    let pred = first_occurrences(pred);
    let gold = first_occurrences(gold);
    // Summed one term at a time in the reference's order (gold rows, then the unpaired
    // prediction rows), so the totals are the floats Python's `sum` gives up to 3.11 (3.12 sums
    // floats with compensation, which can move the last bits).
    let (mut tp, mut fp, mut fn_) = (0.0, 0.0, 0.0);
    for (i, gold_row) in gold.iter().enumerate() {
        let Some(pred_row) = pred.get(i) else {
            fn_ += 1.0;
            continue;
        };
        // The reference divides by the gold row's width: a row without columns raises, and
        // any exception scores the item 0 (SQLite never returns one).
        if gold_row.is_empty() {
            return 0.0;
        }
        let n = gold_row.len() as f64;
        let in_gold = pred_row.iter().filter(|v| gold_row.contains(v)).count();
        let truth_only = gold_row.iter().filter(|v| !pred_row.contains(v)).count();
        tp += in_gold as f64 / n;
        fp += (pred_row.len() - in_gold) as f64 / n;
        fn_ += truth_only as f64 / n;
    }
    for _ in gold.len()..pred.len() {
        fp += 1.0;
    }
    let ratio = |num: f64, den: f64| if den > 0.0 { num / den } else { 0.0 };
    let precision = ratio(tp, tp + fp);
    let recall = ratio(tp, tp + fn_);
    // `2 * precision * recall / (precision + recall)`, evaluated left to right as Python does.
    ratio(2.0 * precision * recall, precision + recall)
}

/// The rows without repeats, each kept at its first occurrence (`list(dict.fromkeys(rows))`).
fn first_occurrences(rows: &[Vec<Value>]) -> Vec<&[Value]> {
    let mut seen = HashSet::new();
    rows.iter()
        .map(Vec::as_slice)
        .filter(|row| seen.insert(*row))
        .collect()
}

/// A case's Soft-F1: the prediction and each gold alternative executed on `db` as the reference
/// does (prediction first, then gold, both within `pair_budget` together), the best value over
/// the alternatives. Any failure of either side (an error, a timeout, text that is not UTF-8)
/// scores 0. The runner's executions are the ones EX already asked for, so nothing runs twice.
pub fn case_soft_f1(
    gold: &[String],
    db: &Path,
    pred_sql: &str,
    pair_budget: Option<Duration>,
    runner: &dyn QueryRunner,
) -> f64 {
    let pred = runner.pred(db, pred_sql);
    let Some(pred_rows) = strict_rows(&pred) else {
        return 0.0;
    };
    gold.iter()
        .map(|gold_sql| {
            let gold = runner.gold(db, gold_sql);
            let within_budget = pair_budget.is_none_or(|b| pred.elapsed + gold.elapsed <= b);
            match strict_rows(&gold) {
                Some(gold_rows) if within_budget => soft_f1(&pred_rows.rows, &gold_rows.rows),
                _ => 0.0,
            }
        })
        .fold(0.0, f64::max)
}

/// The result of an execution that ran and decoded under the `strict` policy (spec §0.3).
fn strict_rows(exec: &Execution) -> Option<&ResultSet> {
    exec.result.as_deref().ok().filter(|rs| !rs.lossy_text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::ExecErrorKind;
    use crate::metrics::ex::testkit::{rows, FakeRunner};

    type Rows = Vec<Vec<Value>>;

    fn int(i: i64) -> Value {
        Value::Int(i)
    }

    fn text(s: &str) -> Value {
        Value::Text(s.to_string())
    }

    fn close(actual: f64, expected: f64) -> bool {
        (actual - expected).abs() < 1e-6
    }

    /// The vectors of spec §3.5, (prediction, gold, Soft-F1).
    #[test]
    fn spec_vectors() {
        let vectors: Vec<(Rows, Rows, f64)> = vec![
            (
                vec![vec![int(1), text("a")], vec![int(2), text("b")]],
                vec![vec![int(1), text("a")], vec![int(2), text("b")]],
                1.0,
            ),
            (
                vec![vec![int(2), text("b")], vec![int(1), text("a")]],
                vec![vec![int(1), text("a")], vec![int(2), text("b")]],
                0.0,
            ),
            (
                vec![vec![text("a"), int(1)], vec![text("b"), int(2)]],
                vec![vec![int(1), text("a")], vec![int(2), text("b")]],
                1.0,
            ),
            (
                vec![vec![int(1), text("a"), text("x")]],
                vec![vec![int(1), text("a")]],
                0.8,
            ),
            (vec![vec![int(1)]], vec![vec![int(1), text("a")]], 2.0 / 3.0),
            (
                vec![vec![int(1)], vec![int(2)]],
                vec![vec![int(1)]],
                2.0 / 3.0,
            ),
            (vec![], vec![vec![int(1)]], 0.0),
            (vec![vec![int(1)]], vec![], 0.0),
            (
                vec![vec![int(1)], vec![int(1)], vec![int(2)]],
                vec![vec![int(1)], vec![int(2)]],
                1.0,
            ),
            (vec![vec![int(1), int(1), int(1)]], vec![vec![int(1)]], 1.0),
            (
                vec![vec![int(1), text("x")]],
                vec![vec![int(1), text("a")]],
                0.5,
            ),
        ];
        assert_eq!(vectors.len(), 11);
        for (i, (pred, gold, expected)) in vectors.iter().enumerate() {
            let actual = soft_f1(pred, gold);
            assert!(
                close(actual, *expected),
                "vector {i}: {actual} != {expected}"
            );
        }
    }

    #[test]
    fn both_empty_score_one() {
        assert_eq!(soft_f1(&[], &[]), 1.0);
    }

    #[test]
    fn values_compare_with_python_equality() {
        // 1 == 1.0 and None == None, both in rows (dedup) and inside a row (membership).
        let pred = vec![
            vec![Value::Real(1.0), Value::Null],
            vec![int(1), Value::Null],
        ];
        let gold = vec![vec![int(1), Value::Null]];
        assert_eq!(soft_f1(&pred, &gold), 1.0);
        // Text "1" is not the integer 1, nor a blob the same bytes as text.
        let pred = vec![vec![text("1"), Value::Blob(b"a".to_vec())]];
        let gold = vec![vec![int(1), text("a")]];
        assert_eq!(soft_f1(&pred, &gold), 0.0);
    }

    #[test]
    fn duplicates_keep_their_first_position() {
        // Deduplicated pred: (2,), (1,) — paired with gold (1,), (2,) by position: no match.
        let pred = vec![vec![int(2)], vec![int(1)], vec![int(2)]];
        let gold = vec![vec![int(1)], vec![int(2)]];
        assert_eq!(soft_f1(&pred, &gold), 0.0);
    }

    #[test]
    fn a_gold_row_without_columns_scores_zero_as_the_reference_raises() {
        assert_eq!(soft_f1(&[vec![int(1)]], &[vec![]]), 0.0);
    }

    fn golds(sqls: &[&str]) -> Vec<String> {
        sqls.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_case_takes_the_best_gold_alternative_and_a_failing_one_scores_zero() {
        let db = Path::new("db.sqlite");
        let runner = FakeRunner::new()
            .with_pred("P", rows(vec![vec![int(1)]]))
            .with_gold("A", rows(vec![vec![int(2)]]))
            .with_gold("B", rows(vec![vec![int(1)], vec![int(2)]]))
            .with_gold_failure("BROKEN", ExecErrorKind::Runtime, "no such table");
        let value = case_soft_f1(&golds(&["A", "BROKEN", "B"]), db, "P", None, &runner);
        assert!(close(value, 2.0 / 3.0), "{value}");
        assert_eq!(
            case_soft_f1(&golds(&["A", "BROKEN"]), db, "P", None, &runner),
            0.0
        );
        // The prediction failing scores 0 whatever the gold.
        assert_eq!(case_soft_f1(&golds(&["B"]), db, "NOPE", None, &runner), 0.0);
    }

    #[test]
    fn strict_decoding_and_the_pair_budget_score_zero() {
        let db = Path::new("db.sqlite");
        let lossy = ResultSet {
            lossy_text: true,
            ..rows(vec![vec![int(1)]])
        };
        let runner = FakeRunner::new()
            .with_pred("LOSSY", lossy)
            .with_pred_taking("SLOW", rows(vec![vec![int(1)]]), Duration::from_secs(2))
            .with_gold("G", rows(vec![vec![int(1)]]));
        let gold = golds(&["G"]);
        assert_eq!(case_soft_f1(&gold, db, "LOSSY", None, &runner), 0.0);
        assert_eq!(case_soft_f1(&gold, db, "SLOW", None, &runner), 1.0);
        let budget = Some(Duration::from_secs(1));
        assert_eq!(case_soft_f1(&gold, db, "SLOW", budget, &runner), 0.0);
    }
}
