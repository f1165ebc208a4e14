//! One side of a diff: every case's outcome as a run record (`--record-out`) or a snapshot
//! (`.snap`) gives it, read into one shape so either may be compared with either.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use sqlgate_eval::error::InputError;
use sqlgate_eval::metrics::ex::Verdict;
use sqlgate_eval::scoring::Metric;

use crate::gate::record::{CaseRecord, RunInputs, RunRecord};
use crate::gate::snapshot::{self, SnapshotEntry};

/// What kind of file a side was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// A run record: `sqlgate test --record-out FILE`.
    RunRecord,
    /// A suite's snapshot (`snapshots/<suite>.snap`, or a pending `.snap.new`).
    Snapshot,
}

impl InputKind {
    /// How reports name the kind.
    pub fn label(self) -> &'static str {
        match self {
            InputKind::RunRecord => "run record",
            InputKind::Snapshot => "snapshot",
        }
    }
}

/// One case as a side holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseOutcome {
    /// The test name, `<suite>::<db>::<case-id>`.
    pub test: String,
    /// The suite the case belongs to.
    pub suite: String,
    /// Whether the case was correct: EX = 1, or an abstention on an infeasible question.
    pub correct: bool,
    /// Whether the question has an SQL answer (only feasible cases enter the means).
    pub feasible: bool,
    /// The verdict class: `correct`, `incorrect`, `pred_error`...
    pub verdict: Verdict,
    /// The answer as a snapshot line writes it: normalized SQL, `abstain`, `<timeout>`...
    pub answer: String,
    /// The reviewer's detail (question, gold, predicted SQL, error), when a run record has it.
    pub detail: Option<String>,
    /// The case's value of each of [`Metric::case_means`], in its order, where the side has it.
    pub metrics: Vec<Option<f64>>,
}

impl CaseOutcome {
    /// The case's value of the `index`th of [`Metric::case_means`], where it has one.
    pub fn value(&self, index: usize) -> Option<f64> {
        self.metrics.get(index).copied().flatten()
    }
}

/// One side of a diff: a run record's or a snapshot's cases.
#[derive(Debug, Clone)]
pub struct RunOutcomes {
    /// The file the side was read from.
    pub path: PathBuf,
    /// A run record or a snapshot.
    pub kind: InputKind,
    /// A run record's fingerprints of what it ran on.
    pub inputs: Option<RunInputs>,
    /// A shard's partition (`hash:2/4`).
    pub partition: Option<String>,
    /// Every case, each test name once.
    pub cases: Vec<CaseOutcome>,
}

/// Reads a run record or a snapshot, telling them apart by content: a record is a JSON object,
/// a snapshot starts with its `---` front matter. Errors name the file.
pub fn read(path: &Path) -> Result<RunOutcomes, InputError> {
    match kind_of(path)? {
        InputKind::RunRecord => from_record(path, &RunRecord::read(path)?),
        InputKind::Snapshot => match snapshot::read(path)? {
            Some(accepted) => Ok(from_snapshot(path, accepted.entries)),
            None => Err(InputError::file(path, "cannot read: not found")),
        },
    }
}

/// The kind of the file at `path`, from its first characters that are not white space.
fn kind_of(path: &Path) -> Result<InputKind, InputError> {
    let cannot_read = |e: std::io::Error| InputError::file(path, format!("cannot read: {e}"));
    let mut start = Vec::new();
    std::fs::File::open(path)
        .map_err(cannot_read)?
        .take(4096)
        .read_to_end(&mut start)
        .map_err(cannot_read)?;
    let text = String::from_utf8_lossy(&start);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    if text.starts_with('{') {
        Ok(InputKind::RunRecord)
    } else if text.starts_with("---") {
        Ok(InputKind::Snapshot)
    } else {
        Err(InputError::file(
            path,
            "neither a run record (a JSON object, written by `sqlgate test --record-out`) nor a \
             snapshot (a `.snap` file, starting with its `---` front matter)",
        ))
    }
}

/// A run record's cases. A case whose fields contradict each other, or a test given twice, is
/// an error: which of them to believe cannot be told.
pub fn from_record(path: &Path, record: &RunRecord) -> Result<RunOutcomes, InputError> {
    let mut cases = Vec::new();
    for suite in &record.suites {
        for case in &suite.cases {
            if let Some(problem) = case.contradiction() {
                return Err(InputError::file(
                    path,
                    format!("case `{}`: {problem}", case.test),
                ));
            }
            cases.push(record_outcome(&suite.name, case));
        }
    }
    check_unique(path, &cases)?;
    Ok(RunOutcomes {
        path: path.to_path_buf(),
        kind: InputKind::RunRecord,
        inputs: Some(record.inputs.clone()),
        partition: record.partition.clone(),
        cases,
    })
}

fn record_outcome(suite: &str, case: &CaseRecord) -> CaseOutcome {
    let feasible = !case.infeasible;
    let correct = if feasible {
        case.ex == 1.0
    } else {
        case.verdict == Verdict::Abstained
    };
    let verdict = case.verdict;
    let line = SnapshotEntry {
        name: case.test.clone(),
        passed: correct,
        verdict,
        metrics: Default::default(),
        sql: case.sql.clone(),
        system_error: case.system_error.map(|kind| kind.as_str().to_string()),
    };
    // A gate suite has at most one SQLMorph regime: its EXP, EXR and F1.
    let fine = case.fine.values().next();
    let value = |metric: Metric| match metric {
        Metric::Ex => Some(case.ex),
        Metric::Exp => fine.map(|f| f.exp),
        Metric::Exr => fine.map(|f| f.exr),
        Metric::F1 => fine.map(|f| f.f1),
        Metric::Esm => case.esm.map(f64::from),
        Metric::Etm => case.etm.map(f64::from),
        Metric::SoftF1 => case.soft_f1,
        Metric::Case(metric) => case.metrics.get(&metric).copied(),
        _ => None,
    };
    CaseOutcome {
        test: case.test.clone(),
        suite: suite.to_string(),
        correct,
        feasible,
        verdict,
        answer: snapshot::answer_text(&line),
        detail: case.detail.clone(),
        metrics: Metric::case_means().into_iter().map(value).collect(),
    }
}

/// A snapshot's cases. Its suite is the first part of each test name; a line without the
/// TrustSQL `region` (written before regions were) counts as a feasible case. The snapshot's
/// reader checked every metric value is a number in its range.
pub fn from_snapshot(path: &Path, entries: Vec<SnapshotEntry>) -> RunOutcomes {
    let cases = entries
        .into_iter()
        .map(|entry| {
            let metrics = Metric::case_means()
                .into_iter()
                .map(|metric| {
                    let text = entry.metrics.get(&metric.to_string())?;
                    text.parse::<f64>().ok()
                })
                .collect();
            let region = entry.metrics.get("region").map(String::as_str);
            CaseOutcome {
                suite: suite_of(&entry.name).to_string(),
                correct: entry.passed,
                feasible: !matches!(region, Some("IV" | "V")),
                verdict: entry.verdict,
                answer: snapshot::answer_text(&entry),
                detail: None,
                metrics,
                test: entry.name,
            }
        })
        .collect();
    RunOutcomes {
        path: path.to_path_buf(),
        kind: InputKind::Snapshot,
        inputs: None,
        partition: None,
        cases,
    }
}

/// `<suite>` of `<suite>::<db>::<case-id>`.
fn suite_of(test: &str) -> &str {
    test.split_once("::").map_or(test, |(suite, _)| suite)
}

fn check_unique(path: &Path, cases: &[CaseOutcome]) -> Result<(), InputError> {
    let mut seen = HashSet::new();
    match cases.iter().find(|case| !seen.insert(case.test.as_str())) {
        Some(case) => Err(InputError::file(
            path,
            format!("test `{}` appears twice", case.test),
        )),
        None => Ok(()),
    }
}
