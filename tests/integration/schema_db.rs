//! `schema-db`: the databases built from Spider's `tables.json` equal the shared reference files
//! (`spider-dev/schema-db/`) in every schema fact SQLite reports; the command's output and its
//! bad-input path.

use std::path::{Path, PathBuf};

use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags};
use sqlgate_eval::spider::schema_db::{build_databases, Outcome};

use crate::support::{shared_data, sqlgate, Run};

/// Every row of `sql`, each value as SQLite gives it.
fn rows(conn: &Connection, sql: &str) -> Vec<Vec<Value>> {
    let mut stmt = conn.prepare(sql).expect(sql);
    let width = stmt.column_count();
    stmt.query_map([], |row| (0..width).map(|i| row.get(i)).collect())
        .and_then(|rows| rows.collect())
        .expect(sql)
}

/// The schema facts compared: `sqlite_master` rows, then each table's columns, foreign keys
/// and indexes (with their columns), and its row count.
fn schema_facts(path: &Path) -> Vec<(String, Vec<Vec<Value>>)> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY;
    let conn = Connection::open_with_flags(path, flags).expect("open database");
    let master = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid";
    let mut facts: Vec<(String, Vec<Vec<Value>>)> = (rows(&conn, master).into_iter())
        .enumerate()
        .map(|(i, row)| (format!("sqlite_master row {i}"), vec![row]))
        .collect();
    let tables = rows(&conn, "SELECT name FROM sqlite_master WHERE type = 'table'");
    for table in tables {
        let Value::Text(table) = &table[0] else {
            panic!("table name {table:?}")
        };
        let quoted = format!("\"{}\"", table.replace('"', "\"\""));
        for pragma in ["table_info", "foreign_key_list", "index_list"] {
            let sql = format!("PRAGMA {pragma}({quoted})");
            facts.push((sql.clone(), rows(&conn, &sql)));
        }
        let sql = format!(
            "SELECT name FROM pragma_index_list('{}')",
            table.replace('\'', "''")
        );
        for index in rows(&conn, &sql) {
            let Value::Text(index) = &index[0] else {
                panic!("index name {index:?}")
            };
            let sql = format!("PRAGMA index_xinfo(\"{index}\")");
            facts.push((sql.clone(), rows(&conn, &sql)));
        }
        let sql = format!("SELECT count(*) FROM {quoted}");
        facts.push((sql.clone(), rows(&conn, &sql)));
    }
    facts
}

#[test]
fn dev_databases_equal_the_reference_schema_databases() {
    let Some(data) = shared_data() else {
        return;
    };
    let spider = data.join("spider-dev");
    let reference = spider.join("schema-db");
    let mut db_ids: Vec<String> = std::fs::read_dir(&reference)
        .expect("list schema-db")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    db_ids.sort();
    assert_eq!(db_ids.len(), 20, "the 20 Spider dev databases");

    let out = tempfile::tempdir().expect("temp dir");
    let built = build_databases(
        &spider.join("tables.json"),
        out.path(),
        &db_ids,
        false,
        &*sqlgate_engine_sqlite::files(),
    )
    .expect("tables.json builds");
    let mut built_ids: Vec<&str> = built.iter().map(|b| b.db_id.as_str()).collect();
    built_ids.sort();
    assert_eq!(built_ids, db_ids);
    for database in &built {
        assert_eq!(database.outcome, Outcome::Written);
        let db_id = &database.db_id;
        let expected = schema_facts(&reference.join(db_id).join(format!("{db_id}.sqlite")));
        let actual = schema_facts(&database.path);
        assert_eq!(actual.len(), expected.len(), "{db_id}: number of facts");
        for ((query, actual), (_, expected)) in actual.iter().zip(&expected) {
            assert_eq!(actual, expected, "{db_id}: {query}");
        }
    }
}

/// `sqlgate schema-db --tables TABLES --out OUT EXTRA...`
fn schema_db(tables: &Path, out: &Path, extra: &[&str]) -> Run {
    sqlgate()
        .arg("schema-db")
        .arg("--tables")
        .arg(tables)
        .arg("--out")
        .arg(out)
        .args(extra)
        .run()
}

/// A `tables.json` with one good database, `good`, and a second record as given.
fn tables_json(dir: &Path, second: &str) -> PathBuf {
    let good = r#"{"db_id": "good", "table_names_original": ["t"],
        "column_names_original": [[-1, "*"], [0, "id"], [0, "name"]],
        "column_types": ["text", "number", "text"], "primary_keys": [1], "foreign_keys": []}"#;
    let path = dir.join("tables.json");
    std::fs::write(&path, format!("[{good}, {second}]")).expect("write tables.json");
    path
}

#[test]
fn command_prints_each_database_and_replaces_only_with_force() {
    let dir = tempfile::tempdir().expect("temp dir");
    let other = r#"{"db_id": "other", "table_names_original": ["u"],
        "column_names_original": [[-1, "*"], [0, "x"]], "column_types": ["text", "time"],
        "primary_keys": [], "foreign_keys": []}"#;
    let tables = tables_json(dir.path(), other);
    let out = dir.path().join("out");
    let good = out.join("good").join("good.sqlite");

    let first = schema_db(&tables, &out, &["--db", "good"]);
    first.assert_success();
    assert_eq!(first.stdout, format!("wrote {}\n", good.display()));
    assert!(!out.join("other").exists());

    let again = schema_db(&tables, &out, &[]);
    again.assert_success();
    let lines: Vec<String> = again.stdout.lines().map(str::to_string).collect();
    let other_path = out.join("other").join("other.sqlite");
    assert_eq!(
        lines,
        [
            format!("skipped {} (exists; --force replaces it)", good.display()),
            format!("wrote {}", other_path.display()),
        ]
    );

    let forced = schema_db(&tables, &out, &["--force"]);
    forced.assert_success();
    assert_eq!(forced.stdout.matches("wrote ").count(), 2);
}

#[test]
fn malformed_tables_json_exits_2_naming_the_file_and_record() {
    let dir = tempfile::tempdir().expect("temp dir");
    let broken = r#"{"db_id": "broken", "table_names_original": ["t"],
        "column_names_original": [[-1, "*"], [0, "a"]], "column_types": ["text", "number"],
        "primary_keys": [1], "foreign_keys": [[1, 9]]}"#;
    let tables = tables_json(dir.path(), broken);
    let out = dir.path().join("out");
    let output = schema_db(&tables, &out, &[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = output.stderr;
    assert!(stderr.contains(&tables.display().to_string()), "{stderr}");
    assert!(stderr.contains("record 1"), "{stderr}");
    assert!(stderr.contains("\"broken\""), "{stderr}");
    assert!(stderr.contains("refers to column 9"), "{stderr}");
    assert!(!out.exists(), "bad input writes nothing");

    std::fs::write(&tables, "[{\"db_id\": ").expect("write tables.json");
    let output = schema_db(&tables, &out, &[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = output.stderr;
    assert!(stderr.contains(&tables.display().to_string()), "{stderr}");
    assert!(stderr.contains("not a JSON list"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
