//! Systems under test: anything that turns a question into SQL, or abstains.
//!
//! A system is asked through [`System::answer`]; its answers are recorded in a cassette keyed by
//! the system's fingerprint and the case's content, so CI replays them without calling it.

pub mod abstention;
pub mod answer;
mod build;
pub mod cassette;
pub mod command;
pub mod http;
pub mod openai;
pub mod replay;
pub mod throttle;

pub use build::{build, ReplayConfig};

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a system is asked: the JSON document sent to `command` and `http` systems.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Request {
    pub id: String,
    pub db: String,
    pub db_path: PathBuf,
    pub question: String,
    pub evidence: Option<String>,
    /// The database schema as `CREATE TABLE` statements.
    pub schema: String,
}

/// A system's answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Reply {
    /// The SQL to execute (already cleaned of markdown and prose); `None` when it abstained.
    pub sql: Option<String>,
    /// Markdown fences or prose were stripped from the raw answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cleaned: bool,
    /// Further sampled answers, for voting and Pass@K.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<String>,
    /// What a retriever returned (tables, columns, examples), for diagnostics.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retrieved: Vec<String>,
}

/// Why a system gave no usable answer; a failing case, never a crashed run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SystemError {
    pub kind: SystemErrorKind,
    pub message: String,
    /// Worth asking again (HTTP 429 or 5xx, a timeout, a dropped connection).
    #[serde(skip)]
    pub retryable: bool,
    /// How long the server asked us to wait (`Retry-After`).
    #[serde(skip)]
    pub retry_after: Option<std::time::Duration>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
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
}

impl SystemErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SystemErrorKind::Timeout => "timeout",
            SystemErrorKind::Exit => "exit",
            SystemErrorKind::Garbage => "garbage",
            SystemErrorKind::Http => "http",
            SystemErrorKind::Transport => "transport",
            SystemErrorKind::NotRecorded => "not_recorded",
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
        )
    }
}

/// A text-to-SQL system. Implement it to plug your own system into `cargo test`.
pub trait System: Send + Sync {
    /// Identifies the system's behaviour: it changes when the model, prompt or parameters change,
    /// so recorded answers of an older configuration are not replayed.
    fn fingerprint(&self) -> String;

    fn answer(&self, request: &Request) -> Result<Reply, SystemError>;
}

impl Request {
    /// The request for a case whose database is the file `db_path`, with `schema` its DDL.
    pub fn new(case: &crate::bench::Case, db_path: PathBuf, schema: String) -> Request {
        Request {
            id: case.id.clone(),
            db: case.db.clone(),
            db_path,
            question: case.question.clone(),
            evidence: case.evidence.clone(),
            schema,
        }
    }
}

/// A database's schema as its `CREATE` statements, as systems are given it.
pub fn schema_ddl(db_path: &std::path::Path) -> Result<String, crate::error::InputError> {
    let fail = |e: rusqlite::Error| {
        crate::error::InputError::file(db_path, format!("cannot read the schema: {e}"))
    };
    let conn =
        rusqlite::Connection::open_with_flags(db_path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(fail)?;
    let mut stmt = conn
        .prepare("SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid")
        .map_err(fail)?;
    let statements = stmt
        .query_map([], |row| row.get::<_, String>(0))
        .map_err(fail)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(fail)?;
    Ok(statements
        .into_iter()
        .map(|s| s + ";")
        .collect::<Vec<_>>()
        .join("\n"))
}
