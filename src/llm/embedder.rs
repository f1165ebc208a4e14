//! SQLMorph's semantic column matching through an OpenAI-compatible `/v1/embeddings`
//! endpoint, with every vector cached on disk (by model and text) so reruns and CI make no
//! request.

use std::path::Path;

use super::cache::JsonlCache;
use super::Client;
use crate::error::InputError;
use crate::metrics::sqlmorph::Embedder;

pub struct CachedEmbedder {
    client: Client,
    model: String,
    cache: JsonlCache<Vec<f32>>,
}

impl CachedEmbedder {
    /// Reads the cache at `path` (missing: empty).
    pub fn open(client: Client, model: &str, path: &Path) -> Result<CachedEmbedder, InputError> {
        Ok(CachedEmbedder {
            client,
            model: model.to_string(),
            cache: JsonlCache::open(path)?,
        })
    }
}

impl Embedder for CachedEmbedder {
    fn model_id(&self) -> &str {
        &self.model
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let keys: Vec<String> = texts
            .iter()
            .map(|t| JsonlCache::<Vec<f32>>::key(&[&self.model, t]))
            .collect();
        let missing: Vec<usize> = (0..texts.len())
            .filter(|&i| self.cache.get(&keys[i]).is_none())
            .collect();
        if !missing.is_empty() {
            let inputs: Vec<&str> = missing.iter().map(|&i| texts[i].as_str()).collect();
            let vectors = self
                .client
                .embed(&self.model, &inputs)
                .map_err(|e| e.message)?;
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
                self.cache
                    .get(key)
                    .ok_or_else(|| "an embedding went missing from the cache".to_string())
            })
            .collect()
    }
}
