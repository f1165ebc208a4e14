//! `[[system]]`: the system under test. Keys common to every type are read here; the keys of
//! each type are read by that type's own configuration struct (`system::command`, ...), with
//! errors located in this file.

use std::ops::Range;
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::Config;
use super::{AbstentionConfig, ThrottleConfig};
use crate::error::InputError;

/// The keys every system has.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Common {
    name: String,
    #[serde(rename = "type")]
    kind: SystemType,
    /// Where answers are recorded (default `<snapshots>/predictions/<name>.jsonl`).
    cassette: Option<PathBuf>,
    /// Concurrency, rate limit and retries of the system's calls.
    #[serde(default)]
    throttle: ThrottleConfig,
    /// Answers that count as abstentions (apology SELECTs by default).
    #[serde(default)]
    abstention: AbstentionConfig,
}

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

const COMMON_KEYS: &[&str] = &["name", "type", "cassette", "throttle", "abstention"];

#[derive(Debug, Clone)]
pub struct SystemConfig {
    pub name: String,
    pub kind: SystemType,
    pub cassette: PathBuf,
    pub throttle: ThrottleConfig,
    pub abstention: AbstentionConfig,
    /// The type's own keys, read by [`SystemConfig::settings`].
    settings: toml::Table,
    span: Range<usize>,
    config_path: PathBuf,
    config_text: String,
}

impl SystemConfig {
    pub(super) fn parse(
        config: &Config,
        entry: &toml::Spanned<toml::Table>,
    ) -> Result<SystemConfig, InputError> {
        let span = entry.span();
        let table = entry.get_ref();
        let mut common = toml::Table::new();
        let mut settings = toml::Table::new();
        for (key, value) in table {
            let target = if COMMON_KEYS.contains(&key.as_str()) {
                &mut common
            } else {
                &mut settings
            };
            target.insert(key.clone(), value.clone());
        }
        let common: Common = common.try_into().map_err(|e: toml::de::Error| {
            config.error_at(span.clone(), format!("[[system]]: {}", e.message().trim()))
        })?;
        if let Err(problem) = common.abstention.checked_pattern() {
            return Err(config.error_at(span.clone(), format!("[[system]] {problem}")));
        }
        if let Err(problem) = common.throttle.check() {
            return Err(config.error_at(span.clone(), format!("[[system]] throttle: {problem}")));
        }
        let cassette = match common.cassette {
            Some(path) => config.resolve(&path),
            None => config
                .resolve(&config.snapshots)
                .join("predictions")
                .join(format!("{}.jsonl", common.name)),
        };
        Ok(SystemConfig {
            name: common.name,
            kind: common.kind,
            cassette,
            throttle: common.throttle,
            abstention: common.abstention,
            settings,
            span,
            config_path: config.path.clone(),
            config_text: config.text.clone(),
        })
    }

    /// Reads the type's own keys into its configuration struct; an unknown or mistyped key is an
    /// error at its line.
    pub fn settings<T: DeserializeOwned>(&self) -> Result<T, InputError> {
        self.settings
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| {
                let message = e.message().trim().to_string();
                let offset = self.key_offset(&message).unwrap_or(self.span.start);
                super::located(
                    &self.config_path,
                    &self.config_text,
                    offset,
                    format!("[[system]] `{}`: {message}", self.name),
                )
            })
    }

    /// The offset of the key an error message names (`unknown field `x``), within this entry:
    /// from its `[[system]]` header to the next table header.
    fn key_offset(&self, message: &str) -> Option<usize> {
        let key = message.split('`').nth(1)?;
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

    /// An error about this system, located at its `[[system]]` entry.
    pub fn error(&self, message: impl Into<String>) -> InputError {
        let message = format!("[[system]] `{}`: {}", self.name, message.into());
        super::located(
            &self.config_path,
            &self.config_text,
            self.span.start,
            message,
        )
    }

    /// A path from the configuration, relative to its folder.
    pub fn resolve(&self, path: &std::path::Path) -> PathBuf {
        self.config_path
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join(path)
    }
}
