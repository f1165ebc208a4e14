//! Structural metrics end to end: the `score --metrics esm,etm` JSON contract on Spider dev,
//! ETM of every query against itself, and no panic on any gold or prediction of
//! `../shared/data` (skipped when it is absent).

use std::path::Path;

use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_eval::metrics::{esm, etm};

use crate::support::{shared_data, sqlgate};

fn score(args: &[&str]) -> serde_json::Value {
    let output = sqlgate().arg("score").args(args).run();
    output.assert_success();
    serde_json::from_str(&output.stdout).expect("JSON")
}

fn spider_args(spider: &Path, pred: &Path) -> Vec<String> {
    [
        "--gold",
        &spider.join("gold.txt").display().to_string(),
        "--pred",
        &pred.display().to_string(),
        "--tables",
        &spider.join("tables.json").display().to_string(),
        "--db-dir",
        &spider.join("schema-db").display().to_string(),
        "--metrics",
        "esm,etm",
        "--format",
        "json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn score_reports_esm_etm_and_hardness_per_case_and_their_means() {
    let Some(data) = shared_data() else {
        return;
    };
    let spider = data.join("spider-dev");
    let args = spider_args(&spider, &spider.join("predictions/DIN.txt"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let report = score(&args);
    let reference = std::fs::read_to_string(spider.join("reference/DIN.jsonl")).unwrap();
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1034);
    let mut by_level: std::collections::BTreeMap<String, (f64, f64)> = Default::default();
    for (case, line) in cases.iter().zip(reference.lines()) {
        let expected: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(case["hardness"], expected["hardness"], "{case}");
        assert_eq!(case["esm"], expected["esm"], "{case}");
        let etm = case["etm"].as_u64().unwrap();
        assert!(etm <= 1);
        let detail = &case["etm_detail"];
        assert_eq!(detail["etm"].as_bool(), Some(etm == 1), "{detail}");
        if etm == 0 && detail["status"] == "nomatch" {
            assert!(detail["difference"]["path"].is_string(), "{detail}");
        }
        for level in ["all", case["hardness"].as_str().unwrap()] {
            let entry = by_level.entry(level.to_string()).or_default();
            entry.0 += 1.0;
            entry.1 += etm as f64;
        }
    }
    let summary = &report["summary"]["etm"];
    let (n, matched) = by_level.remove("all").unwrap();
    assert!((summary["all"].as_f64().unwrap() - matched / n).abs() < 1e-12);
    for (level, (n, matched)) in by_level {
        let mean = summary["by_hardness"][&level].as_f64().unwrap();
        assert!((mean - matched / n).abs() < 1e-12, "{level}");
    }
    // The reference mode reproduces the reference program's ETM total (0.6441 for DIN-SQL).
    let mut compat_args = args.clone();
    compat_args.push("--etm-compat");
    let compat = score(&compat_args);
    let reference_mean = reference
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["etm"]
                .as_f64()
                .unwrap()
        })
        .sum::<f64>()
        / 1034.0;
    let compat_mean = compat["summary"]["etm"]["all"].as_f64().unwrap();
    assert!(
        (compat_mean - reference_mean).abs() < 0.001,
        "{compat_mean} vs {reference_mean}"
    );
}

#[test]
fn every_gold_query_tree_matches_itself() {
    let Some(data) = shared_data() else {
        return;
    };
    let spider = data.join("spider-dev");
    let dir = tempfile::tempdir().unwrap();
    let gold = std::fs::read_to_string(spider.join("gold.txt")).unwrap();
    let as_predictions: Vec<&str> = gold
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    let pred = dir.path().join("gold-as-pred.txt");
    std::fs::write(&pred, as_predictions.join("\n")).unwrap();
    let args = spider_args(&spider, &pred);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let report = score(&args);
    assert_eq!(report["summary"]["etm"]["all"], 1.0);
    assert_eq!(report["summary"]["esm"]["all"], 1.0);
}

/// Every query of a file, paired with every other query of the same database position.
fn spider_queries(data: &Path) -> Vec<(String, String)> {
    let spider = data.join("spider-dev");
    let gold = std::fs::read_to_string(spider.join("gold.txt")).unwrap();
    let mut queries: Vec<(String, String)> = gold
        .lines()
        .map(|l| {
            let (sql, db) = l.split_once('\t').unwrap();
            (sql.to_string(), db.trim().to_string())
        })
        .collect();
    for system in ["C3", "DIN", "RESDSQL", "RASAT+PICARD"] {
        let preds =
            std::fs::read_to_string(spider.join(format!("predictions/{system}.txt"))).unwrap();
        let with_db: Vec<(String, String)> = preds
            .lines()
            .zip(gold.lines())
            .map(|(p, g)| {
                (
                    p.to_string(),
                    g.split('\t').nth(1).unwrap().trim().to_string(),
                )
            })
            .collect();
        queries.extend(with_db);
    }
    queries
}

#[test]
fn no_query_of_the_shared_data_makes_the_structural_metrics_panic() {
    let Some(data) = shared_data() else {
        return;
    };
    let etm = etm::Evaluator::new(false);
    let compat = etm::Evaluator::new(true);
    let runner = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
    // Spider: every gold and prediction, as gold and as prediction of its neighbour.
    let spider = data.join("spider-dev");
    let esm = esm::Evaluator::with_database_dir(
        spider.join("tables.json"),
        spider.join("schema-db"),
        sqlgate_engine_sqlite::files(),
    )
    .unwrap();
    let queries = spider_queries(&data);
    for window in queries.windows(2) {
        let ((a, db), (b, _)) = (&window[0], &window[1]);
        let file = spider
            .join("schema-db")
            .join(db)
            .join(format!("{db}.sqlite"));
        for (gold, pred) in [(a, b), (b, a), (a, a)] {
            let _ = esm.score(gold, pred, db);
            let verdict = etm.score(gold, pred, &file, &runner).unwrap();
            let _ = compat.score(gold, pred, &file, &runner).unwrap();
            if gold == pred && verdict.status != etm::Status::InvalidGold {
                assert!(verdict.etm, "{gold}: {}", verdict.explain());
            }
        }
    }
    // Defog: every gold alternative against every other of its question, and the apology
    // queries of idk.csv, on the real databases.
    let defog = sqlgate_eval::loaders::load(
        &data.join("defog/questions.csv"),
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .unwrap();
    let idk = sqlgate_eval::loaders::load(
        &data.join("defog/idk.csv"),
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .unwrap();
    for case in defog.cases.iter().chain(&idk.cases) {
        let bench = if defog.cases.iter().any(|c| std::ptr::eq(c, case)) {
            &defog
        } else {
            &idk
        };
        let file = bench.db_files(case, false).unwrap().remove(0);
        let alternatives: Vec<&String> = case
            .gold
            .iter()
            .chain(case.tags.get("apology_sql"))
            .collect();
        assert!(!alternatives.is_empty(), "{}", case.id);
        for gold in &alternatives {
            for pred in &alternatives {
                let verdict = etm.score(gold, pred, &file, &runner).unwrap();
                let _ = compat.score(gold, pred, &file, &runner).unwrap();
                if gold == pred && verdict.status != etm::Status::InvalidGold {
                    assert!(verdict.etm, "{gold}: {}", verdict.explain());
                }
            }
        }
    }
}
