//! The gold audit (`sqlgate audit`): what makes a benchmark case unable to tell a right query
//! from a wrong one, or pass and fail by chance. Every gold alternative runs on every database
//! of its case's folder (a plain database folder, or a distilled test-suite folder); each check
//! compares results as the suite's mode does, by scoring through [`sqlgate_eval::metrics::ex::evaluate`] itself.

mod cartesian;
mod case_audit;
mod duplicate;
mod engines;
mod literals;
mod runs;
mod scopes;
mod unordered;
mod volatile;
mod weak;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use sqlgate_eval::error::InputError;
use sqlgate_eval::exec::Engine;
use sqlgate_eval::loaders::Benchmark;
use sqlgate_eval::metrics::ex::{widest_expansion, Mode, ModeOptions};

/// How the audit compares results and draws mutants.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The comparison mode of the suite whose gold is audited.
    pub mode: Mode,
    /// The mode's options, as the suite scores with them.
    pub mode_options: ModeOptions,
    /// The mutation run seed of the `weak` check's single-error mutants.
    pub seed: u64,
}

impl Settings {
    /// A gold query as the mode runs it: in the Defog modes, its `{a,b}` column set taken whole
    /// (the widest of the expansions the evaluator runs); elsewhere the text as written (a
    /// brace in a string literal is not markup there).
    pub(crate) fn runnable(&self, gold: &str) -> String {
        match self.mode {
            Mode::Defog | Mode::DefogExact => widest_expansion(gold),
            _ => gold.to_string(),
        }
    }
}

/// What is wrong with a gold query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A gold alternative does not run.
    Error,
    /// A gold alternative runs past the time bound.
    Timeout,
    /// A gold alternative returns no row on any database.
    Empty,
    /// A LIMIT cuts through ties, or the mode compares rows in an order that is not total.
    OrderTies,
    /// The mode compares rows in order, but the outer query has no ORDER BY.
    OrderUnspecified,
    /// The result depends on the execution: two runs, the scan order, the clock or chance.
    Nondeterministic,
    /// Two tables joined without a condition: a cartesian product.
    Cartesian,
    /// A string compared with a column that no value of it equals on the original database,
    /// while one equals it ignoring case.
    LiteralAbsent,
    /// Gold alternatives the mode scores as different from the first one.
    AlternativesDisagree,
    /// Single-error mutants the case cannot tell from its gold.
    Weak,
    /// One question on one database with several different golds.
    Duplicate,
    /// The gold means something else on another engine: run there (in that engine's gold,
    /// `--compare-gold`), the mode scores its rows as different, or it fails there only.
    EngineDisagrees,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 12] = [
        Kind::Error,
        Kind::Timeout,
        Kind::Empty,
        Kind::OrderTies,
        Kind::OrderUnspecified,
        Kind::Nondeterministic,
        Kind::Cartesian,
        Kind::LiteralAbsent,
        Kind::AlternativesDisagree,
        Kind::Weak,
        Kind::Duplicate,
        Kind::EngineDisagrees,
    ];

    /// The name used in the JSON output and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Error => "error",
            Kind::Timeout => "timeout",
            Kind::Empty => "empty",
            Kind::OrderTies => "order_ties",
            Kind::OrderUnspecified => "order_unspecified",
            Kind::Nondeterministic => "nondeterministic",
            Kind::Cartesian => "cartesian",
            Kind::LiteralAbsent => "literal_absent",
            Kind::AlternativesDisagree => "alternatives_disagree",
            Kind::Weak => "weak",
            Kind::Duplicate => "duplicate",
            Kind::EngineDisagrees => "engine_disagrees",
        }
    }
}

/// One finding about one case's gold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The case's id.
    pub id: String,
    /// The case's database.
    pub db: String,
    /// What is wrong.
    pub kind: Kind,
    /// What was seen, for a person to check.
    pub detail: String,
}

/// The same benchmark on a second engine, whose golds each case's gold is compared with.
pub struct Comparison<'a> {
    /// The benchmark as loaded for the other engine (its own gold file when its dialect needs
    /// one); cases are matched by id.
    pub bench: &'a Benchmark,
    /// The other engine, within the audit's limits.
    pub engine: &'a Engine,
}

/// Audits every case's gold on every database of its folder, in parallel, and against its
/// counterpart on the `compare` engine when there is one. Findings come in case order, then
/// kind order.
pub fn audit(
    bench: &Benchmark,
    settings: &Settings,
    engine: &Engine,
    compare: Option<&Comparison<'_>>,
) -> Result<Vec<Finding>, InputError> {
    let files = bench
        .cases
        .iter()
        .map(|case| bench.db_files(case, true))
        .collect::<Result<Vec<_>, _>>()?;
    let counterparts = match compare {
        Some(compare) => Some(engines::counterparts(bench, compare)?),
        None => None,
    };
    let mut per_case: Vec<Vec<Finding>> = bench
        .cases
        .par_iter()
        .zip(&files)
        .enumerate()
        .map(|(index, (case, files))| {
            let mut findings = case_audit::audit_case(settings, engine, case, files);
            if let (Some(compare), Some(counterparts)) = (compare, &counterparts) {
                if let (Some(other), Some(file)) = (&counterparts[index], files.first()) {
                    findings.extend(engines::disagreement(
                        settings,
                        engine,
                        case,
                        file,
                        compare.engine,
                        other,
                    ));
                }
            }
            findings
        })
        .collect();
    for (index, finding) in duplicate::findings(&bench.cases) {
        per_case[index].push(finding);
    }
    Ok(per_case
        .into_iter()
        .flat_map(|mut findings| {
            findings.sort_by_key(|f| f.kind);
            findings
        })
        .collect())
}

/// How many findings of each kind, in [`Kind::ALL`] order, kinds without findings left out.
pub fn counts(findings: &[Finding]) -> Vec<(Kind, usize)> {
    let mut counts: BTreeMap<Kind, usize> = BTreeMap::new();
    for finding in findings {
        *counts.entry(finding.kind).or_default() += 1;
    }
    counts.into_iter().collect()
}
