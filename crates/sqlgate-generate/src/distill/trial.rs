//! One candidate database tried against every gold of its schema: which neighbours it tells
//! apart from their gold, on which golds it returns rows, and whether it is safe to keep. The
//! comparison is `score --mode testsuite` itself ([`evaluate`] with [`Mode::Testsuite`]), so a
//! neighbour this database "kills" is one the scored suite fails; every query runs in the
//! read-only, time-bounded sandbox.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rayon::prelude::*;
use sqlgate_eval::exec::{
    Backend, Connection, Driver, ExecError, ExecErrorKind, Execution, Feature, Limits, Open,
    QueryRunner, Source, Value,
};
use sqlgate_eval::loaders::suite_folder::SkipReason;
use sqlgate_eval::metrics::ex::ties::{OrderProbe, MAX_RESOLUTIONS};
use sqlgate_eval::metrics::ex::{evaluate, CaseInput, Mode, ModeOptions, Verdict};

use super::neighbours::Neighbour;

/// Which database a trial runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tried {
    /// The benchmark's own database, when every table fits in a sample
    /// ([`Sample::needed`](super::sample::Sample::needed) says no): everything is judged on it.
    Original,
    /// The benchmark's own database, with a table past the sample's size: golds are judged on
    /// it, and so are the neighbours of a gold within [`GOLD_STEPS`], each within
    /// [`NEIGHBOUR_STEPS`]. The neighbours of a gold past its bound, and those past theirs,
    /// are left to the sample of the original ([`Trial::left_to_sample`]).
    LargeOriginal,
    /// A generated candidate (a few rows per table), or the sample of a large original.
    Candidate,
}

/// The steps within which a gold's neighbours are tried on a large original: about a
/// hundredth of a second of SQLite's work, which a gold that reads a large table whole runs
/// past. Such a gold's neighbours cost about as much, and are left to the sample untried.
pub const GOLD_STEPS: u64 = 1_000_000;

/// The step bound of a neighbour on a large original: about a tenth of a second of SQLite's
/// work (a neighbour of an indexed lookup that reads its large table whole fits).
pub const NEIGHBOUR_STEPS: u64 = 10_000_000;

impl Tried {
    /// The virtual-machine steps a query may take here. On a candidate, well under a second
    /// of SQLite's work and about a thousand times what a gold takes there, so a query past it
    /// is a runaway neighbour (a cartesian product of its own making), not work; on the
    /// original, about the 2 s the bound once was in wall time.
    pub fn max_steps(self) -> u64 {
        match self {
            Tried::Original | Tried::LargeOriginal => 1_000_000_000,
            Tried::Candidate => 20_000_000,
        }
    }

    /// Bounds on one query on this database of `driver`'s engine. The step bound stops the
    /// same queries on a loaded machine as on an idle one, so the same seed keeps the same
    /// databases; 60 s of wall time backs it up. An engine without [`Feature::StepBound`] is
    /// bounded by 2 s of wall time, and a loaded machine can change what it keeps.
    pub fn limits(self, driver: &dyn Driver) -> Limits {
        bounded(driver, self.max_steps(), Duration::from_secs(2))
    }

    /// Bounds on a neighbour on a large original: [`NEIGHBOUR_STEPS`], or a fifth of a second
    /// of wall time on an engine without [`Feature::StepBound`].
    fn neighbour_limits(driver: &dyn Driver) -> Limits {
        bounded(driver, NEIGHBOUR_STEPS, Duration::from_millis(200))
    }

    /// Bounds within which a gold's neighbours are tried on a large original: [`GOLD_STEPS`],
    /// or a fiftieth of a second of wall time on an engine without [`Feature::StepBound`].
    fn gold_limits(driver: &dyn Driver) -> Limits {
        bounded(driver, GOLD_STEPS, Duration::from_millis(20))
    }
}

/// `max_steps` backed by 60 s of wall time where the engine counts steps, else `wall`.
fn bounded(driver: &dyn Driver, max_steps: u64, wall: Duration) -> Limits {
    let (timeout, max_steps) = if driver.supports(Feature::StepBound) {
        (Duration::from_secs(60), Some(max_steps))
    } else {
        (wall, None)
    };
    Limits {
        timeout: Some(timeout),
        max_rows: 100_000,
        max_bytes: 64 << 20,
        max_steps,
    }
}

/// A gold with what it must be told apart from and what it must not.
#[derive(Debug, Clone)]
pub struct GoldEntry {
    /// The case id.
    pub id: String,
    /// The gold alternatives (the first is the one mutated).
    pub gold: Vec<String>,
    /// Its neighbours.
    pub neighbours: Vec<Neighbour>,
    /// Its equivalent rewrites (name, SQL).
    pub rewrites: Vec<(&'static str, String)>,
    /// The order probes of its alternatives that have an ORDER BY, parsed once for every
    /// candidate.
    order_probes: Vec<OrderProbe>,
}

impl GoldEntry {
    /// A gold with its neighbours and rewrites.
    pub fn new(
        id: String,
        gold: Vec<String>,
        neighbours: Vec<Neighbour>,
        rewrites: Vec<(&'static str, String)>,
    ) -> GoldEntry {
        let order_probes = gold.iter().filter_map(|sql| OrderProbe::of(sql)).collect();
        GoldEntry {
            id,
            gold,
            neighbours,
            rewrites,
            order_probes,
        }
    }

    /// Whether `other` is tried exactly as this entry is (cases sharing a gold).
    fn tried_as(&self, other: &GoldEntry) -> bool {
        self.gold == other.gold
            && self.neighbours == other.neighbours
            && self.rewrites == other.rewrites
    }
}

/// What one database says about every gold of its schema.
#[derive(Debug, Clone, Default)]
pub struct Trial {
    /// Per gold, per neighbour: the database tells the neighbour apart from the gold.
    pub kills: Vec<Vec<bool>>,
    /// Per gold, per neighbour: not judged here, on a large original, because the neighbour
    /// or its gold ran past the neighbour bound ([`Tried::LargeOriginal`]); the sample judges
    /// it. Always false on other databases.
    pub left_to_sample: Vec<Vec<bool>>,
    /// Per gold: its first alternative returns a row holding a value other than NULL and 0
    /// (a gold that returns nothing, or only a zero count, accepts every answer that does the
    /// same).
    pub informative: Vec<bool>,
    /// Per gold: it runs and scores against itself here.
    pub gold_runs: Vec<bool>,
    /// Per gold: why its answer here is not one result, if it is not: its ORDER BY ties
    /// ([`SkipReason::Tied`]: it is judged here against every answer the ties allow, kills
    /// included), ties in more ways than are tried, or one of its equivalent rewrites is told
    /// apart. In the last two, a correct answer could fail here.
    pub undetermined: Vec<Option<SkipReason>>,
    /// The equivalent rewrites this database tells apart from their gold: (gold id, rewrite).
    pub rejected_rewrites: Vec<(String, &'static str)>,
}

impl Trial {
    /// Leaves out of this candidate's trial every gold whose answer here is not determined
    /// (other than by ties it is judged through), or that fails here while it runs on the
    /// original (`on_original`): such a gold is not judged on this database ([`SkipReason`],
    /// written to the suite's gold skip list), so its kills and rows here count for nothing. A
    /// gold that fails on the original is judged nowhere and stays as it is.
    pub fn judge_only_where_determined(&mut self, on_original: &Trial) {
        for g in 0..self.kills.len() {
            if !on_original.gold_runs[g] {
                self.undetermined[g] = None;
                continue;
            }
            if !self.gold_runs[g] {
                self.undetermined[g] = Some(SkipReason::GoldFails);
            }
            if self.undetermined[g].is_some_and(|why| why != SkipReason::Tied) {
                self.kills[g].fill(false);
                self.informative[g] = false;
            }
        }
    }

    /// The neighbours left to the sample, all golds together.
    pub fn any_left_to_sample(&self) -> bool {
        self.left_to_sample.iter().flatten().any(|&left| left)
    }
}

/// What one database says about one gold.
struct GoldTrial {
    kills: Vec<bool>,
    left_to_sample: Vec<bool>,
    informative: bool,
    gold_runs: bool,
    undetermined: Option<SkipReason>,
    rejected_rewrites: Vec<&'static str>,
}

/// Tries every gold and neighbour on the database `db` of `backend`, golds in parallel (each
/// on a session of its own; the result does not depend on how many run at once), calling
/// `gold_done` once per gold. Cases that share a gold and its neighbours are tried once.
pub fn try_database(
    backend: &dyn Backend,
    db: &Path,
    tried: Tried,
    golds: &[GoldEntry],
    gold_done: &(dyn Fn() + Sync),
) -> Trial {
    let Ok(sessions) = Sessions::open(backend, db) else {
        return Trial {
            kills: golds
                .iter()
                .map(|g| vec![false; g.neighbours.len()])
                .collect(),
            left_to_sample: golds
                .iter()
                .map(|g| vec![false; g.neighbours.len()])
                .collect(),
            informative: vec![false; golds.len()],
            gold_runs: vec![false; golds.len()],
            undetermined: vec![None; golds.len()],
            rejected_rewrites: Vec::new(),
        };
    };
    let mut first_of: HashMap<&[String], Vec<usize>> = HashMap::new();
    let mut tried_as = Vec::with_capacity(golds.len());
    let mut distinct: Vec<usize> = Vec::new();
    for (g, entry) in golds.iter().enumerate() {
        let same = first_of.entry(&entry.gold).or_default();
        match same.iter().find(|&&d| golds[distinct[d]].tried_as(entry)) {
            Some(&d) => tried_as.push(d),
            None => {
                same.push(distinct.len());
                tried_as.push(distinct.len());
                distinct.push(g);
            }
        }
    }
    let results: Vec<GoldTrial> = distinct
        .par_iter()
        .enumerate()
        .map(|(d, &g)| {
            let result = try_gold(&sessions, tried, &golds[g]);
            for _ in tried_as.iter().filter(|&&same| same == d) {
                gold_done();
            }
            result
        })
        .collect();
    let mut trial = Trial::default();
    for (entry, &d) in golds.iter().zip(&tried_as) {
        let result = &results[d];
        trial.kills.push(result.kills.clone());
        trial.left_to_sample.push(result.left_to_sample.clone());
        trial.informative.push(result.informative);
        trial.gold_runs.push(result.gold_runs);
        trial.undetermined.push(result.undetermined);
        trial.rejected_rewrites.extend(
            result
                .rejected_rewrites
                .iter()
                .map(|&name| (entry.id.clone(), name)),
        );
    }
    trial
}

/// Whether an execution ran past its bound.
fn past_bound(execution: &Execution) -> bool {
    matches!(&execution.result, Err(error) if error.kind == ExecErrorKind::Timeout)
}

fn try_gold(sessions: &Sessions, tried: Tried, entry: &GoldEntry) -> GoldTrial {
    let driver = sessions.backend.driver();
    let db = sessions.db.as_path();
    let files = [sessions.db.clone()];
    let unjudged = vec![false; entry.neighbours.len()];
    // On a large original, a gold past its bound there is run again in full, and its
    // neighbours, which cost about as much, are left to the sample.
    let (runner, heavy) = match tried {
        Tried::LargeOriginal => {
            let light = GoldRunner::new(sessions, Tried::gold_limits(driver));
            if entry.gold.iter().any(|sql| past_bound(&light.run(sql))) {
                (GoldRunner::new(sessions, tried.limits(driver)), true)
            } else {
                // The golds' results, within the lower bound, are theirs within the higher.
                (light.bounded_by(Tried::neighbour_limits(driver)), false)
            }
        }
        _ => (GoldRunner::new(sessions, tried.limits(driver)), false),
    };
    let order = if heavy {
        Order::Determined
    } else {
        entry
            .order_probes
            .iter()
            .map(|probe| order_on(&runner, db, probe))
            .max()
            .unwrap_or(Order::Determined)
    };
    let case = CaseInput {
        gold: &entry.gold,
        question: "",
        category: None,
        db: "",
        db_files: &files,
        tied: match order {
            Order::Tied => &files,
            _ => &[],
        },
        ignore_order: None,
    };
    let score = |sql: &str| {
        evaluate(
            Mode::Testsuite,
            &ModeOptions::default(),
            &case,
            sql,
            &runner,
        )
    };
    let first = &entry.gold[0];
    let gold_runs = score(first).verdict == Verdict::Correct;
    let informative = runner.run(first).result.is_ok_and(|rows| {
        rows.rows
            .iter()
            .flatten()
            .any(|value| *value != Value::Null && value.as_f64() != Some(0.0))
    });
    let mut result = GoldTrial {
        kills: unjudged.clone(),
        left_to_sample: unjudged,
        informative,
        gold_runs,
        undetermined: None,
        rejected_rewrites: Vec::new(),
    };
    if !gold_runs {
        return result;
    }
    if heavy {
        result.left_to_sample.fill(true);
        return result;
    }
    let large = tried == Tried::LargeOriginal;
    let mut undetermined = match order {
        Order::Determined => None,
        Order::Tied => Some(SkipReason::Tied),
        Order::Open => Some(SkipReason::OrderOpen),
    };
    for (name, sql) in &entry.rewrites {
        // A rewrite past the bound is not told apart: it is not known.
        if large && past_bound(&runner.run(sql)) {
            continue;
        }
        if score(sql).verdict != Verdict::Correct {
            result.rejected_rewrites.push(name);
            if undetermined.is_none_or(|why| why == SkipReason::Tied) {
                undetermined = Some(SkipReason::RewriteRejected);
            }
        }
    }
    result.undetermined = undetermined;
    for (n, neighbour) in entry.neighbours.iter().enumerate() {
        if large && past_bound(&runner.run(&neighbour.sql)) {
            result.left_to_sample[n] = true;
            continue;
        }
        let verdict = score(&neighbour.sql).verdict;
        result.kills[n] = verdict != Verdict::Correct && !verdict.is_gold_failure();
    }
    result
}

/// What a gold's ORDER BY leaves to the engine on one database, from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Order {
    /// Nothing: its answer is one result.
    Determined,
    /// Ties, in at most [`MAX_RESOLUTIONS`] ways: judged against each.
    Tied,
    /// Ties in more ways than are tried.
    Open,
}

/// What the probed gold's ORDER BY leaves to the engine on `db`.
fn order_on(runner: &GoldRunner, db: &Path, probe: &OrderProbe) -> Order {
    let Ok(rows) = runner.pred(db, &probe.sql).result else {
        return Order::Determined;
    };
    if probe.cut_through_ties(&rows).is_none() && probe.partial_order(&rows).is_none() {
        return Order::Determined;
    }
    match probe.resolutions(&rows, MAX_RESOLUTIONS) {
        Some(_) => Order::Tied,
        None => Order::Open,
    }
}

/// Sessions on one database through the sandbox, one per thread at work on it.
struct Sessions<'b> {
    backend: &'b dyn Backend,
    db: PathBuf,
    idle: Mutex<Vec<Box<dyn Connection>>>,
}

impl<'b> Sessions<'b> {
    /// Opens the first session: a database that cannot be opened fails here.
    fn open(backend: &'b dyn Backend, db: &Path) -> Result<Sessions<'b>, ExecError> {
        let first = backend.open(db, Open::for_source(Source::Prediction))?;
        Ok(Sessions {
            backend,
            db: db.to_path_buf(),
            idle: Mutex::new(vec![first]),
        })
    }

    fn execute(&self, sql: &str, limits: &Limits) -> Execution {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut session = match idle {
            Some(session) => session,
            None => match self
                .backend
                .open(&self.db, Open::for_source(Source::Prediction))
            {
                Ok(session) => session,
                Err(error) => {
                    return Execution {
                        result: Err(error),
                        elapsed: Duration::ZERO,
                    }
                }
            },
        };
        let execution = session.execute(sql, limits);
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(session);
        execution
    }
}

/// Runs one gold's queries within one set of bounds, each distinct SQL once.
struct GoldRunner<'s> {
    sessions: &'s Sessions<'s>,
    limits: Limits,
    done: Mutex<HashMap<String, Execution>>,
}

impl<'s> GoldRunner<'s> {
    fn new(sessions: &'s Sessions<'s>, limits: Limits) -> GoldRunner<'s> {
        GoldRunner {
            sessions,
            limits,
            done: Mutex::new(HashMap::new()),
        }
    }

    /// This runner with higher bounds, its results kept: none ran past the lower ones.
    fn bounded_by(mut self, limits: Limits) -> GoldRunner<'s> {
        self.limits = limits;
        self
    }

    fn run(&self, sql: &str) -> Execution {
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(execution) = done.get(sql) {
            return execution.clone();
        }
        let execution = self.sessions.execute(sql, &self.limits);
        done.insert(sql.to_string(), execution.clone());
        execution
    }
}

impl QueryRunner for GoldRunner<'_> {
    fn gold(&self, db: &Path, sql: &str) -> Execution {
        debug_assert_eq!(db, self.sessions.db);
        self.run(sql)
    }

    fn pred(&self, db: &Path, sql: &str) -> Execution {
        debug_assert_eq!(db, self.sessions.db);
        self.run(sql)
    }

    fn driver(&self) -> &'static dyn Driver {
        self.sessions.backend.driver()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database(dir: &Path, rows: &str) -> PathBuf {
        let path = dir.join(format!("{}.sqlite", rows.len()));
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE t(name TEXT, score INTEGER); INSERT INTO t VALUES {rows};"
        ))
        .unwrap();
        path
    }

    fn gold(sql: &str) -> GoldEntry {
        GoldEntry::new(
            sql.to_string(),
            vec![sql.to_string()],
            Vec::new(),
            Vec::new(),
        )
    }

    #[test]
    fn a_database_where_a_gold_order_is_open_is_flagged() {
        let dir = tempfile::tempdir().unwrap();
        let golds = [
            gold("SELECT name FROM t ORDER BY score DESC LIMIT 1"),
            gold("SELECT name, score FROM t ORDER BY score"),
            gold("SELECT name FROM t WHERE score > 1"),
        ];
        // Two rows tie on the top score: LIMIT 1 keeps either, and the full order is open.
        let tied = try_database(
            &*sqlgate_engine_sqlite::files(),
            &database(dir.path(), "('a', 3), ('b', 3), ('c', 1)"),
            Tried::Candidate,
            &golds,
            &|| {},
        );
        let judged_by_ties = Some(SkipReason::Tied);
        assert_eq!(tied.undetermined, [judged_by_ties, judged_by_ties, None]);
        // Distinct scores: every order is settled.
        let total = try_database(
            &*sqlgate_engine_sqlite::files(),
            &database(dir.path(), "('a', 3), ('b', 2), ('c', 1), ('d', 0)"),
            Tried::Candidate,
            &golds,
            &|| {},
        );
        assert_eq!(total.undetermined, [None; 3]);
    }
}
