//! What the page is built from: the run's facts, earlier runs for the gates' history, and the
//! finished run itself. The page ([`super::page`]) and its sections ([`super::cases`],
//! [`super::suites`]) all read it, so none of them imports another's.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::gate::plan::SuitePlan;
use crate::gate::record::{RunRecord, SuiteOutcome};
use crate::gate::run::RunReport;
use crate::gate::{SuiteSummary, TestStatus};
use sqlgate_eval::error::InputError;

/// What the run was: shown at the top of the page.
#[derive(Debug, Clone)]
pub struct RunFacts {
    /// The system under test.
    pub system: String,
    /// Its fingerprint, per suite name.
    pub fingerprints: Vec<(String, String)>,
    /// The profile the run used.
    pub profile: String,
    /// The commit it ran on (`GITHUB_SHA`), when known.
    pub commit: Option<String>,
    /// When the run ended, in seconds since the Unix epoch, when known.
    pub ended: Option<u64>,
    /// The sqlgate version that ran it.
    pub sqlgate: String,
    /// How the results came to be: `sqlgate test`, merged from run records...
    pub origin: String,
}

impl RunFacts {
    /// The commit of a GitHub Actions run (`GITHUB_SHA`), if any.
    pub fn commit_from_env() -> Option<String> {
        std::env::var("GITHUB_SHA")
            .ok()
            .filter(|sha| !sha.is_empty())
    }

    /// Now, in seconds since the Unix epoch.
    pub fn now() -> Option<u64> {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs())
    }
}

/// An earlier run, for the gates' history: its label and what it concluded.
#[derive(Debug, Clone)]
pub struct EarlierRun {
    /// The run's name on the history's axis: its commit, else its date, else its file.
    pub label: String,
    /// Its suites' metrics and gates.
    pub outcome: Vec<SuiteOutcome>,
}

impl EarlierRun {
    /// Reads the record of a whole earlier run (`--record-out` of `sqlgate test` or `merge`).
    pub fn read(path: &Path) -> Result<EarlierRun, InputError> {
        let record = RunRecord::read(path)?;
        if record.outcome.is_empty() {
            return Err(InputError::file(
                path,
                "the record holds no gate outcomes: it is a shard's, a filtered or stopped \
                 run's, or was written before sqlgate recorded them; give the record of a whole \
                 run (`sqlgate test --record-out` or `sqlgate merge --record-out`)",
            ));
        }
        let label = match (&record.commit, record.ended) {
            (Some(commit), _) => commit.chars().take(8).collect(),
            (None, Some(ended)) => date(ended),
            (None, None) => path.file_stem().map_or_else(
                || path.display().to_string(),
                |s| s.to_string_lossy().into(),
            ),
        };
        Ok(EarlierRun {
            label,
            outcome: record.outcome,
        })
    }
}

/// Everything the page is built from.
pub struct ReportInput<'a> {
    /// The run's suites, planned (questions, gold SQL, tags).
    pub suites: &'a [SuitePlan],
    /// The run: results in plan order, evaluated cases, suite metrics.
    pub report: &'a RunReport,
    /// Each suite's metrics and gates.
    pub summaries: &'a [SuiteSummary],
    /// What the run was.
    pub run: &'a RunFacts,
    /// Earlier runs, oldest first.
    pub history: &'a [EarlierRun],
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`.
pub(super) fn date(seconds: u64) -> String {
    httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds))
}

/// The CSS class and word of a status.
pub(super) fn status_class(status: TestStatus) -> &'static str {
    match status {
        TestStatus::Passed => "passed",
        TestStatus::Failed => "failed",
        TestStatus::Skipped => "skipped",
    }
}
