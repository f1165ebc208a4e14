//! Textual Query Augmentation: the two methods that test whether a system still finds the right
//! schema elements when the words of the question and of the schema stop matching.
//!
//! - Naturalness reduction (SQLMorph §V): identifiers lowered to SNAILS level N3, the database
//!   cloned and renamed, gold SQL and question rewritten, four settings O/O, L/O, O/L, L/L.
//! - Linker-table elimination (Riahi 2025 thesis ch. 4): the query's linker table found, its
//!   mentions in the question hidden by synonym replacement.

pub mod ident;
pub mod linker;
pub mod llm;
pub mod naturalness;
pub mod rename;
pub mod sql;
pub mod text;
pub mod usage;
pub mod wordnet;
