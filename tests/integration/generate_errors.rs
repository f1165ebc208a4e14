//! `sqlgate generate errors`: a deterministic suite of single-error mutants that scores like any
//! benchmark, with the mutants as predictions.

use std::path::Path;

use crate::support::{demo, sqlgate};

fn generate(out: &Path) {
    let gold = demo("suite.toml");
    let output = sqlgate()
        .args([
            "generate",
            "errors",
            "--gold",
            gold.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .run();
    output.assert_success();
}

#[test]
fn the_errors_family_is_deterministic_and_scores_as_a_suite() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    generate(first.path());
    generate(second.path());
    for file in ["suite.toml", "cases.jsonl", "predictions.jsonl"] {
        let a = std::fs::read(first.path().join(file)).unwrap();
        let b = std::fs::read(second.path().join(file)).unwrap();
        assert_eq!(a, b, "{file} differs between two runs");
    }
    let cases = std::fs::read_to_string(first.path().join("cases.jsonl")).unwrap();
    let predictions = std::fs::read_to_string(first.path().join("predictions.jsonl")).unwrap();
    assert_eq!(cases.lines().count(), predictions.lines().count());
    for (case, prediction) in cases.lines().zip(predictions.lines()) {
        let case: serde_json::Value = serde_json::from_str(case).unwrap();
        let prediction: serde_json::Value = serde_json::from_str(prediction).unwrap();
        assert_eq!(case["id"], prediction["id"]);
        let id = case["id"].as_str().unwrap();
        assert!(id.contains("::errors::"), "{id}");
        assert_ne!(
            case["gold"][0], prediction["sql"],
            "{id}: the mutant must differ from its gold"
        );
    }
    let suite = first.path().join("suite.toml");
    let pred = first.path().join("predictions.jsonl");
    let output = sqlgate()
        .args([
            "score",
            "--gold",
            suite.to_str().unwrap(),
            "--pred",
            pred.to_str().unwrap(),
            "--format",
            "json",
        ])
        .run();
    output.assert_success();
    let report: serde_json::Value = serde_json::from_str(&output.stdout).unwrap();
    let ex = report["summary"]["ex"].as_f64().unwrap();
    // Single errors nearly always change the answer; a few are equivalent on this data.
    assert!(ex < 0.3, "ex = {ex}");
    let operators = report["summary"]["breakdown"]["operator"]
        .as_object()
        .unwrap();
    assert!(operators.len() >= 10, "{operators:?}");
}
