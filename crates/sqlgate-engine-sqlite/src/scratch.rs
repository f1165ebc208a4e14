//! SQLite's scratch copies: the database copied page by page (SQLite's online backup, read
//! through a read-only connection, so the original is never opened writable) into a file of a
//! private temporary folder, removed from the folder as soon as it is open (the connection
//! keeps it, its rollback journal in memory); then every case's statements run inside one
//! transaction that [`Scratch::reset`] rolls back: one copy per database and worker, not one
//! per case.

use std::collections::BTreeSet;
use std::path::Path;

use rusqlite::MAIN_DB;

use sqlgate_engine::{ExecError, ExecErrorKind, Execution, Limits, Scratch, Source};

use crate::sandbox::Sandbox;

/// A scratch copy of one database; its folder, should removing it at once have failed, is
/// removed when dropped.
pub struct SqliteScratch {
    sandbox: Sandbox,
    /// Held for its removal when the copy is dropped.
    _folder: tempfile::TempDir,
}

impl SqliteScratch {
    /// Copies `db` into a new temporary folder and opens the copy.
    pub fn open(db: &Path) -> Result<SqliteScratch, ExecError> {
        let original = Sandbox::open(db, Source::Gold)?;
        let unavailable = |message: String| ExecError {
            kind: ExecErrorKind::Unavailable,
            message,
        };
        let folder = tempfile::Builder::new()
            .prefix("sqlgate-scratch-")
            .tempdir()
            .map_err(|e| unavailable(format!("cannot make a folder for a scratch copy: {e}")))?;
        let copy = folder.path().join("scratch.sqlite");
        original
            .conn
            .backup(MAIN_DB, &copy, None::<fn(rusqlite::backup::Progress)>)
            .map_err(|e| unavailable(format!("cannot copy {}: {e}", db.display())))?;
        drop(original);
        let sandbox = Sandbox::open_scratch(&copy)?;
        // The open connection keeps the copy (its journal is in memory): without a name, a
        // process killed now leaves no copy of the database behind.
        let _ = std::fs::remove_dir_all(folder.path());
        Ok(SqliteScratch {
            sandbox,
            _folder: folder,
        })
    }
}

impl Scratch for SqliteScratch {
    fn apply(&mut self, sql: &str, limits: &Limits) -> Result<u64, ExecError> {
        // `changes()` keeps the last INSERT, UPDATE or DELETE's count through DDL; the
        // difference of the totals is this statement's.
        let before = self.sandbox.conn.total_changes();
        self.sandbox.execute(sql, limits).result?;
        if !self.sandbox.in_transaction() {
            // The authorizer denies transaction statements; should one get through, the copy
            // holds changes a rollback cannot undo.
            return Err(ExecError {
                kind: ExecErrorKind::Denied,
                message: "the statement ended the scratch copy's transaction".into(),
            });
        }
        Ok(self.sandbox.conn.total_changes().saturating_sub(before))
    }

    fn query(&mut self, sql: &str, limits: &Limits) -> Execution {
        self.sandbox.execute(sql, limits)
    }

    fn take_touched(&mut self) -> Result<BTreeSet<String>, ExecError> {
        Ok(std::mem::take(
            &mut self
                .sandbox
                .touched
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        ))
    }

    fn reset(&mut self) -> Result<(), ExecError> {
        if !self.sandbox.in_transaction() {
            return Err(ExecError {
                kind: ExecErrorKind::Unavailable,
                message: "the scratch copy's transaction ended: the copy is dropped".into(),
            });
        }
        self.sandbox.reset_scratch()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlgate_engine::Value;

    /// `<dir>/t.sqlite` with table `t(x)` holding 1, 2, 3.
    fn database(dir: &Path) -> std::path::PathBuf {
        let db = dir.join("t.sqlite");
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1), (2), (3);")
            .unwrap();
        db
    }

    fn count(scratch: &mut SqliteScratch, sql: &str) -> Value {
        let rows = scratch.query(sql, &Limits::default()).result.unwrap();
        rows.rows[0][0].clone()
    }

    #[test]
    fn changes_stay_on_the_copy_and_a_reset_undoes_them() {
        let dir = tempfile::tempdir().unwrap();
        let db = database(dir.path());
        let before = std::fs::read(&db).unwrap();
        let mut scratch = SqliteScratch::open(&db).unwrap();
        let limits = Limits::default();
        assert_eq!(
            scratch.apply("UPDATE t SET x = x + 10 WHERE x > 1", &limits),
            Ok(2)
        );
        assert_eq!(scratch.apply("CREATE INDEX t_x ON t(x)", &limits), Ok(0));
        assert_eq!(
            scratch.apply("CREATE VIEW v AS SELECT x FROM t", &limits),
            Ok(0)
        );
        assert_eq!(count(&mut scratch, "SELECT sum(x) FROM t"), Value::Int(26));
        let touched: Vec<String> = scratch.take_touched().unwrap().into_iter().collect();
        assert_eq!(touched, ["t", "v"]);
        assert!(scratch.take_touched().unwrap().is_empty());
        scratch.apply("DELETE FROM t WHERE x = 1", &limits).unwrap();
        scratch.reset().unwrap();
        assert!(scratch.take_touched().unwrap().is_empty());
        assert_eq!(count(&mut scratch, "SELECT sum(x) FROM t"), Value::Int(6));
        assert_eq!(
            count(&mut scratch, "SELECT count(*) FROM sqlite_schema"),
            Value::Int(1)
        );
        // Reused after a reset, and the original never changed.
        assert_eq!(scratch.apply("DELETE FROM t", &limits), Ok(3));
        // The copy has no name while it is open: a killed process leaves nothing behind.
        let folder = scratch._folder.path().to_path_buf();
        assert!(!folder.exists());
        drop(scratch);
        assert_eq!(std::fs::read(&db).unwrap(), before);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn the_sandbox_guards_stay_on_a_scratch_copy() {
        let dir = tempfile::tempdir().unwrap();
        let db = database(dir.path());
        let mut scratch = SqliteScratch::open(&db).unwrap();
        let outside = dir.path().join("outside.sqlite");
        let limits = Limits::default();
        for sql in [
            format!("ATTACH DATABASE '{}' AS other", outside.display()),
            "COMMIT".to_string(),
            "BEGIN".to_string(),
            "SAVEPOINT s".to_string(),
            "ROLLBACK".to_string(),
            "PRAGMA writable_schema = ON".to_string(),
            "PRAGMA journal_mode = DELETE".to_string(),
            "CREATE TEMP TABLE tt(x)".to_string(),
            "SELECT load_extension('x')".to_string(),
        ] {
            let error = scratch.apply(&sql, &limits).unwrap_err();
            assert!(
                matches!(error.kind, ExecErrorKind::Denied | ExecErrorKind::Prepare),
                "{sql}: {error:?}"
            );
        }
        // No action of the authorizer's is VACUUM: inside the copy's transaction, it cannot run.
        let vacuum = format!("VACUUM INTO '{}'", outside.display());
        assert!(scratch.apply(&vacuum, &limits).is_err());
        assert!(!outside.exists());
        // The transaction is still the one a reset rolls back.
        scratch.apply("DELETE FROM t", &limits).unwrap();
        scratch.reset().unwrap();
        assert_eq!(count(&mut scratch, "SELECT count(*) FROM t"), Value::Int(3));
    }
}
