//! The client every generator talks to an OpenAI-compatible endpoint through (`--llm-url`,
//! `--embeddings-url`).

use std::time::Duration;

use sqlgate::Error;
use sqlgate_llm::{Client, ClientConfig};

/// The client of the endpoint a generator's `option` names (generous timeout: generation is
/// offline work); a bad URL is a usage error naming the option.
pub(super) fn connect(
    option: &str,
    url: &str,
    api_key_env: &Option<String>,
) -> Result<Client, Error> {
    Client::new(&ClientConfig {
        base_url: url.to_string(),
        api_key_env: api_key_env.clone(),
        timeout: Duration::from_secs(120),
    })
    .map_err(|e| Error::Usage(format!("{option}: {}", e.0)))
}
