//! SQLMorph's semantic column matching through an OpenAI-compatible `/v1/embeddings`
//! endpoint, with every vector cached on disk so reruns and CI make no request.
//!
//! The cache is a JSONL file of `{"key": sha256(model, text), "vector": [...]}` lines. A new
//! vector is appended as one complete line the moment it arrives; a torn last line (a run
//! killed mid-write) is cut off when the file is read back.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use super::Client;
use crate::error::InputError;
use crate::metrics::sqlmorph::Embedder;

pub struct CachedEmbedder {
    client: Client,
    model: String,
    path: PathBuf,
    cache: Mutex<HashMap<String, Vec<f32>>>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Line {
    key: String,
    vector: Vec<f32>,
}

impl CachedEmbedder {
    /// Reads the cache at `path` (missing: empty).
    pub fn open(client: Client, model: &str, path: &Path) -> Result<CachedEmbedder, InputError> {
        let mut cache = HashMap::new();
        match std::fs::read_to_string(path) {
            Ok(text) => {
                // Cut a torn last line off so the next append starts on a line of its own.
                if !text.is_empty() && !text.ends_with('\n') {
                    let whole = text.rfind('\n').map_or(0, |end| end + 1);
                    crate::gate::snapshot::write_atomically(path, &text.as_bytes()[..whole])?;
                }
                for line in text.lines() {
                    // A torn or foreign line is skipped: the vector is asked for again.
                    if let Ok(Line { key, vector }) = serde_json::from_str(line) {
                        cache.insert(key, vector);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(InputError::file(
                    path,
                    format!("cannot read the embedding cache: {e}"),
                ))
            }
        }
        Ok(CachedEmbedder {
            client,
            model: model.to_string(),
            path: path.to_path_buf(),
            cache: Mutex::new(cache),
        })
    }

    fn key(&self, text: &str) -> String {
        let mut hasher = Sha256::new();
        hasher.update(self.model.as_bytes());
        hasher.update([0]);
        hasher.update(text.as_bytes());
        format!("{:x}", hasher.finalize())
    }

    fn remember(&self, lines: &[Line]) -> Result<(), String> {
        if let Some(folder) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        for line in lines {
            let mut text = serde_json::to_string(line).map_err(|e| e.to_string())?;
            text.push('\n');
            file.write_all(text.as_bytes())
                .map_err(|e| format!("{}: {e}", self.path.display()))?;
        }
        Ok(())
    }
}

impl Embedder for CachedEmbedder {
    fn model_id(&self) -> &str {
        &self.model
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let keys: Vec<String> = texts.iter().map(|t| self.key(t)).collect();
        let missing: Vec<usize> = {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            (0..texts.len())
                .filter(|&i| !cache.contains_key(&keys[i]))
                .collect()
        };
        if !missing.is_empty() {
            let inputs: Vec<&str> = missing.iter().map(|&i| texts[i].as_str()).collect();
            let vectors = self
                .client
                .embed(&self.model, &inputs)
                .map_err(|e| e.message)?;
            let lines: Vec<Line> = missing
                .iter()
                .zip(vectors)
                .map(|(&i, vector)| Line {
                    key: keys[i].clone(),
                    vector,
                })
                .collect();
            self.remember(&lines)?;
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            for line in lines {
                cache.insert(line.key, line.vector);
            }
        }
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        Ok(keys.iter().map(|key| cache[key].clone()).collect())
    }
}
