//! `etm.md` §9 vectors (reference and harness verdicts) on the §9 fixture database.

use std::path::{Path, PathBuf};

use super::*;
use crate::exec::{Engine, Limits};

const FIXTURE: &str = "
CREATE TABLE stadium (stadium_id INTEGER PRIMARY KEY, name TEXT, location TEXT, capacity INTEGER);
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT, age INTEGER, is_male TEXT);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT,
                      stadium_id INTEGER REFERENCES stadium(stadium_id), year TEXT);
CREATE TABLE singer_in_concert (concert_id INTEGER REFERENCES concert(concert_id),
                                singer_id INTEGER REFERENCES singer(singer_id),
                                PRIMARY KEY (concert_id, singer_id));
INSERT INTO stadium VALUES (1, 'Hampden', 'Glasgow', 50000);
INSERT INTO singer VALUES (1, 'Ann', 'France', 30, 'F');
INSERT INTO concert VALUES (1, 'Opening', 1, '2014');
INSERT INTO singer_in_concert VALUES (1, 1);
";

/// The fixture database, written into `dir`.
pub(super) fn fixture(dir: &Path) -> PathBuf {
    let path = dir.join("concert_singer.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(FIXTURE).unwrap();
    path
}

/// A runner on SQLite files, with the run's default bounds.
pub(super) fn runner() -> Engine {
    Engine::new(Limits::default(), sqlgate_engine_sqlite::files())
}

const S: &str = "SELECT name FROM singer";

/// (gold, prediction, reference verdict, harness verdict), `etm.md` §9.
fn vectors() -> Vec<(String, String, bool, bool)> {
    let w = |cond: &str| format!("{S} WHERE {cond}");
    let v = |g: &str, p: &str, r: bool, h: bool| (g.to_string(), p.to_string(), r, h);
    vec![
        v(S, "select NAME from SINGER", true, true),
        v("SELECT name, age FROM singer", "SELECT age, name FROM singer", true, true),
        v("SELECT T1.name FROM singer AS T1", "SELECT singer.name FROM singer", true, true),
        v(&w("age > 30 AND country = 'France'"), &w("country = 'France' AND age > 30"), true, true),
        v(&w("country = 'France'"), &w("country = 'france'"), false, false),
        v(&w("age = 30"), &w("age = '30'"), true, true),
        v(&w("age = 30"), &w("age = 30.0"), true, true),
        v("SELECT count(*) FROM singer", "SELECT count(singer_id) FROM singer", true, true),
        v("SELECT count(*) FROM singer", "SELECT count(country) FROM singer", false, false),
        v("SELECT count(*) FROM singer", "SELECT count(name) FROM singer", true, true),
        v("SELECT DISTINCT singer_id FROM singer", "SELECT singer_id FROM singer", true, true),
        v("SELECT DISTINCT country FROM singer", "SELECT country FROM singer", false, false),
        v(&w("age BETWEEN 20 AND 40"), &w("age >= 20 AND age <= 40"), true, true),
        v(&w("country IN ('France','USA')"), &w("country = 'France' OR country = 'USA'"), true, true),
        v(&format!("{S} ORDER BY age DESC LIMIT 1"), &w("age = (SELECT max(age) FROM singer)"), false, false),
        v(
            "SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id",
            "SELECT singer.name FROM singer JOIN singer_in_concert ON singer.singer_id = singer_in_concert.singer_id",
            true,
            true,
        ),
        v(
            &w("singer_id IN (SELECT singer_id FROM singer_in_concert)"),
            "SELECT singer.name FROM singer JOIN singer_in_concert ON singer.singer_id = singer_in_concert.singer_id",
            false,
            false,
        ),
        v(S, &w("name IS NOT NULL"), true, true),
        v(&w("name LIKE 'An%'"), &w("substr(name, 1, 2) = 'An'"), true, false),
        v("SELECT * FROM stadium", "SELECT stadium_id, name, location, capacity FROM stadium", true, true),
        v(S, "SELECT nme FROM singer", false, false),
        v(&w("country = \"France\""), &w("country = 'France'"), true, true),
        v(
            "SELECT iif(age > 30, 'old', 'young') FROM singer",
            "SELECT CASE WHEN age > 30 THEN 'old' ELSE 'young' END FROM singer",
            false,
            true,
        ),
        v("WITH t AS (SELECT name FROM singer) SELECT name FROM t", "SELECT name FROM (SELECT name FROM singer)", false, true),
        v("SELECT max(age) FROM singer", "SELECT age FROM singer ORDER BY age DESC LIMIT 1", true, true),
        v(&w("NOT age > 30"), &w("age <= 30"), true, true),
        v(&w("age > 30"), &w("age >= 30"), false, false),
        v("SELECT 150 FROM singer", "SELECT 150.0 FROM singer", false, true),
        v(&w("age > 30 OR name IS NOT NULL"), &w("age > 30"), true, false),
        v(
            &w("singer_id = (SELECT max(singer_id) FROM singer) AND country = 'USA'"),
            &format!("{S} WHERE country = 'USA' ORDER BY singer_id DESC LIMIT 1"),
            true,
            false,
        ),
        v(
            "SELECT T1.stadium_id FROM stadium AS T1 JOIN concert AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T1.stadium_id, T2.year",
            "SELECT T1.stadium_id FROM stadium AS T1 JOIN concert AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T1.stadium_id",
            true,
            false,
        ),
        v(
            "SELECT T2.concert_name FROM stadium AS T1 JOIN concert AS T2 ON T1.stadium_id = T2.stadium_id",
            "SELECT concert_name FROM concert",
            true,
            false,
        ),
        v(&w("name LIKE 'an%'"), &w("substr(name, 1, 2) = 'an'"), true, false),
        v(
            "SELECT country, max(age) FROM singer GROUP BY country",
            "SELECT country, age FROM singer GROUP BY country ORDER BY age DESC LIMIT 1",
            true,
            false,
        ),
        v(&w("age IN (30, 40)"), &w("age IN (30.0, 40)"), true, true),
        v(&w("country = 'Nan'"), &w("country = 'nan'"), true, false),
        v(
            "SELECT T1.name FROM stadium AS T1 LEFT JOIN concert AS T2 ON T1.stadium_id = T2.stadium_id WHERE T2.year IS NULL",
            "SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert)",
            true,
            false,
        ),
        v(
            &format!("{} INTERSECT {}", w("age > 20"), w("country = 'France'")),
            &w("age > 20 AND country = 'France'"),
            false,
            false,
        ),
        v(
            "SELECT singer_id FROM singer WHERE age > 20 INTERSECT SELECT singer_id FROM singer WHERE country = 'France'",
            "SELECT singer_id FROM singer WHERE age > 20 AND country = 'France'",
            true,
            true,
        ),
        v(
            "SELECT singer_id FROM singer WHERE age > 20 UNION SELECT singer_id FROM singer WHERE country = 'France'",
            "SELECT singer_id FROM singer WHERE age > 20 OR country = 'France'",
            false,
            true,
        ),
        v(S, &format!("{S} UNION {S}"), true, false),
        v(
            "SELECT singer_id FROM singer EXCEPT SELECT singer_id FROM singer_in_concert",
            "SELECT singer_id FROM singer WHERE singer_id NOT IN (SELECT singer_id FROM singer_in_concert)",
            true,
            false,
        ),
        v(
            "SELECT count(CASE WHEN age > 30 THEN 1 ELSE NULL END) FROM singer",
            "SELECT sum(CASE WHEN age > 30 THEN 1 ELSE 0 END) FROM singer",
            true,
            true,
        ),
        v(&format!("{S} ORDER BY age"), &format!("{S} ORDER BY julianday(age)"), true, false),
        v(&format!("{S} GROUP BY singer_id, name"), &format!("{S} GROUP BY singer_id"), true, true),
        v(&format!("{S} LIMIT 1"), &format!("{S} LIMIT 1.0"), true, true),
        v(&w("age = 30"), &w("30 = age"), true, true),
        v("SELECT name AS n FROM singer", S, true, true),
        v("SELECT \"name\" FROM \"singer\"", S, true, true),
        v(
            &w("age > 30 AND (country = 'A' OR country = 'B')"),
            &w("age > 30 AND country = 'A' OR country = 'B'"),
            false,
            false,
        ),
        v("SELECT CAST(SUM(age) AS FLOAT) / COUNT(*) FROM singer", "SELECT AVG(age) FROM singer", false, false),
        v(&format!("{S} ORDER BY age"), &format!("{S} ORDER BY age ASC"), true, true),
    ]
}

#[test]
fn spec_vectors_give_the_harness_and_the_reference_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path());
    let (harness, compat) = (Evaluator::new(false), Evaluator::new(true));
    let mut wrong = Vec::new();
    for (number, (gold, pred, reference, expected)) in vectors().into_iter().enumerate() {
        for (evaluator, want, mode) in [
            (&harness, expected, "harness"),
            (&compat, reference, "compat"),
        ] {
            let verdict = evaluator.score(&gold, &pred, &db, &runner()).unwrap();
            if verdict.etm != want {
                wrong.push(format!(
                    "#{} {mode}: want {want}, got {} ({})\n  gold {:?}\n  pred {:?}",
                    number + 1,
                    verdict.etm,
                    verdict.explain(),
                    verdict.gold.normalised,
                    verdict.pred.normalised
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn hostile_predictions_end_in_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path());
    let evaluator = Evaluator::new(false);
    let chain = vec!["age = 1"; 990].join(" OR ");
    let nested = format!("{}1{}", "(".repeat(150), ")".repeat(150));
    let list = (0..10_000)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let hostile = [
        format!("SELECT name FROM singer WHERE {chain}"),
        format!("SELECT {nested} FROM singer"),
        format!("SELECT name FROM singer WHERE age IN ({list})"),
        "DELETE FROM singer".to_string(),
        "SELECT name FROM singer; DROP TABLE singer".to_string(),
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r"
            .to_string(),
        "ATTACH DATABASE 'x.db' AS x".to_string(),
        String::new(),
    ];
    for pred in &hostile {
        let verdict = evaluator
            .score("SELECT name FROM singer", pred, &db, &runner())
            .unwrap();
        assert!(!verdict.etm, "{pred:.80}: {}", verdict.explain());
    }
    // The database is untouched.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let singers: i64 = conn
        .query_row("SELECT count(*) FROM singer", [], |row| row.get(0))
        .unwrap();
    assert_eq!(singers, 1);
}

#[test]
fn queries_too_long_or_deep_to_parse_safely_are_unparsed_not_a_crash() {
    // Issue 11 item 1: a left-leaning chain far deeper than any stack, and a huge IN list, are
    // refused before anything (the preprocessing's regexes included) reads them.
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path());
    let evaluator = Evaluator::new(false);
    let deep = format!("SELECT 1{} FROM singer", "+1".repeat(140_000));
    let verdict = evaluator.score(S, &deep, &db, &runner()).unwrap();
    assert_eq!(verdict.status, Status::PredUnparsed);
    assert_eq!(
        verdict.message.as_deref(),
        Some("too deeply nested (depth 140001 > limit 5000)")
    );
    let list = vec!["\"x\""; 400_000].join(",");
    let long = format!("SELECT name FROM singer WHERE name IN ({list})");
    let verdict = Evaluator::new(true)
        .score(&long, S, &db, &runner())
        .unwrap();
    assert_eq!(verdict.status, Status::GoldUnparsed);
    assert!(verdict.message.unwrap().starts_with("too long ("));
    // Deep within the bound, and valid for SQLite: compared on a large stack.
    let within = format!("SELECT age{} FROM singer", "+1".repeat(900));
    let verdict = evaluator.score(&within, &within, &db, &runner()).unwrap();
    assert_eq!(verdict.status, Status::Match, "{}", verdict.explain());
}

#[test]
fn aliases_spelled_like_tables_or_columns_end_in_a_verdict() {
    // Issue 11 item 2: each of these overflowed the stack, in both modes.
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path());
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE races (raceId INTEGER PRIMARY KEY, year INTEGER, round INTEGER, name TEXT);",
    )
    .unwrap();
    drop(conn);
    let pairs = [
        "SELECT name AS singer FROM singer",
        "SELECT age AS age FROM singer GROUP BY age",
        "SELECT MAX(year) AS year FROM races GROUP BY year ORDER BY MAX(round) DESC LIMIT 1",
    ];
    let (harness, compat) = (Evaluator::new(false), Evaluator::new(true));
    for sql in pairs {
        let verdict = harness.score(sql, sql, &db, &runner()).unwrap();
        assert_eq!(
            verdict.status,
            Status::Match,
            "{sql}: {}",
            verdict.explain()
        );
        assert!(verdict
            .pred
            .departures
            .iter()
            .any(|d| d.defect == "alias-loop"));
        // The reference fails such a pair on its recursion limit and scores it 0.
        let verdict = compat.score(sql, sql, &db, &runner()).unwrap();
        assert_eq!(verdict.status, Status::InternalError, "{sql}");
        assert!(!verdict.etm);
    }
    // The alias goes, its references become the expression: the alias-free query matches.
    let verdict = harness
        .score(
            "SELECT name AS singer FROM singer",
            "SELECT name FROM singer",
            &db,
            &runner(),
        )
        .unwrap();
    assert!(verdict.etm, "{}", verdict.explain());
    let verdict = harness
        .score(
            "SELECT age AS age FROM singer GROUP BY age",
            "SELECT age FROM singer GROUP BY age",
            &db,
            &runner(),
        )
        .unwrap();
    assert!(verdict.etm, "{}", verdict.explain());
}

#[test]
fn pairs_where_compat_disagreed_with_the_reference() {
    // Issue 11 item 12, on data compat was not tuned on.
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path());
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE status (station_id INTEGER, date TEXT);
         CREATE TABLE sailors (sid INTEGER PRIMARY KEY, sname TEXT, rating INTEGER, age REAL);
         CREATE TABLE boats (bid INTEGER PRIMARY KEY, bname TEXT, color TEXT);
         CREATE TABLE reserves (sid INTEGER NOT NULL REFERENCES sailors(sid),
                                bid INTEGER NOT NULL REFERENCES boats(bid), day TEXT);",
    )
    .unwrap();
    drop(conn);
    let (harness, compat) = (Evaluator::new(false), Evaluator::new(true));
    let both = |gold: &str, pred: &str| {
        [&harness, &compat].map(|evaluator| {
            let verdict = evaluator.score(gold, pred, &db, &runner()).unwrap();
            (verdict.etm, verdict.explain())
        })
    };
    // sqlglot reads REAL as FLOAT; SQLite gives both REAL affinity.
    let [sound, reference] = both(
        "SELECT CAST(age AS FLOAT) / 2 FROM singer",
        "SELECT CAST(age AS REAL) / 2 FROM singer",
    );
    assert!(sound.0 && reference.0, "{sound:?} {reference:?}");
    let [sound, _] = both(
        "SELECT CAST(age AS FLOAT) FROM singer",
        "SELECT CAST(age AS TEXT) FROM singer",
    );
    assert!(!sound.0);
    // Rule 15 with BETWEEN (two comparisons after rule 22): the prefix goes into both.
    let [sound, reference] = both(
        "SELECT station_id FROM status WHERE date BETWEEN '201308' AND '201311'",
        "SELECT station_id FROM status WHERE substr(date, 1, 4) = '2013' AND substr(date, 5, 2) BETWEEN '08' AND '11'",
    );
    assert!(sound.0 && reference.0, "{sound:?} {reference:?}");
    // Rule 14 over a 3-way join: the harness drops both key tables (NOT NULL foreign keys).
    // The reference keeps one on such a pair for a reason not yet reproduced (see the report
    // of issue 11 item 12), so compat is not asserted here.
    let gold = "SELECT bid, count(*) FROM reserves WHERE sid > 1 GROUP BY bid";
    let pred = "SELECT T1.bid, count(*) FROM reserves AS T1 JOIN boats AS T2 ON T1.bid = T2.bid \
                JOIN sailors AS T3 ON T1.sid = T3.sid WHERE T1.sid > 1 GROUP BY T1.bid";
    let [sound, _] = both(gold, pred);
    assert!(sound.0, "{sound:?}");
    // One join: both drop it, as before.
    let one = "SELECT T1.bid, count(*) FROM reserves AS T1 JOIN boats AS T2 ON T1.bid = T2.bid \
               WHERE T1.sid > 1 GROUP BY T1.bid";
    let [sound, reference] = both(gold, one);
    assert!(sound.0 && reference.0, "{sound:?} {reference:?}");
}

/// The reference's preprocessing loop, word after word over the whole text.
fn preprocess_word_by_word(sql: &str, facts: &Facts) -> String {
    let quoted = Regex::new(r#""([^"]+)""#).unwrap();
    let mut text = sql.replace('`', "\"");
    let words: Vec<String> = quoted
        .captures_iter(&text)
        .map(|c| c[1].to_string())
        .collect();
    for word in words {
        if !facts.knows_name(&word.to_lowercase()) {
            text = text.replace(&format!("\"{word}\""), &format!("'{word}'"));
        }
    }
    text.replace("datetime()", "datetime('now')")
}

#[test]
fn preprocessing_in_one_pass_gives_the_reference_loop_result() {
    let dir = tempfile::tempdir().unwrap();
    let facts = Facts::read(&runner(), &fixture(dir.path())).unwrap();
    // Every string of up to 5 characters over an alphabet of quotes, names and spaces.
    let alphabet = ['"', '\'', '`', 'a', ' ', 'x'];
    let mut strings = vec![String::new()];
    for _ in 0..5 {
        let longer: Vec<String> = strings
            .iter()
            .filter(|s| s.len() == strings.last().map_or(0, String::len))
            .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
            .collect();
        strings.extend(longer);
    }
    let names = [
        "\"name\" \"a\" \"x\"",
        "SELECT \"name\" FROM singer WHERE \"a b\" = \" a b \"",
    ];
    for sql in strings.iter().map(String::as_str).chain(names) {
        assert_eq!(
            preprocess(sql, &facts),
            preprocess_word_by_word(sql, &facts),
            "{sql:?}"
        );
    }
    // Many distinct quoted words: one pass, not one pass per word.
    let many: Vec<String> = (0..100_000).map(|i| format!("\"w{i}\"")).collect();
    let sql = format!("SELECT name FROM singer WHERE name IN ({})", many.join(","));
    assert!(preprocess(&sql, &facts).contains("'w99999'"));
}
