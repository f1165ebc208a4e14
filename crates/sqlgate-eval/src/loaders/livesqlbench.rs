//! LiveSQLBench's task files (bird-bench's JSON lines, its SQLite instances): each line an
//! `instance_id`, the `selected_database`, the question (`query`), `preprocess_sql`, the
//! solution statements `sol_sql`, `clean_up_sql`, a `category` ("Query" or "Management") and
//! `test_cases`, Python functions. A management task, and a query task that needs setup, is a
//! state case ([`crate::metrics::state`]): its setup is `preprocess_sql`, its gold the solution
//! statements. `clean_up_sql` has nothing to do, as every script runs on a scratch copy that is
//! reset. The Python test cases are run only when the suite opts in (every task that has them
//! is then judged by them: [`crate::metrics::state::python`]); otherwise each case is judged by
//! its state (or, for a query task, by its result), and its tags say so (`judged_by`,
//! `test_cases`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{json_id, json_message, Case, SourceRef};
use crate::error::InputError;
use crate::metrics::state::StateTask;

#[derive(Deserialize)]
struct Task {
    instance_id: serde_json::Value,
    #[serde(alias = "db_id")]
    selected_database: String,
    query: String,
    #[serde(default)]
    preprocess_sql: Vec<String>,
    sol_sql: Vec<String>,
    #[serde(default)]
    clean_up_sql: Vec<String>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    test_cases: Vec<String>,
    #[serde(default)]
    external_knowledge: Option<serde_json::Value>,
}

/// Whether a JSON-lines file is LiveSQLBench's: its first record has `instance_id` and
/// `sol_sql`.
pub(super) fn detect(text: &str) -> bool {
    let Some(first) = text.lines().find(|line| !line.trim().is_empty()) else {
        return false;
    };
    serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(first)
        .is_ok_and(|record| record.contains_key("instance_id") && record.contains_key("sol_sql"))
}

/// Loads the tasks, one per non-blank line; with `python_tests`, a task's test cases judge it.
pub(super) fn load(path: &Path, text: &str, python_tests: bool) -> Result<Vec<Case>, InputError> {
    let mut cases = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let source = SourceRef {
            file: PathBuf::from(path),
            record: cases.len(),
            line: Some(index + 1),
        };
        let task: Task = serde_json::from_str(line)
            .map_err(|e| source.error(format!("column {}: {}", e.column(), json_message(&e))))?;
        cases.push(to_case(task, source, python_tests)?);
    }
    Ok(cases)
}

fn to_case(task: Task, source: SourceRef, python_tests: bool) -> Result<Case, InputError> {
    let Some(id) = json_id(&task.instance_id) else {
        return Err(source.error("`instance_id` must be a string or an integer"));
    };
    let problem = |message: &str| source.error(format!("task `{id}`: {message}"));
    let statements = |list: &[String]| -> Vec<String> {
        list.iter()
            .map(|sql| sql.trim().trim_end_matches(';').trim().to_string())
            .filter(|sql| !sql.is_empty())
            .collect()
    };
    let solution = statements(&task.sol_sql);
    if solution.is_empty() {
        return Err(problem("`sol_sql` holds no statement"));
    }
    let setup = statements(&task.preprocess_sql);
    let category = task.category.unwrap_or_default();
    let management = category.eq_ignore_ascii_case("management");
    let mut tags = BTreeMap::from([("category".to_string(), category)]);
    if !task.test_cases.is_empty() {
        tags.insert("test_cases".into(), task.test_cases.len().to_string());
    }
    if !statements(&task.clean_up_sql).is_empty() {
        tags.insert(
            "clean_up_sql".into(),
            "not needed: scratch copies are reset".into(),
        );
    }
    let tested = python_tests && !task.test_cases.is_empty();
    let state =
        (tested || management || !setup.is_empty() || solution.len() > 1).then(|| StateTask {
            setup,
            checks: Vec::new(),
            tests: if tested {
                task.test_cases.clone()
            } else {
                Vec::new()
            },
        });
    let judged_by = match (&state, task.test_cases.is_empty(), tested) {
        (_, _, true) => "its Python test cases",
        (Some(_), true, _) => "state",
        (Some(_), false, _) => "state (its Python test cases are not run)",
        (None, true, _) => "result",
        (None, false, _) => "result (its Python test cases are not run)",
    };
    tags.insert("judged_by".into(), judged_by.into());
    let evidence = match task.external_knowledge {
        Some(serde_json::Value::String(text)) if !text.trim().is_empty() => Some(text),
        Some(serde_json::Value::Array(items)) if !items.is_empty() => Some(
            items
                .iter()
                .map(|item| match item {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    };
    Ok(Case {
        id,
        db: task.selected_database,
        db_file: None,
        cs: None,
        question: task.query,
        evidence,
        gold: vec![solution.join(";\n")],
        feasible: true,
        tags,
        state,
        source,
    })
}
