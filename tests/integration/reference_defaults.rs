//! A reference mode's defaults, through `sqlgate score` and `sqlgate test` alike: a gold that
//! does not run is the benchmark's failure (`gold_error`) in every mode, never the system's,
//! whichever query the reference runs first; and an answer made of string literals only
//! (`SELECT 'YES'`) is scored as SQL, as the references score it, unless the suite declares
//! abstention (TrustSQL, infeasible questions) or the user opts in.

use std::path::Path;

use serde_json::json;

use crate::support::{sqlgate, Run};

const BROKEN: &str = "SELECT nosuch FROM item";

/// Per case of a BIRD `dev.json` on `db/shop.sqlite`: the gold and the system's answer.
const CASES: [(&str, &str); 4] = [
    ("SELECT 'YES'", "SELECT 'YES'"),
    (BROKEN, "SELECT name FROM item"),
    // Both fail: BIRD, Defog and Spider 2.0 run the prediction first, and stop there.
    (BROKEN, BROKEN),
    // One of the two rows: Soft-F1 2/3, EX 0.
    ("SELECT name FROM item", "SELECT 'apple'"),
];

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("db")).unwrap();
    let db = rusqlite::Connection::open(dir.path().join("db/shop.sqlite")).unwrap();
    db.execute_batch(
        "CREATE TABLE item (id INTEGER, name TEXT); INSERT INTO item VALUES (1, 'apple'), (2, 'pear');",
    )
    .unwrap();
    write_cases(dir.path(), &CASES);
    std::fs::write(
        dir.path().join("sqlgate.toml"),
        "[[suite]]\nbenchmark = \"dev.json\"\ndb_dir = \"db\"\nsoft_f1 = true\n\n\
         [[system]]\nname = \"answers\"\ntype = \"replay\"\npredictions = \"predictions.jsonl\"\n",
    )
    .unwrap();
    dir
}

fn write_cases(dir: &Path, cases: &[(&str, &str)]) {
    let gold: Vec<serde_json::Value> = cases
        .iter()
        .enumerate()
        .map(|(i, (gold, _))| {
            json!({"question_id": i, "db_id": "shop", "question": format!("question {i}"),
                   "evidence": "", "SQL": gold, "difficulty": "simple"})
        })
        .collect();
    std::fs::write(dir.join("dev.json"), json!(gold).to_string()).unwrap();
    let answers: String = cases
        .iter()
        .enumerate()
        .map(|(i, (_, sql))| json!({"id": i.to_string(), "sql": sql}).to_string() + "\n")
        .collect();
    std::fs::write(dir.join("predictions.jsonl"), answers).unwrap();
}

/// `sqlgate score --format json --soft-f1` with `args`: each case's verdict, EX and Soft-F1.
fn score(dir: &Path, args: &[&str]) -> Vec<(String, f64, f64)> {
    let output = sqlgate()
        .current_dir(dir)
        .args(["score", "--gold", "dev.json", "--db-dir", "db"])
        .args([
            "--pred",
            "predictions.jsonl",
            "--soft-f1",
            "--format",
            "json",
        ])
        .args(args)
        .run();
    output.assert_success();
    output.json()["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| {
            (
                case["verdict"].as_str().unwrap().to_string(),
                case["ex"].as_f64().unwrap(),
                case["soft_f1"].as_f64().unwrap_or(0.0),
            )
        })
        .collect()
}

fn test(dir: &Path, args: &[&str]) -> Run {
    sqlgate()
        .current_dir(dir)
        .args(["test", "--no-cache"])
        .args(args)
        .run()
}

/// The snapshot line of case `id` in `file`.
fn snapshot_line(dir: &Path, file: &str, id: usize) -> String {
    let snapshot = std::fs::read_to_string(dir.join("snapshots").join(file)).unwrap();
    let prefix = format!("dev::shop::{id} |");
    snapshot
        .lines()
        .find(|line| line.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no line for {id}:\n{snapshot}"))
        .to_string()
}

#[test]
fn a_gold_that_does_not_run_is_a_gold_error_in_every_mode() {
    let dir = workspace();
    for mode in [
        "bird",
        "bird-rowsorted",
        "defog",
        "defog-exact",
        "spider2",
        "testsuite",
        "trustsql",
    ] {
        let cases = score(dir.path(), &["--mode", mode]);
        for broken in [1, 2] {
            assert_eq!(cases[broken].0, "gold_error", "{mode} case {broken}");
            assert_eq!(cases[broken].1, 0.0, "{mode} case {broken}");
        }
    }
}

#[test]
fn the_gate_fails_a_broken_gold_as_the_benchmark_s_not_as_a_regression() {
    let dir = workspace();
    // Accepted while every gold ran and the answers were right...
    let mut fixed = CASES;
    for id in [1, 2] {
        fixed[id] = ("SELECT name FROM item", "SELECT name FROM item");
    }
    write_cases(dir.path(), &fixed);
    test(dir.path(), &["--accept"]).assert_code(0);
    // ...then the benchmark's golds broke: the run fails closed, naming the benchmark.
    write_cases(dir.path(), &CASES);
    let broken = test(dir.path(), &["--junit", "junit.xml"]);
    broken.assert_code(100);
    let text = broken.text();
    for id in [1, 2] {
        let fail = format!("dev::shop::{id}");
        assert!(
            text.lines()
                .any(|line| line.contains("FAIL [") && line.ends_with(&fail)),
            "{text}"
        );
        assert!(
            snapshot_line(dir.path(), "dev.snap.new", id).contains("| fail | gold_error |"),
            "{}",
            snapshot_line(dir.path(), "dev.snap.new", id)
        );
    }
    assert!(
        text.contains(
            "the benchmark's gold query fails (fix the case; the system's answer is not judged): \
             gold_error (ex = 0)"
        ),
        "{text}"
    );
    assert!(
        !text.contains("regression: correct in the accepted snapshot"),
        "{text}"
    );
}

#[test]
fn a_string_literal_answer_is_scored_as_sql_unless_the_suite_declares_abstention() {
    let dir = workspace();
    let bird = score(dir.path(), &[]);
    assert_eq!(bird[0], ("correct".to_string(), 1.0, 1.0));
    assert_eq!(bird[3].0, "incorrect");
    assert!((bird[3].2 - 2.0 / 3.0).abs() < 1e-9, "{bird:?}");
    // The same numbers in every reference mode's default...
    for mode in ["testsuite", "defog", "spider2"] {
        let cases = score(dir.path(), &["--mode", mode]);
        assert_eq!(cases[0].0, "correct", "{mode}");
        assert_eq!(cases[3].0, "incorrect", "{mode}");
    }
    // ...and where the user opts in, or TrustSQL's mode declares abstention, an abstention.
    let opted = score(dir.path(), &["--apology-abstains", "true"]);
    assert_eq!(opted[0], ("abstained".to_string(), 0.0, 0.0));
    assert_eq!(opted[3].0, "abstained");
    let trustsql = score(dir.path(), &["--mode", "trustsql"]);
    assert_eq!(trustsql[0].0, "abstained");

    // The gate scores them as `score` does: the same verdicts and Soft-F1.
    test(dir.path(), &[]).assert_code(100);
    let yes = snapshot_line(dir.path(), "dev.snap.new", 0);
    assert!(yes.contains("| pass | correct | ex=1 |"), "{yes}");
    assert!(yes.contains("soft_f1=1"), "{yes}");
    let apple = snapshot_line(dir.path(), "dev.snap.new", 3);
    assert!(
        apple.contains("| incorrect |") && apple.contains("soft_f1=0.6667"),
        "{apple}"
    );
    // `apology = true` in the system opts in, as `--apology-abstains true` does.
    let config = std::fs::read_to_string(dir.path().join("sqlgate.toml")).unwrap();
    std::fs::write(
        dir.path().join("sqlgate.toml"),
        config.replace(
            "type = \"replay\"",
            "type = \"replay\"\nabstention = { apology = true }",
        ),
    )
    .unwrap();
    std::fs::remove_file(dir.path().join("snapshots/dev.snap.new")).unwrap();
    test(dir.path(), &[]).assert_code(100);
    let yes = snapshot_line(dir.path(), "dev.snap.new", 0);
    assert!(yes.contains("| abstained |"), "{yes}");
}
