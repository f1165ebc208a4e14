//! A new PostgreSQL database being built (`sqlgate copy`): created by the URL's role, tables
//! of the types nearest to SQLite's declared ones, rows as text cast by the server, foreign
//! keys added last. It is built under a staging name and renamed to its own by `finish`, so a
//! copy killed halfway never leaves a database under the name a later run reads; a writer
//! dropped before `finish` drops its staging database.

use postgres::types::ToSql;
use postgres::Client;
use sqlgate_engine::catalog::{quoted, ForeignKey, Table};
use sqlgate_engine::{ExecError, ExecErrorKind, Value, Writer, STAGING_SUFFIX};

use crate::server::{error_text, Server};

/// The database every server has, where `CREATE DATABASE` and `DROP DATABASE` run.
const MAINTENANCE_DATABASE: &str = "postgres";
/// PostgreSQL's longest identifier, in bytes.
const MAX_NAME_BYTES: usize = 63;

/// Rows per `INSERT` (each row's values are parameters; a statement holds at most 65,535).
const ROWS_PER_INSERT: usize = 500;

pub(crate) struct PgWriter {
    server: Server,
    name: String,
    client: Option<Client>,
    /// Column types by table, as created: inserted values are cast to them.
    types: std::collections::HashMap<String, Vec<&'static str>>,
    /// Foreign keys, added once the rows are in (`NOT VALID`: dangling keys of the source stay
    /// as they were).
    foreign_keys: Vec<(String, ForeignKey)>,
    finished: bool,
}

fn failed(message: impl ToString) -> ExecError {
    ExecError {
        kind: ExecErrorKind::Runtime,
        message: message.to_string(),
    }
}

/// The PostgreSQL type nearest to a declared type, by SQLite's affinity rules, with dates,
/// times and booleans kept as such (SQLite gives them numeric affinity, holding ISO text and
/// 0/1).
fn column_type(declared: &str) -> &'static str {
    let declared = declared.to_ascii_uppercase();
    if declared.contains("TIMESTAMP") || declared.contains("DATETIME") {
        "timestamp"
    } else if declared.contains("DATE") {
        "date"
    } else if declared.contains("TIME") {
        "time"
    } else if declared.contains("BOOL") {
        "boolean"
    } else if declared.contains("INT") {
        "bigint"
    } else if ["CHAR", "CLOB", "TEXT"]
        .iter()
        .any(|t| declared.contains(t))
    {
        "text"
    } else if declared.contains("BLOB") {
        "bytea"
    } else if ["REAL", "FLOA", "DOUB"]
        .iter()
        .any(|t| declared.contains(t))
    {
        "double precision"
    } else if declared.is_empty() {
        "text"
    } else {
        "numeric"
    }
}

/// A value as the text PostgreSQL casts to its column's type.
fn as_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::Int(n) => Some(n.to_string()),
        Value::Real(x) => Some(x.to_string()),
        Value::Text(text) => Some(text.clone()),
        Value::Blob(bytes) => Some(format!(
            "\\x{}",
            bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )),
    }
}

impl PgWriter {
    /// Creates the database `name` (which must not exist) and connects to it.
    pub(crate) fn create(server: &Server, name: &str) -> Result<PgWriter, ExecError> {
        let longest = MAX_NAME_BYTES - STAGING_SUFFIX.len();
        let plain = !name.is_empty()
            && name.len() <= longest
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !plain {
            return Err(failed(format!(
                "cannot create database `{}`: a name of at most {longest} letters, digits, `_` \
                 and `-` is needed (in a connection URL, with room for the staging name)",
                name.escape_debug()
            )));
        }
        let mut admin = server
            .connect_as_given(MAINTENANCE_DATABASE)
            .map_err(failed)?;
        let staging = format!("{name}{STAGING_SUFFIX}");
        for existing in [name, staging.as_str()] {
            let found = admin
                .query("SELECT 1 FROM pg_database WHERE datname = $1", &[&existing])
                .map_err(|e| failed(error_text(&e)))?;
            if !found.is_empty() {
                return Err(ExecError {
                    kind: ExecErrorKind::Denied,
                    message: format!(
                        "cannot create database `{name}`: `{existing}` exists (sqlgate never \
                         replaces a database; drop it first)"
                    ),
                });
            }
        }
        admin
            .batch_execute(&format!("CREATE DATABASE {}", quoted(&staging)))
            .map_err(|e| {
                failed(format!(
                    "cannot create database `{name}`: {}",
                    error_text(&e)
                ))
            })?;
        let mut writer = PgWriter {
            server: server.clone(),
            name: name.to_string(),
            client: None,
            types: Default::default(),
            foreign_keys: Vec::new(),
            finished: false,
        };
        writer.client = Some(server.connect_as_given(&staging).map_err(failed)?);
        Ok(writer)
    }

    /// The name the database is built under.
    fn staging(&self) -> String {
        format!("{}{STAGING_SUFFIX}", self.name)
    }

    fn client(&mut self) -> &mut Client {
        self.client.as_mut().expect("connected until dropped")
    }
}

/// Drops the database `name`, after closing the idle connections the server keeps to it (the
/// server refuses to drop a database with sessions).
pub(crate) fn drop_database(server: &Server, name: &str) -> Result<(), ExecError> {
    server.forget(name);
    let mut admin = server
        .connect_as_given(MAINTENANCE_DATABASE)
        .map_err(failed)?;
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {}", quoted(name)))
        .map_err(|e| failed(format!("cannot drop database `{name}`: {}", error_text(&e))))
}

impl Writer for PgWriter {
    fn execute_batch(&mut self, sql: &str) -> Result<(), ExecError> {
        self.client()
            .batch_execute(sql)
            .map_err(|e| failed(error_text(&e)))
    }

    fn create_table(
        &mut self,
        table: &Table,
        foreign_keys: &[ForeignKey],
    ) -> Result<(), ExecError> {
        let types: Vec<&'static str> = table
            .columns
            .iter()
            .map(|c| column_type(&c.decl_type))
            .collect();
        let lines = table.definition_lines(quoted, |c| column_type(&c.decl_type).to_string());
        let sql = format!(
            "CREATE TABLE {} ({})",
            quoted(&table.name),
            lines.join(", ")
        );
        self.execute_batch(&sql)?;
        self.types.insert(table.name.clone(), types);
        self.foreign_keys.extend(
            foreign_keys
                .iter()
                .map(|key| (table.name.clone(), key.clone())),
        );
        Ok(())
    }

    fn insert(
        &mut self,
        table: &str,
        columns: &[String],
        rows: &[Vec<Value>],
    ) -> Result<(), ExecError> {
        let types = self
            .types
            .get(table)
            .cloned()
            .ok_or_else(|| failed(format!("table `{table}` was not created by this writer")))?;
        let names: Vec<String> = columns.iter().map(|c| quoted(c)).collect();
        let mut transaction = self
            .client()
            .transaction()
            .map_err(|e| failed(error_text(&e)))?;
        for chunk in rows.chunks(ROWS_PER_INSERT) {
            let mut tuples = Vec::with_capacity(chunk.len());
            let mut values: Vec<Option<String>> = Vec::with_capacity(chunk.len() * columns.len());
            for row in chunk {
                let marks: Vec<String> = row
                    .iter()
                    .zip(&types)
                    .map(|(value, ty)| {
                        values.push(as_text(value));
                        format!("${}::text::{ty}", values.len())
                    })
                    .collect();
                tuples.push(format!("({})", marks.join(", ")));
            }
            let sql = format!(
                "INSERT INTO {} ({}) VALUES {}",
                quoted(table),
                names.join(", "),
                tuples.join(", ")
            );
            let params: Vec<&(dyn ToSql + Sync)> =
                values.iter().map(|v| v as &(dyn ToSql + Sync)).collect();
            transaction
                .execute(&sql, &params)
                .map_err(|e| failed(format!("inserting into `{table}`: {}", error_text(&e))))?;
        }
        transaction.commit().map_err(|e| failed(error_text(&e)))
    }

    fn finish(mut self: Box<Self>) -> Result<(), ExecError> {
        let keys = std::mem::take(&mut self.foreign_keys);
        for (index, (table, key)) in keys.iter().enumerate() {
            let sql = format!(
                "ALTER TABLE {} ADD CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {} ({}) NOT VALID",
                quoted(table),
                // Unique whatever the tables' names (PostgreSQL cuts names at 63 bytes).
                quoted(&format!("sqlgate_fk_{index}")),
                quoted(&key.from.column),
                quoted(&key.to.table),
                quoted(&key.to.column)
            );
            self.execute_batch(&sql)?;
        }
        // The planner's statistics of the rows written, now: autovacuum would otherwise
        // compute them at some later moment, and a cost (`steps`) would change mid-run.
        self.execute_batch("ANALYZE")?;
        // The rename needs the staging database without sessions.
        self.client = None;
        let mut admin = self
            .server
            .connect_as_given(MAINTENANCE_DATABASE)
            .map_err(failed)?;
        admin
            .batch_execute(&format!(
                "ALTER DATABASE {} RENAME TO {}",
                quoted(&self.staging()),
                quoted(&self.name)
            ))
            .map_err(|e| {
                failed(format!(
                    "cannot name database `{}`: {}",
                    self.name,
                    error_text(&e)
                ))
            })?;
        self.finished = true;
        Ok(())
    }
}

impl Drop for PgWriter {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // Best effort: the copy already failed, and says so; the database must not pass for
        // a whole one.
        self.client = None;
        if let Ok(mut admin) = self.server.connect_as_given(MAINTENANCE_DATABASE) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {}",
                quoted(&self.staging())
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_types_map_by_affinity_keeping_dates_and_booleans() {
        for (declared, expected) in [
            ("INTEGER", "bigint"),
            ("tinyint", "bigint"),
            ("varchar(20)", "text"),
            ("CLOB", "text"),
            ("", "text"),
            ("BLOB", "bytea"),
            ("double", "double precision"),
            ("FLOAT", "double precision"),
            ("NUMERIC(10,2)", "numeric"),
            ("DECIMAL", "numeric"),
            ("DATE", "date"),
            ("DATETIME", "timestamp"),
            ("TIMESTAMP", "timestamp"),
            ("TIME", "time"),
            ("BOOLEAN", "boolean"),
        ] {
            assert_eq!(column_type(declared), expected, "{declared}");
        }
    }

    #[test]
    fn values_go_as_the_text_the_server_casts() {
        assert_eq!(as_text(&Value::Null), None);
        assert_eq!(as_text(&Value::Int(-7)).as_deref(), Some("-7"));
        assert_eq!(as_text(&Value::Real(2.5)).as_deref(), Some("2.5"));
        assert_eq!(
            as_text(&Value::Blob(vec![0, 255])).as_deref(),
            Some("\\x00ff")
        );
    }
}
