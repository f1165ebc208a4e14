//! Predicted SQL is hostile: it never modifies a database, creates no file, and never runs
//! unbounded.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlgate_engine_sqlite::Sandbox;
use sqlgate_eval::exec::Source;
use sqlgate_eval::exec::{ExecErrorKind, Limits, Value};

fn build_database(dir: &Path) -> PathBuf {
    let path = dir.join("target.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT);
         INSERT INTO t(name) VALUES ('a'), ('b'), (CAST(x'41ff42' AS TEXT));
         CREATE TABLE big(n INTEGER);
         WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 3000)
         INSERT INTO big SELECT n FROM s;",
    )
    .unwrap();
    path
}

fn listing(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

const HOSTILE: &[&str] = &[
    "DROP TABLE t",
    "DELETE FROM t",
    "UPDATE t SET name = 'x'",
    "INSERT INTO t(name) VALUES ('x')",
    "CREATE TABLE evil(a)",
    "CREATE TEMP TABLE evil AS SELECT 1",
    "CREATE INDEX evil ON t(name)",
    "ALTER TABLE t ADD COLUMN evil",
    "ATTACH DATABASE 'attached.sqlite' AS evil",
    "SELECT load_extension('libevil')",
    "PRAGMA writable_schema = ON",
    "PRAGMA journal_mode = WAL",
    "PRAGMA user_version = 7",
    "VACUUM",
    "VACUUM INTO 'copy.sqlite'",
    "REINDEX",
    "ANALYZE",
    "SELECT 1; DROP TABLE t",
    "BEGIN IMMEDIATE",
    "REPLACE INTO t(id, name) VALUES (1, 'x')",
    "WITH x AS (SELECT 1) DELETE FROM t",
];

#[test]
fn hostile_statements_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = build_database(dir.path());
    let before = std::fs::read(&db).unwrap();
    let files_before = listing(dir.path());
    let sandbox = Sandbox::open(&db, Source::Prediction).unwrap();
    for sql in HOSTILE {
        let execution = sandbox.execute(sql, &Limits::default());
        let error = execution.result.expect_err(sql);
        assert!(
            matches!(error.kind, ExecErrorKind::Denied | ExecErrorKind::Prepare),
            "{sql}: {error:?}"
        );
    }
    // The database still answers, with its rows intact.
    let rows = sandbox.execute("SELECT count(*) FROM t", &Limits::default());
    assert!(matches!(rows.result.unwrap().rows[0][0], Value::Int(3)));
    drop(sandbox);
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "database bytes changed"
    );
    assert_eq!(listing(dir.path()), files_before, "a file was created");
}

#[test]
fn writes_are_classified_as_denied() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::open(&build_database(dir.path()), Source::Prediction).unwrap();
    for sql in [
        "DROP TABLE t",
        "ATTACH DATABASE 'x' AS y",
        "SELECT load_extension('x')",
    ] {
        let error = sandbox.execute(sql, &Limits::default()).result.unwrap_err();
        assert_eq!(
            error.kind,
            ExecErrorKind::Denied,
            "{sql}: {}",
            error.message
        );
    }
}

#[test]
fn runaway_queries_stop_at_their_time_bound() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::open(&build_database(dir.path()), Source::Prediction).unwrap();
    let limits = Limits {
        timeout: Some(Duration::from_millis(300)),
        ..Limits::default()
    };
    for sql in [
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
        "SELECT count(*) FROM big AS a, big AS b, big AS c",
        "SELECT a.n FROM big AS a, big AS b ORDER BY a.n * b.n DESC LIMIT 1",
    ] {
        let execution = sandbox.execute(sql, &limits);
        let error = execution.result.unwrap_err();
        assert_eq!(
            error.kind,
            ExecErrorKind::Timeout,
            "{sql}: {}",
            error.message
        );
        assert!(
            execution.elapsed < Duration::from_secs(3),
            "{sql} ran {:?}",
            execution.elapsed
        );
    }
    // After a timeout the connection is usable again.
    assert!(sandbox.execute("SELECT 1", &limits).result.is_ok());
}

#[test]
fn huge_results_are_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::open(&build_database(dir.path()), Source::Prediction).unwrap();
    let limits = Limits {
        max_rows: 1000,
        max_bytes: 10_000,
        timeout: Some(Duration::from_secs(10)),
        max_steps: None,
    };
    let unbounded =
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r";
    assert_eq!(
        sandbox.execute(unbounded, &limits).result.unwrap_err().kind,
        ExecErrorKind::TooLarge
    );
    let wide = "SELECT printf('%.*c', 5000, 'x') FROM big";
    assert_eq!(
        sandbox.execute(wide, &limits).result.unwrap_err().kind,
        ExecErrorKind::TooLarge
    );
    let giant_value = "SELECT zeroblob(1000000000)";
    assert!(sandbox.execute(giant_value, &limits).result.is_err());
}

#[test]
fn reads_work_and_invalid_utf8_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::open(&build_database(dir.path()), Source::Prediction).unwrap();
    let result = sandbox
        .execute("SELECT id, name FROM t ORDER BY id", &Limits::default())
        .result
        .unwrap();
    assert_eq!(result.columns, ["id", "name"]);
    assert_eq!(result.rows.len(), 3);
    assert!(result.lossy_text);
    assert!(matches!(&result.rows[2][1], Value::Text(s) if s == "AB"));
    let introspection = sandbox
        .execute(
            "SELECT name FROM pragma_table_info('t')",
            &Limits::default(),
        )
        .result
        .unwrap();
    assert_eq!(introspection.rows.len(), 2);
    let recursive = sandbox.execute(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT sum(n) FROM r",
        &Limits::default(),
    );
    assert!(matches!(
        recursive.result.unwrap().rows[0][0],
        Value::Int(15)
    ));
}

#[test]
fn errors_are_classified() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::open(&build_database(dir.path()), Source::Prediction).unwrap();
    let kind = |sql| {
        sandbox
            .execute(sql, &Limits::default())
            .result
            .unwrap_err()
            .kind
    };
    assert_eq!(kind("SELEC 1"), ExecErrorKind::Prepare);
    assert_eq!(kind("SELECT nope FROM t"), ExecErrorKind::Prepare);
    assert_eq!(
        kind("SELECT abs(-9223372036854775807 - 1)"),
        ExecErrorKind::Runtime
    );
}

#[test]
fn opening_a_missing_or_bogus_file_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    assert!(Sandbox::open(&dir.path().join("missing.sqlite"), Source::Prediction).is_err());
    let bogus = dir.path().join("bogus.sqlite");
    std::fs::write(
        &bogus,
        b"this is not a database, it is a text file of some length......",
    )
    .unwrap();
    assert!(Sandbox::open(&bogus, Source::Prediction).is_err());
    assert_eq!(listing(dir.path()).len(), 1, "opening created a file");
}

#[test]
fn real_databases_survive_the_hostile_corpus_byte_for_byte() {
    let Some(data) = sqlgate_test_support::shared_data() else {
        return;
    };
    let dir = data.join("defog");
    let limits = Limits {
        timeout: Some(Duration::from_millis(500)),
        ..Limits::default()
    };
    let files_before = listing(&dir);
    for name in ["academic", "advising", "atis", "geography", "restaurants"] {
        let db = dir.join(format!("{name}.sqlite"));
        let before = std::fs::read(&db).unwrap();
        let sandbox = Sandbox::open(&db, Source::Prediction).unwrap();
        for sql in HOSTILE {
            assert!(
                sandbox.execute(sql, &limits).result.is_err(),
                "{name}: {sql}"
            );
        }
        drop(sandbox);
        assert_eq!(std::fs::read(&db).unwrap(), before, "{name} changed");
    }
    assert_eq!(
        listing(&dir),
        files_before,
        "a file was created beside the databases"
    );
}

#[test]
fn preparing_a_huge_in_list_stops_at_the_time_bound() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::open(&build_database(dir.path()), Source::Prediction).unwrap();
    let limits = Limits {
        timeout: Some(Duration::from_millis(200)),
        ..Limits::default()
    };
    let in_list = |n: usize, separator: &str| {
        let list: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        format!(
            "SELECT count(*) FROM t WHERE id IN ({})",
            list.join(separator)
        )
    };
    // 13 MB: preparing alone takes seconds, and no progress handler runs while preparing.
    let sql = in_list(1_500_000, ", ");
    assert!(sql.len() < sqlgate_eval::exec::limits::MAX_SQL_BYTES);
    let execution = sandbox.execute(&sql, &limits);
    let error = execution.result.unwrap_err();
    assert_eq!(error.kind, ExecErrorKind::Timeout, "{}", error.message);
    assert!(
        execution.elapsed < Duration::from_secs(3),
        "prepared for {:?}",
        execution.elapsed
    );
    // Without spaces SQLite's parser never looks for an interrupt: the length bound stops it.
    let execution = sandbox.execute(&in_list(3_000_000, ","), &limits);
    let error = execution.result.unwrap_err();
    assert_eq!(error.kind, ExecErrorKind::TooLarge, "{}", error.message);
    assert!(error.message.contains("bytes long"), "{}", error.message);
    assert!(sandbox.execute("SELECT 1", &limits).result.is_ok());
}

/// `n` columns of `cell` over `rows` rows of a recursive CTE.
fn shaped_query(cell: &str, columns: usize, rows: usize) -> String {
    let cells = vec![cell; columns].join(", ");
    format!(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < {rows}) \
         SELECT {cells} FROM r"
    )
}

#[test]
fn empty_and_null_cells_count_what_they_cost_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::open(&build_database(dir.path()), Source::Prediction).unwrap();
    for cell in ["''", "x''", "NULL", "0"] {
        // Exactly ten rows of 700 cells fit; eleven do not, whatever the cell holds.
        let limits = Limits {
            max_bytes: sqlgate_eval::exec::limits::result_bytes(700, 10),
            ..Limits::default()
        };
        let ten = sandbox.execute(&shaped_query(cell, 700, 10), &limits);
        assert_eq!(ten.result.unwrap().rows.len(), 10, "{cell}");
        let eleven = sandbox.execute(&shaped_query(cell, 700, 11), &limits);
        // Rows counted, not printed, should the query succeed.
        let error = eleven.result.map(|r| r.rows.len()).expect_err(cell);
        assert_eq!(error.kind, ExecErrorKind::TooLarge, "{cell}: {error:?}");
        assert!(
            error.message.contains("bytes of memory"),
            "{}",
            error.message
        );
        // The issue's shape stops at the default bound instead of growing past 5 GB.
        let huge = sandbox.execute(&shaped_query(cell, 700, 999_999), &Limits::default());
        let error = huge.result.map(|r| r.rows.len()).expect_err(cell);
        assert_eq!(error.kind, ExecErrorKind::TooLarge);
    }
}

#[test]
fn results_have_at_most_2000_columns() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::open(&build_database(dir.path()), Source::Prediction).unwrap();
    let widest = sandbox.execute(&shaped_query("NULL", 2000, 1), &Limits::default());
    assert_eq!(widest.result.unwrap().columns.len(), 2000);
    let error = sandbox
        .execute(&shaped_query("NULL", 2001, 1), &Limits::default())
        .result
        .map(|r| r.columns.len())
        .expect_err("2,001 columns");
    assert!(error.message.contains("too many columns"), "{error:?}");
}

#[test]
fn committed_wal_content_is_read_and_no_file_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wal.sqlite");
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer
        .execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE early(x); CREATE TABLE late(x); INSERT INTO late VALUES (7);",
        )
        .unwrap();
    // The rows live only in `wal.sqlite-wal` while the writer is open.
    let sandbox = Sandbox::open(&db, Source::Prediction).unwrap();
    let rows = sandbox
        .execute("SELECT x FROM late", &Limits::default())
        .result
        .unwrap();
    assert!(matches!(rows.rows[..], [ref row] if matches!(row[0], Value::Int(7))));
    drop(sandbox);
    drop(writer);
    // Closed cleanly, the WAL is checkpointed and removed: reading it creates no `-wal`/`-shm`.
    let files = listing(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let sandbox = Sandbox::open(&db, Source::Prediction).unwrap();
    let rows = sandbox
        .execute("SELECT x FROM late", &Limits::default())
        .result
        .unwrap();
    assert_eq!(rows.rows.len(), 1);
    drop(sandbox);
    assert_eq!(listing(dir.path()), files, "a file was created");
}

#[test]
fn a_hot_journal_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live.sqlite");
    let writer = rusqlite::Connection::open(&live).unwrap();
    writer
        .execute_batch(
            "CREATE TABLE t(x); INSERT INTO t VALUES (1);
             PRAGMA cache_size = 1; BEGIN;
             WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 2000)
             INSERT INTO t SELECT zeroblob(1000) FROM r;",
        )
        .unwrap();
    // Copying the files mid-transaction leaves what a writer that crashed leaves: a database
    // holding uncommitted pages and the journal that undoes them.
    let crashed = dir.path().join("crashed");
    std::fs::create_dir(&crashed).unwrap();
    let db = crashed.join("db.sqlite");
    std::fs::copy(&live, &db).unwrap();
    std::fs::copy(
        dir.path().join("live.sqlite-journal"),
        crashed.join("db.sqlite-journal"),
    )
    .unwrap();
    drop(writer);
    let before = std::fs::read(&db).unwrap();
    let error = Sandbox::open(&db, Source::Prediction)
        .err()
        .expect("a hot journal must be refused");
    assert!(
        error.message.contains("db.sqlite-journal"),
        "{}",
        error.message
    );
    assert!(error.message.contains("hot journal"), "{}", error.message);
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "the database was changed"
    );
}

#[test]
fn an_empty_file_is_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.sqlite");
    std::fs::write(&empty, b"").unwrap();
    let error = Sandbox::open(&empty, Source::Prediction)
        .err()
        .expect("0 bytes must be refused");
    assert!(
        error.message.contains("empty (0 bytes)"),
        "{}",
        error.message
    );
}

#[test]
fn a_database_changed_during_the_run_fails_closed() {
    use sqlgate_eval::exec::Engine;
    use sqlgate_eval::exec::QueryRunner;
    let dir = tempfile::tempdir().unwrap();
    let db = build_database(dir.path());
    let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
    let count = "SELECT count(*) FROM t";
    assert!(engine.gold(&db, count).result.is_ok());
    assert!(engine.pred(&db, count).result.is_ok());
    // Another process commits: later reads would compare two states of the database.
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer
        .execute("INSERT INTO t(name) VALUES ('new')", [])
        .unwrap();
    // The same query is not read again (a run executes each once); any other read fails.
    assert!(engine.pred(&db, count).result.is_ok());
    let error = engine
        .pred(&db, "SELECT count(*) FROM t WHERE id > 0")
        .result
        .unwrap_err();
    assert!(
        error.message.contains("changed during the run"),
        "{}",
        error.message
    );
    assert!(error.message.contains("target.sqlite"), "{}", error.message);
    // A new run reads the new state.
    let fresh = Engine::new(Limits::default(), sqlgate_engine_sqlite::files())
        .pred(&db, count)
        .result
        .unwrap();
    assert!(matches!(fresh.rows[0][0], Value::Int(4)));
}

#[test]
fn random_result_shapes_stop_exactly_at_the_memory_bound() {
    use rand::{RngExt, SeedableRng};
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::open(&build_database(dir.path()), Source::Prediction).unwrap();
    // Each cell and the heap bytes its value holds besides itself.
    let cells = [
        ("NULL", 0),
        ("''", 0),
        ("x''", 0),
        ("0", 0),
        ("1.5", 0),
        ("'abc'", 3),
        ("x'0102'", 2),
        ("printf('%.*c', 100, 'x')", 100),
    ];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    for _ in 0..40 {
        let width = rng.random_range(1..=60usize);
        let rows = rng.random_range(1..=200usize);
        let chosen: Vec<(&str, usize)> = (0..width)
            .map(|_| cells[rng.random_range(0..cells.len())])
            .collect();
        let heap: usize = chosen.iter().map(|(_, bytes)| bytes).sum();
        let needed = sqlgate_eval::exec::limits::result_bytes(width, rows) + rows * heap;
        let select: Vec<&str> = chosen.iter().map(|(cell, _)| *cell).collect();
        let sql = format!(
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < {rows}) \
             SELECT {} FROM r",
            select.join(", ")
        );
        let with_bound = |max_bytes| Limits {
            max_bytes,
            ..Limits::default()
        };
        let fits = sandbox.execute(&sql, &with_bound(needed));
        assert_eq!(fits.result.map(|r| r.rows.len()), Ok(rows), "{sql}");
        let short = sandbox.execute(&sql, &with_bound(needed - 1));
        let error = short.result.map(|r| r.rows.len()).expect_err(&sql);
        assert_eq!(error.kind, ExecErrorKind::TooLarge, "{sql}");
    }
}
