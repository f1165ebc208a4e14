//! A client for OpenAI-compatible HTTP APIs (OpenAI, vLLM, Ollama, llama.cpp server), shared by
//! the `openai` system and the generators.
//!
//! The client sends one request and classifies what went wrong into an [`LlmError`]; it never
//! retries: retries, backoff and rate limiting belong to the [`throttle::Throttle`] every call
//! goes through, which reads `retryable` and `retry_after` from the error. A call to a system
//! under test ends in a [`SystemError`], whatever the system is.

#![warn(missing_docs)]

pub mod cache;
mod cached_embedder;
mod chat;
mod embeddings;
pub mod errors;
mod headers;
mod models;
mod system_error;
pub mod throttle;
mod throttle_config;

use std::time::Duration;

use reqwest::blocking::RequestBuilder;
use reqwest::header::{HeaderName, AUTHORIZATION};
use serde::Serialize;
use serde_json::Value;
use sqlgate_base::secrets;

pub use cached_embedder::{CachedEmbedder, Retry};
pub use chat::{ChatReply, ChatRequest, Message, Usage};
pub use errors::excerpt;
pub use errors::{LlmError, LlmErrorKind, ServerState};
pub use headers::HeaderSource;
pub use system_error::{SystemError, SystemErrorKind};
pub use throttle_config::{ThrottleConfig, ThrottleError};

/// Where the API is and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// The API root, with its version segment: `https://api.openai.com/v1`,
    /// `http://127.0.0.1:8765/v1`.
    pub base_url: String,
    /// The NAME of the environment variable holding the API key (never the key itself), sent as
    /// `Authorization: Bearer <key>`; `None` for local servers without keys.
    pub api_key_env: Option<String>,
    /// Bound on one request, from connecting until the whole response body is read.
    pub timeout: Duration,
}

/// A configuration that cannot work: a malformed URL, a zero timeout, a bad prompt template...
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// The one way sqlgate builds an HTTP client (the LLM client and HTTP systems): TLS through
/// rustls with the `ring` provider, unless the embedding program installed its own first.
pub fn http_client_builder() -> reqwest::blocking::ClientBuilder {
    // An error only means a provider is already installed, which reqwest then uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::blocking::Client::builder()
}

/// A blocking client for one OpenAI-compatible API; cheap to clone (connections are shared).
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::blocking::Client,
    base_url: String,
    api_key_env: Option<String>,
    /// Further headers sent with every request.
    headers: Vec<(HeaderName, HeaderSource)>,
    timeout: Duration,
}

impl Client {
    /// A client for `config`; a malformed URL or a zero timeout is refused here, not at the first
    /// request.
    pub fn new(config: &ClientConfig) -> Result<Client, ConfigError> {
        let base_url = config.base_url.trim_end_matches('/').to_string();
        let url = reqwest::Url::parse(&base_url)
            .map_err(|e| ConfigError(format!("base URL `{}`: {e}", config.base_url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ConfigError(format!(
                "base URL `{}`: only http and https are supported",
                config.base_url
            )));
        }
        if config.timeout.is_zero() {
            return Err(ConfigError("the request timeout must be above zero".into()));
        }
        let http = http_client_builder()
            .timeout(config.timeout)
            .build()
            .map_err(|e| ConfigError(format!("cannot set up the HTTP client: {e}")))?;
        if let Some(variable) = &config.api_key_env {
            secrets::register_env(variable);
        }
        Ok(Client {
            http,
            base_url,
            api_key_env: config.api_key_env.clone(),
            headers: Vec::new(),
            timeout: config.timeout,
        })
    }

    /// Sends these headers (name → fixed value or environment variable) with every request.
    pub fn with_headers<'a>(
        mut self,
        headers: impl IntoIterator<Item = (&'a String, &'a HeaderSource)>,
    ) -> Result<Client, ConfigError> {
        for (name, source) in headers {
            let name = headers::checked(name, source).map_err(ConfigError)?;
            if name == AUTHORIZATION && self.api_key_env.is_some() {
                return Err(ConfigError(
                    "header `Authorization` is given twice (in `headers` and by `api_key_env`)"
                        .into(),
                ));
            }
            if self.headers.iter().any(|(known, _)| *known == name) {
                return Err(ConfigError(format!("header `{name}` is given twice")));
            }
            if let HeaderSource::Env(headers::FromEnv { env }) = source {
                secrets::register_env(env);
            }
            self.headers.push((name, source.clone()));
        }
        Ok(self)
    }

    /// The request with the key and the configured headers, their values read from the
    /// environment now, so that a replay-only run (which never calls the API) needs no secret.
    fn authorized(&self, mut request: RequestBuilder) -> Result<RequestBuilder, LlmError> {
        if let Some(key) = self.api_key()? {
            request = request.header(AUTHORIZATION, format!("Bearer {key}"));
        }
        for (name, source) in &self.headers {
            request = request.header(name, headers::value(name, source)?);
        }
        Ok(request)
    }

    /// POSTs `body` as JSON to `{base_url}/{path}` and returns the parsed JSON response.
    fn post_json(&self, path: &str, body: &impl Serialize) -> Result<Value, LlmError> {
        let url = format!("{}/{path}", self.base_url);
        let response = self
            .authorized(self.http.post(&url).json(body))?
            .send()
            .map_err(|e| errors::transport(&e, &url, self.timeout))?;
        let status = response.status();
        let retry_after = errors::retry_after(response.headers());
        let bytes = read_body(response, &url, self.timeout)?;
        if !status.is_success() {
            return Err(errors::http_status(status, retry_after, &bytes, &url));
        }
        // An API's 200 that is not JSON was cut short or mangled on the way, not the model's
        // answer: transient, so it is retried and never recorded.
        let mut json = serde_json::from_slice(&bytes).map_err(|e| LlmError {
            kind: LlmErrorKind::Transport,
            message: format!(
                "{url} answered 200 with a body that is not JSON ({e}): {}",
                excerpt(&String::from_utf8_lossy(&bytes))
            ),
            retryable: true,
            retry_after: None,
            server: ServerState::Other,
        })?;
        secrets::redact_json(&mut json);
        Ok(json)
    }

    /// The key from the configured environment variable, read at each request so that a
    /// replay-only run (which never calls the API) needs no secret.
    fn api_key(&self) -> Result<Option<String>, LlmError> {
        let Some(name) = &self.api_key_env else {
            return Ok(None);
        };
        match std::env::var(name) {
            Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_string())),
            _ => Err(LlmError {
                // Not the system's fault: transient, so the case is asked again once the key is set.
                kind: LlmErrorKind::Transport,
                message: format!("the environment variable {name} (api_key_env) is not set"),
                retryable: false,
                retry_after: None,
                server: ServerState::Other,
            }),
        }
    }
}

/// A response's body, with the known secrets redacted: a server may echo the key it was sent
/// (`Incorrect API key provided: ...`), and nothing passes it on.
fn read_body(
    response: reqwest::blocking::Response,
    url: &str,
    timeout: Duration,
) -> Result<Vec<u8>, LlmError> {
    let bytes = response
        .bytes()
        .map_err(|e| errors::transport(&e, url, timeout))?;
    Ok(secrets::redact_bytes(&bytes).into_owned())
}

/// A 200 response that is not what the API promises.
fn garbage(message: String) -> LlmError {
    LlmError {
        kind: LlmErrorKind::Garbage,
        message,
        retryable: false,
        retry_after: None,
        server: ServerState::Other,
    }
}
