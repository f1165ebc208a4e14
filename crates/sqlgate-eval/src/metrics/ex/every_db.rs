//! `every_database` in the modes that compare on one database (all but `testsuite`, which
//! walks its folder itself): the mode judges the case on each database of its folder, the
//! original first, and the case is correct only where it is correct on every one. The first
//! database where it is not gives the outcome, and is named in it.
//!
//! Each database is judged as the mode judges a case, gold alternatives included: in these
//! modes two alternatives may match on different databases (`testsuite` asks one alternative
//! to match on all, as the reference does).

use super::{CaseInput, Outcome, Verdict};

pub(super) fn evaluate(
    case: &CaseInput,
    mut evaluate_on_one: impl FnMut(&CaseInput) -> Outcome,
) -> Outcome {
    let mut exact = Some(true);
    let mut diagnostics = Vec::new();
    let mut last = None;
    for db in case.db_files {
        let on_one = CaseInput {
            db_files: std::slice::from_ref(db),
            ..case.clone()
        };
        let outcome = evaluate_on_one(&on_one);
        if outcome.verdict != Verdict::Correct {
            return outcome.failed_on(db);
        }
        // Defog's exact flag holds when the results match exactly everywhere.
        exact = match (exact, outcome.exact) {
            (Some(all), Some(here)) => Some(all && here),
            _ => None,
        };
        for diagnostic in &outcome.diagnostics {
            if !diagnostics.contains(diagnostic) {
                diagnostics.push(diagnostic.clone());
            }
        }
        last = Some(outcome);
    }
    // The caller passes at least two databases.
    let last = last.unwrap_or_else(|| Outcome::new(Verdict::Correct, 1.0));
    Outcome {
        exact,
        diagnostics,
        ..last
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::testkit::{SqliteRunner, TestCase};
    use super::super::{Mode, Verdict};

    fn database(dir: &Path, name: &str, sql: &str) -> PathBuf {
        let path = dir.join(name);
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(sql)
            .unwrap();
        path
    }

    /// `shop.sqlite` and two variants; only the second has a price between 5 and 10.
    fn folder(dir: &Path) -> Vec<PathBuf> {
        let schema = "CREATE TABLE items(name TEXT, price INTEGER);";
        vec![
            database(
                dir,
                "shop.sqlite",
                &format!("{schema} INSERT INTO items VALUES ('a', 5), ('b', 20);"),
            ),
            database(
                dir,
                "shop_1.sqlite",
                &format!("{schema} INSERT INTO items VALUES ('c', 1), ('d', 30);"),
            ),
            database(
                dir,
                "shop_2.sqlite",
                &format!("{schema} INSERT INTO items VALUES ('e', 7), ('f', 40);"),
            ),
        ]
    }

    #[test]
    fn a_case_wrong_on_a_variant_fails_there_in_every_mode() {
        let dir = tempfile::tempdir().unwrap();
        let mut case = TestCase::new("SELECT name FROM items WHERE price < 10");
        case.db_files = folder(dir.path());
        // Other bounds agree with the gold on the original and the first variant only.
        let pred = "SELECT name FROM items WHERE price <= 5 OR price > 35";
        for mode in Mode::ALL {
            let outcome = case.run(mode, pred, &SqliteRunner);
            assert_eq!(outcome.verdict, Verdict::Incorrect, "{mode:?}");
            assert_eq!(outcome.score, 0.0, "{mode:?}");
            assert_eq!(
                outcome.failed_on.as_deref(),
                Some("shop_2.sqlite"),
                "{mode:?}"
            );
            // The original alone accepts it.
            let mut original = TestCase::new(&case.gold[0]);
            original.db_files = case.db_files[..1].to_vec();
            let alone = original.run(mode, pred, &SqliteRunner);
            assert_eq!(alone.verdict, Verdict::Correct, "{mode:?}");
            assert_eq!(alone.failed_on, None);
        }
    }

    #[test]
    fn a_case_right_everywhere_is_correct_and_names_no_database() {
        let dir = tempfile::tempdir().unwrap();
        let mut case = TestCase::new("SELECT name FROM items WHERE price < 10");
        case.db_files = folder(dir.path());
        let rewrite = "SELECT i.name FROM items AS i WHERE NOT i.price >= 10";
        for mode in [Mode::Defog, Mode::DefogExact, Mode::Bird, Mode::Spider2] {
            let outcome = case.run(mode, rewrite, &SqliteRunner);
            assert_eq!(outcome.verdict, Verdict::Correct, "{mode:?}");
            assert_eq!(outcome.failed_on, None);
        }
        let outcome = case.run(Mode::Defog, rewrite, &SqliteRunner);
        assert_eq!(outcome.exact, Some(true));
    }

    #[test]
    fn a_gold_failing_on_one_database_is_a_gold_error_named_there() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = folder(dir.path());
        // `abs` of the smallest integer overflows: the gold fails there, the prediction runs.
        files.push(database(
            dir.path(),
            "shop_3.sqlite",
            "CREATE TABLE items(name TEXT, price INTEGER);
             INSERT INTO items VALUES ('g', -9223372036854775808);",
        ));
        let mut case = TestCase::new("SELECT name FROM items WHERE abs(price) < 10");
        case.db_files = files;
        let pred = "SELECT name FROM items WHERE price < 10 AND price > -10";
        for mode in [Mode::Bird, Mode::Defog, Mode::Testsuite] {
            let outcome = case.run(mode, pred, &SqliteRunner);
            assert_eq!(outcome.verdict, Verdict::GoldError, "{mode:?}");
            assert_eq!(outcome.failed_on.as_deref(), Some("shop_3.sqlite"));
            assert!(outcome.error.unwrap().contains("overflow"), "{mode:?}");
        }
    }
}
