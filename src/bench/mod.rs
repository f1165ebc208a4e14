//! Benchmarks: loaders turn files of every supported format into cases.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where a case or prediction came from, for error messages and JUnit `file`/`line`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SourceRef {
    pub file: PathBuf,
    /// 0-based record index in the file.
    pub record: usize,
    /// 1-based line of the record, where the format has lines.
    pub line: Option<usize>,
}

/// One benchmark question.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Case {
    /// Stable across runs and machines: the record's own id, else its 0-based index.
    pub id: String,
    pub db: String,
    pub question: String,
    pub evidence: Option<String>,
    /// Acceptable gold queries (alternatives). Empty exactly when the case is infeasible.
    pub gold: Vec<String>,
    pub feasible: bool,
    /// Free tags: difficulty, hardness, category, source...
    pub tags: BTreeMap<String, String>,
    pub source: SourceRef,
}

/// A loaded benchmark: its cases and where their databases live.
#[derive(Debug, Clone)]
pub struct Benchmark {
    pub name: String,
    pub cases: Vec<Case>,
    /// Folder searched for `<db>.sqlite` and `<db>/<db>.sqlite`.
    pub db_dir: PathBuf,
}
