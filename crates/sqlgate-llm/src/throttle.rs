//! The throttle every system call goes through: an adaptive concurrency limit, a shared rate
//! limit, retries with exponential backoff for transient failures, and a circuit breaker that
//! stops asking a system that cannot be reached.
//!
//! The concurrency limit follows AIMD. It starts at `concurrency`, the most the configuration
//! allows, and halves when an attempt sent while others were in flight fails by overload (a
//! timeout, HTTP 429 or 503), once per overload: attempts sent before it was lowered do not
//! lower it again. It grows back by one per `limit` answers, but only while the slowest answer
//! since it last changed, scaled to one more call in flight, stays well under the timeouts
//! seen: a server that computes one request at a time answers `n` queued requests in `n` times
//! one answer's time, and growing past the timeout only buys abandoned work.
//!
//! A timed-out attempt keeps its slot for a while, since the server is likely still computing
//! it: until an attempt sent after it is answered, or as long again as it waited. An attempt
//! sent before the limit was last lowered that fails by overload is retried without spending
//! the case's `retries`, at most once per halving from `concurrency` down to 1 (twice with the
//! default 4), so a case is never retried forever.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::ThrottleConfig;
use crate::{ServerState, SystemError, SystemErrorKind};

/// The longest `Retry-After` honoured: a server asking for more would stall CI for good.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// The limit grows only while the slowest answer, scaled to one more call in flight, takes
/// under this share of the timeouts seen.
const GROWTH_HEADROOM: f64 = 0.8;

/// Wraps system calls; share one between the threads calling a system.
pub struct Throttle {
    config: ThrottleConfig,
    /// When the next call may start under the rate limit.
    next_start: Mutex<Option<Instant>>,
    sleep: Box<dyn Fn(Duration) + Send + Sync>,
    limiter: Mutex<Limiter>,
    slot_freed: Condvar,
    breaker: Mutex<Breaker>,
    /// Set once the system was checked before its first question.
    checked: OnceLock<()>,
    asked: AtomicUsize,
    attempts: AtomicUsize,
}

/// What the throttle saw of a system, for the run's summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// Questions sent at least once.
    pub questions: usize,
    /// Requests sent, retries included.
    pub attempts: usize,
    /// The configured concurrency.
    pub concurrency: usize,
    /// The limit it ended at (lowered while the server was busy).
    pub settled: usize,
    /// Attempts that timed out.
    pub timeouts: usize,
    /// Attempts the server refused as busy (429, 503).
    pub busy: usize,
    /// Why the system was asked nothing more, when it was stopped.
    pub stopped: Option<String>,
}

impl Throttle {
    /// A throttle with the given limits; invalid values (see [`ThrottleConfig::check`]) fall
    /// back to the least surprising behaviour (one call at a time, no rate limit, no wait).
    pub fn new(config: ThrottleConfig) -> Throttle {
        let limiter = Limiter::new(config.concurrency.max(1));
        Throttle {
            config,
            next_start: Mutex::new(None),
            sleep: Box::new(std::thread::sleep),
            limiter: Mutex::new(limiter),
            slot_freed: Condvar::new(),
            breaker: Mutex::new(Breaker::default()),
            checked: OnceLock::new(),
            asked: AtomicUsize::new(0),
            attempts: AtomicUsize::new(0),
        }
    }

    /// Replaces how the throttle waits (backoff and rate limit), so tests need not sleep.
    pub fn with_sleep(mut self, sleep: impl Fn(Duration) + Send + Sync + 'static) -> Throttle {
        self.sleep = Box::new(sleep);
        self
    }

    /// The bounds this throttle runs under.
    pub fn config(&self) -> &ThrottleConfig {
        &self.config
    }

    /// The most calls in flight at once (at least one): callers need this many threads.
    pub fn concurrency(&self) -> usize {
        self.config.concurrency.max(1)
    }

    /// Runs `check` once, before the system's first question: a failure (the cause, such as
    /// `connection refused at 127.0.0.1:8765`) stops the system from being asked at all.
    pub fn check_before_asking(&self, check: impl FnOnce() -> Result<(), String>) {
        self.checked.get_or_init(|| {
            if let Err(cause) = check() {
                lock(&self.breaker).stopped = Some(format!("{cause} (checked before asking)"));
            }
        });
    }

    /// Runs `call`, waiting for a slot under the concurrency limit and for the rate limit
    /// before each attempt, and retrying retryable failures up to `retries` times (attempts
    /// sent before the limit was lowered are retried without counting). The last failure is
    /// returned when retries run out; once the system is stopped, an `unavailable` error.
    pub fn call<T>(
        &self,
        mut call: impl FnMut() -> Result<T, SystemError>,
    ) -> Result<T, SystemError> {
        let mut retry = 0;
        let mut free_retries = 0;
        let mut attempts = 0;
        loop {
            if let Some(why) = self.stopped() {
                return Err(not_asked(why, attempts));
            }
            let slot = self.acquire();
            if let Some(why) = self.stopped() {
                self.release(slot, Outcome::Failed);
                return Err(not_asked(why, attempts));
            }
            self.wait_for_rate_limit();
            if attempts == 0 {
                self.asked.fetch_add(1, Ordering::Relaxed);
            }
            self.attempts.fetch_add(1, Ordering::Relaxed);
            attempts += 1;
            let slot = Slot {
                sent: Instant::now(),
                ..slot
            };
            let result = call();
            let outcome = Outcome::of(&result);
            let sent_before_lowered = self.release(slot, outcome);
            self.watch_connection(result.as_ref().err());
            match result {
                Err(error) if error.retryable && self.stopped().is_some() => {
                    return Err(with_attempts(error, attempts));
                }
                Err(error)
                    if error.retryable
                        && sent_before_lowered
                        && free_retries < self.free_retries() =>
                {
                    (self.sleep)(self.backoff(0, error.retry_after));
                    free_retries += 1;
                }
                Err(error) if error.retryable && retry < self.config.retries => {
                    (self.sleep)(self.backoff(retry, error.retry_after));
                    retry += 1;
                }
                // Retries ran out on a transient failure. (A final answer that is not transient,
                // such as garbage, is recorded: its message stays free of retry history.)
                Err(error) if error.retryable => return Err(with_attempts(error, attempts)),
                other => return other,
            }
        }
    }

    /// What the throttle saw so far.
    pub fn asked(&self) -> Asked {
        let limiter = lock(&self.limiter);
        Asked {
            questions: self.asked.load(Ordering::Relaxed),
            attempts: self.attempts.load(Ordering::Relaxed),
            concurrency: limiter.max,
            settled: limiter.allowed(),
            timeouts: limiter.timeouts,
            busy: limiter.busy,
            stopped: self.stopped(),
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

    /// Retries that do not count, per call: once per halving from `concurrency` down to 1.
    fn free_retries(&self) -> u32 {
        let most = self.concurrency();
        usize::BITS - (most - 1).leading_zeros()
    }

    /// Why the system is asked nothing more, once it is stopped.
    fn stopped(&self) -> Option<String> {
        lock(&self.breaker).stopped.clone()
    }

    /// Counts connection failures in a row, and stops the system after too many. A timeout
    /// says nothing either way; anything else came from the server.
    fn watch_connection(&self, error: Option<&SystemError>) {
        let mut breaker = lock(&self.breaker);
        let Some(error) = error else {
            breaker.unreachable_in_a_row = 0;
            return;
        };
        if error.server == ServerState::Unreachable {
            breaker.unreachable_in_a_row += 1;
            let limit = self.config.stop_after_connection_failures.max(1);
            if breaker.unreachable_in_a_row >= limit && breaker.stopped.is_none() {
                breaker.stopped = Some(format!(
                    "{} ({limit} connection failures in a row)",
                    error.message
                ));
            }
        } else if error.kind != SystemErrorKind::Timeout {
            breaker.unreachable_in_a_row = 0;
        }
    }

    /// Waits for a slot under the concurrency limit.
    fn acquire(&self) -> Slot {
        let mut limiter = lock(&self.limiter);
        loop {
            let now = Instant::now();
            match limiter.try_acquire(now) {
                Ok(slot) => return slot,
                Err(Some(freed_at)) => {
                    let wait = freed_at.saturating_duration_since(now);
                    limiter = self
                        .slot_freed
                        .wait_timeout(limiter, wait)
                        .map(|(guard, _)| guard)
                        .unwrap_or_else(|poisoned| poisoned.into_inner().0);
                }
                Err(None) => {
                    limiter = self
                        .slot_freed
                        .wait(limiter)
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                }
            }
        }
    }

    /// Frees a slot; true when the attempt was sent before the limit was last lowered.
    fn release(&self, slot: Slot, outcome: Outcome) -> bool {
        let sent_before_lowered = lock(&self.limiter).release(slot, outcome, Instant::now());
        self.slot_freed.notify_all();
        sent_before_lowered
    }

    /// Reserves the next start slot under the rate limit and sleeps until it.
    fn wait_for_rate_limit(&self) {
        let Some(interval) = self.interval() else {
            return;
        };
        let now = Instant::now();
        let start = {
            let mut next = lock(&self.next_start);
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

/// A transient failure's message, with how many attempts it took when there were several.
fn with_attempts(mut error: SystemError, attempts: u32) -> SystemError {
    if attempts > 1 {
        error.message = format!("{} (after {attempts} attempts)", error.message);
    }
    error
}

/// The error of a call the throttle did not make (or did not make again).
fn not_asked(why: String, attempts: u32) -> SystemError {
    let again = if attempts > 0 { " again" } else { "" };
    SystemError::new(
        SystemErrorKind::Unavailable,
        format!("not asked{again}: {why}"),
    )
}

/// A poisoned lock only means another caller panicked; the state it guards stays valid.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A non-negative, finite number of seconds as a duration.
fn seconds(secs: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(secs).ok()
}

/// Whether the system is still asked.
#[derive(Default)]
struct Breaker {
    unreachable_in_a_row: u32,
    stopped: Option<String>,
}

/// An attempt in flight.
#[derive(Debug, Clone, Copy)]
struct Slot {
    sent: Instant,
    /// Other attempts were in flight (or abandoned) when it was sent.
    others: bool,
}

/// What an attempt says about the server's load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The server answered (an answer, garbage, a client error).
    Answered,
    /// It timed out, or the server said it was busy (429, 503).
    Overloaded { timed_out: bool },
    /// Anything else: a refused or dropped connection, a server error.
    Failed,
}

impl Outcome {
    fn of<T>(result: &Result<T, SystemError>) -> Outcome {
        match result {
            Ok(_) => Outcome::Answered,
            Err(error) if error.kind == SystemErrorKind::Timeout => {
                Outcome::Overloaded { timed_out: true }
            }
            Err(error) if error.server == ServerState::Busy => {
                Outcome::Overloaded { timed_out: false }
            }
            Err(error) if !error.retryable => Outcome::Answered,
            Err(_) => Outcome::Failed,
        }
    }
}

/// A timed-out attempt the server may still be computing.
#[derive(Debug, Clone, Copy)]
struct Abandoned {
    sent: Instant,
    /// When its slot is freed at the latest.
    until: Instant,
}

/// The adaptive concurrency limit (AIMD, see the module's documentation).
#[derive(Debug)]
struct Limiter {
    max: usize,
    /// In [1, max]; `floor(limit)` attempts may be in flight.
    limit: f64,
    in_flight: usize,
    abandoned: Vec<Abandoned>,
    lowered_at: Option<Instant>,
    /// The shortest wait after which an attempt timed out.
    timed_out_after: Option<Duration>,
    /// The slowest answer since the limit last changed.
    slowest: Duration,
    timeouts: usize,
    busy: usize,
}

impl Limiter {
    fn new(max: usize) -> Limiter {
        Limiter {
            max,
            limit: max as f64,
            in_flight: 0,
            abandoned: Vec::new(),
            lowered_at: None,
            timed_out_after: None,
            slowest: Duration::ZERO,
            timeouts: 0,
            busy: 0,
        }
    }

    /// Attempts allowed in flight.
    fn allowed(&self) -> usize {
        (self.limit.floor() as usize).clamp(1, self.max)
    }

    /// A slot, or when one may free up by itself (an abandoned attempt's end), if ever.
    fn try_acquire(&mut self, now: Instant) -> Result<Slot, Option<Instant>> {
        self.abandoned.retain(|abandoned| abandoned.until > now);
        let busy = self.in_flight + self.abandoned.len();
        if busy < self.allowed() {
            self.in_flight += 1;
            return Ok(Slot {
                sent: now,
                others: busy > 0,
            });
        }
        Err(self.abandoned.iter().map(|abandoned| abandoned.until).min())
    }

    /// Frees the slot of an attempt that ended at `now` with `outcome`; true when it failed by
    /// overload and was sent before the limit was last lowered.
    fn release(&mut self, slot: Slot, outcome: Outcome, now: Instant) -> bool {
        self.in_flight = self.in_flight.saturating_sub(1);
        let others = slot.others || self.in_flight > 0 || !self.abandoned.is_empty();
        let waited = now.saturating_duration_since(slot.sent);
        match outcome {
            Outcome::Answered => {
                self.answered(slot, waited);
                false
            }
            Outcome::Overloaded { timed_out } => {
                if timed_out {
                    self.timeouts += 1;
                    self.abandoned.push(Abandoned {
                        sent: slot.sent,
                        until: now + waited,
                    });
                    self.timed_out_after =
                        Some(self.timed_out_after.map_or(waited, |t| t.min(waited)));
                } else {
                    self.busy += 1;
                }
                let sent_before_lowered = self.lowered_at.is_some_and(|at| slot.sent < at);
                if !sent_before_lowered && others && self.limit > 1.0 {
                    self.limit = (self.limit / 2.0).max(1.0);
                    self.lowered_at = Some(now);
                    self.slowest = Duration::ZERO;
                }
                sent_before_lowered
            }
            Outcome::Failed => false,
        }
    }

    fn answered(&mut self, slot: Slot, waited: Duration) {
        // The server has moved past the work queued before this attempt.
        self.abandoned
            .retain(|abandoned| abandoned.sent > slot.sent);
        self.slowest = self.slowest.max(waited);
        let allowed = self.allowed();
        let room = self.timed_out_after.is_none_or(|timeout| {
            let scaled = self.slowest.as_secs_f64() * (allowed + 1) as f64 / allowed as f64;
            scaled < GROWTH_HEADROOM * timeout.as_secs_f64()
        });
        if room && allowed < self.max {
            self.limit = (self.limit + 1.0 / self.limit).min(self.max as f64);
            if self.allowed() != allowed {
                self.slowest = Duration::ZERO;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMED_OUT: Outcome = Outcome::Overloaded { timed_out: true };

    fn at(start: Instant, secs: f64) -> Instant {
        start + Duration::from_secs_f64(secs)
    }

    #[test]
    fn a_timeout_among_others_halves_the_limit_once() {
        let start = Instant::now();
        let mut limiter = Limiter::new(4);
        let slots: Vec<Slot> = (0..4)
            .map(|i| limiter.try_acquire(at(start, i as f64 * 0.01)).unwrap())
            .collect();
        assert!(limiter.try_acquire(at(start, 0.1)).is_err(), "4 in flight");
        // The first timeout lowers the limit; the others, sent before, neither lower it again
        // nor count against their case.
        assert!(!limiter.release(slots[0], TIMED_OUT, at(start, 3.0)));
        assert_eq!(limiter.allowed(), 2);
        assert!(limiter.release(slots[1], TIMED_OUT, at(start, 3.01)));
        assert!(limiter.release(slots[2], TIMED_OUT, at(start, 3.02)));
        assert_eq!(limiter.allowed(), 2);
        assert_eq!(limiter.timeouts, 3);
        // Sent under the lowered limit, a further timeout among others lowers it again.
        limiter.release(slots[3], Outcome::Answered, at(start, 3.05));
        assert!(limiter.abandoned.is_empty(), "the server is past them");
        let first = limiter.try_acquire(at(start, 4.0)).unwrap();
        let second = limiter.try_acquire(at(start, 4.0)).unwrap();
        assert!(!limiter.release(second, TIMED_OUT, at(start, 7.0)));
        assert_eq!(limiter.allowed(), 1);
        assert!(limiter.release(first, TIMED_OUT, at(start, 7.1)));
        assert_eq!(limiter.limit, 1.0);
    }

    #[test]
    fn a_lone_timeout_or_a_server_error_keeps_the_limit() {
        let start = Instant::now();
        let mut limiter = Limiter::new(4);
        let alone = limiter.try_acquire(start).unwrap();
        assert!(!alone.others);
        limiter.release(alone, TIMED_OUT, at(start, 3.0));
        assert_eq!(limiter.allowed(), 4);
        limiter.abandoned.clear();
        let first = limiter.try_acquire(at(start, 4.0)).unwrap();
        let second = limiter.try_acquire(at(start, 4.0)).unwrap();
        limiter.release(second, Outcome::Failed, at(start, 4.5));
        limiter.release(first, Outcome::Answered, at(start, 4.5));
        assert_eq!(limiter.allowed(), 4);
        // A 429 among others lowers it, as a timeout does.
        let first = limiter.try_acquire(at(start, 5.0)).unwrap();
        let second = limiter.try_acquire(at(start, 5.0)).unwrap();
        limiter.release(
            second,
            Outcome::Overloaded { timed_out: false },
            at(start, 5.1),
        );
        limiter.release(first, Outcome::Answered, at(start, 5.2));
        assert_eq!((limiter.allowed(), limiter.busy), (2, 1));
    }

    #[test]
    fn a_timed_out_attempt_holds_its_slot_until_the_server_is_past_it() {
        let start = Instant::now();
        let mut limiter = Limiter::new(4);
        let first = limiter.try_acquire(start).unwrap();
        let second = limiter.try_acquire(at(start, 0.1)).unwrap();
        limiter.release(second, TIMED_OUT, at(start, 3.1));
        assert_eq!(limiter.allowed(), 2);
        // An answer sent before the abandoned attempt does not free its slot...
        limiter.release(first, Outcome::Answered, at(start, 3.2));
        let third = limiter.try_acquire(at(start, 3.3)).unwrap();
        // ... which it holds for as long again as it waited at most...
        assert_eq!(
            limiter.try_acquire(at(start, 3.4)).unwrap_err(),
            Some(at(start, 6.1))
        );
        // ... or until an attempt sent after it is answered.
        limiter.release(third, Outcome::Answered, at(start, 3.5));
        assert!(limiter.try_acquire(at(start, 3.6)).is_ok());
    }

    #[test]
    fn the_limit_grows_back_only_with_room_below_the_timeout() {
        let start = Instant::now();
        let answer = |limiter: &mut Limiter, sent: f64, took: f64| {
            let slot = limiter.try_acquire(at(start, sent)).unwrap();
            limiter.release(slot, Outcome::Answered, at(start, sent + took));
        };
        // Without a timeout seen, the limit grows by one per `limit` answers.
        let mut limiter = Limiter::new(4);
        limiter.limit = 1.0;
        answer(&mut limiter, 0.0, 1.0);
        assert_eq!(limiter.allowed(), 2);
        for i in 1..4 {
            answer(&mut limiter, i as f64, 1.0);
        }
        assert_eq!(limiter.allowed(), 3);

        // With timeouts after 3 s: answers taking 1 s at one in flight would take about 2 s at
        // two, under 80% of 3 s: the limit grows. Answers taking 2 s at two would take 3 s at
        // three: it stays.
        let mut limiter = Limiter::new(4);
        limiter.limit = 1.0;
        limiter.timed_out_after = Some(Duration::from_secs(3));
        answer(&mut limiter, 10.0, 1.0);
        assert_eq!(limiter.allowed(), 2);
        for i in 0..10 {
            answer(&mut limiter, 20.0 + i as f64 * 2.0, 2.0);
        }
        assert_eq!(limiter.allowed(), 2);
    }
}
