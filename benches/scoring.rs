//! Scoring throughput, and the harness overhead over raw SQLite execution.
//!
//! Data: the Defog set from `../shared/data/defog` when present (135 cases, 5 databases), else
//! the embedded demo. Each case is scored with its first gold alternative as the prediction, so
//! every case executes two queries and compares two equal results.
//! - `raw_sqlite`: the same queries through plain rusqlite, rows read into values, one thread;
//! - `sqlgate/<mode>/1-thread`: the whole harness (sandbox, gold cache, comparison), one thread;
//! - `sqlgate/<mode>/all-cores`: the same on every core.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_eval::loaders::{self, Answer, Benchmark, Prediction};
use sqlgate_eval::metrics::ex::Mode;
use sqlgate_eval::scoring::{self, Scoring};

fn benchmark() -> Benchmark {
    let gold = match sqlgate_test_support::shared_data() {
        Some(data) => data.join("defog/questions.csv"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("benchmarks/demo/suite.toml"),
    };
    let mut bench = loaders::load(
        &gold,
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .expect("benchmark loads");
    bench.cases.retain(|case| case.feasible);
    bench
}

fn gold_predictions(bench: &Benchmark) -> Vec<Prediction> {
    bench
        .cases
        .iter()
        .map(|case| Prediction {
            answer: Answer::Sql(case.gold[0].clone()),
            cleaned: false,
            source: case.source.clone(),
            notes: Default::default(),
            samples: Vec::new(),
            retrieved: Vec::new(),
            usage: None,
            script: None,
        })
        .collect()
}

fn raw_sqlite(
    bench: &Benchmark,
    files: &[PathBuf],
    connections: &mut HashMap<PathBuf, rusqlite::Connection>,
) -> usize {
    let mut rows = 0;
    for (case, file) in bench.cases.iter().zip(files) {
        let conn = connections.entry(file.clone()).or_insert_with(|| {
            rusqlite::Connection::open_with_flags(file, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap()
        });
        for _ in 0..2 {
            let mut stmt = conn.prepare(&case.gold[0]).unwrap();
            let width = stmt.column_count();
            let mut result = stmt.query([]).unwrap();
            while let Some(row) = result.next().unwrap() {
                let values: Vec<rusqlite::types::Value> =
                    (0..width).map(|i| row.get(i).unwrap()).collect();
                rows += values.len();
            }
        }
    }
    rows
}

fn scoring_benchmarks(c: &mut Criterion) {
    let bench = benchmark();
    let predictions = gold_predictions(&bench);
    let files: Vec<PathBuf> = bench
        .cases
        .iter()
        .map(|case| bench.db_files(case, false).unwrap().remove(0))
        .collect();
    let mut group = c.benchmark_group(format!("score {} cases", bench.cases.len()));
    group.sample_size(20);

    let mut connections = HashMap::new();
    group.bench_function("raw_sqlite", |b| {
        b.iter(|| raw_sqlite(&bench, &files, &mut connections))
    });

    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for mode in [Mode::Testsuite, Mode::Bird, Mode::Defog] {
        let scoring = Scoring::new(mode);
        let databases = scoring.databases(&bench).unwrap();
        let run = || {
            let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
            let scores =
                scoring::score_all(&scoring, &bench.cases, &databases, &predictions, &engine);
            assert!(scores.iter().all(|s| s.ex == 1.0));
        };
        group.bench_function(format!("sqlgate/{mode:?}/1-thread"), |b| {
            b.iter(|| one_thread.install(run))
        });
        group.bench_function(format!("sqlgate/{mode:?}/all-cores"), |b| b.iter(run));
    }
    group.finish();
}

criterion_group!(benches, scoring_benchmarks);
criterion_main!(benches);
