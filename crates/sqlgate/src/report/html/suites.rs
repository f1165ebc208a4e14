//! The page's per-suite sections: metrics and their breakdowns by tag, the generated families
//! against their seeds, abstention (TrustSQL's RS(c) and regions), and the fine-grained metrics
//! of the failing cases.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::gate::judge::format_metric;
use crate::gate::judge::{CaseRun, SuiteMetrics};
use crate::gate::plan::{MetricKey, SuitePlan};
use sqlgate_eval::metrics::reliability::{self, Region, Regions};
use sqlgate_eval::scoring::FamilySummary;
use sqlgate_eval::scoring::Metric;

use super::charts::{self, Bar, BarChart, Group, LineChart, Scatter};
use super::input::ReportInput;

/// The per-suite sections; a section no suite has data for is empty.
#[derive(Debug, Serialize)]
pub struct SuiteSections {
    metrics: Vec<MetricsView>,
    families: Vec<FamiliesView>,
    abstention: Vec<AbstentionView>,
    fine: Vec<FineView>,
}

#[derive(Debug, Serialize)]
struct MetricsView {
    suite: String,
    cases: usize,
    metrics: Vec<(String, String)>,
    /// The run against the accepted snapshot, as a sentence.
    baseline: Option<String>,
    /// What the answers cost, when any recorded a latency or a token count.
    cost: Option<String>,
    chart: Option<String>,
    breakdowns: Vec<BreakdownView>,
}

#[derive(Debug, Serialize)]
struct BreakdownView {
    tag: String,
    rows: Vec<(String, usize, String)>,
    chart: String,
}

#[derive(Debug, Serialize)]
struct FamiliesView {
    suite: String,
    rows: Vec<FamilyRow>,
    charts: Vec<String>,
}

#[derive(Debug, Serialize)]
struct FamilyRow {
    family: String,
    setting: String,
    n: usize,
    seeds: usize,
    a_orig: String,
    a_family: String,
    drop: String,
    interval: String,
    pass_at_k: String,
    qvt: String,
}

#[derive(Debug, Serialize)]
struct AbstentionView {
    suite: String,
    cases: usize,
    penalty: String,
    regions: Vec<(&'static str, usize, &'static str)>,
    rs: Vec<(String, String)>,
    regions_chart: String,
    rs_chart: String,
}

#[derive(Debug, Serialize)]
struct FineView {
    suite: String,
    regime: String,
    means: Vec<(String, String)>,
    failing: usize,
    chart: Option<String>,
}

/// Rates among the suite metrics: the per-case means, with a sampled suite's mean pass rate
/// after EX; `rs` is a percentage and family metrics have a section of their own.
fn rates() -> Vec<Metric> {
    let mut rates = Metric::case_means();
    rates.insert(1, Metric::PassRate);
    rates
}

pub(super) fn sections(input: &ReportInput) -> SuiteSections {
    let mut sections = SuiteSections {
        metrics: Vec::new(),
        families: Vec::new(),
        abstention: Vec::new(),
        fine: Vec::new(),
    };
    for (index, suite) in input.suites.iter().enumerate() {
        let (Some(runs), Some(metrics)) = (
            input.report.case_runs.get(index),
            input.report.metrics.get(index),
        ) else {
            continue;
        };
        if runs.is_empty() {
            continue;
        }
        sections.metrics.push(metrics_view(suite, metrics));
        if !metrics.families.is_empty() {
            sections
                .families
                .push(families_view(&suite.name, &metrics.families));
        }
        sections.abstention.push(abstention_view(suite, runs));
        if let Some(view) = fine_view(suite, runs, metrics) {
            sections.fine.push(view);
        }
    }
    sections
}

fn metrics_view(suite: &SuitePlan, metrics: &SuiteMetrics) -> MetricsView {
    let values = &metrics.values;
    let suite_metrics: Vec<(String, String)> = values
        .iter()
        .filter(|(key, _)| matches!(key, MetricKey::Suite(_)))
        .map(|(key, value)| (key.to_string(), format_metric(*value)))
        .collect();
    let rates: Vec<Group> = rates()
        .into_iter()
        .filter_map(|metric| {
            let value = values.get(&MetricKey::Suite(metric))?;
            Some(Group {
                label: metric.to_string(),
                bars: vec![Some(Bar::of(*value))],
            })
        })
        .collect();
    let chart = (!rates.is_empty()).then(|| {
        charts::bars(&BarChart {
            title: &format!(
                "{}: metrics over {} feasible cases",
                suite.name, metrics.cases
            ),
            axis: "mean",
            series: &["mean"],
            groups: rates,
            range: Some((0.0, 1.0)),
            decimals: 3,
            reference: None,
        })
    });
    let breakdowns = metrics
        .breakdown
        .iter()
        .filter(|(_, values)| values.len() > 1)
        .map(|(tag, values)| BreakdownView {
            tag: tag.clone(),
            rows: values
                .iter()
                .map(|(value, tally)| (value.clone(), tally.n, format_metric(tally.ex)))
                .collect(),
            chart: charts::bars(&BarChart {
                title: &format!("{}: EX by {tag}", suite.name),
                axis: "EX",
                series: &["EX"],
                groups: values
                    .iter()
                    .map(|(value, tally)| Group {
                        label: format!("{value} (n={})", tally.n),
                        bars: vec![Some(Bar::of(tally.ex))],
                    })
                    .collect(),
                range: Some((0.0, 1.0)),
                decimals: 3,
                reference: None,
            }),
        })
        .collect();
    MetricsView {
        suite: suite.name.clone(),
        cases: metrics.cases,
        metrics: suite_metrics,
        baseline: metrics.against_baseline.map(|against| against.sentence()),
        cost: metrics.cost.describe(),
        chart,
        breakdowns,
    }
}

fn families_view(suite: &str, families: &BTreeMap<String, FamilySummary>) -> FamiliesView {
    let optional = |value: Option<f64>, decimals: usize| {
        value.map_or_else(|| "n/a".to_string(), |v| format!("{v:.decimals$}"))
    };
    let rows = families
        .iter()
        .map(|(name, family)| FamilyRow {
            family: name.clone(),
            setting: family.setting.clone().unwrap_or_default(),
            n: family.n,
            seeds: family.seeds,
            a_orig: optional(family.a_orig, 3),
            a_family: format!("{:.3}", family.ex),
            drop: optional(family.drop, 1),
            interval: family.cs_interval.map_or_else(
                || "n/a".to_string(),
                |i| format!("[{:.3}, {:.3}] (CS {:.2})", i.low, i.high, i.mean_cs),
            ),
            pass_at_k: family
                .pass_at_k
                .iter()
                .map(|(k, v)| format!("@{k} {v:.3}"))
                .collect::<Vec<_>>()
                .join(", "),
            qvt: optional(family.qvt.map(|q| q.mean), 3),
        })
        .collect();
    let label = |name: &str, family: &FamilySummary| match &family.setting {
        Some(setting) => format!("{name} ({setting})"),
        None => name.to_string(),
    };
    let mut charts = vec![
        charts::bars(&BarChart {
            title: &format!(
                "{suite}: accuracy of each family against its seeds (A_family with its CS interval)"
            ),
            axis: "EX",
            series: &["A_orig (seeds)", "A_family"],
            groups: families
                .iter()
                .map(|(name, family)| Group {
                    label: label(name, family),
                    bars: vec![
                        family.a_orig.map(Bar::of),
                        Some(Bar {
                            value: family.ex,
                            interval: family.cs_interval.map(|i| (i.low, i.high)),
                        }),
                    ],
                })
                .collect(),
            range: Some((0.0, 1.0)),
            decimals: 3,
            reference: None,
        }),
        charts::bars(&BarChart {
            title: &format!("{suite}: drop in points (A_orig - A_family)"),
            axis: "points",
            series: &["drop"],
            groups: families
                .iter()
                .map(|(name, family)| Group {
                    label: label(name, family),
                    bars: vec![family.drop.map(Bar::of)],
                })
                .collect(),
            range: None,
            decimals: 1,
            reference: None,
        }),
    ];
    for (name, family) in families {
        let joins: Vec<Group> = family
            .breakdowns
            .iter()
            .filter(|row| row.split == "joins")
            .map(|row| Group {
                label: format!("{} joins", row.bucket),
                bars: [row.original, row.family]
                    .into_iter()
                    .map(|a| {
                        (a.n > 0).then_some(Bar {
                            value: a.ex,
                            interval: Some((a.ex - a.half_width, a.ex + a.half_width)),
                        })
                    })
                    .collect(),
            })
            .collect();
        if !joins.is_empty() {
            charts.push(charts::bars(&BarChart {
                title: &format!("{suite}: {name}: EX by number of joins (95% intervals)"),
                axis: "EX",
                series: &["seeds", name.as_str()],
                groups: joins,
                range: Some((0.0, 1.0)),
                decimals: 3,
                reference: None,
            }));
        }
    }
    FamiliesView {
        suite: suite.to_string(),
        rows,
        charts,
    }
}

fn abstention_view(suite: &SuitePlan, runs: &[CaseRun]) -> AbstentionView {
    let regions: Vec<Region> = runs.iter().map(|run| run.score.region()).collect();
    let counts = Regions::count(&regions);
    let named = [
        ("I", counts.i, "feasible, answered correctly"),
        ("II", counts.ii, "feasible, abstained"),
        ("III", counts.iii, "feasible, answered wrongly"),
        ("IV", counts.iv, "infeasible, answered"),
        ("V", counts.v, "infeasible, abstained"),
    ];
    let n = regions.len();
    let widest = [10.0, suite.penalty, n as f64]
        .into_iter()
        .fold(0.0_f64, f64::max);
    // RS(c) is linear in c: two points draw it, the marks show the penalties reported.
    let at = |c: f64| reliability::rs(&regions, c);
    let mut marks = vec![(0.0, at(0.0), "c = 0".to_string())];
    marks.push((10.0, at(10.0), "c = 10".to_string()));
    if suite.penalty != 0.0 && suite.penalty != 10.0 {
        marks.push((
            suite.penalty,
            at(suite.penalty),
            format!("c = {} (profile)", format_metric(suite.penalty)),
        ));
    }
    marks.push((n as f64, at(n as f64), "c = N".to_string()));
    let rs = marks
        .iter()
        .map(|(c, value, _)| (format_metric(*c), format!("{value:.2}")))
        .collect();
    AbstentionView {
        suite: suite.name.clone(),
        cases: n,
        penalty: format_metric(suite.penalty),
        regions_chart: charts::bars(&BarChart {
            title: &format!("{}: cases by TrustSQL region", suite.name),
            axis: "cases",
            series: &["cases"],
            groups: named
                .iter()
                .map(|(region, count, meaning)| Group {
                    label: format!("{region}: {meaning}"),
                    bars: vec![Some(Bar::of(*count as f64))],
                })
                .collect(),
            range: None,
            decimals: 0,
            reference: None,
        }),
        rs_chart: charts::line(&LineChart {
            title: &format!("{}: RS(c) over the penalty c", suite.name),
            x_axis: "penalty c",
            y_axis: "RS(c)",
            points: vec![(0.0, at(0.0)), (widest, at(widest))],
            marks,
            reference: Some((0.0, "RS = 0".to_string())),
            x_names: Vec::new(),
        }),
        regions: named.to_vec(),
        rs,
    }
}

/// EXP against EXR for the failing cases (SQLMorph Fig. 5's shape), when the suite has a
/// regime. Cases sharing a point (rounded to 0.01) are one circle, sized by their number.
fn fine_view(suite: &SuitePlan, runs: &[CaseRun], metrics: &SuiteMetrics) -> Option<FineView> {
    let regime = suite.regime()?;
    let failing: Vec<(f64, f64)> = runs
        .iter()
        .filter(|run| run.score.feasible && !run.correct())
        .filter_map(|run| run.fine.map(|f| (f.exp, f.exr)))
        .collect();
    let mut points: BTreeMap<(i64, i64), usize> = BTreeMap::new();
    for (exp, exr) in &failing {
        let key = ((exp * 100.0).round() as i64, (exr * 100.0).round() as i64);
        *points.entry(key).or_default() += 1;
    }
    let means = [Metric::Exp, Metric::Exr, Metric::F1]
        .into_iter()
        .filter_map(|metric| {
            let value = metrics.values.get(&MetricKey::Suite(metric))?;
            Some((metric.to_string(), format_metric(*value)))
        })
        .collect();
    Some(FineView {
        suite: suite.name.clone(),
        regime: regime.to_string(),
        means,
        failing: failing.len(),
        chart: (!failing.is_empty()).then(|| {
            charts::scatter(&Scatter {
                title: &format!("{}: EXP against EXR, failing cases", suite.name),
                x_axis: "EXR (recall)",
                y_axis: "EXP (precision)",
                points: points
                    .into_iter()
                    .map(|((exp, exr), n)| (exr as f64 / 100.0, exp as f64 / 100.0, n))
                    .collect(),
            })
        }),
    })
}
