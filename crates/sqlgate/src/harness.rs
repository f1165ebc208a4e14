//! The libtest-mimic front end: `cargo test --test text2sql` and `cargo nextest run` list and
//! run the same named tests as `sqlgate test`, with the same verdicts, through the same runner
//! and ending: the cache and unchanged cases' verdicts are reused, the cassette is made durable,
//! a whole run compares the snapshots.
//!
//! libtest-mimic's arguments select the tests (`--exact NAME`, `--skip`, `--ignored`...), which
//! run together before libtest-mimic reports each verdict; so nextest's one test per process
//! evaluates only the case asked for (a gate, its whole suite). Plug your own system in with
//! [`harness!`](crate::harness!).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use libtest_mimic::{Arguments, Conclusion, Failed, Trial};

use crate::config::DEFAULT_PROFILE;

use crate::config::RecordMode;
use crate::gate::plan::TestDesc;
use crate::gate::run::Event;
use crate::gate::session::Session;
use crate::gate::{TestResult, TestStatus};
use crate::runner::ending::Stream;
use crate::runner::{CacheSettings, Chosen, Outputs, Reporter, TestRunnerBuilder};
use crate::system::System;
use crate::Error;

/// What the harness runs: a configuration, a profile, and optionally a Rust system.
pub struct Harness {
    /// `$SQLGATE_CONFIG`, else the path given.
    pub config: PathBuf,
    /// `$SQLGATE_PROFILE`, else `default`.
    pub profile: String,
    /// A Rust system answering instead of the configured `[[system]]`.
    pub system: Option<Arc<dyn System>>,
}

impl Harness {
    /// The harness of the configuration at `config` (`$SQLGATE_CONFIG` overrides it).
    pub fn new(config: impl Into<PathBuf>) -> Harness {
        Harness {
            config: std::env::var_os("SQLGATE_CONFIG").map_or_else(|| config.into(), PathBuf::from),
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
        match self.run(&Arguments::from_args()) {
            Ok(conclusion) => conclusion.exit(),
            Err(error) => exit_with(error),
        }
    }

    /// Lists or runs the tests `args` select. A run ends as `sqlgate test` ends, but leaves
    /// JUnit and GitHub outputs to cargo or nextest unless it ran every test.
    pub fn run(self, args: &Arguments) -> Result<Conclusion, Error> {
        let record = match std::env::var("SQLGATE_RECORD") {
            Ok(mode) => Some(
                mode.parse::<RecordMode>()
                    .map_err(|error| Error::Usage(format!("SQLGATE_RECORD {error}")))?,
            ),
            Err(_) => None,
        };
        let session = Session::open(&self.config, &self.profile, record, self.system)?;
        if args.list {
            return Ok(libtest_mimic::run(
                args,
                trials(&session.tests(), &HashMap::new()),
            ));
        }
        sqlgate_eval::exec::memory::set_max_memory(session.config.max_memory);
        let no_cache = std::env::var_os("SQLGATE_NO_CACHE").is_some_and(|v| !v.is_empty());
        let cache = (!no_cache)
            .then(|| CacheSettings::new(&session.config, None, CacheSettings::DEFAULT_MIB));
        let runner = TestRunnerBuilder::new()
            .choose(|test| libtest_choice(args, test))
            .cache(cache)
            .build(&session);
        let report = runner.run(&mut |_| {});
        let results: HashMap<String, TestResult> = report
            .results
            .iter()
            .map(|result| (result.name.clone(), result.clone()))
            .collect();
        let conclusion = libtest_mimic::run(args, trials(runner.all(), &results));
        let ending = runner.ending();
        // A process running part of the plan (nextest runs one test per process) leaves the
        // run's reports to its runner.
        let outputs = Outputs {
            junit: None,
            profile_junit: ending.whole,
            record_out: None,
            github: ending.whole.then_some(Stream::Stdout),
            html: None,
        };
        match ending.conclude(&session, &report, &outputs, &mut NotesOnStderr) {
            // libtest-mimic has reported the failures, and exits as libtest does.
            Ok(()) | Err(Error::TestsFailed(_)) => Ok(conclusion),
            Err(error) => Err(error),
        }
    }
}

/// What libtest-mimic's arguments make of a test, by libtest-mimic's own rules.
fn libtest_choice(args: &Arguments, test: &TestDesc) -> Chosen {
    let probe = Trial::test(test.name.clone(), || Ok(())).with_ignored_flag(test.ignored);
    if args.is_filtered_out(&probe) {
        Chosen::FilteredOut
    } else if args.is_ignored(&probe) {
        Chosen::Ignored
    } else {
        Chosen::Run
    }
}

/// libtest-mimic prints the verdicts; the run's notes (cache, snapshots, warnings) follow its
/// summary on stderr.
struct NotesOnStderr;

impl Reporter for NotesOnStderr {
    fn event(&mut self, _: Event<'_>) {}

    fn finish(&mut self, _: &[TestResult], _: usize, notes: &[String]) {
        for note in notes {
            eprintln!("\n{note}");
        }
    }
}

/// One trial per test, named exactly as `sqlgate test` names it: no libtest "kind", which
/// nextest would show as a `[kind] ` prefix that `-E 'test(=NAME)'` filters then miss. Each
/// reports its verdict in `results`.
fn trials(tests: &[TestDesc], results: &HashMap<String, TestResult>) -> Vec<Trial> {
    tests
        .iter()
        .map(|test| {
            let result = results.get(&test.name).cloned();
            Trial::test(test.name.clone(), move || match result {
                Some(result) if result.status == TestStatus::Failed => {
                    let mut text = result.message.unwrap_or_default();
                    if let Some(detail) = result.detail {
                        text.push('\n');
                        text.push_str(&detail);
                    }
                    Err(Failed::from(text))
                }
                Some(_) => Ok(()),
                None => Err(Failed::from(
                    "not run: the run selected another set of tests",
                )),
            })
            .with_ignored_flag(test.ignored)
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
        let tests = session.tests();
        let names: Vec<String> = tests.iter().map(|test| test.name.clone()).collect();
        let trials = trials(&tests, &HashMap::new());
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
