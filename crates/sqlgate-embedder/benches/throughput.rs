//! Sentences per second of the in-process embedder (all-MiniLM-L6-v2, batches of 32, every
//! core): questions of the demo's length, embedded as the paraphrase filter embeds them.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sqlgate_base::embed::Embedder;
use sqlgate_embedder::SentenceModel;

fn bench(c: &mut Criterion) {
    let Some(dir) = sqlgate_test_support::minilm() else {
        return;
    };
    let model = SentenceModel::open(&dir).expect("the model loads");
    let texts: Vec<String> = (0..256)
        .map(|i| {
            format!(
                "How many books in the genre number {i} have a price greater than {} and were \
                 sold in a store of the city {}?",
                i % 50,
                i % 7
            )
        })
        .collect();
    let mut group = c.benchmark_group("embedder");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    group.throughput(Throughput::Elements(texts.len() as u64));
    group.bench_function("256 questions", |b| {
        b.iter(|| model.embed(&texts).expect("vectors"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
