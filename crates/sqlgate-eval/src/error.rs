//! Errors in user input: every one names the file, the record or line, and the problem.
//! The binary maps them to exit code 2.

use std::fmt;
use std::path::{Path, PathBuf};

/// Exit codes, documented in README; defined here so that every front end (`cli`, `harness`)
/// uses the same ones.
pub const EXIT_OK: u8 = 0;
/// Malformed input or usage: a file, a flag or a database the run cannot use.
pub const EXIT_BAD_INPUT: u8 = 2;
/// `test`: at least one test failed (nextest's `TEST_RUN_FAILED`).
pub const EXIT_TESTS_FAILED: u8 = 100;
/// `test`: the filters select no test to run (nextest's `NO_TESTS_RUN`).
pub const EXIT_NO_TESTS_RUN: u8 = 4;
/// `test`, `merge`: the system could not be asked (sysexits' `EX_UNAVAILABLE`): unreachable
/// or not serving its model when checked before asking, or stopped after consecutive
/// connection failures. The cases it did not answer fail as `unavailable`; a rerun with
/// `--record new` asks only those.
pub const EXIT_SYSTEM_UNAVAILABLE: u8 = 69;

/// Bad input: a malformed file, an unknown database, misaligned predictions...
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file at fault (or the flag's value, for a bad option).
    pub file: PathBuf,
    /// 1-based line, when the problem has one.
    pub line: Option<usize>,
    /// 0-based record index, when the format has records.
    pub record: Option<usize>,
    /// What is wrong, for a person to act on.
    pub message: String,
}

impl InputError {
    /// An error about a whole file.
    pub fn file(file: impl AsRef<Path>, message: impl Into<String>) -> Self {
        InputError {
            file: file.as_ref().to_path_buf(),
            line: None,
            record: None,
            message: message.into(),
        }
    }

    /// The same error pinned to a 1-based line of the file.
    pub fn at_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }

    /// The same error pinned to a 0-based record of the file.
    pub fn at_record(mut self, record: usize) -> Self {
        self.record = Some(record);
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        match (self.record, self.line) {
            (Some(record), Some(line)) => write!(f, ": record {record} (line {line})")?,
            (Some(record), None) => write!(f, ": record {record}")?,
            (None, Some(line)) => write!(f, ": line {line}")?,
            (None, None) => {}
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for InputError {}

/// True when `name` can be one component of a path (a suite's snapshot, a system's cassette,
/// a database file) without reaching outside its folder.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}
