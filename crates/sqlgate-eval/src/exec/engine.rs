//! The query runner used by evaluators: per-thread sandboxed connections of one engine
//! ([`Backend`]), and every distinct (database, SQL) executed once per run, whether a gold, a
//! prediction or both; results of database files whose engine fingerprints their content also
//! come from and go to the on-disk [`ResultCache`] when the run has one.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Instant, SystemTime};

use sqlgate_engine::{Backend, Connection, Driver, Feature, Open, Storage};

use super::result_cache::ResultCache;
use super::{
    ExecError, ExecErrorKind, Execution, Limits, Probe, QueryRunner, ScratchLease, ScratchPool,
    Source,
};
use crate::files::Stamp;

/// What a run knows of one database: when it first read it, and its distinct executions by
/// SQL, each computed once, by the first thread to ask.
#[derive(Default)]
struct Database {
    /// The file's stamp when this engine first read it (SQLite).
    first_seen: OnceLock<Stamp>,
    executions: Mutex<HashMap<String, Arc<SharedExecution>>>,
}

/// One distinct query's execution: the thread that claims it executes it; the others wait.
#[derive(Default)]
struct SharedExecution {
    claimed: AtomicBool,
    done: OnceLock<Execution>,
}

/// How many waits one thread may nest while running other work (each adds a case's frames to
/// its stack).
const MAX_NESTED_WAITS: usize = 8;

thread_local! {
    static NESTED_WAITS: Cell<usize> = const { Cell::new(0) };
}

impl SharedExecution {
    /// The execution, computed now by `execute` when no other thread has claimed it.
    fn get(&self, execute: impl FnOnce() -> Execution) -> Execution {
        if !self.claimed.swap(true, Ordering::AcqRel) {
            let _ = self.done.set(execute());
        }
        self.wait().clone()
    }

    /// Waits for the claiming thread. A pool thread runs other queued work meanwhile (other
    /// cases), so two cores stay busy while cases on both share a slow query.
    fn wait(&self) -> &Execution {
        loop {
            if let Some(execution) = self.done.get() {
                return execution;
            }
            let depth = NESTED_WAITS.get();
            if depth >= MAX_NESTED_WAITS {
                return self.done.wait();
            }
            NESTED_WAITS.set(depth + 1);
            let ran_other_work = rayon::yield_now() == Some(rayon::Yield::Executed);
            NESTED_WAITS.set(depth);
            if !ran_other_work {
                return self.done.wait();
            }
        }
    }
}

/// Runs gold and predicted SQL with the same limits; safe to share across threads.
pub struct Engine {
    limits: Limits,
    backend: Arc<dyn Backend>,
    /// The file beside a database that holds part of its content (SQLite's `-wal`), when its
    /// databases are files.
    sidecar: Option<&'static str>,
    /// Every database the run asked about, by path: one lookup of a borrowed path per
    /// execution, then a map of its own queries.
    databases: Mutex<HashMap<PathBuf, Arc<Database>>>,
    /// Results of earlier runs, when the run keeps them.
    disk: Option<ResultCache>,
    counts: Counts,
    /// State cases' scratch copies, kept between cases.
    scratches: ScratchPool,
}

/// Where the results this engine handed out came from.
#[derive(Default)]
struct Counts {
    executed: AtomicUsize,
    from_disk: AtomicUsize,
    shared_in_run: AtomicUsize,
}

/// How much work an engine did and how much it found done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Distinct (database, SQL) pairs the run needed.
    pub distinct: usize,
    /// Of those, executed on a database.
    pub executed: usize,
    /// Of those, read from the on-disk cache as an earlier run left it.
    pub from_disk: usize,
    /// Of those, read from the on-disk cache where another engine of this run (another
    /// suite's) had put it.
    pub shared_in_run: usize,
}

impl Engine {
    /// An engine with `limits` on `backend`.
    pub fn new(limits: Limits, backend: Arc<dyn Backend>) -> Engine {
        let sidecar = match backend.driver().storage() {
            Storage::Files { sidecars, .. } => sidecars.first().copied(),
            Storage::Server => None,
        };
        Engine {
            limits,
            backend,
            sidecar,
            databases: Mutex::default(),
            disk: None,
            counts: Counts::default(),
            scratches: ScratchPool::default(),
        }
    }

    /// The engine reading and keeping results in `disk` across runs: database files whose
    /// content hash says when a result is stale (nothing says when a server's data changed),
    /// of an engine that vouches for that hash.
    pub fn with_cache(mut self, disk: Option<ResultCache>) -> Engine {
        let vouched = !self.backend.on_server()
            && self.backend.driver().supports(Feature::Fingerprint)
            && self.sidecar == Some(crate::store::DATABASE_SIDECAR);
        self.disk = disk.filter(|_| vouched);
        self
    }

    /// The stamp of the database file `db` and its sidecar now.
    fn stamp(&self, db: &Path) -> Stamp {
        Stamp::with_sidecar(db, self.sidecar.unwrap_or(crate::store::DATABASE_SIDECAR))
    }

    /// The bounds every query of this engine runs under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Where the queries run.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// What the engine executed and what it found cached so far.
    pub fn stats(&self) -> EngineStats {
        EngineStats {
            distinct: lock(&self.databases)
                .values()
                .map(|database| lock(&database.executions).len())
                .sum(),
            executed: self.counts.executed.load(Ordering::Relaxed),
            from_disk: self.counts.from_disk.load(Ordering::Relaxed),
            shared_in_run: self.counts.shared_in_run.load(Ordering::Relaxed),
        }
    }

    /// Executes `sql` on this thread's connection to `db`, uncached.
    ///
    /// A database that another process changes during the run fails every later execution:
    /// results read before and after the change would be compared as if from one state.
    pub fn execute(&self, db: &Path, sql: &str) -> Execution {
        self.execute_checked(db, &self.database(db), sql, Source::Prediction)
            .0
    }

    /// What this run knows of `db`.
    fn database(&self, db: &Path) -> Arc<Database> {
        let mut databases = lock(&self.databases);
        if let Some(database) = databases.get(db) {
            return Arc::clone(database);
        }
        Arc::clone(databases.entry(db.to_path_buf()).or_default())
    }

    /// The execution, and whether the database was unchanged throughout (only then may the
    /// result be kept for other runs; a server's never is, as nothing tells when its data
    /// changed).
    fn execute_checked(
        &self,
        db: &Path,
        database: &Database,
        sql: &str,
        source: Source,
    ) -> (Execution, bool) {
        if self.backend.on_server() {
            let execution = match self.backend.open(db, Open::for_source(source)) {
                Ok(mut connection) => connection.execute(sql, &self.limits),
                Err(error) => Execution {
                    result: Err(error),
                    elapsed: Default::default(),
                },
            };
            return (execution, false);
        }
        // With a cache, the stamp its content hash was read at: results read from other
        // content than the hash names fail as changed, and are kept nowhere.
        let first = *database.first_seen.get_or_init(|| {
            self.disk
                .as_ref()
                .and_then(|disk| disk.stamp(db))
                .unwrap_or_else(|| self.stamp(db))
        });
        let open = |db: &Path| self.backend.open(db, Open::for_source(source));
        let (mut execution, unchanged) =
            with_sandbox(db, source, first, open, |sandbox| match sandbox {
                Ok(open) => {
                    let execution = open.sandbox.execute(sql, &self.limits);
                    // Checked after reading: a change before or during this execution shows.
                    (execution, open.still_first(db, self))
                }
                Err(error) => {
                    let execution = Execution {
                        result: Err(error),
                        elapsed: Default::default(),
                    };
                    (execution, self.stamp(db) == first)
                }
            });
        if !unchanged {
            execution.result = Err(changed(db));
        }
        (execution, unchanged)
    }

    /// The run's one execution of `sql` on `db`: from an earlier query of this run, from the
    /// disk, or executed now (and kept on disk when the run has a cache). Predictions are kept
    /// too: shards sharing a cache, or two systems giving the same SQL, execute it once.
    fn shared(&self, db: &Path, sql: &str, source: Source) -> Execution {
        let database = self.database(db);
        let cell = {
            let mut executions = lock(&database.executions);
            match executions.get(sql) {
                Some(cell) => Arc::clone(cell),
                None => Arc::clone(executions.entry(sql.to_string()).or_default()),
            }
        };
        // Other threads asking for the same query wait for it instead of executing it again.
        cell.get(|| {
            if let Some(cached) = self
                .disk
                .as_ref()
                .and_then(|d| d.get(db, sql, &self.limits))
            {
                let count = if cached.this_run {
                    &self.counts.shared_in_run
                } else {
                    &self.counts.from_disk
                };
                count.fetch_add(1, Ordering::Relaxed);
                return cached.execution;
            }
            let (execution, unchanged) = self.execute_checked(db, &database, sql, source);
            self.counts.executed.fetch_add(1, Ordering::Relaxed);
            if let (Some(disk), true) = (&self.disk, unchanged) {
                disk.put(db, sql, &self.limits, &execution);
            }
            execution
        })
    }
}

/// The map behind `mutex`; a thread that panicked holding it left it whole (entries are
/// inserted complete).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl QueryRunner for Engine {
    fn gold(&self, db: &Path, sql: &str) -> Execution {
        self.shared(db, sql, Source::Gold)
    }

    /// A prediction equal to a gold query shares its result (however it was run first: the
    /// text is the gold's).
    fn pred(&self, db: &Path, sql: &str) -> Execution {
        self.shared(db, sql, Source::Prediction)
    }

    fn driver(&self) -> &'static dyn Driver {
        self.backend.driver()
    }

    /// A new prediction connection for each measurement, whoever wrote the SQL: gold and
    /// prediction are timed on identical connections (a server's is pooled: opening one
    /// costs more than most queries).
    fn probe(
        &self,
        db: &Path,
        sql: &str,
        probe: Probe,
        deadline: Option<Instant>,
    ) -> Result<f64, ExecError> {
        let limits = self.limits.until(deadline)?;
        let mut connection = self
            .backend
            .open(db, Open::for_source(Source::Prediction))?;
        match probe {
            Probe::Time => {
                let execution = connection.execute(sql, &limits);
                execution.result?;
                Ok(execution.elapsed.as_secs_f64())
            }
            Probe::Cost if !self.driver().supports(Feature::Cost) => {
                Err(self.driver().unsupported(Feature::Cost).into())
            }
            Probe::Cost => connection.cost(sql, &limits),
        }
    }

    fn scratch(&self, db: &Path) -> Result<(ScratchLease<'_>, Limits), ExecError> {
        let lease = self.scratches.lease(self.backend.as_ref(), db)?;
        Ok((lease, self.limits))
    }

    fn outside_limits(&self) -> Limits {
        self.limits
    }
}

fn changed(db: &Path) -> ExecError {
    ExecError {
        kind: ExecErrorKind::Changed,
        message: format!(
            "database {} changed during the run (another process writes to it); score a copy \
             or stop the writer",
            db.display()
        ),
    }
}

/// A connection is reused while its files are unchanged (a database opened `immutable` that
/// was rebuilt needs a new connection).
struct OpenSandbox {
    /// The stamp the engine first saw the file at.
    stamp: Stamp,
    sandbox: Box<dyn Connection>,
    /// When the file was last seen at `stamp` after a read: the connection's data version and
    /// the file's size and modification time.
    seen_at_stamp: Option<Seen>,
}

#[derive(PartialEq)]
struct Seen {
    version: u32,
    size: u64,
    modified: SystemTime,
}

impl OpenSandbox {
    /// Whether everything this connection has read is of the state `stamp` names.
    ///
    /// The first time, and whenever a quick look finds a difference (and always on an
    /// `immutable` connection), by the file's stamp, as every execution did before: equal now
    /// means no write since the engine first saw the file, so the read that just ended saw that
    /// state. The quick look is taken before the stamp, so a write after it shows at the next
    /// look. It is what the stamp reads of the file, by other means: the size and modification
    /// time from one `stat` of the path (a write that SQLite did not make, a replaced file),
    /// and SQLite's data version instead of the header's change counter: every read
    /// transaction compares that counter (the WAL index in WAL mode, the `-wal` file's
    /// appearance too) with what the connection read last, and moves the version when they
    /// differ; SQLite's page cache relies on that same check. A version that moved for another
    /// reason (SQLite also resets its cache after an I/O error) falls back to the stamp, so it
    /// is never taken for a change.
    fn still_first(&mut self, db: &Path, engine: &Engine) -> bool {
        let seen = self.sandbox.data_version().and_then(|version| {
            let meta = std::fs::metadata(db).ok()?;
            Some(Seen {
                version,
                size: meta.len(),
                modified: meta.modified().ok()?,
            })
        });
        if seen.is_some() && seen == self.seen_at_stamp {
            return true;
        }
        let unchanged = engine.stamp(db) == self.stamp;
        if unchanged {
            self.seen_at_stamp = seen;
        }
        unchanged
    }
}

thread_local! {
    /// This thread's connections to each database: for gold SQL, then for predictions.
    static SANDBOXES: RefCell<[HashMap<PathBuf, OpenSandbox>; 2]> = RefCell::default();
}

fn with_sandbox<T>(
    db: &Path,
    source: Source,
    stamp: Stamp,
    open: impl FnOnce(&Path) -> Result<Box<dyn Connection>, ExecError>,
    f: impl FnOnce(Result<&mut OpenSandbox, ExecError>) -> T,
) -> T {
    SANDBOXES.with(|cell| {
        let mut sandboxes = cell.borrow_mut();
        let sandboxes = &mut sandboxes[match source {
            Source::Gold => 0,
            Source::Prediction => 1,
        }];
        if sandboxes.get(db).is_some_and(|open| open.stamp != stamp) {
            sandboxes.remove(db);
        }
        if let Some(open) = sandboxes.get_mut(db) {
            return f(Ok(open));
        }
        match open(db) {
            Ok(sandbox) => {
                let open = OpenSandbox {
                    stamp,
                    sandbox,
                    seen_at_stamp: None,
                };
                f(Ok(sandboxes.entry(db.to_path_buf()).or_insert(open)))
            }
            Err(error) => f(Err(error)),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_waiting_for_a_shared_query_runs_other_work_meanwhile() {
        use std::sync::Mutex;
        use std::time::{Duration, Instant};
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let shared = SharedExecution::default();
        let slow = || {
            std::thread::sleep(Duration::from_millis(400));
            Execution {
                result: Err(changed(Path::new("x"))),
                elapsed: Duration::default(),
            }
        };
        let executed_at = Mutex::new(None);
        let other_work_at = Mutex::new(None);
        pool.scope(|scope| {
            // One thread executes the slow query; the other asks for it, then waits.
            scope.spawn(|_| {
                shared.get(slow);
                *executed_at.lock().unwrap() = Some(Instant::now());
            });
            scope.spawn(|scope| {
                std::thread::sleep(Duration::from_millis(100));
                // Queued on this thread, which then waits: only it is free to run the work.
                scope.spawn(|_| *other_work_at.lock().unwrap() = Some(Instant::now()));
                shared.get(slow);
            });
        });
        let executed_at = executed_at.into_inner().unwrap().unwrap();
        let other_work_at = other_work_at.into_inner().unwrap().unwrap();
        assert!(
            other_work_at < executed_at,
            "the waiting thread ran the other work only after the query"
        );
    }
}
