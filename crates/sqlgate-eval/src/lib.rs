//! The evaluation core of sqlgate: everything needed to score predicted SQL against gold SQL,
//! and nothing that asks a model, reads `sqlgate.toml` or talks to a terminal.
//!
//! Modules form a one-way stack; each uses only the ones listed before it (bottom first):
//!
//! 1. `error` (input errors), `secrets` (known credentials, redacted from every output),
//!    `files` (atomic writes, file stamps), all three from the crate `sqlgate-base` below;
//!    `store` (the on-disk cache), `sqltext` (bounds on
//!    untrusted SQL), `model_output` (a model's reply cleaned to one query)
//! 2. `exec`: sandboxed engines (SQLite files, a PostgreSQL server) behind [`exec::QueryRunner`]
//! 3. `spider`: Spider's SQL parser and hardness, for untrusted SQL
//! 4. `metrics`: pure functions of results and SQL (EX, ESM, ETM, SQLMorph, TrustSQL, SQL2NL)
//! 5. `loaders`: benchmark files (Spider, BIRD, Defog, TrustSQL, native) turned into cases
//! 6. `scoring`: the one per-case pipeline, shared by `sqlgate score` and the gate

#![warn(missing_docs)]

pub use sqlgate_base::{error, files, secrets};

pub mod model_output;
pub mod sqltext;
pub mod store;

pub mod exec;
pub mod spider;

pub mod metrics;

pub mod loaders;

pub mod scoring;
