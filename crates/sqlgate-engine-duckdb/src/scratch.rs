//! DuckDB's scratch copies: the database file (and its `.wal`) copied, by reading, into a
//! private temporary folder, opened writable under the prediction sandbox's settings (no
//! external access, no extensions, the configuration locked); every case's statements run in
//! one transaction that [`Scratch::reset`] rolls back (DuckDB's DDL is transactional), so a run
//! copies a database once per worker, not once per case.
//!
//! DuckDB reports no rows changed per table: the tables a case touched are those its
//! `INSERT`, `UPDATE` and `DELETE` statements name ([`modified_table`]; DuckDB has no triggers
//! or cascading foreign keys that would change others) and those whose catalog entry changed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use sqlgate_engine::scratch::modified_table;
use sqlgate_engine::{Connection, ExecError, ExecErrorKind, Execution, Limits, Scratch};

use crate::sandbox::Sandbox;

/// Each table and view of `main` with what a change of its schema changes.
const CATALOG: &str = "SELECT t.table_name, concat_ws(' | ', 'table', \
     (SELECT string_agg(c.column_name || ' ' || c.data_type \
         || CASE WHEN c.is_nullable THEN '' ELSE ' not null' END \
         || coalesce(' default ' || c.column_default, ''), ', ' ORDER BY c.column_index) \
      FROM duckdb_columns() c WHERE c.table_oid = t.table_oid), \
     (SELECT string_agg(coalesce(i.sql, i.index_name), '; ' ORDER BY i.index_name) \
      FROM duckdb_indexes() i WHERE i.table_oid = t.table_oid), \
     (SELECT string_agg(k.constraint_text, '; ' ORDER BY k.constraint_text) \
      FROM duckdb_constraints() k WHERE k.table_oid = t.table_oid)) \
     FROM duckdb_tables() t \
     WHERE t.database_name = current_database() AND t.schema_name = 'main' AND NOT t.temporary \
     UNION ALL SELECT v.view_name, 'view | ' || v.sql FROM duckdb_views() v \
     WHERE v.database_name = current_database() AND v.schema_name = 'main' \
     AND NOT v.internal AND NOT v.temporary";

/// A scratch copy of one database; its folder is removed when it is dropped.
pub(crate) struct DuckDbScratch {
    sandbox: Sandbox,
    /// The catalog when the last [`Scratch::take_touched`] (or the case) began, once a case
    /// has begun: its transaction is open.
    catalog: Option<BTreeMap<String, String>>,
    /// The tables the statements since the last [`Scratch::take_touched`] named.
    modified: BTreeSet<String>,
    /// A failed statement aborted the case's transaction (DuckDB has no savepoints): until the
    /// reset, every call fails rather than read a state that is not the case's.
    aborted: bool,
    /// Dropped after the connection: DuckDB writes its `.wal` beside the copy.
    _folder: tempfile::TempDir,
}

fn unavailable(message: String) -> ExecError {
    ExecError {
        kind: ExecErrorKind::Unavailable,
        message,
    }
}

impl DuckDbScratch {
    /// Copies `db` (and its `.wal`) into a new temporary folder and opens the copy.
    pub(crate) fn open(db: &Path) -> Result<DuckDbScratch, ExecError> {
        let folder = tempfile::Builder::new()
            .prefix("sqlgate-scratch-")
            .tempdir()
            .map_err(|e| unavailable(format!("cannot make a folder for a scratch copy: {e}")))?;
        let copy = folder.path().join("scratch.duckdb");
        std::fs::copy(db, &copy)
            .map_err(|e| unavailable(format!("cannot copy {}: {e}", db.display())))?;
        let wal = crate::writer::wal_of(db);
        if wal.exists() {
            std::fs::copy(&wal, crate::writer::wal_of(&copy))
                .map_err(|e| unavailable(format!("cannot copy {}: {e}", wal.display())))?;
        }
        Ok(DuckDbScratch {
            sandbox: Sandbox::open_scratch(&copy)?,
            catalog: None,
            modified: BTreeSet::new(),
            aborted: false,
            _folder: folder,
        })
    }

    /// Opens the case's transaction, when none is open.
    fn begin(&mut self) -> Result<(), ExecError> {
        if self.aborted {
            return Err(unavailable(
                "a failed statement aborted the scratch copy's transaction".to_string(),
            ));
        }
        if self.catalog.is_none() {
            self.sandbox.run_batch("BEGIN TRANSACTION")?;
            self.catalog = Some(self.read_catalog()?);
        }
        Ok(())
    }

    fn read_catalog(&mut self) -> Result<BTreeMap<String, String>, ExecError> {
        let rows = self.sandbox.execute(CATALOG, &Limits::default()).result?;
        Ok(rows
            .rows
            .iter()
            .map(|row| {
                let text = |i: usize| {
                    row.get(i)
                        .map(sqlgate_engine::catalog::text)
                        .unwrap_or_default()
                };
                (text(0), text(1))
            })
            .collect())
    }
}

impl DuckDbScratch {
    /// After a failed statement: whether DuckDB aborted the transaction (a catalog error does
    /// not; a runtime error does).
    fn note_abort(&mut self) {
        let alive = self.sandbox.execute("SELECT 1", &Limits::default());
        self.aborted = alive.result.is_err();
    }
}

impl Scratch for DuckDbScratch {
    fn apply(&mut self, sql: &str, limits: &Limits) -> Result<u64, ExecError> {
        self.begin()?;
        if let Some(table) = modified_table(sql) {
            self.modified.insert(table);
        }
        let applied = self.sandbox.apply(sql, limits);
        if applied.is_err() {
            self.note_abort();
        }
        applied
    }

    fn query(&mut self, sql: &str, limits: &Limits) -> Execution {
        if let Err(error) = self.begin() {
            return Execution {
                result: Err(error),
                elapsed: std::time::Duration::ZERO,
            };
        }
        let execution = self.sandbox.execute(sql, limits);
        if execution.result.is_err() {
            self.note_abort();
        }
        execution
    }

    fn take_touched(&mut self) -> Result<BTreeSet<String>, ExecError> {
        self.begin()?;
        let now = self.read_catalog()?;
        let then = self.catalog.replace(now.clone()).unwrap_or_default();
        let mut touched = std::mem::take(&mut self.modified);
        touched.extend(
            then.iter()
                .filter(|(name, text)| now.get(*name) != Some(*text))
                .chain(now.iter().filter(|(name, _)| !then.contains_key(*name)))
                .map(|(name, _)| name.clone()),
        );
        Ok(touched)
    }

    fn reset(&mut self) -> Result<(), ExecError> {
        self.modified.clear();
        self.aborted = false;
        if self.catalog.take().is_some() {
            self.sandbox.run_batch("ROLLBACK")?;
        }
        Ok(())
    }
}
