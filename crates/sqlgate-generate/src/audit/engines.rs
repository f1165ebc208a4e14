//! The cross-engine check (`sqlgate audit --compare-engine`): each case's gold on its engine
//! against its counterpart's gold on another engine (the same SQL, or the other dialect's
//! version of it), compared as the mode compares a prediction with its gold, so a benchmark
//! ported between engines shows where its golds mean different things.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sqlgate_eval::error::InputError;
use sqlgate_eval::exec::value::py_str;
use sqlgate_eval::exec::{Engine, QueryRunner, ResultSet};
use sqlgate_eval::loaders::{Benchmark, Case};
use sqlgate_eval::metrics::ex::Verdict;

use super::runs::Scorer;
use super::{Comparison, Finding, Kind, Settings};

/// How many rows of each result a finding shows.
const PREVIEW_ROWS: usize = 3;
/// How many characters of each value a finding shows.
const PREVIEW_CHARS: usize = 40;

/// A case's gold on the other engine, and the database it runs on there.
pub(super) struct Counterpart {
    gold: String,
    file: PathBuf,
}

/// For each case of `bench`, the case of the same id in the comparison's benchmark, when it
/// has one with a gold.
pub(super) fn counterparts(
    bench: &Benchmark,
    compare: &Comparison<'_>,
) -> Result<Vec<Option<Counterpart>>, InputError> {
    let by_id: HashMap<&str, &Case> = compare
        .bench
        .cases
        .iter()
        .map(|case| (case.id.as_str(), case))
        .collect();
    bench
        .cases
        .iter()
        .map(|case| match by_id.get(case.id.as_str()) {
            Some(other) if !other.gold.is_empty() => Ok(Some(Counterpart {
                gold: other.gold[0].clone(),
                file: compare.bench.db_files(other, false)?.remove(0),
            })),
            _ => Ok(None),
        })
        .collect()
}

/// An `engine_disagrees` finding when the case's first gold, run on `file`, and its
/// counterpart on the other engine differ as the mode sees them, or only the counterpart
/// fails. A gold that fails on its own engine is an `error` finding already.
pub(super) fn disagreement(
    settings: &Settings,
    engine: &Engine,
    case: &Case,
    file: &Path,
    other_engine: &Engine,
    other: &Counterpart,
) -> Option<Finding> {
    let gold = settings.runnable(case.gold.first()?);
    let mine = engine.gold(file, &gold).result.ok()?;
    let (here, there) = (engine.driver().name(), other_engine.driver().name());
    let theirs = other_engine.gold(&other.file, &settings.runnable(&other.gold));
    let detail = match &theirs.result {
        Err(error) => format!(
            "runs on {here} ({}) but fails on {there}: {}",
            preview(&mine),
            error.message
        ),
        Ok(rows) => {
            let scorer = Scorer {
                settings,
                engine,
                case,
            };
            let verdict = scorer.verdict_under(&gold, file, |_, _| theirs.clone());
            if verdict != Verdict::Incorrect {
                return None;
            }
            format!(
                "the mode scores the rows as different: {here} returns {}; {there} returns {}",
                preview(&mine),
                preview(rows)
            )
        }
    };
    Some(Finding {
        id: case.id.clone(),
        db: case.db.clone(),
        kind: Kind::EngineDisagrees,
        detail,
    })
}

/// `2 rows of (name, n): (Ann, 3), (Bob, 1)`, the first rows and each value shortened.
fn preview(rows: &ResultSet) -> String {
    let count = match rows.rows.len() {
        1 => "1 row".to_string(),
        n => format!("{n} rows"),
    };
    let shown: Vec<String> = rows
        .rows
        .iter()
        .take(PREVIEW_ROWS)
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .map(|value| {
                    // A database's text is anyone's: control characters (a line break that
                    // would start a workflow command in a CI log) are shown escaped.
                    let text: String = py_str(value)
                        .chars()
                        .flat_map(|c| {
                            let escaped: Vec<char> = if c.is_control() {
                                c.escape_default().collect()
                            } else {
                                vec![c]
                            };
                            escaped
                        })
                        .collect();
                    match text.char_indices().nth(PREVIEW_CHARS) {
                        Some((end, _)) => format!("{}…", &text[..end]),
                        None => text,
                    }
                })
                .collect();
            format!("({})", cells.join(", "))
        })
        .collect();
    let more = if rows.rows.len() > PREVIEW_ROWS {
        ", …"
    } else {
        ""
    };
    let listed = if shown.is_empty() {
        String::new()
    } else {
        format!(": {}{more}", shown.join(", "))
    };
    format!("{count} of ({}){listed}", rows.columns.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlgate_eval::exec::Value;

    #[test]
    fn a_preview_shows_the_first_rows_shortened_and_control_characters_escaped() {
        let rows = ResultSet {
            columns: vec!["name".into(), "n".into()],
            rows: (0..5)
                .map(|i| {
                    vec![
                        Value::Text(format!("a\n::error::x{}", "y".repeat(60))),
                        Value::Int(i),
                    ]
                })
                .collect(),
            lossy_text: false,
        };
        let shown = preview(&rows);
        assert!(!shown.contains('\n'), "{shown}");
        assert!(
            shown.starts_with("5 rows of (name, n): (a\\n::error::xyyy"),
            "{shown}"
        );
        assert!(shown.contains("…, 0)") && shown.ends_with(", …"), "{shown}");
        assert_eq!(shown.matches(", 2)").count(), 1, "{shown}");
        assert!(!shown.contains(", 3)"), "{shown}");
    }
}
