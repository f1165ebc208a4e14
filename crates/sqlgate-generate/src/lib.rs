//! The generators of sqlgate. Each writes reviewable files (a family of mutated cases, a
//! calibration table) and never runs inside a test.
//!
//! - `mutate`: SQLMorph's single-error SQL mutants, Join Query Expansion, Textual Query
//!   Augmentation, SQL2NL's schema-aligned paraphrases and infeasible questions;
//! - `calibrate`: the fine-grained metrics measured on single-error mutants (SQLMorph
//!   Tables IX and X);
//! - `audit`: what is wrong with a benchmark's gold queries (errors, ties cut by LIMIT,
//!   unspecified row order, nondeterminism, cartesian products, strings the data spells in
//!   another case, disagreeing alternatives, errors the case cannot see, duplicates);
//! - `distill`: small counterexample databases that tell each gold from its near misses.

#![warn(missing_docs)]

pub mod mutate;

pub mod calibrate;

pub mod audit;

pub mod distill;
