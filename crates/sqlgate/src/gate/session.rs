//! A gate session: configuration, suites, the system and its cassette, accepted snapshots.
//! Both front ends run on it: `sqlgate test` runs everything at once, the libtest-mimic harness
//! runs one test per call (so `--exact NAME` evaluates just that case).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use crate::config::RecordMode;
use crate::config::{Config, ProfileConfig};
use crate::system::answer::Answered;
use crate::system::cassette::RecordedAnswer;
use crate::system::System;
use crate::Error;
use sqlgate_eval::error::{InputError, OutputError};
use sqlgate_eval::store::{Hasher, Store};
use sqlgate_llm::throttle::Asked;

use super::accepted::{running_in_ci, AcceptedSnapshots, SnapshotOutcome};
use super::answerer::{AnswerProgressFn, Answerer};
use super::judge::{self, AcceptedCase};
use super::plan::{self, SuitePlan, TestDesc, TestKind};
use super::record::{CaseRecord, MergedRun, RunInputs, SuiteRecord};
use super::run::{self, Baseline, RunReport};

/// A gate session, by job: what was loaded (the configuration, the profile, the suites'
/// plans), what answers (the [`Answerer`]: systems, cassette, throttle), and what the run ends
/// against (the [`AcceptedSnapshots`]).
pub struct Session {
    /// The configuration as read from `sqlgate.toml`.
    pub config: Config,
    /// The profile chosen (`--profile`, `$SQLGATE_PROFILE`, else `default`).
    pub profile_name: String,
    /// That profile's settings.
    pub profile: ProfileConfig,
    /// Every suite of the configuration, planned: benchmark loaded, thresholds resolved.
    pub suites: Vec<SuitePlan>,
    answerer: Answerer,
    snapshots: AcceptedSnapshots,
}

impl Session {
    /// Opens `config_path` under `profile`. `system` replaces the configured one (a Rust user's
    /// own system); `record` overrides the profile's record mode.
    pub fn open(
        config_path: &Path,
        profile_name: &str,
        record: Option<RecordMode>,
        system: Option<Arc<dyn System>>,
    ) -> Result<Session, Error> {
        Session::with_config(Config::load(config_path)?, profile_name, record, system)
    }

    /// Opens a session on a configuration already read (`sqlgate init` measures the one it is
    /// about to write), as [`Session::open`] does.
    pub fn with_config(
        config: Config,
        profile_name: &str,
        record: Option<RecordMode>,
        system: Option<Arc<dyn System>>,
    ) -> Result<Session, Error> {
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
        let (answerer, snapshots) = std::thread::scope(|scope| {
            let snapshots = scope.spawn(|| AcceptedSnapshots::read(&snapshot_dir, &suites));
            let answerer = Answerer::open(&config, &profile, &suites, system, record);
            let snapshots = snapshots
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (answerer, snapshots)
        });
        let answerer = answerer?;
        let snapshots = snapshots?;
        let mut suites = suites;
        for suite in &mut suites {
            suite.samples = answerer.samples();
        }
        Ok(Session {
            config,
            profile_name: profile_name.to_string(),
            profile,
            suites,
            answerer,
            snapshots,
        })
    }

    /// Whether the system replays a predictions file (it has no cassette to record into).
    pub fn replays(&self) -> bool {
        self.answerer.cassette().is_none()
    }

    /// The name of the system answering (`custom` for a Rust user's own).
    pub fn system_name(&self) -> &str {
        self.answerer.name()
    }

    /// The system's fingerprint, per suite (in suite order).
    pub fn fingerprints(&self) -> Vec<String> {
        self.answerer.fingerprints()
    }

    /// Every test, suite by suite: its cases in benchmark order, then its gates.
    pub fn tests(&self) -> Vec<TestDesc> {
        plan::list(&self.suites)
    }

    /// What a run's cases are judged against: the outcomes it accepts when it `accepts` them
    /// (a whole run only), else the accepted snapshots.
    pub fn baseline(&self, accepts: bool) -> Baseline<'_> {
        if accepts {
            Baseline::ThisRun
        } else {
            Baseline::Accepted(self.accepted())
        }
    }

    /// Per suite: case test name -> the case in the accepted snapshot.
    pub fn accepted(&self) -> &[HashMap<String, AcceptedCase>] {
        self.snapshots.passed()
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
            system: self.answerer.name().to_string(),
            fingerprints: self.answerer.fingerprints(),
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
                let cases = runs
                    .iter()
                    .map(|run| {
                        let mut keys = self.answerer.reply_keys(suite, index, run.case_index);
                        let first = keys.remove(0);
                        CaseRecord {
                            status: status.get(run.test.as_str()).copied(),
                            reply_key: Some(first),
                            sample_keys: keys,
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
        self.answerer.recorded_answers()
    }

    /// The report of a run put together from its shards: each case judged against
    /// `baseline`, then every suite's metrics and gates. The shards' recorded answers
    /// go to the cassette.
    pub fn merged_report(
        &self,
        merged: MergedRun,
        tests: &[TestDesc],
        baseline: Baseline<'_>,
    ) -> Result<RunReport, InputError> {
        if let Some(cassette) = self.answerer.cassette() {
            // The shards looked these answers up: an accepting merge keeps them.
            for key in &merged.reply_keys {
                cassette.keep(key);
            }
        }
        if !merged.answers.is_empty() {
            let cassette = self.answerer.cassette().ok_or_else(|| {
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
                    let accepted = baseline.of(index, run);
                    report.results.push(judge::judge_case(suite, run, accepted));
                }
            }
            let gates: Vec<TestKind> = tests
                .iter()
                .filter(|t| t.suite == index)
                .map(|t| t.kind)
                .filter(|kind| !matches!(kind, TestKind::Case(_)))
                .collect();
            let of_baseline = |run: &judge::CaseRun| baseline.of(index, run);
            let (metrics, gate_results) = run::conclude_suite(suite, &gates, &runs, &of_baseline);
            report.results.extend(gate_results);
            report.work.cases += runs.len();
            report.case_runs.push(runs);
            report.metrics.push(metrics);
        }
        run::sort_in_plan_order(&mut report.results, tests);
        Ok(report)
    }

    /// The folder of the accepted snapshots, resolved against the configuration's folder.
    pub fn snapshot_dir(&self) -> PathBuf {
        self.snapshots.dir().to_path_buf()
    }

    /// The system's answers for cases of a suite, from the cassette or the system, with the
    /// time each took: per case, one answer per sample.
    pub fn answers(&self, suite: usize, cases: &[usize]) -> Vec<Vec<Answered>> {
        self.answerer.answers(&self.suites[suite], suite, cases)
    }

    /// What asking the system took (questions, attempts, the concurrency it settled at), or
    /// `None` when it was asked nothing and not stopped.
    pub fn asked(&self) -> Option<Asked> {
        self.answerer.asked()
    }

    /// Shows how far the answers are while a system is being asked (a progress bar, or
    /// periodic lines).
    pub fn show_answer_progress(&mut self, show: Box<AnswerProgressFn>) {
        self.answerer.show_progress(show);
    }

    /// Things the run found that do not fail a test but that a reader must know: databases
    /// without rows, a server role that can write, rules that did nothing, cassette lines
    /// dropped or not journaled. A warning repeated per suite shows once.
    pub fn warnings(&self) -> Vec<String> {
        let loading: BTreeSet<&String> = self.suites.iter().flat_map(|s| &s.warnings).collect();
        let mut warnings: Vec<String> = loading.into_iter().cloned().collect();
        warnings.extend(self.answerer.warnings());
        warnings
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
        let pruned_answers = match self.answerer.cassette() {
            Some(cassette) => cassette.finish(complete && accept)?,
            None => 0,
        };
        let snapshots = match complete {
            true => self.snapshots.compare(&self.suites, report, accept)?,
            false => Vec::new(),
        };
        Ok(Finished {
            snapshots,
            pruned_answers,
        })
    }
}

/// What [`Session::finish`] did.
pub struct Finished {
    /// Each fully-run suite's snapshot comparison.
    pub snapshots: Vec<SnapshotOutcome>,
    /// Cassette answers dropped because no case of the accepted run used them.
    pub pruned_answers: usize,
}
