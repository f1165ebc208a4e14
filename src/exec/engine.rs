//! The query runner used by evaluators: per-thread sandboxed connections (SQLite files or a
//! PostgreSQL server), and gold results computed once per distinct (database, SQL).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use super::postgres::Server;
use super::sandbox::{sidecar, Limits, Sandbox};
use super::{ExecError, ExecErrorKind, Execution, QueryRunner};

/// Gold executions by (database, SQL); each computed once, by the first thread to ask.
type GoldCache = Mutex<HashMap<(PathBuf, String), Arc<OnceLock<Execution>>>>;

/// The engines a suite or `sqlgate score` can name.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Deserialize,
    serde::Serialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// SQLite files (`<db_dir>/<db>.sqlite`).
    #[default]
    Sqlite,
    /// A PostgreSQL server (`dsn`, docs/postgres.md).
    Postgres,
}

/// Where the databases are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Backend {
    /// SQLite files: a database is the path of its file.
    #[default]
    Sqlite,
    /// A PostgreSQL server: a database is its name, given as a one-component path.
    Postgres(Server),
}

impl Backend {
    /// The backend of `kind`: PostgreSQL needs the URL template `dsn`; SQLite takes none.
    pub fn new(
        kind: EngineKind,
        dsn: Option<&str>,
        password_env: Option<&str>,
    ) -> Result<Backend, String> {
        match (kind, dsn) {
            (EngineKind::Sqlite, None) if password_env.is_none() => Ok(Backend::Sqlite),
            (EngineKind::Sqlite, _) => {
                Err("a connection URL and its password variable need engine `postgres`".into())
            }
            (EngineKind::Postgres, Some(dsn)) => {
                Server::new(dsn, password_env).map(Backend::Postgres)
            }
            (EngineKind::Postgres, None) => {
                Err("engine `postgres` needs a connection URL template such as \
                 `postgres://sqlgate_reader@127.0.0.1:5432/{db}`"
                    .into())
            }
        }
    }

    pub fn on_server(&self) -> bool {
        matches!(self, Backend::Postgres(_))
    }
}

/// Runs gold and predicted SQL with the same limits; safe to share across threads.
pub struct Engine {
    limits: Limits,
    backend: Backend,
    gold: GoldCache,
    /// Each database's stamp when this engine first read it (SQLite).
    first_seen: Mutex<HashMap<PathBuf, Stamp>>,
}

impl Engine {
    /// An engine on SQLite files.
    pub fn new(limits: Limits) -> Engine {
        Engine::with_backend(limits, Backend::Sqlite)
    }

    pub fn with_backend(limits: Limits, backend: Backend) -> Engine {
        Engine {
            limits,
            backend,
            gold: Mutex::new(HashMap::new()),
            first_seen: Mutex::new(HashMap::new()),
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// Executes `sql` on this thread's connection to `db`.
    ///
    /// A database that another process changes during the run fails every later execution:
    /// results read before and after the change would be compared as if from one state.
    pub fn execute(&self, db: &Path, sql: &str) -> Execution {
        if let Backend::Postgres(server) = &self.backend {
            return server.execute(&db.to_string_lossy(), sql, &self.limits);
        }
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
        if Stamp::of(db) != first {
            execution.result = Err(changed(db));
        }
        execution
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_needs_a_url_exactly_for_postgres() {
        assert_eq!(
            Backend::new(EngineKind::Sqlite, None, None),
            Ok(Backend::Sqlite)
        );
        let url = "postgres://reader@127.0.0.1:5432/{db}";
        let postgres = Backend::new(EngineKind::Postgres, Some(url), Some("PW")).unwrap();
        assert!(postgres.on_server());
        let Backend::Postgres(server) = postgres else {
            unreachable!()
        };
        assert_eq!(server.url("atis"), "postgres://reader@127.0.0.1:5432/atis");
        let error = |kind, dsn, env| Backend::new(kind, dsn, env).unwrap_err();
        assert!(error(EngineKind::Sqlite, Some(url), None).contains("need engine `postgres`"));
        assert!(error(EngineKind::Sqlite, None, Some("PW")).contains("need engine `postgres`"));
        assert!(error(EngineKind::Postgres, None, None).contains("needs a connection URL"));
        let no_db = error(EngineKind::Postgres, Some("postgres://r@h/x"), None);
        assert!(no_db.contains("lacks `{db}`"), "{no_db}");
        let secret = error(
            EngineKind::Postgres,
            Some("postgres://r:secret@h/{db}"),
            None,
        );
        assert!(
            secret.contains("holds a password") && !secret.contains("secret@"),
            "{secret}"
        );
        let garbage = error(
            EngineKind::Postgres,
            Some("postgres://r@h:notaport/{db}"),
            None,
        );
        assert!(garbage.contains("does not parse"), "{garbage}");
    }

    #[test]
    fn a_missing_password_variable_fails_the_query_saying_so() {
        let server = Server::new(
            "postgres://reader@127.0.0.1:1/{db}",
            Some("SQLGATE_TEST_UNSET_PASSWORD_VARIABLE"),
        )
        .unwrap();
        let engine = Engine::with_backend(Limits::default(), Backend::Postgres(server));
        let error = engine
            .execute(Path::new("atis"), "SELECT 1")
            .result
            .unwrap_err();
        assert_eq!(error.kind, ExecErrorKind::Runtime);
        assert!(
            error
                .message
                .contains("SQLGATE_TEST_UNSET_PASSWORD_VARIABLE"),
            "{}",
            error.message
        );
    }
}
