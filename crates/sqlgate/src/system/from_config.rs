//! Builds the configured system, one per suite (a replayed predictions file belongs to one
//! benchmark; the other types serve every suite).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::command::{CommandConfig, CommandSystem};
use super::http::{HttpConfig, HttpSystem};
use super::openai::{OpenAiConfig, OpenAiSystem};
use super::replay::ReplaySystem;
use super::System;
use crate::config::system::{SystemConfig, SystemType};
use crate::config::ConfigError;
use sqlgate_eval::error::InputError;
use sqlgate_eval::loaders::{Benchmark, PredFormat};

/// A `[[system]]` that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// Its settings, at their place in `sqlgate.toml`: an unknown key, a malformed URL, an
    /// empty command, a prompt file that cannot be read...
    #[error(transparent)]
    Settings(#[from] ConfigError),
    /// What it answers from (a replayed predictions file, its cassette) cannot be loaded.
    #[error(transparent)]
    Load(#[from] InputError),
}

/// `type = "replay"`: a predictions file, or one per suite (`predictions = { demo = "..." }`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayConfig {
    predictions: Predictions,
    format: Option<PredFormat>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Predictions {
    One(PathBuf),
    PerSuite(BTreeMap<String, PathBuf>),
}

/// The system answering each suite, aligned with `suites` (each a name and its benchmark).
pub fn build(
    config: &SystemConfig,
    suites: &[(&str, &Benchmark)],
) -> Result<Vec<Arc<dyn System>>, SetupError> {
    let invalid = |message: String| config.error(message);
    let shared: Arc<dyn System> = match config.kind {
        SystemType::Command => {
            Arc::new(CommandSystem::new(&config.settings::<CommandConfig>()?).map_err(invalid)?)
        }
        SystemType::Http => {
            Arc::new(HttpSystem::new(&config.settings::<HttpConfig>()?).map_err(invalid)?)
        }
        SystemType::Openai => {
            let settings: OpenAiConfig = config.settings()?;
            Arc::new(
                OpenAiSystem::new(settings, &config.resolve(Path::new("")))
                    .map_err(|e| invalid(e.0))?,
            )
        }
        SystemType::Replay => return replay(config, suites),
    };
    Ok(suites.iter().map(|_| Arc::clone(&shared)).collect())
}

fn replay(
    config: &SystemConfig,
    suites: &[(&str, &Benchmark)],
) -> Result<Vec<Arc<dyn System>>, SetupError> {
    let settings: ReplayConfig = config.settings()?;
    suites
        .iter()
        .map(|&(name, bench)| {
            let path = match &settings.predictions {
                Predictions::One(path) if suites.len() == 1 => path,
                Predictions::PerSuite(paths) => paths
                    .get(name)
                    .ok_or_else(|| config.error(format!("no predictions for suite `{name}`")))?,
                Predictions::One(_) => {
                    return Err(config
                        .error("with several suites, give `predictions = { <suite> = \"file\" }`")
                        .into())
                }
            };
            let system = ReplaySystem::load(&config.resolve(path), settings.format, bench)?;
            Ok(Arc::new(system) as Arc<dyn System>)
        })
        .collect()
}
