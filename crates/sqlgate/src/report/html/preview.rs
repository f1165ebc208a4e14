//! A wrong answer's first result rows beside the gold's, cells that differ at the same place
//! marked (a visual aid: EX's own comparison may ignore row order or column order), or why
//! there are none.

use serde::Serialize;

use crate::gate::judge::CaseRun;
use crate::gate::preview::{ResultsPreview, RowsPreview};
use crate::gate::TestResult;

/// The two results, row by row.
#[derive(Debug, Serialize)]
pub struct PreviewView {
    gold_columns: Vec<String>,
    predicted_columns: Vec<String>,
    rows: Vec<(Vec<Cell>, Vec<Cell>)>,
    gold_total: String,
    predicted_total: String,
    /// A state case's table, view or check whose state differs.
    state_of: Option<String>,
}

#[derive(Debug, Serialize)]
struct Cell {
    text: String,
    differs: bool,
}

pub(super) fn view(preview: &ResultsPreview) -> PreviewView {
    let (gold, predicted) = (&preview.gold, &preview.predicted);
    let height = gold.rows.len().max(predicted.rows.len());
    let cells = |side: &RowsPreview, other: &RowsPreview, at: usize| -> Vec<Cell> {
        let Some(row) = side.rows.get(at) else {
            return Vec::new();
        };
        let counterpart = other.rows.get(at);
        row.iter()
            .enumerate()
            .map(|(column, text)| Cell {
                text: text.clone(),
                differs: counterpart.and_then(|r| r.get(column)) != Some(text),
            })
            .collect()
    };
    PreviewView {
        gold_columns: gold.columns.clone(),
        predicted_columns: predicted.columns.clone(),
        rows: (0..height)
            .map(|at| (cells(gold, predicted, at), cells(predicted, gold, at)))
            .collect(),
        gold_total: size(gold),
        predicted_total: size(predicted),
        state_of: preview.state_of.clone(),
    }
}

fn size(rows: &RowsPreview) -> String {
    format!(
        "{} row{} × {} column{}",
        rows.total,
        if rows.total == 1 { "" } else { "s" },
        rows.width,
        if rows.width == 1 { "" } else { "s" }
    )
}

/// Why a case shows no result rows (read only when it has none).
pub(super) fn absent_note(result: &TestResult, run: Option<&CaseRun>) -> &'static str {
    match run {
        None if result.verdict.is_none() => "the case was not run",
        None => "the run holds no evaluation of this case",
        Some(run) if run.correct() => "result rows are shown for wrong answers only",
        Some(run) if !run.score.feasible => "an infeasible question has no gold result",
        Some(run) if run.score.sql.is_none() => {
            "no predicted SQL ran: there are no rows to compare"
        }
        Some(run) if run.score.error.is_some() => {
            "the predicted or the gold SQL failed (see the error): there are no rows to compare"
        }
        Some(_) => {
            "result rows were not kept for this case: its verdict comes from a run record or \
             cache written by an earlier sqlgate"
        }
    }
}
