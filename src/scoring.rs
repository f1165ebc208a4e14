//! Scores a benchmark's predictions: each case is evaluated in parallel under one mode, and the
//! per-case outcomes are summarised overall and per tag family.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use crate::bench::{Answer, Benchmark, Case, Prediction};
use crate::error::InputError;
use crate::exec::Engine;
use crate::metrics::ex::{self, CaseInput, Diagnostic, Mode, ModeOptions, Outcome, Verdict};
use crate::metrics::reliability::{self, Penalty, Reliability};
use crate::metrics::sqlmorph::{self, Regime};
use crate::metrics::{esm, etm};

/// EXP, EXR and F1 under one SQLMorph regime (spec `sqlmorph-metrics.md` §5), each in [0, 1].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct FineScores {
    pub exp: f64,
    pub exr: f64,
    pub f1: f64,
}

impl From<sqlmorph::Scores> for FineScores {
    fn from(scores: sqlmorph::Scores) -> Self {
        FineScores {
            exp: scores.exp,
            exr: scores.exr,
            f1: scores.f1,
        }
    }
}

/// The fine-grained metrics `sqlgate score --metrics` asks for; no regimes: none computed.
#[derive(Clone, Copy)]
pub struct FineMetrics<'a> {
    pub regimes: &'a [Regime],
    pub options: sqlmorph::Options<'a>,
}

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
    /// SQLMorph EXP/EXR/F1 by regime name (`EC-EC-IE`), best over gold alternatives; empty
    /// unless asked for, and for abstentions and infeasible cases.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fine: BTreeMap<String, FineScores>,
    /// Spider exact set match (0 or 1), when asked for (`--metrics esm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub esm: Option<u8>,
    /// Enhanced Tree Matching (0 or 1), when asked for (`--metrics etm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etm: Option<u8>,
    /// Why: rules fired per side, departures from the reference, first differing subtree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etm_detail: Option<etm::Verdict>,
    /// The gold's Spider hardness, with the structural metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hardness: Option<String>,
}

/// Evaluates every case against its prediction (aligned by index), in parallel.
pub fn score(
    bench: &Benchmark,
    predictions: &[Prediction],
    mode: Mode,
    options: &ModeOptions,
    engine: &Engine,
) -> Result<Vec<CaseScore>, InputError> {
    let no_fine = FineMetrics {
        regimes: &[],
        options: sqlmorph::Options::default(),
    };
    score_with_fine(bench, predictions, mode, options, &no_fine, engine)
}

/// [`score`], adding the fine-grained metrics of `fine` to every answered feasible case.
pub fn score_with_fine(
    bench: &Benchmark,
    predictions: &[Prediction],
    mode: Mode,
    options: &ModeOptions,
    fine: &FineMetrics,
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
            let mut score = score_case(case, prediction, files, mode, options, engine);
            add_fine_scores(&mut score, case, files, fine, engine);
            score
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
        fine: BTreeMap::new(),
        esm: None,
        etm: None,
        etm_detail: None,
        hardness: None,
    }
}

/// Adds the fine-grained metrics of an answered feasible case, on its first database file.
/// A metric failure (an embedding model) is a diagnostic and leaves the case at 0/0/0.
pub fn add_fine_scores(
    score: &mut CaseScore,
    case: &Case,
    db_files: &[std::path::PathBuf],
    fine: &FineMetrics,
    engine: &Engine,
) {
    let (Some(sql), Some(db), true) = (&score.sql, db_files.first(), case.feasible) else {
        return;
    };
    if fine.regimes.is_empty() {
        return;
    }
    match sqlmorph::case_scores(&case.gold, db, sql, fine.regimes, &fine.options, engine) {
        Ok(scores) => {
            let truncated: Vec<&str> = scores
                .iter()
                .filter(|(_, s)| s.note == Some(sqlmorph::Note::PartialMatchTruncated))
                .map(|(name, _)| name.as_str())
                .collect();
            if !truncated.is_empty() {
                score.diagnostics.push(Diagnostic {
                    code: sqlmorph::Note::PartialMatchTruncated.code(),
                    message: format!(
                        "{}: partial-cell matching exceeded pc_max_pairs ({}); these scores count exact cells only (a lower bound)",
                        truncated.join(", "),
                        fine.options.pc_max_pairs
                    ),
                });
            }
            score.fine = scores
                .into_iter()
                .map(|(name, scores)| (name, scores.into()))
                .collect();
        }
        Err(error) => score.diagnostics.push(Diagnostic {
            code: "sqlmorph_error",
            message: error.to_string(),
        }),
    }
}

/// Mean fine-grained metrics per regime over the feasible cases; a case without scores for a
/// regime (abstained, no database, metric failure) counts as 0/0/0.
pub fn fine_means(regimes: &[Regime], scores: &[CaseScore]) -> BTreeMap<String, FineScores> {
    let feasible: Vec<&CaseScore> = scores.iter().filter(|s| s.feasible).collect();
    let n = feasible.len().max(1) as f64;
    regimes
        .iter()
        .map(|regime| {
            let name = regime.to_string();
            let mut sum = FineScores::default();
            for case in feasible.iter().filter_map(|s| s.fine.get(&name)) {
                sum.exp += case.exp;
                sum.exr += case.exr;
                sum.f1 += case.f1;
            }
            let mean = FineScores {
                exp: sum.exp / n,
                exr: sum.exr / n,
                f1: sum.f1 / n,
            };
            (name, mean)
        })
        .collect()
}

fn is_zero(n: &usize) -> bool {
    *n == 0
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
    /// Mean SQLMorph metrics by regime name ([`fine_means`]); empty unless asked for.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fine: BTreeMap<String, FineScores>,
    /// Cases whose partial-cell matching was truncated (diagnostic `partial_match_truncated`):
    /// their fine scores count exact cells only.
    #[serde(skip_serializing_if = "is_zero")]
    pub partial_match_truncated: usize,
    /// Spider exact set match, overall and per hardness; only with `--metrics esm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub esm: Option<HardnessMeans>,
    /// Enhanced Tree Matching, overall and per hardness; only with `--metrics etm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etm: Option<HardnessMeans>,
    /// TrustSQL's RS(c) over every case, feasible or not: `rs`, `regions`, `rs_n` and
    /// `rs_categories` in the JSON.
    #[serde(flatten)]
    pub reliability: Reliability,
}

/// Means of a 0/1 structural metric: `all` and each Spider hardness level.
#[derive(Debug, Clone, Serialize)]
pub struct HardnessMeans {
    pub all: f64,
    pub by_hardness: BTreeMap<String, f64>,
    /// The reference's tables, for the text report.
    #[serde(skip)]
    pub tables: String,
}

/// Aggregates `scores`, with RS for the default penalties (0, 10, N).
pub fn summarize(mode: Mode, scores: &[CaseScore]) -> Summary {
    summarize_with_penalties(mode, scores, &Penalty::DEFAULTS)
}

/// Aggregates `scores`, with RS for the defaults and every penalty of `penalties`.
pub fn summarize_with_penalties(
    mode: Mode,
    scores: &[CaseScore],
    penalties: &[Penalty],
) -> Summary {
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
        fine: BTreeMap::new(),
        partial_match_truncated: scores
            .iter()
            .filter(|s| {
                s.diagnostics
                    .iter()
                    .any(|d| d.code == sqlmorph::Note::PartialMatchTruncated.code())
            })
            .count(),
        esm: None,
        etm: None,
        reliability: reliability::reliability(
            scores,
            &reliability::penalties_with_defaults(penalties),
        ),
    }
}

/// Adds Spider exact set match to every feasible case (an abstention scores 0, as an empty
/// prediction does in the reference) and returns the means; hardness is the gold's.
pub fn add_exact_set_match(
    bench: &Benchmark,
    scores: &mut [CaseScore],
    evaluator: &esm::Evaluator,
) -> HardnessMeans {
    let pairs: Vec<Option<esm::PairScore>> = bench
        .cases
        .par_iter()
        .zip(scores.par_iter())
        .map(|(case, score)| {
            let gold = case.gold.first().filter(|_| case.feasible)?;
            evaluator
                .score(gold, score.sql.as_deref().unwrap_or(""), &case.db)
                .ok()
        })
        .collect();
    let mut tables = esm::Summary::default();
    for (score, pair) in scores.iter_mut().zip(&pairs) {
        if let Some(pair) = pair {
            score.esm = Some(u8::from(pair.esm));
            score.hardness = Some(pair.hardness.to_string());
            tables.add(pair);
        }
    }
    let mean = |level: esm::Level| {
        let summary = tables.level(level);
        (summary.count > 0).then_some(summary.exact)
    };
    HardnessMeans {
        all: mean(esm::Level::All).unwrap_or(0.0),
        by_hardness: esm::Level::ALL
            .iter()
            .filter(|&&level| level != esm::Level::All)
            .filter_map(|&level| mean(level).map(|m| (level.name().to_string(), m)))
            .collect(),
        tables: tables.to_string(),
    }
}

/// ETM of one case's answer against its first gold query; `None` for an infeasible case.
pub fn tree_match(
    bench: &Benchmark,
    case: &crate::bench::Case,
    sql: Option<&str>,
    evaluator: &etm::Evaluator,
) -> Result<Option<etm::Verdict>, InputError> {
    let Some(gold) = case.gold.first().filter(|_| case.feasible) else {
        return Ok(None);
    };
    let db = bench.db_files(case, false)?.remove(0);
    evaluator
        .score(gold, sql.unwrap_or(""), &db)
        .map(Some)
        .map_err(|e| InputError::file(&e.path, e.message))
}

/// Adds Enhanced Tree Matching to every feasible case (an abstention scores 0) and returns the
/// means, overall and per hardness of the gold (cases without a hardness count in `all` only).
pub fn add_tree_match(
    bench: &Benchmark,
    scores: &mut [CaseScore],
    evaluator: &etm::Evaluator,
) -> Result<HardnessMeans, InputError> {
    let verdicts: Vec<Option<etm::Verdict>> = bench
        .cases
        .par_iter()
        .zip(scores.par_iter())
        .map(|(case, score)| tree_match(bench, case, score.sql.as_deref(), evaluator))
        .collect::<Result<_, _>>()?;
    let mut totals: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (score, verdict) in scores.iter_mut().zip(verdicts) {
        let Some(verdict) = verdict else {
            continue;
        };
        let matched = usize::from(verdict.etm);
        score.etm = Some(u8::from(verdict.etm));
        score.etm_detail = Some(verdict);
        let hardness = score
            .hardness
            .clone()
            .or_else(|| score.tags.get("hardness").cloned());
        let levels = std::iter::once("all".to_string()).chain(hardness.clone());
        for level in levels {
            let entry = totals.entry(level).or_default();
            entry.0 += 1;
            entry.1 += matched;
        }
        score.hardness = hardness;
    }
    let mean = |(count, matched): (usize, usize)| matched as f64 / count as f64;
    let all = totals.remove("all").map_or(0.0, mean);
    let by_hardness: BTreeMap<String, f64> = totals
        .into_iter()
        .map(|(level, counts)| (level, mean(counts)))
        .collect();
    let tables = etm_table(all, &by_hardness);
    Ok(HardnessMeans {
        all,
        by_hardness,
        tables,
    })
}

/// The ETM line per hardness, in the layout of the exact-set-match table.
fn etm_table(all: f64, by_hardness: &BTreeMap<String, f64>) -> String {
    let levels = ["easy", "medium", "hard", "extra"];
    let mut header = format!("{:<20}", "");
    let mut row = format!("{:<20}", "tree match");
    for level in levels.iter().filter(|l| by_hardness.contains_key(**l)) {
        header.push_str(&format!("{level:<20}"));
        row.push_str(&format!("{:<20.3}", by_hardness[*level]));
    }
    header.push_str(&format!("{:<20}", "all"));
    row.push_str(&format!("{all:<20.3}"));
    format!("{}\n{}", header.trim_end(), row.trim_end())
}
