//! `weak`: single-error mutants of the gold that the case scores correct on every database:
//! the case cannot see that error. A mutant is scored against the alternative it was made
//! from: one that turns alternative 2 into alternative 1 is an accepted answer, not an error.
//! Operators whose change the mode accepts by design (whatever the data) are left out: that
//! their mutants pass says nothing about the case.

use std::collections::BTreeMap;
use std::path::PathBuf;

use sqlgate_eval::exec::QueryRunner;
use sqlgate_eval::metrics::ex::Verdict;

use super::runs::Scorer;
use crate::mutate::{mutants_of, Operator};

/// The operators whose mutants (of any gold alternative) pass against their alternative on
/// every one of `files` (the databases where the gold runs), with how many of their mutants
/// do, and the number of mutants tried; None when no mutant passes.
pub(super) fn passing_mutants(scorer: &Scorer, files: &[PathBuf]) -> Option<String> {
    let case = scorer.case;
    let mut passing: BTreeMap<Operator, usize> = BTreeMap::new();
    let mut tried = 0;
    for gold in &case.gold {
        let Ok(mutants) = mutants_of(&case.id, gold, scorer.settings.seed) else {
            continue;
        };
        let by_design = accepted_by_design(scorer, gold, files);
        for mutant in mutants.mutants {
            if mutant.ops.iter().all(|op| by_design.contains(op)) {
                continue;
            }
            tried += 1;
            let passes = files.iter().all(|file| {
                scorer.verdict(std::slice::from_ref(gold), file, &mutant.sql) == Verdict::Correct
            });
            if passes {
                for op in mutant.ops {
                    *passing.entry(op).or_default() += 1;
                }
            }
        }
    }
    if passing.is_empty() {
        return None;
    }
    let operators: Vec<String> = passing
        .iter()
        .map(|(op, count)| match count {
            1 => op.name().to_string(),
            n => format!("{} ×{n}", op.name()),
        })
        .collect();
    let passed: usize = passing.values().sum();
    Some(format!(
        "{passed} of {tried} single-error mutants score correct on every database: {}",
        operators.join(", ")
    ))
}

/// The operators whose change the mode accepts on `gold` whatever the data, asked of the mode
/// on the first of `files` where the gold returns rows (else the first where it runs):
/// `add_star_wildcard` only adds columns, which a mode that accepts extra columns (Defog's
/// subset match, Spider 2.0's) never sees.
fn accepted_by_design(scorer: &Scorer, gold: &str, files: &[PathBuf]) -> Vec<Operator> {
    let sql = scorer.settings.runnable(gold);
    let results: Vec<_> = files
        .iter()
        .filter_map(|file| Some((file, scorer.engine.gold(file, &sql).result.ok()?)))
        .collect();
    let probe = results
        .iter()
        .find(|(_, rows)| !rows.rows.is_empty())
        .or(results.first());
    match probe {
        Some((file, rows)) if scorer.accepts_extra_columns(gold, file, rows) => {
            vec![Operator::AddStarWildcard]
        }
        _ => Vec::new(),
    }
}
