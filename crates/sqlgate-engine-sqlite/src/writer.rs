//! A new SQLite file being built, in one transaction committed by `finish`.

use std::path::Path;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, OpenFlags};
use sqlgate_engine::catalog::{quoted, ForeignKey, Table};
use sqlgate_engine::{ExecError, ExecErrorKind, Value, Writer};

pub(crate) struct SqliteWriter {
    conn: Connection,
}

fn failed(error: impl std::fmt::Display) -> ExecError {
    ExecError {
        kind: ExecErrorKind::Runtime,
        message: error.to_string(),
    }
}

impl SqliteWriter {
    /// Creates `db`, which must not exist (an existing file is never written over).
    pub(crate) fn create(db: &Path) -> Result<SqliteWriter, ExecError> {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(db)
            .map_err(|e| ExecError {
                kind: ExecErrorKind::Unavailable,
                message: format!("cannot create database {}: {e}", db.display()),
            })?;
        let conn = Connection::open_with_flags(
            db,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(failed)?;
        // The copy holds the data as the original does: SQLite enforces no foreign key unless
        // asked, and a benchmark's data may have dangling ones.
        conn.execute_batch("PRAGMA foreign_keys = OFF; BEGIN")
            .map_err(failed)?;
        Ok(SqliteWriter { conn })
    }
}

impl Writer for SqliteWriter {
    fn execute_batch(&mut self, sql: &str) -> Result<(), ExecError> {
        self.conn.execute_batch(sql).map_err(failed)
    }

    /// SQLite keeps declared types as written: the copy declares what the original declared.
    fn create_table(
        &mut self,
        table: &Table,
        foreign_keys: &[ForeignKey],
    ) -> Result<(), ExecError> {
        let mut lines: Vec<String> = table
            .columns
            .iter()
            .map(|c| {
                let not_null = if c.not_null { " NOT NULL" } else { "" };
                format!("{} {}{not_null}", quoted(&c.name), c.decl_type)
            })
            .collect();
        let keys: Vec<String> = table
            .columns
            .iter()
            .filter(|c| c.primary_key)
            .map(|c| quoted(&c.name))
            .collect();
        if !keys.is_empty() {
            lines.push(format!("PRIMARY KEY ({})", keys.join(", ")));
        }
        for key in foreign_keys {
            lines.push(format!(
                "FOREIGN KEY ({}) REFERENCES {} ({})",
                quoted(&key.from.column),
                quoted(&key.to.table),
                quoted(&key.to.column)
            ));
        }
        self.conn
            .execute_batch(&format!(
                "CREATE TABLE {} ({})",
                quoted(&table.name),
                lines.join(", ")
            ))
            .map_err(failed)
    }

    fn insert(
        &mut self,
        table: &str,
        columns: &[String],
        rows: &[Vec<Value>],
    ) -> Result<(), ExecError> {
        let names: Vec<String> = columns.iter().map(|c| quoted(c)).collect();
        let marks = vec!["?"; columns.len()].join(", ");
        let mut statement = self
            .conn
            .prepare_cached(&format!(
                "INSERT INTO {} ({}) VALUES ({marks})",
                quoted(table),
                names.join(", ")
            ))
            .map_err(failed)?;
        for row in rows {
            let values = row.iter().map(|value| match value {
                Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
                Value::Int(n) => ToSqlOutput::Borrowed(ValueRef::Integer(*n)),
                Value::Real(x) => ToSqlOutput::Borrowed(ValueRef::Real(*x)),
                Value::Text(text) => ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())),
                Value::Blob(bytes) => ToSqlOutput::Borrowed(ValueRef::Blob(bytes)),
            });
            statement
                .execute(rusqlite::params_from_iter(values))
                .map_err(failed)?;
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<(), ExecError> {
        self.conn.execute_batch("COMMIT").map_err(failed)?;
        self.conn.close().map_err(|(_, e)| failed(e))
    }
}
