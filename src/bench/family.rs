//! Generated families as cases of the suite they came from, in either shape a generator writes:
//! - a JSONL file (`generate jqe`), one mutant per line with at least `id`, `seed_id`, `db`,
//!   `sql`, `question` (and optionally `evidence`); other fields are the generator's and are kept
//!   out of the case. A mutant's id is `<seed-id>::<family>::<mutant-id>`, so its test is named
//!   `<suite>::<db>::<seed-id>::<family>::<mutant-id>`;
//! - a generated suite (`generate errors`, `generate infeasible`): its folder or its
//!   `suite.toml`. Its cases keep their ids and tags and are tagged with the family.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{Case, SourceRef};
use crate::error::InputError;

#[derive(Deserialize)]
struct Mutant {
    id: String,
    seed_id: String,
    db: String,
    sql: String,
    question: String,
    #[serde(default)]
    evidence: Option<String>,
}

/// The cases of `family` in `path`: a generated suite's cases, or the mutants of a JSONL file
/// as feasible cases whose gold is the mutant SQL.
pub fn load_family(path: &Path, family: &str) -> Result<Vec<Case>, InputError> {
    let manifest = if path.is_dir() {
        Some(path.join("suite.toml"))
    } else {
        (path.extension().is_some_and(|e| e == "toml")).then(|| path.to_path_buf())
    };
    match manifest {
        Some(manifest) => load_suite_family(&manifest, family),
        None => load_mutants(path, family),
    }
}

fn load_suite_family(manifest: &Path, family: &str) -> Result<Vec<Case>, InputError> {
    let suite = super::load(manifest, &super::LoadOptions::default())?;
    Ok(suite
        .cases
        .into_iter()
        .map(|mut case| {
            case.tags.insert("family".to_string(), family.to_string());
            case
        })
        .collect())
}

fn load_mutants(path: &Path, family: &str) -> Result<Vec<Case>, InputError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::file(path, format!("cannot read the {family} family: {e}")))?;
    let mut cases = Vec::new();
    for (index, (line_number, line)) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .enumerate()
    {
        let mutant: Mutant = serde_json::from_str(line).map_err(|e| {
            let generated_suite = path.with_file_name("suite.toml");
            let hint = if generated_suite.is_file() {
                format!(
                    " (this looks like a generated suite's cases: name its folder or {} in `families`)",
                    generated_suite.display()
                )
            } else {
                String::new()
            };
            InputError::file(path, format!("{e}{hint}"))
                .at_record(index)
                .at_line(line_number + 1)
        })?;
        let marker = format!("{}::{family}::", mutant.seed_id);
        let id = if mutant.id.starts_with(&marker) {
            mutant.id
        } else {
            format!("{marker}{}", mutant.id)
        };
        let tags = BTreeMap::from([
            ("family".to_string(), family.to_string()),
            ("seed".to_string(), mutant.seed_id),
        ]);
        cases.push(Case {
            id,
            db: mutant.db,
            question: mutant.question,
            evidence: mutant.evidence,
            gold: vec![mutant.sql],
            feasible: true,
            tags,
            source: SourceRef {
                file: path.to_path_buf(),
                record: index,
                line: Some(line_number + 1),
            },
        });
    }
    Ok(cases)
}
