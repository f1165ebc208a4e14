//! `[[system]] throttle = { ... }`: how hard a system may be called.

use serde::{Deserialize, Serialize};

/// How hard a system may be called (a `[throttle]` table in configuration).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ThrottleConfig {
    /// The most calls in flight at once: the limit starts here and adapts to the server.
    pub concurrency: usize,
    /// Call starts per second, across all threads; `None` for no limit.
    pub requests_per_second: Option<f64>,
    /// Further attempts after a retryable failure.
    pub retries: u32,
    /// The first retry's wait; each further retry doubles it.
    pub backoff_secs: f64,
    /// The longest backoff wait (a longer `Retry-After` is still honoured).
    pub max_backoff_secs: f64,
    /// Connection failures in a row after which the system is asked nothing more this run.
    pub stop_after_connection_failures: u32,
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        ThrottleConfig {
            concurrency: 4,
            requests_per_second: None,
            retries: 4,
            backoff_secs: 0.5,
            max_backoff_secs: 30.0,
            stop_after_connection_failures: 3,
        }
    }
}

impl ThrottleConfig {
    /// The first problem with the values, for the configuration loader to report.
    pub fn check(&self) -> Result<(), ThrottleError> {
        if self.concurrency == 0 {
            return Err(ThrottleError::NoConcurrency);
        }
        if self.stop_after_connection_failures == 0 {
            return Err(ThrottleError::NeverStops);
        }
        if let Some(rate) = self.requests_per_second {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(ThrottleError::Rate(rate));
            }
        }
        for (name, secs) in [
            ("backoff_secs", self.backoff_secs),
            ("max_backoff_secs", self.max_backoff_secs),
        ] {
            if std::time::Duration::try_from_secs_f64(secs).is_err() {
                return Err(ThrottleError::Backoff { name, secs });
            }
        }
        Ok(())
    }
}

/// Why a `throttle` table is refused ([`ThrottleConfig::check`]): the value named.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ThrottleError {
    /// `concurrency = 0` would never call.
    #[error("`concurrency` must be at least 1")]
    NoConcurrency,
    /// `stop_after_connection_failures = 0` would stop before the first call.
    #[error("`stop_after_connection_failures` must be at least 1")]
    NeverStops,
    /// A rate that is not a positive number.
    #[error("`requests_per_second` must be a positive number, not {0}")]
    Rate(f64),
    /// A backoff that is no duration.
    #[error("`{name}` must be a non-negative number of seconds, not {secs}")]
    Backoff {
        /// `backoff_secs` or `max_backoff_secs`.
        name: &'static str,
        /// The value given.
        secs: f64,
    },
}
