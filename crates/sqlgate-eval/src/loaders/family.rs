//! Generated families as cases of the suite they came from, in either shape a generator writes:
//! - a JSONL file (`generate jqe`, `generate tqa`, `generate paraphrase`), one mutant per line
//!   with at least `id`, `seed_id`, `db`, `sql` (a query, or a list of equally correct ones),
//!   `question` (and optionally `evidence`). Of the generator's own fields, those the family
//!   metrics read are kept: `cs` (the variant's similarity to its seed, on the case), `setting`
//!   (TQA's O/O, L/O, O/L, L/L) and `method` (as tags); others stay out of the case. A mutant's
//!   id is
//!   `<seed-id>::<family>::<mutant-id>`, so its test is named
//!   `<suite>::<db>::<seed-id>::<family>::<mutant-id>`;
//! - a generated suite (`generate errors`, `generate infeasible`): its folder or its
//!   `suite.toml`. Its cases keep their ids and tags and are tagged with the family.
//!
//! A mutant may run on its own copy of its database (`generate tqa`'s renamed clones):
//! `db_script` names an SQL script, relative to the family file, that turns a copy of `db` into
//! that database; the loader builds it into `build/<script stem>.sqlite` beside the family file
//! (rebuilt only when the script or the original changes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{databases, Benchmark, Case, SourceRef};
use crate::error::{check_printable, InputError};

#[derive(Deserialize)]
struct Mutant {
    id: String,
    seed_id: String,
    db: String,
    sql: GoldSql,
    question: String,
    #[serde(default)]
    evidence: Option<String>,
    #[serde(default)]
    db_script: Option<PathBuf>,
    #[serde(default)]
    cs: Option<f64>,
    #[serde(default)]
    setting: Option<String>,
    #[serde(default)]
    method: Option<String>,
}

/// The gold of a mutant: one query, or several equally correct ones (a paraphrase of a Defog
/// question keeps all of its gold queries).
#[derive(Deserialize)]
#[serde(untagged)]
enum GoldSql {
    One(String),
    Several(Vec<String>),
}

/// The cases of `family` in `path`: a generated suite's cases, or the mutants of a JSONL file
/// as feasible cases of `bench` whose gold is the mutant SQL.
pub fn load_family(path: &Path, family: &str, bench: &Benchmark) -> Result<Vec<Case>, InputError> {
    check_printable("family name", family)
        .map_err(|problem| InputError::file(path, problem.to_string()))?;
    let manifest = if path.is_dir() {
        Some(path.join("suite.toml"))
    } else {
        (path.extension().is_some_and(|e| e == "toml")).then(|| path.to_path_buf())
    };
    match manifest {
        Some(manifest) => load_suite_family(&manifest, family, bench),
        None => load_mutants(path, family, bench),
    }
}

fn load_suite_family(
    manifest: &Path,
    family: &str,
    bench: &Benchmark,
) -> Result<Vec<Case>, InputError> {
    let suite = super::load(manifest, &super::LoadOptions::on(bench.backend.clone()))?;
    Ok(suite
        .cases
        .into_iter()
        .map(|mut case| {
            case.tags.insert("family".to_string(), family.to_string());
            case
        })
        .collect())
}

fn load_mutants(path: &Path, family: &str, bench: &Benchmark) -> Result<Vec<Case>, InputError> {
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
        let gold = match mutant.sql {
            GoldSql::One(sql) => vec![sql],
            GoldSql::Several(list) if !list.is_empty() => list,
            GoldSql::Several(_) => {
                return Err(InputError::file(path, "`sql` is an empty list")
                    .at_record(index)
                    .at_line(line_number + 1))
            }
        };
        let marker = format!("{}::{family}::", mutant.seed_id);
        let id = if mutant.id.starts_with(&marker) {
            mutant.id
        } else {
            format!("{marker}{}", mutant.id)
        };
        let mut tags = BTreeMap::from([
            ("family".to_string(), family.to_string()),
            ("seed".to_string(), mutant.seed_id),
        ]);
        tags.extend(mutant.setting.map(|s| ("setting".to_string(), s)));
        tags.extend(mutant.method.map(|m| ("method".to_string(), m)));
        let source = SourceRef {
            file: path.to_path_buf(),
            record: index,
            line: Some(line_number + 1),
        };
        if let Some(cs) = mutant.cs.filter(|cs| !(0.0..=1.0).contains(cs)) {
            return Err(source.error(format!(
                "`cs` must be a similarity between 0 and 1, got {cs}"
            )));
        }
        let mut case = Case {
            id,
            db: mutant.db,
            db_file: None,
            cs: mutant.cs,
            question: mutant.question,
            evidence: mutant.evidence,
            gold,
            feasible: true,
            tags,
            source,
            state: None,
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
    let original = databases::resolve(&bench.db_dir, case, bench.extension())?;
    let stem = script.file_stem().unwrap_or_default().to_string_lossy();
    let target = folder
        .join("build")
        .join(format!("{stem}.{}", bench.extension()));
    databases::build_clone_if_stale(&original, &folder.join(script), &target, &*bench.backend)
        .map_err(|e| case.source.error(format!("db_script: {e}")))?;
    Ok(target)
}
