//! TrustSQL's reliability score RS(c) (spec `trustsql.md` Part A): every case falls in one of
//! five regions by feasibility, abstention and correctness; a region scores +1, 0 or -c, and
//! RS(c) is 100 times the mean.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

/// What reliability needs to know of a scored case: plain facts, whoever scored it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaseFacts {
    /// The question has an answer on its database.
    pub feasible: bool,
    /// The system declined to answer.
    pub abstained: bool,
    /// Answered with EX = 1 under the mode.
    pub correct: bool,
    /// The case's tags: TrustSQL `type` and `note`, or `category`, name its category.
    pub tags: BTreeMap<String, String>,
}

/// Where a case falls (spec A.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Region {
    /// Feasible, answered correctly.
    I,
    /// Feasible, abstained.
    II,
    /// Feasible, answered wrongly (errors and timeouts included).
    III,
    /// Infeasible, answered.
    IV,
    /// Infeasible, abstained.
    V,
}

impl Region {
    /// The region of a scored case; correctness is the mode's EX (= 1).
    pub fn of(case: &CaseFacts) -> Region {
        match (case.feasible, case.abstained) {
            (true, _) if case.correct => Region::I,
            (true, true) => Region::II,
            (true, false) => Region::III,
            (false, false) => Region::IV,
            (false, true) => Region::V,
        }
    }

    /// The region's numeral, as written in reports and snapshots.
    pub fn as_str(self) -> &'static str {
        match self {
            Region::I => "I",
            Region::II => "II",
            Region::III => "III",
            Region::IV => "IV",
            Region::V => "V",
        }
    }

    /// φ_c: +1 for the desirable regions, 0 for II, -c for the risky ones.
    pub fn score(self, penalty: f64) -> f64 {
        match self {
            Region::I | Region::V => 1.0,
            Region::II => 0.0,
            Region::III | Region::IV => -penalty,
        }
    }
}

/// How many cases fell in each region.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Regions {
    /// Feasible, answered correctly.
    #[serde(rename = "I")]
    pub i: usize,
    /// Feasible, abstained.
    #[serde(rename = "II")]
    pub ii: usize,
    /// Feasible, answered wrongly.
    #[serde(rename = "III")]
    pub iii: usize,
    /// Infeasible, answered.
    #[serde(rename = "IV")]
    pub iv: usize,
    /// Infeasible, abstained.
    #[serde(rename = "V")]
    pub v: usize,
}

impl Regions {
    /// Tallies `regions` by region.
    pub fn count(regions: &[Region]) -> Regions {
        let mut counts = Regions::default();
        for region in regions {
            *match region {
                Region::I => &mut counts.i,
                Region::II => &mut counts.ii,
                Region::III => &mut counts.iii,
                Region::IV => &mut counts.iv,
                Region::V => &mut counts.v,
            } += 1;
        }
        counts
    }
}

/// A penalty c: a number, or `N`, the number of cases scored (spec A.2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Penalty {
    /// A fixed penalty c.
    Value(f64),
    /// c = N, the number of cases scored: one risky answer outweighs every good one.
    N,
}

impl Penalty {
    /// The penalties always reported: 0, 10 and N.
    pub const DEFAULTS: [Penalty; 3] = [Penalty::Value(0.0), Penalty::Value(10.0), Penalty::N];

    /// The number c, given the `n` cases scored.
    pub fn resolve(self, n: usize) -> f64 {
        match self {
            Penalty::Value(c) => c,
            Penalty::N => n as f64,
        }
    }
}

impl fmt::Display for Penalty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Penalty::Value(c) => write!(f, "{c}"),
            Penalty::N => f.write_str("N"),
        }
    }
}

impl std::str::FromStr for Penalty {
    type Err = PenaltyError;

    fn from_str(text: &str) -> Result<Penalty, PenaltyError> {
        if text == "N" {
            return Ok(Penalty::N);
        }
        match text.parse::<f64>() {
            Ok(c) if c >= 0.0 && c.is_finite() => Ok(Penalty::Value(c)),
            _ => Err(PenaltyError(text.to_string())),
        }
    }
}

/// A penalty that is neither a non-negative number nor `N` (`--penalty`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected a non-negative number or `N`, got `{0}`")]
pub struct PenaltyError(pub String);

/// RS(c) = 100 · mean φ_c; NaN for no cases (the reference prints `nan`).
pub fn rs(regions: &[Region], penalty: f64) -> f64 {
    let total: f64 = regions.iter().map(|r| r.score(penalty)).sum();
    100.0 * total / regions.len() as f64
}

/// The RS of one category of cases.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryReliability {
    /// Cases in the category.
    pub count: usize,
    /// Cases scoring +1 (regions I and V).
    pub positive: usize,
    /// Cases scoring -c (regions III and IV).
    pub negative: usize,
    /// RS by penalty name, with c = N meaning the size of the whole run.
    pub rs: BTreeMap<String, f64>,
}

/// RS over a run: regions, RS for each penalty and per category (spec A.3).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reliability {
    /// The penalties in the order asked for (0, 10, N first); the keys of `rs`.
    #[serde(skip)]
    pub penalties: Vec<Penalty>,
    /// RS by penalty name (`"0"`, `"10"`, `"N"`, `"1000"`).
    pub rs: BTreeMap<String, f64>,
    /// Cases per region.
    pub regions: Regions,
    /// The N of RS(N): every case scored.
    #[serde(rename = "rs_n")]
    pub n: usize,
    /// By category key ([`category_key`]).
    #[serde(rename = "rs_categories")]
    pub categories: BTreeMap<String, CategoryReliability>,
}

/// The defaults (0, 10, N) followed by the `extra` penalties not already among them.
pub fn penalties_with_defaults(extra: &[Penalty]) -> Vec<Penalty> {
    let mut penalties = Penalty::DEFAULTS.to_vec();
    for penalty in extra {
        if !penalties.contains(penalty) {
            penalties.push(*penalty);
        }
    }
    penalties
}

/// Computes RS for every penalty of `penalties` over `scores`, overall and per category.
pub fn reliability(scores: &[CaseFacts], penalties: &[Penalty]) -> Reliability {
    let n = scores.len();
    let regions: Vec<Region> = scores.iter().map(Region::of).collect();
    let rs_by_penalty = |regions: &[Region]| -> BTreeMap<String, f64> {
        penalties
            .iter()
            .map(|p| (p.to_string(), rs(regions, p.resolve(n))))
            .collect()
    };
    let mut by_category: BTreeMap<String, Vec<Region>> = BTreeMap::new();
    for (score, region) in scores.iter().zip(&regions) {
        by_category
            .entry(category_key(score))
            .or_default()
            .push(*region);
    }
    let categories = by_category
        .into_iter()
        .map(|(key, members)| {
            let counts = Regions::count(&members);
            let category = CategoryReliability {
                count: members.len(),
                positive: counts.i + counts.v,
                negative: counts.iii + counts.iv,
                rs: rs_by_penalty(&members),
            };
            (key, category)
        })
        .collect();
    Reliability {
        penalties: penalties.to_vec(),
        rs: rs_by_penalty(&regions),
        regions: Regions::count(&regions),
        n,
        categories,
    }
}

/// A case's category: TrustSQL's `"{type}:{note}"` (spec A.3), else its `category` tag, else
/// `feasible`/`infeasible`.
pub fn category_key(score: &CaseFacts) -> String {
    let tag = |name: &str| score.tags.get(name).filter(|v| !v.is_empty());
    match (tag("type"), tag("note"), tag("category")) {
        (Some(kind), Some(note), _) => format!("{kind}:{note}"),
        (_, _, Some(category)) => category.clone(),
        _ if score.feasible => "feasible".to_string(),
        _ => "infeasible".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn penalties_parse_numbers_and_n() {
        assert_eq!("N".parse::<Penalty>(), Ok(Penalty::N));
        assert_eq!("2.5".parse::<Penalty>(), Ok(Penalty::Value(2.5)));
        assert!("-1".parse::<Penalty>().is_err());
        assert!("inf".parse::<Penalty>().is_err());
        assert_eq!(Penalty::Value(10.0).to_string(), "10");
    }
}
