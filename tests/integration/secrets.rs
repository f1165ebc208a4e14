//! No known secret in any byte a run writes or prints: a `command` system that echoes its
//! credentials (in its SQL, as garbage, on stderr) and `openai` and `http` servers that echo the
//! ones they were sent (401, 400, 500, a 200 HTML page, a 200 answer, escaped in JSON), run with
//! every output on; every file under the run's folder (the cache's included) and both streams
//! are searched for every secret, raw and JSON-escaped.
#![cfg(unix)]

use std::path::Path;

use serde_json::json;

use crate::support::{every_file, sqlgate, Run};

/// A value as a JSON string holds it, without the quotes.
fn json_escaped(value: &str) -> String {
    let quoted = serde_json::to_string(value).unwrap();
    quoted[1..quoted.len() - 1].to_string()
}

/// A value with every character written as a `\uXXXX` escape, as a JSON body may carry it.
fn unicode_escaped(value: &str) -> String {
    value
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect()
}

/// A suite of `questions.len()` cases on a one-table database, each gold `SELECT 1`, with
/// `settings` in its `[[suite]]`, and the system `system` (a `[[system]]` table's lines).
fn write_suite(dir: &Path, questions: &[&str], settings: &str, system: &str) {
    std::fs::write(
        dir.join("schema.sql"),
        "CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1);",
    )
    .unwrap();
    std::fs::write(
        dir.join("suite.toml"),
        "name = \"tiny\"\ncases = \"cases.jsonl\"\ndb_dir = \"build\"\n[databases.numbers]\nscripts = [\"schema.sql\"]\n",
    )
    .unwrap();
    let cases: Vec<String> = questions
        .iter()
        .enumerate()
        .map(|(i, question)| {
            json!({"id": format!("c{i}"), "db": "numbers", "question": question, "gold": "SELECT 1"})
                .to_string()
        })
        .collect();
    std::fs::write(dir.join("cases.jsonl"), cases.join("\n")).unwrap();
    let config = format!(
        "[[suite]]\nbenchmark = \"suite.toml\"\n{settings}\n\n[[system]]\nname = \"echo\"\n{system}\nthrottle = {{ retries = 1, backoff_secs = 0.01, max_backoff_secs = 0.01 }}\n"
    );
    std::fs::write(dir.join("sqlgate.toml"), config).unwrap();
}

/// `sqlgate test` with every output on: the cassette (`--record new`), JUnit, the HTML report,
/// the run record, the cache, the step summary and annotations, `.snap.new`; then a replay
/// accepting the snapshot, with `libtest-json` output and its reports beside the first's
/// (`replay-junit.xml`...). Both runs, with `env` set.
fn run_with_every_output(dir: &Path, env: &[(&str, &str)]) -> Vec<Run> {
    let summary = dir.join("summary.md");
    let run = |outputs: &str, args: &[&str]| {
        let mut command = sqlgate();
        command
            .arg("test")
            .args(["--junit", &format!("{outputs}junit.xml")])
            .args(["--html", &format!("{outputs}report.html")])
            .args(["--record-out", &format!("{outputs}record.json")])
            .args(args)
            .current_dir(dir)
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_STEP_SUMMARY", &summary);
        for (name, value) in env {
            command.env(name, value);
        }
        let run = command.run();
        assert!(
            matches!(run.code(), Some(0 | 1 | 69 | 100)),
            "{:?}\n{}",
            run.code(),
            run.text()
        );
        run
    };
    let recording = run("", &["--record", "new"]);
    assert!(
        dir.join("snapshots/tiny.snap.new").is_file(),
        "{}",
        recording.text()
    );
    let pending = std::fs::read(dir.join("snapshots/tiny.snap.new")).unwrap();
    let accepting = run(
        "replay-",
        &[
            "--record",
            "none",
            "--accept",
            "--message-format",
            "libtest-json",
        ],
    );
    // The accepted snapshot supersedes the pending one: it is kept aside to be searched too.
    std::fs::write(dir.join("pending.snap.new"), pending).unwrap();
    vec![recording, accepting]
}

/// The run executed queries, and cached them in `.sqlgate/cache/`.
fn assert_cached(dir: &Path) {
    let cache = dir.join(".sqlgate/cache");
    assert!(
        cache.is_dir() && !every_file(&cache).is_empty(),
        "the cache was written"
    );
}

/// The reports of a run with every output on: each shows where the secret was.
const REPORTS: [&str; 4] = ["junit.xml", "report.html", "record.json", "summary.md"];
/// The cassette, where a system's answers carry the secret.
const CASSETTE: &str = "snapshots/predictions/echo.jsonl";

/// No secret in any file under `dir` nor in the runs' output, raw or JSON-escaped; `***`
/// stands where they were in each of `masked` (files under `dir`) and in the first run's output.
fn assert_redacted(dir: &Path, runs: &[Run], secrets: &[&str], masked: &[&str]) {
    let mut outputs: Vec<(String, Vec<u8>)> = every_file(dir)
        .into_iter()
        .map(|(path, bytes)| (path.display().to_string(), bytes))
        .collect();
    for (i, run) in runs.iter().enumerate() {
        outputs.push((
            format!("stdout of run {i}"),
            run.stdout.clone().into_bytes(),
        ));
        outputs.push((
            format!("stderr of run {i}"),
            run.stderr.clone().into_bytes(),
        ));
    }
    let mut leaks = Vec::new();
    for secret in secrets {
        for form in [secret.to_string(), json_escaped(secret)] {
            for (path, bytes) in &outputs {
                let found = bytes
                    .windows(form.len())
                    .any(|window| window == form.as_bytes());
                if found {
                    leaks.push(format!("{path} holds {form:?}"));
                }
            }
        }
    }
    assert!(leaks.is_empty(), "secrets written:\n{}", leaks.join("\n"));
    for file in masked {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(text.contains("***"), "no *** in {file}:\n{text}");
    }
    assert!(runs[0].text().contains("***"), "{}", runs[0].text());
}

const COMMAND_SECRET: &str = "sk-cmd-7Hq\"x/Y+9w=Lm2";
const PASSED_THROUGH: &str = "tag-passthrough-5150";

/// A script answering by case: the secret in its SQL (JSON-escaped, as its JSON needs), as
/// garbage, on the stderr of a failure, and the passed-through value as a retrieved item.
const ECHOING_SCRIPT: &str = r#"request=$(cat)
escaped=$(printf '%s' "$AGENT_TOKEN" | sed 's/\\/\\\\/g; s/"/\\"/g')
case "$request" in
  *'"id":"c0"'*) printf '{"sql": "SELECT %s AS k FROM t"}' "'$escaped'" ;;
  *'"id":"c1"'*) printf 'not an answer, my key is %s\n' "$AGENT_TOKEN" ;;
  *'"id":"c2"'*) printf 'cannot log in with %s\n' "$AGENT_TOKEN" >&2; exit 3 ;;
  *) printf '{"sql": "SELECT 1", "retrieved": ["%s"]}' "$MODEL_TAG" ;;
esac
"#;

/// Issue 38, item 4 (a).
#[test]
fn a_command_echoing_its_secrets_leaves_none_in_any_output() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agent.sh"), ECHOING_SCRIPT).unwrap();
    let embeddings = serve_refusing();
    write_suite(
        dir.path(),
        &["q0", "q1", "q2", "q3"],
        &format!(
            "regime = \"SC-PC-PE\"\nembeddings = {{ base_url = \"{embeddings}\", model = \"m\", api_key_env = \"EMBEDDINGS_KEY\" }}"
        ),
        "type = \"command\"\ncommand = [\"sh\", \"agent.sh\"]\nenv_secrets = [\"AGENT_TOKEN\"]\nenv_passthrough = [\"MODEL_TAG\"]",
    );
    let runs = run_with_every_output(
        dir.path(),
        &[
            ("AGENT_TOKEN", COMMAND_SECRET),
            ("EMBEDDINGS_KEY", GENERATOR_KEY),
            ("MODEL_TAG", PASSED_THROUGH),
        ],
    );

    assert_cached(dir.path());
    assert_redacted(
        dir.path(),
        &runs,
        &[COMMAND_SECRET, PASSED_THROUGH, GENERATOR_KEY],
        &[&[CASSETTE][..], &REPORTS].concat(),
    );
    // The secret in the SQL was replaced before the query ran: what was scored is what the
    // cassette replays.
    let cassette = std::fs::read_to_string(dir.path().join(CASSETTE)).unwrap();
    assert!(
        cassette.contains(r#"SELECT '***' AS k FROM t"#),
        "{cassette}"
    );
    assert!(cassette.contains(r#""retrieved":["***"]"#), "{cassette}");
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(
        junit.contains("Incorrect API key provided: Bearer ***"),
        "the suite's embeddings server was asked: {junit}"
    );
}

const API_KEY: &str = "sk-openai-Test-4242-abcdef";
const HEADER_KEY: &str = "hdr-azure-9f8e7d6c5b";

/// An OpenAI-format server echoing the credentials it receives, by question: a 401, a 400, a
/// 500, a 200 HTML page, and answers holding them as text and as `\u` escapes. With
/// `refuse_key`, its listing of models (the check before asking) is a 401 quoting the key.
fn serve_echoing_openai(refuse_key: bool) -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let address = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for mut request in server.incoming_requests() {
            let header = |name: &'static str| {
                request
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv(name))
                    .map(|h| h.value.to_string())
                    .unwrap_or_default()
            };
            let (authorization, api_key) = (header("Authorization"), header("api-key"));
            let mut body = String::new();
            let _ = request.as_reader().read_to_string(&mut body);
            let error = |message: String| json!({"error": {"message": message}}).to_string();
            let chat = |content: &str| {
                format!(
                    r#"{{"choices": [{{"index": 0, "message": {{"role": "assistant", "content": "{content}"}}}}]}}"#
                )
            };
            let (status, text) = if request.url().ends_with("/models") && refuse_key {
                let message = format!("Incorrect API key provided: {authorization}");
                (401, error(message))
            } else if request.url().ends_with("/models") {
                (200, json!({"data": [{"id": "test-model"}]}).to_string())
            } else if body.contains("q0") {
                let message = format!("Incorrect API key provided: {authorization}");
                (401, error(message))
            } else if body.contains("q1") {
                (400, error(format!("bad request with api-key {api_key}")))
            } else if body.contains("q2") {
                (
                    500,
                    format!("internal error; headers: {authorization} {api_key}"),
                )
            } else if body.contains("q3") {
                let page = format!("<html><body>Signed in as {authorization}</body></html>");
                (200, page)
            } else if body.contains("q4") {
                let sql = format!("SELECT '{}' AS k FROM t", json_escaped(API_KEY));
                (200, chat(&json_escaped(&sql)))
            } else {
                let sql = format!("SELECT '{}' AS k FROM t", unicode_escaped(HEADER_KEY));
                (200, chat(&sql))
            };
            let _ =
                request.respond(tiny_http::Response::from_string(text).with_status_code(status));
        }
    });
    address
}

/// Issue 38, item 4 (b), `openai`: `api_key_env` and a header `{ env = ... }`.
#[test]
fn an_openai_server_echoing_the_credentials_leaves_none_in_any_output() {
    for refuse_key in [false, true] {
        echoing_openai_server_leaves_no_credential(refuse_key);
    }
}

fn echoing_openai_server_leaves_no_credential(refuse_key: bool) {
    let dir = tempfile::tempdir().unwrap();
    let base_url = serve_echoing_openai(refuse_key);
    write_suite(
        dir.path(),
        &["q0", "q1", "q2", "q3", "q4", "q5"],
        "",
        &format!(
            "type = \"openai\"\nbase_url = \"{base_url}\"\nmodel = \"test-model\"\napi_key_env = \"ECHO_API_KEY\"\nheaders = {{ \"api-key\" = {{ env = \"ECHO_HEADER_KEY\" }} }}\ntimeout_secs = 5"
        ),
    );
    let runs = run_with_every_output(
        dir.path(),
        &[("ECHO_API_KEY", API_KEY), ("ECHO_HEADER_KEY", HEADER_KEY)],
    );

    let mut masked = REPORTS.to_vec();
    // A refused key leaves every case unasked: nothing is recorded, nothing executed.
    if !refuse_key {
        assert_cached(dir.path());
        masked.push(CASSETTE);
    }
    assert_redacted(dir.path(), &runs, &[API_KEY, HEADER_KEY], &masked);
    assert!(runs[0]
        .text()
        .contains("Incorrect API key provided: Bearer ***"));
}

const HTTP_TOKEN: &str = "Bearer http-token-31337-xyz";

/// A system's server echoing the `Authorization` header it receives: a 401, a 500, a 200
/// answer holding it in its SQL, a 200 HTML page, and an answer holding it `\u`-escaped.
fn serve_echoing_http() -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let address = format!("http://{}/sql", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for mut request in server.incoming_requests() {
            let token = request
                .headers()
                .iter()
                .find(|h| h.field.equiv("Authorization"))
                .map(|h| h.value.to_string())
                .unwrap_or_default();
            let mut body = String::new();
            let _ = request.as_reader().read_to_string(&mut body);
            let (status, text) = if body.contains("q0") {
                (401, format!("unknown token {token}"))
            } else if body.contains("q1") {
                (500, format!("crashed serving {token}"))
            } else if body.contains("q2") {
                let sql = format!("SELECT '{token}' AS k FROM t");
                (200, json!({ "sql": sql }).to_string())
            } else if body.contains("q3") {
                (200, format!("<html>Welcome, {token}</html>"))
            } else {
                let sql = format!("SELECT '{}' AS k FROM t", unicode_escaped(&token));
                (200, format!(r#"{{"sql": "{sql}"}}"#))
            };
            let _ =
                request.respond(tiny_http::Response::from_string(text).with_status_code(status));
        }
    });
    address
}

/// Issue 38, item 4 (b), `http`: `headers_env`.
#[test]
fn an_http_server_echoing_the_credentials_leaves_none_in_any_output() {
    let dir = tempfile::tempdir().unwrap();
    let url = serve_echoing_http();
    write_suite(
        dir.path(),
        &["q0", "q1", "q2", "q3", "q4"],
        "",
        &format!(
            "type = \"http\"\nurl = \"{url}\"\nheaders_env = {{ Authorization = \"ECHO_TOKEN\" }}\ntimeout_secs = 5"
        ),
    );
    let runs = run_with_every_output(dir.path(), &[("ECHO_TOKEN", HTTP_TOKEN)]);

    assert_cached(dir.path());
    assert_redacted(
        dir.path(),
        &runs,
        &[HTTP_TOKEN],
        &[&[CASSETTE][..], &REPORTS].concat(),
    );
    let cassette = std::fs::read_to_string(dir.path().join(CASSETTE)).unwrap();
    assert!(
        cassette.contains(r#"SELECT '***' AS k FROM t"#),
        "{cassette}"
    );
}

const GENERATOR_KEY: &str = "sk-generator-8086-qwerty";

/// An OpenAI-format server refusing every request with a 401 that quotes the key it was sent.
fn serve_refusing() -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let address = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for request in server.incoming_requests() {
            let authorization = request
                .headers()
                .iter()
                .find(|h| h.field.equiv("Authorization"))
                .map(|h| h.value.to_string())
                .unwrap_or_default();
            let message = format!("Incorrect API key provided: {authorization}");
            let body = json!({"error": {"message": message}}).to_string();
            let _ = request.respond(tiny_http::Response::from_string(body).with_status_code(401));
        }
    });
    address
}

/// Issue 38, item 4: the generators' `--llm-api-key-env` and `--embeddings-api-key-env`.
#[test]
fn a_generator_s_server_echoing_its_key_leaves_it_in_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let url = serve_refusing();
    let gold = crate::support::demo("suite.toml");
    let jqe = sqlgate()
        .args(["generate", "jqe", "--llm-model", "m", "--llm-url", &url])
        .args(["--llm-api-key-env", "GENERATOR_KEY", "--out", "jqe.jsonl"])
        .arg("--gold")
        .arg(&gold)
        .current_dir(dir.path())
        .env("GENERATOR_KEY", GENERATOR_KEY)
        .run();
    let paraphrase = sqlgate()
        .args(["generate", "paraphrase", "--embeddings-url", &url])
        .args([
            "--embeddings-model",
            "m",
            "--embeddings-api-key-env",
            "GENERATOR_KEY",
        ])
        .args(["--out", "para.jsonl"])
        .arg("--gold")
        .arg(&gold)
        .current_dir(dir.path())
        .env("GENERATOR_KEY", GENERATOR_KEY)
        .run();
    for run in [&jqe, &paraphrase] {
        assert!(
            run.stderr
                .contains("Incorrect API key provided: Bearer ***"),
            "{:?}\n{}",
            run.code(),
            run.text()
        );
    }
    for (path, bytes) in every_file(dir.path()) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(GENERATOR_KEY), "{}: {text}", path.display());
    }
    for run in [&jqe, &paraphrase] {
        assert!(!run.text().contains(GENERATOR_KEY), "{}", run.text());
    }
}

/// docs/systems.md states the minimum length of a redacted value.
#[test]
fn the_documented_minimum_length_is_the_one_applied() {
    let docs = std::fs::read_to_string(crate::support::repo().join("docs/systems.md")).unwrap();
    let minimum = sqlgate::eval::secrets::MIN_SECRET_BYTES;
    assert!(
        docs.contains(&format!("A value shorter than {minimum} bytes")),
        "docs/systems.md#secrets"
    );
}
