//! JUnit XML, as CI dashboards read it (GitHub test reporters, GitLab, Jenkins).
//!
//! One `<testsuite>` per suite and one `<testcase>` per test: `classname` is the suite and `name`
//! the rest of the test name (`bookshop::q07`, `gate::ex`). A failing case carries a one-line
//! `message` with its metric values and, as the body, the reviewer's detail (question, gold SQL,
//! predicted SQL, error class). Metrics are `<property>` elements: the suite's aggregates on its
//! `<testsuite>`, a case's own values on its `<testcase>`. A case points at its source record
//! with `file` and `line` attributes (GitLab and Jenkins read `file`). Nothing depends on the
//! clock but the durations, so two runs with the same outcomes give the same document modulo `time`.

use std::collections::HashMap;
use std::path::Path;

use quick_junit::{
    NonSuccessKind, Property, Report, SerializeError, TestCase, TestCaseStatus, TestSuite,
};

use crate::gate::judge::format_metric;
use crate::gate::{SuiteSummary, TestResult, TestStatus};
use sqlgate_eval::error::OutputError;
use sqlgate_eval::files::write_text;

/// The name of the `<testsuites>` element.
pub const REPORT_NAME: &str = "sqlgate";

/// Builds the report: suites in order of first appearance (in `results`, then `summaries`),
/// tests in the order given.
pub fn report(results: &[TestResult], summaries: &[SuiteSummary]) -> Report {
    let mut report = Report::new(REPORT_NAME);
    for suite in by_suite(results, summaries) {
        report.add_test_suite(test_suite(&suite));
    }
    report
}

/// The report as an XML document.
pub fn render(
    results: &[TestResult],
    summaries: &[SuiteSummary],
) -> Result<String, SerializeError> {
    report(results, summaries).to_string()
}

/// Writes the report to `path` atomically (a temporary file renamed into place), creating the
/// parent folder, so a consumer never reads half a report.
pub fn write(
    path: &Path,
    results: &[TestResult],
    summaries: &[SuiteSummary],
) -> Result<(), OutputError> {
    let xml =
        render(results, summaries).map_err(|e| OutputError::new(path, std::io::Error::other(e)))?;
    write_text(path, &xml)
}

/// A suite's tests and summary, as reports show them.
pub(crate) struct SuiteView<'a> {
    pub name: &'a str,
    pub tests: Vec<&'a TestResult>,
    pub summary: Option<&'a SuiteSummary>,
}

/// The suites in order of first appearance (in `results`, then `summaries`), tests in run order.
pub(crate) fn by_suite<'a>(
    results: &'a [TestResult],
    summaries: &'a [SuiteSummary],
) -> Vec<SuiteView<'a>> {
    let mut suites = Vec::new();
    let mut index = HashMap::new();
    for result in results {
        let at = view_index(&mut suites, &mut index, &result.suite);
        suites[at].tests.push(result);
    }
    for summary in summaries {
        let at = view_index(&mut suites, &mut index, &summary.name);
        suites[at].summary.get_or_insert(summary);
    }
    suites
}

fn view_index<'a>(
    suites: &mut Vec<SuiteView<'a>>,
    index: &mut HashMap<&'a str, usize>,
    name: &'a str,
) -> usize {
    *index.entry(name).or_insert_with(|| {
        suites.push(SuiteView {
            name,
            tests: Vec::new(),
            summary: None,
        });
        suites.len() - 1
    })
}

fn test_suite(view: &SuiteView) -> TestSuite {
    let mut suite = TestSuite::new(view.name);
    suite.set_time(view.tests.iter().map(|r| r.duration).sum());
    if let Some(summary) = view.summary {
        suite.add_properties(
            summary
                .metrics
                .iter()
                .map(|(metric, value)| Property::new(metric.to_string(), format_metric(*value))),
        );
    }
    suite.add_test_cases(view.tests.iter().map(|result| test_case(result)));
    suite
}

fn test_case(result: &TestResult) -> TestCase {
    let prefix = format!("{}::", result.suite);
    let name = result.name.strip_prefix(&prefix).unwrap_or(&result.name);
    let mut case = TestCase::new(name, status(result));
    case.set_classname(result.suite.as_str());
    case.set_time(result.duration);
    if let Some(source) = &result.source {
        case.extra
            .insert("file".into(), source.file.to_string_lossy().as_ref().into());
        if let Some(line) = source.line {
            case.extra.insert("line".into(), line.to_string().into());
        }
    }
    case.add_properties(
        result
            .properties
            .iter()
            .map(|(key, value)| Property::new(key.as_str(), value.as_str())),
    );
    case
}

fn status(result: &TestResult) -> TestCaseStatus {
    match result.status {
        TestStatus::Passed => TestCaseStatus::success(),
        TestStatus::Skipped => {
            let mut status = TestCaseStatus::skipped();
            if let Some(message) = &result.message {
                status.set_message(one_line(message));
            }
            status
        }
        TestStatus::Failed => {
            let verdict = result.verdict.map(|v| v.as_str());
            let mut status = TestCaseStatus::non_success(failure_kind(verdict));
            status.set_message(one_line(result.message.as_deref().unwrap_or("failed")));
            let kind = if result.is_gate() { "gate" } else { "failure" };
            status.set_type(verdict.unwrap_or(kind));
            if let Some(detail) = &result.detail {
                status.set_description(detail.as_str());
            }
            status
        }
    }
}

/// JUnit's `error` means the test could not judge the system (the benchmark's own gold SQL
/// failed, or the system could not be called); everything else the system got wrong is a `failure`.
fn failure_kind(verdict: Option<&str>) -> NonSuccessKind {
    match verdict {
        Some(v) if v.starts_with("gold_") || v == "system_error" => NonSuccessKind::Error,
        _ => NonSuccessKind::Failure,
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
