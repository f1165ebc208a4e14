//! `sqlgate.toml`: suites, systems, thresholds, per-case settings and deployment profiles.
//! Unknown keys are errors that name the file, line and column. Paths are relative to the
//! configuration file's folder. The reference is in `docs/config.md`.

mod abstention;
mod case;
mod error;
mod profile;
mod sampling;
mod suite;
pub mod system;
mod threshold;
mod values;

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use sqlgate_eval::error::is_plain_name;
use sqlgate_eval::exec::memory::MaxMemory;

pub use abstention::{AbstentionConfig, AbstentionError};
pub use case::CaseConfig;
pub use error::ConfigError;
pub use profile::{ProfileConfig, RecordMode, RecordModeError};
pub use sampling::{Alpha, PassRule, PassRuleError};
pub use sqlgate_eval::scoring::Metric;
pub use sqlgate_llm::ThrottleConfig;
pub use suite::{EfficiencyMeasure, EmbedderConfig, EmbeddingsConfig, Structural, SuiteConfig};
pub use system::SystemConfig;
pub use threshold::{Comparison, Threshold, ThresholdError};
pub use values::{Penalty, Seconds, ValueError};

/// The whole configuration file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Folder of accepted snapshots and prediction cassettes (default `snapshots`).
    #[serde(default = "default_snapshots")]
    pub snapshots: PathBuf,
    /// Memory budget of the queries in MiB (default 4096): process-wide, so one for every
    /// suite; `--max-memory` overrides it.
    #[serde(default)]
    pub max_memory: MaxMemory,
    /// Each `[[suite]]` keeps its place in the file for errors found after parsing.
    #[serde(default, rename = "suite")]
    pub suites: Vec<toml::Spanned<SuiteConfig>>,
    /// The `[[system]]` tables as written, each with its place in the file.
    #[serde(default, rename = "system")]
    system_entries: Vec<toml::Spanned<system::SystemEntry>>,
    /// The `[[system]]` tables, read and checked once.
    #[serde(skip)]
    pub systems: Vec<SystemConfig>,
    /// Suite thresholds for every suite, by metric: `ex = ">= 0.62"`.
    #[serde(default)]
    pub gate: Gates,
    /// Per-test settings, keyed by test name (with its place in the file).
    #[serde(default)]
    pub cases: BTreeMap<toml::Spanned<String>, CaseConfig>,
    /// `[profile.<name>]` tables, by name: which system, suites and filters a run uses.
    #[serde(default)]
    pub profile: BTreeMap<String, ProfileConfig>,
    /// Where the configuration was read from; paths inside are relative to its folder.
    #[serde(skip)]
    pub path: PathBuf,
    #[serde(skip)]
    text: String,
}

fn default_snapshots() -> PathBuf {
    PathBuf::from("snapshots")
}

/// Thresholds by metric; each key keeps its place in the file for errors found after parsing.
pub type Gates = BTreeMap<toml::Spanned<Metric>, Threshold>;

/// Thresholds per generated family, by family name then metric:
/// `family_gate = { tqa-ll = { drop = "<= 10" } }`. Names keep their place in the file too.
pub type FamilyGates = BTreeMap<toml::Spanned<String>, Gates>;

/// The profile used when none is named.
pub const DEFAULT_PROFILE: &str = "default";

impl Config {
    /// Reads and checks the configuration at `path`; an error names its line and column.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::file(path, format!("cannot read the configuration: {e}")))?;
        Config::parse(path, text)
    }

    /// Parses and checks `text`, read from `path` (relative paths start from its folder).
    pub fn parse(path: &Path, text: String) -> Result<Config, ConfigError> {
        let mut config: Config = toml::from_str(&text).map_err(|e| toml_error(path, &text, &e))?;
        config.path = path.to_path_buf();
        config.text = text;
        if config.suites.is_empty() {
            return Err(ConfigError::file(
                path,
                "no [[suite]]: the configuration gates nothing",
            ));
        }
        config.check_values()?;
        config.check_profile_families()?;
        let mut names = std::collections::HashSet::new();
        let mut systems = Vec::new();
        for entry in &config.system_entries {
            let system = SystemConfig::parse(&config, entry)?;
            // The name picks the system and its cassette file.
            if !is_plain_name(&system.name) {
                return Err(
                    system.error("the name must be a plain file name, without control characters")
                );
            }
            if !names.insert(system.name.clone()) {
                return Err(system.error("another [[system]] has this name"));
            }
            systems.push(system);
        }
        config.systems = systems;
        Ok(config)
    }

    /// Thresholds that no run could use, each an error at its key: out of its metric's range
    /// (in every gate table, whichever profile runs).
    fn check_values(&self) -> Result<(), ConfigError> {
        let gate_tables = std::iter::once(&self.gate)
            .chain(self.suites.iter().map(|suite| &suite.get_ref().gate))
            .chain(self.profile.values().map(|profile| &profile.gate));
        for (metric, threshold) in gate_tables.flatten() {
            threshold
                .check_reachable(*metric.get_ref())
                .map_err(|problem| {
                    self.error_at(metric.span(), format!("gate `{metric}`: {problem}"))
                })?;
        }
        Ok(())
    }

    /// A profile's family gate on a family that no suite has would gate nothing.
    fn check_profile_families(&self) -> Result<(), ConfigError> {
        let gated = self.profile.values().flat_map(|p| p.family_gate.keys());
        for family in gated {
            let known = self
                .suites
                .iter()
                .any(|suite| suite.get_ref().families.contains_key(family.get_ref()));
            if !known {
                return Err(self.error_at(
                    family.span(),
                    format!(
                        "the profile's family_gate names family `{}`, which no [[suite]] has in `families`",
                        family.get_ref()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The folder that relative paths start from.
    pub fn root(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// `path` taken relative to the configuration's folder (an absolute path stays as it is).
    pub fn resolve(&self, path: &Path) -> PathBuf {
        self.root().join(path)
    }

    /// The named profile; `default` exists even when not written.
    pub fn profile(&self, name: &str) -> Result<ProfileConfig, ConfigError> {
        match self.profile.get(name) {
            Some(profile) => Ok(profile.clone()),
            None if name == DEFAULT_PROFILE => Ok(ProfileConfig::default()),
            None => {
                let known: Vec<&str> = self.profile.keys().map(String::as_str).collect();
                Err(ConfigError::file(
                    &self.path,
                    format!(
                        "no profile `{name}` (profiles: {})",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                ))
            }
        }
    }

    /// The system a profile uses: the one it names, else the first `[[system]]`.
    pub fn system(&self, profile: &ProfileConfig) -> Result<&SystemConfig, ConfigError> {
        match &profile.system {
            Some(name) => self
                .systems
                .iter()
                .find(|s| &s.name == name)
                .ok_or_else(|| {
                    ConfigError::file(
                        &self.path,
                        format!("the profile names system `{name}`, which no [[system]] defines"),
                    )
                }),
            None => self.systems.first().ok_or_else(|| {
                ConfigError::file(
                    &self.path,
                    "no [[system]]: nothing answers the questions; configure one: a `replay` \
                     of a predictions file, or a `command`, `http` or `openai` system \
                     (docs/systems.md)",
                )
            }),
        }
    }

    /// An error at a byte span of the configuration text.
    pub fn error_at(&self, span: Range<usize>, message: impl Into<String>) -> ConfigError {
        ConfigError::at(&self.path, &self.text, span.start, message)
    }
}

fn toml_error(path: &Path, text: &str, error: &toml::de::Error) -> ConfigError {
    let message = error.message().trim().to_string();
    match error.span() {
        Some(span) => {
            // A bad value is named by its key: "`timeout`: must be a number of seconds...".
            let message = match key_of_value(text, span.start) {
                Some(key) => format!("`{key}`: {message}"),
                None => message,
            };
            ConfigError::at(path, text, span.start, message)
        }
        None => ConfigError::file(path, message),
    }
}

/// The key written before the value at `offset` (`key = value`, also inside an inline table),
/// or `None` when no value starts there.
fn key_of_value(text: &str, offset: usize) -> Option<&str> {
    let before = text.get(..offset)?.trim_end_matches([' ', '\t']);
    let before = before.strip_suffix('=')?.trim_end_matches([' ', '\t']);
    let start = before
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .map_or(0, |at| at + 1);
    let key = &before[start..];
    (!key.is_empty()).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::key_of_value;

    #[test]
    fn a_value_is_named_by_the_key_before_it() {
        let text = "timeout = 0\nembeddings = { model = \"m\", timeout_secs = -1 }\n[gate]\n";
        assert_eq!(key_of_value(text, text.find('0').unwrap()), Some("timeout"));
        assert_eq!(
            key_of_value(text, text.find("-1").unwrap()),
            Some("timeout_secs")
        );
        // A key, a table header: no value starts there.
        assert_eq!(key_of_value(text, text.find("embeddings").unwrap()), None);
        assert_eq!(key_of_value(text, text.find("[gate]").unwrap()), None);
    }
}
