//! Spider gold files: `SQL<TAB>db_id` lines (also BIRD's `dev_gold.sql`) and `dev.json`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{json_record, parse_json_records, Case, SourceRef};
use crate::error::InputError;

/// A non-blank line of a line-oriented file, stripped as Python's `str.strip` would.
pub(super) struct NumberedLine<'a> {
    pub text: &'a str,
    /// 1-based.
    pub line: usize,
    pub interaction: usize,
    /// 0-based position within the interaction.
    pub turn: usize,
}

/// A file's non-blank lines and its interactions' sizes, grouped as the Spider evaluator
/// does (spec `evaluators.md` §1.1): every blank line closes the current interaction, even
/// an empty one, and a final non-empty interaction is kept without a trailing blank line.
pub(super) struct Interactions<'a> {
    pub lines: Vec<NumberedLine<'a>>,
    pub sizes: Vec<usize>,
}

pub(super) fn interactions(text: &str) -> Interactions<'_> {
    let mut lines = Vec::new();
    let mut sizes = Vec::new();
    let mut current = 0;
    for (index, raw) in text.lines().enumerate() {
        let stripped = raw.trim();
        if stripped.is_empty() {
            sizes.push(current);
            current = 0;
        } else {
            lines.push(NumberedLine {
                text: stripped,
                line: index + 1,
                interaction: sizes.len(),
                turn: current,
            });
            current += 1;
        }
    }
    if current > 0 {
        sizes.push(current);
    }
    Interactions { lines, sizes }
}

/// Loads `SQL<TAB>db_id` lines; ids are the 0-based indices of the non-blank lines.
pub(super) fn load_gold_lines(path: &Path, text: &str) -> Result<Vec<Case>, InputError> {
    let grouped = interactions(text);
    let multi_turn = grouped.sizes.len() > 1;
    let mut cases = Vec::with_capacity(grouped.lines.len());
    for (record, line) in grouped.lines.iter().enumerate() {
        let source = SourceRef {
            file: PathBuf::from(path),
            record,
            line: Some(line.line),
        };
        let fields: Vec<&str> = line.text.split('\t').collect();
        let [sql, db] = fields[..] else {
            return Err(source.error(format!(
                "expected `SQL<TAB>db_id`, found {} TAB-separated field(s)",
                fields.len()
            )));
        };
        let mut tags = BTreeMap::new();
        if multi_turn {
            tags.insert("interaction".into(), line.interaction.to_string());
            tags.insert("turn".into(), line.turn.to_string());
        }
        cases.push(Case {
            id: record.to_string(),
            db: db.to_string(),
            db_file: None,
            cs: None,
            question: String::new(),
            evidence: None,
            gold: vec![sql.to_string()],
            feasible: true,
            tags,
            source,
            state: None,
        });
    }
    Ok(cases)
}

#[derive(Deserialize)]
struct SpiderRecord {
    db_id: String,
    query: String,
    question: String,
}

/// Loads Spider `dev.json`; ids are record indices.
pub(super) fn load_json(path: &Path, text: &str) -> Result<Vec<Case>, InputError> {
    let records = parse_json_records(path, text)?;
    let mut cases = Vec::with_capacity(records.len());
    for (index, record) in records.into_iter().enumerate() {
        let record: SpiderRecord = json_record(path, index, record)?;
        let source = SourceRef {
            file: PathBuf::from(path),
            record: index,
            line: None,
        };
        if record.query.trim().is_empty() {
            return Err(source.error("`query` is empty"));
        }
        cases.push(Case {
            id: index.to_string(),
            db: record.db_id,
            db_file: None,
            cs: None,
            question: record.question,
            evidence: None,
            gold: vec![record.query],
            feasible: true,
            tags: BTreeMap::new(),
            source,
            state: None,
        });
    }
    Ok(cases)
}
