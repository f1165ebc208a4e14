//! Mode `testsuite`: taoyds/test-suite-sql-eval `exec_eval.py` (spec §2).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::path::Path;
use std::rc::Rc;
use std::sync::LazyLock;

use regex::Regex;

use super::result_eq::result_eq;
use super::sqlparse::{contains_ignoring_ascii_case, has_top_level_order_by, remove_distinct};
use super::{
    any_alternative, usable, CaseInput, Decoding, Failure, ModeOptions, Outcome, PredRuns,
    QueryRunner, Side, Verdict,
};

pub(super) fn evaluate(
    opts: &ModeOptions,
    case: &CaseInput,
    pred_sql: &str,
    runner: &dyn QueryRunner,
) -> Outcome {
    let pred = execution_text(&preprocess(
        &pred_sql.replace(" value ", " 1 "),
        opts.keep_distinct,
    ));
    let mut preds = PredRuns::new(runner);
    any_alternative(case.gold, |gold| {
        let gold = prepared_gold(gold, opts.keep_distinct);
        let outcome = on_every_db(
            case,
            &gold.text,
            &pred,
            gold.order_matters,
            runner,
            &mut preds,
        );
        if gold.order_by_not_top_level {
            outcome.with_diagnostic(
                "order_by_not_top_level",
                "the gold's \"order by\" is not the outer query's ORDER BY, yet it makes row order matter",
            )
        } else {
            outcome
        }
    })
}

/// A gold query as it runs and decides the comparison.
struct PreparedGold {
    /// The text executed.
    text: String,
    order_matters: bool,
    /// Order matters, yet the outer query has no ORDER BY.
    order_by_not_top_level: bool,
}

/// How many prepared golds each thread keeps.
const RECENT_GOLDS: usize = 8;

/// A prepared gold, by its text and `keep_distinct`.
type RecentGold = ((String, bool), Rc<PreparedGold>);

thread_local! {
    /// The golds this thread prepared last, by their text and `keep_distinct`: a case's
    /// predictions are mostly scored one after another on one thread (the parallel scoring
    /// hands each thread runs of neighbouring cases), and each would lex the same gold again.
    static RECENT: RefCell<VecDeque<RecentGold>> =
        const { RefCell::new(VecDeque::new()) };
}

/// The gold as testsuite mode prepares it (a pure function of its arguments, kept for the
/// next predictions of the case).
fn prepared_gold(gold: &str, keep_distinct: bool) -> Rc<PreparedGold> {
    let found = RECENT.with_borrow(|recent| {
        recent
            .iter()
            .find(|((text, keep), _)| text == gold && *keep == keep_distinct)
            .map(|(_, prepared)| Rc::clone(prepared))
    });
    if let Some(prepared) = found {
        return prepared;
    }
    let preprocessed = preprocess(gold, keep_distinct);
    let order_matters = order_matters(&preprocessed);
    let prepared = Rc::new(PreparedGold {
        text: execution_text(&preprocessed),
        order_matters,
        order_by_not_top_level: order_matters && !has_top_level_order_by(&preprocessed),
    });
    RECENT.with_borrow_mut(|recent| {
        if recent.len() == RECENT_GOLDS {
            recent.pop_front();
        }
        recent.push_back(((gold.to_string(), keep_distinct), Rc::clone(&prepared)));
    });
    prepared
}

/// Spec §2.1 steps 2 and 3, applied to both sides.
fn preprocess(sql: &str, keep_distinct: bool) -> String {
    let fixed = sql
        .replace("> =", ">=")
        .replace("< =", "<=")
        .replace("! =", "!=");
    if keep_distinct {
        fixed
    } else {
        remove_distinct(&fixed)
    }
}

/// Spec §2.1 step 4: a plain substring test with exactly one space.
pub(super) fn order_matters(gold_sql: &str) -> bool {
    gold_sql.to_lowercase().contains("order by")
}

/// Spec §2.1 step 5, applied by `exec_on_db` just before execution.
fn execution_text(sql: &str) -> String {
    static CUR_YEAR: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*").expect("valid pattern")
    });
    // Only a text holding the name can match (no other character folds to one of its ASCII
    // letters), and most SQL does not: the regex, whose search state every thread borrows from
    // one shared pool, runs only then.
    if !contains_ignoring_ascii_case(sql, "curdate") {
        return sql.to_string();
    }
    CUR_YEAR.replace_all(sql, "2020").into_owned()
}

/// Gold then prediction on each database file, stopping at the first failing one (§2.2),
/// which the outcome names when there are several.
fn on_every_db(
    case: &CaseInput,
    gold: &str,
    pred: &str,
    order_matters: bool,
    runner: &dyn QueryRunner,
    preds: &mut PredRuns,
) -> Outcome {
    let several = case.db_files.len() > 1;
    for db in case.db_files {
        let outcome = on_one_db(db, gold, pred, order_matters, runner, preds);
        if outcome.verdict != Verdict::Correct {
            return if several {
                outcome.failed_on(db)
            } else {
                outcome
            };
        }
    }
    Outcome::new(Verdict::Correct, 1.0)
}

fn on_one_db(
    db: &Path,
    gold: &str,
    pred: &str,
    order_matters: bool,
    runner: &dyn QueryRunner,
    preds: &mut PredRuns,
) -> Outcome {
    let gold_rows = match usable(Side::Gold, &runner.gold(db, gold), Decoding::Ignore) {
        Ok(rows) => rows,
        Err(failure) => return failed(failure),
    };
    let pred_rows = match usable(Side::Pred, &preds.get(db, pred), Decoding::Ignore) {
        Ok(rows) => rows,
        Err(failure) => return failed(failure),
    };
    if result_eq(&gold_rows.rows, &pred_rows.rows, order_matters) {
        Outcome::new(Verdict::Correct, 1.0)
    } else {
        Outcome::new(Verdict::Incorrect, 0.0)
    }
}

/// A failed execution scores 0; the diagnostic says what the reference would have done.
fn failed(failure: Failure) -> Outcome {
    let timeout = failure.is_timeout();
    let gold = failure.verdict.is_gold_failure();
    let outcome = Outcome::failed(failure, 0.0);
    if timeout {
        outcome.with_diagnostic(
            "reference_has_no_timeout",
            "the official script has no working timeout and would have waited for the result",
        )
    } else if gold {
        outcome.with_diagnostic(
            "reference_would_abort",
            "the official script asserts that the gold executes and aborts the whole run",
        )
    } else {
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preprocessing_follows_the_reference_order() {
        assert_eq!(
            preprocess("a > = 1 AND b < = 2 AND c ! = 3", true),
            "a >= 1 AND b <= 2 AND c != 3"
        );
        assert_eq!(
            preprocess("SELECT DISTINCT a FROM t WHERE x > = 1", false),
            "SELECT  a FROM t WHERE x >= 1"
        );
        assert_eq!(
            preprocess("SELECT DISTINCT a FROM t", true),
            "SELECT DISTINCT a FROM t"
        );
        assert_eq!(
            execution_text("SELECT year(  curdate ( ) )  - 1"),
            "SELECT 2020- 1"
        );
    }

    #[test]
    fn order_detection_is_a_plain_substring_test() {
        assert!(order_matters("SELECT a FROM t ORDER BY a"));
        assert!(order_matters("SELECT a FROM (SELECT a FROM t ORDER BY a)"));
        assert!(order_matters("SELECT a FROM t WHERE b = 'order by'"));
        assert!(!order_matters("SELECT a FROM t ORDER  BY a"));
        assert!(!order_matters("SELECT a FROM t ORDER\nBY a"));
    }
}
