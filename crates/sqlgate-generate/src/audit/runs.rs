//! Scoring one query against gold as the suite's mode does, on one database, with the
//! prediction side run another way: a second time, under `reverse_unordered_selects`, or as
//! given rows.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sqlgate_eval::exec::{Driver, Engine, Execution, Open, QueryRunner, ResultSet, Source, Value};
use sqlgate_eval::loaders::Case;
use sqlgate_eval::metrics::ex::{self, CaseInput, Verdict};

use super::Settings;

/// Runs gold queries through `gold` and predictions through `pred`, on the engine's driver.
struct SplitRunner<'a, G, P> {
    engine: &'a Engine,
    gold: G,
    pred: P,
}

impl<G, P> QueryRunner for SplitRunner<'_, G, P>
where
    G: Fn(&Path, &str) -> Execution + Sync,
    P: Fn(&Path, &str) -> Execution + Sync,
{
    fn gold(&self, db: &Path, sql: &str) -> Execution {
        (self.gold)(db, sql)
    }

    fn pred(&self, db: &Path, sql: &str) -> Execution {
        (self.pred)(db, sql)
    }

    fn driver(&self) -> &'static dyn Driver {
        self.engine.driver()
    }
}

/// One case's scoring context on one database.
pub(super) struct Scorer<'a> {
    pub settings: &'a Settings,
    pub engine: &'a Engine,
    pub case: &'a Case,
}

impl Scorer<'_> {
    /// The mode's verdict on `pred_sql` against `gold` on `file`, the prediction executed by
    /// the engine like any prediction.
    pub fn verdict(&self, gold: &[String], file: &Path, pred_sql: &str) -> Verdict {
        self.verdict_with(gold, file, pred_sql, self.engine)
    }

    /// The mode's verdict on `sql` against itself when its prediction side runs through
    /// `pred` (a second execution, another scan order, given rows).
    pub fn verdict_under(
        &self,
        sql: &str,
        file: &Path,
        pred: impl Fn(&Path, &str) -> Execution + Sync,
    ) -> Verdict {
        let engine = self.engine;
        let runner = SplitRunner {
            engine,
            gold: |db: &Path, sql: &str| engine.gold(db, sql),
            pred,
        };
        let gold = [sql.to_string()];
        self.verdict_with(&gold, file, sql, &runner)
    }

    fn verdict_with(
        &self,
        gold: &[String],
        file: &Path,
        pred_sql: &str,
        runner: &dyn QueryRunner,
    ) -> Verdict {
        let files = [file.to_path_buf()];
        let input = case_input(self.case, gold, &files);
        ex::evaluate(
            self.settings.mode,
            &self.settings.mode_options,
            &input,
            pred_sql,
            runner,
        )
        .verdict
    }

    /// Whether the mode cares about row order for `sql` on `file`: the gold's own rows
    /// reversed would score incorrect against them. Unknowable (false) with fewer than two
    /// distinct rows. Both sides are given rows: what the mode does to the gold's text before
    /// it runs it (testsuite removes DISTINCT) is no part of the question.
    pub fn order_matters(&self, sql: &str, file: &Path, rows: &ResultSet) -> bool {
        let reversed = ResultSet {
            rows: rows.rows.iter().rev().cloned().collect(),
            ..rows.clone()
        };
        self.verdict_given(sql, file, rows.clone(), reversed) == Verdict::Incorrect
    }

    /// Whether the mode accepts extra columns for `sql`, whatever the data: its rows on `file`
    /// (`rows`; one made-up row when it returns none, since two empty results agree whatever
    /// their columns) score correct as a prediction against themselves with one more column.
    pub fn accepts_extra_columns(&self, sql: &str, file: &Path, rows: &ResultSet) -> bool {
        if rows.columns.is_empty() {
            return false;
        }
        let gold = ResultSet {
            rows: if rows.rows.is_empty() {
                vec![vec![Value::Int(1); rows.columns.len()]]
            } else {
                rows.rows.clone()
            },
            ..rows.clone()
        };
        let mut columns = gold.columns.clone();
        columns.push("sqlgate_extra_column".to_string());
        let wider = ResultSet {
            columns,
            rows: (0..)
                .zip(&gold.rows)
                .map(|(i, row)| row.iter().cloned().chain([Value::Int(i)]).collect())
                .collect(),
            ..rows.clone()
        };
        self.verdict_given(sql, file, gold, wider) == Verdict::Correct
    }

    /// The mode's verdict on `pred` rows against `gold` rows, the case's gold being `sql`.
    fn verdict_given(&self, sql: &str, file: &Path, gold: ResultSet, pred: ResultSet) -> Verdict {
        let (gold, pred) = (Arc::new(gold), Arc::new(pred));
        let runner = SplitRunner {
            engine: self.engine,
            gold: |_: &Path, _: &str| given(&gold),
            pred: |_: &Path, _: &str| given(&pred),
        };
        let gold_sql = [sql.to_string()];
        self.verdict_with(&gold_sql, file, sql, &runner)
    }
}

/// An execution that returns `rows`.
fn given(rows: &Arc<ResultSet>) -> Execution {
    Execution {
        result: Ok(Arc::clone(rows)),
        elapsed: Default::default(),
    }
}

/// What EX compares a query against: the case with `gold` as its alternatives, on `files`.
fn case_input<'a>(case: &'a Case, gold: &'a [String], files: &'a [PathBuf]) -> CaseInput<'a> {
    CaseInput {
        gold,
        question: &case.question,
        category: case.tags.get("category").map(String::as_str),
        db: &case.db,
        db_files: files,
        tied: &[],
        ignore_order: case.tags.get("ignore_order").map(|v| v == "true"),
    }
}

/// `sql` executed on `db` with unordered rows in another order (SQLite's
/// `PRAGMA reverse_unordered_selects = ON`; an engine without [`Feature::ReverseUnordered`]
/// refuses), in the gold's sandbox and limits.
pub(super) fn reversed_scan(engine: &Engine, db: &Path, sql: &str) -> Execution {
    let how = Open {
        source: Source::Gold,
        reverse_unordered: true,
    };
    match engine.backend().open(db, how) {
        Ok(mut connection) => connection.execute(sql, engine.limits()),
        Err(error) => Execution {
            result: Err(error),
            elapsed: Default::default(),
        },
    }
}
