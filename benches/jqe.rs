//! Join Query Expansion over a whole question set: schema graphs, join graphs, JCCs,
//! redundancy, synthesis, pattern pruning and, in the second measurement, the sandboxed
//! execution that validates every candidate. Data: the Defog set when `../shared/data` is
//! present (135 questions, 5 databases), else the embedded demo.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_generate::mutate::jqe::graph::SchemaGraph;
use sqlgate_generate::mutate::jqe::{self, Options, Seed};

/// Seeds and database file per database.
fn databases() -> Vec<(String, PathBuf, Vec<Seed>)> {
    let gold = match sqlgate_test_support::shared_data() {
        Some(data) => data.join("defog/questions.csv"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("benchmarks/demo/suite.toml"),
    };
    let bench = sqlgate_eval::loaders::load(
        &gold,
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .expect("benchmark loads");
    let mut by_db: BTreeMap<String, (PathBuf, Vec<Seed>)> = BTreeMap::new();
    for case in bench.cases.iter().filter(|c| c.feasible) {
        let path = bench.db_files(case, false).expect("database").remove(0);
        let seed = Seed {
            id: case.id.clone(),
            question: case.question.clone(),
            evidence: case.evidence.clone(),
            sql: case.gold[0].clone(),
        };
        by_db
            .entry(case.db.clone())
            .or_insert_with(|| (path, Vec::new()))
            .1
            .push(seed);
    }
    by_db
        .into_iter()
        .map(|(db, (path, seeds))| (db, path, seeds))
        .collect()
}

fn jqe_benchmarks(c: &mut Criterion) {
    let databases = databases();
    let questions: usize = databases.iter().map(|(_, _, seeds)| seeds.len()).sum();
    let mut group = c.benchmark_group(format!("jqe {questions} questions"));
    group.sample_size(10);
    group.bench_function(
        "generate (schema graphs included, fresh sandbox cache)",
        |b| {
            b.iter(|| {
                let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
                let mut retained = 0;
                for (db, path, seeds) in &databases {
                    let graph = SchemaGraph::build(
                        &sqlgate_engine_sqlite::read_schema(path).expect("schema"),
                        true,
                    );
                    retained +=
                        jqe::expand_database(db, path, &graph, seeds, &Options::default(), &engine)
                            .expansions
                            .len();
                }
                retained
            })
        },
    );
    group.finish();
}

criterion_group!(benches, jqe_benchmarks);
criterion_main!(benches);
