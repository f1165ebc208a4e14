//! sqlgate's native suite: a TOML manifest naming a JSONL file of cases and, optionally,
//! databases built from the suite's own SQL scripts.

use crate::exec::Backend;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Deserialize;
use toml::Spanned;

use super::databases::{self, BuildScript, DatabaseBuild};
use super::{json_kind, json_message, parent_folder, read_text, Case, SourceRef, Suite};
use crate::error::InputError;
use crate::metrics::state::StateTask;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    name: String,
    cases: Spanned<String>,
    db_dir: Option<String>,
    #[serde(default)]
    databases: BTreeMap<String, DatabaseSpec>,
    /// Join keys per database (`"orders.customer_id = customers.customer_id"`), for JQE: they
    /// replace key inference where a database declares no foreign key.
    #[serde(default)]
    join_keys: BTreeMap<String, Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DatabaseSpec {
    scripts: Spanned<Vec<String>>,
}

/// One line of the cases file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeCase {
    id: String,
    db: String,
    question: String,
    #[serde(default)]
    evidence: Option<String>,
    /// A string or a list of strings; checked by `gold_queries` for a precise message.
    #[serde(default)]
    gold: Option<serde_json::Value>,
    #[serde(rename = "type", default)]
    kind: CaseKind,
    /// A state case's statements run before each script: a string or a list of strings.
    #[serde(default)]
    setup: Option<serde_json::Value>,
    /// A state case's queries compared between the two states.
    #[serde(default)]
    checks: Option<serde_json::Value>,
    #[serde(default)]
    tags: BTreeMap<String, String>,
}

#[derive(Deserialize, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum CaseKind {
    #[default]
    Feasible,
    Infeasible,
    /// Judged by the state its statements leave ([`crate::metrics::state`]).
    State,
}

/// Loads a manifest and its cases, building its declared databases when missing or stale.
pub(super) fn load(
    path: &Path,
    text: &str,
    db_dir_override: Option<&Path>,
    backend: &dyn Backend,
) -> Result<Suite, InputError> {
    let manifest: Manifest = toml::from_str(text).map_err(|e| toml_error(path, text, &e))?;
    let folder = parent_folder(path);
    let own_db_dir = match &manifest.db_dir {
        Some(dir) => folder.join(dir),
        None => folder.clone(),
    };
    // The suite builds its databases into its own folder only: a folder given instead (a
    // distilled test suite) is read, never written into.
    let db_dir = db_dir_override.map_or_else(|| own_db_dir.clone(), Path::to_path_buf);
    let builds_here = db_dir == own_db_dir || same_folder(&db_dir, &own_db_dir);
    let builds = database_builds(path, text, &folder, &manifest)?;
    let cases_path = folder.join(manifest.cases.get_ref());
    if !cases_path.is_file() {
        let line = line_of(text, manifest.cases.span().start);
        return Err(InputError::file(
            path,
            format!("cases file {} not found", cases_path.display()),
        )
        .at_line(line));
    }
    let cases = load_cases(&cases_path, &read_text(&cases_path)?)?;
    if builds_here {
        for build in &builds {
            databases::build_if_stale(&db_dir, build, backend)?;
        }
    }
    Ok(Suite {
        name: manifest.name,
        cases,
        db_dir,
        join_keys: manifest.join_keys,
    })
}

/// Whether `a` and `b` name the same existing folder (through links and `..`).
fn same_folder(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The manifest's `[databases.X]` tables, with script paths resolved and checked.
fn database_builds(
    path: &Path,
    text: &str,
    folder: &Path,
    manifest: &Manifest,
) -> Result<Vec<DatabaseBuild>, InputError> {
    let mut builds = Vec::new();
    for (name, spec) in &manifest.databases {
        let line = line_of(text, spec.scripts.span().start);
        let problem = |message: String| {
            InputError::file(path, format!("[databases.{name}]: {message}")).at_line(line)
        };
        if name.is_empty() || name.contains(['/', '\\', '\0']) || name == "." || name == ".." {
            return Err(problem("the database name must be a plain name".into()));
        }
        if spec.scripts.get_ref().is_empty() {
            return Err(problem("`scripts` lists no script".into()));
        }
        let mut scripts = Vec::new();
        for written in spec.scripts.get_ref() {
            let script_path = folder.join(written);
            if !script_path.is_file() {
                return Err(problem(format!(
                    "script {} not found",
                    script_path.display()
                )));
            }
            scripts.push(BuildScript {
                written: written.clone(),
                path: script_path,
            });
        }
        builds.push(DatabaseBuild {
            name: name.clone(),
            scripts,
        });
    }
    Ok(builds)
}

/// A TOML error at its line, with the column in the message.
fn toml_error(path: &Path, text: &str, error: &toml::de::Error) -> InputError {
    let message = error.message().trim_end().to_string();
    match error.span() {
        Some(span) => {
            let start = span.start.min(text.len());
            let line_start = text.as_bytes()[..start]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |at| at + 1);
            let column = 1 + text.get(line_start..start).map_or(0, |s| s.chars().count());
            let line = line_of(text, start);
            InputError::file(path, format!("column {column}: {message}")).at_line(line)
        }
        None => InputError::file(path, message),
    }
}

/// The 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    1 + text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// Parses the JSONL cases file; blank lines are skipped but count for line numbers.
pub(super) fn load_cases(path: &Path, text: &str) -> Result<Vec<Case>, InputError> {
    let records: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .collect();
    // Records parse in parallel; the first error in file order is the one reported.
    let parsed: Vec<Result<Case, InputError>> = records
        .par_iter()
        .enumerate()
        .map(|(record, &(index, line))| {
            let source = SourceRef {
                file: PathBuf::from(path),
                record,
                line: Some(index + 1),
            };
            let parsed: NativeCase = serde_json::from_str(line).map_err(|e| {
                source.error(format!("column {}: {}", e.column(), json_message(&e)))
            })?;
            to_case(parsed, source)
        })
        .collect();
    parsed.into_iter().collect()
}

fn to_case(record: NativeCase, source: SourceRef) -> Result<Case, InputError> {
    let problem = |message: String| source.error(format!("case `{}`: {message}", record.id));
    if record.id.trim().is_empty() {
        return Err(source.error("`id` is empty"));
    }
    if record.db.trim().is_empty() {
        return Err(problem("`db` is empty".into()));
    }
    let feasible = record.kind != CaseKind::Infeasible;
    let state = match record.kind {
        CaseKind::State => Some(StateTask {
            tests: Vec::new(),
            setup: match &record.setup {
                Some(value) => statement_list(value, "setup").map_err(problem)?,
                None => Vec::new(),
            },
            checks: match &record.checks {
                Some(value) => statement_list(value, "checks").map_err(problem)?,
                None => Vec::new(),
            },
        }),
        _ if record.setup.is_some() || record.checks.is_some() => {
            return Err(problem(
                "`setup` and `checks` belong to a state case (`\"type\": \"state\"`)".into(),
            ))
        }
        _ => None,
    };
    let gold = match (&record.gold, feasible) {
        (None, true) => return Err(problem("`gold` is required for a feasible case".into())),
        (Some(_), false) => {
            return Err(problem(
                "an infeasible case must not have `gold` (remove it, or drop `\"type\": \"infeasible\"`)"
                    .into(),
            ))
        }
        (None, false) => Vec::new(),
        (Some(value), true) => gold_queries(value).map_err(problem)?,
    };
    Ok(Case {
        id: record.id,
        db: record.db,
        db_file: None,
        cs: None,
        question: record.question,
        evidence: record.evidence.filter(|e| !e.trim().is_empty()),
        gold,
        feasible,
        tags: record.tags,
        source,
        state,
    })
}

/// A state case's `setup` or `checks`: a string or a list of non-blank strings.
fn statement_list(value: &serde_json::Value, field: &str) -> Result<Vec<String>, String> {
    let items = string_list(value, field)?;
    if items.iter().any(|sql| sql.trim().is_empty()) {
        return Err(format!("`{field}` holds an empty statement"));
    }
    Ok(items)
}

/// `field`'s value: one string, or a list of strings.
fn string_list(value: &serde_json::Value, field: &str) -> Result<Vec<String>, String> {
    match value {
        serde_json::Value::String(sql) => Ok(vec![sql.clone()]),
        serde_json::Value::Array(items) => items
            .iter()
            .map(|item| match item {
                serde_json::Value::String(sql) => Ok(sql.clone()),
                other => Err(format!(
                    "`{field}` must list strings, found {}",
                    json_kind(other)
                )),
            })
            .collect(),
        other => Err(format!(
            "`{field}` must be a string or a list of strings, found {}",
            json_kind(other)
        )),
    }
}

/// `gold` as a non-empty list of non-blank queries.
fn gold_queries(value: &serde_json::Value) -> Result<Vec<String>, String> {
    let queries = string_list(value, "gold")?;
    if queries.is_empty() {
        return Err("`gold` lists no query".into());
    }
    if queries.iter().any(|sql| sql.trim().is_empty()) {
        return Err("`gold` holds an empty query".into());
    }
    Ok(queries)
}
