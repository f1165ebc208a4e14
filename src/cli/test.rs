//! `sqlgate test`: every case, mutant and threshold of `sqlgate.toml` as a named test.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::config::RecordMode;
use crate::config::DEFAULT_PROFILE;
use crate::error::InputError;
use crate::gate::run::Selection;
use crate::gate::session::{self, Session, SnapshotAction};
use crate::gate::{SuiteSummary, TestStatus};
use crate::report::terminal::TerminalReporter;
use crate::report::{github, junit};

use crate::error::{EXIT_OK, EXIT_TESTS_FAILED};

#[derive(Args)]
pub struct TestArgs {
    /// Run the tests whose names contain any of these (all tests when none).
    filters: Vec<String>,
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
    /// Keep running after the first failure.
    #[arg(long)]
    no_fail_fast: bool,
    /// Write JUnit XML here.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// When the system is called: `none` replays the cassette only (default under CI), `new`
    /// asks for missing answers (default otherwise), `all` asks again for every case.
    #[arg(long, value_enum)]
    record: Option<RecordMode>,
    /// Accept the run's outcomes as the new snapshots.
    #[arg(long)]
    accept: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ListFormat {
    Human,
    Terse,
}

pub fn run(args: TestArgs) -> Result<u8, InputError> {
    let session = Session::open(&args.config, &args.profile, args.record, None)?;
    let selection = Selection {
        filters: args.filters.clone(),
        exact: args.exact,
        ignored_only: args.ignored,
        include_ignored: args.include_ignored,
    };
    let all = session.tests();
    let selected: Vec<_> = all
        .iter()
        .filter(|t| selection.matches(t))
        .cloned()
        .collect();
    if args.list {
        for test in &selected {
            match args.format {
                ListFormat::Terse => println!("{}: test", test.name),
                ListFormat::Human => println!(
                    "{}{}",
                    test.name,
                    if test.ignored { " (ignored)" } else { "" }
                ),
            }
        }
        return Ok(EXIT_OK);
    }
    let fail_fast = !args.no_fail_fast && session.profile.fail_fast.unwrap_or(true);
    let mut reporter = TerminalReporter::new(format!(
        "system {}, profile {}",
        session.system_name, session.profile_name
    ));
    let report = session.run(&selected, fail_fast, &mut |event| reporter.event(event));
    let whole = session::is_whole_run(&all, &selected);
    let snapshots = session.finish(&report, whole, args.accept)?;

    let mut notes = Vec::new();
    for outcome in &snapshots {
        let path = session
            .snapshot_dir()
            .join(format!("{}.snap", outcome.suite));
        let note = match outcome.action {
            SnapshotAction::Unchanged => continue,
            SnapshotAction::Accepted => format!("snapshot accepted: {}", path.display()),
            SnapshotAction::Pending => format!(
                "snapshot differs: review {}.new with `cargo insta review`, or accept with `sqlgate test --accept`",
                path.display()
            ),
            SnapshotAction::Differs => format!("snapshot differs from {} (CI: nothing pending written)", path.display()),
        };
        notes.push(format!("{note}\n{}", outcome.diff_text.trim_end()));
    }
    reporter.finish(&report.results, &notes);

    let summaries: Vec<SuiteSummary> = session
        .suites
        .iter()
        .zip(&report.metrics)
        .map(|(suite, metrics)| {
            SuiteSummary::from_results(&suite.name, metrics.clone(), &report.results)
        })
        .collect();
    if let Some(path) = args.junit.or_else(|| session.profile.junit.clone()) {
        junit::write(&path, &report.results, &summaries)?;
    }
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY") {
        github::append_step_summary(
            Path::new(&path),
            &github::step_summary(&report.results, &summaries),
        )?;
    }
    if std::env::var_os("GITHUB_ACTIONS").is_some() {
        let workspace = std::env::var_os("GITHUB_WORKSPACE").map(PathBuf::from);
        for annotation in github::annotations(
            &report.results,
            github::DEFAULT_ANNOTATIONS,
            workspace.as_deref(),
        ) {
            println!("{annotation}");
        }
    }
    let failed = report
        .results
        .iter()
        .any(|r| r.status == TestStatus::Failed);
    Ok(if failed { EXIT_TESTS_FAILED } else { EXIT_OK })
}
