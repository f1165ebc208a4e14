//! What stops a command that depends on a model server (a generator's `--llm-url`, the
//! paraphrases' embeddings): the server failing, or its answers not being cached.

use sqlgate_eval::error::OutputError;

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
    #[error(transparent)]
    Service(#[from] ServiceError),
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
