//! What a gate run evaluates: suites with their thresholds, and the system that answers.
//! Built from `sqlgate.toml`, or directly by a Rust user plugging in their own system.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::config::{Metric, PassRule, Threshold};
use sqlgate_eval::exec::{Backend, Engine, Limits};
use sqlgate_eval::loaders::{Benchmark, Case};
use sqlgate_eval::metrics::sqlmorph::Regime;
use sqlgate_eval::scoring::{CaseDatabases, Scoring};

/// One benchmark under the gate.
pub struct SuitePlan {
    /// The first component of every test name of the suite.
    pub name: String,
    /// The suite's benchmark: its cases and their databases.
    pub bench: Benchmark,
    /// How its cases are scored, as `sqlgate score` would with the same settings.
    pub scoring: Scoring,
    /// Every case's database files, resolved when the plan was built.
    pub databases: Vec<CaseDatabases>,
    /// Bounds on every query the suite executes (time, rows, bytes).
    pub limits: Limits,
    /// Where its databases are (SQLite files unless the suite names another engine).
    pub backend: Arc<dyn Backend>,
    /// TrustSQL's penalty c of the `rs` metric (the profile's `penalty`, default 0).
    pub penalty: f64,
    /// Aggregate thresholds, by metric.
    pub gates: BTreeMap<Metric, Threshold>,
    /// Thresholds on families' metrics against their seeds, sorted by family and metric.
    pub family_gates: Vec<FamilyGate>,
    /// Test names that must be correct whatever the accepted snapshot says.
    pub must_pass: BTreeSet<String>,
    /// Test names that are listed but not run.
    pub ignored: BTreeSet<String>,
    /// Gates over a metric some cases could not compute judge the number instead of failing.
    pub allow_metric_errors: bool,
    /// How many times the system is asked each question (1: not sampled).
    pub samples: u32,
    /// Which share of a sampled case's answers must be correct.
    pub pass_rule: PassRule,
    /// The level of the tests telling a sampled case's drop from noise.
    pub alpha: f64,
    /// Found while loading the suite: what the server's role may do beyond reading, databases
    /// without a row. The session shows them with the run's other warnings.
    pub warnings: Vec<String>,
}

impl SuitePlan {
    /// An engine running the suite's SQL within its limits on its databases.
    pub fn engine(&self) -> Engine {
        Engine::new(self.limits, self.backend.clone())
    }

    /// `<suite>::<db>::<case-id>`.
    pub fn case_test_name(&self, case: &Case) -> String {
        format!("{}::{}::{}", self.name, case.db, case.id)
    }

    /// The SQLMorph regime of the suite's EXP/EXR/F1, when it has one.
    pub fn regime(&self) -> Option<Regime> {
        self.scoring.regimes.first().copied()
    }

    /// `<suite>::gate::<metric>`.
    pub fn gate_test_name(&self, metric: Metric) -> String {
        format!("{}::gate::{metric}", self.name)
    }

    /// `<suite>::gate::<family>::<metric>`.
    pub fn family_gate_test_name(&self, gate: &FamilyGate) -> String {
        format!("{}::gate::{}", self.name, gate.label())
    }
}

/// A threshold on one family's metric (`family_gate = { tqa-ll = { drop = "<= 10" } }`).
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyGate {
    /// The generated family the gate is on (`jqe`, `tqa-ll`, `para`...).
    pub family: String,
    /// The family metric held to the threshold.
    pub metric: Metric,
    /// The bound the metric must meet.
    pub threshold: Threshold,
}

impl FamilyGate {
    /// The gate's metric among its suite's metrics.
    pub fn key(&self) -> MetricKey {
        MetricKey::Family {
            family: self.family.clone(),
            metric: self.metric,
        }
    }

    /// `<family>::<metric>`: the gate's name within its suite.
    pub fn label(&self) -> String {
        self.key().to_string()
    }
}

/// One of a suite's metric values: a suite metric (`ex`) or a generated family's against its
/// seeds (`tqa-ll::drop`). Ordered by that name, as reports list them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MetricKey {
    /// A metric of the suite's cases.
    Suite(Metric),
    /// A metric of one generated family.
    Family {
        /// The family's name.
        family: String,
        /// Its metric.
        metric: Metric,
    },
}

impl MetricKey {
    /// The metric, of the suite or of a family.
    pub fn metric(&self) -> Metric {
        match self {
            MetricKey::Suite(metric) | MetricKey::Family { metric, .. } => *metric,
        }
    }
}

impl std::fmt::Display for MetricKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetricKey::Suite(metric) => write!(f, "{metric}"),
            MetricKey::Family { family, metric } => write!(f, "{family}::{metric}"),
        }
    }
}

impl std::str::FromStr for MetricKey {
    type Err = sqlgate_eval::scoring::MetricNameError;

    /// `ex`, or `<family>::<metric>` (a family's name never holds `::`).
    fn from_str(text: &str) -> Result<MetricKey, Self::Err> {
        Ok(match text.rsplit_once("::") {
            Some((family, metric)) => MetricKey::Family {
                family: family.to_string(),
                metric: metric.parse()?,
            },
            None => MetricKey::Suite(text.parse()?),
        })
    }
}

impl Ord for MetricKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.to_string().cmp(&other.to_string())
    }
}

impl PartialOrd for MetricKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// What kind of test a name stands for. More kinds may come: code outside this crate matching
/// on it keeps a `_` arm (or asks [`TestResult::is_gate`](super::TestResult::is_gate)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TestKind {
    /// A case: its index in the suite's benchmark.
    Case(usize),
    /// An aggregate threshold on a metric.
    Gate(Metric),
    /// A threshold on a family's metric: its index in the suite's `family_gates`.
    FamilyGate(usize),
}

/// One listed test.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TestDesc {
    /// The test's name, as `sqlgate test --list` prints it.
    pub name: String,
    /// Index of the suite in the plan.
    pub suite: usize,
    /// What the test checks: a case, a mutant, or a gate.
    pub kind: TestKind,
    /// Skipped unless asked for (`ignore = true` in the case's configuration).
    pub ignored: bool,
}

/// Every test of the suites, cases first, in benchmark order, then gates.
pub fn list(suites: &[SuitePlan]) -> Vec<TestDesc> {
    let mut tests = Vec::new();
    for (index, suite) in suites.iter().enumerate() {
        for (case_index, case) in suite.bench.cases.iter().enumerate() {
            let name = suite.case_test_name(case);
            tests.push(TestDesc {
                ignored: suite.ignored.contains(&name),
                name,
                suite: index,
                kind: TestKind::Case(case_index),
            });
        }
        for metric in suite.gates.keys() {
            let name = suite.gate_test_name(*metric);
            tests.push(TestDesc {
                ignored: suite.ignored.contains(&name),
                name,
                suite: index,
                kind: TestKind::Gate(*metric),
            });
        }
        for (gate_index, gate) in suite.family_gates.iter().enumerate() {
            let name = suite.family_gate_test_name(gate);
            tests.push(TestDesc {
                ignored: suite.ignored.contains(&name),
                name,
                suite: index,
                kind: TestKind::FamilyGate(gate_index),
            });
        }
    }
    tests
}
