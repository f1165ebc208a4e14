//! `[[system]] abstention = { ... }`: when an answer counts as an abstention.

use regex::Regex;
use serde::Deserialize;

/// `[[system]] abstention = { apology = true, pattern = "(?i)cannot answer", vote = 1.0 }`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AbstentionConfig {
    /// A SELECT of string literals only (`SELECT 'Sorry, ...' AS answer`) abstains. Unset:
    /// only in a suite that declares abstention (`trustsql` mode, or infeasible questions),
    /// as `sqlgate score` decides; elsewhere the references score it as SQL.
    pub apology: Option<bool>,
    /// An answer whose SQL matches this regular expression abstains.
    pub pattern: Option<String>,
    /// Voting over the reply's `samples`: the most common SQL is kept when at least this share
    /// of samples agree (1.0: unanimity), else the system abstains. Unset: no voting.
    pub vote: Option<f64>,
}

impl AbstentionConfig {
    /// The compiled pattern, or the first problem with the values.
    pub fn checked_pattern(&self) -> Result<Option<Regex>, AbstentionError> {
        if self.vote.is_some_and(|r| !(r > 0.0 && r <= 1.0)) {
            return Err(AbstentionError::Vote);
        }
        self.pattern
            .as_deref()
            .map(Regex::new)
            .transpose()
            .map_err(AbstentionError::Pattern)
    }
}

/// Why an `[system.abstention]` table is refused.
#[derive(Debug, thiserror::Error)]
pub enum AbstentionError {
    /// `vote` outside (0, 1].
    #[error("abstention vote must be a share in (0, 1]")]
    Vote,
    /// A `pattern` that is no regular expression.
    #[error("abstention pattern: {0}")]
    Pattern(regex::Error),
}
