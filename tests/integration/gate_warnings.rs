//! Things that lower or void the numbers without failing a test are said out loud: a database
//! without rows (EX there compares empty results), a vote with nothing to vote on, replies cut
//! short by the token limit.

use std::path::Path;

use crate::support::sqlgate;

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

#[test]
fn empty_databases_and_idle_votes_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    write_suite(dir.path());
    let run = sqlgate().current_dir(dir.path()).args(["test"]).run();
    let text = &run.stdout;
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

    let score = sqlgate()
        .current_dir(dir.path())
        .args([
            "score",
            "--gold",
            "suite.toml",
            "--pred",
            "predictions.jsonl",
        ])
        .run();
    let stderr = &score.stderr;
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
    let run = sqlgate().current_dir(dir.path()).args(["test"]).run();
    let text = &run.stdout;
    assert!(!text.contains("has no rows"), "{text}");
}

/// A test-suite folder: a schema-only original, and the same schema with or without rows
/// beside it.
fn write_folder(dir: &Path, variant_rows: bool) {
    let folder = dir.join("dbs/nothing");
    std::fs::create_dir_all(&folder).unwrap();
    for (file, rows) in [
        ("nothing.sqlite", false),
        ("nothing_1.sqlite", variant_rows),
    ] {
        let db = rusqlite::Connection::open(folder.join(file)).unwrap();
        db.execute_batch("CREATE TABLE t(a INTEGER, b TEXT);")
            .unwrap();
        if rows {
            db.execute_batch("INSERT INTO t VALUES (1, 'x');").unwrap();
        }
    }
    std::fs::write(dir.join("gold.txt"), "SELECT a FROM t\tnothing\n").unwrap();
    std::fs::write(dir.join("pred.txt"), "SELECT a FROM t WHERE b = 'y'\n").unwrap();
}

#[test]
fn a_schema_only_original_is_judged_with_the_rest_of_its_folder() {
    for variant_rows in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        write_folder(dir.path(), variant_rows);
        let score = sqlgate()
            .current_dir(dir.path())
            .args(["score", "--gold", "gold.txt", "--pred", "pred.txt"])
            .args(["--db-dir", "dbs", "--mode", "testsuite"])
            .run();
        let stderr = &score.stderr;
        assert_eq!(score.status.code(), Some(0), "{stderr}");
        if variant_rows {
            // The variant with a row tells the wrong query from its gold.
            assert!(!stderr.contains("has no rows"), "{stderr}");
            assert!(score.stdout.contains("0.000"), "{}", score.stdout);
        } else {
            assert!(
                stderr.contains(
                    "nothing.sqlite and the 1 other databases of its folder have no rows"
                ),
                "{stderr}"
            );
        }
    }
}

/// An OpenAI-format server answering each question with a fixed `content` (`None`: null, as a
/// reasoning model sends when thinking used its whole budget) and `finish_reason`.
fn serve_choices(choices: &'static [(&'static str, Option<&'static str>, &'static str)]) -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let address = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for mut request in server.incoming_requests() {
            let mut body = String::new();
            let _ = request.as_reader().read_to_string(&mut body);
            let response = match choices
                .iter()
                .find(|(question, ..)| body.contains(question))
            {
                Some((_, content, finish_reason)) => {
                    let chat = serde_json::json!({"choices": [{"index": 0,
                        "finish_reason": finish_reason,
                        "message": {"role": "assistant", "content": content}}]});
                    tiny_http::Response::from_string(chat.to_string())
                }
                None => tiny_http::Response::from_string("unknown").with_status_code(400),
            };
            let _ = request.respond(response);
        }
    });
    address
}

const CUT_SHORT: &[(&str, Option<&str>, &str)] = &[
    ("Which a?", Some("SELECT a FROM"), "length"),
    (
        "Which b?",
        Some("Let me look at the columns of t. Column b holds"),
        "length",
    ),
    ("Which c?", None, "length"),
    ("Which d?", Some("SELECT a FROM t"), "stop"),
];

/// Issue 24 item 3: a reply cut short is counted whatever it was judged, garbage included (the
/// warning used to count only the replies that still held SQL).
#[test]
fn every_reply_cut_short_is_counted_garbage_included() {
    let dir = tempfile::tempdir().unwrap();
    write_suite(dir.path());
    let base_url = serve_choices(CUT_SHORT);
    std::fs::write(
        dir.path().join("schema.sql"),
        "CREATE TABLE t(a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'x');",
    )
    .unwrap();
    let cases: Vec<String> = CUT_SHORT
        .iter()
        .enumerate()
        .map(|(i, (question, ..))| {
            serde_json::json!({"id": format!("c{i}"), "db": "nothing", "question": question,
                "gold": "SELECT a FROM t"})
            .to_string()
        })
        .collect();
    std::fs::write(dir.path().join("cases.jsonl"), cases.join("\n")).unwrap();
    std::fs::write(
        dir.path().join("sqlgate.toml"),
        format!(
            "[[suite]]\nbenchmark = \"suite.toml\"\n\n[[system]]\nname = \"model\"\n\
             type = \"openai\"\nbase_url = \"{base_url}\"\nmodel = \"m\"\nmax_tokens = 16\n"
        ),
    )
    .unwrap();
    let warning = "cut short by its token limit (finish_reason `length`) in 3 of 4 cases (75%), \
                   2 judged garbage (no SQL in the reply)";
    for record in ["new", "none"] {
        let run = sqlgate()
            .current_dir(dir.path())
            .args(["test", "--record", record, "--junit", "junit.xml"])
            .run();
        let text = &run.stdout;
        assert_eq!(run.status.code(), Some(100), "{text}");
        assert!(text.contains(warning), "--record {record}: {text}");
        assert!(text.contains("raise `max_tokens`"), "{text}");
        let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
        let truncated = junit
            .matches(r#"name="reply_truncated" value="true""#)
            .count();
        assert_eq!(truncated, 3, "{junit}");
    }
}
