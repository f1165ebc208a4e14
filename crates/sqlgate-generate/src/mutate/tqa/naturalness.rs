//! Naturalness reduction (SQLMorph §V) for one database: lower its identifiers, clone and
//! rename it, move every gold query onto the clone (kept only when it gives the same result as
//! the original on the original: EX = 1), rewrite the questions, and emit the four settings.

use std::path::Path;

use serde::Serialize;

use super::rename::{LevelCounts, Lowering, RenameMap};
use super::sql::rename_sql;
use super::text::{rewrite, Replacement};
use super::wordnet::WordNet;
use sqlgate_eval::exec::schema::Schema;
use sqlgate_eval::exec::value::py_eq;
use sqlgate_eval::exec::Engine;

/// The four settings (question / schema, Original or Less natural), as family names.
pub const SETTINGS: [(&str, &str); 4] = [
    ("O/O", "tqa-oo"),
    ("L/O", "tqa-lo"),
    ("O/L", "tqa-ol"),
    ("L/L", "tqa-ll"),
];

/// The mutant id of every TQA naturalness case: the level the identifiers were lowered to.
pub const MUTANT_ID: &str = "n3";

/// A case to move onto the clone, with every gold query it accepts.
pub struct Seed {
    /// The case's id.
    pub id: String,
    /// Its question.
    pub question: String,
    /// Its evidence, when the benchmark has one.
    pub evidence: Option<String>,
    /// Every gold query it accepts.
    pub golds: Vec<String>,
}

/// A seed kept in all four settings.
#[derive(Debug, Clone, Serialize)]
pub struct Kept {
    /// The case it came from.
    pub seed_id: String,
    /// The seed's gold alternatives, and each renamed for the clone.
    pub golds: Vec<String>,
    /// The gold alternatives, renamed for the clone.
    pub renamed_golds: Vec<String>,
    /// The seed's question.
    pub question: String,
    /// The question with its identifier mentions renamed.
    pub renamed_question: String,
    /// The seed's evidence.
    pub evidence: Option<String>,
    /// The evidence with its identifier mentions renamed.
    pub renamed_evidence: Option<String>,
    /// The mentions renamed in the question and the evidence.
    pub mentions: Vec<Replacement>,
}

/// What happened to one database.
pub struct DatabaseOutcome {
    /// The database's renames.
    pub map: RenameMap,
    /// Its identifiers per naturalness level, before lowering.
    pub levels: LevelCounts,
    /// The `ALTER TABLE` script that turns a copy of the database into the clone.
    pub script: String,
    /// The seeds kept.
    pub kept: Vec<Kept>,
    /// Seed id and why it was dropped.
    pub dropped: Vec<(String, String)>,
}

/// Builds the rename map and script of the database at `original` (no files written).
pub fn plan(
    db: &str,
    original: &Path,
    wordnet: &WordNet,
    lowering: Lowering,
) -> Result<(Schema, RenameMap, LevelCounts, String), SchemaUnreadable> {
    let schema =
        sqlgate_engine_sqlite::read_schema(original).map_err(|e| SchemaUnreadable(Box::new(e)))?;
    let (map, levels) = RenameMap::build(&schema, wordnet, lowering);
    let about = format!(
        "sqlgate generate tqa --method naturalness: `{db}` with its identifiers lowered to N3"
    );
    let script = map.script(&schema, &about);
    Ok((schema, map, levels, script))
}

/// The original database's schema could not be read ([`plan`]): SQLite's error.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the schema: {0}")]
pub struct SchemaUnreadable(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// Moves every seed onto `clone` (already built from the script and verified) and keeps those
/// whose every renamed gold alternative returns exactly that gold's rows, in order (a case with
/// one alternative fewer on the clone would fail answers the seed accepts).
pub fn reduce(
    original: &Path,
    clone: &Path,
    map: &RenameMap,
    seeds: &[Seed],
    wordnet: &WordNet,
    engine: &Engine,
) -> (Vec<Kept>, Vec<(String, String)>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for seed in seeds {
        match move_seed(original, clone, map, seed, wordnet, engine) {
            Ok(k) => kept.push(k),
            Err(why) => dropped.push((seed.id.clone(), why)),
        }
    }
    (kept, dropped)
}

fn move_seed(
    original: &Path,
    clone: &Path,
    map: &RenameMap,
    seed: &Seed,
    wordnet: &WordNet,
    engine: &Engine,
) -> Result<Kept, String> {
    let renamed_golds = seed
        .golds
        .iter()
        .map(|gold| move_gold(original, clone, map, gold, engine))
        .collect::<Result<Vec<String>, String>>()?;
    let (renamed_question, mut mentions) = rewrite(&seed.question, map, wordnet);
    let renamed_evidence = seed.evidence.as_ref().map(|evidence| {
        let (text, more) = rewrite(evidence, map, wordnet);
        mentions.extend(more);
        text
    });
    Ok(Kept {
        seed_id: seed.id.clone(),
        golds: seed.golds.clone(),
        renamed_golds,
        question: seed.question.clone(),
        renamed_question,
        evidence: seed.evidence.clone(),
        renamed_evidence,
        mentions,
    })
}

/// `gold` renamed for the clone, when it returns there exactly the rows it returns on the
/// original.
fn move_gold(
    original: &Path,
    clone: &Path,
    map: &RenameMap,
    gold: &str,
    engine: &Engine,
) -> Result<String, String> {
    let renamed = rename_sql(gold, map).map_err(|e| format!("gold does not parse: {e}"))?;
    let before = engine
        .execute(original, gold)
        .result
        .map_err(|e| format!("gold fails on the original: {}", e.message))?;
    let after = engine
        .execute(clone, &renamed)
        .result
        .map_err(|e| format!("renamed gold fails on the clone: {}", e.message))?;
    let same = before.rows.len() == after.rows.len()
        && before
            .rows
            .iter()
            .zip(&after.rows)
            .all(|(a, b)| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| py_eq(x, y)));
    if !same {
        return Err("renamed gold returns different rows on the clone (EX = 0)".into());
    }
    Ok(renamed)
}

/// A case's gold in a family record: one query, or the list of its alternatives.
pub fn gold_field(golds: &[String]) -> serde_json::Value {
    match golds {
        [one] => one.as_str().into(),
        all => all.into(),
    }
}

/// The family record of `kept` in `setting` (`O/O`...), for database `db` whose clone script is
/// `script` (relative to the family file).
pub fn record(kept: &Kept, setting: &str, db: &str, script: &str) -> serde_json::Value {
    let less_question = setting.starts_with('L');
    let less_schema = setting.ends_with('L');
    let mut record = serde_json::json!({
        "id": MUTANT_ID,
        "seed_id": kept.seed_id,
        "db": db,
        "setting": setting,
        "question": if less_question { &kept.renamed_question } else { &kept.question },
        "sql": gold_field(if less_schema { &kept.renamed_golds } else { &kept.golds }),
    });
    let evidence = if less_question {
        &kept.renamed_evidence
    } else {
        &kept.evidence
    };
    if let Some(evidence) = evidence {
        record["evidence"] = evidence.clone().into();
    }
    if less_schema {
        record["db_script"] = script.into();
    }
    if less_question {
        record["mentions"] = serde_json::to_value(&kept.mentions).unwrap_or_default();
    }
    record
}
