//! Test-suite folders are checked at load: an empty `shop_9.sqlite`, `notes.sqlite.txt`, the
//! `-wal`, `-shm` or `-journal` file of a killed writer, or a variant whose header is not
//! SQLite's stops `score --mode testsuite`, `score --every-database` (any mode) and `sqlgate
//! test` with `every_database = true` with exit 2 naming the file, instead of failing every case
//! at run time as the system's error. A user's folder of good variants without a manifest is
//! read as before.

use std::fs;
use std::path::Path;

use crate::support::{sqlgate, Run};

const GOLD: &str = "SELECT name FROM items WHERE price < 10";

/// `db/shop/shop.sqlite` with two variants, a Spider gold file, the gold as predictions, and a
/// gate on a native suite with `every_database = true` in bird mode.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let shop = dir.path().join("db/shop");
    fs::create_dir_all(&shop).unwrap();
    for (file, rows) in [
        ("shop.sqlite", "('a', 5), ('b', 20)"),
        ("shop_1.sqlite", "('c', 1)"),
        ("shop_2.sqlite", "('d', 7), ('e', 40)"),
    ] {
        rusqlite::Connection::open(shop.join(file))
            .unwrap()
            .execute_batch(&format!(
                "CREATE TABLE items (name TEXT, price INTEGER); INSERT INTO items VALUES {rows};"
            ))
            .unwrap();
    }
    let write = |name: &str, text: String| fs::write(dir.path().join(name), text).unwrap();
    write("gold.txt", format!("{GOLD}\tshop\n"));
    write(
        "pred.jsonl",
        format!("{{\"id\": \"0\", \"sql\": \"{GOLD}\"}}\n"),
    );
    write(
        "cases.jsonl",
        format!(
            "{{\"id\": \"0\", \"db\": \"shop\", \"question\": \"cheap?\", \"gold\": \"{GOLD}\"}}\n"
        ),
    );
    write(
        "suite.toml",
        "name = \"shop\"\ncases = \"cases.jsonl\"\ndb_dir = \"db\"\n".to_string(),
    );
    write(
        "sqlgate.toml",
        "snapshots = \"snapshots\"\n\n[[suite]]\nbenchmark = \"suite.toml\"\nmode = \"bird\"\n\
         every_database = true\n\n[[system]]\nname = \"replayed\"\ntype = \"replay\"\n\
         predictions = \"pred.jsonl\"\n"
            .to_string(),
    );
    dir
}

fn score(dir: &Path, args: &[&str]) -> Run {
    sqlgate()
        .current_dir(dir)
        .args([
            "score",
            "--gold",
            "gold.txt",
            "--pred",
            "pred.jsonl",
            "--db-dir",
            "db",
        ])
        .args(args)
        .run()
}

fn gate(dir: &Path) -> Run {
    sqlgate().current_dir(dir).arg("test").run()
}

/// Every way of reading the folder: each stops at load, exit 2, naming `file` and `problem`.
fn assert_refused_everywhere(dir: &Path, file: &str, problem: &str) {
    let runs = [
        (
            "score --mode testsuite",
            score(dir, &["--mode", "testsuite"]),
        ),
        (
            "score --mode bird --every-database",
            score(dir, &["--mode", "bird", "--every-database"]),
        ),
        (
            "score --mode defog --every-database",
            score(dir, &["--mode", "defog", "--every-database"]),
        ),
        ("test, every_database", gate(dir)),
    ];
    for (how, run) in runs {
        run.assert_code(2);
        assert!(
            run.stderr.contains(&format!("db/shop/{file}")) && run.stderr.contains(problem),
            "{how}: {file} and `{problem}` not said:\n{}",
            run.stderr
        );
    }
}

#[test]
fn a_folder_of_good_variants_without_a_manifest_is_read() {
    let dir = workspace();
    score(dir.path(), &["--mode", "testsuite"]).assert_success();
    score(dir.path(), &["--mode", "bird", "--every-database"]).assert_success();
    gate(dir.path()).assert_success();
}

#[test]
fn a_bad_file_in_a_test_suite_folder_stops_every_reader_at_load() {
    let not_a_database = "cannot be read as one";
    let writer = "left by a writer that did not close it";
    let bad: [(&str, &[u8], &str); 6] = [
        ("shop_9.sqlite", b"", "the file is empty (0 bytes)"),
        (
            "notes.sqlite.txt",
            b"my notes about the shop",
            not_a_database,
        ),
        ("shop_1.sqlite-wal", &[7; 64], writer),
        ("shop_1.sqlite-shm", &[0; 64], writer),
        ("shop_2.sqlite-journal", b"", writer),
        ("shop_3.sqlite", &[b'x'; 4096], "file is not a database"),
    ];
    for (file, bytes, problem) in bad {
        let dir = workspace();
        let path = dir.path().join("db/shop").join(file);
        fs::write(&path, bytes).unwrap();
        assert_refused_everywhere(dir.path(), file, problem);
        // Nothing was created beside it (opening a database beside its `-wal` makes a `-shm`).
        let names = fs::read_dir(dir.path().join("db/shop")).unwrap().count();
        assert_eq!(names, 4, "{file}");
    }
}

#[test]
fn a_variant_with_a_damaged_header_stops_the_run_at_load() {
    let dir = workspace();
    // A real database whose first page (the header and schema) is overwritten.
    let variant = dir.path().join("db/shop/shop_2.sqlite");
    let mut bytes = fs::read(&variant).unwrap();
    bytes[..16].copy_from_slice(b"SQLite format 2\0");
    fs::write(&variant, &bytes).unwrap();
    assert_refused_everywhere(dir.path(), "shop_2.sqlite", "not a database");
}

#[test]
fn a_variant_that_is_no_regular_file_stops_the_run_at_load() {
    let dir = workspace();
    let fifo = dir.path().join("db/shop/shop_9.sqlite");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // Read as a database, a FIFO blocks the run forever; it is refused instead.
    assert_refused_everywhere(dir.path(), "shop_9.sqlite", "is not a regular file");

    let dir = workspace();
    std::os::unix::fs::symlink("gone.sqlite", dir.path().join("db/shop/shop_9.sqlite")).unwrap();
    assert_refused_everywhere(dir.path(), "shop_9.sqlite", "cannot be read");
}
