//! The PostgreSQL engine on a real server holding the five Defog databases, loaded once per run
//! from the shared PostgreSQL dumps: gold-as-prediction on the 135 PostgreSQL questions,
//! crafted wrong variants against sql-eval's documented rules, the hostile set, the role check
//! and `sqlgate test` end to end. Skips (saying so) without PostgreSQL or the shared data.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sqlgate_engine_postgres::Server;
use sqlgate_eval::exec::{Engine, ExecErrorKind, Limits};
use sqlgate_eval::metrics::etm::Facts;
use sqlgate_test_support::postgres::{defog_server, PgServer};

use crate::support::{shared_data, sqlgate, Run};

fn questions() -> PathBuf {
    shared_data()
        .expect("checked by defog_server")
        .join("defog/postgres/questions_postgres.csv")
}

/// The Defog questions as loaded for a server: (id, db, gold alternatives).
fn cases() -> Vec<(String, String, Vec<String>)> {
    let options = sqlgate_eval::loaders::LoadOptions::on(Arc::new(
        Server::new("postgres://reader@127.0.0.1/{db}", None).unwrap(),
    ));
    let bench = sqlgate_eval::loaders::load(&questions(), &options).expect("the questions load");
    bench
        .cases
        .into_iter()
        .map(|case| (case.id, case.db, case.gold))
        .collect()
}

/// An alternative with its `{a,b}` column set taken whole (the last of sql-eval's expansions).
fn runnable(alternative: &str) -> String {
    match (alternative.find('{'), alternative.find('}')) {
        (Some(start), Some(end)) if start < end => {
            let columns = alternative[start + 1..end]
                .split(',')
                .collect::<Vec<_>>()
                .join(", ");
            let rest =
                alternative[end + 1..].replace("GROUP BY {}", &format!("GROUP BY {columns}"));
            format!("{}{columns}{rest}", &alternative[..start])
        }
        _ => alternative.to_string(),
    }
}

fn score(pg: &PgServer, pred: &Path, extra: &[&str]) -> Run {
    sqlgate()
        .arg("score")
        .arg("--gold")
        .arg(questions())
        .arg("--pred")
        .arg(pred)
        .args(["--engine", "postgres", "--dsn", &pg.reader_template()])
        .args(["--format", "json"])
        .args(extra)
        .run()
}

fn json(output: &Run) -> serde_json::Value {
    output.assert_success();
    serde_json::from_str(&output.stdout).expect("valid JSON")
}

/// A JSONL predictions file: one `{"id", "sql"}` per case.
fn predictions(dir: &Path, name: &str, sql: impl Fn(&str) -> String) -> PathBuf {
    let lines: Vec<String> = cases()
        .iter()
        .map(|(id, _, gold)| {
            serde_json::json!({"id": id, "sql": sql(&runnable(&gold[0]))}).to_string()
        })
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

#[test]
fn gold_as_prediction_scores_one_on_every_postgres_question() {
    let Some(pg) = defog_server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pred = predictions(dir.path(), "gold.jsonl", str::to_string);
    for mode in ["defog", "defog-exact"] {
        let report = json(&score(pg, &pred, &["--mode", mode]));
        let cases = report["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 135);
        for case in cases {
            assert_eq!(case["ex"], 1, "{mode}: {case}");
        }
        assert_eq!(report["summary"]["ex"], 1.0, "{mode}");
    }
}

/// Rows and columns of a query, read with the plain client (independently of sqlgate).
fn shape(client: &mut postgres::Client, sql: &str) -> (i64, usize) {
    let columns = client.prepare(sql).unwrap().columns().len();
    let rows: i64 = client
        .query_one(&format!("SELECT count(*) FROM ({sql}) AS q"), &[])
        .unwrap()
        .get(0);
    (rows, columns)
}

/// Two crafted wrong variants of every question's first gold alternative, scored in `defog`
/// mode, against what sql-eval's documented rules (`compare_query_results`) give:
/// - no rows (`WHERE false`): numpy broadcasting makes an empty prediction an exact match of a
///   gold with at most one row and as many columns, for any alternative; else `subset_df`
///   fails on the lengths, so the case is wrong;
/// - an extra constant column: every gold column finds its match in the prediction, so
///   `subset_df` makes the case correct when the first alternative has rows (an empty gold is
///   never a subset match).
#[test]
fn crafted_variants_get_the_reference_verdicts() {
    let Some(pg) = defog_server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cases = cases();
    let mut clients = std::collections::HashMap::new();
    let mut expected_empty = Vec::new();
    let mut expected_extra = Vec::new();
    for (_, db, gold) in &cases {
        let client = clients.entry(db.clone()).or_insert_with(|| {
            postgres::Client::connect(&pg.admin_url(db), postgres::NoTls).unwrap()
        });
        let shapes: Vec<(i64, usize)> = gold
            .iter()
            .map(|alt| shape(client, &runnable(alt)))
            .collect();
        let width = shapes[0].1;
        // Only the alternatives' full column sets are measured: a smaller expansion of a
        // `{a,b}` group has fewer columns, so it could only match a narrower empty prediction.
        expected_empty.push(
            shapes
                .iter()
                .any(|&(rows, columns)| rows <= 1 && columns == width),
        );
        expected_extra.push(shapes[0].0 > 0);
    }
    let right = expected_empty.iter().filter(|&&c| c).count();
    let expected_empty_counts = (right, expected_empty.len() - right);
    let empty = predictions(dir.path(), "empty.jsonl", |sql| {
        format!("SELECT * FROM ({sql}) AS q WHERE false")
    });
    let extra = predictions(dir.path(), "extra.jsonl", |sql| {
        format!("SELECT q.*, 'sqlgate' AS sqlgate_extra FROM ({sql}) AS q")
    });
    for (pred, expected, name) in [
        (empty, expected_empty, "empty"),
        (extra, expected_extra, "extra column"),
    ] {
        let report = json(&score(pg, &pred, &["--mode", "defog"]));
        let verdicts: Vec<bool> = report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|case| case["ex"] == 1)
            .collect();
        assert_eq!(verdicts.len(), expected.len());
        for (i, (got, want)) in verdicts.iter().zip(&expected).enumerate() {
            assert_eq!(
                got, want,
                "{name} variant of question {i}: {}",
                cases[i].2[0]
            );
        }
    }
    // Both outcomes occur: the empty variant is not trivially all right or all wrong.
    assert!(
        expected_empty_counts.0 > 0 && expected_empty_counts.1 > 0,
        "{expected_empty_counts:?}"
    );
}

fn engine(template: &str, limits: Limits) -> Engine {
    Engine::new(limits, Arc::new(Server::new(template, None).unwrap()))
}

const HOSTILE: &[(&str, ExecErrorKind)] = &[
    (
        "INSERT INTO author (aid, name) VALUES (999999, 'x')",
        ExecErrorKind::Denied,
    ),
    ("UPDATE author SET name = 'x'", ExecErrorKind::Denied),
    ("DELETE FROM author", ExecErrorKind::Denied),
    ("TRUNCATE author", ExecErrorKind::Denied),
    ("DROP TABLE author", ExecErrorKind::Denied),
    ("CREATE TABLE evil (x int)", ExecErrorKind::Denied),
    ("CREATE TEMP TABLE evil (x int)", ExecErrorKind::Denied),
    (
        "ALTER TABLE author ADD COLUMN evil int",
        ExecErrorKind::Denied,
    ),
    (
        "INSERT INTO author (aid) VALUES (1) RETURNING aid",
        ExecErrorKind::Denied,
    ),
    (
        "WITH gone AS (DELETE FROM author RETURNING *) SELECT * FROM gone",
        ExecErrorKind::Denied,
    ),
    ("SELECT * FROM author FOR UPDATE", ExecErrorKind::Denied),
    ("COPY author TO STDOUT", ExecErrorKind::Denied),
    (
        "COPY author FROM PROGRAM 'touch /tmp/sqlgate-evil'",
        ExecErrorKind::Denied,
    ),
    (
        "COPY (SELECT 1) TO PROGRAM 'touch /tmp/sqlgate-evil'",
        ExecErrorKind::Denied,
    ),
    ("SELECT pg_read_file('/etc/passwd')", ExecErrorKind::Denied),
    (
        "SELECT \"PG_READ_FILE\" ('/etc/passwd')",
        ExecErrorKind::Denied,
    ),
    ("SELECT pg_catalog.pg_ls_dir('.')", ExecErrorKind::Denied),
    (
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity",
        ExecErrorKind::Denied,
    ),
    ("SELECT lo_import('/etc/passwd')", ExecErrorKind::Denied),
    (
        "SELECT lo_export(1, '/tmp/sqlgate-evil')",
        ExecErrorKind::Denied,
    ),
    ("SELECT nextval('evil_seq')", ExecErrorKind::Prepare),
    (
        "SELECT * FROM dblink('dbname=academic', 'DELETE FROM author') AS t(x int)",
        ExecErrorKind::Denied,
    ),
    ("COMMIT", ExecErrorKind::Denied),
    ("SET ROLE postgres", ExecErrorKind::Denied),
    ("SELECT 1; DROP TABLE author", ExecErrorKind::Prepare),
    (
        "SELECT set_config('transaction_read_only', 'off', false)",
        ExecErrorKind::Runtime,
    ),
    ("SELECT pg_sleep(30)", ExecErrorKind::Timeout),
    (
        "SELECT count(*) FROM generate_series(1, 10000000000)",
        ExecErrorKind::Timeout,
    ),
    (
        "SELECT generate_series(1, 100000000) AS n",
        ExecErrorKind::TooLarge,
    ),
    (
        "SELECT * FROM author, writes, publication, cite",
        ExecErrorKind::TooLarge,
    ),
    (
        "SELECT repeat('x', 1000) FROM generate_series(1, 500)",
        ExecErrorKind::TooLarge,
    ),
];

/// What only the role stops: the name check misses a Unicode-escaped name, and a catalog
/// readable by superusers only is no function call.
const HOSTILE_TO_THE_ROLE: &[(&str, ExecErrorKind)] = &[
    (
        "SELECT U&\"pg_read_fil\\0065\"('/etc/passwd')",
        ExecErrorKind::Denied,
    ),
    ("SELECT rolpassword FROM pg_authid", ExecErrorKind::Denied),
];

/// Every hostile statement fails with its kind within its bound, as the read-only role and as
/// the superuser alike (the read-only transaction holds without the role), and the database
/// is unchanged afterwards: its `pg_dump` is byte for byte the same.
#[test]
fn the_hostile_set_is_contained_and_changes_nothing() {
    let Some(pg) = defog_server() else { return };
    let before = pg.dump_checksum("academic");
    let limits = Limits {
        timeout: Some(Duration::from_millis(1500)),
        max_rows: 1000,
        max_bytes: 200_000,
        max_steps: None,
    };
    let admin = format!("postgres://postgres@127.0.0.1:{}/{{db}}", pg.port());
    for (template, role_only) in [
        (pg.reader_template(), HOSTILE_TO_THE_ROLE),
        (admin, &[][..]),
    ] {
        let engine = engine(&template, limits);
        for (sql, kind) in HOSTILE.iter().chain(role_only) {
            let run = engine.execute(Path::new("academic"), sql);
            match &run.result {
                Err(error) if error.kind == *kind => {}
                other => panic!("{template}: `{sql}` should fail as {kind:?}, got {other:?}"),
            }
            assert!(
                run.elapsed < Duration::from_secs(5),
                "{template}: `{sql}` took {:?}",
                run.elapsed
            );
        }
        // The session is intact afterwards: the bound still holds and reads still work.
        let sleep = engine.execute(Path::new("academic"), "SELECT pg_sleep(30)");
        assert_eq!(sleep.result.unwrap_err().kind, ExecErrorKind::Timeout);
        let count = engine.execute(Path::new("academic"), "SELECT count(*) FROM author");
        assert_eq!(count.result.unwrap().rows.len(), 1);
    }
    assert!(!Path::new("/tmp/sqlgate-evil").exists());
    assert_eq!(pg.dump_checksum("academic"), before, "the database changed");
}

/// The checksum the hostile test relies on sees a one-row change.
#[test]
fn the_dump_checksum_sees_a_change() {
    let Some(pg) = defog_server() else { return };
    pg.psql("postgres", &["-c", "CREATE DATABASE scratch"]);
    pg.psql(
        "scratch",
        &["-c", "CREATE TABLE t (x int); INSERT INTO t VALUES (1)"],
    );
    let before = pg.dump_checksum("scratch");
    assert_eq!(
        pg.dump_checksum("scratch"),
        before,
        "two dumps of one state agree"
    );
    pg.psql("scratch", &["-c", "UPDATE t SET x = 2"]);
    assert_ne!(pg.dump_checksum("scratch"), before);
}

#[test]
fn the_role_check_warns_about_a_role_that_can_write() {
    let Some(pg) = defog_server() else { return };
    let reader = Server::new(&pg.reader_template(), None).unwrap();
    assert_eq!(
        reader.check_reader("academic").unwrap(),
        Vec::<String>::new()
    );
    let admin = Server::new(
        &format!("postgres://postgres@127.0.0.1:{}/{{db}}", pg.port()),
        None,
    )
    .unwrap();
    let warnings = admin.check_reader("academic").unwrap().join("\n");
    assert!(warnings.contains("is a superuser"), "{warnings}");
    assert!(warnings.contains("may write to"), "{warnings}");
    let unreachable = Server::new("postgres://sqlgate_reader@127.0.0.1:1/{db}", None).unwrap();
    let error = unreachable
        .check_reader("academic")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("cannot connect to postgres://sqlgate_reader@127.0.0.1:1/academic"),
        "{error}"
    );
}

#[test]
fn values_map_like_psycopg2_through_pandas() {
    let Some(pg) = defog_server() else { return };
    let engine = engine(&pg.reader_template(), Limits::default());
    let run = engine.execute(
        Path::new("academic"),
        "SELECT 2::int2 AS a, 3::int8 AS b, 1.1::float4 AS c, 0.1::float8 AS d, \
         AVG(x)::numeric AS e, 12345.678::numeric AS f, true AS g, 'é'::text AS h, \
         '\\x00ff'::bytea AS i, DATE '2020-01-05' AS j, TIMESTAMP '2020-01-05 10:00:00.5' AS k, \
         TIME '09:05:00' AS l, INTERVAL '1 day 2 hours' AS m, NULL::numeric AS n, \
         'NaN'::numeric AS o FROM (VALUES (1), (2)) AS t(x)",
    );
    use sqlgate_eval::exec::Value::*;
    let rows = &run.result.unwrap().rows;
    let expected = [
        Int(2),
        Int(3),
        Real(1.1),
        Real(0.1),
        Real(1.5),
        Real(12345.678),
        Int(1),
        Text("é".into()),
        Blob(vec![0, 255]),
        Text("2020-01-05".into()),
        Text("2020-01-05 10:00:00.500000".into()),
        Text("09:05:00".into()),
        Text("1 day, 2:00:00".into()),
        Null,
    ];
    assert_eq!(&rows[0][..expected.len()], &expected);
    assert!(matches!(rows[0][14], Real(f) if f.is_nan()));
    let array = engine.execute(Path::new("academic"), "SELECT ARRAY[1, 2] AS a");
    let error = array.result.unwrap_err();
    assert!(
        error.message.contains("cast the column"),
        "{}",
        error.message
    );
}

/// `sqlgate test` on a PostgreSQL suite: a command system reads the schema from the request
/// (read from the server) and answers from the gold; JUnit, the snapshot and the cassette are
/// written, and a replay under `--record none` gives the same outcome. ETM runs there too, and a
/// role that can do more than read is warned about after the run.
#[test]
fn sqlgate_test_runs_a_postgres_suite_end_to_end() {
    let Some(pg) = defog_server() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Ids are record indices of the restaurants-only file written below.
    let answers: serde_json::Map<String, serde_json::Value> = cases()
        .into_iter()
        .filter(|(_, db, _)| db == "restaurants")
        .enumerate()
        .map(|(i, (_, _, gold))| (i.to_string(), serde_json::Value::String(runnable(&gold[0]))))
        .collect();
    std::fs::write(
        dir.path().join("answers.json"),
        serde_json::Value::Object(answers).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("agent.py"),
        "import json, sys\n\
         request = json.load(sys.stdin)\n\
         assert 'CREATE TABLE restaurant (' in request['schema'], request['schema']\n\
         answers = json.load(open('answers.json'))\n\
         print(json.dumps({'sql': answers[request['id']]}))\n",
    )
    .unwrap();
    let gold = dir.path().join("restaurants.csv");
    let text = std::fs::read_to_string(questions()).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    // Keeps the restaurants questions whole (none spans lines).
    let rows: Vec<&str> = lines.filter(|l| l.contains(",restaurants,")).collect();
    std::fs::write(&gold, format!("{header}\n{}\n", rows.join("\n"))).unwrap();
    let configure = |dsn: &str| {
        std::fs::write(
            dir.path().join("sqlgate.toml"),
            format!(
                "[gate]\nex = \">= 1.0\"\n\n[[suite]]\nname = \"pg\"\nbenchmark = \"restaurants.csv\"\n\
                 engine = \"postgres\"\ndsn = \"{dsn}\"\nstructural = [\"etm\"]\n\n[[system]]\n\
                 name = \"agent\"\ntype = \"command\"\ncommand = [\"python3\", \"agent.py\"]\n"
            ),
        )
        .unwrap();
    };
    configure(&pg.reader_template());
    let test = |extra: &[&str]| {
        sqlgate()
            .current_dir(dir.path())
            .args(["test", "--junit", "junit.xml"])
            .args(extra)
            .run()
    };
    let first = test(&["--record", "new", "--accept"]);
    let out = first.stdout.clone() + &first.stderr;
    assert!(first.status.success(), "{out}");
    assert!(out.contains("pg::gate::ex"), "{out}");
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"classname="pg""#) && junit.contains(r#"tests="26""#),
        "{junit}"
    );
    assert!(!junit.contains("<failure"), "{junit}");
    assert!(dir
        .path()
        .join("snapshots/predictions/agent.jsonl")
        .is_file());
    let snapshot = std::fs::read_to_string(dir.path().join("snapshots/pg.snap")).unwrap();
    assert!(snapshot.contains("pg::restaurants::0"), "{snapshot}");
    assert!(!out.contains("warning:"), "{out}");
    // `--record none` never calls the system: the cassette answers, matching the snapshot.
    let replay = test(&["--record", "none"]);
    assert!(
        replay.status.success(),
        "{}{}",
        &replay.stdout,
        &replay.stderr
    );
    configure(&format!(
        "postgres://postgres@127.0.0.1:{}/{{db}}",
        pg.port()
    ));
    let as_admin = test(&["--record", "none"]);
    let out = as_admin.stdout.clone() + &as_admin.stderr;
    assert!(as_admin.status.success(), "{out}");
    // With the run's other warnings, after its summary.
    assert!(
        as_admin
            .stdout
            .contains("warning: postgres://postgres@127.0.0.1:")
            && as_admin.stdout.contains("is a superuser"),
        "{out}"
    );
}

/// The same predictions (built from the PostgreSQL gold) scored on SQLite and on PostgreSQL
/// give the same verdicts on every question whose gold is the same text in both dialects.
/// Elsewhere a verdict differs only because the PostgreSQL SQL does not run on SQLite, or,
/// for two questions, because SQLite holds dates as text (docs/postgres.md).
#[test]
fn sqlite_and_postgres_agree_where_the_gold_dialects_agree() {
    /// Date arithmetic on text: `predicted_graduation_semester - admit_term` subtracts the
    /// leading years on SQLite, and `CURRENT_DATE - max(admit_term)` is a number of days on
    /// PostgreSQL only.
    const DATES_AS_TEXT: [usize; 2] = [26, 28];
    let Some(pg) = defog_server() else { return };
    let defog = shared_data().unwrap().join("defog");
    let sqlite_gold = defog.join("questions.csv");
    let same_gold: Vec<bool> = {
        let load = |path: &Path, on_server: bool| {
            let backend: Arc<dyn sqlgate_eval::exec::Backend> = if on_server {
                Arc::new(Server::new("postgres://reader@127.0.0.1/{db}", None).unwrap())
            } else {
                sqlgate_engine_sqlite::files()
            };
            let options = sqlgate_eval::loaders::LoadOptions::on(backend);
            sqlgate_eval::loaders::load(path, &options).unwrap().cases
        };
        let (lite, post) = (load(&sqlite_gold, false), load(&questions(), true));
        lite.iter()
            .zip(&post)
            .map(|(a, b)| a.gold == b.gold)
            .collect()
    };
    assert_eq!(same_gold.iter().filter(|&&s| s).count(), 20);
    let dir = tempfile::tempdir().unwrap();
    let sets = [
        predictions(dir.path(), "gold.jsonl", str::to_string),
        predictions(dir.path(), "empty.jsonl", |sql| {
            format!("SELECT * FROM ({sql}) AS q WHERE false")
        }),
        predictions(dir.path(), "extra.jsonl", |sql| {
            format!("SELECT q.*, 'x' AS extra FROM ({sql}) AS q")
        }),
    ];
    let verdicts = |output: Run| -> Vec<(String, bool)> {
        json(&output)["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["verdict"].as_str().unwrap().to_string(),
                    c["exact"] == true,
                )
            })
            .collect()
    };
    let mut compared = 0;
    for pred in &sets {
        let on_postgres = verdicts(score(pg, pred, &[]));
        let on_sqlite = verdicts(
            sqlgate()
                .arg("score")
                .arg("--gold")
                .arg(&sqlite_gold)
                .arg("--pred")
                .arg(pred)
                .args(["--format", "json"])
                .run(),
        );
        for (i, same) in same_gold.iter().enumerate() {
            let (lite, post) = (&on_sqlite[i], &on_postgres[i]);
            let context = format!(
                "{} question {i}: SQLite {lite:?}, PostgreSQL {post:?}",
                pred.display()
            );
            if *same {
                assert_eq!(lite, post, "{context}");
                compared += 1;
            } else if lite != post {
                assert!(
                    lite.0 == "pred_error" || DATES_AS_TEXT.contains(&i),
                    "{context}"
                );
            }
        }
    }
    assert_eq!(compared, 60);
}

/// The schema read from the server's catalog is the one the SQLite build of the same database
/// declares: tables, columns, primary keys and foreign keys (types are each engine's own).
#[test]
fn the_server_schema_matches_the_sqlite_build() {
    let Some(pg) = defog_server() else { return };
    let server = Server::new(&pg.reader_template(), None).unwrap();
    let defog = shared_data().unwrap().join("defog");
    for db in sqlgate_test_support::postgres::DEFOG_DATABASES {
        let on_server = server.schema(db).unwrap();
        let in_file =
            sqlgate_engine_sqlite::read_schema(&defog.join(format!("{db}.sqlite"))).unwrap();
        let facts = |schema: &sqlgate_eval::exec::schema::Schema| {
            let mut columns: Vec<(String, String, bool)> = schema
                .tables
                .iter()
                .flat_map(|t| {
                    t.columns
                        .iter()
                        .map(move |c| (t.name.to_lowercase(), c.name.to_lowercase(), c.primary_key))
                })
                .collect();
            columns.sort();
            let mut keys: Vec<String> = schema
                .foreign_keys
                .iter()
                .map(|k| format!("{} -> {}", k.from.key(), k.to.key()))
                .collect();
            keys.sort();
            (columns, keys)
        };
        assert_eq!(facts(&on_server), facts(&in_file), "{db}");
        assert!(!on_server.tables.is_empty(), "{db}");
        let ddl = on_server.ddl();
        assert!(ddl.starts_with("CREATE TABLE "), "{ddl}");
    }
}

/// ETM on the server reads the schema facts the SQLite build of each database gives (the
/// declared types aside, each engine's own), and scores end to end: gold as prediction
/// matches wherever the gold is SQL, and a prediction with an extra column never does.
#[test]
fn etm_runs_on_the_server_with_the_facts_of_the_sqlite_build() {
    let Some(pg) = defog_server() else { return };
    let on_server = engine(&pg.reader_template(), Limits::default());
    let on_sqlite = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
    let defog = shared_data().unwrap().join("defog");
    for db in sqlgate_test_support::postgres::DEFOG_DATABASES {
        let server_facts = Facts::read(&on_server, Path::new(db)).unwrap();
        let file_facts = Facts::read(&on_sqlite, &defog.join(format!("{db}.sqlite"))).unwrap();
        // Each table as (name, columns, NOT NULL, UNIQUE, foreign keys, has rows, ISO dates).
        let comparable = |facts: &Facts| {
            let sorted = |items: Vec<String>| {
                let mut items = items;
                items.sort();
                items
            };
            let mut tables: Vec<_> = facts
                .tables
                .iter()
                .map(|(name, t)| {
                    let keys = t.foreign_keys.iter().map(|(k, v)| format!("{k} -> {v}"));
                    (
                        name.clone(),
                        t.columns.clone(),
                        sorted(t.non_null.iter().cloned().collect()),
                        sorted(t.unique.iter().cloned().collect()),
                        sorted(keys.collect()),
                        t.has_rows,
                        sorted(t.iso_dates.iter().cloned().collect()),
                    )
                })
                .collect();
            tables.sort();
            tables
        };
        assert_eq!(comparable(&server_facts), comparable(&file_facts), "{db}");
    }
    let dir = tempfile::tempdir().unwrap();
    let statuses = |name: &str, sql: fn(&str) -> String| -> Vec<(u64, String)> {
        let pred = predictions(dir.path(), name, sql);
        json(&score(pg, &pred, &["--metrics", "etm"]))["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let status = c["etm_detail"]["status"].as_str().unwrap().to_string();
                (c["etm"].as_u64().unwrap(), status)
            })
            .collect()
    };
    let gold = statuses("gold.jsonl", str::to_string);
    for ((id, _, alternatives), (etm, status)) in cases().iter().zip(&gold) {
        // sql-eval's `{a,b}` column sets are not SQL: no engine plans such a gold.
        if alternatives[0].contains('{') {
            assert_eq!(status, "invalid_gold", "{id}");
        } else {
            assert_eq!((*etm, status.as_str()), (1, "match"), "{id}");
        }
    }
    let extra = statuses("extra.jsonl", |sql| {
        format!("SELECT q.*, 'x' AS extra FROM ({sql}) AS q")
    });
    assert!(extra.iter().all(|(etm, _)| *etm == 0));
    assert!(extra.iter().any(|(_, status)| status == "nomatch"));
}

/// `sqlgate generate jqe` on the server: the schema graph comes from the catalog and every
/// retained expansion returns rows on PostgreSQL.
#[test]
fn jqe_expands_the_postgres_questions_on_the_server() {
    let Some(pg) = defog_server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("jqe.jsonl");
    let output = sqlgate()
        .args(["generate", "jqe", "--gold"])
        .arg(questions())
        .args([
            "--engine",
            "postgres",
            "--dsn",
            &pg.reader_template(),
            "--out",
        ])
        .arg(&out)
        .run();
    output.assert_success();
    let text = std::fs::read_to_string(&out).unwrap();
    let expansions: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(expansions.len() >= 10, "{} expansions", expansions.len());
    let engine = engine(&pg.reader_template(), Limits::default());
    for expansion in &expansions {
        let (db, sql) = (
            expansion["db"].as_str().unwrap(),
            expansion["sql"].as_str().unwrap(),
        );
        let rows = engine
            .execute(Path::new(db), sql)
            .result
            .unwrap()
            .rows
            .len();
        assert!(rows > 0, "{sql}");
    }
}

/// `sqlgate score` warns on stderr about a role that can write, and stops with exit 2 before
/// scoring when a database cannot be reached.
#[test]
fn score_warns_about_the_role_and_stops_on_an_unreachable_server() {
    let Some(pg) = defog_server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pred = predictions(dir.path(), "gold.jsonl", str::to_string);
    let run = |dsn: &str| {
        sqlgate()
            .arg("score")
            .arg("--gold")
            .arg(questions())
            .arg("--pred")
            .arg(&pred)
            .args(["--engine", "postgres", "--dsn", dsn])
            .run()
    };
    let admin = run(&format!(
        "postgres://postgres@127.0.0.1:{}/{{db}}",
        pg.port()
    ));
    let stderr = &admin.stderr;
    assert!(admin.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: postgres://postgres@127.0.0.1:"),
        "{stderr}"
    );
    assert!(stderr.contains("is a superuser"), "{stderr}");
    let down = run("postgres://sqlgate_reader@127.0.0.1:1/{db}");
    let stderr = &down.stderr;
    assert_eq!(down.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("questions_postgres.csv") && stderr.contains("cannot connect to"),
        "{stderr}"
    );
    assert!(down.stdout.is_empty());
}

#[test]
fn efficiency_by_steps_reads_the_planner_cost_on_the_server() {
    let Some(pg) = defog_server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pred = predictions(dir.path(), "gold.jsonl", str::to_string);
    let report = json(&score(pg, &pred, &["--efficiency", "steps"]));
    // The same SQL plans at the same cost: a ratio of 1, run after run. A gold with a column
    // set is measured as its first expansion, which the prediction (every column) is not.
    let golds = cases();
    let mut same = 0;
    for (case, (_, _, gold)) in report["cases"].as_array().unwrap().iter().zip(&golds) {
        let ratio = case["efficiency"]["steps"]["ratio"].as_f64().unwrap();
        if gold[0].contains('{') {
            assert!(ratio > 0.0, "{case}");
        } else {
            assert_eq!(ratio, 1.0, "{case}");
            same += 1;
        }
    }
    assert!(same > 100, "{same}");
    assert_eq!(report, json(&score(pg, &pred, &["--efficiency", "steps"])));
    // A cost, not a time: a scan costs more than a constant, and a write is still refused.
    use sqlgate_eval::exec::{Probe, QueryRunner};
    let engine = engine(&pg.reader_template(), Limits::default());
    let cost = |sql| engine.probe(Path::new("academic"), sql, Probe::Cost, None);
    let constant = cost("SELECT 1").unwrap();
    let scan = cost("SELECT a.name FROM author AS a, writes AS w WHERE a.aid = w.aid").unwrap();
    assert!(0.0 < constant && constant < scan, "{constant} {scan}");
    assert_eq!(
        cost("SELECT a.name FROM author AS a, writes AS w WHERE a.aid = w.aid"),
        Ok(scan)
    );
    let denied = cost("DELETE FROM author").unwrap_err();
    assert_eq!(denied.kind, ExecErrorKind::Denied, "{denied:?}");
    let outside = cost("SELECT pg_read_file('/etc/passwd')").unwrap_err();
    assert_eq!(outside.kind, ExecErrorKind::Denied, "{outside:?}");
}
