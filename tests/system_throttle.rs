//! The throttle: which failures are retried, the backoff schedule, and the shared rate limit.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlgate::config::ThrottleConfig;
use sqlgate::system::throttle::Throttle;
use sqlgate::system::{SystemError, SystemErrorKind};

fn error(kind: SystemErrorKind, retryable: bool) -> SystemError {
    SystemError {
        kind,
        message: "it failed".into(),
        retryable,
        retry_after: None,
        truncated: false,
    }
}

fn recording(config: ThrottleConfig) -> (Throttle, Arc<Mutex<Vec<Duration>>>) {
    let waits = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&waits);
    let throttle = Throttle::new(config).with_sleep(move |wait| log.lock().unwrap().push(wait));
    (throttle, waits)
}

fn secs(values: &[f64]) -> Vec<Duration> {
    values.iter().map(|&s| Duration::from_secs_f64(s)).collect()
}

#[test]
fn retryable_failures_are_retried_with_doubling_waits() {
    let (throttle, waits) = recording(ThrottleConfig::default());
    let attempts = AtomicU32::new(0);
    let result: Result<(), _> = throttle.call(|| {
        attempts.fetch_add(1, Ordering::SeqCst);
        Err(error(SystemErrorKind::Timeout, true))
    });
    let error = result.unwrap_err();
    assert_eq!(attempts.load(Ordering::SeqCst), 5, "one call and 4 retries");
    assert_eq!(error.kind, SystemErrorKind::Timeout);
    assert!(
        error.message.contains("after 5 attempts"),
        "{}",
        error.message
    );
    assert_eq!(*waits.lock().unwrap(), secs(&[0.5, 1.0, 2.0, 4.0]));
}

#[test]
fn a_success_after_failures_is_returned() {
    let (throttle, waits) = recording(ThrottleConfig::default());
    let attempts = AtomicU32::new(0);
    let result = throttle.call(|| match attempts.fetch_add(1, Ordering::SeqCst) {
        0 | 1 => Err(error(SystemErrorKind::Transport, true)),
        n => Ok(n),
    });
    assert_eq!(result.unwrap(), 2);
    assert_eq!(waits.lock().unwrap().len(), 2);
}

#[test]
fn other_failures_are_returned_at_once() {
    let (throttle, waits) = recording(ThrottleConfig::default());
    let attempts = AtomicU32::new(0);
    let result: Result<(), _> = throttle.call(|| {
        attempts.fetch_add(1, Ordering::SeqCst);
        Err(error(SystemErrorKind::Garbage, false))
    });
    assert_eq!(result.unwrap_err().message, "it failed");
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    assert!(waits.lock().unwrap().is_empty());
}

#[test]
fn a_final_answer_after_retries_carries_no_retry_history() {
    // Garbage is recorded in the cassette: its message must not change with how many
    // transient failures came before it.
    let (throttle, _) = recording(ThrottleConfig::default());
    let attempts = AtomicU32::new(0);
    let result: Result<(), _> = throttle.call(|| match attempts.fetch_add(1, Ordering::SeqCst) {
        0 => Err(error(SystemErrorKind::Http, true)),
        _ => Err(error(SystemErrorKind::Garbage, false)),
    });
    assert_eq!(result.unwrap_err().message, "it failed");
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
}

#[test]
fn backoff_is_capped_but_a_longer_retry_after_is_honoured() {
    let throttle = Throttle::new(ThrottleConfig {
        backoff_secs: 1.0,
        max_backoff_secs: 5.0,
        ..ThrottleConfig::default()
    });
    let schedule: Vec<Duration> = (0..5).map(|retry| throttle.backoff(retry, None)).collect();
    assert_eq!(schedule, secs(&[1.0, 2.0, 4.0, 5.0, 5.0]));
    assert_eq!(throttle.backoff(60, None), Duration::from_secs(5));
    let asked = Some(Duration::from_secs(12));
    assert_eq!(throttle.backoff(0, asked), Duration::from_secs(12));
    assert_eq!(
        throttle.backoff(0, Some(Duration::from_millis(10))),
        Duration::from_secs(1)
    );
    // A server asking for hours is not obeyed for hours.
    assert!(throttle.backoff(0, Some(Duration::from_secs(86_400))) <= Duration::from_secs(300));
}

#[test]
fn the_rate_limit_is_shared_across_threads() {
    let throttle = Throttle::new(ThrottleConfig {
        requests_per_second: Some(20.0),
        ..ThrottleConfig::default()
    });
    let starts = Mutex::new(Vec::new());
    let began = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..3 {
                    let _: Result<(), SystemError> = throttle.call(|| {
                        starts.lock().unwrap().push(Instant::now());
                        Ok(())
                    });
                }
            });
        }
    });
    let mut starts = starts.into_inner().unwrap();
    starts.sort();
    assert_eq!(starts.len(), 12);
    // The i-th start waits for the i-th slot of 50 ms, whichever thread makes it.
    for (index, start) in starts.iter().enumerate() {
        let earliest = began + Duration::from_millis(50) * index as u32;
        assert!(
            *start >= earliest,
            "call {index} started {:?} early",
            earliest - *start
        );
    }
}

#[test]
fn configuration_defaults_and_checks() {
    let parsed: ThrottleConfig =
        toml::from_str("concurrency = 8\nrequests_per_second = 2.5").unwrap();
    assert_eq!(parsed.concurrency, 8);
    assert_eq!(parsed.requests_per_second, Some(2.5));
    assert_eq!(parsed.retries, 4);
    assert_eq!(parsed.backoff_secs, 0.5);
    assert_eq!(parsed.max_backoff_secs, 30.0);
    assert!(parsed.check().is_ok());
    assert!(toml::from_str::<ThrottleConfig>("retry = 3").is_err());

    let zero = ThrottleConfig {
        concurrency: 0,
        ..ThrottleConfig::default()
    };
    assert!(zero.check().unwrap_err().contains("concurrency"));
    assert_eq!(Throttle::new(zero).concurrency(), 1);
    let negative_rate = ThrottleConfig {
        requests_per_second: Some(-1.0),
        ..ThrottleConfig::default()
    };
    assert!(negative_rate.check().is_err());
    let nan_backoff = ThrottleConfig {
        backoff_secs: f64::NAN,
        ..ThrottleConfig::default()
    };
    assert!(nan_backoff.check().is_err());
    // Invalid values never panic at call time.
    let (throttle, _) = recording(nan_backoff);
    assert_eq!(throttle.backoff(3, None), Duration::ZERO);
}
