//! `sqlgate generate infeasible`: for every database, questions of the three column kinds that
//! name a column the table lacks, plus non-SQL and external-knowledge requests; deterministic
//! for a seed; the suite loads and scores.

use std::collections::BTreeMap;
use std::path::Path;

use sqlgate_eval::spider::Schema;

use crate::support::{demo, shared_data, sqlgate};

fn generate(gold: &Path, out: &Path, seed: &str) -> Vec<serde_json::Value> {
    let output = sqlgate()
        .args(["generate", "infeasible", "--seed", seed, "--gold"])
        .arg(gold)
        .arg("--out")
        .arg(out)
        .run();
    output.assert_success();
    let text = std::fs::read_to_string(out.join("cases.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn check(gold: &Path, db_files: &dyn Fn(&str) -> std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let cases = generate(gold, &dir.path().join("a"), "7");
    let again = generate(gold, &dir.path().join("b"), "7");
    assert_eq!(cases, again, "the same seed gives the same questions");
    assert_ne!(
        cases,
        generate(gold, &dir.path().join("c"), "8"),
        "another seed, other questions"
    );
    let mut kinds: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for case in &cases {
        let db = case["db"].as_str().unwrap();
        let kind = case["tags"]["infeasible"].as_str().unwrap();
        *kinds
            .entry(db.to_string())
            .or_default()
            .entry(kind.to_string())
            .or_default() += 1;
        assert_eq!(case["type"], "infeasible");
        assert!(case.get("gold").is_none());
        let Some(hypothetical) = case["tags"]["hypothetical"].as_str() else {
            assert!(kind == "non-sql" || kind == "ext-know", "{case}");
            continue;
        };
        let (table, column) = hypothetical.split_once('.').unwrap();
        let schema = Schema::from_sqlite(&*sqlgate_engine_sqlite::files(), db_files(db)).unwrap();
        let columns = schema
            .columns(table)
            .unwrap_or_else(|| panic!("{db}: no table {table}"));
        assert!(
            !columns.iter().any(|c| c.eq_ignore_ascii_case(column)),
            "{db}: {hypothetical} exists"
        );
        if kind != "column-surface" {
            // Not answerable through another table either.
            for other in schema.tables() {
                assert!(
                    !other.columns.iter().any(|c| c.eq_ignore_ascii_case(column)),
                    "{db}: {column} in {}",
                    other.name
                );
            }
        }
    }
    for (db, kinds) in &kinds {
        for kind in [
            "column-surface",
            "column-related",
            "column-unrelated",
            "non-sql",
            "ext-know",
        ] {
            assert!(
                kinds.get(kind).is_some_and(|n| *n > 0),
                "{db} has no {kind} question: {kinds:?}"
            );
        }
    }
    // The generated suite loads, and abstaining on all of it is all correct.
    let suite = dir.path().join("a/suite.toml");
    let bench = sqlgate_eval::loaders::load(
        &suite,
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .unwrap();
    assert_eq!(bench.cases.len(), cases.len());
    assert!(bench.cases.iter().all(|c| !c.feasible));
}

#[test]
fn demo_databases() {
    let demo = demo("");
    check(&demo.join("suite.toml"), &|db| {
        demo.join("build").join(format!("{db}.sqlite"))
    });
}

#[test]
fn defog_databases() {
    let Some(data) = shared_data() else {
        return;
    };
    let defog = data.join("defog");
    check(&defog.join("questions.csv"), &|db| {
        defog.join(format!("{db}.sqlite"))
    });
}
