//! Checks against the Spider dev data in the shared data folder (skipped when it is absent):
//! hardness of every gold query equals the test-suite evaluator's, and the parser never panics
//! on gold or predictions.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{classify, parse, Hardness, Schema};
use sqlgate_test_support::shared_data;

const SYSTEMS: [&str; 4] = ["C3", "DIN", "RASAT+PICARD", "RESDSQL"];

fn spider_dev() -> Option<PathBuf> {
    Some(shared_data()?.join("spider-dev"))
}

/// `SQL<TAB>db_id` lines, stripped as the reference strips them.
fn gold(dir: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dir.join("gold.txt")).expect("gold.txt");
    text.lines()
        .map(|line| {
            let (sql, db) = line.trim().split_once('\t').expect("SQL<TAB>db_id");
            (sql.to_string(), db.to_string())
        })
        .collect()
}

/// The reference verdicts of `system`, one JSON object per gold line.
fn reference(dir: &Path, system: &str) -> Vec<serde_json::Value> {
    let path = dir.join("reference").join(format!("{system}.jsonl"));
    let text = std::fs::read_to_string(path).expect("reference jsonl");
    text.lines()
        .map(|line| serde_json::from_str(line).expect("JSON line"))
        .collect()
}

/// The schemas read from `schema-db/<db>/<db>.sqlite`, as the reference reads them.
fn sqlite_schemas(dir: &Path, gold: &[(String, String)]) -> HashMap<String, Schema> {
    let mut schemas = HashMap::new();
    for (_, db) in gold {
        if !schemas.contains_key(db) {
            let path = dir.join("schema-db").join(db).join(format!("{db}.sqlite"));
            let schema = Schema::from_sqlite(&*sqlgate_engine_sqlite::files(), &path)
                .expect("schema database");
            schemas.insert(db.clone(), schema);
        }
    }
    schemas
}

fn check_gold_hardness(
    gold: &[(String, String)],
    schemas: &HashMap<String, Schema>,
    expected: &[serde_json::Value],
) {
    assert_eq!(gold.len(), expected.len());
    let mut mismatches = Vec::new();
    for (i, ((sql, db), verdict)) in gold.iter().zip(expected).enumerate() {
        let expected: Hardness =
            serde_json::from_value(verdict["hardness"].clone()).expect("hardness field");
        let actual = classify(sql, &schemas[db]);
        if actual != Ok(expected) {
            mismatches.push(format!(
                "line {}: {sql} → {actual:?}, expected {expected}",
                i + 1
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} gold queries differ:\n{}",
        mismatches.len(),
        gold.len(),
        mismatches.join("\n")
    );
}

#[test]
fn gold_hardness_matches_the_reference_with_sqlite_schemas() {
    let Some(dir) = spider_dev() else { return };
    let gold = gold(&dir);
    assert_eq!(gold.len(), 1034);
    check_gold_hardness(&gold, &sqlite_schemas(&dir, &gold), &reference(&dir, "C3"));
}

#[test]
fn gold_hardness_matches_the_reference_with_tables_json_schemas() {
    let Some(dir) = spider_dev() else { return };
    let gold = gold(&dir);
    let schemas = Schema::from_tables_json(dir.join("tables.json")).expect("tables.json");
    check_gold_hardness(&gold, &schemas, &reference(&dir, "C3"));
}

/// Every prediction parses to the same tree under both schema sources, no prediction panics,
/// and every prediction that fails to parse has ESM 0 in the reference (it scores the empty
/// query there).
#[test]
fn predictions_parse_without_panics_and_failures_score_zero() {
    let Some(dir) = spider_dev() else { return };
    let gold = gold(&dir);
    let sqlite = sqlite_schemas(&dir, &gold);
    let json = Schema::from_tables_json(dir.join("tables.json")).expect("tables.json");
    let mut summary = Vec::new();
    for system in SYSTEMS {
        let path = dir.join("predictions").join(format!("{system}.txt"));
        let text = std::fs::read_to_string(path).expect("predictions");
        let verdicts = reference(&dir, system);
        let mut failures = 0;
        for (i, line) in text.lines().enumerate() {
            // the reference's prediction preprocessing
            let sql = line.trim().replace(" value ", " 1 ");
            let db = &gold[i].1;
            let tree = parse(&sql, &sqlite[db]);
            assert_eq!(tree, parse(&sql, &json[db]), "{system} line {}", i + 1);
            if tree.is_err() {
                failures += 1;
                assert_eq!(verdicts[i]["esm"], 0, "{system} line {}: {sql}", i + 1);
            }
        }
        summary.push(format!("{system}: {failures}"));
    }
    eprintln!("predictions that fail to parse: {}", summary.join(", "));
}

/// Every prefix (cut at whitespace) of every gold query parses or fails without panicking.
#[test]
fn truncated_gold_queries_never_panic() {
    let Some(dir) = spider_dev() else { return };
    let gold = gold(&dir);
    let schemas = sqlite_schemas(&dir, &gold);
    for (sql, db) in &gold {
        for (cut, _) in sql.match_indices(' ') {
            // only the absence of a panic matters here
            let _ = parse(&sql[..cut], &schemas[db]);
        }
    }
}
