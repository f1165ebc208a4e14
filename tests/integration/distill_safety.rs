//! `distill` never destroys: an `--out` that is, holds or lies inside the database folder (also
//! through a symbolic link), or an existing folder it did not write, is refused with exit 2 and
//! every byte left as it was; a rerun replaces only a folder whose manifest lists everything in
//! it. A distilled folder is complete or refused: a tampered one (file missing, extra or changed)
//! stops `score`, `audit` and `test` at load; a run killed mid-way leaves the previous suite
//! whole, its staging folder beside `--out` (never read as a suite, removed by the next run) and
//! nothing in the temporary folder.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::{copy_tree, sqlgate, Run};

const GOLD: &str = "SELECT name FROM items WHERE price < 10";

/// `db/shop/shop.sqlite` and the user's own `shop_1..shop_7.sqlite` beside it, a Spider gold
/// file on it and the gold as predictions.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let shop = dir.path().join("db/shop");
    fs::create_dir_all(&shop).unwrap();
    database(&shop.join("shop.sqlite"), "(1, 'a', 5), (2, 'b', 20)");
    for k in 1..=7 {
        database(
            &shop.join(format!("shop_{k}.sqlite")),
            &format!("(1, 'mine {k}', {k})"),
        );
    }
    fs::write(dir.path().join("gold.txt"), format!("{GOLD}\tshop\n")).unwrap();
    fs::write(
        dir.path().join("pred.jsonl"),
        format!("{{\"id\": \"0\", \"sql\": \"{GOLD}\"}}\n"),
    )
    .unwrap();
    dir
}

fn database(path: &Path, rows: &str) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(&format!(
            "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price INTEGER);
             INSERT INTO items VALUES {rows};"
        ))
        .unwrap();
}

fn distill(dir: &Path, out: &str, extra: &[&str]) -> Run {
    sqlgate()
        .current_dir(dir)
        .args([
            "distill", "--gold", "gold.txt", "--db-dir", "db", "--out", out,
        ])
        .args(["--candidates", "20"])
        .args(extra)
        .run()
}

fn score(dir: &Path, db_dir: &str) -> Run {
    sqlgate()
        .current_dir(dir)
        .args(["score", "--gold", "gold.txt", "--pred", "pred.jsonl"])
        .args(["--db-dir", db_dir, "--mode", "testsuite"])
        .run()
}

fn audit(dir: &Path, db_dir: &str) -> Run {
    sqlgate()
        .current_dir(dir)
        .args(["audit", "--gold", "gold.txt", "--db-dir", db_dir])
        .run()
}

/// `sqlgate test` of the gold as a replayed system on a native suite whose databases are
/// `db_dir` (the test-suite mode: every file of the folder).
fn gate(dir: &Path, db_dir: &str) -> Run {
    fs::write(
        dir.join("cases.jsonl"),
        format!(
            "{{\"id\": \"0\", \"db\": \"shop\", \"question\": \"cheap?\", \"gold\": \"{GOLD}\"}}\n"
        ),
    )
    .unwrap();
    fs::write(
        dir.join("suite.toml"),
        format!("name = \"shop\"\ncases = \"cases.jsonl\"\ndb_dir = \"{db_dir}\"\n"),
    )
    .unwrap();
    fs::write(
        dir.join("sqlgate.toml"),
        "snapshots = \"snapshots\"\n\n[[suite]]\nbenchmark = \"suite.toml\"\n\n\
         [[system]]\nname = \"replayed\"\ntype = \"replay\"\npredictions = \"pred.jsonl\"\n",
    )
    .unwrap();
    sqlgate().current_dir(dir).args(["test"]).run()
}

/// Every entry under `root` (files with their bytes, folders and links), by relative path.
fn tree(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut found = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(root).unwrap().to_path_buf();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                pending.push(path);
                found.insert(relative, None);
            } else if meta.is_file() {
                found.insert(relative, Some(fs::read(&path).unwrap()));
            } else {
                found.insert(
                    relative,
                    Some(
                        fs::read_link(&path)
                            .unwrap()
                            .into_os_string()
                            .into_encoded_bytes(),
                    ),
                );
            }
        }
    }
    found
}

#[test]
fn distill_over_the_database_folder_is_refused_and_leaves_every_byte() {
    let dir = workspace();
    let before = tree(dir.path());
    // The run: it overwrote shop_1 and deleted shop_2..7.
    distill(dir.path(), "db", &[]).assert_bad_input(&["db"]);
    // Inside it, holding it, and the same folder through a link.
    distill(dir.path(), "db/shop", &[]).assert_bad_input(&["db/shop"]);
    distill(dir.path(), "db/new/suite", &[]).assert_bad_input(&["db/new/suite"]);
    distill(dir.path(), ".", &[]).assert_bad_input(&["holds the database folder"]);
    std::os::unix::fs::symlink("db", dir.path().join("alias")).unwrap();
    let before_with_link = tree(dir.path());
    distill(dir.path(), "alias", &[]).assert_bad_input(&["is the database folder"]);
    distill(dir.path(), "alias/shop/x", &[]).assert_bad_input(&["lies inside"]);
    assert_eq!(tree(dir.path()), before_with_link);
    fs::remove_file(dir.path().join("alias")).unwrap();
    assert_eq!(tree(dir.path()), before);
}

#[test]
fn distill_refuses_a_folder_it_did_not_write_and_leaves_every_byte() {
    let dir = workspace();
    let mine = dir.path().join("mine");
    fs::create_dir_all(mine.join("shop")).unwrap();
    fs::write(mine.join("notes.txt"), "my notes").unwrap();
    fs::copy(
        dir.path().join("db/shop/shop_3.sqlite"),
        mine.join("shop/shop_1.sqlite"),
    )
    .unwrap();
    let before = tree(dir.path());
    distill(dir.path(), "mine", &[])
        .assert_bad_input(&["mine: is not empty and holds no sqlgate-distill.json"]);
    assert_eq!(tree(dir.path()), before);
    // A file in place of the folder.
    distill(dir.path(), "mine/notes.txt", &[]).assert_bad_input(&["is not a folder"]);
    assert_eq!(tree(dir.path()), before);
    // An empty folder is used.
    fs::create_dir(dir.path().join("empty")).unwrap();
    distill(dir.path(), "empty", &[]).assert_success();
    assert!(dir.path().join("empty/sqlgate-distill.json").is_file());
}

#[test]
fn distill_replaces_its_own_folder_and_nothing_else() {
    let dir = workspace();
    distill(dir.path(), "out", &["--seed", "1"]).assert_success();
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.path().join("out/sqlgate-distill.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["written_by"], "sqlgate distill");
    assert!(
        manifest["command"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "--candidates"),
        "{manifest}"
    );
    let inputs: Vec<&str> = manifest["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert!(
        inputs.contains(&"gold.txt") && inputs.contains(&"db/shop/shop.sqlite"),
        "{inputs:?}"
    );
    // Every file written is listed with its hash, and nothing else is in the folder.
    let listed = manifest["files"].as_object().unwrap();
    let mut written: Vec<String> = tree(&dir.path().join("out"))
        .into_iter()
        .filter(|(_, bytes)| bytes.is_some())
        .map(|(path, _)| path.to_string_lossy().into_owned())
        .filter(|path| path != "sqlgate-distill.json")
        .collect();
    written.sort();
    assert_eq!(written, listed.keys().cloned().collect::<Vec<_>>());
    for (name, hash) in listed {
        let bytes = fs::read(dir.path().join("out").join(name)).unwrap();
        assert_eq!(hash.as_str().unwrap(), sha256(&bytes), "{name}");
    }
    score(dir.path(), "out").assert_success();

    // A rerun replaces the folder whole.
    distill(dir.path(), "out", &["--seed", "2", "--per-db", "1"]).assert_success();
    score(dir.path(), "out").assert_success();
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.to_string_lossy().starts_with(".out.")),
        "{names:?}"
    );

    // A file distill did not write, or a listed file changed, stops the rerun; nothing moves.
    fs::write(dir.path().join("out/shop/keep.txt"), "mine").unwrap();
    let before = tree(dir.path());
    distill(dir.path(), "out", &[]).assert_bad_input(&["keep.txt"]);
    assert_eq!(tree(dir.path()), before);
    fs::remove_file(dir.path().join("out/shop/keep.txt")).unwrap();
    append(&dir.path().join("out/shop/shop.sqlite"));
    let before = tree(dir.path());
    distill(dir.path(), "out", &[]).assert_bad_input(&["changed since distill wrote it"]);
    assert_eq!(tree(dir.path()), before);
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One byte added at the end: the database still opens, its hash differs.
fn append(path: &Path) {
    let mut bytes = fs::read(path).unwrap();
    bytes.push(0);
    fs::write(path, bytes).unwrap();
}

#[test]
fn a_tampered_distilled_folder_is_refused_by_score_audit_and_test() {
    let dir = workspace();
    distill(dir.path(), "out", &[]).assert_success();
    score(dir.path(), "out").assert_success();
    audit(dir.path(), "out").assert_success();
    gate(dir.path(), "out").assert_success();
    let shop = dir.path().join("out/shop");
    let kept = shop.join("shop_1.sqlite");
    let saved = fs::read(&kept).unwrap();
    let tampered: [(&str, &dyn Fn()); 3] = [
        ("shop_1.sqlite", &|| fs::remove_file(&kept).unwrap()),
        ("shop_1.sqlite", &|| append(&kept)),
        ("shop_9.sqlite", &|| {
            fs::copy(
                dir.path().join("db/shop/shop_2.sqlite"),
                shop.join("shop_9.sqlite"),
            )
            .unwrap();
        }),
    ];
    for (named, tamper) in tampered {
        tamper();
        score(dir.path(), "out").assert_bad_input(&[named]);
        audit(dir.path(), "out").assert_bad_input(&[named]);
        gate(dir.path(), "out").assert_bad_input(&[named]);
        fs::write(&kept, &saved).unwrap();
        let _ = fs::remove_file(shop.join("shop_9.sqlite"));
        score(dir.path(), "out").assert_success();
    }
}

#[test]
fn a_killed_distill_leaves_the_previous_suite_whole_and_nothing_in_the_temporary_folder() {
    let dir = workspace();
    distill(dir.path(), "out", &["--seed", "1"]).assert_success();
    let before = tree(&dir.path().join("out"));
    let temp = dir.path().join("tmp");
    fs::create_dir(&temp).unwrap();
    // A long run, killed (SIGKILL) once its first candidate is written.
    let mut child = sqlgate()
        .current_dir(dir.path())
        .env("TMPDIR", &temp)
        .args([
            "distill", "--gold", "gold.txt", "--db-dir", "db", "--out", "out",
        ])
        .args(["--candidates", "100000", "--seed", "2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let staging = dir.path().join(".out.distill-staging");
    let deadline = Instant::now() + Duration::from_secs(120);
    let caught = loop {
        if fs::read_dir(staging.join(".scratch")).is_ok_and(|mut e| e.next().is_some()) {
            break true;
        }
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // While it lives, a second run to the same folder is refused.
    let second = distill(dir.path(), "out", &[]);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(caught, "no staging folder with candidates beside out");
    second.assert_bad_input(&["another `sqlgate distill` is writing"]);
    assert_eq!(
        fs::read_dir(&temp).unwrap().count(),
        0,
        "files left in TMPDIR"
    );
    assert_eq!(tree(&dir.path().join("out")), before);
    score(dir.path(), "out").assert_success();
    // The leftover is marked, and never read as a suite, even when named as one.
    assert!(staging.join(".sqlgate-distill-unfinished").is_file());
    score(dir.path(), ".out.distill-staging").assert_bad_input(&["did not finish writing"]);
    // A file sqlgate did not write keeps it there.
    fs::write(staging.join("notes.txt"), "mine").unwrap();
    distill(dir.path(), "out", &[]).assert_bad_input(&["notes.txt"]);
    assert!(staging.join("notes.txt").is_file());
    fs::remove_file(staging.join("notes.txt")).unwrap();
    // The next run removes it, and a suite left by a run killed while swapping folders.
    let replaced = dir.path().join(".out.distill-replaced");
    copy_tree(&dir.path().join("out"), &replaced);
    distill(dir.path(), "out", &["--seed", "3"]).assert_success();
    assert!(!staging.exists() && !replaced.exists());
    score(dir.path(), "out").assert_success();
}
