//! How a run or command ends when it does not simply pass, and the one place that decides its
//! exit code. `sqlgate` (every subcommand) and the [`harness!`](crate::harness!) exit through
//! [`Error::exit_code`], so the codes documented in the table of docs/commands.md are the codes returned.

use sqlgate_eval::error::{AskError, FileError, InputError, OutputError, ServiceError};

use crate::config::ConfigError;
use crate::system::SetupError;

/// Everything went as asked: the tests passed, the outputs are written.
pub const EXIT_OK: u8 = 0;
/// Bad input: a malformed or unreadable benchmark, predictions file, cassette or run record; a
/// mistake in `sqlgate.toml`; a `[[system]]` that cannot be built; a bad argument.
pub const EXIT_BAD_INPUT: u8 = 2;
/// `test`: the filters select no test to run (nextest's `NO_TESTS_RUN`).
pub const EXIT_NO_TESTS_RUN: u8 = 4;
/// A server the command needs could not be asked (sysexits' `EX_UNAVAILABLE`): under `test`
/// and `merge` the system (unreachable or not serving its model when checked before asking, or
/// stopped after consecutive connection failures; the cases it did not answer fail as
/// `unavailable`, and a rerun with `--record new` asks only those); under `generate` the
/// `--llm-url` or embeddings server.
pub const EXIT_SERVICE_UNAVAILABLE: u8 = 69;
/// An output cannot be written: the JUnit report, a snapshot, a run record, the cassette, a
/// GitHub output, a generator's files (a full disk, a missing permission). sysexits'
/// `EX_CANTCREAT` ("a user-specified output file cannot be created") rather than `EX_IOERR`,
/// which covers reading too: this code says the inputs were fine and the run itself was not
/// at fault, only where its results go.
pub const EXIT_OUTPUT_FAILED: u8 = 73;
/// `test`, `merge`: at least one test failed (nextest's `TEST_RUN_FAILED`); `audit --strict`:
/// the gold has findings.
pub const EXIT_TESTS_FAILED: u8 = 100;

/// Why a command did not end with [`EXIT_OK`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A command-line argument or environment variable that cannot be used.
    #[error("{0}")]
    Usage(String),
    /// A mistake in `sqlgate.toml`, at its line and column.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A benchmark, predictions file, cassette, snapshot or run record that cannot be loaded.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A `[[system]]` that cannot be built.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// An output that cannot be written.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// A model server a generator needs failed.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// `test`: nothing to run, and why.
    #[error("no tests to run: {0}")]
    NoTestsRun(String),
    /// `test`, `merge`: the system under test could not be asked for some cases.
    #[error("the system could not be asked: {} not answered (system_error: unavailable)", count_cases(*.0))]
    SystemUnavailable(usize),
    /// `test`, `merge`: some tests failed.
    #[error("test run failed: {} failed", count_tests(*.0))]
    TestsFailed(usize),
    /// `audit --strict`: the gold has findings.
    #[error("the audit has {} (--strict)", crate::report::plural(*.0, "finding"))]
    AuditFindings(usize),
}

impl Error {
    /// The process's exit code: the only place the codes are decided.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::Config(_) | Error::Input(_) | Error::Setup(_) => {
                EXIT_BAD_INPUT
            }
            Error::NoTestsRun(_) => EXIT_NO_TESTS_RUN,
            Error::Service(_) | Error::SystemUnavailable(_) => EXIT_SERVICE_UNAVAILABLE,
            Error::Output(_) => EXIT_OUTPUT_FAILED,
            Error::TestsFailed(_) | Error::AuditFindings(_) => EXIT_TESTS_FAILED,
        }
    }
}

impl From<AskError> for Error {
    fn from(error: AskError) -> Error {
        match error {
            AskError::Service(error) => Error::Service(error),
            AskError::Cache(error) => Error::Output(error),
        }
    }
}

impl From<FileError> for Error {
    fn from(error: FileError) -> Error {
        match error {
            FileError::Input(error) => Error::Input(error),
            FileError::Output(error) => Error::Output(error),
        }
    }
}

fn count_cases(count: usize) -> String {
    count_of(count, "case")
}

fn count_tests(count: usize) -> String {
    count_of(count, "test")
}

fn count_of(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}
