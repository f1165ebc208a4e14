//! The OpenAI-compatible client against a real HTTP server on 127.0.0.1.

use std::time::{Duration, SystemTime};

use serde_json::json;
use sqlgate_llm::throttle::Throttle;
use sqlgate_llm::ThrottleConfig;
use sqlgate_llm::{ChatRequest, Client, ClientConfig, Message};
use sqlgate_llm::{LlmError, LlmErrorKind};

use crate::llm_support::{chat_completion, Canned, TestServer};

fn client(base_url: &str, api_key_env: Option<&str>, timeout: Duration) -> Client {
    Client::new(&ClientConfig {
        base_url: base_url.to_string(),
        api_key_env: api_key_env.map(str::to_string),
        timeout,
    })
    .expect("a valid client configuration")
}

fn chat_request() -> ChatRequest {
    ChatRequest {
        model: "qwen2.5-coder".into(),
        messages: vec![
            Message::system("Be terse."),
            Message::user("How many singers?"),
        ],
        temperature: Some(0.0),
        seed: Some(42),
        max_tokens: Some(256),
    }
}

/// The throttle of system calls, retrying without waiting.
fn throttle(retries: u32) -> Box<Throttle> {
    Box::new(Throttle::new(ThrottleConfig {
        retries,
        backoff_secs: 0.0,
        ..ThrottleConfig::default()
    }))
}

/// One chat call against a server answering `canned`.
fn chat_error(canned: Canned, timeout: Duration) -> LlmError {
    let server = TestServer::start(vec![canned]);
    let result = client(&server.base_url, None, timeout).chat(&chat_request());
    server.finish();
    result.expect_err("the call fails")
}

#[test]
fn chat_sends_the_openai_body_and_the_key() {
    std::env::set_var("SQLGATE_TEST_LLM_KEY_CHAT", "sk-test-123");
    let server = TestServer::start(vec![Canned::chat("SELECT count(*) FROM singer")]);
    let reply = client(
        &format!("{}/", server.base_url),
        Some("SQLGATE_TEST_LLM_KEY_CHAT"),
        Duration::from_secs(10),
    )
    .chat(&chat_request())
    .unwrap();
    assert_eq!(reply.content, "SELECT count(*) FROM singer");
    assert_eq!(reply.raw["id"], "chatcmpl-42");
    assert_eq!(reply.raw["usage"]["total_tokens"], 15);
    let usage = reply.usage().unwrap();
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (10, 5));

    let requests = server.finish();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test-123"));
    assert!(request
        .header("content-type")
        .is_some_and(|v| v.starts_with("application/json")));
    assert_eq!(
        request.json(),
        json!({
            "model": "qwen2.5-coder",
            "messages": [
                {"role": "system", "content": "Be terse."},
                {"role": "user", "content": "How many singers?"}
            ],
            "temperature": 0.0,
            "seed": 42,
            "max_tokens": 256
        })
    );
}

#[test]
fn unset_options_and_keys_are_not_sent() {
    let server = TestServer::start(vec![Canned::chat("SELECT 1")]);
    let request = ChatRequest {
        temperature: None,
        seed: None,
        max_tokens: None,
        ..chat_request()
    };
    client(&server.base_url, None, Duration::from_secs(10))
        .chat(&request)
        .unwrap();
    let requests = server.finish();
    assert_eq!(requests[0].header("authorization"), None);
    let body = requests[0].json();
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(
        keys.contains(&"model") && keys.contains(&"messages"),
        "{keys:?}"
    );
}

#[test]
fn a_missing_key_variable_fails_without_sending() {
    let server = TestServer::start(Vec::new());
    let error = client(
        &server.base_url,
        Some("SQLGATE_TEST_LLM_KEY_NEVER_SET"),
        Duration::from_secs(10),
    )
    .chat(&chat_request())
    .unwrap_err();
    assert!(server.finish().is_empty());
    assert_eq!(error.kind, LlmErrorKind::Transport);
    assert!(!error.retryable);
    assert!(
        error.message.contains("SQLGATE_TEST_LLM_KEY_NEVER_SET"),
        "{}",
        error.message
    );
}

#[test]
fn rate_limits_are_retryable_with_the_wait_asked_for() {
    let body = json!({"error": {"message": "Rate limit reached for requests", "type": "requests"}});
    let error = chat_error(
        Canned::new(429, body.to_string()).header("Retry-After", "7"),
        Duration::from_secs(10),
    );
    assert_eq!(error.kind, LlmErrorKind::Http);
    assert!(error.retryable);
    assert_eq!(error.retry_after, Some(Duration::from_secs(7)));
    assert!(error.message.contains("429"), "{}", error.message);
    assert!(
        error.message.contains("Rate limit reached"),
        "{}",
        error.message
    );

    let in_a_minute = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(60));
    let error = chat_error(
        Canned::new(429, "slow down").header("Retry-After", &in_a_minute),
        Duration::from_secs(10),
    );
    let wait = error.retry_after.expect("a wait from the date");
    assert!(
        wait > Duration::from_secs(50) && wait <= Duration::from_secs(60),
        "{wait:?}"
    );
}

#[test]
fn server_errors_are_retryable_and_client_errors_are_not() {
    let error = chat_error(Canned::new(500, "internal error"), Duration::from_secs(10));
    assert_eq!(error.kind, LlmErrorKind::Http);
    assert!(error.retryable);
    assert_eq!(error.retry_after, None);
    assert!(error.message.contains("500"), "{}", error.message);

    let body =
        json!({"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}});
    let error = chat_error(Canned::new(401, body.to_string()), Duration::from_secs(10));
    assert_eq!(error.kind, LlmErrorKind::Http);
    assert!(!error.retryable);
    assert!(
        error.message.contains("Incorrect API key provided"),
        "{}",
        error.message
    );
}

#[test]
fn a_slow_server_is_a_retryable_timeout() {
    let error = chat_error(
        Canned::chat("SELECT 1").after(Duration::from_millis(1500)),
        Duration::from_millis(300),
    );
    assert_eq!(error.kind, LlmErrorKind::Timeout, "{}", error.message);
    assert!(error.retryable);
}

#[test]
fn a_refused_connection_is_a_retryable_transport_error() {
    // A port that was free a moment ago and has no listener now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let error = client(
        &format!("http://127.0.0.1:{port}/v1"),
        None,
        Duration::from_secs(5),
    )
    .chat(&chat_request())
    .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Transport, "{}", error.message);
    assert!(error.retryable);
}

#[test]
fn a_success_that_is_not_json_is_transient() {
    // A proxy's page or a body cut short: not the model's answer, so retried and never recorded.
    for body in [
        "<html>Bad gateway</html>",
        r#"{"choices": [{"message": {"content": "SEL"#,
    ] {
        let error = chat_error(Canned::new(200, body), Duration::from_secs(10));
        assert_eq!(error.kind, LlmErrorKind::Transport, "{body}");
        assert!(error.retryable, "{body}");
        assert!(error.message.contains("not JSON"), "{}", error.message);
    }
}

#[test]
fn a_success_without_the_expected_shape_is_garbage() {
    let shapes = [
        json!({"choices": []}),
        json!({"error": {"message": "overloaded"}}),
        chat_completion(json!(null)),
        chat_completion(json!(["SELECT 1"])),
    ];
    for body in shapes {
        let error = chat_error(Canned::new(200, body.to_string()), Duration::from_secs(10));
        assert_eq!(error.kind, LlmErrorKind::Garbage, "{body}");
        assert!(
            error.message.contains("choices[0].message.content"),
            "{}",
            error.message
        );
    }
}

#[test]
fn embeddings_come_back_in_input_order() {
    let body = json!({
        "object": "list",
        "model": "nomic-embed-text",
        "data": [
            {"object": "embedding", "index": 1, "embedding": [0.5, -1.0]},
            {"object": "embedding", "index": 0, "embedding": [0.25, 2.0]}
        ]
    });
    let server = TestServer::start(vec![Canned::new(200, body.to_string())]);
    let vectors = client(&server.base_url, None, Duration::from_secs(10))
        .embed("nomic-embed-text", &["singers", "concerts"])
        .unwrap();
    assert_eq!(vectors, vec![vec![0.25, 2.0], vec![0.5, -1.0]]);
    let requests = server.finish();
    assert_eq!(requests[0].path, "/v1/embeddings");
    assert_eq!(
        requests[0].json(),
        json!({"model": "nomic-embed-text", "input": ["singers", "concerts"]})
    );
}

#[test]
fn embeddings_of_the_wrong_count_or_type_are_garbage() {
    let bodies = [
        json!({"data": [{"index": 0, "embedding": [1.0]}]}),
        json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}]}),
        json!({"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": [2.0]}]}),
        json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 5, "embedding": [2.0]}]}),
    ];
    for body in bodies {
        let server = TestServer::start(vec![Canned::new(200, body.to_string())]);
        let error = client(&server.base_url, None, Duration::from_secs(10))
            .embed("m", &["a".to_string(), "b".to_string()])
            .unwrap_err();
        server.finish();
        assert_eq!(error.kind, LlmErrorKind::Garbage, "{body}");
    }
}

#[test]
fn per_token_embeddings_are_mean_pooled() {
    // llama.cpp's server without a pooling type: a list of token vectors per input.
    let body = json!({"data": [
        {"index": 0, "embedding": [[1.0, 0.0], [0.0, 1.0]]},
        {"index": 1, "embedding": [[0.5, 0.25]]}
    ]});
    let server = TestServer::start(vec![Canned::new(200, body.to_string())]);
    let vectors = client(&server.base_url, None, Duration::from_secs(10))
        .embed("m", &["a", "b"])
        .unwrap();
    server.finish();
    assert_eq!(vectors, vec![vec![0.5, 0.5], vec![0.5, 0.25]]);
    // Token vectors of different lengths are no embedding.
    let ragged = json!({"data": [{"index": 0, "embedding": [[1.0, 0.0], [1.0]]}]});
    let server = TestServer::start(vec![Canned::new(200, ragged.to_string())]);
    let error = client(&server.base_url, None, Duration::from_secs(10))
        .embed("m", &["a"])
        .unwrap_err();
    server.finish();
    assert_eq!(error.kind, LlmErrorKind::Garbage);
}

#[test]
fn bad_client_configurations_are_refused() {
    let config = |base_url: &str, timeout| ClientConfig {
        base_url: base_url.into(),
        api_key_env: None,
        timeout,
    };
    assert!(Client::new(&config("127.0.0.1:8765/v1", Duration::from_secs(1))).is_err());
    assert!(Client::new(&config("ftp://example.org/v1", Duration::from_secs(1))).is_err());
    assert!(Client::new(&config("http://127.0.0.1:8765/v1", Duration::ZERO)).is_err());
    assert!(Client::new(&config("http://127.0.0.1:8765/v1", Duration::from_secs(1))).is_ok());
}

#[test]
fn the_cached_embedder_asks_only_for_texts_it_has_not_seen() {
    use sqlgate_eval::metrics::sqlmorph::Embedder;
    use sqlgate_llm::CachedEmbedder;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("embeddings.jsonl");
    let body = |vectors: &[[f32; 2]]| {
        let data: Vec<_> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| json!({"index": i, "embedding": v}))
            .collect();
        json!({"data": data}).to_string()
    };
    let server = TestServer::start(vec![
        Canned::new(200, body(&[[1.0, 0.0], [0.0, 1.0]])),
        Canned::new(200, body(&[[0.5, 0.5]])),
    ]);
    let texts = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    let embedder = CachedEmbedder::open(
        client(&server.base_url, None, Duration::from_secs(10)),
        "m",
        &cache,
        throttle(4),
    )
    .unwrap();
    assert_eq!(
        embedder.embed(&texts(&["a", "b"])).unwrap(),
        vec![vec![1.0, 0.0], vec![0.0, 1.0]]
    );
    // "b" is cached: only "c" is asked for, and the answer keeps the input order.
    assert_eq!(
        embedder.embed(&texts(&["b", "c"])).unwrap(),
        vec![vec![0.0, 1.0], vec![0.5, 0.5]]
    );
    let requests = server.finish();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].json()["input"], json!(["c"]));
    // A torn last line (a run killed mid-write) is ignored; the rest is read back, and a fresh
    // embedder on the same file makes no request at all (its server is gone).
    let mut text = std::fs::read_to_string(&cache).unwrap();
    text.push_str("{\"key\": \"torn");
    std::fs::write(&cache, text).unwrap();
    let offline = CachedEmbedder::open(
        client("http://127.0.0.1:9/v1", None, Duration::from_secs(1)),
        "m",
        &cache,
        throttle(4),
    )
    .unwrap();
    assert_eq!(
        offline.embed(&texts(&["c", "a"])).unwrap(),
        vec![vec![0.5, 0.5], vec![1.0, 0.0]]
    );
    assert!(
        offline.embed(&texts(&["new"])).is_err(),
        "an unseen text needs the server"
    );
    assert!(
        std::fs::read_to_string(&cache).unwrap().ends_with('\n'),
        "the torn line was cut"
    );
}

#[test]
fn a_reply_cut_short_before_any_text_is_an_empty_reply() {
    // A reasoning model that spent its whole budget thinking: no content, cut short.
    let mut body = chat_completion(json!(null));
    body["choices"][0]["finish_reason"] = json!("length");
    let server = TestServer::start(vec![Canned::new(200, body.to_string())]);
    let reply = client(&server.base_url, None, Duration::from_secs(10))
        .chat(&chat_request())
        .unwrap();
    server.finish();
    assert_eq!(reply.content, "");
    assert!(reply.cut_short());
}

#[test]
fn usage_is_read_when_the_server_counts_both_parts() {
    let mut without = chat_completion(json!("SELECT 1"));
    without.as_object_mut().unwrap().remove("usage");
    let mut partial = chat_completion(json!("SELECT 1"));
    partial["usage"] = json!({"prompt_tokens": 10});
    let server = TestServer::start(vec![
        Canned::new(200, without.to_string()),
        Canned::new(200, partial.to_string()),
    ]);
    let client = client(&server.base_url, None, Duration::from_secs(10));
    for _ in 0..2 {
        let reply = client.chat(&chat_request()).unwrap();
        assert_eq!(reply.content, "SELECT 1");
        assert_eq!(reply.usage(), None);
    }
    server.finish();
}

#[test]
fn embedding_requests_are_retried_and_a_server_left_down_is_not_asked_again() {
    use sqlgate_eval::metrics::sqlmorph::Embedder;
    use sqlgate_llm::CachedEmbedder;
    let dir = tempfile::tempdir().unwrap();
    let unavailable = || Canned::new(503, r#"{"error": {"message": "loading model"}}"#);
    let vectors = json!({"data": [{"index": 0, "embedding": [1.0, 0.0]}]}).to_string();
    let flaky = TestServer::start(vec![
        unavailable(),
        unavailable(),
        Canned::new(200, vectors),
    ]);
    let embedder = CachedEmbedder::open(
        client(&flaky.base_url, None, Duration::from_secs(10)),
        "m",
        &dir.path().join("flaky.jsonl"),
        throttle(2),
    )
    .unwrap();
    assert_eq!(
        embedder.embed(&["a".to_string()]).unwrap(),
        vec![vec![1.0, 0.0]]
    );
    assert_eq!(flaky.finish().len(), 3, "two 503s, then the answer");

    let down = TestServer::start(vec![unavailable(), unavailable(), unavailable()]);
    let embedder = CachedEmbedder::open(
        client(&down.base_url, None, Duration::from_secs(10)),
        "m",
        &dir.path().join("down.jsonl"),
        throttle(2),
    )
    .unwrap();
    let first = embedder.embed(&["a".to_string()]).unwrap_err().to_string();
    assert!(first.contains("HTTP 503"), "{first}");
    assert!(first.contains("after 3 attempts"), "{first}");
    assert_eq!(down.finish().len(), 3);
    // The server is gone now; a later request fails at once with the first failure's reason.
    assert_eq!(
        embedder.embed(&["b".to_string()]).unwrap_err().to_string(),
        first
    );
}
