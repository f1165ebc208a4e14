//! Structural metrics over Spider dev (1,034 pairs of C3's predictions, schema-only databases
//! of `../shared/data`): Spider exact set match plus Enhanced Tree Matching, cold (fresh
//! evaluators: tables.json and schemas read inside the measurement; the sandboxed connections
//! are per thread and stay open, as within one process) and each alone. The reference ETM program needs about 20 s for such a file. Without the shared data
//! the benchmark measures ETM on the embedded demo.

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_eval::metrics::{esm, etm};

struct Pair {
    gold: String,
    pred: String,
    db: String,
    db_file: PathBuf,
}

fn spider_pairs(data: &Path) -> Vec<Pair> {
    let spider = data.join("spider-dev");
    let gold = std::fs::read_to_string(spider.join("gold.txt")).expect("gold");
    let preds = std::fs::read_to_string(spider.join("predictions/C3.txt")).expect("predictions");
    gold.lines()
        .zip(preds.lines())
        .map(|(gold, pred)| {
            let (sql, db) = gold.split_once('\t').expect("gold line");
            let db = db.trim().to_string();
            Pair {
                gold: sql.to_string(),
                pred: pred.to_string(),
                db_file: spider
                    .join("schema-db")
                    .join(&db)
                    .join(format!("{db}.sqlite")),
                db,
            }
        })
        .collect()
}

fn demo_pairs() -> Vec<Pair> {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("benchmarks/demo");
    let bench = sqlgate_eval::loaders::load(
        &demo.join("suite.toml"),
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .expect("demo");
    bench
        .cases
        .iter()
        .filter(|c| c.feasible)
        .map(|case| Pair {
            gold: case.gold[0].clone(),
            pred: case.gold[0].clone(),
            db: case.db.clone(),
            db_file: bench.db_files(case, false).expect("database").remove(0),
        })
        .collect()
}

fn run_etm(pairs: &[Pair]) -> usize {
    let evaluator = etm::Evaluator::new(false);
    let runner = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
    pairs
        .iter()
        .filter(|p| {
            evaluator
                .score(&p.gold, &p.pred, &p.db_file, &runner)
                .is_ok_and(|v| v.etm)
        })
        .count()
}

fn run_esm(evaluator: &esm::Evaluator, pairs: &[Pair]) -> usize {
    pairs
        .iter()
        .filter(|p| {
            evaluator
                .score(&p.gold, &p.pred, &p.db)
                .is_ok_and(|s| s.esm)
        })
        .count()
}

fn structural(c: &mut Criterion) {
    let data = sqlgate_test_support::shared_data();
    let pairs = data.as_deref().map_or_else(demo_pairs, spider_pairs);
    let mut group = c.benchmark_group(format!("structural {} pairs", pairs.len()));
    group.sample_size(10);
    group.bench_function("etm (cold)", |b| b.iter(|| run_etm(&pairs)));
    if let Some(data) = &data {
        let spider = data.join("spider-dev");
        let cold_esm = || {
            esm::Evaluator::with_database_dir(
                spider.join("tables.json"),
                spider.join("schema-db"),
                sqlgate_engine_sqlite::files(),
            )
            .expect("tables.json")
        };
        group.bench_function("esm (cold)", |b| b.iter(|| run_esm(&cold_esm(), &pairs)));
        group.bench_function("esm + etm (cold)", |b| {
            b.iter(|| run_esm(&cold_esm(), &pairs) + run_etm(&pairs))
        });
    }
    group.finish();
}

criterion_group!(benches, structural);
criterion_main!(benches);
