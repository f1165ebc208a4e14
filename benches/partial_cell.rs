//! Partial-cell (PC) matching: the fast greedy of `metrics::sqlmorph` against the literal
//! cubic greedy of the spec (§7), on synthetic results of 10 columns per side.
//!
//! Data: gold has a unique integer key, four integer columns over n/10 values, four text
//! columns over n/20 names and one real column over n/4 values. The prediction is the gold,
//! shuffled, with 1 to 3 cells of **every** row redrawn, so (almost) no row matches exactly and
//! nearly the whole result goes through partial matching (the worst case for phase 2 short of
//! low-cardinality columns, see the module docs).
//! - `pc_fast/<n>`: `fine_grained` under EC-PC-IE (projection, hashing, phase 1 and 2);
//! - `pc_naive/<n>`: phase 1 and the literal greedy (rescan all pairs for every match);
//! - `pc_shared_column/100000`: issue 11's case, where every leftover row shares one value
//!   (`e = id % 7 = 0`) so materialising pairs would exceed the work cap: 100,000 rows
//!   `(id, id % 1000, 's' || id % 5000, id * 0.5, id % 7)` against the same with `c + 1` where
//!   `id % 7 = 0`, matched level by level (EXP 0.9714, not truncated).

use std::cmp::Ordering;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use sqlgate_eval::exec::{ResultSet, Value};
use sqlgate_eval::metrics::sqlmorph::{fine_grained, Options, Regime};

const COLUMNS: usize = 10;

/// SplitMix64: reproducible data without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

fn random_cell(rng: &mut Rng, column: usize, n: usize) -> Value {
    match column {
        0 => Value::Int((n + rng.below(n)) as i64),
        1..=4 => Value::Int(rng.below(n / 10 + 1) as i64),
        5..=8 => Value::Text(format!("name{}", rng.below(n / 20 + 1))),
        _ => Value::Real(rng.below(n / 4 + 1) as f64 * 0.5),
    }
}

fn dataset(n: usize) -> (ResultSet, ResultSet) {
    let mut rng = Rng(n as u64);
    let columns: Vec<String> = (0..COLUMNS).map(|c| format!("c{c}")).collect();
    let gold_rows: Vec<Vec<Value>> = (0..n)
        .map(|i| {
            let mut row = vec![Value::Int(i as i64)];
            row.extend((1..COLUMNS).map(|c| random_cell(&mut rng, c, n)));
            row
        })
        .collect();
    let mut pred_rows = gold_rows.clone();
    for i in (1..n).rev() {
        pred_rows.swap(i, rng.below(i + 1));
    }
    for row in &mut pred_rows {
        // A new key lies outside the gold range; other cells are redrawn from their domain.
        for _ in 0..1 + rng.below(3) {
            let column = rng.below(COLUMNS);
            row[column] = random_cell(&mut rng, column, n);
        }
    }
    let result = |rows| ResultSet {
        columns: columns.clone(),
        rows,
        lossy_text: false,
    };
    (result(gold_rows), result(pred_rows))
}

fn fast_exp(gold: &ResultSet, pred: &ResultSet) -> f64 {
    let regime: Regime = "EC-PC-IE".parse().expect("regime");
    fine_grained(gold, pred, regime, &Options::default())
        .expect("scores")
        .exp
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Real(x), Value::Real(y)) => x == y,
        (Value::Int(x), Value::Real(y)) | (Value::Real(y), Value::Int(x)) => *x as f64 == *y,
        (Value::Text(x), Value::Text(y)) => x == y,
        _ => false,
    }
}

/// SQLite order for the kinds this data has: numbers (by value) before text.
fn order(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let ordering = match (x, y) {
            (Value::Text(s), Value::Text(t)) => s.cmp(t),
            (Value::Text(_), _) => Ordering::Greater,
            (_, Value::Text(_)) => Ordering::Less,
            _ => number(x).total_cmp(&number(y)),
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

/// Exact for this data: every number is below 2^53.
fn number(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Real(f) => *f,
        _ => 0.0,
    }
}

/// The spec's algorithm, literally: phase 1, sorted leftovers, then the cubic greedy.
fn naive_exp(gold: &ResultSet, pred: &ResultSet) -> f64 {
    let same_row = |a: &[Value], b: &[Value]| a.iter().zip(b).all(|(x, y)| same(x, y));
    let mut pred_left = pred.rows.clone();
    let mut gold_left = Vec::new();
    let mut matched = 0usize;
    for g in &gold.rows {
        match pred_left.iter().position(|p| same_row(p, g)) {
            Some(i) => {
                pred_left.remove(i);
                matched += COLUMNS;
            }
            None => gold_left.push(g.clone()),
        }
    }
    gold_left.sort_by(|a, b| order(a, b));
    pred_left.sort_by(|a, b| order(a, b));
    while !gold_left.is_empty() && !pred_left.is_empty() {
        let mut best = (0, 0, 0);
        for (gi, g) in gold_left.iter().enumerate() {
            for (pi, p) in pred_left.iter().enumerate() {
                let equal = g.iter().zip(p).filter(|(x, y)| same(x, y)).count();
                if equal > best.0 {
                    best = (equal, gi, pi);
                }
            }
        }
        if best.0 == 0 {
            break;
        }
        matched += best.0;
        gold_left.remove(best.1);
        pred_left.remove(best.2);
    }
    matched as f64 / (pred.rows.len() * COLUMNS) as f64
}

/// Issue 11's 100,000-row case (see the module docs).
fn shared_column_dataset() -> (ResultSet, ResultSet) {
    let row = |id: i64, bump: bool| {
        vec![
            Value::Int(id),
            Value::Int(id % 1000),
            Value::Text(format!("s{}", id % 5000)),
            Value::Real(id as f64 * 0.5 + if bump { 1.0 } else { 0.0 }),
            Value::Int(id % 7),
        ]
    };
    let result = |bump: fn(i64) -> bool| ResultSet {
        columns: ["id", "a", "b", "c", "e"].map(String::from).to_vec(),
        rows: (1..=100_000).map(|id| row(id, bump(id))).collect(),
        lossy_text: false,
    };
    (result(|_| false), result(|id| id % 7 == 0))
}

fn partial_cell(c: &mut Criterion) {
    let mut shared = c.benchmark_group("pc_shared_column");
    shared.sample_size(10);
    let (gold, pred) = shared_column_dataset();
    let regime: Regime = "EC-PC-IE".parse().expect("regime");
    let scores = fine_grained(&gold, &pred, regime, &Options::default()).expect("scores");
    assert_eq!((scores.exp * 1e4).round() / 1e4, 0.9714);
    assert!(scores.note.is_none(), "not truncated");
    shared.bench_function(BenchmarkId::from_parameter(100_000), |b| {
        b.iter(|| fast_exp(&gold, &pred))
    });
    shared.finish();

    let mut fast = c.benchmark_group("pc_fast");
    fast.sample_size(10);
    for n in [1_000, 10_000, 100_000] {
        let (gold, pred) = dataset(n);
        fast.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| fast_exp(&gold, &pred))
        });
    }
    fast.finish();

    let mut naive = c.benchmark_group("pc_naive");
    naive.sample_size(10);
    for n in [100, 300, 1_000] {
        let (gold, pred) = dataset(n);
        // Both must compute the same thing for the comparison to mean anything.
        assert_eq!(naive_exp(&gold, &pred), fast_exp(&gold, &pred), "n = {n}");
        naive.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| naive_exp(&gold, &pred))
        });
    }
    naive.finish();
}

criterion_group!(benches, partial_cell);
criterion_main!(benches);
