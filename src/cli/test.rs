//! `sqlgate test`: every case, mutant and threshold of `sqlgate.toml` as a named test.

use super::value_enums::RecordArg;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use clap::{Args, ValueEnum};

use crate::report::family_text;
use crate::report::libtest_json::LibtestJsonReporter;
use crate::report::progress::AnswerMeter;
use crate::report::terminal::{ColorChoice, TerminalReporter};
use crate::report::{github, junit, plural};
use sqlgate::config::RecordMode;
use sqlgate::config::DEFAULT_PROFILE;
use sqlgate::gate::partition::Partition;
use sqlgate::gate::plan::{TestDesc, TestKind};
use sqlgate::gate::record::RunRecord;
use sqlgate::gate::run::{self, Event, RunReport, Selection, Work};
use sqlgate::gate::session::{self, Session, SnapshotAction};
use sqlgate::gate::{SuiteSummary, TestResult, TestStatus};
use sqlgate::system::SystemErrorKind;
use sqlgate_eval::exec::memory::{self, MaxMemory};
use sqlgate_eval::store::{self, Store};

use sqlgate::Error;
use sqlgate_llm::throttle::Asked;

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
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    cache_size: u64,
}

impl CacheArgs {
    /// Sets up the session's cache, unless `--no-cache`.
    pub(crate) fn apply(&self, session: &mut Session) {
        if self.no_cache {
            return;
        }
        let dir = match &self.cache_dir {
            Some(dir) => dir.clone(),
            None => session.config.resolve(Path::new(".sqlgate/cache")),
        };
        let max_bytes = self.cache_size.saturating_mul(1 << 20);
        session.use_cache(Arc::new(Store::open(&dir, max_bytes, store::VERSION)));
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
                    session.system_name, session.profile_name
                ),
                color,
            )),
            MessageFormat::LibtestJson => Reporter::LibtestJson(LibtestJsonReporter::default()),
        }
    }

    pub(crate) fn event(&mut self, event: Event<'_>) {
        match self {
            Reporter::Terminal(reporter) => reporter.event(event),
            Reporter::LibtestJson(reporter) => reporter.event(event),
        }
    }

    fn answer_meter(&self) -> AnswerMeter {
        match self {
            Reporter::Terminal(reporter) => reporter.answer_meter(),
            // Plain lines on stderr: stdout carries the JSON events.
            Reporter::LibtestJson(_) => AnswerMeter::new(None),
        }
    }

    pub(crate) fn finish(&mut self, results: &[TestResult], filtered_out: usize, notes: &[String]) {
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
    args.cache.apply(&mut session);
    let selection = Selection {
        filters: args.filters.clone(),
        exact: args.exact,
        ignored_only: args.ignored,
        include_ignored: args.include_ignored,
    };
    let all = session.tests();
    let mut selected: Vec<_> = all
        .iter()
        .filter(|t| selection.matches(t))
        .cloned()
        .collect();
    let unsharded = selected.len();
    if let Some(partition) = args.partition {
        selected = shard(selected, partition);
    }
    if args.list {
        // Like libtest, `--list` shows ignored tests too (marked), unless `--ignored` asks for
        // only those.
        let listed: Vec<&TestDesc> = match args.partition {
            Some(_) => selected.iter().collect(),
            None => all
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
    if selected.is_empty() {
        let why = match args.partition {
            Some(partition) if unsharded > 0 => {
                format!("partition {partition} holds none of the {unsharded} selected tests")
            }
            _ => nothing_selected(&all, &selection),
        };
        return Err(Error::NoTestsRun(why));
    }
    // Named by the filters but `ignore = true`: reported as skipped, as libtest and nextest do.
    let ignored: Vec<_> = all
        .iter()
        .filter(|t| t.ignored && selection.matches_name(t) && !selection.matches(t))
        .collect();
    let filtered_out = all.len() - selected.len() - ignored.len();
    let max_fail = match (args.max_fail, args.fail_fast, args.no_fail_fast) {
        (Some(limit), _, _) => Some(usize::try_from(limit).unwrap_or(usize::MAX)),
        (None, true, _) => Some(1),
        (None, false, true) => None,
        (None, false, false) => session.profile.fail_fast.unwrap_or(false).then_some(1),
    };
    let mut reporter = Reporter::new(args.message_format, &session, args.color);
    let meter = reporter.answer_meter();
    session.show_answer_progress(Box::new(move |progress| meter.update(progress)));
    let mut report = session.run(&selected, max_fail, &mut |event| reporter.event(event));
    report.results.extend(
        ignored
            .iter()
            .map(|t| run::ignored(&session.suites[t.suite].name, t)),
    );
    run::sort_in_plan_order(&mut report.results, &all);
    if let Some(path) = &args.record_out {
        let record = RunRecord {
            inputs: session.inputs()?,
            partition: args.partition.map(|p| p.to_string()),
            suites: session.case_records(&report),
            answers: session.recorded_answers(),
        };
        record.write(path)?;
    }
    let mut notes = Vec::new();
    if let Some(partition) = args.partition {
        notes.push(format!(
            "partition {partition}: this shard ran its share of the cases and no gate (a suite \
             gate needs every case); no snapshot was compared; `sqlgate merge` gates the shards' \
             run records together"
        ));
    }
    if report.cancelled {
        notes.push(stopped_note(&report));
    }
    if !args.cache.no_cache {
        notes.push(work_note(&report.work));
    }
    let outputs = Outputs {
        whole: session::is_whole_run(&all, &selected),
        accept: args.accept,
        junit: args.junit,
        message_format: args.message_format,
        filtered_out,
    };
    let code = conclude(&session, &report, &outputs, &mut reporter, notes);
    // Freeing every result and case one by one takes longer than the process's exit does;
    // everything the run writes is written and flushed by now.
    std::mem::forget(report);
    std::mem::forget(session);
    code
}

/// What a finished run writes, besides its events.
pub(crate) struct Outputs {
    /// Every runnable test ran: the snapshots are compared.
    pub whole: bool,
    pub accept: bool,
    pub junit: Option<PathBuf>,
    pub message_format: MessageFormat,
    pub filtered_out: usize,
}

/// Ends a run (or a merge of shards): snapshots, summary, JUnit, GitHub outputs; the exit code.
pub(crate) fn conclude(
    session: &Session,
    report: &RunReport,
    outputs: &Outputs,
    reporter: &mut Reporter,
    extra_notes: Vec<String>,
) -> Result<(), Error> {
    let finished = session.finish(report, outputs.whole, outputs.accept)?;
    let mut notes: Vec<String> = session.asked().iter().map(asking_note).collect();
    notes.extend(missing_answer_notes(&report.results));
    notes.extend(reply_notes(&report.results));
    notes.extend(
        session
            .warnings()
            .into_iter()
            .map(|warning| format!("warning: {warning}")),
    );
    notes.extend(extra_notes);
    notes.extend(session.finish_cache()?);
    if finished.pruned_answers > 0 {
        notes.push(format!(
            "cassette: pruned {} that no case of this run asked for (old questions or system \
             settings)",
            plural(finished.pruned_answers, "answer")
        ));
    }
    for outcome in &finished.snapshots {
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
    let summaries: Vec<SuiteSummary> = session
        .suites
        .iter()
        .zip(&report.metrics)
        .map(|(suite, metrics)| {
            SuiteSummary::from_results(&suite.name, metrics.values.clone(), &report.results)
                .with_families(metrics.families.clone())
        })
        .collect();
    for summary in summaries.iter().filter(|s| !s.families.is_empty()) {
        notes.push(format!(
            "{}: families against their seeds (drop = A_orig - A_family in points)\n{}",
            summary.name,
            family_text::overview(&summary.families).trim_end()
        ));
    }
    reporter.finish(&report.results, outputs.filtered_out, &notes);

    if let Some(path) = outputs.junit.as_ref().or(session.profile.junit.as_ref()) {
        junit::write(path, &report.results, &summaries)?;
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
            // The runner reads workflow commands on either stream; stdout may be JSON events.
            match outputs.message_format {
                MessageFormat::Human => println!("{annotation}"),
                MessageFormat::LibtestJson => eprintln!("{annotation}"),
            }
        }
    }
    let failed = report
        .results
        .iter()
        .filter(|r| r.status == TestStatus::Failed)
        .count();
    let unavailable = report
        .results
        .iter()
        .filter(|r| {
            r.properties
                .get("system_error_kind")
                .is_some_and(|kind| kind == "unavailable")
        })
        .count();
    if unavailable > 0 {
        Err(Error::SystemUnavailable(unavailable))
    } else if failed > 0 {
        Err(Error::TestsFailed(failed))
    } else {
        Ok(())
    }
}

/// `asked 39 questions in 43 attempts: concurrency settled at 2 of 4 (4 timeouts while
/// adapting)`, and why the system was asked nothing more when it was stopped.
fn asking_note(asked: &Asked) -> String {
    let stopped = asked.stopped.as_deref().unwrap_or_default();
    if asked.questions == 0 {
        return format!("the system was not asked: {stopped}");
    }
    let mut note = format!("asked {}", plural(asked.questions, "question"));
    if asked.attempts > asked.questions {
        note.push_str(&format!(" in {} attempts", asked.attempts));
    }
    let mut overloads = Vec::new();
    if asked.timeouts > 0 {
        overloads.push(plural(asked.timeouts, "timeout"));
    }
    if asked.busy > 0 {
        overloads.push(format!("{} (429, 503)", plural(asked.busy, "busy answer")));
    }
    let overloads = overloads.join(", ");
    if overloads.is_empty() {
        note.push_str(&format!(": concurrency {}", asked.concurrency));
    } else if asked.concurrency == 1 {
        note.push_str(&format!(": concurrency 1 ({overloads})"));
    } else {
        note.push_str(&format!(
            ": concurrency settled at {} of {} ({overloads} while adapting)",
            asked.settled, asked.concurrency
        ));
    }
    if !stopped.is_empty() {
        note.push_str(&format!("; then stopped asking: {stopped}"));
    }
    note
}

/// How much of the run's work was found done: reused verdicts and cached results.
fn work_note(work: &Work) -> String {
    format!(
        "reused {} of {} (inputs unchanged since an earlier run); {} distinct queries: {} \
         executed, {} results from the cache",
        work.reused,
        plural(work.cases, "case verdict"),
        work.distinct_queries,
        work.executed,
        work.from_disk
    )
}

/// Says what a run stopped by `--fail-fast`/`--max-fail` left out.
pub(crate) fn stopped_note(report: &sqlgate::gate::run::RunReport) -> String {
    let not_run = report
        .results
        .iter()
        .filter(|r| r.status == TestStatus::Skipped)
        .count();
    format!(
        "stopped after {} failing (--fail-fast/--max-fail): {not_run} not run, suite metrics and \
         gates not evaluated, snapshots not compared; run without it to see every result",
        plural(report.failed(), "test")
    )
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

/// This shard's cases, in order: gates need every case, so no shard runs them.
fn shard(selected: Vec<TestDesc>, partition: Partition) -> Vec<TestDesc> {
    selected
        .into_iter()
        .filter(|test| matches!(test.kind, TestKind::Case(_)))
        .enumerate()
        .filter(|(position, test)| partition.contains(*position, &test.name))
        .map(|(_, test)| test)
        .collect()
}

/// Says how many metrics could not be computed and how many replies were cut short: both
/// lower the numbers without the system having answered worse.
fn reply_notes(results: &[TestResult]) -> Vec<String> {
    let mut notes = Vec::new();
    let mut metric_errors: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    for result in results {
        for (property, reason) in &result.properties {
            if let Some(metric) = property.strip_suffix("_error") {
                let entry = metric_errors.entry(metric).or_insert((0, reason));
                entry.0 += 1;
            }
        }
    }
    for (metric, (count, first)) in metric_errors {
        notes.push(format!(
            "warning: {metric} could not be computed for {}, scored 0; first: {first}",
            plural(count, "case")
        ));
    }
    // Every truncated reply counts, whatever it was judged: garbage too (no SQL was found in
    // what the model wrote before the limit).
    let cases: Vec<&TestResult> = results
        .iter()
        .filter(|r| matches!(r.kind, TestKind::Case(_)) && r.status != TestStatus::Skipped)
        .collect();
    let truncated: Vec<&TestResult> = cases
        .iter()
        .copied()
        .filter(|r| r.properties.contains_key("reply_truncated"))
        .collect();
    if !truncated.is_empty() {
        let garbage = truncated
            .iter()
            .filter(|r| {
                r.properties.get("system_error_kind").map(String::as_str)
                    == Some(SystemErrorKind::Garbage.as_str())
            })
            .count();
        let judged_garbage = match garbage {
            0 => String::new(),
            n => format!(", {n} judged garbage (no SQL in the reply)"),
        };
        notes.push(format!(
            "warning: the system's reply was cut short by its token limit (finish_reason \
             `length`) in {} of {} ({:.0}%){judged_garbage}: their SQL is missing or may be \
             incomplete; raise `max_tokens`",
            truncated.len(),
            plural(cases.len(), "case"),
            100.0 * truncated.len() as f64 / cases.len() as f64
        ));
    }
    notes
}

/// Says plainly how many cases had no answer at all, and what to do about it.
fn missing_answer_notes(results: &[TestResult]) -> Vec<String> {
    let count = |kinds: &[&str]| {
        results
            .iter()
            .filter(|r| {
                r.properties
                    .get("system_error_kind")
                    .is_some_and(|kind| kinds.contains(&kind.as_str()))
            })
            .count()
    };
    let mut notes = Vec::new();
    let not_recorded = count(&["not_recorded"]);
    if not_recorded > 0 {
        let verb = if not_recorded == 1 { "is" } else { "are" };
        notes.push(format!(
            "{} {verb} not in the cassette (the system's fingerprint changed: its model, prompt, \
             settings or passed-through environment?); record with `sqlgate test --record new`",
            plural(not_recorded, "answer")
        ));
    }
    let not_asked = count(&["unavailable"]);
    if not_asked > 0 {
        let verb = if not_asked == 1 { "was" } else { "were" };
        notes.push(format!(
            "{} {verb} not asked: the system could not be reached (system_error: unavailable); \
             once it is back, `sqlgate test --record new` asks only the missing ones",
            plural(not_asked, "case")
        ));
    }
    let unreachable = count(&["timeout", "http", "transport"]);
    if unreachable > 0 {
        notes.push(format!(
            "{} got no answer from the system (timeouts, HTTP or connection failures after \
             retries): they fail whatever the snapshot says",
            plural(unreachable, "case")
        ));
    }
    notes
}
