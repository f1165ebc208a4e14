//! Predictions too long or too deep for any parser's stack (issue 11 item 1): `sqlgate score`
//! ends with a verdict per case, never an abort, whichever metrics parse the SQL.

use crate::support::{demo, sqlgate};

#[test]
fn deep_and_huge_predictions_are_per_case_errors() {
    let demo = demo("");
    let gold = std::fs::read_to_string(demo.join("predictions/gold.jsonl")).unwrap();
    // Far past every bound (the 140,000 terms are in the unit tests: a debug build
    // takes seconds to run such text through the evaluator's regexes).
    let deep_sum = format!("SELECT 1{}", "+1".repeat(20_000));
    let deep_where = format!("SELECT title FROM books WHERE 1{}", " AND 1".repeat(20_000));
    let deep_but_valid = format!(
        "SELECT title FROM books WHERE price > 0{}",
        "+0".repeat(900)
    );
    let mut lines: Vec<String> = gold.lines().map(str::to_string).collect();
    for (line, sql) in lines
        .iter_mut()
        .zip([&deep_sum, &deep_where, &deep_but_valid])
    {
        let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
        record["sql"] = serde_json::Value::String(sql.clone());
        *line = record.to_string();
    }
    let dir = tempfile::tempdir().unwrap();
    let pred = dir.path().join("hostile.jsonl");
    std::fs::write(&pred, lines.join("\n")).unwrap();
    let output = sqlgate()
        .arg("score")
        .arg("--gold")
        .arg(demo.join("suite.toml"))
        .arg("--pred")
        .arg(&pred)
        .args(["--metrics", "etm", "--format", "json"])
        .run();
    assert!(
        output.status.success(),
        "{:?}: {}",
        output.status,
        &output.stderr
    );
    let report: serde_json::Value = serde_json::from_str(&output.stdout).unwrap();
    let cases = report["cases"].as_array().unwrap();
    for case in &cases[..2] {
        assert_eq!(case["verdict"], "pred_error", "{}", case["id"]);
        let error = case["error"].as_str().unwrap();
        assert!(error.contains("Expression tree is too large"), "{error}");
        assert_eq!(case["etm"], 0, "{}", case["id"]);
        // ETM refuses it before planning, with the reason.
        assert_eq!(case["etm_detail"]["status"], "pred_unparsed");
        let message = case["etm_detail"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("too deeply nested (depth "),
            "{message}"
        );
    }
    // Deep, but SQLite runs it: scored as usual, ETM compares it on a large stack.
    assert_eq!(cases[2]["verdict"], "incorrect");
    assert_eq!(cases[2]["etm"], 0);
    assert_eq!(cases[2]["etm_detail"]["status"], "nomatch");
    // The other cases are scored as usual.
    assert!(cases[3..]
        .iter()
        .filter(|c| c["feasible"] == true)
        .all(|c| c["verdict"] == "correct"));
}
