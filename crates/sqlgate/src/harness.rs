//! The libtest-mimic front end: `cargo test --test text2sql` and `cargo nextest run` list and
//! run the same named tests as `sqlgate test`, with the same verdicts.
//!
//! Each test runs on its own, so the one-test-per-process model of nextest and
//! `cargo test -- --exact NAME` evaluate only the case asked for. Plug your own system in with
//! [`harness!`](crate::harness!).

use std::path::PathBuf;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};

use crate::config::DEFAULT_PROFILE;

use crate::config::RecordMode;
use crate::gate::session::Session;
use crate::gate::TestStatus;
use crate::system::System;
use crate::Error;

/// What the harness runs: a configuration, a profile, and optionally a Rust system.
pub struct Harness {
    pub config: PathBuf,
    /// `$SQLGATE_PROFILE`, else `default`.
    pub profile: String,
    pub system: Option<Arc<dyn System>>,
}

impl Harness {
    pub fn new(config: impl Into<PathBuf>) -> Harness {
        Harness {
            config: config.into(),
            profile: std::env::var("SQLGATE_PROFILE")
                .unwrap_or_else(|_| DEFAULT_PROFILE.to_string()),
            system: None,
        }
    }

    /// Answers with `system` instead of the configured `[[system]]`.
    pub fn with_system(mut self, system: impl System + 'static) -> Harness {
        self.system = Some(Arc::new(system));
        self
    }

    /// Lists or runs the tests as libtest would, then exits.
    pub fn main(self) -> ! {
        let args = Arguments::from_args();
        let record = match std::env::var("SQLGATE_RECORD") {
            Ok(mode) => match mode.parse::<RecordMode>() {
                Ok(mode) => Some(mode),
                Err(error) => exit_with(Error::Usage(format!("SQLGATE_RECORD {error}"))),
            },
            Err(_) => None,
        };
        let session = match Session::open(&self.config, &self.profile, record, self.system) {
            Ok(session) => Arc::new(session),
            Err(error) => exit_with(error),
        };
        sqlgate_eval::exec::memory::set_max_memory(session.config.max_memory);
        let conclusion = libtest_mimic::run(&args, trials(&session));
        for warning in session.warnings() {
            eprintln!("warning: {warning}");
        }
        conclusion.exit()
    }
}

/// One trial per test, named exactly as `sqlgate test` names it: no libtest "kind", which
/// nextest would show as a `[kind] ` prefix that `-E 'test(=NAME)'` filters then miss.
fn trials(session: &Arc<Session>) -> Vec<Trial> {
    session
        .tests()
        .into_iter()
        .map(|test| {
            let ignored = test.ignored;
            let session = Arc::clone(session);
            Trial::test(test.name.clone(), move || {
                let result = session.run_one(&test);
                match result.status {
                    TestStatus::Failed => {
                        let mut text = result.message.unwrap_or_default();
                        if let Some(detail) = result.detail {
                            text.push('\n');
                            text.push_str(&detail);
                        }
                        Err(Failed::from(text))
                    }
                    TestStatus::Passed | TestStatus::Skipped => Ok(()),
                }
            })
            .with_ignored_flag(ignored)
        })
        .collect()
}

/// Ends the process as `sqlgate test` ends on the same error, with the same exit code.
fn exit_with(error: Error) -> ! {
    eprintln!("error: {error}");
    std::process::exit(i32::from(error.exit_code()))
}

/// The `main` of a `harness = false` test target:
/// `sqlgate::harness!("sqlgate.toml")` or `sqlgate::harness!("sqlgate.toml", MySystem::new())`.
/// The path is relative to the crate's manifest folder.
#[macro_export]
macro_rules! harness {
    ($config:expr) => {
        fn main() {
            $crate::harness::Harness::new(
                ::std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join($config),
            )
            .main()
        }
    };
    ($config:expr, $system:expr) => {
        fn main() {
            $crate::harness::Harness::new(
                ::std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join($config),
            )
            .with_system($system)
            .main()
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trials_carry_the_plain_test_names_of_sqlgate_test() {
        let session = Session::open(
            &sqlgate_test_support::repo_root().join("sqlgate.toml"),
            DEFAULT_PROFILE,
            Some(RecordMode::None),
            None,
        )
        .expect("the demo configuration opens");
        let session = Arc::new(session);
        let names: Vec<String> = session.tests().into_iter().map(|test| test.name).collect();
        let trials = trials(&session);
        assert!(!trials.is_empty());
        for (trial, name) in trials.iter().zip(&names) {
            assert_eq!(trial.name(), name);
            assert_eq!(trial.kind(), "", "{name} has a kind nextest would prefix");
        }
        assert!(
            names.contains(&"demo::bookshop::q01".to_string()),
            "{names:?}"
        );
    }
}
