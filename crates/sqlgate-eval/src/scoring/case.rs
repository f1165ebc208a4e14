//! Scoring one case: execution verdict and EX, then the fine-grained and structural metrics
//! the [`Scoring`] asks for.

use std::collections::BTreeMap;
use std::str::FromStr;

use rayon::prelude::*;

use super::{case_facts, CaseDatabases, CaseScore, ComputedMetric, FineScores, Scoring};
use crate::exec::QueryRunner;
use crate::loaders::{Answer, Case, Prediction};
use crate::metrics::efficiency::measure as efficiency;
use crate::metrics::ex::{self, CaseInput, Diagnostic, Outcome, Verdict};
use crate::metrics::{soft_f1, sqlmorph, state};
use crate::spider::Hardness;

/// What a case is scored on.
#[derive(Debug, Clone, Copy)]
pub enum Response<'a> {
    /// An answer (SQL already cleaned of fences and prose) or an abstention.
    Answer(&'a Prediction),
    /// The system gave no usable answer; the reason becomes the case's error.
    SystemError(&'a str),
}

/// Scores every case against its prediction (aligned by index), in parallel.
pub fn score_all(
    scoring: &Scoring,
    cases: &[Case],
    databases: &[CaseDatabases],
    predictions: &[Prediction],
    runner: &dyn QueryRunner,
) -> Vec<CaseScore> {
    cases
        .par_iter()
        .zip(databases.par_iter())
        .zip(predictions.par_iter())
        .map(|((case, files), prediction)| {
            score_case(scoring, case, files, Response::Answer(prediction), runner)
        })
        .collect()
}

/// Scores one case. Every metric the scoring asks for is set on a feasible case, 0 when there
/// is no answer or when it cannot be computed (with a `<metric>_error` diagnostic).
pub fn score_case(
    scoring: &Scoring,
    case: &Case,
    databases: &CaseDatabases,
    response: Response<'_>,
    runner: &dyn QueryRunner,
) -> CaseScore {
    let mut score = execution(scoring, case, databases, response, runner);
    // A state case is judged by the state it leaves: the query metrics have no result to read.
    if case.feasible && case.state.is_none() {
        add_fine_scores(scoring, case, databases, &mut score, runner);
        add_structural(scoring, case, databases, &mut score, runner);
        add_soft_f1(scoring, case, databases, &mut score, runner);
        add_efficiency(scoring, case, databases, &mut score, runner);
        add_case_metrics(scoring, case, databases, &mut score, runner);
        if scoring.robustness {
            let (samples, retrieved) = match response {
                Response::Answer(prediction) => {
                    (&prediction.samples[..], &prediction.retrieved[..])
                }
                Response::SystemError(_) => (&[][..], &[][..]),
            };
            score.robustness = Some(case_facts::collect(
                scoring,
                &case_input(case, databases),
                &databases.main,
                case,
                (score.sql.as_deref(), samples, retrieved),
                runner,
            ));
        }
    }
    score
}

/// What EX compares a prediction against.
fn case_input<'a>(case: &'a Case, databases: &'a CaseDatabases) -> CaseInput<'a> {
    CaseInput {
        gold: &case.gold,
        question: &case.question,
        category: case.tags.get("category").map(String::as_str),
        db: &case.db,
        db_files: &databases.evaluated,
        tied: &databases.tied,
        ignore_order: case.tags.get("ignore_order").map(|v| v == "true"),
    }
}

/// The execution verdict and EX.
fn execution(
    scoring: &Scoring,
    case: &Case,
    databases: &CaseDatabases,
    response: Response<'_>,
    runner: &dyn QueryRunner,
) -> CaseScore {
    let (mut sql, cleaned) = match response {
        Response::Answer(prediction) => match &prediction.answer {
            Answer::Sql(sql) => (Some(sql.clone()), prediction.cleaned),
            Answer::Abstain => (None, prediction.cleaned),
        },
        Response::SystemError(_) => (None, false),
    };
    // A state case runs every statement of the answer, not the one query cleaning keeps.
    if let (Some(_), Some(_), Response::Answer(prediction)) = (&case.state, &sql, response) {
        sql = prediction.script.clone().or(sql);
    }
    let outcome = match (response, &sql, case.feasible, &case.state) {
        (Response::SystemError(message), _, _, _) => Outcome {
            error: Some(format!("system_error: {message}")),
            ..unscored(Verdict::SystemError)
        },
        (_, Some(sql), true, Some(task)) => state::evaluate(
            scoring.mode,
            &scoring.mode_options,
            &case_input(case, databases),
            task,
            sql,
            runner,
        ),
        (_, Some(sql), true, None) => ex::evaluate(
            scoring.mode,
            &scoring.mode_options,
            &case_input(case, databases),
            sql,
            runner,
        ),
        (_, None, _, _) => unscored(Verdict::Abstained),
        // Answering an infeasible question is judged by reliability metrics, not by EX.
        (_, Some(_), false, _) => unscored(Verdict::Incorrect),
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
        failed_on: outcome.failed_on,
        diagnostics: outcome.diagnostics,
        sql,
        cleaned,
        fine: BTreeMap::new(),
        esm: None,
        esm_detail: None,
        etm: None,
        etm_detail: None,
        soft_f1: None,
        hardness: case
            .tags
            .get("hardness")
            .and_then(|level| Hardness::from_str(level).ok()),
        cs: case.cs,
        robustness: None,
        efficiency: None,
        metrics: BTreeMap::new(),
    }
}

fn unscored(verdict: Verdict) -> Outcome {
    Outcome {
        verdict,
        score: 0.0,
        exact: None,
        error: None,
        diagnostics: Vec::new(),
        failed_on: None,
    }
}

/// SQLMorph EXP/EXR/F1 per regime, on the case's own database.
fn add_fine_scores(
    scoring: &Scoring,
    case: &Case,
    databases: &CaseDatabases,
    score: &mut CaseScore,
    runner: &dyn QueryRunner,
) {
    if scoring.regimes.is_empty() {
        return;
    }
    let zeros = || {
        scoring
            .regimes
            .iter()
            .map(|regime| (regime.to_string(), FineScores::default()))
            .collect()
    };
    let Some(sql) = &score.sql else {
        score.fine = zeros();
        return;
    };
    let options = scoring.sqlmorph_options();
    match sqlmorph::case_scores(
        &case.gold,
        &databases.main,
        sql,
        &scoring.regimes,
        &options,
        runner,
    ) {
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
                        options.pc_max_pairs
                    ),
                });
            }
            score.fine = scores
                .into_iter()
                .map(|(name, scores)| (name, scores.into()))
                .collect();
        }
        Err(error) => {
            score.fine = zeros();
            score
                .diagnostics
                .push(ComputedMetric::Sqlmorph.error(error.to_string()));
        }
    }
}

/// ESM and ETM against the first gold query; an abstention is scored as the empty query, as
/// the reference scores an empty prediction line.
fn add_structural(
    scoring: &Scoring,
    case: &Case,
    databases: &CaseDatabases,
    score: &mut CaseScore,
    runner: &dyn QueryRunner,
) {
    let Some(gold) = case.gold.first() else {
        return;
    };
    let sql = score.sql.clone().unwrap_or_default();
    if let Some(evaluator) = &scoring.esm {
        match evaluator.score(gold, &sql, &case.db) {
            Ok(pair) => {
                score.esm = Some(u8::from(pair.esm));
                score.hardness = Some(pair.hardness);
                score.esm_detail = Some(pair);
            }
            Err(error) => {
                score.esm = Some(0);
                score
                    .diagnostics
                    .push(ComputedMetric::Esm.error(error.to_string()));
            }
        }
    }
    if let Some(evaluator) = &scoring.etm {
        match evaluator.score(gold, &sql, &databases.main, runner) {
            Ok(verdict) => {
                score.etm = Some(u8::from(verdict.etm));
                score.etm_detail = Some(verdict);
            }
            Err(error) => {
                score.etm = Some(0);
                score
                    .diagnostics
                    .push(ComputedMetric::Etm.error(error.message));
            }
        }
    }
}

/// Soft-F1 on the case's own database (the reference runs one), under BIRD's pair budget.
fn add_soft_f1(
    scoring: &Scoring,
    case: &Case,
    databases: &CaseDatabases,
    score: &mut CaseScore,
    runner: &dyn QueryRunner,
) {
    if !scoring.soft_f1 {
        return;
    }
    let value = score.sql.as_deref().map_or(0.0, |sql| {
        let budget = scoring.mode_options.pair_budget;
        soft_f1::case_soft_f1(&case.gold, &databases.main, sql, budget, runner)
    });
    score.soft_f1 = Some(value);
}

/// VES and R-VES of a correct answer against its gold ([`ex::measured_gold`]), on the case's own database
/// (timed apart from EX's executions, never through their cache); 0 for any other.
fn add_efficiency(
    scoring: &Scoring,
    case: &Case,
    databases: &CaseDatabases,
    score: &mut CaseScore,
    runner: &dyn QueryRunner,
) {
    let Some(settings) = &scoring.efficiency else {
        return;
    };
    let gold = ex::measured_gold(scoring.mode, &case.gold).unwrap_or_default();
    let pred = score.sql.as_deref().unwrap_or_default();
    let (efficiency, notes) = efficiency::measure(
        settings,
        scoring.mode_options.pair_budget,
        (&databases.main, &gold, pred),
        score.correct(),
        runner,
    );
    score.efficiency = Some(efficiency);
    score.diagnostics.extend(notes);
}

/// Each registered per-case metric the scoring asks for, on the case's own database.
fn add_case_metrics(
    scoring: &Scoring,
    case: &Case,
    databases: &CaseDatabases,
    score: &mut CaseScore,
    runner: &dyn QueryRunner,
) {
    for &metric in &scoring.case_metrics {
        let value = metric.score(&case.gold, &databases.main, score.sql.as_deref(), runner);
        let value = value.unwrap_or_else(|error| {
            let diagnostic = ComputedMetric::Case(metric).error(error.to_string());
            score.diagnostics.push(diagnostic);
            0.0
        });
        score.metrics.insert(metric, value);
    }
}
