//! Flags and files a hostile or careless user passes: a clear error and exit 2, or a quiet
//! exit, never a panic.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::support::{demo, repo, sqlgate, Run};

fn score_demo(extra: &[&str]) -> Run {
    sqlgate()
        .arg("score")
        .arg("--gold")
        .arg(demo("suite.toml"))
        .arg("--pred")
        .arg(demo("predictions/gold.jsonl"))
        .args(extra)
        .run()
}

#[test]
fn huge_timeouts_are_refused() {
    for timeout in ["1e19", "1e30", "inf", "0", "-1", "NaN"] {
        let flag = format!("--timeout={timeout}");
        score_demo(&[&flag]).assert_bad_input(&["--timeout", timeout]);
    }
    assert!(score_demo(&["--timeout", "86400"]).status.success());
}

#[test]
fn a_huge_suite_timeout_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("sqlgate.toml"),
        format!(
            "[[suite]]\nbenchmark = \"{}\"\ntimeout = 1e30\n",
            demo("suite.toml").display()
        ),
    )
    .unwrap();
    let output = sqlgate()
        .args(["test", "--list"])
        .current_dir(dir.path())
        .run();
    output.assert_bad_input(&["sqlgate.toml", "timeout", "86400"]);
}

/// Runs `args` with a stdout pipe whose reader is gone before anything is written.
fn with_closed_stdout(args: &[&str]) -> Output {
    let mut child = sqlgate()
        .args(args)
        .current_dir(repo())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_closed_stdout_ends_the_run_quietly() {
    let gold = demo("suite.toml");
    let pred = demo("predictions/gold.jsonl");
    for args in [
        vec![
            "score",
            "--gold",
            gold.to_str().unwrap(),
            "--pred",
            pred.to_str().unwrap(),
        ],
        vec!["test", "--list"],
    ] {
        let output = with_closed_stdout(&args);
        let message = String::from_utf8_lossy(&output.stderr);
        assert!(!message.contains("panicked"), "{args:?}: {message}");
        assert_ne!(output.status.code(), Some(101), "{args:?}: {message}");
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(output.status.signal(), Some(libc::SIGPIPE), "{args:?}");
        }
    }
}

/// `sqlgate test --list` on a configuration written in a temporary folder.
fn list_config(config: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
    sqlgate()
        .args(["test", "--list"])
        .current_dir(dir.path())
        .run()
}

fn demo_suite(extra: &str) -> String {
    format!(
        "[[suite]]\nbenchmark = \"{}\"\n{extra}",
        demo("suite.toml").display()
    )
}

#[test]
fn a_suite_name_reaching_outside_the_snapshot_folder_is_refused() {
    let output = list_config(&demo_suite("name = \"../evil\"\n"));
    output.assert_bad_input(&["sqlgate.toml", "`../evil`", "plain file name"]);
}

#[test]
fn an_unreachable_threshold_is_refused() {
    let output = list_config(&demo_suite("gate = { ex = \">= 1.5\" }\n"));
    output.assert_bad_input(&["sqlgate.toml", "gate `ex`", "between 0 and 1"]);
    let replay = format!(
        "[[system]]\nname = \"gold\"\ntype = \"replay\"\npredictions = \"{}\"\n",
        demo("predictions/gold.jsonl").display()
    );
    let reachable = demo_suite(&format!("gate = {{ ex = \">= 0.5\" }}\n{replay}"));
    let output = list_config(&reachable);
    output.assert_success();
}

#[test]
fn systems_need_distinct_plain_names() {
    let replay = |name: &str| {
        format!(
            "[[system]]\nname = \"{name}\"\ntype = \"replay\"\npredictions = \"{}\"\n",
            demo("predictions/gold.jsonl").display()
        )
    };
    let twice = format!("{}{}{}", demo_suite(""), replay("same"), replay("same"));
    list_config(&twice).assert_bad_input(&["sqlgate.toml", "`same`", "another"]);
    let escaping = format!("{}{}", demo_suite(""), replay("../up"));
    list_config(&escaping).assert_bad_input(&["`../up`", "plain file name"]);
}

/// A Spider-style gold file over `db.sqlite`, whose contents the caller chooses.
fn spider_gold(dir: &Path, database: &[u8]) -> (PathBuf, PathBuf) {
    std::fs::write(dir.join("db.sqlite"), database).unwrap();
    let gold = dir.join("gold.txt");
    std::fs::write(&gold, "SELECT 1\tdb\n").unwrap();
    let pred = dir.join("pred.txt");
    std::fs::write(&pred, "SELECT 1\n").unwrap();
    (gold, pred)
}

fn score(gold: &Path, pred: &Path) -> Run {
    sqlgate()
        .arg("score")
        .arg("--gold")
        .arg(gold)
        .arg("--pred")
        .arg(pred)
        .run()
}

#[test]
fn an_empty_or_bogus_database_is_a_load_error() {
    for (contents, words) in [
        (&b""[..], "empty (0 bytes)"),
        (
            &b"not a database, just some text of a reasonable length ......."[..],
            "not a database",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (gold, pred) = spider_gold(dir.path(), contents);
        score(&gold, &pred).assert_bad_input(&["gold.txt", "db.sqlite", words]);
    }
}

#[test]
fn a_table_committed_in_wal_mode_is_scored() {
    let dir = tempfile::tempdir().unwrap();
    let (gold, pred) = spider_gold(dir.path(), b"");
    std::fs::remove_file(dir.path().join("db.sqlite")).unwrap();
    let writer = rusqlite::Connection::open(dir.path().join("db.sqlite")).unwrap();
    writer
        .execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE late(x); INSERT INTO late VALUES (1), (2);",
        )
        .unwrap();
    std::fs::write(&gold, "SELECT sum(x) FROM late\tdb\n").unwrap();
    std::fs::write(&pred, "SELECT 3\n").unwrap();
    let output = score(&gold, &pred);
    let text = &output.stdout;
    output.assert_success();
    assert!(text.contains("EX 1.000"), "{text}");
    drop(writer);
}

#[test]
fn predictions_that_are_not_records_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (gold, _) = spider_gold(dir.path(), b"");
    std::fs::remove_file(dir.path().join("db.sqlite")).unwrap();
    rusqlite::Connection::open(dir.path().join("db.sqlite"))
        .unwrap()
        .execute_batch("CREATE TABLE t(x)")
        .unwrap();
    let jsonl = dir.path().join("pred.jsonl");
    std::fs::write(&jsonl, "[\"0\", \"SELECT 1\"]\n").unwrap();
    score(&gold, &jsonl).assert_bad_input(&["pred.jsonl", "line 1", "a list"]);

    // BIRD: Python's json.load keeps only the last of two equal keys.
    std::fs::write(&gold, "SELECT 1\tdb\nSELECT 2\tdb\n").unwrap();
    let bird = dir.path().join("predict_dev.json");
    let sep = "\\t----- bird -----\\tdb";
    std::fs::write(
        &bird,
        format!("{{\"0\": \"SELECT 1{sep}\", \"0\": \"SELECT 2{sep}\"}}"),
    )
    .unwrap();
    let output = sqlgate()
        .args(["score", "--pred-format", "bird"])
        .arg("--gold")
        .arg(&gold)
        .arg("--pred")
        .arg(&bird)
        .run();
    output.assert_bad_input(&["predict_dev.json", "duplicate key `0`"]);
}

#[test]
fn tables_json_is_checked_alike_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let tables = dir.path().join("tables.json");
    let entry = |db: &str, types: &str, foreign: &str| {
        format!(
            "{{\"db_id\": \"{db}\", \"table_names_original\": [\"t\"],
              \"column_names_original\": [[-1, \"*\"], [0, \"a\"]],
              \"column_types\": [{types}], \"primary_keys\": [1], \"foreign_keys\": [{foreign}]}}"
        )
    };
    let good = entry("db", "\"text\", \"number\"", "");
    let (gold, pred) = spider_gold(dir.path(), b"");
    std::fs::remove_file(dir.path().join("db.sqlite")).unwrap();
    rusqlite::Connection::open(dir.path().join("db.sqlite"))
        .unwrap()
        .execute_batch("CREATE TABLE t(a)")
        .unwrap();
    for (file, words) in [
        (
            format!("[{}]", entry("db", "\"text\", \"number\"", "[1, 7]")),
            "column 7",
        ),
        (
            format!("[{}]", entry("db", "\"text\"", "")),
            "column_types has 1",
        ),
        (format!("[{good}, {good}]"), "also record 0"),
    ] {
        std::fs::write(&tables, &file).unwrap();
        let scored = sqlgate()
            .args(["score", "--metrics", "esm", "--tables"])
            .arg(&tables)
            .arg("--gold")
            .arg(&gold)
            .arg("--pred")
            .arg(&pred)
            .run();
        scored.assert_bad_input(&["tables.json", words]);
        let built = sqlgate()
            .args(["schema-db", "--tables"])
            .arg(&tables)
            .arg("--out")
            .arg(dir.path().join("out"))
            .run();
        built.assert_bad_input(&["tables.json", words]);
    }
    std::fs::write(&tables, "[]").unwrap();
    let built = sqlgate()
        .args(["schema-db", "--tables"])
        .arg(&tables)
        .arg("--out")
        .arg(dir.path().join("out"))
        .run();
    built.assert_bad_input(&["tables.json", "no databases"]);
}

#[test]
fn a_database_written_during_the_run_is_never_scored_silently() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        .unwrap();
    let pairs = 1500;
    // Distinct queries for every pair and side: a run executes each distinct query once, and
    // the writer must be able to move the database between the two reads of a pair.
    let gold = dir.path().join("gold.txt");
    let golds: String = (0..pairs)
        .map(|i| format!("SELECT count(*) FROM t WHERE {i} = {i}\tdb\n"))
        .collect();
    std::fs::write(&gold, golds).unwrap();
    let pred = dir.path().join("pred.txt");
    let preds: String = (0..pairs)
        .map(|i| format!("SELECT count(*) FROM t WHERE {i} >= {i}\n"))
        .collect();
    std::fs::write(&pred, preds).unwrap();
    // A file, not a pipe: the report is larger than a pipe holds and nobody reads it meanwhile.
    let report_path = dir.path().join("report.json");
    let mut child = sqlgate()
        .args(["score", "--format", "json", "--gold"])
        .arg(&gold)
        .arg("--pred")
        .arg(&pred)
        .stdout(std::fs::File::create(&report_path).unwrap())
        .stderr(Stdio::piped())
        .spawn();
    // The application keeps writing while the gate reads.
    let writer = rusqlite::Connection::open(&db).unwrap();
    let mut commits = 0;
    while child.try_wait().unwrap().is_none() {
        writer.execute("INSERT INTO t VALUES (1)", []).unwrap();
        commits += 1;
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(commits > 0);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    let verdicts = &report["summary"]["verdicts"];
    assert!(
        verdicts["incorrect"].is_null(),
        "scored off a moving database: {verdicts}"
    );
    let cases = report["cases"].as_array().unwrap();
    let changed = cases
        .iter()
        .filter(|case| {
            case["error"]
                .as_str()
                .is_some_and(|e| e.contains("changed during the run"))
        })
        .count();
    let correct = cases
        .iter()
        .filter(|case| case["verdict"] == "correct")
        .count();
    assert_eq!(changed + correct, pairs, "{verdicts}");
    assert!(
        changed > 0,
        "the writer never overlapped the run: {verdicts}"
    );
}
