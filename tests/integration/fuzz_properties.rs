//! Property tests over the loaders and the prediction path (issue 11): random expression trees,
//! deep chains, alias and column name collisions and random bytes must end in a verdict or a
//! clear error, never a panic or an abort.
//!
//! CI runs a fixed, small number of cases per property (32). To search longer, set
//! `SQLGATE_FUZZ_CASES`, e.g. `SQLGATE_FUZZ_CASES=5000 cargo test --release --test
//! integration fuzz_properties::`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::select;
use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_eval::loaders::{self, load_predictions, LoadOptions};
use sqlgate_eval::metrics::esm::{self, ForeignKeyMap};
use sqlgate_eval::metrics::etm::{self, Status};
use sqlgate_eval::model_output::{clean_sql, is_apology};
use sqlgate_eval::spider::Schema;
use sqlgate_eval::sqltext;
use sqlgate_generate::mutate::mutants_of;

use crate::support::sqlgate;

fn config() -> ProptestConfig {
    let cases = std::env::var("SQLGATE_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(32);
    ProptestConfig {
        cases,
        // Nothing is written into the source tree; a failure prints its minimal input.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const TABLES: [(&str, &[&str]); 3] = [
    ("singer", &["singer_id", "name", "country", "age"]),
    (
        "concert",
        &["concert_id", "concert_name", "stadium_id", "year"],
    ),
    ("stadium", &["stadium_id", "location", "capacity"]),
];

/// Every table and column name: aliases drawn from here collide with real names.
const NAMES: [&str; 13] = [
    "singer",
    "concert",
    "stadium",
    "singer_id",
    "name",
    "country",
    "age",
    "concert_id",
    "concert_name",
    "stadium_id",
    "year",
    "location",
    "capacity",
];

/// The schema database, built once per test process.
fn database() -> &'static Path {
    static DB: OnceLock<PathBuf> = OnceLock::new();
    DB.get_or_init(|| {
        let path = sqlgate_test_support::removed_at_exit().join("concert_singer.sqlite");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE stadium (stadium_id INTEGER PRIMARY KEY, location TEXT, capacity INTEGER);
             CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT, age INTEGER);
             CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT,
                                   stadium_id INTEGER NOT NULL REFERENCES stadium(stadium_id), year TEXT);
             INSERT INTO stadium VALUES (1, 'Glasgow', 50000);
             INSERT INTO singer VALUES (1, 'Ann', 'France', 30), (2, 'Bo', NULL, 41);
             INSERT INTO concert VALUES (1, 'Opening', 1, '2014');",
        )
        .unwrap();
        path
    })
}

fn esm_evaluator() -> &'static esm::Evaluator {
    static ESM: OnceLock<esm::Evaluator> = OnceLock::new();
    ESM.get_or_init(|| {
        let mut columns = vec!["__all__".to_string()];
        for (table, names) in TABLES {
            columns.extend(names.iter().map(|c| format!("__{table}.{c}__")));
        }
        let links = [(7, 1 + 4 + 4)]; // concert.stadium_id → stadium.stadium_id
        let schema = Schema::new(TABLES.iter().map(|(t, c)| (*t, c.to_vec())));
        esm::Evaluator::new(
            HashMap::from([(
                "concert_singer".to_string(),
                ForeignKeyMap::new(&columns, &links).unwrap(),
            )]),
            HashMap::from([("concert_singer".to_string(), schema)]),
        )
    })
}

/// Runs ETM's catalog and plan queries on the fixture database, for every case.
fn etm_runner() -> &'static Engine {
    static RUNNER: OnceLock<Engine> = OnceLock::new();
    RUNNER.get_or_init(|| Engine::new(Limits::default(), sqlgate_engine_sqlite::files()))
}

fn etm_evaluators() -> &'static [etm::Evaluator; 2] {
    static ETM: OnceLock<[etm::Evaluator; 2]> = OnceLock::new();
    ETM.get_or_init(|| [etm::Evaluator::new(false), etm::Evaluator::new(true)])
}

fn leaf(columns: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => select(columns).prop_map(str::to_string),
        1 => (0i64..50).prop_map(|n| n.to_string()),
        1 => "'[a-zA-Z%]{0,3}'",
        1 => Just("NULL".to_string()),
    ]
}

/// Random expression trees over `columns`: operators, parentheses, CASE, IN lists,
/// aggregates, subqueries.
fn expression(columns: &'static [&'static str]) -> BoxedStrategy<String> {
    const OPS: [&str; 13] = [
        "+", "-", "*", "/", "=", "!=", "<", ">=", "AND", "OR", "||", "LIKE", "IS",
    ];
    leaf(columns)
        .prop_recursive(6, 48, 4, |inner| {
            prop_oneof![
                (inner.clone(), select(&OPS[..]), inner.clone())
                    .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
                inner.clone().prop_map(|a| format!("({a})")),
                inner.clone().prop_map(|a| format!("NOT {a}")),
                (inner.clone(), inner.clone(), inner.clone())
                    .prop_map(|(a, b, c)| format!("CASE WHEN {a} THEN {b} ELSE {c} END")),
                (
                    select(&["MAX", "MIN", "COUNT", "SUM", "abs", "lower"][..]),
                    inner.clone()
                )
                    .prop_map(|(f, a)| format!("{f}({a})")),
                inner.clone().prop_map(|a| format!("substr({a}, 1, 2)")),
                (inner.clone(), prop::collection::vec(inner.clone(), 1..4))
                    .prop_map(|(a, list)| format!("{a} IN ({})", list.join(", "))),
                (inner.clone(), inner.clone())
                    .prop_map(|(a, b)| format!("(SELECT {a} FROM singer WHERE {b})")),
                (inner.clone(), inner).prop_map(|(a, b)| format!("{a} BETWEEN {b} AND 10")),
            ]
        })
        .boxed()
}

/// A left-leaning chain, up to past the depth limit.
fn chain() -> impl Strategy<Value = String> {
    (select(&["+", "AND", "OR", "||", "*"][..]), 1usize..8_000)
        .prop_map(|(op, n)| format!("1{}", format!(" {op} 1").repeat(n)))
}

/// A query over one table of the schema from random parts.
fn query() -> impl Strategy<Value = String> {
    select(&TABLES[..]).prop_flat_map(|(table, columns)| {
        (
            expression(columns),
            prop::option::of(expression(columns)),
            prop::option::of(expression(columns)),
            any::<bool>(),
        )
            .prop_map(move |(item, filter, order, distinct)| {
                let mut sql = format!(
                    "SELECT {}{item} FROM {table}",
                    if distinct { "DISTINCT " } else { "" }
                );
                if let Some(filter) = filter {
                    sql.push_str(&format!(" WHERE {filter}"));
                }
                if let Some(order) = order {
                    sql.push_str(&format!(" ORDER BY {order} LIMIT 3"));
                }
                sql
            })
    })
}

/// `SELECT <expr> AS <alias> FROM <table> [AS <table alias>] [GROUP BY <name>] [ORDER BY ...]`
/// with every name drawn from the schema's tables and columns.
fn aliased_query() -> impl Strategy<Value = String> {
    select(&TABLES[..]).prop_flat_map(|(table, columns)| {
        (
            select(&["", "MAX(", "COUNT(", "abs("][..]),
            select(columns),
            select(&NAMES[..]),
            prop::option::of(select(&NAMES[..])),
            prop::option::of(select(&NAMES[..])),
            prop::option::of(select(&NAMES[..])),
        )
            .prop_map(move |(f, column, alias, table_alias, group, order)| {
                let close = if f.is_empty() { "" } else { ")" };
                let mut sql = format!("SELECT {f}{column}{close} AS {alias} FROM {table}");
                if let Some(t) = table_alias {
                    sql.push_str(&format!(" AS {t}"));
                }
                if let Some(g) = group {
                    sql.push_str(&format!(" GROUP BY {g}"));
                }
                if let Some(o) = order {
                    sql.push_str(&format!(" ORDER BY {o} DESC LIMIT 1"));
                }
                sql
            })
    })
}

/// Everything that reads a predicted query, on one query: no panic, no abort, and a query
/// always matches itself under ETM (sound mode) and ESM whenever it can be compared at all.
fn check_prediction_path(sql: &str) -> Result<(), TestCaseError> {
    let _ = is_apology(sql);
    let _ = clean_sql(sql);
    let _ = mutants_of("q", sql, 42);
    let [sound, compat] = etm_evaluators();
    let verdict = sound.score(sql, sql, database(), etm_runner()).unwrap();
    prop_assert!(
        matches!(
            verdict.status,
            Status::Match | Status::InvalidGold | Status::GoldUnparsed
        ),
        "{sql}: {}",
        verdict.explain()
    );
    if sqltext::check(sql).is_err() {
        prop_assert_eq!(verdict.status, Status::GoldUnparsed);
    }
    let _ = compat.score(sql, sql, database(), etm_runner()).unwrap();
    let _ = sound
        .score(sql, "SELECT name FROM singer", database(), etm_runner())
        .unwrap();
    if let Ok(score) = esm_evaluator().score(sql, sql, "concert_singer") {
        prop_assert!(score.esm, "ESM of {sql} with itself");
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_expression_trees_end_in_a_verdict(sql in query()) {
        check_prediction_path(&sql)?;
    }

    #[test]
    fn deep_chains_end_in_a_verdict(chain in chain(), in_where in any::<bool>()) {
        let sql = if in_where {
            format!("SELECT name FROM singer WHERE {chain}")
        } else {
            format!("SELECT {chain} FROM singer")
        };
        check_prediction_path(&sql)?;
    }

    #[test]
    fn alias_and_name_collisions_end_in_a_verdict(sql in aliased_query()) {
        check_prediction_path(&sql)?;
        // Against the query without its alias, in both modes: any verdict, no crash.
        let plain = sql.replacen(" AS ", " , ", 1);
        for evaluator in etm_evaluators() {
            let _ = evaluator.score(&sql, &plain, database(), etm_runner()).unwrap();
        }
        let _ = esm_evaluator().score(&sql, &plain, "concert_singer");
    }

    #[test]
    fn random_text_is_a_prediction_like_any_other(text in prediction_text()) {
        let cleaned = clean_sql(&text);
        // Pieces of the input only (a stray fence line inside the query is blanked).
        for line in cleaned.sql.lines() {
            prop_assert!(text.contains(line), "{line:?} is not in {text:?}");
        }
        check_prediction_path(&cleaned.sql)?;
    }

    #[test]
    fn random_bytes_as_gold_or_prediction_files_load_or_fail_cleanly(
        bytes in file_bytes(),
        name in select(&[
            "gold.txt", "dev.json", "questions.csv", "cases.jsonl", "suite.toml",
            "predictions.jsonl", "pred.txt", "predict_dev.json", "trustsql.json",
        ][..]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        // As a gold file: loaded or refused with an error naming the file.
        if let Err(error) = loaders::load(&path, &LoadOptions::on(sqlgate_engine_sqlite::files())) {
            prop_assert!(error.to_string().contains(name), "{error}");
        }
        // As predictions for the demo.
        let demo = demo();
        if let Err(error) = load_predictions(&path, None, demo) {
            prop_assert!(error.to_string().contains(name), "{error}");
        }
    }
}

fn demo() -> &'static loaders::Benchmark {
    static DEMO: OnceLock<loaders::Benchmark> = OnceLock::new();
    DEMO.get_or_init(|| {
        let suite = crate::support::demo("suite.toml");
        loaders::load(&suite, &LoadOptions::on(sqlgate_engine_sqlite::files())).unwrap()
    })
}

/// Model output: prose, fences, statements and random characters around SQL.
fn prediction_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("```sql\n".to_string()),
        Just("```".to_string()),
        Just("Here is the query:\n".to_string()),
        Just("CREATE TABLE t (a INT);\n".to_string()),
        Just("; ".to_string()),
        Just("\n\nThis query counts.".to_string()),
        Just("SELECT name FROM singer".to_string()),
        Just("WITH x AS (SELECT 1 AS a) SELECT a FROM x".to_string()),
        "[ -~\n\té;'\"`\\[\\]()]{0,40}",
    ];
    prop::collection::vec(piece, 0..8).prop_map(|parts| parts.concat())
}

/// Arbitrary bytes, and text that looks like each format's records.
fn file_bytes() -> impl Strategy<Value = Vec<u8>> {
    let record = prop_oneof![
        Just(r#"{"id": "q01", "sql": "SELECT 1"}"#.to_string()),
        Just(r#"{"question_id": 0, "SQL": "SELECT 1", "db_id": "bookshop"}"#.to_string()),
        Just(r#"["q01", "SELECT 1"]"#.to_string()),
        Just("SELECT title FROM books\tbookshop".to_string()),
        Just("query;db_name;question".to_string()),
        Just("[[suite]]\nname = \"x\"".to_string()),
        "[ -~\t]{0,60}",
    ];
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        prop::collection::vec(record, 0..6).prop_map(|lines| lines.join("\n").into_bytes()),
    ]
}

#[test]
fn hostile_prediction_files_through_the_cli_exit_0_or_2() {
    // End to end, a few fixed hostile files: the process ends normally, with a report or a
    // clear input error.
    let demo_dir = crate::support::demo("");
    let deep = format!("SELECT 1{}", "+1".repeat(20_000));
    let files: [(&str, Vec<u8>); 4] = [
        ("a.jsonl", vec![0xff, 0xfe, b'{', 0]),
        (
            "b.jsonl",
            format!("{{\"id\": \"q01\", \"sql\": \"{deep}\"}}\n").into_bytes(),
        ),
        (
            "c.jsonl",
            b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[".repeat(1000),
        ),
        ("d.txt", b"SELECT 1\n\n\n\t\t\n".to_vec()),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in files {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let output = sqlgate()
            .arg("score")
            .arg("--gold")
            .arg(demo_dir.join("suite.toml"))
            .arg("--pred")
            .arg(&path)
            .args(["--metrics", "etm"])
            .run();
        let stderr = &output.stderr;
        assert!(
            matches!(output.status.code(), Some(0 | 2)),
            "{name}: {:?}: {stderr}",
            output.status
        );
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    }
}
