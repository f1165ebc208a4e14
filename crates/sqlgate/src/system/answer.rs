//! Answering a list of requests: from the cassette, from the system, or both (record modes),
//! and the JSON answer that `command` and `http` systems return.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::cassette::{record_key, Cassette};
use super::{Reply, Request, System, SystemError, SystemErrorKind, Usage};
use crate::config::RecordMode;
use sqlgate_eval::loaders::{parse_answer_document, AnswerDocumentError};
use sqlgate_llm::throttle::Throttle;

/// A system's answer to one case, the time this run spent getting it, and what it cost the
/// system.
#[derive(Debug, Clone)]
pub struct Answered {
    /// The reply, or why there is none.
    pub reply: Result<Reply, SystemError>,
    /// How long this run spent asking (zero when the answer came from the cassette).
    pub elapsed: Duration,
    /// The system was asked now: not read from the cassette, not missing from it.
    pub asked: bool,
    /// The answer's latency and tokens, as measured now or as recorded.
    pub cost: AnswerCost,
}

/// What one answer cost: how long the system took and the tokens its server counted. Either
/// may be unknown, and unknown is never read as zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerCost {
    /// How long the system took to answer, in whole milliseconds, as the run that asked it
    /// measured and recorded it (the attempt that answered: retries and throttle waits left
    /// out). `None`: no latency recorded (a predictions file, a cassette line written before
    /// sqlgate recorded latency, no answer at all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// The tokens the system's server counted, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl Answered {
    /// An answer with its latency; the reply's `usage` moves to [`Answered::cost`], so what
    /// is scored (and keys a reused verdict) is the reply alone.
    pub fn new(
        mut reply: Result<Reply, SystemError>,
        elapsed: Duration,
        asked: bool,
        latency_ms: Option<u64>,
    ) -> Answered {
        let usage = reply.as_mut().ok().and_then(|reply| reply.usage.take());
        Answered {
            reply,
            elapsed,
            asked,
            cost: AnswerCost { latency_ms, usage },
        }
    }

    /// No answer: `error` says why (not recorded, a timeout...).
    pub fn missing(error: SystemError) -> Answered {
        Answered::new(Err(error), Duration::ZERO, false, None)
    }
}

/// Answers every request, aligned with `requests`.
///
/// The system is checked once before its first question ([`System::preflight`]). Calls run
/// on `throttle.concurrency()` threads, each through the throttle, and every answer is
/// journaled in the cassette as soon as it arrives, so a run killed at any moment
/// resumes without asking again. `progress` is called with a request's index and its answer
/// once it is answered (from the cassette first, then as calls return, from any thread).
pub fn answer_all(
    system: &dyn System,
    requests: &[Request],
    cassette: &Cassette,
    mode: RecordMode,
    throttle: &Throttle,
    progress: &(dyn Fn(usize, &Answered) + Sync),
) -> Vec<Answered> {
    let fingerprint = system.fingerprint();
    let keys: Vec<String> = requests
        .iter()
        .map(|request| record_key(&fingerprint, request))
        .collect();
    let mut answers: Vec<Option<Answered>> = vec![None; requests.len()];
    let mut to_call = Vec::new();
    for (index, key) in keys.iter().enumerate() {
        let recorded = match mode {
            RecordMode::All => None,
            RecordMode::None | RecordMode::New => cassette.get(key),
        };
        let answered = match (recorded, mode) {
            (Some(record), _) => Answered::new(
                record.answer().clone(),
                Duration::ZERO,
                false,
                record.latency_ms(),
            ),
            (None, RecordMode::None) => Answered::missing(not_recorded(&requests[index])),
            (None, _) => {
                to_call.push(index);
                continue;
            }
        };
        progress(index, &answered);
        answers[index] = Some(answered);
    }
    if !to_call.is_empty() {
        throttle.check_before_asking(|| system.preflight());
    }
    let called = call_concurrently(&to_call, throttle.concurrency(), |index| {
        let request = &requests[index];
        let start = Instant::now();
        let mut last_attempt = Duration::ZERO;
        let reply = throttle.call(|| {
            let attempt = Instant::now();
            let reply = system.answer(request);
            last_attempt = attempt.elapsed();
            reply
        });
        // A transient failure is no answer: it has no latency, as it has no cassette line.
        let answered_now = !reply.as_ref().is_err_and(|error| error.kind.is_transient());
        let latency_ms = answered_now.then(|| whole_milliseconds(last_attempt));
        cassette.record(&keys[index], &request.label(), &reply, latency_ms);
        let answered = Answered::new(reply, start.elapsed(), true, latency_ms);
        progress(index, &answered);
        answered
    });
    for (index, answered) in called {
        answers[index] = Some(answered);
    }
    answers
        .into_iter()
        .zip(requests)
        .map(|(answered, request)| {
            answered.unwrap_or_else(|| Answered::missing(not_recorded(request)))
        })
        .collect()
}

/// A latency as recorded: in whole milliseconds, so that the run that asked and every replay of
/// its cassette compute the same numbers from it.
fn whole_milliseconds(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn not_recorded(request: &Request) -> SystemError {
    SystemError::new(
        SystemErrorKind::NotRecorded,
        format!(
            "case `{}` has no recorded answer (record mode `none`); record it with `new`",
            request.id
        ),
    )
}

/// Runs `work` on every index, on up to `threads` threads taking indices in order.
fn call_concurrently<T: Send>(
    indices: &[usize],
    threads: usize,
    work: impl Fn(usize) -> T + Sync,
) -> Vec<(usize, T)> {
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::with_capacity(indices.len()));
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1).min(indices.len()) {
            scope.spawn(|| {
                while let Some(&index) = indices.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let result = work(index);
                    done.lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .push((index, result));
                }
            });
        }
    });
    done.into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Parses the answer document a `command` or `http` system prints
/// ([`parse_answer_document`], the reader of prediction files' lines too); a system answers one
/// case, so its document has no `id`. The pipeline cleans its SQL and samples afterwards.
pub(crate) fn parse_answer(output: &[u8]) -> Result<Reply, SystemError> {
    let garbage = |problem: String| {
        SystemError::new(
            SystemErrorKind::Garbage,
            format!("{problem}; the output was: {}", excerpt(output)),
        )
    };
    let expected = "expected a JSON object `{\"sql\": \"...\"}` or `{\"abstain\": true}`";
    let document = parse_answer_document(output).map_err(|problem| match problem {
        AnswerDocumentError::NotAnObject(_) | AnswerDocumentError::Json { .. } => {
            garbage(format!("{expected} ({problem})"))
        }
        other => garbage(other.to_string()),
    })?;
    if document.id.is_some() {
        return Err(garbage(format!(
            "{expected}: `id` belongs to prediction files, and a system answers the case it is asked"
        )));
    }
    Ok(Reply::from_document(document))
}

/// The start of a system's output, on one line, for error messages.
pub(crate) fn excerpt(output: &[u8]) -> String {
    const SHOWN: usize = 200;
    let text = String::from_utf8_lossy(output);
    let text = text.trim();
    if text.is_empty() {
        return "(nothing)".into();
    }
    let mut shown: String = text.chars().take(SHOWN).collect();
    if text.chars().count() > SHOWN {
        shown.push('…');
    }
    format!("{shown:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_document_may_carry_usage_read_strictly() {
        let reply = parse_answer(
            br#"{"sql": "SELECT 1", "usage": {"prompt_tokens": 812, "completion_tokens": 41}}"#,
        )
        .unwrap();
        assert_eq!(reply.usage.and_then(|usage| usage.total()), Some(853));
        assert_eq!(parse_answer(br#"{"abstain": true}"#).unwrap().usage, None);
        for bad in [
            r#"{"sql": "SELECT 1", "usage": {"prompt_tokens": 812}}"#,
            r#"{"sql": "SELECT 1", "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}"#,
            r#"{"sql": "SELECT 1", "usage": {"prompt_tokens": -1, "completion_tokens": 2}}"#,
        ] {
            let error = parse_answer(bad.as_bytes()).unwrap_err();
            assert_eq!(error.kind, SystemErrorKind::Garbage, "{bad}");
        }
        // A prediction file's line is not a system's answer: the id is refused.
        let error = parse_answer(br#"{"id": "q1", "sql": "SELECT 1"}"#).unwrap_err();
        assert_eq!(error.kind, SystemErrorKind::Garbage);
        assert!(
            error.message.contains("`id` belongs to prediction files"),
            "{}",
            error.message
        );
    }

    #[test]
    fn usage_moves_from_the_reply_to_the_answer_s_cost() {
        let usage = Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
        };
        let reply = Reply::sql("SELECT 1").with_usage(usage);
        let answered = Answered::new(Ok(reply), Duration::ZERO, true, Some(42));
        assert_eq!(answered.reply.unwrap().usage, None);
        assert_eq!(
            answered.cost,
            AnswerCost {
                latency_ms: Some(42),
                usage: Some(usage)
            }
        );
    }
}
