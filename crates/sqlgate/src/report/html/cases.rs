//! The page's case table: every case test, regressions first, then the other failures, known
//! failures, passes and skipped tests. The first [`DETAILED_CASES`] carry their details
//! (question, gold and predicted SQL with a clause diff, result rows, ETM's explanation,
//! errors); the rest are one row each, so a run of any size names every test in a page of
//! bounded size.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::gate::judge::CaseRun;
use crate::gate::plan::{SuitePlan, TestKind};
use crate::gate::{TestResult, TestStatus};
use crate::report::github::sql_diff;

use super::charts::{self, Bar, BarChart, Group};
use super::input::{status_class, ReportInput};

/// Cases shown with their details; the others are listed in brief.
pub const DETAILED_CASES: usize = 1000;

/// The case table.
#[derive(Debug, Serialize)]
pub struct CasesView {
    chart: String,
    rows: Vec<CaseRow>,
    detailed: usize,
    brief: usize,
}

#[derive(Debug, Serialize)]
struct CaseRow {
    name: String,
    suite: String,
    status: &'static str,
    standing: &'static str,
    rank: usize,
    /// A sampled case whose samples disagree.
    flaky: bool,
    verdict: String,
    ex: String,
    message: Option<String>,
    detail: Option<CaseDetail>,
}

#[derive(Debug, Serialize)]
struct CaseDetail {
    question: String,
    evidence: Option<String>,
    source: Option<String>,
    gold: Vec<String>,
    predicted: String,
    diff: Vec<(&'static str, String)>,
    rows: Option<super::preview::PreviewView>,
    rows_note: &'static str,
    explanation: Option<String>,
    error: Option<String>,
    notes: Vec<String>,
    properties: Vec<(String, String)>,
}

/// Where a case stands, in the table's order.
const STANDINGS: [&str; 5] = ["regression", "failed", "known failure", "passed", "skipped"];

fn standing(result: &TestResult) -> usize {
    match result.status {
        TestStatus::Failed if result.regression => 0,
        TestStatus::Failed => 1,
        TestStatus::Passed if result.known_failure => 2,
        TestStatus::Passed => 3,
        TestStatus::Skipped => 4,
    }
}

pub(super) fn view(input: &ReportInput) -> CasesView {
    let suites: HashMap<&str, (usize, &SuitePlan)> = input
        .suites
        .iter()
        .enumerate()
        .map(|(index, suite)| (suite.name.as_str(), (index, suite)))
        .collect();
    let mut cases: Vec<(usize, &TestResult)> = input
        .report
        .results
        .iter()
        .filter(|r| !r.is_gate())
        .map(|r| (standing(r), r))
        .collect();
    // Stable: plan order within a standing.
    cases.sort_by_key(|(rank, _)| *rank);
    let mut verdicts: BTreeMap<String, usize> = BTreeMap::new();
    for (_, result) in &cases {
        let verdict = result.verdict.map_or("not run", |v| v.as_str());
        *verdicts.entry(verdict.to_string()).or_default() += 1;
    }
    let rows: Vec<CaseRow> = cases
        .iter()
        .enumerate()
        .map(|(at, (rank, result))| {
            let case = match result.kind {
                TestKind::Case(index) => suites
                    .get(result.suite.as_str())
                    .map(|&(suite_index, suite)| (suite_index, suite, index)),
                _ => None,
            };
            CaseRow {
                name: result.name.clone(),
                suite: result.suite.clone(),
                status: match *rank {
                    2 => "known",
                    _ => status_class(result.status),
                },
                standing: STANDINGS[*rank],
                rank: *rank,
                flaky: result.flaky,
                verdict: result
                    .verdict
                    .map_or_else(|| "not run".to_string(), |v| v.as_str().to_string()),
                ex: result.properties.get("ex").cloned().unwrap_or_default(),
                message: result.message.clone(),
                detail: (at < DETAILED_CASES).then_some(case).flatten().map(
                    |(suite_index, suite, index)| {
                        let run = input
                            .report
                            .case_runs
                            .get(suite_index)
                            .and_then(|runs| find_run(runs, index));
                        detail(suite, index, result, run)
                    },
                ),
            }
        })
        .collect();
    let detailed = rows.iter().filter(|row| row.detail.is_some()).count();
    CasesView {
        chart: charts::bars(&BarChart {
            title: "Cases by verdict",
            axis: "cases",
            series: &["cases"],
            groups: verdicts
                .iter()
                .map(|(verdict, n)| Group {
                    label: verdict.clone(),
                    bars: vec![Some(Bar::of(*n as f64))],
                })
                .collect(),
            range: None,
            decimals: 0,
            reference: None,
        }),
        brief: rows.len() - detailed,
        detailed,
        rows,
    }
}

/// The run of case `index` (runs are in case order).
fn find_run(runs: &[CaseRun], index: usize) -> Option<&CaseRun> {
    runs.binary_search_by_key(&index, |run| run.case_index)
        .ok()
        .map(|at| &runs[at])
}

fn detail(
    suite: &SuitePlan,
    index: usize,
    result: &TestResult,
    run: Option<&CaseRun>,
) -> CaseDetail {
    let case = &suite.bench.cases[index];
    let predicted = match (&result.predicted_sql, result.system_error, result.verdict) {
        (Some(sql), _, _) => sql.clone(),
        (None, Some(kind), _) => format!("(no usable answer: {})", kind.as_str()),
        (None, None, Some(_)) => "(abstained)".to_string(),
        (None, None, None) => "(not run)".to_string(),
    };
    let diff = if case.gold.is_empty() || result.verdict.is_none() {
        Vec::new()
    } else {
        sql_diff(&case.gold, result.predicted_sql.as_deref())
            .lines()
            .map(|line| {
                let class = match line.chars().next() {
                    Some('-') => "del",
                    Some('+') => "ins",
                    Some('#') => "note",
                    _ => "same",
                };
                (class, line.to_string())
            })
            .collect()
    };
    // The detail is what the run recorded for a reviewer; its lines name their content.
    let detail_lines: Vec<&str> = result.detail.as_deref().unwrap_or("").lines().collect();
    let labelled = |label: &str| -> Vec<String> {
        detail_lines
            .iter()
            .filter_map(|line| line.strip_prefix(label))
            .map(|rest| rest.trim().to_string())
            .collect()
    };
    let preview = run.and_then(|run| run.preview.as_ref());
    CaseDetail {
        question: case.question.clone(),
        evidence: case.evidence.clone(),
        source: result.source.as_ref().map(|source| match source.line {
            Some(line) => format!("{}:{line}", source.file.display()),
            None => format!("{} (record {})", source.file.display(), source.record),
        }),
        gold: case.gold.clone(),
        predicted,
        diff,
        rows: preview.map(super::preview::view),
        rows_note: super::preview::absent_note(result, run),
        explanation: labelled("etm:").into_iter().next(),
        error: run
            .and_then(|run| run.score.error.clone())
            .or_else(|| labelled("error:").into_iter().next()),
        notes: labelled("note:"),
        properties: result
            .properties
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}
