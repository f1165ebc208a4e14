//! The interface of a text embedder: the in-process ones and a server's `/v1/embeddings`
//! alike.

use crate::error::AskError;

/// Turns texts into vectors; SC compares column descriptors by cosine similarity.
///
/// Implementations must be deterministic for a fixed model, since SC matching is only as
/// reproducible as its embeddings.
pub trait Embedder: Sync {
    /// Names the model in reports and cache keys, e.g. `text-embedding-3-small`.
    fn model_id(&self) -> &str;

    /// One vector per text, in order; `Err` when the model's server fails, or its vectors
    /// cannot be cached.
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, AskError>;
}
