//! `sqlgate test` with an `openai` system against a real OpenAI-format server on 127.0.0.1 that
//! answers 429, 500, slowly and with garbage: retries happen, classified errors fail their case
//! without aborting the run, and a rerun with `--record none` replays with zero requests.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{sqlgate, Run};

/// What the server does for a question: its misbehaviour on the first request, then its answer.
struct Script {
    question: &'static str,
    first: Misbehaviour,
    answer: &'static str,
}

#[derive(Clone, Copy)]
enum Misbehaviour {
    None,
    TooManyRequests,
    ServerError,
    Slow,
}

const SCRIPTS: &[Script] = &[
    Script {
        question: "How many rows are there?",
        first: Misbehaviour::TooManyRequests,
        answer: "Here is the query:\n```sql\nSELECT count(*) FROM t;\n```\nIt counts the rows.",
    },
    Script {
        question: "What is the largest value?",
        first: Misbehaviour::ServerError,
        answer: "SELECT max(a) FROM t",
    },
    Script {
        question: "What is the smallest value?",
        first: Misbehaviour::Slow,
        answer: "SELECT min(a) FROM t",
    },
    Script {
        question: "What is the weather like?",
        first: Misbehaviour::None,
        answer: "I like sunny days.",
    },
];

/// Requests received, by question.
type Log = Arc<Mutex<BTreeMap<String, usize>>>;

fn serve() -> (String, Log) {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let address = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
    let log: Log = Arc::default();
    let requests = Arc::clone(&log);
    std::thread::spawn(move || {
        for mut request in server.incoming_requests() {
            let requests = Arc::clone(&requests);
            std::thread::spawn(move || {
                let mut body = String::new();
                let _ = request.as_reader().read_to_string(&mut body);
                let body: Value = serde_json::from_str(&body).unwrap_or_default();
                let prompt = body["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .map(|m| m["content"].to_string());
                let script = SCRIPTS
                    .iter()
                    .find(|s| prompt.as_deref().is_some_and(|p| p.contains(s.question)));
                let Some(script) = script else {
                    let _ = request
                        .respond(tiny_http::Response::from_string("unknown").with_status_code(400));
                    return;
                };
                let seen = {
                    let mut log = requests.lock().unwrap();
                    let count = log.entry(script.question.to_string()).or_default();
                    *count += 1;
                    *count
                };
                let misbehaviour = if seen == 1 {
                    script.first
                } else {
                    Misbehaviour::None
                };
                let chat = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": script.answer}}]});
                let response = match misbehaviour {
                    Misbehaviour::TooManyRequests => tiny_http::Response::from_string(
                        "{\"error\": {\"message\": \"slow down\"}}",
                    )
                    .with_status_code(429)
                    .with_header("Retry-After: 0".parse::<tiny_http::Header>().unwrap()),
                    Misbehaviour::ServerError => {
                        tiny_http::Response::from_string("oops").with_status_code(500)
                    }
                    Misbehaviour::Slow => {
                        std::thread::sleep(Duration::from_secs(3));
                        tiny_http::Response::from_string(chat.to_string())
                    }
                    Misbehaviour::None => tiny_http::Response::from_string(chat.to_string()),
                };
                let _ = request.respond(response);
            });
        }
    });
    (address, log)
}

fn write_suite(dir: &Path, base_url: &str) {
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
    let golds = [
        "SELECT count(*) FROM t",
        "SELECT max(a) FROM t",
        "SELECT min(a) FROM t",
        "SELECT 1",
    ];
    let cases: Vec<String> = SCRIPTS
        .iter()
        .zip(golds)
        .enumerate()
        .map(|(i, (script, gold))| json!({"id": format!("c{i}"), "db": "numbers", "question": script.question, "gold": gold}).to_string())
        .collect();
    std::fs::write(dir.join("cases.jsonl"), cases.join("\n")).unwrap();
    let config = format!(
        r#"
[[suite]]
benchmark = "suite.toml"

[[system]]
name = "model"
type = "openai"
base_url = "{base_url}"
model = "test-model"
timeout_secs = 1
throttle = {{ concurrency = 2, backoff_secs = 0.05 }}
"#
    );
    std::fs::write(dir.join("sqlgate.toml"), config).unwrap();
}

/// `sqlgate test --record RECORD --junit junit.xml` in `dir`.
fn test_recording(dir: &Path, record: &str) -> Run {
    sqlgate()
        .args(["test", "--record", record, "--junit", "junit.xml"])
        .current_dir(dir)
        .run()
}

#[test]
fn recording_survives_a_misbehaving_server_and_replays_with_no_requests() {
    let dir = tempfile::tempdir().unwrap();
    let (base_url, log) = serve();
    write_suite(dir.path(), &base_url);

    let first = test_recording(dir.path(), "new");
    let text = &first.stdout;
    // The garbage answer fails its case; the run completes and reports every test.
    assert_eq!(first.status.code(), Some(100), "{text}\n{}", &first.stderr);
    let line_of = |status: &str, id: &str| {
        text.lines().any(|l| {
            l.trim_start().starts_with(status) && l.ends_with(&format!("tiny::numbers::{id}"))
        })
    };
    assert!(
        ["c0", "c1", "c2"].iter().all(|id| line_of("PASS", id)),
        "{text}"
    );
    assert!(line_of("FAIL", "c3"), "{text}");
    assert!(text.contains("system_error: garbage"), "{text}");
    assert!(text.contains("4 tests run: 3 passed, 1 failed"), "{text}");
    // A case's time includes its system call: the slow answer timed out once (1 s) first.
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let time_of = |name: &str| -> f64 {
        doc.descendants()
            .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(name))
            .and_then(|n| n.attribute("time"))
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("no time for {name}: {junit}"))
    };
    assert!(time_of("numbers::c2") >= 1.0, "{junit}");
    assert!(time_of("numbers::c3") < 1.0, "{junit}");
    let requests = log.lock().unwrap().clone();
    let counts: Vec<usize> = SCRIPTS.iter().map(|s| requests[s.question]).collect();
    assert_eq!(counts, [2, 2, 2, 1]);
    let cassette =
        std::fs::read_to_string(dir.path().join("snapshots/predictions/model.jsonl")).unwrap();
    assert_eq!(
        cassette.lines().count(),
        4,
        "every final answer is recorded:\n{cassette}"
    );
    assert!(!dir
        .path()
        .join("snapshots/predictions/model.jsonl.journal")
        .exists());

    let replay = test_recording(dir.path(), "none");
    let replayed = &replay.stdout;
    assert_eq!(replay.status.code(), Some(100), "{replayed}");
    assert!(
        replayed.contains("4 tests run: 3 passed, 1 failed"),
        "{replayed}"
    );
    assert_eq!(*log.lock().unwrap(), requests, "the replay sent requests");
}

/// A changed model with the endpoint down: the cassette holds nothing under the new
/// fingerprint, and known failures in the accepted snapshot must not hide that.
#[test]
fn missing_answers_never_pass_as_known_failures() {
    let dir = tempfile::tempdir().unwrap();
    let (base_url, _log) = serve();
    write_suite(dir.path(), &base_url);
    assert_eq!(test_recording(dir.path(), "new").status.code(), Some(100));
    // Accepted: the garbage answer (c3) is a known failure, an answer the system did give.
    let accept = sqlgate()
        .args(["test", "--record", "none", "--accept"])
        .current_dir(dir.path())
        .run();
    assert!(
        dir.path().join("snapshots/tiny.snap").exists(),
        "{accept:?}"
    );
    let replay = test_recording(dir.path(), "none");
    let text = &replay.stdout;
    assert_eq!(replay.status.code(), Some(0), "{text}");
    assert!(text.contains("tiny::numbers::c3 (known failure)"), "{text}");

    // Every case a known failure, then the model renamed and the endpoint gone.
    let snapshot = dir.path().join("snapshots/tiny.snap");
    let failing = std::fs::read_to_string(&snapshot).unwrap().replace(
        " | pass | correct | ex=1 | ",
        " | fail | incorrect | ex=0 | ",
    );
    std::fs::write(&snapshot, failing).unwrap();
    let config = dir.path().join("sqlgate.toml");
    let renamed = std::fs::read_to_string(&config)
        .unwrap()
        .replace("test-model", "test-model-2")
        .replace(&base_url, "http://127.0.0.1:9/v1");
    std::fs::write(&config, renamed).unwrap();
    let ci = sqlgate()
        .args(["test", "--junit", "junit.xml"])
        .current_dir(dir.path())
        .env("CI", "true")
        .run();
    let text = &ci.stdout;
    assert_eq!(ci.status.code(), Some(100), "{text}");
    assert!(text.contains("4 tests run: 0 passed, 4 failed"), "{text}");
    assert!(text.contains("no answer (not_recorded)"), "{text}");
    assert!(text.contains("4 answers are not in the cassette"), "{text}");
    assert!(text.contains("--record new"), "{text}");
    assert!(text.contains("predicted: (no answer)"), "{text}");
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"name="system_error_kind" value="not_recorded""#),
        "{junit}"
    );
}

/// A server answering each question with a fixed chat choice (`content`, `finish_reason`).
fn serve_choices(choices: &'static [(&'static str, &'static str, &'static str)]) -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let address = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for mut request in server.incoming_requests() {
            let mut body = String::new();
            let _ = request.as_reader().read_to_string(&mut body);
            let choice = choices
                .iter()
                .find(|(question, _, _)| body.contains(question));
            let response = match choice {
                Some((_, content, finish_reason)) => {
                    let chat = json!({"choices": [{"index": 0, "finish_reason": finish_reason,
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

const CHOICES: &[(&str, &str, &str)] = &[
    (
        "How many rows are counted?",
        "```sql\nSELECT COUNT(*) AS not_answerable_count FROM t\n```",
        "stop",
    ),
    ("Which values are there?", "SELECT a FROM", "length"),
    ("What does a ticket cost?", "not_answerable", "stop"),
];

/// The cassette keeps each reply as the model wrote it; the marker, cleaning and garbage rules
/// read it after replay. Cut replies are named; accepting a whole run prunes unused answers.
#[test]
fn replies_are_recorded_raw_read_after_replay_and_pruned_on_accept() {
    let dir = tempfile::tempdir().unwrap();
    let base_url = serve_choices(CHOICES);
    write_suite(dir.path(), &base_url);
    let golds = ["SELECT count(*) FROM t", "SELECT a FROM t", "SELECT 1"];
    let cases: Vec<String> = CHOICES
        .iter()
        .zip(golds)
        .enumerate()
        .map(|(i, ((question, _, _), gold))| {
            json!({"id": format!("c{i}"), "db": "numbers", "question": question, "gold": gold})
                .to_string()
        })
        .collect();
    std::fs::write(dir.path().join("cases.jsonl"), cases.join("\n")).unwrap();

    let run = test_recording(dir.path(), "new");
    let text = &run.stdout;
    assert_eq!(run.status.code(), Some(100), "{text}");
    // `not_answerable_count` is part of a query: the case is scored as SQL, and passes.
    assert!(
        text.lines()
            .any(|l| l.contains("PASS") && l.ends_with("tiny::numbers::c0")),
        "{text}"
    );
    assert!(text.contains("in 1 of 3 cases (33%)"), "{text}");
    assert!(
        text.contains("reply_truncated: the system's reply was cut short"),
        "{text}"
    );
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"name="reply_truncated" value="true""#),
        "{junit}"
    );
    let cassette_path = dir.path().join("snapshots/predictions/model.jsonl");
    let cassette = std::fs::read_to_string(&cassette_path).unwrap();
    assert!(cassette.contains(r#""sql":"not_answerable""#), "{cassette}");
    assert!(cassette.contains(r#""truncated":true"#), "{cassette}");
    assert!(cassette.contains("not_answerable_count"), "{cassette}");

    // The abstention is read from the recorded text on replay.
    let replay = test_recording(dir.path(), "none");
    let text = &replay.stdout;
    assert!(text.contains("predicted: (abstained)"), "{text}");

    // The ticket question is gone: accepting the whole run prunes its answer.
    std::fs::write(dir.path().join("cases.jsonl"), cases[..2].join("\n")).unwrap();
    let accept = sqlgate()
        .args(["test", "--record", "none", "--accept"])
        .current_dir(dir.path())
        .run();
    let text = &accept.stdout;
    assert!(text.contains("cassette: pruned 1 answer"), "{text}");
    let cassette = std::fs::read_to_string(&cassette_path).unwrap();
    assert_eq!(cassette.lines().count(), 2, "{cassette}");
    assert!(!cassette.contains("not_answerable\""), "{cassette}");
}

/// A chat server that computes one request at a time, as llama.cpp's server does: requests
/// wait in the listen queue, and a request whose client gave up is still computed when its
/// turn comes. It answers every question with `SELECT count(*) FROM t`, and lists no models.
struct OneSlotServer {
    base_url: String,
    /// Chat completions computed (whether anyone was still waiting for them or not).
    computed: Arc<AtomicUsize>,
    worker: std::thread::JoinHandle<()>,
}

impl OneSlotServer {
    /// Takes `delay` per completion; after `dies_after` completions (if given) it stops
    /// listening, as a killed server does, and the completion it was computing is lost.
    fn start(delay: Duration, dies_after: Option<usize>) -> OneSlotServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let computed = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&computed);
        let worker = std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Some(request) = read_request(&mut stream) else {
                    continue;
                };
                if request.starts_with("GET ") {
                    respond(&mut stream, "404 Not Found", "{}");
                    continue;
                }
                if dies_after.is_some_and(|limit| counter.load(Ordering::SeqCst) >= limit) {
                    // Killed: the listener and the connections waiting in it are dropped.
                    return;
                }
                std::thread::sleep(delay);
                counter.fetch_add(1, Ordering::SeqCst);
                let chat = json!({"choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "SELECT count(*) FROM t"}}]});
                respond(&mut stream, "200 OK", &chat.to_string());
            }
        });
        OneSlotServer {
            base_url,
            computed,
            worker,
        }
    }
}

/// The request's head and body, read as far as its `Content-Length` says.
fn read_request(stream: &mut TcpStream) -> Option<String> {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let mut received = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        let text = String::from_utf8_lossy(&received).into_owned();
        if let Some(head_end) = text.find("\r\n\r\n") {
            let length = text[..head_end]
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if received.len() >= head_end + 4 + length {
                return Some(text);
            }
        }
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return None,
            Ok(read) => received.extend_from_slice(&buffer[..read]),
        }
    }
}

fn respond(stream: &mut TcpStream, status: &str, body: &str) {
    // The client may have given up already.
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// A suite of `count` questions for the one-slot server, asked with `system` settings.
fn write_counting_suite(dir: &Path, count: usize, base_url: &str, system: &str) {
    write_suite(dir, base_url);
    let cases: Vec<String> = (0..count)
        .map(|i| {
            json!({"id": format!("q{i:02}"), "db": "numbers",
                "question": format!("Question {i}: how many rows are there?"),
                "gold": "SELECT count(*) FROM t"})
            .to_string()
        })
        .collect();
    std::fs::write(dir.join("cases.jsonl"), cases.join("\n")).unwrap();
    let config = format!(
        r#"
[[suite]]
benchmark = "suite.toml"

[[system]]
name = "model"
type = "openai"
base_url = "{base_url}"
model = "test-model"
{system}
"#
    );
    std::fs::write(dir.join("sqlgate.toml"), config).unwrap();
}

fn cassette_lines(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("snapshots/predictions/model.jsonl"))
        .map_or(0, |cassette| cassette.lines().count())
}

/// The issue's setting, scaled down: a server computing one answer at a time, a timeout of
/// three answers' time, and the default concurrency of 4, so that the fourth request in the
/// queue times out. The concurrency adapts: every case is answered, and the server computes
/// few completions nobody waited for.
#[test]
fn a_one_slot_server_answers_every_case_about_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = OneSlotServer::start(Duration::from_millis(250), None);
    write_counting_suite(dir.path(), 39, &server.base_url, "timeout_secs = 0.75");
    let run = test_recording(dir.path(), "new");
    let text = &run.stdout;
    assert_eq!(run.status.code(), Some(0), "{text}\n{}", &run.stderr);
    assert!(text.contains("39 tests run: 39 passed"), "{text}");
    assert_eq!(cassette_lines(dir.path()), 39);
    let computed = server.computed.load(Ordering::SeqCst);
    assert!(
        computed * 10 <= 39 * 12,
        "the server computed {computed} completions for 39 cases\n{text}"
    );
    assert!(text.contains("asked 39 questions"), "{text}");
    assert!(text.contains("concurrency settled at"), "{text}");
}

/// Nothing listens: the check before asking says so, and no case is asked or waits for
/// retries.
#[test]
fn a_closed_port_fails_the_run_at_once_with_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    write_counting_suite(dir.path(), 39, &format!("http://127.0.0.1:{port}/v1"), "");
    let run = test_recording(dir.path(), "new");
    let text = &run.stdout;
    assert_eq!(run.status.code(), Some(69), "{text}");
    assert!(text.contains("39 tests run: 0 passed, 39 failed"), "{text}");
    let cause = format!("connection refused at 127.0.0.1:{port} (checked before asking)");
    assert!(text.contains(&format!("not asked: {cause}")), "{text}");
    assert!(text.contains("39 cases were not asked"), "{text}");
    assert!(
        text.contains(&format!("the system was not asked: {cause}")),
        "{text}"
    );
    assert_eq!(cassette_lines(dir.path()), 0);
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert_eq!(
        junit
            .matches(r#"name="system_error_kind" value="unavailable""#)
            .count(),
        39
    );

    // Accepted as failing, the cases are known failures; still, a case that was not asked
    // never passes as one, and no verdict of the earlier run is reused.
    let accept = sqlgate()
        .args(["test", "--record", "new", "--accept"])
        .current_dir(dir.path())
        .run();
    assert!(
        dir.path().join("snapshots/tiny.snap").exists(),
        "{accept:?}"
    );
    let again = test_recording(dir.path(), "new");
    let text = &again.stdout;
    assert_eq!(again.status.code(), Some(69), "{text}");
    assert!(text.contains("39 tests run: 0 passed, 39 failed"), "{text}");
    assert!(text.contains("reused 0 of 39 case verdicts"), "{text}");
}

/// The server dies after 10 answers: the run stops asking after a few connection failures,
/// the remaining cases fail as `unavailable` (not recorded), and a resumed run against the
/// server back up asks exactly those.
#[test]
fn a_server_killed_mid_run_stops_being_asked_and_the_rerun_asks_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let dying = OneSlotServer::start(Duration::from_millis(20), Some(10));
    write_counting_suite(dir.path(), 39, &dying.base_url, "");
    let run = test_recording(dir.path(), "new");
    let text = &run.stdout;
    assert_eq!(run.status.code(), Some(69), "{text}");
    dying.worker.join().unwrap();
    assert_eq!(dying.computed.load(Ordering::SeqCst), 10);
    let recorded = cassette_lines(dir.path());
    assert_eq!(recorded, 10, "{text}");
    assert!(text.contains("3 connection failures in a row"), "{text}");
    // Asking stopped within a few attempts of the server's death: the calls in flight then
    // (4 at most) failed, and were retried until the third refusal in a row.
    let attempts: usize = text
        .lines()
        .find_map(|line| line.strip_prefix("asked "))
        .and_then(|note| note.split_whitespace().nth(3))
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no attempt count in\n{text}"));
    assert!(attempts <= 10 + 4 + 4, "{attempts} attempts\n{text}");
    let not_asked = text.matches("system_error: unavailable").count();
    assert!(not_asked >= 39 - 10 - 4, "{text}");

    let back = OneSlotServer::start(Duration::from_millis(20), None);
    let config = dir.path().join("sqlgate.toml");
    let moved = std::fs::read_to_string(&config)
        .unwrap()
        .replace(&dying.base_url, &back.base_url);
    std::fs::write(&config, moved).unwrap();
    let resumed = test_recording(dir.path(), "new");
    let text = &resumed.stdout;
    assert_eq!(resumed.status.code(), Some(0), "{text}");
    assert_eq!(back.computed.load(Ordering::SeqCst), 39 - recorded);
    assert_eq!(cassette_lines(dir.path()), 39);
}
