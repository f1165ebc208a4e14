//! The engines behind one interface, as a user reaches them: `sqlgate copy` puts the Defog
//! databases on another engine, and `sqlgate score --engine ...` scores the golds there.

use std::path::{Path, PathBuf};

use sqlgate_test_support::mariadb;

use crate::support::{shared_data, sqlgate, Run};

const DEFOG: [&str; 5] = ["academic", "advising", "atis", "geography", "restaurants"];

/// The Defog folder, or `None` (skipped, counted) without the shared data.
fn defog() -> Option<PathBuf> {
    shared_data().map(|data| data.join("defog"))
}

/// `sqlgate copy` of the Defog databases from their SQLite files to `to` (its flags).
fn copy(defog: &Path, to: &[&str]) -> Run {
    let mut command = sqlgate();
    command.arg("copy").arg("--db-dir").arg(defog);
    for db in DEFOG {
        command.args(["--db", db]);
    }
    command.args(to).run()
}

/// A JSONL predictions file giving each question's first gold as its answer.
fn gold_predictions(dir: &Path, gold: &Path) -> PathBuf {
    let bench = sqlgate_eval::loaders::load(
        gold,
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .expect("the questions load");
    let lines: Vec<String> = bench
        .cases
        .iter()
        .map(|case| serde_json::json!({"id": case.id, "sql": case.gold[0]}).to_string())
        .collect();
    let path = dir.join("gold.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

/// The cases of a `score --format json` run: (ex, whether the gold failed).
fn verdicts(run: &Run) -> Vec<(f64, bool)> {
    run.assert_success();
    let report: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|case| {
            let ex = case["ex"].as_f64().unwrap_or(0.0);
            let gold_failed = case.to_string().contains("gold_error");
            (ex, gold_failed)
        })
        .collect()
}

#[test]
fn copies_of_the_defog_files_score_as_the_originals() {
    let Some(defog) = defog() else { return };
    let dir = tempfile::tempdir().unwrap();
    let copies = dir.path().join("copies");
    copy(&defog, &["--to-engine", "sqlite", "--to-db-dir"]).assert_code(2);
    let run = sqlgate()
        .arg("copy")
        .arg("--db-dir")
        .arg(&defog)
        .args(DEFOG.iter().flat_map(|db| ["--db", db]))
        .args(["--to-engine", "sqlite", "--to-db-dir"])
        .arg(&copies)
        .run();
    run.assert_success();
    assert_eq!(run.stdout.matches("copied ").count(), 5, "{}", run.stdout);
    let gold = defog.join("questions.csv");
    let pred = gold_predictions(dir.path(), &gold);
    let score = |db_dir: &Path| {
        sqlgate()
            .args(["score", "--format", "json", "--gold"])
            .arg(&gold)
            .arg("--pred")
            .arg(&pred)
            .arg("--db-dir")
            .arg(db_dir)
            .run()
    };
    let original = verdicts(&score(&defog));
    assert_eq!(original.len(), 135);
    assert!(original.iter().all(|(ex, _)| *ex == 1.0));
    assert_eq!(verdicts(&score(&copies)), original);
    // Nothing beside the copies: the staging file is gone.
    let mut names: Vec<String> = std::fs::read_dir(&copies)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let expected: Vec<String> = DEFOG.iter().map(|db| format!("{db}.sqlite")).collect();
    assert_eq!(names, expected);
}

#[test]
fn copy_never_replaces_a_database_and_refuses_bad_names() {
    let Some(defog) = defog() else { return };
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("academic.sqlite");
    std::fs::write(&existing, "someone else's file").unwrap();
    let run = sqlgate()
        .arg("copy")
        .arg("--db-dir")
        .arg(&defog)
        .args(["--db", "academic", "--to-engine", "sqlite", "--to-db-dir"])
        .arg(dir.path())
        .run();
    run.assert_bad_input(&["academic.sqlite", "exists"]);
    assert_eq!(
        std::fs::read_to_string(&existing).unwrap(),
        "someone else's file"
    );
    for (db, words) in [
        ("../academic", &["not a plain database name"][..]),
        ("nowhere", &["nowhere", "exists"][..]),
    ] {
        sqlgate()
            .arg("copy")
            .arg("--db-dir")
            .arg(&defog)
            .args(["--db", db, "--to-engine", "sqlite", "--to-db-dir"])
            .arg(dir.path())
            .run()
            .assert_bad_input(words);
    }
    sqlgate()
        .args(["copy", "--db", "academic", "--to-engine", "oracle"])
        .run()
        .assert_bad_input(&["unknown engine `oracle`", "sqlite"]);
    sqlgate()
        .arg("copy")
        .arg("--db-dir")
        .arg(&defog)
        .args(["--db", "academic", "--to-engine", "mysql", "--to-db-dir"])
        .arg(dir.path())
        .run()
        .assert_bad_input(&["--to-engine", "needs `dsn`"]);
}

/// The Defog databases copied onto MariaDB by `sqlgate copy`, then scored there with each
/// question's gold as its prediction: every case whose gold MariaDB runs is correct, and the
/// golds MariaDB cannot run (SQLite's dialect: `NULLS FIRST`, `CAST(... AS REAL)`) fail as
/// gold errors, never as a wrong prediction.
#[test]
fn defog_on_mariadb_scores_gold_as_prediction() {
    let Some(defog) = defog() else { return };
    let Some(server) = mariadb::shared() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Names of their own on the shared server.
    let copied = dir.path().join("named");
    std::fs::create_dir(&copied).unwrap();
    let writer = server.template(mariadb::WRITER);
    copy(&defog, &["--to-engine", "mysql", "--to-dsn", &writer]).assert_success();
    for db in DEFOG {
        server.add_reader(db);
    }
    // A second copy onto the same databases is refused: they exist.
    copy(&defog, &["--to-engine", "mysql", "--to-dsn", &writer]).assert_bad_input(&["academic"]);
    let before: Vec<String> = DEFOG.iter().map(|db| server.fingerprint(db)).collect();
    let gold = defog.join("questions.csv");
    let pred = gold_predictions(dir.path(), &gold);
    let run = sqlgate()
        .args(["score", "--format", "json", "--gold"])
        .arg(&gold)
        .arg("--pred")
        .arg(&pred)
        .args([
            "--engine",
            "mysql",
            "--dsn",
            &server.template(mariadb::READER),
        ])
        .run();
    let cases = verdicts(&run);
    assert_eq!(cases.len(), 135);
    let correct = cases.iter().filter(|(ex, _)| *ex == 1.0).count();
    let gold_errors = cases.iter().filter(|(_, failed)| *failed).count();
    assert_eq!(
        correct + gold_errors,
        135,
        "a gold run as prediction was scored wrong"
    );
    // What MariaDB runs of SQLite's dialect (docs/mysql.md#differences-from-sqlite).
    assert!(correct >= 74, "{correct} correct");
    let after: Vec<String> = DEFOG.iter().map(|db| server.fingerprint(db)).collect();
    assert_eq!(before, after);
}
