//! The first rows of a wrong answer's result beside the gold's, for reviewers (the HTML
//! report). Read back from the engine after scoring: both queries ran while the case was
//! scored, and a run executes each distinct query once, so this reads the run's results. For a
//! state case: the first table (or check) whose state differs, the rows the gold's state holds
//! there that the answer's does not beside those the answer's holds that the gold's does not
//! (both scripts run again on scratch copies).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use sqlgate_eval::exec::{QueryRunner, ResultSet, Value};
use sqlgate_eval::loaders::Case;
use sqlgate_eval::metrics::ex::CaseInput;
use sqlgate_eval::metrics::state;
use sqlgate_eval::scoring::CaseDatabases;

/// Rows kept of each result.
pub const ROWS: usize = 5;
/// Columns kept of each result.
const COLUMNS: usize = 12;
/// Characters kept of a cell.
const CELL_CHARS: usize = 80;

/// The first rows of the gold result (its first alternative) and of the predicted one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ResultsPreview {
    /// The gold query's result (a state case's: the rows only the gold's state holds).
    pub gold: RowsPreview,
    /// The predicted query's result (a state case's: the rows only the answer's state holds).
    pub predicted: RowsPreview,
    /// A state case's: the table, view or check whose state differs (`table orders`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_of: Option<String>,
}

/// The first rows of one result, as text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RowsPreview {
    /// The first 12 column names.
    pub columns: Vec<String>,
    /// The first [`ROWS`] rows (of their first 12 columns), each cell as text (`NULL` for
    /// SQL NULL).
    pub rows: Vec<Vec<String>>,
    /// How many rows the result has.
    pub total: usize,
    /// How many columns it has.
    pub width: usize,
}

/// The preview of a wrong answer `sql` to `case`, when both it and the gold ran without error
/// on the database it failed on (`failed_on`, a file name of its folder), else its first one.
pub fn of(
    case: &Case,
    databases: &CaseDatabases,
    failed_on: Option<&str>,
    sql: &str,
    runner: &dyn QueryRunner,
) -> Option<ResultsPreview> {
    let named = |db: &&PathBuf| failed_on.is_some_and(|name| db.file_name() == Some(name.as_ref()));
    let db = (databases.evaluated.iter().find(named))
        .or(databases.evaluated.first())
        .unwrap_or(&databases.main);
    if let Some(task) = &case.state {
        let files = [db.clone()];
        let input = CaseInput {
            gold: &case.gold,
            question: &case.question,
            category: None,
            db: &case.db,
            db_files: &files,
            tied: &[],
            ignore_order: None,
        };
        let found = state::difference(&input, task, sql, runner)?;
        let side = |(columns, rows): (Vec<String>, Vec<Vec<Value>>)| {
            let result = ResultSet {
                columns,
                rows,
                lossy_text: false,
            };
            self::rows(&result)
        };
        return Some(ResultsPreview {
            gold: side(found.gold),
            predicted: side(found.answer),
            state_of: Some(found.object),
        });
    }
    let gold = runner.gold(db, case.gold.first()?).result.ok()?;
    let predicted = runner.pred(db, sql).result.ok()?;
    Some(ResultsPreview {
        gold: rows(&gold),
        predicted: rows(&predicted),
        state_of: None,
    })
}

fn rows(result: &ResultSet) -> RowsPreview {
    RowsPreview {
        columns: result.columns.iter().take(COLUMNS).cloned().collect(),
        rows: result
            .rows
            .iter()
            .take(ROWS)
            .map(|row| row.iter().take(COLUMNS).map(cell).collect())
            .collect(),
        total: result.rows.len(),
        width: result.columns.len(),
    }
}

fn cell(value: &Value) -> String {
    let text = match value {
        Value::Null => "NULL".to_string(),
        Value::Int(n) => n.to_string(),
        Value::Real(x) => x.to_string(),
        Value::Text(text) => text.clone(),
        Value::Blob(bytes) => format!("<blob of {} bytes>", bytes.len()),
    };
    if text.chars().count() > CELL_CHARS {
        let kept: String = text.chars().take(CELL_CHARS - 1).collect();
        format!("{kept}…")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preview_keeps_the_first_rows_and_counts_the_rest() {
        let result = ResultSet {
            columns: vec!["a".into(), "b".into()],
            rows: (0..8).map(|i| vec![Value::Int(i), Value::Null]).collect(),
            lossy_text: false,
        };
        let preview = rows(&result);
        assert_eq!(preview.rows.len(), ROWS);
        assert_eq!(preview.total, 8);
        assert_eq!(preview.rows[1], vec!["1".to_string(), "NULL".to_string()]);
        assert_eq!(
            cell(&Value::Text("x".repeat(200))).chars().count(),
            CELL_CHARS
        );
    }
}
