//! Each kind of finding on crafted golds, and none on clean ones.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use sqlgate_eval::exec::{Engine, Limits, QueryRunner};
use sqlgate_eval::loaders::{Benchmark, Case, GoldFormat, SourceRef};
use sqlgate_eval::metrics::ex::{Mode, ModeOptions};

use super::runs::Scorer;
use super::{audit, Finding, Kind, Settings};
use crate::mutate::DEFAULT_SEED;

/// Scores: bob and cy tie at 5; nobody reaches 10.
const SHOP: &str = "CREATE TABLE scores (name TEXT, score INTEGER);
    INSERT INTO scores VALUES ('ann', 3), ('bob', 5), ('cy', 5), ('dee', 1);";

fn database(path: &Path, script: &str) {
    let conn = rusqlite::Connection::open(path).expect("create the database");
    conn.execute_batch(script).expect("fill the database");
}

pub(super) fn case(id: &str, question: &str, gold: &[&str]) -> Case {
    Case {
        id: id.to_string(),
        db: "shop".to_string(),
        db_file: None,
        cs: None,
        question: question.to_string(),
        evidence: None,
        gold: gold.iter().map(|g| g.to_string()).collect(),
        feasible: true,
        tags: BTreeMap::new(),
        source: SourceRef {
            file: "gold.jsonl".into(),
            record: 0,
            line: None,
        },
        state: None,
    }
}

/// The findings on `cases`, run on `shop.sqlite` alone (flat layout) under testsuite.
fn audit_flat(cases: Vec<Case>) -> Vec<Finding> {
    let dir = tempfile::tempdir().expect("temp dir");
    database(&dir.path().join("shop.sqlite"), SHOP);
    run(dir.path(), cases, Limits::default())
}

fn run(db_dir: &Path, cases: Vec<Case>, limits: Limits) -> Vec<Finding> {
    run_in(Mode::Testsuite, db_dir, cases, limits)
}

/// The findings on `cases` under `mode`, run on a `shop.sqlite` made by `script`.
fn audit_script(mode: Mode, script: &str, cases: Vec<Case>) -> Vec<Finding> {
    let dir = tempfile::tempdir().expect("temp dir");
    database(&dir.path().join("shop.sqlite"), script);
    run_in(mode, dir.path(), cases, Limits::default())
}

fn run_in(mode: Mode, db_dir: &Path, cases: Vec<Case>, limits: Limits) -> Vec<Finding> {
    let bench = Benchmark {
        name: "shop".to_string(),
        cases,
        db_dir: db_dir.to_path_buf(),
        format: GoldFormat::Native,
        tables: None,
        join_keys: BTreeMap::new(),
        backend: sqlgate_engine_sqlite::files(),
    };
    let settings = Settings {
        mode,
        mode_options: ModeOptions::default(),
        seed: DEFAULT_SEED,
    };
    audit(
        &bench,
        &settings,
        &Engine::new(limits, sqlgate_engine_sqlite::files()),
        None,
    )
    .expect("the audit runs")
}

fn kinds(findings: &[Finding], id: &str) -> Vec<Kind> {
    findings
        .iter()
        .filter(|f| f.id == id)
        .map(|f| f.kind)
        .collect()
}

/// None of the cases `ids` has a finding of `kind`.
fn assert_none(findings: &[Finding], ids: &[&str], kind: Kind) {
    for id in ids {
        assert!(!kinds(findings, id).contains(&kind), "{id}: {findings:#?}");
    }
}

fn detail<'a>(findings: &'a [Finding], id: &str, kind: Kind) -> &'a str {
    findings
        .iter()
        .find(|f| f.id == id && f.kind == kind)
        .map(|f| f.detail.as_str())
        .unwrap_or_else(|| panic!("no {kind:?} finding for {id}: {findings:#?}"))
}

#[test]
fn a_limit_through_ties_and_an_ordered_comparison_of_ties_are_found() {
    let findings = audit_flat(vec![
        case(
            "cut",
            "",
            &["SELECT name FROM scores ORDER BY score DESC LIMIT 1"],
        ),
        case(
            "partial",
            "",
            &["SELECT name FROM scores ORDER BY score DESC"],
        ),
        case(
            "total",
            "",
            &["SELECT name FROM scores ORDER BY score DESC, name LIMIT 1"],
        ),
        case(
            "cut_above",
            "",
            &["SELECT name FROM scores ORDER BY score LIMIT 2"],
        ),
    ]);
    let cut = detail(&findings, "cut", Kind::OrderTies);
    assert!(cut.contains("LIMIT 1 cuts between rows 1 and 2"), "{cut}");
    assert!(cut.contains("(bob) / (cy)"), "{cut}");
    let partial = detail(&findings, "partial", Kind::OrderTies);
    assert!(partial.contains("not a total order"), "{partial}");
    // A total order, and a LIMIT that falls between different scores (1, 3 | 5, 5).
    assert!(!kinds(&findings, "total").contains(&Kind::OrderTies));
    assert!(!kinds(&findings, "cut_above").contains(&Kind::OrderTies));
}

#[test]
fn rows_compared_in_order_that_only_a_subquery_orders_are_order_unspecified() {
    let findings =
        audit_flat(vec![
        case(
            "inner",
            "",
            &["SELECT name FROM (SELECT name, score FROM scores ORDER BY score DESC LIMIT 3)"],
        ),
        // The outer ORDER BY orders the rows.
        case(
            "outer",
            "",
            &["SELECT name FROM (SELECT name, score FROM scores ORDER BY score DESC LIMIT 3) \
               ORDER BY name"],
        ),
        // One row has no order.
        case(
            "one_row",
            "",
            &["SELECT count(*) FROM (SELECT * FROM scores ORDER BY score LIMIT 3)"],
        ),
        // Without "order by" anywhere testsuite compares bags; the DISTINCT it removes before
        // running the gold changes the rows, not their order.
        case("bag", "", &["SELECT name FROM scores WHERE score > 1"]),
        case("distinct", "", &["SELECT DISTINCT score FROM scores"]),
    ]);
    let inner = detail(&findings, "inner", Kind::OrderUnspecified);
    assert!(
        inner.contains("its only ORDER BY is a subquery's (`ORDER BY score DESC LIMIT 3`)"),
        "{inner}"
    );
    assert!(inner.contains("its 3 rows"), "{inner}");
    assert_none(
        &findings,
        &["outer", "one_row", "bag", "distinct"],
        Kind::OrderUnspecified,
    );
}

/// Scores and teams: every team name is written in title case.
const TEAMS: &str = "CREATE TABLE scores (name TEXT, score INTEGER);
    INSERT INTO scores VALUES ('ann', 3), ('bob', 5), ('cy', 5), ('dee', 1);
    CREATE TABLE teams (name TEXT, team TEXT);
    INSERT INTO teams VALUES ('ann', 'Red Fox'), ('bob', 'Blue Jay'), ('cy', 'Red Fox');";

#[test]
fn tables_joined_without_a_condition_are_cartesian() {
    let findings = audit_script(
        Mode::Testsuite,
        TEAMS,
        vec![
            case(
                "comma",
                "",
                &["SELECT scores.name, team FROM scores, teams WHERE score > 2"],
            ),
            case(
                "bare_join",
                "",
                &["SELECT s.name FROM scores AS s JOIN teams AS t WHERE s.score > 2"],
            ),
            case(
                "linked",
                "",
                &["SELECT scores.name, team FROM scores, teams WHERE scores.name = teams.name"],
            ),
            case(
                "on",
                "",
                &["SELECT s.name FROM scores AS s JOIN teams AS t ON s.name = t.name"],
            ),
        ],
    );
    let comma = detail(&findings, "comma", Kind::Cartesian);
    assert!(
        comma.starts_with("`scores` and `teams` are joined"),
        "{comma}"
    );
    let bare = detail(&findings, "bare_join", Kind::Cartesian);
    assert!(bare.starts_with("`scores AS s` and `teams AS t`"), "{bare}");
    assert_none(&findings, &["linked", "on"], Kind::Cartesian);
}

#[test]
fn a_string_the_data_holds_only_in_another_case_is_literal_absent() {
    let findings = audit_script(
        Mode::Testsuite,
        TEAMS,
        vec![
            // Spider's double-quoted string, in another case than the data's.
            case(
                "lower",
                "",
                &["SELECT name FROM teams WHERE team = \"red fox\""],
            ),
            case(
                "in_list",
                "",
                &["SELECT t.name FROM teams AS t WHERE t.team IN ('Red Fox', 'BLUE JAY')"],
            ),
            case(
                "exact",
                "",
                &["SELECT name FROM teams WHERE team = 'Red Fox'"],
            ),
            // Not there in any case: another problem (the gold is empty).
            case(
                "nowhere",
                "",
                &["SELECT name FROM teams WHERE team = 'Green'"],
            ),
        ],
    );
    assert_eq!(
        detail(&findings, "lower", Kind::LiteralAbsent),
        "on shop.sqlite: no value of teams.team equals 'red fox', but 'Red Fox' does ignoring case"
    );
    let in_list = detail(&findings, "in_list", Kind::LiteralAbsent);
    assert!(
        in_list.ends_with(
            "no value of teams.team equals 'BLUE JAY', but 'Blue Jay' does ignoring case"
        ),
        "{in_list}"
    );
    assert_none(&findings, &["exact", "nowhere"], Kind::LiteralAbsent);
}

#[test]
fn chance_the_clock_and_the_scan_order_are_nondeterministic() {
    let findings = audit_flat(vec![
        case("chance", "", &["SELECT name FROM scores ORDER BY random() LIMIT 1"]),
        case("clock", "", &["SELECT name FROM scores WHERE date('now') > '2000-01-01'"]),
        // The subquery's ORDER BY makes testsuite compare in order; the outer scan has none.
        case(
            "scan",
            "",
            &["SELECT name FROM scores WHERE score > (SELECT score FROM scores ORDER BY score LIMIT 1)"],
        ),
        // A quoted name hides the call from the parsed query; a second execution shows it.
        case("hidden", "", &["SELECT hex(\"randomblob\"(16))"]),
        // Without "order by" anywhere testsuite compares bags: the scan order cannot matter.
        case("bag", "", &["SELECT name FROM scores WHERE score > 1"]),
        case("sorted", "", &["SELECT name FROM scores ORDER BY name"]),
    ]);
    assert!(detail(&findings, "chance", Kind::Nondeterministic).contains("random()"));
    assert!(detail(&findings, "clock", Kind::Nondeterministic).contains("date('now')"));
    let hidden = detail(&findings, "hidden", Kind::Nondeterministic);
    assert!(hidden.contains("a second execution"), "{hidden}");
    let scan = detail(&findings, "scan", Kind::Nondeterministic);
    assert!(scan.contains("reverse_unordered_selects"), "{scan}");
    assert_none(&findings, &["bag", "sorted"], Kind::Nondeterministic);
}

#[test]
fn alternatives_that_the_mode_scores_as_different_disagree() {
    let findings = audit_flat(vec![
        case(
            "differ",
            "",
            &[
                "SELECT name FROM scores WHERE score > 2",
                "SELECT name FROM scores WHERE score > 4",
            ],
        ),
        case(
            "agree",
            "",
            &[
                "SELECT name FROM scores WHERE score > 2",
                "SELECT name FROM scores WHERE score >= 3",
            ],
        ),
    ]);
    let differ = detail(&findings, "differ", Kind::AlternativesDisagree);
    assert!(differ.starts_with("alternative 2:"), "{differ}");
    assert!(!kinds(&findings, "agree").contains(&Kind::AlternativesDisagree));
}

#[test]
fn errors_timeouts_and_empty_results_are_found() {
    let dir = tempfile::tempdir().expect("temp dir");
    database(&dir.path().join("shop.sqlite"), SHOP);
    let endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) \
                   SELECT count(*) FROM c";
    let limits = Limits {
        timeout: Some(Duration::from_millis(200)),
        ..Limits::default()
    };
    let findings = run(
        dir.path(),
        vec![
            case("error", "", &["SELECT nope FROM scores"]),
            case("timeout", "", &[endless]),
            case("empty", "", &["SELECT name FROM scores WHERE score > 10"]),
            case("rows", "", &["SELECT name FROM scores WHERE score > 4"]),
        ],
        limits,
    );
    assert!(detail(&findings, "error", Kind::Error).contains("no such column: nope"));
    assert_eq!(kinds(&findings, "timeout"), [Kind::Timeout]);
    assert!(kinds(&findings, "empty").contains(&Kind::Empty));
    assert!(!kinds(&findings, "rows").contains(&Kind::Empty));
}

#[test]
fn mutants_the_data_cannot_tell_apart_make_a_case_weak() {
    let findings = audit_flat(vec![
        // No score reaches 100: deleting the predicate changes nothing here.
        case(
            "unexercised",
            "",
            &["SELECT name FROM scores WHERE score < 100"],
        ),
        case(
            "exercised",
            "",
            &["SELECT name FROM scores WHERE score > 4"],
        ),
    ]);
    let weak = detail(&findings, "unexercised", Kind::Weak);
    assert!(weak.contains("where_remove"), "{weak}");
    let exercised = findings
        .iter()
        .find(|f| f.id == "exercised" && f.kind == Kind::Weak);
    assert!(
        exercised.is_none_or(|f| !f.detail.contains("where_remove")),
        "{exercised:?}"
    );
}

#[test]
fn mutants_the_mode_accepts_by_design_do_not_make_a_case_weak() {
    let cases = || {
        vec![
            case("count", "", &["SELECT COUNT(*) FROM scores"]),
            case("empty", "", &["SELECT name FROM scores WHERE score > 10"]),
        ]
    };
    let weak_in = |findings: &[Finding], id: &str| {
        findings
            .iter()
            .find(|f| f.id == id && f.kind == Kind::Weak)
            .is_some_and(|f| f.detail.contains("add_star_wildcard"))
    };
    // Defog's subset match accepts extra columns, with rows or without.
    let defog = audit_script(Mode::Defog, SHOP, cases());
    assert!(!weak_in(&defog, "count"), "{defog:#?}");
    assert!(!weak_in(&defog, "empty"), "{defog:#?}");
    // testsuite does not: an empty result hides the extra columns, which is the data's doing.
    let testsuite = audit_script(Mode::Testsuite, SHOP, cases());
    assert!(!weak_in(&testsuite, "count"), "{testsuite:#?}");
    assert!(weak_in(&testsuite, "empty"), "{testsuite:#?}");
}

#[test]
fn every_database_of_a_test_suite_folder_counts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let folder = dir.path().join("shop");
    std::fs::create_dir(&folder).expect("folder");
    database(&folder.join("shop.sqlite"), SHOP);
    // The second database exercises the predicate and holds nobody above 4.
    database(
        &folder.join("shop_1.sqlite"),
        "CREATE TABLE scores (name TEXT, score INTEGER); INSERT INTO scores VALUES ('eve', 200);",
    );
    let findings = run(
        dir.path(),
        vec![
            case(
                "unexercised",
                "",
                &["SELECT name FROM scores WHERE score < 100"],
            ),
            case(
                "empty_on_one",
                "",
                &["SELECT name FROM scores WHERE score BETWEEN 4 AND 6"],
            ),
        ],
        Limits::default(),
    );
    let unexercised = findings
        .iter()
        .find(|f| f.id == "unexercised" && f.kind == Kind::Weak);
    assert!(
        unexercised.is_none_or(|f| !f.detail.contains("where_remove")),
        "{unexercised:?}"
    );
    assert!(!kinds(&findings, "empty_on_one").contains(&Kind::Empty));
}

#[test]
fn one_question_with_two_golds_is_a_duplicate() {
    let findings = audit_flat(vec![
        case(
            "a",
            "Who scored most?",
            &["SELECT name FROM scores ORDER BY score DESC, name LIMIT 1"],
        ),
        case(
            "b",
            "  who scored   MOST? ",
            &["SELECT max(score) FROM scores"],
        ),
        case("c", "Who scored least?", &["SELECT max(score) FROM scores"]),
        case(
            "d",
            "Who scored least?",
            &["SELECT max(score)  FROM scores"],
        ),
    ]);
    assert_eq!(
        detail(&findings, "a", Kind::Duplicate),
        "2 cases ask the same question with different golds: a, b"
    );
    // One finding per question, on its first case.
    assert!(!kinds(&findings, "b").contains(&Kind::Duplicate));
    // The same gold up to spacing is no duplicate.
    assert!(!kinds(&findings, "c").contains(&Kind::Duplicate));
    assert!(!kinds(&findings, "d").contains(&Kind::Duplicate));
}

#[test]
fn findings_come_in_case_order_then_kind_order() {
    let findings = audit_flat(vec![
        case(
            "z",
            "",
            &["SELECT name FROM scores WHERE score > 10 ORDER BY random()"],
        ),
        case("a", "", &["SELECT nope FROM scores"]),
    ]);
    let order: Vec<(&str, Kind)> = findings.iter().map(|f| (f.id.as_str(), f.kind)).collect();
    let mut sorted = order.clone();
    sorted.sort_by_key(|(id, kind)| (*id != "z", *kind));
    assert_eq!(order, sorted);
    assert_eq!(order.first().map(|(id, _)| *id), Some("z"));
}

#[test]
fn a_clean_gold_has_no_finding() {
    let findings = audit_flat(vec![case(
        "clean",
        "Who scored at least 3, best first?",
        &["SELECT name, score FROM scores WHERE score >= 3 ORDER BY score DESC, name"],
    )]);
    assert_eq!(findings, []);
}

#[test]
fn the_modes_that_accept_extra_columns_say_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("shop.sqlite");
    database(&file, SHOP);
    let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
    let sql = "SELECT name, score FROM scores";
    let case = case("extra", "Who scored what?", &[sql]);
    let rows = engine.gold(&file, sql).result.expect("the gold runs");
    let accepting: Vec<Mode> = Mode::ALL
        .into_iter()
        .filter(|&mode| {
            let settings = Settings {
                mode,
                mode_options: ModeOptions::default(),
                seed: DEFAULT_SEED,
            };
            let scorer = Scorer {
                settings: &settings,
                engine: &engine,
                case: &case,
            };
            scorer.accepts_extra_columns(sql, &file, &rows)
        })
        .collect();
    assert_eq!(accepting, [Mode::Spider2, Mode::Defog]);
}
