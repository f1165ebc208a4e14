//! Builds the run plan from `sqlgate.toml` and a profile: loads every suite's benchmark and
//! resolves its thresholds (top-level `[gate]` < suite `gate` < profile `gate`).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::Arc;

use crate::config::{
    Config, EmbedderConfig, EmbeddingsConfig, Gates, Metric, ProfileConfig, SuiteConfig, Threshold,
};
use crate::config::{EfficiencyMeasure, Structural};
use sqlgate_eval::error::is_plain_name;

use crate::config::ConfigError;
use crate::Error;
use sqlgate_eval::exec::{Limits, Settings};
use sqlgate_eval::loaders::{self, LoadOptions};
use sqlgate_eval::metrics::case_metric::CaseMetric;
use sqlgate_eval::metrics::efficiency::measure as efficiency;
use sqlgate_eval::metrics::ex::ModeOptions;
use sqlgate_eval::metrics::sqlmorph::Embedder;
use sqlgate_eval::metrics::sqlmorph::{ColumnMatching, Extras};
use sqlgate_eval::metrics::{esm, etm};
use sqlgate_eval::scoring::Scoring;
use sqlgate_llm::throttle::Throttle;
use sqlgate_llm::{CachedEmbedder, Client, ClientConfig};

use super::plan::{FamilyGate, SuitePlan};

/// Plans every suite of `config` under `profile`: loads its benchmark and families, checks its
/// databases and resolves its gates.
pub fn suites(config: &Config, profile: &ProfileConfig) -> Result<Vec<SuitePlan>, Error> {
    let penalty = profile.penalty.map_or(0.0, |c| c.value());
    let mut plans: Vec<SuitePlan> = Vec::new();
    for entry in &config.suites {
        let suite = entry.get_ref();
        // A problem of the suite as a whole, at its `[[suite]]` header.
        let suite_error = |message: String| Error::from(config.error_at(entry.span(), message));
        let settings = Settings {
            dsn: suite.dsn.as_deref(),
            password_env: suite.password_env.as_deref(),
            scratch_dsn: suite.scratch_dsn.as_deref(),
        };
        let backend = sqlgate_eval::exec::connect(suite.engine.driver(), &settings)
            .map_err(|message| suite_error(format!("[[suite]] {message}")))?;
        let options = LoadOptions {
            db_dir: suite.db_dir.as_ref().map(|p| config.resolve(p)),
            tables: suite.tables.as_ref().map(|p| config.resolve(p)),
            format: suite.format,
            backend: backend.clone(),
            python_tests: suite.python_tests,
        };
        let mut bench = loaders::load(&config.resolve(&suite.benchmark), &options)?;
        for (family, path) in &suite.families {
            let cases = loaders::load_family(&config.resolve(path), family, &bench)?;
            bench.cases.extend(cases);
        }
        bench.check_ids()?;
        bench.check_databases()?;
        let name = suite.name.clone().unwrap_or_else(|| bench.name.clone());
        // The name is the snapshot's file name.
        if !is_plain_name(&name) || name.contains("::") {
            return Err(suite_error(format!(
                "suite name `{}` must be a plain file name without `::` or control characters",
                name.escape_debug()
            )));
        }
        if plans.iter().any(|p| p.name == name) {
            return Err(suite_error(format!("two suites are named `{name}`")));
        }
        let timeout = match suite.timeout {
            Some(secs) => Some(secs.duration()),
            None => Limits::default().timeout,
        };
        let limits = Limits {
            timeout,
            max_rows: suite.max_rows.unwrap_or(Limits::default().max_rows),
            ..Limits::default()
        };
        if let Some(regime) = suite
            .regime
            .filter(|r| r.columns == ColumnMatching::NoColumn && r.extras == Extras::Ignore)
        {
            return Err(suite_error(format!(
                "[[suite]] regime {regime}: IE is not defined under NC"
            )));
        }
        let esm = if suite.structural.contains(&Structural::Esm) {
            let tables = bench.tables.clone().ok_or_else(|| {
                suite_error(
                    "[[suite]] structural esm needs the schemas' foreign keys: set `tables`"
                        .to_string(),
                )
            })?;
            Some(Arc::new(esm::Evaluator::with_database_dir(
                &tables,
                &bench.db_dir,
                bench.backend.clone(),
            )?))
        } else {
            None
        };
        let etm = suite
            .structural
            .contains(&Structural::Etm)
            .then(|| Arc::new(etm::Evaluator::new(false)));
        let mut gates = config.gate.clone();
        gates.extend(suite.gate.clone());
        gates.extend(profile.gate.clone());
        let family_gates = family_gates(config, suite, profile)?;
        let tests_of_suite = |setting: fn(&crate::config::CaseConfig) -> bool| -> BTreeSet<String> {
            config
                .cases
                .iter()
                .filter(|(test, case)| {
                    test.get_ref().starts_with(&format!("{name}::")) && setting(case)
                })
                .map(|(test, _)| test.get_ref().clone())
                .collect()
        };
        let mode = suite.mode.unwrap_or(bench.format.default_mode());
        let scoring = Scoring {
            mode,
            mode_options: ModeOptions {
                keep_distinct: suite.keep_distinct,
                pair_budget: timeout,
                ..ModeOptions::default()
            },
            every_database: suite.every_database,
            regimes: suite.regime.into_iter().collect(),
            sqlmorph_compat: false,
            embedder: match (&suite.embedder, &suite.embeddings) {
                (Some(_), Some(_)) => {
                    return Err(suite_error(
                        "[[suite]] sets both `embedder` and `embeddings`: one embedder judges \
                         a suite's columns"
                            .to_string(),
                    ))
                }
                (Some(local), None) => Some(local_embedder(config, local, entry.span())?),
                (None, Some(server)) => Some(embedder(config, server, entry.span())?),
                (None, None) => None,
            },
            esm,
            etm,
            robustness: !suite.families.is_empty(),
            soft_f1: suite.soft_f1,
            efficiency: efficiency_settings(suite),
            case_metrics: case_metrics(suite, &gates),
            ..Scoring::new(mode)
        };
        let gates = computable_gates(config, &scoring, gates)?;
        let databases = scoring.databases(&bench)?;
        if let Some(problem) = scoring.every_database_problem(&bench, &databases) {
            return Err(suite_error(format!("[[suite]] `{name}`: {problem}")));
        }
        let mut warnings = sqlgate_eval::scoring::check_server(&bench, &*backend)?;
        // Server databases are names, not files to look into.
        if !backend.on_server() {
            warnings.extend(sqlgate_eval::scoring::empty_database_warnings(
                &*backend, &databases,
            ));
        }
        plans.push(SuitePlan {
            must_pass: tests_of_suite(|c| c.must_pass),
            ignored: tests_of_suite(|c| c.ignore),
            databases,
            warnings,
            scoring,
            limits,
            backend,
            penalty,
            gates,
            family_gates,
            allow_metric_errors: suite.allow_metric_errors,
            // The system's, set when the session knows which system answers.
            samples: 1,
            pass_rule: suite.pass_rule,
            alpha: suite.alpha.0,
            bench,
            name,
        });
    }
    check_case_names(config, &plans)?;
    Ok(plans)
}

/// A suite's family thresholds (its `family_gate`, then the profile's for the families it has),
/// each on a family of its `families` and a family metric, checked at the key that sets it.
fn family_gates(
    config: &Config,
    suite: &SuiteConfig,
    profile: &ProfileConfig,
) -> Result<Vec<FamilyGate>, ConfigError> {
    let mut resolved: BTreeMap<(String, Metric), Threshold> = BTreeMap::new();
    let of_profile = profile
        .family_gate
        .iter()
        .filter(|(family, _)| suite.families.contains_key(family.get_ref()));
    for (family, gates) in suite.family_gate.iter().chain(of_profile) {
        if !suite.families.contains_key(family.get_ref()) {
            let known: Vec<&str> = suite.families.keys().map(String::as_str).collect();
            return Err(config.error_at(
                family.span(),
                format!(
                    "family_gate names family `{}`, which is not in this suite's `families` ({})",
                    family.get_ref(),
                    if known.is_empty() {
                        "it has none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
        for (metric, threshold) in gates {
            let at = |message: String| config.error_at(metric.span(), message);
            if !metric.get_ref().is_family_metric() {
                return Err(at(format!(
                    "`{}` is not a family metric (family metrics: {})",
                    metric.get_ref(),
                    Metric::FAMILY_NAMES
                )));
            }
            threshold
                .check_reachable(*metric.get_ref())
                .map_err(|message| at(format!("family gate `{}`: {message}", metric.get_ref())))?;
            resolved.insert((family.get_ref().clone(), *metric.get_ref()), *threshold);
        }
    }
    Ok(resolved
        .into_iter()
        .map(|((family, metric), threshold)| FamilyGate {
            family,
            metric,
            threshold,
        })
        .collect())
}

/// A `[cases."<name>"]` that names no test is a typo that would silently gate nothing.
fn check_case_names(config: &Config, plans: &[SuitePlan]) -> Result<(), ConfigError> {
    let names: BTreeSet<String> = super::plan::list(plans)
        .into_iter()
        .map(|t| t.name)
        .collect();
    match config
        .cases
        .keys()
        .find(|name| !names.contains(name.get_ref()))
    {
        Some(name) => Err(config.error_at(
            name.span(),
            format!("[cases.\"{name}\"] names no test (see `sqlgate test --list`)"),
        )),
        None => Ok(()),
    }
}

/// The thresholds of a suite by metric; gating a metric the suite does not compute is a
/// configuration error at the gate's key, not a failing test.
fn computable_gates(
    config: &Config,
    scoring: &Scoring,
    gates: Gates,
) -> Result<BTreeMap<Metric, Threshold>, ConfigError> {
    let mut computable = BTreeMap::new();
    for (metric, threshold) in gates {
        if !metric.get_ref().is_suite_metric() {
            return Err(config.error_at(
                metric.span(),
                format!(
                    "`{0}` is measured per family against its seeds: set it in the suite's \
                     `family_gate = {{ <family> = {{ {0} = ... }} }}`",
                    metric.get_ref()
                ),
            ));
        }
        let needs = match *metric.get_ref() {
            Metric::Exp | Metric::Exr | Metric::F1 if scoring.regimes.is_empty() => {
                Some("a `regime` in its [[suite]]")
            }
            Metric::Esm if scoring.esm.is_none() => Some("`structural = [\"esm\"]`"),
            Metric::Etm if scoring.etm.is_none() => Some("`structural = [\"etm\"]`"),
            Metric::SoftF1 if !scoring.soft_f1 => Some("`soft_f1 = true`"),
            Metric::Ves | Metric::Rves if !scoring.efficiency.is_some_and(|e| e.timed) => {
                Some("`efficiency = [\"time\"]`")
            }
            Metric::VesSteps | Metric::RvesSteps
                if !scoring.efficiency.is_some_and(|e| e.steps) =>
            {
                Some("`efficiency = [\"steps\"]`")
            }
            _ => None,
        };
        if let Some(needs) = needs {
            return Err(config.error_at(
                metric.span(),
                format!("gate `{}` needs {needs}", metric.get_ref()),
            ));
        }
        computable.insert(metric.into_inner(), threshold);
    }
    Ok(computable)
}

/// The registered per-case metrics a suite lists or gates on, each once, in registry order.
fn case_metrics(suite: &SuiteConfig, gates: &Gates) -> Vec<CaseMetric> {
    let gated = gates.keys().filter_map(|metric| match metric.get_ref() {
        Metric::Case(metric) => Some(*metric),
        _ => None,
    });
    let wanted: BTreeSet<CaseMetric> = suite.metrics.iter().copied().chain(gated).collect();
    wanted.into_iter().collect()
}

/// The efficiency measurements the suite asks for, if any.
fn efficiency_settings(suite: &SuiteConfig) -> Option<efficiency::Settings> {
    (!suite.efficiency.is_empty()).then(|| efficiency::Settings {
        timed: suite.efficiency.contains(&EfficiencyMeasure::Time),
        steps: suite.efficiency.contains(&EfficiencyMeasure::Steps),
        iterations: suite
            .efficiency_iterations
            .map_or(efficiency::BIRD_ITERATIONS, |n| n.get()),
    })
}

/// The suite's in-process sentence model (`embedder = { model = "DIR" }`); a folder it
/// cannot use is an error at the suite's header naming the file at fault.
#[cfg(feature = "embedder")]
fn local_embedder(
    config: &Config,
    settings: &EmbedderConfig,
    suite_span: Range<usize>,
) -> Result<Arc<dyn Embedder + Send>, Error> {
    let model = sqlgate_embedder::SentenceModel::open(&config.resolve(&settings.model))
        .map_err(|e| config.error_at(suite_span, format!("[[suite]] embedder: {e}")))?;
    Ok(Arc::new(model))
}

/// Refused: this build has no in-process model.
#[cfg(not(feature = "embedder"))]
fn local_embedder(
    config: &Config,
    _settings: &EmbedderConfig,
    suite_span: Range<usize>,
) -> Result<Arc<dyn Embedder + Send>, Error> {
    Err(config
        .error_at(
            suite_span,
            "[[suite]] embedder: this sqlgate was built without the in-process sentence model; \
             build it with `--features embedder` (the release binaries have it)",
        )
        .into())
}

/// The suite's embedder; a bad setting is an error at the suite's header (`suite_span`).
fn embedder(
    config: &Config,
    settings: &EmbeddingsConfig,
    suite_span: Range<usize>,
) -> Result<Arc<dyn Embedder + Send>, Error> {
    let timeout = settings.timeout_secs.duration();
    settings.throttle.check().map_err(|problem| {
        config.error_at(
            suite_span.clone(),
            format!("[[suite]] embeddings: throttle: {problem}"),
        )
    })?;
    let client = Client::new(&ClientConfig {
        base_url: settings.base_url.clone(),
        api_key_env: settings.api_key_env.clone(),
        timeout,
    })
    .map_err(|e| config.error_at(suite_span, format!("[[suite]] embeddings: {}", e.0)))?;
    let file = settings.model.replace(['/', '\\', ':'], "_");
    let cache = config
        .resolve(&config.snapshots)
        .join("embeddings")
        .join(format!("{file}.jsonl"));
    Ok(Arc::new(CachedEmbedder::open(
        client,
        &settings.model,
        &cache,
        Box::new(Throttle::new(settings.throttle.clone())),
    )?))
}
