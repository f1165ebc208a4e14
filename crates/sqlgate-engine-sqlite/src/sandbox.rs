//! One read-only, bounded SQLite connection for untrusted SQL.
//!
//! Predicted SQL is hostile input. Defence in depth:
//! - the file is opened read-only, and reads what `sqlite3` would read: committed WAL content
//!   included, a hot journal left by a crashed writer refused (see `open_uri`);
//! - ATTACH is impossible (`SQLITE_LIMIT_ATTACHED = 0`) and loading extensions stays off;
//! - an authorizer allows only reads, functions other than `load_extension`, recursive CTEs and
//!   a few introspection PRAGMAs; everything else is denied at prepare time;
//! - a statement that is not read-only is refused before it runs;
//! - a progress handler stops a statement past its bound on virtual-machine steps, which does
//!   not depend on the machine's speed (`Limits::max_steps`);
//! - a watchdog thread interrupts a statement past its deadline, while it prepares or steps, and
//!   rows and bytes (values and their containers) are counted while reading so a huge result
//!   stops early;
//! - a prediction's temporary tables and sorts stay in memory, bounded by the process's memory
//!   budget ([`memory`]), so a runaway cartesian `ORDER BY` cannot fill the disk; gold SQL,
//!   written by the suite's authors, sorts as `sqlite3` does: in one buffer, spilling to
//!   temporary files past the page cache's size (in-memory sorts allocate every row apart, and
//!   all threads then queue on SQLite's one memory-statistics lock: a large gold sort runs about
//!   twice as fast this way, and scales with cores).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OpenFlags, StatementStatus};

use sqlgate_engine::limits::{result_bytes, MAX_SQL_BYTES};
use sqlgate_engine::memory::{self, ResultCharge};
use sqlgate_engine::{
    watchdog, ExecError, ExecErrorKind, Execution, Limits, ResultSet, Source, Value,
};

use crate::sidecar;

/// The longest string or blob a query may build (`zeroblob(1e9)`, `printf('%.*c', ...)`).
const MAX_VALUE_LENGTH: i32 = 64 << 20;

/// PRAGMAs that only describe the schema; table-valued forms (`pragma_table_info`) are allowed too.
const INTROSPECTION_PRAGMAS: &[&str] = &[
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
];

/// Virtual-machine instructions between two calls of the progress handler, which counts the
/// work of a statement against `Limits::max_steps` in these periods.
const STEPS_PER_PROGRESS_CALL: i32 = 1000;

/// A sandboxed connection to one database file.
pub struct Sandbox {
    pub(crate) conn: Connection,
    path: PathBuf,
    /// Opened `immutable`: SQLite then takes no lock and never looks for changes to the file.
    immutable: bool,
    /// Set by the authorizer when it refuses an action of the current statement.
    denied: Arc<AtomicBool>,
    /// Progress-handler periods the current statement may still run (`u64::MAX`: unbounded).
    periods_left: Arc<AtomicU64>,
    /// Set by the progress handler when it stopped the current statement at its step bound.
    over_steps: Arc<AtomicBool>,
    /// A scratch copy's connection ([`crate::scratch`]): statements may write to it.
    writable: bool,
    /// The tables and views a scratch copy's statements may have changed, as its authorizer
    /// saw them prepared.
    pub(crate) touched: Arc<Mutex<BTreeSet<String>>>,
}

impl Sandbox {
    /// Opens `path` read-only for SQL from `source`. Fails when the file is missing or is not
    /// a database.
    pub fn open(path: &Path, source: Source) -> Result<Sandbox, ExecError> {
        Sandbox::open_with(path, source, "")
    }

    /// Opens `path` like [`Sandbox::open`], with `PRAGMA reverse_unordered_selects = ON`: rows
    /// that no ORDER BY orders come back in another order (the gold audit looks for results
    /// that depend on it).
    pub fn open_reversing_unordered(path: &Path, source: Source) -> Result<Sandbox, ExecError> {
        Sandbox::open_with(path, source, " PRAGMA reverse_unordered_selects = ON;")
    }

    /// Opens `path`, running `pragmas` before the authorizer, which would refuse them, is set.
    fn open_with(path: &Path, source: Source, pragmas: &str) -> Result<Sandbox, ExecError> {
        crate::heap::bound();
        // A file that is not a database is a fact of its content; any other failure to open
        // (missing, unreadable, out of file handles) is of the moment.
        let open_error = |e: rusqlite::Error| ExecError {
            kind: if code(&e) == Some(ErrorCode::NotADatabase) {
                ExecErrorKind::Runtime
            } else {
                ExecErrorKind::Unavailable
            },
            message: format!("cannot open database {}: {e}", path.display()),
        };
        if !path.is_file() {
            return Err(open_error(rusqlite::Error::InvalidPath(path.to_path_buf())));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let (uri, immutable) = open_uri(path).map_err(|why| ExecError {
            kind: ExecErrorKind::Runtime,
            message: format!("cannot open database {}: {why}", path.display()),
        })?;
        let conn = Connection::open_with_flags(uri, flags).map_err(open_error)?;
        conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)
            .and_then(|_| conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE_LENGTH))
            .map_err(open_error)?;
        let temp_store = match source {
            Source::Gold => "DEFAULT",
            Source::Prediction => "MEMORY",
        };
        conn.execute_batch(&format!(
            "PRAGMA temp_store = {temp_store}; PRAGMA query_only = ON; PRAGMA trusted_schema = OFF;{pragmas}"
        ))
        .map_err(open_error)?;
        // Reading the schema once here turns "file is not a database" and a hot journal into
        // open errors.
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))
            .map_err(|e| match e.sqlite_error() {
                Some(error) if error.extended_code == rusqlite::ffi::SQLITE_READONLY_ROLLBACK => {
                    ExecError {
                        kind: ExecErrorKind::Unavailable,
                        message: format!(
                            "cannot open database {}: {} is a hot journal left by a writer \
                             that stopped mid-transaction, so the file holds uncommitted \
                             changes; opening it once with sqlite3 rolls them back",
                            path.display(),
                            sidecar(path, "-journal").display()
                        ),
                    }
                }
                _ => open_error(e),
            })?;
        Sandbox::guard(conn, path, immutable, false).map_err(open_error)
    }

    /// Opens the scratch copy `copy`, which this process made and no one else reads, for
    /// statements that may write to its own tables, indexes, views and triggers, inside one
    /// transaction that [`Sandbox::reset_scratch`] rolls back.
    pub(crate) fn open_scratch(copy: &Path) -> Result<Sandbox, ExecError> {
        crate::heap::bound();
        let open_error = |e: rusqlite::Error| ExecError {
            kind: ExecErrorKind::Unavailable,
            message: format!("cannot open the scratch copy {}: {e}", copy.display()),
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(copy, flags).map_err(open_error)?;
        conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)
            .and_then(|_| conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE_LENGTH))
            .map_err(open_error)?;
        // The copy is thrown away: its rollback journal stays in memory, nothing is synced.
        conn.execute_batch(
            "PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF; PRAGMA temp_store = MEMORY; \
             PRAGMA trusted_schema = OFF; BEGIN",
        )
        .map_err(open_error)?;
        Sandbox::guard(conn, copy, false, true).map_err(open_error)
    }

    /// Rolls back everything the scratch copy's statements did, and starts a new transaction.
    pub(crate) fn reset_scratch(&mut self) -> Result<(), ExecError> {
        let reset = |conn: &mut Connection| {
            conn.authorizer(None::<fn(AuthContext<'_>) -> Authorization>)?;
            conn.execute_batch("ROLLBACK; BEGIN")
        };
        reset(&mut self.conn).map_err(|e| ExecError {
            kind: ExecErrorKind::Unavailable,
            message: format!("cannot roll back the scratch copy: {e}"),
        })?;
        self.touched
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
        self.install_authorizer().map_err(|e| ExecError {
            kind: ExecErrorKind::Unavailable,
            message: format!("cannot guard the scratch copy: {e}"),
        })
    }

    /// Whether the scratch copy's transaction is still open (no statement ended it).
    pub(crate) fn in_transaction(&self) -> bool {
        !self.conn.is_autocommit()
    }

    /// The sandbox around `conn`: its authorizer, step bound and flags.
    fn guard(
        mut conn: Connection,
        path: &Path,
        immutable: bool,
        writable: bool,
    ) -> Result<Sandbox, rusqlite::Error> {
        let periods_left = Arc::new(AtomicU64::new(u64::MAX));
        let over_steps = Arc::new(AtomicBool::new(false));
        let (left, over) = (Arc::clone(&periods_left), Arc::clone(&over_steps));
        conn.progress_handler(
            STEPS_PER_PROGRESS_CALL,
            Some(move || {
                // One statement at a time per connection: a load and a store suffice.
                let periods = left.load(Ordering::Relaxed);
                if periods == 0 {
                    over.store(true, Ordering::Relaxed);
                    return true;
                }
                left.store(periods - 1, Ordering::Relaxed);
                false
            }),
        )?;
        let mut sandbox = Sandbox {
            conn,
            path: path.to_path_buf(),
            immutable,
            denied: Arc::new(AtomicBool::new(false)),
            periods_left,
            over_steps,
            writable,
            touched: Arc::default(),
        };
        sandbox.install_authorizer()?;
        Ok(sandbox)
    }

    /// Denies at prepare time what the connection may not do (see [`authorize`]), noting it.
    fn install_authorizer(&mut self) -> Result<(), rusqlite::Error> {
        let denied = Arc::clone(&self.denied);
        let touched = self.writable.then(|| Arc::clone(&self.touched));
        self.conn.authorizer(Some(move |context: AuthContext<'_>| {
            let verdict = match &touched {
                None => authorize(context),
                Some(touched) => authorize_scratch(context, touched),
            };
            if verdict == Authorization::Deny {
                denied.store(true, Ordering::Relaxed);
            }
            verdict
        }))
    }

    /// SQLite's data version of the file (`SQLITE_FCNTL_DATA_VERSION`) as of this connection's
    /// last read, without reading the file; `None` on an `immutable` connection, which never
    /// looks for changes. Each read transaction starts by comparing the header's change
    /// counter (or the WAL index) with what the connection read last, and a difference moves
    /// the version: SQLite's page cache relies on that same check to stay correct while other
    /// processes write.
    pub fn data_version(&self) -> Option<u32> {
        if self.immutable {
            return None;
        }
        let mut version: u32 = 0;
        // SAFETY: the handle is this open connection's, and this file control writes one
        // unsigned int through the pointer.
        let rc = unsafe {
            rusqlite::ffi::sqlite3_file_control(
                self.conn.handle(),
                c"main".as_ptr(),
                rusqlite::ffi::SQLITE_FCNTL_DATA_VERSION,
                (&mut version as *mut u32).cast(),
            )
        };
        (rc == rusqlite::ffi::SQLITE_OK).then_some(version)
    }

    /// The database file this connection reads.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs one statement within `limits` and reads its whole result.
    pub fn execute(&self, sql: &str, limits: &Limits) -> Execution {
        self.execute_counting_steps(sql, limits).0
    }

    /// Runs one statement like [`Sandbox::execute`], and counts the virtual-machine steps it
    /// took (`SQLITE_STMTSTATUS_VM_STEP`): a cost of the query that depends on the database and
    /// the SQLite version only, never on the machine.
    pub fn execute_counting_steps(&self, sql: &str, limits: &Limits) -> (Execution, u64) {
        let start = Instant::now();
        // A bound too far away to represent is no bound.
        let deadline = limits.timeout.and_then(|t| start.checked_add(t));
        self.denied.store(false, Ordering::Relaxed);
        self.over_steps.store(false, Ordering::Relaxed);
        let periods = limits.max_steps.map_or(u64::MAX, |steps| {
            steps.div_ceil(STEPS_PER_PROGRESS_CALL as u64)
        });
        self.periods_left.store(periods, Ordering::Relaxed);
        let armed = deadline.map(|d| {
            let handle = self.conn.get_interrupt_handle();
            watchdog::arm(d, Box::new(move || handle.interrupt()))
        });
        let mut charge = ResultCharge::default();
        let mut steps = 0;
        let result = self
            .run(sql, limits, &mut charge, &mut steps)
            .map_err(|e| self.classify(e, deadline, limits));
        drop(armed);
        // The statement and any result cut short are freed by now.
        let discarded = if result.is_err() { charge.held() } else { 0 };
        drop(charge);
        memory::give_back_freed(discarded);
        let execution = Execution {
            result: result.map(Arc::new),
            elapsed: start.elapsed(),
        };
        (execution, steps)
    }

    /// Runs `sql`, holding in `charge` the memory its result takes while it is read, and adding
    /// its virtual-machine steps to `steps`.
    fn run(
        &self,
        sql: &str,
        limits: &Limits,
        charge: &mut ResultCharge,
        steps: &mut u64,
    ) -> Result<ResultSet, RunError> {
        if sql.len() > MAX_SQL_BYTES {
            return Err(RunError::TooLarge(format!(
                "the statement is {} bytes long, more than the {MAX_SQL_BYTES} a statement may have",
                sql.len()
            )));
        }
        let mut stmt = self.conn.prepare(sql).map_err(RunError::Prepare)?;
        if !stmt.readonly() && !self.writable {
            return Err(RunError::Denied(
                "the statement would modify the database".into(),
            ));
        }
        if stmt.column_count() == 0 && !self.writable {
            return Err(RunError::Denied("the statement is not a query".into()));
        }
        let columns: Vec<String> = stmt.column_names().map(String::from).collect();
        let width = columns.len();
        let mut result = ResultSet {
            columns,
            rows: Vec::new(),
            lossy_text: false,
        };
        let too_large = || {
            RunError::TooLarge(format!(
                "the result takes more than {} bytes of memory",
                limits.max_bytes
            ))
        };
        let mut bytes = 0usize;
        // SQLite counts in 32 bits: read per row (not reset, which would restart the progress
        // handler's period at every row), the count's wrap is undone by the difference.
        let mut counted: u32 = 0;
        let mut count = |stmt: &rusqlite::Statement<'_>| {
            let now = stmt.get_status(StatementStatus::VmStep) as u32;
            *steps += u64::from(now.wrapping_sub(counted));
            counted = now;
        };
        let mut rows = stmt.raw_query();
        while let Some(row) = rows.next().map_err(RunError::Runtime)? {
            if result.rows.len() == limits.max_rows {
                return Err(RunError::TooLarge(format!(
                    "more than {} rows",
                    limits.max_rows
                )));
            }
            bytes += result_bytes(width, 1);
            let mut values = Vec::with_capacity(width);
            for i in 0..width {
                let cell = row.get_ref(i).map_err(RunError::Runtime)?;
                let (value, heap) = decode(cell, &mut result.lossy_text);
                // Checked per cell: one row of 2,000 long texts is already large.
                bytes += heap;
                if bytes > limits.max_bytes {
                    return Err(too_large());
                }
                charge.cover(bytes).map_err(RunError::OutOfMemory)?;
                values.push(value);
            }
            if bytes > limits.max_bytes {
                return Err(too_large());
            }
            result.rows.push(values);
            if let Some(stmt) = rows.as_ref() {
                count(stmt);
            }
        }
        drop(rows);
        count(&stmt);
        Ok(result)
    }

    fn classify(&self, error: RunError, deadline: Option<Instant>, limits: &Limits) -> ExecError {
        let (kind, message) = match error {
            RunError::Denied(message) => (ExecErrorKind::Denied, message),
            RunError::TooLarge(message) => (ExecErrorKind::TooLarge, message),
            RunError::OutOfMemory(error) => (ExecErrorKind::OutOfMemory, error.to_string()),
            RunError::Prepare(e) | RunError::Runtime(e) if self.denied.load(Ordering::Relaxed) => {
                (ExecErrorKind::Denied, e.to_string())
            }
            RunError::Prepare(e) | RunError::Runtime(e)
                if code(&e) == Some(ErrorCode::OutOfMemory) =>
            {
                (ExecErrorKind::OutOfMemory, memory::out_of_memory())
            }
            RunError::Prepare(e) | RunError::Runtime(e)
                if code(&e) == Some(ErrorCode::OperationInterrupted)
                    && self.over_steps.load(Ordering::Relaxed) =>
            {
                (
                    ExecErrorKind::Timeout,
                    format!(
                        "query exceeded its bound of {} virtual-machine steps",
                        limits.max_steps.unwrap_or_default()
                    ),
                )
            }
            RunError::Prepare(e) | RunError::Runtime(e)
                if code(&e) == Some(ErrorCode::OperationInterrupted)
                    && deadline.is_some_and(|d| Instant::now() >= d) =>
            {
                (
                    ExecErrorKind::Timeout,
                    "query exceeded its time bound".to_string(),
                )
            }
            RunError::Prepare(e) | RunError::Runtime(e) if code(&e).is_some_and(momentary) => {
                (ExecErrorKind::Unavailable, e.to_string())
            }
            RunError::Prepare(e) => (ExecErrorKind::Prepare, e.to_string()),
            RunError::Runtime(e) => (ExecErrorKind::Runtime, e.to_string()),
        };
        ExecError { kind, message }
    }
}

enum RunError {
    Prepare(rusqlite::Error),
    Runtime(rusqlite::Error),
    Denied(String),
    TooLarge(String),
    /// The results being read and SQLite's heap would take more than the memory budget allows.
    OutOfMemory(memory::OutOfMemory),
}

fn code(error: &rusqlite::Error) -> Option<ErrorCode> {
    error.sqlite_error_code()
}

/// Errors of the moment, not of the database's content or the SQL: an interrupt that was not
/// the time bound, I/O, a lock held by a writer, no file handle to spare.
fn momentary(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::OperationInterrupted
            | ErrorCode::SystemIoFailure
            | ErrorCode::DatabaseBusy
            | ErrorCode::DatabaseLocked
            | ErrorCode::CannotOpen
            | ErrorCode::FileLockingProtocolFailed
    )
}

fn authorize(context: AuthContext<'_>) -> Authorization {
    match context.action {
        AuthAction::Select | AuthAction::Read { .. } | AuthAction::Recursive => {
            Authorization::Allow
        }
        AuthAction::Function { function_name }
            if !function_name.eq_ignore_ascii_case("load_extension") =>
        {
            Authorization::Allow
        }
        AuthAction::Pragma { pragma_name, .. }
            if INTROSPECTION_PRAGMAS
                .iter()
                .any(|p| p.eq_ignore_ascii_case(pragma_name)) =>
        {
            Authorization::Allow
        }
        _ => Authorization::Deny,
    }
}

/// A scratch copy's rules: [`authorize`]'s, and writing to the copy's own (`main`) tables,
/// indexes, views and triggers, each noted in `touched`. Transactions and savepoints stay
/// denied (a COMMIT would end what [`Sandbox::reset_scratch`] rolls back), as do ATTACH,
/// temporary objects, virtual tables and every other PRAGMA.
fn authorize_scratch(context: AuthContext<'_>, touched: &Mutex<BTreeSet<String>>) -> Authorization {
    let changed = match context.action {
        AuthAction::Insert { table_name }
        | AuthAction::Update { table_name, .. }
        | AuthAction::Delete { table_name }
        | AuthAction::CreateTable { table_name }
        | AuthAction::DropTable { table_name }
        | AuthAction::AlterTable { table_name, .. }
        | AuthAction::CreateIndex { table_name, .. }
        | AuthAction::DropIndex { table_name, .. }
        | AuthAction::CreateTrigger { table_name, .. }
        | AuthAction::DropTrigger { table_name, .. } => table_name,
        AuthAction::CreateView { view_name } | AuthAction::DropView { view_name } => view_name,
        AuthAction::Reindex { .. } | AuthAction::Analyze { .. } => return Authorization::Allow,
        _ => return authorize(context),
    };
    // SQLite's own tables change with every DDL statement (RENAME updates the temporary
    // schema's too): they are not the user's, and no statement reaches them directly
    // (`writable_schema` is a denied PRAGMA).
    if changed.to_ascii_lowercase().starts_with("sqlite_") {
        return Authorization::Allow;
    }
    // ALTER TABLE names its database in the action, not in the context.
    let database = match context.action {
        AuthAction::AlterTable { database_name, .. } => Some(database_name),
        _ => context.database_name,
    };
    if database != Some("main") {
        return Authorization::Deny;
    }
    touched
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .insert(changed.to_string());
    Authorization::Allow
}

/// A read-only `file:` URI for `path` that reads what `sqlite3` would read, and whether it
/// opens the file `immutable`; or why not.
///
/// `immutable` (no locks, no side files) is exact only for a WAL database without a `-wal`
/// file; opening such a database otherwise would create `-wal` and `-shm` files beside it.
/// Every other database is opened with locks, so committed WAL content is read, a writer's
/// uncommitted changes are not, and a hot journal left by a crashed writer makes SQLite refuse
/// (it cannot roll back read-only): the caller names it.
fn open_uri(path: &Path) -> Result<(String, bool), String> {
    let mut header = [0u8; 100];
    let read = std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read(&mut file, &mut header))
        .map_err(|e| e.to_string())?;
    if read == 0 {
        return Err("the file is empty (0 bytes), not a SQLite database".into());
    }
    // Bytes 18 and 19 of the header are 2 in WAL mode.
    let wal_mode = read == header.len() && header[18] == 2 && header[19] == 2;
    let immutable = wal_mode && !sidecar(path, "-wal").exists();
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str(if immutable {
        "?mode=ro&immutable=1"
    } else {
        "?mode=ro"
    });
    Ok((uri, immutable))
}

/// Converts a cell, dropping invalid UTF-8 bytes (Python's `errors="ignore"`), and returns the
/// heap bytes it holds besides its `Value`.
fn decode(cell: ValueRef<'_>, lossy: &mut bool) -> (Value, usize) {
    match cell {
        ValueRef::Null => (Value::Null, 0),
        ValueRef::Integer(i) => (Value::Int(i), 0),
        ValueRef::Real(f) => (Value::Real(f), 0),
        ValueRef::Text(bytes) => {
            let text = match std::str::from_utf8(bytes) {
                Ok(text) => text.to_string(),
                Err(_) => {
                    *lossy = true;
                    bytes.utf8_chunks().map(|chunk| chunk.valid()).collect()
                }
            };
            (Value::Text(text), bytes.len())
        }
        ValueRef::Blob(bytes) => (Value::Blob(bytes.to_vec()), bytes.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gold_sql_may_spill_temporary_data_to_files() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.sqlite");
        Connection::open(&db)
            .unwrap()
            .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
            .unwrap();
        // 0: SQLite's default (files past the page cache), 2: memory.
        let temp_store = |source| {
            let mut sandbox = Sandbox::open(&db, source).unwrap();
            // The authorizer refuses this PRAGMA to predictions; the test reads past it.
            sandbox
                .conn
                .authorizer(None::<fn(AuthContext<'_>) -> Authorization>)
                .unwrap();
            let value: i64 = sandbox
                .conn
                .query_row("PRAGMA temp_store", [], |row| row.get(0))
                .unwrap();
            value
        };
        assert_eq!(temp_store(Source::Gold), 0);
        assert_eq!(temp_store(Source::Prediction), 2);
    }

    #[test]
    fn the_data_version_moves_exactly_when_another_connection_commits() {
        for journal_mode in ["DELETE", "WAL"] {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("t.sqlite");
            let writer = Connection::open(&db).unwrap();
            writer
                .execute_batch(&format!(
                    "PRAGMA journal_mode = {journal_mode}; CREATE TABLE t(x); INSERT INTO t VALUES (1);"
                ))
                .unwrap();
            let sandbox = Sandbox::open(&db, Source::Prediction).unwrap();
            let count = |sandbox: &Sandbox| {
                let rows = sandbox.execute("SELECT count(*) FROM t", &Limits::default());
                rows.result.unwrap().rows[0][0].clone()
            };
            assert_eq!(count(&sandbox), Value::Int(1));
            let seen = sandbox.data_version();
            assert!(seen.is_some(), "{journal_mode}");
            assert_eq!(count(&sandbox), Value::Int(1));
            assert_eq!(sandbox.data_version(), seen, "{journal_mode}: no commit");
            // An update in place: same size, and likely the same modification time.
            writer.execute("UPDATE t SET x = 2", []).unwrap();
            assert_eq!(sandbox.data_version(), seen, "{journal_mode}: not read yet");
            assert_eq!(count(&sandbox), Value::Int(1));
            assert_ne!(sandbox.data_version(), seen, "{journal_mode}: a commit");
        }
    }

    /// `<dir>/t.sqlite`, its table `t` holding x = 1..=1000.
    fn thousand_rows(dir: &Path) -> PathBuf {
        let db = dir.join("t.sqlite");
        Connection::open(&db)
            .unwrap()
            .execute_batch(
                "CREATE TABLE t(x); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 \
                 FROM c WHERE i < 1000) INSERT INTO t SELECT i FROM c;",
            )
            .unwrap();
        db
    }

    #[test]
    fn steps_count_the_work_of_a_query_and_repeat_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let db = thousand_rows(dir.path());
        let steps = |sql: &str| {
            let sandbox = Sandbox::open(&db, Source::Prediction).unwrap();
            let (execution, steps) = sandbox.execute_counting_steps(sql, &Limits::default());
            assert!(execution.result.is_ok(), "{sql}");
            steps
        };
        let one = steps("SELECT 1");
        assert!(one > 0);
        // A scan that returns no row still counts every row it looked at: the count outlives
        // the statement's reset at its end.
        let scan = steps("SELECT x FROM t WHERE x > 5000");
        assert!(scan > 1000, "{scan}");
        let rows = steps("SELECT x FROM t");
        assert!(rows > 1000, "{rows}");
        for sql in [
            "SELECT 1",
            "SELECT x FROM t WHERE x > 5000",
            "SELECT x FROM t",
        ] {
            assert_eq!(steps(sql), steps(sql), "{sql}");
        }
        // One connection, run twice: each execution counts its own steps only.
        let sandbox = Sandbox::open(&db, Source::Prediction).unwrap();
        let first = sandbox.execute_counting_steps("SELECT x FROM t", &Limits::default());
        let second = sandbox.execute_counting_steps("SELECT x FROM t", &Limits::default());
        assert_eq!((first.1, second.1), (rows, rows));
    }

    #[test]
    fn a_step_bound_stops_the_same_queries_whatever_the_clock_says() {
        let dir = tempfile::tempdir().unwrap();
        let db = thousand_rows(dir.path());
        let sandbox = Sandbox::open(&db, Source::Prediction).unwrap();
        let (_, scan) = sandbox.execute_counting_steps("SELECT x FROM t", &Limits::default());
        // No time bound at all: only the steps can stop these.
        let bounded = |steps: u64| Limits {
            timeout: None,
            max_steps: Some(steps),
            ..Limits::default()
        };
        let runaway = "SELECT count(*) FROM t a, t b, t c, t d";
        for _ in 0..3 {
            let error = sandbox
                .execute(runaway, &bounded(1_000_000))
                .result
                .unwrap_err();
            assert_eq!(error.kind, ExecErrorKind::Timeout, "{}", error.message);
            assert!(
                error.message.contains("1000000 virtual-machine steps"),
                "{}",
                error.message
            );
        }
        // Within its bound a query runs whole, on the same connection after a stop; the bound
        // holds per statement, and a query just past it is stopped every time.
        let whole = sandbox.execute("SELECT x FROM t", &bounded(scan * 2));
        assert_eq!(whole.result.unwrap().rows.len(), 1000);
        for _ in 0..3 {
            let cut = sandbox.execute("SELECT x FROM t", &bounded(scan / 4));
            assert_eq!(cut.result.unwrap_err().kind, ExecErrorKind::Timeout);
        }
        let unbounded = sandbox.execute("SELECT count(*) FROM t a, t b", &Limits::default());
        assert_eq!(
            unbounded.result.unwrap().rows,
            [vec![Value::Int(1_000_000)]]
        );
    }

    #[test]
    fn an_immutable_connection_has_no_data_version() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.sqlite");
        let writer = Connection::open(&db).unwrap();
        writer
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t(x);")
            .unwrap();
        drop(writer);
        let sandbox = Sandbox::open(&db, Source::Prediction).unwrap();
        assert!(sandbox.immutable);
        assert_eq!(sandbox.data_version(), None);
    }
}
