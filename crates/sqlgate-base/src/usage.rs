//! The tokens a model server counted for one answer: read from chat responses by the model
//! client, from answer documents by the loaders and systems, and kept in cassettes and records.

use serde::{Deserialize, Serialize};

/// The tokens a server counted for one answer (a chat response's `usage`). Read strictly where
/// sqlgate stores it (cassettes, answer documents): both counts, nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Tokens of the prompt.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
}

impl Usage {
    /// Prompt and completion tokens together; `None` when a server's counts add up to more
    /// than 64 bits hold (no model spends that: the counts are garbage).
    pub fn total(&self) -> Option<u64> {
        self.prompt_tokens.checked_add(self.completion_tokens)
    }
}
