//! The run: given the selected tests, get answers for the cases they need, evaluate the cases in parallel,
//! then the gates, reporting each verdict as an event the moment it is known.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

use crate::system::answer::Answered;

use rayon::prelude::*;

use sqlgate_eval::exec::result_cache::ResultCache;
use sqlgate_eval::exec::Engine;
use sqlgate_eval::store::Store;

use super::judge::{self, AcceptedCase, CaseRun, SuiteMetrics};
use super::plan::{SuitePlan, TestDesc, TestKind};
use super::reuse::Reuse;
use super::{TestResult, TestStatus};

/// A test's verdict as it becomes known. More events may come (e.g. a suite starting): a
/// [`Reporter`](crate::runner::Reporter) outside this crate ignores the ones it does not show.
#[non_exhaustive]
pub enum Event<'a> {
    /// The run starts `total` tests.
    Started {
        /// How many tests will run.
        total: usize,
    },
    /// A test's verdict is known.
    Finished(&'a TestResult),
}

/// Answers for a suite's cases: `(suite index, case indices) -> per index, one answer per
/// sample`.
pub type AnswerFn<'a> = dyn Fn(usize, &[usize]) -> Vec<Vec<Answered>> + Sync + 'a;

/// What a run produced.
#[non_exhaustive]
pub struct RunReport {
    /// Every test's result, in plan order.
    pub results: Vec<TestResult>,
    /// Per suite: the evaluated cases (every case of the suite when it was run whole).
    pub case_runs: Vec<Vec<CaseRun>>,
    /// Per suite: its metric values and families, for the gates and reports.
    pub metrics: Vec<SuiteMetrics>,
    /// True when `--max-fail` stopped the run before every selected test ran.
    pub cancelled: bool,
    /// What the run computed and what it reused.
    pub work: Work,
}

/// How much work a run did, and how much it found already done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Work {
    /// Answers evaluated or reused (a case's, or each sample of a sampled case).
    pub cases: usize,
    /// Answers that took an earlier run's verdict without executing anything.
    pub reused: usize,
    /// Distinct (database, SQL) pairs the evaluated cases needed.
    pub distinct_queries: usize,
    /// Of those, executed on a database.
    pub executed: usize,
    /// Of those, results read from the cache as an earlier run left them.
    pub from_disk: usize,
    /// Of those, results another suite of this run had executed and cached.
    pub shared_in_run: usize,
}

impl RunReport {
    /// How many tests failed.
    pub fn failed(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.status == TestStatus::Failed)
            .count()
    }
}

/// What each case is judged against.
#[derive(Debug, Clone, Copy)]
pub enum Baseline<'a> {
    /// Per suite: case test name -> the case in the accepted snapshot.
    Accepted(&'a [HashMap<String, AcceptedCase>]),
    /// The outcomes this run accepts (`--accept` over every test): a wrong answer is a known
    /// failure, as the next run will judge it.
    ThisRun,
}

impl Baseline<'_> {
    /// The case of `run`, in suite number `suite`, as the baseline has it (`None`: not in it).
    pub fn of(&self, suite: usize, run: &CaseRun) -> Option<AcceptedCase> {
        match self {
            Baseline::Accepted(accepted) => accepted[suite].get(&run.test).copied(),
            Baseline::ThisRun => Some(AcceptedCase {
                correct: run.correct(),
                passes: run.pass_count(),
            }),
        }
    }
}

/// Runs the selected tests, judging each case against `baseline`.
/// With a `store`, query results and unchanged cases' verdicts come from earlier runs and go to
/// later ones.
#[allow(clippy::too_many_arguments)]
pub fn run(
    suites: &[SuitePlan],
    tests: &[TestDesc],
    baseline: Baseline<'_>,
    answers: &AnswerFn<'_>,
    max_fail: Option<usize>,
    store: Option<&Arc<Store>>,
    on_event: &mut dyn FnMut(Event<'_>),
) -> RunReport {
    on_event(Event::Started { total: tests.len() });
    let stop = StopAfter::new(max_fail);
    let mut report = RunReport {
        results: Vec::new(),
        case_runs: Vec::new(),
        metrics: Vec::new(),
        cancelled: false,
        work: Work::default(),
    };
    for (index, suite) in suites.iter().enumerate() {
        let suite_tests: Vec<&TestDesc> = tests.iter().filter(|t| t.suite == index).collect();
        let selected_cases: BTreeSet<usize> = suite_tests
            .iter()
            .filter_map(|t| match t.kind {
                TestKind::Case(case) => Some(case),
                TestKind::Gate(_) | TestKind::FamilyGate(_) => None,
            })
            .collect();
        let gates: Vec<TestKind> = suite_tests
            .iter()
            .map(|t| t.kind)
            .filter(|kind| !matches!(kind, TestKind::Case(_)))
            .collect();
        // A gate needs every case of its suite.
        let needed: Vec<usize> = if gates.is_empty() {
            selected_cases.iter().copied().collect()
        } else {
            (0..suite.bench.cases.len()).collect()
        };
        let engine = suite
            .engine()
            .with_cache(store.map(|store| ResultCache::new(Arc::clone(store))));
        // Earlier verdicts are read while the system answers.
        let (reuse, replies) = std::thread::scope(|scope| {
            let reuse = scope.spawn(|| store.map(|store| Reuse::new(store, suite)));
            let replies = if stop.stopped() || needed.is_empty() {
                Vec::new()
            } else {
                answers(index, &needed)
            };
            let reuse = reuse
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (reuse, replies)
        });
        let runs = evaluate(
            suite,
            &needed,
            &replies,
            &selected_cases,
            &|run: &CaseRun| baseline.of(index, run),
            &engine,
            reuse.as_ref(),
            &stop,
            &mut |result| {
                on_event(Event::Finished(&result));
                report.results.push(result);
            },
        );
        let complete = runs.len() == needed.len();
        let of_baseline = |run: &CaseRun| baseline.of(index, run);
        let stats = engine.stats();
        // Verdicts are reused per answer: each sample of a sampled case counts.
        report.work.cases += runs
            .iter()
            .map(|run| run.sampled.as_ref().map_or(1, |s| s.outcomes.len()))
            .sum::<usize>();
        if let Some(reuse) = reuse {
            report.work.reused += reuse.reused();
            reuse.finish();
        }
        report.work.distinct_queries += stats.distinct;
        report.work.executed += stats.executed;
        report.work.from_disk += stats.from_disk;
        report.work.shared_in_run += stats.shared_in_run;
        let (metrics, gate_results) = if complete {
            conclude_suite(suite, &gates, &runs, &of_baseline)
        } else {
            // Means over the cases that happened to run before a stop would be a different
            // number under the same name: a stopped suite reports none.
            let skipped = gates.iter().map(|&kind| skipped(suite, kind));
            (SuiteMetrics::default(), skipped.collect())
        };
        for result in gate_results {
            on_event(Event::Finished(&result));
            report.results.push(result);
        }
        report.cancelled |= !complete;
        report.case_runs.push(runs);
        report.metrics.push(metrics);
    }
    sort_in_plan_order(&mut report.results, tests);
    report
}

/// A whole suite's metrics and the verdicts of its `gates`, from every case's run and each
/// case as the `baseline` has it.
pub fn conclude_suite(
    suite: &SuitePlan,
    gates: &[TestKind],
    runs: &[CaseRun],
    baseline: &dyn Fn(&CaseRun) -> Option<AcceptedCase>,
) -> (SuiteMetrics, Vec<TestResult>) {
    // A gate takes the time of its suite metrics; the answers and cases have theirs.
    let start = Instant::now();
    let metrics = judge::suite_metrics(suite, runs, baseline);
    let results = gates
        .iter()
        .filter_map(|&kind| match kind {
            TestKind::Gate(metric) => {
                Some(judge::judge_gate(suite, metric, &metrics, start.elapsed()))
            }
            TestKind::FamilyGate(index) => Some(judge::judge_family_gate(
                suite,
                index,
                &metrics,
                start.elapsed(),
            )),
            TestKind::Case(_) => None,
        })
        .collect();
    (metrics, results)
}

/// Events come in completion order; reports list tests in plan order, so two runs of the same
/// inputs differ only in their times.
pub fn sort_in_plan_order(results: &mut [TestResult], plan: &[TestDesc]) {
    let plan_order: HashMap<&str, usize> = plan
        .iter()
        .enumerate()
        .map(|(at, test)| (test.name.as_str(), at))
        .collect();
    results.sort_by_cached_key(|result| plan_order.get(result.name.as_str()).copied());
}

/// The result of a test marked `ignore = true` that this run leaves out.
pub fn ignored(suite: &str, test: &TestDesc) -> TestResult {
    let mut result = TestResult::new(&test.name, suite, test.kind, TestStatus::Skipped);
    result.message =
        Some("ignored (`ignore = true`): run it with --ignored or --include-ignored".into());
    result
}

/// `--max-fail`: stop starting tests once this many have failed (`None`: run everything).
struct StopAfter {
    limit: Option<usize>,
    failures: AtomicUsize,
}

impl StopAfter {
    fn new(limit: Option<usize>) -> StopAfter {
        StopAfter {
            limit,
            failures: AtomicUsize::new(0),
        }
    }

    fn record_failure(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }

    fn stopped(&self) -> bool {
        self.limit
            .is_some_and(|limit| self.failures.load(Ordering::Relaxed) >= limit)
    }
}

/// Evaluates the cases in parallel; selected ones are judged and reported as they finish.
#[allow(clippy::too_many_arguments)]
fn evaluate(
    suite: &SuitePlan,
    needed: &[usize],
    replies: &[Vec<Answered>],
    selected: &BTreeSet<usize>,
    baseline: &(dyn Fn(&CaseRun) -> Option<AcceptedCase> + Sync),
    engine: &Engine,
    reuse: Option<&Reuse<'_>>,
    stop: &StopAfter,
    report: &mut dyn FnMut(TestResult),
) -> Vec<CaseRun> {
    let (sender, receiver) = mpsc::channel::<(Option<CaseRun>, Option<TestResult>)>();
    let mut runs = Vec::with_capacity(needed.len());
    // Cases sharing a gold query are evaluated next to each other, so mostly on one thread:
    // spread over threads, they would wait on each other's one execution of it.
    let mut work: Vec<(usize, &[Answered])> = needed
        .iter()
        .copied()
        .zip(replies.iter().map(Vec::as_slice))
        .collect();
    work.sort_by_cached_key(|&(case, _)| {
        let case = &suite.bench.cases[case];
        (case.db.clone(), case.gold.first().cloned())
    });
    std::thread::scope(|scope| {
        scope.spawn(move || {
            work.par_iter()
                .for_each_with(sender, |sender, &(case, samples)| {
                    if stop.stopped() {
                        let result = selected
                            .contains(&case)
                            .then(|| skipped(suite, TestKind::Case(case)));
                        let _ = sender.send((None, result));
                        return;
                    }
                    let runs = samples
                        .iter()
                        .enumerate()
                        .map(|(sample, reply)| match reuse {
                            Some(reuse) => reuse.evaluate(case, sample, reply, engine),
                            None => judge::evaluate_case(suite, case, reply, engine),
                        })
                        .collect();
                    let run = judge::combine_samples(runs, suite.pass_rule);
                    let result = selected
                        .contains(&case)
                        .then(|| judge::judge_case(suite, &run, baseline(&run)));
                    if result
                        .as_ref()
                        .is_some_and(|r| r.status == TestStatus::Failed)
                    {
                        stop.record_failure();
                    }
                    let _ = sender.send((Some(run), result));
                });
        });
        for (run, result) in receiver {
            runs.extend(run);
            if let Some(result) = result {
                report(result);
            }
        }
    });
    runs.sort_by_cached_key(|run| run.case_index);
    runs
}

fn skipped(suite: &SuitePlan, kind: TestKind) -> TestResult {
    let (name, threshold) = match kind {
        TestKind::Case(case) => (suite.case_test_name(&suite.bench.cases[case]), None),
        // A gate a stopped run did not evaluate still shows what it would have checked.
        TestKind::Gate(metric) => (suite.gate_test_name(metric), Some(suite.gates[&metric])),
        TestKind::FamilyGate(index) => {
            let gate = &suite.family_gates[index];
            (suite.family_gate_test_name(gate), Some(gate.threshold))
        }
    };
    let mut result = TestResult::new(name, &suite.name, kind, TestStatus::Skipped);
    result.message = Some("not run: the run stopped at its --max-fail limit".to_string());
    result.threshold = threshold;
    result
}
