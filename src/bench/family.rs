//! Generated mutant families (`sqlgate generate jqe`, ...) as cases of the suite they came from:
//! a JSONL file, one mutant per line with at least `id`, `seed_id`, `db`, `sql`, `question`
//! (and optionally `evidence`); other fields are the generator's and are kept out of the case.
//! A mutant's id is `<seed-id>::<family>::<mutant-id>`, so its test is named
//! `<suite>::<db>::<seed-id>::<family>::<mutant-id>`.
//!
//! A mutant may run on its own copy of its database (`generate tqa`'s renamed clones):
//! `db_script` names an SQL script, relative to the family file, that turns a copy of `db` into
//! that database; the loader builds it into `build/<script stem>.sqlite` beside the family file
//! (rebuilt only when the script or the original changes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{databases, Benchmark, Case, SourceRef};
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
    #[serde(default)]
    db_script: Option<PathBuf>,
}

/// The mutants of `family` in `path`, as feasible cases of `bench` whose gold is the mutant SQL.
pub fn load_family(path: &Path, family: &str, bench: &Benchmark) -> Result<Vec<Case>, InputError> {
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
        let mut case = Case {
            id,
            db: mutant.db,
            db_file: None,
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
        };
        if let Some(script) = &mutant.db_script {
            case.db_file = Some(clone_of(bench, &case, path, script)?);
        }
        cases.push(case);
    }
    Ok(cases)
}

/// Builds (when stale) the copy of the case's database that `script` changes.
fn clone_of(
    bench: &Benchmark,
    case: &Case,
    family: &Path,
    script: &Path,
) -> Result<PathBuf, InputError> {
    let plain = |p: &Path| {
        p.components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
    };
    if !plain(script) || script.file_stem().is_none() {
        return Err(case.source.error(format!(
            "db_script `{}` must be a relative path inside the family's folder",
            script.display()
        )));
    }
    let folder = family.parent().unwrap_or(Path::new("."));
    let original = databases::resolve(&bench.db_dir, case)?;
    let stem = script.file_stem().unwrap_or_default().to_string_lossy();
    let target = folder.join("build").join(format!("{stem}.sqlite"));
    databases::build_clone_if_stale(&original, &folder.join(script), &target)
        .map_err(|e| case.source.error(format!("db_script: {e}")))?;
    Ok(target)
}
