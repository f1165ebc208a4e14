//! One candidate database tried against every gold of its schema: which neighbours it tells
//! apart from their gold, on which golds it returns rows, and whether it is safe to keep. The
//! comparison is `score --mode testsuite` itself ([`evaluate`] with [`Mode::Testsuite`]), so a
//! neighbour this database "kills" is one the scored suite fails; every query runs in the
//! read-only, time-bounded sandbox.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use sqlgate_eval::exec::{
    Backend, Connection, Driver, ExecError, Execution, Feature, Limits, Open, QueryRunner, Source,
    Value,
};
use sqlgate_eval::loaders::suite_folder::SkipReason;
use sqlgate_eval::metrics::ex::ties::{OrderProbe, MAX_RESOLUTIONS};
use sqlgate_eval::metrics::ex::{evaluate, CaseInput, Mode, ModeOptions, Verdict};

use super::neighbours::Neighbour;

/// Which database a trial runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tried {
    /// The benchmark's own database, of any size.
    Original,
    /// A generated candidate: a few rows per table.
    Candidate,
}

impl Tried {
    /// The virtual-machine steps a query may take here. On a candidate, well under a second
    /// of SQLite's work and about a thousand times what a gold takes there, so a query past it
    /// is a runaway neighbour (a cartesian product of its own making), not work; on the
    /// original, about the 2 s the bound once was in wall time.
    pub fn max_steps(self) -> u64 {
        match self {
            Tried::Original => 1_000_000_000,
            Tried::Candidate => 20_000_000,
        }
    }

    /// Bounds on one query on this database of `driver`'s engine. The step bound stops the
    /// same queries on a loaded machine as on an idle one, so the same seed keeps the same
    /// databases; 60 s of wall time backs it up. An engine without [`Feature::StepBound`] is
    /// bounded by 2 s of wall time, and a loaded machine can change what it keeps.
    pub fn limits(self, driver: &dyn Driver) -> Limits {
        let (timeout, max_steps) = if driver.supports(Feature::StepBound) {
            (60, Some(self.max_steps()))
        } else {
            (2, None)
        };
        Limits {
            timeout: Some(Duration::from_secs(timeout)),
            max_rows: 100_000,
            max_bytes: 64 << 20,
            max_steps,
        }
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
}

/// What one database says about every gold of its schema.
#[derive(Debug, Clone, Default)]
pub struct Trial {
    /// Per gold, per neighbour: the database tells the neighbour apart from the gold.
    pub kills: Vec<Vec<bool>>,
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
}

/// Tries every gold and neighbour on the database `db` of `backend`.
pub fn try_database(backend: &dyn Backend, db: &Path, tried: Tried, golds: &[GoldEntry]) -> Trial {
    let runner = match FileRunner::open(backend, db, tried.limits(backend.driver())) {
        Ok(runner) => runner,
        Err(_) => {
            return Trial {
                kills: golds
                    .iter()
                    .map(|g| vec![false; g.neighbours.len()])
                    .collect(),
                informative: vec![false; golds.len()],
                gold_runs: vec![false; golds.len()],
                undetermined: vec![None; golds.len()],
                rejected_rewrites: Vec::new(),
            }
        }
    };
    let files = [db.to_path_buf()];
    let mut trial = Trial::default();
    for entry in golds {
        let order = entry
            .order_probes
            .iter()
            .map(|probe| order_on(&runner, db, probe))
            .max()
            .unwrap_or(Order::Determined);
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
        trial.gold_runs.push(gold_runs);
        let rows = runner.run(db, first).result;
        trial.informative.push(rows.is_ok_and(|rows| {
            rows.rows
                .iter()
                .flatten()
                .any(|value| *value != Value::Null && value.as_f64() != Some(0.0))
        }));
        if !gold_runs {
            trial.kills.push(vec![false; entry.neighbours.len()]);
            trial.undetermined.push(None);
            continue;
        }
        let mut undetermined = match order {
            Order::Determined => None,
            Order::Tied => Some(SkipReason::Tied),
            Order::Open => Some(SkipReason::OrderOpen),
        };
        for (name, sql) in &entry.rewrites {
            if score(sql).verdict != Verdict::Correct {
                trial.rejected_rewrites.push((entry.id.clone(), name));
                if undetermined.is_none_or(|why| why == SkipReason::Tied) {
                    undetermined = Some(SkipReason::RewriteRejected);
                }
            }
        }
        trial.undetermined.push(undetermined);
        trial.kills.push(
            entry
                .neighbours
                .iter()
                .map(|n| {
                    let verdict = score(&n.sql).verdict;
                    verdict != Verdict::Correct && !verdict.is_gold_failure()
                })
                .collect(),
        );
    }
    trial
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
fn order_on(runner: &FileRunner, db: &Path, probe: &OrderProbe) -> Order {
    let Ok(rows) = runner.run(db, &probe.sql).result else {
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

/// Runs queries on one file through one sandbox, each distinct SQL once.
struct FileRunner {
    sandbox: Mutex<Box<dyn Connection>>,
    driver: &'static dyn Driver,
    path: PathBuf,
    done: Mutex<HashMap<String, Execution>>,
    limits: Limits,
}

impl FileRunner {
    fn open(backend: &dyn Backend, db: &Path, limits: Limits) -> Result<FileRunner, ExecError> {
        Ok(FileRunner {
            sandbox: Mutex::new(backend.open(db, Open::for_source(Source::Prediction))?),
            driver: backend.driver(),
            path: db.to_path_buf(),
            done: Mutex::new(HashMap::new()),
            limits,
        })
    }

    fn run(&self, db: &Path, sql: &str) -> Execution {
        debug_assert_eq!(db, self.path);
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(execution) = done.get(sql) {
            return execution.clone();
        }
        let mut sandbox = self.sandbox.lock().unwrap_or_else(|p| p.into_inner());
        let execution = sandbox.execute(sql, &self.limits);
        done.insert(sql.to_string(), execution.clone());
        execution
    }
}

impl QueryRunner for FileRunner {
    fn gold(&self, db: &Path, sql: &str) -> Execution {
        self.run(db, sql)
    }

    fn pred(&self, db: &Path, sql: &str) -> Execution {
        self.run(db, sql)
    }

    fn driver(&self) -> &'static dyn Driver {
        self.driver
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
        );
        let judged_by_ties = Some(SkipReason::Tied);
        assert_eq!(tied.undetermined, [judged_by_ties, judged_by_ties, None]);
        // Distinct scores: every order is settled.
        let total = try_database(
            &*sqlgate_engine_sqlite::files(),
            &database(dir.path(), "('a', 3), ('b', 2), ('c', 1), ('d', 0)"),
            Tried::Candidate,
            &golds,
        );
        assert_eq!(total.undetermined, [None; 3]);
    }
}
