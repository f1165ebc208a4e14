//! The native suite: TOML manifest, JSONL cases, databases built from scripts.

use super::*;
use crate::loaders::GoldFormat;

const MANIFEST: &str = r#"name = "demo"
cases = "cases.jsonl"
db_dir = "build"

[databases.bookshop]
scripts = ["bookshop/schema.sql", "bookshop/data.sql"]
"#;

const CASES: &str = r#"{"id": "q01", "db": "bookshop", "question": "How many books?", "gold": "SELECT count(*) FROM book", "tags": {"category": "count"}}

{"id": "q02", "db": "bookshop", "question": "Titles?", "evidence": "title is a column", "gold": ["SELECT title FROM book", "SELECT DISTINCT title FROM book"], "type": "feasible"}
{"id": "q03", "db": "bookshop", "question": "Who is the best author?", "type": "infeasible"}
"#;

const SCHEMA: &str = "CREATE TABLE book (id INTEGER PRIMARY KEY, title TEXT);\n";
const DATA: &str = "INSERT INTO book VALUES (1, 'Dune');\nINSERT INTO book VALUES (2, 'Emma');\n";

/// A suite folder with the manifest, cases and scripts above.
fn suite() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let manifest = write(dir.path(), "suite.toml", MANIFEST);
    write(dir.path(), "cases.jsonl", CASES);
    write(dir.path(), "bookshop/schema.sql", SCHEMA);
    write(dir.path(), "bookshop/data.sql", DATA);
    (dir, manifest)
}

fn count_books(db: &Path) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT count(*) FROM book", [], |row| row.get(0))
        .unwrap()
}

/// Files in a folder, by name.
fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn native_suite_loads_cases_and_builds_its_database() {
    let (dir, manifest) = suite();
    let bench = load_default(&manifest).unwrap();
    assert_eq!(bench.format, GoldFormat::Native);
    assert_eq!(bench.name, "demo");
    assert_eq!(bench.db_dir, dir.path().join("build"));
    let [q1, q2, q3] = &bench.cases[..] else {
        panic!("expected 3 cases, got {}", bench.cases.len());
    };
    assert_eq!(q1.id, "q01");
    assert_eq!(q1.gold, ["SELECT count(*) FROM book"]);
    assert_eq!(q1.tags["category"], "count");
    assert_eq!(q1.evidence, None);
    assert_eq!(q1.source.file, dir.path().join("cases.jsonl"));
    assert_eq!((q1.source.record, q1.source.line), (0, Some(1)));
    assert_eq!(q2.gold.len(), 2);
    assert_eq!(q2.evidence.as_deref(), Some("title is a column"));
    assert!(q2.feasible);
    // The blank line 2 is skipped but counted.
    assert_eq!((q2.source.record, q2.source.line), (1, Some(3)));
    assert!(!q3.feasible);
    assert!(q3.gold.is_empty());
    let db = dir.path().join("build/bookshop.sqlite");
    assert_eq!(bench.db_files(q1, true).unwrap(), std::slice::from_ref(&db));
    assert_eq!(count_books(&db), 2);
    assert_eq!(
        file_names(&dir.path().join("build")),
        ["bookshop.sqlite", "bookshop.stamp"]
    );
}

#[test]
fn unchanged_scripts_do_not_rebuild_and_changed_ones_do() {
    let (dir, manifest) = suite();
    load_default(&manifest).unwrap();
    let db = dir.path().join("build/bookshop.sqlite");
    // Mark the built database: a rebuild would lose the mark.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("INSERT INTO book VALUES (99, 'mark')", [])
        .unwrap();
    load_default(&manifest).unwrap();
    assert_eq!(count_books(&db), 3, "an unchanged suite must not rebuild");
    write(
        dir.path(),
        "bookshop/data.sql",
        "INSERT INTO book VALUES (1, 'Dune');\n",
    );
    load_default(&manifest).unwrap();
    assert_eq!(count_books(&db), 1, "a changed script must rebuild");
    // A deleted database is rebuilt even though its stamp is current.
    std::fs::remove_file(&db).unwrap();
    load_default(&manifest).unwrap();
    assert_eq!(count_books(&db), 1);
}

#[test]
fn failing_script_names_the_script_and_line_and_leaves_no_file() {
    let (dir, manifest) = suite();
    let data = write(
        dir.path(),
        "bookshop/data.sql",
        "INSERT INTO book VALUES (1, 'Dune');\n\nINSERT INTO book VALUES\n  (1, 'Again');\n",
    );
    expect_error(
        load_default(&manifest),
        &data,
        None,
        Some(3),
        &[
            "bookshop",
            "data.sql",
            "UNIQUE constraint failed",
            "INSERT INTO book VALUES",
        ],
    );
    assert_eq!(file_names(&dir.path().join("build")), Vec::<String>::new());
}

#[test]
fn script_syntax_error_names_its_line() {
    let (dir, manifest) = suite();
    let schema = write(
        dir.path(),
        "bookshop/schema.sql",
        "CREATE TABLE book (id INTEGER PRIMARY KEY, title TEXT);\nCREATE TABLE oops (a INT,,);\n",
    );
    expect_error(
        load_default(&manifest),
        &schema,
        None,
        Some(2),
        &["schema.sql", "syntax error"],
    );
    assert!(!dir.path().join("build/bookshop.sqlite").exists());
}

#[test]
fn manifest_errors() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "cases.jsonl", CASES);
    let unknown_key = write(
        dir.path(),
        "a.toml",
        "name = \"x\"\ncases = \"cases.jsonl\"\ndb_dri = \"build\"\n",
    );
    expect_error(
        load_default(&unknown_key),
        &unknown_key,
        None,
        Some(3),
        &["db_dri", "column 1"],
    );
    let unknown_db_key = write(
        dir.path(),
        "b.toml",
        "name = \"x\"\ncases = \"cases.jsonl\"\n[databases.bookshop]\nscripts = []\nscript = \"a.sql\"\n",
    );
    expect_error(
        load_default(&unknown_db_key),
        &unknown_db_key,
        None,
        Some(5),
        &["script"],
    );
    let no_name = write(dir.path(), "c.toml", "cases = \"cases.jsonl\"\n");
    expect_error(load_default(&no_name), &no_name, None, None, &["name"]);
    let missing_cases = write(
        dir.path(),
        "d.toml",
        "name = \"x\"\n\ncases = \"nope.jsonl\"\n",
    );
    expect_error(
        load_default(&missing_cases),
        &missing_cases,
        None,
        Some(3),
        &["nope.jsonl"],
    );
    let missing_script = write(
        dir.path(),
        "e.toml",
        "name = \"x\"\ncases = \"cases.jsonl\"\n[databases.bookshop]\nscripts = [\"gone.sql\"]\n",
    );
    expect_error(
        load_default(&missing_script),
        &missing_script,
        None,
        Some(4),
        &["[databases.bookshop]", "gone.sql"],
    );
    let broken = write(dir.path(), "f.toml", "name = \"x\ncases = 1\n");
    expect_error(load_default(&broken), &broken, None, Some(1), &[]);
}

/// Loads a one-file suite whose cases file is `cases` and whose database `d` exists.
fn load_cases_text(cases: &str) -> (tempfile::TempDir, PathBuf, Result<Benchmark, InputError>) {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path(), "d.sqlite");
    let manifest = write(dir.path(), "s.toml", "name = \"s\"\ncases = \"c.jsonl\"\n");
    let cases_path = write(dir.path(), "c.jsonl", cases);
    let result = load_default(&manifest);
    (dir, cases_path, result)
}

#[test]
fn case_line_errors_name_the_line() {
    let good = r#"{"id": "a", "db": "d", "question": "Q", "gold": "SELECT 1"}"#;
    let cases = [
        (
            r#"{"id": "b", "db": "d", "question": "Q", "gold": "SELECT 1""#,
            "EOF",
        ),
        (
            r#"{"id": "b", "db": "d", "question": "Q", "gold": "SELECT 1", "hint": "x"}"#,
            "unknown field `hint`",
        ),
        (
            r#"{"id": "b", "db": "d", "question": "Q"}"#,
            "`gold` is required",
        ),
        (
            r#"{"id": "b", "db": "d", "question": "Q", "gold": "SELECT 1", "type": "infeasible"}"#,
            "must not have `gold`",
        ),
        (
            r#"{"id": "b", "db": "d", "question": "Q", "gold": []}"#,
            "lists no query",
        ),
        (
            r#"{"id": "b", "db": "d", "question": "Q", "gold": ["SELECT 1", 2]}"#,
            "must list strings",
        ),
        (
            r#"{"id": "b", "db": "d", "question": "Q", "gold": 5}"#,
            "string or a list",
        ),
        (
            r#"{"id": "b", "db": "d", "question": "Q", "gold": " "}"#,
            "empty query",
        ),
        (
            r#"{"id": "b", "db": "d", "question": "Q", "gold": "SELECT 1", "type": "maybe"}"#,
            "unknown variant",
        ),
        (
            r#"{"id": "b", "question": "Q", "gold": "SELECT 1"}"#,
            "missing field `db`",
        ),
        (
            r#"{"id": "b", "db": "d", "question": "Q", "gold": "SELECT 1", "tags": {"n": 1}}"#,
            "invalid type",
        ),
        (
            r#"{"id": "a", "db": "d", "question": "Q", "gold": "SELECT 2"}"#,
            "duplicate id `a`",
        ),
        (
            r#"{"id": "b", "db": "e", "question": "Q", "gold": "SELECT 2"}"#,
            "unknown database `e`",
        ),
    ];
    for (bad, fragment) in cases {
        let (_dir, cases_path, result) = load_cases_text(&format!("{good}\n\n{bad}\n"));
        expect_error(result, &cases_path, Some(1), Some(3), &[fragment]);
    }
}

/// `--db-dir` overrides the manifest's folder, and is read as it is: the scripts build into the
/// manifest's own folder only (a distilled folder given instead is never written into).
#[test]
fn db_dir_option_overrides_the_manifest_and_is_only_read() {
    let (dir, manifest) = suite();
    let elsewhere = dir.path().join("elsewhere");
    let options = LoadOptions {
        db_dir: Some(elsewhere.clone()),
        ..LoadOptions::on(sqlgate_engine_sqlite::files())
    };
    let error = load(&manifest, &options).unwrap_err().to_string();
    assert!(error.contains("unknown database `bookshop`"), "{error}");
    assert!(!elsewhere.exists() && !dir.path().join("build").exists());
    // Built where the manifest says, then copied to the other folder, which is read as is.
    load(&manifest, &LoadOptions::on(sqlgate_engine_sqlite::files())).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::copy(
        dir.path().join("build/bookshop.sqlite"),
        elsewhere.join("bookshop.sqlite"),
    )
    .unwrap();
    let bench = load(&manifest, &options).unwrap();
    assert_eq!(bench.db_dir, elsewhere);
    assert_eq!(count_books(&elsewhere.join("bookshop.sqlite")), 2);
    let files: Vec<_> = std::fs::read_dir(&elsewhere).unwrap().collect();
    assert_eq!(files.len(), 1, "nothing written beside it");
}

#[test]
fn a_clone_is_rebuilt_when_its_original_changes_even_with_the_same_size_and_time() {
    let dir = tempfile::tempdir().unwrap();
    let original = make_db(dir.path(), "shop.sqlite");
    let insert = |value: i64| {
        let conn = rusqlite::Connection::open(&original).unwrap();
        conn.execute("DELETE FROM t", []).unwrap();
        conn.execute("INSERT INTO t VALUES (?1)", [value]).unwrap();
    };
    insert(1);
    let script = write(
        dir.path(),
        "shop.tqa.sql",
        "ALTER TABLE t RENAME COLUMN a TO amount;\n",
    );
    let clone = dir.path().join("build/shop.tqa.sqlite");
    let amount = || -> i64 {
        rusqlite::Connection::open(&clone)
            .unwrap()
            .query_row("SELECT amount FROM t", [], |row| row.get(0))
            .unwrap()
    };
    crate::loaders::build_clone_if_stale(
        &original,
        &script,
        &clone,
        &*sqlgate_engine_sqlite::files(),
    )
    .unwrap();
    assert_eq!(amount(), 1);
    // An edit that leaves the size and restores the modification time.
    let before = std::fs::metadata(&original).unwrap();
    insert(2);
    std::fs::File::options()
        .write(true)
        .open(&original)
        .unwrap()
        .set_modified(before.modified().unwrap())
        .unwrap();
    let after = std::fs::metadata(&original).unwrap();
    assert_eq!(
        (after.len(), after.modified().unwrap()),
        (before.len(), before.modified().unwrap())
    );
    crate::loaders::build_clone_if_stale(
        &original,
        &script,
        &clone,
        &*sqlgate_engine_sqlite::files(),
    )
    .unwrap();
    assert_eq!(amount(), 2, "the clone must follow its original's content");
}
