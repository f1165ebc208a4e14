//! The throttle every system call goes through: a concurrency limit, a shared rate limit, and
//! retries with exponential backoff for transient failures.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::SystemError;
use crate::config::ThrottleConfig;

/// The longest `Retry-After` honoured: a server asking for more would stall CI for good.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// Wraps system calls; share one between the threads calling a system.
pub struct Throttle {
    config: ThrottleConfig,
    /// When the next call may start under the rate limit.
    next_start: Mutex<Option<Instant>>,
    sleep: Box<dyn Fn(Duration) + Send + Sync>,
}

impl Throttle {
    /// A throttle with the given limits; invalid values (see [`ThrottleConfig::check`]) fall
    /// back to the least surprising behaviour (one call at a time, no rate limit, no wait).
    pub fn new(config: ThrottleConfig) -> Throttle {
        Throttle {
            config,
            next_start: Mutex::new(None),
            sleep: Box::new(std::thread::sleep),
        }
    }

    /// Replaces how the throttle waits (backoff and rate limit), so tests need not sleep.
    pub fn with_sleep(mut self, sleep: impl Fn(Duration) + Send + Sync + 'static) -> Throttle {
        self.sleep = Box::new(sleep);
        self
    }

    pub fn config(&self) -> &ThrottleConfig {
        &self.config
    }

    /// Calls in flight at once (at least one).
    pub fn concurrency(&self) -> usize {
        self.config.concurrency.max(1)
    }

    /// Runs `call`, waiting for the rate limit before each attempt and retrying retryable
    /// failures up to `retries` times. The last failure is returned when retries run out.
    pub fn call<T>(
        &self,
        mut call: impl FnMut() -> Result<T, SystemError>,
    ) -> Result<T, SystemError> {
        let mut retry = 0;
        loop {
            self.wait_for_rate_limit();
            match call() {
                Err(error) if error.retryable && retry < self.config.retries => {
                    (self.sleep)(self.backoff(retry, error.retry_after));
                    retry += 1;
                }
                // Retries ran out on a transient failure. (A final answer that is not transient,
                // such as garbage, is recorded: its message stays free of retry history.)
                Err(mut error) if retry > 0 && error.retryable => {
                    error.message = format!("{} (after {} attempts)", error.message, retry + 1);
                    return Err(error);
                }
                other => return other,
            }
        }
    }

    /// The wait before retry number `retry` (0-based): the base doubled per retry, capped,
    /// or the server's `Retry-After` when that is longer.
    pub fn backoff(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let base = seconds(self.config.backoff_secs).unwrap_or_default();
        let cap = seconds(self.config.max_backoff_secs).unwrap_or_default();
        let doubled = base.checked_mul(2u32.saturating_pow(retry)).unwrap_or(cap);
        let backoff = doubled.min(cap);
        match retry_after {
            Some(asked) => backoff.max(asked.min(MAX_RETRY_AFTER)),
            None => backoff,
        }
    }

    /// Reserves the next start slot under the rate limit and sleeps until it.
    fn wait_for_rate_limit(&self) {
        let Some(interval) = self.interval() else {
            return;
        };
        let now = Instant::now();
        let start = {
            // A poisoned lock only means another caller panicked; the slot time is still valid.
            let mut next = self
                .next_start
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let start = next.map_or(now, |slot| slot.max(now));
            *next = Some(start + interval);
            start
        };
        if start > now {
            (self.sleep)(start - now);
        }
    }

    /// The time between call starts, when rate limited.
    fn interval(&self) -> Option<Duration> {
        let rate = self.config.requests_per_second?;
        seconds(1.0 / rate).filter(|interval| !interval.is_zero())
    }
}

/// A non-negative, finite number of seconds as a duration.
fn seconds(secs: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(secs).ok()
}
