//! Stage VI without an LLM (spec §6, the rule-based fallback): a deterministic template that appends the
//! added table and how it relates to the query's tables to the seed question.

use super::expand::Jcc;
use super::graph::SchemaGraph;

/// `<question>, considering only <anchor> that have a related <table> (where <table>.<col> =
/// <anchor>.<col> and …)?`. Inner-join semantics repeat result rows per matching row: without
/// DISTINCT the question says so, since counts and sums change.
pub fn question(seed: &str, schema: &SchemaGraph, jcc: &Jcc, distinct: bool) -> String {
    let base = seed.trim().trim_end_matches(['?', '.', '!']).trim_end();
    let table = &schema.tables[jcc.candidate];
    let mut anchors: Vec<&str> = Vec::new();
    for (anchor, _) in &jcc.labels {
        let name = schema.tables[*anchor].as_str();
        if !anchors.contains(&name) {
            anchors.push(name);
        }
    }
    let relation = jcc.label_strings().join(" and ");
    let repeat = if distinct {
        String::new()
    } else {
        format!(", counting each matching {table} row separately")
    };
    format!(
        "{base}, considering only {} that have a related {table} (where {relation}){repeat}?",
        anchors.join(" and ")
    )
}
