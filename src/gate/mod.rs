//! The gate: every case, mutant and threshold is a named test with a verdict.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::bench::SourceRef;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TestStatus {
    Passed,
    Failed,
    /// Not run: filtered out or ignored.
    Skipped,
}

/// The verdict of one named test.
#[derive(Debug, Clone, Serialize)]
pub struct TestResult {
    /// `<suite>::<db>::<case-id>`, `<suite>::<db>::<case-id>::<family>::<mutant-id>` or
    /// `<suite>::gate::<metric>`.
    pub name: String,
    pub suite: String,
    pub status: TestStatus,
    pub duration: Duration,
    /// One line saying why it failed, with the metric values.
    pub message: Option<String>,
    /// Several lines for a reviewer: question, gold SQL, predicted SQL, error class.
    pub detail: Option<String>,
    /// Metric values and facts about the case (`ex`, `verdict`, `mode`...).
    pub properties: BTreeMap<String, String>,
    /// The record the test comes from, where known.
    pub source: Option<SourceRef>,
}

pub mod judge;
pub mod plan;
pub mod run;
pub mod setup;
pub mod threshold;
