//! Mistakes in `sqlgate.toml`, at their place in the file.

use std::fmt;
use std::path::{Path, PathBuf};

/// A mistake in the configuration: shown as `sqlgate.toml:3:7: message`, the form editors and
/// terminals jump to, or `sqlgate.toml: message` when it has no place (a missing profile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The configuration file.
    pub file: PathBuf,
    /// 1-based line and column (in characters).
    pub at: Option<(usize, usize)>,
    /// What is wrong, for a person to act on.
    pub message: String,
}

impl ConfigError {
    /// A mistake about the whole file.
    pub fn file(file: &Path, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: file.to_path_buf(),
            at: None,
            message: message.into(),
        }
    }

    /// A mistake at byte `offset` of the configuration's `text`.
    pub fn at(file: &Path, text: &str, offset: usize, message: impl Into<String>) -> ConfigError {
        let before = text.get(..offset.min(text.len())).unwrap_or(text);
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        ConfigError {
            file: file.to_path_buf(),
            at: Some((line, column)),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some((line, column)) = self.at {
            write!(f, ":{line}:{column}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistake_is_shown_at_its_line_and_column_in_characters() {
        let text = "[[suite]]\nnamé = 1\n";
        let offset = text.find('=').unwrap();
        let error = ConfigError::at(Path::new("sqlgate.toml"), text, offset, "unknown");
        assert_eq!(error.to_string(), "sqlgate.toml:2:6: unknown");
        let whole = ConfigError::file(Path::new("sqlgate.toml"), "no profile `x`");
        assert_eq!(whole.to_string(), "sqlgate.toml: no profile `x`");
    }
}
