//! New DuckDB files: distill's scratch databases, `sqlgate copy`, the tests' fixtures.
//!
//! Foreign keys are recorded, not enforced: DuckDB checks a foreign key on every insert and
//! cannot add one to a filled table, and a copy fills its tables in the source's order,
//! children before parents as often as not, from data that need not satisfy its keys (SQLite
//! enforces none by default). Each key is a row of [`FOREIGN_KEYS_TABLE`], outside the `main`
//! schema, which the catalog reads beside the keys DuckDB declares.

use std::path::{Path, PathBuf};

use duckdb::types::Value as Duck;
use sqlgate_engine::catalog::{quoted, ForeignKey, Table};
use sqlgate_engine::{ExecError, ExecErrorKind, Value, Writer};

/// The schema and table where a created database records its foreign keys.
pub(crate) const FOREIGN_KEYS_AT: (&str, &str) = ("sqlgate", "foreign_keys");

/// The table, qualified, where a database created by sqlgate records its foreign keys
/// (`from_table, from_column, to_table, to_column`).
pub const FOREIGN_KEYS_TABLE: &str = "sqlgate.foreign_keys";

/// A DuckDB file being built; removed if this writer created it and is dropped before
/// [`Writer::finish`].
pub(crate) struct DuckDbWriter {
    conn: Option<duckdb::Connection>,
    path: PathBuf,
    created: bool,
}

impl DuckDbWriter {
    /// Creates `path`, which must not exist (nor its `.wal`).
    pub(crate) fn create(path: &Path) -> Result<DuckDbWriter, ExecError> {
        let wal = wal_of(path);
        if path.exists() || wal.exists() {
            return Err(ExecError {
                kind: ExecErrorKind::Denied,
                message: format!(
                    "cannot create database {}: {} exists, and sqlgate creates new databases only",
                    path.display(),
                    if path.exists() { path } else { wal.as_path() }.display()
                ),
            });
        }
        let conn = duckdb::Connection::open(path).map_err(|e| ExecError {
            kind: ExecErrorKind::Unavailable,
            message: format!("cannot create database {}: {e}", path.display()),
        })?;
        Ok(DuckDbWriter {
            conn: Some(conn),
            path: path.to_path_buf(),
            created: true,
        })
    }

    /// Opens for writing `path`, a DuckDB file the caller made (a staging copy).
    pub(crate) fn reopen(path: &Path) -> Result<DuckDbWriter, ExecError> {
        if !path.is_file() {
            return Err(ExecError {
                kind: ExecErrorKind::Unavailable,
                message: format!("cannot open database {}: no such file", path.display()),
            });
        }
        let conn = duckdb::Connection::open(path).map_err(|e| ExecError {
            kind: ExecErrorKind::Unavailable,
            message: format!("cannot open database {}: {e}", path.display()),
        })?;
        Ok(DuckDbWriter {
            conn: Some(conn),
            path: path.to_path_buf(),
            created: false,
        })
    }

    fn conn(&self) -> &duckdb::Connection {
        self.conn.as_ref().expect("open until finished")
    }

    fn fail(&self, what: &str, error: duckdb::Error) -> ExecError {
        ExecError {
            kind: ExecErrorKind::Runtime,
            message: format!("{what} in {}: {error}", self.path.display()),
        }
    }
}

impl Writer for DuckDbWriter {
    fn execute_batch(&mut self, sql: &str) -> Result<(), ExecError> {
        self.conn()
            .execute_batch(sql)
            .map_err(|e| self.fail("cannot run the statements", e))
    }

    fn create_table(
        &mut self,
        table: &Table,
        foreign_keys: &[ForeignKey],
    ) -> Result<(), ExecError> {
        let lines = table.definition_lines(quoted, |c| duckdb_type(&c.decl_type).to_string());
        let mut sql = format!(
            "CREATE TABLE {} ({});",
            quoted(&table.name),
            lines.join(", ")
        );
        if !foreign_keys.is_empty() {
            let (schema, name) = FOREIGN_KEYS_AT;
            sql.push_str(&format!(
                "CREATE SCHEMA IF NOT EXISTS {schema}; CREATE TABLE IF NOT EXISTS {schema}.{name} \
                 (from_table VARCHAR, from_column VARCHAR, to_table VARCHAR, to_column VARCHAR);"
            ));
            for key in foreign_keys {
                let row = [
                    &key.from.table,
                    &key.from.column,
                    &key.to.table,
                    &key.to.column,
                ]
                .map(|text| format!("'{}'", text.replace('\'', "''")));
                sql.push_str(&format!(
                    "INSERT INTO {FOREIGN_KEYS_TABLE} VALUES ({});",
                    row.join(", ")
                ));
            }
        }
        self.conn()
            .execute_batch(&sql)
            .map_err(|e| self.fail(&format!("cannot create table `{}`", table.name), e))
    }

    /// One transaction per call: a refused row (a key, NOT NULL, a value its column cannot
    /// hold) leaves none of `rows` in, as [`Writer::insert`] promises.
    fn insert(
        &mut self,
        table: &str,
        columns: &[String],
        rows: &[Vec<Value>],
    ) -> Result<(), ExecError> {
        if rows.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = columns.iter().map(String::as_str).collect();
        let conn = self.conn();
        let appended = conn.execute_batch("BEGIN TRANSACTION").and_then(|()| {
            let mut appender = conn.appender_with_columns(table, &names)?;
            for row in rows {
                appender.append_row(duckdb::appender_params_from_iter(row.iter().map(duck)))?;
            }
            appender.flush()
        });
        let done = appended.and_then(|()| conn.execute_batch("COMMIT"));
        done.map_err(|error| {
            // Best effort: the transaction may already be over.
            let _ = conn.execute_batch("ROLLBACK");
            let mut failed = self.fail(&format!("cannot insert into `{table}`"), error);
            if !refused_row(&failed.message) {
                failed.kind = ExecErrorKind::Unavailable;
            }
            failed
        })
    }

    fn finish(mut self: Box<Self>) -> Result<(), ExecError> {
        self.conn()
            .execute_batch("CHECKPOINT")
            .map_err(|e| self.fail("cannot write the database", e))?;
        let conn = self.conn.take().expect("open until finished");
        conn.close()
            .map_err(|(_, e)| self.fail("cannot close the database", e))
    }
}

impl Drop for DuckDbWriter {
    /// A database this writer created and left unfinished is removed, so that no later run
    /// takes half a copy for a whole one (a reopened file is the caller's to remove).
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            drop(conn);
            if !self.created {
                return;
            }
            let _ = std::fs::remove_file(&self.path);
            let _ = std::fs::remove_file(wal_of(&self.path));
        }
    }
}

/// Whether DuckDB's message is about the row (a constraint, a value its column cannot hold:
/// DuckDB words these many ways, "violates primary key constraint", "invalid date field
/// format", "can't be cast") rather than the database (a missing table, I/O, memory).
fn refused_row(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    ![
        "catalog error",
        "could not be found",
        "io error",
        "out of memory",
        "fatal",
        "internal error",
        "interrupt",
    ]
    .iter()
    .any(|kind| lower.contains(kind))
}

pub(crate) fn wal_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".wal");
    PathBuf::from(name)
}

fn duck(value: &Value) -> Duck {
    match value {
        Value::Null => Duck::Null,
        Value::Int(i) => Duck::BigInt(*i),
        Value::Real(f) => Duck::Double(*f),
        Value::Text(text) => Duck::Text(text.clone()),
        Value::Blob(bytes) => Duck::Blob(bytes.clone()),
    }
}

/// The DuckDB type for a column declared `declared`, by SQLite's affinity rules (the first of
/// INT, CHAR/CLOB/TEXT, BLOB, REAL/FLOA/DOUB that the name contains), so that the values SQLite
/// holds read back alike. Of SQLite's NUMERIC affinity, booleans, dates, times and timestamps
/// become DuckDB's types of that name (SQLite holds them as 0/1 and ISO text, which they read
/// back as), any other (`NUMERIC`, `DECIMAL(10,2)`) `DOUBLE`. A column without a type, which
/// takes any value in SQLite, is `VARCHAR`: numbers in it become their text.
pub(crate) fn duckdb_type(declared: &str) -> &'static str {
    let upper = declared.to_ascii_uppercase();
    let has = |part: &str| upper.contains(part);
    if has("INT") {
        "BIGINT"
    } else if has("CHAR") || has("CLOB") || has("TEXT") || upper.trim().is_empty() {
        "VARCHAR"
    } else if has("BLOB") {
        "BLOB"
    } else if has("REAL") || has("FLOA") || has("DOUB") {
        "DOUBLE"
    } else if has("BOOL") {
        "BOOLEAN"
    } else if has("TIMESTAMP") || has("DATETIME") {
        "TIMESTAMP"
    } else if has("DATE") {
        "DATE"
    } else if has("TIME") {
        "TIME"
    } else {
        "DOUBLE"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_types_map_by_sqlite_affinity() {
        for (declared, expected) in [
            ("INTEGER", "BIGINT"),
            ("unsigned big int", "BIGINT"),
            ("varchar(20)", "VARCHAR"),
            ("CLOB", "VARCHAR"),
            ("", "VARCHAR"),
            ("BLOB", "BLOB"),
            ("REAL", "DOUBLE"),
            ("double precision", "DOUBLE"),
            ("FLOAT", "DOUBLE"),
            ("NUMERIC", "DOUBLE"),
            ("DECIMAL(10,2)", "DOUBLE"),
            ("BOOLEAN", "BOOLEAN"),
            ("DATE", "DATE"),
            ("DATETIME", "TIMESTAMP"),
            ("TIME", "TIME"),
            // SQLite's rules read "INT" first: a point is an integer.
            ("POINT", "BIGINT"),
        ] {
            assert_eq!(duckdb_type(declared), expected, "{declared}");
        }
    }
}
