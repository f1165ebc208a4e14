//! Turns evaluated cases into test verdicts: a case passes when it is correct, or when it was
//! already failing in the accepted snapshot (a known failure) and is not marked `must_pass`;
//! a gate passes when its suite metric meets its threshold.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::config::{Metric, PassRule, Threshold};
use crate::system::answer::{AnswerCost, Answered};
use crate::system::SystemErrorKind;
use sqlgate_eval::exec::QueryRunner;
use sqlgate_eval::metrics::bootstrap::{Bootstrap, Interval};
use sqlgate_eval::metrics::ex::Verdict;
use sqlgate_eval::metrics::noise::{self, PassCount};
use sqlgate_eval::metrics::reliability::{self, Region};
use sqlgate_eval::metrics::sql2nl;
use sqlgate_eval::scoring::{
    self, CaseScore, ComputedMetric, FamilySummary, FineScores, Response, Tally, REPORTED_K,
};

use super::cost::{self, CostSummary};
use super::plan::{MetricKey, SuitePlan, TestKind};
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
    /// A case asked several times: every sample's outcome. The fields above are those of the
    /// sample shown (the first whose correctness is the case's verdict).
    pub sampled: Option<Sampled>,
    /// What each answer the case got cost the system (latency, tokens), in the order asked
    /// (one per sample): this run's answers, also when the verdict was reused.
    pub answer_costs: Vec<AnswerCost>,
}

/// The outcomes of a case's sampled answers, and the rule that judges them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Sampled {
    /// Each sample's outcome, in sample order.
    pub outcomes: Vec<SampleOutcome>,
    /// Which share of the samples must be correct.
    pub rule: PassRule,
}

impl Sampled {
    /// The sample a case of these outcomes is shown through: the first whose correctness is
    /// the case's verdict, or, for a failing case, the first the system did not answer.
    pub fn shown(&self, feasible: bool) -> usize {
        let count = self.pass_count(feasible);
        let correct = self.rule.passes(count.passed, count.samples);
        let outcomes = &self.outcomes;
        outcomes
            .iter()
            .position(|o| !correct && o.missing())
            .or_else(|| outcomes.iter().position(|o| o.correct(feasible) == correct))
            .unwrap_or(0)
    }

    /// Correct samples out of the samples of a case that is `feasible` or not.
    fn pass_count(&self, feasible: bool) -> PassCount {
        PassCount {
            passed: self.outcomes.iter().filter(|o| o.correct(feasible)).count() as u32,
            samples: self.outcomes.len() as u32,
        }
    }
}

/// One sampled answer's outcome: enough to tell whether it was correct and whether it was an
/// answer at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SampleOutcome {
    /// The sample's verdict.
    pub verdict: Verdict,
    /// Why the system gave this sample no usable answer, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_error: Option<SystemErrorKind>,
}

impl SampleOutcome {
    /// The outcome of a sample's run.
    pub fn of(run: &CaseRun) -> SampleOutcome {
        SampleOutcome {
            verdict: run.score.verdict,
            system_error: run.system_error,
        }
    }

    /// Correct means: EX = 1 on a feasible case, an abstention on an infeasible one.
    fn correct(self, feasible: bool) -> bool {
        if feasible {
            self.verdict == Verdict::Correct
        } else {
            self.verdict == Verdict::Abstained
        }
    }

    /// No answer at all (not recorded, an outage): no evidence about the system.
    fn missing(self) -> bool {
        self.system_error.is_some_and(|kind| kind.is_transient())
    }
}

impl CaseRun {
    /// Correct means: a feasible case answered with EX = 1, or an infeasible case abstained on;
    /// a sampled case, enough correct samples for its pass rule.
    pub fn correct(&self) -> bool {
        if let Some(count) = self.pass_count() {
            let rule = self.sampled.as_ref().map(|s| s.rule).unwrap_or_default();
            return rule.passes(count.passed, count.samples);
        }
        if self.score.feasible {
            self.score.ex == 1.0
        } else {
            self.score.verdict == Verdict::Abstained
        }
    }

    /// A sampled case's correct samples out of its samples (a sample without an answer counts
    /// as not correct); `None` for a case asked once.
    pub fn pass_count(&self) -> Option<PassCount> {
        let sampled = self.sampled.as_ref()?;
        Some(sampled.pass_count(self.score.feasible))
    }

    /// The case's samples disagree: some correct, some not.
    pub fn flaky(&self) -> bool {
        self.pass_count()
            .is_some_and(|count| count.passed > 0 && count.passed < count.samples)
    }

    /// Samples the system gave no answer for.
    pub fn missing_samples(&self) -> usize {
        self.sampled
            .iter()
            .flat_map(|s| &s.outcomes)
            .filter(|o| o.missing())
            .count()
    }
}

/// A case asked once per sample, from each sample's run (in sample order): the case's verdict
/// by `rule`, shown through one sample. The sample shown is one whose correctness is the
/// verdict's (the first), so a failing case shows a wrong answer, and a failing case with a
/// sample the system did not answer shows that sample (no answer never passes). The case's
/// time is all its samples'. A case asked once is its only run.
pub fn combine_samples(mut runs: Vec<CaseRun>, rule: PassRule) -> CaseRun {
    if runs.len() == 1 {
        return runs.remove(0);
    }
    let sampled = Sampled {
        outcomes: runs.iter().map(SampleOutcome::of).collect(),
        rule,
    };
    let shown = sampled.shown(runs[0].score.feasible);
    let duration = runs.iter().map(|run| run.duration).sum();
    let answer_costs = runs
        .iter()
        .flat_map(|run| run.answer_costs.clone())
        .collect();
    let mut run = runs.swap_remove(shown);
    run.duration = duration;
    run.answer_costs = answer_costs;
    run.sampled = Some(sampled);
    run
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
            let prediction = reply.to_prediction(case.source.clone());
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
        sampled: None,
        answer_costs: vec![answered.cost],
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

/// A case as the accepted snapshot has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcceptedCase {
    /// The case was correct.
    pub correct: bool,
    /// A sampled case's correct samples out of its samples.
    pub passes: Option<PassCount>,
}

impl AcceptedCase {
    /// The accepted pass count; a case accepted unsampled counts as one sample.
    fn pass_count(self) -> PassCount {
        self.passes.unwrap_or(PassCount {
            passed: u32::from(self.correct),
            samples: 1,
        })
    }
}

/// `accepted`: the case in the accepted snapshot (`None`: not in it).
pub fn judge_case(suite: &SuitePlan, run: &CaseRun, accepted: Option<AcceptedCase>) -> TestResult {
    let case = &suite.bench.cases[run.case_index];
    let correct = run.correct();
    let must_pass = suite.must_pass.contains(&run.test);
    let was_correct = accepted.map(|a| a.correct);
    // No answer (not recorded, a timeout, an HTTP or connection failure) is no evidence about
    // the system: it never passes as a known failure. An answer it did give, even unusable
    // garbage, is judged like any wrong answer.
    let no_answer = run.system_error.filter(|kind| kind.is_transient());
    let judged = !correct && !must_pass && no_answer.is_none();
    let known_failure = judged && was_correct == Some(false);
    // A sampled case correct in the accepted snapshot regresses only when its pass rate
    // dropped beyond noise: the exact test at `alpha`, shared by the suite's cases.
    let drop = match (run.pass_count(), accepted) {
        (Some(now), Some(accepted)) if accepted.correct && !correct => {
            let before = accepted.pass_count();
            let p = noise::pass_rate_drop_p(before, now);
            let beyond = noise::case_drop_significant(p, suite.alpha, suite.bench.cases.len());
            Some((before, now, p, beyond))
        }
        _ => None,
    };
    let within_noise = judged && drop.is_some_and(|(_, _, _, beyond)| !beyond);
    let status = if correct || known_failure || within_noise {
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
    properties.extend(sample_properties(run));
    if let Some((_, _, p, _)) = drop {
        properties.insert("drop_p".to_string(), format_metric(p));
    }
    if within_noise {
        properties.insert("within_noise".to_string(), "true".to_string());
    }
    properties.extend(fine_metrics(run));
    properties.extend(structural_metrics(run));
    properties.extend(soft_f1_metric(run));
    properties.extend(case_metric_values(run));
    properties.extend(cost_properties(&run.answer_costs));
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
        None => match drop {
            Some((before, now, p, _)) => format!(
                "regression: {} of {} samples correct, {} of {} in the accepted snapshot; the \
                 drop is beyond noise (p = {}, below alpha {} over the suite's {} cases)",
                now.passed,
                now.samples,
                before.passed,
                before.samples,
                format_metric(p),
                suite.alpha,
                suite.bench.cases.len()
            ),
            None => failure_message(case, run, was_correct, must_pass),
        },
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
        // A gold that fails is the benchmark's defect: the case fails, but the system did not
        // regress.
        regression: status == TestStatus::Failed
            && was_correct == Some(true)
            && !run.score.verdict.is_gold_failure(),
        flaky: run.flaky(),
        threshold: None,
        value: None,
    }
}

/// A sampled case's pass rate, sample count, Pass@K (the unbiased estimator, at the K of the
/// Pass@K tables up to the sample count) and, when its samples disagree, `flaky`.
pub fn sample_properties(run: &CaseRun) -> Vec<(String, String)> {
    let Some(count) = run.pass_count() else {
        return Vec::new();
    };
    let mut properties = vec![
        ("pass_rate".to_string(), format_metric(count.rate())),
        ("samples".to_string(), count.samples.to_string()),
    ];
    for k in REPORTED_K
        .into_iter()
        .filter(|&k| 1 < k && k <= count.samples)
    {
        let n = u64::from(count.samples);
        if let Some(value) = sql2nl::pass_at_k(n, u64::from(count.passed), u64::from(k)) {
            properties.push((format!("pass@{k}"), format_metric(value)));
        }
    }
    if run.flaky() {
        properties.push(("flaky".to_string(), "true".to_string()));
    }
    let missing = run.missing_samples();
    if missing > 0 {
        properties.push(("samples_without_answer".to_string(), missing.to_string()));
    }
    properties
}

/// A sampled case's pass rate and sample count, for its snapshot line: what the next run's
/// regression test compares with (Pass@K and `flaky` follow from them).
pub fn snapshot_sample_metrics(run: &CaseRun) -> Vec<(String, String)> {
    run.pass_count()
        .map(|count| {
            vec![
                ("pass_rate".to_string(), format_metric(count.rate())),
                ("samples".to_string(), count.samples.to_string()),
            ]
        })
        .unwrap_or_default()
}

fn failure_message(
    case: &sqlgate_eval::loaders::Case,
    run: &CaseRun,
    was_correct: Option<bool>,
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
    let why = if run.score.feasible && run.score.verdict.is_gold_failure() {
        "the benchmark's gold query fails (fix the case; the system's answer is not judged)"
    } else if must_pass {
        "must pass"
    } else if was_correct == Some(true) {
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

/// Formats a metric compactly and deterministically: `1`, `0`, `0.8125`; below 0.001 with two
/// significant digits (`7.6e-6`), so a small p-value keeps its magnitude and never shows as 0.
pub fn format_metric(value: f64) -> String {
    if value != 0.0 && value.abs() < 0.001 {
        return format!("{value:.1e}");
    }
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

/// `latency_ms`, `prompt_tokens` and `completion_tokens` of a case, summed over its answers,
/// each when every answer has it and the sum fits in 64 bits. Not in snapshot lines: latency
/// differs between recordings.
pub fn cost_properties(costs: &[AnswerCost]) -> Vec<(String, String)> {
    let total = |part: fn(&AnswerCost) -> Option<u64>| -> Option<u64> {
        let parts: Option<Vec<u64>> = costs.iter().map(part).collect();
        parts
            .filter(|parts| !parts.is_empty())?
            .into_iter()
            .try_fold(0u64, u64::checked_add)
    };
    [
        ("latency_ms", total(|cost| cost.latency_ms)),
        (
            "prompt_tokens",
            total(|cost| cost.usage.map(|u| u.prompt_tokens)),
        ),
        (
            "completion_tokens",
            total(|cost| cost.usage.map(|u| u.completion_tokens)),
        ),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some((name.to_string(), value?.to_string())))
    .collect()
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

/// A case's Soft-F1, formatted, when its suite asks for it.
pub fn soft_f1_metric(run: &CaseRun) -> Option<(String, String)> {
    let value = run.score.soft_f1?;
    Some(("soft_f1".to_string(), format_metric(value)))
}

/// A case's value of each registered per-case metric its suite computes, formatted.
pub fn case_metric_values(run: &CaseRun) -> Vec<(String, String)> {
    run.score
        .metrics
        .iter()
        .map(|(metric, value)| (metric.name().to_string(), format_metric(*value)))
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
    /// Suite metrics, and each family's.
    pub values: BTreeMap<MetricKey, f64>,
    /// Each generated family's summary against its seeds, by family name.
    pub families: BTreeMap<String, FamilySummary>,
    /// EX per value of each tag family (`db`, `category`, `hardness`, `joins`...), for reports.
    pub breakdown: BTreeMap<String, BTreeMap<String, Tally>>,
    /// The feasible cases the suite metrics are means over.
    pub cases: usize,
    /// The metrics that could not be computed for some of those cases (they scored 0).
    pub errors: BTreeMap<ComputedMetric, MetricErrors>,
    /// The run against its baseline, over the feasible cases in both, when there are some.
    pub against_baseline: Option<AgainstBaseline>,
    /// What the answers cost: latency and tokens (also in `values` when computed).
    pub cost: CostSummary,
}

/// How a run compares with its baseline (the accepted snapshot) over the feasible cases in
/// both: the change in EX and whether it is beyond noise.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct AgainstBaseline {
    /// The cases compared.
    pub cases: usize,
    /// The mean change of the cases' pass rates (EX of one answer; a case asked once has a
    /// pass rate of 0 or 1): head minus baseline.
    pub delta_ex: f64,
    /// The seeded paired bootstrap's 95% interval of `delta_ex`.
    pub interval: Option<Interval>,
    /// The one-sided p-value that the head is worse (the paired sign-flip permutation test
    /// on the cases' pass rates).
    pub p: f64,
}

impl AgainstBaseline {
    /// `against the accepted snapshot (39 cases): ΔEX = -0.123, 95% interval [-0.180, -0.060]
    /// (seeded paired bootstrap); p = 0.0003 that it is worse (...)`.
    pub fn sentence(&self) -> String {
        let interval = self.interval.map_or_else(String::new, |i| {
            format!(
                ", 95% interval [{}, {}] (seeded paired bootstrap)",
                signed(i.low),
                signed(i.high)
            )
        });
        format!(
            "against the accepted snapshot ({} case{}): ΔEX = {}{interval}; p = {} that it is \
             worse (one-sided paired sign-flip test on the cases' pass rates)",
            self.cases,
            if self.cases == 1 { "" } else { "s" },
            signed(self.delta_ex),
            format_metric(self.p),
        )
    }
}

/// A change with its sign, to 3 decimals: `+0.050`, `-0.123`, `0.000`.
fn signed(value: f64) -> String {
    let text = format!("{value:+.3}");
    match text.as_str() {
        "+0.000" | "-0.000" => "0.000".to_string(),
        _ => text,
    }
}

/// The seed of the regression test's Monte Carlo flips and bootstrap resamples: fixed, so the
/// same runs give the same numbers.
const NOISE_SEED: u64 = 0;

/// The run against the baseline over the feasible cases the baseline has, or `None` when it
/// has none of them.
fn against_baseline(
    runs: &[CaseRun],
    baseline: &dyn Fn(&CaseRun) -> Option<AcceptedCase>,
) -> Option<AgainstBaseline> {
    let pairs: Vec<(PassCount, PassCount)> = runs
        .iter()
        .filter(|run| run.score.feasible)
        .filter_map(|run| {
            let accepted = baseline(run)?;
            let now = run.pass_count().unwrap_or(PassCount {
                passed: u32::from(run.correct()),
                samples: 1,
            });
            Some((accepted.pass_count(), now))
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let differences: Vec<f64> = pairs
        .iter()
        .map(|(before, now)| now.rate() - before.rate())
        .collect();
    let bootstrap = Bootstrap {
        seed: NOISE_SEED,
        ..Bootstrap::default()
    };
    Some(AgainstBaseline {
        cases: pairs.len(),
        delta_ex: differences.iter().sum::<f64>() / pairs.len() as f64,
        interval: bootstrap
            .intervals(&differences, 1)
            .and_then(|intervals| intervals.first().copied()),
        p: noise::regression_p(&pairs, NOISE_SEED),
    })
}

/// A sampled suite's mean pass rate and Pass@K over its feasible cases: at the K of the
/// tables up to the fewest samples, and at the K its gates ask for (when every case has that
/// many samples).
fn sampled_metrics(suite: &SuitePlan, runs: &[CaseRun]) -> Vec<(Metric, f64)> {
    let counts: Vec<PassCount> = runs
        .iter()
        .filter(|run| run.score.feasible)
        .filter_map(CaseRun::pass_count)
        .collect();
    let Some(fewest) = counts.iter().map(|c| c.samples).min() else {
        return Vec::new();
    };
    let n = counts.len() as f64;
    let mut metrics = vec![(
        Metric::PassRate,
        counts.iter().map(|c| c.rate()).sum::<f64>() / n,
    )];
    let gated = suite.gates.keys().filter_map(|metric| match metric {
        Metric::PassAt(k) => Some(*k),
        _ => None,
    });
    let ks: std::collections::BTreeSet<u32> = REPORTED_K
        .into_iter()
        .filter(|&k| k > 1)
        .chain(gated)
        .filter(|&k| k <= fewest)
        .collect();
    let problems: Vec<(u64, u64)> = counts
        .iter()
        .map(|c| (u64::from(c.samples), u64::from(c.passed)))
        .collect();
    for k in ks {
        if let Some(value) = sql2nl::mean_pass_at_k(&problems, u64::from(k)) {
            metrics.push((Metric::PassAt(k), value));
        }
    }
    metrics
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
/// over every case, and each family's metrics against its seeds; with sampled answers, the
/// mean pass rate and Pass@K; against the `baseline`, the change in EX and its p-value.
pub fn suite_metrics(
    suite: &SuitePlan,
    runs: &[CaseRun],
    baseline: &dyn Fn(&CaseRun) -> Option<AcceptedCase>,
) -> SuiteMetrics {
    let scores: Vec<&CaseScore> = runs.iter().map(|r| &r.score).collect();
    let cost = cost::summarize(
        runs.iter()
            .map(|r| (r.answer_costs.as_slice(), r.correct())),
    );
    let mut metrics: BTreeMap<Metric, f64> = cost.values().into_iter().collect();
    if !runs.is_empty() {
        let regions: Vec<Region> = scores.iter().map(|s| s.region()).collect();
        metrics.insert(Metric::Rs, reliability::rs(&regions, suite.penalty));
    }
    // Sampled suites and suites gating on it compare with their baseline; others keep
    // today's rules (and skip the resampling).
    let compared = suite.samples > 1 || suite.gates.contains_key(&Metric::RegressionP);
    let against_baseline = compared.then(|| against_baseline(runs, baseline)).flatten();
    if let Some(against) = &against_baseline {
        metrics.insert(Metric::RegressionP, against.p);
    }
    metrics.extend(sampled_metrics(suite, runs));
    let summary = scoring::summarize(&suite.scoring, &scores, &[]);
    if summary.n == 0 {
        return SuiteMetrics {
            values: suite_keys(metrics),
            families: summary.families,
            against_baseline,
            cost,
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
    metrics.insert(Metric::Ex, summary.ex);
    if let Some(fine) = summary.fine.values().next() {
        metrics.insert(Metric::Exp, fine.exp);
        metrics.insert(Metric::Exr, fine.exr);
        metrics.insert(Metric::F1, fine.f1);
    }
    if let Some(esm) = &summary.esm {
        metrics.insert(Metric::Esm, esm.all);
    }
    if let Some(etm) = &summary.etm {
        metrics.insert(Metric::Etm, etm.all);
    }
    if let Some(soft_f1) = &summary.soft_f1 {
        metrics.insert(Metric::SoftF1, soft_f1.all);
    }
    for (&metric, &mean) in &summary.metrics {
        metrics.insert(Metric::Case(metric), mean);
    }
    if let Some(efficiency) = &summary.efficiency {
        let means = [
            (Metric::Ves, efficiency.ves),
            (Metric::Rves, efficiency.rves),
            (Metric::VesSteps, efficiency.ves_steps),
            (Metric::RvesSteps, efficiency.rves_steps),
        ];
        for (metric, mean) in means {
            metrics.extend(mean.map(|mean| (metric, mean)));
        }
    }
    let mut values = suite_keys(metrics);
    for (family, family_summary) in &summary.families {
        let gated = suite
            .family_gates
            .iter()
            .filter(|gate| &gate.family == family)
            .filter_map(|gate| Some((gate.metric, family_summary.metric(gate.metric).ok()?)));
        for (metric, value) in family_summary.values().into_iter().chain(gated) {
            let family = family.clone();
            values.insert(MetricKey::Family { family, metric }, value);
        }
    }
    SuiteMetrics {
        values,
        families: summary.families,
        breakdown: summary.breakdown,
        cases: summary.n,
        errors,
        against_baseline,
        cost,
    }
}

/// Suite metrics as keys among a suite's metric values.
fn suite_keys(metrics: BTreeMap<Metric, f64>) -> BTreeMap<MetricKey, f64> {
    metrics
        .into_iter()
        .map(|(metric, value)| (MetricKey::Suite(metric), value))
        .collect()
}

/// The verdict of the `<suite>::gate::<metric>` test.
pub fn judge_gate(
    suite: &SuitePlan,
    metric: Metric,
    metrics: &SuiteMetrics,
    duration: Duration,
) -> TestResult {
    let value = match metrics.cost.metric(metric) {
        // A cost metric not computed says why: answers without latency or tokens, none correct.
        Some(cost) => cost,
        None => metrics
            .values
            .get(&MetricKey::Suite(metric))
            .copied()
            .ok_or_else(|| missing_reason(suite, metric)),
    };
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

/// Why a suite has no value for `metric`.
fn missing_reason(suite: &SuitePlan, metric: Metric) -> String {
    match metric {
        Metric::RegressionP => "no feasible case of the suite is in the accepted snapshot: \
                                accept a baseline with `sqlgate test --accept`"
            .to_string(),
        Metric::PassRate if suite.samples == 1 => {
            "the system is asked each question once: set `samples` on the [[system]]".to_string()
        }
        Metric::PassAt(k) if k > suite.samples => format!(
            "pass@{k} needs at least {k} samples per case; the system gives {}",
            suite.samples
        ),
        _ => "not for this suite".to_string(),
    }
}

/// The metric whose per-case failures a gate on `metric` averages in (none for EX and RS,
/// which every case has, and for family metrics, which are read from EX and replies).
fn computed_as(metric: Metric) -> Option<ComputedMetric> {
    match metric {
        Metric::Exp | Metric::Exr | Metric::F1 => Some(ComputedMetric::Sqlmorph),
        Metric::Esm => Some(ComputedMetric::Esm),
        Metric::Etm => Some(ComputedMetric::Etm),
        Metric::Case(metric) => Some(ComputedMetric::Case(metric)),
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
        Some(family) => family.metric(gate.metric).map_err(|e| e.to_string()),
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
        flaky: false,
        threshold: Some(threshold),
        value,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{combine_samples, evaluate_case, format_metric, judge_case, AcceptedCase};
    use crate::config::PassRule;
    use crate::gate::fixtures::suite;
    use crate::gate::plan::SuitePlan;
    use crate::gate::TestStatus;
    use crate::system::answer::Answered;
    use crate::system::{Reply, SystemError, SystemErrorKind};
    use sqlgate_eval::metrics::noise::PassCount;

    const RIGHT: &str = "SELECT max(price) FROM items";
    const WRONG: &str = "SELECT min(price) FROM items";

    /// A case's token property is its answers' sum, left out when it does not fit in 64 bits
    /// (it wrapped to a small number).
    #[test]
    fn a_token_sum_past_64_bits_is_no_property() {
        let cost = |prompt_tokens| crate::system::answer::AnswerCost {
            latency_ms: Some(5),
            usage: Some(crate::system::Usage {
                prompt_tokens,
                completion_tokens: 1,
            }),
        };
        let properties = super::cost_properties(&[cost(u64::MAX), cost(1)]);
        assert!(properties.iter().all(|(name, _)| name != "prompt_tokens"));
        for (name, value) in [("completion_tokens", "2"), ("latency_ms", "10")] {
            assert!(properties.contains(&(name.to_string(), value.to_string())));
        }
    }

    /// Case `a` of the fixture suite answered once per entry: `Some(sql)`, or no answer.
    fn sampled(suite: &SuitePlan, answers: &[Option<&str>], rule: PassRule) -> super::CaseRun {
        let engine = suite.engine();
        let runs = answers
            .iter()
            .map(|answer| {
                let reply = match answer {
                    Some(sql) => Ok(Reply::sql(*sql)),
                    None => Err(SystemError::new(SystemErrorKind::Timeout, "no answer")),
                };
                let latency = answer.map(|_| 10);
                let answered = Answered::new(reply, Duration::from_millis(10), true, latency);
                evaluate_case(suite, 0, &answered, &engine)
            })
            .collect();
        combine_samples(runs, rule)
    }

    #[test]
    fn a_sampled_case_is_judged_by_its_rule_and_shows_a_sample_of_its_verdict() {
        let dir = tempfile::tempdir().unwrap();
        let suite = suite(dir.path());
        let answers = [Some(WRONG), Some(RIGHT), Some(RIGHT)];
        let run = sampled(&suite, &answers, PassRule::Majority);
        assert!(run.correct() && run.flaky());
        assert_eq!(
            run.score.sql.as_deref(),
            Some(RIGHT),
            "a right sample shown"
        );
        assert!(
            run.duration >= Duration::from_millis(30),
            "every sample's time"
        );
        let latencies: Vec<Option<u64>> = run.answer_costs.iter().map(|c| c.latency_ms).collect();
        assert_eq!(latencies, vec![Some(10); 3], "every sample's cost");
        assert_eq!(
            run.pass_count(),
            Some(PassCount {
                passed: 2,
                samples: 3
            })
        );
        let all = sampled(&suite, &answers, PassRule::All);
        assert!(!all.correct());
        assert_eq!(
            all.score.sql.as_deref(),
            Some(WRONG),
            "a wrong sample shown"
        );
        assert!(all.detail.is_some());
        let steady = sampled(&suite, &[Some(RIGHT), Some(RIGHT)], PassRule::Majority);
        assert!(steady.correct() && !steady.flaky());
        let once = sampled(&suite, &[Some(WRONG)], PassRule::Any);
        assert!(once.sampled.is_none() && !once.correct());
    }

    #[test]
    fn a_failing_sampled_case_without_an_answer_shows_it_and_never_passes() {
        let dir = tempfile::tempdir().unwrap();
        let suite = suite(dir.path());
        let run = sampled(
            &suite,
            &[Some(WRONG), None, Some(RIGHT)],
            PassRule::Majority,
        );
        assert_eq!(run.missing_samples(), 1);
        assert_eq!(run.system_error, Some(SystemErrorKind::Timeout));
        let was = AcceptedCase {
            correct: false,
            passes: None,
        };
        let result = judge_case(&suite, &run, Some(was));
        assert_eq!(result.status, TestStatus::Failed, "not a known failure");
        assert!(result.message.unwrap().starts_with("no answer (timeout)"));
        // Passing by its rule even counting the missing sample as wrong, it passes.
        let run = sampled(
            &suite,
            &[Some(RIGHT), None, Some(RIGHT)],
            PassRule::Majority,
        );
        let result = judge_case(&suite, &run, None);
        assert_eq!(result.status, TestStatus::Passed);
        assert_eq!(result.properties["samples_without_answer"], "1");
    }

    #[test]
    fn a_drop_fails_only_beyond_noise() {
        let dir = tempfile::tempdir().unwrap();
        let suite = suite(dir.path());
        let accepted = |passed, samples| AcceptedCase {
            correct: true,
            passes: Some(PassCount { passed, samples }),
        };
        // 3 of 3 down to 1 of 3: p = 0.2, noise.
        let run = sampled(
            &suite,
            &[Some(RIGHT), Some(WRONG), Some(WRONG)],
            PassRule::Majority,
        );
        let result = judge_case(&suite, &run, Some(accepted(3, 3)));
        assert_eq!(result.status, TestStatus::Passed);
        assert_eq!(result.properties["within_noise"], "true");
        assert_eq!(result.properties["drop_p"], "0.2");
        assert!(result.flaky && !result.regression);
        // 12 of 12 down to 0 of 12: far beyond noise.
        let run = sampled(&suite, &[Some(WRONG); 12], PassRule::Majority);
        let result = judge_case(&suite, &run, Some(accepted(12, 12)));
        assert_eq!(result.status, TestStatus::Failed);
        assert!(result.regression);
        let message = result.message.unwrap();
        assert!(
            message.starts_with("regression: 0 of 12 samples correct, 12 of 12"),
            "{message}"
        );
        // `must_pass` cases and known failures keep their rules.
        let known = AcceptedCase {
            correct: false,
            passes: Some(PassCount {
                passed: 0,
                samples: 12,
            }),
        };
        let result = judge_case(&suite, &run, Some(known));
        assert!(result.status == TestStatus::Passed && result.known_failure);
    }

    #[test]
    fn metrics_format_compactly() {
        assert_eq!(format_metric(1.0), "1");
        assert_eq!(format_metric(0.0), "0");
        assert_eq!(format_metric(0.8125), "0.8125");
        assert_eq!(format_metric(2.0 / 3.0), "0.6667");
        assert_eq!(format_metric(0.001), "0.001");
        assert_eq!(format_metric(7.6e-6), "7.6e-6");
        assert_eq!(format_metric(-2.5e-4), "-2.5e-4");
    }
}
