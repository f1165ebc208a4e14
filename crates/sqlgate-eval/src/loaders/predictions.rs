//! Prediction files, aligned one-to-one with a benchmark's cases.

use crate::model_output::{clean_script, clean_sql};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use sqlgate_base::usage::Usage;

use super::answer_document::{parse_answer_document, AnswerDocumentError};
use super::spider::interactions;
use super::trustsql::NULL_MARKER;
use super::{
    describe_record, extension, json_error, json_id, json_kind, read_text, Benchmark, GoldFormat,
    SourceRef,
};
use crate::error::{check_printable, InputError};

/// What a system answered for one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A query to run.
    Sql(String),
    /// The system declined to answer.
    Abstain,
}

impl Answer {
    /// The SQL, or `None` for an abstention.
    pub fn into_sql(self) -> Option<String> {
        match self {
            Answer::Sql(sql) => Some(sql),
            Answer::Abstain => None,
        }
    }
}

/// One case's prediction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prediction {
    /// What the system answered.
    pub answer: Answer,
    /// Markdown fences, prose or extra statements were stripped (JSONL only; see `clean`).
    pub cleaned: bool,
    /// For a prediction absent from the file (TrustSQL), `record` is the case's index.
    pub source: SourceRef,
    /// Facts that do not fail loading but that modes and reports may need:
    /// `db_id_mismatch` (BIRD: the database the prediction names when it differs from the
    /// gold's), `bird_separator_missing`, `non_string` (BIRD: the value was not a string and
    /// became `" "`, as in the reference), `missing_prediction` (TrustSQL: id absent, so
    /// abstained), `json_null` (TrustSQL: JSON `null`, which the reference executes and
    /// scores as a prediction error; the SQL is empty).
    pub notes: BTreeMap<String, String>,
    /// Further sampled answers (JSONL `samples`), cleaned like the answer, for NL2SQL Pass@K
    /// and a sampled gate's replay: SQL or an abstention.
    pub samples: Vec<Answer>,
    /// The schema elements the system says it retrieved (JSONL `retrieved`), for the retrieval
    /// metrics.
    pub retrieved: Vec<String>,
    /// The tokens the system's server counted for the answer (JSONL `usage`), for the cost
    /// metrics of a replayed run.
    pub usage: Option<Usage>,
    /// The answer cleaned as statements ([`crate::model_output::clean_script`]), which a state
    /// case runs whole; `None` for an abstention.
    pub script: Option<String>,
}

/// Prediction file formats (see `docs/formats.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PredFormat {
    /// One object per line: `{"id": ..., "sql": "..."}` or `{"id": ..., "abstain": true}`.
    Jsonl,
    /// Spider `pred.txt`: one SQL per line, aligned with the gold by position.
    Spider,
    /// BIRD `predict_dev.json`: values in file order, `SQL\t----- bird -----\tdb_id`.
    Bird,
    /// TrustSQL: `{id: "SQL" | "null"}`; a missing id abstains.
    Trustsql,
}

/// BIRD's separator between the SQL and the database in a prediction value.
const BIRD_SEPARATOR: &str = "\t----- bird -----\t";

/// Loads predictions and aligns them with `bench.cases`: one per case, in case order. A case
/// without one is bad input here (scoring needs them all).
pub fn load_predictions(
    path: &Path,
    format: Option<PredFormat>,
    bench: &Benchmark,
) -> Result<Vec<Prediction>, InputError> {
    let slots = load_prediction_slots(path, format, bench)?;
    let missing: Vec<&str> = bench
        .cases
        .iter()
        .zip(&slots)
        .filter(|(_, slot)| slot.is_none())
        .map(|(case, _)| case.id.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(InputError::file(
            path,
            format!(
                "{} case(s) have no prediction: {}",
                missing.len(),
                list_ids(&missing)
            ),
        ));
    }
    Ok(slots.into_iter().flatten().collect())
}

/// Like [`load_predictions`], but a case the file does not answer is `None` (only id-keyed
/// JSONL can leave one out): a replayed system fails those cases instead of the whole run.
pub fn load_prediction_slots(
    path: &Path,
    format: Option<PredFormat>,
    bench: &Benchmark,
) -> Result<Vec<Option<Prediction>>, InputError> {
    let text = read_text(path)?;
    let format = match format {
        Some(format) => format,
        None => detect(path, &text, bench)?,
    };
    let complete = |predictions: Vec<Prediction>| predictions.into_iter().map(Some).collect();
    match format {
        PredFormat::Jsonl => load_jsonl(path, &text, bench),
        PredFormat::Spider => load_lines(path, &text, bench).map(complete),
        PredFormat::Bird => load_bird(path, &text, bench).map(complete),
        PredFormat::Trustsql => load_trustsql(path, &text, bench).map(complete),
    }
}

/// Detects the format from the extension, and for `.json` from the content.
fn detect(path: &Path, text: &str, bench: &Benchmark) -> Result<PredFormat, InputError> {
    match extension(path).as_str() {
        "jsonl" | "ndjson" => Ok(PredFormat::Jsonl),
        "txt" | "sql" => Ok(PredFormat::Spider),
        "json" => {
            let entries = match parse_entries(path, text) {
                Ok(entries) => entries,
                Err(_) if first_line_is_object(text) => return Ok(PredFormat::Jsonl),
                Err(error) => return Err(error),
            };
            let has = |key: &str| entries.iter().any(|(k, _)| k == key);
            let bird_values = entries
                .iter()
                .any(|(_, v)| v.as_str().is_some_and(|s| s.contains(BIRD_SEPARATOR)));
            let bird_gold = matches!(bench.format, GoldFormat::BirdJson | GoldFormat::BirdSql);
            Ok(if has("id") && (has("sql") || has("abstain")) {
                // A single JSONL record in a `.json` file.
                PredFormat::Jsonl
            } else if bird_values || bird_gold {
                PredFormat::Bird
            } else {
                PredFormat::Trustsql
            })
        }
        other => Err(InputError::file(
            path,
            format!(
                "cannot tell the predictions format from the extension `{other}` (expected \
                 .jsonl, .txt, .sql or .json); pass the format explicitly"
            ),
        )),
    }
}

/// JSON Lines saved under `.json`: the file is not one JSON value, but its first line is.
fn first_line_is_object(text: &str) -> bool {
    text.lines()
        .find(|line| !line.trim().is_empty())
        .and_then(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .is_some_and(|value| value.is_object())
}

fn source(path: &Path, record: usize, line: Option<usize>) -> SourceRef {
    SourceRef {
        file: PathBuf::from(path),
        record,
        line,
    }
}

fn prediction(answer: Answer, source: SourceRef) -> Prediction {
    Prediction {
        answer,
        cleaned: false,
        source,
        notes: BTreeMap::new(),
        samples: Vec::new(),
        retrieved: Vec::new(),
        usage: None,
        script: None,
    }
}

/// Case index by id.
/// The case a prediction with `id` fills; an unknown id or a second prediction for the same
/// case is an error at `at`.
fn free_slot(
    index: &HashMap<&str, usize>,
    slots: &[Option<Prediction>],
    id: &str,
    at: &SourceRef,
) -> Result<usize, InputError> {
    let Some(&case) = index.get(id) else {
        return Err(at.error(format!("unknown id `{id}`: no case has it")));
    };
    match &slots[case] {
        Some(first) => Err(at.error(format!(
            "duplicate prediction for id `{id}` (first at {})",
            describe_record(&first.source)
        ))),
        None => Ok(case),
    }
}

fn case_index(bench: &Benchmark) -> HashMap<&str, usize> {
    bench
        .cases
        .iter()
        .enumerate()
        .map(|(index, case)| (case.id.as_str(), index))
        .collect()
}

/// JSONL: ids matched to case ids; every case needs exactly one line. The SQL is cleaned of
/// markdown fences and prose, since this is the format raw model output arrives in.
fn load_jsonl(
    path: &Path,
    text: &str,
    bench: &Benchmark,
) -> Result<Vec<Option<Prediction>>, InputError> {
    let index = case_index(bench);
    let records: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .collect();
    // Records parse in parallel; the first error in file order is the one reported.
    let parsed: Vec<Result<(String, Prediction), InputError>> = records
        .par_iter()
        .enumerate()
        .map(|(record, &(line_index, line))| {
            jsonl_record(source(path, record, Some(line_index + 1)), line)
        })
        .collect();
    let mut slots: Vec<Option<Prediction>> = vec![None; bench.cases.len()];
    let mut unloaded = UnloadedFamilies::default();
    let loaded: HashSet<&str> = bench
        .cases
        .iter()
        .filter_map(|case| case.tags.get("family").map(String::as_str))
        .collect();
    for parsed in parsed {
        let (id, prediction) = parsed?;
        if !index.contains_key(id.as_str()) {
            if let Some(family) = unloaded_family(&loaded, &index, &id) {
                unloaded.add(family, &prediction.source);
                continue;
            }
        }
        let case = free_slot(&index, &slots, &id, &prediction.source)?;
        slots[case] = Some(prediction);
    }
    unloaded.check()?;
    Ok(slots)
}

/// The family a prediction's id `<seed>::<family>::<mutant>` names when the seed is a case of
/// the run and the family is not among the `loaded` ones.
fn unloaded_family<'a>(
    loaded: &HashSet<&str>,
    index: &HashMap<&str, usize>,
    id: &'a str,
) -> Option<&'a str> {
    let (seed, rest) = id.split_once("::")?;
    let (family, _) = rest.split_once("::")?;
    index.get(seed)?;
    (!family.is_empty() && !loaded.contains(family)).then_some(family)
}

/// Predictions for cases of families the run does not load, by family: refused together, so
/// one message names every family to load.
#[derive(Default)]
struct UnloadedFamilies {
    counts: BTreeMap<String, usize>,
    first: Option<SourceRef>,
}

impl UnloadedFamilies {
    fn add(&mut self, family: &str, at: &SourceRef) {
        *self.counts.entry(family.to_string()).or_default() += 1;
        self.first.get_or_insert_with(|| at.clone());
    }

    fn check(self) -> Result<(), InputError> {
        let Some(first) = self.first else {
            return Ok(());
        };
        let families: Vec<String> = self
            .counts
            .iter()
            .map(|(family, count)| format!("`{family}` ({count})"))
            .collect();
        Err(first.error(format!(
            "the file answers cases of families this run does not load: {}; load each one \
             (`--family NAME=FILE`, or the suite's `families`) or leave its predictions out",
            families.join(", ")
        )))
    }
}

/// One JSON Lines record: its id and its prediction.
fn jsonl_record(at: SourceRef, line: &str) -> Result<(String, Prediction), InputError> {
    let document = parse_answer_document(line.as_bytes()).map_err(|problem| match problem {
        AnswerDocumentError::NotAnObject(kind) => at.error(format!(
            "expected a JSON object {{\"id\": ..., \"sql\": ...}}, found {kind}"
        )),
        other => at.error(other.to_string()),
    })?;
    let Some(id) = document.id.as_ref() else {
        return Err(at.error("missing field `id`"));
    };
    let Some(id) = json_id(id) else {
        return Err(at.error(format!(
            "`id` must be a string or an integer, found {}",
            json_kind(id)
        )));
    };
    check_printable("id", &id).map_err(|problem| at.error(problem.to_string()))?;
    let mut prediction = cleaned(document.answer, at);
    prediction.samples = document
        .samples
        .into_iter()
        .map(|sample| match sample {
            Answer::Sql(sql) => Answer::Sql(clean_sql(&sql).sql),
            Answer::Abstain => Answer::Abstain,
        })
        .collect();
    prediction.retrieved = document.retrieved;
    prediction.usage = document.usage;
    Ok((id, prediction))
}

fn cleaned(answer: Answer, at: SourceRef) -> Prediction {
    match answer {
        Answer::Sql(raw) => {
            let cleaned = clean_sql(&raw);
            Prediction {
                answer: Answer::Sql(cleaned.sql),
                cleaned: cleaned.cleaned,
                script: Some(clean_script(&raw)),
                ..prediction(Answer::Abstain, at)
            }
        }
        Answer::Abstain => prediction(Answer::Abstain, at),
    }
}

/// The first few ids, for messages about many.
fn list_ids(ids: &[&str]) -> String {
    const SHOWN: usize = 5;
    let mut text = ids
        .iter()
        .take(SHOWN)
        .map(|id| format!("`{id}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        text.push_str(&format!(" and {} more", ids.len() - SHOWN));
    }
    text
}

/// Spider `pred.txt`: line i (field 0 of a TAB split) answers case i; blank lines separate
/// interactions, so they must fall where the gold's do.
fn load_lines(path: &Path, text: &str, bench: &Benchmark) -> Result<Vec<Prediction>, InputError> {
    let grouped = interactions(text);
    if grouped.lines.len() != bench.cases.len() {
        return Err(InputError::file(
            path,
            format!(
                "{} prediction line(s) for {} gold case(s): the files must align line by line",
                grouped.lines.len(),
                bench.cases.len()
            ),
        ));
    }
    let gold_turns = matches!(bench.format, GoldFormat::Spider | GoldFormat::BirdSql);
    let mut predictions = Vec::with_capacity(grouped.lines.len());
    for (record, (line, case)) in grouped.lines.iter().zip(&bench.cases).enumerate() {
        let at = source(path, record, Some(line.line));
        let gold_position = match (
            gold_turns,
            case.tags.get("interaction"),
            case.tags.get("turn"),
        ) {
            (true, Some(interaction), Some(turn)) => (interaction.clone(), turn.clone()),
            _ => ("0".to_string(), record.to_string()),
        };
        let position = (line.interaction.to_string(), line.turn.to_string());
        if position != gold_position {
            return Err(at.error(format!(
                "blank lines do not match the gold's: this line is turn {} of interaction {}, \
                 its gold case `{}` is turn {} of interaction {} (an empty prediction must be \
                 written as a placeholder such as SELECT, never as an empty line)",
                position.1, position.0, case.id, gold_position.1, gold_position.0
            )));
        }
        let sql = line.text.split('\t').next().unwrap_or_default();
        predictions.push(prediction(Answer::Sql(sql.to_string()), at));
    }
    Ok(predictions)
}

/// BIRD `predict_dev.json`: the values in file order (keys ignored, as the reference does).
/// A repeated key is an error: Python's `json.load` would keep only its last value, shifting
/// every later prediction onto the wrong question.
fn load_bird(path: &Path, text: &str, bench: &Benchmark) -> Result<Vec<Prediction>, InputError> {
    let entries = parse_entries(path, text)?;
    let mut first_record: HashMap<&str, usize> = HashMap::new();
    for (record, (key, _)) in entries.iter().enumerate() {
        if let Some(first) = first_record.insert(key, record) {
            return Err(source(path, record, None).error(format!(
                "duplicate key `{key}` (first at record {first}): Python's json.load keeps \
                 only the last, which misaligns the predictions"
            )));
        }
    }
    if entries.len() != bench.cases.len() {
        return Err(InputError::file(
            path,
            format!(
                "{} prediction(s) for {} gold case(s): BIRD aligns them by position",
                entries.len(),
                bench.cases.len()
            ),
        ));
    }
    let mut predictions = Vec::with_capacity(entries.len());
    for (record, ((key, value), case)) in entries.into_iter().zip(&bench.cases).enumerate() {
        let mut item = prediction(Answer::Sql(" ".into()), source(path, record, None));
        let serde_json::Value::String(value) = value else {
            item.notes
                .insert("non_string".into(), json_kind(&value).into());
            predictions.push(item);
            continue;
        };
        let parts: Vec<&str> = value.split(BIRD_SEPARATOR).collect();
        match parts[..] {
            [sql] => {
                item.answer = Answer::Sql(sql.to_string());
                item.notes
                    .insert("bird_separator_missing".into(), "true".into());
            }
            [sql, db] => {
                item.answer = Answer::Sql(sql.to_string());
                if db != case.db {
                    item.notes.insert("db_id_mismatch".into(), db.to_string());
                }
            }
            _ => {
                return Err(item.source.error(format!(
                    "key `{key}`: the value holds the separator `\\t----- bird -----\\t` {} times",
                    parts.len() - 1
                )))
            }
        }
        predictions.push(item);
    }
    Ok(predictions)
}

/// TrustSQL `{id: "SQL" | "null"}`; a missing id abstains, as in the reference.
fn load_trustsql(
    path: &Path,
    text: &str,
    bench: &Benchmark,
) -> Result<Vec<Prediction>, InputError> {
    let index = case_index(bench);
    let mut slots: Vec<Option<Prediction>> = vec![None; bench.cases.len()];
    for (record, (id, value)) in parse_entries(path, text)?.into_iter().enumerate() {
        let at = source(path, record, None);
        check_printable("id", &id).map_err(|problem| at.error(problem.to_string()))?;
        let case = free_slot(&index, &slots, &id, &at)?;
        slots[case] = Some(trustsql_prediction(&id, value, at)?);
    }
    let predictions = slots
        .into_iter()
        .enumerate()
        .map(|(case, slot)| {
            slot.unwrap_or_else(|| {
                let mut missing = prediction(Answer::Abstain, source(path, case, None));
                missing
                    .notes
                    .insert("missing_prediction".into(), "true".into());
                missing
            })
        })
        .collect();
    Ok(predictions)
}

fn trustsql_prediction(
    id: &str,
    value: serde_json::Value,
    at: SourceRef,
) -> Result<Prediction, InputError> {
    // Voting output with a single candidate is unwrapped, as the reference's post-processing does.
    let value = match value {
        serde_json::Value::Array(mut items) if items.len() == 1 => items.remove(0),
        other => other,
    };
    match value {
        serde_json::Value::String(sql) if sql == NULL_MARKER => Ok(prediction(Answer::Abstain, at)),
        serde_json::Value::String(sql) => Ok(prediction(Answer::Sql(sql), at)),
        serde_json::Value::Null => {
            let mut item = prediction(Answer::Sql(String::new()), at);
            item.notes.insert("json_null".into(), "true".into());
            Ok(item)
        }
        serde_json::Value::Array(items) => Err(at.error(format!(
            "id `{id}`: a list of {} candidates; voting output must be reduced to one SQL \
             first (trustsql.md §A.6)",
            items.len()
        ))),
        other => Err(at.error(format!(
            "id `{id}`: expected a SQL string or \"null\", found {}",
            json_kind(&other)
        ))),
    }
}

/// A JSON object's entries in file order, duplicates included (serde_json's map would sort
/// them and keep only the last duplicate).
fn parse_entries(path: &Path, text: &str) -> Result<Vec<(String, serde_json::Value)>, InputError> {
    let entries: Entries = serde_json::from_str(text).map_err(|e| json_error(path, &e))?;
    Ok(entries.0)
}

struct Entries(Vec<(String, serde_json::Value)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EntriesVisitor)
    }
}

struct EntriesVisitor;

impl<'de> Visitor<'de> for EntriesVisitor {
    type Value = Entries;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object mapping ids to predictions")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry::<String, serde_json::Value>()? {
            entries.push(entry);
        }
        Ok(Entries(entries))
    }
}
