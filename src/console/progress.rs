//! Progress while a system is being asked, which can take minutes with a real model: answers
//! done out of the total, errors, and the time left. On a terminal it is the message of the
//! run's progress bar; otherwise (CI logs) a plain line every few seconds and one at the end.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use sqlgate::gate::answerer::AnswerProgress;
use sqlgate::report::plural;
use sqlgate_generate::distill::{Progress, Step};

/// How often a plain progress line is printed.
const LINE_EVERY: Duration = Duration::from_secs(10);

pub struct AnswerMeter {
    bar: Option<ProgressBar>,
    state: Mutex<Option<Meter>>,
}

/// The suite being answered.
struct Meter {
    suite: String,
    /// When the last plain line was printed, in the suite's asking time.
    last_line: Duration,
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
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let meter = match state.as_mut() {
            Some(meter) if meter.suite == progress.suite => meter,
            _ => state.insert(Meter {
                suite: progress.suite.to_string(),
                last_line: Duration::ZERO,
                printed: false,
            }),
        };
        let done = progress.answered == progress.total;
        match &self.bar {
            Some(bar) if done => bar.set_message(""),
            Some(bar) => bar.set_message(describe(progress)),
            None if done && meter.printed => eprintln!(
                "{:>12} {}: {}, in {}",
                "Answered",
                progress.suite,
                counts(progress),
                clock(progress.elapsed)
            ),
            None if !done && progress.elapsed - meter.last_line >= LINE_EVERY => {
                eprintln!("{:>12} {}", "Answering", describe(progress));
                meter.last_line = progress.elapsed;
                meter.printed = true;
            }
            None => {}
        }
    }
}

/// `demo: 40/140 cases: 38 answers, 2 errors, about 1m20s left`.
fn describe(progress: &AnswerProgress<'_>) -> String {
    let left = match time_left(progress) {
        Some(left) => format!(", about {} left", clock(left)),
        None => String::new(),
    };
    format!(
        "{}: {}/{} cases: {}{left}",
        progress.suite,
        progress.answered,
        progress.total,
        answers_and_errors(progress)
    )
}

/// `140 cases: 138 answers, 2 errors`.
fn counts(progress: &AnswerProgress<'_>) -> String {
    format!(
        "{}: {}",
        plural(progress.total, "case"),
        answers_and_errors(progress)
    )
}

/// An error is no answer: `38 answers, 2 errors` of 40 cases.
fn answers_and_errors(progress: &AnswerProgress<'_>) -> String {
    format!(
        "{}, {}",
        plural(progress.answered.saturating_sub(progress.errors), "answer"),
        plural(progress.errors, "error")
    )
}

/// The remaining cases at the pace the system kept since it was first asked: the time spent
/// on retries, timeouts and a lowered concurrency is in that pace (answers from the cassette
/// take no time and would make the estimate too hopeful).
fn time_left(progress: &AnswerProgress<'_>) -> Option<Duration> {
    let asked = u32::try_from(progress.asked).ok().filter(|&n| n > 0)?;
    let remaining = u32::try_from(progress.total - progress.answered).ok()?;
    Some(progress.elapsed / asked * remaining)
}

/// Progress of `sqlgate distill`, which can take minutes on a large database: on a terminal, a
/// line on stderr with the database, the step, what is done of it and the time left, redrawn
/// as it moves; elsewhere nothing until the closing summary.
pub struct DistillMeter {
    bar: Option<ProgressBar>,
    start: Instant,
}

impl DistillMeter {
    /// A meter drawing on stderr when `show` (stderr is a terminal and the summary is text).
    pub fn new(show: bool) -> DistillMeter {
        let bar = show.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}") {
                bar.set_style(style);
            }
            bar.set_message("starting");
            // Drawn within a second of starting, and kept moving while a query runs long.
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        DistillMeter {
            bar,
            start: Instant::now(),
        }
    }

    pub fn update(&self, progress: &Progress<'_>) {
        if let Some(bar) = &self.bar {
            bar.set_message(describe_distill(progress));
        }
    }

    /// Clears the line (before the tables are printed on stdout).
    pub fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// Says on stderr what was distilled (`summary`) and how long it took.
    pub fn finish(&self, summary: &str) {
        self.clear();
        eprintln!(
            "{:>12} {summary} in {}",
            "Distilled",
            clock(self.start.elapsed())
        );
    }
}

impl Drop for DistillMeter {
    /// A run that stops on an error leaves no line behind.
    fn drop(&mut self) {
        self.clear();
    }
}

/// `shop (1/2): golds on the original 37/120, about 20s left`.
fn describe_distill(progress: &Progress<'_>) -> String {
    let step = match progress.step {
        Step::Reading => "reading the original",
        Step::Original => "golds on the original",
        Step::Candidates => "candidate databases",
        Step::Writing => "writing the kept databases",
    };
    let mut line = format!(
        "{} ({}/{}): {step}",
        // A database's name is the user's: one line, escaped.
        progress.db.escape_debug(),
        progress.database,
        progress.databases
    );
    if progress.total > 0 {
        line.push_str(&format!(" {}/{}", progress.done, progress.total));
        if let Some(done) = u32::try_from(progress.done).ok().filter(|&n| n > 0) {
            let remaining = u32::try_from(progress.total - progress.done).unwrap_or(u32::MAX);
            line.push_str(&format!(
                ", about {} left",
                clock(progress.elapsed / done * remaining)
            ));
        }
    }
    line
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

    fn progress(answered: usize, asked: usize, elapsed: u64) -> AnswerProgress<'static> {
        AnswerProgress {
            suite: "demo",
            answered,
            total: 140,
            asked,
            errors: 2,
            elapsed: Duration::from_secs(elapsed),
        }
    }

    #[test]
    fn time_left_follows_the_system_not_the_cassette() {
        // 100 answers replayed at once, then 10 asked in 50 s: 30 left at 5 s each.
        let line = describe(&progress(110, 10, 50));
        assert_eq!(
            line,
            "demo: 110/140 cases: 108 answers, 2 errors, about 2m30s left"
        );
        // Nothing asked yet: no estimate rather than a wrong one.
        let line = describe(&progress(100, 0, 1));
        assert_eq!(line, "demo: 100/140 cases: 98 answers, 2 errors");
    }

    #[test]
    fn time_left_counts_from_the_first_question() {
        // The first answer came 20 s after asking began (retries, a queue): 139 more at that
        // pace, not at no time at all.
        let first = AnswerProgress {
            errors: 0,
            ..progress(1, 1, 20)
        };
        let line = describe(&first);
        assert!(line.ends_with("about 46m20s left"), "{line}");
    }

    #[test]
    fn errors_are_not_counted_as_answers() {
        let all_failed = AnswerProgress {
            errors: 140,
            ..progress(140, 140, 75)
        };
        assert_eq!(counts(&all_failed), "140 cases: 0 answers, 140 errors");
    }

    #[test]
    fn clocks_read_in_the_largest_useful_units() {
        assert_eq!(clock(Duration::from_secs(59)), "59s");
        assert_eq!(clock(Duration::from_secs(80)), "1m20s");
        assert_eq!(clock(Duration::from_secs(7380)), "2h03m");
    }

    #[test]
    fn a_distill_line_names_the_database_the_step_and_the_time_left() {
        let progress = |step, done, total, elapsed| Progress {
            db: "shop\n2",
            database: 1,
            databases: 2,
            step,
            done,
            total,
            elapsed: Duration::from_secs(elapsed),
        };
        // 30 of 120 golds in 45 s: 90 left at 1.5 s each.
        assert_eq!(
            describe_distill(&progress(Step::Original, 30, 120, 45)),
            "shop\\n2 (1/2): golds on the original 30/120, about 2m15s left"
        );
        // Nothing done yet: no estimate.
        assert_eq!(
            describe_distill(&progress(Step::Candidates, 0, 200, 3)),
            "shop\\n2 (1/2): candidate databases 0/200"
        );
        assert_eq!(
            describe_distill(&progress(Step::Writing, 0, 0, 1)),
            "shop\\n2 (1/2): writing the kept databases"
        );
    }
}
