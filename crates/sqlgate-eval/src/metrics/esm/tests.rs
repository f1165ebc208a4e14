//! ESM on the fixture of `etm.md` §8.2 (its test vectors and the reference quirks), then on the
//! Spider dev data in the shared data folder (skipped when it is absent).

use std::path::{Path, PathBuf};

use super::*;
use sqlgate_test_support::shared_data;

/// The §9 fixture with the §8.2 foreign keys, as a `tables.json`.
const FIXTURE_TABLES_JSON: &str = r#"[{
    "db_id": "fixture",
    "table_names_original": ["stadium", "singer", "concert", "singer_in_concert"],
    "column_names_original": [
        [-1, "*"],
        [0, "stadium_id"], [0, "name"], [0, "location"], [0, "capacity"],
        [1, "singer_id"], [1, "name"], [1, "country"], [1, "age"], [1, "is_male"],
        [2, "concert_id"], [2, "concert_name"], [2, "stadium_id"], [2, "year"],
        [3, "concert_id"], [3, "singer_id"]
    ],
    "foreign_keys": [[12, 1], [14, 10], [15, 5]]
}]"#;

fn fixture() -> Evaluator {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("tables.json");
    std::fs::write(&path, FIXTURE_TABLES_JSON).expect("write tables.json");
    Evaluator::from_tables_json(&path).expect("fixture tables.json")
}

fn score(evaluator: &Evaluator, gold: &str, pred: &str) -> PairScore {
    evaluator
        .score(gold, pred, "fixture")
        .unwrap_or_else(|e| panic!("{gold}: {e}"))
}

const JOIN: &str = "FROM stadium AS T1 JOIN concert AS T2 ON T1.stadium_id = T2.stadium_id";

#[test]
fn test_vectors_of_etm_spec_8_2() {
    let evaluator = fixture();
    let join = |select: &str| format!("{select} {JOIN}");
    let cases = [
        (
            "SELECT name FROM singer WHERE country = 'France'".to_string(),
            "SELECT name FROM singer WHERE country = 'USA'".to_string(),
            true,
        ),
        (
            "SELECT name, age FROM singer".into(),
            "SELECT age, name FROM singer".into(),
            true,
        ),
        (
            join("SELECT T1.name"),
            "SELECT T1.name FROM stadium AS T1 JOIN concert AS T2 ON T1.stadium_id = T2.concert_id"
                .into(),
            true,
        ),
        (
            join("SELECT T1.name"),
            "SELECT T1.name FROM stadium AS T1 LEFT JOIN concert AS T2 ON T1.stadium_id = T2.stadium_id"
                .into(),
            false,
        ),
        (
            "SELECT DISTINCT country FROM singer".into(),
            "SELECT country FROM singer".into(),
            true,
        ),
        (
            "SELECT name FROM stadium ORDER BY capacity DESC LIMIT 1".into(),
            "SELECT name FROM stadium ORDER BY capacity DESC LIMIT 3".into(),
            true,
        ),
        (
            "SELECT count(*) FROM singer".into(),
            "SELECT count(singer_id) FROM singer".into(),
            false,
        ),
        (join("SELECT T2.stadium_id"), join("SELECT T1.stadium_id"), true),
        (
            "SELECT name FROM singer WHERE age > 30 AND country = 'France'".into(),
            "SELECT name FROM singer WHERE country = 'France' AND age > 30".into(),
            true,
        ),
        (
            "SELECT name FROM singer WHERE age BETWEEN 20 AND 40".into(),
            "SELECT name FROM singer WHERE age >= 20 AND age <= 40".into(),
            false,
        ),
    ];
    for (gold, pred, expected) in cases {
        assert_eq!(
            score(&evaluator, &gold, &pred).esm,
            expected,
            "{gold} | {pred}"
        );
    }
}

#[test]
fn unparseable_prediction_is_the_empty_query() {
    let evaluator = fixture();
    let left_join = format!("SELECT T1.name {}", JOIN.replace("JOIN", "LEFT JOIN"));
    let scored = score(&evaluator, &format!("SELECT T1.name {JOIN}"), &left_join);
    assert!(scored.pred_error.is_some());
    let select = scored.partial.get(Component::Select);
    assert_eq!((select.label_total, select.pred_total), (1, 0));
    // the empty query has no WHERE, like the gold
    assert!(scored.partial.get(Component::Where).matched);
}

#[test]
fn gold_that_does_not_parse_is_an_error() {
    let evaluator = fixture();
    let error = evaluator
        .score(
            "SELECT nme FROM singer",
            "SELECT name FROM singer",
            "fixture",
        )
        .expect_err("unknown column");
    assert!(matches!(error, EsmError::GoldUnparsed(_)), "{error}");
    let error = evaluator
        .score(
            "SELECT name FROM singer",
            "SELECT name FROM singer",
            "nowhere",
        )
        .expect_err("unknown database");
    assert_eq!(error, EsmError::UnknownDatabase("nowhere".into()));
}

#[test]
fn prediction_line_is_read_like_the_reference() {
    // the space before the tab stays, so ` value ` is still replaced
    assert_eq!(
        prediction_text("  SELECT a FROM t WHERE b = value \tdb\n"),
        "SELECT a FROM t WHERE b = 1 "
    );
    assert_eq!(
        prediction_text("SELECT a FROM t WHERE b = value AND c = 2"),
        "SELECT a FROM t WHERE b = 1 AND c = 2"
    );
}

#[test]
fn subqueries_in_conditions_drop_values_but_keep_distinct() {
    let evaluator = fixture();
    let gold = "SELECT name FROM singer WHERE singer_id IN \
                (SELECT singer_id FROM singer_in_concert WHERE concert_id = 1)";
    let other_value = gold.replace("= 1", "= 2");
    assert!(score(&evaluator, gold, &other_value).esm);
    let distinct = gold.replace("(SELECT singer_id", "(SELECT DISTINCT singer_id");
    assert!(!score(&evaluator, gold, &distinct).esm);
}

#[test]
fn from_subqueries_keep_their_values() {
    let evaluator = fixture();
    let gold = "SELECT count(*) FROM (SELECT name FROM singer WHERE age > 30)";
    assert!(score(&evaluator, gold, gold).esm);
    assert!(!score(&evaluator, gold, &gold.replace("30", "40")).esm);
}

#[test]
fn compound_parts_map_foreign_keys_of_the_outer_from_tables() {
    let evaluator = fixture();
    let part = |column: &str| format!("SELECT {column} {JOIN}");
    // concert is in the outer FROM: T2.stadium_id maps to stadium.stadium_id, as T1's is
    let outer = "SELECT concert_name FROM concert UNION";
    let gold = format!("{outer} {}", part("T2.stadium_id"));
    let pred = format!("{outer} {}", part("T1.stadium_id"));
    assert!(score(&evaluator, &gold, &pred).esm);
    // singer is: concert.stadium_id stays itself
    let outer = "SELECT name FROM singer UNION";
    let gold = format!("{outer} {}", part("T2.stadium_id"));
    let pred = format!("{outer} {}", part("T1.stadium_id"));
    let scored = score(&evaluator, &gold, &pred);
    assert!(!scored.esm);
    assert!(!scored.partial.get(Component::Iuen).matched);
}

#[test]
fn group_without_having_compares_column_names_only() {
    let evaluator = fixture();
    let scored = score(
        &evaluator,
        "SELECT count(*) FROM singer GROUP BY name",
        "SELECT count(*) FROM stadium GROUP BY name",
    );
    assert!(scored.partial.get(Component::GroupNoHaving).matched);
    assert!(!scored.partial.get(Component::Group).matched);
    assert!(!scored.esm);
}

#[test]
fn and_or_totals_are_swapped_as_in_the_reference() {
    let evaluator = fixture();
    let scored = score(
        &evaluator,
        "SELECT name FROM singer WHERE age > 1 AND country = 'x'",
        "SELECT name FROM singer WHERE age > 1",
    );
    let and_or = scored.partial.get(Component::AndOr);
    assert_eq!((and_or.label_total, and_or.pred_total), (0, 1));
    assert!(!and_or.matched);
}

#[test]
fn order_needs_limit_on_both_sides_or_neither() {
    let evaluator = fixture();
    let gold = "SELECT name FROM stadium ORDER BY capacity DESC LIMIT 1";
    let scored = score(
        &evaluator,
        gold,
        "SELECT name FROM stadium ORDER BY capacity DESC",
    );
    assert!(!scored.partial.get(Component::Order).matched);
    let scored = score(
        &evaluator,
        gold,
        "SELECT name FROM stadium ORDER BY capacity",
    );
    assert!(!scored.partial.get(Component::Order).matched);
}

#[test]
fn keywords_come_from_on_where_and_having() {
    let evaluator = fixture();
    let gold = format!("SELECT T1.name {JOIN} WHERE T1.name LIKE 'a%'");
    let pred = format!("SELECT T1.name {JOIN} WHERE T1.name = 'a'");
    let scored = score(&evaluator, &gold, &pred);
    let keywords = scored.partial.get(Component::Keywords);
    // {where, like} against {where}
    assert_eq!((keywords.label_total, keywords.pred_total), (2, 1));
    assert!(!keywords.matched);
}

#[test]
fn foreign_key_clusters_are_not_merged() {
    let ids: Vec<String> = ["__all__", "__a.x__", "__b.x__", "__c.x__", "__d.x__"]
        .map(String::from)
        .to_vec();
    // (1,2) and (3,4) open two clusters; (2,3) joins the first, so 3 sits in both and the
    // later cluster decides its image
    let map = ForeignKeyMap::new(&ids, &[(1, 2), (3, 4), (2, 3)]).expect("valid links");
    assert_eq!(map.get("__b.x__"), Some("__a.x__"));
    assert_eq!(map.get("__c.x__"), Some("__c.x__"));
    assert_eq!(map.get("__d.x__"), Some("__c.x__"));
    assert_eq!(map.get("__all__"), None);
    assert_eq!(
        ForeignKeyMap::new(&ids, &[(1, 5)]).unwrap_err().to_string(),
        "foreign key refers to missing column 5"
    );
}

#[test]
fn summary_follows_the_reference_aggregation() {
    let evaluator = fixture();
    let miss = score(
        &evaluator,
        "SELECT name FROM singer",
        "SELECT age FROM singer",
    );
    let hit = score(
        &evaluator,
        "SELECT name FROM singer",
        "SELECT name FROM singer",
    );
    assert_eq!(
        (miss.hardness, miss.esm, hit.esm),
        (Hardness::Easy, false, true)
    );

    let mut summary = Summary::default();
    summary.add(&miss);
    let easy = summary.level(Level::Easy);
    let select = easy.partial[Component::Select as usize];
    // one pair, select wrong: acc = rec = 0, so the reported F1 is 1
    assert_eq!((select.acc, select.rec, select.f1), (0.0, 0.0, 1.0));
    // WHERE is absent on both sides: matched, yet neither averaged
    let where_ = easy.partial[Component::Where as usize];
    assert_eq!((where_.acc, where_.rec, where_.f1), (0.0, 0.0, 1.0));

    summary.add(&hit);
    let easy = summary.level(Level::Easy);
    let select = easy.partial[Component::Select as usize];
    assert_eq!((easy.count, easy.exact), (2, 0.5));
    assert_eq!((select.acc, select.rec, select.f1), (0.5, 0.5, 0.5));
    assert_eq!(summary.level(Level::All), easy);
    // an empty level keeps every number 0
    let hard = summary.level(Level::Hard);
    assert_eq!((hard.count, hard.partial[0].f1), (0, 0.0));

    let table = summary.to_string();
    assert!(
        table.contains("exact match          0.500                0.000"),
        "{table}"
    );
}

// ---- Spider dev ----

const SYSTEMS: [(&str, f64); 4] = [
    ("C3", 46.9),
    ("DIN", 60.1),
    ("RESDSQL", 80.5),
    ("RASAT+PICARD", 75.2),
];

fn spider_dev() -> Option<PathBuf> {
    Some(shared_data()?.join("spider-dev"))
}

fn reference_evaluator(dir: &Path) -> Evaluator {
    Evaluator::with_database_dir(
        dir.join("tables.json"),
        dir.join("schema-db"),
        sqlgate_engine_sqlite::files(),
    )
    .expect("tables.json")
}

/// `SQL<TAB>db_id` lines.
fn gold(dir: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dir.join("gold.txt")).expect("gold.txt");
    text.lines()
        .map(|line| {
            let (sql, db) = line.trim().split_once('\t').expect("SQL<TAB>db_id");
            (sql.to_string(), db.to_string())
        })
        .collect()
}

fn lines(path: PathBuf) -> Vec<String> {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    text.lines().map(str::to_string).collect()
}

#[test]
fn esm_equals_the_reference_on_every_spider_dev_pair() {
    let Some(dir) = spider_dev() else { return };
    let evaluator = reference_evaluator(&dir);
    let gold = gold(&dir);
    let mut report = Vec::new();
    let mut mismatches = Vec::new();
    for (system, published) in SYSTEMS {
        let predictions = lines(dir.join("predictions").join(format!("{system}.txt")));
        let reference = lines(dir.join("reference").join(format!("{system}.jsonl")));
        assert_eq!(
            (predictions.len(), reference.len()),
            (gold.len(), gold.len())
        );
        let (mut agree, mut total_esm) = (0, 0);
        for (i, ((gold_sql, db), pred)) in gold.iter().zip(&predictions).enumerate() {
            let expected: serde_json::Value =
                serde_json::from_str(&reference[i]).expect("JSON line");
            let scored = evaluator
                .score(gold_sql, pred, db)
                .unwrap_or_else(|e| panic!("{system} line {}: {e}", i + 1));
            total_esm += usize::from(scored.esm);
            let expected_esm = expected["esm"] == 1;
            let expected_hardness = expected["hardness"].as_str().expect("hardness");
            if scored.esm == expected_esm && scored.hardness.to_string() == expected_hardness {
                agree += 1;
            } else {
                mismatches.push(format!(
                    "{system} line {}: esm {} (reference {}), {gold_sql} | {pred}",
                    i + 1,
                    scored.esm,
                    expected_esm
                ));
            }
        }
        let percent = 100.0 * total_esm as f64 / gold.len() as f64;
        if (percent - published).abs() >= 0.05 {
            mismatches.push(format!(
                "{system}: ESM {percent:.2}%, published {published}"
            ));
        }
        report.push(format!("{system} {agree}/{}", gold.len()));
    }
    eprintln!("ESM agreement: {}", report.join(", "));
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// Every gold query exact-matches itself, and scoring it against every other gold query of
/// its database never panics (the predictions are covered by the test above).
#[test]
fn gold_queries_match_themselves_and_never_panic() {
    let Some(dir) = spider_dev() else { return };
    let evaluator = reference_evaluator(&dir);
    let gold = gold(&dir);
    for (i, (sql, db)) in gold.iter().enumerate() {
        let scored = evaluator.score(sql, sql, db).expect("gold parses");
        assert!(scored.esm, "line {}: {sql}", i + 1);
        let neighbour = &gold[(i + 1) % gold.len()].0;
        // the result does not matter, only that it is one
        let _ = evaluator.score(sql, neighbour, db);
    }
}
