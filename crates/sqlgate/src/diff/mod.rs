//! `sqlgate diff`: what got worse, what got better between two runs, and whether each change
//! in a suite's metrics is beyond noise.
//!
//! Two sides, each a run record or a snapshot ([`outcome::read`]), are compared case by case
//! by test name ([`compare`]): regressions (correct in base, not in head), fixes, cases only in
//! one side, and answers that changed without changing the verdict. Per suite, the mean of
//! every per-case metric both sides have ([`Metric::case_means`]) is compared with a paired
//! bootstrap 95% interval over the feasible cases in both ([`sqlgate_eval::metrics::bootstrap`]). Run records and
//! snapshots hold no gate thresholds, so no gate verdict is compared: the means are the values
//! the suite's gates compare. [`text`] and [`markdown`] render a [`Diff`]; its JSON is its
//! `Serialize` form (docs/diff.md).

pub mod markdown;
pub mod outcome;
pub mod text;

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use sqlgate_eval::metrics::ex::Verdict;
use sqlgate_eval::scoring::Metric;

use crate::gate::record::RunInputs;
use outcome::{CaseOutcome, InputKind, RunOutcomes};
use sqlgate_eval::metrics::bootstrap::{Bootstrap, Interval};

/// How two sides differ.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Diff {
    /// One line: the counts of regressions and fixes, then what else changed.
    pub headline: String,
    /// The earlier side.
    pub base: Side,
    /// The later side.
    pub head: Side,
    /// How the intervals were resampled.
    pub bootstrap: Bootstrap,
    /// How many cases of each kind of change.
    pub summary: Counts,
    /// Per suite, the metric means and their paired change.
    pub suites: Vec<SuiteDelta>,
    /// Correct in base, not in head; sorted by test name.
    pub regressions: Vec<Change>,
    /// Not correct in base, correct in head.
    pub fixes: Vec<Change>,
    /// Correct in both or in neither, with another answer or verdict class.
    pub changed: Vec<Change>,
    /// Only in head.
    pub new: Vec<Listed>,
    /// Only in base.
    pub removed: Vec<Listed>,
    /// What a reader should know to trust the comparison (inputs that differ, shards...).
    pub notes: Vec<String>,
}

/// One side as the diff read it.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    /// The file, as given.
    pub path: String,
    /// `run_record` or `snapshot`.
    pub kind: InputKind,
    /// How many cases it holds.
    pub cases: usize,
    /// A shard's partition, when the record is one.
    pub partition: Option<String>,
}

/// The number of cases of each kind of change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Cases in both sides.
    pub compared: usize,
    /// Correct in base, not in head.
    pub regressions: usize,
    /// Not correct in base, correct in head.
    pub fixes: usize,
    /// Same correctness, another answer or verdict class.
    pub changed: usize,
    /// Only in head.
    pub new: usize,
    /// Only in base.
    pub removed: usize,
}

/// A case in both sides that changed.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The test name.
    pub test: String,
    /// Its suite.
    pub suite: String,
    /// The case in base.
    pub base: CaseView,
    /// The case in head.
    pub head: CaseView,
}

/// A case in one side only.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    /// The test name.
    pub test: String,
    /// Its suite.
    pub suite: String,
    /// The case as that side has it.
    #[serde(flatten)]
    pub case: CaseView,
}

/// What a reviewer reads of a case in one side.
#[derive(Debug, Clone, Serialize)]
pub struct CaseView {
    /// EX = 1, or an abstention on an infeasible question.
    pub correct: bool,
    /// The verdict class.
    pub verdict: Verdict,
    /// The answer as a snapshot line writes it.
    pub answer: String,
    /// The question, gold and predicted SQL and error, when a run record has them.
    pub detail: Option<String>,
}

impl CaseView {
    fn of(case: &CaseOutcome) -> CaseView {
        CaseView {
            correct: case.correct,
            verdict: case.verdict,
            answer: case.answer.clone(),
            detail: case.detail.clone(),
        }
    }
}

/// One suite's metrics in the two sides.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteDelta {
    /// The suite's name.
    pub name: String,
    /// Its cases in base (0 when base does not have the suite).
    pub base_cases: usize,
    /// Its cases in head.
    pub head_cases: usize,
    /// Its feasible cases in both: the cases the deltas and intervals are over.
    pub paired: usize,
    /// Each per-case metric either side has, in [`Metric::case_means`] order.
    pub metrics: Vec<MetricDelta>,
}

/// One metric of a suite in the two sides.
#[derive(Debug, Clone, Serialize)]
pub struct MetricDelta {
    /// The metric (`ex`, `etm`...).
    pub metric: Metric,
    /// Its mean over base's feasible cases of the suite (the value its gate compared), when
    /// base has it.
    pub base: Option<f64>,
    /// Its mean over head's feasible cases of the suite.
    pub head: Option<f64>,
    /// The mean of head minus base over the paired cases, when both sides have the metric.
    pub delta: Option<f64>,
    /// The paired bootstrap 95% interval of `delta`.
    pub interval: Option<Interval>,
    /// The interval leaves out 0.
    pub beyond_noise: bool,
}

/// Compares `base` with `head` case by case, and each suite's metrics with `bootstrap`.
pub fn compare(base: &RunOutcomes, head: &RunOutcomes, bootstrap: Bootstrap) -> Diff {
    let in_base: HashMap<&str, &CaseOutcome> =
        base.cases.iter().map(|c| (c.test.as_str(), c)).collect();
    let in_head: HashMap<&str, &CaseOutcome> =
        head.cases.iter().map(|c| (c.test.as_str(), c)).collect();
    let (mut regressions, mut fixes, mut changed, mut removed) = (vec![], vec![], vec![], vec![]);
    let mut compared = 0;
    for old in &base.cases {
        let Some(new) = in_head.get(old.test.as_str()) else {
            removed.push(listed(old));
            continue;
        };
        compared += 1;
        let list = match (old.correct, new.correct) {
            (true, false) => &mut regressions,
            (false, true) => &mut fixes,
            _ if old.answer != new.answer || old.verdict != new.verdict => &mut changed,
            _ => continue,
        };
        list.push(Change {
            test: old.test.clone(),
            suite: old.suite.clone(),
            base: CaseView::of(old),
            head: CaseView::of(new),
        });
    }
    let mut new: Vec<Listed> = head
        .cases
        .iter()
        .filter(|c| !in_base.contains_key(c.test.as_str()))
        .map(listed)
        .collect();
    for list in [&mut regressions, &mut fixes, &mut changed] {
        list.sort_by(|a, b| a.test.cmp(&b.test));
    }
    for list in [&mut new, &mut removed] {
        list.sort_by(|a, b| a.test.cmp(&b.test));
    }
    let summary = Counts {
        compared,
        regressions: regressions.len(),
        fixes: fixes.len(),
        changed: changed.len(),
        new: new.len(),
        removed: removed.len(),
    };
    let suites: Vec<SuiteDelta> = suite_names(base, head)
        .into_iter()
        .map(|suite| suite_delta(&suite, base, head, &in_head, bootstrap))
        .collect();
    let mut notes = input_notes(base, head);
    notes.extend(suites.iter().filter_map(one_sided_suite));
    Diff {
        headline: headline(&summary, &suites),
        base: side(base),
        head: side(head),
        bootstrap,
        summary,
        suites,
        regressions,
        fixes,
        changed,
        new,
        removed,
        notes,
    }
}

fn listed(case: &CaseOutcome) -> Listed {
    Listed {
        test: case.test.clone(),
        suite: case.suite.clone(),
        case: CaseView::of(case),
    }
}

fn side(outcomes: &RunOutcomes) -> Side {
    Side {
        path: outcomes.path.display().to_string(),
        kind: outcomes.kind,
        cases: outcomes.cases.len(),
        partition: outcomes.partition.clone(),
    }
}

/// The suites of base in order of first appearance, then those only head has.
fn suite_names(base: &RunOutcomes, head: &RunOutcomes) -> Vec<String> {
    let mut seen = BTreeSet::new();
    base.cases
        .iter()
        .chain(&head.cases)
        .filter(|case| seen.insert(case.suite.as_str()))
        .map(|case| case.suite.clone())
        .collect()
}

fn suite_delta(
    suite: &str,
    base: &RunOutcomes,
    head: &RunOutcomes,
    in_head: &HashMap<&str, &CaseOutcome>,
    bootstrap: Bootstrap,
) -> SuiteDelta {
    let (base_cases, head_cases) = (cases_of(suite, base), cases_of(suite, head));
    let pairs: Vec<(&CaseOutcome, &CaseOutcome)> = base_cases
        .iter()
        .filter(|old| old.feasible)
        .filter_map(|old| Some((*old, *in_head.get(old.test.as_str())?)))
        .filter(|(_, new)| new.feasible && new.suite == suite)
        .collect();
    let (base_means, head_means) = (means(&base_cases), means(&head_cases));
    // Metrics both sides have, compared over the paired cases; a case without the value
    // scores 0, as in the suite's mean.
    let case_means = Metric::case_means();
    let both: Vec<usize> = (0..case_means.len())
        .filter(|&m| base_means[m].is_some() && head_means[m].is_some())
        .collect();
    let differences: Vec<f64> = pairs
        .iter()
        .flat_map(|(old, new)| {
            both.iter()
                .map(|&m| new.value(m).unwrap_or(0.0) - old.value(m).unwrap_or(0.0))
        })
        .collect();
    let intervals = bootstrap.intervals(&differences, both.len());
    let metrics = (0..case_means.len())
        .filter(|&m| base_means[m].is_some() || head_means[m].is_some())
        .map(|m| {
            let column = both.iter().position(|&b| b == m);
            let delta = column.filter(|_| !pairs.is_empty()).map(|column| {
                let sum: f64 = differences.iter().skip(column).step_by(both.len()).sum();
                sum / pairs.len() as f64
            });
            let interval = column.and_then(|column| Some(intervals.as_ref()?[column]));
            MetricDelta {
                metric: case_means[m],
                base: base_means[m],
                head: head_means[m],
                delta,
                interval,
                beyond_noise: interval.is_some_and(|i| i.excludes_zero()),
            }
        })
        .collect();
    SuiteDelta {
        name: suite.to_string(),
        base_cases: base_cases.len(),
        head_cases: head_cases.len(),
        paired: pairs.len(),
        metrics,
    }
}

fn cases_of<'a>(suite: &str, side: &'a RunOutcomes) -> Vec<&'a CaseOutcome> {
    side.cases.iter().filter(|c| c.suite == suite).collect()
}

/// Each metric's mean over the feasible cases, where some feasible case has it.
fn means(cases: &[&CaseOutcome]) -> Vec<Option<f64>> {
    let feasible: Vec<&&CaseOutcome> = cases.iter().filter(|c| c.feasible).collect();
    (0..Metric::case_means().len())
        .map(|m| {
            let values = feasible.iter().map(|c| c.value(m));
            let has_it = feasible.iter().any(|c| c.value(m).is_some());
            has_it.then(|| values.map(|v| v.unwrap_or(0.0)).sum::<f64>() / feasible.len() as f64)
        })
        .collect()
}

fn one_sided_suite(suite: &SuiteDelta) -> Option<String> {
    let (side, cases, kind) = match (suite.base_cases, suite.head_cases) {
        (0, cases) => ("head", cases, "new"),
        (cases, 0) => ("base", cases, "removed"),
        _ => return None,
    };
    Some(format!(
        "suite `{}` is only in {side}: its {cases} case{} count as {kind}",
        suite.name,
        plural(cases)
    ))
}

/// What differs in what the two sides ran on, and what a side cannot say.
fn input_notes(base: &RunOutcomes, head: &RunOutcomes) -> Vec<String> {
    let mut notes = Vec::new();
    for (name, side) in [("base", base), ("head", head)] {
        if side.kind == InputKind::Snapshot {
            notes.push(format!(
                "{name} is a snapshot: it holds no question, gold SQL or fingerprint of its \
                 inputs, so what else changed cannot be told"
            ));
        }
        if let Some(partition) = &side.partition {
            notes.push(format!(
                "{name} is shard {partition} of a run: the other shards' cases count as new or \
                 removed, and its means are over its shard"
            ));
        }
    }
    if let (Some(old), Some(new)) = (&base.inputs, &head.inputs) {
        notes.extend(differing_inputs(old, new));
    }
    notes
}

fn differing_inputs(old: &RunInputs, new: &RunInputs) -> Vec<String> {
    let changed =
        |what: &str, a: &str, b: &str| format!("the {what} differs: {a} in base, {b} in head");
    let mut notes = Vec::new();
    if old.sqlgate != new.sqlgate {
        notes.push(format!(
            "{}: a verdict may change with the evaluator, not the system",
            changed("sqlgate version", &old.sqlgate, &new.sqlgate)
        ));
    }
    if old.profile != new.profile {
        notes.push(changed("profile", &old.profile, &new.profile));
    }
    if old.config != new.config {
        notes.push("the configuration (sqlgate.toml) differs".to_string());
    }
    if old.system != new.system {
        notes.push(changed("system", &old.system, &new.system));
    } else if old.fingerprints != new.fingerprints {
        notes.push(format!(
            "the system `{}` differs in its fingerprint (its settings, prompt or predictions)",
            new.system
        ));
    }
    if old.plan != new.plan {
        notes.push(
            "the cases differ (questions, gold SQL, tags or the cases themselves): a changed \
             verdict may come from the benchmark, not the system"
                .to_string(),
        );
    }
    let databases: BTreeSet<&String> = old.databases.keys().chain(new.databases.keys()).collect();
    let differing: Vec<&str> = databases
        .into_iter()
        .filter(|db| old.databases.get(*db) != new.databases.get(*db))
        .map(String::as_str)
        .collect();
    if !differing.is_empty() {
        let more = match differing.len() {
            0..=3 => String::new(),
            n => format!(" and {} more", n - 3),
        };
        notes.push(format!(
            "the content of {} database{} differs ({}{more}): a changed verdict may come from \
             the data",
            differing.len(),
            plural(differing.len()),
            differing[..differing.len().min(3)].join(", ")
        ));
    }
    notes
}

/// `2 regressions, 1 fix, 3 changed answers; beyond noise: demo ex -0.125`.
fn headline(counts: &Counts, suites: &[SuiteDelta]) -> String {
    let mut parts = vec![
        count(counts.regressions, "regression", "regressions"),
        count(counts.fixes, "fix", "fixes"),
    ];
    for (n, one, many) in [
        (counts.new, "new case", "new cases"),
        (counts.removed, "removed case", "removed cases"),
        (counts.changed, "changed answer", "changed answers"),
    ] {
        if n > 0 {
            parts.push(count(n, one, many));
        }
    }
    let beyond: Vec<String> = suites
        .iter()
        .flat_map(|suite| {
            suite.metrics.iter().filter(|m| m.beyond_noise).map(|m| {
                let delta = m.delta.map_or_else(String::new, signed);
                format!("{} {} {delta}", suite.name, m.metric)
            })
        })
        .collect();
    let metrics = match beyond.len() {
        0 if suites.iter().all(|s| s.paired == 0) => String::new(),
        0 => "; metrics within noise".to_string(),
        1..=3 => format!("; beyond noise: {}", beyond.join(", ")),
        n => format!(
            "; beyond noise: {} and {} more",
            beyond[..3].join(", "),
            n - 3
        ),
    };
    parts.join(", ") + &metrics
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A metric value as reports show it: four decimals at most.
fn value(x: f64) -> String {
    crate::gate::judge::format_metric(x)
}

/// A change with its sign (`+0.0294`, `-0.125`, `0`).
fn signed(x: f64) -> String {
    let text = value(x);
    if text == "0" || text.starts_with('-') {
        text
    } else {
        format!("+{text}")
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// A feasible case of suite `s` with EX and, when given, ETM.
    fn case(id: &str, ex: f64, etm: Option<f64>, answer: &str) -> CaseOutcome {
        let mut metrics = vec![None; Metric::case_means().len()];
        metrics[0] = Some(ex);
        metrics[5] = etm;
        CaseOutcome {
            test: format!("s::db::{id}"),
            suite: "s".to_string(),
            correct: ex == 1.0,
            feasible: true,
            verdict: if ex == 1.0 {
                Verdict::Correct
            } else {
                Verdict::Incorrect
            },
            answer: answer.to_string(),
            detail: None,
            metrics,
        }
    }

    fn side(cases: Vec<CaseOutcome>) -> RunOutcomes {
        RunOutcomes {
            path: PathBuf::from("side.snap"),
            kind: InputKind::Snapshot,
            inputs: None,
            partition: None,
            cases,
        }
    }

    #[test]
    fn cases_are_sorted_into_their_kind_of_change() {
        let abstained = |correct: bool| CaseOutcome {
            feasible: false,
            correct,
            verdict: Verdict::Abstained,
            answer: "abstain".to_string(),
            ..case("infeasible", 0.0, None, "")
        };
        let base = side(vec![
            case("regressed", 1.0, None, "SELECT 1"),
            case("fixed", 0.0, None, "SELECT 2"),
            case("reworded", 0.0, None, "SELECT 3"),
            case("same", 1.0, None, "SELECT 4"),
            case("gone", 1.0, None, "SELECT 5"),
            abstained(true),
        ]);
        let head = side(vec![
            case("same", 1.0, Some(1.0), "SELECT 4"),
            case("reworded", 0.0, Some(0.0), "SELECT 33"),
            case("fixed", 1.0, Some(1.0), "SELECT 2"),
            case("regressed", 0.0, Some(0.0), "SELECT 0"),
            case("added", 1.0, Some(1.0), "SELECT 6"),
            abstained(true),
        ]);
        let diff = compare(&base, &head, Bootstrap::default());
        let names = |changes: &[Change]| -> Vec<String> {
            changes.iter().map(|c| c.test.clone()).collect()
        };
        assert_eq!(names(&diff.regressions), ["s::db::regressed"]);
        assert_eq!(names(&diff.fixes), ["s::db::fixed"]);
        assert_eq!(names(&diff.changed), ["s::db::reworded"]);
        assert_eq!(diff.new[0].test, "s::db::added");
        assert_eq!(diff.removed[0].test, "s::db::gone");
        assert_eq!(diff.headline, "1 regression, 1 fix, 1 new case, 1 removed case, 1 changed answer; metrics within noise");
        let suite = &diff.suites[0];
        // The infeasible case is compared but takes no part in the means.
        assert_eq!((diff.summary.compared, suite.paired), (5, 4));
        let ex = &suite.metrics[0];
        assert_eq!(
            (ex.base, ex.head, ex.delta),
            (Some(0.6), Some(0.6), Some(0.0))
        );
        // ETM only head has: its mean, and no change to compare.
        let etm = &suite.metrics[1];
        assert_eq!(etm.metric, Metric::Etm);
        assert_eq!((etm.base, etm.head), (None, Some(0.6)));
        assert!(etm.delta.is_none() && etm.interval.is_none() && !etm.beyond_noise);
    }
}
