//! The one ending of every run (`sqlgate test`, `sqlgate merge`, the `harness!` front end):
//! the run record, the cassette made durable, the snapshots compared, the cache bounded, the
//! closing notes, JUnit and GitHub outputs, and how the run went: passed, or the [`Error`]
//! that decides the exit code.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sqlgate_eval::error::OutputError;
use sqlgate_eval::secrets;
use sqlgate_eval::store::Store;

use crate::gate::partition::Partition;
use crate::gate::plan::SuitePlan;
use crate::gate::record::{RunRecord, SuiteOutcome};
use crate::gate::run::RunReport;
use crate::gate::session::Session;
use crate::gate::{SuiteSummary, TestStatus};
use crate::report::html::{self, EarlierRun, ReportInput, RunFacts};
use crate::report::{family_text, github, junit, plural};
use crate::system::SystemErrorKind;
use crate::Error;

use super::notes;
use super::Reporter;

/// What the run covered, and what it kept: how it must end.
pub struct Ending {
    /// Every runnable test ran: the snapshots are compared.
    pub whole: bool,
    /// Accept the run's outcomes as the new snapshots (its cases were judged against them).
    pub accept: bool,
    /// The shard this run was, if any.
    pub partition: Option<Partition>,
    /// The cache the run read and kept verdicts in.
    pub store: Option<Arc<Store>>,
    /// Tests the filters left out (counted as skipped in the summary).
    pub filtered_out: usize,
    /// The front end's own notes, shown after the run's.
    pub notes: Vec<String>,
}

/// Where a stream of workflow commands goes: stdout may carry JSON events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// What a finished run writes, besides its events.
pub struct Outputs {
    /// JUnit XML here (else the profile's `junit`, if any).
    pub junit: Option<PathBuf>,
    /// Also the profile's `junit`: a run that leaves the report to its runner (nextest's one
    /// test per process) writes none.
    pub profile_junit: bool,
    /// The run record, for `sqlgate merge`.
    pub record_out: Option<PathBuf>,
    /// The job summary and annotations under GitHub Actions: `None` writes neither.
    pub github: Option<Stream>,
    /// The HTML report, if asked for.
    pub html: Option<HtmlOutput>,
}

/// Where the HTML report goes, and what it says besides the run.
pub struct HtmlOutput {
    /// The page's path.
    pub path: PathBuf,
    /// Earlier whole runs' records, oldest first: the gates' history.
    pub history: Vec<PathBuf>,
    /// How the results came to be (`sqlgate test`, merged from N run records...).
    pub origin: String,
}

impl Ending {
    /// Ends the run of `report`: writes everything it leaves and hands the summary and notes to
    /// `reporter`. A run whose tests did not all pass ends in [`Error::TestsFailed`] or
    /// [`Error::SystemUnavailable`], after everything is written.
    pub fn conclude(
        self,
        session: &Session,
        report: &RunReport,
        outputs: &Outputs,
        reporter: &mut dyn Reporter,
    ) -> Result<(), Error> {
        // Read first: a history that cannot be read stops the run before it writes anything.
        let history = match &outputs.html {
            Some(html) => html
                .history
                .iter()
                .map(|path| EarlierRun::read(path))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let summaries = summaries(&session.suites, report);
        let ended = RunFacts::now();
        if let Some(path) = &outputs.record_out {
            // Only a whole run's metrics are the suite's: a shard's or a filtered run's are
            // means over some of its cases.
            let whole = self.whole && self.partition.is_none() && !report.cancelled;
            let record = RunRecord {
                inputs: session.inputs(self.store.as_deref())?,
                partition: self.partition.map(|p| p.to_string()),
                ended,
                commit: RunFacts::commit_from_env(),
                outcome: match whole {
                    true => summaries.iter().map(SuiteOutcome::of).collect(),
                    false => Vec::new(),
                },
                suites: session.case_records(report),
                answers: session.recorded_answers(),
            };
            record.write(path)?;
        }
        let finished = session.finish(report, self.whole, self.accept)?;
        let mut notes: Vec<String> = session.asked().iter().map(notes::asking).collect();
        notes.extend(notes::missing_answers(&report.results, session.replays()));
        notes.extend(notes::replies(&report.results));
        notes.extend(
            session
                .warnings()
                .into_iter()
                .map(|warning| format!("warning: {warning}")),
        );
        if let Some(partition) = self.partition {
            notes.push(format!(
                "partition {partition}: this shard ran its share of the cases and no gate (a \
                 suite gate needs every case); no snapshot was compared; `sqlgate merge` gates \
                 the shards' run records together"
            ));
        }
        if report.cancelled {
            notes.push(notes::stopped(report));
        }
        if let Some(store) = &self.store {
            notes.push(notes::work(&report.work));
            store.evict()?;
            notes.extend(store.notes());
        }
        notes.extend(self.notes);
        if finished.pruned_answers > 0 {
            notes.push(format!(
                "cassette: pruned {} that no case of this run asked for (old questions or \
                 system settings)",
                plural(finished.pruned_answers, "answer")
            ));
        }
        for outcome in &finished.snapshots {
            let path = session
                .snapshot_dir()
                .join(format!("{}.snap", outcome.suite));
            if let Some(note) = notes::snapshot(outcome, &path) {
                notes.push(note);
            }
        }
        notes.extend(summaries.iter().filter_map(notes::against_baseline));
        for summary in summaries.iter().filter(|s| !s.families.is_empty()) {
            notes.push(format!(
                "{}: families against their seeds (drop = A_orig - A_family in points)\n{}",
                summary.name,
                family_text::overview(&summary.families).trim_end()
            ));
        }
        for summary in &summaries {
            if let Some(cost) = summary.cost.describe() {
                notes.push(format!("{}: {cost}", summary.name));
            }
        }
        reporter.finish(&report.results, self.filtered_out, &notes);

        let profile_junit = session
            .profile
            .junit
            .as_ref()
            .filter(|_| outputs.profile_junit);
        if let Some(path) = outputs.junit.as_ref().or(profile_junit) {
            junit::write(path, &report.results, &summaries)?;
        }
        if let Some(stream) = outputs.github {
            write_github_outputs(report, &summaries, stream)?;
        }
        if let Some(html) = &outputs.html {
            let run = RunFacts {
                system: session.system_name().to_string(),
                fingerprints: session
                    .suites
                    .iter()
                    .map(|suite| suite.name.clone())
                    .zip(session.fingerprints())
                    .collect(),
                profile: session.profile_name.clone(),
                commit: RunFacts::commit_from_env(),
                ended,
                sqlgate: sqlgate_eval::store::VERSION.to_string(),
                origin: html.origin.clone(),
            };
            html::write(
                &html.path,
                &ReportInput {
                    suites: &session.suites,
                    report,
                    summaries: &summaries,
                    run: &run,
                    history: &history,
                },
            )?;
        }
        outcome(report)
    }
}

/// Each suite's metrics, gates and families, as the reports show them.
pub fn summaries(suites: &[SuitePlan], report: &RunReport) -> Vec<SuiteSummary> {
    suites
        .iter()
        .zip(&report.metrics)
        .map(|(suite, metrics)| {
            SuiteSummary::from_results(&suite.name, metrics.values.clone(), &report.results)
                .with_families(metrics.families.clone())
                .with_against_baseline(metrics.against_baseline)
                .with_cost(metrics.cost.clone())
        })
        .collect()
}

/// Under GitHub Actions: the job summary, and annotations on the worst regressions.
fn write_github_outputs(
    report: &RunReport,
    summaries: &[SuiteSummary],
    stream: Stream,
) -> Result<(), OutputError> {
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY") {
        github::append_step_summary(
            Path::new(&path),
            &github::step_summary(&report.results, summaries),
        )?;
    }
    if std::env::var_os("GITHUB_ACTIONS").is_some() {
        let workspace = std::env::var_os("GITHUB_WORKSPACE").map(PathBuf::from);
        for annotation in github::annotations(
            &report.results,
            github::DEFAULT_ANNOTATIONS,
            workspace.as_deref(),
        ) {
            let annotation = secrets::redact(&annotation);
            // The runner reads workflow commands on either stream.
            match stream {
                Stream::Stdout => println!("{annotation}"),
                Stream::Stderr => eprintln!("{annotation}"),
            }
        }
    }
    Ok(())
}

/// A system that could not be reached says more than the failures it caused.
fn outcome(report: &RunReport) -> Result<(), Error> {
    let count = |keep: &dyn Fn(&crate::gate::TestResult) -> bool| {
        report.results.iter().filter(|r| keep(r)).count()
    };
    let unavailable = count(&|r| r.system_error == Some(SystemErrorKind::Unavailable));
    let failed = count(&|r| r.status == TestStatus::Failed);
    if unavailable > 0 {
        Err(Error::SystemUnavailable(unavailable))
    } else if failed > 0 {
        Err(Error::TestsFailed(failed))
    } else {
        Ok(())
    }
}
