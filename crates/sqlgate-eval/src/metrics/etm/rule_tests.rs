//! Every rule of `etm.md` §5 fires on its pattern, and stays off when its schema condition
//! or the harness's guard fails (for rules without an assumption: on a near miss). Where a
//! guard stops a rule, the departure is recorded and the reference's behaviour
//! (`--etm-compat`) fires it.
//!
//! Two databases: the §9 `concert_singer` fixture, and `league`, which has what §9 lacks: a
//! NOT NULL foreign key (`player.team_id`) next to a nullable one (`player.coach_id`), a
//! nullable UNIQUE column (`team.code`), a DATE column and an ISO-8601 text column, a NOT NULL
//! number (`player.score`) and an empty table.

use std::path::{Path, PathBuf};

use super::tests::{fixture, runner};
use super::{Evaluator, Status, Verdict};

/// The databases, by the name their file gets.
const CONCERT: &str = "concert_singer";
const LEAGUE: &str = "league";

const LEAGUE_SCHEMA: &str = "
CREATE TABLE team (team_id INTEGER PRIMARY KEY, code TEXT UNIQUE, name TEXT NOT NULL,
                   founded DATE, city TEXT);
CREATE TABLE coach (coach_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE player (player_id INTEGER PRIMARY KEY,
                     team_id INTEGER NOT NULL REFERENCES team(team_id),
                     coach_id INTEGER REFERENCES coach(coach_id),
                     name TEXT NOT NULL, joined TEXT, score INTEGER NOT NULL, rating INTEGER);
CREATE TABLE empty_log (log_id INTEGER PRIMARY KEY, level INTEGER NOT NULL);
INSERT INTO team VALUES (1, 'GLA', 'Glasgow Rovers', '1901-05-04', 'Glasgow');
INSERT INTO coach VALUES (1, 'Moyes');
INSERT INTO player VALUES (1, 1, 1, 'Ann', '2014-06-01', 7, NULL);
";

/// The database file `db` in `dir`.
fn database(dir: &Path, db: &str) -> PathBuf {
    if db == CONCERT {
        return fixture(dir);
    }
    let path = dir.join(format!("{LEAGUE}.sqlite"));
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(LEAGUE_SCHEMA).unwrap();
    path
}

/// Scores one pair on `db`, as the harness or (`compat`) as the reference.
fn score(db: &str, gold: &str, pred: &str, compat: bool) -> Verdict {
    let dir = tempfile::tempdir().unwrap();
    let path = database(dir.path(), db);
    let verdict = Evaluator::new(compat)
        .score(gold, pred, &path, &runner())
        .unwrap();
    // A pair that never reaches the rules would pass every "does not fire" test.
    assert!(
        matches!(verdict.status, Status::Match | Status::Nomatch),
        "{:?}: {}\n  gold {gold}\n  pred {pred}",
        verdict.status,
        verdict.explain()
    );
    verdict
}

/// A pair on the §9 fixture, scored by the harness.
fn verdict(gold: &str, pred: &str) -> Verdict {
    score(CONCERT, gold, pred, false)
}

/// The side(s) of a pair a rule is expected on.
#[derive(Debug, Clone, Copy)]
enum On {
    Gold,
    Pred,
    Both,
}

fn fired_on(verdict: &Verdict, rule: u16, on: On) -> bool {
    let gold = verdict.gold.rules_fired.contains(&rule);
    let pred = verdict.pred.rules_fired.contains(&rule);
    match on {
        On::Gold => gold,
        On::Pred => pred,
        On::Both => gold && pred,
    }
}

fn fired_anywhere_on(verdict: &Verdict, rule: u16, on: On) -> bool {
    match on {
        On::Both => fired_on(verdict, rule, On::Gold) || fired_on(verdict, rule, On::Pred),
        side => fired_on(verdict, rule, side),
    }
}

fn describe(verdict: &Verdict) -> String {
    format!(
        "{}\n  gold fired {:?}, departures {:?}\n    {:?}\n  pred fired {:?}, departures {:?}\n    {:?}",
        verdict.explain(),
        verdict.gold.rules_fired,
        verdict.gold.departures,
        verdict.gold.normalised,
        verdict.pred.rules_fired,
        verdict.pred.departures,
        verdict.pred.normalised
    )
}

/// `rule` fires on `on` and the (equivalent) pair matches.
fn fires(rule: u16, on: On, db: &str, gold: &str, pred: &str) -> Verdict {
    let verdict = score(db, gold, pred, false);
    assert!(
        fired_on(&verdict, rule, on),
        "rule {rule} did not fire on {on:?}: {}",
        describe(&verdict)
    );
    assert!(
        verdict.etm,
        "rule {rule} fired but no match: {}",
        describe(&verdict)
    );
    verdict
}

/// `rule` does not fire on `on` (either side for `Both`) and the pair does not match.
fn stays_off(rule: u16, on: On, db: &str, gold: &str, pred: &str) -> Verdict {
    let verdict = score(db, gold, pred, false);
    assert!(
        !fired_anywhere_on(&verdict, rule, on),
        "rule {rule} fired on {on:?}: {}",
        describe(&verdict)
    );
    assert!(!verdict.etm, "unexpected match: {}", describe(&verdict));
    verdict
}

/// `stays_off` because of a guard: the harness records the departure `defect` for `rule`, and
/// the reference's behaviour fires the rule. Returns the compat verdict.
fn guarded(rule: u16, defect: &str, on: On, db: &str, gold: &str, pred: &str) -> Verdict {
    let harness = stays_off(rule, on, db, gold, pred);
    let departed = harness
        .gold
        .departures
        .iter()
        .chain(&harness.pred.departures)
        .any(|d| d.rule == rule && d.defect == defect);
    assert!(
        departed,
        "no {defect} departure for rule {rule}: {}",
        describe(&harness)
    );
    let compat = score(db, gold, pred, true);
    assert!(
        fired_anywhere_on(&compat, rule, on),
        "rule {rule} did not fire under compat: {}",
        describe(&compat)
    );
    compat
}

// --- 100-108 --------------------------------------------------------------------------------

#[test]
fn rule_100_fires_on_upper_case_names() {
    fires(
        100,
        On::Pred,
        CONCERT,
        "SELECT name FROM singer",
        "select NAME from SINGER",
    );
}

#[test]
fn rule_100_keeps_the_case_of_literals() {
    stays_off(
        100,
        On::Both,
        CONCERT,
        "SELECT name FROM singer WHERE country = 'France'",
        "SELECT name FROM singer WHERE country = 'france'",
    );
}

#[test]
fn rule_101_fires_on_unqualified_columns() {
    fires(
        101,
        On::Gold,
        CONCERT,
        "SELECT name FROM singer WHERE age > 30",
        "SELECT singer.name FROM singer WHERE singer.age > 30",
    );
}

#[test]
fn rule_101_skips_columns_of_a_derived_table() {
    let verdict = stays_off(
        101,
        On::Both,
        CONCERT,
        "SELECT name FROM (SELECT singer.name FROM singer)",
        "SELECT country FROM (SELECT singer.country FROM singer)",
    );
    let gold = verdict.gold.normalised.unwrap_or_default();
    assert!(
        gold.to_lowercase().starts_with("select name from"),
        "{gold}"
    );
}

#[test]
fn rule_102_fires_on_unsorted_select_items() {
    fires(
        102,
        On::Gold,
        CONCERT,
        "SELECT name, age FROM singer",
        "SELECT age, name FROM singer",
    );
}

#[test]
fn rule_102_keeps_the_order_of_order_by_keys() {
    stays_off(
        102,
        On::Both,
        CONCERT,
        "SELECT name FROM singer ORDER BY age, country",
        "SELECT name FROM singer ORDER BY country, age",
    );
}

#[test]
fn rule_103_fires_on_a_table_alias() {
    fires(
        103,
        On::Gold,
        CONCERT,
        "SELECT T1.name FROM singer AS T1",
        "SELECT singer.name FROM singer",
    );
}

#[test]
fn rule_103_ignores_a_column_alias() {
    stays_off(
        103,
        On::Both,
        CONCERT,
        "SELECT name AS T1 FROM singer",
        "SELECT country AS T1 FROM singer",
    );
}

#[test]
fn rule_104_fires_on_unsorted_inner_join() {
    fires(
        104,
        On::Gold,
        CONCERT,
        "SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id",
        "SELECT singer.name FROM singer JOIN singer_in_concert ON singer.singer_id = singer_in_concert.singer_id",
    );
}

#[test]
fn rule_104_keeps_the_order_of_a_left_join() {
    stays_off(
        104,
        On::Both,
        CONCERT,
        "SELECT stadium.name FROM stadium LEFT JOIN concert ON stadium.stadium_id = concert.stadium_id",
        "SELECT stadium.name FROM concert LEFT JOIN stadium ON stadium.stadium_id = concert.stadium_id",
    );
}

#[test]
fn rule_105_fires_on_swapped_equality_and_conjunction() {
    let w = |cond: &str| format!("SELECT name FROM singer WHERE {cond}");
    fires(105, On::Pred, CONCERT, &w("age = 30"), &w("30 = age"));
    fires(
        105,
        On::Both,
        CONCERT,
        &w("age > 30 AND country = 'France' AND is_male = 'F'"),
        &w("is_male = 'F' AND (age > 30 AND country = 'France')"),
    );
}

#[test]
fn rule_105_keeps_the_operands_of_a_subtraction() {
    stays_off(
        105,
        On::Both,
        CONCERT,
        "SELECT age - 1 FROM singer",
        "SELECT 1 - age FROM singer",
    );
}

#[test]
fn rule_106_fires_on_a_column_alias() {
    fires(
        106,
        On::Gold,
        CONCERT,
        "SELECT name AS n FROM singer",
        "SELECT name FROM singer",
    );
    fires(
        106,
        On::Gold,
        CONCERT,
        "SELECT count(*) AS total FROM singer",
        "SELECT count(*) FROM singer",
    );
}

#[test]
fn rule_106_ignores_a_table_alias() {
    stays_off(
        106,
        On::Both,
        CONCERT,
        "SELECT T1.name FROM singer AS T1",
        "SELECT T1.country FROM singer AS T1",
    );
}

#[test]
fn rule_107_fires_on_redundant_parentheses() {
    fires(
        107,
        On::Gold,
        CONCERT,
        "SELECT name FROM singer WHERE (age > 30)",
        "SELECT name FROM singer WHERE age > 30",
    );
}

#[test]
fn rule_107_ignores_the_parentheses_of_a_subquery() {
    stays_off(
        107,
        On::Both,
        CONCERT,
        "SELECT (SELECT max(age) FROM singer) FROM singer",
        "SELECT max(age) FROM singer",
    );
}

#[test]
fn rule_107_keeps_the_grouping_of_parentheses() {
    // The parentheses go, but the tree keeps the grouping they gave (§8.3 item 9).
    let verdict = verdict(
        "SELECT name FROM singer WHERE age > 30 AND (country = 'A' OR country = 'B')",
        "SELECT name FROM singer WHERE age > 30 AND country = 'A' OR country = 'B'",
    );
    assert!(fired_on(&verdict, 107, On::Gold), "{}", describe(&verdict));
    assert!(!verdict.etm, "{}", describe(&verdict));
}

#[test]
fn rule_108_fires_on_quoted_identifiers() {
    fires(
        108,
        On::Gold,
        CONCERT,
        "SELECT \"name\" FROM \"singer\"",
        "SELECT name FROM singer",
    );
}

#[test]
fn rule_108_ignores_a_quoted_word_that_names_nothing() {
    // `"France"` names no table or column, so preprocessing made it the string 'France'.
    stays_off(
        108,
        On::Both,
        CONCERT,
        "SELECT name FROM singer WHERE country = \"France\"",
        "SELECT name FROM singer WHERE country = 'france'",
    );
}

// --- cleanup (0) ----------------------------------------------------------------------------

#[test]
fn cleanup_fires_on_and_true() {
    // Rule 7 leaves `1.0 = 1.0` in the AND chain.
    fires(
        0,
        On::Gold,
        CONCERT,
        "SELECT name FROM singer WHERE name IS NOT NULL AND age > 30",
        "SELECT name FROM singer WHERE age > 30",
    );
}

#[test]
fn cleanup_makes_or_true_true() {
    let gold = "SELECT name FROM singer WHERE age > 30 OR 1 = 1";
    let pred = "SELECT name FROM singer";
    let harness = fires(0, On::Gold, CONCERT, gold, pred);
    assert!(
        harness
            .gold
            .departures
            .iter()
            .any(|d| d.rule == 0 && d.defect == "D3"),
        "{}",
        describe(&harness)
    );
    // The reference reads `X OR TRUE` as X (D3).
    let compat = score(CONCERT, gold, pred, true);
    assert!(!compat.etm, "{}", describe(&compat));
    let compat = score(
        CONCERT,
        gold,
        "SELECT name FROM singer WHERE age > 30",
        true,
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn cleanup_keeps_a_column_equal_to_itself() {
    // `age = age` is not true where age is NULL.
    let compat = guarded(
        0,
        "D3",
        On::Both,
        CONCERT,
        "SELECT name FROM singer WHERE age = age",
        "SELECT name FROM singer",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

// --- equivalence rules ----------------------------------------------------------------------

#[test]
fn rule_1_fires_on_min_max_subquery_equality() {
    fires(
        1,
        On::Gold,
        CONCERT,
        "SELECT name FROM singer WHERE singer_id = (SELECT max(singer_id) FROM singer)",
        "SELECT name FROM singer ORDER BY singer_id DESC LIMIT 1",
    );
    fires(
        1,
        On::Gold,
        CONCERT,
        "SELECT name FROM singer WHERE singer_id = (SELECT min(singer_id) FROM singer)",
        "SELECT name FROM singer ORDER BY singer_id LIMIT 1",
    );
}

#[test]
fn rule_1_needs_a_unique_column() {
    stays_off(
        1,
        On::Both,
        CONCERT,
        "SELECT name FROM singer WHERE age = (SELECT max(age) FROM singer)",
        "SELECT name FROM singer ORDER BY age DESC LIMIT 1",
    );
}

#[test]
fn rule_1_guard_the_equality_is_the_whole_where() {
    let compat = guarded(
        1,
        "D4",
        On::Gold,
        CONCERT,
        "SELECT name FROM singer WHERE singer_id = (SELECT max(singer_id) FROM singer) AND country = 'USA'",
        "SELECT name FROM singer WHERE country = 'USA' ORDER BY singer_id DESC LIMIT 1",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn rule_1_guard_min_needs_a_not_null_column() {
    // team.code is UNIQUE but nullable: ORDER BY code puts a NULL code first.
    let compat = guarded(
        1,
        "guard",
        On::Gold,
        LEAGUE,
        "SELECT name FROM team WHERE code = (SELECT min(code) FROM team)",
        "SELECT name FROM team ORDER BY code LIMIT 1",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn rule_2_fires_on_distinct_over_a_unique_column() {
    fires(
        2,
        On::Gold,
        CONCERT,
        "SELECT DISTINCT singer_id FROM singer",
        "SELECT singer_id FROM singer",
    );
    fires(
        2,
        On::Gold,
        CONCERT,
        "SELECT count(DISTINCT singer_id) FROM singer",
        "SELECT count(singer_id) FROM singer",
    );
}

#[test]
fn rule_2_needs_a_unique_column() {
    stays_off(
        2,
        On::Both,
        CONCERT,
        "SELECT DISTINCT country FROM singer",
        "SELECT country FROM singer",
    );
    stays_off(
        2,
        On::Both,
        CONCERT,
        "SELECT count(DISTINCT country) FROM singer",
        "SELECT count(country) FROM singer",
    );
}

#[test]
fn rule_2_needs_a_query_without_joins() {
    // A singer in two concerts appears twice without DISTINCT.
    stays_off(
        2,
        On::Both,
        CONCERT,
        "SELECT DISTINCT singer.singer_id FROM singer JOIN singer_in_concert ON singer.singer_id = singer_in_concert.singer_id",
        "SELECT singer.singer_id FROM singer JOIN singer_in_concert ON singer.singer_id = singer_in_concert.singer_id",
    );
}

#[test]
fn rule_2_guard_no_group_by() {
    let compat = guarded(
        2,
        "guard",
        On::Gold,
        CONCERT,
        "SELECT DISTINCT singer_id FROM singer GROUP BY country",
        "SELECT singer_id FROM singer GROUP BY country",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn rule_3_fires_on_intersect_over_a_unique_column() {
    fires(
        3,
        On::Gold,
        CONCERT,
        "SELECT singer_id FROM singer WHERE age > 20 INTERSECT SELECT singer_id FROM singer WHERE country = 'France'",
        "SELECT singer_id FROM singer WHERE age > 20 AND country = 'France'",
    );
    let union = fires(
        3,
        On::Gold,
        CONCERT,
        "SELECT singer_id FROM singer WHERE age > 20 UNION SELECT singer_id FROM singer WHERE country = 'France'",
        "SELECT singer_id FROM singer WHERE age > 20 OR country = 'France'",
    );
    assert!(union
        .gold
        .departures
        .iter()
        .any(|d| d.rule == 3 && d.defect == "D15"));
}

#[test]
fn rule_3_needs_a_unique_column() {
    stays_off(
        3,
        On::Both,
        CONCERT,
        "SELECT name FROM singer WHERE age > 20 INTERSECT SELECT name FROM singer WHERE country = 'France'",
        "SELECT name FROM singer WHERE age > 20 AND country = 'France'",
    );
}

#[test]
fn rule_3_guard_no_union_all() {
    // UNION ALL keeps a singer that satisfies both conditions twice.
    guarded(
        3,
        "guard",
        On::Gold,
        CONCERT,
        "SELECT singer_id FROM singer WHERE age > 20 UNION ALL SELECT singer_id FROM singer WHERE country = 'France'",
        "SELECT singer_id FROM singer WHERE age > 20 OR country = 'France'",
    );
}

#[test]
fn rule_4_fires_on_group_by_with_a_unique_column() {
    fires(
        4,
        On::Gold,
        CONCERT,
        "SELECT name FROM singer GROUP BY singer_id, name",
        "SELECT name FROM singer GROUP BY singer_id",
    );
}

#[test]
fn rule_4_needs_a_unique_column() {
    stays_off(
        4,
        On::Both,
        CONCERT,
        "SELECT country FROM singer GROUP BY country, age",
        "SELECT country FROM singer GROUP BY country",
    );
}

#[test]
fn rule_4_guard_no_joins() {
    let compat = guarded(
        4,
        "D5",
        On::Gold,
        CONCERT,
        "SELECT T1.stadium_id FROM stadium AS T1 JOIN concert AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T1.stadium_id, T2.year",
        "SELECT T1.stadium_id FROM stadium AS T1 JOIN concert AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T1.stadium_id",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn rule_5_fires_on_except_with_not_null_columns() {
    fires(
        5,
        On::Gold,
        LEAGUE,
        "SELECT team_id FROM team EXCEPT SELECT team_id FROM player",
        "SELECT team_id FROM team WHERE team_id NOT IN (SELECT team_id FROM player)",
    );
}

#[test]
fn rule_5_needs_a_unique_not_null_column() {
    // EXCEPT removes duplicate cities; NOT IN keeps them and drops NULL cities.
    stays_off(
        5,
        On::Both,
        LEAGUE,
        "SELECT city FROM team EXCEPT SELECT name FROM coach",
        "SELECT city FROM team WHERE city NOT IN (SELECT name FROM coach)",
    );
}

#[test]
fn rule_5_guard_not_null_subquery_column() {
    // One NULL coach_id in player makes NOT IN return nothing.
    let compat = guarded(
        5,
        "guard",
        On::Gold,
        LEAGUE,
        "SELECT coach_id FROM coach EXCEPT SELECT coach_id FROM player",
        "SELECT coach_id FROM coach WHERE coach_id NOT IN (SELECT coach_id FROM player)",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn rule_6_fires_on_count_of_a_not_null_column() {
    fires(
        6,
        On::Pred,
        CONCERT,
        "SELECT count(*) FROM singer",
        "SELECT count(singer_id) FROM singer",
    );
    fires(
        6,
        On::Pred,
        CONCERT,
        "SELECT count(*) FROM singer",
        "SELECT count(name) FROM singer",
    );
}

#[test]
fn rule_6_needs_a_not_null_column() {
    stays_off(
        6,
        On::Both,
        CONCERT,
        "SELECT count(*) FROM singer",
        "SELECT count(country) FROM singer",
    );
}

#[test]
fn rule_6_guard_no_outer_join() {
    // A stadium without concerts counts 1 in count(*) and 0 in count(concert_id).
    let compat = guarded(
        6,
        "guard",
        On::Gold,
        CONCERT,
        "SELECT count(concert.concert_id) FROM stadium LEFT JOIN concert ON stadium.stadium_id = concert.stadium_id",
        "SELECT count(*) FROM stadium LEFT JOIN concert ON stadium.stadium_id = concert.stadium_id",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn rule_7_fires_on_is_not_null_of_a_not_null_column() {
    fires(
        7,
        On::Pred,
        CONCERT,
        "SELECT name FROM singer",
        "SELECT name FROM singer WHERE name IS NOT NULL",
    );
}

#[test]
fn rule_7_needs_a_not_null_column() {
    stays_off(
        7,
        On::Both,
        CONCERT,
        "SELECT name FROM singer",
        "SELECT name FROM singer WHERE country IS NOT NULL",
    );
}

#[test]
fn rule_7_guard_only_under_and() {
    let compat = guarded(
        7,
        "D3",
        On::Gold,
        CONCERT,
        "SELECT name FROM singer WHERE age > 30 OR name IS NOT NULL",
        "SELECT name FROM singer WHERE age > 30",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn rule_8_fires_on_sum_over_count_of_a_not_null_column() {
    fires(
        8,
        On::Gold,
        LEAGUE,
        "SELECT CAST(SUM(score) AS FLOAT) / COUNT(*) FROM player",
        "SELECT AVG(score) FROM player",
    );
}

#[test]
fn rule_8_needs_a_not_null_column() {
    // A NULL rating counts in COUNT(*) but not in AVG.
    stays_off(
        8,
        On::Both,
        LEAGUE,
        "SELECT CAST(SUM(rating) AS FLOAT) / COUNT(*) FROM player",
        "SELECT AVG(rating) FROM player",
    );
}

#[test]
fn rule_9_fires_on_count_of_case() {
    fires(
        9,
        On::Gold,
        CONCERT,
        "SELECT count(CASE WHEN age > 30 THEN 1 ELSE NULL END) FROM singer",
        "SELECT sum(CASE WHEN age > 30 THEN 1 ELSE 0 END) FROM singer",
    );
    fires(
        9,
        On::Gold,
        CONCERT,
        "SELECT count(CASE WHEN age > 30 THEN name END) FROM singer",
        "SELECT sum(CASE WHEN age > 30 THEN 1 ELSE 0 END) FROM singer",
    );
}

#[test]
fn rule_9_needs_a_not_null_then_column() {
    stays_off(
        9,
        On::Both,
        CONCERT,
        "SELECT count(CASE WHEN age > 30 THEN country END) FROM singer",
        "SELECT sum(CASE WHEN age > 30 THEN 1 ELSE 0 END) FROM singer",
    );
}

#[test]
fn rule_9_needs_a_null_else() {
    // COUNT counts the 0 of the ELSE.
    stays_off(
        9,
        On::Both,
        CONCERT,
        "SELECT count(CASE WHEN age > 30 THEN 1 ELSE 0 END) FROM singer",
        "SELECT sum(CASE WHEN age > 30 THEN 1 ELSE 0 END) FROM singer",
    );
}

#[test]
fn rule_10_fires_on_order_by_limit_1() {
    fires(
        10,
        On::Pred,
        CONCERT,
        "SELECT max(age) FROM singer",
        "SELECT age FROM singer ORDER BY age DESC LIMIT 1",
    );
    fires(
        10,
        On::Pred,
        CONCERT,
        "SELECT min(singer_id) FROM singer",
        "SELECT singer_id FROM singer ORDER BY singer_id LIMIT 1",
    );
}

#[test]
fn rule_10_needs_limit_1() {
    stays_off(
        10,
        On::Both,
        CONCERT,
        "SELECT max(age) FROM singer",
        "SELECT age FROM singer ORDER BY age DESC LIMIT 2",
    );
}

#[test]
fn rule_10_guard_non_empty_table() {
    // MAX over no rows is one NULL row; ORDER BY ... LIMIT 1 is no row.
    let compat = guarded(
        10,
        "D6",
        On::Pred,
        LEAGUE,
        "SELECT max(level) FROM empty_log",
        "SELECT level FROM empty_log ORDER BY level DESC LIMIT 1",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn rule_10_guard_no_group_by() {
    let compat = guarded(
        10,
        "D6",
        On::Pred,
        CONCERT,
        "SELECT country, max(age) FROM singer GROUP BY country",
        "SELECT country, age FROM singer GROUP BY country ORDER BY age DESC LIMIT 1",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn rule_10_guard_min_needs_a_not_null_column() {
    let compat = guarded(
        10,
        "guard",
        On::Pred,
        CONCERT,
        "SELECT min(age) FROM singer",
        "SELECT age FROM singer ORDER BY age LIMIT 1",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn rule_11_fires_on_select_star() {
    fires(
        11,
        On::Gold,
        CONCERT,
        "SELECT * FROM stadium",
        "SELECT stadium_id, name, location, capacity FROM stadium",
    );
    fires(
        11,
        On::Gold,
        CONCERT,
        "SELECT singer.* FROM singer",
        "SELECT singer_id, name, country, age, is_male FROM singer",
    );
}

#[test]
fn rule_11_keeps_count_star() {
    stays_off(
        11,
        On::Both,
        CONCERT,
        "SELECT count(*) FROM concert",
        "SELECT count(concert_name) FROM concert",
    );
}

#[test]
fn rule_12_fires_on_quoted_and_float_numbers() {
    let w = |cond: &str| format!("SELECT name FROM singer WHERE {cond}");
    fires(12, On::Pred, CONCERT, &w("age = 30"), &w("age = '30'"));
    fires(12, On::Gold, CONCERT, &w("age = 30"), &w("age = 30.0"));
}

#[test]
fn rule_12_skips_a_leading_zero() {
    // '0150' is text; as a number it would equal '0150.0'.
    stays_off(
        12,
        On::Both,
        CONCERT,
        "SELECT name FROM singer WHERE country = '0150'",
        "SELECT name FROM singer WHERE country = '0150.0'",
    );
}

#[test]
fn rule_12_guard_only_decimal_literals() {
    let compat = guarded(
        12,
        "D11",
        On::Both,
        CONCERT,
        "SELECT name FROM singer WHERE country = 'Nan'",
        "SELECT name FROM singer WHERE country = 'nan'",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn rule_13_fires_on_in_over_the_referenced_key() {
    fires(
        13,
        On::Gold,
        LEAGUE,
        "SELECT name FROM player WHERE team_id IN (SELECT team_id FROM team WHERE city = 'Glasgow')",
        "SELECT player.name FROM player JOIN team ON team.team_id = player.team_id WHERE team.city = 'Glasgow'",
    );
    fires(
        13,
        On::Gold,
        LEAGUE,
        "SELECT name FROM player WHERE team_id = (SELECT team_id FROM team WHERE code = 'GLA')",
        "SELECT player.name FROM player JOIN team ON team.team_id = player.team_id WHERE team.code = 'GLA'",
    );
}

#[test]
fn rule_13_needs_a_foreign_key_to_the_primary_key() {
    // singer.singer_id references nothing; a singer in two concerts would appear twice.
    stays_off(
        13,
        On::Both,
        CONCERT,
        "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert)",
        "SELECT singer.name FROM singer JOIN singer_in_concert ON singer.singer_id = singer_in_concert.singer_id",
    );
}

#[test]
fn rule_13_equality_needs_a_unique_subquery_condition() {
    // `=` compares with the first team in Glasgow only.
    stays_off(
        13,
        On::Both,
        LEAGUE,
        "SELECT name FROM player WHERE team_id = (SELECT team_id FROM team WHERE city = 'Glasgow')",
        "SELECT player.name FROM player JOIN team ON team.team_id = player.team_id WHERE team.city = 'Glasgow'",
    );
}

#[test]
fn rule_13_guard_no_limit_in_the_subquery() {
    let compat = guarded(
        13,
        "guard",
        On::Gold,
        LEAGUE,
        "SELECT name FROM player WHERE team_id IN (SELECT team_id FROM team ORDER BY founded LIMIT 1)",
        "SELECT player.name FROM player JOIN team ON team.team_id = player.team_id",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn rule_14_fires_on_a_join_to_an_unused_key_table() {
    fires(
        14,
        On::Gold,
        LEAGUE,
        "SELECT T2.name FROM team AS T1 JOIN player AS T2 ON T1.team_id = T2.team_id",
        "SELECT name FROM player",
    );
    fires(
        14,
        On::Gold,
        LEAGUE,
        "SELECT team.team_id, player.name FROM team JOIN player ON team.team_id = player.team_id",
        "SELECT team_id, name FROM player",
    );
}

#[test]
fn rule_14_needs_no_other_column_of_the_key_table() {
    stays_off(
        14,
        On::Both,
        LEAGUE,
        "SELECT team.city, player.name FROM team JOIN player ON team.team_id = player.team_id",
        "SELECT name FROM player",
    );
}

#[test]
fn rule_14_guard_not_null_foreign_key() {
    // A player without a coach disappears in the join.
    let compat = guarded(
        14,
        "D7",
        On::Gold,
        LEAGUE,
        "SELECT player.name FROM coach JOIN player ON coach.coach_id = player.coach_id",
        "SELECT name FROM player",
    );
    assert!(compat.etm, "{}", describe(&compat));
    guarded(
        14,
        "D7",
        On::Gold,
        CONCERT,
        "SELECT T2.concert_name FROM stadium AS T1 JOIN concert AS T2 ON T1.stadium_id = T2.stadium_id",
        "SELECT concert_name FROM concert",
    );
}

#[test]
fn rule_15_fires_on_adjacent_substrings() {
    fires(
        15,
        On::Gold,
        CONCERT,
        "SELECT name FROM singer WHERE substr(name, 1, 1) = 'A' AND substr(name, 2, 2) > 'nn'",
        "SELECT name FROM singer WHERE name > 'Ann'",
    );
}

#[test]
fn rule_15_needs_adjacent_substrings() {
    stays_off(
        15,
        On::Both,
        CONCERT,
        "SELECT name FROM singer WHERE substr(name, 1, 1) = 'A' AND substr(name, 3, 2) > 'nn'",
        "SELECT name FROM singer WHERE name > 'Ann'",
    );
}

#[test]
fn rule_15_needs_a_conjunction() {
    stays_off(
        15,
        On::Both,
        CONCERT,
        "SELECT name FROM singer WHERE substr(name, 1, 1) = 'A' OR substr(name, 2, 2) > 'nn'",
        "SELECT name FROM singer WHERE name > 'Ann'",
    );
}

#[test]
fn rule_16_fires_on_like_prefix_without_letters() {
    fires(
        16,
        On::Gold,
        LEAGUE,
        "SELECT name FROM player WHERE joined LIKE '2014-%'",
        "SELECT name FROM player WHERE substr(joined, 1, 5) = '2014-'",
    );
}

#[test]
fn rule_16_needs_a_prefix_pattern() {
    stays_off(
        16,
        On::Both,
        LEAGUE,
        "SELECT name FROM player WHERE joined LIKE '%-01'",
        "SELECT name FROM player WHERE substr(joined, 1, 3) = '-01'",
    );
}

#[test]
fn rule_16_guard_no_cased_letters() {
    let compat = guarded(
        16,
        "D8",
        On::Gold,
        CONCERT,
        "SELECT name FROM singer WHERE name LIKE 'an%'",
        "SELECT name FROM singer WHERE substr(name, 1, 2) = 'an'",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn rule_16_guard_no_underscore() {
    // `_` matches any character, `substr` compares it literally.
    let compat = guarded(
        16,
        "D8",
        On::Gold,
        LEAGUE,
        "SELECT name FROM player WHERE joined LIKE '20_4-%'",
        "SELECT name FROM player WHERE substr(joined, 1, 5) = '20_4-'",
    );
    assert!(compat.etm, "{}", describe(&compat));
}

#[test]
fn rule_17_fires_on_julianday_of_a_date_column() {
    // team.founded is declared DATE; player.joined holds ISO-8601 text.
    fires(
        17,
        On::Pred,
        LEAGUE,
        "SELECT name FROM team ORDER BY founded",
        "SELECT name FROM team ORDER BY julianday(founded)",
    );
    fires(
        17,
        On::Pred,
        LEAGUE,
        "SELECT name FROM player ORDER BY joined DESC",
        "SELECT name FROM player ORDER BY julianday(joined) DESC",
    );
}

#[test]
fn rule_17_guard_date_column() {
    let compat = guarded(
        17,
        "guard",
        On::Pred,
        CONCERT,
        "SELECT name FROM singer ORDER BY age",
        "SELECT name FROM singer ORDER BY julianday(age)",
    );
    assert!(compat.etm, "{}", describe(&compat));
    guarded(
        17,
        "guard",
        On::Pred,
        LEAGUE,
        "SELECT name FROM team ORDER BY city",
        "SELECT name FROM team ORDER BY julianday(city)",
    );
}

#[test]
fn rule_18_fires_on_in_lists() {
    let w = |cond: &str| format!("SELECT name FROM singer WHERE {cond}");
    fires(
        18,
        On::Gold,
        CONCERT,
        &w("country IN ('France', 'USA')"),
        &w("country = 'France' OR country = 'USA'"),
    );
    fires(
        18,
        On::Gold,
        CONCERT,
        &w("country NOT IN ('France', 'USA')"),
        &w("country != 'France' AND country != 'USA'"),
    );
}

#[test]
fn rule_18_skips_in_over_a_subquery() {
    // `=` compares with the first row of the subquery only.
    stays_off(
        18,
        On::Both,
        CONCERT,
        "SELECT name FROM stadium WHERE stadium_id IN (SELECT stadium_id FROM concert)",
        "SELECT name FROM stadium WHERE stadium_id = (SELECT stadium_id FROM concert)",
    );
}

#[test]
fn rule_19_fires_on_a_column_of_an_inner_join_equality() {
    fires(
        19,
        On::Gold,
        CONCERT,
        "SELECT T1.stadium_id FROM stadium AS T1 JOIN concert AS T2 ON T1.stadium_id = T2.stadium_id",
        "SELECT T2.stadium_id FROM stadium AS T1 JOIN concert AS T2 ON T1.stadium_id = T2.stadium_id",
    );
}

#[test]
fn rule_19_skips_an_outer_join() {
    // concert.stadium_id is NULL for a stadium without concerts.
    stays_off(
        19,
        On::Both,
        CONCERT,
        "SELECT stadium.stadium_id FROM stadium LEFT JOIN concert ON stadium.stadium_id = concert.stadium_id",
        "SELECT concert.stadium_id FROM stadium LEFT JOIN concert ON stadium.stadium_id = concert.stadium_id",
    );
}

#[test]
fn rule_19_derives_no_facts_d2() {
    // The reference copies singer.singer_id's uniqueness to singer_in_concert.singer_id
    // through the gold's join, so rule 2 drops the prediction's DISTINCT. (singer.name keeps
    // rule 14 from removing the join first.)
    let gold = "SELECT singer.name, singer_in_concert.singer_id FROM singer JOIN singer_in_concert ON singer.singer_id = singer_in_concert.singer_id";
    let pred = "SELECT DISTINCT singer_id FROM singer_in_concert";
    let harness = verdict(gold, pred);
    assert!(!fired_on(&harness, 2, On::Pred), "{}", describe(&harness));
    assert!(
        harness
            .pred
            .departures
            .iter()
            .any(|d| d.rule == 2 && d.defect == "D2"),
        "{}",
        describe(&harness)
    );
    let compat = score(CONCERT, gold, pred, true);
    assert!(fired_on(&compat, 2, On::Pred), "{}", describe(&compat));
}

#[test]
fn rule_20_fires_on_in_over_the_same_table() {
    fires(
        20,
        On::Gold,
        CONCERT,
        "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer WHERE age > 30)",
        "SELECT name FROM singer WHERE age > 30",
    );
}

#[test]
fn rule_20_guard_not_null_unique_column() {
    // team.code is UNIQUE but nullable: a team without a code is never IN.
    let compat = guarded(
        20,
        "guard",
        On::Gold,
        LEAGUE,
        "SELECT name FROM team WHERE code IN (SELECT code FROM team WHERE city = 'Glasgow')",
        "SELECT name FROM team WHERE city = 'Glasgow'",
    );
    assert!(compat.etm, "{}", describe(&compat));
    // Another singer of the same age is IN too.
    guarded(
        20,
        "guard",
        On::Gold,
        CONCERT,
        "SELECT name FROM singer WHERE age IN (SELECT age FROM singer WHERE country = 'France')",
        "SELECT name FROM singer WHERE country = 'France'",
    );
    // Under NOT, a singer whose age is NULL is NOT IN the subquery but not NOT (age > 30).
    guarded(
        20,
        "guard",
        On::Gold,
        CONCERT,
        "SELECT name FROM singer WHERE NOT singer_id IN (SELECT singer_id FROM singer WHERE age > 30)",
        "SELECT name FROM singer WHERE NOT age > 30",
    );
}

#[test]
fn rule_21_fires_on_a_set_operation_of_a_query_with_itself() {
    fires(
        21,
        On::Gold,
        CONCERT,
        "SELECT singer_id FROM singer UNION SELECT singer_id FROM singer",
        "SELECT singer_id FROM singer",
    );
    fires(
        21,
        On::Gold,
        CONCERT,
        "SELECT DISTINCT country FROM singer INTERSECT SELECT DISTINCT country FROM singer",
        "SELECT DISTINCT country FROM singer",
    );
}

#[test]
fn rule_21_guard_no_duplicate_rows() {
    let compat = guarded(
        21,
        "D10",
        On::Pred,
        CONCERT,
        "SELECT name FROM singer",
        "SELECT name FROM singer UNION SELECT name FROM singer",
    );
    assert!(compat.etm, "{}", describe(&compat));
    // UNION ALL doubles every row.
    guarded(
        21,
        "D10",
        On::Pred,
        CONCERT,
        "SELECT singer_id FROM singer",
        "SELECT singer_id FROM singer UNION ALL SELECT singer_id FROM singer",
    );
}

#[test]
fn rule_22_fires_on_between() {
    let w = |cond: &str| format!("SELECT name FROM singer WHERE {cond}");
    fires(
        22,
        On::Gold,
        CONCERT,
        &w("age BETWEEN 20 AND 40"),
        &w("age >= 20 AND age <= 40"),
    );
    fires(
        22,
        On::Gold,
        CONCERT,
        &w("age NOT BETWEEN 20 AND 40"),
        &w("NOT (age >= 20 AND age <= 40)"),
    );
}

#[test]
fn rule_22_needs_between() {
    // The exclusive upper bound is a near miss.
    stays_off(
        22,
        On::Gold,
        CONCERT,
        "SELECT name FROM singer WHERE age >= 20 AND age < 40",
        "SELECT name FROM singer WHERE age BETWEEN 20 AND 40",
    );
}

#[test]
fn rule_23_fires_on_a_negated_comparison() {
    let w = |cond: &str| format!("SELECT name FROM singer WHERE {cond}");
    fires(23, On::Gold, CONCERT, &w("NOT age > 30"), &w("age <= 30"));
    fires(
        23,
        On::Gold,
        CONCERT,
        &w("NOT (country = 'France')"),
        &w("country != 'France'"),
    );
}

#[test]
fn rule_23_skips_not_like_and_not_and() {
    let w = |cond: &str| format!("SELECT name FROM singer WHERE {cond}");
    stays_off(
        23,
        On::Both,
        CONCERT,
        &w("name NOT LIKE '%a%'"),
        &w("name LIKE '%a%'"),
    );
    // No De Morgan: NOT (a AND b) is not (NOT a) AND (NOT b).
    stays_off(
        23,
        On::Gold,
        CONCERT,
        &w("NOT (age > 30 AND country = 'France')"),
        &w("age <= 30 AND country != 'France'"),
    );
}

#[test]
fn rule_24_fires_on_iif() {
    let harness = fires(
        24,
        On::Gold,
        CONCERT,
        "SELECT iif(age > 30, 'old', 'young') FROM singer",
        "SELECT CASE WHEN age > 30 THEN 'old' ELSE 'young' END FROM singer",
    );
    // A SELECT item is a list element the reference never rewrites (D12).
    assert!(harness
        .gold
        .departures
        .iter()
        .any(|d| d.rule == 24 && d.defect == "D12"));
    let nested = fires(
        24,
        On::Gold,
        CONCERT,
        "SELECT sum(iif(age > 30, 1, 0)) FROM singer",
        "SELECT sum(CASE WHEN age > 30 THEN 1 ELSE 0 END) FROM singer",
    );
    assert!(!nested.departed(), "{}", describe(&nested));
}

#[test]
fn rule_24_needs_iif() {
    // A CASE without ELSE is NULL where the IIF gives 'young'.
    stays_off(
        24,
        On::Gold,
        CONCERT,
        "SELECT CASE WHEN age > 30 THEN 'old' END FROM singer",
        "SELECT iif(age > 30, 'old', 'young') FROM singer",
    );
}

#[test]
fn rule_25_fires_on_a_left_join_anti_join() {
    fires(
        25,
        On::Gold,
        LEAGUE,
        "SELECT team.name FROM team LEFT JOIN player ON team.team_id = player.team_id WHERE player.player_id IS NULL",
        "SELECT name FROM team WHERE team_id NOT IN (SELECT team_id FROM player)",
    );
    fires(
        25,
        On::Gold,
        LEAGUE,
        "SELECT T1.name FROM team AS T1 LEFT JOIN player AS T2 ON T1.team_id = T2.team_id WHERE T2.team_id IS NULL",
        "SELECT name FROM team WHERE team_id NOT IN (SELECT team_id FROM player)",
    );
}

#[test]
fn rule_25_guard_not_null_columns() {
    // A NULL player.coach_id makes the NOT IN return nothing.
    let compat = guarded(
        25,
        "D9",
        On::Gold,
        LEAGUE,
        "SELECT coach.name FROM coach LEFT JOIN player ON coach.coach_id = player.coach_id WHERE player.player_id IS NULL",
        "SELECT name FROM coach WHERE coach_id NOT IN (SELECT coach_id FROM player)",
    );
    assert!(compat.etm, "{}", describe(&compat));
    // The tested column concert.year is nullable: a concert without a year looks unmatched.
    guarded(
        25,
        "D9",
        On::Gold,
        CONCERT,
        "SELECT T1.name FROM stadium AS T1 LEFT JOIN concert AS T2 ON T1.stadium_id = T2.stadium_id WHERE T2.year IS NULL",
        "SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert)",
    );
}

#[test]
fn rule_26_fires_on_a_cte() {
    fires(
        26,
        On::Gold,
        CONCERT,
        "WITH t AS (SELECT name FROM singer) SELECT name FROM t",
        "SELECT name FROM (SELECT name FROM singer)",
    );
    // SQLite resolves the CTE's name case-insensitively.
    fires(
        26,
        On::Gold,
        CONCERT,
        "WITH Recent AS (SELECT name FROM singer) SELECT RECENT.name FROM recent",
        "SELECT name FROM (SELECT name FROM singer)",
    );
    fires(
        26,
        On::Gold,
        CONCERT,
        "WITH t AS (SELECT name, age FROM singer) SELECT t.name FROM t WHERE t.age > 30",
        "SELECT name FROM (SELECT name, age FROM singer) WHERE age > 30",
    );
}

#[test]
fn rule_26_guard_not_recursive() {
    // Inlining would leave the body's reference to `t` pointing at a table t.
    guarded(
        26,
        "guard",
        On::Gold,
        CONCERT,
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) SELECT n FROM t",
        "SELECT n FROM (SELECT 1 AS n UNION ALL SELECT 2 UNION ALL SELECT 3)",
    );
}

#[test]
fn rule_26_inlines_a_cte_named_like_its_column() {
    let gold = "WITH name AS (SELECT name FROM singer) SELECT name FROM name";
    let pred = "SELECT name FROM (SELECT name FROM singer)";
    fires(26, On::Gold, CONCERT, gold, pred);
    // The reference's shape (D13) puts the body in place of every `name`, once: it does not
    // go on into the body it put in (that recursed without end).
    let compat = score(CONCERT, gold, pred, true);
    assert!(fired_on(&compat, 26, On::Gold), "{}", describe(&compat));
    assert!(!compat.etm, "{}", describe(&compat));
}
