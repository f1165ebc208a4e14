//! The `replay` system: answers from a predictions file, looked up by case id.

use std::path::Path;

use sqlgate::system::replay::ReplaySystem;
use sqlgate::system::{Request, System, SystemErrorKind};
use sqlgate_eval::loaders::{load, Benchmark, LoadOptions, PredFormat};

/// A BIRD-format benchmark of three cases in `dir`.
fn benchmark(dir: &Path) -> Benchmark {
    rusqlite::Connection::open(dir.join("shop.sqlite"))
        .unwrap()
        .execute_batch("CREATE TABLE book(title TEXT, author TEXT)")
        .unwrap();
    let gold = r#"[
        {"question_id": 10, "db_id": "shop", "question": "How many books?", "evidence": "", "SQL": "SELECT count(*) FROM book", "difficulty": "simple"},
        {"question_id": 11, "db_id": "shop", "question": "Who wrote Emma?", "evidence": "", "SQL": "SELECT author FROM book WHERE title = 'Emma'", "difficulty": "simple"},
        {"question_id": 12, "db_id": "shop", "question": "Any unicorns?", "evidence": "", "SQL": "SELECT 1", "difficulty": "simple"}
    ]"#;
    let path = dir.join("dev.json");
    std::fs::write(&path, gold).unwrap();
    load(&path, &LoadOptions::on(sqlgate_engine_sqlite::files())).unwrap()
}

fn request(id: &str) -> Request {
    Request::question(id, "shop", "shop.sqlite", "?")
}

#[test]
fn answers_each_case_from_jsonl_predictions() {
    let dir = tempfile::tempdir().unwrap();
    let bench = benchmark(dir.path());
    let predictions = dir.path().join("predictions.jsonl");
    std::fs::write(
        &predictions,
        concat!(
            r#"{"id": 12, "abstain": true}"#,
            "\n",
            r#"{"id": 10, "sql": "SELECT count(*) FROM book;"}"#,
            "\n",
            r#"{"id": "11", "sql": "```sql\nSELECT author FROM book\n```"}"#,
            "\n"
        ),
    )
    .unwrap();
    let system = ReplaySystem::load(&predictions, None, &bench).unwrap();

    let counted = system.answer(&request("10")).unwrap();
    assert_eq!(counted.sql.as_deref(), Some("SELECT count(*) FROM book"));
    let fenced = system.answer(&request("11")).unwrap();
    assert_eq!(fenced.sql.as_deref(), Some("SELECT author FROM book"));
    assert!(fenced.cleaned);
    assert_eq!(system.answer(&request("12")).unwrap().sql, None);

    let missing = system.answer(&request("13")).unwrap_err();
    assert_eq!(missing.kind, SystemErrorKind::NotRecorded);
    assert!(!missing.retryable);
}

#[test]
fn answers_from_positional_bird_predictions() {
    let dir = tempfile::tempdir().unwrap();
    let bench = benchmark(dir.path());
    let predictions = dir.path().join("predict_dev.json");
    let separator = "\\t----- bird -----\\t";
    std::fs::write(
        &predictions,
        format!(
            r#"{{"0": "SELECT 10{separator}shop", "1": "SELECT 11{separator}shop", "2": "SELECT 12{separator}shop"}}"#
        ),
    )
    .unwrap();
    let system = ReplaySystem::load(&predictions, Some(PredFormat::Bird), &bench).unwrap();
    for id in ["10", "11", "12"] {
        let reply = system.answer(&request(id)).unwrap();
        assert_eq!(reply.sql, Some(format!("SELECT {id}")));
    }
}

#[test]
fn the_fingerprint_follows_the_file_contents() {
    let dir = tempfile::tempdir().unwrap();
    let bench = benchmark(dir.path());
    let predictions = dir.path().join("predictions.jsonl");
    let write = |sql: &str| {
        let text: String = ["10", "11", "12"]
            .iter()
            .map(|id| format!("{{\"id\": {id}, \"sql\": \"{sql}\"}}\n"))
            .collect();
        std::fs::write(&predictions, text).unwrap();
        ReplaySystem::load(&predictions, None, &bench)
            .unwrap()
            .fingerprint()
    };
    let first = write("SELECT 1");
    assert_eq!(write("SELECT 1"), first);
    assert_ne!(write("SELECT 2"), first);
}

#[test]
fn a_case_the_file_does_not_answer_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let bench = benchmark(dir.path());
    let predictions = dir.path().join("predictions.jsonl");
    std::fs::write(&predictions, "{\"id\": 10, \"sql\": \"SELECT 1\"}\n").unwrap();
    let system = ReplaySystem::load(&predictions, None, &bench).unwrap();
    assert_eq!(
        system.answer(&request("10")).unwrap().sql.as_deref(),
        Some("SELECT 1")
    );
    let missing = system.answer(&request("11")).unwrap_err();
    assert_eq!(missing.kind, SystemErrorKind::NotRecorded);
    assert!(
        missing.message.contains("no answer for case `11`"),
        "{}",
        missing.message
    );
}

#[test]
fn a_bad_predictions_file_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let bench = benchmark(dir.path());
    let predictions = dir.path().join("predictions.jsonl");
    std::fs::write(
        &predictions,
        "{\"id\": 10, \"sql\": \"SELECT 1\"}\n{\"id\": 11\n",
    )
    .unwrap();
    let error = ReplaySystem::load(&predictions, None, &bench)
        .err()
        .unwrap();
    assert_eq!(error.file, predictions);

    let absent = dir.path().join("absent.jsonl");
    assert_eq!(
        ReplaySystem::load(&absent, None, &bench)
            .err()
            .unwrap()
            .file,
        absent
    );
}

#[test]
fn a_prediction_that_does_not_say_what_the_system_answered_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let bench = benchmark(dir.path());
    let predictions = dir.path().join("predictions.jsonl");
    let refused = [
        (r#"{"id": 11, "sqI": "SELECT 1"}"#, "sqI"),
        (r#"{"id": 11, "sql": "SELECT 1", "abstain": true}"#, "both"),
        (r#"{"id": 11}"#, "needs `sql`"),
        (
            r#"{"id": 11, "sql": "SELECT 1", "sql": "SELECT 2"}"#,
            "duplicate field `sql`",
        ),
        (r#"{"id": 10, "sql": "SELECT 2"}"#, "duplicate prediction"),
    ];
    for (line, named) in refused {
        std::fs::write(
            &predictions,
            format!("{{\"id\": 10, \"sql\": \"SELECT 1\"}}\n{line}\n"),
        )
        .unwrap();
        let error = ReplaySystem::load(&predictions, None, &bench)
            .err()
            .expect(line);
        assert_eq!((&error.file, error.line), (&predictions, Some(2)), "{line}");
        assert!(error.message.contains(named), "{line}: {error}");
    }
}

#[test]
fn replayed_predictions_carry_their_token_usage_to_the_cost_gates() {
    use crate::support::{demo_workspace, repo, sqlgate};
    let dir = demo_workspace();
    let predictions = dir.path().join("sample.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(&predictions)
        .unwrap()
        .lines()
        .map(|line| {
            let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
            record["usage"] = serde_json::json!({"prompt_tokens": 100, "completion_tokens": 10});
            record.to_string()
        })
        .collect();
    std::fs::write(&predictions, lines.join("\n") + "\n").unwrap();
    let gate = |threshold: &str| {
        let config = format!(
            "[[suite]]\nbenchmark = \"{}\"\ngate = {{ tokens_mean = \"{threshold}\" }}\n\n\
             [[system]]\nname = \"sample\"\ntype = \"replay\"\npredictions = \"sample.jsonl\"\n",
            repo().join("benchmarks/demo/suite.toml").display()
        );
        std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
        sqlgate().arg("test").current_dir(dir.path()).run()
    };
    let failed = gate("<= 100");
    failed.assert_code(100);
    assert!(
        failed
            .text()
            .contains("tokens_mean = 110 does not meet <= 100"),
        "{}",
        failed.text()
    );
    gate("<= 110").assert_code(0);

    // A line whose usage is not both counts is refused by the reader systems share.
    std::fs::write(
        &predictions,
        r#"{"id": "q01", "sql": "SELECT 1", "usage": {"total_tokens": 3}}"#,
    )
    .unwrap();
    let refused = gate("<= 110");
    refused.assert_code(2);
    assert!(
        refused.text().contains("sample.jsonl"),
        "{}",
        refused.text()
    );
    assert!(
        refused.text().contains("unknown field `total_tokens`"),
        "{}",
        refused.text()
    );
}
