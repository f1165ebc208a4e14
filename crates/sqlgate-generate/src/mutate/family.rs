//! The `errors` family: every gold query's single-error mutants written as a suite, in which the
//! gold stays the original and the mutant is the prediction (how SQLMorph calibrates metrics).
//! A state case's gold statements get the DML mutants of [`super::dml`] instead, written as
//! state cases. `sqlgate score` and `sqlgate test` (with a `replay` system) then run it like any
//! benchmark.

use std::collections::HashMap;
use std::path::Path;

use serde_json::json;

use super::dml::{dml_mutants, DmlMutant};
use super::{mutants_to_depth, Mutant};
use sqlgate_eval::error::{InputError, OutputError};
use sqlgate_eval::files::write_atomically;
use sqlgate_eval::loaders::Benchmark;
use sqlgate_eval::metrics::state::script;
use sqlgate_eval::spider::Schema;

/// The generated suite: native cases and the mutant predictions, in the same order.
pub struct ErrorsFamily {
    /// Each mutant with the index of its case in the benchmark.
    pub mutants: Vec<(usize, Mutant)>,
    /// Each DML mutant of a state case's statements, with the index of its case.
    pub dml: Vec<(usize, DmlMutant)>,
    /// Gold queries the SQL parser could not read, by case id.
    pub unparsed: Vec<String>,
}

/// Mutants of every feasible case's first gold query, depth 1 to `depth` (a state case's: one
/// DML error at a time), deterministic for a seed. A state case's database is read for its
/// tables and columns.
pub fn errors_family(
    bench: &Benchmark,
    seed: u64,
    depth: usize,
) -> Result<ErrorsFamily, InputError> {
    let mut family = ErrorsFamily {
        mutants: Vec::new(),
        dml: Vec::new(),
        unparsed: Vec::new(),
    };
    let mut tables: HashMap<String, Vec<(String, Vec<String>)>> = HashMap::new();
    for (index, case) in bench.cases.iter().enumerate() {
        let Some(gold) = case.gold.first().filter(|_| case.feasible) else {
            continue;
        };
        if case.state.is_some() {
            let Ok(statements) = script::split(gold) else {
                family.unparsed.push(case.id.clone());
                continue;
            };
            if !tables.contains_key(&case.db) {
                let file = bench.db_files(case, false)?.remove(0);
                let schema = Schema::from_sqlite(&*bench.backend, file)?;
                let found = schema
                    .tables()
                    .iter()
                    .map(|t| (t.name.clone(), t.columns.clone()))
                    .collect();
                tables.insert(case.db.clone(), found);
            }
            let texts: Vec<String> = statements.into_iter().map(|s| s.text).collect();
            family.dml.extend(
                dml_mutants(&case.id, &texts, &tables[&case.db], seed)
                    .into_iter()
                    .map(|m| (index, m)),
            );
            continue;
        }
        match mutants_to_depth(&case.id, gold, depth, seed) {
            Ok(found) => family
                .mutants
                .extend(found.mutants.into_iter().map(|m| (index, m))),
            Err(_) => family.unparsed.push(case.id.clone()),
        }
    }
    Ok(family)
}

/// `<seed id>::errors::<op>[+<op>...]`, so a test is named `<suite>::<db>::<seed>::errors::<ops>`.
fn mutant_id(mutant: &Mutant) -> String {
    let ops: Vec<String> = mutant.ops.iter().map(|op| op.to_string()).collect();
    format!("{}::errors::{}", mutant.seed_id, ops.join("+"))
}

/// Writes `suite.toml`, `cases.jsonl` and `predictions.jsonl` into `out`.
pub fn write(
    out: &Path,
    name: &str,
    bench: &Benchmark,
    family: &ErrorsFamily,
) -> Result<(), OutputError> {
    let mut cases = String::new();
    let mut predictions = String::new();
    for (index, mutant) in &family.mutants {
        let case = &bench.cases[*index];
        let id = mutant_id(mutant);
        let ops: Vec<String> = mutant.ops.iter().map(|op| op.to_string()).collect();
        let mut tags = case.tags.clone();
        tags.insert("family".into(), "errors".into());
        tags.insert("seed".into(), case.id.clone());
        tags.insert("operator".into(), ops.join("+"));
        tags.insert("depth".into(), ops.len().to_string());
        cases.push_str(&json!({"id": id, "db": case.db, "question": case.question, "gold": case.gold, "tags": tags}).to_string());
        cases.push('\n');
        predictions.push_str(&json!({"id": id, "sql": mutant.sql}).to_string());
        predictions.push('\n');
    }
    for (index, mutant) in &family.dml {
        let case = &bench.cases[*index];
        let Some(task) = &case.state else { continue };
        // A script of several statements names the one changed.
        let several = case
            .gold
            .first()
            .is_some_and(|gold| script::split(gold).is_ok_and(|statements| statements.len() > 1));
        let id = match several {
            true => format!(
                "{}::errors::{}_{}",
                case.id, mutant.operator, mutant.statement
            ),
            false => format!("{}::errors::{}", case.id, mutant.operator),
        };
        let mut tags = case.tags.clone();
        tags.insert("family".into(), "errors".into());
        tags.insert("seed".into(), case.id.clone());
        tags.insert("operator".into(), mutant.operator.into());
        tags.insert("depth".into(), "1".into());
        tags.insert("statement".into(), mutant.statement.to_string());
        cases.push_str(
            &json!({"id": id, "db": case.db, "type": "state", "question": case.question,
                    "gold": case.gold, "setup": task.setup, "checks": task.checks, "tags": tags})
            .to_string(),
        );
        cases.push('\n');
        predictions.push_str(&json!({"id": id, "sql": mutant.script}).to_string());
        predictions.push('\n');
    }
    let header = "gold = the original query, prediction = its mutant";
    write_suite(
        out,
        name,
        bench,
        "errors",
        header,
        &cases,
        &[("predictions.jsonl", &predictions)],
    )
}

/// Writes a generated native suite into `out`: `suite.toml` (its databases are the source
/// benchmark's, by a relative path), `cases.jsonl`, and any other files.
pub fn write_suite(
    out: &Path,
    name: &str,
    bench: &Benchmark,
    generator: &str,
    about: &str,
    cases: &str,
    others: &[(&str, &str)],
) -> Result<(), OutputError> {
    std::fs::create_dir_all(out).map_err(|e| OutputError::new(out, e))?;
    let absolute = |path: &Path| std::path::absolute(path).map_err(|e| OutputError::new(path, e));
    let db_dir =
        pathdiff::diff_paths(absolute(&bench.db_dir)?, absolute(out)?).ok_or_else(|| {
            let problem = "cannot express the database folder relative to the output";
            OutputError::new(out, std::io::Error::other(problem))
        })?;
    let manifest = format!(
        "# Generated by `sqlgate generate {generator}`: {about}.\nname = {}\ncases = \"cases.jsonl\"\ndb_dir = {}\n",
        toml_string(name),
        toml_string(&db_dir.to_string_lossy())
    );
    write_atomically(&out.join("cases.jsonl"), cases.as_bytes())?;
    for (file, content) in others {
        write_atomically(&out.join(file), content.as_bytes())?;
    }
    write_atomically(&out.join("suite.toml"), manifest.as_bytes())
}

fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}
