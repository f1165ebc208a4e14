//! Calibrating the fine-grained metrics with single-error mutants (spec `sqlmorph-metrics.md`
//! §9.5–9.6): every operator is applied to each case's first gold query, the mutant is scored
//! as a prediction against the gold, and the mean drop from the identical 1/1/1 is tabulated per
//! operator (the paper's Table X for this data). Each mutant's EXP and EXR are then checked
//! against the direction the paper's Table IX expects; a contradiction carries the first reason
//! the data shows for it, or [`Reason::Unexplained`].

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

use rayon::prelude::*;
use regex::Regex;
use serde::Serialize;

use crate::mutate::{mutants_of, Operator};
use sqlgate_eval::error::InputError;
use sqlgate_eval::exec::QueryRunner;
use sqlgate_eval::exec::{Engine, ResultSet};
use sqlgate_eval::loaders::Benchmark;
use sqlgate_eval::metrics::sqlmorph::{
    fine_grained, CellMatching, ColumnMatching, Extras, MetricError, Options, Regime, Scores,
};
use sqlgate_eval::scoring::FineScores;

/// What to compute.
pub struct Settings<'a> {
    /// The SQLMorph regimes every mutant is scored under.
    pub regimes: Vec<Regime>,
    /// The mutation run seed (spec §9.4).
    pub seed: u64,
    /// The settings shared by every regime.
    pub options: Options<'a>,
}

/// One mutant scored against its gold, or the reason it could not be.
#[derive(Debug, Clone, Serialize)]
pub struct MutantRun {
    /// The case whose gold was mutated.
    pub case_id: String,
    /// The operator applied.
    pub operator: Operator,
    /// The mutant query.
    pub sql: String,
    /// Rows of the gold result.
    pub gold_rows: usize,
    /// `None` when the mutant failed to execute.
    pub mutant_rows: Option<usize>,
    /// The mutant's execution error, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec_error: Option<String>,
    /// Equal row multisets (the metrics' EX shortcut).
    pub ex: bool,
    /// Scores by regime name; empty when the mutant failed to execute.
    pub scores: BTreeMap<String, FineScores>,
    #[serde(skip)]
    facts: Facts,
}

/// What the data shows about a mutant, to explain a contradiction.
#[derive(Debug, Clone, Default)]
struct Facts {
    /// The shorter result's rows are the longer's first rows (as a multiset).
    ordered_prefix: bool,
    /// The gold aggregates or groups, so changed input rows change values.
    gold_aggregates: bool,
    /// The gold's WHERE holds an OR (where_predicate_delete rebuilds an AND chain).
    gold_has_or: bool,
    /// The gold has a LIMIT: a changed row set displaces rows instead of adding them.
    gold_has_limit: bool,
    /// SC regimes whose scores differ from the same regime with exact column names.
    semantic_differs: Vec<String>,
}

/// Table IX's expected movement of a metric from the identical 1, or of the row count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Direction {
    /// `↓`: lower than 1 (fewer rows).
    #[serde(rename = "down")]
    Down,
    /// `=`: unchanged (same row count).
    #[serde(rename = "same")]
    Same,
    /// `↑`: more rows. For a metric, already at its ceiling of 1: it stays 1.
    #[serde(rename = "up")]
    Up,
}

impl Direction {
    /// The arrow Table IX prints.
    pub fn symbol(self) -> &'static str {
        match self {
            Direction::Down => "↓",
            Direction::Same => "=",
            Direction::Up => "↑",
        }
    }

    /// Whether a metric value agrees: ↓ needs < 1; = and ↑ need 1 (metrics cannot exceed 1).
    fn holds_for_metric(self, value: f64) -> bool {
        let at_one = value >= 1.0 - 1e-12;
        match self {
            Direction::Down => !at_one,
            Direction::Same | Direction::Up => at_one,
        }
    }

    fn holds_for_rows(self, gold: usize, mutant: usize) -> bool {
        match self {
            Direction::Down => mutant < gold,
            Direction::Same => mutant == gold,
            Direction::Up => mutant > gold,
        }
    }
}

/// Table IX (spec §9.5), as printed: expected (rows, EXP, EXR); `None` is `×`.
pub fn expected(
    op: Operator,
    regime: Regime,
) -> (Option<Direction>, Option<Direction>, Option<Direction>) {
    use Direction::{Down, Same, Up};
    match op {
        Operator::ProjectionDrop => (Some(Same), Some(Same), Some(Down)),
        Operator::AddStarWildcard => {
            let ignores_extras =
                regime.extras == Extras::Ignore && regime.columns != ColumnMatching::NoColumn;
            if ignores_extras {
                (Some(Same), Some(Same), Some(Same))
            } else {
                (Some(Same), Some(Down), None)
            }
        }
        Operator::DistinctToggle => (None, Some(Down), None),
        Operator::WherePredicateDelete
        | Operator::WhereWeaken
        | Operator::WhereRemove
        | Operator::HavingRemove
        | Operator::JoinTypeToLeft
        | Operator::LimitIncrease => (Some(Up), Some(Down), Some(Up)),
        Operator::WhereConditionFlip | Operator::HavingConditionFlip => (None, None, None),
        Operator::WhereStrengthen | Operator::LimitDecrease => (Some(Down), Some(Same), Some(Down)),
        Operator::JoinBreak => (Some(Up), Some(Down), None),
        Operator::AggregationSwap => (Some(Same), Some(Down), Some(Down)),
    }
}

/// Why a mutant's movement contradicts Table IX, checked in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The mutant returned the gold's rows (EX = 1): the error is invisible on this data.
    SameResult,
    /// The row count did not move as Table IX's R column assumes (the inverted
    /// where_strengthen/where_weaken, an OR chain rebuilt as AND, DISTINCT over added columns...).
    RowCount,
    /// A LIMIT cut through ties or an unordered scan: the shorter result is not the longer's
    /// first rows.
    LimitTies,
    /// The gold aggregates or groups: the changed input rows changed values, not just rows.
    Aggregates,
    /// The gold has a LIMIT: the changed rows displaced gold rows instead of adding to them
    /// (e.g. NULLs sorting first once an `IS NOT NULL` filter is gone).
    GoldLimit,
    /// The gold's WHERE has an OR, which where_predicate_delete rebuilds as an AND chain.
    OrFlattened,
    /// SC paired the columns differently from their exact names: its descriptors embed sample
    /// values, which the mutant changed.
    SemanticPairing,
    /// NC-EC matches whole rows by their values only: a row of another width never matches.
    WholeRows,
    /// None of the known causes applies.
    Unexplained,
}

impl Reason {
    /// The name in reports (`same_result`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Reason::SameResult => "same_result",
            Reason::RowCount => "row_count",
            Reason::LimitTies => "limit_ties",
            Reason::Aggregates => "aggregates",
            Reason::GoldLimit => "gold_limit",
            Reason::SemanticPairing => "semantic_pairing",
            Reason::OrFlattened => "or_flattened",
            Reason::WholeRows => "whole_rows",
            Reason::Unexplained => "unexplained",
        }
    }
}

/// A mutant metric that moved against Table IX.
#[derive(Debug, Clone, Serialize)]
pub struct Contradiction {
    /// The mutant's operator.
    pub operator: Operator,
    /// The case whose gold was mutated.
    pub case_id: String,
    /// The regime the metric was scored under.
    pub regime: String,
    /// `EXP` or `EXR`.
    pub metric: &'static str,
    /// Table IX's direction for this operator and metric.
    pub expected: Direction,
    /// The score the mutant got.
    pub observed: f64,
    /// The first known cause that explains the movement.
    pub reason: Reason,
}

/// The mean drop of each metric from 1, in [-1, 0].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Deltas {
    /// Mean EXP drop.
    pub exp: f64,
    /// Mean EXR drop.
    pub exr: f64,
    /// Mean F1 drop.
    pub f1: f64,
}

/// One row of Table X: an operator's scored mutants and their mean deltas.
#[derive(Debug, Clone, Serialize)]
pub struct OperatorRow {
    /// The row's operator.
    pub operator: Operator,
    /// Its mutants scored.
    pub mutants: usize,
    /// Its mutants that failed to execute.
    pub exec_errors: usize,
    /// `None` when no mutant was scored.
    pub delta_ex: Option<f64>,
    /// Mean deltas per regime name.
    pub deltas: BTreeMap<String, Deltas>,
}

/// Everything `sqlgate calibrate` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    /// The regime names, in the order asked for.
    pub regimes: Vec<String>,
    /// The mutation run seed.
    pub seed: u64,
    /// Scored like the reference implementation rather than the paper.
    pub sqlmorph_compat: bool,
    /// Feasible cases whose first gold query executed and was mutated.
    pub cases: usize,
    /// Feasible cases whose gold failed to execute (no mutants scored).
    pub gold_errors: usize,
    /// Gold queries the SQLite-dialect parser could not read (no mutants).
    pub unparsed: usize,
    /// Table X: one row per operator.
    pub table: Vec<OperatorRow>,
    /// Mutant metrics that moved against Table IX.
    pub contradictions: Vec<Contradiction>,
    /// Every mutant scored.
    pub mutants: Vec<MutantRun>,
}

/// Why a calibration could not run.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// A benchmark file or database could not be read.
    #[error("{0}")]
    Input(#[from] InputError),
    /// A regime could not be computed (IE under NC, a failed embedding).
    #[error("{0}")]
    Metric(#[from] MetricError),
}

/// Mutates and scores the first gold query of every feasible case, in parallel.
pub fn calibrate(
    bench: &Benchmark,
    settings: &Settings,
    engine: &Engine,
) -> Result<Calibration, CalibrateError> {
    let seeds: Vec<(&str, &str, std::path::PathBuf)> = bench
        .cases
        .iter()
        .filter(|case| case.feasible)
        .filter_map(|case| {
            let sql = case.gold.first()?;
            Some(bench.db_files(case, false).map(|files| {
                files
                    .first()
                    .map(|db| (case.id.as_str(), sql.as_str(), db.clone()))
            }))
        })
        .filter_map(Result::transpose)
        .collect::<Result<_, InputError>>()?;
    let outcomes: Vec<SeedOutcome> = seeds
        .par_iter()
        .map(|(id, sql, db)| mutate_and_score(id, sql, db, settings, engine))
        .collect::<Result<_, MetricError>>()?;
    let mut calibration = Calibration {
        regimes: settings.regimes.iter().map(ToString::to_string).collect(),
        seed: settings.seed,
        sqlmorph_compat: settings.options.sqlmorph_compat,
        cases: 0,
        gold_errors: 0,
        unparsed: 0,
        table: Vec::new(),
        contradictions: Vec::new(),
        mutants: Vec::new(),
    };
    for outcome in outcomes {
        match outcome {
            SeedOutcome::GoldError => calibration.gold_errors += 1,
            SeedOutcome::Unparsed => calibration.unparsed += 1,
            SeedOutcome::Mutated(runs) => {
                calibration.cases += 1;
                calibration.mutants.extend(runs);
            }
        }
    }
    calibration.table = table(&calibration.mutants, &settings.regimes);
    calibration.contradictions = contradictions(&calibration.mutants, &settings.regimes);
    Ok(calibration)
}

/// What became of one gold query.
pub enum SeedOutcome {
    /// The gold query failed to execute: nothing to compare mutants with.
    GoldError,
    /// The gold query does not parse: it has no mutants.
    Unparsed,
    /// The gold's mutants, scored.
    Mutated(Vec<MutantRun>),
}

/// Every depth-1 mutant of `gold_sql`, executed on `db` and scored under each regime.
pub fn mutate_and_score(
    case_id: &str,
    gold_sql: &str,
    db: &Path,
    settings: &Settings,
    engine: &Engine,
) -> Result<SeedOutcome, MetricError> {
    let gold = match engine.gold(db, gold_sql).result {
        Ok(gold) => gold,
        Err(_) => return Ok(SeedOutcome::GoldError),
    };
    let Ok(mutants) = mutants_of(case_id, gold_sql, settings.seed) else {
        return Ok(SeedOutcome::Unparsed);
    };
    let mut runs = Vec::new();
    for mutant in mutants.mutants {
        let Some(&operator) = mutant.ops.first() else {
            continue;
        };
        let mut run = MutantRun {
            case_id: case_id.to_string(),
            operator,
            sql: mutant.sql,
            gold_rows: gold.rows.len(),
            mutant_rows: None,
            exec_error: None,
            ex: false,
            scores: BTreeMap::new(),
            facts: Facts::default(),
        };
        match engine.execute(db, &run.sql).result {
            Err(error) => run.exec_error = Some(error.message),
            Ok(result) => {
                let scores = score_all(&gold, &result, &settings.regimes, &settings.options)?;
                run.ex = scores.iter().any(|(_, s)| s.ex);
                run.mutant_rows = Some(result.rows.len());
                run.facts = facts(gold_sql, operator, &gold, &result);
                run.facts.semantic_differs = semantic_differs(&gold, &result, &scores, settings)?;
                run.scores = scores.into_iter().map(|(r, s)| (r, s.into())).collect();
            }
        }
        runs.push(run);
    }
    Ok(SeedOutcome::Mutated(runs))
}

fn score_all(
    gold: &ResultSet,
    pred: &ResultSet,
    regimes: &[Regime],
    options: &Options,
) -> Result<Vec<(String, Scores)>, MetricError> {
    regimes
        .iter()
        .map(|&regime| {
            Ok((
                regime.to_string(),
                fine_grained(gold, pred, regime, options)?,
            ))
        })
        .collect()
}

/// The SC regimes whose scores differ from the same regime with exact column matching.
fn semantic_differs(
    gold: &ResultSet,
    pred: &ResultSet,
    scores: &[(String, Scores)],
    settings: &Settings,
) -> Result<Vec<String>, MetricError> {
    let mut differs = Vec::new();
    for (&regime, (name, semantic)) in settings.regimes.iter().zip(scores) {
        if regime.columns != ColumnMatching::Semantic {
            continue;
        }
        let exact = Regime {
            columns: ColumnMatching::Exact,
            ..regime
        };
        let exact = fine_grained(gold, pred, exact, &settings.options)?;
        if (exact.exp, exact.exr) != (semantic.exp, semantic.exr) {
            differs.push(name.clone());
        }
    }
    Ok(differs)
}

fn facts(gold_sql: &str, operator: Operator, gold: &ResultSet, mutant: &ResultSet) -> Facts {
    static AGGREGATE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(count|sum|avg|min|max|total|group_concat)\s*\(|\bgroup\s+by\b")
            .expect("valid pattern")
    });
    static LIMIT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)\blimit\b").expect("valid pattern"));
    static OR_IN_WHERE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?is)\bwhere\b.*\bor\b").expect("valid pattern"));
    Facts {
        ordered_prefix: is_limit(operator) && is_ordered_prefix(gold, mutant),
        gold_aggregates: AGGREGATE.is_match(gold_sql),
        gold_has_or: OR_IN_WHERE.is_match(gold_sql),
        gold_has_limit: LIMIT.is_match(gold_sql),
        semantic_differs: Vec::new(),
    }
}

/// Whether the shorter result's rows are the longer's first rows, ignoring their order.
pub fn is_ordered_prefix(a: &ResultSet, b: &ResultSet) -> bool {
    let (short, long) = if a.rows.len() <= b.rows.len() {
        (a, b)
    } else {
        (b, a)
    };
    let prefix = ResultSet {
        columns: long.columns.clone(),
        rows: long.rows[..short.rows.len()].to_vec(),
        lossy_text: false,
    };
    let same_width = ResultSet {
        columns: long.columns.clone(),
        rows: short.rows.clone(),
        lossy_text: false,
    };
    let exact = Regime::default();
    fine_grained(&prefix, &same_width, exact, &Options::default()).is_ok_and(|s| s.ex)
}

/// Table X: per operator (registry order), counts and mean drops from 1.
pub fn table(runs: &[MutantRun], regimes: &[Regime]) -> Vec<OperatorRow> {
    Operator::ALL
        .iter()
        .map(|&operator| {
            let of_op: Vec<&MutantRun> = runs.iter().filter(|r| r.operator == operator).collect();
            let scored: Vec<&MutantRun> = of_op
                .iter()
                .copied()
                .filter(|r| r.exec_error.is_none())
                .collect();
            let n = scored.len() as f64;
            let mean_drop = |value: &dyn Fn(&MutantRun) -> f64| {
                scored.iter().map(|r| value(r) - 1.0).sum::<f64>() / n
            };
            let deltas = if scored.is_empty() {
                BTreeMap::new()
            } else {
                regimes
                    .iter()
                    .map(|regime| {
                        let name = regime.to_string();
                        let metric = |pick: fn(&FineScores) -> f64| {
                            mean_drop(&|r: &MutantRun| r.scores.get(&name).map_or(0.0, pick))
                        };
                        let deltas = Deltas {
                            exp: metric(|s| s.exp),
                            exr: metric(|s| s.exr),
                            f1: metric(|s| s.f1),
                        };
                        (name, deltas)
                    })
                    .collect()
            };
            OperatorRow {
                operator,
                mutants: scored.len(),
                exec_errors: of_op.len() - scored.len(),
                delta_ex: (!scored.is_empty()).then(|| mean_drop(&|r| f64::from(u8::from(r.ex)))),
                deltas,
            }
        })
        .collect()
}

/// Every scored mutant metric that moves against Table IX, with its reason.
pub fn contradictions(runs: &[MutantRun], regimes: &[Regime]) -> Vec<Contradiction> {
    let mut found = Vec::new();
    for run in runs {
        let Some(mutant_rows) = run.mutant_rows else {
            continue;
        };
        for &regime in regimes {
            let name = regime.to_string();
            let Some(scores) = run.scores.get(&name) else {
                continue;
            };
            let (rows, exp, exr) = expected(run.operator, regime);
            for (metric, expected, observed) in [("EXP", exp, scores.exp), ("EXR", exr, scores.exr)]
            {
                let Some(expected) = expected else { continue };
                if expected.holds_for_metric(observed) {
                    continue;
                }
                found.push(Contradiction {
                    operator: run.operator,
                    case_id: run.case_id.clone(),
                    regime: name.clone(),
                    metric,
                    expected,
                    observed,
                    reason: reason(run, regime, rows, mutant_rows),
                });
            }
        }
    }
    found
}

fn reason(run: &MutantRun, regime: Regime, rows: Option<Direction>, mutant_rows: usize) -> Reason {
    let facts = &run.facts;
    let name = regime.to_string();
    if run.ex {
        Reason::SameResult
    } else if is_limit(run.operator) && !facts.ordered_prefix {
        Reason::LimitTies
    } else if facts.gold_aggregates {
        Reason::Aggregates
    } else if !is_limit(run.operator) && facts.gold_has_limit {
        Reason::GoldLimit
    } else if rows.is_some_and(|r| !r.holds_for_rows(run.gold_rows, mutant_rows)) {
        Reason::RowCount
    } else if run.operator == Operator::WherePredicateDelete && facts.gold_has_or {
        Reason::OrFlattened
    } else if facts.semantic_differs.contains(&name) {
        Reason::SemanticPairing
    } else if regime.columns == ColumnMatching::NoColumn && regime.cells == CellMatching::Exact {
        Reason::WholeRows
    } else {
        Reason::Unexplained
    }
}

fn is_limit(operator: Operator) -> bool {
    matches!(operator, Operator::LimitIncrease | Operator::LimitDecrease)
}

/// Counts of contradictions by reason.
pub fn reason_counts(contradictions: &[Contradiction]) -> BTreeMap<Reason, usize> {
    let mut counts = BTreeMap::new();
    for c in contradictions {
        *counts.entry(c.reason).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests;
