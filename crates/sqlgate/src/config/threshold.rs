//! A threshold on a metric: `">= 0.62"`, `"<= 0.15"`, or a bare number meaning `>=`.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::Deserialize;

use super::Metric;

/// Which side of the bound a metric must be on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Comparison {
    /// `>=`: the metric must reach the value.
    AtLeast,
    /// `<=`: the metric must not exceed the value (drops, error rates).
    AtMost,
}

/// Why a threshold is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ThresholdError {
    /// Neither `>= x`, `<= x` nor a number.
    #[error("expected a threshold like \">= 0.62\" or \"<= 0.15\", got \"{0}\"")]
    Unreadable(String),
    /// A bound the metric's values cannot meet, or cannot miss.
    #[error("threshold \"{threshold}\" is out of range: `{metric}` is {range}")]
    OutOfRange {
        /// The threshold as configured.
        threshold: Threshold,
        /// The metric it bounds.
        metric: Metric,
        /// The metric's range, in words.
        range: &'static str,
    },
}

/// A bound a metric must satisfy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold {
    /// The direction.
    pub comparison: Comparison,
    /// The bound.
    pub value: f64,
}

impl Threshold {
    /// Whether `metric` satisfies the bound.
    pub fn holds(&self, metric: f64) -> bool {
        match self.comparison {
            Comparison::AtLeast => metric >= self.value,
            Comparison::AtMost => metric <= self.value,
        }
    }

    /// Reads `">= 0.62"` or `"<= 10"`.
    pub fn parse(text: &str) -> Result<Threshold, ThresholdError> {
        let text = text.trim();
        let (comparison, number) = if let Some(rest) = text.strip_prefix(">=") {
            (Comparison::AtLeast, rest)
        } else if let Some(rest) = text.strip_prefix("<=") {
            (Comparison::AtMost, rest)
        } else {
            (Comparison::AtLeast, text)
        };
        match number.trim().parse::<f64>() {
            Ok(value) if value.is_finite() => Ok(Threshold { comparison, value }),
            _ => Err(ThresholdError::Unreadable(text.to_string())),
        }
    }
}

impl Threshold {
    /// A threshold the metric's values can meet and can miss: rates lie in [0, 1], `rs` is a
    /// percentage of at most 100, `drop` a difference of percentages in [-100, 100], latency
    /// (seconds) and tokens are at least 0.
    /// `ex = ">= 1.5"` would fail every run, `">= -1"` none.
    pub fn check_reachable(&self, metric: Metric) -> Result<(), ThresholdError> {
        let (low, high, range) = match metric {
            Metric::Rs => (f64::NEG_INFINITY, 100.0, "at most 100"),
            Metric::Drop => (-100.0, 100.0, "between -100 and 100 (points)"),
            Metric::LatencyP50
            | Metric::LatencyP95
            | Metric::TokensMean
            | Metric::TokensPerCorrect => (0.0, f64::INFINITY, "at least 0"),
            // 100 * sqrt(R): R-VES tops at the reward 1.25; VES has no upper bound.
            Metric::Ves | Metric::VesSteps => (0.0, f64::INFINITY, "at least 0"),
            Metric::Rves | Metric::RvesSteps => (
                0.0,
                100.0 * 1.25f64.sqrt(),
                "between 0 and 111.8 (100·√1.25)",
            ),
            _ => (0.0, 1.0, "between 0 and 1"),
        };
        if (low..=high).contains(&self.value) {
            Ok(())
        } else {
            Err(ThresholdError::OutOfRange {
                threshold: *self,
                metric,
                range,
            })
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.comparison {
            Comparison::AtLeast => ">=",
            Comparison::AtMost => "<=",
        };
        write!(f, "{op} {}", self.value)
    }
}

impl<'de> Deserialize<'de> for Threshold {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Number(value) => Ok(Threshold {
                comparison: Comparison::AtLeast,
                value,
            }),
            Raw::Text(text) => Threshold::parse(&text).map_err(de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_checks_bounds() {
        let at_least = Threshold::parse(">= 0.62").unwrap();
        assert!(at_least.holds(0.62) && at_least.holds(0.9) && !at_least.holds(0.61));
        let at_most = Threshold::parse("<=0.15").unwrap();
        assert!(at_most.holds(0.15) && !at_most.holds(0.2));
        assert_eq!(
            Threshold::parse("0.5").unwrap().comparison,
            Comparison::AtLeast
        );
        assert_eq!(at_least.to_string(), ">= 0.62");
        for bad in ["> 0.5", ">= x", "", "== 1", ">= inf"] {
            assert!(Threshold::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn thresholds_out_of_a_metric_range_are_refused() {
        let check = |metric: &str, text: &str| {
            Threshold::parse(text)
                .unwrap()
                .check_reachable(metric.parse().unwrap())
                .map_err(|e| e.to_string())
        };
        for metric in ["ex", "exp", "f1", "etm"] {
            assert!(check(metric, ">= 1.5")
                .unwrap_err()
                .contains("between 0 and 1"));
            assert!(check(metric, "<= -0.1").is_err());
            assert!(check(metric, ">= 0").is_ok() && check(metric, ">= 1").is_ok());
        }
        assert!(check("rs", ">= -23000").is_ok() && check("rs", "<= 100").is_ok());
        assert!(check("rs", ">= 100.5").unwrap_err().contains("at most 100"));
        assert!(check("drop", "<= 5").is_ok() && check("drop", ">= -20").is_ok());
        assert!(check("drop", "<= 101").is_err() && check("pass@5", ">= 1.2").is_err());
        for metric in [
            "latency_p50",
            "latency_p95",
            "tokens_mean",
            "tokens_per_correct",
        ] {
            assert!(check(metric, "<= 2.5").is_ok() && check(metric, "<= 125000").is_ok());
            assert!(check(metric, "<= -1").unwrap_err().contains("at least 0"));
        }
        for metric in ["ves", "ves_steps"] {
            assert!(check(metric, ">= 105").is_ok() && check(metric, ">= 250").is_ok());
            assert!(check(metric, ">= -1").unwrap_err().contains("at least 0"));
        }
        for metric in ["rves", "rves_steps"] {
            assert!(check(metric, ">= 100").is_ok() && check(metric, ">= 111.8").is_ok());
            assert!(check(metric, ">= 112").unwrap_err().contains("111.8"));
        }
    }

    mod properties {
        use proptest::num::f64::{NORMAL, SUBNORMAL, ZERO};
        use proptest::prelude::*;

        use super::super::*;

        fn threshold() -> impl Strategy<Value = Threshold> {
            let comparison = prop_oneof![Just(Comparison::AtLeast), Just(Comparison::AtMost)];
            (comparison, NORMAL | SUBNORMAL | ZERO)
                .prop_map(|(comparison, value)| Threshold { comparison, value })
        }

        proptest! {
            #[test]
            fn a_printed_threshold_parses_back_to_itself(threshold in threshold()) {
                prop_assert_eq!(Threshold::parse(&threshold.to_string()), Ok(threshold));
            }

            #[test]
            fn spaces_around_the_parts_change_nothing(
                threshold in threshold(),
                spaces in proptest::array::uniform3(" {0,2}"),
            ) {
                let [before, inside, after] = spaces;
                let op = match threshold.comparison {
                    Comparison::AtLeast => ">=",
                    Comparison::AtMost => "<=",
                };
                let value = threshold.value;
                let text = format!("{before}{op}{inside}{value}{after}");
                prop_assert_eq!(Threshold::parse(&text), Ok(threshold));
                if threshold.comparison == Comparison::AtLeast {
                    // A bare number means `>=`.
                    prop_assert_eq!(Threshold::parse(&format!("{before}{value}{after}")), Ok(threshold));
                }
            }
        }
    }
}
