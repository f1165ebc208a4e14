//! The predictions measured by the gate itself: the configuration `sqlgate init` is about to
//! write is run once, as `sqlgate test` would run it (default profile, replaying only), without
//! a cache and writing nothing, so the starting threshold is the number the gate computes.

use sqlgate::config::{Config, RecordMode, DEFAULT_PROFILE};
use sqlgate::gate::session::Session;
use sqlgate::gate::{MetricKey, TestStatus};
use sqlgate::runner::TestRunnerBuilder;
use sqlgate::{Error, SystemErrorKind};
use sqlgate_eval::exec::memory;
use sqlgate_eval::scoring::Metric;

/// What the first `sqlgate test` of the configuration will find.
pub struct Measured {
    /// The suite's cases.
    pub cases: usize,
    /// Cases the predictions do not answer: they fail every run, accepted or not.
    pub unanswered: usize,
    /// Execution accuracy over the feasible cases, when there are some.
    pub ex: Option<f64>,
    /// The feasible cases `ex` is a mean over.
    pub feasible: usize,
    /// Tests the first run fails: with no accepted snapshot yet, every case not correct.
    pub failing: usize,
    /// What the run would warn about (a database without rows...).
    pub warnings: Vec<String>,
}

/// Runs the one suite of `config` against its replayed predictions.
pub fn measure(config: Config) -> Result<Measured, Error> {
    let session = Session::with_config(config, DEFAULT_PROFILE, Some(RecordMode::None), None)?;
    memory::set_max_memory(session.config.max_memory);
    let runner = TestRunnerBuilder::new().build(&session);
    let report = runner.run(&mut |_| {});
    let runs = report.case_runs.first().map_or(&[][..], Vec::as_slice);
    let metrics = report.metrics.first();
    Ok(Measured {
        cases: runs.len(),
        unanswered: runs
            .iter()
            .filter(|run| run.system_error == Some(SystemErrorKind::NotRecorded))
            .count(),
        ex: metrics.and_then(|m| m.values.get(&MetricKey::Suite(Metric::Ex)).copied()),
        feasible: metrics.map_or(0, |m| m.cases),
        failing: report
            .results
            .iter()
            .filter(|result| result.status == TestStatus::Failed)
            .count(),
        warnings: session.warnings(),
    })
}
