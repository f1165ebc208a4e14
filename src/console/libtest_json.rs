//! `--message-format libtest-json`: one JSON object per line on stdout, in the shape libtest
//! prints with `-Z unstable-options --format json` and nextest with `--message-format
//! libtest-json`, so tools that read those read sqlgate's events too. Each test's `started`
//! event is printed when its verdict is known (cases are judged in parallel); notes go to stderr.

use std::io::Write;
use std::time::Instant;

use serde_json::{json, Value};

use sqlgate::gate::run::Event;
use sqlgate::gate::{TestResult, TestStatus};
use sqlgate_eval::secrets;

pub struct LibtestJsonReporter {
    start: Instant,
}

impl Default for LibtestJsonReporter {
    fn default() -> Self {
        LibtestJsonReporter {
            start: Instant::now(),
        }
    }
}

impl LibtestJsonReporter {
    pub fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Started { total } => {
                self.start = Instant::now();
                emit(&json!({"type": "suite", "event": "started", "test_count": total}));
            }
            // Skipped tests are all announced at the end, with the ignored ones.
            Event::Finished(result) if result.status == TestStatus::Skipped => {}
            Event::Finished(result) => test_events(result).iter().for_each(emit),
            // libtest's JSON format has no other events (the enum may grow).
            _ => {}
        }
    }

    /// The skipped tests and the closing `suite` event. `results` holds every reported test,
    /// including the ignored ones and those a stopped run left out.
    pub fn finish(&mut self, results: &[TestResult], filtered_out: usize, notes: &[String]) {
        for result in results.iter().filter(|r| r.status == TestStatus::Skipped) {
            test_events(result).iter().for_each(emit);
        }
        let count = |status| results.iter().filter(|r| r.status == status).count();
        let failed = count(TestStatus::Failed);
        emit(&json!({
            "type": "suite",
            "event": if failed > 0 { "failed" } else { "ok" },
            "passed": count(TestStatus::Passed),
            "failed": failed,
            "ignored": count(TestStatus::Skipped),
            "measured": 0,
            "filtered_out": filtered_out,
            "exec_time": self.start.elapsed().as_secs_f64(),
        }));
        for note in notes {
            eprintln!("{note}");
        }
    }
}

/// `started` and the verdict of one test; a skipped test gets `ignored` only at the end.
fn test_events(result: &TestResult) -> Vec<Value> {
    let name = result.name.as_str();
    let exec_time = result.duration.as_secs_f64();
    match result.status {
        TestStatus::Skipped => vec![json!({"type": "test", "event": "ignored", "name": name})],
        TestStatus::Passed => vec![
            json!({"type": "test", "event": "started", "name": name}),
            json!({"type": "test", "event": "ok", "name": name, "exec_time": exec_time}),
        ],
        TestStatus::Failed => {
            let mut output = result.message.clone().unwrap_or_default();
            if let Some(detail) = &result.detail {
                output.push('\n');
                output.push_str(detail);
            }
            vec![
                json!({"type": "test", "event": "started", "name": name}),
                json!({"type": "test", "event": "failed", "name": name, "exec_time": exec_time, "stdout": output}),
            ]
        }
    }
}

fn emit(value: &Value) {
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`| head`) ends the output; it is not an error of the run.
    let _ = writeln!(stdout, "{}", secrets::redact(&value.to_string()));
}
