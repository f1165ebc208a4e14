//! The error a call to a system ends in, shared by the systems, their throttle and the
//! generators that ask a model.

use serde::{Deserialize, Serialize};

use crate::{LlmError, LlmErrorKind, ServerState};

/// Why a system gave no usable answer; a failing case, never a crashed run.
///
/// Fields may be added, so build one with [`SystemError::new`], [`SystemError::retryable`] or
/// [`SystemError::garbage`] and the `with_` methods.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SystemError {
    /// The class of failure, as reports and records name it.
    pub kind: SystemErrorKind,
    /// What went wrong, for a person.
    pub message: String,
    /// Worth asking again (HTTP 429 or 5xx, a timeout, a dropped connection).
    #[serde(skip)]
    pub retryable: bool,
    /// How long the server asked us to wait (`Retry-After`).
    #[serde(skip)]
    pub retry_after: Option<std::time::Duration>,
    /// What the failure says about the server: the throttle lowers its concurrency when it is
    /// busy and stops asking it when it cannot be reached.
    #[serde(skip)]
    pub server: ServerState,
    /// The reply this error was read from was cut short by the system's token limit (garbage
    /// from a truncated reply), so the truncation is counted whatever the reply was judged.
    #[serde(skip)]
    pub truncated: bool,
}

/// The classes of [`SystemError`], as reports and records name them.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SystemErrorKind {
    /// No answer within the system's time bound.
    Timeout,
    /// A `command` system exited with a non-zero status.
    Exit,
    /// The output was not an answer (not JSON, wrong shape, no SQL in a chat reply).
    Garbage,
    /// An HTTP error status that retries did not cure.
    Http,
    /// Connection refused, reset, DNS...
    Transport,
    /// `--record none` and the cassette holds no answer for this case.
    NotRecorded,
    /// Not asked: the system could not be reached (the check before asking failed, or the
    /// run stopped asking after consecutive connection failures).
    Unavailable,
}

impl SystemError {
    /// A failure that asking again will not cure (garbage output, a non-zero exit).
    pub fn new(kind: SystemErrorKind, message: impl Into<String>) -> SystemError {
        SystemError {
            kind,
            message: message.into(),
            retryable: false,
            retry_after: None,
            server: ServerState::Other,
            truncated: false,
        }
    }

    /// A transient failure the throttle retries (a timeout, a dropped connection, HTTP 5xx).
    pub fn retryable(kind: SystemErrorKind, message: impl Into<String>) -> SystemError {
        SystemError {
            retryable: true,
            ..SystemError::new(kind, message)
        }
    }

    /// The output was not an answer.
    pub fn garbage(message: impl Into<String>) -> SystemError {
        SystemError::new(SystemErrorKind::Garbage, message)
    }

    /// Says what the failure tells about the server: the throttle lowers its concurrency when
    /// it is [`ServerState::Busy`] and stops asking when it is [`ServerState::Unreachable`].
    pub fn with_server(mut self, server: ServerState) -> SystemError {
        self.server = server;
        self
    }

    /// Asks the throttle to wait `delay` before the next attempt (a server's `Retry-After`).
    pub fn with_retry_after(mut self, delay: std::time::Duration) -> SystemError {
        self.retry_after = Some(delay);
        self
    }
}

impl std::fmt::Display for SystemError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)
    }
}

impl std::error::Error for SystemError {}

impl From<LlmError> for SystemError {
    fn from(error: LlmError) -> SystemError {
        let kind = match error.kind {
            LlmErrorKind::Timeout => SystemErrorKind::Timeout,
            LlmErrorKind::Transport => SystemErrorKind::Transport,
            LlmErrorKind::Http => SystemErrorKind::Http,
            LlmErrorKind::Garbage => SystemErrorKind::Garbage,
        };
        SystemError {
            kind,
            message: error.message,
            retryable: error.retryable,
            retry_after: error.retry_after,
            server: error.server,
            truncated: false,
        }
    }
}

/// The way back, for a failure of an LLM request retried through the throttle.
impl From<SystemError> for LlmError {
    fn from(error: SystemError) -> LlmError {
        let kind = match error.kind {
            SystemErrorKind::Timeout => LlmErrorKind::Timeout,
            SystemErrorKind::Http => LlmErrorKind::Http,
            SystemErrorKind::Garbage => LlmErrorKind::Garbage,
            // Whatever else stopped the request, the server did not answer.
            _ => LlmErrorKind::Transport,
        };
        LlmError {
            kind,
            message: error.message,
            retryable: error.retryable,
            retry_after: error.retry_after,
            server: error.server,
        }
    }
}

/// Embedding requests are retried by the throttle that retries system calls.
impl crate::Retry for crate::throttle::Throttle {
    fn retry(
        &self,
        send: &mut dyn FnMut() -> Result<Vec<Vec<f32>>, LlmError>,
    ) -> Result<Vec<Vec<f32>>, LlmError> {
        self.call(|| send().map_err(SystemError::from))
            .map_err(LlmError::from)
    }
}

impl SystemErrorKind {
    /// The name in reports and records (`timeout`, `not_recorded`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            SystemErrorKind::Timeout => "timeout",
            SystemErrorKind::Exit => "exit",
            SystemErrorKind::Garbage => "garbage",
            SystemErrorKind::Http => "http",
            SystemErrorKind::Transport => "transport",
            SystemErrorKind::NotRecorded => "not_recorded",
            SystemErrorKind::Unavailable => "unavailable",
        }
    }

    /// Transient failures are retried on the next recording run instead of being recorded.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            SystemErrorKind::Timeout
                | SystemErrorKind::Http
                | SystemErrorKind::Transport
                | SystemErrorKind::NotRecorded
                | SystemErrorKind::Unavailable
        )
    }
}
