//! Execution accuracy, reproducing each reference evaluator verdict for verdict
//! (spec `evaluators.md`). One file per mode; this file holds the shared vocabulary.

mod bird;
mod defog;
pub use defog::widest_expansion;
mod every_db;
mod result_eq;
mod spider2;
pub mod sqlparse;
mod testsuite;
pub mod ties;
mod trustsql;

#[cfg(test)]
pub(crate) mod testkit;
#[cfg(test)]
mod vectors;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::exec::{ExecErrorKind, Execution, QueryRunner, ResultSet};

/// A comparison mode: which public evaluator's semantics to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
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

impl Mode {
    /// Every mode, in the order the documentation lists them.
    pub const ALL: [Mode; 7] = [
        Mode::Testsuite,
        Mode::Bird,
        Mode::BirdRowsorted,
        Mode::Spider2,
        Mode::Defog,
        Mode::DefogExact,
        Mode::Trustsql,
    ];

    /// The mode's name as written on the command line, in configuration and in reports
    /// (`bird-rowsorted`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Testsuite => "testsuite",
            Mode::Bird => "bird",
            Mode::BirdRowsorted => "bird-rowsorted",
            Mode::Spider2 => "spider2",
            Mode::Defog => "defog",
            Mode::DefogExact => "defog-exact",
            Mode::Trustsql => "trustsql",
        }
    }
}

/// Options that change a mode's behaviour; defaults reproduce the reference.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ModeOptions {
    /// `testsuite --keep_distinct`.
    pub keep_distinct: bool,
    /// BIRD's single time budget for "execute prediction, then gold" (spec §0.5).
    pub pair_budget: Option<Duration>,
    /// TrustSQL: score predictions as `evaluate.py` sees a raw file. By default they are taken
    /// as the official pipeline leaves them after `postprocess_abstention.py`, which removes
    /// DISTINCT from Spider-family predictions (`trustsql.md` A.5 step 6).
    pub trustsql_raw: bool,
}

/// One case as the evaluators see it.
#[derive(Debug, Clone)]
pub struct CaseInput<'a> {
    /// Acceptable gold queries; a prediction is correct if it matches any of them.
    pub gold: &'a [String],
    /// The question: Defog's modes read it to decide whether row order matters.
    pub question: &'a str,
    /// Defog `query_category`, when the benchmark has one.
    pub category: Option<&'a str>,
    /// Database name (selects the TrustSQL family: atis, advising, mimic_iv or spider).
    pub db: &'a str,
    /// Database files: every file of the database's folder, the original first, in `testsuite`
    /// mode and with `every_database`; else one. With several, the case is correct only where
    /// it is correct on each of them.
    pub db_files: &'a [PathBuf],
    /// Those of `db_files` (never the first) where the gold's ORDER BY ties, so that its answer
    /// there is one of several: a prediction is correct there when it matches one of them
    /// ([`ties`]). A distilled suite lists them (`gold-skips.json`).
    pub tied: &'a [PathBuf],
    /// Spider 2.0 `ignore_order` for this case (default true).
    pub ignore_order: Option<bool>,
}

/// The verdict class of one comparison (spec §0.4).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The prediction's result matches a gold result.
    Correct,
    /// Both ran; the results differ.
    Incorrect,
    /// The prediction failed to prepare or run.
    PredError,
    /// The prediction ran past the time bound.
    PredTimeout,
    /// The gold query failed: the case is broken, not the system.
    GoldError,
    /// The gold query ran past the time bound.
    GoldTimeout,
    /// The prediction's result holds text the mode's strict decoding refuses.
    PredDecodeError,
    /// The gold result holds text the mode's strict decoding refuses.
    GoldDecodeError,
    /// The system declined to answer.
    Abstained,
    /// The system under test gave no usable answer (crash, garbage, timeout).
    SystemError,
}

/// A note on a comparison that never changes its score.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// A stable identifier of the note, for tools.
    pub code: &'static str,
    /// The note for a person.
    pub message: String,
}

/// The result of evaluating one prediction under one mode.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The verdict class.
    pub verdict: Verdict,
    /// The score the reference evaluator would print for this item.
    pub score: f64,
    /// Defog's `exact_match` flag, reported beside `correct` in defog modes.
    pub exact: Option<bool>,
    /// `"<class>: <message>"` when an execution failed.
    pub error: Option<String>,
    /// Notes on the comparison that do not change its score.
    pub diagnostics: Vec<Diagnostic>,
    /// When the case ran on several databases and is not correct: the file name of the first
    /// database where it is not (`academic_3.sqlite`), the one whose verdict this is.
    pub failed_on: Option<String>,
}

impl Verdict {
    /// The snake_case class name, as serialised and used in `Outcome::error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Correct => "correct",
            Verdict::Incorrect => "incorrect",
            Verdict::PredError => "pred_error",
            Verdict::PredTimeout => "pred_timeout",
            Verdict::GoldError => "gold_error",
            Verdict::GoldTimeout => "gold_timeout",
            Verdict::PredDecodeError => "pred_decode_error",
            Verdict::GoldDecodeError => "gold_decode_error",
            Verdict::Abstained => "abstained",
            Verdict::SystemError => "system_error",
        }
    }

    /// True for the verdicts that say the gold side could not be evaluated.
    pub fn is_gold_failure(self) -> bool {
        matches!(
            self,
            Verdict::GoldError | Verdict::GoldTimeout | Verdict::GoldDecodeError
        )
    }
}

impl Outcome {
    fn new(verdict: Verdict, score: f64) -> Self {
        Outcome {
            verdict,
            score,
            exact: None,
            error: None,
            diagnostics: Vec::new(),
            failed_on: None,
        }
    }

    /// The outcome of a failed execution: its verdict and `"<class>: <message>"`.
    fn failed(failure: Failure, score: f64) -> Self {
        Outcome {
            error: Some(format!("{}: {}", failure.verdict.as_str(), failure.message)),
            ..Outcome::new(failure.verdict, score)
        }
    }

    fn with_diagnostic(mut self, code: &'static str, message: impl Into<String>) -> Self {
        self.diagnostics.push(Diagnostic {
            code,
            message: message.into(),
        });
        self
    }

    /// The outcome as the verdict on `db`, one of several databases the case ran on.
    fn failed_on(self, db: &Path) -> Self {
        Outcome {
            failed_on: Some(database_label(db)),
            ..self
        }
    }
}

/// How a database of a folder is named in outcomes and reports: its file name.
fn database_label(db: &Path) -> String {
    db.file_name().map_or_else(
        || db.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// Evaluates one prediction against a case under `mode`, reproducing the reference
/// evaluator's preprocessing, execution order and comparison (spec `evaluators.md`).
///
/// A prediction is correct if it matches any gold alternative. `Outcome::score` is what the
/// reference prints for the item (TrustSQL: +1 or -1, abstention being the caller's business).
pub fn evaluate(
    mode: Mode,
    opts: &ModeOptions,
    case: &CaseInput,
    pred_sql: &str,
    runner: &dyn QueryRunner,
) -> Outcome {
    if case.db_files.is_empty() {
        let failure = Failure {
            verdict: Verdict::GoldError,
            message: format!("no database file for `{}`", case.db),
        };
        return Outcome::failed(failure, 0.0);
    }
    // An infeasible TrustSQL case is scored by the trustsql mode itself.
    if case.gold.is_empty() && mode != Mode::Trustsql {
        return no_gold_query();
    }
    if !case.tied.is_empty() {
        return ties::evaluate(case, runner, |case, runner| {
            evaluate(mode, opts, case, pred_sql, runner)
        });
    }
    match mode {
        Mode::Testsuite => testsuite::evaluate(opts, case, pred_sql, runner),
        // Every other mode compares on one database; `every_database` applies it to each.
        _ if case.db_files.len() > 1 => every_db::evaluate(case, |on_one| {
            evaluate(mode, opts, on_one, pred_sql, runner)
        }),
        Mode::Bird => bird::evaluate(opts, case, pred_sql, runner, bird::Rows::Positional),
        Mode::BirdRowsorted => bird::evaluate(opts, case, pred_sql, runner, bird::Rows::Sorted),
        Mode::Spider2 => spider2::evaluate(case, pred_sql, runner),
        Mode::Defog => defog::evaluate(case, pred_sql, runner, defog::Flag::Correct),
        Mode::DefogExact => defog::evaluate(case, pred_sql, runner, defog::Flag::Exact),
        Mode::Trustsql => trustsql::evaluate(case, pred_sql, opts.trustsql_raw, runner),
    }
}

/// The gold query a correct answer's efficiency is measured against: the first alternative as
/// written, or in the defog modes the first query its `{a,b}` column set expands to (the
/// braces are not SQL).
pub fn measured_gold(mode: Mode, gold: &[String]) -> Option<String> {
    let first = gold.first()?;
    match mode {
        Mode::Defog | Mode::DefogExact => defog::expand_column_set(first.trim())
            .ok()?
            .into_iter()
            .next(),
        _ => Some(first.clone()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Pred,
    Gold,
}

/// Text decoding policy of a mode (spec §0.3). The runner always decodes with `ignore` and
/// flags lossy results; `Strict` turns such a result into a decode error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decoding {
    Ignore,
    Strict,
}

/// Why one side produced no comparable result.
#[derive(Debug, Clone)]
struct Failure {
    verdict: Verdict,
    message: String,
}

impl Failure {
    fn of(side: Side, kind: FailureKind, message: impl Into<String>) -> Self {
        let verdict = match (side, kind) {
            (Side::Pred, FailureKind::Error) => Verdict::PredError,
            (Side::Pred, FailureKind::Timeout) => Verdict::PredTimeout,
            (Side::Pred, FailureKind::Decode) => Verdict::PredDecodeError,
            (Side::Gold, FailureKind::Error) => Verdict::GoldError,
            (Side::Gold, FailureKind::Timeout) => Verdict::GoldTimeout,
            (Side::Gold, FailureKind::Decode) => Verdict::GoldDecodeError,
        };
        Failure {
            verdict,
            message: message.into(),
        }
    }

    fn is_timeout(&self) -> bool {
        matches!(self.verdict, Verdict::PredTimeout | Verdict::GoldTimeout)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FailureKind {
    Error,
    Timeout,
    Decode,
}

/// The result of an execution, or why it cannot be compared under `decoding`.
fn usable(side: Side, exec: &Execution, decoding: Decoding) -> Result<Arc<ResultSet>, Failure> {
    match &exec.result {
        Err(e) if e.kind == ExecErrorKind::Timeout => {
            Err(Failure::of(side, FailureKind::Timeout, &e.message))
        }
        Err(e) => Err(Failure::of(side, FailureKind::Error, &e.message)),
        Ok(rs) if rs.lossy_text && decoding == Decoding::Strict => Err(Failure::of(
            side,
            FailureKind::Decode,
            "a TEXT value is not valid UTF-8 (the reference's strict decoding raises)",
        )),
        Ok(rs) => Ok(Arc::clone(rs)),
    }
}

/// Who a failed prediction is blamed on: the benchmark when the gold fails too, else the
/// system. Whichever query the reference runs first, a broken gold is a gold failure in every
/// mode, never a failure of the system (docs/metrics.md#a-gold-that-does-not-run).
fn blame(pred: Failure, gold: &Execution, decoding: Decoding) -> Failure {
    usable(Side::Gold, gold, decoding).err().unwrap_or(pred)
}

/// Prediction executions of one evaluation, so that gold alternatives share them.
struct PredRuns<'r> {
    runner: &'r dyn QueryRunner,
    done: HashMap<(PathBuf, String), Execution>,
}

impl<'r> PredRuns<'r> {
    fn new(runner: &'r dyn QueryRunner) -> Self {
        PredRuns {
            runner,
            done: HashMap::new(),
        }
    }

    fn get(&mut self, db: &Path, sql: &str) -> Execution {
        self.done
            .entry((db.to_path_buf(), sql.to_string()))
            .or_insert_with(|| self.runner.pred(db, sql))
            .clone()
    }
}

/// Evaluates gold alternatives in order and stops at the first correct one. Without a
/// correct one, reports the first gold failure if any (a benchmark defect matters most),
/// else the first alternative's outcome.
fn any_alternative(golds: &[String], mut evaluate_one: impl FnMut(&str) -> Outcome) -> Outcome {
    let mut kept: Option<Outcome> = None;
    for gold in golds {
        let outcome = evaluate_one(gold);
        if outcome.verdict == Verdict::Correct {
            return outcome;
        }
        let better = match &kept {
            None => true,
            Some(k) => !k.verdict.is_gold_failure() && outcome.verdict.is_gold_failure(),
        };
        if better {
            kept = Some(outcome);
        }
    }
    kept.unwrap_or_else(no_gold_query)
}

fn no_gold_query() -> Outcome {
    let failure = Failure {
        verdict: Verdict::GoldError,
        message: "the case has no gold query".to_string(),
    };
    Outcome::failed(failure, 0.0)
}
