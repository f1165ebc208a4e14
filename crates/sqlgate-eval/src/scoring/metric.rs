//! The metrics a gate can hold to a threshold: `gate = { ex = ">= 0.7", etm = ">= 0.5" }` on a
//! suite, and `family_gate = { para = { drop = "<= 5", "pass@5" = ">= 0.8" } }` on the
//! generated families of a suite.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

use crate::metrics::case_metric::CaseMetric;

/// A metric a gate holds to a threshold. An unknown name is a configuration error at load time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// Execution accuracy under the suite's mode (of a family: A_family).
    Ex,
    /// SQLMorph fine-grained precision, recall and F1 (need the suite's `regime`).
    Exp,
    /// SQLMorph execution recall.
    Exr,
    /// SQLMorph F1 of EXP and EXR.
    F1,
    /// Spider exact set match and Enhanced Tree Matching (need `structural`).
    Esm,
    /// Enhanced Tree Matching.
    Etm,
    /// TrustSQL's reliability score RS(c), with the profile's penalty.
    Rs,
    /// A family's accuracy drop `A_orig - A_family` against its seeds, in percentage points.
    Drop,
    /// A family's query variance testing score: the mean, over seeds, of the share of the seed's
    /// variants answered correctly.
    Qvt,
    /// A family's SQL2NL Pass@K: the unbiased estimator over each seed's variants.
    PassAt(u32),
    /// A family's schema-linking recall and false-positive rate of the replies' `retrieved`.
    Recall,
    /// The false-positive rate of the replies' `retrieved`.
    Fpr,
    /// With sampled answers: the mean over cases of the share of a case's samples that are
    /// correct (the expected EX of one answer).
    PassRate,
    /// The one-sided p-value that the run is worse than the accepted snapshot (a paired test
    /// over the cases in both); a gate `">= 0.05"` fails on a drop beyond noise.
    RegressionP,
    /// BIRD mini-dev Soft-F1 (need the suite's `soft_f1`), on EX's 0..1 scale.
    SoftF1,
    /// The median (nearest rank) of the answers' latency, in seconds.
    LatencyP50,
    /// The 95th percentile (nearest rank) of the answers' latency, in seconds.
    LatencyP95,
    /// The mean tokens (prompt and completion) per case.
    TokensMean,
    /// All the suite's tokens over its correct cases.
    TokensPerCorrect,
    /// BIRD's VES from timed executions (need `efficiency = ["time"]`; machine-dependent).
    Ves,
    /// BIRD mini-dev's R-VES (reward tiers) from timed executions.
    Rves,
    /// VES from a deterministic cost ratio (need `efficiency = ["steps"]`): SQLite VM steps,
    /// PostgreSQL's planner estimate.
    VesSteps,
    /// R-VES from the deterministic cost ratio.
    RvesSteps,
    /// A registered per-case metric's mean over the feasible cases
    /// ([`crate::metrics::case_metric`]).
    Case(CaseMetric),
}

impl Metric {
    /// The metrics with a fixed name (every one but `pass@K`).
    const NAMED: [Metric; 22] = [
        Metric::Ex,
        Metric::Exp,
        Metric::Exr,
        Metric::F1,
        Metric::Esm,
        Metric::Etm,
        Metric::Rs,
        Metric::Drop,
        Metric::Qvt,
        Metric::Recall,
        Metric::Fpr,
        Metric::PassRate,
        Metric::RegressionP,
        Metric::SoftF1,
        Metric::LatencyP50,
        Metric::LatencyP95,
        Metric::TokensMean,
        Metric::TokensPerCorrect,
        Metric::Ves,
        Metric::Rves,
        Metric::VesSteps,
        Metric::RvesSteps,
    ];

    /// Whether the metric is measured over a suite's cases (`gate`).
    pub fn is_suite_metric(self) -> bool {
        matches!(
            self,
            Metric::Ex
                | Metric::Exp
                | Metric::Exr
                | Metric::F1
                | Metric::Esm
                | Metric::Etm
                | Metric::Rs
                | Metric::PassRate
                | Metric::PassAt(_)
                | Metric::RegressionP
                | Metric::SoftF1
                | Metric::LatencyP50
                | Metric::LatencyP95
                | Metric::TokensMean
                | Metric::TokensPerCorrect
                | Metric::Ves
                | Metric::Rves
                | Metric::VesSteps
                | Metric::RvesSteps
                | Metric::Case(_)
        )
    }

    /// Whether the metric is measured over a generated family against its seeds
    /// (`family_gate`).
    pub fn is_family_metric(self) -> bool {
        matches!(
            self,
            Metric::Ex
                | Metric::Drop
                | Metric::Qvt
                | Metric::PassAt(_)
                | Metric::Recall
                | Metric::Fpr
        )
    }

    /// The suite metrics that are means of a per-case value in [0, 1] over the feasible cases,
    /// in the order reports show them: the built-in ones, then every registered per-case
    /// metric. (RS weighs every case by its region, and family metrics compare cases with their
    /// seeds: neither is a per-case mean.)
    pub fn case_means() -> Vec<Metric> {
        [
            Metric::Ex,
            Metric::Exp,
            Metric::Exr,
            Metric::F1,
            Metric::Esm,
            Metric::Etm,
            Metric::SoftF1,
        ]
        .into_iter()
        .chain(CaseMetric::all().map(Metric::Case))
        .collect()
    }

    /// The names of the family metrics, for messages.
    pub const FAMILY_NAMES: &'static str = "ex, drop, qvt, pass@K, recall, fpr";

    fn fixed_name(self) -> &'static str {
        match self {
            Metric::Ex => "ex",
            Metric::Exp => "exp",
            Metric::Exr => "exr",
            Metric::F1 => "f1",
            Metric::Esm => "esm",
            Metric::Etm => "etm",
            Metric::Rs => "rs",
            Metric::Drop => "drop",
            Metric::Qvt => "qvt",
            Metric::PassAt(_) => "pass@",
            Metric::Recall => "recall",
            Metric::Fpr => "fpr",
            Metric::PassRate => "pass_rate",
            Metric::RegressionP => "regression_p",
            Metric::SoftF1 => "soft_f1",
            Metric::LatencyP50 => "latency_p50",
            Metric::LatencyP95 => "latency_p95",
            Metric::TokensMean => "tokens_mean",
            Metric::TokensPerCorrect => "tokens_per_correct",
            Metric::Ves => "ves",
            Metric::Rves => "rves",
            Metric::VesSteps => "ves_steps",
            Metric::RvesSteps => "rves_steps",
            Metric::Case(metric) => metric.name(),
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::PassAt(k) => write!(f, "pass@{k}"),
            other => f.write_str(other.fixed_name()),
        }
    }
}

/// Why a text names no metric.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricNameError {
    /// `pass@K` with a K that is not a whole number of at least 1.
    #[error("`{0}`: the K of pass@K must be a whole number of at least 1")]
    BadK(String),
    /// No metric has that name.
    #[error("unknown metric `{name}` (metrics: {known}, pass@K)")]
    Unknown {
        /// The name given.
        name: String,
        /// The metrics there are, comma-separated.
        known: String,
    },
}

impl std::str::FromStr for Metric {
    type Err = MetricNameError;

    fn from_str(name: &str) -> Result<Metric, MetricNameError> {
        if let Some(k) = name.strip_prefix("pass@") {
            return match k.parse::<u32>() {
                Ok(k) if k >= 1 => Ok(Metric::PassAt(k)),
                _ => Err(MetricNameError::BadK(name.to_string())),
            };
        }
        let named = || {
            Metric::NAMED
                .into_iter()
                .chain(CaseMetric::all().map(Metric::Case))
        };
        named()
            .find(|metric| metric.fixed_name() == name)
            .ok_or_else(|| MetricNameError::Unknown {
                name: name.to_string(),
                known: named()
                    .map(|m| m.fixed_name())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

impl Serialize for Metric {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Metric {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::Metric;
    use crate::metrics::case_metric::CaseMetric;

    #[test]
    fn names_round_trip_and_pass_at_k_carries_its_k() {
        for name in [
            "ex",
            "rs",
            "drop",
            "qvt",
            "recall",
            "fpr",
            "pass@1",
            "pass@10",
            "pass_rate",
            "regression_p",
            "soft_f1",
            "latency_p50",
            "latency_p95",
            "tokens_mean",
            "tokens_per_correct",
            "ves",
            "rves",
            "ves_steps",
            "rves_steps",
        ] {
            assert_eq!(name.parse::<Metric>().unwrap().to_string(), name);
        }
        assert_eq!("pass@5".parse::<Metric>(), Ok(Metric::PassAt(5)));
        for bad in ["pass@0", "pass@", "pass@x", "pass@-1", "exx", "Pass@5"] {
            assert!(bad.parse::<Metric>().is_err(), "{bad}");
        }
        assert!("exx"
            .parse::<Metric>()
            .unwrap_err()
            .to_string()
            .contains("unknown metric `exx`"));
        assert!(Metric::Ex.is_suite_metric() && Metric::Ex.is_family_metric());
        assert!(!Metric::Drop.is_suite_metric() && Metric::PassAt(3).is_family_metric());
        assert!(Metric::PassAt(3).is_suite_metric() && !Metric::RegressionP.is_family_metric());
        assert!(!Metric::Etm.is_family_metric());
        assert!(Metric::SoftF1.is_suite_metric() && !Metric::SoftF1.is_family_metric());
        assert!(Metric::LatencyP95.is_suite_metric() && !Metric::TokensMean.is_family_metric());
        assert!(Metric::RvesSteps.is_suite_metric() && !Metric::Ves.is_family_metric());
        for metric in CaseMetric::all() {
            let parsed = metric.name().parse::<Metric>().unwrap();
            assert_eq!(parsed, Metric::Case(metric));
            assert_eq!(parsed.to_string(), metric.name());
            assert!(parsed.is_suite_metric() && !parsed.is_family_metric());
        }
    }
}
