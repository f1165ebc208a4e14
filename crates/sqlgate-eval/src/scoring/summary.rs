//! Aggregates of scored cases, overall, per tag family and per generated family
//! ([`super::family`]). The gate's suite and family metrics are read from the same functions, so
//! `sqlgate score` and the gate report the same means.

use std::collections::BTreeMap;

use serde::Serialize;

use super::family::{family_summaries, FamilySummary};
use super::{CaseScore, ComputedMetric, FineScores, Scoring};
use crate::metrics::case_metric::CaseMetric;
use crate::metrics::efficiency::measure::{Efficiency, Settings};
use crate::metrics::efficiency::{mean_score, reward, Ratio};
use crate::metrics::esm;
use crate::metrics::ex::{Mode, Verdict};
use crate::metrics::reliability::{self, Penalty, Reliability};
use crate::metrics::sqlmorph::{self, Regime};

/// Execution accuracy over a group of cases.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tally {
    /// Cases counted.
    pub n: usize,
    /// Sum of their scores.
    pub correct: f64,
    /// `correct / n`, 0 for an empty group.
    pub ex: f64,
}

impl Tally {
    fn add(&mut self, score: f64) {
        self.n += 1;
        self.correct += score;
        self.ex = self.correct / self.n as f64;
    }
}

/// Tag families with more distinct values than this are identifiers, not breakdowns.
const MAX_BREAKDOWN_VALUES: usize = 32;

/// Aggregates over the feasible cases.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The EX mode the cases were scored under.
    pub mode: Mode,
    /// Feasible cases scored.
    pub n: usize,
    /// Execution accuracy over them.
    pub ex: f64,
    /// Defog's exact-match rate, in the defog modes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact: Option<f64>,
    /// Count of each verdict class over feasible cases.
    pub verdicts: BTreeMap<Verdict, usize>,
    /// Infeasible cases: how many there were and how many the system abstained on.
    pub infeasible: usize,
    /// Of the infeasible cases, those the system abstained on.
    pub infeasible_abstained: usize,
    /// Predictions whose markdown fences or prose were stripped.
    pub cleaned: usize,
    /// Cases whose metric could not be computed (scored 0), by metric.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metric_errors: BTreeMap<ComputedMetric, usize>,
    /// EX per value of each tag family (`db`, `category`, `hardness`, `difficulty`...).
    pub breakdown: BTreeMap<String, BTreeMap<String, Tally>>,
    /// Mean SQLMorph metrics by regime name ([`fine_means`]); empty unless asked for.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fine: BTreeMap<String, FineScores>,
    /// Cases whose partial-cell matching was truncated (diagnostic `partial_match_truncated`):
    /// their fine scores count exact cells only.
    #[serde(skip_serializing_if = "is_zero")]
    pub partial_match_truncated: usize,
    /// Spider exact set match, overall and per hardness, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub esm: Option<HardnessMeans>,
    /// Enhanced Tree Matching, overall and per hardness, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etm: Option<HardnessMeans>,
    /// BIRD mini-dev Soft-F1, overall and per BIRD difficulty, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soft_f1: Option<SoftF1Means>,
    /// TrustSQL's RS(c) over every case, feasible or not: `rs`, `regions`, `rs_n` and
    /// `rs_categories` in the JSON.
    #[serde(flatten)]
    pub reliability: Reliability,
    /// Each generated family against its seeds (cases tagged `family`), by family name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub families: BTreeMap<String, FamilySummary>,
    /// VES and R-VES over the feasible cases, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<EfficiencyMeans>,
    /// The mean of each registered per-case metric over the feasible cases (0 where a case
    /// has no value), when asked for.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<CaseMetric, f64>,
}

/// BIRD's VES and R-VES over the feasible cases (spec `evaluators.md` 3.3-3.4), timed and by
/// steps: each the mean of `100 * sqrt(R)` (VES, at least 0) or `100 * sqrt(reward(R))`
/// (R-VES, 0 to 111.8).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EfficiencyMeans {
    /// Timed iterations per correct case, when timed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u32>,
    /// VES from times, when timed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ves: Option<f64>,
    /// R-VES from times, when timed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rves: Option<f64>,
    /// VES from the deterministic cost ratio, when counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ves_steps: Option<f64>,
    /// R-VES from the deterministic cost ratio, when counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rves_steps: Option<f64>,
}

/// The efficiency means of the feasible cases under `settings` (a case without a value counts
/// as 0), summed in case order as the reference does.
fn efficiency_means(settings: &Settings, scores: &[&CaseScore]) -> EfficiencyMeans {
    let feasible: Vec<&CaseScore> = scores.iter().copied().filter(|s| s.feasible).collect();
    // (VES, R-VES) of one measurement, when it was taken.
    let means = |taken: bool, pick: fn(&Efficiency) -> Option<Ratio>| {
        let ratios: Vec<f64> = feasible
            .iter()
            .map(|s| {
                s.efficiency
                    .as_ref()
                    .and_then(pick)
                    .map_or(0.0, |r| r.ratio)
            })
            .collect();
        let ves = mean_score(ratios.iter().copied());
        let rves = mean_score(ratios.iter().map(|&r| reward(r)));
        taken.then_some((ves, rves)).unzip()
    };
    let (ves, rves) = means(settings.timed, |e| e.timed);
    let (ves_steps, rves_steps) = means(settings.steps, |e| e.steps);
    EfficiencyMeans {
        iterations: settings.timed.then_some(settings.iterations),
        ves,
        rves,
        ves_steps,
        rves_steps,
    }
}

/// Means of a 0/1 structural metric: `all` and each Spider hardness level.
#[derive(Debug, Clone, Serialize)]
pub struct HardnessMeans {
    /// The mean over every case.
    pub all: f64,
    /// The mean per Spider hardness level, over the cases whose gold query has one.
    pub by_hardness: BTreeMap<String, f64>,
    /// The reference's tables, for the text report.
    #[serde(skip)]
    pub tables: String,
}

/// Means of Soft-F1 (0..1; the BIRD script prints 100 × these).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SoftF1Means {
    /// The mean over every feasible case.
    pub all: f64,
    /// The mean per value of the `difficulty` tag (BIRD's `simple`, `moderate`,
    /// `challenging`), over the cases that have one.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_difficulty: BTreeMap<String, f64>,
}

/// Aggregates `scores`, with RS for the defaults (0, 10, N) and every penalty of `penalties`,
/// and the means of every metric `scoring` computed.
pub fn summarize(scoring: &Scoring, scores: &[&CaseScore], penalties: &[Penalty]) -> Summary {
    let feasible: Vec<&CaseScore> = scores.iter().copied().filter(|s| s.feasible).collect();
    let mut overall = Tally::default();
    let mut verdicts = BTreeMap::new();
    let mut breakdown: BTreeMap<String, BTreeMap<String, Tally>> = BTreeMap::new();
    for score in &feasible {
        overall.add(score.ex);
        *verdicts.entry(score.verdict).or_insert(0) += 1;
        let families = std::iter::once(("db", &score.db))
            .chain(score.tags.iter().map(|(k, v)| (k.as_str(), v)));
        for (family, value) in families {
            breakdown
                .entry(family.to_string())
                .or_default()
                .entry(value.clone())
                .or_default()
                .add(score.ex);
        }
    }
    breakdown.retain(|_, values| values.len() <= MAX_BREAKDOWN_VALUES);
    let exact = feasible
        .iter()
        .map(|s| s.exact)
        .collect::<Option<Vec<bool>>>()
        .filter(|flags| !flags.is_empty())
        .map(|flags| flags.iter().filter(|&&f| f).count() as f64 / flags.len() as f64);
    let infeasible: Vec<&CaseScore> = scores.iter().copied().filter(|s| !s.feasible).collect();
    let mut metric_errors = BTreeMap::new();
    for (metric, _) in scores.iter().flat_map(|s| s.metric_errors()) {
        *metric_errors.entry(metric).or_insert(0) += 1;
    }
    let facts: Vec<_> = scores.iter().map(|s| s.facts()).collect();
    Summary {
        mode: scoring.mode,
        n: overall.n,
        ex: overall.ex,
        exact,
        verdicts,
        infeasible: infeasible.len(),
        infeasible_abstained: infeasible
            .iter()
            .filter(|s| s.verdict == Verdict::Abstained)
            .count(),
        cleaned: scores.iter().filter(|s| s.cleaned).count(),
        metric_errors,
        breakdown,
        fine: fine_means(&scoring.regimes, scores),
        partial_match_truncated: scores
            .iter()
            .filter(|s| {
                s.diagnostics
                    .iter()
                    .any(|d| d.code == sqlmorph::Note::PartialMatchTruncated.code())
            })
            .count(),
        esm: scoring.esm.as_ref().map(|_| esm_means(scores)),
        etm: scoring.etm.as_ref().map(|_| etm_means(scores)),
        soft_f1: scoring.soft_f1.then(|| soft_f1_means(scores)),
        reliability: reliability::reliability(
            &facts,
            &reliability::penalties_with_defaults(penalties),
        ),
        families: family_summaries(scores),
        efficiency: scoring
            .efficiency
            .as_ref()
            .map(|settings| efficiency_means(settings, scores)),
        metrics: case_metric_means(&scoring.case_metrics, &feasible),
    }
}

/// The mean of each registered metric over the feasible cases, a case without a value
/// counting as 0.
fn case_metric_means(metrics: &[CaseMetric], feasible: &[&CaseScore]) -> BTreeMap<CaseMetric, f64> {
    let n = feasible.len().max(1) as f64;
    metrics
        .iter()
        .map(|&metric| {
            let sum: f64 = feasible
                .iter()
                .map(|s| s.metrics.get(&metric).copied().unwrap_or(0.0))
                .sum();
            (metric, sum / n)
        })
        .collect()
}

/// Mean fine-grained metrics per regime over the feasible cases; a case without scores for a
/// regime counts as 0/0/0.
pub fn fine_means(regimes: &[Regime], scores: &[&CaseScore]) -> BTreeMap<String, FineScores> {
    let feasible: Vec<&CaseScore> = scores.iter().copied().filter(|s| s.feasible).collect();
    let n = feasible.len().max(1) as f64;
    regimes
        .iter()
        .map(|regime| {
            let name = regime.to_string();
            let mut sum = FineScores::default();
            for case in feasible.iter().filter_map(|s| s.fine.get(&name)) {
                sum.exp += case.exp;
                sum.exr += case.exr;
                sum.f1 += case.f1;
            }
            let mean = FineScores {
                exp: sum.exp / n,
                exr: sum.exr / n,
                f1: sum.f1 / n,
            };
            (name, mean)
        })
        .collect()
}

/// Soft-F1 over the feasible cases (0 where it is unset), overall and per difficulty.
pub fn soft_f1_means(scores: &[&CaseScore]) -> SoftF1Means {
    let mut totals: BTreeMap<Option<&str>, (usize, f64)> = BTreeMap::new();
    for score in scores.iter().filter(|s| s.feasible) {
        let value = score.soft_f1.unwrap_or(0.0);
        let difficulty = score.tags.get("difficulty").map(String::as_str);
        for level in std::iter::once(None).chain(difficulty.map(Some)) {
            let entry = totals.entry(level).or_default();
            entry.0 += 1;
            entry.1 += value;
        }
    }
    let mean = |(count, sum): (usize, f64)| sum / count as f64;
    SoftF1Means {
        all: totals.remove(&None).map_or(0.0, mean),
        by_difficulty: totals
            .into_iter()
            .filter_map(|(level, counts)| Some((level?.to_string(), mean(counts))))
            .collect(),
    }
}

/// Exact set match over the feasible cases, with the reference's `--etype match` tables.
pub fn esm_means(scores: &[&CaseScore]) -> HardnessMeans {
    let mut tables = esm::Summary::default();
    for pair in scores.iter().filter_map(|s| s.esm_detail.as_ref()) {
        tables.add(pair);
    }
    let mut means = hardness_means(scores, |s| s.esm);
    means.tables = tables.to_string();
    means
}

/// Enhanced Tree Matching over the feasible cases, in the layout of the ESM tables.
pub fn etm_means(scores: &[&CaseScore]) -> HardnessMeans {
    let mut means = hardness_means(scores, |s| s.etm);
    means.tables = etm_table(means.all, &means.by_hardness);
    means
}

/// The mean of a 0/1 metric over the feasible cases (0 where it is unset), overall and per
/// hardness of the gold (cases without a hardness count in `all` only).
fn hardness_means(scores: &[&CaseScore], metric: fn(&CaseScore) -> Option<u8>) -> HardnessMeans {
    let mut totals: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let feasible = scores.iter().filter(|s| s.feasible);
    for score in feasible {
        let matched = usize::from(metric(score).unwrap_or(0));
        let levels =
            std::iter::once("all".to_string()).chain(score.hardness.map(|h| h.to_string()));
        for level in levels {
            let entry = totals.entry(level).or_default();
            entry.0 += 1;
            entry.1 += matched;
        }
    }
    let mean = |(count, matched): (usize, usize)| matched as f64 / count as f64;
    let all = totals.remove("all").map_or(0.0, mean);
    HardnessMeans {
        all,
        by_hardness: totals
            .into_iter()
            .map(|(level, counts)| (level, mean(counts)))
            .collect(),
        tables: String::new(),
    }
}

/// The ETM line per hardness, in the layout of the exact-set-match table.
fn etm_table(all: f64, by_hardness: &BTreeMap<String, f64>) -> String {
    let levels = ["easy", "medium", "hard", "extra"];
    let mut header = format!("{:<20}", "");
    let mut row = format!("{:<20}", "tree match");
    for level in levels.iter().filter(|l| by_hardness.contains_key(**l)) {
        header.push_str(&format!("{level:<20}"));
        row.push_str(&format!("{:<20.3}", by_hardness[*level]));
    }
    header.push_str(&format!("{:<20}", "all"));
    row.push_str(&format!("{all:<20.3}"));
    format!("{}\n{}", header.trim_end(), row.trim_end())
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
