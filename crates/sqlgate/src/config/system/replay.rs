//! `type = "replay"`: a predictions file answers, one per suite or one for the only suite.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use sqlgate_eval::loaders::PredFormat;

/// `type = "replay"`: a predictions file, or one per suite (`predictions = { demo = "..." }`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayConfig {
    /// The predictions file, or one per suite.
    pub predictions: Predictions,
    /// The file's format, when its name does not say.
    pub format: Option<PredFormat>,
}

/// Where a replay's predictions are.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Predictions {
    /// One file, for a configuration with one suite.
    One(PathBuf),
    /// A file per suite, by suite name.
    PerSuite(BTreeMap<String, PathBuf>),
}
