//! The query runner used by evaluators: per-thread sandboxed connections, and gold results
//! computed once per distinct (database, SQL).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use super::sandbox::{Limits, Sandbox};
use super::{ExecError, Execution, QueryRunner};

/// Gold executions by (database, SQL); each computed once, by the first thread to ask.
type GoldCache = Mutex<HashMap<(PathBuf, String), Arc<OnceLock<Execution>>>>;

/// Runs gold and predicted SQL with the same limits; safe to share across threads.
pub struct Engine {
    limits: Limits,
    gold: GoldCache,
}

impl Engine {
    pub fn new(limits: Limits) -> Engine {
        Engine {
            limits,
            gold: Mutex::new(HashMap::new()),
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Executes `sql` on this thread's connection to `db`.
    pub fn execute(&self, db: &Path, sql: &str) -> Execution {
        with_sandbox(db, |sandbox| match sandbox {
            Ok(sandbox) => sandbox.execute(sql, &self.limits),
            Err(error) => Execution {
                result: Err(error),
                elapsed: Default::default(),
            },
        })
    }
}

impl QueryRunner for Engine {
    fn gold(&self, db: &Path, sql: &str) -> Execution {
        let cell = {
            let mut cache = self
                .gold
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            Arc::clone(
                cache
                    .entry((db.to_path_buf(), sql.to_string()))
                    .or_default(),
            )
        };
        // Other threads asking for the same gold wait here instead of executing it again.
        cell.get_or_init(|| self.execute(db, sql)).clone()
    }

    fn pred(&self, db: &Path, sql: &str) -> Execution {
        self.execute(db, sql)
    }
}

/// A connection is reused while its file is unchanged (the file is opened `immutable`, so a
/// rebuilt database needs a new connection).
struct OpenSandbox {
    stamp: Option<(u64, SystemTime)>,
    sandbox: Sandbox,
}

thread_local! {
    static SANDBOXES: RefCell<HashMap<PathBuf, OpenSandbox>> = RefCell::new(HashMap::new());
}

fn file_stamp(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

fn with_sandbox<T>(db: &Path, f: impl FnOnce(Result<&Sandbox, ExecError>) -> T) -> T {
    SANDBOXES.with(|cell| {
        let mut sandboxes = cell.borrow_mut();
        let stamp = file_stamp(db);
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
