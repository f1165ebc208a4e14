//! The client every generator talks to an OpenAI-compatible endpoint through (`--llm-url`,
//! `--embeddings-url`).

use std::path::Path;
use std::time::Duration;

use sqlgate_eval::error::InputError;
use sqlgate_llm::{Client, ClientConfig};

/// The client of the endpoint a generator's `option` names (generous timeout: generation is
/// offline work); a bad URL or a missing key is an input error naming the option.
pub(super) fn connect(
    option: &str,
    url: &str,
    api_key_env: &Option<String>,
    out: &Path,
) -> Result<Client, InputError> {
    Client::new(&ClientConfig {
        base_url: url.to_string(),
        api_key_env: api_key_env.clone(),
        timeout: Duration::from_secs(120),
    })
    .map_err(|e| InputError::file(out, format!("{option}: {}", e.0)))
}
