//! Names and ids are data (issue 38): a case id, database, suite, system or family name with a
//! control character is refused where it is read (exit 2, naming the file and record), so no
//! report prints a line of it; what sqlgate writes into TOML, YAML, XML, HTML or a GitHub
//! workflow command is that format's escaping of the text, read back as the same text.

use std::path::Path;

use crate::support::{sqlgate, Run};

/// The id that printed `::warning::pwned` as a line of its own in four places of the terminal
/// report, which GitHub Actions runs as a workflow command.
const HOSTILE_ID: &str = "c\n::warning::pwned";

/// A folder with `db/shop.sqlite` (one table `t` of one row).
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("db")).unwrap();
    let db = rusqlite::Connection::open(dir.path().join("db/shop.sqlite")).unwrap();
    db.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
        .unwrap();
    dir
}

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::write(dir.join(file), text).unwrap();
}

fn score(dir: &Path, gold: &str, pred: &str) -> Run {
    sqlgate()
        .args(["score", "--gold", gold, "--pred", pred, "--db-dir", "db"])
        .current_dir(dir)
        .run()
}

/// No line of any output begins with `::` (GitHub trims leading white space first).
fn assert_no_workflow_command(run: &Run) {
    let text = run.text();
    let command = text
        .lines()
        .find(|line| line.trim_start().starts_with("::"));
    assert!(command.is_none(), "a workflow command line: {text}");
}

/// Exit 2, naming `place` (file and record or line) and the control character.
fn assert_refused(run: &Run, place: &str) {
    run.assert_code(2);
    assert!(
        run.stderr.contains(place),
        "expected `{place}`: {}",
        run.stderr
    );
    assert!(run.stderr.contains("U+000A"), "{}", run.stderr);
    assert_no_workflow_command(run);
}

fn jsonl(records: &[serde_json::Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

#[test]
fn a_case_id_with_a_control_character_is_refused_at_load() {
    let dir = folder();
    let good =
        serde_json::json!({"id": "a", "db": "shop", "question": "q", "gold": "SELECT x FROM t"});
    let bad = serde_json::json!({"id": HOSTILE_ID, "db": "shop", "question": "q", "gold": "SELECT x FROM t"});
    write(
        dir.path(),
        "suite.toml",
        "name = \"s\"\ncases = \"cases.jsonl\"\ndb_dir = \"db\"\n",
    );
    write(dir.path(), "cases.jsonl", &jsonl(&[good.clone(), bad]));
    write(
        dir.path(),
        "pred.jsonl",
        "{\"id\": \"a\", \"sql\": \"SELECT 1\"}\n",
    );
    assert_refused(
        &score(dir.path(), "suite.toml", "pred.jsonl"),
        "cases.jsonl: record 1 (line 2)",
    );

    // JSON gold (TrustSQL, BIRD): the record is named.
    let trustsql = serde_json::json!([
        {"id": "a", "db_id": "shop", "question": "q", "query": "SELECT x FROM t", "type": "sql", "note": ""},
        {"id": HOSTILE_ID, "db_id": "shop", "question": "q", "query": "SELECT x FROM t", "type": "sql", "note": ""}
    ]);
    write(dir.path(), "trust.json", &trustsql.to_string());
    assert_refused(
        &score(dir.path(), "trust.json", "pred.jsonl"),
        "trust.json: record 1",
    );
    let bird = serde_json::json!([
        {"question_id": HOSTILE_ID, "db_id": "shop", "question": "q", "SQL": "SELECT x FROM t"}
    ]);
    write(dir.path(), "bird.json", &bird.to_string());
    assert_refused(
        &score(dir.path(), "bird.json", "pred.jsonl"),
        "bird.json: record 0",
    );

    // A Defog CSV's ids are row numbers; its database name is the row's text.
    write(
        dir.path(),
        "questions.csv",
        "db_name,query_category,query,question\nshop,c,SELECT x FROM t,q\n\"sh\nop\",c,SELECT x FROM t,q\n",
    );
    assert_refused(
        &score(dir.path(), "questions.csv", "pred.jsonl"),
        "questions.csv: record 1",
    );

    // A predictions file's id, refused before it is looked up.
    write(dir.path(), "cases.jsonl", &jsonl(&[good]));
    let pred = jsonl(&[serde_json::json!({"id": HOSTILE_ID, "sql": "SELECT 1"})]);
    write(dir.path(), "pred.jsonl", &pred);
    assert_refused(
        &score(dir.path(), "suite.toml", "pred.jsonl"),
        "pred.jsonl: record 0 (line 1)",
    );
}

/// Other control characters than line breaks (NUL, escape, a bidirectional override) are
/// refused alike, and a suite, system or family name in `sqlgate.toml` too.
#[test]
fn names_in_the_configuration_with_control_characters_are_refused() {
    let dir = folder();
    write(
        dir.path(),
        "cases.jsonl",
        &jsonl(&[
            serde_json::json!({"id": "a", "db": "shop", "question": "q", "gold": "SELECT x FROM t"}),
        ]),
    );
    write(
        dir.path(),
        "pred.jsonl",
        "{\"id\": \"a\", \"sql\": \"SELECT x FROM t\"}\n",
    );
    for control in ["\0", "\u{1b}[31m", "\u{202e}", "\r"] {
        let name = toml::Value::String(format!("x{control}y")).to_string();
        write(
            dir.path(),
            "suite.toml",
            &format!("name = {name}\ncases = \"cases.jsonl\"\ndb_dir = \"db\"\n"),
        );
        let configs = [
            format!("[[suite]]\nbenchmark = \"suite.toml\"\n[[system]]\nname = \"r\"\ntype = \"replay\"\npredictions = \"pred.jsonl\"\n"),
            format!("[[suite]]\nname = {name}\nbenchmark = \"suite.toml\"\n[[system]]\nname = \"r\"\ntype = \"replay\"\npredictions = \"pred.jsonl\"\n"),
            format!("[[suite]]\nname = \"s\"\nbenchmark = \"suite.toml\"\n[[system]]\nname = {name}\ntype = \"replay\"\npredictions = \"pred.jsonl\"\n"),
            format!("[[suite]]\nname = \"s\"\nbenchmark = \"suite.toml\"\nfamilies = {{ {name} = \"cases.jsonl\" }}\n[[system]]\nname = \"r\"\ntype = \"replay\"\npredictions = \"pred.jsonl\"\n"),
        ];
        for config in configs {
            write(dir.path(), "sqlgate.toml", &config);
            let run = sqlgate()
                .args(["test", "--list"])
                .current_dir(dir.path())
                .run();
            run.assert_code(2);
            assert!(
                run.stderr.contains("control character"),
                "{config}\n{}",
                run.stderr
            );
            assert!(!run.stderr.contains(control), "printed raw: {}", run.stderr);
        }
    }
}
