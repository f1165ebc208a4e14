//! MySQL's and MariaDB's scratch copies: a state case's statements run on a private copy of
//! its database, a database of sqlgate's own (`sqlgate_scratch_` and 16 hex digits) that the
//! `scratch_dsn` user creates, fills from the original and drops when done (docs/state.md).
//!
//! MySQL commits before and after every statement that changes a schema, so a transaction
//! cannot undo a case as it does on PostgreSQL. Instead:
//! - a case whose statements only change rows of InnoDB tables runs in one transaction, rolled
//!   back afterwards; `AUTO_INCREMENT` counters, which a rollback leaves advanced, are set back;
//! - a case that changes a schema (or `TRUNCATE`s, or writes a table that does not roll back)
//!   has the copy rebuilt from the original afterwards: what the server committed is never
//!   vouched for, it is thrown away.
//!
//! The original is only read: the scratch user is refused when it may change it (a privilege
//! beyond reading on the original database, any global one, or a role, whose privileges are
//! not checked), and a statement naming any of sqlgate's scratch databases is refused, as the
//! scratch user reaches every worker's copy. Each copy is held by a lock named after it
//! (`GET_LOCK`) for as long as its session lives: a copy whose lock is free was left by a run
//! that was killed, and the next run drops it.
//!
//! What a copy holds: the original's tables (`SHOW CREATE TABLE`: columns, keys, foreign keys,
//! checks, options) with their rows, and its views. Not its triggers, routines or events: the
//! scratch user cannot read triggers without the `TRIGGER` privilege, which would let it change
//! the original. The tables a script touched are those its statements write (with the tables
//! their foreign keys cascade to), every table when that cannot be told from the statement (a
//! multi-table `UPDATE`, a table with triggers), and those whose catalog entry changed.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::{Conn, Opts};
use sqlgate_engine::memory;
use sqlgate_engine::scratch::modified_table;
use sqlgate_engine::{ExecError, ExecErrorKind, Execution, Limits, Scratch};

use crate::admit::{admit, admit_change, Change, Quoting};
use crate::{
    bound_time, database_name, error_text, fetch, guarded, run, unavailable, Flavor, Server,
    Session, Step,
};

/// The start of every scratch database's name.
pub(crate) const PREFIX: &str = "sqlgate_scratch_";

/// Privileges on every database that let the scratch user change nothing.
const GLOBAL_READING: &[&str] = &["USAGE", "SELECT", "SHOW VIEW", "SHOW DATABASES"];
/// Privileges on the original database (or its tables) that let it change nothing.
const READING: &[&str] = &["SELECT", "SHOW VIEW"];

/// Server error codes after which the case's transaction is no longer the one it began:
/// a deadlock rolls it all back.
const TRANSACTION_LOST: &[u16] = &[1213];
/// A statement the prepared protocol does not take (`CREATE TRIGGER`): sent as text, once
/// admitted as one statement.
const UNSUPPORTED_IN_PREPARED: u16 = 1295;

/// How long the harness's own statements wait for a lock (a statement of a case that was
/// stopped may still hold one).
const HARNESS_LOCK_WAIT: Duration = Duration::from_secs(60);

/// One private copy of a database and the session that owns it.
pub(crate) struct MySqlScratch {
    writer: Server,
    original: String,
    copy: String,
    /// `None` once something happened after which the copy cannot be trusted.
    session: Option<Session>,
    /// How to open the second connection that stops a running statement.
    killer: Opts,
    /// Whether every table rolls back (InnoDB).
    transactional: bool,
    /// The copy's catalog and counters as built.
    baseline: Catalog,
    counters: BTreeMap<String, u64>,
    case: Case,
}

/// What one case did so far.
#[derive(Default)]
struct Case {
    /// Rows may have been written (counters may have moved).
    wrote: bool,
    /// The server committed something: the copy is rebuilt at the reset.
    committed: bool,
    /// A schema changed since the last [`Scratch::take_touched`].
    schema_changed: bool,
    /// Tables whose rows may have changed since the last [`Scratch::take_touched`].
    touched: BTreeSet<String>,
    every_table: bool,
    /// The catalog at the last [`Scratch::take_touched`].
    catalog: Catalog,
    /// The tables, cascades and triggers as the last schema change left them; read again
    /// after one.
    relations: Option<Relations>,
}

/// Each table's and view's catalog entry as text, by name.
type Catalog = BTreeMap<String, String>;

/// What decides which tables a change of rows reaches.
struct Relations {
    /// Base tables' names by their lower-cased names (a statement may spell one either way
    /// where the server ignores case).
    tables: BTreeMap<String, String>,
    /// (parent, child) of each foreign key whose rule changes the child's rows.
    cascades: Vec<(String, String)>,
    /// Whether any table has a trigger (which may write anywhere).
    triggers: bool,
}

fn failure(kind: ExecErrorKind, message: String) -> ExecError {
    ExecError { kind, message }
}

fn harness(what: &str, error: mysql::Error) -> ExecError {
    unavailable(format!("{what}: {}", error_text(&error)))
}

/// Rows of `sql`'s first two columns as text (NULL as empty).
fn pairs(conn: &mut Conn, sql: &str) -> Result<Vec<(String, String)>, mysql::Error> {
    conn.query_map(sql, |(a, b): (Option<String>, Option<String>)| {
        (a.unwrap_or_default(), b.unwrap_or_default())
    })
}

/// A fresh scratch database name.
fn fresh_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.as_nanos()),
    );
    format!("{PREFIX}{:016x}", hasher.finish())
}

fn quoted(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// `text` as a string literal, whatever the session's `sql_mode`.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

impl MySqlScratch {
    /// Connects as the scratch user, checks it, and builds a copy of `db`.
    pub(crate) fn open(server: &Server, db: &Path) -> Result<MySqlScratch, ExecError> {
        let writer = server.0.scratch.clone().ok_or_else(|| {
            unavailable(
                "engine `mysql` runs a state case's statements on a copy made by a user that \
                 may create sqlgate's scratch databases: give its URL template as \
                 `scratch_dsn` (`--scratch-dsn`; docs/state.md)"
                    .to_string(),
            )
        })?;
        let original = database_name(db)?;
        if original.to_ascii_lowercase().starts_with(PREFIX) {
            return Err(failure(
                ExecErrorKind::Denied,
                format!("`{original}` is named as sqlgate's scratch databases are"),
            ));
        }
        let url = writer.url(&original);
        let mut session = writer
            .session(
                None,
                &format!(
                    "SET SESSION group_concat_max_len = 16777216, \
                     SESSION lock_wait_timeout = {}",
                    HARNESS_LOCK_WAIT.as_secs()
                ),
            )
            .map_err(unavailable)?;
        if session.flavor == Flavor::MySql {
            // MySQL caches table statistics (AUTO_INCREMENT among them) for a day.
            run(
                &mut session.conn,
                "SET SESSION information_schema_stats_expiry = 0",
            )
            .map_err(|e| harness("cannot set up the scratch session", e))?;
        }
        check_writer(&mut session.conn, &original, &url)?;
        let copy = fresh_name();
        let locked: Option<i64> = session
            .conn
            .exec_first("SELECT GET_LOCK(?, 0)", (&copy,))
            .map_err(|e| harness("cannot lock a scratch database's name", e))?;
        if locked != Some(1) {
            return Err(unavailable(format!(
                "the lock on scratch database `{copy}` is taken"
            )));
        }
        drop_abandoned(&mut session.conn);
        let killer = writer.opts(None).map_err(unavailable)?;
        let mut scratch = MySqlScratch {
            writer,
            original,
            copy,
            session: Some(session),
            killer,
            transactional: false,
            baseline: Catalog::new(),
            counters: BTreeMap::new(),
            case: Case::default(),
        };
        scratch.build()?;
        Ok(scratch)
    }

    fn session(&mut self) -> Result<&mut Session, ExecError> {
        self.session.as_mut().ok_or_else(|| {
            unavailable("the scratch copy was dropped after a statement was stopped".to_string())
        })
    }

    /// Creates the copy from the original and reads its baseline; on failure the session is
    /// dropped with what it built.
    fn build(&mut self) -> Result<(), ExecError> {
        let (original, copy) = (self.original.clone(), self.copy.clone());
        let result = self
            .session()
            .and_then(|session| fill(&mut session.conn, &original, &copy));
        match result {
            Ok(transactional) => {
                self.transactional = transactional;
                let conn = &mut self.session()?.conn;
                let baseline = catalog(conn).map_err(|e| harness("cannot read the copy", e))?;
                let found = counters(conn).map_err(|e| harness("cannot read the copy", e))?;
                self.baseline = baseline;
                self.counters = found;
                self.case = Case {
                    catalog: self.baseline.clone(),
                    ..Case::default()
                };
                Ok(())
            }
            Err(error) => {
                self.session = None;
                Err(error)
            }
        }
    }

    fn quoting(&mut self) -> Result<Quoting, ExecError> {
        let session = self.session()?;
        Ok(Quoting {
            backslash_escapes: !session.conn.no_backslash_escape(),
            ansi_quotes: session.ansi_quotes,
        })
    }

    /// The tables a write of `table`'s rows reaches: itself and those its foreign keys
    /// cascade to; `None` when that cannot be told (a trigger, not a base table).
    fn reached_by(&mut self, table: Option<&str>) -> Result<Option<BTreeSet<String>>, ExecError> {
        if self.case.relations.is_none() {
            let conn = &mut self.session()?.conn;
            let relations = relations(conn).map_err(|e| harness("cannot read the copy", e))?;
            self.case.relations = Some(relations);
        }
        let Some(relations) = &self.case.relations else {
            return Ok(None);
        };
        let Some(table) = table.and_then(|t| relations.tables.get(&t.to_lowercase())) else {
            return Ok(None);
        };
        if relations.triggers {
            return Ok(None);
        }
        let mut reached = BTreeSet::from([table.clone()]);
        let mut grew = true;
        while grew {
            grew = false;
            for (parent, child) in &relations.cascades {
                if reached.contains(parent) && !reached.contains(child) {
                    reached.insert(child.clone());
                    grew = true;
                }
            }
        }
        Ok(Some(reached))
    }

    /// Runs one admitted statement under `limits`; returns the rows it changed.
    fn execute(&mut self, sql: &str, limits: &Limits) -> Result<u64, ExecError> {
        let deadline = limits.timeout.and_then(|t| Instant::now().checked_add(t));
        let killer = self.killer.clone();
        let session = self.session()?;
        let bound = bound_time(session, deadline);
        let (result, usable) = guarded(session, &killer, deadline, bound, |session, _| {
            let conn = &mut session.conn;
            let changed = match conn.prep(sql) {
                Ok(statement) => {
                    let result = conn.exec_iter(&statement, ()).map_err(Step::Run)?;
                    let changed = result.affected_rows();
                    crate::drain(result).map_err(Step::Run)?;
                    conn.close(statement).map_err(Step::Run)?;
                    changed
                }
                Err(mysql::Error::MySqlError(e)) if e.code == UNSUPPORTED_IN_PREPARED => {
                    let result = conn.query_iter(sql).map_err(Step::Run)?;
                    let changed = result.affected_rows();
                    crate::drain(result).map_err(Step::Run)?;
                    changed
                }
                Err(e) => return Err(Step::Prepare(e)),
            };
            Ok(changed)
        });
        self.after_statement(usable, &result)?;
        result
    }

    /// After a statement of the case: the session is dropped when it cannot go on, and the
    /// harness's own statements are unbounded again.
    fn after_statement<T>(
        &mut self,
        usable: bool,
        result: &Result<T, ExecError>,
    ) -> Result<(), ExecError> {
        let lost = matches!(result, Err(e) if TRANSACTION_LOST.iter().any(|code| e.message.contains(&format!("ERROR {code} "))));
        if !usable || lost {
            self.session = None;
            return Ok(());
        }
        let session = self.session()?;
        bound_time(session, None).map_err(|e| harness("cannot lift the time bound", e))
    }
}

impl Scratch for MySqlScratch {
    fn apply(&mut self, sql: &str, limits: &Limits) -> Result<u64, ExecError> {
        let quoting = self.quoting()?;
        let (sql, change) = admit_change(sql, quoting)?;
        match change {
            Change::Nothing => {}
            Change::Rows { one_table } => {
                self.case.wrote = true;
                if !self.transactional {
                    self.case.committed = true;
                }
                let target = one_table.then(|| modified_table(sql)).flatten();
                match self.reached_by(target.as_deref())? {
                    Some(reached) => self.case.touched.extend(reached),
                    None => self.case.every_table = true,
                }
            }
            Change::Schema | Change::Truncate => {
                // A key or a view of the copy on the original's tables would hold locks on
                // them (MariaDB checks no REFERENCES privilege).
                let lower = sql.to_lowercase();
                let original = self.original.to_lowercase();
                if lower.contains(&format!("{original}."))
                    || lower.contains(&format!("{}.", quoted(&original)))
                {
                    return Err(failure(
                        ExecErrorKind::Denied,
                        format!(
                            "the statement changes the schema with the original database \
                             `{}` named in it: a state case's schema is the copy's own",
                            self.original
                        ),
                    ));
                }
                // The server commits before the statement runs, whether it succeeds or not.
                self.case.committed = true;
                self.case.schema_changed = true;
                self.case.relations = None;
                // TRUNCATE empties a table without changing its catalog entry.
                self.case.every_table |= change == Change::Truncate;
            }
        }
        self.execute(sql, limits)
    }

    fn query(&mut self, sql: &str, limits: &Limits) -> Execution {
        let killer = self.killer.clone();
        let mut usable = true;
        let execution = memory::measured(limits, |deadline, charge| {
            let quoting = self.quoting()?;
            let sql = admit(sql, quoting)?;
            let session = self.session()?;
            let bound = bound_time(session, deadline);
            let (result, still) = guarded(session, &killer, deadline, bound, |session, killer| {
                fetch(session, sql, limits, killer, charge)
            });
            usable = still;
            result
        });
        if let Err(error) = self.after_statement(usable, &Ok::<(), ExecError>(())) {
            return Execution {
                result: Err(error),
                elapsed: execution.elapsed,
            };
        }
        execution
    }

    fn take_touched(&mut self) -> Result<BTreeSet<String>, ExecError> {
        let schema_changed = self.case.schema_changed;
        let conn = &mut self.session()?.conn;
        let now = if schema_changed {
            catalog(conn).map_err(|e| harness("cannot read the copy's catalog", e))?
        } else {
            self.case.catalog.clone()
        };
        let case = &mut self.case;
        let mut touched: BTreeSet<String> = case
            .catalog
            .iter()
            .filter(|(name, text)| now.get(*name) != Some(*text))
            .chain(
                now.iter()
                    .filter(|(name, _)| !case.catalog.contains_key(*name)),
            )
            .map(|(name, _)| name.clone())
            .collect();
        touched.append(&mut case.touched);
        if case.every_table {
            touched.extend(now.keys().cloned());
        }
        case.every_table = false;
        case.schema_changed = false;
        case.catalog = now;
        Ok(touched)
    }

    fn reset(&mut self) -> Result<(), ExecError> {
        let session = self.session()?;
        run(&mut session.conn, "ROLLBACK").map_err(|e| harness("cannot roll back", e))?;
        if self.case.committed {
            let (copy, conn) = (quoted(&self.copy), &mut self.session()?.conn);
            run(conn, &format!("DROP DATABASE {copy}"))
                .map_err(|e| harness("cannot drop the scratch copy", e))?;
            return self.build();
        }
        if self.case.wrote {
            let baseline = self.counters.clone();
            let conn = &mut self.session()?.conn;
            let now = counters(conn).map_err(|e| harness("cannot read the counters", e))?;
            for (table, value) in &baseline {
                if now.get(table) != Some(value) {
                    run(
                        conn,
                        &format!("ALTER TABLE {} AUTO_INCREMENT = {value}", quoted(table)),
                    )
                    .map_err(|e| harness("cannot set an AUTO_INCREMENT counter back", e))?;
                }
            }
        }
        self.case = Case {
            catalog: self.baseline.clone(),
            ..Case::default()
        };
        Ok(())
    }
}

impl Drop for MySqlScratch {
    /// Drops the copy: on its own session, else on a new one once the old one is closed (a
    /// stopped statement may still hold a lock); when that fails too, the next run drops it.
    fn drop(&mut self) {
        let drop_copy = format!("DROP DATABASE IF EXISTS {}", quoted(&self.copy));
        if let Some(mut session) = self.session.take() {
            if run(&mut session.conn, "ROLLBACK").is_ok()
                && run(&mut session.conn, &drop_copy).is_ok()
            {
                // Copies of runs killed while this one began may be free by now.
                drop_abandoned(&mut session.conn);
                return;
            }
        }
        let setup = format!(
            "SET SESSION lock_wait_timeout = {}",
            HARNESS_LOCK_WAIT.as_secs()
        );
        if let Ok(mut session) = self.writer.session(None, &setup) {
            let _ = run(&mut session.conn, &drop_copy);
        }
    }
}

/// Refuses a scratch user that may change the original database `db`.
fn check_writer(conn: &mut Conn, db: &str, url: &str) -> Result<(), ExecError> {
    let checked = |e: mysql::Error| harness(&format!("cannot check the scratch user on {url}"), e);
    let user: Option<String> = conn.query_first("SELECT CURRENT_USER()").map_err(checked)?;
    let user = user.unwrap_or_default();
    let (name, host) = user.rsplit_once('@').unwrap_or((&user, ""));
    let grantee = format!("'{name}'@'{host}'");
    let mut problems = Vec::new();
    let global: Vec<String> = conn
        .exec(
            "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = ?",
            (&grantee,),
        )
        .map_err(checked)?;
    for privilege in global
        .iter()
        .filter(|p| !GLOBAL_READING.contains(&p.as_str()))
    {
        problems.push(format!("holds {privilege} on every database"));
    }
    let schema: Vec<(String, String)> = conn
        .exec(
            "SELECT TABLE_SCHEMA, PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES \
             WHERE GRANTEE = ?",
            (&grantee,),
        )
        .map_err(checked)?;
    let on_original = |(pattern, privilege): &&(String, String)| {
        covers(pattern, db) && !READING.contains(&privilege.as_str())
    };
    for (pattern, privilege) in schema.iter().filter(on_original) {
        problems.push(format!("holds {privilege} on `{pattern}`"));
    }
    let tables: Vec<(String, String)> = conn
        .exec(
            "SELECT TABLE_NAME, PRIVILEGE_TYPE FROM information_schema.TABLE_PRIVILEGES \
             WHERE GRANTEE = ? AND TABLE_SCHEMA = ? \
             UNION ALL SELECT CONCAT(TABLE_NAME, '.', COLUMN_NAME), PRIVILEGE_TYPE \
             FROM information_schema.COLUMN_PRIVILEGES WHERE GRANTEE = ? AND TABLE_SCHEMA = ?",
            (&grantee, db, &grantee, db),
        )
        .map_err(checked)?;
    for (table, privilege) in tables.iter().filter(|(_, p)| p != "SELECT") {
        problems.push(format!("holds {privilege} on `{table}`"));
    }
    let roles: Option<i64> = conn
        .query_first("SELECT COUNT(*) FROM information_schema.APPLICABLE_ROLES")
        .map_err(checked)?;
    if roles.unwrap_or_default() > 0 {
        problems.push("has roles (sqlgate does not check what they grant)".to_string());
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(failure(
        ExecErrorKind::Denied,
        format!(
            "state cases cannot run as {user} on {url}: it {}, and could change the original \
             database `{db}` (docs/mysql-scratch.sql sets up a scratch user)",
            problems.join("; ")
        ),
    ))
}

/// Whether a database-level grant's `pattern` (`_` and `%` wildcards, `\\` escaping them)
/// covers database `db`, ignoring case as a server may.
fn covers(pattern: &str, db: &str) -> bool {
    enum Part {
        Any,
        One,
        Char(char),
    }
    let mut parts = Vec::new();
    let mut chars = pattern.chars().flat_map(char::to_lowercase);
    while let Some(c) = chars.next() {
        parts.push(match c {
            '%' => Part::Any,
            '_' => Part::One,
            '\\' => Part::Char(chars.next().unwrap_or('\\')),
            c => Part::Char(c),
        });
    }
    let name: Vec<char> = db.chars().flat_map(char::to_lowercase).collect();
    // matched[j]: the parts read so far match the name's first j characters (linear in each,
    // whatever the wildcards).
    let mut matched = vec![false; name.len() + 1];
    matched[0] = true;
    for part in &parts {
        let mut next = vec![false; name.len() + 1];
        for j in 0..=name.len() {
            next[j] = match part {
                Part::Any => matched[j] || (j > 0 && next[j - 1]),
                Part::One => j > 0 && matched[j - 1],
                Part::Char(c) => j > 0 && matched[j - 1] && name[j - 1] == *c,
            };
        }
        matched = next;
    }
    matched[name.len()]
}

/// Drops the scratch databases whose lock no session holds: left by runs that were killed.
/// Best effort: a run that cannot clean up still runs.
fn drop_abandoned(conn: &mut Conn) {
    let Ok(names) = conn.query::<String, _>("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA")
    else {
        return;
    };
    for name in names {
        let ours = name
            .strip_prefix(PREFIX)
            .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
        if !ours {
            continue;
        }
        let free: Result<Option<i64>, _> = conn.exec_first("SELECT IS_FREE_LOCK(?)", (&name,));
        if matches!(free, Ok(Some(1))) {
            let _ = run(conn, &format!("DROP DATABASE IF EXISTS {}", quoted(&name)));
        }
    }
}

/// Creates `copy` as a copy of `original` and makes it the session's database, in autocommit
/// off; returns whether every table rolls back.
fn fill(conn: &mut Conn, original: &str, copy: &str) -> Result<bool, ExecError> {
    let read = |e: mysql::Error| harness(&format!("cannot read database `{original}`"), e);
    let write = |e: mysql::Error| harness(&format!("cannot build scratch copy `{copy}`"), e);
    let charset: Option<(String, String)> = conn
        .exec_first(
            "SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME \
             FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
            (original,),
        )
        .map_err(read)?;
    let Some((charset, collation)) = charset else {
        return Err(unavailable(format!(
            "database `{original}` does not exist, or the scratch user cannot read it"
        )));
    };
    let mode: Option<String> = conn
        .query_first("SELECT @@SESSION.sql_mode")
        .map_err(read)?;
    run(
        conn,
        &format!(
            "CREATE DATABASE {} CHARACTER SET {} COLLATE {}",
            quoted(copy),
            quoted(&charset),
            quoted(&collation)
        ),
    )
    .map_err(write)?;
    conn.select_db(copy).map_err(write)?;
    // Rows as they are: no key checked (SQLite leaves them unchecked too), no 0 read as "the
    // next AUTO_INCREMENT value".
    run(
        conn,
        "SET SESSION foreign_key_checks = 0, SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO', \
         SESSION autocommit = 1",
    )
    .map_err(write)?;
    let objects: Vec<(String, String, Option<String>)> = conn
        .exec(
            "SELECT TABLE_NAME, TABLE_TYPE, ENGINE FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME",
            (original,),
        )
        .map_err(read)?;
    let mut transactional = true;
    let mut views = Vec::new();
    for (name, kind, engine) in objects {
        match kind.as_str() {
            "BASE TABLE" => {
                transactional &= engine.is_some_and(|e| e.eq_ignore_ascii_case("InnoDB"));
                copy_table(conn, original, &name).map_err(write)?;
            }
            "VIEW" => views.push(name),
            other => {
                return Err(unavailable(format!(
                    "`{original}`.`{name}` is a {other}: a scratch copy holds tables and views"
                )))
            }
        }
    }
    copy_views(conn, original, copy, views)?;
    run(
        conn,
        &format!(
            "SET SESSION foreign_key_checks = 1, SESSION sql_mode = {}, SESSION autocommit = 0",
            literal(&mode.unwrap_or_default())
        ),
    )
    .map_err(write)?;
    Ok(transactional)
}

/// Creates `name` in the session's database as the original's `SHOW CREATE TABLE` says, and
/// copies its rows (every column but generated ones).
fn copy_table(conn: &mut Conn, original: &str, name: &str) -> Result<(), mysql::Error> {
    let source = format!("{}.{}", quoted(original), quoted(name));
    let create: Option<(String, String)> =
        conn.query_first(format!("SHOW CREATE TABLE {source}"))?;
    run(conn, &create.unwrap_or_default().1)?;
    let columns: Vec<String> = conn.exec(
        "SELECT COLUMN_NAME FROM information_schema.COLUMNS \
         WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND EXTRA NOT LIKE '%VIRTUAL GENERATED%' \
         AND EXTRA NOT LIKE '%STORED GENERATED%' AND EXTRA NOT LIKE '%PERSISTENT GENERATED%' \
         ORDER BY ORDINAL_POSITION",
        (original, name),
    )?;
    let columns: Vec<String> = columns.iter().map(|c| quoted(c)).collect();
    let columns = columns.join(", ");
    run(
        conn,
        &format!(
            "INSERT INTO {} ({columns}) SELECT {columns} FROM {source}",
            quoted(name)
        ),
    )
}

/// Creates the original's views in the session's database, each reading the copy's tables;
/// a view reading another view waits for it.
fn copy_views(
    conn: &mut Conn,
    original: &str,
    copy: &str,
    mut views: Vec<String>,
) -> Result<(), ExecError> {
    let mut last_error = None;
    while !views.is_empty() {
        let before = views.len();
        let mut waiting = Vec::new();
        for name in views {
            let found: Option<(Option<String>, String)> = conn
                .exec_first(
                    "SELECT VIEW_DEFINITION, CHECK_OPTION FROM information_schema.VIEWS \
                     WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
                    (original, &name),
                )
                .map_err(|e| harness(&format!("cannot read view `{name}`"), e))?;
            let (definition, check) = found.unwrap_or_default();
            let definition = definition.filter(|d| !d.is_empty()).ok_or_else(|| {
                unavailable(format!(
                    "cannot read the definition of view `{original}`.`{name}`: the scratch \
                     user needs SHOW VIEW on `{original}` (docs/mysql-scratch.sql)"
                ))
            })?;
            // The server writes every name qualified by the original's database.
            let definition = definition.replace(
                &format!("{}.", quoted(original)),
                &format!("{}.", quoted(copy)),
            );
            let check = match check.as_str() {
                "CASCADED" | "LOCAL" => format!(" WITH {check} CHECK OPTION"),
                _ => String::new(),
            };
            let created = run(
                conn,
                &format!("CREATE VIEW {} AS {definition}{check}", quoted(&name)),
            );
            if let Err(error) = created {
                last_error = Some(format!("view `{name}`: {}", error_text(&error)));
                waiting.push(name);
            }
        }
        if waiting.len() == before {
            return Err(unavailable(format!(
                "cannot build scratch copy `{copy}`: {}",
                last_error.unwrap_or_default()
            )));
        }
        views = waiting;
    }
    Ok(())
}

/// The session database's catalog: each table's and view's kind, storage, columns, indexes,
/// constraints, view definition and triggers, as text.
fn catalog(conn: &mut Conn) -> Result<Catalog, mysql::Error> {
    const PARTS: [&str; 7] = [
        "SELECT TABLE_NAME, CONCAT_WS(' ', TABLE_TYPE, ENGINE, TABLE_COLLATION, CREATE_OPTIONS) \
         FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()",
        "SELECT TABLE_NAME, CONCAT_WS(' ', COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, \
         COLUMN_DEFAULT, EXTRA, COLLATION_NAME) FROM information_schema.COLUMNS \
         WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, ORDINAL_POSITION",
        "SELECT TABLE_NAME, CONCAT_WS(' ', INDEX_NAME, NON_UNIQUE, SEQ_IN_INDEX, COLUMN_NAME, \
         SUB_PART) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() \
         ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX",
        "SELECT TABLE_NAME, CONCAT_WS(' ', CONSTRAINT_NAME, CONSTRAINT_TYPE) \
         FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() \
         ORDER BY TABLE_NAME, CONSTRAINT_NAME",
        "SELECT TABLE_NAME, CONCAT_WS(' ', CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, \
         REFERENCED_COLUMN_NAME) FROM information_schema.KEY_COLUMN_USAGE \
         WHERE TABLE_SCHEMA = DATABASE() AND REFERENCED_TABLE_NAME IS NOT NULL \
         ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION",
        "SELECT TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS \
         WHERE TABLE_SCHEMA = DATABASE()",
        "SELECT EVENT_OBJECT_TABLE, CONCAT_WS(' ', TRIGGER_NAME, ACTION_TIMING, \
         EVENT_MANIPULATION, ACTION_STATEMENT) FROM information_schema.TRIGGERS \
         WHERE TRIGGER_SCHEMA = DATABASE() ORDER BY 1, 2",
    ];
    let mut catalog = Catalog::new();
    for (part, sql) in PARTS.iter().enumerate() {
        for (name, text) in pairs(conn, sql)? {
            let entry = catalog.entry(name).or_default();
            entry.push_str(&format!("{part}: {text}\n"));
        }
    }
    Ok(catalog)
}

/// Each table's next `AUTO_INCREMENT` value.
fn counters(conn: &mut Conn) -> Result<BTreeMap<String, u64>, mysql::Error> {
    conn.query_map(
        "SELECT TABLE_NAME, AUTO_INCREMENT FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = DATABASE() AND AUTO_INCREMENT IS NOT NULL",
        |(name, value): (String, u64)| (name, value),
    )
    .map(|rows| rows.into_iter().collect())
}

/// The session database's base tables, cascading foreign keys and whether it has triggers.
fn relations(conn: &mut Conn) -> Result<Relations, mysql::Error> {
    let tables = pairs(
        conn,
        "SELECT TABLE_NAME, '' FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'",
    )?
    .into_iter()
    .map(|(name, _)| (name.to_lowercase(), name))
    .collect();
    let cascades = conn.query_map(
        "SELECT REFERENCED_TABLE_NAME, TABLE_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS \
         WHERE CONSTRAINT_SCHEMA = DATABASE() \
         AND (UPDATE_RULE NOT IN ('RESTRICT', 'NO ACTION') \
              OR DELETE_RULE NOT IN ('RESTRICT', 'NO ACTION'))",
        |(parent, child): (String, String)| (parent, child),
    )?;
    let triggers: Option<i64> = conn.query_first(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()",
    )?;
    Ok(Relations {
        tables,
        cascades,
        triggers: triggers.unwrap_or_default() > 0,
    })
}

#[cfg(test)]
mod tests {
    use super::covers;

    #[test]
    fn a_grant_pattern_covers_the_databases_its_wildcards_match() {
        for (pattern, db, covered) in [
            ("bookshop", "bookshop", true),
            ("BookShop", "bookshop", true),
            ("book%", "bookshop", true),
            ("%", "anything", true),
            ("b_okshop", "bookshop", true),
            ("sqlgate\\_scratch\\_%", "sqlgate_scratch_00ff", true),
            ("sqlgate\\_scratch\\_%", "sqlgateXscratch_00ff", false),
            ("sqlgate\\_scratch\\_%", "bookshop", false),
            ("bookshop_", "bookshop", false),
            ("", "bookshop", false),
            (
                "%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%x",
                "bookshop",
                false,
            ),
            (
                "%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%b",
                &"a".repeat(64),
                false,
            ),
            ("trailing\\", "trailing\\", true),
        ] {
            assert_eq!(covers(pattern, db), covered, "{pattern} / {db}");
        }
    }
}
