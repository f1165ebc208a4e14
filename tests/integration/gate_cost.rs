//! Latency and token usage, end to end: an `openai` system against a real OpenAI-format server
//! on 127.0.0.1 that reports `usage` and answers each question after its own delay. The
//! recording run and its replay in CI (and `sqlgate merge` of the run's record) give the same
//! p50/p95, tokens and gate verdicts; a tokens gate fails; a cassette written before latency
//! and usage were recorded still reads, and its cost gates fail closed saying why.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{demo, demo_workspace, sqlgate, Run};

/// Per case: the question, the model's answer, how long the server takes, the prompt and
/// completion tokens it reports.
const CASES: [(&str, &str, u64, u64, u64); 4] = [
    ("How many rows?", "SELECT count(*) FROM t", 10, 120, 8),
    ("Largest value?", "SELECT max(a) FROM t", 60, 130, 9),
    ("Smallest value?", "SELECT min(a) FROM t", 120, 140, 10),
    ("Sum of values?", "SELECT 0", 200, 150, 11),
];
const GOLDS: [&str; 4] = [
    "SELECT count(*) FROM t",
    "SELECT max(a) FROM t",
    "SELECT min(a) FROM t",
    "SELECT sum(a) FROM t",
];

/// Serves chat completions with `usage` after each question's delay; counts the chat requests.
fn serve() -> (String, Arc<AtomicUsize>) {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let address = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    std::thread::spawn(move || {
        for mut request in server.incoming_requests() {
            let counter = Arc::clone(&counter);
            std::thread::spawn(move || {
                let mut body = String::new();
                let _ = request.as_reader().read_to_string(&mut body);
                let body: Value = serde_json::from_str(&body).unwrap_or_default();
                let prompt = body["messages"]
                    .as_array()
                    .and_then(|messages| messages.last())
                    .and_then(|message| message["content"].as_str())
                    .unwrap_or_default();
                let Some(&(_, sql, delay, prompt_tokens, completion_tokens)) =
                    CASES.iter().find(|case| prompt.contains(case.0))
                else {
                    // `GET /models` and anything else: not listed.
                    let _ = request.respond(tiny_http::Response::empty(404));
                    return;
                };
                counter.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(delay));
                let chat = json!({
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": sql}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}
                });
                let _ = request.respond(tiny_http::Response::from_string(chat.to_string()));
            });
        }
    });
    (address, asked)
}

fn write_suite(dir: &Path, base_url: &str, gate: &str) {
    std::fs::write(
        dir.join("schema.sql"),
        "CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (3), (1), (2);",
    )
    .unwrap();
    std::fs::write(
        dir.join("suite.toml"),
        "name = \"tiny\"\ncases = \"cases.jsonl\"\ndb_dir = \"build\"\n[databases.numbers]\nscripts = [\"schema.sql\"]\n",
    )
    .unwrap();
    let cases: Vec<String> = CASES
        .iter()
        .zip(GOLDS)
        .enumerate()
        .map(|(i, (case, gold))| {
            json!({"id": format!("c{i}"), "db": "numbers", "question": case.0, "gold": gold})
                .to_string()
        })
        .collect();
    std::fs::write(dir.join("cases.jsonl"), cases.join("\n")).unwrap();
    let config = format!(
        "[[suite]]\nbenchmark = \"suite.toml\"\ngate = {{ {gate} }}\n\n[[system]]\nname = \
         \"model\"\ntype = \"openai\"\nbase_url = \"{base_url}\"\nmodel = \"test-model\"\n\
         throttle = {{ concurrency = 4 }}\n"
    );
    std::fs::write(dir.join("sqlgate.toml"), config).unwrap();
}

/// The gates that hold on the recording: latency under 30 s, tokens under 1000.
const HOLDING: &str = r#"latency_p50 = "<= 30", latency_p95 = "<= 30", tokens_mean = "<= 1000", tokens_per_correct = "<= 1000""#;

/// The summary's cost line of suite `tiny`.
fn cost_line(run: &Run) -> String {
    run.text()
        .lines()
        .find(|line| line.starts_with("tiny: latency") || line.starts_with("tiny: tokens"))
        .unwrap_or_else(|| panic!("no cost line:\n{}", run.text()))
        .to_string()
}

/// Every JUnit property named `name`, by test case name (and the gates' values).
fn junit_properties(dir: &Path, name: &str) -> Vec<(String, String)> {
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .filter_map(|case| {
            let value = case
                .descendants()
                .find(|p| p.has_tag_name("property") && p.attribute("name") == Some(name))?
                .attribute("value")?
                .to_string();
            Some((case.attribute("name")?.to_string(), value))
        })
        .collect()
}

fn test(dir: &Path, args: &[&str]) -> Run {
    sqlgate()
        .args(["test", "--junit", "junit.xml"])
        .args(args)
        .current_dir(dir)
        .run()
}

#[test]
fn a_replay_in_ci_gives_the_recording_run_s_latency_tokens_and_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let (base_url, asked) = serve();
    write_suite(dir.path(), &base_url, HOLDING);

    // c3 is wrong, and new: the run fails on it, the cost gates hold.
    let recording = test(
        dir.path(),
        &["--record", "new", "--record-out", "record.json"],
    );
    recording.assert_code(100);
    assert_eq!(asked.load(Ordering::Relaxed), 4);
    let text = recording.text();
    for gate in [
        "latency_p50",
        "latency_p95",
        "tokens_mean",
        "tokens_per_correct",
    ] {
        assert!(
            text.lines()
                .any(|l| l.contains("PASS [") && l.contains(&format!("tiny::gate::{gate} "))),
            "{gate}: {text}"
        );
    }
    // Tokens: (128 + 139 + 150 + 161) / 4 cases, and over the 3 correct ones.
    let line = cost_line(&recording);
    assert!(
        line.ends_with("over 4 answer(s); tokens 144.5 per case, 192.7 per correct case"),
        "{line}"
    );
    let latency = junit_properties(dir.path(), "latency_ms");
    assert_eq!(latency.len(), 4, "{latency:?}");
    for ((case, ms), (_, _, delay, _, _)) in latency.iter().zip(CASES) {
        let ms: u64 = ms.parse().unwrap();
        assert!(ms >= delay, "{case}: {ms} ms, the server took {delay} ms");
    }
    let prompt_tokens = junit_properties(dir.path(), "prompt_tokens");
    let expected: Vec<String> = CASES.iter().map(|c| c.3.to_string()).collect();
    let got: Vec<String> = prompt_tokens.iter().map(|(_, v)| v.clone()).collect();
    assert_eq!(got, expected);
    let gate_values = junit_properties(dir.path(), "latency_p95");
    let cassette =
        std::fs::read_to_string(dir.path().join("snapshots/predictions/model.jsonl")).unwrap();
    assert!(
        cassette
            .lines()
            .all(|l| l.contains("\"latency_ms\":") && l.contains("\"usage\":{\"prompt_tokens\":")),
        "{cassette}"
    );

    // CI: nothing asked, the same numbers, the same verdicts.
    let summary = dir.path().join("summary.md");
    let replay = sqlgate()
        .args(["test", "--junit", "junit.xml", "--html", "report.html"])
        .env("CI", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .current_dir(dir.path())
        .run();
    replay.assert_code(100);
    // The GitHub step summary and the HTML report say it too.
    let cost = line.strip_prefix("tiny: ").unwrap();
    let markdown = std::fs::read_to_string(&summary).unwrap();
    assert!(
        markdown.contains(&format!("**Cost of tiny:** {cost}")),
        "{markdown}"
    );
    assert!(
        markdown.contains("| latency_p50 | latency_p95 |"),
        "{markdown}"
    );
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(page.contains(&format!("Cost: {cost}")), "{page}");
    assert_eq!(
        asked.load(Ordering::Relaxed),
        4,
        "the replay asked the server"
    );
    assert_eq!(cost_line(&replay), line);
    assert_eq!(junit_properties(dir.path(), "latency_ms"), latency);
    assert_eq!(junit_properties(dir.path(), "prompt_tokens"), prompt_tokens);
    assert_eq!(junit_properties(dir.path(), "latency_p95"), gate_values);
    let verdicts = |run: &Run| -> Vec<String> {
        let mut lines: Vec<String> = run
            .text()
            .lines()
            .filter(|l| l.contains("PASS [") || l.contains("FAIL ["))
            .map(|l| {
                let (status, rest) = l.trim_start().split_once(" [").unwrap();
                format!("{status} {}", rest.split_once("] ").unwrap().1)
            })
            .collect();
        lines.sort();
        lines.dedup();
        lines
    };
    assert_eq!(verdicts(&replay), verdicts(&recording));

    // The run's record merged: the same numbers again.
    let merged = sqlgate()
        .args(["merge", "record.json"])
        .current_dir(dir.path())
        .run();
    merged.assert_code(100);
    assert_eq!(cost_line(&merged), line);
}

#[test]
fn a_tokens_gate_fails_and_an_old_cassette_fails_cost_gates_closed() {
    let dir = tempfile::tempdir().unwrap();
    let (base_url, _) = serve();
    write_suite(dir.path(), &base_url, HOLDING);
    test(dir.path(), &["--record", "new"]).assert_code(100);

    // 144.5 tokens per case is over 100: the gate fails (exit 100, not a bad input).
    write_suite(dir.path(), &base_url, r#"tokens_mean = "<= 100""#);
    let over = test(dir.path(), &["--record", "none"]);
    over.assert_code(100);
    assert!(
        over.text()
            .contains("tokens_mean = 144.5 does not meet <= 100"),
        "{}",
        over.text()
    );

    // A server's counts that add up past 2^64 - 1 wrapped to "tokens 1 per case" and passed:
    // the sum is checked, and a gate on it fails closed saying why.
    let path = dir.path().join("snapshots/predictions/model.jsonl");
    let recorded = std::fs::read_to_string(&path).unwrap();
    let huge: String = recorded
        .lines()
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).unwrap();
            record["reply"]["usage"]["prompt_tokens"] = u64::MAX.into();
            record.to_string() + "\n"
        })
        .collect();
    std::fs::write(&path, huge).unwrap();
    let wrapped = test(dir.path(), &["--record", "none"]);
    wrapped.assert_code(100);
    assert!(
        wrapped.text().contains(
            "tokens_mean cannot be computed: the token counts of the 4 answer(s) add up to more \
             than 2^64 - 1"
        ),
        "{}",
        wrapped.text()
    );
    std::fs::write(&path, recorded).unwrap();

    // The cassette as an older sqlgate wrote it: no latency, no usage. It reads; the cases
    // are judged as before and every cost gate fails, saying why.
    let old: String = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).unwrap();
            record.as_object_mut().unwrap().remove("latency_ms");
            record["reply"].as_object_mut().unwrap().remove("usage");
            record.to_string() + "\n"
        })
        .collect();
    std::fs::write(&path, old).unwrap();
    write_suite(dir.path(), &base_url, HOLDING);
    let replay = test(dir.path(), &["--record", "none"]);
    replay.assert_code(100);
    let text = replay.text();
    assert!(
        text.lines()
            .any(|l| l.contains("PASS [") && l.ends_with("tiny::numbers::c0")),
        "{text}"
    );
    assert!(
        text.contains(
            "latency_p95 cannot be computed: no latency recorded for any of the 4 answer(s)"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "tokens_mean cannot be computed: no token usage recorded for any of the 4 answer(s)"
        ),
        "{text}"
    );
    assert!(!text.contains("tiny: latency"), "{text}");
}

#[test]
fn a_predictions_file_has_no_latency_and_says_so() {
    let dir = demo_workspace();
    let config = format!(
        "[[suite]]\nbenchmark = \"{}\"\ngate = {{ latency_p95 = \"<= 5\" }}\n\n[[system]]\n\
         name = \"sample\"\ntype = \"replay\"\npredictions = \"sample.jsonl\"\n",
        demo("suite.toml").display()
    );
    std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
    let run = test(dir.path(), &[]);
    run.assert_code(100);
    let text = run.text();
    assert!(
        text.contains("latency_p95 cannot be computed: no latency recorded for any of the"),
        "{text}"
    );
    assert!(junit_properties(dir.path(), "latency_ms").is_empty());
}
