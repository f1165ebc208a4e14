//! `sqlgate calibrate` and `sqlgate score --metrics` end to end on the demo.

use serde_json::Value;

use crate::support::{demo, sqlgate};

const OPERATORS: [&str; 15] = [
    "projection_drop",
    "where_predicate_delete",
    "where_remove",
    "where_condition_flip",
    "where_strengthen",
    "where_weaken",
    "join_break",
    "aggregation_swap",
    "add_star_wildcard",
    "having_condition_flip",
    "having_remove",
    "join_type_to_left",
    "limit_increase",
    "limit_decrease",
    "distinct_toggle",
];

#[test]
fn calibrate_demo_table_has_one_row_per_operator() {
    let suite = demo("suite.toml");
    let regimes = "EC-EC-IE,EC-EC-PE,NC-PC";
    let report = sqlgate()
        .args([
            "calibrate",
            "--gold",
            suite.to_str().unwrap(),
            "--regimes",
            regimes,
            "--format",
            "json",
        ])
        .run()
        .assert_success()
        .json();
    assert_eq!(
        report["regimes"],
        serde_json::json!(["EC-EC-IE", "EC-EC-PE", "NC-PC"])
    );
    let mutants = report["mutants"].as_array().unwrap();
    let table = report["table"].as_array().unwrap();
    let names: Vec<&str> = table
        .iter()
        .map(|r| r["operator"].as_str().unwrap())
        .collect();
    assert_eq!(names, OPERATORS);
    for row in table {
        let op = &row["operator"];
        let of_op: Vec<&Value> = mutants.iter().filter(|m| &m["operator"] == op).collect();
        let failed = of_op.iter().filter(|m| m["exec_error"].is_string()).count();
        assert_eq!(row["exec_errors"], failed);
        assert_eq!(row["mutants"], of_op.len() - failed);
        if row["mutants"] == 0 {
            assert!(row["delta_ex"].is_null());
            continue;
        }
        for regime in ["EC-EC-IE", "EC-EC-PE", "NC-PC"] {
            let deltas = &row["deltas"][regime];
            for metric in ["exp", "exr", "f1"] {
                let delta = deltas[metric].as_f64().unwrap();
                assert!((-1.0..=0.0).contains(&delta), "{op} {regime} {metric}");
            }
        }
    }
    // Mutants that return the gold's rows score 1/1/1 in every regime.
    let identical: Vec<&Value> = mutants.iter().filter(|m| m["ex"] == true).collect();
    assert!(!identical.is_empty());
    for mutant in identical {
        for scores in mutant["scores"].as_object().unwrap().values() {
            assert_eq!(
                scores,
                &serde_json::json!({"exp": 1.0, "exr": 1.0, "f1": 1.0})
            );
        }
    }
    assert!(report["contradictions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["reason"] != "unexplained"));
}

#[test]
fn calibrate_text_prints_the_table_and_the_contradictions() {
    let suite = demo("suite.toml");
    let output = sqlgate()
        .args(["calibrate", "--gold", suite.to_str().unwrap()])
        .run();
    output.assert_success();
    let text = &output.stdout;
    for op in OPERATORS {
        assert!(text.lines().any(|l| l.starts_with(op)), "{op}\n{text}");
    }
    assert!(text.contains("EC-EC-IE") && text.contains("ΔEXP"));
    assert!(text.contains("contradictions of Table IX:"));
}

#[test]
fn bad_regimes_exit_two() {
    let suite = demo("suite.toml");
    let suite = suite.to_str().unwrap();
    for regimes in ["EC-EC", "NC-PC-IE"] {
        let output = sqlgate()
            .args(["calibrate", "--gold", suite, "--regimes", regimes])
            .run();
        assert_eq!(output.status.code(), Some(2), "{regimes}");
    }
    let pred = demo("predictions/gold.jsonl");
    let output = sqlgate()
        .args([
            "score",
            "--gold",
            suite,
            "--pred",
            pred.to_str().unwrap(),
            "--metrics",
            "EC-XX-IE",
        ])
        .run();
    assert_eq!(output.status.code(), Some(2));
}

fn score_json(pred: &str, metrics: &str) -> Value {
    let suite = demo("suite.toml");
    let pred = demo(pred);
    sqlgate()
        .args([
            "score",
            "--gold",
            suite.to_str().unwrap(),
            "--pred",
            pred.to_str().unwrap(),
            "--metrics",
            metrics,
            "--format",
            "json",
        ])
        .run()
        .assert_success()
        .json()
}

#[test]
fn score_metrics_on_gold_predictions_are_one() {
    let report = score_json("predictions/gold.jsonl", "EC-EC-IE,SC-PC-PE");
    for regime in ["EC-EC-IE", "SC-PC-PE"] {
        assert_eq!(
            report["summary"]["fine"][regime],
            serde_json::json!({"exp": 1.0, "exr": 1.0, "f1": 1.0})
        );
    }
    for case in report["cases"].as_array().unwrap() {
        if case["feasible"] == true {
            assert_eq!(case["fine"]["EC-EC-IE"]["f1"], 1.0, "{case}");
        } else {
            assert!(case.get("fine").is_none());
        }
    }
}

#[test]
fn score_metrics_summary_is_the_mean_over_feasible_cases() {
    let report = score_json("predictions/sample.jsonl", "EC-EC-PE");
    let cases = report["cases"].as_array().unwrap();
    let feasible: Vec<&Value> = cases.iter().filter(|c| c["feasible"] == true).collect();
    // Abstained or failed cases count as 0.
    let mean = |metric: &str| {
        feasible
            .iter()
            .map(|c| c["fine"]["EC-EC-PE"][metric].as_f64().unwrap_or(0.0))
            .sum::<f64>()
            / feasible.len() as f64
    };
    let summary = &report["summary"]["fine"]["EC-EC-PE"];
    for metric in ["exp", "exr", "f1"] {
        let reported = summary[metric].as_f64().unwrap();
        assert!((reported - mean(metric)).abs() < 1e-12, "{metric}");
    }
    assert!(
        summary["f1"].as_f64().unwrap() < 1.0,
        "the sample has wrong answers"
    );
    // A wrong prediction that still executes gets partial credit somewhere.
    assert!(feasible.iter().any(|c| c["ex"] == 0
        && c["fine"]["EC-EC-PE"]["f1"]
            .as_f64()
            .is_some_and(|f1| f1 > 0.0)));
}
