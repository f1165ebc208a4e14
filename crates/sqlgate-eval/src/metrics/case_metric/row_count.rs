//! Result-row-count accuracy: whether the prediction returns as many rows as the gold. A
//! cheap, engine-independent signal that tells a missing filter or join (too many rows) or a
//! lost group (too few) apart from a wrong column, where EX fails either way.

use super::{CaseContext, Definition, MetricError};

/// The registry's entry.
pub const METRIC: Definition = Definition {
    name: "row_count",
    error_code: "row_count_error",
    definition: "1 when the predicted query returns as many rows as a gold query on the \
                 case's database, else 0 (also when the prediction fails).",
    score,
};

fn score(case: &CaseContext<'_>) -> Result<f64, MetricError> {
    let predicted = case.runner.pred(case.database, case.sql);
    let Ok(predicted) = predicted.result else {
        return Ok(0.0);
    };
    let mut failures = Vec::new();
    let mut matched = false;
    for gold in case.gold {
        match case.runner.gold(case.database, gold).result {
            Ok(rows) => matched |= rows.rows.len() == predicted.rows.len(),
            Err(error) => failures.push(error.message),
        }
    }
    if failures.len() == case.gold.len() {
        return Err(MetricError(format!(
            "the gold query does not run: {}",
            failures.first().map_or("no gold query", String::as_str)
        )));
    }
    Ok(if matched { 1.0 } else { 0.0 })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::exec::{ExecErrorKind, Value};
    use crate::metrics::case_metric::CaseMetric;
    use crate::metrics::ex::testkit::{rows, FakeRunner};

    fn value(runner: &FakeRunner, gold: &[&str], sql: &str) -> Result<f64, String> {
        let gold: Vec<String> = gold.iter().map(|g| g.to_string()).collect();
        let metric = CaseMetric::named("row_count").unwrap();
        metric
            .score(&gold, Path::new("db"), Some(sql), runner)
            .map_err(|e| e.0)
    }

    #[test]
    fn counts_rows_not_values_and_takes_the_best_gold() {
        let three = || rows(vec![vec![Value::Int(1)]; 3]);
        let runner = FakeRunner::new()
            .with_gold("g3", three())
            .with_gold("g2", rows(vec![vec![Value::Int(7)]; 2]))
            .with_pred("other values", rows(vec![vec![Value::Int(9)]; 3]))
            .with_pred("two", rows(vec![vec![Value::Int(1)]; 2]))
            .with_pred_failure("bad", ExecErrorKind::Prepare, "no such table")
            .with_gold_failure("broken", ExecErrorKind::Prepare, "no such column");
        assert_eq!(value(&runner, &["g3"], "other values"), Ok(1.0));
        assert_eq!(value(&runner, &["g3"], "two"), Ok(0.0));
        assert_eq!(value(&runner, &["g3", "g2"], "two"), Ok(1.0));
        assert_eq!(value(&runner, &["g3"], "bad"), Ok(0.0));
        assert_eq!(value(&runner, &["broken", "g2"], "two"), Ok(1.0));
        let error = value(&runner, &["broken"], "two").unwrap_err();
        assert!(error.contains("no such column"), "{error}");
    }
}
