//! State cases' scratch copies on a 100 MB database: what one case costs above executing its
//! statements (a copy leased from the pool, its transaction rolled back and begun again), and
//! the one copy each worker makes per database and run. The target is under 5 ms per case,
//! i.e. no full copy per case. On SQLite always; on PostgreSQL and MariaDB too when their
//! servers are installed (a server of each started on 127.0.0.1 for the run, as the tests do).

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use sqlgate_eval::exec::{Engine, Limits, QueryRunner, Settings};
use sqlgate_test_support::mariadb::{self, MariaDb};
use sqlgate_test_support::postgres::PgServer;

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
    on_postgres(c);
    on_mariadb(c);
}

/// The same table on a server, through `settings`: one case (lease, statement, reset) and the
/// statement alone.
fn on_server(c: &mut Criterion, engine: &str, settings: &Settings<'_>) {
    let backend = sqlgate_engines::driver(engine)
        .expect("engine")
        .connect(settings)
        .expect("server");
    let engine_name = engine;
    let engine = Engine::new(Limits::default(), backend);
    let db = Path::new("sales");
    drop(engine.scratch(db).expect("first scratch"));
    let mut group = c.benchmark_group(format!("state on {engine_name}"));
    group.sample_size(50);
    group.measurement_time(Duration::from_secs(10));
    let mut i = 0;
    group.bench_function("case: lease, statement, reset", |b| {
        b.iter(|| {
            i += 1;
            let (mut scratch, limits) = engine.scratch(db).expect("lease");
            scratch.apply(&statement(i), &limits).expect("update");
        })
    });
    let (mut scratch, limits) = engine.scratch(db).expect("lease");
    group.bench_function("statement alone", |b| {
        b.iter(|| {
            i += 1;
            scratch.apply(&statement(i), &limits).expect("update")
        })
    });
    group.finish();
}

/// 1.2 million rows as in [`database`], on a PostgreSQL server of the run's own.
fn on_postgres(c: &mut Criterion) {
    let Some(pg) = PgServer::start() else { return };
    pg.psql("postgres", &["-c", "CREATE DATABASE sales"]);
    pg.psql(
        "sales",
        &[
            "-c",
            "CREATE TABLE sales (id integer PRIMARY KEY, day text NOT NULL, \
             store integer NOT NULL, amount double precision NOT NULL, note text); \
             INSERT INTO sales SELECT i, (date '2020-01-01' + i % 1500)::text, i % 40, \
             (i % 997) * 1.25, repeat('x', 60) FROM generate_series(1, 1200000) i",
        ],
    );
    pg.psql("sales", &["-c", "VACUUM ANALYZE sales"]);
    let size = pg.psql("sales", &["-tAc", "SELECT pg_database_size('sales') >> 20"]);
    println!("postgres database: {} MB", size.trim());
    pg.add_reader("sales");
    pg.add_scratch("sales", "sales_owner");
    let (dsn, scratch) = (pg.reader_template(), pg.scratch_template());
    let settings = Settings {
        dsn: Some(&dsn),
        scratch_dsn: Some(&scratch),
        ..Settings::default()
    };
    on_server(c, "postgres", &settings);
}

/// The same on a MariaDB server of the run's own: a case that changes rows is rolled back.
fn on_mariadb(c: &mut Criterion) {
    let Some(maria) = MariaDb::start() else {
        return;
    };
    maria.sql(
        "CREATE DATABASE sales; \
         CREATE TABLE sales.sales (id INT PRIMARY KEY, day VARCHAR(10) NOT NULL, \
           store INT NOT NULL, amount DOUBLE NOT NULL, note TEXT) ENGINE = InnoDB; \
         SET SESSION max_recursive_iterations = 2000000; \
         INSERT INTO sales.sales WITH RECURSIVE n(i) AS \
           (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200000) \
         SELECT i, DATE_FORMAT('2020-01-01' + INTERVAL (i % 1500) DAY, '%Y-%m-%d'), i % 40, \
           (i % 997) * 1.25, REPEAT('x', 60) FROM n",
    );
    maria.add_reader("sales");
    maria.add_scratch("sales");
    let (dsn, scratch) = (
        maria.template(mariadb::READER),
        maria.template(mariadb::SCRATCH),
    );
    let settings = Settings {
        dsn: Some(&dsn),
        scratch_dsn: Some(&scratch),
        ..Settings::default()
    };
    on_server(c, "mysql", &settings);
}

criterion_group!(benches, bench);
criterion_main!(benches);
