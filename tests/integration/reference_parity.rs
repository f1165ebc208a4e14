//! Execution accuracy on the real Defog databases: gold against gold is 1.0 in every mode, and
//! crafted predictions get the verdict each reference evaluator gives (derived by hand from
//! `evaluators.md` for these rows of data).

use std::path::{Path, PathBuf};

use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_eval::metrics::ex::{evaluate, CaseInput, Mode, ModeOptions};

const MODES: [Mode; 7] = [
    Mode::Testsuite,
    Mode::Bird,
    Mode::BirdRowsorted,
    Mode::Spider2,
    Mode::Defog,
    Mode::DefogExact,
    Mode::Trustsql,
];

fn defog_dir() -> Option<PathBuf> {
    sqlgate_test_support::shared_data().map(|d| d.join("defog"))
}

#[test]
fn defog_gold_against_gold_is_one_in_every_mode() {
    let Some(dir) = defog_dir() else { return };
    let bench = sqlgate_eval::loaders::load(
        &dir.join("questions.csv"),
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .unwrap();
    assert_eq!(bench.cases.len(), 135);
    let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
    for mode in MODES {
        for case in &bench.cases {
            let files = bench.db_files(case, mode == Mode::Testsuite).unwrap();
            for alternative in &case.gold {
                let input = CaseInput {
                    gold: &case.gold,
                    question: &case.question,
                    category: case.tags.get("category").map(String::as_str),
                    db: &case.db,
                    db_files: &files,
                    tied: &[],
                    ignore_order: None,
                };
                let outcome = evaluate(mode, &ModeOptions::default(), &input, alternative, &engine);
                assert_eq!(
                    outcome.score, 1.0,
                    "{mode:?} case {} alternative {alternative}: {outcome:?}",
                    case.id
                );
            }
        }
    }
}

/// One crafted prediction and the reference verdicts, in the order of `MODES`.
struct Variant {
    what: &'static str,
    pred: &'static str,
    expected: [u8; 7],
}

fn check(db: &Path, gold: &str, question: &str, category: &str, variants: &[Variant]) {
    let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
    let gold = vec![gold.to_string()];
    let files = vec![db.to_path_buf()];
    for variant in variants {
        for (mode, expected) in MODES.iter().zip(variant.expected) {
            let input = CaseInput {
                gold: &gold,
                question,
                category: Some(category),
                db: "geography",
                db_files: &files,
                tied: &[],
                ignore_order: None,
            };
            let outcome = evaluate(
                *mode,
                &ModeOptions::default(),
                &input,
                variant.pred,
                &engine,
            );
            assert_eq!(
                outcome.score, expected as f64,
                "{} under {mode:?}: {:?}",
                variant.what, outcome
            );
        }
    }
}

#[test]
fn crafted_variants_of_an_unordered_question() {
    let Some(dir) = defog_dir() else { return };
    // Six distinct states, one column, no ORDER BY, no ordering word in the question.
    let gold = "SELECT state_name FROM state WHERE population < 100000";
    let question = "Which states have fewer than a hundred thousand people?";
    #[rustfmt::skip]
    let variants = [
        //                                                              ts bird rows sp2 defog exact trust
        Variant { what: "rows reordered", pred: "SELECT state_name FROM state WHERE population < 100000 ORDER BY state_name DESC",
                  expected: [1, 1, 1, 1, 1, 1, 1] },
        Variant { what: "a row duplicated", pred: "SELECT state_name FROM state WHERE population < 100000 UNION ALL SELECT 'Texas'",
                  expected: [0, 1, 1, 0, 1, 1, 0] },
        Variant { what: "DISTINCT added", pred: "SELECT DISTINCT state_name FROM state WHERE population < 100000",
                  expected: [1, 1, 1, 1, 1, 1, 1] },
        Variant { what: "an extra column", pred: "SELECT state_name, population FROM state WHERE population < 100000",
                  expected: [0, 0, 0, 1, 1, 0, 0] },
        Variant { what: "LIMIT added", pred: "SELECT state_name FROM state WHERE population < 100000 LIMIT 3",
                  expected: [0, 0, 0, 0, 0, 0, 0] },
        Variant { what: "empty result", pred: "SELECT state_name FROM state WHERE population < 0",
                  expected: [0, 0, 0, 0, 0, 0, 0] },
        Variant { what: "unknown column", pred: "SELECT state_nam FROM state",
                  expected: [0, 0, 0, 0, 0, 0, 0] },
    ];
    check(
        &dir.join("geography.sqlite"),
        gold,
        question,
        "instruct",
        &variants,
    );
}

#[test]
fn crafted_variants_with_duplicates_in_the_gold() {
    let Some(dir) = defog_dir() else { return };
    // Ten rows, seven distinct countries: DISTINCT matters to every bag-semantics mode.
    let gold = "SELECT country_name FROM city";
    let question = "List the country of every city.";
    #[rustfmt::skip]
    let variants = [
        // test-suite strips DISTINCT from both sides before executing, so it cannot see it;
        // TrustSQL (Spider family) strips it from the gold, and its post-processing from the
        // prediction.
        Variant { what: "DISTINCT added", pred: "SELECT DISTINCT country_name FROM city",
                  expected: [1, 1, 1, 0, 1, 1, 1] },
        Variant { what: "rows reordered", pred: "SELECT country_name FROM city ORDER BY country_name",
                  expected: [1, 1, 1, 1, 1, 1, 1] },
    ];
    check(
        &dir.join("geography.sqlite"),
        gold,
        question,
        "instruct",
        &variants,
    );
}

#[test]
fn crafted_variants_of_a_two_column_question() {
    let Some(dir) = defog_dir() else { return };
    let gold = "SELECT lake_name, area FROM lake WHERE LOWER(state_name) LIKE LOWER('%Michigan%')";
    let question = "What are the names and areas of the lakes in Michigan?";
    #[rustfmt::skip]
    let variants = [
        Variant { what: "columns swapped", pred: "SELECT area, lake_name FROM lake WHERE state_name LIKE '%michigan%'",
                  expected: [1, 0, 1, 1, 1, 1, 1] },
        Variant { what: "a column dropped", pred: "SELECT lake_name FROM lake WHERE state_name LIKE '%michigan%'",
                  expected: [0, 0, 0, 0, 0, 0, 0] },
        Variant { what: "area as integer", pred: "SELECT lake_name, CAST(area AS INTEGER) FROM lake WHERE state_name LIKE '%michigan%'",
                  expected: [1, 1, 1, 1, 1, 1, 1] },
    ];
    check(
        &dir.join("geography.sqlite"),
        gold,
        question,
        "instruct",
        &variants,
    );
}

#[test]
fn crafted_variants_of_an_ordered_question() {
    let Some(dir) = defog_dir() else { return };
    let gold =
        "SELECT city.city_name, city.population FROM city ORDER BY city.population DESC LIMIT 5";
    let question = "What are the top 5 cities with the highest population?";
    #[rustfmt::skip]
    let variants = [
        Variant { what: "same rows, ascending", pred: "SELECT city_name, population FROM city WHERE population >= 1200000 ORDER BY population ASC",
                  expected: [0, 1, 1, 1, 0, 0, 0] },
        Variant { what: "same rows and order, other text", pred: "SELECT c.city_name, c.population FROM city AS c ORDER BY 2 DESC LIMIT 5",
                  expected: [1, 1, 1, 1, 1, 1, 1] },
        Variant { what: "LIMIT off by one", pred: "SELECT city_name, population FROM city ORDER BY population DESC LIMIT 6",
                  expected: [0, 0, 0, 0, 0, 0, 0] },
    ];
    check(
        &dir.join("geography.sqlite"),
        gold,
        question,
        "order_by",
        &variants,
    );
}
