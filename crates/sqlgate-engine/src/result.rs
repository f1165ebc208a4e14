//! What one execution gives: rows with their column names, or why there are none.

use std::sync::Arc;
use std::time::Duration;

use crate::Value;

/// The rows a query returned, with the column names of its cursor description.
#[derive(Debug, Clone, Default)]
pub struct ResultSet {
    /// Column names, in the order the query returns them.
    pub columns: Vec<String>,
    /// The rows, in the order the engine returned them.
    pub rows: Vec<Vec<Value>>,
    /// True when some TEXT value was not valid UTF-8 and its invalid bytes were dropped
    /// (decoding policy `ignore`); modes with the `strict` policy treat it as a decode error.
    pub lossy_text: bool,
}

/// Why a query produced no result.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
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
    /// The process-wide memory bound was hit: by this query, or by others running beside it.
    OutOfMemory,
    /// The database changed while the run read it (another process writes to it).
    Changed,
    /// The database could not be read at that moment: an I/O error, a lock held by a writer,
    /// a server connection that failed, an interrupt that was not the time bound.
    Unavailable,
}

impl ExecErrorKind {
    /// Whether the outcome says something about the run's circumstances (the machine's load,
    /// other queries, other processes) rather than about the database's content, the SQL and
    /// the limits alone. Such an outcome is shown and counted, never kept for another run.
    pub fn depends_on_run(self) -> bool {
        matches!(
            self,
            ExecErrorKind::Timeout
                | ExecErrorKind::OutOfMemory
                | ExecErrorKind::Changed
                | ExecErrorKind::Unavailable
        )
    }
}

/// Why a query gave no result, and its engine's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecError {
    /// The class of failure the evaluators react to.
    pub kind: ExecErrorKind,
    /// The engine's (or the sandbox's) explanation.
    pub message: String,
}

/// The outcome of one execution and how long it took.
#[derive(Debug, Clone)]
pub struct Execution {
    /// The rows, or why there are none.
    pub result: Result<Arc<ResultSet>, ExecError>,
    /// How long the execution took (zero when no query ran).
    pub elapsed: Duration,
}

impl Execution {
    /// Whether another run on the same database content, SQL and limits would give the same
    /// outcome (see [`ExecErrorKind::depends_on_run`]).
    pub fn is_lasting(&self) -> bool {
        !matches!(&self.result, Err(error) if error.kind.depends_on_run())
    }
}
