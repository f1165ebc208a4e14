//! `sqlgate score` text output: overall EX, verdict counts and one table per tag family.

use std::fmt::Write;

use sqlgate_eval::metrics::reliability::Reliability;
use sqlgate_eval::scoring::{EfficiencyMeans, SoftF1Means, Summary, Tally};

/// Levels whose natural order is not alphabetical (Spider hardness, BIRD difficulty).
const LEVEL_ORDER: &[&str] = &[
    "easy",
    "medium",
    "hard",
    "extra",
    "simple",
    "moderate",
    "challenging",
];

/// VES and R-VES, timed (with the iterations: a timed number is of this machine) and by steps.
fn render_efficiency(out: &mut String, efficiency: &EfficiencyMeans) {
    out.push('\n');
    if let (Some(ves), Some(rves)) = (efficiency.ves, efficiency.rves) {
        let iterations = efficiency.iterations.unwrap_or_default();
        let _ = writeln!(
            out,
            "VES {ves:.2}, R-VES {rves:.2} (timed: {iterations} iterations on this machine)"
        );
    }
    if let (Some(ves), Some(rves)) = (efficiency.ves_steps, efficiency.rves_steps) {
        let _ = writeln!(
            out,
            "VES (steps) {ves:.2}, R-VES (steps) {rves:.2} (deterministic cost ratio)"
        );
    }
}

pub fn render(summary: &Summary, source: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{source}: {} scored cases, mode {}",
        summary.n,
        summary.mode.name()
    );
    let _ = writeln!(out, "EX {:.3} ({:.1}%)", summary.ex, summary.ex * 100.0);
    if let Some(exact) = summary.exact {
        let _ = writeln!(out, "exact {:.3} ({:.1}%)", exact, exact * 100.0);
    }
    let verdicts: Vec<String> = summary
        .verdicts
        .iter()
        .map(|(verdict, count)| {
            let name = serde_json::to_value(verdict).ok();
            format!(
                "{} {count}",
                name.as_ref().and_then(|v| v.as_str()).unwrap_or("?")
            )
        })
        .collect();
    let _ = writeln!(out, "verdicts: {}", verdicts.join(", "));
    if summary.infeasible > 0 {
        let _ = writeln!(
            out,
            "infeasible: {} (abstained on {}, not part of EX)",
            summary.infeasible, summary.infeasible_abstained
        );
    }
    if summary.cleaned > 0 {
        let _ = writeln!(
            out,
            "predictions cleaned of markdown or prose: {}",
            summary.cleaned
        );
    }
    for (metric, count) in &summary.metric_errors {
        let _ = writeln!(
            out,
            "{} could not be computed for {count} case(s), each scored 0 (see `{}` in the JSON)",
            metric.name(),
            metric.error_code()
        );
    }
    render_fine(&mut out, summary);
    if let Some(esm) = &summary.esm {
        let _ = writeln!(
            out,
            "\nexact set match {:.3}\n{}",
            esm.all,
            esm.tables.trim_end()
        );
    }
    if let Some(etm) = &summary.etm {
        let _ = writeln!(out, "\nETM {:.3}\n{}", etm.all, etm.tables.trim_end());
    }
    if let Some(soft_f1) = &summary.soft_f1 {
        render_soft_f1(&mut out, soft_f1);
    }
    for (metric, mean) in &summary.metrics {
        let _ = writeln!(out, "\n{metric} {mean:.3}");
    }
    if let Some(efficiency) = &summary.efficiency {
        render_efficiency(&mut out, efficiency);
    }
    render_reliability(&mut out, &summary.reliability);
    if !summary.families.is_empty() {
        let _ = write!(
            out,
            "\n{}",
            sqlgate::report::family_text::render(&summary.families)
        );
    }
    for (family, values) in &summary.breakdown {
        let mut rows: Vec<(&String, &Tally)> = values.iter().collect();
        rows.sort_by_key(|(value, _)| level_order(value));
        let width = rows
            .iter()
            .map(|(value, _)| value.chars().count())
            .max()
            .unwrap_or(0)
            .max(family.len());
        let _ = writeln!(
            out,
            "\n{family:<width$}  {:>6}  {:>7}  {:>6}",
            "n", "correct", "EX"
        );
        for (value, tally) in rows {
            let _ = writeln!(
                out,
                "{value:<width$}  {:>6}  {:>7}  {:>6.3}",
                tally.n, tally.correct, tally.ex
            );
        }
    }
    out
}

/// The SQLMorph metrics table, one row per regime, when `--metrics` asked for it.
fn render_fine(out: &mut String, summary: &Summary) {
    if summary.fine.is_empty() {
        return;
    }
    let width = summary
        .fine
        .keys()
        .map(String::len)
        .max()
        .unwrap_or(0)
        .max(6);
    let _ = writeln!(
        out,
        "\n{:<width$}  {:>6}  {:>6}  {:>6}",
        "regime", "EXP", "EXR", "F1"
    );
    for (regime, scores) in &summary.fine {
        let _ = writeln!(
            out,
            "{regime:<width$}  {:>6.3}  {:>6.3}  {:>6.3}",
            scores.exp, scores.exr, scores.f1
        );
    }
    if summary.partial_match_truncated > 0 {
        let _ = writeln!(
            out,
            "partial-cell matching truncated on {} cases (pc_max_pairs): their scores count exact cells only",
            summary.partial_match_truncated
        );
    }
}

/// RS(c) for every penalty, the region counts and one row per category.
fn render_reliability(out: &mut String, reliability: &Reliability) {
    let names: Vec<String> = reliability
        .penalties
        .iter()
        .map(|p| p.to_string())
        .collect();
    let line: Vec<String> = names
        .iter()
        .map(|name| format!("RS({name}) {}", one_decimal(reliability.rs[name])))
        .collect();
    let _ = writeln!(out, "\n{} (N = {})", line.join(", "), reliability.n);
    let r = &reliability.regions;
    let _ = writeln!(
        out,
        "regions: I {}, II {}, III {}, IV {}, V {}",
        r.i, r.ii, r.iii, r.iv, r.v
    );
    let width = reliability
        .categories
        .keys()
        .map(|key| key.chars().count())
        .max()
        .unwrap_or(0)
        .max("category".len());
    let _ = write!(
        out,
        "\n{:<width$}  {:>6}  {:>6}  {:>6}",
        "category", "n", "+", "-"
    );
    for name in &names {
        let _ = write!(out, "  {:>10}", format!("RS({name})"));
    }
    let _ = writeln!(out);
    for (key, category) in &reliability.categories {
        let _ = write!(
            out,
            "{key:<width$}  {:>6}  {:>6}  {:>6}",
            category.count, category.positive, category.negative
        );
        for name in &names {
            let _ = write!(out, "  {:>10}", one_decimal(category.rs[name]));
        }
        let _ = writeln!(out);
    }
}

/// `{:.1}` without a negative zero: a penalty score of -0.04 reads `0.0`, not `-0.0`.
fn one_decimal(value: f64) -> String {
    let text = format!("{value:.1}");
    match text.strip_prefix('-') {
        Some(magnitude) if magnitude.chars().all(|c| c == '0' || c == '.') => magnitude.to_string(),
        _ => text,
    }
}

/// Sort key of a tag value: known levels in their natural order, then the others by name.
fn level_order(value: &str) -> (usize, String) {
    let rank = LEVEL_ORDER.iter().position(|level| *level == value);
    (rank.unwrap_or(LEVEL_ORDER.len()), value.to_string())
}

/// Soft-F1 on sqlgate's 0..1 scale, with the BIRD script's numbers (100 × the mean) per
/// difficulty level when the cases have one.
fn render_soft_f1(out: &mut String, soft_f1: &SoftF1Means) {
    let _ = writeln!(
        out,
        "\nSoft-F1 {:.3} (BIRD prints {:.2})",
        soft_f1.all,
        soft_f1.all * 100.0
    );
    let mut levels: Vec<(&String, &f64)> = soft_f1.by_difficulty.iter().collect();
    levels.sort_by_key(|(level, _)| level_order(level));
    for (level, mean) in levels {
        let _ = writeln!(out, "  {level:<12} {:.2}", mean * 100.0);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_decimal_has_no_negative_zero() {
        assert_eq!(super::one_decimal(-0.04), "0.0");
        assert_eq!(super::one_decimal(-0.0), "0.0");
        assert_eq!(super::one_decimal(-0.06), "-0.1");
        assert_eq!(super::one_decimal(266.66), "266.7");
    }
}
