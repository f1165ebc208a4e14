//! Sandboxed execution of SQL against SQLite databases or a PostgreSQL server.

pub mod engine;
pub mod postgres;
pub mod sandbox;
pub mod schema;
pub mod value;
mod watchdog;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub use engine::{Backend, Engine, EngineKind};
pub use sandbox::{Limits, Sandbox};
pub use value::Value;

/// Runs queries for the evaluators; gold executions are cached by the implementation.
/// A database is named by a path: a SQLite file, or a PostgreSQL database's name.
pub trait QueryRunner: Sync {
    fn gold(&self, db: &Path, sql: &str) -> Execution;
    fn pred(&self, db: &Path, sql: &str) -> Execution;
}

/// The rows a query returned, with the column names of its cursor description.
#[derive(Debug, Clone, Default)]
pub struct ResultSet {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// True when some TEXT value was not valid UTF-8 and its invalid bytes were dropped
    /// (decoding policy `ignore`); modes with the `strict` policy treat it as a decode error.
    pub lossy_text: bool,
}

/// Why a query produced no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecErrorKind {
    /// The SQL did not parse or prepare (syntax error, unknown table or column).
    Prepare,
    /// The statement failed while running.
    Runtime,
    /// The statement ran past its time bound.
    Timeout,
    /// The result exceeded the row or byte bound.
    TooLarge,
    /// The sandbox refused the statement (a write, ATTACH, a side-effecting PRAGMA...).
    Denied,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecError {
    pub kind: ExecErrorKind,
    pub message: String,
}

/// The outcome of one execution and how long it took.
#[derive(Debug, Clone)]
pub struct Execution {
    pub result: Result<Arc<ResultSet>, ExecError>,
    pub elapsed: Duration,
}
