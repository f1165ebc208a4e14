//! A real HTTP server on 127.0.0.1 that plays a script of canned responses and records the
//! requests it got, for the LLM client tests.

use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

/// How long the server waits for each expected request before giving up, so that a test whose
/// client never calls still ends.
const WAIT_FOR_REQUEST: Duration = Duration::from_secs(10);

pub struct Canned {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    delay: Duration,
}

impl Canned {
    pub fn new(status: u16, body: impl Into<String>) -> Canned {
        Canned {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    /// An OpenAI chat completion whose first choice says `content`.
    pub fn chat(content: &str) -> Canned {
        Canned::new(200, chat_completion(json!(content)).to_string())
    }

    pub fn header(mut self, name: &str, value: &str) -> Canned {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Waits before answering.
    pub fn after(mut self, delay: Duration) -> Canned {
        self.delay = delay;
        self
    }
}

/// The body OpenAI sends for a chat completion, with `content` as the message content.
pub fn chat_completion(content: Value) -> Value {
    json!({
        "id": "chatcmpl-42",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    })
}

pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("the client sends JSON")
    }
}

pub struct TestServer {
    /// `http://127.0.0.1:<port>/v1`
    pub base_url: String,
    worker: JoinHandle<Vec<Recorded>>,
}

impl TestServer {
    /// Listens on an ephemeral port and answers the next requests with `script`, in order.
    pub fn start(script: Vec<Canned>) -> TestServer {
        let server = tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = server.server_addr().to_ip().expect("an IP listener").port();
        let worker = std::thread::spawn(move || {
            let mut recorded = Vec::new();
            for canned in script {
                let Ok(Some(request)) = server.recv_timeout(WAIT_FOR_REQUEST) else {
                    break;
                };
                recorded.push(respond(request, canned));
            }
            recorded
        });
        TestServer {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            worker,
        }
    }

    /// Waits for the script to end and returns the requests received.
    pub fn finish(self) -> Vec<Recorded> {
        self.worker.join().expect("the test server thread ends")
    }
}

fn respond(mut request: tiny_http::Request, canned: Canned) -> Recorded {
    let mut body = String::new();
    request
        .as_reader()
        .read_to_string(&mut body)
        .expect("a UTF-8 request body");
    let recorded = Recorded {
        method: request.method().to_string(),
        path: request.url().to_string(),
        headers: request
            .headers()
            .iter()
            .map(|h| (h.field.to_string(), h.value.to_string()))
            .collect(),
        body,
    };
    std::thread::sleep(canned.delay);
    let mut response =
        tiny_http::Response::from_data(canned.body.into_bytes()).with_status_code(canned.status);
    for (name, value) in &canned.headers {
        let header = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes())
            .expect("a valid header");
        response.add_header(header);
    }
    // The client may have given up already (timeout tests).
    let _ = request.respond(response);
    recorded
}
