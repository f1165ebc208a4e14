//! The query runner used by evaluators: per-thread sandboxed connections, and every distinct
//! (database, SQL) executed once per run, whether a gold, a prediction or both; results also
//! come from and go to the on-disk [`ResultCache`] when the run has one.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use super::result_cache::ResultCache;
use super::sandbox::{sidecar, Limits, Sandbox};
use super::{ExecError, ExecErrorKind, Execution, QueryRunner};

/// Executions by (database, SQL); each computed once, by the first thread to ask.
type Executions = Mutex<HashMap<(PathBuf, String), Arc<OnceLock<Execution>>>>;

/// Runs gold and predicted SQL with the same limits; safe to share across threads.
pub struct Engine {
    limits: Limits,
    executions: Executions,
    /// Results of earlier runs, when the run keeps them.
    disk: Option<ResultCache>,
    /// Each database's stamp when this engine first read it.
    first_seen: Mutex<HashMap<PathBuf, Stamp>>,
    counts: Counts,
}

/// Where the results this engine handed out came from.
#[derive(Default)]
struct Counts {
    executed: AtomicUsize,
    from_disk: AtomicUsize,
}

/// How much work an engine did and how much it found done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Distinct (database, SQL) pairs the run needed.
    pub distinct: usize,
    /// Of those, executed on a database.
    pub executed: usize,
    /// Of those, read from the on-disk cache.
    pub from_disk: usize,
}

impl Engine {
    pub fn new(limits: Limits) -> Engine {
        Engine::with_cache(limits, None)
    }

    /// An engine that reads and keeps results in `disk`.
    pub fn with_cache(limits: Limits, disk: Option<ResultCache>) -> Engine {
        Engine {
            limits,
            executions: Mutex::new(HashMap::new()),
            disk,
            first_seen: Mutex::new(HashMap::new()),
            counts: Counts::default(),
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub fn stats(&self) -> EngineStats {
        EngineStats {
            distinct: self
                .executions
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .len(),
            executed: self.counts.executed.load(Ordering::Relaxed),
            from_disk: self.counts.from_disk.load(Ordering::Relaxed),
        }
    }

    /// Executes `sql` on this thread's connection to `db`, uncached.
    ///
    /// A database that another process changes during the run fails every later execution:
    /// results read before and after the change would be compared as if from one state.
    pub fn execute(&self, db: &Path, sql: &str) -> Execution {
        self.execute_checked(db, sql).0
    }

    /// The execution, and whether the database was unchanged throughout (only then may the
    /// result be kept for other runs).
    fn execute_checked(&self, db: &Path, sql: &str) -> (Execution, bool) {
        let first = *self
            .first_seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(db.to_path_buf())
            .or_insert_with(|| Stamp::of(db));
        let mut execution = with_sandbox(db, first, |sandbox| match sandbox {
            Ok(sandbox) => sandbox.execute(sql, &self.limits),
            Err(error) => Execution {
                result: Err(error),
                elapsed: Default::default(),
            },
        });
        // Checked after reading: a change before or during this execution shows here.
        let unchanged = Stamp::of(db) == first;
        if !unchanged {
            execution.result = Err(changed(db));
        }
        (execution, unchanged)
    }

    /// The run's one execution of `sql` on `db`: from an earlier query of this run, from the
    /// disk, or executed now (and kept on disk when the run has a cache). Predictions are kept
    /// too: shards sharing a cache, or two systems giving the same SQL, execute it once.
    fn shared(&self, db: &Path, sql: &str) -> Execution {
        let cell = {
            let mut executions = self
                .executions
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            Arc::clone(
                executions
                    .entry((db.to_path_buf(), sql.to_string()))
                    .or_default(),
            )
        };
        // Other threads asking for the same query wait here instead of executing it again.
        cell.get_or_init(|| {
            if let Some(stored) = self
                .disk
                .as_ref()
                .and_then(|d| d.get(db, sql, &self.limits))
            {
                self.counts.from_disk.fetch_add(1, Ordering::Relaxed);
                return stored;
            }
            let (execution, unchanged) = self.execute_checked(db, sql);
            self.counts.executed.fetch_add(1, Ordering::Relaxed);
            if let (Some(disk), true) = (&self.disk, unchanged) {
                disk.put(db, sql, &self.limits, &execution);
            }
            execution
        })
        .clone()
    }
}

impl QueryRunner for Engine {
    fn gold(&self, db: &Path, sql: &str) -> Execution {
        self.shared(db, sql)
    }

    /// A prediction equal to a gold query shares its result.
    fn pred(&self, db: &Path, sql: &str) -> Execution {
        self.shared(db, sql)
    }
}

fn changed(db: &Path) -> ExecError {
    ExecError {
        kind: ExecErrorKind::Runtime,
        message: format!(
            "database {} changed during the run (another process writes to it); score a copy \
             or stop the writer",
            db.display()
        ),
    }
}

/// What a commit changes in a database or its `-wal` file: size, modification time, and the
/// header's change counter (database) or salts (WAL, new at each restart). The modification
/// time alone is too coarse: two commits within a clock tick share it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    db: Option<FileStamp>,
    wal: Option<FileStamp>,
}

type FileStamp = (u64, SystemTime, [u8; 8]);

/// Where the change counter (and page count) sit in a database header.
const DB_COUNTER_AT: u64 = 24;
/// Where the two salts sit in a WAL header.
const WAL_SALTS_AT: u64 = 16;

impl Stamp {
    fn of(db: &Path) -> Stamp {
        Stamp {
            db: file_stamp(db, DB_COUNTER_AT),
            wal: file_stamp(&sidecar(db, "-wal"), WAL_SALTS_AT),
        }
    }
}

/// A connection is reused while its files are unchanged (a database opened `immutable` that
/// was rebuilt needs a new connection).
struct OpenSandbox {
    stamp: Stamp,
    sandbox: Sandbox,
}

thread_local! {
    static SANDBOXES: RefCell<HashMap<PathBuf, OpenSandbox>> = RefCell::new(HashMap::new());
}

/// Size, modification time and the 8 header bytes at `at` (zeros when the file is shorter).
fn file_stamp(path: &Path, at: u64) -> Option<FileStamp> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    let mut header = [0u8; 8];
    if meta.len() >= at + 8 {
        file.seek(SeekFrom::Start(at)).ok()?;
        file.read_exact(&mut header).ok()?;
    }
    Some((meta.len(), meta.modified().ok()?, header))
}

fn with_sandbox<T>(db: &Path, stamp: Stamp, f: impl FnOnce(Result<&Sandbox, ExecError>) -> T) -> T {
    SANDBOXES.with(|cell| {
        let mut sandboxes = cell.borrow_mut();
        if sandboxes.get(db).is_some_and(|open| open.stamp != stamp) {
            sandboxes.remove(db);
        }
        if !sandboxes.contains_key(db) {
            match Sandbox::open(db) {
                Ok(sandbox) => {
                    sandboxes.insert(db.to_path_buf(), OpenSandbox { stamp, sandbox });
                }
                Err(error) => return f(Err(error)),
            }
        }
        f(Ok(&sandboxes[db].sandbox))
    })
}
