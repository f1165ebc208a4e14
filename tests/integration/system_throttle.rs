//! The throttle: which failures are retried, the backoff schedule, the shared rate limit, the
//! adaptive concurrency limit and the circuit breaker.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use sqlgate::system::{ServerState, SystemError, SystemErrorKind};
use sqlgate_llm::throttle::Throttle;
use sqlgate_llm::ThrottleConfig;

fn error(kind: SystemErrorKind, retryable: bool) -> SystemError {
    if retryable {
        SystemError::retryable(kind, "it failed")
    } else {
        SystemError::new(kind, "it failed")
    }
}

fn refused() -> SystemError {
    SystemError::retryable(
        SystemErrorKind::Transport,
        "connection refused at 127.0.0.1:9",
    )
    .with_server(ServerState::Unreachable)
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
    assert_eq!(parsed.stop_after_connection_failures, 3);
    assert!(parsed.check().is_ok());
    let never_stop = ThrottleConfig {
        stop_after_connection_failures: 0,
        ..ThrottleConfig::default()
    };
    assert_eq!(
        never_stop.check().unwrap_err().to_string(),
        "`stop_after_connection_failures` must be at least 1"
    );
    assert!(toml::from_str::<ThrottleConfig>("retry = 3").is_err());

    let zero = ThrottleConfig {
        concurrency: 0,
        ..ThrottleConfig::default()
    };
    assert_eq!(
        zero.check().unwrap_err().to_string(),
        "`concurrency` must be at least 1"
    );
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

#[test]
fn connection_failures_in_a_row_stop_the_system() {
    let (throttle, waits) = recording(ThrottleConfig::default());
    let attempts = AtomicU32::new(0);
    let result: Result<(), _> = throttle.call(|| {
        attempts.fetch_add(1, Ordering::SeqCst);
        Err(refused())
    });
    // The third failure in a row stops the system: no more retries for this call...
    let error = result.unwrap_err();
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
    assert_eq!(error.kind, SystemErrorKind::Transport);
    assert!(
        error.message.contains("after 3 attempts"),
        "{}",
        error.message
    );
    assert_eq!(waits.lock().unwrap().len(), 2);
    // ... and none for the next ones, which are not asked at all.
    let next: Result<(), _> = throttle.call(|| {
        attempts.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let error = next.unwrap_err();
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
    assert_eq!(error.kind, SystemErrorKind::Unavailable);
    assert!(!error.retryable);
    assert!(
        error.message.contains("connection refused at 127.0.0.1:9")
            && error.message.contains("3 connection failures in a row"),
        "{}",
        error.message
    );
    let asked = throttle.asked();
    assert_eq!((asked.questions, asked.attempts), (1, 3));
    assert!(asked.stopped.is_some());
}

#[test]
fn an_answer_between_connection_failures_keeps_the_system_asked() {
    let (throttle, _) = recording(ThrottleConfig::default());
    let attempts = AtomicU32::new(0);
    for _ in 0..3 {
        let result = throttle.call(|| match attempts.fetch_add(1, Ordering::SeqCst) % 3 {
            0 | 1 => Err(refused()),
            _ => Ok(()),
        });
        assert!(result.is_ok());
    }
    // Timeouts say nothing about the connection: they neither count nor reset the count.
    let (throttle, _) = recording(ThrottleConfig {
        stop_after_connection_failures: 2,
        retries: 0,
        ..ThrottleConfig::default()
    });
    let _ = throttle.call(|| Err::<(), _>(refused()));
    let _ = throttle.call(|| Err::<(), _>(error(SystemErrorKind::Timeout, true)));
    assert!(throttle.asked().stopped.is_none());
    let _ = throttle.call(|| Err::<(), _>(refused()));
    assert!(throttle.asked().stopped.is_some());
}

#[test]
fn a_failed_check_before_asking_stops_the_system_before_any_call() {
    let (throttle, _) = recording(ThrottleConfig::default());
    throttle.check_before_asking(|| Err("connection refused at 127.0.0.1:9".into()));
    throttle.check_before_asking(|| panic!("the check runs once"));
    let called = AtomicU32::new(0);
    let result: Result<(), _> = throttle.call(|| {
        called.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let error = result.unwrap_err();
    assert_eq!(called.load(Ordering::SeqCst), 0);
    assert_eq!(error.kind, SystemErrorKind::Unavailable);
    assert_eq!(
        error.message,
        "not asked: connection refused at 127.0.0.1:9 (checked before asking)"
    );
    assert_eq!(throttle.asked().questions, 0);
}

/// Four calls in flight time out together: the first lowers the limit, and the three sent
/// before it was lowered are retried without spending their (here no) retries.
#[test]
fn attempts_sent_before_the_limit_was_lowered_are_retried_for_free() {
    let (throttle, _) = recording(ThrottleConfig {
        retries: 0,
        ..ThrottleConfig::default()
    });
    let together = Barrier::new(4);
    let results: Vec<Result<(), SystemError>> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..4u64)
            .map(|i| {
                let (throttle, together) = (&throttle, &together);
                scope.spawn(move || {
                    let mut attempt = 0;
                    throttle.call(|| {
                        attempt += 1;
                        if attempt > 1 {
                            return Ok(());
                        }
                        together.wait();
                        // One after the other, as a server answering one at a time would.
                        std::thread::sleep(Duration::from_millis(50 * (i + 1)));
                        Err(error(SystemErrorKind::Timeout, true))
                    })
                })
            })
            .collect();
        calls.into_iter().map(|call| call.join().unwrap()).collect()
    });
    let failed = results.iter().filter(|result| result.is_err()).count();
    assert_eq!(failed, 1, "{results:?}");
    let asked = throttle.asked();
    assert_eq!((asked.questions, asked.attempts), (4, 7));
    assert_eq!((asked.concurrency, asked.timeouts), (4, 4));
    assert!(asked.settled < 4, "{asked:?}");
}

/// However the limit moves, a call that keeps timing out ends: its free retries are bounded.
#[test]
fn free_retries_are_bounded() {
    let (throttle, _) = recording(ThrottleConfig {
        retries: 1,
        ..ThrottleConfig::default()
    });
    let attempts = AtomicU32::new(0);
    std::thread::scope(|scope| {
        for i in 0..4u64 {
            let (throttle, attempts) = (&throttle, &attempts);
            scope.spawn(move || {
                let result: Result<(), _> = throttle.call(|| {
                    attempts.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(10 * (i + 1)));
                    Err(error(SystemErrorKind::Timeout, true))
                });
                assert!(result.is_err());
            });
        }
    });
    // Per call: one attempt, one retry, and one free retry per halving from 4 to 1.
    assert!(attempts.load(Ordering::SeqCst) <= 4 * (1 + 1 + 2));
}
