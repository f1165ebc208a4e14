//! Extra headers of an OpenAI-compatible API (an Azure-style `api-key`): fixed values, or
//! values read from the environment at each request, never held in configuration or written
//! anywhere.

use reqwest::header::{HeaderName, HeaderValue};
use serde::Deserialize;

use super::{LlmError, LlmErrorKind, ServerState};

/// `"value"` or `{ env = "VARIABLE" }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(
    untagged,
    expecting = "a header value: a string, or `{ env = \"VARIABLE\" }` to read it from the environment"
)]
pub enum HeaderSource {
    /// A value written in the configuration.
    Fixed(String),
    /// A value read from an environment variable at each request.
    Env(FromEnv),
}

/// `{ env = "VARIABLE" }`: the value is the variable's, read at each request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FromEnv {
    pub env: String,
}

/// The header's name, checked with its fixed value (a value from the environment is checked
/// when it is read).
pub(super) fn checked(name: &str, source: &HeaderSource) -> Result<HeaderName, String> {
    let header = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("`{name}` is not a valid header name"))?;
    match source {
        HeaderSource::Fixed(value) => {
            HeaderValue::from_str(value)
                .map_err(|_| format!("header `{name}`: the value is not a valid header value"))?;
        }
        HeaderSource::Env(FromEnv { env }) if env.is_empty() => {
            return Err(format!("header `{name}`: `env` must name a variable"));
        }
        HeaderSource::Env(_) => {}
    }
    Ok(header)
}

/// The header's value now. Messages name the variable, never its value.
pub(super) fn value(name: &HeaderName, source: &HeaderSource) -> Result<HeaderValue, LlmError> {
    let variable = match source {
        HeaderSource::Fixed(value) => {
            return HeaderValue::from_str(value).map_err(|_| {
                not_sent(format!(
                    "header `{name}`: the value is not a valid header value"
                ))
            })
        }
        HeaderSource::Env(FromEnv { env }) => env,
    };
    let value = std::env::var(variable).map_err(|_| {
        not_sent(format!(
            "the environment variable {variable} (header `{name}`) is not set"
        ))
    })?;
    let mut value = HeaderValue::from_str(value.trim()).map_err(|_| {
        not_sent(format!(
            "the value of the environment variable {variable} (header `{name}`) is not a \
             valid header value"
        ))
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// The request could not be sent: not the system's fault, and asking again will not help
/// until the environment is fixed (the case is asked again by the next recording run).
fn not_sent(message: String) -> LlmError {
    LlmError {
        kind: LlmErrorKind::Transport,
        message,
        retryable: false,
        retry_after: None,
        server: ServerState::Other,
    }
}
