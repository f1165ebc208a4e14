//! The `http` system against a real server on 127.0.0.1, through the throttle.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use sqlgate::config::system::HttpConfig;
use sqlgate::config::Seconds;
use sqlgate::system::http::HttpSystem;
use sqlgate::system::{Request, ServerState, System, SystemErrorKind};
use sqlgate_llm::throttle::Throttle;
use sqlgate_llm::ThrottleConfig;

fn request(id: &str) -> Request {
    Request::question(id, "shop", "dbs/shop.sqlite", "How many books?")
        .with_schema("CREATE TABLE book (id INTEGER);")
}

/// What the server answers to one request.
struct Scripted {
    status: u16,
    headers: Vec<(&'static str, &'static str)>,
    body: &'static str,
    delay: Duration,
}

fn respond(status: u16, body: &'static str) -> Scripted {
    Scripted {
        status,
        headers: Vec::new(),
        body,
        delay: Duration::ZERO,
    }
}

/// What the server received.
struct Received {
    method: String,
    body: Vec<u8>,
    headers: BTreeMap<String, String>,
}

/// Serves the scripted responses in order, then stops; joining yields what it received.
fn serve(script: Vec<Scripted>) -> (String, JoinHandle<Vec<Received>>) {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let address = server.server_addr().to_ip().unwrap();
    let handle = std::thread::spawn(move || {
        let mut received = Vec::new();
        for scripted in script {
            let Ok(Some(mut request)) = server.recv_timeout(Duration::from_secs(20)) else {
                break;
            };
            let mut body = Vec::new();
            std::io::Read::read_to_end(request.as_reader(), &mut body).unwrap();
            let headers = request
                .headers()
                .iter()
                .map(|h| {
                    (
                        h.field.as_str().as_str().to_ascii_lowercase(),
                        h.value.to_string(),
                    )
                })
                .collect();
            let method = request.method().to_string();
            received.push(Received {
                method,
                body,
                headers,
            });
            std::thread::sleep(scripted.delay);
            let mut response =
                tiny_http::Response::from_string(scripted.body).with_status_code(scripted.status);
            for (name, value) in scripted.headers {
                response.add_header(
                    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).unwrap(),
                );
            }
            let _ = request.respond(response);
        }
        received
    });
    (format!("http://{address}/answer"), handle)
}

fn config(url: &str) -> HttpConfig {
    HttpConfig {
        url: url.into(),
        timeout_secs: Seconds::new(10.0).unwrap(),
        headers: BTreeMap::new(),
        headers_env: BTreeMap::new(),
    }
}

/// A throttle that records its waits instead of sleeping.
fn recording_throttle(retries: u32) -> (Throttle, Arc<Mutex<Vec<Duration>>>) {
    let waits = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&waits);
    let throttle = Throttle::new(ThrottleConfig {
        retries,
        ..ThrottleConfig::default()
    })
    .with_sleep(move |wait| log.lock().unwrap().push(wait));
    (throttle, waits)
}

#[test]
fn a_server_error_is_retried_until_the_answer_comes() {
    let (url, server) = serve(vec![
        respond(500, "overloaded"),
        respond(200, r#"{"sql": "SELECT count(*) FROM book"}"#),
    ]);
    let system = HttpSystem::new(&config(&url)).unwrap();
    let (throttle, waits) = recording_throttle(4);

    let reply = throttle.call(|| system.answer(&request("q7"))).unwrap();

    assert_eq!(reply.sql.as_deref(), Some("SELECT count(*) FROM book"));
    let received = server.join().unwrap();
    assert_eq!(received.len(), 2);
    for call in &received {
        let sent: Request = serde_json::from_slice(&call.body).unwrap();
        assert_eq!(sent, request("q7"));
        assert_eq!(call.headers["content-type"], "application/json");
    }
    assert_eq!(*waits.lock().unwrap(), vec![Duration::from_millis(500)]);
}

#[test]
fn retry_after_is_honoured_when_longer_than_the_backoff() {
    let mut busy = respond(429, "slow down");
    busy.headers.push(("Retry-After", "3"));
    let (url, server) = serve(vec![busy, respond(200, r#"{"abstain": true}"#)]);
    let system = HttpSystem::new(&config(&url)).unwrap();
    let (throttle, waits) = recording_throttle(4);

    let reply = throttle.call(|| system.answer(&request("q1"))).unwrap();

    assert_eq!(reply.sql, None);
    assert_eq!(server.join().unwrap().len(), 2);
    assert_eq!(*waits.lock().unwrap(), vec![Duration::from_secs(3)]);
}

#[test]
fn a_client_error_is_not_retried() {
    let (url, server) = serve(vec![respond(404, "no such route")]);
    let system = HttpSystem::new(&config(&url)).unwrap();
    let (throttle, waits) = recording_throttle(4);

    let error = throttle.call(|| system.answer(&request("q1"))).unwrap_err();

    assert_eq!(error.kind, SystemErrorKind::Http);
    assert!(!error.retryable);
    assert!(error.message.contains("404"), "{}", error.message);
    assert!(error.message.contains("no such route"), "{}", error.message);
    assert!(waits.lock().unwrap().is_empty());
    assert_eq!(server.join().unwrap().len(), 1);
}

#[test]
fn retries_run_out_on_a_server_that_stays_down() {
    let (url, server) = serve((0..3).map(|_| respond(503, "down")).collect());
    let system = HttpSystem::new(&config(&url)).unwrap();
    let (throttle, waits) = recording_throttle(2);

    let error = throttle.call(|| system.answer(&request("q1"))).unwrap_err();

    assert_eq!(error.kind, SystemErrorKind::Http);
    assert!(error.retryable);
    assert!(
        error.message.contains("after 3 attempts"),
        "{}",
        error.message
    );
    assert_eq!(server.join().unwrap().len(), 3);
    assert_eq!(
        *waits.lock().unwrap(),
        vec![Duration::from_millis(500), Duration::from_secs(1)]
    );
}

#[test]
fn a_body_that_is_not_an_answer_is_garbage() {
    let (url, server) = serve(vec![respond(200, "<html>SELECT 1</html>")]);
    let system = HttpSystem::new(&config(&url)).unwrap();
    let error = system.answer(&request("q1")).unwrap_err();
    assert_eq!(error.kind, SystemErrorKind::Garbage);
    assert!(!error.retryable);
    assert_eq!(server.join().unwrap().len(), 1);
}

#[test]
fn an_answer_cut_short_is_transient() {
    let (url, server) = serve(vec![respond(200, r#"{"sql": "SELECT na"#)]);
    let system = HttpSystem::new(&config(&url)).unwrap();
    let error = system.answer(&request("q1")).unwrap_err();
    assert_eq!(error.kind, SystemErrorKind::Transport);
    assert!(error.retryable);
    assert!(error.message.contains("cut short"), "{}", error.message);
    assert_eq!(server.join().unwrap().len(), 1);
}

#[test]
fn headers_are_sent_and_environment_headers_resolved() {
    let (url, server) = serve(vec![respond(200, r#"{"sql": "SELECT 1"}"#)]);
    let mut config = config(&url);
    config.headers.insert("X-Team".into(), "data".into());
    // cargo sets this variable for the tests it runs.
    config
        .headers_env
        .insert("X-Package".into(), "CARGO_PKG_NAME".into());
    HttpSystem::new(&config)
        .unwrap()
        .answer(&request("q1"))
        .unwrap();
    let received = server.join().unwrap();
    assert_eq!(received[0].headers["x-team"], "data");
    assert_eq!(received[0].headers["x-package"], env!("CARGO_PKG_NAME"));
}

#[test]
fn a_missing_header_variable_is_a_configuration_error() {
    let mut config = config("http://127.0.0.1:9/");
    config
        .headers_env
        .insert("Authorization".into(), "SQLGATE_TEST_SURELY_UNSET".into());
    let error = HttpSystem::new(&config).err().unwrap().to_string();
    assert_eq!(
        error,
        "header `Authorization`: environment variable `SQLGATE_TEST_SURELY_UNSET` is not set"
    );
}

#[test]
fn a_refused_connection_is_a_retryable_transport_error() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let system = HttpSystem::new(&config(&format!("http://127.0.0.1:{port}/"))).unwrap();
    let error = system.answer(&request("q1")).unwrap_err();
    assert_eq!(error.kind, SystemErrorKind::Transport);
    assert!(error.retryable);
    // The throttle counts it towards stopping the system, and the message says it plainly.
    assert_eq!(error.server, ServerState::Unreachable);
    assert_eq!(
        error.message,
        format!("connection refused at 127.0.0.1:{port}")
    );
}

#[test]
fn a_slow_server_times_out() {
    let mut slow = respond(200, r#"{"sql": "SELECT 1"}"#);
    slow.delay = Duration::from_secs(2);
    let (url, server) = serve(vec![slow]);
    let mut config = config(&url);
    config.timeout_secs = Seconds::new(0.3).unwrap();
    let error = HttpSystem::new(&config)
        .unwrap()
        .answer(&request("q1"))
        .unwrap_err();
    assert_eq!(error.kind, SystemErrorKind::Timeout);
    assert!(error.retryable);
    server.join().unwrap();
}

#[test]
fn the_fingerprint_follows_url_header_names_and_fixed_values_not_credentials() {
    let base = config("http://127.0.0.1:8080/answer");
    let print = |config: &HttpConfig| HttpSystem::new(config).unwrap().fingerprint();
    let mut model_a = base.clone();
    model_a.headers.insert("X-Model".into(), "a".into());
    let mut model_b = base.clone();
    model_b.headers.insert("X-Model".into(), "b".into());
    // Credentials come from the environment; cargo sets both variables, with different values.
    let mut token_a = base.clone();
    token_a
        .headers_env
        .insert("Authorization".into(), "CARGO_PKG_NAME".into());
    let mut token_b = base.clone();
    token_b
        .headers_env
        .insert("Authorization".into(), "CARGO_PKG_VERSION".into());
    let mut other_url = base.clone();
    other_url.url = "http://127.0.0.1:8080/v2".into();

    assert_ne!(print(&model_a), print(&model_b));
    assert_ne!(print(&model_a), print(&base));
    assert_eq!(print(&token_a), print(&token_b));
    assert_ne!(print(&token_a), print(&base));
    assert_ne!(print(&other_url), print(&base));
}

#[test]
fn the_check_before_asking_connects_without_asking() {
    // Any answer means the server is up, even one refusing the method.
    let (url, server) = serve(vec![respond(405, "")]);
    let system = HttpSystem::new(&config(&url)).unwrap();
    assert_eq!(system.preflight(), Ok(()));
    let received = server.join().unwrap();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].method, "HEAD");
    assert!(received[0].body.is_empty());

    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let system = HttpSystem::new(&config(&format!("http://127.0.0.1:{port}/"))).unwrap();
    assert_eq!(
        system.preflight(),
        Err(format!("connection refused at 127.0.0.1:{port}"))
    );
}
