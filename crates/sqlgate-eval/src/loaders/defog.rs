//! Defog sql-eval CSV files (spec `evaluators.md` §1.3): the questions file, whose `query`
//! holds `;`-separated alternatives, and `idk.csv`, whose questions cannot be answered.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::{Case, GoldFormat, SourceRef};
use crate::error::InputError;
use crate::model_output::is_apology;

const REQUIRED_COLUMNS: [&str; 4] = ["db_name", "query_category", "query", "question"];

/// `idk.csv` when every row's query is the apology SELECT (`SELECT '<message>' AS answer;`),
/// else the questions file. A file that does not parse is left to `load` to report.
pub(super) fn detect(text: &str) -> GoldFormat {
    let Ok(rows) = read_rows(Path::new(""), text) else {
        return GoldFormat::Defog;
    };
    let all_apologies = !rows.is_empty() && rows.iter().all(|row| is_apology(&row.query));
    if all_apologies {
        GoldFormat::DefogIdk
    } else {
        GoldFormat::Defog
    }
}

/// Loads the rows as cases: feasible ones with their gold alternatives, or (`idk`)
/// infeasible ones keeping the apology SQL in the tag `apology_sql`.
pub(super) fn load(path: &Path, text: &str, idk: bool) -> Result<Vec<Case>, InputError> {
    let rows = read_rows(path, text)?;
    let mut cases = Vec::with_capacity(rows.len());
    for (record, row) in rows.into_iter().enumerate() {
        let source = SourceRef {
            file: PathBuf::from(path),
            record,
            line: Some(row.line),
        };
        if row.db_name.trim().is_empty() {
            return Err(source.error("`db_name` is empty"));
        }
        let mut tags = BTreeMap::from([("category".to_string(), row.category)]);
        let gold = if idk {
            tags.insert("apology_sql".into(), row.query.trim().to_string());
            Vec::new()
        } else {
            let alternatives = split_alternatives(&row.query);
            if alternatives.is_empty() {
                return Err(source.error("`query` holds no SQL"));
            }
            alternatives
        };
        cases.push(Case {
            id: record.to_string(),
            db: row.db_name,
            db_file: None,
            cs: None,
            question: row.question,
            evidence: row.instructions.filter(|text| !text.trim().is_empty()),
            gold,
            feasible: !idk,
            tags,
            source,
            state: None,
        });
    }
    Ok(cases)
}

/// sql-eval's naive split: every `;` separates alternatives, even inside a string literal;
/// pieces are stripped and empty ones dropped. Column sets `{a,b}` are left for the comparator.
fn split_alternatives(query: &str) -> Vec<String> {
    query
        .split(';')
        .map(str::trim)
        .filter(|piece| !piece.is_empty())
        .map(str::to_string)
        .collect()
}

/// The columns sqlgate reads from one CSV row.
struct Row {
    line: usize,
    db_name: String,
    category: String,
    query: String,
    question: String,
    instructions: Option<String>,
}

/// Reads the CSV by header names, so that column order does not matter.
fn read_rows(path: &Path, text: &str) -> Result<Vec<Row>, InputError> {
    check_quotes(path, text)?;
    let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let mut headers = HashMap::new();
    for (index, name) in reader
        .headers()
        .map_err(|e| csv_error(path, text, &e))?
        .iter()
        .enumerate()
    {
        let name = name.trim();
        // Which of two `query` columns holds the gold would be a guess.
        if headers.insert(name.to_string(), index).is_some() && !name.is_empty() {
            return Err(
                InputError::file(path, format!("the header names column `{name}` twice"))
                    .at_line(1),
            );
        }
    }
    let missing: Vec<&str> = REQUIRED_COLUMNS
        .into_iter()
        .filter(|column| !headers.contains_key(*column))
        .collect();
    if !missing.is_empty() {
        return Err(InputError::file(
            path,
            format!("the header lacks column(s) {}", missing.join(", ")),
        )
        .at_line(1));
    }
    let column = |name: &str| headers.get(name).copied();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(path, text, &e).at_record(rows.len()))?;
        let field = |name: &str| {
            column(name)
                .and_then(|index| record.get(index))
                .unwrap_or_default()
                .to_string()
        };
        rows.push(Row {
            line: record.position().map_or(0, |p| line_of(text, p)),
            db_name: field("db_name").trim().to_string(),
            category: field("query_category").trim().to_string(),
            query: field("query"),
            question: field("question"),
            instructions: column("instructions").map(|_| field("instructions")),
        });
    }
    Ok(rows)
}

/// The csv crate silently ends a field left open at the end of the file, and a quote left
/// open mid-file swallows rows until some later quote "closes" it, so both are caught here and
/// reported at the line where the open quoted field starts: a quoted field must end with a
/// quote followed by a comma, a line end or the end of the file (`""` is an escaped quote).
fn check_quotes(path: &Path, text: &str) -> Result<(), InputError> {
    let unclosed = |line: usize, why: String| {
        Err(InputError::file(
            path,
            format!("unbalanced double quote: the quoted field starting here {why}"),
        )
        .at_line(line))
    };
    let bytes = text.as_bytes();
    let mut line = 1;
    let mut at_field_start = true;
    let mut open_at: Option<usize> = None;
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        match (open_at, byte) {
            (Some(start), b'"') => match bytes.get(i + 1) {
                Some(b'"') => i += 1,
                None | Some(b',' | b'\n' | b'\r') => open_at = None,
                Some(_) => {
                    return unclosed(
                        start,
                        format!("is never closed (the quote on line {line} is followed by text)"),
                    )
                }
            },
            (None, b'"') if at_field_start => open_at = Some(line),
            _ => {}
        }
        if byte == b'\n' {
            line += 1;
        }
        at_field_start = open_at.is_none() && matches!(byte, b',' | b'\n');
        i += 1;
    }
    match open_at {
        Some(start) => unclosed(start, "is never closed".to_string()),
        None => Ok(()),
    }
}

fn csv_error(path: &Path, text: &str, error: &csv::Error) -> InputError {
    let message = match error.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("expected {expected_len} fields (as in the header), found {len}"),
        csv::ErrorKind::Utf8 { err, .. } => format!("not valid UTF-8 in field {}", err.field()),
        _ => error.to_string(),
    };
    let file_error = InputError::file(path, message);
    match error.position() {
        Some(position) => file_error.at_line(line_of(text, position)),
        None => file_error,
    }
}

/// The 1-based line a record starts on. The csv crate counts lines by `\n` and starts a record
/// after a `\r` terminator, so in a file with `\r\n` line ends it gives the line before: the
/// line ends left at the record's byte offset are counted too.
fn line_of(text: &str, position: &csv::Position) -> usize {
    let start = usize::try_from(position.byte()).map_or(text.len(), |b| b.min(text.len()));
    let skipped = text.as_bytes()[start..]
        .iter()
        .take_while(|b| matches!(b, b'\r' | b'\n'))
        .filter(|&&b| b == b'\n')
        .count();
    position.line() as usize + skipped
}
