//! `sqlgate score` end to end: the demo, the JSON contract, and bad input (exit 2, file and
//! record named, nothing panics).

use std::path::Path;

use crate::support::{copy_tree, demo, shared_data, sqlgate, Run};

/// `sqlgate score --gold GOLD --pred PRED EXTRA...`
fn score(gold: &Path, pred: &Path, extra: &[&str]) -> Run {
    sqlgate()
        .arg("score")
        .arg("--gold")
        .arg(gold)
        .arg("--pred")
        .arg(pred)
        .args(extra)
        .run()
}

#[test]
fn demo_gold_predictions_score_one() {
    let suite = demo("suite.toml");
    let pred = demo("predictions/gold.jsonl");
    let report = score(&suite, &pred, &["--format", "json"])
        .assert_success()
        .json();
    assert_eq!(report["summary"]["ex"], 1.0);
    let cases = report["cases"].as_array().unwrap();
    let feasible = cases.iter().filter(|c| c["feasible"] == true).count();
    assert_eq!(report["summary"]["n"], feasible);
    assert!(
        feasible >= 25 && cases.len() > feasible,
        "the demo has feasible and infeasible cases"
    );
    for case in cases.iter().filter(|c| c["feasible"] == true) {
        assert_eq!(case["ex"], 1, "{case}");
        assert!(case["error"].is_null());
    }
}

#[test]
fn demo_sample_predictions_are_imperfect_and_classified() {
    let suite = demo("suite.toml");
    let pred = demo("predictions/sample.jsonl");
    let report = score(&suite, &pred, &["--format", "json"])
        .assert_success()
        .json();
    let ex = report["summary"]["ex"].as_f64().unwrap();
    assert!(ex > 0.5 && ex < 1.0, "ex = {ex}");
    let cases = report["cases"].as_array().unwrap();
    assert!(cases.iter().any(|c| c["error"]
        .as_str()
        .is_some_and(|e| e.starts_with("pred_error"))));
    assert!(
        cases.iter().any(|c| c["cleaned"] == true),
        "a fenced prediction was cleaned"
    );
    // Text output carries the overall EX and a breakdown by category.
    let text = score(&suite, &pred, &[]).stdout;
    assert!(text.contains(&format!("EX {ex:.3}")), "{text}");
    assert!(text.contains("category"), "{text}");
}

/// A copy of the demo suite in a temporary folder, to break on purpose.
fn demo_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&demo(""), dir.path());
    dir
}

fn score_copy(dir: &Path, pred: &str) -> Run {
    let suite = dir.join("suite.toml");
    let pred = dir.join(pred);
    score(&suite, &pred, &[])
}

fn edit(path: &Path, f: impl FnOnce(String) -> String) {
    let text = std::fs::read_to_string(path).unwrap();
    std::fs::write(path, f(text)).unwrap();
}

#[test]
fn a_broken_jsonl_case_is_named_by_file_and_line() {
    let dir = demo_copy();
    edit(&dir.path().join("cases.jsonl"), |text| {
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        lines[2] = "{\"id\": \"broken\", ".to_string();
        lines.join("\n")
    });
    score_copy(dir.path(), "predictions/gold.jsonl").assert_bad_input(&["cases.jsonl", "line 3"]);
}

#[test]
fn an_unknown_database_is_an_error() {
    let dir = demo_copy();
    edit(&dir.path().join("cases.jsonl"), |text| {
        text.replacen("\"db\": \"bookshop\"", "\"db\": \"nowhere\"", 1)
    });
    score_copy(dir.path(), "predictions/gold.jsonl").assert_bad_input(&["nowhere", "record 0"]);
}

#[test]
fn duplicate_case_ids_are_an_error() {
    let dir = demo_copy();
    edit(&dir.path().join("cases.jsonl"), |text| {
        let first = text.lines().next().unwrap().to_string();
        format!("{text}\n{first}\n")
    });
    score_copy(dir.path(), "predictions/gold.jsonl")
        .assert_bad_input(&["cases.jsonl", "duplicate"]);
}

#[test]
fn a_prediction_for_an_unknown_case_is_an_error() {
    let dir = demo_copy();
    edit(&dir.path().join("predictions/gold.jsonl"), |text| {
        format!("{text}{{\"id\": \"no-such-case\", \"sql\": \"SELECT 1\"}}\n")
    });
    score_copy(dir.path(), "predictions/gold.jsonl")
        .assert_bad_input(&["gold.jsonl", "no-such-case"]);
}

#[test]
fn an_unknown_manifest_key_names_its_line() {
    let dir = demo_copy();
    edit(&dir.path().join("suite.toml"), |text| {
        format!("{text}\nthreshold = 3\n")
    });
    score_copy(dir.path(), "predictions/gold.jsonl").assert_bad_input(&["suite.toml", "threshold"]);
}

#[test]
fn misaligned_spider_predictions_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tiny.sqlite");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE t(a); INSERT INTO t VALUES (1);")
        .unwrap();
    let gold = dir.path().join("gold.txt");
    std::fs::write(
        &gold,
        "SELECT a FROM t\ttiny\nSELECT count(*) FROM t\ttiny\n",
    )
    .unwrap();
    let pred = dir.path().join("pred.txt");
    std::fs::write(&pred, "SELECT a FROM t\n").unwrap();
    let output = score(&gold, &pred, &[]);
    output.assert_bad_input(&["pred.txt", "2"]);
    std::fs::write(&pred, "SELECT a FROM t\nSELECT 1\n").unwrap();
    let output = score(&gold, &pred, &[]);
    output.assert_success();
}

#[test]
fn a_broken_csv_is_named_by_record() {
    let dir = tempfile::tempdir().unwrap();
    let gold = dir.path().join("questions.csv");
    std::fs::write(
        &gold,
        "db_name,query_category,query,question\nx,group_by,SELECT 1,ok\nx,group_by,\"SELECT 2,broken\n",
    )
    .unwrap();
    let pred = dir.path().join("pred.jsonl");
    std::fs::write(&pred, "").unwrap();
    let output = score(&gold, &pred, &[]);
    output.assert_bad_input(&["questions.csv", "line 3"]);
}

#[test]
fn defog_files_score_gold_against_gold() {
    let Some(data) = shared_data() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bench = sqlgate_eval::loaders::load(
        &data.join("defog/questions.csv"),
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .unwrap();
    let mut lines = String::new();
    for case in &bench.cases {
        lines.push_str(&serde_json::json!({"id": case.id, "sql": case.gold[0]}).to_string());
        lines.push('\n');
    }
    let pred = dir.path().join("gold.jsonl");
    std::fs::write(&pred, lines).unwrap();
    let gold = data.join("defog/questions.csv");
    for mode in [
        "testsuite",
        "bird",
        "bird-rowsorted",
        "spider2",
        "defog",
        "defog-exact",
        "trustsql",
    ] {
        let report = score(&gold, &pred, &["--mode", mode, "--format", "json"])
            .assert_success()
            .json();
        assert_eq!(report["summary"]["ex"], 1.0, "{mode}");
        assert_eq!(report["summary"]["n"], 135, "{mode}");
    }
}

#[test]
fn spider_exact_set_match_agrees_with_the_reference_pair_for_pair() {
    let Some(data) = shared_data() else {
        return;
    };
    let spider = data.join("spider-dev");
    for (system, published) in [("C3", 0.469), ("RESDSQL", 0.805)] {
        let pred = spider.join(format!("predictions/{system}.txt"));
        let db_dir = spider.join("schema-db");
        let report = score(
            &spider.join("gold.txt"),
            &pred,
            &[
                "--db-dir",
                db_dir.to_str().unwrap(),
                "--metrics",
                "esm",
                "--format",
                "json",
            ],
        )
        .assert_success()
        .json();
        let reference =
            std::fs::read_to_string(spider.join(format!("reference/{system}.jsonl"))).unwrap();
        let cases = report["cases"].as_array().unwrap();
        assert_eq!(cases.len(), reference.lines().count());
        for (case, line) in cases.iter().zip(reference.lines()) {
            let expected: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(
                case["esm"], expected["esm"],
                "{system} pair {}",
                expected["i"]
            );
            assert_eq!(
                case["tags"]["hardness"], expected["hardness"],
                "{system} pair {}",
                expected["i"]
            );
        }
        let all = report["summary"]["esm"]["all"].as_f64().unwrap();
        assert!((all - published).abs() < 0.0005, "{system}: {all}");
        assert!(report["summary"]["esm"]["by_hardness"]["extra"]
            .as_f64()
            .is_some());
    }
}
