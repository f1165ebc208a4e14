//! `[[system]]`: the system under test, read once when the configuration is read. Keys common
//! to every type are read here; the keys of each type by that type's own settings struct
//! ([`command`], [`http`], [`openai`], [`replay`]), with errors located in this file.

pub mod command;
pub mod http;
pub mod openai;
pub mod replay;

use std::ops::Range;
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::Config;
use super::{AbstentionConfig, ThrottleConfig};
pub use command::CommandConfig;
pub use http::HttpConfig;
pub use openai::OpenAiConfig;
pub use replay::ReplayConfig;

/// A `[[system]]` table as written: the keys every system has, read here so that a bad value
/// is an error at its own line, and the type's own keys.
#[derive(Debug, Clone, Deserialize)]
pub struct SystemEntry {
    name: String,
    #[serde(rename = "type")]
    kind: SystemType,
    /// Where answers are recorded (default `<snapshots>/predictions/<name>.jsonl`).
    cassette: Option<PathBuf>,
    /// Concurrency, rate limit and retries of the system's calls.
    #[serde(default)]
    throttle: ThrottleConfig,
    /// Answers that count as abstentions (apology SELECTs where the suite declares abstention).
    #[serde(default)]
    abstention: AbstentionConfig,
    /// How many times each question is asked (default 1).
    #[serde(default = "one_sample")]
    samples: u32,
    /// The type's own keys, read into its [`SystemKind`].
    #[serde(flatten)]
    settings: toml::Table,
}

/// The most times a question may be asked: pass@k estimates use at most a few hundred samples
/// (200 in Codex's), and every sample of every case is a request held in memory at once, so
/// `samples = 100000000` would take tens of GB before asking anything.
pub const MAX_SAMPLES: u32 = 1000;

fn one_sample() -> u32 {
    1
}

/// What a `[[system]]` is: its `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SystemType {
    /// A program per case: JSON request on stdin, JSON answer on stdout.
    Command,
    /// A JSON POST per case.
    Http,
    /// An OpenAI-compatible chat-completions endpoint.
    Openai,
    /// A predictions file.
    Replay,
}

/// What a `[[system]]` is, with the settings of its type.
#[derive(Debug, Clone)]
pub enum SystemKind {
    /// `type = "command"`.
    Command(CommandConfig),
    /// `type = "http"`.
    Http(HttpConfig),
    /// `type = "openai"`.
    Openai(OpenAiConfig),
    /// `type = "replay"`.
    Replay(ReplayConfig),
}

/// A `[[system]]` table, checked, with its defaults filled in.
#[derive(Debug, Clone)]
pub struct SystemConfig {
    /// The name profiles and `--system` pick it by; also its cassette's file name.
    pub name: String,
    /// What the system is, with its type's settings.
    pub kind: SystemKind,
    /// Where its answers are recorded.
    pub cassette: PathBuf,
    /// Concurrency, rate limit and retries of its calls.
    pub throttle: ThrottleConfig,
    /// Answers that count as abstentions.
    pub abstention: AbstentionConfig,
    /// How many times each question is asked: each case is then judged on its pass rate
    /// (`pass_rule`), and a drop is a regression only beyond noise.
    pub samples: u32,
    place: Place,
}

/// Where a `[[system]]` is written, for errors about it.
#[derive(Debug, Clone)]
struct Place {
    name: String,
    span: Range<usize>,
    config_path: PathBuf,
    config_text: String,
}

impl SystemConfig {
    pub(super) fn parse(
        config: &Config,
        entry: &toml::Spanned<SystemEntry>,
    ) -> Result<SystemConfig, super::ConfigError> {
        let common = entry.get_ref().clone();
        let cassette = match common.cassette {
            Some(path) => config.resolve(&path),
            None => config
                .resolve(&config.snapshots)
                .join("predictions")
                .join(format!("{}.jsonl", common.name)),
        };
        let place = Place {
            name: common.name.clone(),
            span: entry.span(),
            config_path: config.path.clone(),
            config_text: config.text.clone(),
        };
        let settings = common.settings;
        let kind = match common.kind {
            SystemType::Command => SystemKind::Command(place.settings(settings)?),
            SystemType::Http => SystemKind::Http(place.settings(settings)?),
            SystemType::Openai => SystemKind::Openai(place.settings(settings)?),
            SystemType::Replay => SystemKind::Replay(place.settings(settings)?),
        };
        if let Err(problem) = common.abstention.checked_pattern() {
            return Err(place.error_at_key("abstention", problem.to_string()));
        }
        if let Err(problem) = common.throttle.check() {
            return Err(place.error_at_key("throttle", format!("throttle: {problem}")));
        }
        if !(1..=MAX_SAMPLES).contains(&common.samples) {
            return Err(place.error_at_key(
                "samples",
                format!(
                    "`samples = {}`: how many times each question is asked must be between 1 \
                     and {MAX_SAMPLES}",
                    common.samples
                ),
            ));
        }
        Ok(SystemConfig {
            name: common.name,
            kind,
            cassette,
            throttle: common.throttle,
            abstention: common.abstention,
            samples: common.samples,
            place,
        })
    }

    /// An error about this system, located at its `[[system]]` entry.
    pub fn error(&self, message: impl Into<String>) -> super::ConfigError {
        self.place.error(message)
    }

    /// A path from the configuration, relative to its folder.
    pub fn resolve(&self, path: &std::path::Path) -> PathBuf {
        self.place
            .config_path
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join(path)
    }
}

impl Place {
    /// Reads the type's own keys into its settings struct; an unknown or mistyped key is an
    /// error at its line.
    fn settings<T: DeserializeOwned>(
        &self,
        settings: toml::Table,
    ) -> Result<T, super::ConfigError> {
        settings.try_into().map_err(|e: toml::de::Error| {
            let message = e.message().trim().to_string();
            // A bad value: the error ends with the path of its key (`in `timeout_secs``).
            let path = e.to_string();
            let path = path
                .lines()
                .last()
                .and_then(|line| line.strip_prefix("in `")?.strip_suffix('`'));
            match path {
                Some(path) => {
                    let key = path.split('.').next().unwrap_or(path);
                    self.error_at_key(key, format!("`{path}`: {message}"))
                }
                // An unknown key: the message names it (`unknown field `x``).
                None => {
                    let key = message.split('`').nth(1).unwrap_or_default().to_string();
                    self.error_at_key(&key, message)
                }
            }
        })
    }

    /// An error about this system at the line of `key`, else at its `[[system]]` header.
    fn error_at_key(&self, key: &str, message: impl Into<String>) -> super::ConfigError {
        let offset = self.key_offset(key).unwrap_or(self.span.start);
        super::ConfigError::at(
            &self.config_path,
            &self.config_text,
            offset,
            format!(
                "[[system]] `{}`: {}",
                self.name.escape_debug(),
                message.into()
            ),
        )
    }

    /// The offset of `key` within this entry: from its `[[system]]` header to the next table
    /// header.
    fn key_offset(&self, key: &str) -> Option<usize> {
        if key.is_empty() {
            return None;
        }
        let mut offset = self.span.start;
        for (index, line) in self
            .config_text
            .get(self.span.start..)?
            .split_inclusive('\n')
            .enumerate()
        {
            let trimmed = line.trim_start();
            if index > 0 && trimmed.starts_with('[') {
                break;
            }
            if trimmed
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
            {
                return Some(offset + (line.len() - trimmed.len()));
            }
            offset += line.len();
        }
        None
    }

    /// An error about this system, located at its `[[system]]` header.
    fn error(&self, message: impl Into<String>) -> super::ConfigError {
        let message = format!(
            "[[system]] `{}`: {}",
            self.name.escape_debug(),
            message.into()
        );
        super::ConfigError::at(
            &self.config_path,
            &self.config_text,
            self.span.start,
            message,
        )
    }
}
