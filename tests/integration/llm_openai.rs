//! The `openai` system against a real HTTP server on 127.0.0.1.

use std::path::Path;

use sha2::{Digest, Sha256};
use sqlgate::config::system::openai::{OpenAiConfig, PromptSource, DEFAULT_PROMPT};
use sqlgate::config::Seconds;
use sqlgate::system::openai::OpenAiSystem;
use sqlgate::system::{Reply, Request, System, SystemError, SystemErrorKind};

use crate::llm_support::{chat_completion, Canned, Recorded, TestServer};

fn config(base_url: &str) -> OpenAiConfig {
    toml::from_str(&format!(
        r#"
        base_url = "{base_url}"
        model = "sqlcoder-7b"
        system_prompt = "You write SQLite."
        temperature = 0.2
        seed = 7
        max_tokens = 300
        prompt = {{ template = "DB {{db}}\n{{schema}}\nHint: {{evidence}}\nQ: {{question}}" }}
        "#
    ))
    .expect("a valid openai configuration")
}

fn system(config: OpenAiConfig) -> OpenAiSystem {
    OpenAiSystem::new(config, Path::new(".")).expect("a valid system")
}

fn request() -> Request {
    Request::question(
        "12",
        "concert_singer",
        "concert_singer.sqlite",
        "How many singers are older than 30?",
    )
    .with_evidence("older means age > 30")
    .with_schema("CREATE TABLE singer (singer_id INT, name TEXT, age INT)")
}

/// The system's answer to `request()` when the model says `content`, and the request it sent.
fn answer(content: &str) -> (Result<Reply, SystemError>, Recorded) {
    let server = TestServer::start(vec![Canned::chat(content)]);
    let system = system(config(&server.base_url));
    let result = system
        .answer(&request())
        .and_then(|reply| system.interpret(reply));
    let mut requests = server.finish();
    assert_eq!(requests.len(), 1);
    (result, requests.remove(0))
}

#[test]
fn the_prompt_and_parameters_reach_the_model() {
    let (result, sent) = answer("SELECT count(*) FROM singer WHERE age > 30");
    let reply = result.unwrap();
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(sent.header("authorization"), None);
    assert!(sent.headers.iter().all(|(_, value)| !value.contains("sk-")));
    let body = sent.json();
    assert_eq!(
        reply.sql.as_deref(),
        Some("SELECT count(*) FROM singer WHERE age > 30")
    );
    assert!(!reply.cleaned);
    assert_eq!(body["model"], "sqlcoder-7b");
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["seed"], 7);
    assert_eq!(body["max_tokens"], 300);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][0]["content"], "You write SQLite.");
    assert_eq!(body["messages"][1]["role"], "user");
    assert_eq!(
        body["messages"][1]["content"],
        "DB concert_singer\nCREATE TABLE singer (singer_id INT, name TEXT, age INT)\nHint: older means age > 30\nQ: How many singers are older than 30?"
    );
}

#[test]
fn fences_and_prose_are_cleaned_away() {
    let raw = "Sure! Here is the query you need:\n\n```sql\nSELECT count(*)\nFROM singer\nWHERE age > 30;\n```\n\nThis counts the singers older than 30.";
    let reply = answer(raw).0.unwrap().clean();
    assert_eq!(
        reply.sql.as_deref(),
        Some("SELECT count(*)\nFROM singer\nWHERE age > 30")
    );
    assert!(reply.cleaned);
}

#[test]
fn the_abstain_marker_is_an_abstention() {
    let reply = answer("not_answerable: the schema has no ticket prices.")
        .0
        .unwrap();
    assert_eq!(reply.sql, None);
}

#[test]
fn the_raw_reply_is_what_gets_recorded_and_is_interpreted_after() {
    let raw = "not_answerable: the schema has no ticket prices.";
    let server = TestServer::start(vec![Canned::chat(raw)]);
    let system = system(config(&server.base_url));
    let recorded = system.answer(&request()).unwrap();
    server.finish();
    assert_eq!(recorded.sql.as_deref(), Some(raw));
    assert!(!recorded.truncated);
    assert_eq!(system.interpret(recorded).unwrap().sql, None);

    // An identifier that contains the marker is part of a query, not an abstention.
    let counted = "```sql\nSELECT COUNT(*) AS not_answerable_count FROM singer\n```";
    let reply = answer(counted).0.unwrap().clean();
    assert_eq!(
        reply.sql.as_deref(),
        Some("SELECT COUNT(*) AS not_answerable_count FROM singer")
    );
}

#[test]
fn a_reply_cut_at_max_tokens_says_so() {
    let mut body = chat_completion(serde_json::json!("SELECT name FROM singer WHERE"));
    body["choices"][0]["finish_reason"] = "length".into();
    let server = TestServer::start(vec![Canned::new(200, body.to_string())]);
    let system = system(config(&server.base_url));
    let reply = system.answer(&request()).unwrap();
    server.finish();
    assert!(reply.truncated);
    assert!(system.interpret(reply).unwrap().truncated);
}

#[test]
fn a_reply_without_sql_is_garbage_quoting_the_text() {
    let error = answer("I'm sorry, but I can't see any table about singers.")
        .0
        .unwrap_err();
    assert_eq!(error.kind, SystemErrorKind::Garbage);
    assert!(!error.retryable);
    assert!(
        error.message.contains("I'm sorry, but I can't see"),
        "{}",
        error.message
    );

    let long = "blah ".repeat(1000);
    let error = answer(&long).0.unwrap_err();
    assert!(error.message.len() < 1000, "{} bytes", error.message.len());
}

#[test]
fn http_errors_pass_through_for_the_throttle() {
    let server = TestServer::start(vec![
        Canned::new(503, "overloaded").header("Retry-After", "3")
    ]);
    let error = system(config(&server.base_url))
        .answer(&request())
        .unwrap_err();
    server.finish();
    assert_eq!(error.kind, SystemErrorKind::Http);
    assert!(error.retryable);
    assert_eq!(error.retry_after, Some(std::time::Duration::from_secs(3)));
}

#[test]
fn timeout_secs_bounds_the_call() {
    let server = TestServer::start(vec![
        Canned::chat("SELECT 1").after(std::time::Duration::from_millis(1600))
    ]);
    let config = OpenAiConfig {
        timeout_secs: Seconds::new(1.0).unwrap(),
        ..config(&server.base_url)
    };
    let error = system(config).answer(&request()).unwrap_err();
    server.finish();
    assert_eq!(error.kind, SystemErrorKind::Timeout, "{}", error.message);
    assert!(error.retryable);
}

#[test]
fn the_default_prompt_carries_the_schema_question_and_marker() {
    let server = TestServer::start(vec![Canned::chat("SELECT 1")]);
    let config = OpenAiConfig {
        prompt: PromptSource::default(),
        abstain_marker: "NO_SQL".into(),
        ..config(&server.base_url)
    };
    system(config).answer(&request()).unwrap();
    let body = server.finish()[0].json();
    let prompt = body["messages"][1]["content"].as_str().unwrap().to_string();
    let request = request();
    for part in [
        &request.schema,
        &request.question,
        &request.db,
        "older means age > 30",
        "NO_SQL",
        "SQLite",
    ] {
        assert!(prompt.contains(part), "{part:?} missing from {prompt}");
    }
    assert!(!prompt.contains('{'), "a placeholder was left: {prompt}");
}

#[test]
fn defaults_apply_and_unknown_fields_are_refused() {
    let config: OpenAiConfig =
        toml::from_str("base_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"").unwrap();
    assert_eq!(config.temperature, 0.0);
    assert_eq!(config.seed, 0);
    assert_eq!(config.max_tokens, 512);
    assert_eq!(config.timeout_secs.secs(), 60.0);
    assert_eq!(config.abstain_marker, "not_answerable");
    assert_eq!(config.api_key_env, None);
    assert_eq!(config.system_prompt, None);
    assert_eq!(
        config.prompt,
        PromptSource::Template(DEFAULT_PROMPT.to_string())
    );

    let typo = "base_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\ntemprature = 0.5";
    let error = toml::from_str::<OpenAiConfig>(typo).unwrap_err();
    assert!(error.to_string().contains("temprature"), "{error}");
    let api_key = "base_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\napi_key = \"sk-123\"";
    assert!(toml::from_str::<OpenAiConfig>(api_key).is_err());

    let from_file: OpenAiConfig = toml::from_str(
        "base_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\nprompt = { file = \"prompts/sql.txt\" }",
    )
    .unwrap();
    assert_eq!(
        from_file.prompt,
        PromptSource::File("prompts/sql.txt".into())
    );
}

#[test]
fn bad_templates_and_missing_files_are_config_errors() {
    let base = config("http://127.0.0.1:1/v1");
    let unknown = OpenAiConfig {
        prompt: PromptSource::Template("{question} in {database}".into()),
        ..base.clone()
    };
    let error = OpenAiSystem::new(unknown, Path::new(".")).unwrap_err();
    assert!(error.to_string().contains("{database}"), "{error}");

    let dir = tempfile::tempdir().unwrap();
    let missing = OpenAiConfig {
        prompt: PromptSource::File("nowhere.txt".into()),
        ..base.clone()
    };
    let error = OpenAiSystem::new(missing, dir.path()).unwrap_err();
    assert!(error.to_string().contains("nowhere.txt"), "{error}");

    std::fs::write(dir.path().join("bad.txt"), "{question} {sql}").unwrap();
    let bad_file = OpenAiConfig {
        prompt: PromptSource::File("bad.txt".into()),
        ..base.clone()
    };
    let error = OpenAiSystem::new(bad_file, dir.path()).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("bad.txt: unknown placeholder {sql}"),
        "{error}"
    );

    let empty_marker = OpenAiConfig {
        abstain_marker: " ".into(),
        ..base
    };
    assert!(OpenAiSystem::new(empty_marker, Path::new(".")).is_err());
}

fn fingerprint_of(config: OpenAiConfig, base_dir: &Path) -> String {
    OpenAiSystem::new(config, base_dir).unwrap().fingerprint()
}

#[test]
fn the_fingerprint_follows_behaviour_not_location() {
    let base = config("http://127.0.0.1:1/v1");
    let here = Path::new(".");
    let reference = fingerprint_of(base.clone(), here);
    assert_eq!(reference, fingerprint_of(base.clone(), here));

    let elsewhere = OpenAiConfig {
        base_url: "https://api.example.org/v1".into(),
        api_key_env: Some("OTHER_KEY".into()),
        timeout_secs: Seconds::new(5.0).unwrap(),
        ..base.clone()
    };
    assert_eq!(reference, fingerprint_of(elsewhere, here));

    let changes = [
        OpenAiConfig {
            model: "sqlcoder-15b".into(),
            ..base.clone()
        },
        OpenAiConfig {
            prompt: PromptSource::Template("Q: {question}".into()),
            ..base.clone()
        },
        OpenAiConfig {
            system_prompt: None,
            ..base.clone()
        },
        OpenAiConfig {
            system_prompt: Some(String::new()),
            ..base.clone()
        },
        OpenAiConfig {
            temperature: 0.3,
            ..base.clone()
        },
        OpenAiConfig {
            seed: 8,
            ..base.clone()
        },
        OpenAiConfig {
            max_tokens: 301,
            ..base.clone()
        },
        OpenAiConfig {
            abstain_marker: "n/a".into(),
            ..base.clone()
        },
    ];
    let mut seen = vec![reference];
    for changed in changes {
        let fingerprint = fingerprint_of(changed.clone(), here);
        assert!(!seen.contains(&fingerprint), "{changed:?}");
        seen.push(fingerprint);
    }
}

#[test]
fn a_prompt_file_counts_by_its_contents_not_its_path() {
    let text = "Schema:\n{schema}\nQuestion: {question}\n";
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    std::fs::create_dir(first.path().join("prompts")).unwrap();
    std::fs::write(first.path().join("prompts/sql.txt"), text).unwrap();
    std::fs::write(second.path().join("other.txt"), text).unwrap();
    let with_prompt = |prompt| OpenAiConfig {
        prompt,
        ..config("http://127.0.0.1:1/v1")
    };

    let relative = fingerprint_of(
        with_prompt(PromptSource::File("prompts/sql.txt".into())),
        first.path(),
    );
    let absolute = fingerprint_of(
        with_prompt(PromptSource::File(second.path().join("other.txt"))),
        Path::new("."),
    );
    let inline = fingerprint_of(
        with_prompt(PromptSource::Template(text.into())),
        Path::new("."),
    );
    assert_eq!(relative, absolute);
    assert_eq!(relative, inline);

    std::fs::write(
        second.path().join("other.txt"),
        format!("{text}Think step by step.\n"),
    )
    .unwrap();
    let edited = fingerprint_of(
        with_prompt(PromptSource::File(second.path().join("other.txt"))),
        Path::new("."),
    );
    assert_ne!(relative, edited);
}

/// The fingerprint keys every recorded answer: it must not change between runs or builds, so
/// it is pinned to its documented encoding, SHA-256 over length-prefixed (name, value) pairs.
#[test]
fn the_fingerprint_is_the_documented_hash() {
    let config = config("http://127.0.0.1:1/v1");
    let template = "DB {db}\n{schema}\nHint: {evidence}\nQ: {question}";
    let fields = [
        "type",
        "openai",
        "model",
        "sqlcoder-7b",
        "template",
        template,
        "system_prompt",
        "You write SQLite.",
        "temperature",
        "0.2",
        "seed",
        "7",
        "max_tokens",
        "300",
        "abstain_marker",
        "not_answerable",
    ];
    let mut hasher = Sha256::new();
    for part in fields {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    let expected: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(fingerprint_of(config, Path::new(".")), expected);
}

#[test]
fn timeout_secs_may_be_fractional() {
    let parsed: OpenAiConfig =
        toml::from_str("base_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\ntimeout_secs = 1.5")
            .unwrap();
    assert_eq!(parsed.timeout_secs.secs(), 1.5);
    let server = TestServer::start(vec![
        Canned::chat("SELECT 1").after(std::time::Duration::from_millis(800))
    ]);
    let short = OpenAiConfig {
        timeout_secs: Seconds::new(0.3).unwrap(),
        ..config(&server.base_url)
    };
    let error = system(short).answer(&request()).unwrap_err();
    server.finish();
    assert_eq!(error.kind, SystemErrorKind::Timeout, "{}", error.message);
    assert!(error.message.contains("within 0.3s"), "{}", error.message);
    for bad in ["0", "-1", "nan", "1e9"] {
        let text =
            format!("base_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\ntimeout_secs = {bad}");
        let error = toml::from_str::<OpenAiConfig>(&text).unwrap_err();
        assert!(
            error.message().contains("number of seconds"),
            "{bad}: {error}"
        );
    }
}

/// Azure-style endpoints take the key in an `api-key` header.
#[test]
fn headers_are_sent_with_values_from_the_file_or_the_environment() {
    const VARIABLE: &str = "SQLGATE_TEST_OPENAI_HEADER_KEY";
    let with_headers = |base_url: &str, headers: &str| -> OpenAiConfig {
        toml::from_str(&format!(
            "base_url = \"{base_url}\"\nmodel = \"gpt-4o-mini\"\nheaders = {headers}"
        ))
        .unwrap()
    };
    // SAFETY: no other test of this binary reads or writes this variable.
    unsafe { std::env::set_var(VARIABLE, "secret-1") };
    let server = TestServer::start(vec![Canned::chat("SELECT 1")]);
    let azure = with_headers(
        &server.base_url,
        &format!("{{ \"api-key\" = {{ env = \"{VARIABLE}\" }}, \"X-Team\" = \"data\" }}"),
    );
    let system = system(azure.clone());
    system.answer(&request()).unwrap();
    let sent = server.finish().remove(0);
    assert_eq!(sent.header("api-key"), Some("secret-1"));
    assert_eq!(sent.header("x-team"), Some("data"));

    // The key is a credential: neither its value nor its header is in the fingerprint; a
    // fixed header may select what answers, and is.
    let fingerprint = |config: OpenAiConfig| fingerprint_of(config, Path::new("."));
    let with_team = fingerprint(azure.clone());
    unsafe { std::env::set_var(VARIABLE, "secret-2") };
    assert_eq!(fingerprint(azure.clone()), with_team);
    let plain = with_headers("http://127.0.0.1:1/v1", "{}");
    let key_only = with_headers(
        "http://127.0.0.1:1/v1",
        &format!("{{ \"api-key\" = {{ env = \"{VARIABLE}\" }} }}"),
    );
    assert_eq!(fingerprint(key_only), fingerprint(plain.clone()));
    assert_ne!(with_team, fingerprint(plain));
    let other_team = with_headers("http://127.0.0.1:1/v1", "{ \"X-Team\" = \"web\" }");
    assert_ne!(fingerprint(other_team), with_team);

    // Unset, or not a header value: the error names the variable, never the value.
    unsafe { std::env::set_var(VARIABLE, "line\nbreak") };
    let error = system.answer(&request()).unwrap_err();
    assert!(error.message.contains(VARIABLE), "{}", error.message);
    assert!(!error.message.contains("line"), "{}", error.message);
    unsafe { std::env::remove_var(VARIABLE) };
    let error = system.answer(&request()).unwrap_err();
    assert!(!error.retryable);
    assert!(
        error.message.contains(VARIABLE) && error.message.contains("not set"),
        "{}",
        error.message
    );

    // Configuration mistakes are refused when the system is built.
    let twice = OpenAiConfig {
        api_key_env: Some("OPENAI_API_KEY".into()),
        ..with_headers("http://127.0.0.1:1/v1", "{ Authorization = \"Bearer x\" }")
    };
    assert!(OpenAiSystem::new(twice, Path::new("."))
        .unwrap_err()
        .to_string()
        .contains("Authorization"));
    let bad_name = with_headers("http://127.0.0.1:1/v1", "{ \"a b\" = \"x\" }");
    assert!(OpenAiSystem::new(bad_name, Path::new(".")).is_err());
    let typo = "base_url = \"u\"\nmodel = \"m\"\nheaders = { api-key = { environment = \"K\" } }";
    let error = toml::from_str::<OpenAiConfig>(typo).unwrap_err();
    assert!(error.to_string().contains("env = "), "{error}");
}

fn models(ids: &[&str]) -> Canned {
    let data: Vec<serde_json::Value> = ids
        .iter()
        .map(|id| serde_json::json!({"id": id, "object": "model"}))
        .collect();
    Canned::new(
        200,
        serde_json::json!({"object": "list", "data": data}).to_string(),
    )
}

#[test]
fn the_check_before_asking_reads_the_model_list() {
    // Listed: one GET, with the configured headers.
    let server = TestServer::start(vec![models(&["other", "sqlcoder-7b"])]);
    let listed = OpenAiConfig {
        headers: toml::from_str("\"X-Team\" = \"data\"").unwrap(),
        ..config(&server.base_url)
    };
    assert_eq!(system(listed).preflight(), Ok(()));
    let sent = server.finish();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0].method.as_str(), sent[0].path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(sent[0].header("x-team"), Some("data"));

    // No listing at all: the server answered, that is enough.
    let server = TestServer::start(vec![Canned::new(404, "not found")]);
    assert_eq!(system(config(&server.base_url)).preflight(), Ok(()));
    assert_eq!(server.finish().len(), 1);

    // Listed under another name (llama.cpp lists its file): one tiny request decides.
    let server = TestServer::start(vec![models(&["/models/sqlcoder.gguf"]), Canned::chat("OK")]);
    assert_eq!(system(config(&server.base_url)).preflight(), Ok(()));
    let sent = server.finish();
    assert_eq!(sent[1].path, "/v1/chat/completions");
    assert_eq!(sent[1].json()["max_tokens"], 1);
    assert_eq!(sent[1].json()["model"], "sqlcoder-7b");

    let refused = Canned::new(
        404,
        r#"{"error": {"message": "The model `sqlcoder-7b` does not exist"}}"#,
    );
    let server = TestServer::start(vec![models(&["gpt-4o", "gpt-4o-mini"]), refused]);
    let error = system(config(&server.base_url)).preflight().unwrap_err();
    server.finish();
    assert!(
        error.contains("model `sqlcoder-7b`")
            && error.contains("gpt-4o, gpt-4o-mini")
            && error.contains("does not exist"),
        "{error}"
    );
}

#[test]
fn the_check_before_asking_fails_on_a_refused_key_or_connection() {
    let server = TestServer::start(vec![Canned::new(
        401,
        r#"{"error": {"message": "Incorrect API key provided"}}"#,
    )]);
    let error = system(config(&server.base_url)).preflight().unwrap_err();
    server.finish();
    assert!(
        error.contains("401") && error.contains("Incorrect API key"),
        "{error}"
    );

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let error = system(config(&format!("http://127.0.0.1:{port}/v1")))
        .preflight()
        .unwrap_err();
    assert_eq!(error, format!("connection refused at 127.0.0.1:{port}"));
}
