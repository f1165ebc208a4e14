//! State cases' scratch copies on a 100 MB SQLite database: what one case costs above executing
//! its statements (a copy leased from the pool, its transaction rolled back and begun again),
//! and the one copy each worker makes per database and run. The target is under 5 ms per case,
//! i.e. no full copy per case.

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use sqlgate_eval::exec::{Engine, Limits, QueryRunner};

/// A database of over 100 MiB (1.2 million rows of ~90 bytes), built once.
fn database() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("state_bench");
    std::fs::create_dir_all(&dir).expect("folder");
    let db = dir.join("sales.sqlite");
    let built = std::fs::metadata(&db).is_ok_and(|m| m.len() > 100 << 20);
    if !built {
        let _ = std::fs::remove_file(&db);
        let conn = rusqlite::Connection::open(&db).expect("database");
        conn.execute_batch(
            "CREATE TABLE sales (id INTEGER PRIMARY KEY, day TEXT NOT NULL, store INTEGER NOT NULL,
                                 amount REAL NOT NULL, note TEXT);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200000)
             INSERT INTO sales SELECT i, date('2020-01-01', '+' || (i % 1500) || ' days'), i % 40,
                                      (i % 997) * 1.25, printf('%.60c', 'x') FROM n;",
        )
        .expect("rows");
    }
    db
}

/// A state case's statement: 100 rows updated by key.
fn statement(i: u64) -> String {
    let from = 1 + (i * 7919) % 1_000_000;
    format!(
        "UPDATE sales SET amount = amount * 1.1 WHERE id BETWEEN {from} AND {}",
        from + 99
    )
}

fn bench(c: &mut Criterion) {
    let db = database();
    let size = std::fs::metadata(&db).expect("size").len();
    println!("database: {} MB", size >> 20);
    let limits = Limits::default();
    let mut group = c.benchmark_group("state");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("copy (once per database and worker)", |b| {
        let backend = sqlgate_engine_sqlite::files();
        b.iter(|| backend.scratch(&db).expect("copy"))
    });
    let engine = Engine::new(limits, sqlgate_engine_sqlite::files());
    drop(engine.scratch(&db).expect("first copy"));
    let mut i = 0;
    group.sample_size(100);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("case: lease, statement, reset", |b| {
        b.iter(|| {
            i += 1;
            let (mut scratch, limits) = engine.scratch(&db).expect("lease");
            scratch.apply(&statement(i), &limits).expect("update");
        })
    });
    let (mut scratch, limits) = engine.scratch(&db).expect("lease");
    group.bench_function("statement alone", |b| {
        b.iter(|| {
            i += 1;
            scratch.apply(&statement(i), &limits).expect("update")
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
