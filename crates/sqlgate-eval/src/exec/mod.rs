//! Sandboxed execution of SQL through the engines of `sqlgate-engine`'s interface: every
//! distinct query once per run, its result kept across runs when the database's content says
//! it may be.

pub mod engine;
pub mod result_cache;
pub mod schema;
pub mod scratch;

use std::path::Path;
use std::time::Instant;

pub use engine::Engine;
pub use scratch::{ScratchLease, ScratchPool};
pub use sqlgate_engine::{
    copy_database, limits, memory, value, Backend, Connection, Driver, EngineError, ExecError,
    ExecErrorKind, Execution, Feature, Limits, Open, ResultSet, Scratch, Settings, Source, Storage,
    Unsupported, Value, Writer, STAGING_SUFFIX,
};

/// Runs queries for the evaluators; executions are cached by the implementation.
/// A database is named by a path: a SQLite file, or a PostgreSQL database's name.
pub trait QueryRunner: Sync {
    /// Runs a gold query on `db`.
    fn gold(&self, db: &Path, sql: &str) -> Execution;
    /// Runs a predicted query on `db` (an implementation may share a gold query's result).
    fn pred(&self, db: &Path, sql: &str) -> Execution;
    /// The engine the queries run on: a metric that reads the catalog or asks for a plan
    /// speaks its dialect.
    fn driver(&self) -> &'static dyn Driver;

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

    /// A scratch copy of `db` for a state case's statements ([`Scratch`]), and the bounds each
    /// statement runs under there. A runner without copies says so (an `Unavailable` error).
    fn scratch(&self, db: &Path) -> Result<(ScratchLease<'_>, Limits), ExecError> {
        let _ = db;
        Err(ExecError {
            kind: ExecErrorKind::Unavailable,
            message: "this query runner has no scratch copies".to_string(),
        })
    }

    /// The bounds of work done outside this runner for a case (LiveSQLBench's Python test
    /// cases, run in a subprocess: [`crate::metrics::state`]).
    fn outside_limits(&self) -> Limits {
        Limits::default()
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

    fn driver(&self) -> &'static dyn Driver {
        self.runner.driver()
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

    /// A state is read from the copy directly, where no execution is witnessed: a case that
    /// used one is never kept for another run.
    fn scratch(&self, db: &Path) -> Result<(ScratchLease<'_>, Limits), ExecError> {
        self.momentary
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.runner.scratch(db)
    }

    /// What work outside the runner returns is not witnessed: a case that asked is never kept
    /// for another run.
    fn outside_limits(&self) -> Limits {
        self.momentary
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.runner.outside_limits()
    }
}

/// The engine `driver` configured with `settings`; the password variable's value is masked in
/// everything sqlgate writes from now on ([`crate::secrets`]).
pub fn connect(
    driver: &'static dyn Driver,
    settings: &sqlgate_engine::Settings<'_>,
) -> Result<std::sync::Arc<dyn Backend>, EngineError> {
    if let Some(variable) = settings.password_env {
        crate::secrets::register_env(variable);
    }
    driver.connect(settings)
}
