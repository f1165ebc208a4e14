//! The test vectors of spec `evaluators.md` §9, run through `evaluate` end to end.

use std::time::Duration;

use crate::exec::{ExecErrorKind, Value};

use super::testkit::{i, named, null, r, rows, t, FakeRunner, SqliteRunner, TestCase};
use super::{evaluate, Mode, ModeOptions, Outcome, Verdict};

const GOLD: &str = "SELECT gold";
const PRED: &str = "SELECT pred";
const ORDERED: &str = "SELECT c0 FROM t ORDER BY c0";

/// Expected verdicts of one row of the cross-mode table; defog is `(exact, correct)`.
struct Expected {
    testsuite: u8,
    bird: u8,
    bird_rowsorted: u8,
    spider2_ordered: u8,
    spider2_unordered: u8,
    defog: (u8, u8),
    trustsql_domain: u8,
}

struct Vector {
    id: u32,
    gold: Vec<Vec<Value>>,
    pred: Vec<Vec<Value>>,
    ordered: bool,
    expected: Expected,
}

#[allow(clippy::too_many_arguments)]
fn v(
    id: u32,
    gold: Vec<Vec<Value>>,
    pred: Vec<Vec<Value>>,
    ordered: bool,
    [testsuite, bird, bird_rowsorted, spider2_ordered, spider2_unordered]: [u8; 5],
    defog: (u8, u8),
    trustsql_domain: u8,
) -> Vector {
    Vector {
        id,
        gold,
        pred,
        ordered,
        expected: Expected {
            testsuite,
            bird,
            bird_rowsorted,
            spider2_ordered,
            spider2_unordered,
            defog,
            trustsql_domain,
        },
    }
}

fn cross_mode_table() -> Vec<Vector> {
    let third = 1.0 / 3.0;
    vec![
        v(
            1,
            vec![vec![i(1), t("a")]],
            vec![vec![i(1), t("a")]],
            false,
            [1, 1, 1, 1, 1],
            (1, 1),
            1,
        ),
        v(
            2,
            vec![vec![i(1)], vec![i(2)]],
            vec![vec![i(2)], vec![i(1)]],
            false,
            [1, 1, 1, 0, 1],
            (1, 1),
            1,
        ),
        v(
            3,
            vec![vec![i(1)], vec![i(2)]],
            vec![vec![i(2)], vec![i(1)]],
            true,
            [0, 1, 1, 0, 1],
            (1, 1),
            1,
        ),
        v(
            4,
            vec![vec![i(1), t("a")], vec![i(2), t("b")]],
            vec![vec![t("a"), i(1)], vec![t("b"), i(2)]],
            false,
            [1, 0, 1, 1, 1],
            (0, 1),
            0,
        ),
        v(
            5,
            vec![vec![i(1)], vec![i(2)]],
            vec![vec![i(1)], vec![i(1)], vec![i(2)]],
            false,
            [0, 1, 1, 0, 0],
            (1, 1),
            0,
        ),
        v(
            6,
            vec![vec![i(1)], vec![i(1)], vec![i(2)]],
            vec![vec![i(1)], vec![i(2)]],
            false,
            [0, 1, 1, 0, 0],
            (1, 1),
            0,
        ),
        v(
            7,
            vec![vec![i(1)], vec![i(1)], vec![i(2)]],
            vec![vec![i(1)], vec![i(2)], vec![i(2)]],
            false,
            [0, 1, 1, 0, 0],
            (1, 1),
            0,
        ),
        v(
            8,
            vec![vec![i(1)]],
            vec![vec![r(1.0)]],
            false,
            [1, 1, 1, 1, 1],
            (1, 1),
            1,
        ),
        v(
            9,
            vec![vec![r(0.333)]],
            vec![vec![r(0.334)]],
            false,
            [0, 0, 0, 1, 1],
            (0, 0),
            0,
        ),
        v(
            10,
            vec![vec![r(third)]],
            vec![vec![r(0.333)]],
            false,
            [0, 0, 0, 1, 1],
            (0, 0),
            1,
        ),
        v(
            11,
            vec![vec![r(third)]],
            vec![vec![r(0.3333333)]],
            false,
            [0, 0, 0, 1, 1],
            (0, 1),
            1,
        ),
        v(
            12,
            vec![vec![null()]],
            vec![vec![null()]],
            false,
            [1, 1, 1, 1, 1],
            (1, 1),
            1,
        ),
        v(
            13,
            vec![vec![null()]],
            vec![vec![i(0)]],
            false,
            [0, 0, 0, 0, 0],
            (0, 0),
            0,
        ),
        v(14, vec![], vec![], false, [1, 1, 1, 1, 1], (1, 1), 1),
        v(
            15,
            vec![],
            vec![vec![i(1)]],
            false,
            [0, 0, 0, 0, 0],
            (1, 1),
            0,
        ),
        v(
            16,
            vec![vec![i(1)]],
            vec![],
            false,
            [0, 0, 0, 0, 0],
            (1, 1),
            0,
        ),
        v(
            17,
            vec![vec![i(1)], vec![i(2)]],
            vec![vec![i(1), t("x")], vec![i(2), t("y")]],
            false,
            [0, 0, 0, 1, 1],
            (0, 1),
            0,
        ),
        v(
            18,
            vec![vec![t("1")]],
            vec![vec![i(1)]],
            false,
            [0, 0, 0, 1, 1],
            (0, 0),
            1,
        ),
        v(
            19,
            vec![vec![i(1), r(1.5)]],
            vec![vec![r(1.0), r(1.5)]],
            false,
            [0, 1, 1, 1, 1],
            (1, 1),
            1,
        ),
        v(
            20,
            vec![vec![i(1), i(1)], vec![i(2), i(2)]],
            vec![vec![i(1)], vec![i(2)]],
            false,
            [0, 0, 0, 1, 1],
            (1, 1),
            0,
        ),
        v(
            21,
            vec![vec![i(1), t("a")], vec![i(2), t("b")]],
            vec![vec![i(1), t("b")], vec![i(2), t("a")]],
            false,
            [0, 0, 0, 0, 1],
            (0, 0),
            0,
        ),
        v(
            22,
            vec![vec![t("Abc")]],
            vec![vec![t("abc")]],
            false,
            [0, 0, 0, 0, 0],
            (0, 0),
            0,
        ),
        v(
            23,
            vec![vec![t("a ")]],
            vec![vec![t("a")]],
            false,
            [0, 0, 0, 0, 0],
            (0, 0),
            0,
        ),
        v(
            24,
            vec![vec![i(1), t("a")], vec![i(1), t("b")]],
            vec![vec![i(1), t("b")], vec![i(1), t("a")]],
            true,
            [0, 1, 1, 0, 1],
            (1, 1),
            1,
        ),
        v(
            25,
            vec![vec![i(0)]],
            vec![],
            false,
            [0, 0, 0, 0, 0],
            (1, 1),
            0,
        ),
        v(
            26,
            vec![vec![i(1), t("x")], vec![i(2), t("y")]],
            vec![vec![i(1)], vec![i(2)]],
            false,
            [0, 0, 0, 0, 0],
            (0, 0),
            0,
        ),
    ]
}

/// Runs one vector under `mode`; gold and prediction SQL are `ORDERED` for "ord" rows.
fn run(vector: &Vector, mode: Mode, configure: impl FnOnce(&mut TestCase)) -> Outcome {
    let (gold_sql, pred_sql) = if vector.ordered {
        (ORDERED, ORDERED)
    } else {
        (GOLD, PRED)
    };
    let runner = FakeRunner::new()
        .with_gold(gold_sql, rows(vector.gold.clone()))
        .with_pred(pred_sql, rows(vector.pred.clone()));
    let mut case = TestCase::new(gold_sql);
    if vector.ordered {
        case.category = Some("order_by".to_string());
        case.question = "sort them".to_string();
    } else {
        case.category = Some("group_by".to_string());
    }
    configure(&mut case);
    case.run(mode, pred_sql, &runner)
}

fn score(outcome: &Outcome) -> u8 {
    assert!(
        matches!(outcome.verdict, Verdict::Correct | Verdict::Incorrect),
        "unexpected {outcome:?}"
    );
    u8::from(outcome.verdict == Verdict::Correct)
}

#[test]
fn cross_mode_table_testsuite_and_bird() {
    for vector in cross_mode_table() {
        let e = &vector.expected;
        let id = vector.id;
        let ts = run(&vector, Mode::Testsuite, |_| {});
        assert_eq!(score(&ts), e.testsuite, "row {id} testsuite");
        assert_eq!(ts.score, f64::from(e.testsuite), "row {id} testsuite score");
        assert_eq!(
            score(&run(&vector, Mode::Bird, |_| {})),
            e.bird,
            "row {id} bird"
        );
        assert_eq!(
            score(&run(&vector, Mode::BirdRowsorted, |_| {})),
            e.bird_rowsorted,
            "row {id} bird-rowsorted"
        );
    }
}

#[test]
fn cross_mode_table_spider2() {
    for vector in cross_mode_table() {
        let e = &vector.expected;
        let ordered = run(&vector, Mode::Spider2, |c| c.ignore_order = Some(false));
        assert_eq!(
            score(&ordered),
            e.spider2_ordered,
            "row {} spider2 F",
            vector.id
        );
        let unordered = run(&vector, Mode::Spider2, |c| c.ignore_order = Some(true));
        assert_eq!(
            score(&unordered),
            e.spider2_unordered,
            "row {} spider2 T",
            vector.id
        );
        // `ignore_order` absent means true.
        assert_eq!(
            score(&run(&vector, Mode::Spider2, |_| {})),
            e.spider2_unordered
        );
    }
}

#[test]
fn cross_mode_table_defog() {
    for vector in cross_mode_table() {
        let (exact, correct) = vector.expected.defog;
        let id = vector.id;
        let outcome = run(&vector, Mode::Defog, |_| {});
        assert_eq!(score(&outcome), correct, "row {id} defog correct");
        assert_eq!(outcome.exact, Some(exact == 1), "row {id} defog exact");
        let exact_mode = run(&vector, Mode::DefogExact, |_| {});
        assert_eq!(score(&exact_mode), exact, "row {id} defog-exact");
        assert_eq!(exact_mode.exact, Some(exact == 1));
    }
}

#[test]
fn cross_mode_table_trustsql() {
    for vector in cross_mode_table() {
        let e = &vector.expected;
        let domain = run(&vector, Mode::Trustsql, |c| c.db = "atis".to_string());
        assert_eq!(
            score(&domain),
            e.trustsql_domain,
            "row {} trustsql-dom",
            vector.id
        );
        assert_eq!(domain.score, f64::from(e.trustsql_domain));
        // The spider family equals the testsuite column.
        let spider = run(&vector, Mode::Trustsql, |c| {
            c.db = "concert_singer".to_string()
        });
        assert_eq!(
            score(&spider),
            e.testsuite,
            "row {} trustsql-spider",
            vector.id
        );
    }
}

#[test]
fn defog_broadcast_matches_are_flagged() {
    let table = cross_mode_table();
    let has_flag = |id: u32| {
        let vector = table.iter().find(|v| v.id == id).unwrap();
        run(vector, Mode::Defog, |_| {})
            .diagnostics
            .iter()
            .any(|d| d.code == "defog_broadcast_match")
    };
    for id in [15, 16, 20, 25] {
        assert!(has_flag(id), "row {id}");
    }
    for id in [1, 2, 12, 14, 5] {
        assert!(!has_flag(id), "row {id}");
    }
}

/// Defog vectors D1-D8: gold and prediction results with their SQL and context.
struct DefogVector {
    gold: (Vec<&'static str>, Vec<Vec<Value>>),
    pred: (Vec<&'static str>, Vec<Vec<Value>>),
    category: &'static str,
    question: &'static str,
    gold_sql: &'static str,
    pred_sql: &'static str,
}

fn defog(vector: DefogVector) -> Outcome {
    let runner = FakeRunner::new()
        .with_gold(vector.gold_sql, named(&vector.gold.0, vector.gold.1))
        .with_pred(vector.pred_sql, named(&vector.pred.0, vector.pred.1));
    let mut case = TestCase::new(vector.gold_sql);
    case.category = Some(vector.category.to_string());
    case.question = vector.question.to_string();
    case.run(Mode::Defog, vector.pred_sql, &runner)
}

fn c0(values: Vec<Value>) -> (Vec<&'static str>, Vec<Vec<Value>>) {
    (vec!["c0"], values.into_iter().map(|v| vec![v]).collect())
}

fn plain(
    gold: (Vec<&'static str>, Vec<Vec<Value>>),
    pred: (Vec<&'static str>, Vec<Vec<Value>>),
) -> DefogVector {
    DefogVector {
        gold,
        pred,
        category: "group_by",
        question: "q",
        gold_sql: GOLD,
        pred_sql: PRED,
    }
}

fn flags(outcome: &Outcome) -> (u8, u8) {
    (u8::from(outcome.exact == Some(true)), score(outcome))
}

#[test]
fn defog_vectors_d1_to_d8() {
    let d1 = defog(DefogVector {
        category: "order_by",
        gold_sql: "SELECT c0 FROM t ORDER BY c0",
        pred_sql: "SELECT c0 FROM t",
        ..plain(c0(vec![i(1), i(2), i(3)]), c0(vec![i(3), i(2), i(1)]))
    });
    assert_eq!(flags(&d1), (1, 1), "D1");
    let d2 = defog(DefogVector {
        question: "Sort the names",
        ..plain(c0(vec![i(1), i(2)]), c0(vec![i(2), i(1)]))
    });
    assert_eq!(flags(&d2), (0, 0), "D2");
    let d3 = defog(plain(
        (vec!["a", "b"], vec![vec![i(1), t("x")], vec![i(2), t("y")]]),
        (vec!["x", "y"], vec![vec![t("x"), i(1)], vec![t("y"), i(2)]]),
    ));
    assert_eq!(flags(&d3), (0, 1), "D3");
    let d4 = defog(plain(
        (
            vec!["id", "name"],
            vec![vec![i(1), t("x")], vec![i(2), t("y")]],
        ),
        (
            vec!["name", "id"],
            vec![vec![t("x"), i(1)], vec![t("y"), i(2)]],
        ),
    ));
    assert_eq!(flags(&d4), (1, 1), "D4");
    let d5 = defog(plain(c0(vec![i(1), t("a")]), c0(vec![t("a"), i(1)])));
    assert_eq!(d5.verdict, Verdict::GoldError, "D5 {d5:?}");
    assert_eq!((d5.exact, d5.score), (Some(false), 0.0));
    assert!(d5.error.as_deref().is_some_and(|e| e.contains("TypeError")));
    let d6 = defog(plain(c0(vec![null(), i(1)]), c0(vec![i(1), null()])));
    assert_eq!(flags(&d6), (1, 1), "D6");
    let d7 = defog(plain(c0(vec![r(0.1 + 0.2)]), c0(vec![r(0.3)])));
    assert_eq!(flags(&d7), (0, 1), "D7");
    let d8 = defog(plain(c0(vec![i(5)]), c0(vec![i(5), i(5), i(5)])));
    assert_eq!(flags(&d8), (1, 1), "D8");
    assert!(d8
        .diagnostics
        .iter()
        .any(|d| d.code == "defog_broadcast_match"));
}

#[test]
fn defog_gold_alternatives_and_column_sets() {
    // `{a,b}` expands to `a`, `b`, `a, b`; the first alternative matches nothing.
    let runner = FakeRunner::new()
        .with_gold("SELECT a FROM u", named(&["a"], vec![vec![i(7)]]))
        .with_gold("SELECT a FROM t", named(&["a"], vec![vec![i(1)]]))
        .with_gold(
            "SELECT a, b FROM t",
            named(&["a", "b"], vec![vec![i(1), i(2)]]),
        )
        .with_pred(PRED, named(&["a", "b", "c"], vec![vec![i(1), i(2), i(9)]]));
    let mut case = TestCase::new("SELECT {a,b} FROM t");
    case.gold = vec![
        "SELECT a FROM u".to_string(),
        "SELECT {a,b} FROM t".to_string(),
    ];
    // `SELECT b FROM t` has no canned result: the error discards the subset match before it.
    let outcome = case.run(Mode::Defog, PRED, &runner);
    assert_eq!(
        (outcome.verdict, outcome.exact),
        (Verdict::GoldError, Some(false))
    );
    let runner = runner.with_gold("SELECT b FROM t", named(&["b"], vec![vec![i(2)]]));
    let outcome = case.run(Mode::Defog, PRED, &runner);
    assert_eq!(flags(&outcome), (0, 1));
    assert_eq!(case.run(Mode::DefogExact, PRED, &runner).score, 0.0);
    let exact_pred = "SELECT exact";
    let runner = runner.with_pred(exact_pred, named(&["a", "b"], vec![vec![i(1), i(2)]]));
    assert_eq!(flags(&case.run(Mode::Defog, exact_pred, &runner)), (1, 1));
    assert_eq!(case.run(Mode::DefogExact, exact_pred, &runner).score, 1.0);
}

fn error_runner() -> FakeRunner {
    FakeRunner::new()
        .with_gold(GOLD, rows(vec![vec![i(1)]]))
        .with_gold_failure(
            "SELECT broken",
            ExecErrorKind::Prepare,
            "near \"SELEC\": syntax error",
        )
        .with_pred(PRED, rows(vec![vec![i(1)]]))
        .with_pred_failure(
            "SELEC 1",
            ExecErrorKind::Prepare,
            "near \"SELEC\": syntax error",
        )
        .with_pred_failure("null", ExecErrorKind::Prepare, "no such column: null")
}

fn has(outcome: &Outcome, code: &str) -> bool {
    outcome.diagnostics.iter().any(|d| d.code == code)
}

#[test]
fn error_vectors_prediction_errors() {
    let runner = error_runner();
    for pred in ["SELEC 1", "null"] {
        let case = TestCase::new(GOLD);
        for mode in [Mode::Testsuite, Mode::Bird, Mode::Spider2, Mode::Defog] {
            let outcome = case.run(mode, pred, &runner);
            assert_eq!(outcome.verdict, Verdict::PredError, "{mode:?} {pred}");
            assert_eq!(outcome.score, 0.0);
            assert!(outcome
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with("pred_error: ")));
        }
        assert_eq!(case.run(Mode::Defog, pred, &runner).exact, Some(false));
        let feasible = case.run(Mode::Trustsql, pred, &runner);
        assert_eq!(
            (feasible.verdict, feasible.score),
            (Verdict::PredError, 0.0)
        );
        let mut infeasible = TestCase::new(GOLD);
        infeasible.gold.clear();
        assert_eq!(infeasible.run(Mode::Trustsql, pred, &runner).score, 0.0);
    }
}

#[test]
fn error_vectors_gold_errors() {
    let runner = error_runner();
    let case = TestCase::new("SELECT broken");
    let testsuite = case.run(Mode::Testsuite, PRED, &runner);
    assert_eq!(
        (testsuite.verdict, testsuite.score),
        (Verdict::GoldError, 0.0)
    );
    assert!(has(&testsuite, "reference_would_abort"));
    assert!(testsuite
        .error
        .as_deref()
        .is_some_and(|e| e.starts_with("gold_error: ")));
    for mode in [Mode::Bird, Mode::Defog, Mode::Spider2] {
        let outcome = case.run(mode, PRED, &runner);
        assert_eq!(
            (outcome.verdict, outcome.score),
            (Verdict::GoldError, 0.0),
            "{mode:?}"
        );
    }
    let trustsql = case.run(Mode::Trustsql, PRED, &runner);
    assert_eq!(
        (trustsql.verdict, trustsql.score),
        (Verdict::GoldError, 0.0)
    );
    assert!(has(&trustsql, "gold_error"));
}

/// Whichever query the reference runs first, a gold that does not run is the benchmark's
/// failure in every mode, also when the prediction fails or times out too, or (TrustSQL)
/// returns the reference's sentinel row for a failed gold.
#[test]
fn a_broken_gold_is_a_gold_error_in_every_mode_whatever_the_prediction() {
    let runner = error_runner()
        .with_pred_failure("SELECT slow", ExecErrorKind::Timeout, "interrupted")
        .with_pred("SELECT 'error_real'", rows(vec![vec![t("error_real")]]));
    let case = TestCase::new("SELECT broken");
    for mode in Mode::ALL {
        for pred in [PRED, "SELEC 1", "SELECT slow", "SELECT 'error_real'"] {
            let outcome = case.run(mode, pred, &runner);
            assert_eq!(
                (outcome.verdict, outcome.score),
                (Verdict::GoldError, 0.0),
                "{mode:?} {pred}"
            );
            assert!(
                outcome
                    .error
                    .as_deref()
                    .is_some_and(|e| e.starts_with("gold_error: ")),
                "{mode:?} {pred}: {outcome:?}"
            );
        }
    }
    // A prediction that fails against a gold that runs stays the system's failure.
    let good = TestCase::new(GOLD);
    for mode in Mode::ALL {
        assert_eq!(
            good.run(mode, "SELEC 1", &runner).verdict,
            Verdict::PredError,
            "{mode:?}"
        );
    }
}

#[test]
fn error_vectors_slow_prediction() {
    let slow = "SELECT slow";
    let runner = error_runner()
        .with_pred_taking(slow, rows(vec![vec![i(1)]]), Duration::from_secs(70))
        .with_pred_failure(
            "SELECT stuck",
            ExecErrorKind::Timeout,
            "interrupted after 60s",
        );
    let case = TestCase::new(GOLD);
    // No limit: test-suite and Defog on SQLite compare the slow result.
    assert_eq!(
        case.run(Mode::Testsuite, slow, &runner).verdict,
        Verdict::Correct
    );
    assert_eq!(flags(&case.run(Mode::Defog, slow, &runner)), (1, 1));
    // BIRD: one 30 s budget for the pair.
    let opts = ModeOptions {
        pair_budget: Some(Duration::from_secs(30)),
        ..ModeOptions::default()
    };
    let bird = evaluate(Mode::Bird, &opts, &case.input(), slow, &runner);
    assert_eq!((bird.verdict, bird.score), (Verdict::PredTimeout, 0.0));
    assert!(bird
        .error
        .as_deref()
        .is_some_and(|e| e.starts_with("pred_timeout: ")));
    let fast = evaluate(Mode::Bird, &opts, &case.input(), PRED, &runner);
    assert_eq!(fast.verdict, Verdict::Correct);
    // A harness timeout in test-suite: the reference would have waited.
    let ts = case.run(Mode::Testsuite, "SELECT stuck", &runner);
    assert_eq!(ts.verdict, Verdict::PredTimeout);
    assert!(has(&ts, "reference_has_no_timeout"));
    // TrustSQL: the `timeout_pred` sentinel is compared and loses.
    let trust = case.run(Mode::Trustsql, "SELECT stuck", &runner);
    assert_eq!((trust.verdict, trust.score), (Verdict::PredTimeout, 0.0));
}

#[test]
fn bird_pair_budget_counts_the_gold_too() {
    let runner = FakeRunner::new()
        .with_gold(GOLD, rows(vec![vec![i(1)]]))
        .with_pred_taking(
            PRED,
            rows(vec![vec![i(1)]]),
            Duration::from_micros(29_999_500),
        );
    let opts = ModeOptions {
        pair_budget: Some(Duration::from_secs(30)),
        ..ModeOptions::default()
    };
    let case = TestCase::new(GOLD);
    let outcome = evaluate(Mode::Bird, &opts, &case.input(), PRED, &runner);
    assert_eq!(
        (outcome.verdict, outcome.score),
        (Verdict::GoldTimeout, 0.0)
    );
}

#[test]
fn error_vectors_undecodable_text() {
    let mut lossy = rows(vec![vec![t("caf")]]);
    lossy.lossy_text = true;
    let runner = FakeRunner::new()
        .with_gold(GOLD, rows(vec![vec![t("caf")]]))
        .with_pred(PRED, lossy);
    let case = TestCase::new(GOLD);
    assert_eq!(
        case.run(Mode::Testsuite, PRED, &runner).verdict,
        Verdict::Correct
    );
    assert_eq!(
        case.run(Mode::Trustsql, PRED, &runner).verdict,
        Verdict::Correct
    );
    for mode in [Mode::Bird, Mode::Defog, Mode::Spider2] {
        let outcome = case.run(mode, PRED, &runner);
        assert_eq!(
            (outcome.verdict, outcome.score),
            (Verdict::PredDecodeError, 0.0),
            "{mode:?}"
        );
        assert!(outcome
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("pred_decode_error: ")));
    }
}

#[test]
fn testsuite_text_preprocessing_reaches_execution() {
    let runner = FakeRunner::new()
        .with_gold(
            "SELECT  a FROM t WHERE x >= 2020",
            rows(vec![vec![i(1)], vec![i(2)]]),
        )
        .with_pred(
            "SELECT  a FROM t WHERE y = 1 AND x >=2020",
            rows(vec![vec![i(2)], vec![i(1)]]),
        );
    let case = TestCase::new("SELECT DISTINCT a FROM t WHERE x > = YEAR(CURDATE())");
    let outcome = case.run(
        Mode::Testsuite,
        "SELECT distinct a FROM t WHERE y = value AND x >=YEAR ( CURDATE())",
        &runner,
    );
    assert_eq!(outcome.verdict, Verdict::Correct, "{outcome:?}");
}

#[test]
fn testsuite_keep_distinct_and_order_diagnostic() {
    let runner = FakeRunner::new()
        .with_gold("SELECT DISTINCT a FROM t", rows(vec![vec![i(1)]]))
        .with_pred("SELECT DISTINCT a FROM t", rows(vec![vec![i(1)]]))
        .with_gold(
            "SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 2)",
            rows(vec![vec![i(1)], vec![i(2)]]),
        )
        .with_pred(PRED, rows(vec![vec![i(2)], vec![i(1)]]));
    let opts = ModeOptions {
        keep_distinct: true,
        ..ModeOptions::default()
    };
    let case = TestCase::new("SELECT DISTINCT a FROM t");
    let kept = evaluate(
        Mode::Testsuite,
        &opts,
        &case.input(),
        "SELECT DISTINCT a FROM t",
        &runner,
    );
    assert_eq!(kept.verdict, Verdict::Correct);
    let nested = TestCase::new("SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 2)");
    let outcome = nested.run(Mode::Testsuite, PRED, &runner);
    assert_eq!(outcome.verdict, Verdict::Incorrect);
    assert!(has(&outcome, "order_by_not_top_level"));
}

#[test]
fn trustsql_spider_family_strips_gold_distinct_only() {
    let runner = FakeRunner::new()
        .with_gold("SELECT  a FROM t", rows(vec![vec![i(1)], vec![i(1)]]))
        .with_pred("SELECT DISTINCT a FROM t", rows(vec![vec![i(1)]]))
        .with_pred("SELECT  a FROM t", rows(vec![vec![i(1)], vec![i(1)]]))
        .with_pred("SELECT a FROM t", rows(vec![vec![i(1)], vec![i(1)]]));
    let mut case = TestCase::new("SELECT DISTINCT a FROM t");
    case.db = "concert_singer".to_string();
    // evaluate.py on a raw prediction file keeps the prediction's DISTINCT...
    let raw = ModeOptions {
        trustsql_raw: true,
        ..ModeOptions::default()
    };
    let distinct = "SELECT DISTINCT a FROM t";
    assert_eq!(
        evaluate(Mode::Trustsql, &raw, &case.input(), distinct, &runner).score,
        0.0
    );
    // ...which postprocess_abstention.py, part of the official pipeline, removes.
    assert_eq!(case.run(Mode::Trustsql, distinct, &runner).score, 1.0);
    assert_eq!(
        case.run(Mode::Trustsql, "SELECT a FROM t", &runner).score,
        1.0
    );
}

#[test]
fn trustsql_domain_adds_distinct_and_collapses_counts() {
    let runner = FakeRunner::new()
        .with_gold("SELECT DISTINCT a, b FROM t", rows(vec![vec![i(1), i(2)]]))
        .with_pred(
            "SELECT DISTINCT a, b FROM t where x=1",
            rows(vec![vec![i(1), i(2)]]),
        )
        .with_gold("SELECT DISTINCT a FROM t", rows(vec![vec![i(1)]]))
        .with_pred(
            "select a from t where x=1",
            rows(vec![vec![i(1)], vec![i(1)]]),
        )
        .with_gold("SELECT COUNT(*) > 0 FROM flight", rows(vec![vec![i(1)]]))
        .with_pred(
            "SELECT flight_id FROM flight",
            rows(vec![vec![i(7)], vec![i(9)]]),
        )
        .with_pred_failure("SELECT slow FROM flight", ExecErrorKind::Timeout, "60 s");
    let mut case = TestCase::new("SELECT DISTINCT a, b FROM t");
    case.db = "atis".to_string();
    let outcome = case.run(Mode::Trustsql, "select a, b from t where x=1", &runner);
    assert_eq!(outcome.verdict, Verdict::Correct);
    assert!(has(&outcome, "trustsql_add_distinct"));
    // A one-column head is 3 tokens: the reference adds no DISTINCT (issue 11 item 14).
    let mut one_column = TestCase::new("SELECT DISTINCT a FROM t");
    one_column.db = "advising".to_string();
    let outcome = one_column.run(Mode::Trustsql, "select a from t where x=1", &runner);
    assert_eq!(outcome.verdict, Verdict::Incorrect);
    assert!(!has(&outcome, "trustsql_add_distinct"));
    let mut counting = TestCase::new("SELECT COUNT(*) > 0 FROM flight");
    counting.db = "atis".to_string();
    assert_eq!(
        counting
            .run(Mode::Trustsql, "SELECT flight_id FROM flight", &runner)
            .score,
        1.0
    );
    // The timeout sentinel collapses to `[['1.0']]` too, and matches.
    let timed_out = counting.run(Mode::Trustsql, "SELECT slow FROM flight", &runner);
    assert_eq!(
        (timed_out.verdict, timed_out.score),
        (Verdict::Correct, 1.0)
    );
    assert!(timed_out
        .error
        .as_deref()
        .is_some_and(|e| e.starts_with("pred_timeout")));
}

#[test]
fn missing_gold_or_database_is_a_gold_error() {
    let runner = FakeRunner::new();
    let mut case = TestCase::new(GOLD);
    case.db_files.clear();
    assert_eq!(
        case.run(Mode::Bird, PRED, &runner).verdict,
        Verdict::GoldError
    );
    let mut case = TestCase::new(GOLD);
    case.gold.clear();
    assert_eq!(
        case.run(Mode::Testsuite, PRED, &runner).verdict,
        Verdict::GoldError
    );
    assert_eq!(
        case.run(Mode::Trustsql, PRED, &runner).verdict,
        Verdict::Incorrect
    );
}

/// A fresh SQLite file holding `sql`.
fn database(dir: &tempfile::TempDir, name: &str, sql: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(sql).unwrap();
    path
}

#[test]
fn testsuite_runs_every_database_of_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    let first = database(
        &dir,
        "a.sqlite",
        "CREATE TABLE t(x INT, y TEXT); INSERT INTO t VALUES (1,'a'),(2,'b');",
    );
    let second = database(
        &dir,
        "b.sqlite",
        "CREATE TABLE t(x INT, y TEXT); INSERT INTO t VALUES (1,'a'),(4,'b');",
    );
    let mut case = TestCase::new("SELECT y FROM t WHERE x < 3");
    case.db_files = vec![first.clone()];
    let pred = "SELECT y FROM t WHERE x != 3";
    assert_eq!(
        case.run(Mode::Testsuite, pred, &SqliteRunner).verdict,
        Verdict::Correct
    );
    case.db_files = vec![first, second];
    assert_eq!(
        case.run(Mode::Testsuite, pred, &SqliteRunner).verdict,
        Verdict::Incorrect
    );
    let permuted = "SELECT y, x FROM t WHERE x < 3";
    let mut wide = TestCase::new("SELECT x, y FROM t WHERE x < 3");
    wide.db_files = case.db_files.clone();
    assert_eq!(
        wide.run(Mode::Testsuite, permuted, &SqliteRunner).verdict,
        Verdict::Correct
    );
    assert_eq!(
        wide.run(Mode::Bird, permuted, &SqliteRunner).verdict,
        Verdict::Incorrect
    );
}

#[test]
fn sqlite_integer_real_and_invalid_text() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(
        &dir,
        "v.sqlite",
        "CREATE TABLE t(v); INSERT INTO t VALUES (1), (2.5), (NULL), (CAST(X'61FF62' AS TEXT));",
    );
    let mut case = TestCase::new("SELECT v FROM t WHERE v = 1 OR v IS NULL");
    case.db_files = vec![db];
    let pred = "SELECT 1.0 UNION ALL SELECT NULL";
    assert_eq!(
        case.run(Mode::Bird, pred, &SqliteRunner).verdict,
        Verdict::Correct
    );
    let text_case = TestCase {
        gold: vec!["SELECT 'ab'".to_string()],
        ..TestCase::new("")
    };
    let text_case = TestCase {
        db_files: case.db_files.clone(),
        ..text_case
    };
    let lossy = "SELECT v FROM t WHERE typeof(v) = 'text'";
    assert_eq!(
        text_case.run(Mode::Testsuite, lossy, &SqliteRunner).verdict,
        Verdict::Correct
    );
    assert_eq!(
        text_case.run(Mode::Bird, lossy, &SqliteRunner).verdict,
        Verdict::PredDecodeError
    );
}

/// Every Defog gold query evaluated against itself on the real databases is exactly right.
#[test]
fn defog_gold_against_itself_on_real_data() {
    let Some(data) = sqlgate_test_support::shared_data() else {
        return;
    };
    let dir = data.join("defog");
    let mut reader = csv::Reader::from_path(dir.join("questions.csv")).unwrap();
    let mut checked = 0;
    for record in reader.records() {
        let record = record.unwrap();
        let (db, category, query, question) = (&record[0], &record[2], &record[3], &record[4]);
        let gold: Vec<String> = query
            .split(';')
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .map(str::to_string)
            .collect();
        let pred = super::defog::expand_column_set(&gold[0]).unwrap().remove(0);
        let case = TestCase {
            gold,
            question: question.to_string(),
            category: Some(category.to_string()),
            db: db.to_string(),
            db_files: vec![dir.join(format!("{db}.sqlite"))],
            tied: Vec::new(),
            ignore_order: None,
        };
        for mode in [Mode::Defog, Mode::DefogExact] {
            let outcome = case.run(mode, &pred, &SqliteRunner);
            assert_eq!(
                outcome.verdict,
                Verdict::Correct,
                "{db}: {pred}\n{outcome:?}"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 135);
}
