//! The value model shared by every evaluator (spec `evaluators.md` §0.1): SQLite storage
//! classes compared with Python `sqlite3` semantics.

/// One cell of a query result.
#[derive(Debug, Clone)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}
