//! sqlgate: a CI test harness for text-to-SQL systems.
//!
//! Data flows one way: `bench` (loaders → cases) → `exec` (sandboxed SQLite) →
//! `metrics` (execution accuracy...) → `report`.

pub mod bench;
pub mod cli;
pub mod config;
pub mod error;
pub mod exec;
pub mod gate;
pub mod harness;
pub mod llm;
pub mod metrics;
pub mod mutate;
pub mod report;
pub mod scoring;
pub mod spider;
pub mod sqltext;
pub mod system;
#[doc(hidden)]
pub mod testing;
