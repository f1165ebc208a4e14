//! A durable key → value cache of LLM results, so reruns and CI make no request: a JSONL file
//! of `{"key": ..., "value": ...}` lines, each appended whole the moment it is known. A torn
//! last line (a run killed mid-write) is cut off when the file is opened.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use sqlgate_base::error::{FileError, InputError, OutputError};
use sqlgate_base::files::write_atomically;
use sqlgate_base::secrets;

/// Answers kept in a JSONL file, one `{key, value}` a line, so that reruns and CI ask nothing
/// already asked.
pub struct JsonlCache<V> {
    path: PathBuf,
    entries: Mutex<HashMap<String, V>>,
}

#[derive(Serialize, Deserialize)]
struct Line<V> {
    key: String,
    value: V,
}

impl<V: Serialize + DeserializeOwned + Clone> JsonlCache<V> {
    /// Reads the cache at `path` (missing: empty).
    pub fn open(path: &Path) -> Result<JsonlCache<V>, FileError> {
        let mut entries = HashMap::new();
        match std::fs::read_to_string(path) {
            Ok(text) => {
                if !text.is_empty() && !text.ends_with('\n') {
                    let whole = text.rfind('\n').map_or(0, |end| end + 1);
                    write_atomically(path, &text.as_bytes()[..whole])?;
                }
                for line in text.lines() {
                    // A torn or foreign line is skipped: its value is asked for again.
                    if let Ok(Line { key, value }) = serde_json::from_str::<Line<V>>(line) {
                        entries.insert(key, value);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(InputError::file(path, format!("cannot read the cache: {e}")).into())
            }
        }
        Ok(JsonlCache {
            path: path.to_path_buf(),
            entries: Mutex::new(entries),
        })
    }

    /// A key for these parts (model, prompt, inputs...).
    pub fn key(parts: &[&str]) -> String {
        let mut hasher = Sha256::new();
        for part in parts {
            hasher.update(part.as_bytes());
            hasher.update([0]);
        }
        format!("{:x}", hasher.finalize())
    }

    /// The value kept under `key`, if any.
    pub fn get(&self, key: &str) -> Option<V> {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    /// Records values, on disk first.
    pub fn put(&self, values: Vec<(String, V)>) -> Result<(), OutputError> {
        let fail = |e: std::io::Error| OutputError::new(&self.path, e);
        if let Some(folder) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder).map_err(fail)?;
        }
        let mut text = String::new();
        for (key, value) in &values {
            text.push_str(
                &serde_json::to_string(&Line {
                    key: key.clone(),
                    value: value.clone(),
                })
                .map_err(|e| fail(e.into()))?,
            );
            text.push('\n');
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(fail)?;
        file.write_all(secrets::redact(&text).as_bytes())
            .map_err(fail)?;
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(values);
        Ok(())
    }
}
