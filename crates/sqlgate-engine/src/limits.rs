//! The bounds every query runs under, and who wrote the SQL.

use std::time::{Duration, Instant};

use crate::{ExecError, ExecErrorKind, Value};

/// Bounds on one query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Limits {
    /// Wall-time bound; `None` lets a query run to completion (the test-suite reference).
    pub timeout: Option<Duration>,
    /// A query returning more rows than this fails as too large.
    pub max_rows: usize,
    /// Bound on the memory a result takes: every cell's value and heap bytes, and every row's
    /// container (see [`result_bytes`]).
    pub max_bytes: usize,
    /// Bound on the engine's own count of the work a query does (SQLite's virtual-machine
    /// steps): unlike `timeout`, it stops the same queries on a loaded machine as on an idle
    /// one. A query past it fails as a [`ExecErrorKind::Timeout`] saying so; an engine without
    /// [`Feature::StepBound`](crate::Feature::StepBound) relies on `timeout` alone.
    pub max_steps: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Some(Duration::from_secs(30)),
            max_rows: 1_000_000,
            max_bytes: 256 << 20,
            max_steps: None,
        }
    }
}

impl Limits {
    /// These limits with the time bound cut to what is left before `deadline`; an error when
    /// nothing is left.
    pub fn until(&self, deadline: Option<Instant>) -> Result<Limits, ExecError> {
        let Some(deadline) = deadline else {
            return Ok(*self);
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ExecError {
                kind: ExecErrorKind::Timeout,
                message: "the measurement's time budget ran out".to_string(),
            });
        }
        Ok(Limits {
            timeout: Some(self.timeout.map_or(left, |timeout| timeout.min(left))),
            ..*self
        })
    }
}

/// The longest time bound accepted (a day): a later deadline could overflow the clock, and
/// `--timeout none` lifts the bound altogether.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(86_400);

/// A time bound of `secs` seconds, when it is positive and at most [`MAX_TIMEOUT`].
pub fn timeout_from_secs(secs: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|timeout| !timeout.is_zero() && *timeout <= MAX_TIMEOUT)
}

/// The longest statement run. SQLite checks for an interrupt only between whitespace tokens
/// while parsing, so this bounds the time a statement without spaces (`IN (1,2,3,...)`) takes
/// to parse (about a second); the watchdog bounds the rest.
pub const MAX_SQL_BYTES: usize = 16 << 20;
/// Who wrote the SQL a connection runs: it decides where temporary data may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// The suite's gold queries: temporary data may spill to temporary files.
    Gold,
    /// Hostile SQL: temporary data stays in memory.
    Prediction,
}

/// The memory a result of `rows` rows of `width` cells takes, besides the cells' heap bytes
/// (text and blob contents): each cell's `Value` and each row's `Vec`. An empty string or a
/// NULL costs as much as an integer.
pub fn result_bytes(width: usize, rows: usize) -> usize {
    rows.saturating_mul(size_of::<Vec<Value>>() + width * size_of::<Value>())
}
