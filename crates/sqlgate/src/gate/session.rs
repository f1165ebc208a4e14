//! A gate session: configuration, suites, the system and its cassette, accepted snapshots.
//! Both front ends run on it: `sqlgate test` runs everything at once, the libtest-mimic harness
//! runs one test per call (so `--exact NAME` evaluates just that case).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rayon::prelude::*;

use crate::config::system::SystemType;
use crate::config::ConfigError;
use crate::config::{AbstentionConfig, RecordMode, ThrottleConfig};
use crate::config::{Config, ProfileConfig};
use crate::system::abstention::Abstention;
use crate::system::answer::{answer_all, Answered};
use crate::system::cassette::{record_key, Cassette, RecordedAnswer};
use crate::system::{self, Request, System};
use crate::Error;
use sqlgate_eval::error::{InputError, OutputError};
use sqlgate_eval::exec::Backend;
use sqlgate_eval::store::{Hasher, Store};
use sqlgate_llm::throttle::{Asked, Throttle};

use super::judge::{self, CaseRun};
use super::plan::{self, SuitePlan, TestDesc, TestKind};
use super::record::{CaseRecord, MergedRun, RunInputs, SuiteRecord};
use super::run::{self, RunReport};
use super::snapshot::{self, SnapshotEntry};

pub struct Session {
    pub config: Config,
    pub profile_name: String,
    pub profile: ProfileConfig,
    pub suites: Vec<SuitePlan>,
    pub system_name: String,
    /// The system answering each suite.
    systems: Vec<Arc<dyn System>>,
    /// `None` for a replayed predictions file, which is a recording itself.
    cassette: Option<Cassette>,
    throttle: Throttle,
    abstention: Abstention,
    record: RecordMode,
    /// Per suite: case test name -> correct in the accepted snapshot.
    accepted: Vec<HashMap<String, bool>>,
    /// Per suite: the accepted snapshot as read when the session opened.
    accepted_snapshots: Vec<Option<snapshot::Accepted>>,
    /// Per suite and database: the schema DDL given to systems.
    schemas: Vec<HashMap<String, (PathBuf, String)>>,
    answer_progress: Option<Box<AnswerProgressFn>>,
    /// Found while opening or running; a set, so a warning repeated per suite shows once.
    warnings: Mutex<BTreeSet<String>>,
}

/// How far a suite's answers are.
#[derive(Debug, Clone, Copy)]
pub struct AnswerProgress<'a> {
    pub suite: &'a str,
    pub answered: usize,
    pub total: usize,
    /// Answers that came from the system itself rather than the cassette.
    pub asked: usize,
    /// Answers that are system errors (not recorded, timeouts, garbage...).
    pub errors: usize,
    /// Since the suite's answers were first asked for.
    pub elapsed: std::time::Duration,
}

pub type AnswerProgressFn = dyn Fn(&AnswerProgress<'_>) + Send + Sync;

impl Session {
    /// Opens `config_path` under `profile`. `system` replaces the configured one (a Rust user's
    /// own system); `record` overrides the profile's record mode.
    pub fn open(
        config_path: &Path,
        profile_name: &str,
        record: Option<RecordMode>,
        system: Option<Arc<dyn System>>,
    ) -> Result<Session, Error> {
        let config = Config::load(config_path)?;
        let profile = config.profile(profile_name)?;
        let suites = super::setup::suites(&config, &profile)?;
        let record = match record {
            Some(mode) => mode,
            None => match profile.record {
                Some(mode) => mode,
                None if running_in_ci() => RecordMode::None,
                None => RecordMode::New,
            },
        };
        let snapshot_dir = config.resolve(&config.snapshots);
        // The accepted snapshots are read while the system loads (a replay system parses every
        // prediction).
        let (loaded, accepted_snapshots) = std::thread::scope(|scope| {
            let snapshots = scope.spawn(|| {
                suites
                    .iter()
                    .map(|suite| snapshot::read(&snapshot::path(&snapshot_dir, &suite.name)))
                    .collect::<Result<Vec<_>, InputError>>()
            });
            let loaded = load_system(&config, &profile, &suites, system);
            let snapshots = snapshots
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (loaded, snapshots)
        });
        let LoadedSystem {
            systems,
            name: system_name,
            cassette,
            throttle,
            abstention,
        } = loaded?;
        let accepted_snapshots = accepted_snapshots?;
        let throttle = Throttle::new(throttle);
        let abstention =
            Abstention::new(&abstention).map_err(|e| ConfigError::file(&config.path, e))?;
        let accepted = accepted_snapshots
            .iter()
            .map(|snapshot| {
                let entries = snapshot.iter().flat_map(|s| &s.entries);
                entries.map(|e| (e.name.clone(), e.passed)).collect()
            })
            .collect();
        let schemas = suites
            .iter()
            .map(schemas_of)
            .collect::<Result<Vec<_>, _>>()?;
        let warnings = suites
            .iter()
            .flat_map(|suite| suite.warnings.iter().cloned())
            .collect();
        Ok(Session {
            answer_progress: None,
            warnings: Mutex::new(warnings),
            config,
            profile_name: profile_name.to_string(),
            profile,
            suites,
            system_name,
            systems,
            cassette,
            throttle,
            abstention,
            record,
            accepted,
            accepted_snapshots,
            schemas,
        })
    }

    pub fn tests(&self) -> Vec<TestDesc> {
        plan::list(&self.suites)
    }

    /// Per suite: case test name -> correct in the accepted snapshot.
    pub fn accepted(&self) -> &[HashMap<String, bool>] {
        &self.accepted
    }

    /// What this session runs on, for run records: two shards with equal inputs are parts of
    /// one run. A run with a cache fingerprints its databases as the cache read them.
    pub fn inputs(&self, store: Option<&Store>) -> Result<RunInputs, InputError> {
        let config = std::fs::read(&self.config.path)
            .map_err(|e| InputError::file(&self.config.path, format!("cannot read: {e}")))?;
        let mut plan = Hasher::new();
        for suite in &self.suites {
            plan.field(&suite.name);
            for case in &suite.bench.cases {
                plan.field(suite.case_test_name(case))
                    .field(&case.question)
                    .optional(case.evidence.as_deref())
                    .field([u8::from(case.feasible)]);
                for gold in &case.gold {
                    plan.field(gold);
                }
                for (tag, value) in &case.tags {
                    plan.field(tag).field(value);
                }
            }
        }
        Ok(RunInputs {
            databases: self.database_hashes(store)?,
            sqlgate: sqlgate_eval::store::VERSION.to_string(),
            config: Hasher::new().field(config).hex(),
            profile: self.profile_name.clone(),
            system: self.system_name.clone(),
            fingerprints: self.systems.iter().map(|s| s.fingerprint()).collect(),
            plan: plan.hex(),
        })
    }

    /// The content hash of every SQLite database the suites read, by its path relative to the
    /// configuration's folder: the hash the run's cache read it at, when the run has a cache.
    /// A server's data has no such hash.
    fn database_hashes(
        &self,
        store: Option<&Store>,
    ) -> Result<BTreeMap<String, String>, InputError> {
        let files: BTreeSet<&Path> = self
            .suites
            .iter()
            .filter(|suite| !suite.backend.on_server())
            .flat_map(|suite| &suite.databases)
            .flat_map(|databases| std::iter::once(&databases.main).chain(&databases.evaluated))
            .map(PathBuf::as_path)
            .collect();
        let folder = self.config.path.parent().unwrap_or(Path::new(""));
        files
            .into_par_iter()
            .map(|file| {
                let hash = match store {
                    Some(store) => store.file_hash(file),
                    None => sqlgate_eval::store::database_hash(file),
                };
                let hash = hash.ok_or_else(|| {
                    InputError::file(file, "cannot read the database to fingerprint it")
                })?;
                let name = pathdiff::diff_paths(file, folder).unwrap_or_else(|| file.into());
                let name: PathBuf = name
                    .components()
                    .filter(|part| *part != std::path::Component::CurDir)
                    .collect();
                Ok((name.display().to_string(), hash))
            })
            .collect()
    }

    /// The run's evaluated cases per suite, with their test verdicts and answers' cassette
    /// keys, for a run record.
    pub fn case_records(&self, report: &RunReport) -> Vec<SuiteRecord> {
        let status: HashMap<&str, super::TestStatus> = report
            .results
            .iter()
            .map(|r| (r.name.as_str(), r.status))
            .collect();
        self.suites
            .iter()
            .enumerate()
            .zip(&report.case_runs)
            .map(|((index, suite), runs)| {
                let fingerprint = self.systems[index].fingerprint();
                let cases = runs
                    .iter()
                    .map(|run| {
                        let request = self.request(index, run.case_index);
                        CaseRecord {
                            status: status.get(run.test.as_str()).copied(),
                            reply_key: Some(record_key(&fingerprint, &request)),
                            ..CaseRecord::of(run)
                        }
                    })
                    .collect();
                SuiteRecord {
                    name: suite.name.clone(),
                    cases,
                }
            })
            .collect()
    }

    /// The answers this session asked the system for, as cassette records.
    pub fn recorded_answers(&self) -> Vec<RecordedAnswer> {
        self.cassette
            .as_ref()
            .map(Cassette::recorded)
            .unwrap_or_default()
    }

    /// The report of a run put together from its shards: each case judged against the
    /// accepted snapshot, then every suite's metrics and gates. The shards' recorded answers
    /// go to the cassette.
    pub fn merged_report(
        &self,
        merged: MergedRun,
        tests: &[TestDesc],
    ) -> Result<RunReport, InputError> {
        if let Some(cassette) = &self.cassette {
            // The shards looked these answers up: an accepting merge keeps them.
            for key in &merged.reply_keys {
                cassette.keep(key);
            }
        }
        if !merged.answers.is_empty() {
            let cassette = self.cassette.as_ref().ok_or_else(|| {
                InputError::file(
                    &self.config.path,
                    "the shards recorded answers, but the system has no cassette (replay)",
                )
            })?;
            let answers: Vec<(&Path, &RecordedAnswer)> = merged
                .answers
                .iter()
                .map(|(file, answer)| (file.as_path(), answer))
                .collect();
            cassette.add_recorded(&answers);
        }
        let mut report = RunReport {
            results: Vec::new(),
            case_runs: Vec::new(),
            metrics: Vec::new(),
            cancelled: false,
            work: Default::default(),
        };
        for (index, (suite, runs)) in self.suites.iter().zip(merged.case_runs).enumerate() {
            for run in &runs {
                let selected = tests
                    .iter()
                    .any(|t| t.suite == index && t.kind == TestKind::Case(run.case_index));
                if selected {
                    let accepted = self.accepted[index].get(&run.test).copied();
                    report.results.push(judge::judge_case(suite, run, accepted));
                }
            }
            let gates: Vec<TestKind> = tests
                .iter()
                .filter(|t| t.suite == index)
                .map(|t| t.kind)
                .filter(|kind| !matches!(kind, TestKind::Case(_)))
                .collect();
            let (metrics, gate_results) = run::conclude_suite(suite, &gates, &runs);
            report.results.extend(gate_results);
            report.work.cases += runs.len();
            report.case_runs.push(runs);
            report.metrics.push(metrics);
        }
        run::sort_in_plan_order(&mut report.results, tests);
        Ok(report)
    }

    pub fn snapshot_dir(&self) -> PathBuf {
        self.config.resolve(&self.config.snapshots)
    }

    /// The system's answers for cases of a suite, from the cassette or the system, with the
    /// time each took.
    pub fn answers(&self, suite: usize, cases: &[usize]) -> Vec<Answered> {
        let plan = &self.suites[suite];
        let requests: Vec<Request> = cases
            .iter()
            .map(|&index| self.request(suite, index))
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
                asked: count(&asked_count, !answered.elapsed.is_zero()),
                errors: count(&error_count, answered.reply.is_err()),
                elapsed: started.elapsed(),
            };
            if let Some(show) = &self.answer_progress {
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
                    let answered = Answered {
                        reply: system.answer(request),
                        elapsed: start.elapsed(),
                    };
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
        answers
            .into_iter()
            .map(|answered| {
                // A reply cut short is counted as such even when it reads as garbage.
                let truncated = answered.reply.as_ref().is_ok_and(|reply| reply.truncated);
                Answered {
                    reply: answered
                        .reply
                        .and_then(|reply| system.interpret(reply))
                        .map(|reply| self.abstention.apply(reply.clean()))
                        .map_err(|mut error| {
                            error.truncated |= truncated;
                            error
                        }),
                    elapsed: answered.elapsed,
                }
            })
            .collect()
    }

    /// What asking the system took (questions, attempts, the concurrency it settled at), or
    /// `None` when it was asked nothing and not stopped.
    pub fn asked(&self) -> Option<Asked> {
        let asked = self.throttle.asked();
        (asked.questions > 0 || asked.stopped.is_some()).then_some(asked)
    }

    /// Shows how far the answers are while a system is being asked (a progress bar, or
    /// periodic lines).
    pub fn show_answer_progress(&mut self, show: Box<AnswerProgressFn>) {
        self.answer_progress = Some(show);
    }

    /// Things the run found that do not fail a test but that a reader must know: databases
    /// without rows, rules that did nothing, cassette lines dropped or not journaled.
    pub fn warnings(&self) -> Vec<String> {
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

    /// What the system is asked about a case.
    fn request(&self, suite: usize, case: usize) -> Request {
        let case = &self.suites[suite].bench.cases[case];
        let (path, schema) = self.schemas[suite][&case.db].clone();
        Request::new(case, path, schema)
    }

    /// After a run: makes the cassette durable and compares each fully-run suite with its
    /// accepted snapshot. Accepting a whole run also prunes the cassette of answers no case
    /// asked for (old questions, old prompts).
    pub fn finish(
        &self,
        report: &RunReport,
        whole_run: bool,
        accept: bool,
    ) -> Result<Finished, OutputError> {
        let complete = whole_run && !report.cancelled;
        let pruned_answers = match &self.cassette {
            Some(cassette) => cassette.finish(complete && accept)?,
            None => 0,
        };
        let mut finished = Finished {
            snapshots: Vec::new(),
            pruned_answers,
        };
        if !complete {
            return Ok(finished);
        }
        let dir = self.snapshot_dir();
        let ci = running_in_ci();
        let mut outcomes = Vec::new();
        for ((suite, runs), accepted) in self
            .suites
            .iter()
            .zip(&report.case_runs)
            .zip(&self.accepted_snapshots)
        {
            let current: Vec<SnapshotEntry> = runs.par_iter().map(snapshot_entry).collect();
            let current_body = snapshot::body(&current);
            let rendered = snapshot::with_front_matter(&suite.name, &current_body);
            let (diff, diff_text) = match accepted {
                // The file as sqlgate wrote it, unchanged: nothing to compare.
                Some(accepted) if accepted.text == rendered => {
                    (snapshot::SnapshotDiff::default(), String::new())
                }
                _ => {
                    let entries = accepted.as_ref().map_or(&[][..], |a| &a.entries[..]);
                    (
                        snapshot::compare(entries, &current),
                        snapshot::unified_diff(&snapshot::body(entries), &current_body),
                    )
                }
            };
            let action = if diff.is_empty() && accepted.is_some() {
                SnapshotAction::Unchanged
            } else if accept {
                snapshot::write_accepted(&dir, &suite.name, &rendered)?;
                SnapshotAction::Accepted
            } else if ci {
                SnapshotAction::Differs
            } else {
                snapshot::write_pending(&dir, &suite.name, &rendered)?;
                SnapshotAction::Pending
            };
            outcomes.push(SnapshotOutcome {
                suite: suite.name.clone(),
                diff_text,
                diff,
                action,
            });
        }
        finished.snapshots = outcomes;
        Ok(finished)
    }
}

/// What [`Session::finish`] did.
pub struct Finished {
    /// Each fully-run suite's snapshot comparison.
    pub snapshots: Vec<SnapshotOutcome>,
    /// Cassette answers dropped because no case of the accepted run used them.
    pub pruned_answers: usize,
}

/// What happened to a suite's snapshot after a run.
pub struct SnapshotOutcome {
    pub suite: String,
    pub diff: snapshot::SnapshotDiff,
    pub diff_text: String,
    pub action: SnapshotAction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotAction {
    Unchanged,
    /// `--accept`: written as the accepted snapshot.
    Accepted,
    /// Written as `<suite>.snap.new` for `cargo insta review` or `sqlgate test --accept`.
    Pending,
    /// Under CI nothing pending is written.
    Differs,
}

/// The run's system, one per suite, and what comes with it.
struct LoadedSystem {
    systems: Vec<Arc<dyn System>>,
    name: String,
    cassette: Option<Cassette>,
    throttle: ThrottleConfig,
    abstention: AbstentionConfig,
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
            }
        }
        None => {
            let system_config = config.system(profile)?;
            let cassette = match system_config.kind {
                SystemType::Replay => None,
                _ => Some(Cassette::open(&system_config.cassette)?),
            };
            let named: Vec<(&str, &sqlgate_eval::loaders::Benchmark)> = suites
                .iter()
                .map(|suite| (suite.name.as_str(), &suite.bench))
                .collect();
            let systems = system::build(&system_config, &named)?;
            let name = system_config.name.clone();
            let throttle = system_config.throttle.clone();
            LoadedSystem {
                systems,
                name,
                cassette,
                throttle,
                abstention: system_config.abstention.clone(),
            }
        }
    })
}

fn snapshot_entry(run: &CaseRun) -> SnapshotEntry {
    SnapshotEntry {
        name: run.test.clone(),
        passed: run.correct(),
        verdict: run.score.verdict.as_str().to_string(),
        metrics: [
            ("ex".to_string(), judge::format_metric(run.score.ex)),
            (
                "region".to_string(),
                run.score.region().as_str().to_string(),
            ),
        ]
        .into_iter()
        .chain(judge::fine_metrics(run))
        .chain(judge::structural_metrics(run))
        .chain(judge::metric_error_flags(run))
        .collect(),
        sql: run.score.sql.as_deref().map(snapshot::normalize_sql),
        system_error: run.system_error.map(|kind| kind.as_str().to_string()),
    }
}

fn schemas_of(suite: &SuitePlan) -> Result<HashMap<String, (PathBuf, String)>, InputError> {
    let mut schemas = HashMap::new();
    for case in &suite.bench.cases {
        if !schemas.contains_key(&case.db) {
            let path = suite.bench.db_files(case, false)?.remove(0);
            let ddl = match &suite.backend {
                Backend::Sqlite => system::schema_ddl(&path)?,
                Backend::Postgres(server) => server
                    .schema(&case.db)
                    .map(|schema| schema.ddl())
                    .map_err(|message| case.source.error(message))?,
            };
            schemas.insert(case.db.clone(), (path, ddl));
        }
    }
    Ok(schemas)
}

/// Whether this is a CI run, read as insta reads it: `CI` set to anything but `false`, `0` or
/// the empty string (Azure Pipelines sets `TF_BUILD` instead).
pub fn running_in_ci() -> bool {
    ci_from(
        std::env::var("CI").ok().as_deref(),
        std::env::var_os("TF_BUILD").is_some(),
    )
}

fn ci_from(ci: Option<&str>, tf_build: bool) -> bool {
    match ci {
        Some("false" | "0" | "") => false,
        Some(_) => true,
        None => tf_build,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ci_is_detected_like_insta() {
        assert!(super::ci_from(Some("true"), false));
        assert!(super::ci_from(Some("1"), false));
        assert!(!super::ci_from(Some("false"), true));
        assert!(!super::ci_from(Some("0"), false));
        assert!(!super::ci_from(Some(""), false));
        assert!(!super::ci_from(None, false));
        assert!(super::ci_from(None, true));
    }
}
