//! The `http` system: the JSON request is POSTed to a URL, which answers `{"sql": "..."}` or
//! `{"abstain": true}`.

use std::collections::BTreeSet;
use std::io::Read;
use std::time::Duration;

use super::answer::parse_answer;
use super::{Reply, Request, System, SystemError, SystemErrorKind};
use crate::config::system::HttpConfig;
use reqwest::blocking::{Client, Response};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::Url;
use sqlgate_eval::secrets;
use sqlgate_eval::store::Hasher;
use sqlgate_llm::errors;

/// Answers longer than this are not answers.
const BODY_LIMIT: u64 = 16 << 20;

/// POSTs each case to a URL.
pub struct HttpSystem {
    url: Url,
    client: Client,
    headers: HeaderMap,
    fingerprint: String,
    timeout: Duration,
}

impl HttpSystem {
    /// Checks the configuration and reads the `headers_env` variables.
    pub fn new(config: &HttpConfig) -> Result<HttpSystem, HttpError> {
        for variable in config.headers_env.values() {
            secrets::register_env(variable);
        }
        let url = Url::parse(&config.url).map_err(|e| HttpError::Url {
            url: config.url.clone(),
            reason: e.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(HttpError::NotHttp(config.url.clone()));
        }
        let timeout = config.timeout_secs.duration();
        let client = sqlgate_llm::http_client_builder()
            .timeout(timeout)
            .build()
            .map_err(HttpError::Client)?;
        Ok(HttpSystem {
            headers: headers(config)?,
            fingerprint: fingerprint(config),
            url,
            client,
            timeout,
        })
    }

    fn post(&self, body: Vec<u8>) -> Result<Response, SystemError> {
        self.client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .map_err(|e| errors::transport(&e, self.url.as_str(), self.timeout).into())
    }

    /// The response body, or the error its status means.
    fn read(&self, response: Response) -> Result<Vec<u8>, SystemError> {
        let status = response.status();
        let retry_after = errors::retry_after(response.headers());
        let mut body = Vec::new();
        response
            .take(BODY_LIMIT + 1)
            .read_to_end(&mut body)
            .map_err(|e| {
                SystemError::retryable(
                    SystemErrorKind::Transport,
                    format!("{}: reading the answer: {e}", self.url),
                )
            })?;
        if body.len() as u64 > BODY_LIMIT && status.is_success() {
            return Err(SystemError::new(
                SystemErrorKind::Garbage,
                format!("the answer is over {BODY_LIMIT} bytes"),
            ));
        }
        // An answer or an error page may echo the credentials sent: nothing passes them on.
        let body = secrets::redact_bytes(&body).into_owned();
        if !status.is_success() {
            return Err(errors::http_status(status, retry_after, &body, self.url.as_str()).into());
        }
        Ok(body)
    }
}

impl System for HttpSystem {
    fn fingerprint(&self) -> String {
        self.fingerprint.clone()
    }

    fn answer(&self, request: &Request) -> Result<Reply, SystemError> {
        let body = serde_json::to_vec(request).map_err(|e| {
            SystemError::new(
                SystemErrorKind::Transport,
                format!("cannot encode the request: {e}"),
            )
        })?;
        let response = self.post(body)?;
        let body = self.read(response)?;
        // A body that ends inside its JSON was cut short on the way: transient, retried, never
        // recorded. Any other unusable answer is the system's own, and recorded as garbage.
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&body) {
            if e.is_eof() {
                return Err(SystemError::retryable(
                    SystemErrorKind::Transport,
                    format!("{}: the answer was cut short ({e})", self.url),
                ));
            }
        }
        parse_answer(&body)
    }

    /// A connection check: any response to a `HEAD` of the URL (sent as every request is,
    /// through the same proxies) means the server is up; nothing is computed.
    fn preflight(&self) -> Result<(), String> {
        let url = self.url.as_str();
        match self.client.head(self.url.clone()).send() {
            Ok(_) => Ok(()),
            Err(e) => Err(errors::transport(&e, url, self.timeout).message),
        }
    }
}

/// Why an `http` system cannot be built ([`HttpSystem::new`]): its URL or headers, or the
/// client.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The URL does not parse.
    #[error("`url` {url:?}: {reason}")]
    Url {
        /// The URL as configured.
        url: String,
        /// The parser's words.
        reason: String,
    },
    /// The URL's scheme is not http or https.
    #[error("`url` {0:?}: expected http or https")]
    NotHttp(String),
    /// The HTTP client could not be set up (its TLS backend).
    #[error("cannot set up the HTTP client: {0}")]
    Client(reqwest::Error),
    /// A `headers_env` variable is not set.
    #[error("header `{name}`: environment variable `{variable}` is not set")]
    HeaderUnset {
        /// The header.
        name: String,
        /// The variable.
        variable: String,
    },
    /// A header name HTTP does not allow.
    #[error("`{0}` is not a valid header name")]
    HeaderName(String),
    /// A header value HTTP does not allow (the header named, never the value: a credential).
    #[error("header `{0}`: the value is not a valid header value")]
    HeaderValue(String),
    /// A header in both `headers` and `headers_env`.
    #[error("header `{0}` is given twice (in `headers` and `headers_env`?)")]
    HeaderTwice(String),
}

/// Hashes the URL, the header names, and the values of the fixed `headers`, which may change
/// the answers (a model or a version selected by a header). The values of `headers_env` are
/// credentials: a new token must not invalidate the recordings.
fn fingerprint(config: &HttpConfig) -> String {
    let names: BTreeSet<String> = config
        .headers
        .keys()
        .chain(config.headers_env.keys())
        .map(|name| name.to_ascii_lowercase())
        .collect();
    let mut hash = Hasher::new();
    hash.field("http").field(&config.url);
    for name in &names {
        hash.field(name);
    }
    if !config.headers.is_empty() {
        // No header name is empty: the values cannot be taken for more names. A configuration
        // without fixed headers keeps the fingerprint it had before values were hashed.
        hash.field("");
        for (name, value) in &config.headers {
            hash.field(name.to_ascii_lowercase()).field(value);
        }
    }
    format!("http:{}", hash.hex())
}

fn headers(config: &HttpConfig) -> Result<HeaderMap, HttpError> {
    let mut headers = HeaderMap::new();
    let from_env = config.headers_env.iter().map(|(name, variable)| {
        std::env::var(variable)
            .map(|value| (name, value))
            .map_err(|_| HttpError::HeaderUnset {
                name: name.clone(),
                variable: variable.clone(),
            })
    });
    let given = config
        .headers
        .iter()
        .map(|(name, value)| Ok((name, value.clone())));
    for entry in given.chain(from_env) {
        let (name, value) = entry?;
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| HttpError::HeaderName(name.clone()))?;
        let value =
            HeaderValue::from_str(&value).map_err(|_| HttpError::HeaderValue(name.clone()))?;
        if headers.insert(header, value).is_some() {
            return Err(HttpError::HeaderTwice(name.clone()));
        }
    }
    Ok(headers)
}
