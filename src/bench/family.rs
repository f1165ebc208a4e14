//! Generated mutant families (`sqlgate generate jqe`, ...) as cases of the suite they came from:
//! a JSONL file, one mutant per line with at least `id`, `seed_id`, `db`, `sql`, `question`
//! (and optionally `evidence`); other fields are the generator's and are kept out of the case.
//! A mutant's id is `<seed-id>::<family>::<mutant-id>`, so its test is named
//! `<suite>::<db>::<seed-id>::<family>::<mutant-id>`.

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

/// The mutants of `family` in `path`, as feasible cases whose gold is the mutant SQL.
pub fn load_family(path: &Path, family: &str) -> Result<Vec<Case>, InputError> {
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
            InputError::file(path, e.to_string())
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
