//! Builds the configured system, one per suite (a replayed predictions file belongs to one
//! benchmark; the other types serve every suite).

use std::path::Path;
use std::sync::Arc;

use super::command::CommandSystem;
use super::http::HttpSystem;
use super::openai::OpenAiSystem;
use super::replay::ReplaySystem;
use super::System;
use crate::config::system::replay::Predictions;
use crate::config::system::{ReplayConfig, SystemConfig, SystemKind};
use crate::config::ConfigError;
use sqlgate_eval::error::InputError;
use sqlgate_eval::loaders::Benchmark;

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

/// The system answering each suite, aligned with `suites` (each a name and its benchmark).
pub fn build(
    config: &SystemConfig,
    suites: &[(&str, &Benchmark)],
) -> Result<Vec<Arc<dyn System>>, SetupError> {
    let invalid = |message: String| config.error(message);
    let shared: Arc<dyn System> = match &config.kind {
        SystemKind::Command(settings) => {
            Arc::new(CommandSystem::new(settings).map_err(|e| invalid(e.to_string()))?)
        }
        SystemKind::Http(settings) => {
            Arc::new(HttpSystem::new(settings).map_err(|e| invalid(e.to_string()))?)
        }
        SystemKind::Openai(settings) => Arc::new(
            OpenAiSystem::new(settings.clone(), &config.resolve(Path::new("")))
                .map_err(|e| invalid(e.0))?,
        ),
        SystemKind::Replay(settings) => return replay(config, settings, suites),
    };
    Ok(suites.iter().map(|_| Arc::clone(&shared)).collect())
}

fn replay(
    config: &SystemConfig,
    settings: &ReplayConfig,
    suites: &[(&str, &Benchmark)],
) -> Result<Vec<Arc<dyn System>>, SetupError> {
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
