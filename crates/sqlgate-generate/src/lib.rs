//! The generators of sqlgate. Each writes reviewable files (a family of mutated cases, a
//! calibration table) and never runs inside a test.
//!
//! - `mutate`: SQLMorph's single-error SQL mutants, Join Query Expansion, Textual Query
//!   Augmentation, SQL2NL's schema-aligned paraphrases and infeasible questions;
//! - `calibrate`: the fine-grained metrics measured on single-error mutants (SQLMorph
//!   Tables IX and X).

#![warn(missing_docs)]

pub mod mutate;

pub mod calibrate;

pub mod distill;
