//! The per-case facts the family metrics read (spec `trustsql.md` B.3-B.5, SQLMorph Table VIII):
//! the gold's shape for the breakdowns, the prediction's schema errors for NER, what the
//! system said it retrieved, and how many of its sampled answers were correct.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sqlparser::ast::Statement;
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

use super::Scoring;
use crate::exec::QueryRunner;
use crate::loaders::{Answer, Case};
use crate::metrics::ex::{self, CaseInput};
use crate::metrics::retrieval::{self, Retrieval};
use crate::metrics::sql2nl::{self, QueryShape, SchemaErrors};
use crate::sqltext;

/// Each table's columns, lowercased, as [`sql2nl::schema_elements`] takes them.
type SchemaColumns = HashMap<String, Vec<String>>;

/// What the family metrics know about one scored case.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Robustness {
    /// The gold's join count and clauses; `None` when it does not parse.
    pub shape: Option<QueryShape>,
    /// Missing and extra tables and columns of the prediction against the gold; `None` without
    /// an answer, or when either side does not parse.
    pub schema_errors: Option<SchemaErrors>,
    /// Retrieval rates of the reply's `retrieved` against the gold; `None` when it reported none.
    pub retrieval: Option<Retrieval>,
    /// `(n, c)`: sampled answers and how many of them were correct; `None` without samples.
    pub samples: Option<(u64, u64)>,
}

/// Collects the facts for a feasible case; `sql` is the executed answer, `samples` and
/// `retrieved` come with it.
pub(super) fn collect(
    scoring: &Scoring,
    input: &CaseInput<'_>,
    main_db: &Path,
    case: &Case,
    answer: (Option<&str>, &[Answer], &[String]),
    runner: &dyn QueryRunner,
) -> Robustness {
    let (sql, samples, retrieved) = answer;
    let gold = case.gold.first().map(String::as_str).unwrap_or_default();
    let columns = scoring.schemas.columns(main_db, runner);
    let schema_errors = match (sql, &columns) {
        (Some(sql), Some(columns)) => errors_of(gold, sql, columns),
        _ => None,
    };
    let retrieval = (!retrieved.is_empty())
        .then(|| retrieval::gold_elements(gold).ok())
        .flatten()
        .map(|gold| retrieval::retrieval(&gold, &retrieval::elements(retrieved)));
    let samples = (!samples.is_empty()).then(|| {
        let correct = samples
            .iter()
            // An abstaining sample answers no feasible question.
            .filter(|sample| match sample {
                Answer::Sql(sql) => {
                    ex::evaluate(scoring.mode, &scoring.mode_options, input, sql, runner).score
                        == 1.0
                }
                Answer::Abstain => false,
            })
            .count();
        (samples.len() as u64, correct as u64)
    });
    Robustness {
        shape: with_parsed(gold, sql2nl::query_shape),
        schema_errors,
        retrieval,
        samples,
    }
}

/// Each database's tables and columns, read once per file.
#[derive(Debug, Default)]
pub struct SchemaCache(Mutex<HashMap<PathBuf, Arc<SchemaColumns>>>);

impl SchemaCache {
    /// The database's tables and columns; `None` when it cannot be read.
    fn columns(&self, db: &Path, runner: &dyn QueryRunner) -> Option<Arc<SchemaColumns>> {
        let mut cache = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(columns) = cache.get(db) {
            return Some(columns.clone());
        }
        let schema = crate::exec::schema::query(runner, db).ok()?;
        let columns: SchemaColumns = schema
            .tables
            .iter()
            .map(|table| {
                let names = table
                    .columns
                    .iter()
                    .map(|c| c.name.to_lowercase())
                    .collect();
                (table.name.to_lowercase(), names)
            })
            .collect();
        let columns = Arc::new(columns);
        cache.insert(db.to_path_buf(), columns.clone());
        Some(columns)
    }
}

fn errors_of(gold: &str, sql: &str, columns: &SchemaColumns) -> Option<SchemaErrors> {
    let gold = with_parsed(gold, |s| sql2nl::schema_elements(s, columns))?;
    let predicted = with_parsed(sql, |s| sql2nl::schema_elements(s, columns))?;
    Some(sql2nl::schema_errors(&gold, &predicted))
}

/// `measure` of the one statement of `sql`, parsed within the bounds of [`sqltext`] (the
/// prediction is untrusted); `None` when it is refused or is not one statement.
fn with_parsed<T: Send>(sql: &str, measure: impl FnOnce(&Statement) -> T + Send) -> Option<T> {
    let checked = sqltext::check(sql).ok()?;
    sqltext::run(checked.depth, || {
        let statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
        match statements.as_slice() {
            [statement] => Some(measure(statement)),
            _ => None,
        }
    })
    .ok()
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untrusted_sql_is_measured_only_when_it_is_one_bounded_statement() {
        let shape = with_parsed("SELECT a FROM t JOIN u ON t.x = u.x", sql2nl::query_shape);
        assert_eq!(shape.map(|s| s.joins), Some(1));
        assert_eq!(with_parsed("SELECT 1; SELECT 2", |_| ()), None);
        assert_eq!(with_parsed("SELEC nothing", |_| ()), None);
        let deep = format!("SELECT {}1{}", "(".repeat(5000), ")".repeat(5000));
        assert_eq!(with_parsed(&deep, |_| ()), None);
    }

    #[test]
    fn schema_errors_compare_prediction_and_gold() {
        let columns = SchemaColumns::from([
            ("t".to_string(), vec!["a".to_string(), "x".to_string()]),
            ("u".to_string(), vec!["x".to_string()]),
        ]);
        let errors = errors_of(
            "SELECT a FROM t",
            "SELECT t.a FROM t JOIN u ON t.x = u.x",
            &columns,
        )
        .unwrap();
        assert_eq!((errors.extra_tables, errors.missing_tables), (1, 0));
        assert_eq!((errors.extra_columns, errors.missing_columns), (2, 0));
        assert_eq!(errors_of("SELECT a FROM t", "DROP", &columns), None);
    }
}
