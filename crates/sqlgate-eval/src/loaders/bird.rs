//! BIRD `dev.json` (and mini-dev's `mini_dev_sqlite.json`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{json_id, json_record, parse_json_records, Case, SourceRef};
use crate::error::InputError;

#[derive(Deserialize)]
struct BirdRecord {
    question_id: serde_json::Value,
    db_id: String,
    question: String,
    #[serde(default)]
    evidence: Option<String>,
    #[serde(rename = "SQL")]
    sql: String,
    #[serde(default)]
    difficulty: Option<String>,
}

/// Loads BIRD records; ids are their `question_id`s, `difficulty` becomes a tag.
pub(super) fn load(path: &Path, text: &str) -> Result<Vec<Case>, InputError> {
    let records = parse_json_records(path, text)?;
    let mut cases = Vec::with_capacity(records.len());
    for (index, record) in records.into_iter().enumerate() {
        let record: BirdRecord = json_record(path, index, record)?;
        let source = SourceRef {
            file: PathBuf::from(path),
            record: index,
            line: None,
        };
        let Some(id) = json_id(&record.question_id) else {
            return Err(source.error("`question_id` must be a string or an integer"));
        };
        if record.sql.trim().is_empty() {
            return Err(source.error(format!("case `{id}`: `SQL` is empty")));
        }
        let tags = record
            .difficulty
            .map(|difficulty| BTreeMap::from([("difficulty".to_string(), difficulty)]))
            .unwrap_or_default();
        cases.push(Case {
            id,
            db: record.db_id,
            db_file: None,
            cs: None,
            question: record.question,
            evidence: record.evidence.filter(|e| !e.trim().is_empty()),
            gold: vec![record.sql],
            feasible: true,
            tags,
            source,
            state: None,
        });
    }
    Ok(cases)
}
