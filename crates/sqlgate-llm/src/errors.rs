//! Classification of failed requests into [`LlmError`]s, with the retry hints the throttle
//! layer reads.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::StatusCode;
use serde_json::Value;

/// Why a request to an OpenAI-compatible API gave no usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LlmError {
    /// The class of failure.
    pub kind: LlmErrorKind,
    /// What went wrong, with an excerpt of the server's answer when there was one.
    pub message: String,
    /// Worth asking again (HTTP 429 or 5xx, a timeout, a dropped connection).
    pub retryable: bool,
    /// How long the server asked us to wait (`Retry-After`).
    pub retry_after: Option<Duration>,
    /// What the failure says about the server, for the throttle.
    pub server: ServerState,
}

/// What a failed request says about the server: the throttle lowers its concurrency when the
/// server is busy and stops asking one that cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ServerState {
    /// Nothing in particular: the server answered, or the failure says nothing about it.
    #[default]
    Other,
    /// The server said it is overloaded (HTTP 429 or 503). Timeouts say so by their kind.
    Busy,
    /// No connection could be made (refused, no route, no such host).
    Unreachable,
}

/// The classes of [`LlmError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LlmErrorKind {
    /// No answer within the client's time bound.
    Timeout,
    /// Connection refused, reset, DNS...
    Transport,
    /// An error status.
    Http,
    /// The response was not what the API promises (JSON of the wrong shape).
    Garbage,
}

/// How many characters of a response body an error message keeps.
const EXCERPT_CHARS: usize = 300;

/// The request did not complete: a timeout, a refused or dropped connection.
pub fn transport(error: &reqwest::Error, url: &str, timeout: Duration) -> LlmError {
    let (kind, message, server) = if error.is_timeout() {
        (
            LlmErrorKind::Timeout,
            format!("no answer from {url} within {}s", timeout.as_secs_f64()),
            ServerState::Other,
        )
    } else if error.is_connect() {
        (
            LlmErrorKind::Transport,
            connect_failure(error, url),
            ServerState::Unreachable,
        )
    } else {
        (
            LlmErrorKind::Transport,
            format!("request to {url} failed: {}", error_chain(error)),
            ServerState::Other,
        )
    };
    LlmError {
        kind,
        message,
        retryable: true,
        retry_after: None,
        server,
    }
}

/// `connection refused at 127.0.0.1:8765`, or why else no connection could be made.
fn connect_failure(error: &reqwest::Error, url: &str) -> String {
    let address = reqwest::Url::parse(url)
        .ok()
        .and_then(|url| {
            let host = url.host_str()?.to_string();
            Some(format!("{host}:{}", url.port_or_known_default()?))
        })
        .unwrap_or_else(|| url.to_string());
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let refused = cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused);
        if refused {
            return format!("connection refused at {address}");
        }
        source = cause.source();
    }
    format!("cannot connect to {address}: {}", error_chain(error))
}

/// An error status: rate limits, server errors and request timeouts are worth retrying, other
/// client errors (bad key, unknown model, malformed request) are not.
pub fn http_status(
    status: StatusCode,
    retry_after: Option<Duration>,
    body: &[u8],
    url: &str,
) -> LlmError {
    let retryable = status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error();
    let busy = status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE;
    LlmError {
        kind: LlmErrorKind::Http,
        message: format!("HTTP {status} from {url}: {}", error_text(body)),
        retryable,
        retry_after: retry_after.filter(|_| retryable),
        server: if busy {
            ServerState::Busy
        } else {
            ServerState::Other
        },
    }
}

/// The wait a server asks for: OpenAI's `retry-after-ms`, else `Retry-After` in seconds or as
/// an HTTP date.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name| headers.get(name).and_then(|value| value.to_str().ok());
    if let Some(millis) = header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(millis / 1000.0).ok();
    }
    let value = header(RETRY_AFTER.as_str())?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    // A date already past means "now".
    Some(
        date.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The `error.message` of an OpenAI-style error body, else the start of the body.
fn error_text(body: &[u8]) -> String {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let message = parsed.as_ref().and_then(|json| {
        let error = json.get("error")?;
        error.get("message").unwrap_or(error).as_str()
    });
    match message {
        Some(message) => excerpt(message),
        None => excerpt(&String::from_utf8_lossy(body)),
    }
}

/// The error and its causes ("error sending request: connection refused").
fn error_chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The text cut to a length that keeps error messages readable.
pub fn excerpt(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_in_seconds_milliseconds_and_dates() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "7")])),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(&headers(&[
                ("retry-after", "7"),
                ("retry-after-ms", "1500")
            ])),
            Some(Duration::from_millis(1500))
        );
        let in_a_minute = SystemTime::now() + Duration::from_secs(60);
        let date = httpdate::fmt_http_date(in_a_minute);
        let wait = retry_after(&headers(&[("retry-after", &date)])).unwrap();
        assert!(
            wait > Duration::from_secs(55) && wait <= Duration::from_secs(60),
            "{wait:?}"
        );
        let past = httpdate::fmt_http_date(SystemTime::now() - Duration::from_secs(60));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &past)])),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after-ms", "-5")])), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn statuses_are_classified() {
        let retryable = |code: u16| {
            let status = StatusCode::from_u16(code).unwrap();
            let error = http_status(status, Some(Duration::from_secs(1)), b"", "u");
            assert_eq!(error.kind, LlmErrorKind::Http);
            assert_eq!(error.retry_after.is_some(), error.retryable);
            error.retryable
        };
        assert!(retryable(429));
        assert!(retryable(408));
        assert!(retryable(500));
        assert!(retryable(503));
        assert!(!retryable(400));
        assert!(!retryable(401));
        assert!(!retryable(404));
    }

    #[test]
    fn error_messages_quote_the_api_error() {
        let body = br#"{"error": {"message": "The model `gpt-9` does not exist", "type": "invalid_request_error"}}"#;
        let error = http_status(
            StatusCode::NOT_FOUND,
            None,
            body,
            "http://h/v1/chat/completions",
        );
        assert!(error.message.contains("404"), "{}", error.message);
        assert!(
            error.message.contains("The model `gpt-9` does not exist"),
            "{}",
            error.message
        );
        // Ollama and llama.cpp may put a bare string under `error`.
        let error = http_status(
            StatusCode::BAD_REQUEST,
            None,
            br#"{"error": "bad seed"}"#,
            "u",
        );
        assert!(error.message.ends_with(": bad seed"), "{}", error.message);
    }

    #[test]
    fn excerpts_cut_long_text_on_a_char_boundary() {
        let long = "é".repeat(EXCERPT_CHARS + 10);
        let cut = excerpt(&long);
        assert_eq!(cut.chars().count(), EXCERPT_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(excerpt("  short "), "short");
    }
}
