//! sqlgate's MySQL / MariaDB engine: untrusted SQL on a server, with the SQLite sandbox's
//! guarantees (docs/mysql.md).
//!
//! Predicted SQL is hostile input. Defence in depth (docs/mysql.md tells how to set up the user,
//! the main defence):
//! - the connection's user should hold SELECT only (`docs/mysql-reader.sql`);
//! - every session is `SET SESSION TRANSACTION READ ONLY`: the server refuses writes to tables,
//!   and on MariaDB DDL too;
//! - one reading statement per prediction, checked on its text before the server sees it
//!   (`admit`): writes, `SELECT ... INTO`, locks, `LOAD_FILE`, executable comments and second
//!   statements are refused; it then runs as a prepared statement, which the server refuses to
//!   hold more than one statement;
//! - the server bounds its time (`max_statement_time` on MariaDB, `max_execution_time` on
//!   MySQL), and the process-wide watchdog stops it with `KILL QUERY` from a second connection
//!   when it runs past its deadline all the same; rows are counted and charged to the memory
//!   budget as they stream in, and a result past its bounds is stopped the same way.
//!
//! Connections are pooled per database: a worker takes an idle one or opens one, and gives it
//! back after use, so the pool holds at most one connection per worker. TLS is not used:
//! connect over loopback or through a tunnel, as for PostgreSQL.

mod admit;
mod scratch;
mod values;
mod writer;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::{Conn, Opts, OptsBuilder};
use sqlgate_engine::catalog::{self, ColRef, Column, ForeignKey, Schema};
use sqlgate_engine::limits::result_bytes;
use sqlgate_engine::memory::{self, ResultCharge};
use sqlgate_engine::{
    watchdog, Backend, CatalogRows, Connection, Driver, EngineError, ExecError, ExecErrorKind,
    Execution, Feature, Limits, Open, ResultSet, Settings, Storage, Writer,
};

/// The MySQL / MariaDB engine, `engine = "mysql"`.
pub static DRIVER: MySql = MySql;

/// The MySQL / MariaDB driver.
#[derive(Debug)]
pub struct MySql;

/// How long connecting may take before the database counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl Driver for MySql {
    fn name(&self) -> &'static str {
        "mysql"
    }

    fn storage(&self) -> Storage {
        Storage::Server
    }

    fn connect(&self, settings: &Settings<'_>) -> Result<Arc<dyn Backend>, EngineError> {
        let template = settings.dsn.ok_or(EngineError::NoDsn(
            "engine `mysql` needs `dsn`, a URL such as mysql://user@host:3306/{db}",
        ))?;
        let server = Server::new(template, settings.password_env, settings.scratch_dsn)
            .map_err(EngineError::server)?;
        Ok(Arc::new(server))
    }

    fn supports(&self, feature: Feature) -> bool {
        match feature {
            Feature::Explain | Feature::Cost | Feature::Create | Feature::Scratch => true,
            Feature::ReverseUnordered | Feature::Fingerprint | Feature::StepBound => false,
        }
    }

    fn parser_dialect(&self) -> &'static str {
        "mysql"
    }

    fn quote(&self, name: &str) -> String {
        format!("`{}`", name.replace('`', "``"))
    }

    fn explain(&self, sql: &str) -> Option<String> {
        Some(format!("EXPLAIN {sql}"))
    }

    fn catalog(&self, rows: &mut CatalogRows<'_>) -> Result<Schema, ExecError> {
        let columns = rows(
            "SELECT c.TABLE_NAME, c.COLUMN_NAME, c.COLUMN_TYPE, c.IS_NULLABLE = 'NO', \
                    EXISTS (SELECT 1 FROM information_schema.KEY_COLUMN_USAGE k \
                            WHERE k.TABLE_SCHEMA = c.TABLE_SCHEMA AND k.TABLE_NAME = c.TABLE_NAME \
                              AND k.COLUMN_NAME = c.COLUMN_NAME AND k.CONSTRAINT_NAME = 'PRIMARY') \
             FROM information_schema.COLUMNS c \
             JOIN information_schema.TABLES t \
               ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME \
             WHERE c.TABLE_SCHEMA = DATABASE() AND t.TABLE_TYPE = 'BASE TABLE' \
             ORDER BY c.TABLE_NAME, c.ORDINAL_POSITION",
        )?;
        let mut schema = Schema::default();
        for row in columns {
            schema.push_column(
                catalog::text(&row[0]),
                Column {
                    name: catalog::text(&row[1]),
                    decl_type: catalog::text(&row[2]),
                    primary_key: catalog::flag(&row[4]),
                    not_null: catalog::flag(&row[3]),
                },
            );
        }
        let keys = rows(
            "SELECT k.TABLE_NAME, k.COLUMN_NAME, k.REFERENCED_TABLE_NAME, k.REFERENCED_COLUMN_NAME \
             FROM information_schema.KEY_COLUMN_USAGE k \
             WHERE k.TABLE_SCHEMA = DATABASE() AND k.REFERENCED_TABLE_NAME IS NOT NULL \
             ORDER BY k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION",
        )?;
        for row in keys {
            schema.foreign_keys.push(ForeignKey {
                from: ColRef::new(&catalog::text(&row[0]), &catalog::text(&row[1])),
                to: ColRef::new(&catalog::text(&row[2]), &catalog::text(&row[3])),
            });
        }
        Ok(schema)
    }

    fn unique_columns_query(&self) -> Option<String> {
        // An index on an expression or a prefix still names its column: a prefix index
        // (SUB_PART) does not make the column unique.
        Some(
            "SELECT s.TABLE_NAME, s.COLUMN_NAME FROM information_schema.STATISTICS s \
             WHERE s.TABLE_SCHEMA = DATABASE() AND s.NON_UNIQUE = 0 AND s.SUB_PART IS NULL \
               AND s.COLUMN_NAME IS NOT NULL \
               AND NOT EXISTS (SELECT 1 FROM information_schema.STATISTICS o \
                               WHERE o.TABLE_SCHEMA = s.TABLE_SCHEMA \
                                 AND o.TABLE_NAME = s.TABLE_NAME \
                                 AND o.INDEX_NAME = s.INDEX_NAME AND o.SEQ_IN_INDEX > 1) \
             ORDER BY 1, 2"
                .to_string(),
        )
    }

    fn column_comments(
        &self,
        rows: &mut CatalogRows<'_>,
    ) -> Result<Vec<(String, String, String)>, ExecError> {
        let found = rows(
            "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_COMMENT FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = DATABASE() AND COLUMN_COMMENT <> '' \
             ORDER BY TABLE_NAME, ORDINAL_POSITION",
        )?;
        Ok(found
            .iter()
            .map(|row| {
                (
                    catalog::text(&row[0]),
                    catalog::text(&row[1]),
                    catalog::text(&row[2]),
                )
            })
            .collect())
    }

    fn index_query(&self) -> Option<&'static str> {
        // An index on an expression (MySQL 8) has no column name.
        Some(
            "SELECT TABLE_NAME, MAX(NON_UNIQUE) = 0, \
             GROUP_CONCAT(COALESCE(COLUMN_NAME, '(expression)') ORDER BY SEQ_IN_INDEX \
                          SEPARATOR ',') \
             FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() \
             GROUP BY TABLE_NAME, INDEX_NAME",
        )
    }

    fn not_iso_date(&self, column: &str) -> String {
        format!("NOT ({column} REGEXP '^[0-9]{{4}}-[0-1][0-9]-[0-3][0-9]')")
    }
}

/// Which server answers: they bound a statement's time with different variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    MySql,
    MariaDb,
}

/// A connection with what is known of its server.
struct Session {
    conn: Conn,
    flavor: Flavor,
    /// Whether the session's `sql_mode` has `ANSI_QUOTES` (no statement the sandbox runs can
    /// change it).
    ansi_quotes: bool,
}

/// Where the databases live: a connection URL template whose `{db}` is the database name,
/// and the environment variable holding the password (never the file). Its clones share one
/// pool.
#[derive(Clone)]
struct Server(Arc<Shared>);

struct Shared {
    template: String,
    password_env: Option<String>,
    /// Idle sessions by URL.
    idle: Mutex<HashMap<String, Vec<Session>>>,
    /// Where state cases' scratch copies are made (`scratch_dsn`), with the same password.
    scratch: Option<Server>,
}

impl Server {
    /// Checks the template: a `mysql://` URL with `{db}` and without a password; the same of
    /// `scratch`, the URL template of the user that makes scratch copies.
    fn new(
        template: &str,
        password_env: Option<&str>,
        scratch: Option<&str>,
    ) -> Result<Server, String> {
        if !template.contains("{db}") {
            return Err(format!(
                "the MySQL URL `{template}` lacks `{{db}}`, where each case's database name goes"
            ));
        }
        let opts = Opts::from_url(&template.replace("{db}", "db"))
            .map_err(|e| format!("the MySQL URL `{template}` does not parse: {e}"))?;
        if opts.get_pass().is_some() {
            return Err(
                "the MySQL URL holds a password: name an environment variable holding it \
                 instead (`password_env`, `--password-env`)"
                    .to_string(),
            );
        }
        let scratch = scratch
            .map(|scratch| Server::new(scratch, password_env, None))
            .transpose()?;
        Ok(Server(Arc::new(Shared {
            template: template.to_string(),
            password_env: password_env.map(str::to_string),
            idle: Mutex::default(),
            scratch,
        })))
    }

    /// The URL of database `db`, as shown in messages (it holds no password).
    fn url(&self, db: &str) -> String {
        self.0.template.replace("{db}", db)
    }

    /// The options to connect to `db` (`None`: no database, to create one).
    fn opts(&self, db: Option<&str>) -> Result<Opts, String> {
        // Checked by `Server::new`; the name is set apart, so that no character of it is
        // read as part of the URL.
        let opts = Opts::from_url(&self.url("db"))
            .map_err(|e| format!("the MySQL URL `{}` does not parse: {e}", self.0.template))?;
        let mut builder = OptsBuilder::from_opts(opts)
            .db_name(db)
            .tcp_connect_timeout(Some(CONNECT_TIMEOUT))
            // The URL says where the server is: no switch to a Unix socket it also has.
            .prefer_socket(false);
        if let Some(name) = &self.0.password_env {
            let password = std::env::var(name).map_err(|_| {
                format!("the environment variable {name} (the MySQL password) is not set")
            })?;
            builder = builder.pass(Some(password));
        }
        Ok(builder.into())
    }

    /// A new read-only session on `db`.
    fn connect(&self, db: &str) -> Result<Session, String> {
        self.session(Some(db), "SET SESSION TRANSACTION READ ONLY")
    }

    /// A new session on `db` (none: no default database), set up by `setup` and then to read
    /// dates and times in UTC and to talk utf8mb4.
    fn session(&self, db: Option<&str>, setup: &str) -> Result<Session, String> {
        let url = self.url(db.unwrap_or_default());
        let mut conn = Conn::new(self.opts(db)?)
            .map_err(|e| format!("cannot connect to {url}: {}", error_text(&e)))?;
        let about: Option<(String, String)> = conn
            .query_first("SELECT VERSION(), @@SESSION.sql_mode")
            .map_err(|e| {
                format!(
                    "cannot read the server's version on {url}: {}",
                    error_text(&e)
                )
            })?;
        let (version, sql_mode) = about.unwrap_or_default();
        let flavor = if version.contains("MariaDB") {
            Flavor::MariaDb
        } else {
            Flavor::MySql
        };
        let ansi_quotes = sql_mode.split(',').any(|mode| {
            mode.eq_ignore_ascii_case("ANSI_QUOTES") || mode.eq_ignore_ascii_case("ANSI")
        });
        // Dates and times in one fixed zone, as the PostgreSQL engine reads them.
        run(
            &mut conn,
            &format!("{setup}; SET SESSION time_zone = '+00:00'; SET NAMES utf8mb4"),
        )
        .map_err(|e| format!("cannot set up the session on {url}: {}", error_text(&e)))?;
        Ok(Session {
            conn,
            flavor,
            ansi_quotes,
        })
    }

    /// An idle session on `db`, or a new one.
    fn take(&self, db: &str) -> Result<Session, String> {
        let taken = self.lock().get_mut(&self.url(db)).and_then(Vec::pop);
        match taken {
            Some(session) => Ok(session),
            None => self.connect(db),
        }
    }

    /// Closes the idle sessions on `db`.
    fn forget(&self, db: &str) {
        self.lock().remove(&self.url(db));
    }

    fn give_back(&self, db: &str, session: Session) {
        self.lock().entry(self.url(db)).or_default().push(session);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Session>>> {
        self.0.idle.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Privileges beyond reading, as `SHOW GRANTS` spells them: each makes the sandbox's own
/// checks the only defence.
const BEYOND_READING: &[&str] = &[
    "ALL PRIVILEGES",
    "INSERT",
    "UPDATE",
    "DELETE",
    "CREATE",
    "DROP",
    "ALTER",
    "INDEX",
    "EXECUTE",
    "FILE",
    "SUPER",
    "GRANT OPTION",
    "LOCK TABLES",
    "EVENT",
    "TRIGGER",
];

impl Backend for Server {
    fn driver(&self) -> &'static dyn Driver {
        &DRIVER
    }

    /// The user's grants (`SHOW GRANTS`): each privilege beyond reading is a warning
    /// (docs/mysql.md sets up a read-only user).
    fn check_reader(&self, db: &Path) -> Result<Vec<String>, EngineError> {
        let db = database_name(db).map_err(|e| EngineError::server(e.message))?;
        let url = self.url(&db);
        let mut session = self.take(&db).map_err(EngineError::server)?;
        let grants: Vec<String> = session.conn.query("SHOW GRANTS").map_err(|e| {
            EngineError::server(format!(
                "cannot read the grants on {url}: {}",
                error_text(&e)
            ))
        })?;
        self.give_back(&db, session);
        let mut found: Vec<&str> = BEYOND_READING
            .iter()
            .copied()
            .filter(|privilege| {
                grants.iter().any(|grant| {
                    let granted = grant.split(" ON ").next().unwrap_or_default();
                    granted.to_uppercase().contains(privilege)
                })
            })
            .collect();
        found.dedup();
        Ok(found
            .into_iter()
            .map(|privilege| {
                format!(
                    "{url}: the user holds {privilege}, more than reading needs \
                     (docs/mysql.md sets up a read-only user)"
                )
            })
            .collect())
    }

    fn open(&self, db: &Path, how: Open) -> Result<Box<dyn Connection>, ExecError> {
        if how.reverse_unordered {
            return Err(DRIVER.unsupported(Feature::ReverseUnordered).into());
        }
        let db = database_name(db)?;
        let session = self.take(&db).map_err(unavailable)?;
        let killer = self.opts(Some(&db)).map_err(unavailable)?;
        Ok(Box::new(MySqlConnection {
            server: self.clone(),
            db,
            session: Some(session),
            killer,
        }))
    }

    /// A private copy of `db` made by the `scratch_dsn` user (`scratch.rs`): MySQL commits
    /// schema changes, so a transaction cannot undo them.
    fn scratch(&self, db: &Path) -> Result<Box<dyn sqlgate_engine::Scratch>, ExecError> {
        Ok(Box::new(scratch::MySqlScratch::open(self, db)?))
    }

    fn remove(&self, db: &Path) -> Result<(), ExecError> {
        let db = database_name(db)?;
        self.forget(&db);
        let url = self.url(&db);
        let mut conn = Conn::new(self.opts(None).map_err(unavailable)?)
            .map_err(|e| unavailable(format!("cannot connect to {url}: {}", error_text(&e))))?;
        writer::drop_database(&mut conn, &db, &url)
    }

    fn create(&self, db: &Path) -> Result<Box<dyn Writer>, ExecError> {
        let db = database_name(db)?;
        let url = self.url(&db);
        let conn = Conn::new(self.opts(None).map_err(unavailable)?)
            .map_err(|e| unavailable(format!("cannot connect to {url}: {}", error_text(&e))))?;
        writer::DatabaseWriter::create(conn, &db, &url)
    }
}

/// The database name a one-component path holds.
fn database_name(db: &Path) -> Result<String, ExecError> {
    let name = db.to_str().filter(|name| {
        !name.is_empty() && !name.contains(['/', '\\', '\0']) && name.chars().count() <= 64
    });
    name.map(str::to_string).ok_or_else(|| ExecError {
        kind: ExecErrorKind::Unavailable,
        message: format!(
            "`{}` is not a MySQL database name (at most 64 characters, no slash)",
            db.display()
        ),
    })
}

fn unavailable(message: String) -> ExecError {
    ExecError {
        kind: ExecErrorKind::Unavailable,
        message,
    }
}

/// A session on one database, given back to the pool when dropped unless something may have
/// left it in a state another query should not meet (a `KILL QUERY`, a failed connection).
struct MySqlConnection {
    server: Server,
    db: String,
    session: Option<Session>,
    /// How to open the second connection that stops a running statement.
    killer: Opts,
}

impl Drop for MySqlConnection {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            self.server.give_back(&self.db, session);
        }
    }
}

/// Why one step failed: where it failed tells a prepare error from a runtime one.
enum Step {
    Prepare(mysql::Error),
    Run(mysql::Error),
    Fail(ExecErrorKind, String),
}

impl MySqlConnection {
    /// Runs `f` on the session under `limits`' time bound: the server's own, and the watchdog's
    /// `KILL QUERY` past the deadline. A session that was killed, or whose connection failed,
    /// is not given back to the pool.
    fn bounded<T>(
        &mut self,
        limits: &Limits,
        f: impl FnOnce(&mut Session, &Killer) -> Result<T, Step>,
    ) -> Result<T, ExecError> {
        let start = Instant::now();
        let deadline = limits.timeout.and_then(|t| start.checked_add(t));
        let mut session = match self.session.take() {
            Some(session) => session,
            // A previous statement was killed or lost the connection: a new one.
            None => self.server.take(&self.db).map_err(unavailable)?,
        };
        // A pooled session that the server closed meanwhile (`wait_timeout`) fails this first
        // statement, before any of the user's SQL: a new session takes its place.
        let bound = match bound_time(&mut session, deadline) {
            Err(error) if lost(&error) => {
                session = self.server.connect(&self.db).map_err(unavailable)?;
                bound_time(&mut session, deadline)
            }
            bound => bound,
        };
        let (result, usable) = guarded(&mut session, &self.killer, deadline, bound, f);
        if usable {
            self.session = Some(session);
        }
        result
    }
}

/// Runs `f` on `session` once its time bound is set (`bound`), the watchdog stopping it with
/// `KILL QUERY` past `deadline`; returns its result and whether the session may run another
/// statement: not when it was killed (a late kill could stop the next one) or its connection
/// failed.
fn guarded<T>(
    session: &mut Session,
    killer: &Opts,
    deadline: Option<Instant>,
    bound: Result<(), mysql::Error>,
    f: impl FnOnce(&mut Session, &Killer) -> Result<T, Step>,
) -> (Result<T, ExecError>, bool) {
    let killer = Killer {
        opts: killer.clone(),
        id: session.conn.connection_id(),
        killed: Arc::default(),
    };
    let result = bound.map_err(Step::Run).and_then(|()| {
        let armed = deadline.map(|deadline| {
            let killer = killer.clone();
            watchdog::arm(deadline, Box::new(move || killer.kill_later()))
        });
        let result = f(session, &killer);
        // Once disarmed, the watchdog has marked the kill or never will.
        drop(armed);
        result
    });
    let killed = killer.was_killed();
    let mut broken = false;
    let result = result.map_err(|step| {
        broken = matches!(&step, Step::Prepare(e) | Step::Run(e) if lost(e));
        classify(step, deadline, killed)
    });
    (result, !killed && !broken)
}

/// Whether the connection failed, rather than the server refusing a statement.
fn lost(error: &mysql::Error) -> bool {
    !matches!(error, mysql::Error::MySqlError(_))
}

/// Stops the statement running on connection `id` from a second connection.
#[derive(Clone)]
struct Killer {
    opts: Opts,
    id: u32,
    /// Set before `KILL QUERY` is sent: the session must not run another statement, which the
    /// late kill could stop instead.
    killed: Arc<AtomicBool>,
}

impl Killer {
    /// Stops the statement now.
    fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.send();
    }

    /// Stops the statement from a thread of its own: the watchdog's thread serves every
    /// deadline, and connecting takes time.
    fn kill_later(&self) {
        self.killed.store(true, Ordering::SeqCst);
        let killer = self.clone();
        std::thread::spawn(move || killer.send());
    }

    fn send(&self) {
        // Best effort: the server's own time bound stops the statement too.
        if let Ok(mut conn) = Conn::new(self.opts.clone()) {
            let _ = run(&mut conn, &format!("KILL QUERY {}", self.id));
        }
    }

    fn was_killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }
}

/// Sets the server's bound on the next statement to the time left (none: no bound).
fn bound_time(session: &mut Session, deadline: Option<Instant>) -> Result<(), mysql::Error> {
    let left = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
    let statement = match (session.flavor, left) {
        // 0 lifts the bound (`--timeout none`).
        (Flavor::MariaDb, None) => "SET SESSION max_statement_time = 0".to_string(),
        (Flavor::MariaDb, Some(left)) => format!(
            "SET SESSION max_statement_time = {:.6}",
            left.as_secs_f64().max(0.000_001)
        ),
        (Flavor::MySql, None) => "SET SESSION max_execution_time = 0".to_string(),
        (Flavor::MySql, Some(left)) => format!(
            "SET SESSION max_execution_time = {}",
            left.as_millis().clamp(1, u32::MAX as u128)
        ),
    };
    run(&mut session.conn, &statement)
}

impl Connection for MySqlConnection {
    fn execute(&mut self, sql: &str, limits: &Limits) -> Execution {
        memory::measured(limits, |_, charge| {
            self.admitted(sql).and_then(|sql| {
                self.bounded(limits, |session, killer| {
                    fetch(session, sql, limits, killer, charge)
                })
            })
        })
    }

    /// The optimizer's estimated cost of `sql`, planned and not run: MySQL's
    /// `EXPLAIN FORMAT=JSON` `query_cost`; on MariaDB, whose JSON plan has no cost before 11.0,
    /// `Last_query_cost` after `EXPLAIN`.
    fn cost(&mut self, sql: &str, limits: &Limits) -> Result<f64, ExecError> {
        let sql = self.admitted(sql)?;
        self.bounded(limits, |session, _| {
            let cost = match session.flavor {
                Flavor::MySql => {
                    let plan: Option<String> = session
                        .conn
                        .exec_first(format!("EXPLAIN FORMAT=JSON {sql}"), ())
                        .map_err(Step::Prepare)?;
                    let plan: serde_json::Value = serde_json::from_str(&plan.unwrap_or_default())
                        .map_err(|e| {
                        Step::Fail(ExecErrorKind::Runtime, format!("unreadable plan: {e}"))
                    })?;
                    let cost = &plan["query_block"]["cost_info"]["query_cost"];
                    cost.as_str()
                        .and_then(|cost| cost.parse().ok())
                        .or(cost.as_f64())
                }
                Flavor::MariaDb => {
                    // Prepared, as every statement holding the user's SQL: one statement only.
                    let plan = session.conn.exec_iter(format!("EXPLAIN {sql}"), ());
                    plan.and_then(drain).map_err(Step::Prepare)?;
                    let row: Option<(String, String)> = session
                        .conn
                        .query_first("SHOW SESSION STATUS LIKE 'Last_query_cost'")
                        .map_err(Step::Run)?;
                    row.and_then(|(_, cost)| cost.parse().ok())
                }
            };
            // MariaDB and MySQL leave Last_query_cost at 0 for UNIONs and some subqueries.
            cost.filter(|cost: &f64| *cost > 0.0).ok_or_else(|| {
                Step::Fail(
                    ExecErrorKind::Unavailable,
                    "the server gives no cost for this query (Last_query_cost is 0 for \
                     UNIONs, some subqueries and queries without tables)"
                        .to_string(),
                )
            })
        })
    }
}

impl MySqlConnection {
    /// `sql` as it may run on this server, or why it may not.
    fn admitted<'s>(&mut self, sql: &'s str) -> Result<&'s str, ExecError> {
        let session = match &mut self.session {
            Some(session) => session,
            // A previous statement was killed or lost the connection: a new one.
            session => session.insert(self.server.take(&self.db).map_err(unavailable)?),
        };
        let quoting = admit::Quoting {
            backslash_escapes: !session.conn.no_backslash_escape(),
            ansi_quotes: session.ansi_quotes,
        };
        admit::admit(sql, quoting)
    }
}

fn fetch(
    session: &mut Session,
    sql: &str,
    limits: &Limits,
    killer: &Killer,
    charge: &mut ResultCharge,
) -> Result<ResultSet, Step> {
    let statement = session.conn.prep(sql).map_err(Step::Prepare)?;
    if statement.columns().is_empty() {
        return Err(Step::Fail(
            ExecErrorKind::Denied,
            "the statement is not a query".into(),
        ));
    }
    if !statement.params().is_empty() {
        return Err(Step::Fail(
            ExecErrorKind::Prepare,
            "the statement has parameters (?) that nothing fills".into(),
        ));
    }
    let mut rows = session.conn.exec_iter(&statement, ()).map_err(Step::Run)?;
    // The columns the server sends with this result, not those the client cached when it
    // prepared the statement: a table's columns may have changed since (a state case's
    // `ALTER TABLE`), and the server prepares it again.
    let columns = rows.columns().as_ref().to_vec();
    if let Some(problem) = columns.iter().find_map(values::unsupported) {
        return Err(Step::Fail(ExecErrorKind::Runtime, problem));
    }
    let width = columns.len();
    let mut result = ResultSet {
        columns: columns.iter().map(|c| c.name_str().into_owned()).collect(),
        rows: Vec::new(),
        lossy_text: false,
    };
    let mut bytes = 0usize;
    // Past a bound the rest of the result is not read: the statement is stopped, and the
    // client reads what the server had already sent.
    let stop = |kind, message| {
        killer.kill();
        Err(Step::Fail(kind, message))
    };
    for row in rows.by_ref() {
        let row = row.map_err(Step::Run)?;
        if result.rows.len() == limits.max_rows {
            return stop(
                ExecErrorKind::TooLarge,
                format!("more than {} rows", limits.max_rows),
            );
        }
        bytes += result_bytes(width, 1);
        let mut cells = Vec::with_capacity(width);
        for (column, cell) in columns.iter().zip(row.unwrap()) {
            let (value, heap) =
                values::decode(column, cell, &mut result.lossy_text).map_err(|e| {
                    Step::Fail(
                        ExecErrorKind::Runtime,
                        format!("cannot read column `{}`: {e}", column.name_str()),
                    )
                })?;
            bytes += heap;
            cells.push(value);
        }
        if bytes > limits.max_bytes {
            return stop(
                ExecErrorKind::TooLarge,
                format!(
                    "the result takes more than {} bytes of memory",
                    limits.max_bytes
                ),
            );
        }
        if let Err(error) = charge.cover(bytes) {
            return stop(ExecErrorKind::OutOfMemory, error.to_string());
        }
        result.rows.push(cells);
    }
    Ok(result)
}

/// Runs `sql`, statements of the engine's own, reading every result: `query_drop` would drop
/// the error of a statement with its result.
pub(crate) fn run(conn: &mut Conn, sql: &str) -> Result<(), mysql::Error> {
    drain(conn.query_iter(sql)?)
}

/// Reads every row of every result of `result`, stopping at the first error.
pub(crate) fn drain<P: mysql::prelude::Protocol>(
    mut result: mysql::QueryResult<'_, '_, '_, P>,
) -> Result<(), mysql::Error> {
    while let Some(set) = result.iter() {
        for row in set {
            row?;
        }
    }
    Ok(())
}

/// The server's message as the server writes it (`ERROR 1054 (42S22): Unknown column...`), else
/// the client's.
pub(crate) fn error_text(error: &mysql::Error) -> String {
    match error {
        mysql::Error::MySqlError(server) => server.to_string(),
        error => error.to_string(),
    }
}

/// MySQL's error codes the engine tells apart.
mod code {
    /// A write in a read-only transaction.
    pub const READ_ONLY_TRANSACTION: u16 = 1792;
    /// The server runs `--read-only`.
    pub const READ_ONLY_OPTION: u16 = 1290;
    /// Privileges: database, table, column, global, routine.
    pub const DENIED: [u16; 5] = [1044, 1142, 1143, 1227, 1370];
    /// `KILL QUERY`.
    pub const INTERRUPTED: u16 = 1317;
    /// MariaDB's `max_statement_time`, MySQL's `max_execution_time`.
    pub const TIME_BOUND: [u16; 2] = [1969, 3024];
    /// Out of memory, out of sort memory.
    pub const OUT_OF_MEMORY: [u16; 2] = [1037, 1038];
    /// A temporary table full (`max_heap_table_size`, `tmp_table_size` on disk).
    pub const TABLE_FULL: u16 = 1114;
    /// Too many connections, for the user, and the server shutting down.
    pub const BUSY: [u16; 3] = [1040, 1203, 1053];
}

fn classify(step: Step, deadline: Option<Instant>, killed: bool) -> ExecError {
    let past_deadline = deadline.is_some_and(|d| Instant::now() >= d);
    let (error, prepare) = match step {
        Step::Fail(kind, message) => return ExecError { kind, message },
        Step::Prepare(error) => (error, true),
        Step::Run(error) => (error, false),
    };
    let message = error_text(&error);
    let kind = match &error {
        mysql::Error::MySqlError(server) => match server.code {
            code::READ_ONLY_TRANSACTION | code::READ_ONLY_OPTION => ExecErrorKind::Denied,
            c if code::DENIED.contains(&c) => ExecErrorKind::Denied,
            c if code::TIME_BOUND.contains(&c) => ExecErrorKind::Timeout,
            code::INTERRUPTED if killed && past_deadline => ExecErrorKind::Timeout,
            code::INTERRUPTED => ExecErrorKind::Unavailable,
            c if code::OUT_OF_MEMORY.contains(&c) => ExecErrorKind::OutOfMemory,
            code::TABLE_FULL => ExecErrorKind::TooLarge,
            c if code::BUSY.contains(&c) => ExecErrorKind::Unavailable,
            _ if prepare => ExecErrorKind::Prepare,
            _ => ExecErrorKind::Runtime,
        },
        // The connection failed (closed past the deadline, lost, a protocol error).
        _ if killed && past_deadline => ExecErrorKind::Timeout,
        _ => ExecErrorKind::Unavailable,
    };
    if kind == ExecErrorKind::Timeout {
        return ExecError {
            kind,
            message: "query exceeded its time bound".to_string(),
        };
    }
    ExecError { kind, message }
}
