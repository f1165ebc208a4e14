//! sqlgate: a CI test harness for text-to-SQL systems.
//!
//! Modules form a one-way stack; each uses only the ones listed before it (bottom first):
//!
//! 1. `error` (input errors, exit codes), `files` (atomic writes), `sqltext` (bounds on untrusted
//!    SQL), `testing` (shared test data)
//! 2. `exec`: sandboxed engines (SQLite files, a PostgreSQL server) behind [`exec::QueryRunner`]
//! 3. `spider`: Spider's SQL parser and hardness, for untrusted SQL
//! 4. `metrics`: pure functions of results and SQL (EX, ESM, ETM, SQLMorph, reliability)
//! 5. `bench`: loaders turning benchmark files into cases
//! 6. `llm`: the one OpenAI-compatible client
//! 7. `config`: `sqlgate.toml` and the types it holds (thresholds, metrics, record mode...)
//! 8. `system`: systems under test and their cassette
//! 9. `scoring`: the one per-case pipeline, shared by `sqlgate score` and the gate
//! 10. `gate`: named tests, verdicts, snapshots
//! 11. `mutate` (generators), then `calibrate` (measures metrics on generated mutants)
//! 12. `report`: terminal, JUnit, GitHub and score outputs
//! 13. `cli`, then `harness` (libtest-mimic) on top
//!
//! # Gating your own system
//!
//! Implement [`System`] and hand it to [`harness!`] in a `harness = false` test target; every
//! case of `sqlgate.toml` becomes a test of `cargo test`. Replies are cleaned of markdown fences
//! and prose by the pipeline, so a system may return the model's text as it came.
//!
//! ```no_run
//! use sqlgate::{Reply, Request, System, SystemError};
//!
//! struct Echo;
//!
//! impl System for Echo {
//!     fn fingerprint(&self) -> String {
//!         "echo-v1".to_string()
//!     }
//!
//!     fn answer(&self, request: &Request) -> Result<Reply, SystemError> {
//!         if request.question.is_empty() {
//!             return Err(SystemError::garbage("no question"));
//!         }
//!         Ok(Reply::sql("```sql\nSELECT 1\n```"))
//!     }
//! }
//!
//! sqlgate::harness!("sqlgate.toml", Echo);
//! ```

pub mod error;
pub mod files;
pub mod sqltext;
#[doc(hidden)]
pub mod testing;

pub mod exec;
pub mod spider;

pub mod metrics;

pub mod bench;

pub mod llm;

pub mod config;

pub mod system;

pub mod scoring;

pub mod gate;

pub mod calibrate;
pub mod mutate;

pub mod report;

pub mod cli;
pub mod harness;

pub use system::{Reply, Request, System, SystemError, SystemErrorKind};
