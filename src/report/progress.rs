//! Progress while a system is being asked, which can take minutes with a real model: answers
//! done out of the total, errors, and the time left. On a terminal it is the message of the
//! run's progress bar; otherwise (CI logs) a plain line every few seconds and one at the end.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use crate::gate::session::AnswerProgress;

/// How often a plain progress line is printed.
const LINE_EVERY: Duration = Duration::from_secs(10);

pub struct AnswerMeter {
    bar: Option<ProgressBar>,
    state: Mutex<Option<Meter>>,
}

/// The suite being answered.
struct Meter {
    suite: String,
    started: Instant,
    last_line: Instant,
    printed: bool,
}

impl AnswerMeter {
    /// `bar`: the terminal's progress bar, whose message shows the progress; `None` prints
    /// plain lines on stderr.
    pub fn new(bar: Option<ProgressBar>) -> AnswerMeter {
        AnswerMeter {
            bar,
            state: Mutex::new(None),
        }
    }

    pub fn update(&self, progress: &AnswerProgress<'_>) {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let meter = match state.as_mut() {
            Some(meter) if meter.suite == progress.suite => meter,
            _ => state.insert(Meter {
                suite: progress.suite.to_string(),
                started: now,
                last_line: now,
                printed: false,
            }),
        };
        let elapsed = now - meter.started;
        let done = progress.answered == progress.total;
        match &self.bar {
            Some(bar) if done => bar.set_message(""),
            Some(bar) => bar.set_message(describe(progress, elapsed)),
            None if done && meter.printed => eprintln!(
                "{:>12} {}: {} answers, {} errors, in {}",
                "Answered",
                progress.suite,
                progress.total,
                progress.errors,
                clock(elapsed)
            ),
            None if !done && now - meter.last_line >= LINE_EVERY => {
                eprintln!("{:>12} {}", "Answering", describe(progress, elapsed));
                meter.last_line = now;
                meter.printed = true;
            }
            None => {}
        }
    }
}

/// `demo: 40/140 answers, 2 errors, about 1m20s left`.
fn describe(progress: &AnswerProgress<'_>, elapsed: Duration) -> String {
    let left = match time_left(progress, elapsed) {
        Some(left) => format!(", about {} left", clock(left)),
        None => String::new(),
    };
    format!(
        "{}: {}/{} answers, {} errors{left}",
        progress.suite, progress.answered, progress.total, progress.errors
    )
}

/// The remaining answers at the pace of those the system gave so far (answers from the
/// cassette take no time and would make the estimate too hopeful).
fn time_left(progress: &AnswerProgress<'_>, elapsed: Duration) -> Option<Duration> {
    let asked = u32::try_from(progress.asked).ok().filter(|&n| n > 0)?;
    let remaining = u32::try_from(progress.total - progress.answered).ok()?;
    Some(elapsed / asked * remaining)
}

fn clock(duration: Duration) -> String {
    let secs = duration.as_secs();
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(answered: usize, asked: usize) -> AnswerProgress<'static> {
        AnswerProgress {
            suite: "demo",
            answered,
            total: 140,
            asked,
            errors: 2,
        }
    }

    #[test]
    fn time_left_follows_the_system_not_the_cassette() {
        // 100 answers replayed at once, then 10 asked in 50 s: 30 left at 5 s each.
        let line = describe(&progress(110, 10), Duration::from_secs(50));
        assert_eq!(line, "demo: 110/140 answers, 2 errors, about 2m30s left");
        // Nothing asked yet: no estimate rather than a wrong one.
        let line = describe(&progress(100, 0), Duration::from_secs(1));
        assert_eq!(line, "demo: 100/140 answers, 2 errors");
    }

    #[test]
    fn clocks_read_in_the_largest_useful_units() {
        assert_eq!(clock(Duration::from_secs(59)), "59s");
        assert_eq!(clock(Duration::from_secs(80)), "1m20s");
        assert_eq!(clock(Duration::from_secs(7380)), "2h03m");
    }
}
