//! Execution accuracy, reproducing each reference evaluator verdict for verdict
//! (spec `evaluators.md`). One file per mode; this file holds the shared vocabulary.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::exec::Execution;

/// A comparison mode: which public evaluator's semantics to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// taoyds/test-suite-sql-eval (Spider): DISTINCT stripped, bag semantics, column permutations.
    Testsuite,
    /// BIRD: set of positional rows.
    Bird,
    /// BIRD with every row's values sorted (PR #162 variant; never for leaderboard parity).
    BirdRowsorted,
    /// Spider 2.0-Lite: column vectors with tolerance, extra columns allowed.
    Spider2,
    /// Defog sql-eval headline flag `correct` (exact or subset match).
    Defog,
    /// Defog sql-eval `exact_match` flag.
    DefogExact,
    /// TrustSQL per-sample correctness (family from the dataset).
    Trustsql,
}

/// Options that change a mode's behaviour; defaults reproduce the reference.
#[derive(Debug, Clone, Default)]
pub struct ModeOptions {
    /// `testsuite --keep_distinct`.
    pub keep_distinct: bool,
    /// BIRD's single time budget for "execute prediction, then gold" (spec §0.5).
    pub pair_budget: Option<Duration>,
}

/// One case as the evaluators see it.
#[derive(Debug, Clone)]
pub struct CaseInput<'a> {
    /// Acceptable gold queries; a prediction is correct if it matches any of them.
    pub gold: &'a [String],
    pub question: &'a str,
    /// Defog `query_category`, when the benchmark has one.
    pub category: Option<&'a str>,
    /// Database name (selects the TrustSQL family: atis, advising, mimic_iv or spider).
    pub db: &'a str,
    /// Database files: every file of the test-suite folder for `testsuite`, else one.
    pub db_files: &'a [PathBuf],
    /// Spider 2.0 `ignore_order` for this case (default true).
    pub ignore_order: Option<bool>,
}

/// Runs queries for the evaluators; gold executions are cached by the implementation.
pub trait QueryRunner: Sync {
    fn gold(&self, db: &Path, sql: &str) -> Execution;
    fn pred(&self, db: &Path, sql: &str) -> Execution;
}

/// The verdict class of one comparison (spec §0.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Correct,
    Incorrect,
    PredError,
    PredTimeout,
    GoldError,
    GoldTimeout,
    PredDecodeError,
    GoldDecodeError,
    Abstained,
    /// The system under test gave no usable answer (crash, garbage, timeout).
    SystemError,
}

/// A note on a comparison that never changes its score.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    pub code: &'static str,
    pub message: String,
}

/// The result of evaluating one prediction under one mode.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub verdict: Verdict,
    /// The score the reference evaluator would print for this item.
    pub score: f64,
    /// Defog's `exact_match` flag, reported beside `correct` in defog modes.
    pub exact: Option<bool>,
    /// `"<class>: <message>"` when an execution failed.
    pub error: Option<String>,
    pub diagnostics: Vec<Diagnostic>,
}

// TEMPORARY: replaced by the comparators' merge.
pub fn evaluate(_: Mode, _: &ModeOptions, _: &CaseInput, _: &str, _: &dyn QueryRunner) -> Outcome {
    unimplemented!("comparators are being merged")
}
