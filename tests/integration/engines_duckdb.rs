//! The DuckDB engine as a user reaches it in a build with the cargo feature `duckdb` (as
//! `.ci/run` and the release binaries make): the Defog databases copied into `.duckdb` files by
//! `sqlgate copy`, then scored, audited and attacked there.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::engines::{
    copy, defog, engine_disagreements, gold_predictions, score_json, verdicts, DEFOG,
};
use crate::support::sqlgate;

/// Defog's SQLite golds that DuckDB runs as written (measured: 128 of 135; the others call
/// SQLite's date functions, `julianday`, `datetime`, `date` with modifiers).
const DUCKDB_RUNS: usize = 128;

/// The Defog databases as DuckDB files, copied once per test binary by `sqlgate copy`.
fn duckdb_defog() -> Option<(PathBuf, &'static Path)> {
    static FOLDER: OnceLock<&'static Path> = OnceLock::new();
    let defog = defog()?;
    let folder = FOLDER.get_or_init(|| {
        let folder = sqlgate_test_support::removed_at_exit();
        let to = folder.to_string_lossy().into_owned();
        copy(&defog, &["--to-engine", "duckdb", "--to-db-dir", &to]).assert_success();
        folder
    });
    Some((defog, folder))
}

/// Every Defog DuckDB file's bytes.
fn file_bytes(folder: &Path) -> Vec<Vec<u8>> {
    DEFOG
        .iter()
        .map(|db| std::fs::read(folder.join(format!("{db}.duckdb"))).unwrap())
        .collect()
}

/// Gold as prediction on the DuckDB copies: every case whose gold (SQLite's dialect) DuckDB
/// runs is correct and the others are gold errors, never a wrong prediction; ETM (DuckDB's
/// plans and catalog) is 1 on each correct case, and `steps` (the plan's estimated
/// cardinalities) costs the same SQL the same.
#[test]
fn defog_on_duckdb_scores_gold_as_prediction() {
    let Some((defog, folder)) = duckdb_defog() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let gold = defog.join("questions.csv");
    let pred = gold_predictions(dir.path(), &gold);
    let before = file_bytes(folder);
    let folder_flag = folder.to_string_lossy();
    let run = score_json(
        &gold,
        &pred,
        &[
            "--engine",
            "duckdb",
            "--db-dir",
            &folder_flag,
            "--metrics",
            "etm",
            "--efficiency",
            "steps",
        ],
    );
    let cases = verdicts(&run);
    assert_eq!(cases.len(), 135);
    let correct = cases.iter().filter(|(ex, _)| *ex == 1.0).count();
    let gold_errors = cases.iter().filter(|(_, failed)| *failed).count();
    assert_eq!(
        correct + gold_errors,
        135,
        "a gold as prediction was scored wrong"
    );
    assert_eq!(correct, DUCKDB_RUNS);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let mut measured = 0;
    for case in report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ex"] == 1)
    {
        assert_eq!(case["etm"], 1, "{case}");
        let failed = case["diagnostics"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|d| d["code"] == "efficiency_failed");
        if !failed {
            assert_eq!(case["efficiency"]["steps"]["ratio"], 1.0, "{case}");
            measured += 1;
        }
    }
    assert!(measured >= DUCKDB_RUNS / 2, "{measured} measured");
    assert!(file_bytes(folder) == before);
}

/// Hostile predictions: on the DuckDB copies the verdicts SQLite gives wherever the gold runs
/// on both, none correct; DuckDB's own ways out (ATTACH, COPY, file readers, extensions,
/// settings) fail as prediction errors; every file is byte for byte as it was, and nothing is
/// written elsewhere.
#[test]
fn hostile_predictions_get_sqlites_verdicts_and_change_no_duckdb_file() {
    let Some((defog, folder)) = duckdb_defog() else {
        return;
    };
    let outside = tempfile::tempdir().unwrap();
    let outside_file = |name: &str| outside.path().join(name).to_string_lossy().into_owned();
    let hostile: Vec<String> = vec![
        "DELETE FROM author".into(),
        "SELECT 'not an answer' AS evil; DROP TABLE author".into(),
        "DROP TABLE author".into(),
        "INSERT INTO author (aid, name) VALUES (999999, 'x')".into(),
        "UPDATE author SET name = 'x'".into(),
        "CREATE TABLE evil (x int)".into(),
        "SELECT count(*) FROM flight a, flight b, flight c, flight d, flight e, flight f".into(),
        format!("ATTACH '{}' AS evil", outside_file("evil.duckdb")),
        format!("COPY author TO '{}'", outside_file("evil.csv")),
        format!("SELECT * FROM read_csv('{}')", "/etc/passwd"),
        format!(
            "SELECT * FROM (SELECT 1) t, (FROM read_text('{}'))",
            "/etc/hostname"
        ),
        "INSTALL httpfs".into(),
        "SET enable_external_access = true".into(),
        "SELECT * FROM duckdb_settings() WHERE name = 'memory_limit' AND 1 = 0 UNION ALL \
         SELECT 'x', 'y', 'z', 'w', 'v'"
            .into(),
    ];
    let dir = tempfile::tempdir().unwrap();
    let gold = defog.join("questions.csv");
    let bench = sqlgate_eval::loaders::load(
        &gold,
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .unwrap();
    let lines: Vec<String> = bench
        .cases
        .iter()
        .enumerate()
        .map(|(i, case)| {
            serde_json::json!({"id": case.id, "sql": hostile[i % hostile.len()]}).to_string()
        })
        .collect();
    let pred = dir.path().join("hostile.jsonl");
    std::fs::write(&pred, lines.join("\n")).unwrap();
    let before = file_bytes(folder);
    let verdicts_on = |engine: &[&str]| -> Vec<String> {
        let mut flags = vec!["--timeout", "1", "--max-rows", "1000"];
        flags.extend_from_slice(engine);
        let run = score_json(&gold, &pred, &flags);
        run.assert_success();
        let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|case| case["verdict"].as_str().unwrap().to_string())
            .collect()
    };
    let folder_flag = folder.to_string_lossy();
    let on_duckdb = verdicts_on(&["--engine", "duckdb", "--db-dir", &folder_flag]);
    let defog_flag = defog.to_string_lossy();
    let on_sqlite = verdicts_on(&["--db-dir", &defog_flag]);
    assert_eq!(on_duckdb.len(), 135);
    assert!(on_duckdb.iter().all(|v| v != "correct"), "{on_duckdb:?}");
    let compared: Vec<(&String, &String)> = on_sqlite
        .iter()
        .zip(&on_duckdb)
        .filter(|(ours, theirs)| *theirs != "gold_error" && *ours != "gold_error")
        .collect();
    assert!(
        compared.len() >= DUCKDB_RUNS - 10,
        "{} compared",
        compared.len()
    );
    assert!(
        compared.iter().all(|(ours, theirs)| ours == theirs),
        "{on_sqlite:?}\n{on_duckdb:?}"
    );
    assert!(file_bytes(folder) == before);
    let written: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert!(written.is_empty(), "{written:?}");
}

/// `sqlgate audit --engine duckdb` audits the golds on the DuckDB files (single-error mutants
/// through DuckDB), and `--compare-engine duckdb` names the SQLite golds DuckDB cannot run.
#[test]
fn audit_runs_on_duckdb_files_and_compares_with_sqlite() {
    let Some((defog, folder)) = duckdb_defog() else {
        return;
    };
    let gold = defog.join("questions.csv");
    let compared = sqlgate()
        .args(["audit", "--format", "json", "--gold"])
        .arg(&gold)
        .args(["--compare-engine", "duckdb", "--compare-db-dir"])
        .arg(folder)
        .run();
    let disagreements = engine_disagreements(&compared);
    let failing = disagreements
        .values()
        .filter(|d| d.contains("but fails on duckdb: "))
        .count();
    assert_eq!(failing, 135 - DUCKDB_RUNS, "{disagreements:#?}");
    let run = sqlgate()
        .args(["audit", "--format", "json", "--engine", "duckdb", "--gold"])
        .arg(&gold)
        .arg("--db-dir")
        .arg(folder)
        .run();
    run.assert_success();
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let kinds: std::collections::BTreeSet<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains("weak"), "{kinds:?}");
}

/// From DuckDB files back into SQLite files: every table comes back with its rows.
#[test]
fn duckdb_files_copy_back_into_sqlite() {
    let Some((defog, folder)) = duckdb_defog() else {
        return;
    };
    let back = tempfile::tempdir().unwrap();
    let mut command = sqlgate();
    command
        .args(["copy", "--engine", "duckdb", "--db-dir"])
        .arg(folder);
    for db in DEFOG {
        command.args(["--db", db]);
    }
    command
        .args(["--to-engine", "sqlite", "--to-db-dir"])
        .arg(back.path())
        .run()
        .assert_success();
    let mut tables_seen = 0;
    for db in DEFOG {
        let original = rusqlite::Connection::open(defog.join(format!("{db}.sqlite"))).unwrap();
        let copied = rusqlite::Connection::open(back.path().join(format!("{db}.sqlite"))).unwrap();
        let tables: Vec<String> = original
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for table in tables {
            let count = |conn: &rusqlite::Connection| -> i64 {
                conn.query_row(&format!("SELECT count(*) FROM \"{table}\""), [], |r| {
                    r.get(0)
                })
                .unwrap()
            };
            assert_eq!(count(&original), count(&copied), "{db}.{table}");
            tables_seen += 1;
        }
    }
    assert!(tables_seen >= 20, "{tables_seen} tables");
}

/// The paraphraser's column names come from DuckDB's `COMMENT ON COLUMN`.
#[test]
fn column_comments_come_from_duckdb() {
    use sqlgate_eval::exec::schema::column_comments;
    use sqlgate_eval::exec::{Engine, Limits, Settings};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hospital.duckdb");
    let backend = sqlgate_engines::driver("duckdb")
        .unwrap()
        .connect(&Settings::default())
        .unwrap();
    let mut writer = backend.create(&db).unwrap();
    writer
        .execute_batch(
            "CREATE TABLE nurse (nid INTEGER PRIMARY KEY, name VARCHAR); \
             COMMENT ON COLUMN nurse.nid IS 'Unique identifier for each nurse';",
        )
        .unwrap();
    writer.finish().unwrap();
    let engine = Engine::new(Limits::default(), backend);
    assert_eq!(
        column_comments(&engine, &db).unwrap(),
        vec![(
            "nurse".to_string(),
            "nid".to_string(),
            "Unique identifier for each nurse".to_string(),
        )]
    );
}

/// `sqlgate distill --engine duckdb` on the DuckDB copies: candidates built as `.duckdb` files
/// through DuckDB's writer, tried there, the best kept as a test-suite folder of `.duckdb`
/// files that tells more wrong queries apart than the originals alone; `score --mode testsuite
/// --engine duckdb` on it gives every gold DuckDB runs EX 1 on every database.
#[test]
fn distill_runs_on_duckdb_files() {
    let Some((defog, folder)) = duckdb_defog() else {
        return;
    };
    let gold = defog.join("questions.csv");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let report = sqlgate()
        .args(["distill", "--engine", "duckdb", "--gold"])
        .arg(&gold)
        .arg("--db-dir")
        .arg(folder)
        .arg("--out")
        .arg(&out)
        .args(["--candidates", "12", "--per-db", "3", "--format", "json"])
        .run()
        .assert_success()
        .json();
    let databases = report["databases"].as_array().unwrap();
    assert_eq!(databases.len(), DEFOG.len());
    let total = |key: &str| -> u64 { databases.iter().map(|d| d[key].as_u64().unwrap()).sum() };
    assert!(
        total("killed_by_suite") > total("killed_by_original"),
        "{report}"
    );
    for db in DEFOG {
        assert!(
            out.join(db).join(format!("{db}_1.duckdb")).is_file(),
            "{db}"
        );
    }
    let pred = gold_predictions(dir.path(), &gold);
    let out_flag = out.to_string_lossy();
    let run = score_json(
        &gold,
        &pred,
        &[
            "--engine",
            "duckdb",
            "--mode",
            "testsuite",
            "--db-dir",
            &out_flag,
        ],
    );
    let cases = verdicts(&run);
    let correct = cases.iter().filter(|(ex, _)| *ex == 1.0).count();
    let gold_errors = cases.iter().filter(|(_, failed)| *failed).count();
    assert_eq!(
        correct + gold_errors,
        135,
        "a gold fails on a distilled database"
    );
    assert_eq!(correct, DUCKDB_RUNS);
}

/// The demo's state tasks on a DuckDB copy of the bookshop database (`sqlgate copy`): each
/// case's statements run on a scratch copy of the file in a transaction rolled back after it.
/// The golds that DuckDB runs pass, the sample answers get SQLite's verdicts wherever the gold
/// runs on both, no hostile answer passes, and the file's bytes never change.
#[test]
fn the_demo_state_tasks_judge_the_same_on_duckdb_and_change_no_file() {
    use crate::state::{build_demo_database, demo_cases, gold_answers, hostile_suite, Workspace};
    build_demo_database();
    let folder = tempfile::tempdir().unwrap();
    let to = folder.path().to_string_lossy().into_owned();
    sqlgate()
        .args(["copy", "--db", "bookshop", "--db-dir"])
        .arg(crate::support::demo("build/state"))
        .args(["--to-engine", "duckdb", "--to-db-dir", &to])
        .run()
        .assert_success();
    let file = folder.path().join("bookshop.duckdb");
    let before = std::fs::read(&file).unwrap();
    let on_duckdb = ["--engine", "duckdb", "--db-dir", &to];
    let verdicts = |workspace: &Workspace, answers: &str, extra: &[&str]| {
        crate::state::verdicts(&workspace.score(answers, extra).assert_success().json())
    };

    let cases = demo_cases();
    let workspace = Workspace::new(&cases);
    let golds = verdicts(&workspace, &gold_answers(&cases), &on_duckdb);
    let runs: Vec<&String> = golds
        .iter()
        .filter(|(_, verdict)| *verdict != "gold_error")
        .map(|(id, _)| id)
        .collect();
    assert!(runs.len() >= 15, "{golds:?}");
    assert!(
        golds.values().all(|v| v == "correct" || v == "gold_error"),
        "{golds:?}"
    );
    let sample = std::fs::read_to_string(crate::support::demo("state/predictions.jsonl")).unwrap();
    let on_sqlite = verdicts(&workspace, &sample, &[]);
    let found = verdicts(&workspace, &sample, &on_duckdb);
    for id in runs {
        assert_eq!(found[id], on_sqlite[id], "{id}: {found:?}");
    }

    let (cases, predictions) = hostile_suite();
    let workspace = Workspace::new(&cases);
    let mut flags = on_duckdb.to_vec();
    flags.extend(["--max-rows", "80"]);
    let found = verdicts(&workspace, &predictions, &flags);
    assert!(found.values().all(|v| v != "correct"), "{found:?}");
    assert!(std::fs::read(&file).unwrap() == before);
    let beside: Vec<_> = std::fs::read_dir(folder.path()).unwrap().collect();
    assert_eq!(beside.len(), 1, "{beside:?}");
}
