//! What answers a session's questions: the system of each suite, its cassette, the throttle on
//! asking it, the abstention rules applied to what it says, and the schema text each request
//! shows.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::config::system::SystemKind;
use crate::config::ThrottleConfig;
use crate::config::{AbstentionConfig, Config, ConfigError, ProfileConfig, RecordMode};
use crate::system::abstention::Abstention;
use crate::system::answer::{answer_all, Answered};
use crate::system::cassette::{record_key, Cassette, RecordedAnswer};
use crate::system::{self, Request, System};
use crate::Error;
use sqlgate_eval::error::InputError;
use sqlgate_llm::throttle::{Asked, Throttle};

use super::plan::SuitePlan;

/// How far a suite's answers are.
#[derive(Debug, Clone, Copy)]
pub struct AnswerProgress<'a> {
    /// The suite whose answers these are.
    pub suite: &'a str,
    /// Answers in so far, from the system or the cassette.
    pub answered: usize,
    /// Answers the suite's run needs.
    pub total: usize,
    /// Answers that came from the system itself rather than the cassette.
    pub asked: usize,
    /// Answers that are system errors (not recorded, timeouts, garbage...).
    pub errors: usize,
    /// Since the suite's answers were first asked for.
    pub elapsed: std::time::Duration,
}

/// Called as a suite's answers come in, e.g. to draw a progress bar.
pub type AnswerProgressFn = dyn Fn(&AnswerProgress<'_>) + Send + Sync;

/// The run's system, one per suite, and what comes with it.
pub struct Answerer {
    /// The system's name in the configuration (`custom` for a Rust user's own).
    name: String,
    /// The system answering each suite.
    systems: Vec<Arc<dyn System>>,
    /// `None` for a replayed predictions file, which is a recording itself.
    cassette: Option<Cassette>,
    throttle: Throttle,
    abstention: Abstention,
    record: RecordMode,
    /// How many times each question is asked.
    samples: u32,
    /// Per suite and database: the database's path and the schema DDL given to systems.
    schemas: Vec<HashMap<String, (PathBuf, String)>>,
    progress: Option<Box<AnswerProgressFn>>,
    /// Found while answering; a set, so a warning repeated per suite shows once.
    warnings: Mutex<BTreeSet<String>>,
}

impl Answerer {
    /// The profile's system for `suites`, or a Rust user's own `system` (recorded under the
    /// name `custom`), answering under `record`.
    pub(super) fn open(
        config: &Config,
        profile: &ProfileConfig,
        suites: &[SuitePlan],
        system: Option<Arc<dyn System>>,
        record: RecordMode,
    ) -> Result<Answerer, Error> {
        let LoadedSystem {
            systems,
            name,
            cassette,
            throttle,
            abstention,
            samples,
            warnings,
        } = load_system(config, profile, suites, system)?;
        let abstention = Abstention::new(&abstention)
            .map_err(|e| ConfigError::file(&config.path, e.to_string()))?;
        let schemas = suites
            .iter()
            .map(schemas_of)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Answerer {
            name,
            systems,
            cassette,
            throttle: Throttle::new(throttle),
            abstention,
            record,
            samples,
            schemas,
            progress: None,
            warnings: Mutex::new(warnings.into_iter().collect()),
        })
    }

    /// The system's name in the configuration (`custom` for a Rust user's own).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many times each question is asked (1: not sampled).
    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// What identifies the system answering each suite (its settings), for run records.
    pub(super) fn fingerprints(&self) -> Vec<String> {
        self.systems.iter().map(|s| s.fingerprint()).collect()
    }

    /// The cassette keys of the answers to `case` of suite number `suite`, one per sample.
    pub(super) fn reply_keys(&self, plan: &SuitePlan, suite: usize, case: usize) -> Vec<String> {
        let fingerprint = self.systems[suite].fingerprint();
        self.requests(plan, suite, case)
            .iter()
            .map(|request| record_key(&fingerprint, request))
            .collect()
    }

    /// The cassette, unless the system replays a predictions file.
    pub(super) fn cassette(&self) -> Option<&Cassette> {
        self.cassette.as_ref()
    }

    /// The answers this session asked the system for, as cassette records.
    pub(super) fn recorded_answers(&self) -> Vec<RecordedAnswer> {
        self.cassette
            .as_ref()
            .map(Cassette::recorded)
            .unwrap_or_default()
    }

    /// Shows how far the answers are while a system is being asked.
    pub(super) fn show_progress(&mut self, show: Box<AnswerProgressFn>) {
        self.progress = Some(show);
    }

    /// The system's answers for cases of suite number `suite` (planned by `plan`), from the
    /// cassette or the system, with the time each took: per case, one answer per sample.
    pub(super) fn answers(
        &self,
        plan: &SuitePlan,
        suite: usize,
        cases: &[usize],
    ) -> Vec<Vec<Answered>> {
        // Every sample is a request of its own: asked, recorded and replayed like a case.
        let requests: Vec<Request> = cases
            .iter()
            .flat_map(|&index| self.requests(plan, suite, index))
            .collect();
        let system = self.systems[suite].as_ref();
        let [answered_count, asked_count, error_count] = [(); 3].map(|_| AtomicUsize::new(0));
        let started = Instant::now();
        let progress = |_index: usize, answered: &Answered| {
            // Each count is read as this answer leaves it.
            let count = |counter: &AtomicUsize, this: bool| {
                counter.fetch_add(usize::from(this), Ordering::Relaxed) + usize::from(this)
            };
            let progress = AnswerProgress {
                suite: &plan.name,
                answered: count(&answered_count, true),
                total: requests.len(),
                asked: count(&asked_count, answered.asked),
                errors: count(&error_count, answered.reply.is_err()),
                elapsed: started.elapsed(),
            };
            if let Some(show) = &self.progress {
                show(&progress);
            }
        };
        let answers = match &self.cassette {
            Some(cassette) => answer_all(
                system,
                &requests,
                cassette,
                self.record,
                &self.throttle,
                &progress,
            ),
            None => requests
                .iter()
                .enumerate()
                .map(|(index, request)| {
                    let start = Instant::now();
                    let reply = system.answer(request);
                    // A predictions file records no latency: it is unknown, not zero.
                    let answered = Answered::new(reply, start.elapsed(), true, None);
                    progress(index, &answered);
                    answered
                })
                .collect(),
        };
        let without_samples = answers
            .iter()
            .all(|a| a.reply.as_ref().map_or(true, |r| r.samples.is_empty()));
        if self.abstention.votes() && without_samples && !answers.is_empty() {
            self.warn(format!(
                "`abstention.vote` is set, but none of the {} answers of suite `{}` carried \
                 samples: nothing was voted on",
                answers.len(),
                plan.name
            ));
        }
        // The cassette keeps what the system said; the system's reading of it, cleaning and
        // the abstention rules apply after, to recorded and new replies alike.
        let apology = self
            .abstention
            .apology_abstains(&plan.bench, plan.scoring.mode);
        answers
            .into_iter()
            .map(|answered| {
                // A reply cut short is counted as such even when it reads as garbage.
                let truncated = answered.reply.as_ref().is_ok_and(|reply| reply.truncated);
                Answered {
                    reply: answered
                        .reply
                        .and_then(|reply| system.interpret(reply))
                        .map(|reply| self.abstention.apply(reply.clean(), apology))
                        .map_err(|mut error| {
                            error.truncated |= truncated;
                            error
                        }),
                    ..answered
                }
            })
            .collect::<Vec<_>>()
            .chunks(self.samples as usize)
            .map(<[Answered]>::to_vec)
            .collect()
    }

    /// What asking the system took (questions, attempts, the concurrency it settled at), or
    /// `None` when it was asked nothing and not stopped.
    pub(super) fn asked(&self) -> Option<Asked> {
        let asked = self.throttle.asked();
        (asked.questions > 0 || asked.stopped.is_some()).then_some(asked)
    }

    /// What answering found that a reader must know: rules that did nothing, cassette lines
    /// dropped or not journaled.
    pub(super) fn warnings(&self) -> Vec<String> {
        let mut warnings: Vec<String> = self
            .warnings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect();
        if let Some(cassette) = &self.cassette {
            warnings.extend(cassette.warnings());
        }
        warnings
    }

    fn warn(&self, warning: String) {
        self.warnings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(warning);
    }

    /// What the system is asked about a case: once, or once per sample.
    fn requests(&self, plan: &SuitePlan, suite: usize, case: usize) -> Vec<Request> {
        let case = &plan.bench.cases[case];
        let (path, schema) = self.schemas[suite][&case.db].clone();
        let request = Request::new(case, path, schema);
        match self.samples {
            1 => vec![request],
            samples => (0..samples)
                .map(|k| request.clone().with_sample(k))
                .collect(),
        }
    }
}

/// The system of each suite, as the configuration or the Rust user gives it.
struct LoadedSystem {
    systems: Vec<Arc<dyn System>>,
    name: String,
    cassette: Option<Cassette>,
    throttle: ThrottleConfig,
    abstention: AbstentionConfig,
    samples: u32,
    /// What the configuration lets through but a reader must know.
    warnings: Vec<String>,
}

/// Builds the profile's system for `suites`, or wraps a Rust user's own `system` (recorded
/// under the name `custom`).
fn load_system(
    config: &Config,
    profile: &ProfileConfig,
    suites: &[SuitePlan],
    system: Option<Arc<dyn System>>,
) -> Result<LoadedSystem, Error> {
    Ok(match system {
        // A Rust user's own system: recorded under the name `custom`.
        Some(system) => {
            let path = config
                .resolve(&config.snapshots)
                .join("predictions")
                .join("custom.jsonl");
            let systems = suites.iter().map(|_| Arc::clone(&system)).collect();
            let cassette = Some(Cassette::open(&path)?);
            let name = "custom".to_string();
            LoadedSystem {
                systems,
                name,
                cassette,
                throttle: ThrottleConfig::default(),
                abstention: AbstentionConfig::default(),
                samples: 1,
                warnings: Vec::new(),
            }
        }
        None => {
            let system_config = config.system(profile)?;
            let cassette = match system_config.kind {
                SystemKind::Replay(_) => None,
                _ => Some(Cassette::open(&system_config.cassette)?),
            };
            let named: Vec<(&str, &sqlgate_eval::loaders::Benchmark)> = suites
                .iter()
                .map(|suite| (suite.name.as_str(), &suite.bench))
                .collect();
            let systems = system::build(system_config, &named)?;
            let name = system_config.name.clone();
            let throttle = system_config.throttle.clone();
            LoadedSystem {
                systems,
                name,
                cassette,
                throttle,
                abstention: system_config.abstention.clone(),
                samples: system_config.samples,
                warnings: sampling_warnings(system_config),
            }
        }
    })
}

/// Samples of a model asked at temperature 0 differ only as far as the server is not
/// deterministic: the pass rates then measure the server, not the model's spread.
fn sampling_warnings(system: &crate::config::system::SystemConfig) -> Vec<String> {
    match &system.kind {
        SystemKind::Openai(openai) if system.samples > 1 && openai.temperature == 0.0 => {
            vec![format!(
                "system `{}` asks each question {} times at temperature 0: its samples differ \
                 only where the server is not deterministic; set `temperature` to sample the \
                 model's answers",
                system.name, system.samples
            )]
        }
        _ => Vec::new(),
    }
}

/// Each database's path and schema DDL, as requests show them.
fn schemas_of(suite: &SuitePlan) -> Result<HashMap<String, (PathBuf, String)>, InputError> {
    let mut schemas = HashMap::new();
    for case in &suite.bench.cases {
        if !schemas.contains_key(&case.db) {
            let path = suite.bench.db_files(case, false)?.remove(0);
            let ddl = sqlgate_eval::exec::schema::schema_text(&suite.engine(), &path).map_err(
                |error| {
                    InputError::file(&path, format!("cannot read the schema: {}", error.message))
                },
            )?;
            schemas.insert(case.db.clone(), (path, ddl));
        }
    }
    Ok(schemas)
}
