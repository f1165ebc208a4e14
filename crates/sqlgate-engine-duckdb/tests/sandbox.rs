//! The DuckDB sandbox against a real DuckDB: hostile SQL refused with the file untouched,
//! time, row and byte bounds, values, open errors, work counts and the writer.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{backend, fixture, open, run};
use sqlgate_engine::{Driver, ExecErrorKind, Feature, Limits, Open, Source, Value};
use sqlgate_engine_duckdb::DRIVER;

const TABLE: &str = "CREATE TABLE t (x BIGINT PRIMARY KEY, name VARCHAR NOT NULL); \
                     INSERT INTO t SELECT range, 'n' || range FROM range(1000);";

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeSet<(String, Vec<u8>)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let bytes = if path.is_file() {
                std::fs::read(&path).unwrap()
            } else {
                Vec::new()
            };
            (path.display().to_string(), bytes)
        })
        .collect()
}

#[test]
fn hostile_statements_are_refused_and_leave_the_file_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path(), "shop.duckdb", TABLE);
    let out = dir.path().join("out");
    let out = out.display();
    let hostile = [
        "INSERT INTO t VALUES (5000, 'x')".to_string(),
        "UPDATE t SET name = 'y'".into(),
        "DELETE FROM t".into(),
        "CREATE TABLE u (x INTEGER)".into(),
        "CREATE TEMP TABLE u AS SELECT 1".into(),
        "DROP TABLE t".into(),
        "ALTER TABLE t ADD COLUMN y INTEGER".into(),
        format!("ATTACH '{out}.duckdb' AS other"),
        format!("COPY t TO '{out}.csv'"),
        format!("COPY (SELECT 1) TO '{out}.parquet'"),
        "SELECT * FROM read_csv('/etc/passwd')".into(),
        "SELECT * FROM read_text('/etc/passwd')".into(),
        "SELECT * FROM glob('/etc/*')".into(),
        "INSTALL sqlite".into(),
        "LOAD sqlite".into(),
        "SET threads = 4".into(),
        "SET enable_external_access = true".into(),
        "RESET lock_configuration".into(),
        "PRAGMA enable_profiling".into(),
        "CHECKPOINT".into(),
        "VACUUM".into(),
        format!("EXPORT DATABASE '{out}'"),
        "BEGIN TRANSACTION".into(),
        "SELECT 1; SELECT 2".into(),
        "SELECT 1; DROP TABLE t".into(),
        "WITH a AS (SELECT 1) INSERT INTO t SELECT 5001, 'x' FROM a".into(),
        "-- a comment\nDROP TABLE t".into(),
    ];
    let before = snapshot(dir.path());
    let mut conn = open(&db, Source::Prediction);
    let mut refused = 0;
    for sql in &hostile {
        let error = run(conn.as_mut(), sql, &Limits::default()).unwrap_err();
        assert_eq!(error.kind, ExecErrorKind::Denied, "{sql}: {error:?}");
        refused += 1;
    }
    assert_eq!(refused, hostile.len());
    // Parquet is not compiled in, and no extension may be installed or loaded to read it;
    // `getenv` is the DuckDB shell's only.
    for sql in ["FROM read_parquet('/etc/passwd')", "SELECT getenv('HOME')"] {
        let error = run(conn.as_mut(), sql, &Limits::default()).unwrap_err();
        assert_eq!(error.kind, ExecErrorKind::Prepare, "{sql}: {error:?}");
    }
    // The data is all there, and the connection still answers.
    let count = run(conn.as_mut(), "SELECT count(*) FROM t", &Limits::default()).unwrap();
    assert_eq!(count.rows, vec![vec![Value::Int(1000)]]);
    // The work count refuses what execution refuses.
    for sql in &hostile {
        let error = conn.cost(sql, &Limits::default()).unwrap_err();
        assert_eq!(
            error.kind,
            ExecErrorKind::Denied,
            "cost of {sql}: {error:?}"
        );
    }
    drop(conn);
    assert_eq!(snapshot(dir.path()), before, "a file changed or appeared");
}

#[test]
fn a_long_query_is_interrupted_at_its_time_bound() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path(), "t.duckdb", TABLE);
    let mut conn = open(&db, Source::Prediction);
    let limits = Limits {
        timeout: Some(Duration::from_millis(500)),
        ..Limits::default()
    };
    let start = Instant::now();
    let error = run(
        conn.as_mut(),
        "SELECT sum(a.range * b.range) FROM range(1000000000) a, range(1000000000) b",
        &limits,
    )
    .unwrap_err();
    let took = start.elapsed();
    assert_eq!(error.kind, ExecErrorKind::Timeout, "{error:?}");
    assert!(took < Duration::from_secs(5), "stopped after {took:?}");
    // The connection runs the next query.
    assert!(run(conn.as_mut(), "SELECT 1", &limits).is_ok());
}

#[test]
fn results_stop_at_the_row_and_byte_bounds_while_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path(), "t.duckdb", TABLE);
    let mut conn = open(&db, Source::Prediction);
    let rows = Limits {
        max_rows: 10,
        ..Limits::default()
    };
    let error = run(conn.as_mut(), "SELECT * FROM t", &rows).unwrap_err();
    assert_eq!(error.kind, ExecErrorKind::TooLarge);
    assert_eq!(error.message, "more than 10 rows");
    let ten = run(conn.as_mut(), "SELECT * FROM t LIMIT 10", &rows).unwrap();
    assert_eq!(ten.rows.len(), 10);
    // A result far too large to hold stops at once: it is streamed, not built first.
    let start = Instant::now();
    let error = run(conn.as_mut(), "SELECT * FROM range(100000000000)", &rows).unwrap_err();
    assert_eq!(error.kind, ExecErrorKind::TooLarge);
    assert!(start.elapsed() < Duration::from_secs(5));
    let bytes = Limits {
        max_bytes: 100_000,
        ..Limits::default()
    };
    let error = run(
        conn.as_mut(),
        "SELECT repeat('x', 1000) FROM range(1000)",
        &bytes,
    )
    .unwrap_err();
    assert_eq!(error.kind, ExecErrorKind::TooLarge);
    assert_eq!(
        error.message,
        "the result takes more than 100000 bytes of memory"
    );
    let error = run(conn.as_mut(), "SELECT repeat('x', 200000)", &bytes).unwrap_err();
    assert_eq!(error.kind, ExecErrorKind::TooLarge);
}

#[test]
fn values_follow_the_postgresql_engine_conventions() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path(), "t.duckdb", TABLE);
    let mut conn = open(&db, Source::Prediction);
    let text = |s: &str| Value::Text(s.to_string());
    let cases: Vec<(&str, Value)> = vec![
        ("SELECT 7::TINYINT", Value::Int(7)),
        ("SELECT -7::SMALLINT", Value::Int(-7)),
        ("SELECT 7::INTEGER", Value::Int(7)),
        ("SELECT 9223372036854775807::BIGINT", Value::Int(i64::MAX)),
        ("SELECT 200::UTINYINT", Value::Int(200)),
        ("SELECT 4000000000::UINTEGER", Value::Int(4_000_000_000)),
        ("SELECT 5::UBIGINT", Value::Int(5)),
        (
            "SELECT 18446744073709551615::UBIGINT",
            Value::Real(18446744073709551615.0),
        ),
        ("SELECT 12::HUGEINT", Value::Int(12)),
        (
            "SELECT 170141183460469231731687303715884105727::HUGEINT",
            Value::Real(1.7014118346046923e38),
        ),
        ("SELECT 3::UHUGEINT", Value::Int(3)),
        ("SELECT 1.5::DOUBLE", Value::Real(1.5)),
        ("SELECT 1.1::FLOAT", Value::Real(1.1)),
        ("SELECT 12345.678::DECIMAL(10,3)", Value::Real(12345.678)),
        ("SELECT 0.1::DECIMAL(38,20)", Value::Real(0.1)),
        ("SELECT avg(x) FROM t", Value::Real(499.5)),
        ("SELECT sum(x) FROM t", Value::Int(499_500)),
        ("SELECT true", Value::Int(1)),
        ("SELECT false", Value::Int(0)),
        ("SELECT 'héllo'", text("héllo")),
        ("SELECT '\\x00ab'::BLOB", Value::Blob(b"\0ab".to_vec())),
        ("SELECT 'ab'::BLOB", Value::Blob(b"ab".to_vec())),
        ("SELECT NULL", Value::Null),
        ("SELECT NULL::INTEGER", Value::Null),
        ("SELECT NULL, 1", Value::Null),
        ("SELECT DATE '2020-01-05'", text("2020-01-05")),
        ("SELECT DATE '1969-12-31'", text("1969-12-31")),
        ("SELECT TIME '10:00:00.5'", text("10:00:00.500000")),
        ("SELECT TIME '09:05:00'", text("09:05:00")),
        (
            "SELECT TIMESTAMP '2020-01-05 10:00:00'",
            text("2020-01-05 10:00:00"),
        ),
        (
            "SELECT TIMESTAMP '2020-01-05 10:00:00.25'",
            text("2020-01-05 10:00:00.250000"),
        ),
        (
            "SELECT '2020-01-05 10:00:00'::TIMESTAMP_S",
            text("2020-01-05 10:00:00"),
        ),
        (
            "SELECT '2020-01-05 10:00:00.123'::TIMESTAMP_MS",
            text("2020-01-05 10:00:00.123000"),
        ),
        (
            "SELECT '2020-01-05 10:00:00.123456'::TIMESTAMP_NS",
            text("2020-01-05 10:00:00.123456"),
        ),
        (
            "SELECT TIMESTAMPTZ '2020-01-05 10:00:00+00'",
            text("2020-01-05 10:00:00+00:00"),
        ),
        ("SELECT INTERVAL '1 day 2 hours'", text("1 day, 2:00:00")),
        ("SELECT INTERVAL '1 month'", text("30 days, 0:00:00")),
        (
            "SELECT DATE '2020-03-01' - DATE '2020-02-01'",
            Value::Int(29),
        ),
        (
            "SELECT '5b1c2d3e-0000-4000-8000-000000000001'::UUID",
            text("5b1c2d3e-0000-4000-8000-000000000001"),
        ),
        ("SELECT [1, 2, NULL]", text("[1, 2, NULL]")),
        ("SELECT ['a', 'b']", text("[a, b]")),
        ("SELECT [1.5, 2]::DOUBLE[]", text("[1.5, 2.0]")),
        ("SELECT {'a': 1, 'b': 'x'}", text("{'a': 1, 'b': x}")),
        ("SELECT MAP {'k': 1, 'l': 2}", text("{k=1, l=2}")),
        ("SELECT [DATE '2020-01-05']", text("[2020-01-05]")),
        ("SELECT [1, 2]::INTEGER[2]", text("[1, 2]")),
        ("SELECT 'b'::ENUM('a', 'b')", text("b")),
    ];
    let mut checked = 0;
    for (sql, expected) in &cases {
        let result =
            run(conn.as_mut(), sql, &Limits::default()).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        let got = &result.rows[0][0];
        let same = match (got, expected) {
            (Value::Null, Value::Null) => true,
            (Value::Real(a), Value::Real(b)) => a == b,
            _ => got == expected && std::mem::discriminant(got) == std::mem::discriminant(expected),
        };
        assert!(same, "{sql}: got {got:?}, expected {expected:?}");
        checked += 1;
    }
    assert_eq!(checked, cases.len());
    // Column names are the query's.
    let named = run(
        conn.as_mut(),
        "SELECT x AS id, name FROM t LIMIT 1",
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(named.columns, ["id", "name"]);
    // A type sqlgate does not read is refused, naming it, rather than guessed at.
    let error = run(
        conn.as_mut(),
        "SELECT union_value(k := 1)",
        &Limits::default(),
    )
    .unwrap_err();
    assert_eq!(error.kind, ExecErrorKind::Runtime);
    assert!(
        error.message.contains("cast the column"),
        "{}",
        error.message
    );
}

#[test]
fn opening_what_is_not_a_duckdb_file_fails_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let backend = backend();
    let how = Open::for_source(Source::Prediction);
    let missing = dir.path().join("missing.duckdb");
    let error = backend.open(&missing, how).err().unwrap();
    assert_eq!(error.kind, ExecErrorKind::Unavailable, "{error:?}");
    assert!(
        error.message.contains(&missing.display().to_string()),
        "{}",
        error.message
    );
    assert!(!missing.exists(), "opening created the file");
    for (name, bytes) in [
        (
            "text.duckdb",
            b"not a database at all, just text\n".to_vec(),
        ),
        ("empty.duckdb", Vec::new()),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let error = backend.open(&path, how).err().unwrap();
        assert_eq!(error.kind, ExecErrorKind::Runtime, "{name}: {error:?}");
        assert!(
            error.message.contains(&path.display().to_string()),
            "{}",
            error.message
        );
        assert!(
            error.message.contains("not a DuckDB database"),
            "{}",
            error.message
        );
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }
    let sqlite = dir.path().join("real.sqlite");
    rusqlite::Connection::open(&sqlite)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let error = backend.open(&sqlite, how).err().unwrap();
    assert_eq!(error.kind, ExecErrorKind::Runtime, "{error:?}");
    // A folder is no database either.
    assert!(backend.open(dir.path(), how).is_err());
    // Reversing unordered rows is not something DuckDB does.
    assert!(!DRIVER.supports(Feature::ReverseUnordered));
    let db = fixture(dir.path(), "t.duckdb", TABLE);
    let error = backend
        .open(
            &db,
            Open {
                source: Source::Gold,
                reverse_unordered: true,
            },
        )
        .err()
        .unwrap();
    assert!(
        error.message.contains("engine `duckdb` does not support"),
        "{}",
        error.message
    );
}

#[test]
fn statements_that_do_not_prepare_are_prepare_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path(), "t.duckdb", TABLE);
    let mut conn = open(&db, Source::Prediction);
    for sql in [
        "SELECT nope FROM t",
        "SELECT * FROM missing",
        "SELECT FROM WHERE",
        "SELECT $1",
    ] {
        let error = run(conn.as_mut(), sql, &Limits::default()).unwrap_err();
        assert_eq!(error.kind, ExecErrorKind::Prepare, "{sql}: {error:?}");
    }
    let error = run(
        conn.as_mut(),
        "SELECT 1 / 0::INTEGER, 'a'::INTEGER",
        &Limits::default(),
    )
    .unwrap_err();
    assert_eq!(error.kind, ExecErrorKind::Runtime, "{error:?}");
}

#[test]
fn the_work_count_is_the_planned_cardinalities_and_repeats_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path(), "t.duckdb", TABLE);
    let mut conn = open(&db, Source::Prediction);
    let cost = |conn: &mut Box<dyn sqlgate_engine::Connection>, sql: &str| {
        conn.cost(sql, &Limits::default())
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
    };
    let scan = cost(&mut conn, "SELECT * FROM t");
    assert!(scan >= 1000.0, "{scan}");
    let join = cost(&mut conn, "SELECT * FROM t a JOIN t b ON a.x = b.x");
    assert!(join > scan, "{join} <= {scan}");
    for sql in ["SELECT * FROM t", "SELECT * FROM t a JOIN t b ON a.x = b.x"] {
        let again = open(&db, Source::Prediction)
            .cost(sql, &Limits::default())
            .unwrap();
        assert_eq!(cost(&mut conn, sql), again, "{sql}");
    }
    // EXPLAIN itself is what the driver says for ETM.
    assert_eq!(DRIVER.explain("SELECT 1").unwrap(), "EXPLAIN SELECT 1");
}

#[test]
fn the_writer_creates_only_new_files_and_removes_an_unfinished_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path(), "t.duckdb", TABLE);
    let before = std::fs::read(&db).unwrap();
    let error = backend().create(&db).err().unwrap();
    assert_eq!(error.kind, ExecErrorKind::Denied);
    assert!(error.message.contains("exists"), "{}", error.message);
    assert_eq!(std::fs::read(&db).unwrap(), before);
    let unfinished = dir.path().join("half.duckdb");
    let mut writer = backend().create(&unfinished).unwrap();
    writer.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
    drop(writer);
    assert!(
        !unfinished.exists(),
        "an unfinished database was left behind"
    );
    assert!(!dir.path().join("half.duckdb.wal").exists());
}

/// A refused row (a duplicate key, a NULL in a NOT NULL column, a value its column cannot
/// hold) fails as `Runtime` and leaves its whole batch out, and the database takes rows again;
/// a missing table is no refused row. A reopened file is the caller's: an unfinished writer
/// leaves it.
#[test]
fn a_refused_row_is_a_runtime_error_and_leaves_its_batch_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new.duckdb");
    let mut writer = backend().create(&db).unwrap();
    writer
        .execute_batch("CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR NOT NULL, n INTEGER)")
        .unwrap();
    let columns = ["id".to_string(), "name".to_string(), "n".to_string()];
    let row = |id: i64, name: Value, n: Value| vec![Value::Int(id), name, n];
    let text = |t: &str| Value::Text(t.into());
    writer
        .insert("t", &columns, &[row(1, text("a"), Value::Int(1))])
        .unwrap();
    for refused in [
        vec![
            row(2, text("b"), Value::Null),
            row(1, text("dup"), Value::Null),
        ],
        vec![row(3, Value::Null, Value::Null)],
        vec![row(4, text("d"), text("not a number"))],
        vec![row(5, text("e"), Value::Int(1 << 40))],
    ] {
        let error = writer.insert("t", &columns, &refused).unwrap_err();
        assert_eq!(error.kind, ExecErrorKind::Runtime, "{}", error.message);
    }
    writer
        .insert("t", &columns, &[row(2, text("b"), Value::Null)])
        .unwrap();
    let missing = writer
        .insert("nope", &columns, &[row(9, text("x"), Value::Null)])
        .unwrap_err();
    assert_eq!(
        missing.kind,
        ExecErrorKind::Unavailable,
        "{}",
        missing.message
    );
    writer.finish().unwrap();
    let mut conn = open(&db, Source::Gold);
    let ids = run(
        conn.as_mut(),
        "SELECT id FROM t ORDER BY id",
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(ids.rows, vec![vec![Value::Int(1)], vec![Value::Int(2)]]);
    drop(conn);
    let mut reopened = backend().reopen(&db).unwrap();
    reopened
        .execute_batch("CREATE TABLE u (x INTEGER)")
        .unwrap();
    drop(reopened);
    assert!(db.is_file(), "a reopened file was removed");
}

#[test]
fn gold_and_prediction_connections_keep_no_temporary_files_beside_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path(), "t.duckdb", TABLE);
    let before = snapshot(dir.path());
    for source in [Source::Gold, Source::Prediction] {
        let mut conn = open(&db, source);
        let sorted = run(
            conn.as_mut(),
            "SELECT * FROM t ORDER BY name DESC",
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(sorted.rows.len(), 1000);
    }
    assert_eq!(snapshot(dir.path()), before);
}
