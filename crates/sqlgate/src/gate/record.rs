//! Run records: what a run (or one shard of it) evaluated, as JSON, so that `sqlgate merge`
//! can gate the whole suite from its shards and a later run can reuse an unchanged case's
//! verdict.
//!
//! A [`CaseRecord`] keeps everything the reports read from an evaluated case (verdict, metrics,
//! the reviewer's detail, timing); the case itself (question, gold, tags) comes from the plan.
//! A [`RunRecord`] adds the fingerprints of the run's inputs, which `merge` compares.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use sqlgate_eval::error::{InputError, OutputError};
use sqlgate_eval::loaders::json_message;
use sqlgate_eval::metrics::case_metric::CaseMetric;
use sqlgate_eval::metrics::efficiency::measure::Efficiency;
use sqlgate_eval::metrics::ex::{Diagnostic, Verdict};

use crate::system::answer::AnswerCost;
use crate::system::cassette::RecordedAnswer;
use crate::system::SystemErrorKind;
use sqlgate_eval::scoring::{CaseScore, FineScores, Robustness};
use sqlgate_eval::spider::Hardness;

use super::judge::{CaseRun, SampleOutcome, Sampled};
use super::plan::SuitePlan;
use super::preview::ResultsPreview;
use super::{SuiteSummary, TestStatus};

/// One evaluated case.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CaseRecord {
    /// The case's test name.
    pub test: String,
    /// The case's index in its suite.
    pub case: usize,
    /// The question has no SQL answer (correct means abstaining); such cases take no part in
    /// the suite's means. Written so a record alone tells `sqlgate diff` what was correct.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub infeasible: bool,
    /// The execution verdict (correct, wrong, error...).
    pub verdict: Verdict,
    /// Execution accuracy under the suite's mode: 1 or 0.
    pub ex: f64,
    /// Defog's `exact_match`, in the modes that have it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<bool>,
    /// Why the prediction or the gold could not be executed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The database the case was not correct on, when it ran on several (`academic_3.sqlite`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_on: Option<String>,
    /// Named diagnostics (`<metric>_error`, mode details), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<(String, String)>,
    /// The predicted SQL as executed; absent when it abstained or gave no answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
    /// Markdown fences or prose were stripped from the raw answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cleaned: bool,
    /// EXP, EXR and F1 by SQLMorph regime.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fine: BTreeMap<String, FineScores>,
    /// Spider exact set match (1 or 0), when the suite computes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub esm: Option<u8>,
    /// Enhanced Tree Matching (1 or 0), when the suite computes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etm: Option<u8>,
    /// BIRD mini-dev Soft-F1 (0..1), when the suite computes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soft_f1: Option<f64>,
    /// VES and R-VES, timed and by steps, when the suite measures them: merged shards give
    /// the suite's means (a timed suite's verdicts are never reused in a later run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<Efficiency>,
    /// The registered per-case metrics the suite computes, by name (each in [0, 1]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<CaseMetric, f64>,
    /// Why the system gave no usable answer, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_error: Option<SystemErrorKind>,
    /// The reply was cut short by the system's token limit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reply_truncated: bool,
    /// The failure's details for the report (diff of the results, ETM's explanation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// How long the case took, in seconds.
    pub seconds: f64,
    /// Run records only: the case's test verdict in that run, and the cassette key of its
    /// answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TestStatus>,
    /// The cassette key of the answer the case was scored on (a sampled case's first sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_key: Option<String>,
    /// Run records only: a sampled case's cassette keys of its further samples, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sample_keys: Vec<String>,
    /// A sampled case: every sample's outcome, in sample order (the fields above are those of
    /// the sample shown). Judged again by the suite's `pass_rule`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<SampleOutcome>,
    /// What the family metrics read (query shape, schema errors, retrieval, samples), when
    /// the suite has families: a merged or reused case gives the same family numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub robustness: Option<Robustness>,
    /// A wrong answer's first result rows beside the gold's (absent in records written before
    /// sqlgate kept them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<ResultsPreview>,
    /// What each of the case's answers cost (latency, tokens), so a merged run reports the
    /// same cost numbers (absent in records written before sqlgate kept them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answer_costs: Vec<AnswerCost>,
}

impl CaseRecord {
    /// The record of a case as it was run.
    pub fn of(run: &CaseRun) -> CaseRecord {
        let score = &run.score;
        CaseRecord {
            test: run.test.clone(),
            case: run.case_index,
            infeasible: !score.feasible,
            verdict: score.verdict,
            ex: score.ex,
            exact: score.exact,
            error: score.error.clone(),
            failed_on: score.failed_on.clone(),
            diagnostics: score
                .diagnostics
                .iter()
                .map(|d| (d.code.to_string(), d.message.clone()))
                .collect(),
            sql: score.sql.clone(),
            cleaned: score.cleaned,
            fine: score.fine.clone(),
            esm: score.esm,
            etm: score.etm,
            soft_f1: score.soft_f1,
            efficiency: score.efficiency,
            metrics: score.metrics.clone(),
            system_error: run.system_error,
            reply_truncated: run.reply_truncated,
            detail: run.detail.clone(),
            seconds: run.duration.as_secs_f64(),
            status: None,
            reply_key: None,
            sample_keys: Vec::new(),
            samples: run
                .sampled
                .as_ref()
                .map(|sampled| sampled.outcomes.clone())
                .unwrap_or_default(),
            robustness: score.robustness.clone(),
            preview: run.preview.clone(),
            answer_costs: run.answer_costs.clone(),
        }
    }

    /// The case run again as case `case_index` of `suite`; `Err` says why the record does not
    /// fit the suite. The structural metrics' component details are not kept (reports read only
    /// their 0/1).
    pub fn to_run(&self, suite: &SuitePlan, case_index: usize) -> Result<CaseRun, RecordError> {
        let case = suite
            .bench
            .cases
            .get(case_index)
            .filter(|case| suite.case_test_name(case) == self.test)
            .ok_or_else(|| RecordError::NotInPlan {
                test: self.test.clone(),
                case_index,
            })?;
        let invalid = |problem: String| RecordError::Invalid {
            test: self.test.clone(),
            problem,
        };
        if let Some(contradiction) = self.contradiction() {
            return Err(invalid(contradiction));
        }
        let sampled = (!self.samples.is_empty()).then(|| Sampled {
            outcomes: self.samples.clone(),
            rule: suite.pass_rule,
        });
        self.check_samples(suite.samples, sampled.as_ref(), case.feasible)
            .map_err(invalid)?;
        let score = CaseScore {
            id: case.id.clone(),
            db: case.db.clone(),
            tags: case.tags.clone(),
            feasible: case.feasible,
            verdict: self.verdict,
            ex: self.ex,
            exact: self.exact,
            error: self.error.clone(),
            failed_on: self.failed_on.clone(),
            diagnostics: self
                .diagnostics
                .iter()
                .map(|(code, message)| Diagnostic {
                    code: interned(code),
                    message: message.clone(),
                })
                .collect(),
            sql: self.sql.clone(),
            cleaned: self.cleaned,
            fine: self.fine.clone(),
            esm: self.esm,
            esm_detail: None,
            etm: self.etm,
            etm_detail: None,
            soft_f1: self.soft_f1,
            hardness: case
                .tags
                .get("hardness")
                .and_then(|level| Hardness::from_str(level).ok()),
            cs: case.cs,
            robustness: self.robustness.clone(),
            efficiency: self.efficiency,
            metrics: self.metrics.clone(),
        };
        let fine = suite.regime().map(|regime| {
            self.fine
                .get(&regime.to_string())
                .copied()
                .unwrap_or_default()
        });
        Ok(CaseRun {
            test: self.test.clone(),
            case_index,
            score,
            fine,
            duration: Duration::try_from_secs_f64(self.seconds).unwrap_or_default(),
            system_error: self.system_error,
            reply_truncated: self.reply_truncated,
            detail: self.detail.clone(),
            preview: self.preview.clone(),
            sampled,
            answer_costs: self.answer_costs.clone(),
        })
    }
}

/// Why a run record's case cannot be run again in a plan ([`CaseRecord::to_run`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The plan's case at that index has another test name: the record is of another plan.
    #[error("case `{test}` is not case {case_index} of the plan")]
    NotInPlan {
        /// The record's test name.
        test: String,
        /// The index the record gives.
        case_index: usize,
    },
    /// The record's fields contradict each other or the suite (its samples): it was edited
    /// or corrupted.
    #[error("case `{test}`: {problem}")]
    Invalid {
        /// The record's test name.
        test: String,
        /// What does not hold.
        problem: String,
    },
}

impl CaseRecord {
    /// A suite asking each question `count` times has that many samples per case (none when
    /// once), and its verdict is that of the sample its pass rule shows: other samples were
    /// not run on this suite, or were edited.
    fn check_samples(
        &self,
        count: u32,
        sampled: Option<&Sampled>,
        feasible: bool,
    ) -> Result<(), String> {
        let expected = if count > 1 { count as usize } else { 0 };
        if self.samples.len() != expected {
            return Err(format!(
                "{} samples where the suite asks each question {} time(s)",
                self.samples.len(),
                count
            ));
        }
        let Some(sampled) = sampled else {
            return Ok(());
        };
        let shown = sampled.outcomes[sampled.shown(feasible)];
        if (shown.verdict, shown.system_error) != (self.verdict, self.system_error) {
            return Err(format!(
                "verdict `{}` is not the one its samples give under pass_rule {} (`{}`)",
                self.verdict.as_str(),
                sampled.rule,
                shown.verdict.as_str()
            ));
        }
        Ok(())
    }

    /// Fields that no evaluation sets together: a record holding them was edited or corrupted,
    /// and which of them to believe cannot be told.
    pub fn contradiction(&self) -> Option<String> {
        let unit = |value: f64| (0.0..=1.0).contains(&value);
        if self.ex != 0.0 && self.ex != 1.0 {
            return Some(format!("ex = {} is neither 0 nor 1", self.ex));
        }
        if (self.verdict == Verdict::Correct) != (self.ex == 1.0) {
            return Some(format!(
                "verdict `{}` contradicts ex = {}",
                self.verdict.as_str(),
                self.ex
            ));
        }
        if self.system_error.is_some() != (self.verdict == Verdict::SystemError) {
            return Some(format!(
                "verdict `{}` contradicts its system error ({})",
                self.verdict.as_str(),
                self.system_error.map_or("none", |kind| kind.as_str())
            ));
        }
        if self.sql.is_some() && matches!(self.verdict, Verdict::Abstained | Verdict::SystemError) {
            return Some(format!(
                "verdict `{}` comes with predicted SQL",
                self.verdict.as_str()
            ));
        }
        if self.esm.into_iter().chain(self.etm).any(|value| value > 1) {
            return Some("esm and etm are 0 or 1".to_string());
        }
        if self.samples.len() == 1 {
            return Some("a sampled case has at least two samples".to_string());
        }
        if let Some(value) = self.soft_f1.filter(|&v| !unit(v)) {
            return Some(format!("soft_f1 = {value} does not lie in [0, 1]"));
        }
        if let Some((metric, value)) = self.metrics.iter().find(|(_, &v)| !unit(v)) {
            return Some(format!("{metric} = {value} does not lie in [0, 1]"));
        }
        if !self.seconds.is_finite() || self.seconds < 0.0 {
            return Some(format!("seconds = {} is not a duration", self.seconds));
        }
        self.fine
            .iter()
            .find(|(_, s)| !(unit(s.exp) && unit(s.exr) && unit(s.f1)))
            .map(|(regime, _)| format!("{regime}: EXP, EXR and F1 lie in [0, 1]"))
    }
}

/// Diagnostic codes are static names; one read back is interned (there are a handful).
fn interned(code: &str) -> &'static str {
    static CODES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut codes = CODES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    match codes.get(code) {
        Some(code) => code,
        None => {
            let code: &'static str = Box::leak(code.to_string().into_boxed_str());
            codes.insert(code);
            code
        }
    }
}

/// What a run was run on: two records belong to one run when these are equal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RunInputs {
    /// The sqlgate version that wrote the record.
    pub sqlgate: String,
    /// The configuration file's content.
    pub config: String,
    /// The profile the run used.
    pub profile: String,
    /// The name of the system under test.
    pub system: String,
    /// The system's fingerprint, per suite.
    pub fingerprints: Vec<String>,
    /// Every case of every suite: names, gold, tags, questions.
    pub plan: String,
    /// The content hash of each SQLite database the suites read, by path (relative to the
    /// configuration's folder).
    pub databases: BTreeMap<String, String>,
}

/// A run's (or a shard's) record: `sqlgate test --record-out FILE`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RunRecord {
    /// What the run read: a merge refuses records of other inputs.
    pub inputs: RunInputs,
    /// `count:K/N` or `hash:K/N` of a shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// When the run ended, in seconds since the Unix epoch (absent in records written before
    /// sqlgate kept it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<u64>,
    /// The commit the run ran on (`GITHUB_SHA`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// A whole run's suite metrics and gates, for later reports' gate history (absent in a
    /// shard's record, which has neither, and in a filtered or stopped run's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outcome: Vec<SuiteOutcome>,
    /// The cases this run evaluated, per suite (in the plan's suite order).
    pub suites: Vec<SuiteRecord>,
    /// The answers this run asked the system for (cassette records, one per key): `merge`
    /// adds them to the cassette, so shards recording on different machines lose nothing.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "one_answer_per_key"
    )]
    pub answers: Vec<RecordedAnswer>,
}

/// A run record's answers, refusing a key given twice: a run writes each answer it recorded
/// once, so a repeat was not written by sqlgate. The error carries the line it was found at.
fn one_answer_per_key<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<RecordedAnswer>, D::Error> {
    struct Answers;

    impl<'de> Visitor<'de> for Answers {
        type Value = Vec<RecordedAnswer>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of cassette records")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut keys = HashSet::new();
            let mut answers = Vec::new();
            while let Some(answer) = seq.next_element::<RecordedAnswer>()? {
                if !keys.insert(answer.key().to_string()) {
                    return Err(serde::de::Error::custom(format!(
                        "the answer of case `{}` repeats an earlier answer's key: a run \
                         record holds one answer per key",
                        answer.case()
                    )));
                }
                answers.push(answer);
            }
            Ok(answers)
        }
    }

    deserializer.deserialize_seq(Answers)
}

/// A suite's metrics and gate verdicts as a whole run concluded them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SuiteOutcome {
    /// The suite's name.
    pub name: String,
    /// Suite metrics by name, and family metrics as `<family>::<metric>`: names, not
    /// [`MetricKey`](super::MetricKey)s, so that a record of a version with other metrics
    /// still reads as an earlier run.
    pub metrics: BTreeMap<String, f64>,
    /// Each gate: `(metric, threshold, status)` as [`SuiteSummary::gates`].
    pub gates: Vec<(String, String, TestStatus)>,
}

impl SuiteOutcome {
    /// The outcome a report's summary of a suite records.
    pub fn of(summary: &SuiteSummary) -> SuiteOutcome {
        SuiteOutcome {
            name: summary.name.clone(),
            metrics: summary
                .metrics
                .iter()
                .map(|(key, value)| (key.to_string(), *value))
                .collect(),
            gates: summary
                .gates
                .iter()
                .map(|(key, threshold, status)| (key.to_string(), threshold.clone(), *status))
                .collect(),
        }
    }
}

/// One suite's cases in a run record.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SuiteRecord {
    /// The suite's name.
    pub name: String,
    /// The cases the run evaluated, in case order.
    pub cases: Vec<CaseRecord>,
}

impl RunRecord {
    /// Writes the record as JSON, atomically (`--record-out`).
    pub fn write(&self, path: &Path) -> Result<(), OutputError> {
        let json =
            serde_json::to_string_pretty(self).map_err(|e| OutputError::new(path, e.into()))?;
        sqlgate_eval::files::write_text(path, &json)
    }

    /// Reads a record written by [`RunRecord::write`]; anything else is an input error.
    pub fn read(path: &Path) -> Result<RunRecord, InputError> {
        let bytes =
            std::fs::read(path).map_err(|e| InputError::file(path, format!("cannot read: {e}")))?;
        serde_json::from_slice(&bytes).map_err(|e| {
            let problem = format!(
                "column {}: not a sqlgate run record: {}",
                e.column(),
                json_message(&e)
            );
            InputError::file(path, problem).at_line(e.line())
        })
    }
}

/// Shards checked to be one whole run: per suite, every case run exactly once.
#[non_exhaustive]
pub struct MergedRun {
    /// What the shards read (the same for every shard).
    pub inputs: RunInputs,
    /// Per suite of the plan, every case's run in case order.
    pub case_runs: Vec<Vec<CaseRun>>,
    /// The cassette keys of the cases' answers.
    pub reply_keys: Vec<String>,
    /// The shards' recorded answers, each with the run record it came from, in shard order.
    pub answers: Vec<(PathBuf, RecordedAnswer)>,
}

/// Checks that `shards` are the parts of one run of `suites` (same inputs as `expected`; each
/// runnable case in exactly one shard) and puts them together. Errors name the shard file.
pub fn merge(
    shards: &[(PathBuf, RunRecord)],
    suites: &[SuitePlan],
    expected: &RunInputs,
    config: &Path,
) -> Result<MergedRun, InputError> {
    let Some((first_path, _)) = shards.first() else {
        return Err(InputError::file(
            config,
            "merge needs at least one run record",
        ));
    };
    check_databases(shards, expected, config)?;
    for (path, shard) in shards {
        if let Some(field) = differing_input(&shard.inputs, expected) {
            let whose = if path == first_path {
                format!("{} (the configuration as it is now)", config.display())
            } else {
                format!("{} (and {})", first_path.display(), config.display())
            };
            return Err(InputError::file(
                path,
                format!("this shard belongs to another run than {whose}: its {field} differs"),
            ));
        }
        if shard.suites.len() != suites.len()
            || shard
                .suites
                .iter()
                .zip(suites)
                .any(|(s, p)| s.name != p.name)
        {
            return Err(InputError::file(
                path,
                "its suites are not the configuration's suites",
            ));
        }
    }
    let mut case_runs = Vec::with_capacity(suites.len());
    for (index, suite) in suites.iter().enumerate() {
        // A whole run's suite metrics count the `ignore = true` cases too; no shard runs them.
        let ignores_cases = runnable_cases(suite).count() < suite.bench.cases.len();
        if ignores_cases && !suite.gates.is_empty() {
            return Err(InputError::file(
                config,
                format!(
                    "suite `{}` has gates and `ignore = true` cases: its metrics need the ignored \
                     cases, which shards do not run; gate it in one `sqlgate test` run",
                    suite.name
                ),
            ));
        }
        let mut owner: BTreeMap<usize, &Path> = BTreeMap::new();
        let mut runs = Vec::new();
        for (path, shard) in shards {
            for record in &shard.suites[index].cases {
                let run = record
                    .to_run(suite, record.case)
                    .map_err(|problem| InputError::file(path, problem.to_string()))?;
                if let Some(other) = owner.insert(record.case, path) {
                    return Err(InputError::file(
                        path,
                        format!(
                            "case `{}` is also in {}: shards of one run hold disjoint cases",
                            record.test,
                            other.display()
                        ),
                    ));
                }
                runs.push(run);
            }
        }
        let missing: Vec<String> = runnable_cases(suite)
            .filter(|case| !owner.contains_key(case))
            .map(|case| suite.case_test_name(&suite.bench.cases[case]))
            .collect();
        if !missing.is_empty() {
            let shown: Vec<&str> = missing.iter().take(3).map(String::as_str).collect();
            return Err(InputError::file(
                first_path,
                format!(
                    "{} case(s) of suite `{}` in no shard (e.g. {}): give every shard of the run, \
                     each run over the whole suite (no filters)",
                    missing.len(),
                    suite.name,
                    shown.join(", ")
                ),
            ));
        }
        runs.sort_by_cached_key(|run| run.case_index);
        case_runs.push(runs);
    }
    Ok(MergedRun {
        inputs: expected.clone(),
        case_runs,
        reply_keys: shards
            .iter()
            .flat_map(|(_, shard)| &shard.suites)
            .flat_map(|suite| &suite.cases)
            .flat_map(|case| case.reply_key.iter().chain(&case.sample_keys).cloned())
            .collect(),
        answers: shards
            .iter()
            .flat_map(|(path, shard)| {
                shard
                    .answers
                    .iter()
                    .map(|answer| (path.clone(), answer.clone()))
            })
            .collect(),
    })
}

/// The cases of a suite a whole run evaluates (not `ignore = true`).
fn runnable_cases(suite: &SuitePlan) -> impl Iterator<Item = usize> + '_ {
    let ignored: BTreeSet<usize> = suite
        .bench
        .cases
        .iter()
        .enumerate()
        .filter(|(_, case)| suite.ignored.contains(&suite.case_test_name(case)))
        .map(|(index, _)| index)
        .collect();
    (0..suite.bench.cases.len()).filter(move |case| !ignored.contains(case))
}

/// Every shard read each database at the same content, the content it has now, and read no
/// other (the union of the databases the shards read is the configuration's now): verdicts
/// computed on two states of a database, or on a database file since removed from an
/// `every_database` folder, are not one run.
fn check_databases(
    shards: &[(PathBuf, RunRecord)],
    now: &RunInputs,
    config: &Path,
) -> Result<(), InputError> {
    let (first_path, first) = &shards[0];
    for (path, shard) in &shards[1..] {
        let differing = shard.inputs.databases.iter().find(|(db, hash)| {
            first
                .inputs
                .databases
                .get(*db)
                .is_some_and(|other| other != *hash)
        });
        if let Some((db, _)) = differing {
            return Err(InputError::file(
                path,
                format!(
                    "database {db} differs between this shard and {}: the shards ran on \
                     different contents of it; run every shard on one state of the database",
                    first_path.display()
                ),
            ));
        }
    }
    for (path, shard) in shards {
        let changed = now
            .databases
            .iter()
            .find(|(db, hash)| shard.inputs.databases.get(*db) != Some(*hash));
        if let Some((db, _)) = changed {
            return Err(InputError::file(
                path,
                format!(
                    "database {db} (a database of {}) is not as this shard read it: it changed \
                     since, or the shard did not read it; run the shards again",
                    config.display()
                ),
            ));
        }
        let gone = shard
            .inputs
            .databases
            .keys()
            .find(|db| !now.databases.contains_key(*db));
        if let Some(db) = gone {
            return Err(InputError::file(
                path,
                format!(
                    "this shard read database {db}, which is no database of {} now (it was \
                     removed since): its verdicts are not those of a run now; run the shards \
                     again",
                    config.display()
                ),
            ));
        }
    }
    Ok(())
}

fn differing_input(a: &RunInputs, b: &RunInputs) -> Option<&'static str> {
    [
        (a.sqlgate != b.sqlgate, "sqlgate version"),
        (a.config != b.config, "configuration (sqlgate.toml)"),
        (a.profile != b.profile, "profile"),
        (a.system != b.system, "system"),
        (a.fingerprints != b.fingerprints, "system fingerprint"),
        (a.plan != b.plan, "plan (cases, gold queries, tags)"),
    ]
    .into_iter()
    .find(|(differs, _)| *differs)
    .map(|(_, field)| field)
}
