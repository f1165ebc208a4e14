//! `type = "http"`: the JSON request POSTed to a URL per case.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::Seconds;

fn default_timeout_secs() -> Seconds {
    Seconds::new(60.0).expect("a minute is a valid time bound")
}

/// An `http` system's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// The endpoint the request document is POSTed to.
    pub url: String,
    /// Seconds one request may take, answer included.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: Seconds,
    /// Headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Headers whose values come from environment variables (header → variable), for
    /// secrets that must not be written in configuration.
    #[serde(default)]
    pub headers_env: BTreeMap<String, String>,
}
