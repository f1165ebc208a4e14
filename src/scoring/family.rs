//! Per-family summaries of generated variants against their seeds (spec `trustsql.md` B.2-B.5,
//! `jqe-tqa.md` Tables VII-VIII): a family's cases are scored against the suite's own cases
//! they came from (their `seed` tag). `sqlgate score` reports them and the gate's family gates
//! read them through [`FamilySummary::metric`], so both give the same numbers.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::CaseScore;
use crate::config::Metric;
use crate::metrics::retrieval::{self, RetrievalSummary};
use crate::metrics::robustness::{self, QueryShape};

/// The K of the Pass@K tables (the paper's Table 3), those at most the fewest variants a seed has.
const REPORTED_K: [u32; 4] = [1, 2, 5, 10];

/// The seed of the breakdowns' bootstrap (spec B.4: fixed, default 0).
const BOOTSTRAP_SEED: u64 = 0;

/// One family against its seeds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FamilySummary {
    /// Scored (feasible) cases of the family.
    pub n: usize,
    /// TQA's setting (`O/O`, `L/O`, `O/L`, `L/L`) when every case names the same one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setting: Option<String>,
    /// A_family: execution accuracy over the family's cases.
    pub ex: f64,
    /// Distinct seeds of the family that are cases of the suite.
    pub seeds: usize,
    /// A_orig: execution accuracy of those seeds, each counted once.
    pub a_orig: Option<f64>,
    /// `A_orig - A_paired` in points, A_paired over the cases whose seed was found.
    pub drop: Option<f64>,
    /// The paired ΔEX: cases right where their seed was wrong, and wrong where it was right.
    pub gained: usize,
    pub lost: usize,
    /// Cases whose seed is not a case of the suite: in `ex`, not in `drop`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unpaired: Vec<String>,
    /// `[A·CS, A·(2−CS)]` with the mean CS, when every paired case carries its `cs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cs_interval: Option<CsInterval>,
    /// The fewest variants any seed has: SQL2NL Pass@K exists for K up to it.
    pub min_variants: usize,
    /// SQL2NL Pass@K by K (k variants per seed, the unbiased estimator).
    pub pass_at_k: BTreeMap<u32, f64>,
    /// NL2SQL Pass@K by K over the replies' `samples`, when every case has samples.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub nl2sql_pass_at_k: BTreeMap<u32, f64>,
    /// Query variance testing across seeds.
    pub qvt: Option<QvtSummary>,
    /// Normalised schema error rates of the seeds' and the family's predictions.
    pub ner: NerRates,
    /// Accuracy by join count and clause presence, seeds and family, with 95% intervals.
    pub breakdowns: Vec<BreakdownRow>,
    /// Schema retrieval against the gold, when replies reported `retrieved`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<RetrievalRates>,
    /// `(n, c)` per seed, for a Pass@K of any K.
    #[serde(skip)]
    variants: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CsInterval {
    pub mean_cs: f64,
    pub low: f64,
    pub high: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QvtSummary {
    /// The mean over seeds of the share of their variants answered correctly.
    pub mean: f64,
    /// Population standard deviation of those shares.
    pub std_dev: f64,
    /// The worst seed's share.
    pub min: f64,
}

/// NER per error type (`E_false / (E_true + ε)`, ε = 1e-6); `None` when a group (right or wrong
/// predictions) is empty, or no prediction could be parsed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct NerRates {
    pub original: Option<NerTypes>,
    pub family: Option<NerTypes>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NerTypes {
    pub missing_columns: f64,
    pub extra_columns: f64,
    pub missing_tables: f64,
    pub extra_tables: f64,
    /// The mean of the four (the paper's headline number).
    pub mean: f64,
}

impl From<[f64; 4]> for NerTypes {
    fn from(rates: [f64; 4]) -> Self {
        NerTypes {
            missing_columns: rates[0],
            extra_columns: rates[1],
            missing_tables: rates[2],
            extra_tables: rates[3],
            mean: rates.iter().sum::<f64>() / 4.0,
        }
    }
}

/// One bucket of a breakdown: `split` is `joins`, `group_by`, `order_by`, `having` or `nested`;
/// `bucket` the join count or `with`/`without`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakdownRow {
    pub split: &'static str,
    pub bucket: String,
    pub original: Accuracy,
    pub family: Accuracy,
}

/// An accuracy with its bootstrap 95% half-width (B = 1000, seed 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Accuracy {
    pub n: usize,
    pub ex: f64,
    pub half_width: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RetrievalRates {
    /// Cases whose reply reported what it retrieved.
    pub n: usize,
    pub false_positive_rate: Option<f64>,
    pub recall: Option<f64>,
    /// Cases where a rate had an empty denominator.
    pub not_computable: usize,
}

impl From<RetrievalSummary> for RetrievalRates {
    fn from(summary: RetrievalSummary) -> Self {
        RetrievalRates {
            n: summary.n,
            false_positive_rate: summary.false_positive_rate,
            recall: summary.recall,
            not_computable: summary.not_computable,
        }
    }
}

impl FamilySummary {
    /// The value a family gate holds to its threshold, or why it cannot be computed (the gate
    /// then fails).
    pub fn metric(&self, metric: Metric) -> Result<f64, String> {
        let missing_seeds =
            || "none of its seeds is a case of the suite (the `seed_id`s name no case)".to_string();
        match metric {
            Metric::Ex if self.n > 0 => Ok(self.ex),
            Metric::Ex => Err("the family has no cases".to_string()),
            Metric::Drop => self.drop.ok_or_else(missing_seeds),
            Metric::Qvt => self
                .qvt
                .map(|q| q.mean)
                .ok_or_else(|| "the family has no cases".to_string()),
            Metric::PassAt(k) => robustness::mean_pass_at_k(&self.variants, u64::from(k))
                .ok_or_else(|| match self.min_variants {
                    0 => "the family has no cases".to_string(),
                    min => format!("a seed has {min} variant(s), fewer than K = {k}"),
                }),
            Metric::Recall | Metric::Fpr => {
                let rates = self
                    .retrieval
                    .ok_or_else(|| "no reply reported what it `retrieved`".to_string())?;
                let rate = if metric == Metric::Recall {
                    rates.recall
                } else {
                    rates.false_positive_rate
                };
                rate.ok_or_else(|| format!("{metric} has an empty denominator in every case"))
            }
            other => Err(format!(
                "`{other}` is not a family metric ({})",
                Metric::FAMILY_NAMES
            )),
        }
    }

    /// The family metrics with a value, for reports (Pass@K at the reported K).
    pub fn values(&self) -> Vec<(Metric, f64)> {
        let named = [
            Metric::Ex,
            Metric::Drop,
            Metric::Qvt,
            Metric::Recall,
            Metric::Fpr,
        ];
        named
            .into_iter()
            .chain(self.pass_at_k.keys().map(|&k| Metric::PassAt(k)))
            .filter_map(|metric| self.metric(metric).ok().map(|v| (metric, v)))
            .collect()
    }
}

/// Every family among `scores` (cases tagged `family`), against the suite's other cases as seeds.
pub fn family_summaries(scores: &[CaseScore]) -> BTreeMap<String, FamilySummary> {
    let feasible: Vec<&CaseScore> = scores.iter().filter(|s| s.feasible).collect();
    let seeds: HashMap<&str, &CaseScore> = feasible
        .iter()
        .filter(|s| s.family().is_none())
        .map(|s| (s.id.as_str(), *s))
        .collect();
    let mut families: BTreeMap<&str, Vec<&CaseScore>> = BTreeMap::new();
    for score in &feasible {
        if let Some(family) = score.family() {
            families.entry(family).or_default().push(score);
        }
    }
    families
        .into_iter()
        .map(|(name, cases)| (name.to_string(), summarize_family(&cases, &seeds)))
        .collect()
}

/// The suite's case a generated case came from.
fn seed_of<'a>(case: &CaseScore, seeds: &HashMap<&str, &'a CaseScore>) -> Option<&'a CaseScore> {
    case.seed().and_then(|id| seeds.get(id).copied())
}

fn summarize_family(cases: &[&CaseScore], seeds: &HashMap<&str, &CaseScore>) -> FamilySummary {
    let seed_of = |case: &CaseScore| seed_of(case, seeds);
    let (paired, unpaired): (Vec<&CaseScore>, Vec<&CaseScore>) =
        cases.iter().partition(|case| seed_of(case).is_some());
    let paired_seeds: BTreeMap<&str, &CaseScore> = paired
        .iter()
        .filter_map(|case| seed_of(case).map(|seed| (seed.id.as_str(), seed)))
        .collect();
    let original: Vec<bool> = paired_seeds.values().map(|s| s.correct()).collect();
    let units: Vec<(bool, f64)> = paired
        .iter()
        .map(|case| (case.correct(), case.cs.unwrap_or(1.0)))
        .collect();
    let accuracy = robustness::accuracy_drop(&original, &units);
    let all_cs = paired.iter().all(|case| case.cs.is_some());
    let (mut gained, mut lost) = (0, 0);
    for case in &paired {
        match (seed_of(case).is_some_and(|s| s.correct()), case.correct()) {
            (false, true) => gained += 1,
            (true, false) => lost += 1,
            _ => {}
        }
    }
    let by_seed = variants_by_seed(cases);
    let variants: Vec<(u64, u64)> = by_seed.values().copied().collect();
    let min_variants = variants.iter().map(|&(n, _)| n).min().unwrap_or(0) as usize;
    let qvt_units: Vec<(String, bool)> = cases
        .iter()
        .map(|case| (case.seed().unwrap_or(&case.id).to_string(), case.correct()))
        .collect();
    let samples: Option<Vec<(u64, u64)>> = cases
        .iter()
        .map(|case| case.robustness.as_ref().and_then(|r| r.samples))
        .collect();
    FamilySummary {
        n: cases.len(),
        setting: common_setting(cases),
        ex: share(cases.iter().map(|c| c.correct())),
        seeds: paired_seeds.len(),
        a_orig: accuracy.map(|a| a.a_orig),
        drop: accuracy.map(|a| a.drop_points),
        gained,
        lost,
        unpaired: unpaired.iter().map(|c| c.id.clone()).collect(),
        cs_interval: accuracy.filter(|_| all_cs).map(|a| CsInterval {
            mean_cs: a.mean_cs,
            low: a.interval.0,
            high: a.interval.1,
        }),
        min_variants,
        pass_at_k: pass_at_k_table(&variants),
        nl2sql_pass_at_k: samples
            .map(|problems| pass_at_k_table(&problems))
            .unwrap_or_default(),
        qvt: robustness::query_variance(&qvt_units).map(|q| QvtSummary {
            mean: q.mean,
            std_dev: q.std_dev,
            min: q.per_gold.values().copied().fold(f64::INFINITY, f64::min),
        }),
        ner: NerRates {
            original: ner(paired_seeds.values().copied()),
            family: ner(cases.iter().copied()),
        },
        breakdowns: breakdowns(&paired_seeds, cases, seeds),
        retrieval: retrieval_rates(cases),
        variants,
    }
}

/// `(variants, correct)` per seed id (a case without a seed tag is a seed of its own).
fn variants_by_seed(cases: &[&CaseScore]) -> BTreeMap<String, (u64, u64)> {
    let mut by_seed: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for case in cases {
        let entry = by_seed
            .entry(case.seed().unwrap_or(&case.id).to_string())
            .or_default();
        entry.0 += 1;
        entry.1 += u64::from(case.correct());
    }
    by_seed
}

/// Pass@K at the reported K that every problem has enough samples for.
fn pass_at_k_table(problems: &[(u64, u64)]) -> BTreeMap<u32, f64> {
    REPORTED_K
        .into_iter()
        .filter_map(|k| Some((k, robustness::mean_pass_at_k(problems, u64::from(k))?)))
        .collect()
}

fn common_setting(cases: &[&CaseScore]) -> Option<String> {
    let settings: BTreeSet<Option<&String>> = cases.iter().map(|c| c.tags.get("setting")).collect();
    match settings.into_iter().collect::<Vec<_>>().as_slice() {
        [Some(setting)] => Some((*setting).clone()),
        _ => None,
    }
}

fn share(outcomes: impl Iterator<Item = bool>) -> f64 {
    let (mut hits, mut total) = (0usize, 0usize);
    for outcome in outcomes {
        hits += usize::from(outcome);
        total += 1;
    }
    if total == 0 {
        0.0
    } else {
        hits as f64 / total as f64
    }
}

fn ner<'a>(cases: impl Iterator<Item = &'a CaseScore>) -> Option<NerTypes> {
    let predictions: Vec<_> = cases
        .filter_map(|case| {
            let errors = case.robustness.as_ref()?.schema_errors?;
            Some((case.correct(), errors))
        })
        .collect();
    robustness::normalised_schema_error_rate(&predictions).map(NerTypes::from)
}

/// The splits of spec B.4 on the seed's gold (the case's own when its seed is not in the suite).
fn breakdowns(
    seeds: &BTreeMap<&str, &CaseScore>,
    cases: &[&CaseScore],
    all_seeds: &HashMap<&str, &CaseScore>,
) -> Vec<BreakdownRow> {
    let shape = |case: &CaseScore| case.robustness.as_ref().and_then(|r| r.shape);
    let original: Vec<(QueryShape, bool)> = seeds
        .values()
        .filter_map(|seed| Some((shape(seed)?, seed.correct())))
        .collect();
    let family: Vec<(QueryShape, bool)> = cases
        .iter()
        .filter_map(|case| {
            let shape = seed_of(case, all_seeds)
                .and_then(shape)
                .or_else(|| shape(case))?;
            Some((shape, case.correct()))
        })
        .collect();
    let mut rows = Vec::new();
    let joins: BTreeSet<usize> = original
        .iter()
        .chain(&family)
        .map(|(s, _)| s.joins)
        .collect();
    for count in joins {
        rows.push(row("joins", count.to_string(), &original, &family, |s| {
            s.joins == count
        }));
    }
    let clauses: [(&'static str, fn(&QueryShape) -> bool); 4] = [
        ("group_by", |s| s.group_by),
        ("order_by", |s| s.order_by),
        ("having", |s| s.having),
        ("nested", |s| s.nested),
    ];
    for (split, present) in clauses {
        for (bucket, with) in [("with", true), ("without", false)] {
            let in_bucket = |s: &QueryShape| present(s) == with;
            if original.iter().chain(&family).any(|(s, _)| in_bucket(s)) {
                rows.push(row(
                    split,
                    bucket.to_string(),
                    &original,
                    &family,
                    in_bucket,
                ));
            }
        }
    }
    rows
}

fn row(
    split: &'static str,
    bucket: String,
    original: &[(QueryShape, bool)],
    family: &[(QueryShape, bool)],
    in_bucket: impl Fn(&QueryShape) -> bool,
) -> BreakdownRow {
    let estimate = |units: &[(QueryShape, bool)]| {
        let outcomes: Vec<bool> = units
            .iter()
            .filter(|(shape, _)| in_bucket(shape))
            .map(|(_, correct)| *correct)
            .collect();
        let estimate = robustness::bootstrap(&outcomes, None, BOOTSTRAP_SEED);
        Accuracy {
            n: estimate.n,
            ex: estimate.accuracy,
            half_width: estimate.half_width,
        }
    };
    BreakdownRow {
        split,
        bucket,
        original: estimate(original),
        family: estimate(family),
    }
}

fn retrieval_rates(cases: &[&CaseScore]) -> Option<RetrievalRates> {
    let rates: Vec<_> = cases
        .iter()
        .filter_map(|case| case.robustness.as_ref()?.retrieval)
        .collect();
    (!rates.is_empty()).then(|| retrieval::summarize(&rates).into())
}
