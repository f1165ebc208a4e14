//! Verdict reuse: a case whose inputs are all unchanged since a run that evaluated it (the
//! answer, the case's gold and tags, its databases' content, the suite's mode and metric
//! settings, the limits, the sqlgate version) takes that run's [`CaseRecord`] without
//! executing anything.
//!
//! Only outcomes that do not depend on the moment are kept: an answer the system gave (not a
//! missing one), no timeout, no gold failure, no metric that could not be computed. A suite
//! scored with an embeddings server never reuses (the server's answers may change).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::exec::Engine;
use crate::metrics::ex::Verdict;
use crate::store::{Hasher, Store};
use crate::system::answer::Answered;

use super::judge::{self, CaseRun};
use super::plan::SuitePlan;
use super::record::CaseRecord;

/// The entry kind (subfolder) of verdicts.
const KIND: &str = "verdicts";

/// Reuses and keeps the verdicts of one suite's cases.
pub struct Reuse<'a> {
    store: &'a Arc<Store>,
    suite: &'a SuitePlan,
    /// The suite's scoring settings, hashed; `None`: this suite never reuses.
    settings: Option<String>,
    reused: AtomicUsize,
}

impl<'a> Reuse<'a> {
    pub fn new(store: &'a Arc<Store>, suite: &'a SuitePlan) -> Reuse<'a> {
        Reuse {
            settings: settings(store, suite),
            store,
            suite,
            reused: AtomicUsize::new(0),
        }
    }

    /// How many cases took an earlier run's verdict.
    pub fn reused(&self) -> usize {
        self.reused.load(Ordering::Relaxed)
    }

    /// The case's run: an earlier one when its inputs are unchanged, else evaluated now (and
    /// kept for later runs).
    pub fn evaluate(&self, case_index: usize, answered: &Answered, engine: &Engine) -> CaseRun {
        let key = self.key(case_index, answered);
        if let Some(key) = &key {
            if let Some(mut run) = self.lookup(key) {
                run.duration = answered.elapsed;
                self.reused.fetch_add(1, Ordering::Relaxed);
                return run;
            }
        }
        let run = judge::evaluate_case(self.suite, case_index, answered, engine);
        if let (Some(key), true) = (key, lasting(&run)) {
            if let Ok(body) = serde_json::to_vec(&CaseRecord::of(&run)) {
                self.store.put(KIND, &key, &body);
            }
        }
        run
    }

    fn lookup(&self, key: &str) -> Option<CaseRun> {
        let body = self.store.get(KIND, key)?;
        let record: CaseRecord = serde_json::from_slice(&body).ok()?;
        record.to_run(self.suite).ok()
    }

    /// Everything the case's verdict depends on, or `None` when it cannot be reused.
    fn key(&self, case_index: usize, answered: &Answered) -> Option<String> {
        let settings = self.settings.as_ref()?;
        let reply = answered.reply.as_ref().ok()?;
        let case = &self.suite.bench.cases[case_index];
        let databases = &self.suite.databases[case_index];
        let mut hasher = self.store.hasher(KIND);
        hasher
            .field(settings)
            .field(self.suite.case_test_name(case))
            .field(&case.question)
            .field(case.gold.len().to_le_bytes())
            .field([u8::from(case.feasible)]);
        for gold in &case.gold {
            hasher.field(gold);
        }
        for (tag, value) in &case.tags {
            hasher.field(tag).field(value);
        }
        for file in std::iter::once(&databases.main).chain(&databases.evaluated) {
            hasher.field(self.store.file_hash(file)?);
        }
        hasher
            .optional(reply.sql.as_deref())
            .field([u8::from(reply.cleaned), u8::from(reply.truncated)]);
        Some(hasher.hex())
    }
}

/// The suite's settings that change a case's score: mode and its options, metrics, limits.
fn settings(store: &Store, suite: &SuitePlan) -> Option<String> {
    let scoring = &suite.scoring;
    // An embeddings server's answers and a database server's data can change unseen.
    if scoring.embedder.is_some() || suite.backend.on_server() {
        return None;
    }
    let mut hasher = Hasher::new();
    hasher
        .field(format!(
            "{}|{:?}|{:?}|{}|{}|{:?}",
            scoring.mode.name(),
            scoring.mode_options,
            scoring.regimes,
            scoring.sqlmorph_compat,
            scoring.pc_max_pairs,
            suite.limits
        ))
        .field([
            u8::from(scoring.esm.is_some()),
            u8::from(scoring.etm.is_some()),
            // A verdict kept without the family metrics' facts cannot serve a suite with families.
            u8::from(scoring.robustness),
        ]);
    // ESM reads the foreign keys of `tables.json`.
    if scoring.esm.is_some() {
        hasher.field(store.file_hash(suite.bench.tables.as_deref()?)?);
    }
    Some(hasher.hex())
}

/// Whether another run with the same inputs would score the case the same.
fn lasting(run: &CaseRun) -> bool {
    let score = &run.score;
    let transient = matches!(
        score.verdict,
        Verdict::PredTimeout | Verdict::GoldTimeout | Verdict::GoldError | Verdict::SystemError
    );
    !transient && run.system_error.is_none() && score.metric_errors().next().is_none()
}
