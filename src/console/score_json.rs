//! `sqlgate score --format json`: `{"summary": {...}, "cases": [{"id", "ex", "error", ...}]}`.

use serde::Serialize;

use sqlgate_eval::scoring::{CaseScore, Summary};

#[derive(Serialize)]
struct Report<'a> {
    summary: &'a Summary,
    cases: &'a [CaseScore],
}

pub fn render(summary: &Summary, cases: &[CaseScore]) -> String {
    let report = Report { summary, cases };
    // Serializing these plain structs cannot fail: every map key is a string.
    serde_json::to_string_pretty(&report).unwrap_or_default()
}
