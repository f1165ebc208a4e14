//! Creating and filling a database (distill, `sqlgate copy`, tests' fixtures) through a user
//! that may create databases.
//!
//! Column types follow SQLite's affinity rules on the declared type, then the nearest MySQL
//! type (docs/mysql.md): integers `BIGINT`; text `LONGTEXT`, or `VARCHAR(255)` when it is part
//! of a key (MySQL indexes no unbounded text); `BLOB` `LONGBLOB` (`VARBINARY(255)` keyed); reals
//! `DOUBLE`; of the numeric affinity, dates and times their own types, booleans `BOOLEAN`,
//! `DECIMAL(p,s)` itself, the rest `DOUBLE`; no declared type `LONGTEXT`. Text compares as
//! SQLite compares it, byte for byte (`utf8mb4_bin`). Foreign keys are added by
//! [`Writer::finish`], once every table exists, without checking the rows (SQLite does not
//! enforce them either).
//!
//! The database is built under a staging name ([`STAGING_SUFFIX`]) and its tables moved to
//! the database's own name in one `RENAME TABLE` when complete (their foreign keys with them):
//! a copy cut short leaves nothing under the name a case reads.

use mysql::prelude::Queryable;
use mysql::Conn;
use sqlgate_engine::catalog::{ForeignKey, Table};
use sqlgate_engine::{Driver, ExecError, ExecErrorKind, Value, Writer, STAGING_SUFFIX};

use crate::DRIVER;

/// Parameters in one INSERT: the protocol counts them in 16 bits.
const MAX_PARAMS: usize = 65_535;
/// MySQL's longest database name, in characters.
const MAX_NAME_CHARS: usize = 64;

pub(crate) struct DatabaseWriter {
    conn: Conn,
    db: String,
    url: String,
    foreign_keys: Vec<ForeignKey>,
    /// Set by `finish`: a writer dropped before it drops its half-written database.
    finished: bool,
}

/// Server error codes of a row its table refuses (a constraint, a value its column cannot
/// hold), after which the database takes other rows; any other error means it cannot be
/// written ([`Writer::insert`]).
const REFUSED_ROW: &[u16] = &[
    1048, // ER_BAD_NULL_ERROR
    1062, // ER_DUP_ENTRY
    1264, // ER_WARN_DATA_OUT_OF_RANGE
    1265, // WARN_DATA_TRUNCATED
    1292, // ER_TRUNCATED_WRONG_VALUE (a date or number it cannot read)
    1366, // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
    1367, // ER_ILLEGAL_VALUE_FOR_TYPE
    1406, // ER_DATA_TOO_LONG
    1451, // ER_ROW_IS_REFERENCED_2
    1452, // ER_NO_REFERENCED_ROW_2
    1690, // ER_DATA_OUT_OF_RANGE
    3819, // ER_CHECK_CONSTRAINT_VIOLATED (MySQL)
    4025, // ER_CONSTRAINT_FAILED (MariaDB)
];

/// An insert that failed: [`ExecErrorKind::Runtime`] when the server refused a row.
fn failed_insert(what: &str, error: mysql::Error) -> ExecError {
    let refused = matches!(
        &error,
        mysql::Error::MySqlError(server) if REFUSED_ROW.contains(&server.code)
    );
    ExecError {
        kind: if refused {
            ExecErrorKind::Runtime
        } else {
            ExecErrorKind::Unavailable
        },
        ..failed(what, error)
    }
}

fn failed(what: &str, error: mysql::Error) -> ExecError {
    ExecError {
        kind: match &error {
            mysql::Error::MySqlError(_) => ExecErrorKind::Runtime,
            _ => ExecErrorKind::Unavailable,
        },
        message: format!("{what}: {}", crate::error_text(&error)),
    }
}

impl DatabaseWriter {
    /// Creates `db`, which must not exist, on the connection `conn` (to no database): under
    /// its staging name until [`Writer::finish`].
    pub(crate) fn create(
        mut conn: Conn,
        db: &str,
        url: &str,
    ) -> Result<Box<dyn Writer>, ExecError> {
        let longest = MAX_NAME_CHARS - STAGING_SUFFIX.len();
        if db.chars().count() > longest {
            return Err(ExecError {
                kind: ExecErrorKind::Unavailable,
                message: format!(
                    "cannot create the database {url}: a name of at most {longest} characters is \
                     needed (with room for the staging name)"
                ),
            });
        }
        let staging = format!("{db}{STAGING_SUFFIX}");
        for existing in [db, staging.as_str()] {
            if database_exists(&mut conn, existing)
                .map_err(|e| failed(&format!("cannot create the database {url}"), e))?
            {
                return Err(ExecError {
                    kind: ExecErrorKind::Denied,
                    message: format!(
                        "cannot create the database {url}: `{}` exists (sqlgate never replaces \
                         a database; drop it first)",
                        existing.escape_debug()
                    ),
                });
            }
        }
        crate::run(&mut conn, &create_database(&staging))
            .map_err(|e| failed(&format!("cannot create the database {url}"), e))?;
        let mut writer = DatabaseWriter {
            conn,
            db: db.to_string(),
            url: url.to_string(),
            foreign_keys: Vec::new(),
            finished: false,
        };
        // Strict: a value the column cannot hold fails instead of being truncated.
        writer.execute_batch(&format!(
            "USE {}; SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'; \
             SET SESSION time_zone = '+00:00'; SET NAMES utf8mb4 COLLATE utf8mb4_bin; \
             SET SESSION foreign_key_checks = 0",
            DRIVER.quote(&staging)
        ))?;
        Ok(Box::new(writer))
    }

    /// The name the database is built under.
    fn staging(&self) -> String {
        format!("{}{STAGING_SUFFIX}", self.db)
    }

    /// Moves every table of the staging database to the database's own name, in one
    /// statement, and drops the emptied staging database.
    fn rename_into_place(&mut self) -> Result<(), ExecError> {
        let staging = self.staging();
        let tables: Vec<String> = self
            .conn
            .exec(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? \
                 ORDER BY TABLE_NAME",
                (&staging,),
            )
            .map_err(|e| failed("cannot list the tables built", e))?;
        let (from, to) = (DRIVER.quote(&staging), DRIVER.quote(&self.db));
        let moves: Vec<String> = tables
            .iter()
            .map(|table| {
                let table = DRIVER.quote(table);
                format!("{from}.{table} TO {to}.{table}")
            })
            .collect();
        let mut sql = create_database(&self.db);
        if !moves.is_empty() {
            sql.push_str(&format!("; RENAME TABLE {}", moves.join(", ")));
        }
        sql.push_str(&format!("; USE {to}; DROP DATABASE {from}"));
        crate::run(&mut self.conn, &sql)
            .map_err(|e| failed(&format!("cannot name the database {}", self.url), e))?;
        // Under the tables' own names: statistics computed in the staging database are renamed
        // with its tables only as far as the server manages, and a table without them is
        // planned on statistics sampled at random each time it is opened.
        self.analyze(&tables)
    }
}

impl DatabaseWriter {
    /// Computes the planner's statistics of `tables` (in the current database) now, from the
    /// rows written: InnoDB would otherwise recompute them in the background at some later
    /// moment, and a cost (`steps`) would change in the middle of a run.
    fn analyze(&mut self, tables: &[String]) -> Result<(), ExecError> {
        if tables.is_empty() {
            return Ok(());
        }
        let list: Vec<String> = tables.iter().map(|t| DRIVER.quote(t)).collect();
        let sql = format!("ANALYZE TABLE {}", list.join(", "));
        let cannot = |e| failed(&format!("cannot analyze the tables of {}", self.url), e);
        // ANALYZE reports a failure as a row, not as an error; one that lost a lock to another
        // session's statistics is tried again.
        let mut attempts = 0;
        loop {
            let rows: Vec<(String, String, String, Option<String>)> =
                self.conn.query(&sql).map_err(cannot)?;
            let failure = rows.into_iter().find(|(_, _, kind, message)| {
                let message = message.as_deref().unwrap_or_default();
                kind.eq_ignore_ascii_case("error")
                    || (kind.eq_ignore_ascii_case("status") && message.contains("failed"))
            });
            match failure {
                None => return Ok(()),
                Some(_) if attempts < 2 => attempts += 1,
                Some((table, _, _, message)) => {
                    return Err(ExecError {
                        kind: ExecErrorKind::Runtime,
                        message: format!(
                            "cannot analyze the tables of {}: {table}: {}",
                            self.url,
                            message.unwrap_or_default()
                        ),
                    })
                }
            }
        }
    }
}

/// Drops the database `db` (at `url`, for messages).
pub(crate) fn drop_database(conn: &mut Conn, db: &str, url: &str) -> Result<(), ExecError> {
    let sql = format!("DROP DATABASE IF EXISTS {}", DRIVER.quote(db));
    crate::run(conn, &sql).map_err(|e| failed(&format!("cannot drop the database {url}"), e))
}

/// Whether the server holds a database named `name`.
fn database_exists(conn: &mut Conn, name: &str) -> Result<bool, mysql::Error> {
    let found: Option<u32> = conn.exec_first(
        "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
        (name,),
    )?;
    Ok(found.is_some())
}

/// The statement creating the database `name`: text compared byte for byte, as SQLite does.
fn create_database(name: &str) -> String {
    format!(
        "CREATE DATABASE {} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
        DRIVER.quote(name)
    )
}

/// The MySQL type of a column declared `declared` in SQLite; `keyed` when an index needs it.
pub(crate) fn column_type(declared: &str, keyed: bool) -> String {
    let upper = declared.to_ascii_uppercase();
    let has = |part: &str| upper.contains(part);
    if has("INT") {
        "BIGINT".into()
    } else if has("CHAR") || has("CLOB") || has("TEXT") || upper.trim().is_empty() {
        if keyed { "VARCHAR(255)" } else { "LONGTEXT" }.into()
    } else if has("BLOB") {
        if keyed { "VARBINARY(255)" } else { "LONGBLOB" }.into()
    } else if has("REAL") || has("FLOA") || has("DOUB") {
        "DOUBLE".into()
    } else if has("DATETIME") || has("TIMESTAMP") {
        "DATETIME(6)".into()
    } else if has("DATE") {
        "DATE".into()
    } else if has("TIME") {
        "TIME(6)".into()
    } else if has("BOOL") {
        "BOOLEAN".into()
    } else {
        decimal(&upper).unwrap_or_else(|| "DOUBLE".into())
    }
}

/// `DECIMAL(p,s)` of a declared `DECIMAL(p,s)` or `NUMERIC(p,s)` that MySQL can hold.
fn decimal(upper: &str) -> Option<String> {
    let (_, rest) = upper.split_once('(')?;
    let (inside, _) = rest.split_once(')')?;
    let mut parts = inside.split(',').map(|p| p.trim().parse::<u32>());
    let precision = parts.next()?.ok()?;
    let scale = match parts.next() {
        Some(scale) => scale.ok()?,
        None => 0,
    };
    ((1..=65).contains(&precision) && scale <= 30.min(precision) && parts.next().is_none())
        .then(|| format!("DECIMAL({precision},{scale})"))
}

fn parameter(value: &Value) -> mysql::Value {
    match value {
        Value::Null => mysql::Value::NULL,
        Value::Int(n) => mysql::Value::Int(*n),
        Value::Real(f) => mysql::Value::Double(*f),
        Value::Text(text) => mysql::Value::Bytes(text.as_bytes().to_vec()),
        Value::Blob(bytes) => mysql::Value::Bytes(bytes.clone()),
    }
}

impl Writer for DatabaseWriter {
    fn execute_batch(&mut self, sql: &str) -> Result<(), ExecError> {
        crate::run(&mut self.conn, sql)
            .map_err(|e| failed(&format!("cannot write to {}", self.url), e))
    }

    fn create_table(
        &mut self,
        table: &Table,
        foreign_keys: &[ForeignKey],
    ) -> Result<(), ExecError> {
        let keyed = |column: &str| {
            foreign_keys
                .iter()
                .any(|key| key.from.column.eq_ignore_ascii_case(column))
        };
        let lines = table.definition_lines(
            |name| DRIVER.quote(name),
            |c| column_type(&c.decl_type, c.primary_key || keyed(&c.name)).to_string(),
        );
        self.execute_batch(&format!(
            "CREATE TABLE {} (\n  {}\n) ENGINE = InnoDB",
            DRIVER.quote(&table.name),
            lines.join(",\n  ")
        ))?;
        self.foreign_keys.extend_from_slice(foreign_keys);
        Ok(())
    }

    fn insert(
        &mut self,
        table: &str,
        columns: &[String],
        rows: &[Vec<Value>],
    ) -> Result<(), ExecError> {
        if columns.is_empty() || rows.is_empty() {
            return Ok(());
        }
        let list: Vec<String> = columns.iter().map(|c| DRIVER.quote(c)).collect();
        let placeholders = format!("({})", vec!["?"; columns.len()].join(", "));
        let per_statement = (MAX_PARAMS / columns.len()).max(1);
        let failed_insert = |e| {
            failed_insert(
                &format!("cannot insert into table `{table}` of {}", self.url),
                e,
            )
        };
        // One transaction: a refused row leaves none of `rows` in ([`Writer::insert`]).
        let mut transaction = self
            .conn
            .start_transaction(mysql::TxOpts::default())
            .map_err(failed_insert)?;
        for chunk in rows.chunks(per_statement) {
            let sql = format!(
                "INSERT INTO {} ({}) VALUES {}",
                DRIVER.quote(table),
                list.join(", "),
                vec![placeholders.as_str(); chunk.len()].join(", ")
            );
            let params: Vec<mysql::Value> = chunk.iter().flatten().map(parameter).collect();
            let result = transaction.exec_iter(&sql, params).and_then(crate::drain);
            result.map_err(failed_insert)?;
        }
        transaction.commit().map_err(failed_insert)
    }

    fn finish(mut self: Box<Self>) -> Result<(), ExecError> {
        for key in std::mem::take(&mut self.foreign_keys) {
            let (to_table, to_column) = (DRIVER.quote(&key.to.table), DRIVER.quote(&key.to.column));
            // MySQL needs an index on the referenced column.
            let indexed: Option<u32> = self
                .conn
                .exec_first(
                    "SELECT 1 FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() \
                     AND TABLE_NAME = ? AND COLUMN_NAME = ? AND SEQ_IN_INDEX = 1",
                    (&key.to.table, &key.to.column),
                )
                .map_err(|e| failed("cannot read the indexes", e))?;
            if indexed.is_none() {
                self.execute_batch(&format!("ALTER TABLE {to_table} ADD INDEX ({to_column})"))?;
            }
            self.execute_batch(&format!(
                "ALTER TABLE {} ADD FOREIGN KEY ({}) REFERENCES {to_table} ({to_column})",
                DRIVER.quote(&key.from.table),
                DRIVER.quote(&key.from.column)
            ))?;
        }
        self.rename_into_place()?;
        self.finished = true;
        Ok(())
    }
}

impl Drop for DatabaseWriter {
    fn drop(&mut self) {
        if !self.finished {
            // Best effort: the staging database is this writer's own (a `kill -9` leaves it,
            // under a name no case reads).
            let drop = format!("DROP DATABASE IF EXISTS {}", DRIVER.quote(&self.staging()));
            let _ = crate::run(&mut self.conn, &drop);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_types_follow_sqlite_affinity() {
        for (declared, keyed, expected) in [
            ("INTEGER", false, "BIGINT"),
            ("bigint unsigned", false, "BIGINT"),
            ("TEXT", false, "LONGTEXT"),
            ("TEXT", true, "VARCHAR(255)"),
            ("varchar(20)", false, "LONGTEXT"),
            ("", false, "LONGTEXT"),
            ("BLOB", false, "LONGBLOB"),
            ("BLOB", true, "VARBINARY(255)"),
            ("REAL", false, "DOUBLE"),
            ("double precision", false, "DOUBLE"),
            ("DATE", false, "DATE"),
            ("DATETIME", false, "DATETIME(6)"),
            ("TIMESTAMP", false, "DATETIME(6)"),
            ("TIME", false, "TIME(6)"),
            ("BOOLEAN", false, "BOOLEAN"),
            ("NUMERIC(10,2)", false, "DECIMAL(10,2)"),
            ("DECIMAL(5)", false, "DECIMAL(5,0)"),
            ("NUMERIC", false, "DOUBLE"),
            ("NUMERIC(99,2)", false, "DOUBLE"),
            // "POINT" has "INT": SQLite's first rule wins.
            ("POINT", false, "BIGINT"),
        ] {
            assert_eq!(column_type(declared, keyed), expected, "{declared}");
        }
    }
}
