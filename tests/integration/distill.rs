//! `distill`: on a crafted suite, wrong queries that pass EX on the original (a LEFT JOIN adding
//! zero groups, SUM for COUNT, a dropped WHERE predicate) fail `score --mode testsuite` on the
//! distilled folder, while the gold and its equivalent rewrites still pass; the same seed writes
//! the same bytes; bad input exits 2. On Defog (shared data) every gold passes on every
//! distilled database.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::{shared_data, sqlgate};

const SCHEMA: &str = "
CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customer(id),
                     qty INTEGER NOT NULL, amount INTEGER NOT NULL, status TEXT NOT NULL);";

/// On this data every customer has orders, every qty is 1 and every order above 5 is open.
const DATA: &str = "
INSERT INTO customer VALUES (1, 'ann'), (2, 'bob');
INSERT INTO orders VALUES (1, 1, 1, 10, 'open'), (2, 1, 1, 3, 'closed'), (3, 2, 1, 8, 'open');";

/// (id, gold, a wrong query the original accepts, an equivalent rewrite).
const CASES: [(&str, &str, &str, &str); 3] = [
    (
        "per_customer",
        "SELECT c.name, count(o.id) FROM customer AS c JOIN orders AS o ON o.customer_id = c.id GROUP BY c.name",
        "SELECT c.name, count(o.id) FROM customer AS c LEFT JOIN orders AS o ON o.customer_id = c.id GROUP BY c.name",
        "SELECT x.name, count(y.id) FROM customer AS x JOIN orders AS y ON y.customer_id = x.id GROUP BY x.name",
    ),
    (
        "open_items",
        "SELECT count(qty) FROM orders WHERE status = 'open'",
        "SELECT sum(qty) FROM orders WHERE status = 'open'",
        "WITH q AS (SELECT count(qty) FROM orders WHERE status = 'open') SELECT * FROM q",
    ),
    (
        "big_open",
        "SELECT id FROM orders WHERE amount > 5 AND status = 'open'",
        "SELECT id FROM orders WHERE amount > 5",
        "SELECT id FROM orders WHERE status = 'open' AND amount > 5",
    ),
];

/// The suite, its database built from scripts into `build/` as the demo's is: a distilled
/// folder given as `--db-dir` is read, never built into.
fn suite(dir: &Path) -> PathBuf {
    fs::write(dir.join("schema.sql"), SCHEMA).unwrap();
    fs::write(dir.join("data.sql"), DATA).unwrap();
    fs::write(
        dir.join("suite.toml"),
        "name = \"shop\"\ncases = \"cases.jsonl\"\ndb_dir = \"build\"\n\n\
         [databases.shop]\nscripts = [\"schema.sql\", \"data.sql\"]\n",
    )
    .unwrap();
    let cases: Vec<String> = CASES
        .iter()
        .map(|(id, gold, _, _)| {
            serde_json::json!({"id": id, "db": "shop", "question": id, "gold": gold}).to_string()
        })
        .collect();
    fs::write(dir.join("cases.jsonl"), cases.join("\n")).unwrap();
    dir.join("suite.toml")
}

fn predictions(
    dir: &Path,
    name: &str,
    pick: impl Fn(&(&str, &str, &str, &str)) -> String,
) -> PathBuf {
    let lines: Vec<String> = CASES
        .iter()
        .map(|case| serde_json::json!({"id": case.0, "sql": pick(case)}).to_string())
        .collect();
    let path = dir.join(format!("{name}.jsonl"));
    fs::write(&path, lines.join("\n")).unwrap();
    path
}

/// Each case's EX under `score --mode testsuite` on the folder `db_dir`.
fn ex(suite: &Path, pred: &Path, db_dir: &Path) -> Vec<(String, i64)> {
    ex_on(suite, pred, db_dir, &[])
}

/// [`ex`] with `extra` flags (an engine and its server).
fn ex_on(suite: &Path, pred: &Path, db_dir: &Path, extra: &[&str]) -> Vec<(String, i64)> {
    let report = sqlgate()
        .arg("score")
        .arg("--gold")
        .arg(suite)
        .arg("--pred")
        .arg(pred)
        .arg("--db-dir")
        .arg(db_dir)
        .args(["--mode", "testsuite", "--format", "json"])
        .args(extra)
        .run()
        .assert_success()
        .json();
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["ex"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn distill(suite: &Path, out: &Path, seed: &str) -> serde_json::Value {
    sqlgate()
        .arg("distill")
        .arg("--gold")
        .arg(suite)
        .arg("--out")
        .arg(out)
        .args(["--candidates", "60", "--seed", seed, "--format", "json"])
        .run()
        .assert_success()
        .json()
}

#[test]
fn distill_rejects_wrong_queries_the_original_accepts_and_keeps_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let out = dir.path().join("out");
    let report = distill(&suite, &out, "5");
    let shop = &report["databases"][0];
    assert_eq!(shop["db"], "shop");
    assert!(shop["kept"].as_u64().unwrap() >= 1, "{shop}");
    assert!(shop["killed_by_suite"].as_u64() > shop["killed_by_original"].as_u64());

    let gold = predictions(dir.path(), "gold", |c| c.1.to_string());
    let wrong = predictions(dir.path(), "wrong", |c| c.2.to_string());
    let rewritten = predictions(dir.path(), "rewritten", |c| c.3.to_string());
    let build = dir.path().join("build");
    for (id, ex) in ex(&suite, &wrong, &build) {
        assert_eq!(ex, 1, "{id}: the wrong query passes on the original alone");
    }
    let before = folder_files(&out);
    for (id, ex) in ex(&suite, &wrong, &out) {
        assert_eq!(ex, 0, "{id}: the distilled suite rejects the wrong query");
    }
    // Read, not written into: no database built beside the distilled ones.
    assert_eq!(folder_files(&out), before);
    for pred in [&gold, &rewritten] {
        for (id, ex) in ex(&suite, pred, &out) {
            assert_eq!(
                ex,
                1,
                "{id}: {} passes on the distilled suite",
                pred.display()
            );
        }
    }
}

#[test]
fn distill_also_tells_known_answers_apart_from_their_gold() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let out = dir.path().join("out");
    // Right on the original, where every qty is 1; no operator adds this predicate.
    let seen = "SELECT c.name, count(o.id) FROM customer AS c JOIN orders AS o \
                ON o.customer_id = c.id WHERE o.qty = 1 GROUP BY c.name";
    let answers = predictions(dir.path(), "seen", |c| {
        if c.0 == "per_customer" { seen } else { c.1 }.to_string()
    });
    let report = sqlgate()
        .arg("distill")
        .arg("--gold")
        .arg(&suite)
        .arg("--out")
        .arg(&out)
        .arg("--predictions")
        .arg(&answers)
        .args(["--candidates", "60", "--seed", "5", "--format", "json"])
        .run()
        .assert_success()
        .json();
    let shop = &report["databases"][0];
    // The answers equal to their gold are not neighbours; the other one is, and is rejected.
    let counts = &shop["operators"]["prediction"];
    assert_eq!(counts["mutants"], 1, "{shop}");
    assert_eq!(counts["accepted_by_original"], 1, "{shop}");
    assert_eq!(counts["rejected_by_suite"], 1, "{shop}");
    let rejected = shop["rejections"].as_array().unwrap();
    assert!(
        rejected
            .iter()
            .any(|r| r["operator"] == "prediction" && r["mutant"] == seen),
        "{shop}"
    );
    let scores = ex(&suite, &answers, &out);
    assert!(
        scores.contains(&("per_customer".to_string(), 0)),
        "{scores:?}"
    );
    assert!(scores.contains(&("big_open".to_string(), 1)), "{scores:?}");
}

/// Every file under `dir`, by path, with its bytes.
fn folder_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else {
                files.push((path.clone(), fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// A database file beside the distilled folder of the same database (`<out>/shop.sqlite` and
/// `<out>/shop/shop.sqlite`) is an ambiguity: refused, naming both, never one read silently.
#[test]
fn a_flat_database_beside_a_distilled_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let out = dir.path().join("out");
    distill(&suite, &out, "5");
    fs::copy(
        dir.path().join("build/shop.sqlite"),
        out.join("shop.sqlite"),
    )
    .unwrap();
    let gold = predictions(dir.path(), "gold", |c| c.1.to_string());
    let run = sqlgate()
        .arg("score")
        .arg("--gold")
        .arg(&suite)
        .arg("--pred")
        .arg(&gold)
        .arg("--db-dir")
        .arg(&out)
        .args(["--mode", "testsuite"])
        .run();
    run.assert_bad_input(&[
        "ambiguous",
        "shop.sqlite",
        "shop/shop.sqlite",
        "cases.jsonl",
    ]);
}

/// The files of the distilled folder `<out>/shop/`, by name, with their bytes.
fn shop_files(out: &Path) -> Vec<(String, Vec<u8>)> {
    let shop = out.join("shop");
    folder_files(&shop)
        .into_iter()
        .map(|(path, bytes)| {
            let name = path.strip_prefix(&shop).unwrap();
            (name.to_str().unwrap().to_string(), bytes)
        })
        .collect()
}

#[test]
fn distill_writes_the_same_bytes_for_a_seed() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    distill(&suite, &dir.path().join("a"), "9");
    distill(&suite, &dir.path().join("b"), "9");
    let a = shop_files(&dir.path().join("a"));
    assert!(a.len() >= 2);
    assert_eq!(a, shop_files(&dir.path().join("b")));
}

/// What distill keeps does not depend on the machine's load: a known answer whose work grows
/// with the rows of a candidate (a recursion as deep as 300,000 per order) runs past the
/// step bound on the larger candidates only, and a run beside CPU burners writes the same
/// bytes and the same report as a run on an idle machine (a wall-clock bound would stop it on
/// more candidates under load).
#[test]
fn distill_writes_the_same_bytes_beside_cpu_burners() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let heavy = predictions(dir.path(), "heavy", |case| {
        if case.0 == "open_items" {
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c \
             WHERE i < (SELECT count(*) FROM orders) * 300000) \
             SELECT count(qty) FROM orders WHERE status = 'open' AND (SELECT count(*) FROM c) > 0"
                .to_string()
        } else {
            case.2.to_string()
        }
    });
    let run = |out: &Path| {
        let report = sqlgate()
            .arg("distill")
            .arg("--gold")
            .arg(&suite)
            .arg("--predictions")
            .arg(&heavy)
            .arg("--out")
            .arg(out)
            .args(["--candidates", "24", "--format", "json"])
            .run()
            .assert_success()
            .json();
        let mut database = report["databases"][0].clone();
        database["seconds"] = serde_json::Value::Null;
        (database, shop_files(out))
    };
    let idle = run(&dir.path().join("idle"));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let burners: Vec<_> = (0..2 * std::thread::available_parallelism().map_or(2, |n| n.get()))
        .map(|_| {
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })
        })
        .collect();
    let loaded = run(&dir.path().join("loaded"));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for burner in burners {
        burner.join().unwrap();
    }
    assert_eq!(idle.0, loaded.0);
    assert!(idle.1 == loaded.1, "the kept databases differ");
    // The heavy answer is told apart somewhere (stopped on a large candidate) and accepted on
    // the original: the step bound decided, not the clock.
    let prediction = &idle.0["operators"]["prediction"];
    assert_eq!(prediction["accepted_by_original"], 1, "{prediction}");
    assert_eq!(prediction["rejected_by_suite"], 1, "{prediction}");
}

#[test]
fn distill_names_a_missing_gold_file_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.toml");
    let run = sqlgate()
        .arg("distill")
        .arg("--gold")
        .arg(&missing)
        .arg("--out")
        .arg(dir.path().join("out"))
        .run();
    run.assert_code(2);
    assert!(run.text().contains("nope.toml"), "{}", run.text());
}

/// A candidate count past the bound (up to the integers' end, where one more for the sample
/// would wrap to none) is refused as bad input, and nothing is written.
#[test]
fn a_candidate_count_past_its_bound_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    for count in ["100001", "18446744073709551615", "-1"] {
        let run = sqlgate()
            .arg("distill")
            .arg("--gold")
            .arg(&suite)
            .arg("--out")
            .arg(dir.path().join("out"))
            .arg(format!("--candidates={count}"))
            .run();
        run.assert_code(2);
        assert!(
            run.stderr.contains("--candidates"),
            "{count}: {}",
            run.stderr
        );
        assert!(!dir.path().join("out").exists());
    }
    distill(&suite, &dir.path().join("out"), "1");
}

/// On a server engine distill connects before it writes anything: an unreachable server is
/// refused naming it, and `--out` is not created.
#[test]
fn distill_on_an_unreachable_server_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    // The databases are the server's, not built from the scripts.
    fs::write(&suite, "name = \"shop\"\ncases = \"cases.jsonl\"\n").unwrap();
    let out = dir.path().join("out");
    let run = sqlgate()
        .arg("distill")
        .arg("--gold")
        .arg(&suite)
        .arg("--out")
        .arg(&out)
        .args([
            "--engine",
            "postgres",
            "--dsn",
            "postgres://nobody@127.0.0.1:9/{db}",
        ])
        .run();
    run.assert_code(2);
    assert!(run.text().contains("127.0.0.1:9"), "{}", run.text());
    assert!(!out.exists(), "nothing written");
}

#[test]
fn distill_on_defog_keeps_every_gold_passing_on_every_database() {
    let Some(data) = shared_data() else {
        return;
    };
    let defog = data.join("defog");
    let questions = defog.join("questions.csv");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    sqlgate()
        .arg("distill")
        .arg("--gold")
        .arg(&questions)
        .arg("--db-dir")
        .arg(&defog)
        .arg("--out")
        .arg(&out)
        .args(["--candidates", "12", "--per-db", "3"])
        .run()
        .assert_success();
    let options = sqlgate_eval::loaders::LoadOptions {
        db_dir: Some(defog.clone()),
        ..sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files())
    };
    let bench = sqlgate_eval::loaders::load(&questions, &options).unwrap();
    let lines: Vec<String> = bench
        .cases
        .iter()
        .map(|case| serde_json::json!({"id": case.id, "sql": case.gold[0]}).to_string())
        .collect();
    let pred = dir.path().join("gold.jsonl");
    fs::write(&pred, lines.join("\n")).unwrap();
    let scored = ex(&questions, &pred, &out);
    assert_eq!(scored.len(), 135);
    for (id, ex) in scored {
        assert_eq!(ex, 1, "gold {id} fails on a distilled database");
    }
    for db in ["academic", "advising", "atis", "geography", "restaurants"] {
        assert!(
            out.join(db).join(format!("{db}_1.sqlite")).is_file(),
            "{db}"
        );
    }
}

/// A gold whose ORDER BY ties on a generated database is judged there against every answer the
/// ties allow (listed in `gold-skips.json`, which the manifest vouches for): an answer breaking
/// the tie the other way passes, while the reversed order and every-tied-row answers fail. The
/// report's golds without rows are exactly those that return nothing (or only 0 and NULL) on
/// every database the folder judges them on.
#[test]
fn distill_judges_a_tied_gold_by_every_answer_its_ties_allow() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("build")).unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("build/club.sqlite")).unwrap();
    conn.execute_batch(
        "CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                              score INTEGER NOT NULL);
         INSERT INTO player VALUES (1, 'ann', 5), (2, 'bob', 3), (3, 'cy', 1);",
    )
    .unwrap();
    drop(conn);
    // (id, gold, a wrong answer, a right answer that breaks ties its own way; tied players
    // differ by name)
    let cases = [
        (
            "top",
            "SELECT name FROM player ORDER BY score DESC LIMIT 1",
            "SELECT name FROM player ORDER BY score ASC LIMIT 1",
            "SELECT name FROM player ORDER BY score DESC, name DESC LIMIT 1",
        ),
        // Every player with the top score: more than one where the top ties.
        (
            "best",
            "SELECT name FROM player ORDER BY score DESC LIMIT 1",
            "SELECT name FROM player WHERE score = (SELECT max(score) FROM player)",
            "SELECT name FROM player ORDER BY score DESC, name LIMIT 1",
        ),
        (
            "ranked",
            "SELECT name, score FROM player ORDER BY score",
            "SELECT name, score FROM player ORDER BY score DESC",
            "SELECT name, score FROM player ORDER BY score, name DESC",
        ),
        // Told apart only where scores repeat: where `ranked` ties.
        (
            "shared",
            "SELECT score, count(*) FROM player GROUP BY score HAVING count(*) > 1",
            "SELECT score, count(*) FROM player GROUP BY score",
            "SELECT score, count(name) FROM player GROUP BY score HAVING count(*) >= 2",
        ),
        (
            "none",
            "SELECT name FROM player WHERE score > 5 AND score < 3",
            "SELECT name FROM player WHERE score > 5 AND score < 3",
            "SELECT name FROM player WHERE score > 5 AND score < 3",
        ),
    ];
    let lines: Vec<String> = cases
        .iter()
        .map(|(id, gold, _, _)| {
            serde_json::json!({"id": id, "db": "club", "question": id, "gold": gold}).to_string()
        })
        .collect();
    fs::write(dir.path().join("cases.jsonl"), lines.join("\n")).unwrap();
    let suite = dir.path().join("suite.toml");
    fs::write(
        &suite,
        "name = \"club\"\ncases = \"cases.jsonl\"\ndb_dir = \"build\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let report = distill(&suite, &out, "3");
    let club = &report["databases"][0];

    let skips_file = out.join("club/gold-skips.json");
    let skips: Vec<serde_json::Value> =
        serde_json::from_str(&fs::read_to_string(&skips_file).unwrap()).unwrap();
    assert_eq!(club["gold_skips"].as_u64().unwrap(), skips.len() as u64);
    assert!(
        skips.iter().any(|s| s["why"] == "tied"),
        "a kept database where a gold's order ties: {skips:?}"
    );

    type Case = (&'static str, &'static str, &'static str, &'static str);
    let answers = |pick: fn(&Case) -> &'static str, name: &str| {
        let lines: Vec<String> = cases
            .iter()
            .map(|c| serde_json::json!({"id": c.0, "sql": pick(c)}).to_string())
            .collect();
        let path = dir.path().join(format!("{name}.jsonl"));
        fs::write(&path, lines.join("\n")).unwrap();
        path
    };
    let scored = |pred: &Path| -> std::collections::BTreeMap<String, i64> {
        ex(&suite, pred, &out).into_iter().collect()
    };
    let wrong = scored(&answers(|c| c.2, "wrong"));
    assert_eq!(
        (
            wrong["top"],
            wrong["best"],
            wrong["ranked"],
            wrong["shared"]
        ),
        (0, 0, 0, 0),
        "{wrong:?}"
    );
    let tie_broken = scored(&answers(|c| c.3, "tie_broken"));
    assert!(tie_broken.values().all(|&ex| ex == 1), "{tie_broken:?}");

    // The report's empty golds, from the folder as `score` reads it.
    let options = sqlgate_eval::loaders::LoadOptions {
        db_dir: Some(out.clone()),
        ..sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files())
    };
    let bench = sqlgate_eval::loaders::load(&suite, &options).unwrap();
    let mut empty = Vec::new();
    for case in &bench.cases {
        let files = bench
            .judged(case, bench.suite_files(case, true).unwrap())
            .unwrap()
            .files;
        let informative = files.iter().any(|file| {
            let conn = rusqlite::Connection::open(file).unwrap();
            let mut statement = conn.prepare(&case.gold[0]).unwrap();
            let columns = statement.column_count();
            let mut rows = statement.query([]).unwrap();
            let mut found = false;
            while let Some(row) = rows.next().unwrap() {
                found |= (0..columns).any(|i| {
                    !matches!(
                        row.get_ref(i).unwrap(),
                        rusqlite::types::ValueRef::Null | rusqlite::types::ValueRef::Integer(0)
                    ) && row.get_ref(i).unwrap() != rusqlite::types::ValueRef::Real(0.0)
                });
            }
            found
        });
        if !informative {
            empty.push(serde_json::Value::from(case.id.clone()));
        }
    }
    assert_eq!(club["empty_on_suite"].as_array().unwrap(), &empty);
    assert_eq!(empty, ["none"]);

    // A skip list the manifest does not vouch for is refused, as is a changed one.
    let gold = answers(|c| c.1, "gold");
    let score = || {
        sqlgate()
            .arg("score")
            .arg("--gold")
            .arg(&suite)
            .arg("--pred")
            .arg(&gold)
            .arg("--db-dir")
            .arg(&out)
            .args(["--mode", "testsuite"])
            .run()
    };
    score().assert_success();
    fs::write(&skips_file, "[]\n").unwrap();
    score().assert_bad_input(&["gold-skips.json", "SHA-256"]);
    fs::remove_file(out.join("sqlgate-distill.json")).unwrap();
    score().assert_bad_input(&["gold-skips.json", "not listed"]);
}

/// A schema-only database whose truncated-looking keys carry AUTOINCREMENT, sit in a WITHOUT
/// ROWID table or have names with quotes and a newline still distills; the text report names
/// the relaxed keys on one line, escaped.
#[test]
fn distill_relaxes_keys_of_any_name_and_keeps_what_the_key_needs() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    fs::create_dir(&db_dir).unwrap();
    let conn = rusqlite::Connection::open(db_dir.join("a.sqlite")).unwrap();
    conn.execute_batch(
        "CREATE TABLE p (id INTEGER PRIMARY KEY, n TEXT);
         CREATE TABLE t (a INTEGER PRIMARY KEY AUTOINCREMENT REFERENCES p(id), b TEXT);
         CREATE TABLE w (a TEXT PRIMARY KEY REFERENCES p(id), b TEXT) WITHOUT ROWID;
         CREATE TABLE \"we\"\"ird\n\" (\"a\"\"b\" TEXT, c TEXT, PRIMARY KEY (\"a\"\"b\"),
           FOREIGN KEY (\"a\"\"b\") REFERENCES p(id));",
    )
    .unwrap();
    drop(conn);
    let gold = dir.path().join("gold.txt");
    fs::write(&gold, "SELECT count(*) FROM t JOIN p ON t.a = p.id\ta\n").unwrap();
    let run = |format: &str| {
        sqlgate()
            .arg("distill")
            .arg("--gold")
            .arg(&gold)
            .arg("--db-dir")
            .arg(&db_dir)
            .arg("--out")
            .arg(dir.path().join(format))
            .args(["--candidates", "8", "--format", format])
            .run()
    };
    let json = run("json").assert_success().json();
    assert_eq!(
        json["databases"][0]["relaxed_keys"],
        serde_json::json!(["t.a", "we\"ird\n.a\"b"])
    );
    let text = run("text");
    text.assert_success();
    let line = text
        .stdout
        .lines()
        .find(|l| l.contains("truncated composite keys"))
        .unwrap();
    assert!(line.ends_with(r#"t.a, we\"ird\n.a\"b"#), "{line}");
}

/// Durations (`in 0.4 s`, `"seconds": 0.41`) vary from run to run; the rest is the seed's.
fn without_times(text: &str, dir: &Path) -> String {
    let in_seconds = regex::Regex::new(r"in \d+(\.\d+)? s\b").unwrap();
    let seconds = regex::Regex::new(r#""(\w*seconds\w*)": [0-9.e-]+"#).unwrap();
    let text = in_seconds.replace_all(text, "in [duration]");
    let text = seconds.replace_all(&text, "\"$1\": \"[duration]\"");
    text.replace(&dir.display().to_string(), "[tmp]")
}

#[test]
fn distill_report_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let report = |format: &str| {
        let out = dir.path().join(format!("out-{format}"));
        let run = sqlgate()
            .arg("distill")
            .arg("--gold")
            .arg(&suite)
            .arg("--out")
            .arg(&out)
            .args(["--candidates", "60", "--seed", "5", "--format", format])
            .run();
        run.assert_success();
        without_times(&run.stdout, dir.path())
    };
    insta::assert_snapshot!("distill_text", report("text"));
    insta::assert_snapshot!("distill_json", report("json"));
}

/// docs/distill.md's Defog tables (default flags, seed 42): each database's row, the totals
/// and each operator's totals are what `distill --format json` reports (times aside).
#[test]
fn the_defog_tables_of_the_docs_are_what_distill_reports() {
    let Some(data) = shared_data() else {
        return;
    };
    let defog = data.join("defog");
    check_the_docs_tables(&defog.join("questions.csv"), &defog);
}

/// The same for docs/distill.md's Spider dev tables.
#[test]
fn the_spider_tables_of_the_docs_are_what_distill_reports() {
    let Some(data) = shared_data() else {
        return;
    };
    let spider = data.join("spider-dev");
    check_the_docs_tables(&spider.join("gold.txt"), &spider.join("schema-db"));
}

fn check_the_docs_tables(gold: &Path, db_dir: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let report = sqlgate()
        .arg("distill")
        .arg("--gold")
        .arg(gold)
        .arg("--db-dir")
        .arg(db_dir)
        .arg("--out")
        .arg(dir.path().join("out"))
        .args(["--format", "json"])
        .run()
        .assert_success()
        .json();
    let doc = fs::read_to_string(crate::support::repo().join("docs/distill.md")).unwrap();
    let mut missing = Vec::new();
    let mut operators: std::collections::BTreeMap<String, [u64; 3]> = Default::default();
    const COLUMNS: [&str; 7] = [
        "golds",
        "neighbours",
        "killed_by_original",
        "killed_by_suite",
        "survivors",
        "kept",
        "gold_skips",
    ];
    let mut all = [0; COLUMNS.len()];
    let row = |name: &str, counts: &[u64]| {
        let counts: Vec<String> = counts.iter().map(u64::to_string).collect();
        format!("| {name} | {} |", counts.join(" | "))
    };
    for db in report["databases"].as_array().unwrap() {
        let counts: Vec<u64> = COLUMNS
            .iter()
            .map(|key| db[*key].as_u64().unwrap())
            .collect();
        for (total, n) in all.iter_mut().zip(&counts) {
            *total += n;
        }
        let row = row(db["db"].as_str().unwrap(), &counts);
        if !doc.contains(&row) {
            missing.push(row);
        }
        for (op, counts) in db["operators"].as_object().unwrap() {
            let total = operators.entry(op.clone()).or_default();
            for (i, key) in ["mutants", "accepted_by_original", "rejected_by_suite"]
                .iter()
                .enumerate()
            {
                total[i] += counts[*key].as_u64().unwrap();
            }
        }
    }
    let totals = row("**all**", &all);
    if !doc.contains(&totals) {
        missing.push(totals);
    }
    for (op, [mutants, accepted, rejected]) in operators {
        let row = format!("| `{op}` | {mutants} | {accepted} | {rejected} |");
        if !doc.contains(&row) {
            missing.push(row);
        }
    }
    assert!(
        missing.is_empty(),
        "docs/distill.md lacks\n{}",
        missing.join("\n")
    );
}

/// A suite over the database `name`, past the sample's size: 1,500 orders of 40 customers;
/// `pairs` reads the orders two by two (past the gold bound of a large original),
/// `by_customer` and `one` do not.
fn large_suite(dir: &Path, name: &str) -> PathBuf {
    let db = dir.join("db");
    fs::create_dir_all(&db).unwrap();
    let conn = rusqlite::Connection::open(db.join(format!("{name}.sqlite"))).unwrap();
    conn.execute_batch(
        "CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
         CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL
                              REFERENCES customer(id), amount INTEGER NOT NULL, status TEXT);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)
         INSERT INTO customer SELECT i, 'c' || i FROM n;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1500)
         INSERT INTO orders SELECT i, (i * 7) % 40 + 1, (i * 37) % 101,
                                   CASE WHEN i % 3 = 0 THEN 'open' ELSE 'paid' END FROM n;",
    )
    .unwrap();
    let cases = [
        (
            "pairs",
            "SELECT count(*) FROM orders AS a JOIN orders AS b ON b.amount > a.amount + 90 \
             WHERE a.status = 'open'",
        ),
        (
            "by_customer",
            "SELECT c.name, count(*) FROM orders AS o JOIN customer AS c ON c.id = o.customer_id \
             WHERE o.amount > 50 GROUP BY c.name",
        ),
        ("one", "SELECT name FROM customer WHERE id = 7"),
    ];
    let lines: Vec<String> = cases
        .iter()
        .map(|(id, gold)| {
            serde_json::json!({"id": id, "db": name, "question": id, "gold": gold}).to_string()
        })
        .collect();
    fs::write(dir.join("cases.jsonl"), lines.join("\n")).unwrap();
    let gold: Vec<String> = cases
        .iter()
        .map(|(id, gold)| serde_json::json!({"id": id, "sql": gold}).to_string())
        .collect();
    fs::write(dir.join("gold.jsonl"), gold.join("\n")).unwrap();
    fs::write(
        dir.join("suite.toml"),
        "name = \"big\"\ncases = \"cases.jsonl\"\ndb_dir = \"db\"\n",
    )
    .unwrap();
    dir.join("suite.toml")
}

#[test]
fn a_large_original_leaves_the_neighbours_past_its_bound_to_a_sample_on_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let suite = large_suite(dir.path(), "big");
    let run = |threads: &str, out: &str| {
        let out = dir.path().join(out);
        let report = sqlgate()
            .arg("distill")
            .arg("--gold")
            .arg(&suite)
            .arg("--out")
            .arg(&out)
            .env("RAYON_NUM_THREADS", threads)
            .args(["--candidates", "12", "--format", "json"])
            .run()
            .assert_success()
            .json();
        let mut database = report["databases"][0].clone();
        database["seconds"] = serde_json::Value::Null;
        let files: Vec<(String, Vec<u8>)> = folder_files(&out.join("big"))
            .into_iter()
            .map(|(path, bytes)| (path.file_name().unwrap().to_str().unwrap().into(), bytes))
            .collect();
        (database, files, out)
    };
    let (report, files, out) = run("2", "two");
    let sample = &report["sample"];
    // Only the gold that reads the orders two by two left its neighbours; both tables were
    // read whole or drawn as their size asks.
    assert_eq!(sample["golds"], serde_json::json!(["pairs"]), "{report:#}");
    assert_eq!(sample["tables_drawn"], serde_json::json!(["orders"]));
    let operators = report["operators"].as_object().unwrap();
    let on_sample: u64 = operators
        .values()
        .map(|c| c["judged_on_sample"].as_u64().unwrap_or(0))
        .sum();
    assert!(on_sample > 0);
    assert_eq!(sample["neighbours"].as_u64(), Some(on_sample));
    for counts in operators.values() {
        let judged = counts["accepted_by_original"].as_u64().unwrap()
            + counts["judged_on_sample"].as_u64().unwrap_or(0);
        assert!(counts["rejected_by_suite"].as_u64().unwrap() <= judged);
        assert!(judged <= counts["mutants"].as_u64().unwrap());
    }
    // The neighbours of the other golds were run on the original: it rejects some.
    assert!(report["killed_by_original"].as_u64().unwrap() > 0);
    // The sample is a database of the suite when kept, and every gold passes on the suite.
    let scored = ex(&suite, &dir.path().join("gold.jsonl"), &out);
    assert_eq!(scored.len(), 3);
    assert!(scored.iter().all(|(_, ex)| *ex == 1), "{scored:?}");

    // One thread writes the same bytes and says the same.
    let (one_report, one_files, _) = run("1", "one");
    assert_eq!(one_report, report);
    assert_eq!(one_files, files);
}

#[test]
fn distill_shows_progress_on_a_terminal_and_a_summary_line_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let distill = |format: &str, out: &str| {
        sqlgate()
            .arg("distill")
            .arg("--gold")
            .arg(&suite)
            .arg("--out")
            .arg(dir.path().join(out))
            .args(["--candidates", "12", "--format", format])
            .run()
            .assert_success()
            .stderr
            .clone()
    };
    // Not a terminal: the summary only; JSON: nothing.
    let summary = distill("text", "text");
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(lines.len(), 1, "{summary}");
    assert!(
        lines[0].starts_with("   Distilled 1 database (3 golds), kept "),
        "{summary}"
    );
    assert_eq!(distill("json", "json"), "");

    // On a terminal (a pseudo-terminal of util-linux's `script`): the database and the step
    // as the run goes (what each line holds: console::progress's unit test), then the
    // summary.
    let command = format!(
        "{} distill --gold {} --out {} --candidates 12",
        env!("CARGO_BIN_EXE_sqlgate"),
        suite.display(),
        dir.path().join("terminal").display()
    );
    let output = std::process::Command::new("script")
        .args(["-qefc", &command, "/dev/null"])
        .env_remove("CI")
        .output()
        .expect("util-linux's `script` runs (Debian's bsdutils)");
    assert!(output.status.success());
    let shown = String::from_utf8_lossy(&output.stdout);
    for step in [
        "shop (1/1): golds on the original",
        "Distilled 1 database (3 golds)",
    ] {
        assert!(shown.contains(step), "{step} in {shown}");
    }
}

/// The same on a PostgreSQL server of the test's own, where the sample is a database on the
/// server like the candidates, and the suite written there scores every gold correct.
#[test]
fn a_large_original_on_postgres_is_sampled_into_a_database_of_the_server() {
    let Some(pg) = sqlgate_test_support::postgres::PgServer::start() else {
        return;
    };
    sampled_on_a_server("postgres", &pg.admin_url("{db}"), "big");
}

/// The same on a MariaDB server of the test's own (others count the shared server's
/// databases).
#[test]
fn a_large_original_on_mariadb_is_sampled_into_a_database_of_the_server() {
    let Some(server) = sqlgate_test_support::mariadb::MariaDb::start() else {
        return;
    };
    let writer = server.template(sqlgate_test_support::mariadb::WRITER);
    sampled_on_a_server("mysql", &writer, "big");
}

/// Copies the large suite's database `name` onto the server of `engine` at `dsn`, distills it
/// there and scores its golds on the suite.
fn sampled_on_a_server(engine: &str, dsn: &str, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let suite = large_suite(dir.path(), name);
    sqlgate()
        .arg("copy")
        .arg("--db-dir")
        .arg(dir.path().join("db"))
        .args(["--db", name, "--to-engine", engine, "--to-dsn", dsn])
        .run()
        .assert_success();
    let out = dir.path().join("out");
    let report = sqlgate()
        .arg("distill")
        .arg("--gold")
        .arg(&suite)
        .arg("--out")
        .arg(&out)
        .args(["--engine", engine, "--dsn", dsn])
        .args(["--candidates", "6", "--per-db", "3", "--format", "json"])
        .run()
        .assert_success()
        .json();
    let database = &report["databases"][0];
    assert_eq!(
        database["sample"]["tables_drawn"],
        serde_json::json!(["orders"]),
        "{database:#}"
    );
    assert!(database["sample"]["rows"].as_u64().unwrap() > 1_000);
    let listed = fs::read_to_string(out.join(name).join("databases.txt")).unwrap();
    let listed: Vec<String> = listed.lines().map(str::to_string).collect();
    assert_eq!(
        listed.len(),
        1 + database["kept"].as_u64().unwrap() as usize
    );
    let on_server = ["--engine", engine, "--dsn", dsn];
    let scored = ex_on(&suite, &dir.path().join("gold.jsonl"), &out, &on_server);
    assert_eq!(scored.len(), 3);
    assert!(scored.iter().all(|(_, ex)| *ex == 1), "{scored:?}");
}
