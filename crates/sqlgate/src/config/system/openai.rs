//! `type = "openai"`: one chat completion per question from an OpenAI-compatible API.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::config::Seconds;
use sqlgate_llm::HeaderSource;

/// The prompt used when the configuration names none.
pub const DEFAULT_PROMPT: &str = "\
You translate questions into SQLite queries.

Database `{db}`, whose schema is:

{schema}

Hints (may be empty): {evidence}

Question: {question}

Answer with exactly one SQLite query that answers the question, in a ```sql code block, \
without explanation. Use only the tables and columns of the schema. If the question cannot be \
answered from this database, answer with the single word {abstain_marker} instead.
";

/// The word the default prompt asks the model to answer with when it cannot answer.
pub const DEFAULT_ABSTAIN_MARKER: &str = "not_answerable";

/// Where the prompt template comes from: `prompt = { template = "..." }` or
/// `prompt = { file = "prompts/sql.txt" }` (relative to the configuration's directory).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PromptSource {
    /// The template itself.
    Template(String),
    /// A file holding it, relative to the configuration's folder.
    File(PathBuf),
}

impl Default for PromptSource {
    fn default() -> Self {
        PromptSource::Template(DEFAULT_PROMPT.to_string())
    }
}

/// A `[[system]] type = "openai"` entry of `sqlgate.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiConfig {
    /// The API root with its version segment, e.g. `http://127.0.0.1:8765/v1`.
    pub base_url: String,
    /// The chat model to ask.
    pub model: String,
    /// The NAME of the environment variable holding the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Further headers: a fixed value (fingerprinted: it may select what answers), or
    /// `{ env = "VARIABLE" }`, a credential read from the environment (not fingerprinted).
    #[serde(default)]
    pub headers: BTreeMap<String, HeaderSource>,
    /// The user message; placeholders `{question}`, `{schema}`, `{evidence}`, `{db}` and
    /// `{abstain_marker}`, with `{{` and `}}` for literal braces. Defaults to [`DEFAULT_PROMPT`].
    #[serde(default)]
    pub prompt: PromptSource,
    /// Sent as a system message before the prompt, when set.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Sampling temperature (default 0, for reproducible answers).
    #[serde(default)]
    pub temperature: f64,
    /// Sampling seed (default 0), for servers that honour one.
    #[serde(default)]
    pub seed: u64,
    /// Bound on the tokens of the answer (default 512); a reply cut there is `truncated`.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// Seconds one request may take, answer included.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: Seconds,
    /// A reply containing this text (any case) is an abstention.
    #[serde(default = "default_abstain_marker")]
    pub abstain_marker: String,
}

fn default_max_tokens() -> u32 {
    512
}

fn default_timeout_secs() -> Seconds {
    Seconds::new(60.0).expect("a minute is a valid time bound")
}

fn default_abstain_marker() -> String {
    DEFAULT_ABSTAIN_MARKER.to_string()
}
