//! Things that lower or void the numbers without failing a test are said out loud: a database
//! without rows (EX there compares empty results), a vote with nothing to vote on.

use std::path::Path;
use std::process::{Command, Output};

fn write_suite(dir: &Path) {
    // A schema-only database, as Spider's test databases are without their data.
    std::fs::write(dir.join("schema.sql"), "CREATE TABLE t(a INTEGER, b TEXT);").unwrap();
    std::fs::write(
        dir.join("suite.toml"),
        "name = \"empty\"\ncases = \"cases.jsonl\"\ndb_dir = \"build\"\n[databases.nothing]\nscripts = [\"schema.sql\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("cases.jsonl"),
        "{\"id\": \"c1\", \"db\": \"nothing\", \"question\": \"Which a?\", \"gold\": \"SELECT a FROM t\"}\n\
         {\"id\": \"c2\", \"db\": \"nothing\", \"question\": \"Which b?\", \"gold\": \"SELECT b FROM t\"}\n",
    )
    .unwrap();
    // Both wrong, and both "correct" on a database without rows.
    std::fs::write(
        dir.join("predictions.jsonl"),
        "{\"id\": \"c1\", \"sql\": \"SELECT b FROM t WHERE a > 3\"}\n{\"id\": \"c2\", \"sql\": \"SELECT a FROM t\"}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("sqlgate.toml"),
        "[[suite]]\nbenchmark = \"suite.toml\"\n\n[[system]]\nname = \"replayed\"\ntype = \"replay\"\n\
         predictions = \"predictions.jsonl\"\nabstention = { vote = 1.0 }\n",
    )
    .unwrap();
}

fn sqlgate(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sqlgate"))
        .args(args)
        .current_dir(dir)
        .env_remove("CI")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

#[test]
fn empty_databases_and_idle_votes_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    write_suite(dir.path());
    let run = sqlgate(dir.path(), &["test"]);
    let text = String::from_utf8_lossy(&run.stdout).into_owned();
    assert_eq!(run.status.code(), Some(0), "{text}");
    assert!(
        text.contains("warning:") && text.contains("nothing.sqlite has no rows in any table"),
        "{text}"
    );
    assert!(text.contains("cases on it: 2"), "{text}");
    assert!(
        text.contains("`abstention.vote` is set, but none of the 2 answers"),
        "{text}"
    );

    let score = sqlgate(
        dir.path(),
        &[
            "score",
            "--gold",
            "suite.toml",
            "--pred",
            "predictions.jsonl",
        ],
    );
    let stderr = String::from_utf8_lossy(&score.stderr).into_owned();
    assert_eq!(score.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("warning:") && stderr.contains("has no rows in any table"),
        "{stderr}"
    );
}

#[test]
fn a_database_with_rows_is_not_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    write_suite(dir.path());
    std::fs::write(
        dir.path().join("schema.sql"),
        "CREATE TABLE t(a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'x');",
    )
    .unwrap();
    let run = sqlgate(dir.path(), &["test"]);
    let text = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(!text.contains("has no rows"), "{text}");
}
