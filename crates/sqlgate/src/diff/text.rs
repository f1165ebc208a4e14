//! A diff for the terminal: every change listed, the metric table aligned in columns.

use std::fmt::Write as _;

use super::{signed, value, Change, Diff, Listed, MetricDelta, Side};

/// The whole diff as plain text.
pub fn render(diff: &Diff) -> String {
    let mut out = format!("sqlgate diff: {}\n", diff.headline);
    let _ = writeln!(out, "  base  {}", describe(&diff.base));
    let _ = writeln!(out, "  head  {}", describe(&diff.head));
    let _ = writeln!(out, "  {} cases in both", diff.summary.compared);
    changes(&mut out, "regressions", &diff.regressions, true);
    changes(&mut out, "fixes", &diff.fixes, false);
    metrics(&mut out, diff);
    listed(&mut out, "new cases", &diff.new);
    listed(&mut out, "removed cases", &diff.removed);
    changes(
        &mut out,
        "changed answers (same pass/fail)",
        &diff.changed,
        false,
    );
    if !diff.notes.is_empty() {
        out.push_str("\nnotes:\n");
        for note in &diff.notes {
            let _ = writeln!(out, "  - {note}");
        }
    }
    out
}

/// `base.json (run record, 39 cases, shard hash:1/4)`.
fn describe(side: &Side) -> String {
    let shard = side
        .partition
        .as_ref()
        .map_or_else(String::new, |p| format!(", shard {p}"));
    format!(
        "{} ({}, {} cases{shard})",
        side.path,
        side.kind.label(),
        side.cases
    )
}

/// Each change with its two answers; with `detail`, head's detail (question, gold, error).
fn changes(out: &mut String, title: &str, changes: &[Change], detail: bool) {
    if changes.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title} ({}):", changes.len());
    for change in changes {
        let _ = writeln!(
            out,
            "  {}  {} -> {}",
            change.test,
            change.base.verdict.as_str(),
            change.head.verdict.as_str()
        );
        let _ = writeln!(out, "      base: {}", change.base.answer);
        let _ = writeln!(out, "      head: {}", change.head.answer);
        let lines = change.head.detail.iter().filter(|_| detail);
        for line in lines.flat_map(|d| d.lines()) {
            let _ = writeln!(out, "      | {line}");
        }
    }
}

fn listed(out: &mut String, title: &str, cases: &[Listed]) {
    if cases.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title} ({}):", cases.len());
    for case in cases {
        let _ = writeln!(
            out,
            "  {}  {}  {}",
            case.test,
            case.case.verdict.as_str(),
            case.case.answer
        );
    }
}

fn metrics(out: &mut String, diff: &Diff) {
    let rows: Vec<[String; 7]> = diff
        .suites
        .iter()
        .flat_map(|suite| {
            suite
                .metrics
                .iter()
                .map(|metric| metric_row(&suite.name, metric))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nmetrics: means over each suite's feasible cases; delta and 95% interval from a \
         paired bootstrap over the feasible cases in both ({} resamples, seed {}):",
        diff.bootstrap.resamples, diff.bootstrap.seed
    );
    let header = [
        "suite",
        "metric",
        "base",
        "head",
        "delta",
        "95% interval",
        "",
    ]
    .map(String::from);
    let mut widths = [0; 7];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::from(" ");
        for (index, (cell, width)) in row.iter().zip(widths).enumerate() {
            // Names to the left, numbers to the right.
            if (2..=4).contains(&index) {
                let _ = write!(line, " {cell:>width$}");
            } else {
                let _ = write!(line, " {cell:<width$}");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// A metric's cells: suite, metric, base, head, delta, interval, verdict on the noise.
pub(super) fn metric_row(suite: &str, metric: &MetricDelta) -> [String; 7] {
    let or_dash = |x: Option<f64>, show: fn(f64) -> String| x.map_or("-".to_string(), show);
    let interval = metric.interval.map_or("-".to_string(), |i| {
        format!("[{}, {}]", signed(i.low), signed(i.high))
    });
    let noise = match metric.interval {
        Some(_) if metric.beyond_noise => "beyond noise",
        Some(_) => "within noise",
        None => "",
    };
    [
        suite.to_string(),
        metric.metric.to_string(),
        or_dash(metric.base, value),
        or_dash(metric.head, value),
        or_dash(metric.delta, signed),
        interval,
        noise.to_string(),
    ]
}
