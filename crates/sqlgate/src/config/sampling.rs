//! How a sampled case is judged: `pass_rule` (which share of its samples must be correct) and
//! `alpha` (the level at which a drop against the accepted snapshot is beyond noise).

use std::fmt;

use serde::de::{self, Deserializer};
use serde::Deserialize;

/// Which share of a case's sampled answers must be correct for the case to pass.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum PassRule {
    /// More than half of the samples (the default).
    #[default]
    Majority,
    /// Every sample.
    All,
    /// At least one sample.
    Any,
    /// At least this share of the samples (`">= 0.6"`).
    AtLeast(f64),
}

/// A `pass_rule` that is none of `majority`, `all`, `any` or a share `">= x"` in (0, 1].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "pass_rule \"{0}\": expected `majority`, `all`, `any` or a share of the samples such as \
     \">= 0.6\" (above 0, at most 1)"
)]
pub struct PassRuleError(pub String);

impl PassRule {
    /// Whether `passed` correct answers out of `samples` pass the case.
    pub fn passes(self, passed: u32, samples: u32) -> bool {
        match self {
            PassRule::Majority => 2 * passed > samples,
            PassRule::All => passed == samples,
            PassRule::Any => passed > 0,
            PassRule::AtLeast(share) => f64::from(passed) >= share * f64::from(samples),
        }
    }

    /// Reads `majority`, `all`, `any` or `">= 0.6"`.
    pub fn parse(text: &str) -> Result<PassRule, PassRuleError> {
        let text = text.trim();
        let rule = match text {
            "majority" => PassRule::Majority,
            "all" => PassRule::All,
            "any" => PassRule::Any,
            _ => {
                let share = text
                    .strip_prefix(">=")
                    .and_then(|share| share.trim().parse::<f64>().ok())
                    .filter(|share| (0.0..=1.0).contains(share) && *share > 0.0);
                match share {
                    Some(share) => PassRule::AtLeast(share),
                    None => return Err(PassRuleError(text.to_string())),
                }
            }
        };
        Ok(rule)
    }
}

impl fmt::Display for PassRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PassRule::Majority => f.write_str("majority"),
            PassRule::All => f.write_str("all"),
            PassRule::Any => f.write_str("any"),
            PassRule::AtLeast(share) => write!(f, ">= {share}"),
        }
    }
}

impl<'de> Deserialize<'de> for PassRule {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PassRule, D::Error> {
        let text = String::deserialize(deserializer)?;
        PassRule::parse(&text).map_err(de::Error::custom)
    }
}

/// The level of the tests that tell a real drop from noise (default 0.05): the share of runs
/// of an unchanged system in which a suite's cases are flagged as regressions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Alpha(pub f64);

impl Default for Alpha {
    fn default() -> Alpha {
        Alpha(0.05)
    }
}

impl<'de> Deserialize<'de> for Alpha {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Alpha, D::Error> {
        let alpha = f64::deserialize(deserializer)?;
        if alpha > 0.0 && alpha < 1.0 {
            Ok(Alpha(alpha))
        } else {
            Err(de::Error::custom(format!(
                "alpha = {alpha}: the level of a test lies strictly between 0 and 1 (e.g. 0.05)"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PassRule;

    #[test]
    fn rules_count_the_samples_they_say() {
        let majority = PassRule::parse("majority").unwrap();
        assert!(majority.passes(3, 5) && !majority.passes(2, 5));
        assert!(!majority.passes(2, 4), "a tie is not a majority");
        let all = PassRule::parse("all").unwrap();
        assert!(all.passes(5, 5) && !all.passes(4, 5));
        let any = PassRule::parse("any").unwrap();
        assert!(any.passes(1, 5) && !any.passes(0, 5));
        let share = PassRule::parse(">= 0.6").unwrap();
        assert!(share.passes(3, 5) && !share.passes(2, 5));
        assert_eq!(share.to_string(), ">= 0.6");
        for bad in ["most", ">= 1.5", ">= 0", "0.6", "<= 0.5"] {
            assert!(PassRule::parse(bad).is_err(), "{bad}");
        }
    }
}
