//! Values of `sqlgate.toml` that check themselves while the file is read, so that a bad one is
//! an error at its line and column, and code that holds one never checks it again.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use sqlgate_eval::exec::limits::{timeout_from_secs, MAX_TIMEOUT};

/// A time bound in seconds: positive and at most a day (`timeout_secs = 60`). It serializes as
/// the number written, so fingerprints of settings holding one read as before.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Seconds {
    secs: f64,
    duration: Duration,
}

impl Seconds {
    /// `secs` seconds, when it is a valid time bound.
    pub fn new(secs: f64) -> Result<Seconds, ValueError> {
        timeout_from_secs(secs)
            .map(|duration| Seconds { secs, duration })
            .ok_or(ValueError::Seconds(secs))
    }

    /// The bound as a duration.
    pub fn duration(self) -> Duration {
        self.duration
    }

    /// The number of seconds as written.
    pub fn secs(self) -> f64 {
        self.secs
    }
}

impl TryFrom<f64> for Seconds {
    type Error = ValueError;

    fn try_from(secs: f64) -> Result<Seconds, ValueError> {
        Seconds::new(secs)
    }
}

impl From<Seconds> for f64 {
    fn from(seconds: Seconds) -> f64 {
        seconds.secs
    }
}

/// TrustSQL's penalty `c` for a wrong answer: a non-negative number.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(try_from = "f64")]
pub struct Penalty(f64);

impl Penalty {
    /// The penalty's value.
    pub fn value(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for Penalty {
    type Error = ValueError;

    fn try_from(c: f64) -> Result<Penalty, ValueError> {
        match c >= 0.0 && c.is_finite() {
            true => Ok(Penalty(c)),
            false => Err(ValueError::Penalty(c)),
        }
    }
}

/// Why a number in `sqlgate.toml` is refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// A time bound outside (0, a day].
    #[error("must be a number of seconds in (0, {max}], not {0}", max = MAX_TIMEOUT.as_secs())]
    Seconds(f64),
    /// A negative or infinite penalty.
    #[error("must be a non-negative number, got {0}")]
    Penalty(f64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_bounds_are_positive_and_at_most_a_day() {
        assert_eq!(
            Seconds::new(0.5).unwrap().duration(),
            Duration::from_millis(500)
        );
        assert_eq!(Seconds::new(86_400.0).unwrap().secs(), 86_400.0);
        for bad in [0.0, -1.0, 86_401.0, f64::NAN, f64::INFINITY] {
            let error = Seconds::new(bad).unwrap_err().to_string();
            assert!(
                error.contains("must be a number of seconds in (0, 86400]"),
                "{error}"
            );
        }
    }

    #[test]
    fn penalties_are_non_negative_numbers() {
        assert_eq!(Penalty::try_from(2.0).unwrap().value(), 2.0);
        assert_eq!(Penalty::try_from(0.0).unwrap().value(), 0.0);
        for bad in [-0.5, f64::NAN, f64::INFINITY] {
            assert!(Penalty::try_from(bad).is_err());
        }
    }
}
