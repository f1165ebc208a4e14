//! `[profile.<name>]`: a deployment's settings (a hospital tolerates fewer wrong answers than an
//! internal dashboard). `--profile NAME` selects one; `default` applies otherwise.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::gate::threshold::Threshold;
use crate::system::answer::RecordMode;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileConfig {
    /// The `[[system]]` to run (default: the first).
    pub system: Option<String>,
    /// TrustSQL's penalty `c` for a wrong answer in this deployment (used by the RS(c) metric).
    pub penalty: Option<f64>,
    /// Thresholds overriding the top-level and suite ones, for every suite.
    #[serde(default)]
    pub gate: BTreeMap<String, Threshold>,
    /// Default `--record` mode: `none`, `new` or `all`.
    pub record: Option<RecordMode>,
    /// Default `--junit` path.
    pub junit: Option<PathBuf>,
    /// Stop at the first failing test (default false: every test runs, so the snapshot and
    /// the gates see everything).
    pub fail_fast: Option<bool>,
}
