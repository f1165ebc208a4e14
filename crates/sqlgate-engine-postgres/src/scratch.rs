//! PostgreSQL's scratch copies: a state case's statements run in a transaction on the database
//! itself, as a role that may write (`scratch_dsn`), and the transaction is always rolled back:
//! by [`Scratch::reset`], or by the server when the connection drops, so a killed run changes
//! nothing. PostgreSQL's DDL is transactional: no copy is made, and a case costs a few queries.
//!
//! What a rollback does not undo is put back, or the session is refused:
//! - sequences (`nextval` is never rolled back): each database's sequences are read when the
//!   process opens its first scratch session there, and set back to those values when each
//!   case begins and before each rollback, so the gold's and the answer's inserts draw the
//!   same numbers and the database ends as it began;
//! - session-level advisory locks: released at each reset;
//! - a role that could reach beyond the database (a superuser, `CREATEROLE`, replication,
//!   bypassing row security, the server-file roles) or an installed extension that opens
//!   sessions of its own (`dblink`, `postgres_fdw`: their work a rollback here does not undo)
//!   refuses the session.
//!
//! Scratch sessions on one database take turns (a transaction-level advisory lock, which holds
//! across processes too), so two cases never wait on each other's row locks in a cycle.
//! Queries of other cases run beside them and see nothing uncommitted; a table a state case
//! alters stays locked until its case ends.
//!
//! Each statement runs inside a savepoint, so a failed one (a missing table while the state is
//! read) leaves the transaction usable. A session is a thread of its own holding the
//! connection and its open transaction (a `postgres::Transaction` borrows its client), driven
//! by the calls of [`Scratch`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use postgres::error::SqlState;
use postgres::{Client, Transaction};

use sqlgate_engine::{ExecError, ExecErrorKind, Execution, Limits, Scratch};

use crate::server::{admit, bound_time, classify, error_text, fetch, Server, Step};

/// Each database's sequences as this process first found them, by database name.
pub(crate) type Baselines = Arc<Mutex<HashMap<String, Arc<Vec<Sequence>>>>>;

/// A sequence's state: the value `setval` takes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sequence {
    /// Its name, schema-qualified and quoted as `regclass` reads it.
    name: String,
    value: i64,
    is_called: bool,
}

/// The advisory lock key scratch sessions take turns with: "sqlgate" in ASCII.
const TURN_KEY: i64 = 0x0073_716c_6761_7465;
/// How long a session waits for its turn before its case fails as unavailable
/// ([`harness_time`]).
const TURN_WAIT: Duration = Duration::from_secs(600);

/// Sets the time bound of the harness's own statements (waiting for a turn, reading the
/// catalog, putting sequences back) to [`TURN_WAIT`]: set again after each statement of a
/// case, which runs within the time its case has left.
fn harness_time() -> String {
    format!("SET LOCAL statement_timeout = {}", TURN_WAIT.as_millis())
}

/// The sequences the role may read and advance, in the schemas a statement sees.
const SEQUENCES: &str = "SELECT format('%I.%I', schemaname, sequencename), \
     coalesce(last_value, start_value), last_value IS NOT NULL FROM pg_sequences \
     WHERE schemaname = ANY (current_schemas(false)) \
     AND has_sequence_privilege(format('%I.%I', schemaname, sequencename), 'USAGE, SELECT') \
     ORDER BY 1";

/// Each table and view a statement sees, with what a change of its schema or storage changes:
/// kind, storage file (new after TRUNCATE or a rewrite), columns, indexes, constraints,
/// triggers and a view's definition.
const CATALOG: &str = "SELECT c.relname::text, concat_ws(' | ', c.relkind::text, \
     c.relfilenode::text, \
     (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) \
         || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END \
         || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), ''), ', ' ORDER BY a.attnum) \
      FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
      WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), \
     (SELECT string_agg(pg_get_indexdef(i.indexrelid), '; ' ORDER BY pg_get_indexdef(i.indexrelid)) \
      FROM pg_index i WHERE i.indrelid = c.oid), \
     (SELECT string_agg(pg_get_constraintdef(k.oid), '; ' ORDER BY pg_get_constraintdef(k.oid)) \
      FROM pg_constraint k WHERE k.conrelid = c.oid), \
     (SELECT string_agg(t.tgname::text, ', ' ORDER BY t.tgname) FROM pg_trigger t \
      WHERE t.tgrelid = c.oid AND NOT t.tgisinternal), \
     CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END) \
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
     WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname = ANY (current_schemas(false))";

/// Rows inserted, updated and deleted in each table so far in this transaction.
const CHANGES: &str = "SELECT relname::text, concat_ws(' ', n_tup_ins, n_tup_upd, n_tup_del) \
     FROM pg_stat_xact_user_tables WHERE schemaname = ANY (current_schemas(false))";

/// The rows the transaction changed so far, in all tables.
const CHANGED_ROWS: &str = "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint \
     FROM pg_stat_xact_user_tables";

enum Command {
    Apply(String, Limits),
    Query(String, Limits),
    TakeTouched,
    Reset,
}

enum Reply {
    Applied(Result<u64, ExecError>),
    Queried(Execution),
    Touched(Result<BTreeSet<String>, ExecError>),
    Reset(Result<(), ExecError>),
}

/// A scratch session on one database: a thread holding the connection.
pub(crate) struct PgScratch {
    commands: Option<Sender<Command>>,
    replies: Receiver<Reply>,
    thread: Option<JoinHandle<()>>,
}

fn failure(kind: ExecErrorKind, message: String) -> ExecError {
    ExecError { kind, message }
}

fn ran(error: postgres::Error) -> ExecError {
    classify(Step::Run(error))
}

impl PgScratch {
    /// Connects to `db` as the scratch role, checks the role and reads the sequences'
    /// baseline (once per database and process).
    pub(crate) fn open(server: &Server, db: &str) -> Result<PgScratch, ExecError> {
        let url = server.scratch_url(db).ok_or_else(|| {
            failure(
                ExecErrorKind::Unavailable,
                "engine `postgres` runs a state case's statements as a role that may write: \
                 give its URL template as `scratch_dsn` (`--scratch-dsn`; docs/state.md)"
                    .to_string(),
            )
        })?;
        let mut client = server
            .connect_url(url.clone())
            .map_err(|e| failure(ExecErrorKind::Unavailable, e.to_string()))?;
        client
            .batch_execute("SET TIME ZONE 'UTC'; SET idle_in_transaction_session_timeout = '10min'")
            .map_err(|e| {
                failure(
                    ExecErrorKind::Unavailable,
                    format!("cannot set up the session on {url}: {}", error_text(&e)),
                )
            })?;
        check_writer(&mut client, &url)?;
        let sequences = baseline(server, db, &mut client)?;
        let (commands, inbox) = channel();
        let (outbox, replies) = channel();
        let thread = std::thread::Builder::new()
            .name("sqlgate-pg-scratch".into())
            .spawn(move || serve(client, &sequences, &inbox, &outbox))
            .map_err(|e| {
                failure(
                    ExecErrorKind::Unavailable,
                    format!("cannot start a scratch session: {e}"),
                )
            })?;
        Ok(PgScratch {
            commands: Some(commands),
            replies,
            thread: Some(thread),
        })
    }

    fn ask(&mut self, command: Command) -> Option<Reply> {
        self.commands.as_ref()?.send(command).ok()?;
        self.replies.recv().ok()
    }
}

fn session_ended() -> ExecError {
    failure(
        ExecErrorKind::Unavailable,
        "the scratch session ended".to_string(),
    )
}

impl Scratch for PgScratch {
    fn apply(&mut self, sql: &str, limits: &Limits) -> Result<u64, ExecError> {
        match self.ask(Command::Apply(sql.to_string(), *limits)) {
            Some(Reply::Applied(result)) => result,
            _ => Err(session_ended()),
        }
    }

    fn query(&mut self, sql: &str, limits: &Limits) -> Execution {
        match self.ask(Command::Query(sql.to_string(), *limits)) {
            Some(Reply::Queried(execution)) => execution,
            _ => Execution {
                result: Err(session_ended()),
                elapsed: Duration::ZERO,
            },
        }
    }

    fn take_touched(&mut self) -> Result<BTreeSet<String>, ExecError> {
        match self.ask(Command::TakeTouched) {
            Some(Reply::Touched(result)) => result,
            _ => Err(session_ended()),
        }
    }

    fn reset(&mut self) -> Result<(), ExecError> {
        match self.ask(Command::Reset) {
            Some(Reply::Reset(result)) => result,
            _ => Err(session_ended()),
        }
    }
}

impl Drop for PgScratch {
    /// Ends the session: an open transaction is rolled back, its sequences put back.
    fn drop(&mut self) {
        self.commands = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Refuses a role or a database where a rollback would not undo everything a statement may do.
fn check_writer(client: &mut Client, url: &str) -> Result<(), ExecError> {
    let row = client
        .query_one(
            "SELECT current_user::text, rolsuper, rolcreaterole, rolreplication, rolbypassrls, \
                    pg_has_role('pg_read_server_files', 'MEMBER'), \
                    pg_has_role('pg_write_server_files', 'MEMBER'), \
                    pg_has_role('pg_execute_server_program', 'MEMBER'), \
                    EXISTS (SELECT FROM pg_roles r WHERE r.rolsuper \
                            AND r.rolname <> current_user \
                            AND pg_has_role(current_user, r.oid, 'MEMBER')), \
                    (SELECT string_agg(extname::text, ', ' ORDER BY extname) FROM pg_extension \
                     WHERE extname IN ('dblink', 'postgres_fdw')) \
             FROM pg_roles WHERE rolname = current_user",
            &[],
        )
        .map_err(|e| {
            failure(
                ExecErrorKind::Unavailable,
                format!("cannot check the scratch role on {url}: {}", error_text(&e)),
            )
        })?;
    let role: String = row.get(0);
    let mut problems: Vec<String> = [
        (1, "is a superuser"),
        (2, "may create roles"),
        (3, "may start replication"),
        (4, "bypasses row security"),
        (5, "may read server files (pg_read_server_files)"),
        (6, "may write server files (pg_write_server_files)"),
        (7, "may run server programs (pg_execute_server_program)"),
        (8, "may become a superuser (SET ROLE)"),
    ]
    .into_iter()
    .filter(|(column, _)| row.get::<_, bool>(*column))
    .map(|(_, what)| format!("role `{role}` {what}"))
    .collect();
    if let Some(extensions) = row.get::<_, Option<String>>(9) {
        problems.push(format!(
            "the database has extension(s) that open sessions of their own: {extensions}"
        ));
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(failure(
        ExecErrorKind::Denied,
        format!(
            "state cases cannot run on {url}: {}; a rolled-back transaction would not undo \
             what a statement could do there (docs/state.md sets up a scratch role)",
            problems.join("; ")
        ),
    ))
}

/// The sequences of `db` as this process first found them, read now when this is its first
/// scratch session there.
fn baseline(
    server: &Server,
    db: &str,
    client: &mut Client,
) -> Result<Arc<Vec<Sequence>>, ExecError> {
    let mut known = server
        .sequences
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(found) = known.get(db) {
        return Ok(found.clone());
    }
    let found = Arc::new(read_sequences(client).map_err(ran)?);
    known.insert(db.to_string(), found.clone());
    Ok(found)
}

fn read_sequences(
    client: &mut impl postgres::GenericClient,
) -> Result<Vec<Sequence>, postgres::Error> {
    Ok(client
        .query(SEQUENCES, &[])?
        .iter()
        .map(|row| Sequence {
            name: row.get(0),
            value: row.get(1),
            is_called: row.get(2),
        })
        .collect())
}

/// Sets each sequence that moved since `baseline` back (`setval` is not transactional).
fn restore(
    client: &mut impl postgres::GenericClient,
    baseline: &[Sequence],
) -> Result<(), ExecError> {
    let now = read_sequences(client).map_err(ran)?;
    for sequence in baseline.iter().filter(|s| !now.contains(s)) {
        client
            .execute(
                "SELECT setval($1::text::regclass, $2, $3)",
                &[&sequence.name, &sequence.value, &sequence.is_called],
            )
            .map_err(|e| {
                failure(
                    ExecErrorKind::Unavailable,
                    format!(
                        "cannot set sequence {} back to {}: {} (the scratch role needs UPDATE \
                         on the database's sequences)",
                        sequence.name,
                        sequence.value,
                        error_text(&e)
                    ),
                )
            })?;
    }
    Ok(())
}

/// Name to text of each row of `sql`'s two text columns.
fn named(tx: &mut Transaction<'_>, sql: &str) -> Result<BTreeMap<String, String>, ExecError> {
    Ok(tx
        .query(sql, &[])
        .map_err(ran)?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect())
}

/// The thread of a session: each case's transaction opens at its first command and ends at
/// [`Command::Reset`] or when the session is dropped.
fn serve(
    mut client: Client,
    sequences: &[Sequence],
    inbox: &Receiver<Command>,
    outbox: &Sender<Reply>,
) {
    while let Ok(first) = inbox.recv() {
        if matches!(first, Command::Reset) {
            // Nothing ran since the last reset.
            if outbox.send(Reply::Reset(Ok(()))).is_err() {
                return;
            }
            continue;
        }
        let mut case = match Case::begin(&mut client, sequences) {
            Ok(case) => case,
            Err(error) => {
                let reply = match first {
                    Command::Apply(..) => Reply::Applied(Err(error)),
                    Command::Query(..) => Reply::Queried(Execution {
                        result: Err(error),
                        elapsed: Duration::ZERO,
                    }),
                    Command::TakeTouched => Reply::Touched(Err(error)),
                    Command::Reset => Reply::Reset(Ok(())),
                };
                if outbox.send(reply).is_err() {
                    return;
                }
                continue;
            }
        };
        let mut next = Some(first);
        loop {
            let command = match next.take() {
                Some(command) => command,
                None => match inbox.recv() {
                    Ok(command) => command,
                    // The session was dropped: roll back, put the sequences back.
                    Err(_) => {
                        let _ = ended(case.end(sequences), &mut client, sequences);
                        return;
                    }
                },
            };
            let reply = match command {
                Command::Apply(sql, limits) => Reply::Applied(case.apply(&sql, &limits)),
                Command::Query(sql, limits) => Reply::Queried(case.query(&sql, &limits)),
                Command::TakeTouched => Reply::Touched(case.take_touched()),
                Command::Reset => {
                    let result = ended(case.end(sequences), &mut client, sequences);
                    if outbox.send(Reply::Reset(result)).is_err() {
                        return;
                    }
                    break;
                }
            };
            if outbox.send(reply).is_err() {
                let _ = ended(case.end(sequences), &mut client, sequences);
                return;
            }
        }
    }
}

/// How a case ended; when that failed, the sequences are put back and session locks released
/// on the client, outside any transaction, and the failure is returned: the session is dropped.
fn ended(
    ended: Result<(), ExecError>,
    client: &mut Client,
    sequences: &[Sequence],
) -> Result<(), ExecError> {
    if ended.is_err() {
        let _ = restore(client, sequences);
        let _ = client.batch_execute("SELECT pg_advisory_unlock_all()");
    }
    ended
}

/// One case's transaction.
struct Case<'a> {
    tx: Transaction<'a>,
    /// `transaction_timestamp()` when it began: another value means it ended.
    began: String,
    /// The catalog and the rows changed at the last [`Case::take_touched`].
    catalog: BTreeMap<String, String>,
    changes: BTreeMap<String, String>,
    /// A statement ended the transaction: nothing more runs, and the session is dropped.
    broken: bool,
}

impl<'a> Case<'a> {
    /// Opens the transaction, waits for this database's turn and puts the sequences back.
    fn begin(client: &'a mut Client, sequences: &[Sequence]) -> Result<Case<'a>, ExecError> {
        let mut tx = client.transaction().map_err(ran)?;
        tx.batch_execute(&harness_time()).map_err(ran)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&TURN_KEY])
            .map_err(|e| match e.code() {
                Some(code) if *code == SqlState::QUERY_CANCELED => failure(
                    ExecErrorKind::Unavailable,
                    format!(
                        "another scratch session held this database for more than {} s",
                        TURN_WAIT.as_secs()
                    ),
                ),
                _ => ran(e),
            })?;
        restore(&mut tx, sequences)?;
        let began: String = tx
            .query_one("SELECT transaction_timestamp()::text", &[])
            .map_err(ran)?
            .get(0);
        let catalog = named(&mut tx, CATALOG)?;
        let changes = named(&mut tx, CHANGES)?;
        Ok(Case {
            tx,
            began,
            catalog,
            changes,
            broken: false,
        })
    }

    fn usable(&self) -> Result<(), ExecError> {
        if self.broken {
            return Err(failure(
                ExecErrorKind::Denied,
                "a statement ended the scratch session's transaction".to_string(),
            ));
        }
        Ok(())
    }

    fn changed_rows(&mut self) -> Result<u64, ExecError> {
        let count: i64 = self.tx.query_one(CHANGED_ROWS, &[]).map_err(ran)?.get(0);
        Ok(count.max(0) as u64)
    }

    fn apply(&mut self, sql: &str, limits: &Limits) -> Result<u64, ExecError> {
        self.usable()?;
        admit(sql).map_err(classify)?;
        let deadline = limits.timeout.and_then(|t| Instant::now().checked_add(t));
        let before = self.changed_rows()?;
        {
            let mut statement = self.tx.savepoint("sqlgate_statement").map_err(ran)?;
            bound_time(&mut statement, deadline).map_err(ran)?;
            let prepared = statement
                .prepare(sql)
                .map_err(|e| classify(Step::Prepare(e)))?;
            statement.execute(&prepared, &[]).map_err(ran)?;
            statement.commit().map_err(ran)?;
        }
        self.tx.batch_execute(&harness_time()).map_err(ran)?;
        let now: String = self
            .tx
            .query_one("SELECT transaction_timestamp()::text", &[])
            .map_err(ran)?
            .get(0);
        if now != self.began {
            self.broken = true;
            return self.usable().map(|()| 0);
        }
        Ok(self.changed_rows()?.saturating_sub(before))
    }

    fn query(&mut self, sql: &str, limits: &Limits) -> Execution {
        if let Err(error) = self.usable() {
            return Execution {
                result: Err(error),
                elapsed: Duration::ZERO,
            };
        }
        let tx = &mut self.tx;
        sqlgate_engine::memory::measured(limits, |deadline, charge| {
            let mut query = tx.savepoint("sqlgate_query").map_err(ran)?;
            let rows = fetch(&mut query, sql, limits, deadline, charge).map_err(classify)?;
            query.commit().map_err(ran)?;
            tx.batch_execute(&harness_time()).map_err(ran)?;
            Ok(rows)
        })
    }

    /// The tables and views whose schema, storage or rows changed since the last call.
    fn take_touched(&mut self) -> Result<BTreeSet<String>, ExecError> {
        self.usable()?;
        let catalog = named(&mut self.tx, CATALOG)?;
        let changes = named(&mut self.tx, CHANGES)?;
        let differs = |then: &BTreeMap<String, String>, now: &BTreeMap<String, String>| {
            then.iter()
                .filter(|(name, text)| now.get(*name) != Some(*text))
                .chain(now.iter().filter(|(name, _)| !then.contains_key(*name)))
                .map(|(name, _)| name.clone())
                .collect::<BTreeSet<String>>()
        };
        let mut touched = differs(&self.catalog, &catalog);
        touched.extend(differs(&self.changes, &changes));
        self.catalog = catalog;
        self.changes = changes;
        Ok(touched)
    }

    /// Puts the sequences back, releases session advisory locks and rolls back.
    fn end(mut self, sequences: &[Sequence]) -> Result<(), ExecError> {
        let restored = self.usable().and_then(|()| {
            restore(&mut self.tx, sequences)?;
            self.tx
                .batch_execute("SELECT pg_advisory_unlock_all()")
                .map_err(ran)
        });
        let rolled_back = self.tx.rollback().map_err(ran);
        restored.and(rolled_back)
    }
}
