//! Per-family summaries of generated variants against their seeds (spec `trustsql.md` B.2-B.5,
//! `jqe-tqa.md` Tables VII-VIII): a family's cases are scored against the suite's own cases
//! they came from (their `seed` tag). `sqlgate score` reports them and the gate's family gates
//! read them through [`FamilySummary::metric`], so both give the same numbers.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::CaseScore;
use crate::metrics::retrieval::{self, CaseFact, DeltaEx, RetrievalSummary};
use crate::metrics::sql2nl::{self, share, QueryShape};
use crate::scoring::Metric;

/// The K of the Pass@K tables (the SQL2NL paper's Table 3): a family's, those at most the
/// fewest variants a seed has; a sampled case's, those at most its samples.
pub const REPORTED_K: [u32; 4] = [1, 2, 5, 10];

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
    /// Cases wrong where their seed was right.
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

/// The CS-adjusted interval of the family's accuracy (SQL2NL §2.3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CsInterval {
    /// Mean cosine similarity of the variants to their seeds.
    pub mean_cs: f64,
    /// `A_para * CS`.
    pub low: f64,
    /// `A_para * (2 - CS)`.
    pub high: f64,
}

/// Query variance testing over the family's seeds.
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
    /// Over the seeds' predictions.
    pub original: Option<NerTypes>,
    /// Over the family's predictions.
    pub family: Option<NerTypes>,
}

/// NER of each schema error type, and their mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NerTypes {
    /// Gold columns the prediction misses.
    pub missing_columns: f64,
    /// Columns the prediction adds.
    pub extra_columns: f64,
    /// Gold tables the prediction misses.
    pub missing_tables: f64,
    /// Tables the prediction adds.
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
    /// The query feature split on.
    pub split: &'static str,
    /// The feature's value for this row.
    pub bucket: String,
    /// Accuracy of the seeds in the bucket.
    pub original: Accuracy,
    /// Accuracy of the family's cases in the bucket.
    pub family: Accuracy,
}

/// An accuracy with its bootstrap 95% half-width (B = 1000, seed 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Accuracy {
    /// Cases in the bucket.
    pub n: usize,
    /// Their execution accuracy.
    pub ex: f64,
    /// The bootstrap 95% half-width around `ex`.
    pub half_width: f64,
}

/// Schema-linking rates of the replies that reported what they retrieved.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RetrievalRates {
    /// Cases whose reply reported what it retrieved.
    pub n: usize,
    /// Mean false positive rate, when some case had one.
    pub false_positive_rate: Option<f64>,
    /// Mean recall, when some case had one.
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

/// Why a family has no value for a metric: its gate fails, saying so.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FamilyMetricError {
    /// The family has no feasible cases.
    #[error("the family has no cases")]
    NoCases,
    /// Its variants' seeds are not cases of the suite, so there is nothing to drop from.
    #[error("none of its seeds is a case of the suite (the `seed_id`s name no case)")]
    NoSeeds,
    /// Pass@K needs K variants of every seed.
    #[error("a seed has {min} variant(s), fewer than K = {k}")]
    TooFewVariants {
        /// The fewest variants of a seed.
        min: usize,
        /// The K asked for.
        k: u32,
    },
    /// No reply said what it retrieved.
    #[error("no reply reported what it `retrieved`")]
    NothingRetrieved,
    /// Recall or FPR with a zero denominator in every case.
    #[error("{0} has an empty denominator in every case")]
    EmptyDenominator(Metric),
    /// A suite metric asked of a family.
    #[error("`{0}` is not a family metric ({names})", names = Metric::FAMILY_NAMES)]
    NotAFamilyMetric(Metric),
}

impl FamilySummary {
    /// The value a family gate holds to its threshold, or why it cannot be computed (the gate
    /// then fails).
    pub fn metric(&self, metric: Metric) -> Result<f64, FamilyMetricError> {
        use FamilyMetricError as Missing;
        match metric {
            Metric::Ex if self.n > 0 => Ok(self.ex),
            Metric::Ex => Err(Missing::NoCases),
            Metric::Drop => self.drop.ok_or(Missing::NoSeeds),
            Metric::Qvt => self.qvt.map(|q| q.mean).ok_or(Missing::NoCases),
            Metric::PassAt(k) => sql2nl::mean_pass_at_k(&self.variants, u64::from(k)).ok_or(
                match self.min_variants {
                    0 => Missing::NoCases,
                    min => Missing::TooFewVariants { min, k },
                },
            ),
            Metric::Recall | Metric::Fpr => {
                let rates = self.retrieval.ok_or(Missing::NothingRetrieved)?;
                let rate = if metric == Metric::Recall {
                    rates.recall
                } else {
                    rates.false_positive_rate
                };
                rate.ok_or(Missing::EmptyDenominator(metric))
            }
            other => Err(Missing::NotAFamilyMetric(other)),
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
pub fn family_summaries(scores: &[&CaseScore]) -> BTreeMap<String, FamilySummary> {
    let feasible: Vec<&CaseScore> = scores.iter().copied().filter(|s| s.feasible).collect();
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
    let facts: Vec<CaseFact> = feasible
        .iter()
        .map(|s| CaseFact {
            id: s.id.clone(),
            family: s.family().map(String::from),
            seed: s.seed().map(String::from),
            correct: s.correct(),
        })
        .collect();
    let mut deltas = retrieval::delta_ex_by_family(&facts, None);
    families
        .into_iter()
        .map(|(name, cases)| {
            let delta = deltas.remove(name).unwrap_or_default();
            (name.to_string(), summarize_family(&cases, &seeds, delta))
        })
        .collect()
}

/// The suite's case a generated case came from.
fn seed_of<'a>(case: &CaseScore, seeds: &HashMap<&str, &'a CaseScore>) -> Option<&'a CaseScore> {
    case.seed().and_then(|id| seeds.get(id).copied())
}

fn summarize_family(
    cases: &[&CaseScore],
    seeds: &HashMap<&str, &CaseScore>,
    delta: DeltaEx,
) -> FamilySummary {
    let seed_of = |case: &CaseScore| seed_of(case, seeds);
    let paired: Vec<&CaseScore> = cases
        .iter()
        .copied()
        .filter(|case| seed_of(case).is_some())
        .collect();
    let paired_seeds: BTreeMap<&str, &CaseScore> = paired
        .iter()
        .filter_map(|case| seed_of(case).map(|seed| (seed.id.as_str(), seed)))
        .collect();
    let original: Vec<bool> = paired_seeds.values().map(|s| s.correct()).collect();
    let units: Vec<(bool, f64)> = paired
        .iter()
        .map(|case| (case.correct(), case.cs.unwrap_or(1.0)))
        .collect();
    let accuracy = sql2nl::accuracy_drop(&original, &units);
    let all_cs = paired.iter().all(|case| case.cs.is_some());
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
        gained: delta.gained,
        lost: delta.lost,
        unpaired: delta.unpaired,
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
        qvt: sql2nl::query_variance(&qvt_units).map(|q| QvtSummary {
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
        .filter_map(|k| Some((k, sql2nl::mean_pass_at_k(problems, u64::from(k))?)))
        .collect()
}

fn common_setting(cases: &[&CaseScore]) -> Option<String> {
    let settings: BTreeSet<Option<&String>> = cases.iter().map(|c| c.tags.get("setting")).collect();
    match settings.into_iter().collect::<Vec<_>>().as_slice() {
        [Some(setting)] => Some((*setting).clone()),
        _ => None,
    }
}

fn ner<'a>(cases: impl Iterator<Item = &'a CaseScore>) -> Option<NerTypes> {
    let predictions: Vec<_> = cases
        .filter_map(|case| {
            let errors = case.robustness.as_ref()?.schema_errors?;
            Some((case.correct(), errors))
        })
        .collect();
    sql2nl::normalised_schema_error_rate(&predictions).map(NerTypes::from)
}

/// Whether a gold of this shape falls in a bucket.
type ShapeTest = fn(&QueryShape) -> bool;

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
    let clauses: [(&'static str, ShapeTest); 4] = [
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
        let estimate = sql2nl::bootstrap(&outcomes, None, BOOTSTRAP_SEED);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ex::Verdict;
    use crate::metrics::retrieval::Retrieval;
    use crate::scoring::Robustness;

    fn refs(scores: &[CaseScore]) -> Vec<&CaseScore> {
        scores.iter().collect()
    }

    /// A scored case: `family` and `seed` tags for a variant, none for a seed.
    fn case(id: &str, variant_of: Option<(&str, &str)>, correct: bool) -> CaseScore {
        let mut tags = BTreeMap::new();
        if let Some((family, seed)) = variant_of {
            tags.insert("family".to_string(), family.to_string());
            tags.insert("seed".to_string(), seed.to_string());
        }
        CaseScore {
            id: id.to_string(),
            db: "db".to_string(),
            tags,
            feasible: true,
            verdict: if correct {
                Verdict::Correct
            } else {
                Verdict::Incorrect
            },
            ex: if correct { 1.0 } else { 0.0 },
            exact: None,
            error: None,
            failed_on: None,
            diagnostics: Vec::new(),
            sql: Some("SELECT 1".to_string()),
            cleaned: false,
            fine: BTreeMap::new(),
            esm: None,
            esm_detail: None,
            etm: None,
            etm_detail: None,
            soft_f1: None,
            hardness: None,
            cs: None,
            robustness: None,
            efficiency: None,
            metrics: BTreeMap::new(),
        }
    }

    fn para(id: &str, seed: &str, correct: bool, cs: f64) -> CaseScore {
        CaseScore {
            cs: Some(cs),
            ..case(id, Some(("para", seed)), correct)
        }
    }

    #[test]
    fn a_family_is_scored_against_the_seeds_it_came_from() {
        // Two seeds, both right; three paraphrases each (a: 2 right, b: 1 right).
        let scores = vec![
            case("a", None, true),
            case("b", None, true),
            case("c", None, false),
            para("a::para::1", "a", true, 0.9),
            para("a::para::2", "a", true, 0.8),
            para("a::para::3", "a", false, 0.7),
            para("b::para::1", "b", true, 0.9),
            para("b::para::2", "b", false, 0.6),
            para("b::para::3", "b", false, 0.6),
        ];
        let families = family_summaries(&refs(&scores));
        let para = &families["para"];
        assert_eq!((para.n, para.seeds, para.min_variants), (6, 2, 3));
        assert_eq!(para.a_orig, Some(1.0));
        assert_eq!(para.ex, 0.5);
        assert!((para.drop.unwrap() - 50.0).abs() < 1e-9);
        assert_eq!((para.gained, para.lost), (0, 3));
        let interval = para.cs_interval.unwrap();
        assert!((interval.mean_cs - 0.75).abs() < 1e-9);
        assert!((interval.low - 0.375).abs() < 1e-9 && (interval.high - 0.625).abs() < 1e-9);
        // SQL2NL Pass@K per seed (n = 3): a has c = 2, b has c = 1.
        assert!((para.pass_at_k[&1] - 0.5).abs() < 1e-9);
        let at2 = (1.0 + (1.0 - 1.0 / 3.0)) / 2.0;
        assert!((para.pass_at_k[&2] - at2).abs() < 1e-9);
        assert!(!para.pass_at_k.contains_key(&5));
        let qvt = para.qvt.unwrap();
        assert!((qvt.mean - 0.5).abs() < 1e-9 && (qvt.min - 1.0 / 3.0).abs() < 1e-9);
        // The gate reads the same numbers, and says why it cannot compute one.
        assert_eq!(para.metric(Metric::Ex), Ok(0.5));
        assert!((para.metric(Metric::PassAt(3)).unwrap() - 1.0).abs() < 1e-9);
        let why = |metric| para.metric(metric).unwrap_err().to_string();
        assert_eq!(
            why(Metric::PassAt(5)),
            "a seed has 3 variant(s), fewer than K = 5"
        );
        assert!(why(Metric::Recall).contains("retrieved"));
        assert!(why(Metric::Etm).contains("not a family metric"));
        assert!(para
            .values()
            .contains(&(Metric::PassAt(2), para.pass_at_k[&2])));
    }

    #[test]
    fn variants_without_their_seed_are_counted_apart() {
        let scores = vec![
            case("a", None, false),
            case("a::tqa-ll::n3", Some(("tqa-ll", "a")), true),
            case("z::tqa-ll::n3", Some(("tqa-ll", "z")), true),
            case("y::orphan::n3", Some(("orphan", "y")), true),
        ];
        let families = family_summaries(&refs(&scores));
        let ll = &families["tqa-ll"];
        assert_eq!(ll.unpaired, ["z::tqa-ll::n3"]);
        assert_eq!((ll.n, ll.seeds, ll.gained), (2, 1, 1));
        assert_eq!(ll.ex, 1.0);
        assert_eq!(ll.drop, Some(-100.0));
        assert_eq!(ll.cs_interval, None);
        let orphan = &families["orphan"];
        assert_eq!(orphan.a_orig, None);
        assert!(orphan
            .metric(Metric::Drop)
            .unwrap_err()
            .to_string()
            .contains("seeds"));
        // A family with a setting names it; mixed settings name none.
        let mut tagged = scores.clone();
        for score in &mut tagged[1..3] {
            score.tags.insert("setting".to_string(), "L/L".to_string());
        }
        assert_eq!(
            family_summaries(&refs(&tagged))["tqa-ll"]
                .setting
                .as_deref(),
            Some("L/L")
        );
        tagged[2]
            .tags
            .insert("setting".to_string(), "O/L".to_string());
        assert_eq!(family_summaries(&refs(&tagged))["tqa-ll"].setting, None);
    }

    #[test]
    fn breakdowns_samples_ner_and_retrieval_come_from_the_cases_facts() {
        let with = |mut score: CaseScore, robustness: Robustness| {
            score.robustness = Some(robustness);
            score
        };
        let joined = QueryShape {
            joins: 1,
            ..QueryShape::default()
        };
        let extra_table = sql2nl::SchemaErrors {
            extra_tables: 1,
            ..Default::default()
        };
        let facts = |shape, errors, samples| Robustness {
            shape: Some(shape),
            schema_errors: Some(errors),
            retrieval: Some(Retrieval {
                false_positive_rate: Some(0.5),
                recall: Some(1.0),
            }),
            samples: Some(samples),
        };
        let none = sql2nl::SchemaErrors::default();
        let scores = vec![
            with(case("a", None, true), facts(joined, none, (2, 2))),
            with(
                case("b", None, false),
                facts(QueryShape::default(), extra_table, (2, 0)),
            ),
            with(
                case("a::f::1", Some(("f", "a")), false),
                facts(QueryShape::default(), extra_table, (4, 1)),
            ),
            with(
                case("b::f::1", Some(("f", "b")), true),
                facts(QueryShape::default(), none, (4, 4)),
            ),
        ];
        let f = &family_summaries(&refs(&scores))["f"];
        // A variant is bucketed by its seed's gold: a has one join.
        let joins: Vec<(&str, usize, usize)> = f
            .breakdowns
            .iter()
            .filter(|row| row.split == "joins")
            .map(|row| (row.bucket.as_str(), row.original.n, row.family.n))
            .collect();
        assert_eq!(joins, [("0", 1, 1), ("1", 1, 1)]);
        let grouped = f.breakdowns.iter().find(|r| r.split == "group_by").unwrap();
        assert_eq!((grouped.bucket.as_str(), grouped.family.n), ("without", 2));
        // NL2SQL Pass@1 over the samples: (1/4 + 4/4) / 2.
        assert!((f.nl2sql_pass_at_k[&1] - 0.625).abs() < 1e-9);
        assert!(!f.nl2sql_pass_at_k.contains_key(&5));
        // The wrong variant has an extra table, the right one none: NER = 1 / ε.
        let ner = f.ner.family.unwrap();
        assert!((ner.extra_tables - 1.0 / sql2nl::NER_EPSILON).abs() < 1e-3);
        assert_eq!(ner.missing_columns, 0.0);
        let retrieval = f.retrieval.unwrap();
        assert_eq!((retrieval.n, retrieval.recall), (2, Some(1.0)));
        assert_eq!(f.metric(Metric::Fpr), Ok(0.5));
    }
}
