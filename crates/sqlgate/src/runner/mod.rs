//! The run built from a plan, as nextest-runner's `TestRunnerBuilder`: which tests run (filters,
//! ignored tests, a partition), when it stops (`--max-fail`) and the cache it reads and keeps
//! verdicts in. `sqlgate test` and the `harness!` front end build their runs the same way, and
//! every run (and `sqlgate merge`'s run put together from shards) ends through [`ending`].

pub mod ending;
mod notes;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sqlgate_eval::store::Store;

use crate::config::Config;
use crate::gate::partition::Partition;
use crate::gate::plan::{TestDesc, TestKind};
use crate::gate::run::{self, Event, RunReport};
use crate::gate::session::Session;
use crate::gate::TestResult;

pub use ending::{Ending, HtmlOutput, Outputs};

/// Where a run's events and closing notes go.
pub trait Reporter {
    /// A test started or finished.
    fn event(&mut self, event: Event<'_>);
    /// After the run: every reported test (ignored ones too), how many the filters left out, and
    /// the notes a reader must see.
    fn finish(&mut self, results: &[TestResult], filtered_out: usize, notes: &[String]);
}

/// What a selection makes of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chosen {
    /// The test runs.
    Run,
    /// Named by the filters but `ignore = true`: reported as skipped, as libtest and nextest do.
    Ignored,
    /// Not named by the filters: counted, not reported.
    FilteredOut,
}

/// Which tests to run, as `cargo test` and nextest take them.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// A test runs when its name contains any filter (or equals one, with `exact`); none = all.
    pub filters: Vec<String>,
    /// A filter must equal the whole name (`--exact`).
    pub exact: bool,
    /// Run only the ignored tests (`--ignored`), or those too (`--include-ignored`).
    pub ignored_only: bool,
    /// Run ignored tests as well as the others (`--include-ignored`).
    pub include_ignored: bool,
}

impl Selection {
    /// Whether `test` runs, is reported as ignored, or is left out.
    pub fn choose(&self, test: &TestDesc) -> Chosen {
        let by_ignore = if self.ignored_only {
            test.ignored
        } else {
            self.include_ignored || !test.ignored
        };
        match (self.matches_name(test), by_ignore) {
            (true, true) => Chosen::Run,
            (true, false) if test.ignored => Chosen::Ignored,
            _ => Chosen::FilteredOut,
        }
    }

    /// Whether the filters name `test`, ignored or not: such a test is listed, and reported
    /// as skipped when it does not run.
    pub fn matches_name(&self, test: &TestDesc) -> bool {
        self.filters.is_empty()
            || self.filters.iter().any(|f| {
                if self.exact {
                    test.name == *f
                } else {
                    test.name.contains(f.as_str())
                }
            })
    }
}

/// Where earlier runs' query results and verdicts are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheSettings {
    /// The cache folder.
    pub dir: PathBuf,
    /// The folder's size bound; the least recently used entries go first.
    pub max_bytes: u64,
}

impl CacheSettings {
    /// The folder beside the configuration when none is given.
    pub const DEFAULT_DIR: &str = ".sqlgate/cache";
    /// The folder's size bound when none is given, in MiB.
    pub const DEFAULT_MIB: u64 = 1024;

    /// `dir` (default: [`Self::DEFAULT_DIR`] beside the configuration), bounded to `mib` MiB.
    pub fn new(config: &Config, dir: Option<&Path>, mib: u64) -> CacheSettings {
        CacheSettings {
            dir: config.resolve(dir.unwrap_or(Path::new(Self::DEFAULT_DIR))),
            max_bytes: mib.saturating_mul(1 << 20),
        }
    }
}

type Choose<'a> = Box<dyn Fn(&TestDesc) -> Chosen + 'a>;

/// Builds a [`TestRunner`]: by default every test but the ignored ones, no partition, no stop,
/// no cache.
pub struct TestRunnerBuilder<'a> {
    choose: Choose<'a>,
    partition: Option<Partition>,
    max_fail: Option<usize>,
    cache: Option<CacheSettings>,
    accept: bool,
}

impl Default for TestRunnerBuilder<'_> {
    fn default() -> Self {
        TestRunnerBuilder {
            choose: Box::new(|test| Selection::default().choose(test)),
            partition: None,
            max_fail: None,
            cache: None,
            accept: false,
        }
    }
}

impl<'a> TestRunnerBuilder<'a> {
    /// A builder that runs every test, without a cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Filters and ignored tests as `sqlgate test` takes them.
    pub fn selection(self, selection: Selection) -> Self {
        self.choose(move |test| selection.choose(test))
    }

    /// Any other front end's selection (libtest-mimic's arguments).
    pub fn choose(mut self, choose: impl Fn(&TestDesc) -> Chosen + 'a) -> Self {
        self.choose = Box::new(choose);
        self
    }

    /// One CI runner's share of the selected cases; a shard runs no gate.
    pub fn partition(mut self, partition: Option<Partition>) -> Self {
        self.partition = partition;
        self
    }

    /// Stop once this many tests have failed (`None`: run everything).
    pub fn max_fail(mut self, max_fail: Option<usize>) -> Self {
        self.max_fail = max_fail;
        self
    }

    /// Read query results and unchanged cases' verdicts from earlier runs and keep this run's
    /// (`None`: execute everything, keep nothing).
    pub fn cache(mut self, cache: Option<CacheSettings>) -> Self {
        self.cache = cache;
        self
    }

    /// The run will accept its outcomes as the snapshots (`--accept`): when it runs every test,
    /// each case is judged against the outcome it accepts, so a wrong answer is a known failure
    /// (its [`Ending`] accepts them).
    pub fn accept(mut self, accept: bool) -> Self {
        self.accept = accept;
        self
    }

    /// The runner of `session`'s tests as chosen.
    pub fn build(self, session: &Session) -> TestRunner<'_> {
        let all = session.tests();
        let mut selected = Vec::new();
        let mut ignored = Vec::new();
        for test in &all {
            match (self.choose)(test) {
                Chosen::Run => selected.push(test.clone()),
                Chosen::Ignored => ignored.push(test.clone()),
                Chosen::FilteredOut => {}
            }
        }
        let unsharded = selected.len();
        if let Some(partition) = self.partition {
            selected = shard(selected, partition);
        }
        let store = self.cache.map(|cache| {
            Arc::new(Store::open(
                &cache.dir,
                cache.max_bytes,
                crate::CODE_VERSION,
            ))
        });
        TestRunner {
            session,
            all,
            selected,
            ignored,
            unsharded,
            partition: self.partition,
            max_fail: self.max_fail,
            store,
            accept: self.accept,
        }
    }
}

/// A run of a session's selected tests.
pub struct TestRunner<'s> {
    session: &'s Session,
    all: Vec<TestDesc>,
    selected: Vec<TestDesc>,
    ignored: Vec<TestDesc>,
    /// How many tests the selection chose before the partition took its share.
    unsharded: usize,
    partition: Option<Partition>,
    max_fail: Option<usize>,
    store: Option<Arc<Store>>,
    /// The run accepts its outcomes as the snapshots.
    accept: bool,
}

impl TestRunner<'_> {
    /// Every test of the plan, in plan order.
    pub fn all(&self) -> &[TestDesc] {
        &self.all
    }

    /// The tests this run runs.
    pub fn selected(&self) -> &[TestDesc] {
        &self.selected
    }

    /// How many tests the selection chose before the partition took its share.
    pub fn unsharded(&self) -> usize {
        self.unsharded
    }

    /// Runs the selected tests; the report lists them and the ignored ones the filters name, in
    /// plan order.
    pub fn run(&self, on_event: &mut dyn FnMut(Event<'_>)) -> RunReport {
        let session = self.session;
        let answers = |suite: usize, cases: &[usize]| session.answers(suite, cases);
        let baseline = session.baseline(self.accept && self.whole());
        let mut report = run::run(
            &session.suites,
            &self.selected,
            baseline,
            &answers,
            self.max_fail,
            self.store.as_ref(),
            on_event,
        );
        report.results.extend(
            self.ignored
                .iter()
                .map(|test| run::ignored(&session.suites[test.suite].name, test)),
        );
        run::sort_in_plan_order(&mut report.results, &self.all);
        report
    }

    /// Whether every runnable test runs: snapshots compare (and accept) whole suites only.
    fn whole(&self) -> bool {
        self.selected.len() == self.all.iter().filter(|t| !t.ignored).count()
    }

    /// How this run ends: what it covered and the cache it kept.
    pub fn ending(&self) -> Ending {
        Ending {
            whole: self.whole(),
            accept: self.accept,
            partition: self.partition,
            store: self.store.clone(),
            filtered_out: self.all.len() - self.selected.len() - self.ignored.len(),
            notes: Vec::new(),
        }
    }
}

/// This shard's cases, in order: gates need every case, so no shard runs them.
fn shard(selected: Vec<TestDesc>, partition: Partition) -> Vec<TestDesc> {
    selected
        .into_iter()
        .filter(|test| matches!(test.kind, TestKind::Case(_)))
        .enumerate()
        .filter(|(position, test)| partition.contains(*position, &test.name))
        .map(|(_, test)| test)
        .collect()
}
