//! TrustSQL data files: `query == "null"` marks an infeasible question (spec
//! `evaluators.md` §1.4); `type` and `note` form the category key (`trustsql.md` §A.3).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{json_id, json_record, parse_json_records, Case, SourceRef};
use crate::error::InputError;

/// The reference's marker for "no SQL": an infeasible gold, or an abstaining prediction.
pub(super) const NULL_MARKER: &str = "null";

#[derive(Deserialize)]
struct TrustRecord {
    id: serde_json::Value,
    db_id: String,
    question: String,
    query: String,
    #[serde(rename = "type")]
    kind: String,
    note: String,
}

/// Loads TrustSQL records; ids are their `id`s.
pub(super) fn load(path: &Path, text: &str) -> Result<Vec<Case>, InputError> {
    let records = parse_json_records(path, text)?;
    let mut cases = Vec::with_capacity(records.len());
    for (index, record) in records.into_iter().enumerate() {
        let record: TrustRecord = json_record(path, index, record)?;
        let source = SourceRef {
            file: PathBuf::from(path),
            record: index,
            line: None,
        };
        let Some(id) = json_id(&record.id) else {
            return Err(source.error("`id` must be a string or an integer"));
        };
        let feasible = record.query != NULL_MARKER;
        if feasible && record.query.trim().is_empty() {
            return Err(source.error(format!(
                "case `{id}`: `query` is empty (an infeasible question has \"null\")"
            )));
        }
        let tags = BTreeMap::from([
            (
                "category".to_string(),
                format!("{}:{}", record.kind, record.note),
            ),
            ("type".to_string(), record.kind),
            ("note".to_string(), record.note),
        ]);
        cases.push(Case {
            id,
            db: record.db_id,
            db_file: None,
            cs: None,
            question: record.question,
            evidence: None,
            gold: if feasible {
                vec![record.query]
            } else {
                Vec::new()
            },
            feasible,
            tags,
            source,
            state: None,
        });
    }
    Ok(cases)
}
