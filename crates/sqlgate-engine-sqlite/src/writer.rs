//! A SQLite file being built: a new one, or a private staging copy changed by a script. Each
//! statement of a script commits on its own (a script may hold its own transactions); each
//! batch of inserted rows is one transaction, rolled back whole when a row is refused. The
//! same statements write the same bytes (distill's seeds rely on it).

use std::path::Path;

use rusqlite::fallible_iterator::FallibleIterator;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use sqlgate_engine::catalog::{quoted, ForeignKey, Table};
use sqlgate_engine::{ExecError, ExecErrorKind, ScriptError, Value, Writer};

pub(crate) struct SqliteWriter {
    conn: Connection,
}

fn failed(error: impl std::fmt::Display) -> ExecError {
    ExecError {
        kind: ExecErrorKind::Runtime,
        message: error.to_string(),
    }
}

/// An insert's failure: `Runtime` when SQLite refused the row (a constraint, a value an
/// `INTEGER PRIMARY KEY` cannot hold, a value past its size bound), `Unavailable` otherwise
/// (the database cannot be written: I/O, a full disk, a missing table).
fn refused_or_broken(error: rusqlite::Error) -> ExecError {
    let refused = matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::ConstraintViolation | ErrorCode::TypeMismatch | ErrorCode::TooBig)
    );
    ExecError {
        kind: if refused {
            ExecErrorKind::Runtime
        } else {
            ExecErrorKind::Unavailable
        },
        message: error.to_string(),
    }
}

impl SqliteWriter {
    /// Opens `db`, a private staging file of the caller's, for writing.
    pub(crate) fn reopen(db: &Path) -> Result<SqliteWriter, ExecError> {
        if !db.is_file() {
            return Err(ExecError {
                kind: ExecErrorKind::Unavailable,
                message: format!("cannot open database {}: no such file", db.display()),
            });
        }
        SqliteWriter::open(db)
    }

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
        SqliteWriter::open(db)
    }

    fn open(db: &Path) -> Result<SqliteWriter, ExecError> {
        let conn = Connection::open_with_flags(
            db,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(failed)?;
        // The copy holds the data as the original does: SQLite enforces no foreign key unless
        // asked, and a benchmark's data may have dangling ones. The file is private until its
        // writer's caller moves it into place, so durability meanwhile buys nothing; the
        // journal stays, in memory, because a refused row's batch is rolled back (without a
        // journal a rollback leaves the file undefined).
        conn.execute_batch(
            "PRAGMA foreign_keys = OFF; PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF",
        )
        .map_err(failed)?;
        Ok(SqliteWriter { conn })
    }
}

impl Writer for SqliteWriter {
    fn execute_batch(&mut self, sql: &str) -> Result<(), ExecError> {
        self.conn.execute_batch(sql).map_err(failed)
    }

    fn execute_script(&mut self, script: &str) -> Result<(), ScriptError> {
        run_script(&self.conn, script).map_err(|(line, message)| ScriptError { line, message })
    }

    /// SQLite keeps declared types as written: the copy declares what the original declared.
    fn create_table(
        &mut self,
        table: &Table,
        foreign_keys: &[ForeignKey],
    ) -> Result<(), ExecError> {
        let mut lines = table.definition_lines(quoted, |c| c.decl_type.clone());
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
        let transaction = self
            .conn
            .unchecked_transaction()
            .map_err(refused_or_broken)?;
        let mut statement = transaction
            .prepare_cached(&format!(
                "INSERT INTO {} ({}) VALUES ({marks})",
                quoted(table),
                names.join(", ")
            ))
            .map_err(refused_or_broken)?;
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
                .map_err(refused_or_broken)?;
        }
        drop(statement);
        transaction.commit().map_err(refused_or_broken)
    }

    fn finish(self: Box<Self>) -> Result<(), ExecError> {
        self.conn.close().map_err(|(_, e)| failed(e))
    }
}

/// Runs a script statement by statement so that a failure names its line.
fn run_script(conn: &rusqlite::Connection, text: &str) -> Result<(), (Option<usize>, String)> {
    let line_at = |offset: usize| {
        let before = &text.as_bytes()[..offset.min(text.len())];
        1 + before.iter().filter(|&&b| b == b'\n').count()
    };
    let mut cursor = 0;
    let mut batch = rusqlite::Batch::new(conn, text);
    loop {
        let mut statement = match batch.next() {
            Ok(Some(statement)) => statement,
            Ok(None) => return Ok(()),
            Err(rusqlite::Error::SqlInputError {
                msg, sql, offset, ..
            }) => {
                let start = text.len().saturating_sub(sql.len());
                let at = start + usize::try_from(offset).unwrap_or(0);
                return Err((Some(line_at(at)), msg));
            }
            Err(e) => {
                let next = cursor + (text[cursor..].len() - text[cursor..].trim_start().len());
                return Err((Some(line_at(next)), e.to_string()));
            }
        };
        // The statement's text runs from the end of the previous one, whitespace included.
        let sql = statement.expanded_sql().unwrap_or_default();
        let found = text[cursor..].find(&sql).map(|at| cursor + at);
        if let Some(found) = found {
            cursor = found + sql.len();
        }
        let start = found.map(|found| found + (sql.len() - sql.trim_start().len()));
        if let Err(e) = run_to_completion(&mut statement) {
            let shown = shorten(&sql);
            return Err((
                start.map(line_at),
                format!("statement `{shown}` failed: {e}"),
            ));
        }
    }
}

/// Steps a statement to its end (scripts may hold queries, whose rows are discarded).
fn run_to_completion(statement: &mut rusqlite::Statement) -> rusqlite::Result<()> {
    let mut rows = statement.raw_query();
    while rows.next()?.is_some() {}
    Ok(())
}

/// The first line of a statement, cut to a readable length.
fn shorten(sql: &str) -> String {
    let first_line = sql.trim().lines().next().unwrap_or_default();
    let mut shown: String = first_line.chars().take(80).collect();
    if shown.len() < sql.trim().len() {
        shown.push_str(" ...");
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_row_is_a_runtime_error_and_leaves_the_batch_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.sqlite");
        let mut writer = SqliteWriter::create(&path).unwrap();
        writer
            .execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
            .unwrap();
        let columns = ["id".to_string(), "name".to_string()];
        let row = |id: i64, name: &str| vec![Value::Int(id), Value::Text(name.into())];
        writer.insert("t", &columns, &[row(1, "a")]).unwrap();
        // The second row breaks UNIQUE: the whole batch is left out.
        let refused = writer
            .insert("t", &columns, &[row(2, "b"), row(3, "a")])
            .unwrap_err();
        assert_eq!(refused.kind, ExecErrorKind::Runtime, "{}", refused.message);
        let null = vec![Value::Int(4), Value::Null];
        let refused = writer.insert("t", &columns, &[null]).unwrap_err();
        assert_eq!(refused.kind, ExecErrorKind::Runtime, "{}", refused.message);
        writer.insert("t", &columns, &[row(2, "b")]).unwrap();
        // A table that is not there is no refused row.
        let broken = writer.insert("nope", &columns, &[row(5, "c")]).unwrap_err();
        assert_eq!(
            broken.kind,
            ExecErrorKind::Unavailable,
            "{}",
            broken.message
        );
        Box::new(writer).finish().unwrap();
        let conn = Connection::open(&path).unwrap();
        let names: Vec<String> = conn
            .prepare("SELECT name FROM t ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(names, ["a", "b"]);
    }
}
