//! Verdict reuse: a case whose inputs are all unchanged since a run that evaluated it (the
//! answer, the case's gold and tags, its databases' content (with `every_database` or in
//! `testsuite` mode: every file of its folder, named), the suite's mode and metric
//! settings, the limits, the sqlgate version) takes that run's [`CaseRecord`] without
//! executing anything.
//!
//! Only outcomes that do not depend on the moment are kept: an answer the system gave (not a
//! missing one), no gold failure, no metric that could not be computed, and every execution
//! the case read lasting (no timeout, no out-of-memory error, no database that changed or
//! could not be read: [`sqlgate_eval::exec::ExecErrorKind::depends_on_run`]). A suite scored with an
//! embeddings server never reuses (the server's answers may change), nor does a suite that
//! times its answers (`efficiency = ["time"]`: a time is of the run that took it); counted
//! steps are deterministic and are reused.
//!
//! A suite's verdicts are one cache entry, its *index* (a line per case: the inputs' hash and
//! the record), read once when the run starts and written once when it ends: a rerun of a large
//! suite reads one file instead of one per case. A run replaces the entries of the cases it
//! evaluated and keeps the others (a shard, a filtered or a stopped run leaves the rest of the
//! suite's verdicts alone); entries of tests no longer in the suite are dropped.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::system::answer::Answered;
use sqlgate_eval::exec::{Engine, Witness};
use sqlgate_eval::metrics::ex::Verdict;
use sqlgate_eval::store::{Hasher, Store};

use super::judge::{self, CaseRun};
use super::plan::SuitePlan;
use super::record::CaseRecord;

/// The entry kind (subfolder) of verdict indexes.
const KIND: &str = "verdicts";

/// A kept verdict: the hash of the inputs it was computed from, and the case's record (of one
/// sample, when the case is sampled).
#[derive(Serialize, Deserialize)]
struct Kept {
    inputs: String,
    record: CaseRecord,
    /// Which sample of a sampled case the record is of (0: the case's own answer).
    #[serde(default, skip_serializing_if = "is_zero")]
    sample: usize,
}

fn is_zero(sample: &usize) -> bool {
    *sample == 0
}

impl Kept {
    /// The verdict's entry in the index: its test, and its sample past the first.
    fn entry(&self) -> String {
        entry(&self.record.test, self.sample)
    }
}

/// `<test>`, or `<test>#<k>` for sample k > 0 of a sampled case.
fn entry(test: &str, sample: usize) -> String {
    match sample {
        0 => test.to_string(),
        k => format!("{test}#{k}"),
    }
}

/// Reuses and keeps the verdicts of one suite's cases.
pub struct Reuse<'a> {
    store: &'a Arc<Store>,
    suite: &'a SuitePlan,
    /// The suite's scoring settings, hashed; `None`: this suite never reuses.
    settings: Option<String>,
    /// The suite's index as earlier runs left it, by entry (test name, and sample past the
    /// first).
    earlier: HashMap<String, Kept>,
    /// What this run learnt, by entry: a verdict to keep, or `None` to forget the old one.
    learnt: Mutex<Vec<(String, Option<Kept>)>>,
    reused: AtomicUsize,
}

impl<'a> Reuse<'a> {
    /// Reuse of `suite`'s verdicts kept in `store`.
    pub fn new(store: &'a Arc<Store>, suite: &'a SuitePlan) -> Reuse<'a> {
        let settings = settings(store, suite);
        let earlier = match settings {
            Some(_) => store
                .get(KIND, &index_key(store, suite))
                .map(|body| parse_index(&body))
                .unwrap_or_default(),
            None => HashMap::new(),
        };
        Reuse {
            settings,
            store,
            suite,
            earlier,
            learnt: Mutex::new(Vec::new()),
            reused: AtomicUsize::new(0),
        }
    }

    /// How many cases took an earlier run's verdict.
    pub fn reused(&self) -> usize {
        self.reused.load(Ordering::Relaxed)
    }

    /// The run of the case's `sample` (0 for a case asked once): an earlier one when its
    /// inputs are unchanged, else evaluated now (and kept for later runs).
    pub fn evaluate(
        &self,
        case_index: usize,
        sample: usize,
        answered: &Answered,
        engine: &Engine,
    ) -> CaseRun {
        let test = self
            .suite
            .case_test_name(&self.suite.bench.cases[case_index]);
        let inputs = self.inputs(&test, case_index, answered);
        let entry = entry(&test, sample);
        if let Some(inputs) = &inputs {
            if let Some(mut run) = self.lookup(&entry, inputs, case_index) {
                run.duration = answered.elapsed;
                // The verdict is an earlier run's; what the answer cost is this run's.
                run.answer_costs = vec![answered.cost];
                self.reused.fetch_add(1, Ordering::Relaxed);
                return run;
            }
        }
        let witness = Witness::new(engine);
        let run = judge::evaluate_case(self.suite, case_index, answered, &witness);
        let kept = inputs.filter(|_| witness.all_lasting() && lasting(&run));
        let kept = kept.map(|inputs| Kept {
            inputs,
            record: CaseRecord::of(&run),
            sample,
        });
        if kept.is_some() || self.earlier.contains_key(&entry) {
            self.learnt
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((entry, kept));
        }
        run
    }

    /// Writes the suite's index when this run changed it. A cache that cannot be written is
    /// counted by the store, never fails the run.
    pub fn finish(self) {
        let learnt = self.learnt.into_inner().unwrap_or_else(|p| p.into_inner());
        if self.settings.is_none() {
            return;
        }
        // A run that used or replaced every earlier verdict has no stale one to look for.
        let replaced = learnt
            .iter()
            .filter(|(test, _)| self.earlier.contains_key(test))
            .count();
        let all_seen = self.reused.into_inner() + replaced == self.earlier.len();
        if learnt.is_empty() && all_seen {
            return;
        }
        let tests: HashSet<String> = self
            .suite
            .bench
            .cases
            .iter()
            .map(|case| self.suite.case_test_name(case))
            .collect();
        let stale = self
            .earlier
            .values()
            .any(|kept| !tests.contains(&kept.record.test));
        if learnt.is_empty() && !stale {
            return;
        }
        let mut index: BTreeMap<String, Kept> = self
            .earlier
            .into_iter()
            .filter(|(_, kept)| tests.contains(&kept.record.test))
            .collect();
        for (entry, kept) in learnt {
            match kept {
                Some(kept) => index.insert(entry, kept),
                None => index.remove(&entry),
            };
        }
        let mut body = Vec::new();
        for kept in index.values() {
            if serde_json::to_writer(&mut body, kept).is_err() {
                return;
            }
            body.push(b'\n');
        }
        self.store
            .put(KIND, &index_key(self.store, self.suite), &body);
    }

    /// The earlier run of the index's `entry`, when its inputs were the same. The record
    /// takes the case's position in today's plan: cases added before it do not change it.
    fn lookup(&self, entry: &str, inputs: &str, case_index: usize) -> Option<CaseRun> {
        let kept = self
            .earlier
            .get(entry)
            .filter(|kept| kept.inputs == inputs)?;
        kept.record.to_run(self.suite, case_index).ok()
    }

    /// Everything the case's verdict depends on, hashed, or `None` when it cannot be reused.
    fn inputs(&self, test: &str, case_index: usize, answered: &Answered) -> Option<String> {
        let settings = self.settings.as_ref()?;
        let reply = answered.reply.as_ref().ok()?;
        let case = &self.suite.bench.cases[case_index];
        let databases = &self.suite.databases[case_index];
        let mut hasher = self.store.hasher(KIND);
        hasher
            .field(settings)
            .field(test)
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
        // A verdict on several databases names the one it failed on: a renamed file counts.
        if databases.evaluated.len() > 1 {
            for file in &databases.evaluated {
                hasher.field(file.file_name()?.as_encoded_bytes());
            }
            // A database where the gold ties is judged otherwise.
            for file in &databases.tied {
                hasher
                    .field("tied")
                    .field(file.file_name()?.as_encoded_bytes());
            }
        }
        // The whole reply as scored: every field a metric reads.
        hasher.field(serde_json::to_vec(reply).ok()?);
        Some(hasher.hex())
    }
}

/// A suite's index, one verdict per line, parsed in parallel (a large suite's index is tens
/// of megabytes); a line that does not parse is a verdict not kept.
fn parse_index(body: &[u8]) -> HashMap<String, Kept> {
    let lines: Vec<&[u8]> = body.split(|&byte| byte == b'\n').collect();
    lines
        .par_iter()
        .filter_map(|line| serde_json::from_slice::<Kept>(line).ok())
        .map(|kept| (kept.entry(), kept))
        .collect()
}

/// The key of the suite's index: one per suite name and sqlgate version.
fn index_key(store: &Store, suite: &SuitePlan) -> String {
    store.hasher(KIND).field(&suite.name).hex()
}

/// The suite's settings that change a case's score, hashed: the scoring configuration as it
/// serializes (mode and its options, metrics), the limits and, with ESM, `tables.json`.
fn settings(store: &Store, suite: &SuitePlan) -> Option<String> {
    let scoring = &suite.scoring;
    // An embeddings server's answers and a database server's data can change unseen; timed
    // efficiency is of this run's machine and load, never of an earlier run's.
    let timed = scoring.efficiency.is_some_and(|e| e.timed);
    if scoring.embedder.is_some() || suite.backend.on_server() || timed {
        return None;
    }
    let mut hasher = Hasher::new();
    hasher
        .field(serde_json::to_vec(scoring).ok()?)
        .field(serde_json::to_vec(&suite.limits).ok()?);
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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};

    use super::Reuse;
    use crate::gate::fixtures::{suite, suite_with};
    use crate::gate::plan::SuitePlan;
    use crate::system::answer::Answered;
    use crate::system::{Reply, Usage};
    use sqlgate_eval::exec::result_cache::ResultCache;
    use sqlgate_eval::metrics::ex::Verdict;
    use sqlgate_eval::store::Store;

    fn answer(sql: &str) -> Answered {
        Answered::new(Ok(Reply::sql(sql)), Duration::ZERO, false, None)
    }

    #[test]
    fn every_field_of_the_reply_is_part_of_the_reuse_key() {
        let dir = tempfile::tempdir().unwrap();
        let suite = suite(dir.path());
        let evaluate = |reply: Reply| {
            let store = Arc::new(Store::open(&dir.path().join("cache"), 1 << 30, "test"));
            let reuse = Reuse::new(&store, &suite);
            let answered = Answered::new(Ok(reply), Duration::ZERO, false, None);
            reuse.evaluate(0, 0, &answered, &suite.engine());
            let reused = reuse.reused();
            reuse.finish();
            reused
        };
        let sql = "SELECT 7";
        let mut retrieved = Reply::sql(sql);
        retrieved.retrieved = vec!["items".into()];
        assert_eq!(evaluate(retrieved.clone()), 0);
        assert_eq!(evaluate(retrieved.clone()), 1);
        // Each of these changes what a metric may read: none takes the verdict kept above.
        let mut other_retrieval = retrieved.clone();
        other_retrieval.retrieved = vec!["nothing_here".into()];
        let mut sampled = retrieved.clone();
        sampled.samples = vec![Some("SELECT 5".into())];
        let mut truncated = retrieved.clone();
        truncated.truncated = true;
        for changed in [other_retrieval, sampled, truncated] {
            assert_eq!(evaluate(changed.clone()), 0, "{changed:?}");
            assert_eq!(evaluate(retrieved.clone()), 0, "{changed:?}");
        }
    }

    #[test]
    fn a_reused_verdict_carries_this_run_s_answer_cost() {
        let dir = tempfile::tempdir().unwrap();
        let suite = suite(dir.path());
        let evaluate = |latency_ms: u64, tokens: u64| {
            let store = Arc::new(Store::open(&dir.path().join("cache"), 1 << 30, "test"));
            let reuse = Reuse::new(&store, &suite);
            let reply = Reply::sql("SELECT 7").with_usage(Usage {
                prompt_tokens: tokens,
                completion_tokens: 1,
            });
            let answered = Answered::new(Ok(reply), Duration::ZERO, false, Some(latency_ms));
            let run = reuse.evaluate(0, 0, &answered, &suite.engine());
            let reused = reuse.reused();
            reuse.finish();
            (run.answer_costs, reused)
        };
        let (first, reused) = evaluate(1200, 300);
        assert_eq!(reused, 0);
        assert_eq!(first[0].latency_ms, Some(1200));
        // Another latency and token count: no input of the verdict, which is reused, with the
        // cost of this run's answer.
        let (second, reused) = evaluate(800, 280);
        assert_eq!(reused, 1);
        assert_eq!(second.len(), 1);
        assert_eq!(second[0].latency_ms, Some(800));
        assert_eq!(second[0].usage.map(|u| u.prompt_tokens), Some(280));
    }

    #[test]
    fn counted_steps_are_reused_and_timed_efficiency_never_is() {
        let runs = |settings: &str| {
            let dir = tempfile::tempdir().unwrap();
            let suite = suite_with(dir.path(), settings);
            let cases = [(0, "SELECT 7"), (1, "SELECT max(price) FROM items WHERE 1")];
            let first = run(dir.path(), &suite, &cases, || {}).1;
            let second = run(dir.path(), &suite, &cases, || {}).1;
            (first, second)
        };
        assert_eq!(runs("efficiency = [\"steps\"]"), (0, 2));
        assert_eq!(
            runs("efficiency = [\"time\"]\nefficiency_iterations = 2"),
            (0, 0)
        );
        assert_eq!(runs("efficiency = [\"steps\", \"time\"]"), (0, 0));
    }

    /// One run over `cases`: `between` runs after the first case. Returns each case's verdict
    /// and how many were reused.
    fn run(
        dir: &Path,
        suite: &SuitePlan,
        cases: &[(usize, &str)],
        between: impl Fn(),
    ) -> (Vec<Verdict>, usize) {
        let store = Arc::new(Store::open(&dir.join("cache"), 1 << 30, "test"));
        let engine = suite
            .engine()
            .with_cache(Some(ResultCache::new(Arc::clone(&store))));
        let reuse = Reuse::new(&store, suite);
        let mut verdicts = Vec::new();
        for (step, &(case, sql)) in cases.iter().enumerate() {
            if step == 1 {
                between();
            }
            verdicts.push(reuse.evaluate(case, 0, &answer(sql), &engine).score.verdict);
        }
        let reused = reuse.reused();
        reuse.finish();
        (verdicts, reused)
    }

    #[test]
    fn a_failure_caused_by_a_database_changing_mid_run_is_never_reused() {
        let dir = tempfile::tempdir().unwrap();
        let suite = suite(dir.path());
        let db = dir.path().join("db").join("shop.sqlite");
        let cases = [(0, "SELECT 7"), (1, "SELECT max(price) FROM items WHERE 1")];
        // The database is touched (its content unchanged) after the first case: the second
        // case's prediction reads a database that is not the one first read.
        let touch = || {
            let file = std::fs::File::options().write(true).open(&db).unwrap();
            file.set_modified(SystemTime::now() + Duration::from_secs(5))
                .unwrap();
        };
        let (verdicts, reused) = run(dir.path(), &suite, &cases, touch);
        assert_eq!(verdicts, [Verdict::Correct, Verdict::PredError]);
        assert_eq!(reused, 0);
        // The next run, on the same content: the correct verdict is reused, the failure of the
        // moment is evaluated again (and is correct).
        let (verdicts, reused) = run(dir.path(), &suite, &cases, || {});
        assert_eq!(verdicts, [Verdict::Correct, Verdict::Correct]);
        assert_eq!(reused, 1);
        let (_, reused) = run(dir.path(), &suite, &cases, || {});
        assert_eq!(reused, 2);
    }
}
