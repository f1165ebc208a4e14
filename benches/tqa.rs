//! TQA naturalness generation over the Defog set (5 databases, 135 gold queries), as
//! `sqlgate generate tqa --method naturalness` runs it: classify and lower every identifier,
//! build and verify the renamed clone, move every gold query there and check EX = 1, rewrite the
//! questions. Needs `../shared/data` and WordNet 3.0; without either it says so and measures
//! nothing.

use std::collections::BTreeMap;

use criterion::{criterion_group, criterion_main, Criterion};
use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_eval::loaders::{self, build_clone_if_stale};
use sqlgate_generate::mutate::tqa::ident;
use sqlgate_generate::mutate::tqa::naturalness::{self, Seed};
use sqlgate_generate::mutate::tqa::wordnet::WordNet;

fn naturalness_generation(c: &mut Criterion) {
    let Some(data) = sqlgate_test_support::shared_data() else {
        eprintln!("skipping: shared data absent");
        return;
    };
    let wordnet = match WordNet::open(&WordNet::locate(None)) {
        Ok(wordnet) => wordnet,
        Err(e) => {
            eprintln!("skipping: {e}");
            return;
        }
    };
    let bench = loaders::load(
        &data.join("defog/questions.csv"),
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .unwrap();
    let mut by_db: BTreeMap<&str, Vec<Seed>> = BTreeMap::new();
    for case in bench.cases.iter().filter(|c| c.feasible) {
        by_db.entry(&case.db).or_default().push(Seed {
            id: case.id.clone(),
            question: case.question.clone(),
            evidence: case.evidence.clone(),
            golds: case.gold.clone(),
        });
    }
    let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("tqa");
    group.sample_size(10);
    group.bench_function("naturalness/defog", |b| {
        b.iter(|| {
            let mut kept = 0;
            for (db, seeds) in &by_db {
                let original = data.join(format!("defog/{db}.sqlite"));
                let (schema, map, _, script) =
                    naturalness::plan(db, &original, &wordnet, &ident::lower).unwrap();
                let script_path = dir.path().join(format!("{db}.tqa.sql"));
                std::fs::write(&script_path, script).unwrap();
                let clone = dir.path().join(format!("{db}.tqa.sqlite"));
                // A fresh clone every iteration: the stamp would otherwise skip the build.
                let _ = std::fs::remove_file(&clone);
                build_clone_if_stale(
                    &original,
                    &script_path,
                    &clone,
                    &*sqlgate_engine_sqlite::files(),
                )
                .unwrap();
                map.verify(&schema, &clone, &*sqlgate_engine_sqlite::files())
                    .unwrap();
                kept += naturalness::reduce(&original, &clone, &map, seeds, &wordnet, &engine)
                    .0
                    .len();
            }
            assert_eq!(kept, 135);
        })
    });
    group.finish();
}

criterion_group!(benches, naturalness_generation);
criterion_main!(benches);
