//! State cases as a user runs them: the demo's state tasks (`benchmarks/demo/state`) scored on
//! a copy of the bookshop database, equivalent and wrong answers, hostile answers, and runs
//! killed at random points; the database's bytes never change.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use sqlgate_test_support::mariadb::{self, MariaDb};
use sqlgate_test_support::postgres::PgServer;

use crate::support::{demo, sqlgate, Run};

/// A folder holding the demo's state cases (`cases.jsonl`), a suite manifest reading them from
/// the folder's own copy of the bookshop database, and a temporary folder for the runs.
pub(crate) struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    pub(crate) fn new(cases: &str) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        build_demo_database();
        std::fs::copy(
            demo("build/state/bookshop.sqlite"),
            dir.path().join("bookshop.sqlite"),
        )
        .unwrap();
        std::fs::write(dir.path().join("cases.jsonl"), cases).unwrap();
        std::fs::write(
            dir.path().join("suite.toml"),
            "name = \"state\"\ncases = \"cases.jsonl\"\n",
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("tmp")).unwrap();
        Workspace { dir }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn database(&self) -> Vec<u8> {
        std::fs::read(self.path("bookshop.sqlite")).unwrap()
    }

    pub(crate) fn score(&self, predictions: &str, extra: &[&str]) -> Run {
        std::fs::write(self.path("predictions.jsonl"), predictions).unwrap();
        sqlgate()
            .current_dir(self.dir.path())
            .env("TMPDIR", self.path("tmp"))
            .args([
                "score",
                "--gold",
                "suite.toml",
                "--pred",
                "predictions.jsonl",
            ])
            .args(["--format", "json"])
            .args(extra)
            .run()
    }
}

/// The demo's bookshop database as the state suite builds it (`build/state/`), from its
/// scripts when missing or stale.
pub(crate) fn build_demo_database() {
    sqlgate()
        .args(["score", "--gold"])
        .arg(demo("state/suite.toml"))
        .arg("--pred")
        .arg(demo("state/predictions.jsonl"))
        .run()
        .assert_success();
}

pub(crate) fn demo_cases() -> String {
    std::fs::read_to_string(demo("state/cases.jsonl")).unwrap()
}

/// Each case of a `score --format json` report, by id.
pub(crate) fn by_id(
    report: &serde_json::Value,
) -> std::collections::BTreeMap<String, serde_json::Value> {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| (case["id"].as_str().unwrap().to_string(), case.clone()))
        .collect()
}

fn diagnostics(case: &serde_json::Value) -> String {
    case["diagnostics"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|d| d["message"].as_str().unwrap_or_default().to_string())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[test]
fn the_demo_state_tasks_pass_their_gold_and_judge_the_sample_answers_by_their_effect() {
    let cases = demo_cases();
    let workspace = Workspace::new(&cases);
    let before = workspace.database();
    let gold: String = cases
        .lines()
        .map(|line| {
            let case: serde_json::Value = serde_json::from_str(line).unwrap();
            format!(
                "{}\n",
                serde_json::json!({"id": case["id"], "sql": case["gold"]})
            )
        })
        .collect();
    let report = workspace.score(&gold, &[]).assert_success().json();
    let cases = by_id(&report);
    assert!(cases.len() >= 20);
    for (id, case) in &cases {
        assert_eq!(case["verdict"], "correct", "{id}: {case}");
    }

    let sample = std::fs::read_to_string(demo("state/predictions.jsonl")).unwrap();
    let report = workspace.score(&sample, &[]).assert_success().json();
    let cases = by_id(&report);
    // Another WHERE selecting the same rows, an index of another name in a fenced answer,
    // statements in another valid order, NOT EXISTS for NOT IN.
    for id in ["s01", "s05", "s08", "s10"] {
        assert_eq!(cases[id]["verdict"], "correct", "{id}: {}", cases[id]);
    }
    // One row too many, named with its table.
    assert_eq!(cases["s02"]["verdict"], "incorrect");
    let said = diagnostics(&cases["s02"]);
    assert!(
        said.contains("table `orders`") && said.contains("(97, 32, 5, '2024-12-01', 'cancelled')"),
        "{said}"
    );
    // Another schema.
    assert_eq!(cases["s06"]["verdict"], "incorrect");
    let said = diagnostics(&cases["s06"]);
    assert!(
        said.contains("table `books`") && said.contains("stock TEXT"),
        "{said}"
    );
    // A hostile statement refused before anything ran.
    assert_eq!(cases["s18"]["verdict"], "pred_error");
    assert!(
        cases["s18"]["error"].as_str().unwrap().contains("ATTACH"),
        "{}",
        cases["s18"]
    );
    assert_eq!(workspace.database(), before);
    assert_eq!(std::fs::read_dir(workspace.path("tmp")).unwrap().count(), 0);
}

/// The task every hostile answer is given: database, question, gold.
const HOSTILE_TASK: (&str, &str, &str) = (
    "bookshop",
    "Unlink the authors whose country is unknown from their books.",
    "DELETE FROM book_authors WHERE author_id IN (SELECT author_id FROM authors WHERE country IS NULL)",
);

/// The answers no state case may run, each against the task "unlink the authors whose
/// country is unknown from their books" (61 rows in `book_authors`).
const HOSTILE: [(&str, &str); 9] = [
    ("h1", "ATTACH DATABASE 'stolen.sqlite' AS stolen"),
    ("h2", "VACUUM INTO 'copy.sqlite'"),
    ("h3", "DELETE FROM book_authors; COMMIT; DROP TABLE books"),
    ("h4", "PRAGMA writable_schema = ON"),
    ("h5", "DROP TABLE orders"),
    ("h6", "SELECT load_extension('evil')"),
    ("h7", "CREATE TEMP TABLE t AS SELECT * FROM books"),
    ("h8", "CREATE VIRTUAL TABLE v USING fts5(x)"),
    ("h9", "DELETE FROM order_items WHERE 1; DELETE FROM orders"),
];

/// Appends a state case of `db` asking `question`, answered by `gold`, to `cases`, and the
/// answer `sql` to `predictions`.
fn push_case(
    cases: &mut String,
    predictions: &mut String,
    id: &str,
    (db, question, gold): (&str, &str, &str),
    sql: &str,
) {
    cases.push_str(&format!(
        "{}\n",
        serde_json::json!({"id": id, "db": db, "type": "state", "question": question, "gold": gold})
    ));
    predictions.push_str(&format!("{}\n", serde_json::json!({"id": id, "sql": sql})));
}

/// The hostile answers and a server engine's `extra` ones, against the same task, scored with
/// `flags` and at most 80 rows changed: none passes, and the error of each of `said` holds its
/// words.
fn refuses_hostile_answers(flags: &[&str], extra: &[(&str, &str)], said: &[(&str, &str)]) {
    let (mut cases, mut predictions) = hostile_suite();
    for (id, sql) in extra {
        push_case(&mut cases, &mut predictions, id, HOSTILE_TASK, sql);
    }
    let workspace = Workspace::new(&cases);
    let mut flags = flags.to_vec();
    flags.extend(["--max-rows", "80"]);
    let report = workspace
        .score(&predictions, &flags)
        .assert_success()
        .json();
    for (id, verdict) in verdicts(&report) {
        assert_ne!(verdict, "correct", "{id}: {}", by_id(&report)[&id]);
    }
    let found = by_id(&report);
    for (id, words) in said {
        let said = found[*id]["error"].as_str().unwrap_or_default();
        assert!(said.contains(words), "{id}: {}", found[*id]);
    }
}

pub(crate) fn hostile_suite() -> (String, String) {
    let mut cases = String::new();
    let mut predictions = String::new();
    for (id, sql) in HOSTILE {
        push_case(&mut cases, &mut predictions, id, HOSTILE_TASK, sql);
    }
    (cases, predictions)
}

#[test]
fn hostile_answers_are_refused_and_no_file_changes() {
    let (cases, predictions) = hostile_suite();
    let workspace = Workspace::new(&cases);
    let before = workspace.database();
    // At most 80 rows changed (or read): `DROP TABLE orders` (100 rows) is past the cap.
    let report = workspace
        .score(&predictions, &["--max-rows", "80"])
        .assert_success()
        .json();
    let cases = by_id(&report);
    for (id, sql) in HOSTILE {
        assert_ne!(cases[id]["verdict"], "correct", "{sql}: {}", cases[id]);
    }
    assert_eq!(cases["h5"]["verdict"], "pred_error");
    let said = cases["h5"]["error"].as_str().unwrap();
    assert!(said.contains("more than 80 rows"), "{said}");
    assert_eq!(workspace.database(), before);
    for name in ["stolen.sqlite", "copy.sqlite"] {
        assert!(!workspace.path(name).exists(), "{name}");
    }
    assert_eq!(std::fs::read_dir(workspace.path("tmp")).unwrap().count(), 0);
}

/// How many runs are killed (`SQLGATE_STATE_KILLED_RUNS`; 1,000 measured for the issue).
fn killed_runs() -> usize {
    std::env::var("SQLGATE_STATE_KILLED_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(60)
}

#[test]
fn runs_killed_at_random_points_never_change_the_database() {
    let (hostile_cases, hostile_predictions) = hostile_suite();
    let sample = std::fs::read_to_string(demo("state/predictions.jsonl")).unwrap();
    let workspace = Workspace::new(&(demo_cases() + &hostile_cases));
    std::fs::write(
        workspace.path("predictions.jsonl"),
        sample + &hostile_predictions,
    )
    .unwrap();
    let before = workspace.database();
    let timed = std::time::Instant::now();
    workspace
        .score(
            &std::fs::read_to_string(workspace.path("predictions.jsonl")).unwrap(),
            &[],
        )
        .assert_success();
    let whole = timed.elapsed().as_millis().max(1) as u64;
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    for run in 0..killed_runs() {
        let mut child = sqlgate()
            .current_dir(workspace.dir.path())
            .env("TMPDIR", workspace.path("tmp"))
            .args([
                "score",
                "--gold",
                "suite.toml",
                "--pred",
                "predictions.jsonl",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        std::thread::sleep(Duration::from_millis(rng.random_range(0..whole)));
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            workspace.database() == before,
            "run {run} changed the database"
        );
    }
    // A run killed between copying and opening its scratch copy leaves it in its own
    // temporary folder, never beside the database.
    let beside: Vec<_> = std::fs::read_dir(workspace.dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut expected = [
        "bookshop.sqlite",
        "cases.jsonl",
        "predictions.jsonl",
        "suite.toml",
        "tmp",
    ];
    expected.sort();
    let mut beside = beside;
    beside.sort();
    assert_eq!(beside, expected);
}

/// A small file in LiveSQLBench's format: management tasks (state cases, one with
/// `preprocess_sql` and `clean_up_sql`), query tasks, Python test cases on several.
const LIVESQLBENCH: &str = r#"{"instance_id": "lsb_1", "selected_database": "bookshop", "query": "Raise poetry prices by 10%.", "category": "Management", "preprocess_sql": [], "sol_sql": ["UPDATE books SET price = price * 1.1 WHERE genre = 'Poetry';"], "clean_up_sql": [], "test_cases": ["def test_case(pred_sqls, sol_sqls, db_name, conn):\n    assert True"]}
{"instance_id": "lsb_2", "selected_database": "bookshop", "query": "Delete the lines of cancelled orders.", "category": "Management", "sol_sql": ["DELETE FROM order_items WHERE order_id IN (SELECT order_id FROM orders WHERE status = 'cancelled')"], "test_cases": []}
{"instance_id": "lsb_3", "selected_database": "bookshop", "query": "Index orders by date.", "category": "Management", "sol_sql": ["CREATE INDEX idx_orders_date ON orders(order_date)"], "test_cases": ["def test_case(pred_sqls, sol_sqls, db_name, conn):\n    pass"]}
{"instance_id": "lsb_4", "selected_database": "bookshop", "query": "Drop the helper view.", "category": "Management", "preprocess_sql": ["CREATE VIEW helper AS SELECT 1 AS x"], "sol_sql": ["DROP VIEW helper"], "clean_up_sql": ["DROP VIEW IF EXISTS helper"], "test_cases": []}
{"instance_id": "lsb_5", "selected_database": "bookshop", "query": "Add a stock column, then set it to 0.", "category": "Management", "sol_sql": ["ALTER TABLE books ADD COLUMN stock INTEGER", "UPDATE books SET stock = 0"], "test_cases": []}
{"instance_id": "lsb_6", "selected_database": "bookshop", "query": "Uppercase publisher countries.", "category": "Management", "sol_sql": ["UPDATE publishers SET country = upper(country)"], "test_cases": []}
{"instance_id": "lsb_7", "selected_database": "bookshop", "query": "How many books are there?", "category": "Query", "sol_sql": ["SELECT count(*) FROM books"], "test_cases": ["def test_case(pred_sqls, sol_sqls, db_name, conn):\n    assert ex_base(pred_sqls, sol_sqls, db_name, conn)"], "external_knowledge": ["A book is one row of books."]}
{"instance_id": "lsb_8", "selected_database": "bookshop", "query": "List poetry titles.", "category": "Query", "sol_sql": ["SELECT title FROM books WHERE genre = 'Poetry'"], "test_cases": []}
{"instance_id": "lsb_9", "selected_database": "bookshop", "query": "How many stores?", "category": "Query", "sol_sql": ["SELECT count(*) FROM stores"]}
{"instance_id": 10, "selected_database": "bookshop", "query": "Which publishers have no founding year?", "category": "Query", "sol_sql": ["SELECT name FROM publishers WHERE founded_year IS NULL"], "test_cases": []}
"#;

#[test]
fn a_livesqlbench_file_loads_and_runs_each_task_by_state_or_result() {
    let dir = tempfile::tempdir().unwrap();
    build_demo_database();
    std::fs::copy(
        demo("build/state/bookshop.sqlite"),
        dir.path().join("bookshop.sqlite"),
    )
    .unwrap();
    std::fs::write(dir.path().join("tasks.jsonl"), LIVESQLBENCH).unwrap();
    let answers = [
        ("lsb_1", "UPDATE books SET price = price + price / 10 WHERE genre = 'Poetry'"),
        ("lsb_2", "DELETE FROM order_items WHERE order_id IN (SELECT order_id FROM orders WHERE status <> 'completed')"),
        ("lsb_3", "CREATE INDEX by_date ON orders(order_date)"),
        ("lsb_4", "DROP VIEW helper"),
        ("lsb_5", "ALTER TABLE books ADD COLUMN stock INTEGER; UPDATE books SET stock = 0"),
        ("lsb_6", "UPDATE publishers SET country = lower(country)"),
        ("lsb_7", "SELECT count(book_id) FROM books"),
        ("lsb_8", "SELECT title FROM books WHERE genre = 'Poetry'"),
        ("lsb_9", "SELECT count(*) FROM cities"),
        ("10", "SELECT name FROM publishers WHERE founded_year IS NULL"),
    ];
    let predictions: String = answers
        .iter()
        .map(|(id, sql)| format!("{}\n", serde_json::json!({"id": id, "sql": sql})))
        .collect();
    std::fs::write(dir.path().join("predictions.jsonl"), predictions).unwrap();
    let report = sqlgate()
        .current_dir(dir.path())
        .args([
            "score",
            "--gold",
            "tasks.jsonl",
            "--pred",
            "predictions.jsonl",
        ])
        .args(["--format", "json"])
        .run()
        .assert_success()
        .json();
    let cases = by_id(&report);
    assert_eq!(cases.len(), 10);
    let wrong = ["lsb_2", "lsb_6", "lsb_9"];
    for (id, case) in &cases {
        let expected = if wrong.contains(&id.as_str()) {
            "incorrect"
        } else {
            "correct"
        };
        assert_eq!(case["verdict"], expected, "{id}: {case}");
    }
    // lsb_2 deletes the lines of pending orders too: the first such row is named.
    assert!(diagnostics(&cases["lsb_2"]).contains("table `order_items`"));
    let judged = |id: &str| cases[id]["tags"]["judged_by"].as_str().unwrap().to_string();
    assert_eq!(judged("lsb_1"), "state (its Python test cases are not run)");
    assert_eq!(judged("lsb_4"), "state");
    assert_eq!(
        judged("lsb_7"),
        "result (its Python test cases are not run)"
    );
    assert_eq!(judged("10"), "result");
    assert_eq!(cases["lsb_1"]["tags"]["test_cases"], "1");
    assert_eq!(
        std::fs::read(dir.path().join("bookshop.sqlite")).unwrap(),
        std::fs::read(demo("build/state/bookshop.sqlite")).unwrap()
    );
    // A task without its solution is refused, naming the file, the line and the task.
    std::fs::write(
        dir.path().join("bad.jsonl"),
        "{\"instance_id\": \"a\", \"selected_database\": \"bookshop\", \"query\": \"q\", \"sol_sql\": []}\n",
    )
    .unwrap();
    sqlgate()
        .current_dir(dir.path())
        .args([
            "score",
            "--gold",
            "bad.jsonl",
            "--pred",
            "predictions.jsonl",
        ])
        .run()
        .assert_bad_input(&[
            "bad.jsonl",
            "line 1",
            "task `a`",
            "`sol_sql` holds no statement",
        ]);
}

/// The other generators, the audit and distill read query golds: a state suite is refused,
/// naming its first state case.
#[test]
fn tools_that_read_query_golds_refuse_state_cases() {
    build_demo_database();
    let out = tempfile::tempdir().unwrap();
    let suite = demo("state/suite.toml");
    for args in [
        vec!["generate", "infeasible", "--out"],
        vec!["distill", "--out"],
    ] {
        sqlgate()
            .args(&args)
            .arg(out.path().join("x"))
            .arg("--gold")
            .arg(&suite)
            .run()
            .assert_bad_input(&["cases.jsonl", "case `s01` is a state case"]);
    }
    sqlgate()
        .args(["audit", "--gold"])
        .arg(&suite)
        .run()
        .assert_bad_input(&["cases.jsonl", "case `s01` is a state case"]);
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}

/// The state suite as a gate: each task a named test and a JUnit test case, each snapshot line
/// the digest of the answer's state; after `--accept` the gate passes, and an answer with
/// another effect but the same verdict changes only its own line.
#[test]
fn a_state_suite_gates_like_any_other_and_its_snapshot_shows_each_effect() {
    build_demo_database();
    let dir = tempfile::tempdir().unwrap();
    let predictions = dir.path().join("answers.jsonl");
    std::fs::copy(demo("state/predictions.jsonl"), &predictions).unwrap();
    let config = format!(
        "[[suite]]\nbenchmark = {:?}\ngate = {{ ex = \">= 0.8\" }}\n\n[[system]]\nname = \"sample\"\n\
         type = \"replay\"\npredictions = {{ demo-state = \"answers.jsonl\" }}\n",
        demo("state/suite.toml").to_string_lossy()
    );
    std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
    let gate = |args: &[&str]| {
        sqlgate()
            .current_dir(dir.path())
            .arg("test")
            .args(args)
            .run()
    };
    gate(&["--accept"]).assert_success();
    let run = gate(&["--junit", "junit.xml", "--html", "report.html"]);
    run.assert_success();
    // The report shows where a wrong answer's state differs: s02's extra cancelled order,
    // pending after the gold.
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let s02 = &html[html.find("bookshop::s02").unwrap()..];
    let s02 = &s02[..s02.find("</details>").unwrap()];
    for shown in [
        "The states differ in table orders",
        "only after the gold: 1 row × 5 columns",
        "only after the answer: 1 row × 5 columns",
        "<td>pending</td>",
        "<td>cancelled</td>",
    ] {
        assert!(s02.contains(shown), "{shown} not in {s02}");
    }
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    for case in 1..=20 {
        let name = format!("name=\"bookshop::s{case:02}\" classname=\"demo-state\"");
        assert!(junit.contains(&name), "{name} not in the JUnit report");
    }
    let snapshot = std::fs::read_to_string(dir.path().join("snapshots/demo-state.snap")).unwrap();
    let lines: Vec<&str> = snapshot
        .lines()
        .filter(|l| l.starts_with("demo-state::"))
        .collect();
    assert_eq!(lines.len(), 20);
    // Every answer that ran has the digest of its state; the refused one (ATTACH) has none.
    for line in &lines {
        let refused = line.starts_with("demo-state::bookshop::s18 | fail | pred_error");
        assert_eq!(line.contains(" | state="), !refused, "{line}");
    }
    // s02 stays wrong, with another effect: its line, and only its line, changes.
    crate::support::replace_prediction(
        &predictions,
        "s02",
        "UPDATE orders SET status = 'cancelled' WHERE status = 'pending'",
    );
    gate(&[]).assert_success();
    let new = std::fs::read_to_string(dir.path().join("snapshots/demo-state.snap.new")).unwrap();
    let changed: Vec<&str> = new
        .lines()
        .filter(|line| line.starts_with("demo-state::") && !lines.contains(line))
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert!(changed[0].starts_with("demo-state::bookshop::s02 | fail | incorrect"));
}

/// The demo suite and the state suite build the bookshop database from the same scripts into
/// folders of their own: loading one never rebuilds the other's file under the tests reading it.
#[test]
fn the_demo_and_state_suites_never_rebuild_each_others_database() {
    use std::os::unix::fs::MetadataExt;
    let score_demo = || {
        sqlgate()
            .args(["score", "--gold"])
            .arg(demo("suite.toml"))
            .arg("--pred")
            .arg(demo("predictions/gold.jsonl"))
            .run()
            .assert_success();
    };
    score_demo();
    build_demo_database();
    let identity = |file: &str| {
        let meta = std::fs::metadata(demo(file)).unwrap();
        (meta.ino(), meta.mtime_nsec(), meta.mtime())
    };
    let before = (
        identity("build/bookshop.sqlite"),
        identity("build/state/bookshop.sqlite"),
    );
    score_demo();
    build_demo_database();
    score_demo();
    let after = (
        identity("build/bookshop.sqlite"),
        identity("build/state/bookshop.sqlite"),
    );
    assert_eq!(before, after);
}

/// A state case's own fields, mistyped or on a query case, are refused naming the file, the
/// line and the problem.
#[test]
fn bad_state_fields_are_refused_with_their_line() {
    let workspace = Workspace::new("");
    for (line, problem) in [
        (
            r#"{"id": "a", "db": "bookshop", "type": "state", "question": "q", "gold": "DELETE FROM t", "setup": 5}"#,
            "`setup` must be a string or a list of strings, found a number",
        ),
        (
            r#"{"id": "a", "db": "bookshop", "type": "state", "question": "q", "gold": "DELETE FROM t", "checks": ["SELECT 1", " "]}"#,
            "`checks` holds an empty statement",
        ),
        (
            r#"{"id": "a", "db": "bookshop", "question": "q", "gold": "SELECT 1", "checks": ["SELECT 1"]}"#,
            "belong to a state case",
        ),
    ] {
        std::fs::write(workspace.path("cases.jsonl"), format!("\n{line}\n")).unwrap();
        workspace
            .score("", &[])
            .assert_bad_input(&["cases.jsonl", "line 2", "case `a`", problem]);
    }
}

/// Each case's gold statements as its answer.
pub(crate) fn gold_answers(cases: &str) -> String {
    cases
        .lines()
        .map(|line| {
            let case: serde_json::Value = serde_json::from_str(line).unwrap();
            format!(
                "{}\n",
                serde_json::json!({"id": case["id"], "sql": case["gold"]})
            )
        })
        .collect()
}

/// The flags of a run on `pg`'s databases: read as the read-only role, state cases run as the
/// scratch role.
fn on_postgres(pg: &PgServer) -> Vec<String> {
    [
        "--engine",
        "postgres",
        "--dsn",
        &pg.reader_template(),
        "--scratch-dsn",
        &pg.scratch_template(),
    ]
    .map(str::to_string)
    .to_vec()
}

pub(crate) fn verdicts(report: &serde_json::Value) -> std::collections::BTreeMap<String, String> {
    by_id(report)
        .into_iter()
        .map(|(id, case)| (id, case["verdict"].as_str().unwrap().to_string()))
        .collect()
}

/// The demo's state tasks on a PostgreSQL server: the bookshop database copied onto it by
/// `sqlgate copy`, its tables given to an owner role that is not a superuser, and the scratch
/// role set up by `docs/postgres-scratch.sql`. The golds pass, the sample answers get SQLite's
/// verdicts, no hostile answer passes, and the server's dump (data, schema, owners, rights) is
/// unchanged.
#[test]
fn the_demo_state_tasks_judge_the_same_on_postgres_and_change_nothing() {
    let Some(pg) = PgServer::start() else { return };
    build_demo_database();
    sqlgate()
        .args(["copy", "--db", "bookshop", "--db-dir"])
        .arg(demo("build/state"))
        .args(["--to-engine", "postgres", "--to-dsn", &pg.admin_url("{db}")])
        .run()
        .assert_success();
    pg.add_reader("bookshop");
    pg.add_scratch("bookshop", "bookshop_owner");
    let before = pg.dump_checksum("bookshop");

    let cases = demo_cases();
    let workspace = Workspace::new(&cases);
    let server = on_postgres(&pg);
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    let report = workspace
        .score(&gold_answers(&cases), &server)
        .assert_success()
        .json();
    for (id, verdict) in verdicts(&report) {
        assert_eq!(verdict, "correct", "{id}: {}", by_id(&report)[&id]);
    }

    let sample = std::fs::read_to_string(demo("state/predictions.jsonl")).unwrap();
    let on_sqlite = verdicts(&workspace.score(&sample, &[]).assert_success().json());
    let report = workspace.score(&sample, &server).assert_success().json();
    assert_eq!(verdicts(&report), on_sqlite);
    let said = diagnostics(&by_id(&report)["s02"]);
    assert!(said.contains("table `orders`"), "{said}");

    // The hostile answers, and what a server offers beyond them: becoming another role,
    // reading a server file, ending the transaction from inside a statement.
    refuses_hostile_answers(
        &server,
        &[
            ("p1", "SELECT set_config('role', 'postgres', false)"),
            ("p2", "SELECT pg_read_file('/etc/passwd')"),
            (
                "p3",
                "CREATE TABLE x AS SELECT query_to_xml('COMMIT', true, false, '')",
            ),
            ("p4", "TRUNCATE book_authors"),
        ],
        &[
            ("h5", "more than 80 rows"),
            ("p1", "permission denied to set role"),
            ("p2", "reaches outside the database"),
            ("p4", "is refused"),
        ],
    );
    assert_eq!(pg.dump_checksum("bookshop"), before);
}

/// Sequences are not rolled back: each case starts from the values the run found, so the
/// gold's and the answer's inserts draw the same numbers, an answer drawing one more differs,
/// and the database ends as it began.
#[test]
fn sequences_drawn_by_a_case_are_set_back_on_postgres() {
    let Some(pg) = PgServer::start() else { return };
    pg.psql("postgres", &["-c", "CREATE DATABASE counters"]);
    pg.psql(
        "counters",
        &[
            "-c",
            "CREATE TABLE tickets (id serial PRIMARY KEY, note text NOT NULL); \
             INSERT INTO tickets (note) VALUES ('first'), ('second')",
        ],
    );
    pg.add_reader("counters");
    pg.add_scratch("counters", "counters_owner");
    let before = pg.dump_checksum("counters");
    let gold = "INSERT INTO tickets (note) VALUES ('third')";
    let answers = [
        (
            "c1",
            "INSERT INTO tickets (note) VALUES ('third')",
            "correct",
        ),
        (
            "c2",
            "SELECT nextval('tickets_id_seq'); INSERT INTO tickets (note) VALUES ('third')",
            "incorrect",
        ),
        (
            "c3",
            "INSERT INTO tickets (id, note) VALUES (3, 'third')",
            "correct",
        ),
        (
            "c4",
            "INSERT INTO tickets (note) VALUES ('third')",
            "correct",
        ),
    ];
    let mut cases = String::new();
    let mut predictions = String::new();
    for (id, sql, _) in answers {
        push_case(
            &mut cases,
            &mut predictions,
            id,
            ("counters", "Add the ticket 'third'.", gold),
            sql,
        );
    }
    let workspace = Workspace::new(&cases);
    let server = on_postgres(&pg);
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    let report = workspace
        .score(&predictions, &server)
        .assert_success()
        .json();
    let found = verdicts(&report);
    for (id, _, verdict) in answers {
        assert_eq!(found[id], verdict, "{id}: {}", by_id(&report)[id]);
    }
    assert_eq!(pg.dump_checksum("counters"), before);

    // A scratch role that is a superuser is refused, each case saying why.
    let mut flags = server.clone();
    let admin = pg.admin_url("{db}");
    *flags.last_mut().unwrap() = &admin;
    let report = workspace
        .score(&predictions, &flags)
        .assert_success()
        .json();
    for case in by_id(&report).values() {
        assert_eq!(case["verdict"], "gold_error", "{case}");
        let said = case["error"].as_str().unwrap();
        assert!(said.contains("is a superuser"), "{said}");
    }
    assert_eq!(pg.dump_checksum("counters"), before);
}

/// The flags of a run on `maria`'s databases: read as the read-only user, scratch copies made
/// by `scratch` (the user `docs/mysql-scratch.sql` sets up, or another).
fn on_mariadb(maria: &MariaDb, scratch: &str) -> Vec<String> {
    [
        "--engine",
        "mysql",
        "--dsn",
        &maria.template(mariadb::READER),
        "--scratch-dsn",
        &maria.template(scratch),
    ]
    .map(str::to_string)
    .to_vec()
}

/// The demo's state tasks on a MariaDB server: the bookshop database copied onto it by
/// `sqlgate copy`, read by the read-only user, copied per worker by the scratch user of
/// `docs/mysql-scratch.sql`. The golds pass, the sample answers get SQLite's verdicts, no
/// hostile answer passes, AUTO_INCREMENT counters are set back, a scratch user that could
/// write the original is refused, runs killed at random points leave nothing behind that the
/// next run does not drop, and the original's tables and rows never change.
#[test]
fn the_demo_state_tasks_judge_the_same_on_mariadb_and_change_nothing() {
    let Some(maria) = MariaDb::start() else {
        return;
    };
    build_demo_database();
    sqlgate()
        .args(["copy", "--db", "bookshop", "--db-dir"])
        .arg(demo("build/state"))
        .args(["--to-engine", "mysql", "--to-dsn"])
        .arg(maria.template(mariadb::WRITER))
        .run()
        .assert_success();
    maria.sql(
        "CREATE TABLE bookshop.tickets (id INT AUTO_INCREMENT PRIMARY KEY, note TEXT NOT NULL); \
         INSERT INTO bookshop.tickets (note) VALUES ('first'), ('second')",
    );
    maria.add_reader("bookshop");
    maria.add_scratch("bookshop");
    let before = maria.fingerprint("bookshop");
    let server = on_mariadb(&maria, mariadb::SCRATCH);
    let server: Vec<&str> = server.iter().map(String::as_str).collect();

    let cases = demo_cases();
    let workspace = Workspace::new(&cases);
    let report = workspace
        .score(&gold_answers(&cases), &server)
        .assert_success()
        .json();
    for (id, verdict) in verdicts(&report) {
        assert_eq!(verdict, "correct", "{id}: {}", by_id(&report)[&id]);
    }
    let sample = std::fs::read_to_string(demo("state/predictions.jsonl")).unwrap();
    let on_sqlite = verdicts(&workspace.score(&sample, &[]).assert_success().json());
    let report = workspace.score(&sample, &server).assert_success().json();
    assert_eq!(verdicts(&report), on_sqlite, "{report}");
    let said = diagnostics(&by_id(&report)["s02"]);
    assert!(said.contains("table `orders`"), "{said}");
    assert_eq!(maria.fingerprint("bookshop"), before);
    assert_eq!(maria.scratch_databases(), Vec::<String>::new());

    // The hostile answers, and what a MySQL server offers beyond them.
    let copy = "sqlgate_scratch_0123456789abcdef";
    let drop_copy = format!("DROP TABLE {copy}.book_authors");
    refuses_hostile_answers(
        &server,
        &[
            ("m1", "UPDATE bookshop.books SET price = 0"),
            ("m2", &drop_copy),
            ("m3", "CREATE TABLE x (a INT) DATA DIRECTORY = '/tmp'"),
            ("m4", "SELECT * FROM books INTO OUTFILE '/tmp/sqlgate-books'"),
            ("m5", "SET autocommit = 1"),
            ("m6", "CREATE EVENT e ON SCHEDULE EVERY 1 SECOND DO DELETE FROM book_authors"),
            ("m7", "CREATE TABLE x (a INT) ENGINE = CONNECT TABLE_TYPE = CSV FILE_NAME = '/etc/passwd'"),
            ("m8", "DELETE FROM book_authors /*! ; DROP DATABASE bookshop */"),
            ("m9", "CREATE TEMPORARY TABLE book_authors AS SELECT * FROM book_authors WHERE 0"),
            ("m10", "DROP DATABASE bookshop"),
            ("m11", "CREATE TABLE x (a BIGINT, FOREIGN KEY (a) REFERENCES bookshop.books (book_id))"),
        ],
        &[
            ("h5", "more than 80 rows"),
            ("m1", "UPDATE command denied"),
            ("m2", "names a database of sqlgate's own"),
            ("m5", "is refused"),
            ("m6", "is refused"),
            ("m7", "storage engine"),
            ("m8", "executable comment"),
            ("m11", "original database `bookshop` named"),
        ],
    );
    assert!(!std::path::Path::new("/tmp/sqlgate-books").exists());
    assert_eq!(maria.fingerprint("bookshop"), before);

    // AUTO_INCREMENT counters are not rolled back: each case starts from the original's, so
    // the gold's and the answer's inserts draw the same ids.
    let gold = "INSERT INTO tickets (note) VALUES ('third')";
    let answers = [
        (
            "c1",
            "INSERT INTO tickets (note) VALUES ('third')",
            "correct",
        ),
        (
            "c2",
            "INSERT INTO tickets (id, note) VALUES (3, 'third')",
            "correct",
        ),
        (
            "c3",
            "INSERT INTO tickets (id, note) VALUES (4, 'third')",
            "incorrect",
        ),
        (
            "c4",
            "INSERT INTO tickets (note) VALUES ('third')",
            "correct",
        ),
    ];
    let mut cases = String::new();
    let mut predictions = String::new();
    for (id, sql, _) in answers {
        push_case(
            &mut cases,
            &mut predictions,
            id,
            ("bookshop", "Add the ticket 'third'.", gold),
            sql,
        );
    }
    let workspace = Workspace::new(&cases);
    let report = workspace
        .score(&predictions, &server)
        .assert_success()
        .json();
    let found = verdicts(&report);
    for (id, _, verdict) in answers {
        assert_eq!(found[id], verdict, "{id}: {}", by_id(&report)[id]);
    }

    // A scratch user that may write the original is refused, each case saying why.
    let writer = on_mariadb(&maria, mariadb::WRITER);
    let writer: Vec<&str> = writer.iter().map(String::as_str).collect();
    let report = workspace
        .score(&predictions, &writer)
        .assert_success()
        .json();
    for case in by_id(&report).values() {
        assert_eq!(case["verdict"], "gold_error", "{case}");
        let said = case["error"].as_str().unwrap();
        assert!(said.contains("could change the original"), "{said}");
    }

    // Runs killed at random points: the copies they leave are dropped by the next run.
    let workspace = Workspace::new(&demo_cases());
    std::fs::write(workspace.path("predictions.jsonl"), &sample).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut left = 0;
    for _ in 0..8 {
        let mut child = sqlgate()
            .current_dir(workspace.dir.path())
            .env("TMPDIR", workspace.path("tmp"))
            .args([
                "score",
                "--gold",
                "suite.toml",
                "--pred",
                "predictions.jsonl",
            ])
            .args(&server)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        std::thread::sleep(Duration::from_millis(rng.random_range(200..3000)));
        let _ = child.kill();
        let _ = child.wait();
        left += maria.scratch_databases().len();
        assert_eq!(maria.fingerprint("bookshop"), before);
    }
    // A killed run's session lives on until the server notices it is gone (a statement
    // running when it was killed finishes first): its copy is dropped by a run that starts
    // after that.
    let started = std::time::Instant::now();
    while maria
        .sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'sqlgate_scratch'")
        .trim()
        != "0"
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "killed sessions live on"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    workspace.score(&sample, &server).assert_success();
    assert_eq!(
        maria.scratch_databases(),
        Vec::<String>::new(),
        "{left} were left by killed runs"
    );
    assert_eq!(maria.fingerprint("bookshop"), before);
}

/// On MySQL the server tells no rows changed per table: the tables a script touched are read
/// off its statements, with the tables their foreign keys cascade to, and every table once a
/// trigger may fire. Each answer below leaves `parent` as the gold does and differs only in a
/// table no statement names.
#[test]
fn cascades_and_triggers_on_mariadb_reach_the_tables_they_change() {
    let Some(maria) = MariaDb::start() else {
        return;
    };
    maria.sql(
        "CREATE DATABASE family; \
         CREATE TABLE family.parent (id INT PRIMARY KEY, name VARCHAR(20)) ENGINE = InnoDB; \
         CREATE TABLE family.child (id INT PRIMARY KEY, parent_id INT, \
           FOREIGN KEY (parent_id) REFERENCES family.parent (id) ON UPDATE SET NULL) \
           ENGINE = InnoDB; \
         CREATE TABLE family.log (note VARCHAR(20)) ENGINE = InnoDB; \
         INSERT INTO family.parent VALUES (1, 'a'), (2, 'b'); \
         INSERT INTO family.child VALUES (1, 1), (2, 1), (3, 2)",
    );
    maria.add_reader("family");
    maria.add_scratch("family");
    let before = maria.fingerprint("family");
    let trigger = "CREATE TRIGGER noted AFTER UPDATE ON parent FOR EACH ROW INSERT INTO log VALUES (NEW.name)";
    let tasks = [
        // The round trip through id 10 sets the children's parent_id to NULL.
        (
            "k1",
            "UPDATE parent SET name = name WHERE id = 1",
            None,
            "UPDATE parent SET id = 10 WHERE id = 1; UPDATE parent SET id = 1 WHERE id = 10",
            "incorrect",
        ),
        (
            "k2",
            "UPDATE parent SET name = 'c' WHERE id = 1",
            None,
            "UPDATE parent SET name = 'c' WHERE id = 1",
            "correct",
        ),
        // The trigger logs each update: two updates log two rows.
        (
            "k3",
            "UPDATE parent SET name = 'c' WHERE id = 1",
            Some(trigger),
            "UPDATE parent SET name = 'x' WHERE id = 1; UPDATE parent SET name = 'c' WHERE id = 1",
            "incorrect",
        ),
        (
            "k4",
            "UPDATE parent SET name = 'c' WHERE id = 1",
            Some(trigger),
            "UPDATE parent SET name = 'c' WHERE id = 1",
            "correct",
        ),
    ];
    let mut cases = String::new();
    let mut predictions = String::new();
    for (id, gold, setup, answer, _) in tasks {
        let mut case = serde_json::json!({"id": id, "db": "family", "type": "state", "question": "Rename the first parent.", "gold": gold});
        if let Some(setup) = setup {
            case["setup"] = serde_json::json!([setup]);
        }
        cases.push_str(&format!("{case}\n"));
        predictions.push_str(&format!(
            "{}\n",
            serde_json::json!({"id": id, "sql": answer})
        ));
    }
    let workspace = Workspace::new(&cases);
    let server = on_mariadb(&maria, mariadb::SCRATCH);
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    let report = workspace
        .score(&predictions, &server)
        .assert_success()
        .json();
    let found = by_id(&report);
    for (id, _, _, _, verdict) in tasks {
        assert_eq!(found[id]["verdict"], verdict, "{id}: {}", found[id]);
    }
    for (id, table) in [("k1", "table `child`"), ("k3", "table `log`")] {
        let said = diagnostics(&found[id]);
        assert!(said.contains(table), "{id}: {said}");
    }
    assert_eq!(maria.fingerprint("family"), before);
    assert_eq!(maria.scratch_databases(), Vec::<String>::new());
}

/// A Python test case of LiveSQLBench: `body` as `test_case`'s lines, `q(sql)` the first value
/// of a query on the state.
fn python_test(body: &str) -> String {
    let mut code = "def test_case(pred_sqls, sol_sqls, db_name, conn):\n    \
                    q = lambda sql: perform_query_on_sqlite_databases(sql, db_name, conn)[0][0][0]\n"
        .to_string();
    for line in body.lines() {
        code.push_str("    ");
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// With `--python-tests`, a LiveSQLBench task with Python test cases is judged by them: one
/// looser than the state comparison passes an answer that leaves another state, a gold that
/// fails its own test is a gold error, LiveSQLBench's helpers (`ex_base`,
/// `check_sql_function_usage`) are in scope, and a hostile answer is refused before Python runs.
/// Without it, the same file is judged by state and result, as each task's tag says.
#[test]
fn livesqlbench_python_test_cases_judge_the_answers_when_the_suite_opts_in() {
    let dir = tempfile::tempdir().unwrap();
    build_demo_database();
    let db = dir.path().join("bookshop.sqlite");
    std::fs::copy(demo("build/state/bookshop.sqlite"), &db).unwrap();
    let value = |sql: &str| -> f64 {
        rusqlite::Connection::open(&db)
            .unwrap()
            .query_row(sql, [], |row| row.get(0))
            .unwrap()
    };
    let poetry_after = value("SELECT sum(price) * 1.1 FROM books WHERE genre = 'Poetry'");
    let lines_after = value(
        "SELECT count(*) FROM order_items WHERE order_id NOT IN \
         (SELECT order_id FROM orders WHERE status = 'cancelled')",
    );
    let ex = python_test("assert ex_base(pred_sqls, sol_sqls, db_name, conn) == 1");
    let tasks = [
        ("m1", "Management", "UPDATE books SET price = price * 1.1 WHERE genre = 'Poetry'",
         python_test(&format!("assert abs(q(\"SELECT sum(price) FROM books WHERE genre = 'Poetry'\") - {poetry_after}) < 0.01"))),
        ("m2", "Management", "DELETE FROM order_items WHERE order_id IN (SELECT order_id FROM orders WHERE status = 'cancelled')",
         python_test(&format!("assert q('SELECT count(*) FROM order_items') == {lines_after}"))),
        ("m3", "Management", "CREATE INDEX idx_orders_date ON orders (order_date)",
         python_test("assert q(\"SELECT count(*) FROM pragma_index_list('orders') l, pragma_index_info(l.name) i WHERE i.name = 'order_date'\") == 1")),
        ("m4", "Management", "UPDATE orders SET status = 'cancelled' WHERE status = 'pending' AND order_date < '2024-12-01'",
         python_test("assert q(\"SELECT count(*) FROM orders WHERE status = 'pending' AND order_date < '2024-12-01'\") == 0")),
        ("m5", "Management", "UPDATE publishers SET country = upper(country)",
         python_test("assert q('SELECT count(*) FROM publishers') == -1, 'a broken test'")),
        ("m6", "Management", "DELETE FROM book_authors WHERE author_id IN (SELECT author_id FROM authors WHERE country IS NULL)",
         python_test("assert q('SELECT count(*) FROM book_authors') >= 0")),
        ("q1", "Query", "SELECT title FROM books WHERE genre = 'Poetry'", ex.clone()),
        ("q2", "Query", "SELECT count(*) FROM stores", ex),
        ("q3", "Query", "SELECT count(*) FROM books",
         python_test("assert check_sql_function_usage(pred_sqls, ['count'])")),
        ("m7", "Management", "UPDATE books SET price = price * 2 WHERE book_id = 1", String::new()),
    ];
    let answers = [
        ("m1", "UPDATE books SET price = price + price / 10 WHERE genre = 'Poetry'"),
        ("m2", "DELETE FROM order_items WHERE order_id IN (SELECT order_id FROM orders WHERE status <> 'completed')"),
        ("m3", "CREATE INDEX orders_by_day ON orders(order_date)"),
        // One row more than the gold's (s02's), which the test does not look at.
        ("m4", "UPDATE orders SET status = 'cancelled' WHERE status = 'pending' AND order_date <= '2024-12-01'"),
        ("m5", "UPDATE publishers SET country = upper(country)"),
        ("m6", "ATTACH DATABASE 'stolen.sqlite' AS s; DELETE FROM book_authors"),
        ("q1", "SELECT DISTINCT title FROM books WHERE genre IN ('Poetry')"),
        ("q2", "SELECT count(*) FROM cities"),
        ("q3", "SELECT count(book_id) FROM books"),
        ("m7", "UPDATE books SET price = price + price WHERE book_id = 1"),
    ];
    let file: String = tasks
        .iter()
        .map(|(id, category, gold, test)| {
            let tests: Vec<&String> = std::iter::once(test).filter(|t| !t.is_empty()).collect();
            format!(
                "{}\n",
                serde_json::json!({"instance_id": id, "selected_database": "bookshop",
                    "query": format!("task {id}"), "category": category, "preprocess_sql": [],
                    "sol_sql": [gold], "clean_up_sql": [], "test_cases": tests})
            )
        })
        .collect();
    std::fs::write(dir.path().join("tasks.jsonl"), file).unwrap();
    let predictions: String = answers
        .iter()
        .map(|(id, sql)| format!("{}\n", serde_json::json!({"id": id, "sql": sql})))
        .collect();
    std::fs::write(dir.path().join("predictions.jsonl"), predictions).unwrap();
    let score = |extra: &[&str]| {
        sqlgate()
            .current_dir(dir.path())
            .args([
                "score",
                "--gold",
                "tasks.jsonl",
                "--pred",
                "predictions.jsonl",
            ])
            .args(["--format", "json"])
            .args(extra)
            .run()
            .assert_success()
            .json()
    };
    let before = std::fs::read(&db).unwrap();

    let report = score(&["--python-tests"]);
    let cases = by_id(&report);
    let expected = [
        ("m1", "correct"),
        ("m2", "incorrect"),
        ("m3", "correct"),
        ("m4", "correct"),
        ("m5", "gold_error"),
        ("m6", "pred_error"),
        ("q1", "correct"),
        ("q2", "incorrect"),
        ("q3", "correct"),
        ("m7", "correct"),
    ];
    for (id, verdict) in expected {
        assert_eq!(cases[id]["verdict"], verdict, "{id}: {}", cases[id]);
    }
    assert!(diagnostics(&cases["m2"]).contains("test case 1 of 1: AssertionError"));
    let said = cases["m5"]["error"].as_str().unwrap();
    assert!(
        said.contains("the gold fails its own test case 1: AssertionError: a broken test"),
        "{said}"
    );
    assert!(cases["m6"]["error"].as_str().unwrap().contains("ATTACH"));
    let judged = |cases: &std::collections::BTreeMap<String, serde_json::Value>, id: &str| {
        cases[id]["tags"]["judged_by"].as_str().unwrap().to_string()
    };
    assert_eq!(judged(&cases, "m1"), "its Python test cases");
    assert_eq!(judged(&cases, "q1"), "its Python test cases");
    assert_eq!(judged(&cases, "m7"), "state");

    // Without the opt-in: by state and result; m4's other state is wrong, m5's gold is fine.
    let cases = by_id(&score(&[]));
    assert_eq!(cases["m4"]["verdict"], "incorrect");
    assert_eq!(cases["m5"]["verdict"], "correct");
    assert_eq!(
        judged(&cases, "m1"),
        "state (its Python test cases are not run)"
    );
    assert_eq!(std::fs::read(&db).unwrap(), before);
    for name in ["stolen.sqlite", "copy.sqlite"] {
        assert!(!dir.path().join(name).exists(), "{name}");
    }
}

/// `generate errors` on the state suite writes DML mutants of each gold script (WHERE
/// dropped, SET column swapped, wrong table) as state cases whose gold is the original and
/// whose prediction is the mutant; scored, nearly every one is wrong, each named by its seed,
/// operator and statement, and the same seed writes the same files.
#[test]
fn generate_errors_writes_dml_mutants_of_state_cases_that_score_as_wrong() {
    build_demo_database();
    let out = tempfile::tempdir().unwrap();
    let generate = |to: &std::path::Path| {
        sqlgate()
            .args(["generate", "errors", "--gold"])
            .arg(demo("state/suite.toml"))
            .arg("--out")
            .arg(to)
            .run()
            .assert_success();
    };
    let first = out.path().join("a");
    generate(&first);
    let second = out.path().join("b");
    generate(&second);
    for file in ["cases.jsonl", "predictions.jsonl"] {
        assert_eq!(
            std::fs::read(first.join(file)).unwrap(),
            std::fs::read(second.join(file)).unwrap()
        );
    }
    let cases = std::fs::read_to_string(first.join("cases.jsonl")).unwrap();
    let written: Vec<serde_json::Value> = cases
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(written.iter().all(|case| case["type"] == "state"));
    let operators: std::collections::BTreeSet<&str> = written
        .iter()
        .map(|case| case["tags"]["operator"].as_str().unwrap())
        .collect();
    assert_eq!(
        operators,
        ["set_column_swapped", "where_dropped", "wrong_table"].into()
    );
    let ids: Vec<&str> = written.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"s01::errors::where_dropped"), "{ids:?}");
    // s08 has two statements: each mutant names the one it changed.
    assert!(ids.contains(&"s08::errors::where_dropped_2"), "{ids:?}");
    // s19's checks go with its mutants.
    let s19 = written
        .iter()
        .find(|c| c["id"] == "s19::errors::where_dropped_1")
        .unwrap();
    assert_eq!(s19["checks"].as_array().unwrap().len(), 2);

    let report = sqlgate()
        .args(["score", "--gold"])
        .arg(first.join("suite.toml"))
        .arg("--pred")
        .arg(first.join("predictions.jsonl"))
        .args(["--format", "json"])
        .run()
        .assert_success()
        .json();
    let found = verdicts(&report);
    assert_eq!(found.len(), written.len());
    let wrong = found
        .values()
        .filter(|v| *v == "incorrect" || *v == "pred_error")
        .count();
    // A mutant can leave the gold's state (a WHERE that selects every row): rare.
    assert!(
        wrong * 10 >= found.len() * 9,
        "{wrong} of {}: {found:?}",
        found.len()
    );
    assert!(found.values().all(|v| v != "gold_error"), "{found:?}");
    // docs/state.md gives these numbers.
    let count = |verdict: &str| found.values().filter(|v| *v == verdict).count();
    let said = format!(
        "it writes {} mutants, and `score` finds every one wrong ({} `incorrect`, {} \
         `pred_error`",
        found.len(),
        count("incorrect"),
        count("pred_error")
    );
    let docs = std::fs::read_to_string(crate::support::repo().join("docs/state.md")).unwrap();
    let docs = docs.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(docs.contains(&said), "docs/state.md should say: {said}");
}
