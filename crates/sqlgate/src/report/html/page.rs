//! The page's model: what the template shows, built from a finished run (its results, suite
//! summaries and evaluated cases) and, for the gates' history, earlier runs' records. Every
//! field is plain data; the template escapes all of it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::config::Threshold;
use crate::gate::plan::SuitePlan;
use crate::gate::record::{RunRecord, SuiteOutcome};
use crate::gate::run::RunReport;
use crate::gate::{SuiteSummary, TestResult, TestStatus};
use crate::report::junit::format_metric;
use sqlgate_eval::error::InputError;

use super::cases::{self, CasesView};
use super::charts::{self, Bar, BarChart, Group, LineChart};
use super::suites::{self, SuiteSections};

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

/// The page, as the template reads it.
#[derive(Debug, Serialize)]
pub struct Page {
    title: String,
    passed: bool,
    run: Vec<(String, String)>,
    counts: Counts,
    outcome_chart: String,
    gates: Vec<GateView>,
    history: Vec<String>,
    suites: SuiteSections,
    cases: CasesView,
}

#[derive(Debug, Serialize)]
struct Counts {
    tests: usize,
    passed: usize,
    failed: usize,
    skipped: usize,
    known_failures: usize,
    regressions: usize,
}

#[derive(Debug, Serialize)]
struct GateView {
    test: String,
    suite: String,
    label: String,
    threshold: String,
    value: String,
    status: &'static str,
    message: Option<String>,
    chart: String,
}

impl Page {
    /// The page of `input`.
    pub fn build(input: &ReportInput) -> Page {
        let results = &input.report.results;
        let count = |keep: &dyn Fn(&TestResult) -> bool| results.iter().filter(|r| keep(r)).count();
        let counts = Counts {
            tests: results.len(),
            passed: count(&|r| r.status == TestStatus::Passed),
            failed: count(&|r| r.status == TestStatus::Failed),
            skipped: count(&|r| r.status == TestStatus::Skipped),
            known_failures: count(&|r| r.known_failure),
            regressions: count(&|r| r.regression),
        };
        let outcome_chart = charts::bars(&BarChart {
            title: "Tests by outcome",
            axis: "tests",
            series: &["tests"],
            groups: [
                ("passed (correct)", counts.passed - counts.known_failures),
                ("passed as known failures", counts.known_failures),
                ("failed: regressions", counts.regressions),
                ("failed: other", counts.failed - counts.regressions),
                ("skipped", counts.skipped),
            ]
            .into_iter()
            .map(|(label, n)| Group {
                label: label.to_string(),
                bars: vec![Some(Bar::of(n as f64))],
            })
            .collect(),
            range: None,
            decimals: 0,
            reference: None,
        });
        Page {
            title: format!("sqlgate: {} on {}", input.run.system, input.run.profile),
            passed: counts.failed == 0,
            run: run_rows(input.run),
            counts,
            outcome_chart,
            gates: gates(input),
            history: input.history.iter().map(|run| run.label.clone()).collect(),
            suites: suites::sections(input),
            cases: cases::view(input),
        }
    }
}

fn run_rows(run: &RunFacts) -> Vec<(String, String)> {
    let mut rows = vec![
        ("system".to_string(), run.system.clone()),
        ("profile".to_string(), run.profile.clone()),
        (
            "commit".to_string(),
            run.commit
                .clone()
                .unwrap_or_else(|| "not known (GITHUB_SHA is not set)".to_string()),
        ),
        (
            "ended".to_string(),
            run.ended.map_or_else(|| "not known".to_string(), date),
        ),
        ("sqlgate".to_string(), run.sqlgate.clone()),
        ("results".to_string(), run.origin.clone()),
    ];
    for (suite, fingerprint) in &run.fingerprints {
        rows.push((format!("fingerprint ({suite})"), fingerprint.clone()));
    }
    rows
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`.
fn date(seconds: u64) -> String {
    httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds))
}

fn gates(input: &ReportInput) -> Vec<GateView> {
    let messages: BTreeMap<&str, &str> = input
        .report
        .results
        .iter()
        .filter(|r| r.is_gate())
        .filter_map(|r| Some((r.name.as_str(), r.message.as_deref()?)))
        .collect();
    let mut views = Vec::new();
    for summary in input.summaries {
        for (label, threshold, status) in &summary.gates {
            let test = format!("{}::gate::{label}", summary.name);
            let value = summary.metrics.get(label).copied();
            let earlier: Vec<(String, Option<f64>)> = input
                .history
                .iter()
                .map(|run| {
                    let value = run
                        .outcome
                        .iter()
                        .find(|suite| suite.name == summary.name)
                        .and_then(|suite| suite.metrics.get(label).copied());
                    (run.label.clone(), value)
                })
                .collect();
            views.push(GateView {
                message: messages.get(test.as_str()).map(|m| m.to_string()),
                chart: gate_chart(&test, value, threshold, &earlier),
                test,
                suite: summary.name.clone(),
                label: label.clone(),
                threshold: threshold.clone(),
                value: value.map_or_else(|| "n/a".to_string(), format_metric),
                status: status_class(*status),
            });
        }
    }
    views
}

/// The gate's value against its threshold; with earlier runs, its history as a line.
fn gate_chart(
    test: &str,
    value: Option<f64>,
    threshold: &str,
    earlier: &[(String, Option<f64>)],
) -> String {
    let bound = Threshold::parse(threshold).ok().map(|t| t.value);
    let reference = bound.map(|b| (b, format!("threshold {threshold}")));
    if earlier.is_empty() {
        return charts::bars(&BarChart {
            title: test,
            axis: "value",
            series: &["value"],
            groups: vec![Group {
                label: "this run".to_string(),
                bars: vec![value.map(Bar::of)],
            }],
            range: None,
            decimals: 4,
            reference,
        });
    }
    let mut names: Vec<String> = earlier.iter().map(|(label, _)| label.clone()).collect();
    names.push("this run".to_string());
    let points: Vec<(f64, f64)> = earlier
        .iter()
        .map(|(_, value)| *value)
        .chain([value])
        .enumerate()
        .filter_map(|(at, value)| Some((at as f64, value?)))
        .collect();
    charts::line(&LineChart {
        title: test,
        x_axis: "run",
        y_axis: "value",
        marks: value
            .map(|v| ((names.len() - 1) as f64, v, format_metric(v)))
            .into_iter()
            .collect(),
        points,
        reference,
        x_names: names,
    })
}

/// The CSS class and word of a status.
pub(super) fn status_class(status: TestStatus) -> &'static str {
    match status {
        TestStatus::Passed => "passed",
        TestStatus::Failed => "failed",
        TestStatus::Skipped => "skipped",
    }
}
