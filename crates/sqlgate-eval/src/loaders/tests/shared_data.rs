//! The loaders on the real shared data (skipped when it is absent).

use std::collections::BTreeSet;

use super::*;
use crate::loaders::{load_predictions, Answer, GoldFormat};
use sqlgate_test_support::shared_data;

#[test]
fn defog_questions_csv() {
    let Some(data) = shared_data() else { return };
    let bench = load_default(&data.join("defog/questions.csv")).unwrap();
    assert_eq!(bench.format, GoldFormat::Defog);
    assert_eq!(bench.cases.len(), 135);
    assert!(bench.cases.iter().all(|c| c.feasible && !c.gold.is_empty()));
    // Counted independently with Python's csv module: non-empty `;` pieces over all rows.
    let alternatives: usize = bench.cases.iter().map(|c| c.gold.len()).sum();
    assert_eq!(alternatives, 239);
    // The first row (read by eye) lists three alternatives: by name, by id, and both.
    let first = &bench.cases[0];
    assert_eq!(first.db, "academic");
    assert_eq!(first.gold.len(), 3);
    assert!(first.gold[0].starts_with("SELECT author.name FROM author WHERE"));
    assert!(first.gold[1].starts_with("SELECT author.aid FROM author WHERE"));
    assert!(first.gold[2].starts_with("SELECT author.name, author.aid FROM author WHERE"));
    assert!(first.gold.iter().all(|sql| sql.ends_with("= 2)")));
    assert!(first.question.contains("\"Machine Learning\""));
    let categories: BTreeSet<&str> = bench
        .cases
        .iter()
        .map(|c| c.tags["category"].as_str())
        .collect();
    assert_eq!(
        categories,
        BTreeSet::from([
            "date_functions",
            "group_by",
            "instruct",
            "order_by",
            "ratio",
            "table_join"
        ])
    );
    let with_evidence = bench.cases.iter().filter(|c| c.evidence.is_some()).count();
    assert_eq!(with_evidence, 25);
    for case in &bench.cases {
        let files = bench.db_files(case, false).unwrap();
        assert_eq!(files, [data.join(format!("defog/{}.sqlite", case.db))]);
    }
}

#[test]
fn defog_idk_csv() {
    let Some(data) = shared_data() else { return };
    let bench = load_default(&data.join("defog/idk.csv")).unwrap();
    assert_eq!(bench.format, GoldFormat::DefogIdk);
    assert_eq!(bench.cases.len(), 75);
    for case in &bench.cases {
        assert!(!case.feasible && case.gold.is_empty(), "case {}", case.id);
        assert!(
            case.tags["apology_sql"].starts_with("SELECT '"),
            "case {}",
            case.id
        );
        assert!(["cat_a", "cat_b", "cat_c"].contains(&case.tags["category"].as_str()));
    }
    assert!(bench.cases[0]
        .question
        .starts_with("How has technology influenced"));
    assert_eq!(bench.cases[0].db, "academic");
}

#[test]
fn spider_gold_and_published_predictions() {
    let Some(data) = shared_data() else { return };
    let spider = data.join("spider-dev");
    let options = LoadOptions {
        db_dir: Some(spider.join("schema-db")),
        ..LoadOptions::on(sqlgate_engine_sqlite::files())
    };
    let bench = load(&spider.join("gold.txt"), &options).unwrap();
    assert_eq!(bench.format, GoldFormat::Spider);
    assert_eq!(bench.cases.len(), 1034);
    assert_eq!(bench.tables, Some(spider.join("tables.json")));
    assert_eq!(bench.cases[0].gold, ["SELECT count(*) FROM singer"]);
    assert_eq!(bench.cases[0].db, "concert_singer");
    assert_eq!(bench.cases[1033].id, "1033");
    // The hardness tag equals the reference evaluator's, pair for pair.
    let reference = std::fs::read_to_string(spider.join("reference/C3.jsonl")).unwrap();
    for (case, line) in bench.cases.iter().zip(reference.lines()) {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            case.tags["hardness"],
            record["hardness"].as_str().unwrap(),
            "case {}",
            case.id
        );
    }
    let dbs: BTreeSet<&str> = bench.cases.iter().map(|c| c.db.as_str()).collect();
    assert_eq!(dbs.len(), 20);
    let files = bench.db_files(&bench.cases[0], true).unwrap();
    assert_eq!(
        files,
        [spider.join("schema-db/concert_singer/concert_singer.sqlite")]
    );
    for system in ["C3", "DIN", "RASAT+PICARD", "RESDSQL"] {
        let path = spider.join(format!("predictions/{system}.txt"));
        let predictions = load_predictions(&path, None, &bench).unwrap();
        assert_eq!(predictions.len(), 1034, "{system}");
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // The reference verdicts name each pair's database: it must be the gold case's.
        let reference =
            std::fs::read_to_string(spider.join(format!("reference/{system}.jsonl"))).unwrap();
        for (i, ((prediction, case), verdict)) in predictions
            .iter()
            .zip(&bench.cases)
            .zip(reference.lines())
            .enumerate()
        {
            let verdict: serde_json::Value = serde_json::from_str(verdict).unwrap();
            assert_eq!(verdict["i"], i, "{system}");
            assert_eq!(verdict["db"], case.db.as_str(), "{system} line {}", i + 1);
            assert_eq!(
                prediction.answer,
                Answer::Sql(lines[i].trim().to_string()),
                "{system}"
            );
            assert_eq!(prediction.source.line, Some(i + 1));
        }
    }
}
