//! What a run ends against: each suite's accepted snapshot, read when the session opens, and
//! the comparison that writes the accepted or pending snapshot after a complete run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use sqlgate_eval::error::{InputError, OutputError};

use super::judge::{self, AcceptedCase, CaseRun};
use super::plan::SuitePlan;
use super::run::RunReport;
use super::snapshot::{self, SnapshotEntry};

/// Each suite's accepted snapshot, in plan order.
pub struct AcceptedSnapshots {
    /// Where the snapshots are.
    dir: PathBuf,
    /// Per suite: the accepted snapshot as read, `None` before the first accepted run.
    snapshots: Vec<Option<snapshot::Accepted>>,
    /// Per suite: case test name -> the case in the accepted snapshot.
    passed: Vec<HashMap<String, AcceptedCase>>,
}

impl AcceptedSnapshots {
    /// Reads the accepted snapshot of every suite in `dir`.
    pub(super) fn read(dir: &Path, suites: &[SuitePlan]) -> Result<AcceptedSnapshots, InputError> {
        let snapshots = suites
            .iter()
            .map(|suite| snapshot::read(&snapshot::path(dir, &suite.name)))
            .collect::<Result<Vec<_>, InputError>>()?;
        let passed = snapshots
            .iter()
            .map(|snapshot| {
                let entries = snapshot.iter().flat_map(|s| &s.entries);
                entries
                    .map(|e| (e.name.clone(), accepted_case(e)))
                    .collect()
            })
            .collect();
        Ok(AcceptedSnapshots {
            dir: dir.to_path_buf(),
            snapshots,
            passed,
        })
    }

    /// Where the snapshots are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Per suite: case test name -> the case in the accepted snapshot.
    pub fn passed(&self) -> &[HashMap<String, AcceptedCase>] {
        &self.passed
    }

    /// Compares each suite's cases in `report` with its accepted snapshot; writes the new
    /// snapshot as accepted (`accept`) or, outside CI, as pending.
    pub(super) fn compare(
        &self,
        suites: &[SuitePlan],
        report: &RunReport,
        accept: bool,
    ) -> Result<Vec<SnapshotOutcome>, OutputError> {
        let ci = running_in_ci();
        let mut outcomes = Vec::new();
        for ((suite, runs), accepted) in suites.iter().zip(&report.case_runs).zip(&self.snapshots) {
            let current: Vec<SnapshotEntry> = runs.par_iter().map(snapshot_entry).collect();
            let current_body = snapshot::body(&current);
            let rendered = snapshot::with_front_matter(&suite.name, &current_body);
            let (diff, diff_text) = match accepted {
                // The file as sqlgate wrote it, unchanged: nothing to compare.
                Some(accepted) if accepted.text == rendered => {
                    (snapshot::SnapshotDiff::default(), String::new())
                }
                _ => {
                    let entries = accepted.as_ref().map_or(&[][..], |a| &a.entries[..]);
                    (
                        snapshot::compare(entries, &current),
                        snapshot::unified_diff(&snapshot::body(entries), &current_body),
                    )
                }
            };
            let action = if diff.is_empty() && accepted.is_some() {
                SnapshotAction::Unchanged
            } else if accept {
                snapshot::write_accepted(&self.dir, &suite.name, &rendered)?;
                SnapshotAction::Accepted
            } else if ci {
                SnapshotAction::Differs
            } else {
                snapshot::write_pending(&self.dir, &suite.name, &rendered)?;
                SnapshotAction::Pending
            };
            outcomes.push(SnapshotOutcome {
                suite: suite.name.clone(),
                diff_text,
                diff,
                action,
                first: accepted.is_none(),
            });
        }
        Ok(outcomes)
    }
}

/// What happened to a suite's snapshot after a run.
#[non_exhaustive]
pub struct SnapshotOutcome {
    /// The suite's name.
    pub suite: String,
    /// Which tests regressed, improved or changed since the accepted snapshot.
    pub diff: snapshot::SnapshotDiff,
    /// The unified diff of the snapshot files, for the run's notes (empty when equal).
    pub diff_text: String,
    /// Whether the snapshot was left alone, accepted, or written as pending.
    pub action: SnapshotAction,
    /// No snapshot of the suite had been accepted before this run.
    pub first: bool,
}

/// What was done with a suite's snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotAction {
    /// The run matches the accepted snapshot: nothing written.
    Unchanged,
    /// `--accept`: written as the accepted snapshot.
    Accepted,
    /// Written as `<suite>.snap.new` for `cargo insta review` or `sqlgate test --accept`.
    Pending,
    /// Under CI nothing pending is written.
    Differs,
}

/// A case as its snapshot line has it; a sampled one carries `pass_rate` and `samples`.
fn accepted_case(entry: &SnapshotEntry) -> AcceptedCase {
    let samples = entry
        .metrics
        .get("samples")
        .and_then(|n| n.parse::<u32>().ok());
    let rate = entry
        .metrics
        .get("pass_rate")
        .and_then(|r| r.parse::<f64>().ok());
    let passes = match (samples, rate) {
        (Some(samples), Some(rate)) if samples > 0 && (0.0..=1.0).contains(&rate) => {
            Some(sqlgate_eval::metrics::noise::PassCount {
                // The rate is written with 4 decimals: the nearest count is the one written.
                passed: (rate * f64::from(samples)).round() as u32,
                samples,
            })
        }
        _ => None,
    };
    AcceptedCase {
        correct: entry.passed,
        passes,
    }
}

fn snapshot_entry(run: &CaseRun) -> SnapshotEntry {
    SnapshotEntry {
        name: run.test.clone(),
        passed: run.correct(),
        verdict: run.score.verdict,
        metrics: [
            ("ex".to_string(), judge::format_metric(run.score.ex)),
            (
                "region".to_string(),
                run.score.region().as_str().to_string(),
            ),
        ]
        .into_iter()
        .chain(judge::snapshot_sample_metrics(run))
        .chain(judge::fine_metrics(run))
        .chain(judge::structural_metrics(run))
        .chain(judge::soft_f1_metric(run))
        .chain(judge::case_metric_values(run))
        .chain(judge::efficiency_metrics(run, false))
        .chain(judge::metric_error_flags(run))
        // A state case's effect (docs/state.md), so that a changed effect shows in the diff.
        .chain(
            run.score
                .diagnostics
                .iter()
                .find(|note| note.code == sqlgate_eval::metrics::state::STATE_DIGEST)
                .map(|note| ("state".to_string(), note.message.clone())),
        )
        // Which database of its folder the case failed on, a word like the metrics.
        .chain(
            run.score
                .failed_on
                .clone()
                .map(|db| ("failed_on".to_string(), db)),
        )
        .collect(),
        sql: run.score.sql.as_deref().map(snapshot::normalize_sql),
        system_error: run.system_error.map(|kind| kind.as_str().to_string()),
    }
}

/// Whether this is a CI run, read as insta reads it: `CI` set to anything but `false`, `0` or
/// the empty string (Azure Pipelines sets `TF_BUILD` instead).
pub fn running_in_ci() -> bool {
    ci_from(
        std::env::var("CI").ok().as_deref(),
        std::env::var_os("TF_BUILD").is_some(),
    )
}

fn ci_from(ci: Option<&str>, tf_build: bool) -> bool {
    match ci {
        Some("false" | "0" | "") => false,
        Some(_) => true,
        None => tf_build,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ci_is_detected_like_insta() {
        assert!(super::ci_from(Some("true"), false));
        assert!(super::ci_from(Some("1"), false));
        assert!(!super::ci_from(Some("false"), true));
        assert!(!super::ci_from(Some("0"), false));
        assert!(!super::ci_from(Some(""), false));
        assert!(!super::ci_from(None, false));
        assert!(super::ci_from(None, true));
    }
}
