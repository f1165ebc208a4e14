//! One read-only, bounded SQLite connection for untrusted SQL.
//!
//! Predicted SQL is hostile input. Defence in depth:
//! - the file is opened read-only and `immutable` (no locks, journals or WAL files);
//! - ATTACH is impossible (`SQLITE_LIMIT_ATTACHED = 0`) and loading extensions stays off;
//! - an authorizer allows only reads, functions other than `load_extension`, recursive CTEs and
//!   a few introspection PRAGMAs; everything else is denied at prepare time;
//! - a statement that is not read-only is refused before it runs;
//! - a progress handler interrupts a statement past its deadline, and rows and bytes are counted
//!   while reading so a huge result stops early;
//! - temporary tables and sorts stay in memory, so no temporary file is created.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OpenFlags};

use super::{ExecError, ExecErrorKind, Execution, ResultSet, Value};

/// Bounds on one query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-time bound; `None` lets a query run to completion (the test-suite reference).
    pub timeout: Option<Duration>,
    pub max_rows: usize,
    /// Bound on the bytes of all cells (text and blob lengths, 8 per other value).
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Some(Duration::from_secs(30)),
            max_rows: 1_000_000,
            max_bytes: 256 << 20,
        }
    }
}

/// The process-wide bound on SQLite's heap, so a runaway sort fails with "out of memory"
/// instead of exhausting the machine.
const SQLITE_HEAP_LIMIT: i64 = 4 << 30;
/// The longest string or blob a query may build (`zeroblob(1e9)`, `printf('%.*c', ...)`).
const MAX_VALUE_LENGTH: i32 = 64 << 20;
/// Virtual-machine instructions between two deadline checks.
const PROGRESS_PERIOD: i32 = 1_000;
const NO_DEADLINE: u64 = u64::MAX;

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

/// A sandboxed connection to one database file.
pub struct Sandbox {
    conn: Connection,
    path: PathBuf,
    /// Nanoseconds after `epoch` at which the running statement is interrupted.
    deadline: Arc<AtomicU64>,
    epoch: Instant,
    /// Set by the authorizer when it refuses an action of the current statement.
    denied: Arc<AtomicBool>,
}

impl Sandbox {
    /// Opens `path` read-only. Fails when the file is missing or is not a database.
    pub fn open(path: &Path) -> Result<Sandbox, ExecError> {
        static HEAP_LIMIT: Once = Once::new();
        // SAFETY: sets a process-wide SQLite setting; it takes no pointers.
        HEAP_LIMIT.call_once(|| unsafe {
            rusqlite::ffi::sqlite3_hard_heap_limit64(SQLITE_HEAP_LIMIT);
        });
        let open_error = |e: rusqlite::Error| ExecError {
            kind: ExecErrorKind::Runtime,
            message: format!("cannot open database {}: {e}", path.display()),
        };
        if !path.is_file() {
            return Err(open_error(rusqlite::Error::InvalidPath(path.to_path_buf())));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn =
            Connection::open_with_flags(immutable_uri(path), flags).map_err(open_error)?;
        conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)
            .and_then(|_| conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE_LENGTH))
            .map_err(open_error)?;
        conn.execute_batch(
            "PRAGMA temp_store = MEMORY; PRAGMA query_only = ON; PRAGMA trusted_schema = OFF;",
        )
        .map_err(open_error)?;
        // Reading the schema once here turns "file is not a database" into an open error.
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))
            .map_err(open_error)?;
        let denied = Arc::new(AtomicBool::new(false));
        let authorizer_denied = Arc::clone(&denied);
        conn.authorizer(Some(move |context: AuthContext<'_>| {
            let verdict = authorize(context);
            if verdict == Authorization::Deny {
                authorizer_denied.store(true, Ordering::Relaxed);
            }
            verdict
        }))
        .map_err(open_error)?;

        let deadline = Arc::new(AtomicU64::new(NO_DEADLINE));
        let epoch = Instant::now();
        let handler_deadline = Arc::clone(&deadline);
        conn.progress_handler(
            PROGRESS_PERIOD,
            Some(move || past(epoch, handler_deadline.load(Ordering::Relaxed))),
        )
        .map_err(open_error)?;
        Ok(Sandbox {
            conn,
            path: path.to_path_buf(),
            deadline,
            epoch,
            denied,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs one statement within `limits` and reads its whole result.
    pub fn execute(&self, sql: &str, limits: &Limits) -> Execution {
        let start = Instant::now();
        let deadline = limits
            .timeout
            .map(|t| {
                (start + t)
                    .duration_since(self.epoch)
                    .as_nanos()
                    .min(u64::MAX as u128 - 1) as u64
            })
            .unwrap_or(NO_DEADLINE);
        self.deadline.store(deadline, Ordering::Relaxed);
        self.denied.store(false, Ordering::Relaxed);
        let result = self
            .run(sql, limits)
            .map_err(|e| self.classify(e, deadline));
        self.deadline.store(NO_DEADLINE, Ordering::Relaxed);
        Execution {
            result: result.map(Arc::new),
            elapsed: start.elapsed(),
        }
    }

    fn run(&self, sql: &str, limits: &Limits) -> Result<ResultSet, RunError> {
        let mut stmt = self.conn.prepare(sql).map_err(RunError::Prepare)?;
        if !stmt.readonly() {
            return Err(RunError::Denied(
                "the statement would modify the database".into(),
            ));
        }
        if stmt.column_count() == 0 {
            return Err(RunError::Denied("the statement is not a query".into()));
        }
        let columns: Vec<String> = stmt.column_names().map(String::from).collect();
        let width = columns.len();
        let mut result = ResultSet {
            columns,
            rows: Vec::new(),
            lossy_text: false,
        };
        let mut bytes = 0usize;
        let mut rows = stmt.raw_query();
        while let Some(row) = rows.next().map_err(RunError::Runtime)? {
            if result.rows.len() == limits.max_rows {
                return Err(RunError::TooLarge(format!(
                    "more than {} rows",
                    limits.max_rows
                )));
            }
            let mut values = Vec::with_capacity(width);
            for i in 0..width {
                let cell = row.get_ref(i).map_err(RunError::Runtime)?;
                let (value, size) = decode(cell, &mut result.lossy_text);
                bytes += size;
                values.push(value);
            }
            if bytes > limits.max_bytes {
                return Err(RunError::TooLarge(format!(
                    "more than {} bytes",
                    limits.max_bytes
                )));
            }
            result.rows.push(values);
        }
        Ok(result)
    }

    fn classify(&self, error: RunError, deadline: u64) -> ExecError {
        let (kind, message) = match error {
            RunError::Denied(message) => (ExecErrorKind::Denied, message),
            RunError::TooLarge(message) => (ExecErrorKind::TooLarge, message),
            RunError::Prepare(e) | RunError::Runtime(e) if self.denied.load(Ordering::Relaxed) => {
                (ExecErrorKind::Denied, e.to_string())
            }
            RunError::Prepare(e) | RunError::Runtime(e)
                if code(&e) == Some(ErrorCode::OutOfMemory) =>
            {
                (ExecErrorKind::TooLarge, format!("out of memory: {e}"))
            }
            RunError::Prepare(e) | RunError::Runtime(e)
                if code(&e) == Some(ErrorCode::OperationInterrupted)
                    && past(self.epoch, deadline) =>
            {
                (
                    ExecErrorKind::Timeout,
                    "query exceeded its time bound".to_string(),
                )
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
}

fn code(error: &rusqlite::Error) -> Option<ErrorCode> {
    error.sqlite_error_code()
}

fn past(epoch: Instant, deadline: u64) -> bool {
    deadline != NO_DEADLINE && epoch.elapsed().as_nanos() >= deadline as u128
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

/// A `file:` URI opening `path` read-only and immutable; `%`, `?` and `#` are escaped.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?mode=ro&immutable=1");
    uri
}

/// Converts a cell, dropping invalid UTF-8 bytes (Python's `errors="ignore"`), and returns its size.
fn decode(cell: ValueRef<'_>, lossy: &mut bool) -> (Value, usize) {
    match cell {
        ValueRef::Null => (Value::Null, 8),
        ValueRef::Integer(i) => (Value::Int(i), 8),
        ValueRef::Real(f) => (Value::Real(f), 8),
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
