//! SQLMorph's semantic column matching through an OpenAI-compatible `/v1/embeddings`
//! endpoint, with every vector cached on disk (by model and text) so reruns and CI make no
//! request.

use std::path::Path;
use std::sync::OnceLock;

use super::cache::JsonlCache;
use super::{Client, LlmError};
use sqlgate_base::embed::Embedder;
use sqlgate_base::error::{AskError, FileError, ServiceError};

/// Sends a request again while it fails transiently (HTTP 429 or 5xx, a timeout, a refused
/// connection), with backoff. The client sends each request once; the throttle that retries
/// system calls lives in the `system` layer above this one and implements this, so embedding
/// requests are retried exactly as chat requests are.
pub trait Retry: Send + Sync {
    /// The vectors, or the last failure once retries ran out (still `retryable` when it was
    /// transient).
    fn retry(
        &self,
        send: &mut dyn FnMut() -> Result<Vec<Vec<f32>>, LlmError>,
    ) -> Result<Vec<Vec<f32>>, LlmError>;
}

/// An [`Embedder`] asking an OpenAI-compatible `/v1/embeddings` endpoint, each vector cached by
/// model and text.
pub struct CachedEmbedder {
    client: Client,
    model: String,
    cache: JsonlCache<Vec<f32>>,
    retry: Box<dyn Retry>,
    /// The transient failure retries did not cure: the server is down, and every later request
    /// fails with it at once instead of waiting out the backoff again.
    down: OnceLock<String>,
}

impl CachedEmbedder {
    /// Reads the cache at `path` (missing: empty); requests go through `retry`.
    pub fn open(
        client: Client,
        model: &str,
        path: &Path,
        retry: Box<dyn Retry>,
    ) -> Result<CachedEmbedder, FileError> {
        Ok(CachedEmbedder {
            client,
            model: model.to_string(),
            cache: JsonlCache::open(path)?,
            retry,
            down: OnceLock::new(),
        })
    }

    fn request(&self, inputs: &[&str]) -> Result<Vec<Vec<f32>>, ServiceError> {
        if let Some(failure) = self.down.get() {
            return Err(ServiceError(failure.clone()));
        }
        self.retry
            .retry(&mut || self.client.embed(&self.model, inputs))
            .map_err(|error| {
                if error.retryable {
                    let _ = self.down.set(error.message.clone());
                }
                ServiceError(error.message)
            })
    }
}

impl Embedder for CachedEmbedder {
    fn model_id(&self) -> &str {
        &self.model
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, AskError> {
        let keys: Vec<String> = texts
            .iter()
            .map(|t| JsonlCache::<Vec<f32>>::key(&[&self.model, t]))
            .collect();
        let missing: Vec<usize> = (0..texts.len())
            .filter(|&i| self.cache.get(&keys[i]).is_none())
            .collect();
        if !missing.is_empty() {
            let inputs: Vec<&str> = missing.iter().map(|&i| texts[i].as_str()).collect();
            let vectors = self.request(&inputs)?;
            self.cache.put(
                missing
                    .iter()
                    .map(|&i| keys[i].clone())
                    .zip(vectors)
                    .collect(),
            )?;
        }
        keys.iter()
            .map(|key| {
                self.cache.get(key).ok_or_else(|| {
                    ServiceError("an embedding went missing from the cache".into()).into()
                })
            })
            .collect()
    }
}
