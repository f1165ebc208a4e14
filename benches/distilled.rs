//! Scoring on a distilled folder (`OUT/<db>/<db>.sqlite` plus small counterexample databases
//! `OUT/<db>/<db>_<k>.sqlite`), against raw SQLite execution of the same queries, measured in
//! the same run.
//!
//! Data: the Defog set from `../shared/data/defog` when present, else the embedded demo. The
//! folder is built in a temporary directory: each original, and [`VARIANTS`] databases with its
//! schema and a seeded random sample of at most [`MAX_SAMPLED_ROWS`] rows of each table. The
//! predictions are every gold query and up to [`MUTANTS_PER_CASE`] of its single-error mutants
//! (`sqlgate generate errors`' operators), so most pairs are wrong and stop at the first
//! database that tells them apart, as `testsuite` mode does.
//! - `raw_sqlite`: exactly the distinct (database, SQL) executions the scoring asks for,
//!   through plain rusqlite (one connection per database, opened once), rows read into values,
//!   one thread;
//! - `sqlgate/1-thread`, `sqlgate/2-threads`: `scoring::score_all` in `testsuite` mode with a
//!   fresh engine, as `sqlgate score --mode testsuite --db-dir OUT` runs it.
//!
//! Last, rounds that time raw execution, 1-thread and 2-thread scoring one after the other print
//! the medians, how many CPUs the 2-thread scoring kept busy (CPU time of the process over wall
//! time), and the ratio 2-thread scoring / (raw / 2): the target is 1.2 at most.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rusqlite::{Connection, OpenFlags};
use sqlgate_eval::exec::{Engine, Execution, Limits, QueryRunner};
use sqlgate_eval::loaders::{self, Answer, Benchmark, Case, Prediction};
use sqlgate_eval::metrics::ex::Mode;
use sqlgate_eval::scoring::{self, CaseDatabases, Scoring};

/// Small databases beside each original.
const VARIANTS: usize = 8;
/// The most rows a small database keeps of each table.
const MAX_SAMPLED_ROWS: usize = 12;
/// Single-error mutants scored as predictions besides each gold query.
const MUTANTS_PER_CASE: usize = 7;
const SEED: u64 = 28;
/// Rounds of the interleaved raw / scoring comparison.
const ROUNDS: usize = 21;

fn benchmark() -> Benchmark {
    let gold = match sqlgate_test_support::shared_data() {
        Some(data) => data.join("defog/questions.csv"),
        None => {
            println!("distilled: no shared data; the embedded demo benchmark stands in for Defog");
            Path::new(env!("CARGO_MANIFEST_DIR")).join("benchmarks/demo/suite.toml")
        }
    };
    let mut bench = loaders::load(
        &gold,
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .expect("benchmark loads");
    bench.cases.retain(|case| case.feasible);
    bench
}

/// Writes the distilled-like folder of every database the cases use into `out`.
fn distill_like(bench: &Benchmark, out: &Path) {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let mut done = HashSet::new();
    for case in &bench.cases {
        if !done.insert(case.db.clone()) {
            continue;
        }
        let original = bench.db_files(case, false).unwrap().remove(0);
        let folder = out.join(&case.db);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::copy(&original, folder.join(format!("{}.sqlite", case.db))).unwrap();
        for k in 1..=VARIANTS {
            let small = folder.join(format!("{}_{k}.sqlite", case.db));
            sample_database(&original, &small, &mut rng);
        }
    }
}

/// A copy of `original` that keeps a random sample of each table's rows.
fn sample_database(original: &Path, small: &Path, rng: &mut ChaCha8Rng) {
    std::fs::copy(original, small).unwrap();
    let conn = Connection::open(small).unwrap();
    // Rows kept are drawn apart, table by table: a kept row may point at one left out.
    conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for table in tables {
        let table = table.replace('"', "\"\"");
        let rowids: Vec<i64> = conn
            .prepare(&format!("SELECT rowid FROM \"{table}\""))
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let wanted = rng.random_range(0..=MAX_SAMPLED_ROWS.min(rowids.len()));
        let kept: Vec<String> = (0..wanted)
            .map(|_| rowids[rng.random_range(0..rowids.len())].to_string())
            .collect();
        conn.execute_batch(&format!(
            "DELETE FROM \"{table}\" WHERE rowid NOT IN ({})",
            kept.join(",")
        ))
        .unwrap();
    }
    conn.execute_batch("VACUUM").unwrap();
}

/// Every case with its gold as the prediction, then with each of its first mutants.
fn pairs(bench: &Benchmark) -> (Vec<Case>, Vec<Prediction>) {
    let mut cases = Vec::new();
    let mut predictions = Vec::new();
    for case in &bench.cases {
        let gold = &case.gold[0];
        let mutants = sqlgate_generate::mutate::mutants_of(&case.id, gold, SEED)
            .map(|found| found.mutants)
            .unwrap_or_default();
        let answers = std::iter::once(gold.clone())
            .chain(mutants.into_iter().map(|m| m.sql).take(MUTANTS_PER_CASE));
        for sql in answers {
            cases.push(case.clone());
            predictions.push(Prediction {
                answer: Answer::Sql(sql),
                cleaned: false,
                source: case.source.clone(),
                notes: Default::default(),
                samples: Vec::new(),
                retrieved: Vec::new(),
                usage: None,
                script: None,
            });
        }
    }
    (cases, predictions)
}

/// One execution: a database file and the SQL run on it.
type Query = (PathBuf, String);

/// A runner that notes the distinct executions asked of it, in order.
struct Recorder<'a> {
    engine: &'a Engine,
    seen: Mutex<(HashSet<Query>, Vec<Query>)>,
}

impl Recorder<'_> {
    fn note(&self, db: &Path, sql: &str) {
        let mut seen = self.seen.lock().unwrap();
        let key = (db.to_path_buf(), sql.to_string());
        if seen.0.insert(key.clone()) {
            seen.1.push(key);
        }
    }
}

impl QueryRunner for Recorder<'_> {
    fn gold(&self, db: &Path, sql: &str) -> Execution {
        self.note(db, sql);
        self.engine.gold(db, sql)
    }

    fn pred(&self, db: &Path, sql: &str) -> Execution {
        self.note(db, sql);
        self.engine.pred(db, sql)
    }

    fn driver(&self) -> &'static dyn sqlgate_eval::exec::Driver {
        &sqlgate_engine_sqlite::DRIVER
    }
}

/// Raw execution of `queries`: prepare and step each on its database's one connection.
fn raw_sqlite(queries: &[Query], connections: &HashMap<PathBuf, Connection>) -> usize {
    let mut cells = 0;
    for (db, sql) in queries {
        let Ok(mut stmt) = connections[db].prepare(sql) else {
            continue;
        };
        let width = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Ok(Some(row)) = rows.next() {
            let values: Vec<rusqlite::types::Value> =
                (0..width).map(|i| row.get(i).unwrap()).collect();
            cells += values.len();
        }
    }
    cells
}

struct Workload {
    cases: Vec<Case>,
    predictions: Vec<Prediction>,
    databases: Vec<CaseDatabases>,
    scoring: Scoring,
}

impl Workload {
    fn score(&self) -> usize {
        let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
        let scores = scoring::score_all(
            &self.scoring,
            &self.cases,
            &self.databases,
            &self.predictions,
            &engine,
        );
        scores.iter().filter(|s| s.ex == 1.0).count()
    }
}

fn distilled_benchmarks(c: &mut Criterion) {
    let mut bench = benchmark();
    let folder = tempfile::tempdir().unwrap();
    distill_like(&bench, folder.path());
    bench.db_dir = folder.path().to_path_buf();
    let (cases, predictions) = pairs(&bench);
    let scoring = Scoring::new(Mode::Testsuite);
    let databases = scoring.databases(&Benchmark {
        cases: cases.clone(),
        ..bench.clone()
    });
    let workload = Workload {
        cases,
        predictions,
        databases: databases.unwrap(),
        scoring,
    };

    // The executions the scoring needs, and its verdicts, from one recorded run.
    let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
    let recorder = Recorder {
        engine: &engine,
        seen: Mutex::default(),
    };
    let scores = scoring::score_all(
        &workload.scoring,
        &workload.cases,
        &workload.databases,
        &workload.predictions,
        &recorder,
    );
    let correct = scores.iter().filter(|s| s.ex == 1.0).count();
    let queries = recorder.seen.into_inner().unwrap().1;
    let files: HashSet<&PathBuf> = workload
        .databases
        .iter()
        .flat_map(|d| &d.evaluated)
        .collect();
    println!(
        "distilled: {} pairs ({} correct) over {} database files, {} distinct executions",
        workload.cases.len(),
        correct,
        files.len(),
        queries.len()
    );
    let connections: HashMap<PathBuf, Connection> = files
        .iter()
        .map(|&db| {
            let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
            (db.clone(), conn)
        })
        .collect();
    let pool = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    };
    let (one_thread, two_threads) = (pool(1), pool(2));

    let mut group = c.benchmark_group(format!("distilled {} pairs", workload.cases.len()));
    group.sample_size(20);
    group.bench_function("raw_sqlite", |b| {
        b.iter(|| raw_sqlite(&queries, &connections))
    });
    group.bench_function("sqlgate/1-thread", |b| {
        b.iter(|| assert_eq!(one_thread.install(|| workload.score()), correct))
    });
    group.bench_function("sqlgate/2-threads", |b| {
        b.iter(|| assert_eq!(two_threads.install(|| workload.score()), correct))
    });
    group.finish();

    // Raw execution, then scoring on one and on two threads, round after round: the machine's
    // load drifts, and each round sees the three under about the same. Each also notes the CPU
    // time the process used: on a loaded machine, wall time over CPU time says how much of it
    // waited for a core.
    let mut rounds = [Timing::default(), Timing::default(), Timing::default()];
    for _ in 0..ROUNDS {
        rounds[0].time(|| {
            std::hint::black_box(raw_sqlite(&queries, &connections));
        });
        rounds[1].time(|| assert_eq!(one_thread.install(|| workload.score()), correct));
        rounds[2].time(|| assert_eq!(two_threads.install(|| workload.score()), correct));
    }
    let [raw, one, two] = rounds;
    println!(
        "distilled: medians of {ROUNDS} rounds: raw {} (one thread), scoring {} (1 thread), {} \
         (2 threads); scoring / (raw / 2) = {:.2}",
        raw.describe(),
        one.describe(),
        two.describe(),
        two.median().as_secs_f64() / (raw.median().as_secs_f64() / 2.0)
    );
}

/// Wall times of rounds, and the CPU time they used in all.
#[derive(Default)]
struct Timing {
    wall: Vec<Duration>,
    cpu: Duration,
}

impl Timing {
    fn time(&mut self, f: impl FnOnce()) {
        let (start, cpu) = (Instant::now(), process_cpu_time());
        f();
        self.wall.push(start.elapsed());
        self.cpu += process_cpu_time() - cpu;
    }

    fn median(&self) -> Duration {
        let mut times = self.wall.clone();
        times.sort();
        times[times.len() / 2]
    }

    /// The median, the CPU time a round used and the CPUs kept busy on average.
    fn describe(&self) -> String {
        let wall: Duration = self.wall.iter().sum();
        format!(
            "{:.2} ms ({:.2} ms CPU a round, {:.2} CPUs busy)",
            self.median().as_secs_f64() * 1e3,
            self.cpu.as_secs_f64() * 1e3 / self.wall.len() as f64,
            self.cpu.as_secs_f64() / wall.as_secs_f64()
        )
    }
}

/// CPU time all threads of this process used so far (user and system).
fn process_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the call writes one timespec through the pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    assert_eq!(rc, 0, "no process CPU clock");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

criterion_group!(benches, distilled_benchmarks);
criterion_main!(benches);
