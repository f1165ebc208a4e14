//! SQLMorph's single-error SQL mutation operators (spec `sqlmorph-metrics.md` §9).
//!
//! A mutant is the gold query with one deliberate error (or a chain of k compatible ones). It
//! serves as a *prediction* scored against the unchanged gold, to check that a metric reacts
//! to each kind of error as expected. Every operator rewrites the parsed tree (sqlparser,
//! SQLite dialect) and the mutant is the tree printed back; a mutant is kept only when the
//! tree changed and the printed SQL parses again.

pub mod clause_mentions;
pub mod dml;
pub mod family;
pub mod infeasible;
pub mod jqe;
mod operators;
mod outer;
pub mod para;
mod registry;
pub mod rewrite_check;
mod rng;
mod sites;
pub mod tqa;

#[cfg(test)]
mod corpus_tests;
#[cfg(test)]
pub(crate) mod test_corpus;
#[cfg(test)]
mod tests;

use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};
use sqlparser::ast::{BinaryOperator, Expr, Query, Statement};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

use sqlgate_eval::sqltext::{self, TooComplex};

pub use registry::{Operator, UnknownOperator};
pub use rng::{labelled_stream, stream, DEFAULT_SEED};
pub(crate) use sites::constraint as join_constraint;

/// A mutated query: `ops` applied in order to the seed query `seed_id` (depth = `ops.len()`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mutant {
    /// The id of the case whose gold query was mutated.
    pub seed_id: String,
    /// The operators applied, in order.
    pub ops: Vec<Operator>,
    /// The mutated query.
    pub sql: String,
}

/// An attempted chain that produced no mutant, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    /// The chain that was tried.
    pub ops: Vec<Operator>,
    /// Why it gave no mutant.
    pub reason: RejectReason,
}

/// Why an attempted chain gave no mutant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectReason {
    /// An operator found no site in the query.
    NotApplicable,
    /// The rewrite printed the same SQL.
    Unchanged,
    /// The rewritten SQL no longer parses.
    Reparse,
}

/// The mutants of one seed query, and the rejected attempts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mutants {
    /// The mutants, in generation order.
    pub mutants: Vec<Mutant>,
    /// The chains that gave none.
    pub rejected: Vec<Rejection>,
}

/// Why a seed query or a chain could not be mutated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MutateError {
    /// The seed SQL does not parse (SQLite dialect): it has no mutants.
    #[error("SQL does not parse: {0}")]
    Parse(String),
    /// The SQL is not one SELECT-like query (several statements, DML, DDL).
    #[error("SQL is not a single query")]
    NotAQuery,
    /// The seed SQL is too long or too deeply nested to parse safely.
    #[error("SQL is {0}")]
    TooComplex(TooComplex),
    /// The operator's rewrite printed the same SQL.
    #[error("{0} left the query unchanged")]
    Unchanged(Operator),
    /// The rewritten query no longer parses (a printer defect, reported rather than kept).
    #[error("{op} produced SQL that does not parse again: {message}: {sql}")]
    Reparse {
        /// The operator applied last.
        op: Operator,
        /// The SQL it printed.
        sql: String,
        /// The parser's message.
        message: String,
    },
    /// Two operators of one conflict group (they rewrite the same clause).
    #[error("{0} conflicts with {1}: they cannot be in one chain")]
    Conflict(Operator, Operator),
}

impl MutateError {
    /// The rejection reason of a failed attempt, or None for errors about the seed itself.
    fn rejection(&self) -> Option<RejectReason> {
        match self {
            MutateError::Unchanged(_) => Some(RejectReason::Unchanged),
            MutateError::Reparse { .. } => Some(RejectReason::Reparse),
            _ => None,
        }
    }
}

/// Applies `op` once to `sql`, choosing among its variants with `rng`. `Ok(None)`: the
/// operator is not applicable to this query.
pub fn mutate(
    sql: &str,
    op: Operator,
    rng: &mut (impl Rng + Send),
) -> Result<Option<String>, MutateError> {
    on_enough_stack(sql, |query| {
        Ok(attempt(&query, &query, op, rng)?.map(|(_, sql)| sql))
    })
}

/// Applies `ops` in order to `sql`, each to the previous step's SQL, with the stream of
/// (`run_seed`, `seed_id`, chain so far). `Ok(None)`: some operator was not applicable.
pub fn chain(
    seed_id: &str,
    sql: &str,
    ops: &[Operator],
    run_seed: u64,
) -> Result<Option<Mutant>, MutateError> {
    for (i, &op) in ops.iter().enumerate() {
        if let Some(&other) = ops[..i].iter().find(|other| op.conflicts_with(**other)) {
            return Err(MutateError::Conflict(other, op));
        }
    }
    on_enough_stack(sql, |gold| chain_parsed(seed_id, &gold, ops, run_seed))
}

fn chain_parsed(
    seed_id: &str,
    gold: &Query,
    ops: &[Operator],
    run_seed: u64,
) -> Result<Option<Mutant>, MutateError> {
    let mut query = gold.clone();
    let mut mutated_sql = None;
    for depth in 1..=ops.len() {
        let mut rng = stream(run_seed, seed_id, &ops[..depth]);
        match attempt(gold, &query, ops[depth - 1], &mut rng)? {
            Some((next, sql)) => {
                query = next;
                mutated_sql = Some(sql);
            }
            None => return Ok(None),
        }
    }
    Ok(mutated_sql.map(|sql| Mutant {
        seed_id: seed_id.to_string(),
        ops: ops.to_vec(),
        sql,
    }))
}

/// Every operator applied once to `sql` (depth 1), in registry order.
pub fn mutants_of(seed_id: &str, sql: &str, run_seed: u64) -> Result<Mutants, MutateError> {
    mutants_to_depth(seed_id, sql, 1, run_seed)
}

/// Every variant of every operator applied once to `sql` (up to `cap` per operator), in
/// registry order: the neighbours `distill` must tell apart from the gold, where
/// [`mutants_of`] draws one variant per operator.
pub fn every_variant(sql: &str, cap: usize) -> Result<Vec<(Operator, String)>, MutateError> {
    on_enough_stack(sql, |gold| {
        let mut found = Vec::new();
        for op in Operator::ALL {
            let variants = operators::variant_count(op, &mut gold.clone());
            for choice in 0..variants.min(cap) {
                let mut mutated = gold.clone();
                operators::apply(op, &mut mutated, choice);
                match checked(&gold, &gold, op, mutated) {
                    Ok((_, sql)) => found.push((op, sql)),
                    Err(error) if error.rejection().is_some() => {}
                    Err(error) => return Err(error),
                }
            }
        }
        Ok(found)
    })
}

/// Depth 1 to `max_depth` (spec §9.1.5): depth d+1 applies every operator that conflicts with
/// none already in the chain to each depth-d mutant. Mutants come depth by depth; a chain's
/// result is the same as [`chain`] gives for it.
pub fn mutants_to_depth(
    seed_id: &str,
    sql: &str,
    max_depth: usize,
    run_seed: u64,
) -> Result<Mutants, MutateError> {
    on_enough_stack(sql, |gold| {
        mutants_of_parsed(seed_id, &gold, max_depth, run_seed)
    })
}

fn mutants_of_parsed(
    seed_id: &str,
    gold: &Query,
    max_depth: usize,
    run_seed: u64,
) -> Result<Mutants, MutateError> {
    let mut frontier = vec![(Vec::new(), gold.clone())];
    let mut result = Mutants::default();
    for _ in 0..max_depth {
        let mut next = Vec::new();
        for (prefix, query) in &frontier {
            for op in Operator::ALL {
                if prefix.iter().any(|done: &Operator| done.conflicts_with(op)) {
                    continue;
                }
                let ops: Vec<Operator> = prefix.iter().copied().chain([op]).collect();
                let mut rng = stream(run_seed, seed_id, &ops);
                match attempt(gold, query, op, &mut rng) {
                    Ok(Some((mutated, sql))) => {
                        result.mutants.push(Mutant {
                            seed_id: seed_id.to_string(),
                            ops: ops.clone(),
                            sql,
                        });
                        next.push((ops, mutated));
                    }
                    Ok(None) => result.rejected.push(Rejection {
                        ops,
                        reason: RejectReason::NotApplicable,
                    }),
                    Err(error) => match error.rejection() {
                        Some(reason) => result.rejected.push(Rejection { ops, reason }),
                        None => return Err(error),
                    },
                }
            }
        }
        frontier = next;
    }
    Ok(result)
}

/// One operator on `input`, the gold or a mutant of it: the re-parsed mutant and its SQL, None
/// when the operator is not applicable, an error when the mutant is rejected.
fn attempt(
    gold: &Query,
    input: &Query,
    op: Operator,
    rng: &mut impl Rng,
) -> Result<Option<(Query, String)>, MutateError> {
    let mut mutated = input.clone();
    let variants = operators::variant_count(op, &mut mutated);
    if variants == 0 {
        return Ok(None);
    }
    operators::apply(op, &mut mutated, rng.random_range(0..variants));
    checked(gold, input, op, mutated).map(Some)
}

/// The rejection checks of spec §9.1.4 that need no database. A chain step that undoes an
/// earlier one (a star added, then dropped) gives back the gold: that is no error either.
fn checked(
    gold: &Query,
    input: &Query,
    op: Operator,
    mutated: Query,
) -> Result<(Query, String), MutateError> {
    if mutated == *input || mutated == *gold {
        return Err(MutateError::Unchanged(op));
    }
    let sql = mutated.to_string();
    match parse_query(&sql) {
        Ok(reparsed) => Ok((reparsed, sql)),
        Err(error) => Err(MutateError::Reparse {
            op,
            message: error.to_string(),
            sql,
        }),
    }
}

/// Parses `sql` and runs `work` on its tree, on a stack large enough for its depth: the tree
/// is cloned, printed and dropped recursively.
pub(crate) fn on_enough_stack<T: Send>(
    sql: &str,
    work: impl FnOnce(Query) -> Result<T, MutateError> + Send,
) -> Result<T, MutateError> {
    let checked = sqltext::check(sql).map_err(MutateError::TooComplex)?;
    sqltext::run(checked.depth, || work(parse_query(sql)?)).map_err(MutateError::TooComplex)?
}

/// The operands of a chain of ANDs (parentheses looked through): `a = 1 AND (b = 2 AND c)` is
/// `a = 1`, `b = 2`, `c`.
pub(crate) fn conjuncts(expr: &Expr) -> Vec<&Expr> {
    match expr {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            let mut found = conjuncts(left);
            found.extend(conjuncts(right));
            found
        }
        Expr::Nested(inner) => conjuncts(inner),
        other => vec![other],
    }
}

/// Parses one query (a trailing `;` is allowed) with the SQLite dialect, when
/// [`sqltext::check`] lets it.
pub(crate) fn parse_query(sql: &str) -> Result<Query, MutateError> {
    sqltext::check(sql).map_err(MutateError::TooComplex)?;
    let statements = Parser::parse_sql(&SQLiteDialect {}, sql)
        .map_err(|error| MutateError::Parse(error.to_string()))?;
    match <[Statement; 1]>::try_from(statements) {
        Ok([Statement::Query(query)]) => Ok(*query),
        _ => Err(MutateError::NotAQuery),
    }
}
