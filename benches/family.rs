//! Family summaries (`scoring::family`) of a paraphrase-sized family: 1000 seeds with 10
//! variants each, every case with a gold shape, schema errors, retrieval rates and samples, so
//! every part runs (Pass@K, QVT, NER, and the breakdowns' 1000-resample bootstraps).

use std::collections::BTreeMap;

use criterion::{criterion_group, criterion_main, Criterion};
use sqlgate_eval::metrics::ex::Verdict;
use sqlgate_eval::metrics::retrieval::Retrieval;
use sqlgate_eval::metrics::sql2nl::{QueryShape, SchemaErrors};
use sqlgate_eval::scoring::{family, CaseScore, Robustness};

const SEEDS: usize = 1000;
const VARIANTS: usize = 10;

fn score(id: String, tags: BTreeMap<String, String>, correct: bool, at: usize) -> CaseScore {
    CaseScore {
        id,
        db: "db".to_string(),
        tags,
        feasible: true,
        verdict: if correct {
            Verdict::Correct
        } else {
            Verdict::Incorrect
        },
        ex: f64::from(u8::from(correct)),
        exact: None,
        error: None,
        failed_on: None,
        diagnostics: Vec::new(),
        sql: Some("SELECT 1".to_string()),
        cleaned: false,
        fine: BTreeMap::new(),
        esm: None,
        esm_detail: None,
        etm: None,
        etm_detail: None,
        soft_f1: None,
        hardness: None,
        cs: Some(0.6 + (at % 40) as f64 / 100.0),
        robustness: Some(Robustness {
            shape: Some(QueryShape {
                joins: at % 4,
                group_by: at.is_multiple_of(3),
                order_by: at.is_multiple_of(5),
                having: at.is_multiple_of(7),
                nested: at.is_multiple_of(11),
            }),
            schema_errors: Some(SchemaErrors {
                extra_columns: usize::from(!correct),
                missing_tables: at % 2,
                ..SchemaErrors::default()
            }),
            retrieval: Some(Retrieval {
                false_positive_rate: Some(0.25),
                recall: Some(0.75),
            }),
            samples: Some((10, (at % 11) as u64)),
        }),
        efficiency: None,
        metrics: BTreeMap::new(),
    }
}

fn cases() -> Vec<CaseScore> {
    let mut cases = Vec::new();
    for seed in 0..SEEDS {
        let id = format!("q{seed}");
        cases.push(score(id.clone(), BTreeMap::new(), seed % 4 != 0, seed));
        for variant in 0..VARIANTS {
            let tags = BTreeMap::from([
                ("family".to_string(), "para".to_string()),
                ("seed".to_string(), id.clone()),
            ]);
            let correct = (seed + variant) % 3 != 0;
            cases.push(score(format!("{id}::para::{variant}"), tags, correct, seed));
        }
    }
    cases
}

fn family_benchmarks(c: &mut Criterion) {
    let cases = cases();
    let mut group = c.benchmark_group("family");
    group.sample_size(10);
    group.bench_function(format!("summaries of {} cases", cases.len()), |b| {
        b.iter(|| family::family_summaries(&cases.iter().collect::<Vec<_>>()))
    });
    group.finish();
}

criterion_group!(benches, family_benchmarks);
criterion_main!(benches);
