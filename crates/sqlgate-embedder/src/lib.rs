//! sqlgate's in-process sentence embedder: a sentence-transformers folder holding a BERT-family
//! encoder (`config.json`, `tokenizer.json`, `model.safetensors`, `1_Pooling/config.json`; the
//! standard is all-MiniLM-L6-v2), run on the CPU with candle.
//!
//! As sentence-transformers does (Reimers and Gurevych, "Sentence-BERT", 2019): each text is
//! tokenized and cut at the model's `max_seq_length`, encoded, its token vectors mean-pooled over
//! the attention mask (or its `[CLS]` vector taken, as the pooling config says), and L2-normalised
//! when the folder's `modules.json` lists a `Normalize` module. Texts are embedded in batches of
//! [`BATCH`]; candle's matrix products use every core.
//!
//! The folder is someone else's file: each file is checked before use (a missing or unreadable
//! file, a config that does not parse, a pooling mode other than mean or CLS, weights that do not
//! fit the config) and the error names the file.

use std::io::Read;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use sqlgate_base::embed::Embedder;
use sqlgate_base::error::{AskError, ServiceError};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// Texts encoded at once: large enough to keep the cores busy, small enough that a batch of
/// long texts stays within a few hundred MB.
pub const BATCH: usize = 32;
/// The longest input in tokens when the folder does not say (`sentence_bert_config.json`).
const DEFAULT_MAX_TOKENS: usize = 256;
/// The largest model file read: ten times all-MiniLM-L6-v2's.
const MAX_WEIGHTS_BYTES: u64 = 1 << 30;
/// The largest JSON file read (`tokenizer.json` is about 0.5 MB).
const MAX_JSON_BYTES: u64 = 64 << 20;

/// Why a model folder cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", file.display())]
pub struct ModelError {
    /// The file at fault.
    pub file: PathBuf,
    /// What is wrong with it.
    pub problem: String,
}

fn model_error(file: &Path, problem: impl std::fmt::Display) -> ModelError {
    ModelError {
        file: file.to_path_buf(),
        problem: problem.to_string(),
    }
}

/// How token vectors become one sentence vector (`1_Pooling/config.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pooling {
    Mean,
    Cls,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

#[derive(Deserialize)]
struct SentenceConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct Module {
    #[serde(rename = "type")]
    kind: String,
}

/// A sentence-transformers model loaded in memory.
pub struct SentenceModel {
    id: String,
    model: BertModel,
    tokenizer: Tokenizer,
    pooling: Pooling,
    normalize: bool,
}

/// `file`'s bytes, refused past `limit` and unless it is a regular file (a FIFO would block, a
/// device never end).
fn read(file: &Path, limit: u64) -> Result<Vec<u8>, ModelError> {
    let cannot = |e: std::io::Error| model_error(file, format!("cannot read it: {e}"));
    let metadata = std::fs::metadata(file).map_err(cannot)?;
    if !metadata.is_file() {
        return Err(model_error(file, "is not a regular file"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|opened| opened.take(limit + 1).read_to_end(&mut bytes))
        .map_err(cannot)?;
    if bytes.len() as u64 > limit {
        return Err(model_error(
            file,
            format!("more than the {limit} bytes a model file may have"),
        ));
    }
    Ok(bytes)
}

fn json<T: for<'de> Deserialize<'de>>(file: &Path) -> Result<T, ModelError> {
    let bytes = read(file, MAX_JSON_BYTES)?;
    serde_json::from_slice(&bytes).map_err(|e| model_error(file, format!("does not parse: {e}")))
}

impl SentenceModel {
    /// Loads the sentence-transformers folder `dir`.
    pub fn open(dir: &Path) -> Result<SentenceModel, ModelError> {
        if !dir.is_dir() {
            return Err(model_error(
                dir,
                "is not a folder: a sentence-transformers model is a folder holding \
                 config.json, tokenizer.json, model.safetensors and 1_Pooling/config.json",
            ));
        }
        let config: Config = json(&dir.join("config.json"))?;
        let pooling_file = dir.join("1_Pooling").join("config.json");
        let pooling = match json::<PoolingConfig>(&pooling_file)? {
            PoolingConfig {
                pooling_mode_mean_tokens: true,
                pooling_mode_cls_token: false,
                pooling_mode_max_tokens: false,
                pooling_mode_mean_sqrt_len_tokens: false,
            } => Pooling::Mean,
            PoolingConfig {
                pooling_mode_mean_tokens: false,
                pooling_mode_cls_token: true,
                pooling_mode_max_tokens: false,
                pooling_mode_mean_sqrt_len_tokens: false,
            } => Pooling::Cls,
            _ => {
                return Err(model_error(
                    &pooling_file,
                    "pools otherwise than by the mean or the [CLS] token alone",
                ))
            }
        };
        let modules_file = dir.join("modules.json");
        let normalize = modules_file.exists()
            && json::<Vec<Module>>(&modules_file)?
                .iter()
                .any(|module| module.kind.ends_with(".Normalize"));
        let sentence_file = dir.join("sentence_bert_config.json");
        let max_tokens = if sentence_file.exists() {
            json::<SentenceConfig>(&sentence_file)?.max_seq_length
        } else {
            None
        }
        .unwrap_or(DEFAULT_MAX_TOKENS)
        .clamp(1, config.max_position_embeddings.max(1));

        let tokenizer_file = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_bytes(read(&tokenizer_file, MAX_JSON_BYTES)?)
            .map_err(|e| model_error(&tokenizer_file, format!("does not load: {e}")))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| model_error(&tokenizer_file, format!("cannot truncate: {e}")))?;

        let weights_file = dir.join("model.safetensors");
        let weights = read(&weights_file, MAX_WEIGHTS_BYTES)?;
        let digest = Sha256::digest(&weights);
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| model_error(&weights_file, format!("does not load: {e}")))?;
        let model = BertModel::load(vb, &config).map_err(|e| {
            model_error(
                &weights_file,
                format!("does not fit config.json's BERT model: {e}"),
            )
        })?;
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|dir| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "model".to_string());
        let hex: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        Ok(SentenceModel {
            id: format!("{name}@{hex}"),
            model,
            tokenizer,
            pooling,
            normalize,
        })
    }

    /// One batch's vectors.
    fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| format!("cannot tokenize: {e}"))?;
        let width = encodings.first().map_or(0, |e| e.get_ids().len());
        let rows = encodings.len();
        let flat = |pick: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
            encodings.iter().flat_map(|e| pick(e).to_vec()).collect()
        };
        let ids = flat(&|e| e.get_ids());
        let types = flat(&|e| e.get_type_ids());
        let mask = flat(&|e| e.get_attention_mask());
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let device = Device::Cpu;
            let ids = Tensor::from_vec(ids, (rows, width), &device)?;
            let types = Tensor::from_vec(types, (rows, width), &device)?;
            let mask = Tensor::from_vec(mask, (rows, width), &device)?;
            let hidden = self.model.forward(&ids, &types, Some(&mask))?;
            let pooled = match self.pooling {
                Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1)?,
                Pooling::Mean => {
                    let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
                    let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
                    summed.broadcast_div(&counts)?
                }
            };
            let pooled = if self.normalize {
                let norms = pooled
                    .sqr()?
                    .sum_keepdim(1)?
                    .sqrt()?
                    .clamp(1e-12, f64::MAX)?;
                pooled.broadcast_div(&norms)?
            } else {
                pooled
            };
            pooled.to_vec2::<f32>()
        };
        run().map_err(|e| format!("the model failed: {e}"))
    }
}

impl Embedder for SentenceModel {
    /// The folder's name and the start of its weights' SHA-256: another model, or the same
    /// folder with other weights, is another id (and another cache).
    fn model_id(&self) -> &str {
        &self.id
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, AskError> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let found = self
                .embed_batch(batch)
                .map_err(|e| AskError::Service(ServiceError(format!("{}: {e}", self.id))))?;
            vectors.extend(found);
        }
        Ok(vectors)
    }
}
