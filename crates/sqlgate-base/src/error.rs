//! The kinds of failure every layer shares: bad input ([`InputError`], naming the file, the
//! record or line, and the problem), an output that cannot be written ([`OutputError`]), and a
//! model server that fails ([`ServiceError`], e.g. an embeddings endpoint or a generator's
//! chat model). The gate's `sqlgate::Error` gathers them and decides the exit codes.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

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

/// An output (a JUnit report, a snapshot, a run record, a generated file...) that could not be
/// written: a full disk, a missing permission, a folder where the file should go. Written
/// atomically, it is left as it was.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct OutputError {
    /// The file that could not be written.
    pub path: PathBuf,
    /// Why, as the system said.
    pub source: io::Error,
}

impl OutputError {
    /// The failure to write `path`.
    pub fn new(path: impl AsRef<Path>, source: io::Error) -> Self {
        OutputError {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }
}

/// A step that reads an input and writes an output, where either can fail: a cache cut back
/// to its last whole line, databases built from a `tables.json`.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The input could not be read or used.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The output could not be written.
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// A model server a command needs gave no usable answer after the retries: unreachable,
/// timing out, refusing the request. The message names the server's URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ServiceError(pub String);

impl ServiceError {
    /// The same failure, saying what was being asked: `--llm-url, case 3: ...`.
    pub fn context(self, what: impl std::fmt::Display) -> ServiceError {
        ServiceError(format!("{what}: {}", self.0))
    }
}

/// Why a question to a model server has no answer: the server failed, or the answer it gave
/// could not be written to the cache (which would ask it again next time).
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// The server gave no usable answer.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// The answer could not be kept in the cache.
    #[error(transparent)]
    Cache(#[from] OutputError),
}

impl AskError {
    /// Says what was being asked, for a server's failure (a cache's names its file already).
    pub fn context(self, what: impl std::fmt::Display) -> AskError {
        match self {
            AskError::Service(error) => AskError::Service(error.context(what)),
            AskError::Cache(error) => AskError::Cache(error),
        }
    }
}

/// True when `name` can be one component of a path (a suite's snapshot, a system's cassette,
/// a database file) without reaching outside its folder, and can be printed (see
/// [`unprintable_char`]).
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\'])
        && unprintable_char(name).is_none()
}

/// The first character of `text` that no name or id sqlgate prints may hold: a control
/// character (NUL, CR, LF, ESC...), a Unicode line or paragraph separator, or a bidirectional
/// control. A line break in a CI log starts a line of its own, which GitHub Actions runs as a
/// workflow command when it starts with `::`; the others hide or reorder what a reader sees.
pub fn unprintable_char(text: &str) -> Option<char> {
    text.chars().find(|&c| {
        c.is_control()
            || matches!(
                c,
                '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}'
                    | '\u{2066}'..='\u{2069}'
            )
    })
}

/// `text`, the `what` of a record (`case id`, `database name`...), refused when it holds an
/// [`unprintable_char`]; the message shows it escaped.
pub fn check_printable(what: &str, text: &str) -> Result<(), Unprintable> {
    match unprintable_char(text) {
        Some(found) => Err(Unprintable {
            what: what.to_string(),
            text: text.to_string(),
            found,
        }),
        None => Ok(()),
    }
}

/// A name or id holding an [`unprintable_char`] ([`check_printable`]): the caller says where
/// it was read, the message shows the text escaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} \"{}\" holds the control character U+{:04X}: names and ids are printed in logs and \
     reports, where it would start a line of its own or hide text",
    .text.escape_debug(),
    u32::from(*.found)
)]
pub struct Unprintable {
    /// What the text is: `case id`, `database name`...
    pub what: String,
    /// The text as read.
    pub text: String,
    /// Its first unprintable character.
    pub found: char,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unprintable_name_is_shown_escaped_with_its_code_point() {
        assert_eq!(check_printable("case id", "q1"), Ok(()));
        let error = check_printable("case id", "q\n1").unwrap_err();
        assert_eq!(error.found, '\n');
        assert_eq!(
            error.to_string(),
            "case id \"q\\n1\" holds the control character U+000A: names and ids are printed in \
             logs and reports, where it would start a line of its own or hide text"
        );
    }
}
