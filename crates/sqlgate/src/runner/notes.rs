//! The closing notes of a run: what asking the system took, the work found done, cases
//! without answers, replies cut short.

use std::collections::BTreeMap;
use std::path::Path;

use sqlgate_llm::throttle::Asked;

use crate::gate::accepted::{SnapshotAction, SnapshotOutcome};
use crate::gate::plan::TestKind;
use crate::gate::run::{RunReport, Work};
use crate::gate::{SuiteSummary, TestResult, TestStatus};
use crate::report::plural;
use crate::system::SystemErrorKind;

/// `asked 39 questions in 43 attempts: concurrency settled at 2 of 4 (4 timeouts while
/// adapting)`, and why the system was asked nothing more when it was stopped.
pub(super) fn asking(asked: &Asked) -> String {
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
pub(super) fn work(work: &Work) -> String {
    let shared = match work.shared_in_run {
        0 => String::new(),
        n => format!(", {n} shared within this run"),
    };
    format!(
        "reused {} of {} (inputs unchanged since an earlier run); {} distinct queries: {} \
         executed{shared}, {} results from an earlier run's cache",
        work.reused,
        plural(work.cases, "case verdict"),
        work.distinct_queries,
        work.executed,
        work.from_disk
    )
}

/// Says what a run stopped by `--fail-fast`/`--max-fail` left out.
pub(super) fn stopped(report: &RunReport) -> String {
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

/// Says how many metrics could not be computed and how many replies were cut short: both
/// lower the numbers without the system having answered worse.
pub(super) fn replies(results: &[TestResult]) -> Vec<String> {
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
        .filter(|r| r.reply_truncated)
        .collect();
    if !truncated.is_empty() {
        let garbage = truncated
            .iter()
            .filter(|r| r.system_error == Some(SystemErrorKind::Garbage))
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

/// Says plainly how many cases had no answer at all, and what to do about it. A replay
/// system (`replays`) answers from its predictions file, not a cassette.
pub(super) fn missing_answers(results: &[TestResult], replays: bool) -> Vec<String> {
    let count = |kinds: &[SystemErrorKind]| {
        results
            .iter()
            .filter(|r| r.system_error.is_some_and(|kind| kinds.contains(&kind)))
            .count()
    };
    let mut notes = Vec::new();
    let not_recorded = count(&[SystemErrorKind::NotRecorded]);
    if not_recorded > 0 {
        let answers = plural(not_recorded, "answer");
        let verb = if not_recorded == 1 { "is" } else { "are" };
        notes.push(if replays {
            format!(
                "{answers} {verb} missing from the predictions file: those cases fail; add \
                 their predictions to the file"
            )
        } else {
            format!(
                "{answers} {verb} not in the cassette (the system's fingerprint changed: its \
                 model, prompt, settings or passed-through environment?); record with \
                 `sqlgate test --record new`"
            )
        });
    }
    let not_asked = count(&[SystemErrorKind::Unavailable]);
    if not_asked > 0 {
        let verb = if not_asked == 1 { "was" } else { "were" };
        notes.push(format!(
            "{} {verb} not asked: the system could not be reached (system_error: unavailable); \
             once it is back, `sqlgate test --record new` asks only the missing ones",
            plural(not_asked, "case")
        ));
    }
    let unreachable = count(&[
        SystemErrorKind::Timeout,
        SystemErrorKind::Http,
        SystemErrorKind::Transport,
    ]);
    if unreachable > 0 {
        notes.push(format!(
            "{} got no answer from the system (timeouts, HTTP or connection failures after \
             retries): they fail whatever the snapshot says",
            plural(unreachable, "case")
        ));
    }
    notes
}

/// What became of a suite's snapshot `path`, and what to do next; `None` when it matched. A
/// suite's first run has nothing to differ from: it says how a baseline is made instead.
pub(super) fn snapshot(outcome: &SnapshotOutcome, file: &Path) -> Option<String> {
    let path = file.display();
    let note = match (outcome.action, outcome.first) {
        (SnapshotAction::Unchanged, _) => return None,
        (SnapshotAction::Accepted, _) => format!("snapshot accepted: {path}; commit it"),
        (SnapshotAction::Pending, true) => {
            return Some(format!(
                "no snapshot accepted yet for `{}`: until one is, every wrong answer fails. If \
                 this run shows the system as it is today, `sqlgate test --accept` makes it the \
                 baseline ({path}, to commit); this run's is in {path}.new",
                outcome.suite
            ))
        }
        (SnapshotAction::Differs, true) => {
            return Some(format!(
                "no accepted snapshot {path} in this checkout (CI: nothing pending written): \
                 every wrong answer fails; run `sqlgate test --accept` where you work and commit \
                 the snapshot"
            ))
        }
        (SnapshotAction::Pending, false) if in_cargo_project(file) => format!(
            "snapshot differs: review {path}.new with `cargo insta review`, or accept with \
             `sqlgate test --accept`"
        ),
        (SnapshotAction::Pending, false) => format!(
            "snapshot differs: the diff below is also in {path}.new; accept it with `sqlgate \
             test --accept`"
        ),
        (SnapshotAction::Differs, false) => {
            format!("snapshot differs from {path} (CI: nothing pending written)")
        }
    };
    Some(format!("{note}\n{}", outcome.diff_text.trim_end()))
}

/// Whether `cargo insta review` can find `file`: it looks in the Cargo project around it.
fn in_cargo_project(file: &Path) -> bool {
    file.ancestors().any(|dir| dir.join("Cargo.toml").is_file())
}

/// `demo: against the accepted snapshot (39 cases): ΔEX = ...`, and how many cases were flaky.
pub(super) fn against_baseline(summary: &SuiteSummary) -> Option<String> {
    let against = summary.against_baseline?;
    let flaky = match summary.flaky {
        0 => String::new(),
        n => format!("; {} whose samples disagree", plural(n, "flaky case")),
    };
    Some(format!("{}: {}{flaky}", summary.name, against.sentence()))
}
