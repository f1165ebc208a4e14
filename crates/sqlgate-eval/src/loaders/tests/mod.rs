//! Loader tests on small temporary files, and on the shared real data when present.

mod gold;
mod native;
mod predictions;
mod shared_data;

use std::path::{Path, PathBuf};

use super::{load, Benchmark, LoadOptions};
use crate::error::InputError;

/// Writes `text` to `dir/name`, creating folders, and returns the path.
fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create test folder");
    }
    std::fs::write(&path, text).expect("write test file");
    path
}

/// Creates a small real SQLite database at `dir/name`.
fn make_db(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create test folder");
    }
    let conn = rusqlite::Connection::open(&path).expect("create test database");
    conn.execute_batch("CREATE TABLE IF NOT EXISTS t (a INTEGER);")
        .expect("fill test database");
    path
}

fn load_default(path: &Path) -> Result<Benchmark, InputError> {
    load(path, &LoadOptions::on(sqlgate_engine_sqlite::files()))
}

/// Asserts that loading fails, that the error names `file` and, when given, the record and
/// line, and that its message contains every fragment.
fn expect_error(
    result: Result<impl std::fmt::Debug, InputError>,
    file: &Path,
    record: Option<usize>,
    line: Option<usize>,
    fragments: &[&str],
) -> InputError {
    let error = result.expect_err("loading should fail");
    let shown = error.to_string();
    assert_eq!(error.file, file, "{shown}");
    assert!(shown.starts_with(&file.display().to_string()), "{shown}");
    if record.is_some() {
        assert_eq!(error.record, record, "{shown}");
    }
    if line.is_some() {
        assert_eq!(error.line, line, "{shown}");
    }
    for fragment in fragments {
        assert!(
            shown.contains(fragment),
            "`{fragment}` missing from: {shown}"
        );
    }
    error
}
