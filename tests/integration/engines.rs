//! The engines behind one interface, as a user reaches them: `sqlgate copy` puts the Defog
//! databases on another engine, and `sqlgate score --engine ...` scores the golds there.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sqlgate_test_support::mariadb;

use crate::support::{shared_data, sqlgate, Run};

pub(crate) const DEFOG: [&str; 5] = ["academic", "advising", "atis", "geography", "restaurants"];

/// The Defog folder, or `None` (skipped, counted) without the shared data.
pub(crate) fn defog() -> Option<PathBuf> {
    shared_data().map(|data| data.join("defog"))
}

/// `sqlgate copy` of the Defog databases from their SQLite files to `to` (its flags).
pub(crate) fn copy(defog: &Path, to: &[&str]) -> Run {
    let mut command = sqlgate();
    command.arg("copy").arg("--db-dir").arg(defog);
    for db in DEFOG {
        command.args(["--db", db]);
    }
    command.args(to).run()
}

/// `sqlgate score --format json` of `pred` against `gold`, with `extra` flags.
pub(crate) fn score_json(gold: &Path, pred: &Path, extra: &[&str]) -> Run {
    sqlgate()
        .args(["score", "--format", "json", "--gold"])
        .arg(gold)
        .arg("--pred")
        .arg(pred)
        .args(extra)
        .run()
}

/// A JSONL predictions file giving each question's first gold as its answer.
pub(crate) fn gold_predictions(dir: &Path, gold: &Path) -> PathBuf {
    let bench = sqlgate_eval::loaders::load(
        gold,
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .expect("the questions load");
    let lines: Vec<String> = bench
        .cases
        .iter()
        .map(|case| serde_json::json!({"id": case.id, "sql": case.gold[0]}).to_string())
        .collect();
    let path = dir.join("gold.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

/// The cases of a `score --format json` run: (ex, whether the gold failed).
pub(crate) fn verdicts(run: &Run) -> Vec<(f64, bool)> {
    run.assert_success();
    let report: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|case| {
            let ex = case["ex"].as_f64().unwrap_or(0.0);
            let gold_failed = case.to_string().contains("gold_error");
            (ex, gold_failed)
        })
        .collect()
}

#[test]
fn copies_of_the_defog_files_score_as_the_originals() {
    let Some(defog) = defog() else { return };
    let dir = tempfile::tempdir().unwrap();
    let copies = dir.path().join("copies");
    copy(&defog, &["--to-engine", "sqlite", "--to-db-dir"]).assert_code(2);
    let run = sqlgate()
        .arg("copy")
        .arg("--db-dir")
        .arg(&defog)
        .args(DEFOG.iter().flat_map(|db| ["--db", db]))
        .args(["--to-engine", "sqlite", "--to-db-dir"])
        .arg(&copies)
        .run();
    run.assert_success();
    assert_eq!(run.stdout.matches("copied ").count(), 5, "{}", run.stdout);
    let gold = defog.join("questions.csv");
    let pred = gold_predictions(dir.path(), &gold);
    let score = |db_dir: &Path| score_json(&gold, &pred, &["--db-dir", &db_dir.to_string_lossy()]);
    let original = verdicts(&score(&defog));
    assert_eq!(original.len(), 135);
    assert!(original.iter().all(|(ex, _)| *ex == 1.0));
    assert_eq!(verdicts(&score(&copies)), original);
    // Nothing beside the copies: the staging file is gone.
    let mut names: Vec<String> = std::fs::read_dir(&copies)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let expected: Vec<String> = DEFOG.iter().map(|db| format!("{db}.sqlite")).collect();
    assert_eq!(names, expected);
}

#[test]
fn copy_never_replaces_a_database_and_refuses_bad_names() {
    let Some(defog) = defog() else { return };
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("academic.sqlite");
    std::fs::write(&existing, "someone else's file").unwrap();
    let run = sqlgate()
        .arg("copy")
        .arg("--db-dir")
        .arg(&defog)
        .args(["--db", "academic", "--to-engine", "sqlite", "--to-db-dir"])
        .arg(dir.path())
        .run();
    run.assert_bad_input(&["academic.sqlite", "exists"]);
    assert_eq!(
        std::fs::read_to_string(&existing).unwrap(),
        "someone else's file"
    );
    for (db, words) in [
        ("../academic", &["not a plain database name"][..]),
        ("nowhere", &["nowhere", "exists"][..]),
    ] {
        sqlgate()
            .arg("copy")
            .arg("--db-dir")
            .arg(&defog)
            .args(["--db", db, "--to-engine", "sqlite", "--to-db-dir"])
            .arg(dir.path())
            .run()
            .assert_bad_input(words);
    }
    sqlgate()
        .args(["copy", "--db", "academic", "--to-engine", "oracle"])
        .run()
        .assert_bad_input(&["unknown engine `oracle`", "sqlite"]);
    sqlgate()
        .arg("copy")
        .arg("--db-dir")
        .arg(&defog)
        .args(["--db", "academic", "--to-engine", "mysql", "--to-db-dir"])
        .arg(dir.path())
        .run()
        .assert_bad_input(&["--to-engine", "needs `dsn`"]);
}

/// The test binary's MariaDB with the Defog databases, copied there once by `sqlgate copy`
/// (as the writer) and readable by the documented reader.
fn mariadb_defog() -> Option<(&'static mariadb::MariaDb, PathBuf)> {
    static COPIED: OnceLock<bool> = OnceLock::new();
    let defog = defog()?;
    let server = mariadb::shared()?;
    let copied = COPIED.get_or_init(|| {
        let writer = server.template(mariadb::WRITER);
        copy(&defog, &["--to-engine", "mysql", "--to-dsn", &writer]).assert_success();
        for db in DEFOG {
            server.add_reader(db);
        }
        true
    });
    copied.then_some((server, defog))
}

/// A copy ends with the planner's statistics of the rows it wrote (ANALYZE TABLE), so a cost
/// (`steps`) does not change when the server would recompute them later. The test server
/// never recomputes them itself.
#[test]
fn a_copy_onto_mariadb_leaves_the_statistics_of_its_rows() {
    let Some((server, _)) = mariadb_defog() else {
        return;
    };
    for db in DEFOG {
        let stats = server.sql(&format!(
            "SELECT table_name, n_rows FROM mysql.innodb_table_stats WHERE database_name = '{db}' \
             ORDER BY 1"
        ));
        let tables = server.sql(&format!(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = '{db}' \
             ORDER BY 1"
        ));
        assert_eq!(
            stats.lines().count(),
            tables.lines().count(),
            "{db}: {stats}"
        );
        for line in stats.lines() {
            let (table, rows) = line.split_once('\t').unwrap();
            let count = server.sql(&format!(
                "SELECT count(*) FROM {db}.{}",
                mariadb::quoted(table)
            ));
            assert_eq!(rows, count.trim(), "{db}.{table}");
        }
    }
}

/// The Defog databases copied onto MariaDB by `sqlgate copy`, then scored there with each
/// question's gold as its prediction: every case whose gold MariaDB runs is correct, and the
/// golds MariaDB cannot run (SQLite's dialect: `NULLS FIRST`, `CAST(... AS REAL)`) fail as
/// gold errors, never as a wrong prediction.
#[test]
fn defog_on_mariadb_scores_gold_as_prediction() {
    let Some((server, defog)) = mariadb_defog() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A second copy onto the same databases is refused: they exist.
    let writer = server.template(mariadb::WRITER);
    copy(&defog, &["--to-engine", "mysql", "--to-dsn", &writer]).assert_bad_input(&["academic"]);
    let before: Vec<String> = DEFOG.iter().map(|db| server.fingerprint(db)).collect();
    let gold = defog.join("questions.csv");
    let pred = gold_predictions(dir.path(), &gold);
    let run = score_json(
        &gold,
        &pred,
        &[
            "--engine",
            "mysql",
            "--dsn",
            &server.template(mariadb::READER),
        ],
    );
    let cases = verdicts(&run);
    assert!(
        !run.stderr.contains("more than reading needs"),
        "{}",
        run.stderr
    );
    assert_eq!(cases.len(), 135);
    let correct = cases.iter().filter(|(ex, _)| *ex == 1.0).count();
    let gold_errors = cases.iter().filter(|(_, failed)| *failed).count();
    assert_eq!(
        correct + gold_errors,
        135,
        "a gold run as prediction was scored wrong"
    );
    // What MariaDB runs of SQLite's dialect (docs/mysql.md#differences-from-sqlite).
    assert!(correct >= 74, "{correct} correct");
    let after: Vec<String> = DEFOG.iter().map(|db| server.fingerprint(db)).collect();
    assert_eq!(before, after);
    // The same run as a user that could write is warned about, database by database.
    let as_writer = score_json(&gold, &pred, &["--engine", "mysql", "--dsn", &writer]);
    assert_eq!(verdicts(&as_writer), cases);
    for db in DEFOG {
        let warning = format!("/{db}: the user holds ALL PRIVILEGES, more than reading needs");
        assert!(as_writer.stderr.contains(&warning), "{}", as_writer.stderr);
    }
}

/// `sqlgate audit --compare-engine`: Defog's SQLite golds on SQLite against its PostgreSQL
/// originals on PostgreSQL (`questions_postgres.csv`), cases matched by id: where the two
/// dialects' golds mean different things, an `engine_disagrees` finding shows both results.
#[test]
fn audit_compares_the_golds_of_two_engines() {
    let Some(defog) = defog() else { return };
    let Some(pg) = sqlgate_test_support::postgres::defog_server() else {
        return;
    };
    let run = sqlgate()
        .args(["audit", "--format", "json", "--gold"])
        .arg(defog.join("questions.csv"))
        .args(["--compare-engine", "postgres", "--compare-gold"])
        .arg(defog.join("postgres/questions_postgres.csv"))
        .args(["--compare-dsn", &pg.reader_template()])
        .run();
    let disagreements = engine_disagreements(&run);
    // As docs/audit.md#other-engines counts them.
    let doc = std::fs::read_to_string(crate::support::repo().join("docs/audit.md")).unwrap();
    let counted = format!(
        "finds {} cases whose golds mean different things",
        disagreements.len()
    );
    assert!(doc.contains(&counted), "{counted}: {disagreements:#?}");
    // Every PostgreSQL original runs (Defog's `{a,b}` column sets taken whole)...
    assert!(disagreements.values().all(|d| !d.contains("fails on")));
    // ...and some mean something else: a month truncated to a timestamp rather than to
    // `YYYY-MM`, an average of intervals rather than of minutes.
    for (id, words) in [
        (
            "25",
            [
                "sqlite returns 1 row of (month, total_students): (2018-01, 2)",
                "(2018-01-01 00:00:00+00:00, 2)",
            ],
        ),
        ("56", ["(109.33333333333333)", "(1:49:20)"]),
    ] {
        let detail = &disagreements[id];
        assert!(words.iter().all(|w| detail.contains(w)), "{id}: {detail}");
    }
}

/// The same SQLite golds on SQLite and, copied by `sqlgate copy`, on MariaDB: the golds of
/// SQLite's dialect that MariaDB cannot run are found, each with its error there, and none
/// whose result MariaDB reads differently (its copies compare text byte for byte, as SQLite).
#[test]
fn audit_finds_the_golds_another_engine_cannot_run() {
    let Some((server, defog)) = mariadb_defog() else {
        return;
    };
    let run = sqlgate()
        .args(["audit", "--format", "json", "--gold"])
        .arg(defog.join("questions.csv"))
        .args(["--compare-engine", "mysql", "--compare-dsn"])
        .arg(server.template(mariadb::READER))
        .run();
    let disagreements = engine_disagreements(&run);
    let failing = disagreements
        .values()
        .filter(|d| d.contains("but fails on mysql: "))
        .count();
    assert!(failing >= 40, "{disagreements:#?}");
    assert!(
        disagreements.values().any(|d| d.contains("NULLS")),
        "{disagreements:#?}"
    );
}

/// The `engine_disagrees` findings of an audit's JSON, by case id.
pub(crate) fn engine_disagreements(run: &Run) -> std::collections::BTreeMap<String, String> {
    run.assert_success();
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "engine_disagrees")
        .map(|f| {
            let text = |key: &str| f[key].as_str().unwrap_or_default().to_string();
            (text("id"), text("detail"))
        })
        .collect()
}

/// ETM (plans and the catalog through the engine) and `steps` efficiency (the planner's cost)
/// on MariaDB: each computed there for the golds MariaDB runs.
#[test]
fn etm_and_steps_run_on_mariadb() {
    let Some((server, defog)) = mariadb_defog() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let gold = defog.join("questions.csv");
    let pred = gold_predictions(dir.path(), &gold);
    let run = score_json(
        &gold,
        &pred,
        &[
            "--engine",
            "mysql",
            "--dsn",
            &server.template(mariadb::READER),
            "--metrics",
            "etm",
            "--efficiency",
            "steps",
        ],
    );
    run.assert_success();
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let cases = report["cases"].as_array().unwrap();
    let correct: Vec<&serde_json::Value> = cases.iter().filter(|c| c["ex"] == 1).collect();
    assert!(correct.len() >= 74, "{} correct", correct.len());
    // A gold is its own ETM match wherever MariaDB plans it.
    assert!(correct.iter().all(|c| c["etm"] == 1), "{}", run.stdout);
    // The same SQL costs the same: a ratio of 1, or a failure shown and counted where the
    // server gives no cost.
    let mut measured = 0;
    for case in &correct {
        let failed = case["diagnostics"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|d| {
                d["code"] == "efficiency_failed"
                    && d["message"].as_str().unwrap().contains("Last_query_cost")
            });
        if !failed {
            // The server's log says whether it planned on sampled statistics.
            assert_eq!(
                case["efficiency"]["steps"]["ratio"],
                1.0,
                "{case}\n{}",
                server.log()
            );
            measured += 1;
        }
    }
    assert!(measured > 0);
    assert!(report["summary"]["efficiency"]["ves_steps"]
        .as_f64()
        .is_some());
}

/// docs/engines.md's table says what each engine supports, as its driver does.
#[test]
fn the_engine_table_of_the_docs_is_what_the_drivers_say() {
    use sqlgate_eval::exec::Feature;
    let text = std::fs::read_to_string(crate::support::repo().join("docs/engines.md")).unwrap();
    let columns = [
        (3, Feature::Explain),
        (4, Feature::Cost),
        (5, Feature::Fingerprint),
        (6, Feature::ReverseUnordered),
        (7, Feature::Create),
        (8, Feature::StepBound),
        (9, Feature::Scratch),
    ];
    let mut rows = 0;
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let name = cells[0].trim_matches('`');
        assert!(sqlgate_engines::names().contains(&name), "{name}");
        rows += 1;
        // An engine this build leaves out is checked where it is built (`.ci/run`).
        let Ok(driver) = sqlgate_engines::driver(name) else {
            continue;
        };
        for (column, feature) in columns {
            let documented = cells[column].starts_with("yes");
            assert_eq!(documented, driver.supports(feature), "{name}: {feature}");
        }
        let files = matches!(driver.storage(), sqlgate_eval::exec::Storage::Files { .. });
        assert_eq!(cells[2].starts_with("files"), files, "{name}");
    }
    assert_eq!(rows, sqlgate_engines::names().len());
}

/// Hostile predictions, the same SQL on every engine (writes, DDL, a second statement, a
/// runaway join), scored with the Defog questions: every engine gives each case the same
/// verdict (where its gold, in SQLite's dialect, runs there), none is correct, and no
/// database changes (SQLite: its bytes; PostgreSQL: a dump's checksum; MariaDB: every table's
/// checksum).
#[test]
fn hostile_predictions_get_the_same_verdicts_on_every_engine() {
    let Some(defog) = defog() else { return };
    let Some(pg) = sqlgate_test_support::postgres::defog_server() else {
        return;
    };
    let Some((maria, _)) = mariadb_defog() else {
        return;
    };
    const HOSTILE: [&str; 9] = [
        "DELETE FROM author",
        "SELECT 'not an answer' AS evil; DROP TABLE author",
        "DROP TABLE author",
        "INSERT INTO author (aid, name) VALUES (999999, 'x')",
        "UPDATE author SET name = 'x'",
        "CREATE TABLE evil (x int)",
        "ALTER TABLE author ADD COLUMN evil int",
        "SELECT count(*) FROM flight a, flight b, flight c, flight d, flight e, flight f",
        "SELECT a.name FROM author a, author b, author c, author d, author e",
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
            serde_json::json!({"id": case.id, "sql": HOSTILE[i % HOSTILE.len()]}).to_string()
        })
        .collect();
    let pred = dir.path().join("hostile.jsonl");
    std::fs::write(&pred, lines.join("\n")).unwrap();
    let sqlite_bytes = || -> Vec<Vec<u8>> {
        DEFOG
            .iter()
            .map(|db| std::fs::read(defog.join(format!("{db}.sqlite"))).unwrap())
            .collect()
    };
    let pg_sums = || -> Vec<String> { DEFOG.iter().map(|db| pg.dump_checksum(db)).collect() };
    let maria_sums = || -> Vec<String> { DEFOG.iter().map(|db| maria.fingerprint(db)).collect() };
    let before = (sqlite_bytes(), pg_sums(), maria_sums());
    let score = |engine: &[&str]| {
        let defog_dir = defog.to_string_lossy();
        let mut flags = vec![
            "--timeout",
            "1",
            "--max-rows",
            "1000",
            "--db-dir",
            &defog_dir,
        ];
        flags.extend_from_slice(engine);
        let run = score_json(&gold, &pred, &flags);
        run.assert_success();
        let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|case| case["verdict"].as_str().unwrap().to_string())
            .collect::<Vec<String>>()
    };
    let on_sqlite = score(&[]);
    assert_eq!(on_sqlite.len(), 135);
    assert!(on_sqlite.iter().all(|v| v != "correct"), "{on_sqlite:?}");
    assert!(on_sqlite.iter().any(|v| v == "pred_error"));
    let same_where_the_gold_runs = |other: Vec<String>, at_least: usize| {
        let compared: Vec<(&String, &String)> = on_sqlite
            .iter()
            .zip(&other)
            .filter(|(_, theirs)| *theirs != "gold_error")
            .collect();
        assert!(
            compared.iter().all(|(ours, theirs)| ours == theirs),
            "{other:?}"
        );
        assert!(compared.len() >= at_least, "{} compared", compared.len());
    };
    let pg_url = pg.reader_template();
    same_where_the_gold_runs(score(&["--engine", "postgres", "--dsn", &pg_url]), 120);
    let maria_url = maria.template(mariadb::READER);
    same_where_the_gold_runs(score(&["--engine", "mysql", "--dsn", &maria_url]), 70);
    assert!(before == (sqlite_bytes(), pg_sums(), maria_sums()));
}

/// The Defog SQLite files copied onto a PostgreSQL server of their own by `sqlgate copy`, and
/// the server's databases copied back into SQLite files: gold as prediction is correct on the
/// server wherever PostgreSQL runs SQLite's dialect, and every table comes back whole.
#[test]
fn defog_goes_to_postgres_and_back() {
    let Some(defog) = defog() else { return };
    let Some(pg) = sqlgate_test_support::postgres::PgServer::start() else {
        return;
    };
    let admin = pg.admin_url("{db}");
    copy(&defog, &["--to-engine", "postgres", "--to-dsn", &admin]).assert_success();
    for db in DEFOG {
        pg.add_reader(db);
    }
    copy(&defog, &["--to-engine", "postgres", "--to-dsn", &admin]).assert_bad_input(&["academic"]);
    // The copy analyzed every table it wrote: the planner's row counts are the rows.
    for db in DEFOG {
        let stats = pg.psql(
            db,
            &[
                "-At",
                "-c",
                "SELECT s.relname, s.last_analyze IS NOT NULL, c.reltuples::bigint = \
                 (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM %I', \
                 s.relname), false, true, '')))[1]::text::bigint FROM pg_stat_user_tables s \
                 JOIN pg_class c ON c.oid = s.relid ORDER BY 1",
            ],
        );
        assert!(!stats.is_empty(), "{db}");
        for line in stats.lines() {
            assert!(line.ends_with("|t|t"), "{db}: {line}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let gold = defog.join("questions.csv");
    let pred = gold_predictions(dir.path(), &gold);
    let run = score_json(
        &gold,
        &pred,
        &["--engine", "postgres", "--dsn", &pg.reader_template()],
    );
    let cases = verdicts(&run);
    let correct = cases.iter().filter(|(ex, _)| *ex == 1.0).count();
    let gold_errors = cases.iter().filter(|(_, failed)| *failed).count();
    assert_eq!(correct + gold_errors, 135);
    assert!(correct >= 60, "{correct} correct");
    // Back into SQLite files, from the server.
    let back = dir.path().join("back");
    let mut command = sqlgate();
    command.args([
        "copy",
        "--engine",
        "postgres",
        "--dsn",
        &pg.reader_template(),
    ]);
    for db in DEFOG {
        command.args(["--db", db]);
    }
    command
        .args(["--to-engine", "sqlite", "--to-db-dir"])
        .arg(&back)
        .run()
        .assert_success();
    for db in DEFOG {
        let original = rusqlite::Connection::open(defog.join(format!("{db}.sqlite"))).unwrap();
        let copied = rusqlite::Connection::open(back.join(format!("{db}.sqlite"))).unwrap();
        let tables: Vec<String> = original
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(!tables.is_empty());
        for table in tables {
            let count = |conn: &rusqlite::Connection| -> i64 {
                conn.query_row(&format!("SELECT count(*) FROM \"{table}\""), [], |r| {
                    r.get(0)
                })
                .unwrap()
            };
            assert_eq!(count(&original), count(&copied), "{db}.{table}");
        }
    }
}

/// `sqlgate audit --engine postgres` audits the PostgreSQL originals on the server itself: the
/// checks run through the engine (plans, reruns, mutants), the scan-order probe left out.
#[test]
fn audit_runs_on_a_server_engine() {
    let Some(defog) = defog() else { return };
    let Some(pg) = sqlgate_test_support::postgres::defog_server() else {
        return;
    };
    let run = sqlgate()
        .args(["audit", "--format", "json", "--gold"])
        .arg(defog.join("postgres/questions_postgres.csv"))
        .args(["--engine", "postgres", "--dsn", &pg.reader_template()])
        .run();
    run.assert_success();
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let findings = report["findings"].as_array().unwrap();
    let kinds: std::collections::BTreeSet<&str> = findings
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    // Single-error mutants the golds cannot see exist on any engine.
    assert!(kinds.contains("weak"), "{kinds:?}");
    // Defog's `{a,b}` column sets run as the mode runs them, not as SQL with braces.
    assert!(
        !findings
            .iter()
            .any(|f| f["detail"].as_str().unwrap().contains("at or near \"{\"")),
        "{findings:?}"
    );
    assert!(
        !findings
            .iter()
            .any(|f| f["detail"].as_str().unwrap().contains("reverse_unordered")),
        "{findings:?}"
    );
}

/// Column comments come from each engine's catalog: PostgreSQL's `COMMENT ON COLUMN`, MySQL's
/// `COMMENT`, SQLite's trailing `-- comment` (the paraphraser names columns by them).
#[test]
fn column_comments_come_from_each_catalog() {
    use sqlgate_eval::exec::schema::column_comments;
    use sqlgate_eval::exec::{Engine, Limits, Settings};
    let expected = vec![(
        "nurse".to_string(),
        "nid".to_string(),
        "Unique identifier for each nurse".to_string(),
    )];
    let connect = |engine: &str, dsn: &str| {
        let settings = Settings {
            dsn: Some(dsn),
            password_env: None,
            ..Settings::default()
        };
        let driver = sqlgate_engines::driver(engine).unwrap();
        Engine::new(Limits::default(), driver.connect(&settings).unwrap())
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("clinic.sqlite");
    rusqlite::Connection::open(&file)
        .unwrap()
        .execute_batch("CREATE TABLE nurse (\n  nid INTEGER, -- Unique identifier for each nurse\n  name TEXT\n);")
        .unwrap();
    let sqlite = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
    assert_eq!(column_comments(&sqlite, &file).unwrap(), expected);
    if let Some(pg) = sqlgate_test_support::postgres::defog_server() {
        pg.psql("postgres", &["-c", "CREATE DATABASE commented"]);
        pg.psql(
            "commented",
            &["-c", "CREATE TABLE nurse (nid int, name text); COMMENT ON COLUMN nurse.nid IS 'Unique identifier for each nurse'"],
        );
        pg.add_reader("commented");
        let engine = connect("postgres", &pg.reader_template());
        assert_eq!(
            column_comments(&engine, Path::new("commented")).unwrap(),
            expected
        );
    }
    if let Some(maria) = mariadb::shared() {
        maria.sql(
            "CREATE DATABASE commented; CREATE TABLE commented.nurse \
             (nid int COMMENT 'Unique identifier for each nurse', name text)",
        );
        maria.add_reader("commented");
        let engine = connect("mysql", &maria.template(mariadb::READER));
        assert_eq!(
            column_comments(&engine, Path::new("commented")).unwrap(),
            expected
        );
    }
}

/// A copy onto a server killed halfway (its writer never finishes nor drops: `kill -9`)
/// leaves no database under the target's name, only its staging one, which a later copy
/// refuses to build over rather than dropping; a finished one takes its name with its tables,
/// rows and foreign keys.
fn check_a_killed_copy(engine: &str, dsn: &str, databases: impl Fn() -> Vec<String>) {
    use sqlgate_eval::exec::schema::{ColRef, Column, ForeignKey, Table};
    use sqlgate_eval::exec::{Engine, Limits, QueryRunner, Settings, Value};
    let settings = Settings {
        dsn: Some(dsn),
        password_env: None,
        ..Settings::default()
    };
    let backend = sqlgate_engines::driver(engine)
        .unwrap()
        .connect(&settings)
        .unwrap();
    let column = |name: &str, primary_key: bool| Column {
        name: name.into(),
        decl_type: "INTEGER".into(),
        primary_key,
        not_null: false,
    };
    let parent = Table {
        name: "parent".into(),
        columns: vec![column("id", true)],
    };
    let child = Table {
        name: "child".into(),
        columns: vec![column("x", false), column("parent_id", false)],
    };
    let key = ForeignKey {
        from: ColRef::new("child", "parent_id"),
        to: ColRef::new("parent", "id"),
    };
    let build = |name: &str| {
        let mut writer = backend.create(Path::new(name)).unwrap();
        writer.create_table(&parent, &[]).unwrap();
        writer
            .create_table(&child, std::slice::from_ref(&key))
            .unwrap();
        writer
            .insert("parent", &["id".to_string()], &[vec![Value::Int(1)]])
            .unwrap();
        let columns = ["x".to_string(), "parent_id".to_string()];
        writer
            .insert("child", &columns, &[vec![Value::Int(7), Value::Int(1)]])
            .unwrap();
        writer
    };
    std::mem::forget(build("shop"));
    let listed = databases();
    assert!(!listed.iter().any(|l| l == "shop"), "{listed:?}");
    assert!(
        listed.iter().any(|l| l == "shop__sqlgate_partial"),
        "{listed:?}"
    );
    let refused = backend.create(Path::new("shop")).err().unwrap();
    assert!(
        refused.message.contains("`shop__sqlgate_partial` exists"),
        "{}",
        refused.message
    );
    build("fresh").finish().unwrap();
    let listed = databases();
    assert!(listed.iter().any(|l| l == "fresh"), "{listed:?}");
    assert!(
        !listed.iter().any(|l| l.starts_with("fresh__")),
        "{listed:?}"
    );
    let engine = Engine::new(Limits::default(), backend);
    let schema = sqlgate_eval::exec::schema::query(&engine, Path::new("fresh")).unwrap();
    assert_eq!(schema.tables.len(), 2, "{schema:?}");
    assert_eq!(schema.foreign_keys, vec![key]);
    let rows = engine
        .gold(Path::new("fresh"), "SELECT x FROM child")
        .result
        .unwrap();
    assert_eq!(rows.rows, vec![vec![Value::Int(7)]]);
}

#[test]
fn a_killed_copy_onto_postgres_leaves_nothing_under_the_target_name() {
    let Some(pg) = sqlgate_test_support::postgres::PgServer::start() else {
        return;
    };
    check_a_killed_copy("postgres", &pg.admin_url("{db}"), || {
        let sql = "SELECT datname FROM pg_database ORDER BY 1";
        let listed = pg.psql("postgres", &["-A", "-t", "-c", sql]);
        listed.lines().map(str::to_string).collect()
    });
}

#[test]
fn a_killed_copy_onto_mariadb_leaves_nothing_under_the_target_name() {
    let Some(maria) = mariadb::shared() else {
        return;
    };
    check_a_killed_copy("mysql", &maria.template(mariadb::WRITER), || {
        let listed = maria.sql("SHOW DATABASES");
        listed.lines().map(str::to_string).collect()
    });
}

/// The rows of the Defog questions file `questions` (relative to the Defog folder) on
/// database `db`, as a CSV file in `dir`.
fn defog_questions_of(defog: &Path, questions: &str, db: &str, dir: &Path) -> PathBuf {
    let mut reader = csv::Reader::from_path(defog.join(questions)).unwrap();
    let column = reader
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "db_name")
        .unwrap();
    let path = dir.join(format!("{db}.csv"));
    let mut writer = csv::Writer::from_path(&path).unwrap();
    writer.write_record(reader.headers().unwrap()).unwrap();
    let mut kept = 0;
    for record in reader.records() {
        let record = record.unwrap();
        if &record[column] == db {
            writer.write_record(&record).unwrap();
            kept += 1;
        }
    }
    writer.flush().unwrap();
    assert!(kept > 0, "no question on {db}");
    path
}

/// `sqlgate distill --engine <engine>` on the server database `restaurants` with the golds of
/// `gold`: candidates are scratch databases created and dropped on the server, the kept ones
/// stay under names of the run and are listed in `OUT/restaurants/databases.txt`;
/// `score --mode testsuite` on the server then rejects every neighbour the report says the
/// suite adds (the original alone accepts each); a rerun replaces the suite and drops the
/// databases of the old one; a list the manifest does not vouch for is refused.
/// `databases` lists the server's databases, `drop` drops one.
fn check_distill_on_a_server(
    engine: &str,
    dsn: &str,
    gold: &Path,
    databases: impl Fn() -> Vec<String>,
    drop: impl Fn(&str),
) {
    let db = "restaurants";
    let defog = defog().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("suite");
    let before = databases();
    let distill = || {
        sqlgate()
            .args(["distill", "--format", "json", "--gold"])
            .arg(gold)
            .args(["--engine", engine, "--dsn", dsn])
            .args(["--candidates", "8", "--per-db", "3", "--out"])
            .arg(&out)
            .run()
    };
    let run = distill();
    run.assert_success();
    let report = run.json();
    let report = &report["databases"][0];
    let listed = std::fs::read_to_string(out.join(db).join("databases.txt")).unwrap();
    let suite: Vec<&str> = listed.lines().collect();
    assert_eq!(suite[0], db);
    assert_eq!(suite.len() - 1, report["kept"].as_u64().unwrap() as usize);
    assert!(suite.len() > 1, "{report}");
    // Only the kept databases remain: every scratch candidate was dropped.
    let mut new: Vec<String> = databases()
        .into_iter()
        .filter(|d| !before.contains(d))
        .collect();
    new.sort();
    let mut kept: Vec<String> = suite[1..].iter().map(|d| d.to_string()).collect();
    kept.sort();
    assert_eq!(new, kept);

    // Every neighbour the report says the suite adds: accepted by the original alone, rejected
    // by the suite on the server.
    let rejections = report["rejections"].as_array().unwrap();
    assert!(!rejections.is_empty(), "{report}");
    // Case ids and golds as the loader reads them (the SQLite files stand in for the server).
    let options = sqlgate_eval::loaders::LoadOptions {
        db_dir: Some(defog.clone()),
        ..sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files())
    };
    let bench = sqlgate_eval::loaders::load(gold, &options).unwrap();
    let mut lines = Vec::new();
    let mut expected_wrong = std::collections::BTreeSet::new();
    for case in &bench.cases {
        let mutant = rejections
            .iter()
            .find(|r| r["case"] == case.id.as_str())
            .map(|r| r["mutant"].as_str().unwrap().to_string());
        if mutant.is_some() {
            expected_wrong.insert(case.id.clone());
        }
        let sql = mutant.unwrap_or_else(|| case.gold[0].clone());
        lines.push(serde_json::json!({"id": case.id, "sql": sql}).to_string());
    }
    let pred = dir.path().join("pred.jsonl");
    std::fs::write(&pred, lines.join("\n")).unwrap();
    let score = |db_dir: &Path| {
        sqlgate()
            .args(["score", "--format", "json", "--mode", "testsuite", "--gold"])
            .arg(gold)
            .arg("--pred")
            .arg(&pred)
            .args(["--engine", engine, "--dsn", dsn, "--db-dir"])
            .arg(db_dir)
            .run()
    };
    let not_correct = |db_dir: &Path| -> std::collections::BTreeSet<String> {
        let run = score(db_dir);
        run.assert_success();
        run.json()["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|case| case["ex"].as_f64() != Some(1.0))
            .map(|case| case["id"].as_str().unwrap().to_string())
            .collect()
    };
    let original_only = dir.path().join("no-suite");
    std::fs::create_dir(&original_only).unwrap();
    assert!(not_correct(&original_only).is_disjoint(&expected_wrong));
    let wrong = not_correct(&out);
    assert!(
        expected_wrong.is_subset(&wrong),
        "{expected_wrong:?} {wrong:?}"
    );

    // A rerun builds a new suite beside the old and drops the old one's databases.
    distill().assert_success();
    let relisted = std::fs::read_to_string(out.join(db).join("databases.txt")).unwrap();
    let now = databases();
    for old in &suite[1..] {
        assert!(!relisted.contains(old), "{relisted}");
        assert!(!now.iter().any(|d| d == old), "{old} still on the server");
    }
    for kept in relisted.lines() {
        assert!(now.iter().any(|d| d == kept), "{kept} missing");
    }

    // A list changed after distill wrote it is refused, naming the file.
    std::fs::write(
        out.join(db).join("databases.txt"),
        format!("{db}\n{}\n", suite[1]),
    )
    .unwrap();
    score(&out).assert_bad_input(&["databases.txt", "SHA-256"]);
    for kept in relisted.lines().skip(1) {
        drop(kept);
    }
}

#[test]
fn distill_on_postgres_writes_a_suite_on_the_server_that_testsuite_scores() {
    let Some(defog) = defog() else { return };
    let Some(pg) = sqlgate_test_support::postgres::defog_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let gold = defog_questions_of(
        &defog,
        "postgres/questions_postgres.csv",
        "restaurants",
        dir.path(),
    );
    let databases = || {
        let sql = "SELECT datname FROM pg_database ORDER BY 1";
        let listed = pg.psql("postgres", &["-A", "-t", "-c", sql]);
        listed.lines().map(str::to_string).collect()
    };
    let drop = |db: &str| {
        pg.psql("postgres", &["-c", &format!("DROP DATABASE \"{db}\"")]);
    };
    let before = databases();
    check_distill_on_a_server("postgres", &pg.admin_url("{db}"), &gold, databases, drop);
    // The read-only role cannot create databases: refused at the first candidate, and the run
    // leaves nothing: no folder, no database.
    let refused = dir.path().join("refused");
    sqlgate()
        .args(["distill", "--gold"])
        .arg(&gold)
        .args(["--engine", "postgres", "--dsn", &pg.reader_template()])
        .args(["--candidates", "2", "--out"])
        .arg(&refused)
        .run()
        .assert_bad_input(&["cannot build a database", "read-only transaction"]);
    assert!(!refused.exists());
    assert_eq!(databases(), before);
    // `advising` has boolean columns, which have no MIN or MAX on PostgreSQL: their value
    // pools are read by ordering.
    let advising = defog_questions_of(
        &defog,
        "postgres/questions_postgres.csv",
        "advising",
        dir.path(),
    );
    let out = dir.path().join("advising-suite");
    sqlgate()
        .args(["distill", "--gold"])
        .arg(&advising)
        .args(["--engine", "postgres", "--dsn", &pg.admin_url("{db}")])
        .args(["--candidates", "2", "--per-db", "1", "--out"])
        .arg(&out)
        .run()
        .assert_success();
    let listed = std::fs::read_to_string(out.join("advising/databases.txt")).unwrap();
    for kept in listed.lines().skip(1) {
        drop(kept);
    }
    assert_eq!(databases(), before);
}

#[test]
fn distill_on_mariadb_writes_a_suite_on_the_server_that_testsuite_scores() {
    let Some((server, defog)) = mariadb_defog() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let gold = defog_questions_of(&defog, "questions.csv", "restaurants", dir.path());
    let databases = || {
        let listed = server.sql("SHOW DATABASES");
        listed.lines().map(str::to_string).collect()
    };
    let drop = |db: &str| {
        server.sql(&format!("DROP DATABASE `{db}`"));
    };
    check_distill_on_a_server(
        "mysql",
        &server.template(mariadb::WRITER),
        &gold,
        databases,
        drop,
    );
}
