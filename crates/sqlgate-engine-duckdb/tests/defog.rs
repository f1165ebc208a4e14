//! The five Defog SQLite databases copied into DuckDB files through the interface
//! (`copy_database`): the catalog survives the copy, and the PostgreSQL-dialect golds run on
//! DuckDB give what the SQLite golds of the same questions give on SQLite.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use common::{copy_sqlite, open, SqliteFile};
use sqlgate_engine::catalog::{ForeignKey, Schema};
use sqlgate_engine::{Connection, Driver, ExecError, Limits, ResultSet, Source, Value};
use sqlgate_engine_duckdb::DRIVER;

const DATABASES: [&str; 5] = ["academic", "advising", "atis", "geography", "restaurants"];

/// How many questions' PostgreSQL golds on DuckDB agree with their SQLite golds on SQLite, of
/// the 135: 119 when written. Of the others, 11 compute ratios and give other numbers, and 5 fail
/// on DuckDB: `current_date` needs the ICU extension, which is not compiled in, and DuckDB has
/// no `to_char` (the test's output lists them).
const AGREEING_FLOOR: usize = 119;

fn defog() -> Option<PathBuf> {
    Some(sqlgate_test_support::shared_data()?.join("defog"))
}

/// The five databases copied into `dir`, with the SQLite schema each copy read.
fn copies(defog: &Path, dir: &Path) -> Vec<(&'static str, PathBuf, Schema)> {
    DATABASES
        .iter()
        .map(|name| {
            let to = dir.join(format!("{name}.duckdb"));
            let schema = copy_sqlite(&defog.join(format!("{name}.sqlite")), &to);
            (*name, to, schema)
        })
        .collect()
}

fn catalog_of(conn: &mut dyn Connection) -> Schema {
    DRIVER
        .catalog(&mut |sql: &str| {
            conn.execute(sql, &Limits::default())
                .result
                .map(|set| set.rows.clone())
        })
        .unwrap()
}

/// Table and column names, primary keys and NOT NULL, foreign keys, in a comparable order.
type Shape = (
    BTreeMap<String, Vec<(String, bool, bool)>>,
    Vec<(String, String, String, String)>,
);

fn shape(schema: &Schema) -> Shape {
    let tables = schema
        .tables
        .iter()
        .map(|t| {
            let columns = t
                .columns
                .iter()
                .map(|c| (c.name.clone(), c.primary_key, c.not_null))
                .collect();
            (t.name.clone(), columns)
        })
        .collect();
    let mut keys: Vec<_> = schema
        .foreign_keys
        .iter()
        .map(|ForeignKey { from, to }| {
            (
                from.table.clone(),
                from.column.clone(),
                to.table.clone(),
                to.column.clone(),
            )
        })
        .collect();
    keys.sort();
    (tables, keys)
}

#[test]
fn copied_defog_databases_keep_their_catalog_and_rows() {
    let Some(defog) = defog() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut foreign_keys = 0;
    for (name, path, sqlite_schema) in copies(&defog, dir.path()) {
        let mut conn = open(&path, Source::Gold);
        let duck = catalog_of(conn.as_mut());
        assert!(!duck.tables.is_empty(), "{name}");
        assert_eq!(shape(&duck), shape(&sqlite_schema), "{name}");
        foreign_keys += duck.foreign_keys.len();
        // Declared types map by SQLite's affinity rules.
        for table in &duck.tables {
            for column in &table.columns {
                let sqlite_column = sqlite_schema
                    .table(&table.name)
                    .and_then(|t| t.columns.iter().find(|c| c.name == column.name))
                    .unwrap();
                let expected = match sqlite_column.decl_type.as_str() {
                    "INTEGER" => "BIGINT",
                    "TEXT" => "VARCHAR",
                    "REAL" | "NUMERIC" => "DOUBLE",
                    other => other,
                };
                assert_eq!(
                    column.decl_type, expected,
                    "{name}.{}.{}",
                    table.name, column.name
                );
            }
        }
        // Every row came across.
        let mut sqlite = SqliteFile::open(&defog.join(format!("{name}.sqlite")));
        for table in &sqlite_schema.tables {
            let sql = format!("SELECT count(*) FROM {}", DRIVER.quote(&table.name));
            let count = |conn: &mut dyn Connection| {
                conn.execute(&sql, &Limits::default()).result.unwrap().rows[0][0].clone()
            };
            assert_eq!(
                count(conn.as_mut()),
                count(&mut sqlite),
                "{name}.{}",
                table.name
            );
        }
        // The unique-columns query runs, and finds the single-column primary keys.
        let unique = conn
            .execute(&DRIVER.unique_columns_query().unwrap(), &Limits::default())
            .result
            .unwrap();
        let single_keys = sqlite_schema
            .tables
            .iter()
            .filter(|t| sqlite_schema.single_primary_key(&t.name).is_some())
            .count();
        assert_eq!(unique.rows.len(), single_keys, "{name}");
    }
    // Only academic declares foreign keys, and they survive the copy.
    assert!(foreign_keys > 0);
}

/// One row's cells as comparable keys: numbers to 9 significant digits (an integer and a real
/// of the same value agree), texts and blobs as they are.
fn row_key(row: &[Value]) -> Vec<String> {
    row.iter()
        .map(|value| match value {
            Value::Null => "null".to_string(),
            Value::Int(i) => format!("n:{:.8e}", *i as f64),
            Value::Real(f) => format!("n:{f:.8e}"),
            Value::Text(text) => format!("t:{text}"),
            Value::Blob(bytes) => format!("b:{bytes:?}"),
        })
        .collect()
}

/// A result as a multiset of rows.
fn multiset(result: &ResultSet) -> Vec<Vec<String>> {
    let mut rows: Vec<_> = result.rows.iter().map(|row| row_key(row)).collect();
    rows.sort();
    rows
}

/// The gold's alternatives: `;`-separated queries, each `{a, b}` column set expanded into
/// every non-empty combination of its options (sql-eval's convention).
fn alternatives(gold: &str) -> Vec<String> {
    let mut out = Vec::new();
    for piece in gold.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((left, rest)) = piece.split_once('{') else {
            out.push(piece.to_string());
            continue;
        };
        let Some((options, right)) = rest.split_once('}') else {
            out.push(piece.to_string());
            continue;
        };
        let options: Vec<&str> = options.split(',').map(str::trim).collect();
        for mask in 1u32..(1 << options.len()) {
            let chosen: Vec<&str> = (0..options.len())
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| options[i])
                .collect();
            let columns = chosen.join(", ");
            let right = right.replace("GROUP BY {}", &format!("GROUP BY {columns}"));
            out.push(format!("{left}{columns}{right}"));
        }
    }
    out
}

fn questions(
    path: &Path,
    db: &str,
    question: &str,
    query: &str,
) -> HashMap<(String, String), String> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    let index = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (db, question, query) = (index(db), index(question), index(query));
    reader
        .records()
        .map(|record| {
            let record = record.unwrap();
            (
                (record[db].to_string(), record[question].to_string()),
                record[query].to_string(),
            )
        })
        .collect()
}

#[test]
fn postgresql_golds_on_duckdb_agree_with_sqlite_golds_on_sqlite() {
    let Some(defog) = defog() else { return };
    let dir = tempfile::tempdir().unwrap();
    let copied = copies(&defog, dir.path());
    let postgres = questions(
        &defog.join("postgres/questions_postgres.csv"),
        "db_name",
        "question",
        "query",
    );
    let sqlite_golds = questions(&defog.join("questions.csv"), "db_name", "question", "query");
    assert_eq!(postgres.len(), 135);
    let limits = Limits::default();
    let (mut agree, mut disagree, mut fail) = (Vec::new(), Vec::new(), Vec::new());
    let mut ran_on_duckdb = 0;
    let mut keys: Vec<_> = postgres.keys().collect();
    keys.sort();
    for key in keys {
        let (db, question) = key;
        let Some(sqlite_gold) = sqlite_golds.get(key) else {
            panic!("no SQLite gold for {db}: {question}");
        };
        let path = &copied
            .iter()
            .find(|(name, ..)| *name == db.as_str())
            .unwrap()
            .1;
        let mut duck = open(path, Source::Gold);
        let mut sqlite = SqliteFile::open(&defog.join(format!("{db}.sqlite")));
        let duck_results: Vec<Result<Vec<Vec<String>>, ExecError>> = alternatives(&postgres[key])
            .iter()
            .map(|sql| duck.execute(sql, &limits).result.map(|r| multiset(&r)))
            .collect();
        ran_on_duckdb += duck_results.iter().filter(|r| r.is_ok()).count();
        let sqlite_results: Vec<Vec<Vec<String>>> = alternatives(sqlite_gold)
            .iter()
            .filter_map(|sql| {
                sqlite
                    .execute(sql, &limits)
                    .result
                    .ok()
                    .map(|r| multiset(&r))
            })
            .collect();
        assert!(
            !sqlite_results.is_empty(),
            "{db}: {question}: no SQLite gold ran"
        );
        let ok: Vec<&Vec<Vec<String>>> = duck_results
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .collect();
        if ok.is_empty() {
            let why = duck_results
                .iter()
                .find_map(|r| r.as_ref().err())
                .map(|e| e.message.lines().next().unwrap_or("").to_string())
                .unwrap_or_default();
            fail.push(format!("{db}: {question}: {why}"));
        } else if ok.iter().any(|d| sqlite_results.contains(d)) {
            agree.push(question.clone());
        } else {
            disagree.push(format!("{db}: {question}"));
        }
    }
    eprintln!(
        "Defog on DuckDB: {} of 135 questions agree with SQLite, {} disagree, {} fail on DuckDB \
         ({ran_on_duckdb} PostgreSQL gold alternatives ran)",
        agree.len(),
        disagree.len(),
        fail.len()
    );
    for line in disagree
        .iter()
        .map(|d| format!("disagrees: {d}"))
        .chain(fail.iter().map(|f| format!("fails: {f}")))
    {
        eprintln!("  {line}");
    }
    assert!(ran_on_duckdb > 0);
    assert!(
        agree.len() >= AGREEING_FLOOR,
        "{} questions agree, fewer than {AGREEING_FLOOR}",
        agree.len()
    );
}
