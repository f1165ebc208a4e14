//! Predicted SQL is hostile: it never modifies a database, creates no file, and never runs
//! unbounded.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlgate::exec::{ExecErrorKind, Limits, Sandbox, Value};

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
    let sandbox = Sandbox::open(&db).unwrap();
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
    let sandbox = Sandbox::open(&build_database(dir.path())).unwrap();
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
    let sandbox = Sandbox::open(&build_database(dir.path())).unwrap();
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
    let sandbox = Sandbox::open(&build_database(dir.path())).unwrap();
    let limits = Limits {
        max_rows: 1000,
        max_bytes: 10_000,
        timeout: Some(Duration::from_secs(10)),
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
    let sandbox = Sandbox::open(&build_database(dir.path())).unwrap();
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
    let sandbox = Sandbox::open(&build_database(dir.path())).unwrap();
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
    assert!(Sandbox::open(&dir.path().join("missing.sqlite")).is_err());
    let bogus = dir.path().join("bogus.sqlite");
    std::fs::write(
        &bogus,
        b"this is not a database, it is a text file of some length......",
    )
    .unwrap();
    assert!(Sandbox::open(&bogus).is_err());
    assert_eq!(listing(dir.path()).len(), 1, "opening created a file");
}

#[test]
fn real_databases_survive_the_hostile_corpus_byte_for_byte() {
    let Some(data) = sqlgate::testing::shared_data() else {
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
        let sandbox = Sandbox::open(&db).unwrap();
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
