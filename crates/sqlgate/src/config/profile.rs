//! `[profile.<name>]`: a deployment's settings (a hospital tolerates fewer wrong answers than an
//! internal dashboard). `--profile NAME` selects one; `default` applies otherwise.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[profile.<name>]`: a named way to run the gate (`sqlgate test --profile <name>`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileConfig {
    /// The `[[system]]` to run (default: the first).
    pub system: Option<String>,
    /// TrustSQL's penalty `c` for a wrong answer in this deployment (used by the RS(c) metric).
    pub penalty: Option<super::Penalty>,
    /// Thresholds overriding the top-level and suite ones, for every suite.
    #[serde(default)]
    pub gate: super::Gates,
    /// Family thresholds overriding the suites' `family_gate`, for every suite with that family.
    #[serde(default)]
    pub family_gate: super::FamilyGates,
    /// Default `--record` mode: `none`, `new` or `all`.
    pub record: Option<RecordMode>,
    /// Default `--junit` path.
    pub junit: Option<PathBuf>,
    /// Stop at the first failing test (default false: every test runs, so the snapshot and
    /// the gates see everything).
    pub fail_fast: Option<bool>,
}

/// When the system is called instead of replaying the cassette.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordMode {
    /// Replay only: a case missing from the cassette fails as not recorded (CI).
    None,
    /// Call the system for cases missing from the cassette, and record the answers.
    New,
    /// Call the system for every case, and record the answers over the old ones.
    All,
}

impl RecordMode {
    /// The mode's name, as in configuration, `--record` and `SQLGATE_RECORD`.
    pub fn name(self) -> &'static str {
        match self {
            RecordMode::None => "none",
            RecordMode::New => "new",
            RecordMode::All => "all",
        }
    }
}

impl std::str::FromStr for RecordMode {
    type Err = RecordModeError;

    fn from_str(text: &str) -> Result<RecordMode, RecordModeError> {
        [RecordMode::None, RecordMode::New, RecordMode::All]
            .into_iter()
            .find(|mode| mode.name() == text)
            .ok_or_else(|| RecordModeError(text.to_string()))
    }
}

/// A record mode (`--record`, `SQLGATE_RECORD`) that is none of `none`, `new` and `all`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be none, new or all, not `{0}`")]
pub struct RecordModeError(pub String);
