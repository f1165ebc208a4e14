//! A PostgreSQL server: untrusted SQL on it, with the SQLite sandbox's guarantees.
//!
//! Predicted SQL is hostile input. Defence in depth (docs/postgres.md tells how to set up the
//! role, the main defence):
//! - the connection's role should hold SELECT only; [`Server::check_reader`] warns at start when
//!   it can write, create, read server files or run programs;
//! - every statement runs in a `READ ONLY` transaction that is always rolled back, on a session
//!   whose default is read-only too;
//! - functions that reach outside the database or other sessions (server files, large objects,
//!   `dblink`, signalling backends) are refused by name before the statement is sent, even
//!   where the role could call them ([`OUTSIDE_REACH`]; a text check, so the role stays the
//!   main defence);
//! - one statement per prediction: it is prepared (the server refuses several commands in one
//!   prepared statement) and refused unless it returns rows (`COPY`, `SET`, `COMMIT`...);
//! - `statement_timeout` bounds each step on the server and the deadline is checked between
//!   fetches; rows are fetched in batches through a portal, so a huge result stops at the row
//!   or byte bound without being sent whole.
//!
//! Connections are pooled per database: a worker takes an idle one or opens one, and gives it
//! back after its query, so the pool holds at most one connection per worker. TLS is not used (`NoTls`): connect
//! over loopback or a Unix socket, or through a tunnel.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use postgres::error::SqlState;
use postgres::{Client, NoTls};

use sqlgate_engine::limits::{result_bytes, MAX_SQL_BYTES};
use sqlgate_engine::memory::{self, ResultCharge};
use sqlgate_engine::{ExecError, ExecErrorKind, Execution, Limits, ResultSet, Schema};

use crate::catalog::postgres_catalog;
use crate::values;

/// Functions a prediction may not call: they read or write server files, move large objects
/// between files and the database, reach other servers, or signal other sessions.
pub const OUTSIDE_REACH: &[&str] = &[
    "pg_read_file",
    "pg_read_binary_file",
    "pg_stat_file",
    "pg_ls_dir",
    "pg_ls_logdir",
    "pg_ls_waldir",
    "pg_ls_tmpdir",
    "pg_ls_archive_statusdir",
    "pg_file_write",
    "pg_file_rename",
    "pg_file_unlink",
    "pg_file_sync",
    "lo_import",
    "lo_export",
    "dblink",
    "dblink_exec",
    "dblink_connect",
    "dblink_connect_u",
    "dblink_send_query",
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_reload_conf",
    "pg_rotate_logfile",
    "pg_promote",
];

/// The first function of [`OUTSIDE_REACH`] that `sql` calls: its name (any case, quoted or
/// not, schema-qualified or not) followed by `(`.
fn outside_reach(sql: &str) -> Option<&'static str> {
    let folded: String = sql
        .chars()
        .filter(|c| *c != '"')
        .flat_map(char::to_lowercase)
        .collect();
    OUTSIDE_REACH.iter().copied().find(|name| {
        folded.match_indices(name).any(|(at, _)| {
            let before = folded[..at].chars().next_back();
            let after = folded[at + name.len()..].trim_start();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && after.starts_with('(')
        })
    })
}

/// Rows asked for at once through the portal.
const BATCH_ROWS: usize = 1000;
/// How long connecting may take before the database counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the databases live: a connection URL template whose `{db}` is the database name,
/// and the environment variable holding the password (never the file).
#[derive(Clone)]
pub struct Server {
    template: String,
    password_env: Option<String>,
    /// The URL template of the role state cases' scratch sessions connect as (`scratch_dsn`).
    scratch: Option<String>,
    /// Each database's sequences as the first scratch session of this process found them.
    pub(crate) sequences: crate::scratch::Baselines,
    /// Idle connections by URL, shared by the clones of this server.
    idle: Arc<Mutex<HashMap<String, Vec<Client>>>>,
}

impl PartialEq for Server {
    fn eq(&self, other: &Server) -> bool {
        (&self.template, &self.password_env, &self.scratch)
            == (&other.template, &other.password_env, &other.scratch)
    }
}

impl Eq for Server {}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("template", &self.template)
            .field("password_env", &self.password_env)
            .field("scratch", &self.scratch)
            .finish()
    }
}

impl Server {
    /// Checks the template: a `postgres://` URL with `{db}` and without a password.
    pub fn new(template: &str, password_env: Option<&str>) -> Result<Server, ServerError> {
        check_template(template)?;
        Ok(Server {
            template: template.to_string(),
            password_env: password_env.map(str::to_string),
            scratch: None,
            sequences: Default::default(),
            idle: Arc::default(),
        })
    }

    /// This server with state cases' scratch sessions connecting through `template`, a URL
    /// of the same kind as [`Server::new`]'s (the same password variable applies).
    pub fn with_scratch(mut self, template: &str) -> Result<Server, ServerError> {
        check_template(template)?;
        self.scratch = Some(template.to_string());
        Ok(self)
    }

    /// The URL of database `db`, as shown in messages (it holds no password).
    pub fn url(&self, db: &str) -> String {
        self.template.replace("{db}", db)
    }

    /// The URL of database `db` for scratch sessions, if `scratch_dsn` was given.
    pub(crate) fn scratch_url(&self, db: &str) -> Option<String> {
        self.scratch.as_ref().map(|t| t.replace("{db}", db))
    }

    fn connect(&self, db: &str) -> Result<Client, ServerError> {
        let mut client = self.connect_as_given(db)?;
        // psycopg2 sees timestamps with time zone in the session's zone: one fixed zone here.
        client
            .batch_execute(
                "SET default_transaction_read_only = on; SET TIME ZONE 'UTC'; \
                 SET idle_in_transaction_session_timeout = '10min'",
            )
            .map_err(|e| ServerError::Session {
                url: self.url(db),
                reason: error_text(&e),
            })?;
        Ok(client)
    }

    /// A session on `db` as the URL's role has it, not read-only: for creating databases
    /// ([`crate::writer`]).
    pub(crate) fn connect_as_given(&self, db: &str) -> Result<Client, ServerError> {
        self.connect_url(self.url(db))
    }

    /// A session at `url` (one of this server's templates filled in), as its role has it.
    pub(crate) fn connect_url(&self, url: String) -> Result<Client, ServerError> {
        let mut config = postgres::Config::from_str(&url).map_err(|e| ServerError::Unparsable {
            url: url.clone(),
            reason: error_text(&e),
        })?;
        if let Some(name) = &self.password_env {
            let password =
                std::env::var(name).map_err(|_| ServerError::PasswordUnset(name.clone()))?;
            config.password(password);
        }
        config
            .connect_timeout(CONNECT_TIMEOUT)
            .application_name("sqlgate");
        config.connect(NoTls).map_err(|e| ServerError::Connect {
            reason: error_text(&e),
            url,
        })
    }

    /// Closes the idle connections to `db`.
    pub(crate) fn forget(&self, db: &str) {
        let url = self.url(db);
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&url);
    }

    /// Runs `f` on an idle connection to `db`, or a new one; a connection the server closed is
    /// not given back.
    fn with_client<T>(&self, db: &str, f: impl FnOnce(&mut Client) -> T) -> Result<T, ServerError> {
        let url = self.url(db);
        let idle = || self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let taken = idle().get_mut(&url).and_then(Vec::pop);
        let mut client = match taken {
            Some(client) => client,
            None => self.connect(db)?,
        };
        let value = f(&mut client);
        if !client.is_closed() {
            idle().entry(url).or_default().push(client);
        }
        Ok(value)
    }

    /// Runs one statement on `db` within `limits` and reads its whole result.
    pub fn execute(&self, db: &str, sql: &str, limits: &Limits) -> Execution {
        memory::measured(limits, |deadline, charge| {
            self.with_client(db, |client| run(client, sql, limits, deadline, charge))
                .unwrap_or_else(|error| {
                    Err(ExecError {
                        kind: ExecErrorKind::Unavailable,
                        message: error.to_string(),
                    })
                })
        })
    }

    /// The planner's estimated total cost of `sql` on `db` (`EXPLAIN (FORMAT JSON)`: the query
    /// is planned, not run), under the checks [`Server::execute`] applies.
    pub fn planned_cost(&self, db: &str, sql: &str, limits: &Limits) -> Result<f64, ExecError> {
        let deadline = limits.timeout.and_then(|t| Instant::now().checked_add(t));
        self.with_client(db, |client| {
            let mut tx = client
                .build_transaction()
                .read_only(true)
                .start()
                .map_err(|e| classify(Step::Run(e)))?;
            explain(&mut tx, sql, deadline).map_err(classify)
        })
        .unwrap_or_else(|error| {
            Err(ExecError {
                kind: ExecErrorKind::Unavailable,
                message: error.to_string(),
            })
        })
    }

    /// Connects to `db` and lists what the role could do beyond reading: each item is a
    /// warning for the user (docs/postgres.md tells how to set up a read-only role).
    pub fn check_reader(&self, db: &str) -> Result<Vec<String>, ServerError> {
        self.with_client(db, |client| {
            reader_warnings(client).map_err(|e| ServerError::CheckRole {
                url: self.url(db),
                reason: error_text(&e),
            })
        })?
    }

    /// Tables, columns and foreign keys of `db`'s visible schemas, from `pg_catalog`.
    pub fn schema(&self, db: &str) -> Result<Schema, ServerError> {
        let limits = Limits::default();
        postgres_catalog(|sql| {
            self.execute(db, sql, &limits)
                .result
                .map(|set| set.rows.clone())
        })
        .map_err(|error| ServerError::Schema {
            url: self.url(db),
            reason: error.message,
        })
    }
}

/// Why a server cannot be used: its URL template, the password variable, or the server itself
/// (unreachable, refusing the role). Messages name the URL, which holds no password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerError {
    /// The template has no `{db}` for each case's database name.
    #[error("the PostgreSQL URL `{0}` lacks `{{db}}`, where each case's database name goes")]
    NoDbPlaceholder(String),
    /// The URL is not one the client reads.
    #[error("the PostgreSQL URL `{url}` does not parse: {reason}")]
    Unparsable {
        /// The URL as given.
        url: String,
        /// The client's words.
        reason: String,
    },
    /// The URL holds a password, which would be printed wherever the URL is.
    #[error(
        "the PostgreSQL URL holds a password: name an environment variable holding it instead \
         (`password_env`, `--password-env`)"
    )]
    PasswordInUrl,
    /// The variable `password_env` names is not set.
    #[error("the environment variable {0} (the PostgreSQL password) is not set")]
    PasswordUnset(String),
    /// The server did not accept a connection.
    #[error("cannot connect to {url}: {reason}")]
    Connect {
        /// The database's URL.
        url: String,
        /// The server's or the client's words.
        reason: String,
    },
    /// The session's read-only settings were refused.
    #[error("cannot set up the session on {url}: {reason}")]
    Session {
        /// The database's URL.
        url: String,
        /// The server's words.
        reason: String,
    },
    /// The role's rights could not be read.
    #[error("cannot check the role on {url}: {reason}")]
    CheckRole {
        /// The database's URL.
        url: String,
        /// The server's words.
        reason: String,
    },
    /// The catalog could not be read.
    #[error("cannot read the schema of {url}: {reason}")]
    Schema {
        /// The database's URL.
        url: String,
        /// The engine's message.
        reason: String,
    },
}

/// Checks a URL template: a `postgres://` URL with `{db}` and without a password.
fn check_template(template: &str) -> Result<(), ServerError> {
    if !template.contains("{db}") {
        return Err(ServerError::NoDbPlaceholder(template.to_string()));
    }
    let config = postgres::Config::from_str(&template.replace("{db}", "db")).map_err(|e| {
        ServerError::Unparsable {
            url: template.to_string(),
            reason: error_text(&e),
        }
    })?;
    if config.get_password().is_some() {
        return Err(ServerError::PasswordInUrl);
    }
    Ok(())
}

/// Why one step failed: where it failed tells a prepare error from a runtime one.
pub(crate) enum Step {
    Prepare(postgres::Error),
    Run(postgres::Error),
    Fail(ExecErrorKind, String),
}

fn run(
    client: &mut Client,
    sql: &str,
    limits: &Limits,
    deadline: Option<Instant>,
    charge: &mut ResultCharge,
) -> Result<ResultSet, ExecError> {
    // The transaction is rolled back when dropped, whatever happened.
    let mut tx = client
        .build_transaction()
        .read_only(true)
        .start()
        .map_err(|e| classify(Step::Run(e)))?;
    fetch(&mut tx, sql, limits, deadline, charge).map_err(classify)
}

/// Refuses a statement too long to send or one that reaches outside the database, before the
/// server sees it.
pub(crate) fn admit(sql: &str) -> Result<(), Step> {
    if sql.len() > MAX_SQL_BYTES {
        return Err(Step::Fail(
            ExecErrorKind::TooLarge,
            format!(
                "the statement is {} bytes long, more than the {MAX_SQL_BYTES} a statement may have",
                sql.len()
            ),
        ));
    }
    if let Some(name) = outside_reach(sql) {
        return Err(Step::Fail(
            ExecErrorKind::Denied,
            format!("the statement calls `{name}`, which reaches outside the database"),
        ));
    }
    Ok(())
}

/// Prepares one admitted query within the time left: a statement that returns no rows, or
/// that has parameters, is refused.
fn prepare_query(
    tx: &mut postgres::Transaction<'_>,
    sql: &str,
    deadline: Option<Instant>,
) -> Result<postgres::Statement, Step> {
    admit(sql)?;
    bound_time(tx, deadline).map_err(Step::Run)?;
    let statement = tx.prepare(sql).map_err(Step::Prepare)?;
    if statement.columns().is_empty() {
        return Err(Step::Fail(
            ExecErrorKind::Denied,
            "the statement is not a query".into(),
        ));
    }
    if !statement.params().is_empty() {
        return Err(Step::Fail(
            ExecErrorKind::Prepare,
            "the statement has parameters ($1...) that nothing fills".into(),
        ));
    }
    Ok(statement)
}

/// The planner's total cost of one admitted query: the top plan node's `Total Cost`.
fn explain(
    tx: &mut postgres::Transaction<'_>,
    sql: &str,
    deadline: Option<Instant>,
) -> Result<f64, Step> {
    prepare_query(tx, sql, deadline)?;
    bound_time(tx, deadline).map_err(Step::Run)?;
    let row = tx
        .query_one(&format!("EXPLAIN (FORMAT JSON) {sql}"), &[])
        .map_err(Step::Run)?;
    let raw: values::Raw<'_> = row.try_get(0).map_err(Step::Run)?;
    let plan: serde_json::Value = serde_json::from_slice(raw.0.unwrap_or_default())
        .map_err(|e| Step::Fail(ExecErrorKind::Runtime, format!("unreadable plan: {e}")))?;
    plan[0]["Plan"]["Total Cost"].as_f64().ok_or_else(|| {
        Step::Fail(
            ExecErrorKind::Runtime,
            "the plan has no `Total Cost`".to_string(),
        )
    })
}

pub(crate) fn fetch(
    tx: &mut postgres::Transaction<'_>,
    sql: &str,
    limits: &Limits,
    deadline: Option<Instant>,
    charge: &mut ResultCharge,
) -> Result<ResultSet, Step> {
    let statement = prepare_query(tx, sql, deadline)?;
    let types: Vec<_> = statement
        .columns()
        .iter()
        .map(|c| c.type_().clone())
        .collect();
    if let Some(problem) = types.iter().find_map(values::unsupported) {
        return Err(Step::Fail(ExecErrorKind::Runtime, problem));
    }
    let width = types.len();
    let mut result = ResultSet {
        columns: statement
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect(),
        rows: Vec::new(),
        lossy_text: false,
    };
    let portal = tx.bind(&statement, &[]).map_err(Step::Run)?;
    let batch = BATCH_ROWS.min(limits.max_rows.saturating_add(1));
    let batch = i32::try_from(batch).unwrap_or(i32::MAX);
    let mut bytes = 0usize;
    loop {
        let rows = tx.query_portal(&portal, batch).map_err(Step::Run)?;
        let last = rows.len() < batch as usize;
        for row in rows {
            if result.rows.len() == limits.max_rows {
                return Err(Step::Fail(
                    ExecErrorKind::TooLarge,
                    format!("more than {} rows", limits.max_rows),
                ));
            }
            bytes += result_bytes(width, 1);
            let mut cells = Vec::with_capacity(width);
            for (i, ty) in types.iter().enumerate() {
                let raw: values::Raw<'_> = row.try_get(i).map_err(Step::Run)?;
                bytes += raw.0.map_or(0, <[u8]>::len);
                let value = values::decode(ty, raw.0).map_err(|e| {
                    Step::Fail(
                        ExecErrorKind::Runtime,
                        format!("cannot read column {} ({}): {e}", i + 1, ty.name()),
                    )
                })?;
                cells.push(value);
            }
            if bytes > limits.max_bytes {
                return Err(Step::Fail(
                    ExecErrorKind::TooLarge,
                    format!(
                        "the result takes more than {} bytes of memory",
                        limits.max_bytes
                    ),
                ));
            }
            charge
                .cover(bytes)
                .map_err(|error| Step::Fail(ExecErrorKind::OutOfMemory, error.to_string()))?;
            result.rows.push(cells);
        }
        if last {
            return Ok(result);
        }
        bound_time(tx, deadline).map_err(Step::Run)?;
    }
}

/// Sets the server's bound on the next step to the time left; past the deadline, the next
/// step is cancelled at once.
pub(crate) fn bound_time(
    tx: &mut postgres::Transaction<'_>,
    deadline: Option<Instant>,
) -> Result<(), postgres::Error> {
    let millis = match deadline {
        // 0 lifts the bound (`--timeout none`).
        None => 0,
        Some(deadline) => deadline
            .saturating_duration_since(Instant::now())
            .as_millis()
            .clamp(1, i32::MAX as u128),
    };
    tx.batch_execute(&format!("SET LOCAL statement_timeout = {millis}"))
}

pub(crate) fn classify(step: Step) -> ExecError {
    let (kind, message) = match step {
        Step::Fail(kind, message) => (kind, message),
        Step::Prepare(e) | Step::Run(e) if e.code() == Some(&SqlState::QUERY_CANCELED) => (
            ExecErrorKind::Timeout,
            "query exceeded its time bound".to_string(),
        ),
        Step::Prepare(e) | Step::Run(e) if is_denial(e.code()) => {
            (ExecErrorKind::Denied, error_text(&e))
        }
        // Class 08: the connection failed; class 53: the server ran out of a resource, which
        // says how loaded it was, except for a configured bound (53400, `temp_file_limit`).
        Step::Prepare(e) | Step::Run(e) if e.is_closed() || sqlstate_class(&e) == Some("08") => {
            (ExecErrorKind::Unavailable, error_text(&e))
        }
        Step::Prepare(e) | Step::Run(e) if e.code() == Some(&SqlState::OUT_OF_MEMORY) => {
            (ExecErrorKind::OutOfMemory, error_text(&e))
        }
        Step::Prepare(e) | Step::Run(e)
            if e.code() == Some(&SqlState::CONFIGURATION_LIMIT_EXCEEDED) =>
        {
            (ExecErrorKind::TooLarge, error_text(&e))
        }
        Step::Prepare(e) | Step::Run(e) if sqlstate_class(&e) == Some("53") => {
            (ExecErrorKind::Unavailable, error_text(&e))
        }
        Step::Prepare(e) => (ExecErrorKind::Prepare, error_text(&e)),
        Step::Run(e) => (ExecErrorKind::Runtime, error_text(&e)),
    };
    ExecError { kind, message }
}

/// The first two characters of the error's SQLSTATE, its class.
fn sqlstate_class(error: &postgres::Error) -> Option<&str> {
    error.code().map(|code| &code.code()[..2])
}

/// A write in the read-only transaction, or something the role may not do.
fn is_denial(code: Option<&SqlState>) -> bool {
    code.is_some_and(|c| {
        *c == SqlState::READ_ONLY_SQL_TRANSACTION || *c == SqlState::INSUFFICIENT_PRIVILEGE
    })
}

/// The server's message itself (the client's `Display` says only "db error"), else the
/// client's error with its causes: its `Display` says "error connecting to server" but not
/// that the connection was refused.
pub(crate) fn error_text(error: &postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        return format!("{}: {}", db.severity(), db.message());
    }
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(error) = cause {
        text.push_str(": ");
        text.push_str(&error.to_string());
        cause = error.source();
    }
    text
}

fn reader_warnings(client: &mut Client) -> Result<Vec<String>, postgres::Error> {
    let mut warnings = Vec::new();
    let row = client.query_one(
        "SELECT current_user::text, rolsuper, \
                has_database_privilege(current_database(), 'CREATE'), \
                has_database_privilege(current_database(), 'TEMPORARY'), \
                pg_has_role('pg_read_server_files', 'MEMBER'), \
                pg_has_role('pg_write_server_files', 'MEMBER'), \
                pg_has_role('pg_execute_server_program', 'MEMBER') \
         FROM pg_roles WHERE rolname = current_user",
        &[],
    )?;
    let role: String = row.get(0);
    let checks = [
        (1, "is a superuser"),
        (2, "may create schemas in the database"),
        (3, "may create temporary tables"),
        (4, "may read server files (pg_read_server_files)"),
        (5, "may write server files (pg_write_server_files)"),
        (6, "may run server programs (pg_execute_server_program)"),
    ];
    for (column, what) in checks {
        if row.get::<_, bool>(column) {
            warnings.push(format!("role `{role}` {what}"));
        }
    }
    let writable: Vec<String> = client
        .query(
            "SELECT c.oid::regclass::text FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') \
               AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
               AND n.nspname NOT LIKE 'pg_toast%' \
               AND (has_table_privilege(c.oid, 'INSERT') OR has_table_privilege(c.oid, 'UPDATE') \
                    OR has_table_privilege(c.oid, 'DELETE') OR has_table_privilege(c.oid, 'TRUNCATE')) \
             ORDER BY 1",
            &[],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if !writable.is_empty() {
        warnings.push(format!(
            "role `{role}` may write to {} table(s): {}",
            writable.len(),
            writable.join(", ")
        ));
    }
    let schemas: Vec<String> = client
        .query(
            "SELECT nspname::text FROM pg_namespace WHERE has_schema_privilege(oid, 'CREATE') \
             AND nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema' ORDER BY 1",
            &[],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if !schemas.is_empty() {
        warnings.push(format!(
            "role `{role}` may create objects in schema(s) {}",
            schemas.join(", ")
        ));
    }
    let outside: Vec<String> = client
        .query(
            "SELECT extname::text FROM pg_extension WHERE extname IN \
             ('dblink', 'postgres_fdw', 'file_fdw', 'adminpack', 'plpython3u', 'plperlu') ORDER BY 1",
            &[],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if !outside.is_empty() {
        warnings.push(format!(
            "extension(s) reaching outside the database are installed: {}",
            outside.join(", ")
        ));
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_reaching_outside_are_found_in_any_spelling() {
        assert_eq!(
            outside_reach("SELECT pg_read_file('/etc/passwd')"),
            Some("pg_read_file")
        );
        assert_eq!(
            outside_reach("select PG_CATALOG.\"LO_IMPORT\" ('/x')"),
            Some("lo_import")
        );
        assert_eq!(
            outside_reach("SELECT dblink_exec('x', 'y')"),
            Some("dblink_exec")
        );
        assert_eq!(outside_reach("SELECT my_pg_read_file(1)"), None);
        assert_eq!(outside_reach("SELECT pg_read_file_count FROM t"), None);
        assert_eq!(outside_reach("SELECT name AS dblink FROM author"), None);
    }

    #[test]
    fn a_template_without_a_database_or_with_a_password_is_refused_in_words() {
        assert_eq!(
            Server::new("postgres://r@h/x", None)
                .unwrap_err()
                .to_string(),
            "the PostgreSQL URL `postgres://r@h/x` lacks `{db}`, where each case's database name \
             goes"
        );
        assert_eq!(
            Server::new("postgres://r:pw@h/{db}", None).unwrap_err(),
            ServerError::PasswordInUrl
        );
        assert_eq!(
            ServerError::PasswordInUrl.to_string(),
            "the PostgreSQL URL holds a password: name an environment variable holding it \
             instead (`password_env`, `--password-env`)"
        );
    }

    #[test]
    fn a_refused_connection_says_so() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        // The listener is gone: nothing accepts on the port.
        let server =
            Server::new(&format!("postgres://reader@127.0.0.1:{port}/{{db}}"), None).unwrap();
        let error = server.schema("shop").unwrap_err().to_string();
        assert!(
            error.contains(&format!(
                "cannot connect to postgres://reader@127.0.0.1:{port}/shop"
            )) && error.to_lowercase().contains("refused"),
            "{error}"
        );
    }
}
