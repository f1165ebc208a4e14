//! The answer document: how one answer is written wherever sqlgate reads it from others, a
//! line of a JSONL prediction file (with its `id`) and what a `command` or `http` system
//! prints. One reader, so the two cannot drift apart:
//!
//! `{"sql": "..."}` or `{"abstain": true}`, optionally with `samples` (further sampled answers,
//! each SQL as a string or `{"abstain": true}`),
//! `retrieved` (what a retriever returned) and `usage` (`{"prompt_tokens": 812,
//! "completion_tokens": 41}`); a prediction file's lines add `id`. Nothing else: an unknown
//! field, a repeated one, or an answer that is both or neither SQL and abstention is refused.

use serde::Deserialize;
use sqlgate_base::secrets;
use sqlgate_base::usage::Usage;

use super::predictions::Answer;
use super::{json_id, json_kind, json_message};

/// One answer document, read.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerDocument {
    /// The case it answers: prediction files have it, systems do not.
    pub id: Option<serde_json::Value>,
    /// The SQL as written (not yet cleaned of fences and prose), or the abstention.
    pub answer: Answer,
    /// Further sampled answers, as written: SQL or an abstention.
    pub samples: Vec<Answer>,
    /// What a retriever returned (tables, columns, examples).
    pub retrieved: Vec<String>,
    /// The tokens the system's server counted for this answer, when it says.
    pub usage: Option<Usage>,
}

/// Why a text is not an answer document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerDocumentError {
    /// Valid JSON, but not an object.
    #[error("expected a JSON object, found {0}")]
    NotAnObject(&'static str),
    /// Not JSON, or an object with a field of the wrong type, unknown or repeated.
    #[error("column {column}: {message}")]
    Json {
        /// Where in the text (1-based; 0 when serde does not say).
        column: usize,
        /// serde's message, without its position.
        message: String,
    },
    /// Both `sql` and `"abstain": true` (in the line of `id`, when it has one).
    #[error("{}both `sql` and `\"abstain\": true`", of_id(.id))]
    Both {
        /// The line's id, when it has one.
        id: Option<String>,
    },
    /// Neither `sql` nor `"abstain": true` (in the line of `id`, when it has one).
    #[error("{}needs `sql` (a string) or `\"abstain\": true`", of_id(.id))]
    Neither {
        /// The line's id, when it has one.
        id: Option<String>,
    },
}

fn of_id(id: &Option<String>) -> String {
    id.as_ref()
        .map_or_else(String::new, |id| format!("id `{id}`: "))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fields {
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    sql: Option<String>,
    #[serde(default)]
    abstain: Option<bool>,
    #[serde(default, deserialize_with = "samples")]
    samples: Vec<Answer>,
    #[serde(default)]
    retrieved: Vec<String>,
    #[serde(default)]
    usage: Option<Usage>,
}

/// Reads `samples`: each one SQL (a string) or `{"abstain": true}`, as the answer itself can be.
fn samples<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<Answer>, D::Error> {
    let values = Vec::<serde_json::Value>::deserialize(deserializer)?;
    values
        .into_iter()
        .enumerate()
        .map(|(i, value)| match value {
            serde_json::Value::String(sql) => Ok(Answer::Sql(sql)),
            serde_json::Value::Object(fields)
                if fields.len() == 1 && fields.get("abstain") == Some(&true.into()) =>
            {
                Ok(Answer::Abstain)
            }
            other => Err(serde::de::Error::custom(format!(
                "`samples` item {}: expected SQL (a string) or {{\"abstain\": true}}, found {}",
                i + 1,
                json_kind(&other)
            ))),
        })
        .collect()
}

/// Reads one answer document. Its texts are redacted of the known secrets: an escape
/// (`\u0073`) decodes to a secret's own characters, which a redaction of the raw text missed.
pub fn parse_answer_document(text: &[u8]) -> Result<AnswerDocument, AnswerDocumentError> {
    let json = |e: serde_json::Error| AnswerDocumentError::Json {
        column: e.column(),
        message: json_message(&e),
    };
    // serde reads a struct from a list too (`["q01", "SELECT 1"]`): only objects are answers.
    // An object is read from the text itself, not through a `Value`, which would keep only
    // the last of a repeated field (`{"sql": "A", "sql": "B"}`) instead of refusing it.
    if !text.trim_ascii_start().starts_with(b"{") {
        let value: serde_json::Value = serde_json::from_slice(text).map_err(json)?;
        return Err(AnswerDocumentError::NotAnObject(json_kind(&value)));
    }
    let mut fields: Fields = serde_json::from_slice(text).map_err(json)?;
    let sampled = fields.samples.iter_mut().filter_map(|sample| match sample {
        Answer::Sql(sql) => Some(sql),
        Answer::Abstain => None,
    });
    let texts = fields
        .sql
        .iter_mut()
        .chain(sampled)
        .chain(&mut fields.retrieved);
    texts.for_each(secrets::redact_in_place);
    let id = || fields.id.as_ref().and_then(json_id);
    let answer = match (fields.sql, fields.abstain) {
        (Some(_), Some(true)) => return Err(AnswerDocumentError::Both { id: id() }),
        (None, Some(true)) => Answer::Abstain,
        (Some(sql), _) => Answer::Sql(sql),
        (None, _) => return Err(AnswerDocumentError::Neither { id: id() }),
    };
    Ok(AnswerDocument {
        id: fields.id,
        answer,
        samples: fields.samples,
        retrieved: fields.retrieved,
        usage: fields.usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AnswerDocument, AnswerDocumentError> {
        parse_answer_document(text.as_bytes())
    }

    #[test]
    fn an_answer_is_sql_or_an_abstention_with_optional_extras() {
        let read = parse(
            r#"{"id": "q1", "sql": "SELECT 1", "samples": ["SELECT 2"], "retrieved": ["t"],
                "usage": {"prompt_tokens": 3, "completion_tokens": 4}}"#,
        )
        .unwrap();
        assert_eq!(read.id, Some("q1".into()));
        assert_eq!(read.answer, Answer::Sql("SELECT 1".into()));
        assert_eq!(read.samples, [Answer::Sql("SELECT 2".into())]);
        assert_eq!(read.retrieved.len(), 1);
        let sampled = parse(r#"{"abstain": true, "samples": [{"abstain": true}, "SELECT 3"]}"#);
        assert_eq!(
            sampled.unwrap().samples,
            [Answer::Abstain, Answer::Sql("SELECT 3".into())]
        );
        assert_eq!(read.usage.and_then(|u| u.total()), Some(7));
        let abstained = parse(r#"{"abstain": true}"#).unwrap();
        assert_eq!((abstained.id, abstained.answer), (None, Answer::Abstain));
        assert_eq!(
            parse(r#"{"sql": "SELECT 1", "abstain": false}"#)
                .unwrap()
                .answer,
            Answer::Sql("SELECT 1".into())
        );
    }

    #[test]
    fn what_is_not_one_answer_is_refused_saying_why() {
        let cases = [
            (
                r#"["q1", "SELECT 1"]"#,
                "expected a JSON object, found a list",
            ),
            ("SELECT 1", "column 1: expected value"),
            (r#"{"sql": "SELECT 1", "abstain": true}"#, "both `sql`"),
            (r#"{"abstain": false}"#, "needs `sql`"),
            (r#"{"id": 7, "abstain": false}"#, "id `7`: needs `sql`"),
            (r#"{"sql": null}"#, "needs `sql`"),
            (r#"{}"#, "needs `sql`"),
            (r#"{"sql": "A", "sql": "B"}"#, "duplicate field `sql`"),
            (r#"{"sql": "A", "colour": 1}"#, "unknown field `colour`"),
            (r#"{"sql": 7}"#, "invalid type"),
            (
                r#"{"sql": "A", "samples": ["B", {"abstain": false}]}"#,
                "`samples` item 2: expected SQL (a string) or {\"abstain\": true}, found an object",
            ),
            (
                r#"{"sql": "A", "samples": [null]}"#,
                "`samples` item 1: expected SQL",
            ),
            (
                r#"{"sql": "A", "usage": {"prompt_tokens": -1, "completion_tokens": 0}}"#,
                "invalid value",
            ),
        ];
        for (text, expected) in cases {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
