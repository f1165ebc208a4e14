//! `type = "command"`: a program per case, the JSON request on stdin and the answer on stdout.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::Seconds;

fn default_timeout_secs() -> Seconds {
    Seconds::new(60.0).expect("a minute is a valid time bound")
}

/// A `command` system's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandConfig {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Seconds the program may take for one case before it is killed.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: Seconds,
    /// Variables set for the program, with fixed values (fingerprinted).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Variables passed on from sqlgate's environment when set; their values are fingerprinted
    /// (never written anywhere), so a recording replays only under the same values.
    #[serde(default)]
    pub env_passthrough: Vec<String>,
    /// Credentials passed on from sqlgate's environment when set, never fingerprinted: a new
    /// key does not invalidate the recordings, and a replay needs none.
    #[serde(default)]
    pub env_secrets: Vec<String>,
}

impl Default for CommandConfig {
    /// What a `[[system]]` giving no key but `command` reads as.
    fn default() -> CommandConfig {
        CommandConfig {
            command: Vec::new(),
            timeout_secs: default_timeout_secs(),
            env: BTreeMap::new(),
            env_passthrough: Vec::new(),
            env_secrets: Vec::new(),
        }
    }
}
