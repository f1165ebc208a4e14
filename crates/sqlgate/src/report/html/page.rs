//! The page's model: what the template shows, built from a finished run (its results, suite
//! summaries and evaluated cases) and, for the gates' history, earlier runs' records. Every
//! field is plain data; the template escapes all of it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::Threshold;
use crate::gate::judge::format_metric;
use crate::gate::{TestResult, TestStatus};

use super::cases::{self, CasesView};
use super::charts::{self, Bar, BarChart, Group, LineChart};
use super::input::{date, status_class, ReportInput, RunFacts};
use super::suites::{self, SuiteSections};

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
                        .and_then(|suite| suite.metrics.get(&label.to_string()).copied());
                    (run.label.clone(), value)
                })
                .collect();
            views.push(GateView {
                message: messages.get(test.as_str()).map(|m| m.to_string()),
                chart: gate_chart(&test, value, threshold, &earlier),
                test,
                suite: summary.name.clone(),
                label: label.to_string(),
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
