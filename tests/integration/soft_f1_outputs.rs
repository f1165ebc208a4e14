//! Soft-F1 in what `sqlgate score` and the gate write: the BIRD script's numbers per
//! difficulty, and on the demo gate (`soft_f1 = true`) each case's value in the snapshot line
//! and the JUnit properties, a `soft_f1` gate on the mean, and shards merged from their run
//! records giving the same report as one run.

use std::path::Path;

use crate::support::{demo_workspace, replace_prediction, repo, sqlgate, Run};

fn write_config(dir: &Path, suite_settings: &str) {
    let config = format!(
        "[[suite]]\nbenchmark = \"{}\"\n{suite_settings}\n\n\
         [[system]]\nname = \"sample\"\ntype = \"replay\"\npredictions = \"sample.jsonl\"\n",
        repo().join("benchmarks/demo/suite.toml").display()
    );
    std::fs::write(dir.join("sqlgate.toml"), config).unwrap();
}

fn run(dir: &Path, args: &[&str]) -> Run {
    sqlgate().args(args).current_dir(dir).run()
}

/// The `soft_f1=` value of every line of a snapshot, in order.
fn snapshot_values(snapshot: &str) -> Vec<f64> {
    snapshot
        .lines()
        .filter_map(|line| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix("soft_f1="))
        })
        .map(|value| value.parse().expect("a number"))
        .collect()
}

#[test]
fn soft_f1_is_in_snapshots_and_gated_on_its_mean() {
    let dir = demo_workspace();
    // A partly right answer: the right rows with an extra column scores between 0 and 1.
    replace_prediction(
        &dir.path().join("sample.jsonl"),
        "q01",
        "SELECT title, 1 FROM books WHERE genre = 'Poetry'",
    );
    write_config(
        dir.path(),
        "soft_f1 = true\ngate = { soft_f1 = \">= 0.99\" }",
    );
    let failed = run(dir.path(), &["test", "--accept", "--junit", "junit.xml"]);
    failed.assert_code(100);
    let text = failed.text();
    assert!(text.contains("demo::gate::soft_f1"), "{text}");
    assert!(text.contains("does not meet >= 0.99"), "{text}");

    let snapshot = std::fs::read_to_string(dir.path().join("snapshots/demo.snap")).unwrap();
    let values = snapshot_values(&snapshot);
    // Infeasible questions (regions IV and V) take no part in Soft-F1, as in EX.
    let feasible = snapshot
        .lines()
        .filter(|line| line.contains(" | ex="))
        .filter(|line| {
            !line
                .split(" | ")
                .any(|w| w == "region=IV" || w == "region=V")
        })
        .count();
    assert_eq!(
        values.len(),
        feasible,
        "every feasible case has soft_f1:\n{snapshot}"
    );
    assert!(values.iter().any(|v| *v > 0.0 && *v < 1.0), "{values:?}");
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(junit.contains(r#"<property name="soft_f1""#), "{junit}");

    // The gate's mean is the mean of the per-case values, which it passes at that threshold.
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let threshold = format!("{:.2}", (mean * 100.0).floor() / 100.0 - 0.01);
    write_config(
        dir.path(),
        &format!("soft_f1 = true\ngate = {{ soft_f1 = \">= {threshold}\" }}"),
    );
    run(dir.path(), &["test"]).assert_code(0);
}

#[test]
fn shards_merge_to_the_soft_f1_of_one_run() {
    let dir = demo_workspace();
    write_config(
        dir.path(),
        "soft_f1 = true\ngate = { soft_f1 = \">= 0.1\" }",
    );
    run(dir.path(), &["test", "--no-cache", "--junit", "one.xml"]).assert_code(0);
    let shards = ["shard-1.json", "shard-2.json"];
    for (k, record) in shards.iter().enumerate() {
        let partition = format!("count:{}/2", k + 1);
        run(
            dir.path(),
            &["test", "--partition", &partition, "--record-out", record],
        );
    }
    let merged = run(
        dir.path(),
        &[&["merge"], &shards[..], &["--junit", "merged.xml"]].concat(),
    );
    merged.assert_code(0);
    let soft_f1_properties = |file: &str| -> Vec<String> {
        let xml = std::fs::read_to_string(dir.path().join(file)).unwrap();
        let property = regex::Regex::new(r#"<property name="soft_f1" value="[^"]*"/>"#).unwrap();
        property
            .find_iter(&xml)
            .map(|m| m.as_str().to_string())
            .collect()
    };
    let one = soft_f1_properties("one.xml");
    assert!(one.len() > 1, "{one:?}");
    assert_eq!(one, soft_f1_properties("merged.xml"));

    // A record whose Soft-F1 was edited out of its range is refused, naming it.
    let path = dir.path().join(shards[1]);
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let case = &mut record["suites"][0]["cases"][0];
    assert!(case["soft_f1"].is_f64(), "{case}");
    case["soft_f1"] = 1.5.into();
    std::fs::write(&path, record.to_string()).unwrap();
    let refused = run(dir.path(), &[&["merge"], &shards[..]].concat());
    refused.assert_code(2);
    assert!(
        refused
            .text()
            .contains("soft_f1 = 1.5 does not lie in [0, 1]"),
        "{}",
        refused.text()
    );
}

#[test]
fn a_soft_f1_gate_needs_the_suite_to_compute_it_on_the_0_to_1_scale() {
    let dir = demo_workspace();
    let refused = |settings: &str, expected: &str| {
        write_config(dir.path(), settings);
        let output = run(dir.path(), &["test"]);
        output.assert_code(2);
        assert!(output.text().contains(expected), "{}", output.text());
    };
    refused(
        "gate = { soft_f1 = \">= 0.5\" }",
        "gate `soft_f1` needs `soft_f1 = true`",
    );
    // BIRD's printed number is 100 × the mean: a threshold copied from it is out of range.
    refused(
        "soft_f1 = true\ngate = { soft_f1 = \">= 55\" }",
        "`soft_f1` is between 0 and 1",
    );
}

#[test]
fn score_prints_soft_f1_per_bird_difficulty_as_the_bird_script_does() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("shop");
    std::fs::create_dir_all(&db_dir).unwrap();
    let db = rusqlite::Connection::open(db_dir.join("shop.sqlite")).unwrap();
    db.execute_batch(
        "CREATE TABLE t (a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'x'), (2, 'y');",
    )
    .unwrap();
    drop(db);
    // (difficulty, gold, prediction, Soft-F1 by spec §3.5)
    let cases = [
        // Each row pairs (a) with (a, b): precision 1, recall 1/2.
        (
            "simple",
            "SELECT a, b FROM t ORDER BY a",
            "SELECT a FROM t ORDER BY a",
            2.0 / 3.0,
        ),
        (
            "moderate",
            "SELECT a FROM t ORDER BY a",
            "SELECT a FROM t ORDER BY a",
            1.0,
        ),
        ("moderate", "SELECT b FROM t", "SELECT nope FROM t", 0.0),
    ];
    let records: Vec<serde_json::Value> = cases
        .iter()
        .enumerate()
        .map(|(i, (difficulty, gold, _, _))| {
            serde_json::json!({"question_id": i, "db_id": "shop", "question": "?",
                               "evidence": "", "SQL": gold, "difficulty": difficulty})
        })
        .collect();
    let predictions: serde_json::Map<String, serde_json::Value> = cases
        .iter()
        .enumerate()
        .map(|(i, (_, _, pred, _))| {
            (
                i.to_string(),
                format!("{pred}\t----- bird -----\tshop").into(),
            )
        })
        .collect();
    let (gold, pred) = (
        dir.path().join("dev.json"),
        dir.path().join("predict_dev.json"),
    );
    std::fs::write(&gold, serde_json::to_string(&records).unwrap()).unwrap();
    std::fs::write(&pred, serde_json::to_string(&predictions).unwrap()).unwrap();
    let score = |format: &str| {
        let output = sqlgate()
            .args(["score", "--soft-f1", "--format", format, "--gold"])
            .arg(&gold)
            .arg("--pred")
            .arg(&pred)
            .run();
        output.assert_success();
        output.stdout.clone()
    };
    let report: serde_json::Value = serde_json::from_str(&score("json")).unwrap();
    for (case, (_, _, _, expected)) in report["cases"].as_array().unwrap().iter().zip(&cases) {
        let value = case["soft_f1"].as_f64().unwrap();
        assert!((value - expected).abs() < 1e-12, "{case}");
    }
    let mean = |level: Option<&str>| {
        let values: Vec<f64> = cases
            .iter()
            .filter(|case| level.is_none_or(|l| case.0 == l))
            .map(|case| case.3)
            .collect();
        values.iter().sum::<f64>() / values.len() as f64
    };
    let summary = &report["summary"]["soft_f1"];
    assert!((summary["all"].as_f64().unwrap() - mean(None)).abs() < 1e-12);
    for level in ["simple", "moderate"] {
        let value = summary["by_difficulty"][level].as_f64().unwrap();
        assert!((value - mean(Some(level))).abs() < 1e-12, "{level}");
    }
    // The text shows the 0..1 mean and, as the BIRD script prints them, 100 × each mean.
    let text = score("text");
    let expected = format!(
        "Soft-F1 {:.3} (BIRD prints {:.2})\n  simple       {:.2}\n  moderate     {:.2}\n",
        mean(None),
        mean(None) * 100.0,
        mean(Some("simple")) * 100.0,
        mean(Some("moderate")) * 100.0
    );
    assert!(text.contains(&expected), "{text}");
}
