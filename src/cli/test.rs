//! `sqlgate test`: every case, mutant and threshold of `sqlgate.toml` as a named test.

use super::value_enums::RecordArg;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::console::libtest_json::LibtestJsonReporter;
use crate::console::progress::AnswerMeter;
use crate::console::terminal::{ColorChoice, TerminalReporter};
use sqlgate::config::{Config, RecordMode, DEFAULT_PROFILE};
use sqlgate::gate::partition::Partition;
use sqlgate::gate::plan::TestDesc;
use sqlgate::gate::run::Event;
use sqlgate::gate::session::Session;
use sqlgate::gate::TestResult;
use sqlgate::report::{github, plural};
use sqlgate::runner::ending::Stream;
use sqlgate::runner::{self, CacheSettings, HtmlOutput, Outputs, Selection, TestRunnerBuilder};
use sqlgate_eval::exec::memory::{self, MaxMemory};

use sqlgate::Error;

#[derive(Args)]
pub struct TestArgs {
    /// Run the tests whose names contain any of these (all tests when none).
    filters: Vec<String>,
    /// The configuration: suites, systems, thresholds, profiles.
    #[arg(long, default_value = "sqlgate.toml")]
    config: PathBuf,
    /// The deployment profile (`[profile.NAME]`): thresholds, penalty, system.
    #[arg(long, default_value = DEFAULT_PROFILE)]
    profile: String,
    /// List the tests instead of running them.
    #[arg(long)]
    list: bool,
    /// With `--list`: `terse` prints `<name>: test` lines, as `cargo test -- --list --format terse`.
    #[arg(long, value_enum, default_value = "human")]
    format: ListFormat,
    /// Filters match whole test names.
    #[arg(long)]
    exact: bool,
    /// Run only the ignored tests.
    #[arg(long)]
    ignored: bool,
    /// Run the ignored tests too.
    #[arg(long)]
    include_ignored: bool,
    /// Stop at the first failing test (a quick local check; the snapshot is then not compared
    /// and the gates are not evaluated).
    #[arg(long, conflicts_with_all = ["no_fail_fast", "max_fail"])]
    fail_fast: bool,
    /// Run every test whatever fails (the default, unless the profile sets `fail_fast`).
    #[arg(long, conflicts_with = "max_fail")]
    no_fail_fast: bool,
    /// Stop once this many tests have failed.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_fail: Option<u64>,
    /// Write JUnit XML here.
    #[arg(long)]
    junit: Option<PathBuf>,
    #[command(flatten)]
    html: HtmlArgs,
    /// When the system is called: `none` replays the cassette only (default under CI), `new`
    /// asks for missing answers (default otherwise), `all` asks again for every case.
    #[arg(long, value_enum)]
    record: Option<RecordArg>,
    /// Accept the run's outcomes as the new snapshots.
    #[arg(long)]
    accept: bool,
    /// Run one CI runner's share of the cases: `count:K/N` (round-robin in listing order) or
    /// `hash:K/N` (by a stable hash of the name), as nextest. A shard evaluates no gate.
    #[arg(long)]
    partition: Option<Partition>,
    /// `human` lines, or `libtest-json`: one JSON event per test and a closing summary on
    /// stdout, as libtest's and nextest's JSON output (notes go to stderr).
    #[arg(long, value_enum, default_value = "human")]
    message_format: MessageFormat,
    /// Color the output: `auto` (a terminal without `NO_COLOR`), `always` or `never`.
    #[arg(long, value_enum, default_value = "auto")]
    color: ColorChoice,
    /// Write the run record here: every case's verdict, metrics, answer key and time, and the
    /// inputs' fingerprints, for `sqlgate merge` (JSON).
    #[arg(long, value_name = "FILE")]
    record_out: Option<PathBuf>,
    /// Memory budget of the queries in MiB: SQLite's heap, the results being read and what the
    /// allocator adds, for all queries running at once (default: `max_memory` of the
    /// configuration, else 4096; see docs/reliability.md#memory).
    #[arg(long, value_name = "MIB")]
    max_memory: Option<MaxMemory>,
    #[command(flatten)]
    cache: CacheArgs,
}

/// The HTML report.
#[derive(Args)]
pub(crate) struct HtmlArgs {
    /// Write the HTML report here: one self-contained page (docs/report.md).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Earlier whole runs' records (`--record-out`), oldest first: the gates' history in the
    /// HTML report.
    #[arg(long, value_name = "RECORD", num_args = 1.., requires = "html")]
    history: Vec<PathBuf>,
}

impl HtmlArgs {
    /// The report to write, if asked for; `origin` says how the results came to be.
    pub(crate) fn output(self, origin: String) -> Option<HtmlOutput> {
        self.html.map(|path| HtmlOutput {
            path,
            history: self.history,
            origin,
        })
    }
}

/// Where earlier runs' query results and verdicts are kept.
#[derive(Args)]
pub(crate) struct CacheArgs {
    /// Execute everything again: read nothing from the cache and write nothing to it.
    #[arg(long)]
    no_cache: bool,
    /// The cache folder (default: `.sqlgate/cache` beside the configuration).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// The cache's size bound in MiB; the least recently used entries go first.
    #[arg(long, value_name = "MIB", default_value_t = CacheSettings::DEFAULT_MIB)]
    cache_size: u64,
}

impl CacheArgs {
    /// The run's cache, unless `--no-cache`.
    pub(crate) fn settings(&self, config: &Config) -> Option<CacheSettings> {
        (!self.no_cache)
            .then(|| CacheSettings::new(config, self.cache_dir.as_deref(), self.cache_size))
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MessageFormat {
    Human,
    LibtestJson,
}

/// Where the run's events go.
pub(crate) enum Reporter {
    Terminal(TerminalReporter),
    LibtestJson(LibtestJsonReporter),
}

impl Reporter {
    pub(crate) fn new(format: MessageFormat, session: &Session, color: ColorChoice) -> Reporter {
        match format {
            MessageFormat::Human => Reporter::Terminal(TerminalReporter::new(
                format!(
                    "system {}, profile {}",
                    session.system_name(),
                    session.profile_name
                ),
                color,
            )),
            MessageFormat::LibtestJson => Reporter::LibtestJson(LibtestJsonReporter::default()),
        }
    }

    fn answer_meter(&self) -> AnswerMeter {
        match self {
            Reporter::Terminal(reporter) => reporter.answer_meter(),
            // Plain lines on stderr: stdout carries the JSON events.
            Reporter::LibtestJson(_) => AnswerMeter::new(None),
        }
    }

    /// Where GitHub's workflow commands go: stdout may carry JSON events.
    pub(crate) fn command_stream(&self) -> Stream {
        match self {
            Reporter::Terminal(_) => Stream::Stdout,
            Reporter::LibtestJson(_) => Stream::Stderr,
        }
    }
}

impl runner::Reporter for Reporter {
    fn event(&mut self, event: Event<'_>) {
        match self {
            Reporter::Terminal(reporter) => reporter.event(event),
            Reporter::LibtestJson(reporter) => reporter.event(event),
        }
    }

    fn finish(&mut self, results: &[TestResult], filtered_out: usize, notes: &[String]) {
        match self {
            Reporter::Terminal(reporter) => reporter.finish(results, filtered_out, notes),
            Reporter::LibtestJson(reporter) => reporter.finish(results, filtered_out, notes),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ListFormat {
    Human,
    Terse,
}

pub fn run(args: TestArgs) -> Result<(), Error> {
    let mut session = Session::open(
        &args.config,
        &args.profile,
        args.record.map(RecordMode::from),
        None,
    )?;
    memory::set_max_memory(args.max_memory.unwrap_or(session.config.max_memory));
    let selection = Selection {
        filters: args.filters.clone(),
        exact: args.exact,
        ignored_only: args.ignored,
        include_ignored: args.include_ignored,
    };
    let max_fail = match (args.max_fail, args.fail_fast, args.no_fail_fast) {
        (Some(limit), _, _) => Some(usize::try_from(limit).unwrap_or(usize::MAX)),
        (None, true, _) => Some(1),
        (None, false, true) => None,
        (None, false, false) => session.profile.fail_fast.unwrap_or(false).then_some(1),
    };
    let mut reporter = Reporter::new(args.message_format, &session, args.color);
    let meter = reporter.answer_meter();
    session.show_answer_progress(Box::new(move |progress| meter.update(progress)));
    let runner = TestRunnerBuilder::new()
        .selection(selection.clone())
        .partition(args.partition)
        .max_fail(max_fail)
        .cache(args.cache.settings(&session.config))
        .accept(args.accept)
        .build(&session);
    if args.list {
        // Like libtest, `--list` shows ignored tests too (marked), unless `--ignored` asks for
        // only those.
        let listed: Vec<&TestDesc> = match args.partition {
            Some(_) => runner.selected().iter().collect(),
            None => runner
                .all()
                .iter()
                .filter(|t| selection.matches_name(t) && (!args.ignored || t.ignored))
                .collect(),
        };
        for test in listed {
            match args.format {
                ListFormat::Terse => println!("{}: test", test.name),
                ListFormat::Human => println!(
                    "{}{}",
                    test.name,
                    if test.ignored { " (ignored)" } else { "" }
                ),
            }
        }
        return Ok(());
    }
    if runner.selected().is_empty() {
        let why = match args.partition {
            Some(partition) if runner.unsharded() > 0 => format!(
                "partition {partition} holds none of the {} selected tests",
                runner.unsharded()
            ),
            _ => nothing_selected(runner.all(), &selection),
        };
        return Err(Error::NoTestsRun(why));
    }
    let audits = super::audit::suite_lines(&session)?;
    for line in &audits {
        match reporter.command_stream() {
            Stream::Stdout => println!("{line}"),
            Stream::Stderr => eprintln!("{line}"),
        }
    }
    let report = runner.run(&mut |event| runner::Reporter::event(&mut reporter, event));
    let origin = match args.partition {
        Some(partition) => format!("sqlgate test, partition {partition} (its share of the cases)"),
        None => "sqlgate test".to_string(),
    };
    let outputs = Outputs {
        junit: args.junit,
        profile_junit: true,
        record_out: args.record_out,
        github: Some(reporter.command_stream()),
        html: args.html.output(origin),
    };
    let outcome = runner
        .ending()
        .conclude(&session, &report, &outputs, &mut reporter);
    append_audits_to_step_summary(&audits);
    // Freeing every result and case one by one takes longer than the process's exit does;
    // everything the run writes is written and flushed by now.
    std::mem::forget(report);
    std::mem::forget(runner);
    std::mem::forget(session);
    outcome
}

/// The suites' audit lines in the GitHub job summary, after the run's; information only, so a
/// summary that cannot be written is a warning, not a failure.
fn append_audits_to_step_summary(audits: &[String]) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY") else {
        return;
    };
    if audits.is_empty() {
        return;
    }
    let items: Vec<String> = audits.iter().map(|line| format!("- {line}\n")).collect();
    let markdown = format!("\n### Gold audit\n\n{}", items.concat());
    if let Err(error) = github::append_step_summary(std::path::Path::new(&path), &markdown) {
        eprintln!("warning: {error}");
    }
}

/// Why a selection runs nothing, and what would run something.
fn nothing_selected(all: &[TestDesc], selection: &Selection) -> String {
    let named = all.iter().filter(|t| selection.matches_name(t)).count();
    if all.is_empty() {
        "the configuration has no tests".to_string()
    } else if named == 0 {
        format!(
            "no test name {} {:?} (`sqlgate test --list` shows them)",
            if selection.exact {
                "equals"
            } else {
                "contains"
            },
            selection.filters
        )
    } else {
        format!(
            "the {} the filters name {} ignored: add --include-ignored",
            plural(named, "test"),
            if named == 1 { "is" } else { "are" }
        )
    }
}
