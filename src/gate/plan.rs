//! What a gate run evaluates: suites with their thresholds, and the system that answers.
//! Built from `sqlgate.toml`, or directly by a Rust user plugging in their own system.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::bench::{Benchmark, Case};
use crate::exec::Limits;
use crate::metrics::ex::{Mode, ModeOptions};
use crate::metrics::sqlmorph::{Embedder, Regime};
use crate::metrics::{esm, etm};

use super::threshold::Threshold;

/// One benchmark under the gate.
pub struct SuitePlan {
    /// The first component of every test name of the suite.
    pub name: String,
    pub bench: Benchmark,
    pub mode: Mode,
    pub mode_options: ModeOptions,
    pub limits: Limits,
    /// The SQLMorph regime of the suite's EXP/EXR/F1, when it has one.
    pub regime: Option<Regime>,
    /// Spider exact set match of every case, when the suite asks for it.
    pub esm: Option<Arc<esm::Evaluator>>,
    /// Enhanced Tree Matching of every case, when the suite asks for it.
    pub etm: Option<Arc<etm::Evaluator>>,
    /// Embeds column descriptors for SC matching; `None`: the offline n-gram embedder.
    pub embedder: Option<Arc<dyn Embedder + Send>>,
    /// TrustSQL's penalty c of the `rs` metric (the profile's `penalty`, default 0).
    pub penalty: f64,
    /// Aggregate thresholds, by metric name (`ex`, `rs`).
    pub gates: BTreeMap<String, Threshold>,
    /// Test names that must be correct whatever the accepted snapshot says.
    pub must_pass: BTreeSet<String>,
    /// Test names that are listed but not run.
    pub ignored: BTreeSet<String>,
}

impl SuitePlan {
    /// `<suite>::<db>::<case-id>`.
    pub fn case_test_name(&self, case: &Case) -> String {
        format!("{}::{}::{}", self.name, case.db, case.id)
    }

    /// `<suite>::gate::<metric>`.
    pub fn gate_test_name(&self, metric: &str) -> String {
        format!("{}::gate::{metric}", self.name)
    }
}

/// What kind of test a name stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestKind {
    /// A case: its index in the suite's benchmark.
    Case(usize),
    /// An aggregate threshold on a metric.
    Gate(String),
}

/// One listed test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestDesc {
    pub name: String,
    /// Index of the suite in the plan.
    pub suite: usize,
    pub kind: TestKind,
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
            let name = suite.gate_test_name(metric);
            tests.push(TestDesc {
                ignored: suite.ignored.contains(&name),
                name,
                suite: index,
                kind: TestKind::Gate(metric.clone()),
            });
        }
    }
    tests
}
