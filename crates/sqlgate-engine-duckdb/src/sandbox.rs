//! One read-only, bounded DuckDB connection for untrusted SQL, with the SQLite sandbox's
//! guarantees.
//!
//! Predicted SQL is hostile input. Defence in depth:
//! - the file is checked to be a DuckDB database, then opened read-only (its own database
//!   instance, `access_mode = READ_ONLY`): a write fails inside DuckDB whatever gets past the
//!   checks below;
//! - the instance is configured as it opens the file, then with `SET`s before any SQL of a
//!   suite runs, the last locking the configuration (`lock_configuration`): no access to other files or the network
//!   (`enable_external_access = false`: no ATTACH, COPY, `read_csv`, `glob`, extensions from
//!   files), no extension installed or loaded on demand, one thread, a memory limit that is a
//!   share of the process's budget ([`memory`]), and no temporary files for predictions;
//! - a statement is refused before it is prepared unless its first keyword starts a query
//!   (`SELECT`, `WITH`, `VALUES`, `FROM`, `TABLE`, or a parenthesis); DuckDB refuses to prepare
//!   several statements at once;
//! - the watchdog interrupts a statement past its deadline, and the result is streamed: rows
//!   and bytes (values and their containers) are counted while reading, so a huge result stops
//!   early.

use std::path::{Path, PathBuf};
use std::time::Instant;

use duckdb::arrow::datatypes::DataType;
use duckdb::{AccessMode, Config};
use sqlgate_engine::limits::{result_bytes, MAX_SQL_BYTES};
use sqlgate_engine::memory::{self, ResultCharge};
use sqlgate_engine::{
    watchdog, Connection, ExecError, ExecErrorKind, Execution, Limits, ResultSet, Source,
};

use crate::values;

/// The first keywords of the statements a prediction may run: those that start a query.
const QUERY_KEYWORDS: &[&str] = &["select", "with", "values", "from", "table"];

/// The smallest memory limit a connection gets: DuckDB needs some memory to open a file.
const MIN_MEMORY_LIMIT: u64 = 32 << 20;

/// A sandboxed connection to one DuckDB file.
pub(crate) struct Sandbox {
    conn: duckdb::Connection,
    path: PathBuf,
}

impl Sandbox {
    /// Opens `path` read-only for SQL from `source`. Fails naming the file when it is missing
    /// (of the moment: [`ExecErrorKind::Unavailable`]) or not a DuckDB database (of its
    /// content: [`ExecErrorKind::Runtime`]).
    pub(crate) fn open(path: &Path, source: Source) -> Result<Sandbox, ExecError> {
        Sandbox::open_as(path, source, AccessMode::ReadOnly)
    }

    /// Opens `copy`, a private copy of a database, writable for a state case's statements
    /// ([`crate::scratch`]), under the same settings as a prediction's connection.
    pub(crate) fn open_scratch(copy: &Path) -> Result<Sandbox, ExecError> {
        Sandbox::open_as(copy, Source::Prediction, AccessMode::ReadWrite)
    }

    fn open_as(path: &Path, source: Source, mode: AccessMode) -> Result<Sandbox, ExecError> {
        check_header(path)?;
        let conn = config(mode)
            .and_then(|config| duckdb::Connection::open_with_flags(path, config))
            .and_then(|conn| conn.execute_batch(&settings(source)).map(|()| conn))
            .map_err(|e| open_error(path, &e))?;
        Ok(Sandbox {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Runs one statement that may write (a scratch copy's), bounded in time: the rows it
    /// inserted, updated or deleted. The statement guard of state cases has checked it; here
    /// it must be one statement within the size bound.
    pub(crate) fn apply(&self, sql: &str, limits: &Limits) -> Result<u64, ExecError> {
        let deadline = limits.timeout.and_then(|t| Instant::now().checked_add(t));
        let armed = deadline.map(|d| {
            let handle = self.conn.interrupt_handle();
            watchdog::arm(d, Box::new(move || handle.interrupt()))
        });
        let changed = one_statement(sql)
            .and_then(|()| self.conn.prepare(sql).map_err(RunError::Prepare))
            .and_then(|mut statement| statement.execute([]).map_err(RunError::Runtime));
        drop(armed);
        changed
            .map(|rows| rows as u64)
            .map_err(|e| classify(e, deadline))
    }

    /// Runs statements of the harness's own (a scratch copy's transaction control).
    pub(crate) fn run_batch(&self, sql: &str) -> Result<(), ExecError> {
        self.conn
            .execute_batch(sql)
            .map_err(|e| classify(RunError::Runtime(e), None))
    }

    /// Runs `sql` after checking `admitted` (the prediction's SQL that `sql` wraps, or `sql`
    /// itself), holding in `charge` the memory its result takes while it is read.
    fn run(
        &self,
        admitted: &str,
        sql: &str,
        limits: &Limits,
        charge: &mut ResultCharge,
    ) -> Result<ResultSet, RunError> {
        admit(admitted)?;
        let mut stmt = self.conn.prepare(sql).map_err(RunError::Prepare)?;
        if stmt.parameter_count() > 0 {
            return Err(RunError::Fail(
                ExecErrorKind::Prepare,
                "the statement has parameters ($1, ?...) that nothing fills".into(),
            ));
        }
        // Executed as a stream: chunks are fetched as the rows are read.
        drop(stmt.stream_arrow([]).map_err(RunError::Runtime)?);
        let schema = stmt.schema();
        if let Some(field) = schema
            .fields()
            .iter()
            .find(|f| f.data_type() != &DataType::Null && !values::readable(f.data_type()))
        {
            return Err(RunError::Fail(
                ExecErrorKind::Runtime,
                format!(
                    "sqlgate does not read values of type `{}` (column `{}`); cast the column \
                     (e.g. `::VARCHAR`)",
                    field.data_type(),
                    field.name()
                ),
            ));
        }
        let with_zone: Vec<bool> = schema
            .fields()
            .iter()
            .map(|f| matches!(f.data_type(), DataType::Timestamp(_, Some(_))))
            .collect();
        // A column of NULL's own type (`SELECT NULL`) holds nothing else; the driver's reader
        // does not read it.
        let all_null: Vec<bool> = schema
            .fields()
            .iter()
            .map(|f| f.data_type() == &DataType::Null)
            .collect();
        let width = with_zone.len();
        let mut result = ResultSet {
            columns: schema.fields().iter().map(|f| f.name().clone()).collect(),
            rows: Vec::new(),
            lossy_text: false,
        };
        let too_large = || {
            RunError::Fail(
                ExecErrorKind::TooLarge,
                format!(
                    "the result takes more than {} bytes of memory",
                    limits.max_bytes
                ),
            )
        };
        let mut bytes = 0usize;
        let mut rows = stmt.raw_query();
        while let Some(row) = rows.next().map_err(RunError::Runtime)? {
            if result.rows.len() == limits.max_rows {
                return Err(RunError::Fail(
                    ExecErrorKind::TooLarge,
                    format!("more than {} rows", limits.max_rows),
                ));
            }
            bytes += result_bytes(width, 1);
            let mut cells = Vec::with_capacity(width);
            for (i, &zoned) in with_zone.iter().enumerate() {
                let (value, heap) = if all_null[i] {
                    (sqlgate_engine::Value::Null, 0)
                } else {
                    values::decode(row.get_ref(i).map_err(RunError::Runtime)?, zoned)
                };
                // Checked per cell: one row of 2,000 long texts is already large.
                bytes += heap;
                if bytes > limits.max_bytes {
                    return Err(too_large());
                }
                charge.cover(bytes).map_err(|error| {
                    RunError::Fail(ExecErrorKind::OutOfMemory, error.to_string())
                })?;
                cells.push(value);
            }
            if bytes > limits.max_bytes {
                return Err(too_large());
            }
            result.rows.push(cells);
        }
        Ok(result)
    }

    /// Runs `sql` (checked as `admitted`) within `limits`, bounded in time by the watchdog.
    fn bounded(&self, admitted: &str, sql: &str, limits: &Limits) -> Execution {
        // A bound too far away to represent is no bound.
        memory::measured(limits, |deadline, charge| {
            let armed = deadline.map(|d| {
                let handle = self.conn.interrupt_handle();
                watchdog::arm(d, Box::new(move || handle.interrupt()))
            });
            let result = self
                .run(admitted, sql, limits, charge)
                .map_err(|e| classify(e, deadline));
            drop(armed);
            result
        })
    }
}

impl Connection for Sandbox {
    fn execute(&mut self, sql: &str, limits: &Limits) -> Execution {
        self.bounded(sql, sql, limits)
    }

    /// The sum of the planner's estimated cardinalities over the plan's operators
    /// (`EXPLAIN (FORMAT JSON)`: planned, not run): it depends on the database's statistics and
    /// DuckDB's version only. DuckDB counts no work of an execution that would not depend on
    /// the machine (its profiler's timings do, and its row counts vary with the threads).
    fn cost(&mut self, sql: &str, limits: &Limits) -> Result<f64, ExecError> {
        let plan = self
            .bounded(sql, &format!("EXPLAIN (FORMAT JSON) {sql}"), limits)
            .result?;
        let text: String = plan
            .rows
            .iter()
            .flatten()
            .filter_map(|cell| match cell {
                sqlgate_engine::Value::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        estimated_cardinalities(&text).ok_or_else(|| ExecError {
            kind: ExecErrorKind::Runtime,
            message: format!(
                "the plan of the query on {} has no estimated cardinality",
                self.path.display()
            ),
        })
    }
}

/// The sum of every `"Estimated Cardinality": "N"` of a JSON plan; `None` when there is none.
fn estimated_cardinalities(plan: &str) -> Option<f64> {
    const KEY: &str = "\"Estimated Cardinality\"";
    let mut found = false;
    let mut sum = 0.0;
    for (at, _) in plan.match_indices(KEY) {
        let rest = plan[at + KEY.len()..].trim_start();
        let rest = rest.strip_prefix(':')?.trim_start().trim_start_matches('"');
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        sum += digits.parse::<f64>().ok()?;
        found = true;
    }
    found.then_some(sum)
}

/// The configuration of a sandboxed instance when it opens the file.
fn config(mode: AccessMode) -> duckdb::Result<Config> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    // The core runs one connection per worker thread, each its own DuckDB instance.
    let memory_limit = (memory::pool_bytes_now() / threads).max(MIN_MEMORY_LIMIT);
    Config::default()
        .access_mode(mode)
        .and_then(|c| c.enable_autoload_extension(false))
        .and_then(|c| c.with("autoinstall_known_extensions", "false"))
        .and_then(|c| c.threads(1))
        .and_then(|c| c.max_memory(&format!("{}KiB", memory_limit >> 10)))
}

/// The settings applied once the file is open, the last locking them all: the temporary
/// folder must be set while external access is still allowed.
fn settings(source: Source) -> String {
    let temp_directory = match source {
        Source::Gold => gold_temp_directory().to_string_lossy().replace('\'', "''"),
        // An empty directory turns spilling to files off: a prediction's sort stays in memory.
        Source::Prediction => String::new(),
    };
    format!(
        "SET temp_directory = '{temp_directory}'; SET allow_community_extensions = false; \
         SET enable_external_access = false; SET lock_configuration = true;"
    )
}

/// Where gold SQL spills what does not fit in memory: a folder of this process in the system's
/// temporary folder (DuckDB's default is beside the database, in the suite's `db_dir`).
fn gold_temp_directory() -> PathBuf {
    std::env::temp_dir().join(format!("sqlgate-duckdb-{}", std::process::id()))
}

/// Refuses a text too long or holding several statements.
fn one_statement(sql: &str) -> Result<(), RunError> {
    if sql.len() > MAX_SQL_BYTES {
        return Err(RunError::Fail(
            ExecErrorKind::TooLarge,
            format!(
                "the statement is {} bytes long, more than the {MAX_SQL_BYTES} a statement may have",
                sql.len()
            ),
        ));
    }
    if !single_statement(sql) {
        return Err(RunError::Fail(
            ExecErrorKind::Denied,
            "the text holds more than one statement".into(),
        ));
    }
    Ok(())
}

/// Refuses a statement too long, or one whose first keyword does not start a query.
fn admit(sql: &str) -> Result<(), RunError> {
    one_statement(sql)?;
    let mut rest = skip_comments(sql);
    let mut keyword = first_keyword(rest);
    // ETM's plans: one `EXPLAIN` before a query (not a loop: `EXPLAIN EXPLAIN ...` is refused).
    if keyword == "explain" {
        rest = skip_comments(&rest[keyword.len()..]);
        keyword = first_keyword(rest);
    }
    if rest.starts_with('(') || QUERY_KEYWORDS.contains(&keyword.as_str()) {
        return Ok(());
    }
    let shown = if keyword.is_empty() {
        rest.chars().take(20).collect::<String>()
    } else {
        keyword.to_ascii_uppercase()
    };
    Err(RunError::Fail(
        ExecErrorKind::Denied,
        format!("the statement is not a read-only query: it starts with `{shown}`"),
    ))
}

/// The first word of `text`, lower-cased (ASCII letters, digits and `_`).
fn first_keyword(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect::<String>()
        .to_ascii_lowercase()
}

/// Whether `sql` holds one statement: no `;` outside strings, quoted names and comments but at
/// its end. (The driver would run every statement before the last.) A backslash in a string
/// could be an escape (`E'\''`): the text is then taken as several statements if it has any
/// `;` before its end.
fn single_statement(sql: &str) -> bool {
    let body = sql
        .trim_end()
        .trim_end_matches(|c: char| c == ';' || c.is_whitespace());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ';' => return false,
            '\'' | '"' => loop {
                match chars.next() {
                    None => return true,
                    Some('\\') => return !body.contains(';'),
                    Some(q) if q == c => {
                        if chars.peek() != Some(&c) {
                            break;
                        }
                        chars.next();
                    }
                    Some(_) => {}
                }
            },
            '-' if chars.peek() == Some(&'-') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            '$' => return !body.contains(';'),
            _ => {}
        }
    }
    true
}

/// `sql` past its leading whitespace and comments (`-- ...` and `/* ... */`).
fn skip_comments(mut sql: &str) -> &str {
    loop {
        sql = sql.trim_start();
        if let Some(rest) = sql.strip_prefix("--") {
            sql = rest.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(rest) = sql.strip_prefix("/*") {
            sql = rest.split_once("*/").map_or("", |(_, after)| after);
        } else {
            return sql;
        }
    }
}

/// Reads the file's header: DuckDB's magic bytes `DUCK` follow an 8-byte checksum.
fn check_header(path: &Path) -> Result<(), ExecError> {
    let mut header = [0u8; 12];
    let read = std::fs::File::open(path).and_then(|mut file| {
        if !file.metadata()?.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        std::io::Read::read(&mut file, &mut header)
    });
    let read = read.map_err(|e| ExecError {
        kind: ExecErrorKind::Unavailable,
        message: format!("cannot open database {}: {e}", path.display()),
    })?;
    if read < header.len() || &header[8..12] != b"DUCK" {
        return Err(ExecError {
            kind: ExecErrorKind::Runtime,
            message: format!(
                "cannot open database {}: the file is not a DuckDB database",
                path.display()
            ),
        });
    }
    Ok(())
}

/// A failure to open: of the file's content when DuckDB cannot read it as a database (another
/// version's format, corruption), else of the moment (a writer's lock, I/O).
fn open_error(path: &Path, error: &duckdb::Error) -> ExecError {
    let message = error.to_string();
    let content = [
        "Serialization Error",
        "not a valid DuckDB",
        "Corrupt",
        "version",
    ]
    .iter()
    .any(|sign| message.contains(sign));
    ExecError {
        kind: if content {
            ExecErrorKind::Runtime
        } else {
            ExecErrorKind::Unavailable
        },
        message: format!("cannot open database {}: {message}", path.display()),
    }
}

enum RunError {
    Prepare(duckdb::Error),
    Runtime(duckdb::Error),
    Fail(ExecErrorKind, String),
}

/// Signs in DuckDB's messages that the sandbox refused what the statement tried.
const DENIALS: &[&str] = &[
    "Permission Error",
    "read-only mode",
    "configuration has been locked",
    "multiple statements",
];

fn classify(error: RunError, deadline: Option<Instant>) -> ExecError {
    let (error, prepared) = match error {
        RunError::Fail(kind, message) => return ExecError { kind, message },
        RunError::Prepare(e) => (e, false),
        RunError::Runtime(e) => (e, true),
    };
    let message = error.to_string();
    let kind = if message.contains("INTERRUPT") {
        // An interrupt before the deadline was not the time bound's.
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return ExecError {
                kind: ExecErrorKind::Timeout,
                message: "query exceeded its time bound".to_string(),
            };
        }
        ExecErrorKind::Unavailable
    } else if DENIALS.iter().any(|sign| message.contains(sign)) {
        ExecErrorKind::Denied
    } else if message.contains("Out of Memory Error") {
        ExecErrorKind::OutOfMemory
    } else if message.starts_with("IO Error") {
        ExecErrorKind::Unavailable
    } else if prepared {
        ExecErrorKind::Runtime
    } else {
        ExecErrorKind::Prepare
    };
    ExecError { kind, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_queries_are_admitted() {
        for sql in [
            "SELECT 1",
            "  with x AS (SELECT 1) SELECT * FROM x",
            "-- a comment\nSELECT 1",
            "/* c */ (SELECT 1) UNION (SELECT 2)",
            "FROM t",
            "VALUES (1)",
            "EXPLAIN SELECT 1",
        ] {
            assert!(admit(sql).is_ok(), "{sql}");
        }
        for sql in [
            "INSERT INTO t VALUES (1)",
            "ATTACH 'x.db'",
            "/* SELECT */ COPY t TO 'x'",
            "-- SELECT\nPRAGMA version",
            "",
            "select_x",
            "SELECTx 1",
            "SELECT 1; SELECT 2",
            "SELECT 1;DROP TABLE t",
            "SELECT 'a\\'; DROP TABLE t",
            "SELECT $$x$$; DROP TABLE t",
            "EXPLAIN DELETE FROM t",
            "EXPLAIN ANALYZE DELETE FROM t",
            "EXPLAIN EXPLAIN",
            "EXPLAIN EXPLAIN SELECT 1",
        ] {
            assert!(admit(sql).is_err(), "{sql}");
        }
        // A hostile chain of EXPLAINs is refused at once, not recursed into.
        let chain = format!("{}SELECT 1", "EXPLAIN ".repeat(100_000));
        assert!(admit(&chain).is_err());
        for sql in [
            "SELECT 1;",
            "SELECT 1 ; \n",
            "SELECT 'a;b', \"c;d\" FROM t -- e;f\n",
            "SELECT 'it''s; fine' /* ; */",
        ] {
            assert!(admit(sql).is_ok(), "{sql}");
        }
    }

    #[test]
    fn cardinalities_are_summed() {
        let plan = r#"[{"name": "A", "extra_info": {"Estimated Cardinality": "12"},
            "children": [{"extra_info": {"Estimated Cardinality":"30"}}]}]"#;
        assert_eq!(estimated_cardinalities(plan), Some(42.0));
        assert_eq!(estimated_cardinalities("[]"), None);
    }
}
