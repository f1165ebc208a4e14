//! Scores a benchmark's predictions: each case is evaluated in parallel under one mode, and the
//! per-case outcomes are summarised overall and per tag family.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use crate::bench::{Answer, Benchmark, Case, Prediction};
use crate::error::InputError;
use crate::exec::Engine;
use crate::metrics::ex::{self, CaseInput, Diagnostic, Mode, ModeOptions, Outcome, Verdict};

/// The outcome of one case.
#[derive(Debug, Clone, Serialize)]
pub struct CaseScore {
    pub id: String,
    pub db: String,
    pub tags: BTreeMap<String, String>,
    /// Infeasible cases are listed but take no part in execution accuracy.
    pub feasible: bool,
    pub verdict: Verdict,
    /// The reference evaluator's score for this case (0 or 1).
    #[serde(serialize_with = "whole_as_integer")]
    pub ex: f64,
    /// Defog's exact-match flag, in the defog modes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact: Option<bool>,
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
    /// The predicted SQL as executed (after fence and prose stripping); `None` when abstained.
    pub sql: Option<String>,
    /// Markdown fences or prose were stripped from the prediction.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cleaned: bool,
}

/// Evaluates every case against its prediction (aligned by index), in parallel.
pub fn score(
    bench: &Benchmark,
    predictions: &[Prediction],
    mode: Mode,
    options: &ModeOptions,
    engine: &Engine,
) -> Result<Vec<CaseScore>, InputError> {
    let testsuite_folders = mode == Mode::Testsuite;
    let db_files: Vec<_> = bench
        .cases
        .iter()
        .map(|case| bench.db_files(case, testsuite_folders))
        .collect::<Result<_, _>>()?;
    Ok(bench
        .cases
        .par_iter()
        .zip(predictions.par_iter())
        .zip(db_files.par_iter())
        .map(|((case, prediction), files)| {
            score_case(case, prediction, files, mode, options, engine)
        })
        .collect())
}

/// Evaluates one case against its prediction.
pub fn score_case(
    case: &Case,
    prediction: &Prediction,
    db_files: &[std::path::PathBuf],
    mode: Mode,
    options: &ModeOptions,
    engine: &Engine,
) -> CaseScore {
    let sql = match &prediction.answer {
        Answer::Sql(sql) => Some(sql.clone()),
        Answer::Abstain => None,
    };
    let outcome = match (&sql, case.feasible) {
        (Some(sql), true) => {
            let input = CaseInput {
                gold: &case.gold,
                question: &case.question,
                category: case.tags.get("category").map(String::as_str),
                db: &case.db,
                db_files,
                ignore_order: case.tags.get("ignore_order").map(|v| v == "true"),
            };
            ex::evaluate(mode, options, &input, sql, engine)
        }
        (None, _) => unscored(Verdict::Abstained),
        // Answering an infeasible question is judged by reliability metrics, not by EX.
        (Some(_), false) => unscored(Verdict::Incorrect),
    };
    CaseScore {
        id: case.id.clone(),
        db: case.db.clone(),
        tags: case.tags.clone(),
        feasible: case.feasible,
        verdict: outcome.verdict,
        ex: outcome.score,
        exact: outcome.exact,
        error: outcome.error,
        diagnostics: outcome.diagnostics,
        sql,
        cleaned: prediction.cleaned,
    }
}

/// Writes `1` rather than `1.0` for whole scores, as the JSON contract promises `0|1`.
fn whole_as_integer<S: serde::Serializer>(score: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if score.fract() == 0.0 && score.abs() < 1e15 {
        serializer.serialize_i64(*score as i64)
    } else {
        serializer.serialize_f64(*score)
    }
}

fn unscored(verdict: Verdict) -> Outcome {
    Outcome {
        verdict,
        score: 0.0,
        exact: None,
        error: None,
        diagnostics: Vec::new(),
    }
}

/// Execution accuracy over a group of cases.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tally {
    pub n: usize,
    pub correct: f64,
    pub ex: f64,
}

impl Tally {
    fn add(&mut self, score: f64) {
        self.n += 1;
        self.correct += score;
        self.ex = self.correct / self.n as f64;
    }
}

/// Tag families with more distinct values than this are identifiers, not breakdowns.
const MAX_BREAKDOWN_VALUES: usize = 32;

/// Aggregates over the feasible cases.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub mode: Mode,
    pub n: usize,
    pub ex: f64,
    /// Defog's exact-match rate, in the defog modes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact: Option<f64>,
    /// Count of each verdict class over feasible cases.
    pub verdicts: BTreeMap<Verdict, usize>,
    /// Infeasible cases: how many there were and how many the system abstained on.
    pub infeasible: usize,
    pub infeasible_abstained: usize,
    /// Predictions whose markdown fences or prose were stripped.
    pub cleaned: usize,
    /// EX per value of each tag family (`db`, `category`, `hardness`, `difficulty`...).
    pub breakdown: BTreeMap<String, BTreeMap<String, Tally>>,
}

pub fn summarize(mode: Mode, scores: &[CaseScore]) -> Summary {
    let feasible: Vec<&CaseScore> = scores.iter().filter(|s| s.feasible).collect();
    let mut overall = Tally::default();
    let mut verdicts = BTreeMap::new();
    let mut breakdown: BTreeMap<String, BTreeMap<String, Tally>> = BTreeMap::new();
    for score in &feasible {
        overall.add(score.ex);
        *verdicts.entry(score.verdict).or_insert(0) += 1;
        let families = std::iter::once(("db", &score.db))
            .chain(score.tags.iter().map(|(k, v)| (k.as_str(), v)));
        for (family, value) in families {
            breakdown
                .entry(family.to_string())
                .or_default()
                .entry(value.clone())
                .or_default()
                .add(score.ex);
        }
    }
    breakdown.retain(|_, values| values.len() <= MAX_BREAKDOWN_VALUES);
    let exact = feasible
        .iter()
        .map(|s| s.exact)
        .collect::<Option<Vec<bool>>>()
        .filter(|flags| !flags.is_empty())
        .map(|flags| flags.iter().filter(|&&f| f).count() as f64 / flags.len() as f64);
    let infeasible: Vec<&CaseScore> = scores.iter().filter(|s| !s.feasible).collect();
    Summary {
        mode,
        n: overall.n,
        ex: overall.ex,
        exact,
        verdicts,
        infeasible: infeasible.len(),
        infeasible_abstained: infeasible
            .iter()
            .filter(|s| s.verdict == Verdict::Abstained)
            .count(),
        cleaned: scores.iter().filter(|s| s.cleaned).count(),
        breakdown,
    }
}
