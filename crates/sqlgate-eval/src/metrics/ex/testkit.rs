//! Test helpers: canned and SQLite-backed query runners, value and case builders.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::exec::{ExecError, ExecErrorKind, Execution, ResultSet, Value};

use super::{evaluate, CaseInput, Mode, ModeOptions, Outcome, QueryRunner};

pub fn i(v: i64) -> Value {
    Value::Int(v)
}

pub fn r(v: f64) -> Value {
    Value::Real(v)
}

pub fn t(v: &str) -> Value {
    Value::Text(v.to_string())
}

pub fn null() -> Value {
    Value::Null
}

/// A result with columns `c0, c1, ...` as wide as its first row (one column when empty).
pub fn rows(rows: Vec<Vec<Value>>) -> ResultSet {
    let width = rows.first().map_or(1, Vec::len);
    let columns = (0..width).map(|j| format!("c{j}")).collect();
    ResultSet {
        columns,
        rows,
        lossy_text: false,
    }
}

pub fn named(columns: &[&str], rows: Vec<Vec<Value>>) -> ResultSet {
    ResultSet {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
        lossy_text: false,
    }
}

/// Maps exact SQL texts to canned executions; unknown SQL is a prepare error.
#[derive(Default)]
pub struct FakeRunner {
    gold: HashMap<String, Execution>,
    pred: HashMap<String, Execution>,
}

fn ok(rs: ResultSet, elapsed: Duration) -> Execution {
    Execution {
        result: Ok(Arc::new(rs)),
        elapsed,
    }
}

fn err(kind: ExecErrorKind, message: &str) -> Execution {
    Execution {
        result: Err(ExecError {
            kind,
            message: message.to_string(),
        }),
        elapsed: Duration::from_millis(1),
    }
}

impl FakeRunner {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_gold(mut self, sql: &str, rs: ResultSet) -> Self {
        self.gold
            .insert(sql.to_string(), ok(rs, Duration::from_millis(1)));
        self
    }

    pub fn with_pred(mut self, sql: &str, rs: ResultSet) -> Self {
        self.pred
            .insert(sql.to_string(), ok(rs, Duration::from_millis(1)));
        self
    }

    pub fn with_pred_taking(mut self, sql: &str, rs: ResultSet, elapsed: Duration) -> Self {
        self.pred.insert(sql.to_string(), ok(rs, elapsed));
        self
    }

    pub fn with_gold_failure(mut self, sql: &str, kind: ExecErrorKind, message: &str) -> Self {
        self.gold.insert(sql.to_string(), err(kind, message));
        self
    }

    pub fn with_pred_failure(mut self, sql: &str, kind: ExecErrorKind, message: &str) -> Self {
        self.pred.insert(sql.to_string(), err(kind, message));
        self
    }
}

fn lookup(map: &HashMap<String, Execution>, sql: &str) -> Execution {
    map.get(sql).cloned().unwrap_or_else(|| {
        err(
            ExecErrorKind::Prepare,
            &format!("no canned result for {sql:?}"),
        )
    })
}

impl QueryRunner for FakeRunner {
    fn gold(&self, _db: &Path, sql: &str) -> Execution {
        lookup(&self.gold, sql)
    }

    fn pred(&self, _db: &Path, sql: &str) -> Execution {
        lookup(&self.pred, sql)
    }

    fn driver(&self) -> &'static dyn crate::exec::Driver {
        &sqlgate_engine_sqlite::DRIVER
    }
}

/// Runs queries on real SQLite files with the `ignore` decoding policy.
pub struct SqliteRunner;

impl SqliteRunner {
    fn run(db: &Path, sql: &str) -> Execution {
        let start = Instant::now();
        let result = Self::query(db, sql).map(Arc::new).map_err(|e| ExecError {
            kind: ExecErrorKind::Runtime,
            message: e.to_string(),
        });
        Execution {
            result,
            elapsed: start.elapsed(),
        }
    }

    fn query(db: &Path, sql: &str) -> rusqlite::Result<ResultSet> {
        let conn = rusqlite::Connection::open(db)?;
        let mut stmt = conn.prepare(sql)?;
        let columns: Vec<String> = stmt.column_names().map(|c| c.to_string()).collect();
        let width = columns.len();
        let mut lossy_text = false;
        let mut out = Vec::new();
        let mut result_rows = stmt.query([])?;
        while let Some(row) = result_rows.next()? {
            let mut values = Vec::with_capacity(width);
            for j in 0..width {
                values.push(match row.get_ref(j)? {
                    rusqlite::types::ValueRef::Null => Value::Null,
                    rusqlite::types::ValueRef::Integer(v) => Value::Int(v),
                    rusqlite::types::ValueRef::Real(v) => Value::Real(v),
                    rusqlite::types::ValueRef::Text(b) => {
                        let text: String = b.utf8_chunks().map(|c| c.valid()).collect();
                        lossy_text |= text.len() != b.len();
                        Value::Text(text)
                    }
                    rusqlite::types::ValueRef::Blob(b) => Value::Blob(b.to_vec()),
                });
            }
            out.push(values);
        }
        Ok(ResultSet {
            columns,
            rows: out,
            lossy_text,
        })
    }
}

impl QueryRunner for SqliteRunner {
    fn gold(&self, db: &Path, sql: &str) -> Execution {
        Self::run(db, sql)
    }

    fn pred(&self, db: &Path, sql: &str) -> Execution {
        Self::run(db, sql)
    }

    fn driver(&self) -> &'static dyn crate::exec::Driver {
        &sqlgate_engine_sqlite::DRIVER
    }
}

/// An owned case to lend as `CaseInput`.
pub struct TestCase {
    pub gold: Vec<String>,
    pub question: String,
    pub category: Option<String>,
    pub db: String,
    pub db_files: Vec<PathBuf>,
    pub tied: Vec<PathBuf>,
    pub ignore_order: Option<bool>,
}

impl TestCase {
    pub fn new(gold: &str) -> Self {
        TestCase {
            gold: vec![gold.to_string()],
            question: "q".to_string(),
            category: None,
            db: "db".to_string(),
            db_files: vec![PathBuf::from("db.sqlite")],
            tied: Vec::new(),
            ignore_order: None,
        }
    }

    pub fn input(&self) -> CaseInput<'_> {
        CaseInput {
            gold: &self.gold,
            question: &self.question,
            category: self.category.as_deref(),
            db: &self.db,
            db_files: &self.db_files,
            tied: &self.tied,
            ignore_order: self.ignore_order,
        }
    }

    pub fn run(&self, mode: Mode, pred: &str, runner: &dyn QueryRunner) -> Outcome {
        evaluate(mode, &ModeOptions::default(), &self.input(), pred, runner)
    }
}
