//! Text tables of generated families against their seeds, for `sqlgate score` and the gate's
//! terminal summary: one overview row per family (SQLMorph Table VII's shape: ΔEX per setting),
//! then each family's Pass@K, QVT, NER, breakdowns with 95% intervals and retrieval rates.

use std::collections::BTreeMap;
use std::fmt::Write;

use sqlgate_eval::scoring::family::{Accuracy, NerTypes};
use sqlgate_eval::scoring::FamilySummary;

const MISSING: &str = "–";

/// One row per family: n, seeds, A_orig, A_family, the drop in points, the paired gains and
/// losses, and the CS-adjusted interval.
pub fn overview(families: &BTreeMap<String, FamilySummary>) -> String {
    let width = families
        .keys()
        .map(|name| name.chars().count())
        .max()
        .unwrap_or(0)
        .max("family".len());
    let mut out = format!(
        "{:<width$}  {:>7}  {:>5}  {:>5}  {:>6}  {:>8}  {:>9}  {:>6}  {:>4}  {}\n",
        "family",
        "setting",
        "n",
        "seeds",
        "A_orig",
        "A_family",
        "drop(pts)",
        "gained",
        "lost",
        "CS interval"
    );
    for (name, family) in families {
        let interval = family.cs_interval.map_or(MISSING.to_string(), |i| {
            format!("[{:.3}, {:.3}] (CS {:.2})", i.low, i.high, i.mean_cs)
        });
        let _ = writeln!(
            out,
            "{name:<width$}  {:>7}  {:>5}  {:>5}  {:>6}  {:>8.3}  {:>9}  {:>6}  {:>4}  {interval}",
            family.setting.as_deref().unwrap_or(MISSING),
            family.n,
            family.seeds,
            optional(family.a_orig, 3),
            family.ex,
            optional(family.drop, 1),
            family.gained,
            family.lost,
        );
    }
    for (name, family) in families.iter().filter(|(_, f)| !f.unpaired.is_empty()) {
        let _ = writeln!(
            out,
            "{name}: {} case(s) have no seed among the suite's cases (in A_family, not in the drop), e.g. `{}`",
            family.unpaired.len(),
            family.unpaired[0]
        );
    }
    out
}

/// The overview and every family's details.
pub fn render(families: &BTreeMap<String, FamilySummary>) -> String {
    let mut out = format!(
        "families against their seeds (drop = A_orig - A_family in points)\n{}",
        overview(families)
    );
    for (name, family) in families {
        let _ = writeln!(out, "\n{name}:");
        let _ = writeln!(
            out,
            "  SQL2NL Pass@K (at least {} variant(s) per seed): {}",
            family.min_variants,
            pass_at_k(&family.pass_at_k)
        );
        if !family.nl2sql_pass_at_k.is_empty() {
            let _ = writeln!(
                out,
                "  NL2SQL Pass@K (samples): {}",
                pass_at_k(&family.nl2sql_pass_at_k)
            );
        }
        if let Some(qvt) = family.qvt {
            let _ = writeln!(
                out,
                "  QVT {:.3} (std dev {:.3} across seeds, worst seed {:.3})",
                qvt.mean, qvt.std_dev, qvt.min
            );
        }
        let _ = writeln!(
            out,
            "  NER (E_false / (E_true + ε), ε = 1e-6) original: {}\n  NER family: {}",
            ner(family.ner.original),
            ner(family.ner.family)
        );
        if let Some(retrieval) = family.retrieval {
            let _ = writeln!(
                out,
                "  retrieval over {} replies: FPR {}, recall {} ({} with an empty denominator)",
                retrieval.n,
                optional(retrieval.false_positive_rate, 3),
                optional(retrieval.recall, 3),
                retrieval.not_computable
            );
        }
        if !family.breakdowns.is_empty() {
            let _ = writeln!(
                out,
                "  {:<8}  {:<7}  {:>5}  {:>15}  {:>5}  {:>15}",
                "split", "bucket", "n", "original", "n", "family"
            );
            for row in &family.breakdowns {
                let _ = writeln!(
                    out,
                    "  {:<8}  {:<7}  {:>5}  {:>15}  {:>5}  {:>15}",
                    row.split,
                    row.bucket,
                    row.original.n,
                    accuracy(row.original),
                    row.family.n,
                    accuracy(row.family)
                );
            }
        }
    }
    out
}

fn optional(value: Option<f64>, decimals: usize) -> String {
    value.map_or(MISSING.to_string(), |v| format!("{v:.decimals$}"))
}

fn pass_at_k(table: &BTreeMap<u32, f64>) -> String {
    if table.is_empty() {
        return MISSING.to_string();
    }
    table
        .iter()
        .map(|(k, v)| format!("@{k} {v:.3}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn ner(rates: Option<NerTypes>) -> String {
    rates.map_or_else(
        || "– (needs right and wrong predictions that parse)".to_string(),
        |r| {
            format!(
                "missing columns {:.2}, extra columns {:.2}, missing tables {:.2}, extra tables {:.2}, mean {:.2}",
                r.missing_columns, r.extra_columns, r.missing_tables, r.extra_tables, r.mean
            )
        },
    )
}

/// `0.750 ± 0.125`, or `–` for an empty bucket.
fn accuracy(estimate: Accuracy) -> String {
    if estimate.n == 0 {
        MISSING.to_string()
    } else {
        format!("{:.3} ± {:.3}", estimate.ex, estimate.half_width)
    }
}
