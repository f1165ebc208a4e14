//! Sandboxed execution of SQL against SQLite databases or a PostgreSQL server.

pub mod engine;
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
/// Without the `postgres` feature: the same API, and no server can be named.
#[cfg(not(feature = "postgres"))]
#[path = "postgres_disabled.rs"]
pub mod postgres;
pub mod result_cache;
pub mod sandbox;
pub mod schema;
pub mod value;
mod watchdog;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use engine::{Backend, Engine, EngineKind};
pub use sandbox::{Limits, Sandbox};
pub use value::Value;

/// Runs queries for the evaluators; executions are cached by the implementation.
/// A database is named by a path: a SQLite file, or a PostgreSQL database's name.
pub trait QueryRunner: Sync {
    /// Runs a gold query on `db`.
    fn gold(&self, db: &Path, sql: &str) -> Execution;
    /// Runs a predicted query on `db` (an implementation may share a gold query's result).
    fn pred(&self, db: &Path, sql: &str) -> Execution;
    /// The engine the queries run on: a metric that reads the catalog or asks for a plan
    /// speaks its dialect.
    fn engine(&self) -> EngineKind;

    /// Measures `sql` on `db` for the efficiency metrics, never from a cache: one execution on
    /// a fresh connection, within the runner's limits and, when given, `deadline`. A runner
    /// that cannot measure says so (an `Unavailable` error).
    fn probe(
        &self,
        db: &Path,
        sql: &str,
        probe: Probe,
        deadline: Option<Instant>,
    ) -> Result<f64, ExecError> {
        let _ = (db, sql, probe, deadline);
        Err(ExecError {
            kind: ExecErrorKind::Unavailable,
            message: "this query runner does not measure efficiency".to_string(),
        })
    }
}

/// What one efficiency measurement of a query reads ([`QueryRunner::probe`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Probe {
    /// The wall time of one execution, from preparing the statement to its last row, in
    /// seconds: it depends on the machine and its load.
    Time,
    /// A cost that depends only on the database and the SQL: on SQLite, the virtual-machine
    /// steps of one execution (`SQLITE_STMTSTATUS_VM_STEP`); on PostgreSQL, the planner's
    /// estimated total cost (`EXPLAIN (FORMAT JSON)`), the query not run.
    Cost,
}

/// Runs queries through another runner and notes whether every outcome it handed out was
/// lasting ([`Execution::is_lasting`]): a case scored through it may be kept for another run
/// only then.
pub struct Witness<'a> {
    runner: &'a dyn QueryRunner,
    momentary: std::sync::atomic::AtomicBool,
}

impl<'a> Witness<'a> {
    /// A witness of every execution `runner` hands out from now on.
    pub fn new(runner: &'a dyn QueryRunner) -> Witness<'a> {
        Witness {
            runner,
            momentary: Default::default(),
        }
    }

    /// Whether every execution handed out so far was lasting.
    pub fn all_lasting(&self) -> bool {
        !self.momentary.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn saw(&self, execution: Execution) -> Execution {
        if !execution.is_lasting() {
            self.momentary
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        execution
    }
}

impl QueryRunner for Witness<'_> {
    fn gold(&self, db: &Path, sql: &str) -> Execution {
        self.saw(self.runner.gold(db, sql))
    }

    fn pred(&self, db: &Path, sql: &str) -> Execution {
        self.saw(self.runner.pred(db, sql))
    }

    fn engine(&self) -> EngineKind {
        self.runner.engine()
    }

    fn probe(
        &self,
        db: &Path,
        sql: &str,
        probe: Probe,
        deadline: Option<Instant>,
    ) -> Result<f64, ExecError> {
        let measured = self.runner.probe(db, sql, probe, deadline);
        if matches!(&measured, Err(error) if error.kind.depends_on_run()) {
            self.momentary
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        measured
    }
}

