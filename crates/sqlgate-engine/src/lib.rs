//! sqlgate's engine interface: what the evaluation core asks of a database engine, and the
//! values, results, bounds and catalog that every engine speaks.
//!
//! An engine is a crate of its own (`sqlgate-engine-sqlite`, `-postgres`, `-mysql`)
//! implementing [`Driver`]; the `sqlgate-engines` crate lists them, one line each. The core
//! never names an engine: it runs SQL through a [`Backend`] and reads the catalog, plans and
//! work counts in the dialect its [`Driver`] describes. (In the manner of sqllogictest-rs's
//! `DB` trait and ripgrep's `grep_matcher::Matcher`.)

pub mod catalog;
pub mod limits;
pub mod memory;
mod result;
pub mod scratch;
pub mod value;
pub mod watchdog;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

pub use catalog::Schema;
pub use limits::{Limits, Source};
pub use result::{ExecError, ExecErrorKind, Execution, ResultSet};
pub use scratch::Scratch;
pub use value::Value;

/// What a suite says of where its databases are (`dsn`, `password_env`, `scratch_dsn` in
/// `sqlgate.toml`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Settings<'a> {
    /// A connection URL template with `{db}` (server engines).
    pub dsn: Option<&'a str>,
    /// The environment variable holding the server's password.
    pub password_env: Option<&'a str>,
    /// A connection URL template with `{db}` for a role that may write, whose statements run
    /// in transactions that are always rolled back: a server's scratch copies
    /// ([`Feature::Scratch`]).
    pub scratch_dsn: Option<&'a str>,
}

/// Where an engine's databases live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// One file per database in the suite's `db_dir`, `<db>.<extension>`.
    Files {
        /// The file name's extension, without the dot (`sqlite`, `duckdb`).
        extension: &'static str,
        /// Suffixes of the files beside a database that hold part of its content (SQLite's
        /// `-wal`): a write to them is a write to the database.
        sidecars: &'static [&'static str],
    },
    /// Databases on a server, each named in the suite's `dsn` template.
    Server,
}

/// A feature that an engine may not have; asking for it fails naming both
/// ([`Unsupported`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Feature {
    /// A query plan (ETM's validity check).
    Explain,
    /// A machine-independent work count of one execution (`efficiency = ["steps"]`).
    Cost,
    /// Creating and filling a database (distill, `sqlgate copy`, the generators' clones).
    Create,
    /// Returning unordered rows in another order (the gold audit's order check).
    ReverseUnordered,
    /// A content fingerprint that says when a database changed (result cache, reuse).
    Fingerprint,
    /// A bound on a query's work in the engine's own steps ([`Limits::max_steps`]), which
    /// does not depend on the machine's speed.
    StepBound,
    /// A private writable copy of a database whose changes are never kept ([`Scratch`]):
    /// state cases, judged by what their statements leave.
    Scratch,
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Feature::Explain => "query plans (EXPLAIN, used by ETM)",
            Feature::Cost => "work counts (efficiency = [\"steps\"])",
            Feature::Create => "creating databases (distill, copy, TQA clones)",
            Feature::ReverseUnordered => "reversing unordered rows (the gold audit)",
            Feature::Fingerprint => "content fingerprints (the result cache)",
            Feature::StepBound => "bounds on a query's work in steps (distill's trials)",
            Feature::Scratch => "scratch copies (state cases: DML and DDL answers)",
        })
    }
}

/// An engine asked for a feature it does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    /// The engine's name.
    pub engine: &'static str,
    /// What was asked.
    pub feature: Feature,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "engine `{}` does not support {}",
            self.engine, self.feature
        )
    }
}

impl std::error::Error for Unsupported {}

/// Why an engine cannot serve a suite: [`Driver::connect`] refused its settings (`dsn`,
/// `password_env`), or [`Backend::check_reader`] could not ask the server what its role may
/// do. The message is the engine's own, naming the setting or the server's URL.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A server's settings given to an engine whose databases are files: the engine's words
    /// say where they are.
    #[error("{0}")]
    NotAServer(&'static str),
    /// No `dsn` given to a server engine: the engine's words show a URL of its kind.
    #[error("{0}")]
    NoDsn(&'static str),
    /// The engine's own error about its server: a URL it cannot use, a password variable not
    /// set, a server that does not answer or does not show the role's rights. Kept whole, so
    /// that a caller who knows the engine can downcast it.
    #[error(transparent)]
    Server(Box<dyn std::error::Error + Send + Sync>),
}

impl EngineError {
    /// The engine's error about its server (its own error type, or a message).
    pub fn server(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> EngineError {
        EngineError::Server(error.into())
    }
}

impl From<Unsupported> for ExecError {
    fn from(unsupported: Unsupported) -> ExecError {
        ExecError {
            kind: ExecErrorKind::Unavailable,
            message: unsupported.to_string(),
        }
    }
}

/// A catalog query's rows, run by the core through its sandbox and cache.
pub type CatalogRows<'a> = dyn FnMut(&str) -> Result<Vec<Vec<Value>>, ExecError> + 'a;

/// One database engine: its name, where its databases live, and its dialect. Registered once
/// (`sqlgate-engines`); [`Driver::connect`] configures it for one suite.
pub trait Driver: Sync + 'static {
    /// The name `engine = "..."` selects (`sqlite`, `postgres`, `mysql`).
    fn name(&self) -> &'static str;

    /// Where its databases live.
    fn storage(&self) -> Storage;

    /// The engine for one suite's settings; an error says what is wrong with them.
    fn connect(&self, settings: &Settings<'_>) -> Result<Arc<dyn Backend>, EngineError>;

    /// The features this engine has, of those it may lack.
    fn supports(&self, feature: Feature) -> bool;

    /// The error for a feature it lacks.
    fn unsupported(&self, feature: Feature) -> Unsupported {
        Unsupported {
            engine: self.name(),
            feature,
        }
    }

    /// The name sqlparser knows its dialect by (`sqlparser::dialect::dialect_from_str`).
    fn parser_dialect(&self) -> &'static str;

    /// `name` as a quoted identifier.
    fn quote(&self, name: &str) -> String {
        catalog::quoted(name)
    }

    /// The statement that plans `sql` without running it, when the engine has one
    /// ([`Feature::Explain`]).
    fn explain(&self, sql: &str) -> Option<String>;

    /// Tables, columns (declared type, primary key, NOT NULL) and foreign keys of the user's
    /// tables, read with the catalog queries given to `rows`.
    fn catalog(&self, rows: &mut CatalogRows<'_>) -> Result<Schema, ExecError>;

    /// A query of `(table, column)` rows: the columns that a single-column UNIQUE index or
    /// constraint covers (ETM's schema facts); `None` when the engine has no such catalog.
    fn unique_columns_query(&self) -> Option<String>;

    /// A query of `(table, column)` rows: the columns of each UNIQUE index or constraint over
    /// several columns (distill gives them fresh values when a row is refused, so rows that
    /// share the other columns stay distinct); `None` when the engine has no such catalog.
    fn compound_unique_columns_query(&self) -> Option<String> {
        None
    }

    /// A condition true when the value of the quoted column `column` is text that does not
    /// start with an ISO-8601 date (ETM's rule 17 guard).
    fn not_iso_date(&self, column: &str) -> String;

    /// The comments on columns, as `(table, column, comment)`, read with catalog queries given
    /// to `rows` (PostgreSQL's `col_description`, MySQL's `COLUMN_COMMENT`, SQLite's trailing
    /// `-- comment` of a column's line): the paraphraser names columns by them.
    fn column_comments(
        &self,
        rows: &mut CatalogRows<'_>,
    ) -> Result<Vec<(String, String, String)>, ExecError> {
        let _ = rows;
        Ok(Vec::new())
    }

    /// A query of `(table, unique, columns)` rows, one per index of a user's table, `unique`
    /// 1 or 0 and `columns` the indexed columns in order, joined by commas: how a state case
    /// compares the indexes its statements leave, whatever their names ([`Feature::Scratch`]).
    fn index_query(&self) -> Option<&'static str> {
        None
    }

    /// A query whose rows hold, in their first column, the database's own `CREATE`
    /// statements as written (SQLite's `sqlite_schema`): the schema text a model's prompt
    /// shows. `None`: the catalog is written out as `CREATE TABLE` statements instead.
    fn schema_text_query(&self) -> Option<&'static str> {
        None
    }
}

impl fmt::Debug for dyn Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a connection is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Open {
    /// Who wrote the SQL it runs.
    pub source: Source,
    /// Return rows that no ORDER BY orders in another order ([`Feature::ReverseUnordered`]).
    pub reverse_unordered: bool,
}

impl Open {
    /// A connection for SQL from `source`, rows in the engine's own order.
    pub fn for_source(source: Source) -> Open {
        Open {
            source,
            reverse_unordered: false,
        }
    }
}

/// One engine configured for one suite: opens its databases. Safe to share across threads;
/// each thread opens connections of its own.
pub trait Backend: Send + Sync {
    /// The engine.
    fn driver(&self) -> &'static dyn Driver;

    /// Opens `db` (a file's path, or a server database's name as a one-component path)
    /// read-only under the sandbox's rules: no writes, no attaching or reading other files,
    /// statements bounded in time, results in rows and bytes, memory within the process's
    /// budget ([`memory`]).
    fn open(&self, db: &Path, how: Open) -> Result<Box<dyn Connection>, ExecError>;

    /// Creates the database `db`, which must not exist, and opens it for writing
    /// ([`Feature::Create`]).
    fn create(&self, db: &Path) -> Result<Box<dyn Writer>, ExecError> {
        let _ = db;
        Err(self.driver().unsupported(Feature::Create).into())
    }

    /// Opens for writing the database file `db` that the caller made and no one else reads
    /// yet (a staging copy changed by a script: the generators' clones), with
    /// [`Feature::Create`].
    fn reopen(&self, db: &Path) -> Result<Box<dyn Writer>, ExecError> {
        let _ = db;
        Err(self.driver().unsupported(Feature::Create).into())
    }

    /// Drops the database `db` that this process created with [`Backend::create`] (distill's
    /// scratch candidates on a server; a file engine's candidates are files in distill's own
    /// staging folder), closing the connections it keeps to it ([`Feature::Create`]).
    fn remove(&self, db: &Path) -> Result<(), ExecError> {
        let _ = db;
        Err(self.driver().unsupported(Feature::Create).into())
    }

    /// A private writable copy of `db` for state cases ([`Feature::Scratch`]): `db` itself
    /// is never opened writable, and nothing done on the copy reaches it.
    fn scratch(&self, db: &Path) -> Result<Box<dyn Scratch>, ExecError> {
        let _ = db;
        Err(self.driver().unsupported(Feature::Scratch).into())
    }

    /// What the connection to `db` could do beyond reading, each a warning for the user (a
    /// server role that can write); nothing for files, which are opened read-only.
    fn check_reader(&self, db: &Path) -> Result<Vec<String>, EngineError> {
        let _ = db;
        Ok(Vec::new())
    }

    /// Whether this backend reads from a server (nothing then says when its data changed:
    /// results are never cached across runs).
    fn on_server(&self) -> bool {
        self.driver().storage() == Storage::Server
    }
}

impl fmt::Debug for dyn Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Backend({})", self.driver().name())
    }
}

/// A sandboxed, read-only connection to one database.
pub trait Connection: Send {
    /// Runs one statement within `limits` and reads its whole result.
    fn execute(&mut self, sql: &str, limits: &Limits) -> Execution;

    /// A work count of `sql` that depends on the database and the SQL only, never on the
    /// machine ([`Feature::Cost`]): SQLite's virtual-machine steps of one execution,
    /// PostgreSQL's planned total cost.
    fn cost(&mut self, sql: &str, limits: &Limits) -> Result<f64, ExecError>;

    /// A number that moves whenever another connection commits to the database, read without
    /// reading the database (SQLite's data version); `None` when the engine has none, and the
    /// core then compares file stamps.
    fn data_version(&self) -> Option<u32> {
        None
    }
}

/// Why a script stopped: its message, and the line of the statement that failed when the
/// engine can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// The 1-based line of the script where the failing statement starts.
    pub line: Option<usize>,
    /// The engine's message.
    pub message: String,
}

/// A database being built (distill, `sqlgate copy`, TQA's renamed clones, tests' fixtures).
pub trait Writer {
    /// Runs statements of the engine's own dialect (DDL, inserts).
    fn execute_batch(&mut self, sql: &str) -> Result<(), ExecError>;

    /// Runs a script of the engine's dialect (a suite's `[[database]]` scripts), statement by
    /// statement, so that a failure names its line where the engine can tell.
    fn execute_script(&mut self, script: &str) -> Result<(), ScriptError> {
        self.execute_batch(script).map_err(|error| ScriptError {
            line: None,
            message: error.message,
        })
    }

    /// Creates `table` with its columns, each of the engine's type nearest to the declared
    /// type (SQLite's affinity rules read the declared text: `varchar(20)` is text,
    /// `NUMERIC(10,2)` a number, an empty type takes any value), NOT NULL and primary key, and
    /// `foreign_keys` (those of `table`).
    fn create_table(
        &mut self,
        table: &catalog::Table,
        foreign_keys: &[catalog::ForeignKey],
    ) -> Result<(), ExecError>;

    /// Inserts `rows` into the columns `columns` of `table` (names unquoted). When it fails,
    /// none of `rows` is inserted: with [`ExecErrorKind::Runtime`] when the database refused a
    /// row (a NOT NULL, UNIQUE, CHECK or key constraint, a value its column cannot hold) and
    /// can take others (distill draws the row again), with another kind when the database
    /// cannot be written.
    fn insert(
        &mut self,
        table: &str,
        columns: &[String],
        rows: &[Vec<Value>],
    ) -> Result<(), ExecError>;

    /// Commits everything written, and closes the database.
    fn finish(self: Box<Self>) -> Result<(), ExecError>;
}

/// Appended to the name of a database a server engine's [`Writer`] is building: the database
/// takes its own name only when complete, so a build cut short (`kill -9`) leaves nothing under
/// a name a case reads, and a later build refuses to start over the leftover rather than drop it.
pub const STAGING_SUFFIX: &str = "__sqlgate_partial";

/// Copies every table of `from` into `to`: the catalog as `from_driver` reads it, then the rows
/// of each table, `batch` rows per read (each read within `limits`). The way the same data
/// reaches several engines (`sqlgate copy`, the cross-engine audit's fixtures).
pub fn copy_database(
    from_driver: &dyn Driver,
    from: &mut dyn Connection,
    to: &mut dyn Writer,
    limits: &Limits,
    batch: usize,
) -> Result<Schema, ExecError> {
    let schema = from_driver
        .catalog(&mut |sql: &str| from.execute(sql, limits).result.map(|set| set.rows.clone()))?;
    for table in &schema.tables {
        let keys: Vec<catalog::ForeignKey> = schema
            .foreign_keys
            .iter()
            .filter(|key| key.from.table == table.name)
            .cloned()
            .collect();
        to.create_table(table, &keys)?;
    }
    let batch = batch.max(1);
    for table in &schema.tables {
        let columns: Vec<String> = table.columns.iter().map(|c| c.name.clone()).collect();
        let list = columns
            .iter()
            .map(|c| from_driver.quote(c))
            .collect::<Vec<_>>()
            .join(", ");
        let name = from_driver.quote(&table.name);
        // Keyset pagination needs a key; LIMIT/OFFSET in a fixed order of every column reads
        // each row once whatever the engine's scan order.
        let order = (1..=columns.len())
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let mut offset = 0usize;
        loop {
            let sql =
                format!("SELECT {list} FROM {name} ORDER BY {order} LIMIT {batch} OFFSET {offset}");
            let rows = from.execute(&sql, limits).result?;
            to.insert(&table.name, &columns, &rows.rows)?;
            if rows.rows.len() < batch {
                break;
            }
            offset += batch;
        }
    }
    Ok(schema)
}
