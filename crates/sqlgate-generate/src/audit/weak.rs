//! `weak`: single-error mutants of the gold that the case scores correct on every database:
//! the case cannot see that error. A mutant is scored against the alternative it was made
//! from: one that turns alternative 2 into alternative 1 is an accepted answer, not an error.

use std::collections::BTreeMap;
use std::path::PathBuf;

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
        for mutant in mutants.mutants {
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
