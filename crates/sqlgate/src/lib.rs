//! sqlgate: a CI test harness for text-to-SQL systems. This crate is the gate: systems under
//! test, `sqlgate.toml`, cassettes, snapshots, verdicts and the [`harness!`] macro for
//! `cargo test`.
//!
//! The workspace's crates form a one-way stack, and cargo rejects an import against it (bottom
//! first):
//!
//! 1. `sqlgate-eval`: the evaluation core (sandboxed engines, metrics, loaders, the per-case
//!    scoring pipeline), re-exported here as [`eval`]
//! 2. `sqlgate-llm`: asking a model or system (the OpenAI-compatible client, [`SystemError`],
//!    the throttle)
//! 3. `sqlgate` (this crate): `config`, then `system` (systems and their cassette), then
//!    `error` ([`Error`]: every layer's errors and the one place exit codes are decided), then
//!    `gate` (named tests, verdicts, snapshots), then `diff` (two runs compared), then
//!    `report` (JUnit, GitHub outputs), then `runner` (the run built from a plan, and its one
//!    ending), then `harness` (libtest-mimic)
//! 4. `sqlgate-generate`: the generators (mutants, JQE, TQA, paraphrases, calibration)
//! 5. `sqlgate-cli`: the `sqlgate` command and its reporters
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

#![warn(missing_docs)]

pub use sqlgate_eval as eval;

/// The version of the code that computes cached results and verdicts: the package version and
/// a fingerprint of the sources (see `build.rs`). The cache keys on it, so an entry is reused
/// only by a build of the same code.
pub const CODE_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "+", env!("SQLGATE_CODE_HASH"));

pub mod config;

pub mod system;

pub mod error;

pub mod gate;

pub mod diff;

pub mod report;

pub mod runner;

pub mod harness;

pub use error::Error;
pub use system::{Reply, Request, System, SystemError, SystemErrorKind};

#[cfg(test)]
mod code_version_tests {
    /// The cache's key is more than the package version, which every commit shares.
    #[test]
    fn the_code_version_is_the_package_version_and_a_fingerprint() {
        let fingerprint = super::CODE_VERSION
            .strip_prefix(concat!(env!("CARGO_PKG_VERSION"), "+"))
            .expect("the package version first");
        assert_eq!(fingerprint.len(), 16);
        assert!(fingerprint.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
