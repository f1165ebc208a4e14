//! Turns evaluated cases into test verdicts: a case passes when it is correct, or when it was
//! already failing in the accepted snapshot (a known failure) and is not marked `must_pass`;
//! a gate passes when its suite metric meets its threshold.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::config::{Metric, Threshold};
use crate::system::answer::Answered;
use crate::system::SystemErrorKind;
use sqlgate_eval::exec::QueryRunner;
use sqlgate_eval::loaders::{Answer, Prediction};
use sqlgate_eval::metrics::ex::Verdict;
use sqlgate_eval::metrics::reliability::{self, Region};
use sqlgate_eval::scoring::{
    self, CaseScore, ComputedMetric, FamilySummary, FineScores, Response, Tally,
};

use super::plan::{family_metric_key, SuitePlan, TestKind};
use super::preview::{self, ResultsPreview};
use super::{TestResult, TestStatus};

/// One case after the system answered and the answer was scored.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CaseRun {
    /// The test's name.
    pub test: String,
    /// The case's index in its suite.
    pub case_index: usize,
    /// The case's verdict and metric values, as `sqlgate score` computes them.
    pub score: CaseScore,
    /// EXP, EXR and F1 under the suite's regime, when it has one (0/0/0 without an answer).
    pub fine: Option<FineScores>,
    /// How long the case took: asking the system, executing and scoring.
    pub duration: Duration,
    /// Why the system gave no usable answer, when it did not.
    pub system_error: Option<SystemErrorKind>,
    /// The reply was cut short by the system's token limit.
    pub reply_truncated: bool,
    /// For a case that is not correct, the lines a reviewer reads: question, gold, predicted
    /// SQL, error (kept with the run, so a reused or merged case shows the same).
    pub detail: Option<String>,
    /// For a wrong answer that ran, the first rows of its result beside the gold's.
    pub preview: Option<ResultsPreview>,
}

impl CaseRun {
    /// Correct means: a feasible case answered with EX = 1, or an infeasible case abstained on.
    pub fn correct(&self) -> bool {
        if self.score.feasible {
            self.score.ex == 1.0
        } else {
            self.score.verdict == Verdict::Abstained
        }
    }
}

/// Scores one case's answer through the scoring pipeline `sqlgate score` uses.
pub fn evaluate_case(
    suite: &SuitePlan,
    case_index: usize,
    answered: &Answered,
    runner: &dyn QueryRunner,
) -> CaseRun {
    let start = Instant::now();
    let reply = &answered.reply;
    let case = &suite.bench.cases[case_index];
    let databases = &suite.databases[case_index];
    let score = match reply {
        Ok(reply) => {
            let prediction = Prediction {
                answer: reply.sql.clone().map_or(Answer::Abstain, Answer::Sql),
                cleaned: reply.cleaned,
                source: case.source.clone(),
                notes: BTreeMap::new(),
                samples: reply.samples.clone(),
                retrieved: reply.retrieved.clone(),
            };
            let response = Response::Answer(&prediction);
            scoring::score_case(&suite.scoring, case, databases, response, runner)
        }
        Err(error) => {
            let message = error.to_string();
            let response = Response::SystemError(&message);
            scoring::score_case(&suite.scoring, case, databases, response, runner)
        }
    };
    let fine = suite.regime().map(|regime| {
        score
            .fine
            .get(&regime.to_string())
            .copied()
            .unwrap_or_default()
    });
    let mut run = CaseRun {
        test: suite.case_test_name(case),
        case_index,
        score,
        fine,
        // Where the case's time went: the system's answer, then scoring it.
        duration: answered.elapsed + start.elapsed(),
        system_error: reply.as_ref().err().map(|error| error.kind),
        reply_truncated: match reply {
            Ok(reply) => reply.truncated,
            Err(error) => error.truncated,
        },
        detail: None,
        preview: None,
    };
    if !run.correct() {
        run.detail = Some(failure_detail(case, &run));
        if run.score.feasible && run.score.error.is_none() {
            run.preview = run.score.sql.as_deref().and_then(|sql| {
                let failed_on = run.score.failed_on.as_deref();
                preview::of(case, databases, failed_on, sql, runner)
            });
        }
    }
    run
}

/// `accepted`: whether the case was correct in the accepted snapshot (`None`: not in it).
pub fn judge_case(suite: &SuitePlan, run: &CaseRun, accepted: Option<bool>) -> TestResult {
    let case = &suite.bench.cases[run.case_index];
    let correct = run.correct();
    let must_pass = suite.must_pass.contains(&run.test);
    // No answer (not recorded, a timeout, an HTTP or connection failure) is no evidence about
    // the system: it never passes as a known failure. An answer it did give, even unusable
    // garbage, is judged like any wrong answer.
    let no_answer = run.system_error.filter(|kind| kind.is_transient());
    let known_failure = !correct && !must_pass && accepted == Some(false) && no_answer.is_none();
    let status = if correct || known_failure {
        TestStatus::Passed
    } else {
        TestStatus::Failed
    };
    let mut properties = BTreeMap::from([
        (
            "verdict".to_string(),
            run.score.verdict.as_str().to_string(),
        ),
        ("ex".to_string(), format_metric(run.score.ex)),
        ("mode".to_string(), suite.scoring.mode.name().to_string()),
        (
            "region".to_string(),
            run.score.region().as_str().to_string(),
        ),
    ]);
    if known_failure {
        properties.insert("known_failure".to_string(), "true".to_string());
    }
    if let Some(kind) = run.system_error {
        properties.insert("system_error_kind".to_string(), kind.as_str().to_string());
    }
    if run.reply_truncated {
        properties.insert("reply_truncated".to_string(), "true".to_string());
    }
    // A generated variant names its seed and, when the generator measured it, its similarity.
    if let Some(seed) = run.score.seed() {
        properties.insert("seed_id".to_string(), seed.to_string());
    }
    if let Some(cs) = run.score.cs {
        properties.insert("cs".to_string(), format_metric(cs));
    }
    if let Some(db) = &run.score.failed_on {
        properties.insert("failed_on".to_string(), db.clone());
    }
    properties.extend(fine_metrics(run));
    properties.extend(structural_metrics(run));
    properties.extend(efficiency_metrics(run, true));
    // A metric that could not be computed scored 0 above; its property says why.
    for (metric, reason) in run.score.metric_errors() {
        properties.insert(metric.error_code().to_string(), reason.to_string());
    }
    let message = (status == TestStatus::Failed).then(|| match no_answer {
        Some(kind) => format!(
            "no answer ({}): a case without an answer never passes, whatever the snapshot says",
            kind.as_str()
        ),
        None => failure_message(case, run, accepted, must_pass),
    });
    TestResult {
        name: run.test.clone(),
        suite: suite.name.clone(),
        status,
        duration: run.duration,
        message,
        detail: run.detail.clone(),
        properties,
        source: Some(case.source.clone()),
        gold_sql: case.gold.clone(),
        predicted_sql: run.score.sql.clone(),
        kind: TestKind::Case(run.case_index),
        verdict: Some(run.score.verdict),
        system_error: run.system_error,
        reply_truncated: run.reply_truncated,
        known_failure,
        regression: status == TestStatus::Failed && accepted == Some(true),
        threshold: None,
        value: None,
    }
}

fn failure_message(
    case: &sqlgate_eval::loaders::Case,
    run: &CaseRun,
    accepted: Option<bool>,
    must_pass: bool,
) -> String {
    let what = if !run.score.feasible {
        "answered an infeasible question instead of abstaining".to_string()
    } else {
        // A system error is named by its kind: garbage and a non-zero exit read differently.
        let verdict = run
            .system_error
            .map_or(run.score.verdict.as_str(), SystemErrorKind::as_str);
        let on = run
            .score
            .failed_on
            .as_deref()
            .map_or_else(String::new, |db| format!(" on {}", failed_on(case, db)));
        format!("{verdict}{on} (ex = {})", format_metric(run.score.ex))
    };
    let why = if must_pass {
        "must pass"
    } else if accepted == Some(true) {
        "regression: correct in the accepted snapshot"
    } else {
        "not correct"
    };
    format!("{why}: {what}")
}

/// The database a case that ran on every database of its folder failed on:
/// `academic_3.sqlite (passes on the original)`, or `the original academic.sqlite`. The
/// original runs first, so a failure elsewhere means it passed there.
fn failed_on(case: &sqlgate_eval::loaders::Case, db: &str) -> String {
    if db == format!("{}.sqlite", case.db) {
        format!("the original {db}")
    } else {
        format!("{db} (passes on the original)")
    }
}

fn failure_detail(case: &sqlgate_eval::loaders::Case, run: &CaseRun) -> String {
    let score = &run.score;
    let mut lines = vec![format!("question:  {}", case.question)];
    for gold in &case.gold {
        lines.push(format!("gold:      {gold}"));
    }
    let no_sql = match run.system_error {
        Some(kind) if kind.is_transient() => "(no answer)".to_string(),
        // An answer that held nothing usable (garbage, a failed program).
        Some(kind) => format!("({})", kind.as_str()),
        None => "(abstained)".to_string(),
    };
    lines.push(format!(
        "predicted: {}",
        score.sql.as_deref().unwrap_or(&no_sql)
    ));
    if let Some(db) = &score.failed_on {
        lines.push(format!("database:  {}", failed_on(case, db)));
    }
    if let Some(error) = &score.error {
        lines.push(format!("error:     {error}"));
    }
    if let Some(verdict) = score.etm_detail.as_ref().filter(|v| !v.etm) {
        lines.push(format!("etm:       {}", verdict.explain()));
    }
    for diagnostic in &score.diagnostics {
        lines.push(format!(
            "note:      {}: {}",
            diagnostic.code, diagnostic.message
        ));
    }
    if run.reply_truncated {
        lines.push(
            "note:      reply_truncated: the system's reply was cut short by its token limit \
             (finish_reason `length`), so its SQL may be incomplete; raise `max_tokens`"
                .to_string(),
        );
    }
    lines.join("\n")
}

/// Formats a metric compactly and deterministically: `1`, `0`, `0.8125`.
pub fn format_metric(value: f64) -> String {
    let text = format!("{value:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_string()
    } else {
        text.to_string()
    }
}

/// A case's EXP, EXR and F1, formatted, when its suite has a regime.
pub fn fine_metrics(run: &CaseRun) -> Vec<(String, String)> {
    match run.fine {
        Some(scores) => vec![
            ("exp".to_string(), format_metric(scores.exp)),
            ("exr".to_string(), format_metric(scores.exr)),
            ("f1".to_string(), format_metric(scores.f1)),
        ],
        None => Vec::new(),
    }
}

/// `<metric>_error=1` for each metric that could not be computed (and scored 0), for snapshots.
pub fn metric_error_flags(run: &CaseRun) -> Vec<(String, String)> {
    run.score
        .metric_errors()
        .map(|(metric, _)| (metric.error_code().to_string(), "1".to_string()))
        .collect()
}

/// A case's ESM and ETM (0 or 1), when its suite asks for them.
pub fn structural_metrics(run: &CaseRun) -> Vec<(String, String)> {
    [("esm", run.score.esm), ("etm", run.score.etm)]
        .into_iter()
        .filter_map(|(name, value)| value.map(|v| (name.to_string(), v.to_string())))
        .collect()
}

/// A case's VES and R-VES terms, formatted: by steps (deterministic), and timed only when
/// `timed` is set: a time is of this run's machine, so snapshots never hold one.
pub fn efficiency_metrics(run: &CaseRun, timed: bool) -> Vec<(String, String)> {
    let Some(efficiency) = &run.score.efficiency else {
        return Vec::new();
    };
    let timed = efficiency.timed.filter(|_| timed);
    [("", timed), ("_steps", efficiency.steps)]
        .into_iter()
        .filter_map(|(suffix, ratio)| ratio.map(|ratio| (suffix, ratio)))
        .flat_map(|(suffix, ratio)| {
            [
                (format!("ves{suffix}"), format_metric(ratio.ves)),
                (format!("rves{suffix}"), format_metric(ratio.rves)),
            ]
        })
        .collect()
}

/// A suite's aggregate metrics: suite metrics by name and family metrics as
/// `<family>::<metric>` (for reports), and each family's summary (for its gates).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SuiteMetrics {
    /// Suite metrics by name, and family metrics as `<family>::<metric>`.
    pub values: BTreeMap<String, f64>,
    /// Each generated family's summary against its seeds, by family name.
    pub families: BTreeMap<String, FamilySummary>,
    /// EX per value of each tag family (`db`, `category`, `hardness`, `joins`...), for reports.
    pub breakdown: BTreeMap<String, BTreeMap<String, Tally>>,
    /// The feasible cases the suite metrics are means over.
    pub cases: usize,
    /// The metrics that could not be computed for some of those cases (they scored 0).
    pub errors: BTreeMap<ComputedMetric, MetricErrors>,
}

/// Feasible cases a metric could not be computed for.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MetricErrors {
    /// How many feasible cases have no value for the metric.
    pub cases: usize,
    /// The reason of the first such case, in case order.
    pub first: String,
}

/// Aggregate metrics of a suite's evaluated cases, from the functions `sqlgate score`
/// aggregates with: means over the feasible ones, `rs`, TrustSQL's RS(`penalty`) in percent
/// over every case, and each family's metrics against its seeds.
pub fn suite_metrics(suite: &SuitePlan, runs: &[CaseRun]) -> SuiteMetrics {
    let scores: Vec<&CaseScore> = runs.iter().map(|r| &r.score).collect();
    let mut metrics = BTreeMap::new();
    if !runs.is_empty() {
        let regions: Vec<Region> = scores.iter().map(|s| s.region()).collect();
        metrics.insert("rs".to_string(), reliability::rs(&regions, suite.penalty));
    }
    let summary = scoring::summarize(&suite.scoring, &scores, &[]);
    if summary.n == 0 {
        return SuiteMetrics {
            values: metrics,
            families: summary.families,
            ..SuiteMetrics::default()
        };
    }
    let mut errors: BTreeMap<ComputedMetric, MetricErrors> = BTreeMap::new();
    let feasible = scores.iter().filter(|score| score.feasible);
    for (metric, reason) in feasible.flat_map(|score| score.metric_errors()) {
        let entry = errors.entry(metric).or_insert_with(|| MetricErrors {
            cases: 0,
            first: reason.to_string(),
        });
        entry.cases += 1;
    }
    metrics.insert("ex".to_string(), summary.ex);
    if let Some(fine) = summary.fine.values().next() {
        metrics.insert("exp".to_string(), fine.exp);
        metrics.insert("exr".to_string(), fine.exr);
        metrics.insert("f1".to_string(), fine.f1);
    }
    if let Some(esm) = &summary.esm {
        metrics.insert("esm".to_string(), esm.all);
    }
    if let Some(etm) = &summary.etm {
        metrics.insert("etm".to_string(), etm.all);
    }
    if let Some(efficiency) = &summary.efficiency {
        let means = [
            (Metric::Ves, efficiency.ves),
            (Metric::Rves, efficiency.rves),
            (Metric::VesSteps, efficiency.ves_steps),
            (Metric::RvesSteps, efficiency.rves_steps),
        ];
        for (metric, mean) in means {
            metrics.extend(mean.map(|mean| (metric.to_string(), mean)));
        }
    }
    for (family, family_summary) in &summary.families {
        let gated = suite
            .family_gates
            .iter()
            .filter(|gate| &gate.family == family)
            .filter_map(|gate| Some((gate.metric, family_summary.metric(gate.metric).ok()?)));
        for (metric, value) in family_summary.values().into_iter().chain(gated) {
            metrics.insert(family_metric_key(family, metric), value);
        }
    }
    SuiteMetrics {
        values: metrics,
        families: summary.families,
        breakdown: summary.breakdown,
        cases: summary.n,
        errors,
    }
}

/// The verdict of the `<suite>::gate::<metric>` test.
pub fn judge_gate(
    suite: &SuitePlan,
    metric: Metric,
    metrics: &SuiteMetrics,
    duration: Duration,
) -> TestResult {
    let value = metrics
        .values
        .get(&metric.to_string())
        .copied()
        .ok_or_else(|| "not for this suite".to_string());
    let threshold = suite.gates[&metric];
    let mut result = gate_result(
        suite,
        (suite.gate_test_name(metric), TestKind::Gate(metric)),
        &metric.to_string(),
        threshold,
        value.clone(),
        duration,
    );
    let errors = computed_as(metric).and_then(|computed| metrics.errors.get(&computed));
    if let (Some(errors), Ok(value)) = (errors, value) {
        // A mean in which some cases scored 0 for want of a value is not the system's number:
        // the gate fails closed unless the suite opts out, and says how many cases it lacks.
        let counted = format!(
            "{metric} = {} over {} case{}, {} of which could not be computed ({})",
            format_metric(value),
            metrics.cases,
            if metrics.cases == 1 { "" } else { "s" },
            errors.cases,
            errors.first
        );
        result
            .properties
            .insert("not_computed".to_string(), errors.cases.to_string());
        if !suite.allow_metric_errors {
            result.status = TestStatus::Failed;
            result.message = Some(format!(
                "{counted}: a gate fails when its metric is missing for some cases; set \
                 `allow_metric_errors = true` in the [[suite]] to gate on the number"
            ));
        } else if result.status == TestStatus::Failed {
            result.message = Some(format!("{counted}, does not meet {threshold}"));
        }
    }
    result
}

/// The metric whose per-case failures a gate on `metric` averages in (none for EX and RS,
/// which every case has, and for family metrics, which are read from EX and replies).
fn computed_as(metric: Metric) -> Option<ComputedMetric> {
    match metric {
        Metric::Exp | Metric::Exr | Metric::F1 => Some(ComputedMetric::Sqlmorph),
        Metric::Esm => Some(ComputedMetric::Esm),
        Metric::Etm => Some(ComputedMetric::Etm),
        _ => None,
    }
}

/// The verdict of the `<suite>::gate::<family>::<metric>` test: a family without cases, or a
/// metric it cannot give, fails.
pub fn judge_family_gate(
    suite: &SuitePlan,
    index: usize,
    metrics: &SuiteMetrics,
    duration: Duration,
) -> TestResult {
    let gate = &suite.family_gates[index];
    let value = match metrics.families.get(&gate.family) {
        Some(family) => family.metric(gate.metric),
        None => Err("the family has no feasible cases".to_string()),
    };
    let mut result = gate_result(
        suite,
        (
            suite.family_gate_test_name(gate),
            TestKind::FamilyGate(index),
        ),
        &gate.label(),
        gate.threshold,
        value,
        duration,
    );
    result
        .properties
        .insert("family".to_string(), gate.family.clone());
    result
}

fn gate_result(
    suite: &SuitePlan,
    (name, kind): (String, TestKind),
    label: &str,
    threshold: Threshold,
    value: Result<f64, String>,
    duration: Duration,
) -> TestResult {
    let passed = value.as_ref().is_ok_and(|v| threshold.holds(*v));
    let message = match &value {
        _ if passed => None,
        Ok(v) => Some(format!(
            "{label} = {} does not meet {threshold}",
            format_metric(*v)
        )),
        Err(why) => Some(format!("{label} cannot be computed: {why}")),
    };
    let mut properties = BTreeMap::from([("threshold".to_string(), threshold.to_string())]);
    if let Ok(v) = value {
        properties.insert(label.to_string(), format_metric(v));
    }
    let value = value.ok();
    TestResult {
        name,
        suite: suite.name.clone(),
        status: if passed {
            TestStatus::Passed
        } else {
            TestStatus::Failed
        },
        duration,
        message,
        detail: None,
        properties,
        source: None,
        gold_sql: Vec::new(),
        predicted_sql: None,
        kind,
        verdict: None,
        system_error: None,
        reply_truncated: false,
        known_failure: false,
        regression: false,
        threshold: Some(threshold),
        value,
    }
}

#[cfg(test)]
mod tests {
    use super::format_metric;

    #[test]
    fn metrics_format_compactly() {
        assert_eq!(format_metric(1.0), "1");
        assert_eq!(format_metric(0.0), "0");
        assert_eq!(format_metric(0.8125), "0.8125");
        assert_eq!(format_metric(2.0 / 3.0), "0.6667");
    }
}
