//! The gate: every case, mutant and threshold is a named test with a verdict.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::Threshold;
use crate::system::SystemErrorKind;
use sqlgate_eval::loaders::SourceRef;
use sqlgate_eval::metrics::ex::Verdict;
use sqlgate_eval::scoring::FamilySummary;

pub use judge::AgainstBaseline;
pub use plan::{FamilyGate, MetricKey, TestKind};

pub mod accepted;
pub mod answerer;
pub mod cost;
#[cfg(test)]
mod fixtures;
pub mod judge;
pub mod partition;
pub mod plan;
pub mod preview;
pub mod record;
pub mod reuse;
pub mod run;
pub mod session;
pub mod setup;
pub mod snapshot;

/// A test's verdict; a run fails when any test is `Failed`.
///
/// Exhaustive on purpose: these are libtest's and JUnit's three outcomes, and every reporter
/// must say how it shows each one; a fourth should fail to compile where it is not handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestStatus {
    /// The case answered correctly, or the gate held.
    Passed,
    /// A wrong answer that is a regression, a `must_pass` case, or a gate that did not hold.
    Failed,
    /// Not run: filtered out or ignored.
    Skipped,
}

/// The verdict of one named test. Built outside this crate with [`TestResult::new`], then its
/// fields set: more facts about a test may come.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct TestResult {
    /// `<suite>::<db>::<case-id>`, `<suite>::<db>::<case-id>::<family>::<mutant-id>`,
    /// `<suite>::gate::<metric>` or `<suite>::gate::<family>::<metric>`.
    pub name: String,
    /// The suite the test belongs to.
    pub suite: String,
    /// Passed, failed or skipped.
    pub status: TestStatus,
    /// How long the test took (zero for one whose verdict was reused).
    pub duration: Duration,
    /// One line saying why it failed, with the metric values.
    pub message: Option<String>,
    /// Several lines for a reviewer: question, gold SQL, predicted SQL, error class.
    pub detail: Option<String>,
    /// Metric values and facts about the case (`ex`, `verdict`, `mode`...).
    pub properties: BTreeMap<String, String>,
    /// The record the test comes from, where known.
    pub source: Option<SourceRef>,
    /// A case's gold SQL alternatives (empty for gate tests), for reviewers' SQL diffs.
    pub gold_sql: Vec<String>,
    /// A case's predicted SQL (`None`: abstained, or a gate test).
    pub predicted_sql: Option<String>,
    /// A case (by index in its suite) or a gate (by metric).
    pub kind: TestKind,
    /// A case's verdict class, when it was evaluated.
    pub verdict: Option<Verdict>,
    /// Why the system gave a case no usable answer, when it did not (also the
    /// `system_error_kind` property).
    pub system_error: Option<SystemErrorKind>,
    /// The system's reply to a case was cut short by its token limit (also a property).
    pub reply_truncated: bool,
    /// A case that passed because it already failed in the accepted snapshot (also a property).
    pub known_failure: bool,
    /// A case that was correct in the accepted snapshot and fails now.
    pub regression: bool,
    /// A sampled case whose samples disagree: some correct, some not (also a property).
    pub flaky: bool,
    /// A gate's threshold (also its `threshold` property).
    #[serde(skip)]
    pub threshold: Option<Threshold>,
    /// A gate's value, when it could be computed (also the property named by its metric).
    #[serde(skip)]
    pub value: Option<f64>,
}

impl TestResult {
    /// The test `name` of `suite`, ended with `status`, of which nothing else is known yet: no
    /// time, message, properties, SQL or verdict.
    pub fn new(
        name: impl Into<String>,
        suite: impl Into<String>,
        kind: TestKind,
        status: TestStatus,
    ) -> TestResult {
        TestResult {
            name: name.into(),
            suite: suite.into(),
            status,
            duration: Duration::ZERO,
            message: None,
            detail: None,
            properties: BTreeMap::new(),
            source: None,
            gold_sql: Vec::new(),
            predicted_sql: None,
            kind,
            verdict: None,
            system_error: None,
            reply_truncated: false,
            known_failure: false,
            regression: false,
            flaky: false,
            threshold: None,
            value: None,
        }
    }

    /// Whether the test is a suite or family gate rather than a case.
    pub fn is_gate(&self) -> bool {
        matches!(self.kind, TestKind::Gate(_) | TestKind::FamilyGate(_))
    }
}

/// A suite's aggregate metrics and the verdicts of its gates, for reports. Built with
/// [`SuiteSummary::from_results`].
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SuiteSummary {
    /// The suite's name, the first component of its test names.
    pub name: String,
    /// Suite metrics, and each family's.
    pub metrics: BTreeMap<MetricKey, f64>,
    /// `(metric, threshold, status)` per gate, e.g. `(ex, ">= 0.7", Passed)` or
    /// `(tqa-ll::drop, "<= 10", Passed)`; a gate a stopped run did not evaluate is `Skipped`.
    pub gates: Vec<(MetricKey, String, TestStatus)>,
    /// Each generated family against its seeds, for the family tables.
    pub families: BTreeMap<String, FamilySummary>,
    /// The run against the accepted snapshot, when the suite samples or gates on
    /// `regression_p` and the snapshot has some of its cases.
    pub against_baseline: Option<AgainstBaseline>,
    /// Cases whose sampled answers disagree.
    pub flaky: usize,
    /// What the answers cost (latency, tokens), for the cost lines.
    pub cost: cost::CostSummary,
}

impl SuiteSummary {
    /// The summary of `suite`: its gates are read from its gate tests.
    pub fn from_results(
        suite: &str,
        metrics: BTreeMap<MetricKey, f64>,
        results: &[TestResult],
    ) -> Self {
        let gates = results
            .iter()
            .filter(|result| result.suite == suite)
            .filter_map(|result| {
                let label = match result.kind {
                    TestKind::Gate(metric) => MetricKey::Suite(metric),
                    // `<suite>::gate::<family>::<metric>`, as the plan names the test.
                    TestKind::FamilyGate(_) => {
                        let (_, label) = result.name.split_once("::gate::")?;
                        label.parse().ok()?
                    }
                    TestKind::Case(_) => return None,
                };
                let threshold = result.threshold.map(|t| t.to_string()).unwrap_or_default();
                Some((label, threshold, result.status))
            })
            .collect();
        let flaky = results
            .iter()
            .filter(|result| result.suite == suite && result.flaky)
            .count();
        SuiteSummary {
            name: suite.to_string(),
            metrics,
            gates,
            families: BTreeMap::new(),
            against_baseline: None,
            flaky,
            cost: cost::CostSummary::default(),
        }
    }

    /// The summary with the run's comparison with its baseline.
    pub fn with_against_baseline(mut self, against: Option<AgainstBaseline>) -> Self {
        self.against_baseline = against;
        self
    }

    /// The summary with its families' tables.
    pub fn with_families(mut self, families: BTreeMap<String, FamilySummary>) -> Self {
        self.families = families;
        self
    }

    /// The summary with what its answers cost.
    pub fn with_cost(mut self, cost: cost::CostSummary) -> Self {
        self.cost = cost;
        self
    }
}
