//! nextest-like terminal output: one line per finished test, a progress bar on a terminal, and
//! a summary with counts, failures with their reasons, and the slowest tests.

use std::io::{BufWriter, IsTerminal, Stdout, Write};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::console::progress::AnswerMeter;
use sqlgate::config::Threshold;
use sqlgate::gate::judge::format_metric;
use sqlgate::gate::run::Event;
use sqlgate::gate::{TestResult, TestStatus};
use sqlgate::report::{github, plural};
use sqlgate_eval::secrets;

const SLOWEST_SHOWN: usize = 5;

/// Off a terminal, status lines are written in batches at most this old: a system call per
/// line is most of a 50,000-case rerun's output time.
const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// `--color`: `auto` colors a terminal unless `NO_COLOR` is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

pub struct TerminalReporter {
    start: Instant,
    bar: Option<ProgressBar>,
    /// Where the bar is drawn once the run starts: hidden until then, it would show `0/0`.
    bar_target: Option<ProgressDrawTarget>,
    color: bool,
    heading: String,
    out: BufWriter<Stdout>,
    flushed: Instant,
}

impl TerminalReporter {
    /// `heading` is shown on the start line, e.g. `system sample, profile ci`. The progress
    /// bar is drawn on stderr when it is a terminal.
    pub fn new(heading: String, color: ColorChoice) -> TerminalReporter {
        let bar_target = std::io::stderr()
            .is_terminal()
            .then(ProgressDrawTarget::stderr);
        TerminalReporter::with_bar(heading, color, bar_target)
    }

    /// A reporter whose progress bar, if any, is drawn on `bar_target`.
    pub fn with_bar(
        heading: String,
        color: ColorChoice,
        bar_target: Option<ProgressDrawTarget>,
    ) -> TerminalReporter {
        let color = match color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
            }
        };
        // Made up front so that the answers' progress can show in it before tests finish.
        let bar = bar_target.is_some().then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template(
                "{prefix:>12} [{elapsed_precise}] {bar:40} {pos}/{len} {msg}",
            ) {
                bar.set_style(style);
            }
            bar.set_prefix("Running");
            bar
        });
        TerminalReporter {
            start: Instant::now(),
            bar,
            bar_target,
            color,
            heading,
            out: BufWriter::new(std::io::stdout()),
            flushed: Instant::now(),
        }
    }

    /// Shows the system's answers coming in, in the progress bar on a terminal.
    pub fn answer_meter(&self) -> AnswerMeter {
        AnswerMeter::new(self.bar.clone())
    }

    pub fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Started { total } => {
                self.start = Instant::now();
                if let Some(bar) = &self.bar {
                    bar.set_length(total as u64);
                    bar.reset_elapsed();
                    if let Some(target) = self.bar_target.take() {
                        bar.set_draw_target(target);
                    }
                }
                self.print(&format!(
                    "{:>12} {} ({})",
                    self.paint("Starting", GREEN),
                    plural(total, "test"),
                    self.heading
                ));
                // Answers may take minutes before the first test finishes.
                let _ = self.out.flush();
            }
            Event::Finished(result) => {
                let line = self.status_line(result);
                self.print(&line);
                if let Some(bar) = &self.bar {
                    bar.inc(1);
                }
            }
            // Events the terminal does not show yet (the enum may grow).
            _ => {}
        }
    }

    /// Prints the summary after the run.
    /// `filtered_out` tests were left out by the filters; like nextest, they count as skipped.
    pub fn finish(&mut self, results: &[TestResult], filtered_out: usize, notes: &[String]) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        let count = |status| results.iter().filter(|r| r.status == status).count();
        let known = results.iter().filter(|r| r.known_failure).count();
        let flaky = results.iter().filter(|r| r.flaky).count();
        let failed = count(TestStatus::Failed);
        let mut out = String::from("------------\n");
        let mut passed_notes = Vec::new();
        if known > 0 {
            passed_notes.push(plural(known, "known failure"));
        }
        if flaky > 0 {
            passed_notes.push(format!("{flaky} flaky"));
        }
        let known = if passed_notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", passed_notes.join(", "))
        };
        out.push_str(&format!(
            "{:>12} [{}] {} run: {} passed{known}, {} failed, {} skipped\n",
            self.paint("Summary", if failed > 0 { RED } else { GREEN }),
            seconds(self.start.elapsed()),
            plural(results.len() - count(TestStatus::Skipped), "test"),
            count(TestStatus::Passed),
            failed,
            count(TestStatus::Skipped) + filtered_out,
        ));
        let failures: Vec<&TestResult> = results
            .iter()
            .filter(|r| r.status == TestStatus::Failed)
            .collect();
        for failure in &failures {
            out.push_str(&self.status_line(failure));
            out.push('\n');
        }
        for failure in &failures {
            out.push_str(&format!("\n--- {} ---\n", failure.name));
            if let Some(message) = &failure.message {
                out.push_str(&format!("{message}\n"));
            }
            if let Some(detail) = &failure.detail {
                for line in detail.lines() {
                    out.push_str(&format!("  {line}\n"));
                }
            }
        }
        let mut slowest: Vec<&TestResult> = results
            .iter()
            .filter(|r| r.status != TestStatus::Skipped)
            .collect();
        slowest.sort_by(|a, b| {
            b.duration
                .cmp(&a.duration)
                .then_with(|| a.name.cmp(&b.name))
        });
        if !slowest.is_empty() {
            out.push_str("\nslowest:\n");
            for result in slowest.iter().take(SLOWEST_SHOWN) {
                out.push_str(&format!(
                    "  [{}] {}\n",
                    seconds(result.duration),
                    result.name
                ));
            }
        }
        for note in notes {
            out.push_str(&format!("\n{note}\n"));
        }
        self.print(out.trim_end());
        let _ = self.out.flush();
    }

    fn status_line(&self, result: &TestResult) -> String {
        let (label, color) = match result.status {
            TestStatus::Passed => ("PASS", GREEN),
            TestStatus::Failed => ("FAIL", RED),
            TestStatus::Skipped => ("SKIP", YELLOW),
        };
        let mut line = format!(
            "{:>12} [{}] {}",
            self.paint(label, color),
            seconds(result.duration),
            result.name
        );
        if result.known_failure {
            line.push_str(" (known failure)");
        }
        if result.flaky {
            let property = |key: &str| result.properties.get(key).map_or("?", String::as_str);
            line.push_str(&format!(
                " (flaky: pass rate {} of {} samples)",
                property("pass_rate"),
                property("samples")
            ));
        }
        if let Some(threshold) = result.threshold {
            line.push_str(&gate_value(result.status, result.value, threshold));
        }
        line
    }

    fn paint(&self, text: &str, color: &str) -> String {
        if self.color {
            format!("\x1b[1;{color}m{text:>12}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// Prints `text`, no line of which GitHub Actions runs as a workflow command.
    fn print(&mut self, text: &str) {
        let text = &github::inert_lines(&secrets::redact(text));
        match &self.bar {
            Some(bar) => bar.println(text),
            None => {
                let _ = writeln!(self.out, "{text}");
                if self.flushed.elapsed() >= FLUSH_EVERY {
                    let _ = self.out.flush();
                    self.flushed = Instant::now();
                }
            }
        }
    }
}

/// A gate's value beside its threshold: `  0.765 >= 0.6` when it holds, `  0.512, needs >= 0.6`
/// when it does not.
fn gate_value(status: TestStatus, value: Option<f64>, threshold: Threshold) -> String {
    match (status, value) {
        (TestStatus::Passed, Some(value)) => format!("  {} {threshold}", format_metric(value)),
        (TestStatus::Failed, Some(value)) => {
            format!("  {}, needs {threshold}", format_metric(value))
        }
        (TestStatus::Failed, None) => format!("  not computed, needs {threshold}"),
        _ => format!("  needs {threshold}"),
    }
}

const GREEN: &str = "32";
const RED: &str = "31";
const YELLOW: &str = "33";

fn seconds(duration: Duration) -> String {
    format!("{:>8.3}s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A terminal that keeps what is drawn on it.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<String>>);

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, line: &str) -> std::io::Result<()> {
            self.write_str(&format!("{line}\n"))
        }
        fn write_str(&self, text: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push_str(text);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_bar_first_shows_the_run_s_count() {
        let screen = Screen::default();
        let target = ProgressDrawTarget::term_like(Box::new(screen.clone()));
        let mut reporter =
            TerminalReporter::with_bar("system s".into(), ColorChoice::Never, Some(target));
        reporter.answer_meter();
        assert_eq!(
            *screen.0.lock().unwrap(),
            "",
            "nothing is drawn before the run starts"
        );
        reporter.event(Event::Started { total: 39 });
        let drawn = screen.0.lock().unwrap().clone();
        assert!(drawn.contains("0/39"), "{drawn}");
        assert!(!drawn.contains("0/0"), "{drawn}");
    }
}
