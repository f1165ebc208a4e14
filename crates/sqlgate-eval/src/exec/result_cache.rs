//! Query results kept on disk across runs: a BIRD-size gold query takes seconds, and the same
//! gold runs on the same database run after run (a prediction too, when shards share a cache
//! or two systems write the same SQL).
//!
//! The key is everything an execution depends on: the database file's content (a changed
//! database is a new key), the SQL, the limits and the sqlgate version (part of every
//! [`Store`] key). The value is the decoded result or the error. An outcome of the moment (a
//! timeout, out of memory, a database changing or unreadable) is not kept: it says how the run
//! went, not what the query returns.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::limits::Limits;
use super::{ExecError, ExecErrorKind, Execution, ResultSet, Value};
use crate::files::Stamp;
use crate::store::Store;

/// The entry kind (subfolder) of query results.
const KIND: &str = "results";

/// Query results in a [`Store`].
pub struct ResultCache {
    store: Arc<Store>,
}

impl ResultCache {
    /// Results kept in `store`, under their own entry kind.
    pub fn new(store: Arc<Store>) -> ResultCache {
        ResultCache { store }
    }

    /// The stored execution of `sql` on `db` under `limits`.
    pub fn get(&self, db: &Path, sql: &str, limits: &Limits) -> Option<Cached> {
        let key = self.key(db, sql, limits)?;
        let body = self.store.get(KIND, &key)?;
        let stored: Stored = serde_json::from_slice(&body).ok()?;
        Some(Cached {
            execution: stored.into_execution(),
            this_run: self.store.written_by_this_run(KIND, &key),
        })
    }

    /// The database's stamp when the cache hashed its content: a result read at another
    /// stamp is not a result of the content the key names.
    pub fn stamp(&self, db: &Path) -> Option<Stamp> {
        self.store.file_stamp(db)
    }

    /// Keeps an execution whose outcome is a function of the key alone (not a timeout, an
    /// out-of-memory error or another of [`ExecErrorKind::depends_on_run`]). The caller
    /// checks that the database had the hashed stamp throughout.
    pub fn put(&self, db: &Path, sql: &str, limits: &Limits, execution: &Execution) {
        if !execution.is_lasting() {
            return;
        }
        let Some(key) = self.key(db, sql, limits) else {
            return;
        };
        if let Ok(body) = serde_json::to_vec(&Stored::of(execution)) {
            self.store.put(KIND, &key, &body);
        }
    }

    /// `None` when the database cannot be read (the execution then reports why).
    fn key(&self, db: &Path, sql: &str, limits: &Limits) -> Option<String> {
        let content = self.store.file_hash(db)?;
        let mut hasher = self.store.hasher(KIND);
        hasher.field(content).field(sql).field(format!(
            "{:?}/{}/{}",
            limits.timeout, limits.max_rows, limits.max_bytes
        ));
        Some(hasher.hex())
    }
}

/// A result found in the cache.
pub struct Cached {
    /// The execution as stored.
    pub execution: Execution,
    /// Whether this run stored it (another suite of the run needed it first).
    pub this_run: bool,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    result: Result<StoredRows, StoredError>,
    /// The original execution's time, which BIRD's pair budget reads.
    elapsed_secs: f64,
}

#[derive(Serialize, Deserialize)]
struct StoredRows {
    columns: Vec<String>,
    rows: Vec<Vec<Cell>>,
    lossy_text: bool,
}

#[derive(Serialize, Deserialize)]
struct StoredError {
    kind: ExecErrorKind,
    message: String,
}

/// A value as stored: a real keeps its exact bits (JSON has no infinities).
#[derive(Serialize, Deserialize)]
enum Cell {
    N,
    I(i64),
    R(u64),
    T(String),
    B(Vec<u8>),
}

impl Stored {
    fn of(execution: &Execution) -> Stored {
        let result = match &execution.result {
            Ok(rows) => Ok(StoredRows {
                columns: rows.columns.clone(),
                rows: rows
                    .rows
                    .iter()
                    .map(|row| row.iter().map(Cell::of).collect())
                    .collect(),
                lossy_text: rows.lossy_text,
            }),
            Err(error) => Err(StoredError {
                kind: error.kind,
                message: error.message.clone(),
            }),
        };
        Stored {
            result,
            elapsed_secs: execution.elapsed.as_secs_f64(),
        }
    }

    fn into_execution(self) -> Execution {
        let result = match self.result {
            Ok(rows) => Ok(Arc::new(ResultSet {
                columns: rows.columns,
                rows: rows
                    .rows
                    .into_iter()
                    .map(|row| row.into_iter().map(Cell::into_value).collect())
                    .collect(),
                lossy_text: rows.lossy_text,
            })),
            Err(error) => Err(ExecError {
                kind: error.kind,
                message: error.message,
            }),
        };
        Execution {
            result,
            elapsed: Duration::try_from_secs_f64(self.elapsed_secs).unwrap_or_default(),
        }
    }
}

impl Cell {
    fn of(value: &Value) -> Cell {
        match value {
            Value::Null => Cell::N,
            Value::Int(i) => Cell::I(*i),
            Value::Real(f) => Cell::R(f.to_bits()),
            Value::Text(s) => Cell::T(s.clone()),
            Value::Blob(b) => Cell::B(b.clone()),
        }
    }

    fn into_value(self) -> Value {
        match self {
            Cell::N => Value::Null,
            Cell::I(i) => Value::Int(i),
            Cell::R(bits) => Value::Real(f64::from_bits(bits)),
            Cell::T(s) => Value::Text(s),
            Cell::B(b) => Value::Blob(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::ResultCache;
    use crate::exec::{Engine, Limits, QueryRunner, Value};
    use crate::store::Store;

    fn engine(dir: &Path, version: &str) -> Engine {
        let store = Arc::new(Store::open(&dir.join("cache"), 1 << 30, version));
        Engine::new(Limits::default(), sqlgate_engine_sqlite::files())
            .with_cache(Some(ResultCache::new(store)))
    }

    fn count(engine: &Engine, db: &Path) -> Value {
        let execution = engine.gold(db, "SELECT count(*), sum(x) / 3.0 FROM t");
        execution.result.unwrap().rows[0][0].clone()
    }

    #[test]
    fn a_gold_result_is_kept_until_its_database_or_the_version_changes() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db.sqlite");
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1), (2);")
            .unwrap();
        drop(conn);

        let first = engine(dir.path(), "1.0");
        assert_eq!(count(&first, &db), Value::Int(2));
        assert_eq!(first.stats().executed, 1);

        let second = engine(dir.path(), "1.0");
        assert_eq!(count(&second, &db), Value::Int(2));
        let stats = second.stats();
        assert_eq!((stats.executed, stats.from_disk), (0, 1));

        // Another version ignores the entry.
        let other_version = engine(dir.path(), "2.0");
        assert_eq!(count(&other_version, &db), Value::Int(2));
        assert_eq!(other_version.stats().executed, 1);

        // A changed database is a new key: executed again, with the new answer.
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("INSERT INTO t VALUES (3);").unwrap();
        drop(conn);
        let after_change = engine(dir.path(), "1.0");
        assert_eq!(count(&after_change, &db), Value::Int(3));
        assert_eq!(after_change.stats().executed, 1);
    }

    #[test]
    fn stored_results_round_trip_every_value_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db.sqlite");
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch("CREATE TABLE t(x);")
            .unwrap();
        let sql = "SELECT NULL, 7, 1e999, -0.0, 0.1, 'é', x'00ff'";
        let fresh = engine(dir.path(), "1").gold(&db, sql);
        let cached = engine(dir.path(), "1");
        let stored = cached.gold(&db, sql);
        assert_eq!(cached.stats().from_disk, 1);
        let (fresh, stored) = (fresh.result.unwrap(), stored.result.unwrap());
        assert_eq!(fresh.columns, stored.columns);
        for (a, b) in fresh.rows[0].iter().zip(&stored.rows[0]) {
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
        }
        let bad = "SELECT no_such_column FROM t";
        let error = engine(dir.path(), "1").gold(&db, bad).result.unwrap_err();
        let again = engine(dir.path(), "1");
        assert_eq!(again.gold(&db, bad).result.unwrap_err(), error);
        assert_eq!(again.stats().from_disk, 1);
    }

    #[test]
    fn a_prediction_equal_to_a_gold_executes_once() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db.sqlite");
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
            .unwrap();
        let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
        engine.gold(&db, "SELECT x FROM t");
        engine.pred(&db, "SELECT x FROM t");
        engine.pred(&db, "SELECT x FROM t");
        engine.pred(&db, "SELECT x + 1 FROM t");
        let stats = engine.stats();
        assert_eq!((stats.distinct, stats.executed), (2, 2));
    }
}
