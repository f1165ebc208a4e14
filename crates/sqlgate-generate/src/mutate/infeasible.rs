//! TrustSQL's infeasible questions (`trustsql.md` A.4), generated from a database's real
//! schema by templates, deterministic for a seed. Every column question names a hypothetical
//! column checked against the schema, so none is answerable:
//! - `column-surface`: a column of another table of the same database, asked of a table lacking it;
//! - `column-related`: a plausible attribute no table of the database has;
//! - `column-unrelated`: an attribute of another database (or of an unrelated domain);
//! - `non-sql` and `ext-know`: requests beyond SQL or needing outside knowledge, about a table.

use std::collections::BTreeSet;

use rand::seq::IndexedRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use sqlgate_eval::spider::Schema;

/// Plausible attributes of business entities, for `column-related`.
const RELATED: &[&str] = &[
    "rating",
    "weight",
    "color",
    "budget",
    "manager",
    "phone number",
    "website",
    "nickname",
    "founding year",
    "popularity",
    "capacity",
    "language",
    "duration",
    "size",
    "height",
];

/// Attributes of unrelated domains, for `column-unrelated` when no other database lends one.
const UNRELATED: &[&str] = &[
    "aircraft",
    "blood type",
    "horsepower",
    "zodiac sign",
    "shoe size",
    "wingspan",
    "tax bracket",
    "favorite song",
    "boiling point",
    "jersey number",
];

const COLUMN_TEMPLATES: &[&str] = &[
    "What is the {column} of each entry in the {table} table?",
    "List every entry of the {table} table together with its {column}.",
    "Which entry of the {table} table has the highest {column}?",
];

const NON_SQL: &[&str] = &[
    "Train a model that predicts which entries of the {table} table will matter next year.",
    "Draw a chart of the {table} table over time and explain the trend.",
    "Translate every entry of the {table} table into French.",
    "Detect anomalies in the {table} table and explain their causes.",
    "Write a short marketing email about the {table} we have.",
];

const EXT_KNOW: &[&str] = &[
    "What do experts think about the future of {table}?",
    "Why do people in other countries care about {table}?",
    "How did the history of {table} shape today's world?",
];

/// One generated question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InfeasibleQuestion {
    /// The database the question is asked of.
    pub db: String,
    /// `column-surface`, `column-related`, `column-unrelated`, `non-sql` or `ext-know`.
    pub kind: &'static str,
    /// The question's text.
    pub question: String,
    /// `table.column` that does not exist, for the column kinds.
    pub hypothetical: Option<String>,
}

/// Questions of every kind for one database. `others` are the schemas of the benchmark's other
/// databases (sources of `column-unrelated` attributes).
pub fn generate(
    db: &str,
    schema: &Schema,
    others: &[&Schema],
    seed: u64,
    per_kind: usize,
) -> Vec<InfeasibleQuestion> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ fnv(db));
    let tables: Vec<&str> = schema.tables().iter().map(|t| t.name.as_str()).collect();
    let everywhere: BTreeSet<String> = schema
        .tables()
        .iter()
        .flat_map(|t| t.columns.iter().map(|c| normal(c)))
        .collect();
    let mut questions = Vec::new();
    let mut push = |kind, question: String, hypothetical: Option<String>| {
        if !questions
            .iter()
            .any(|q: &InfeasibleQuestion| q.question == question)
        {
            questions.push(InfeasibleQuestion {
                db: db.to_string(),
                kind,
                question,
                hypothetical,
            });
        }
    };
    for _ in 0..per_kind {
        // column-surface: a column of table B asked of table A, which lacks it.
        let surface: Vec<(&str, &str)> = schema
            .tables()
            .iter()
            .flat_map(|a| {
                let own: BTreeSet<String> = a.columns.iter().map(|c| normal(c)).collect();
                schema
                    .tables()
                    .iter()
                    .filter(move |b| b.name != a.name)
                    .flat_map(move |b| {
                        let own = own.clone();
                        b.columns
                            .iter()
                            .filter(move |c| !own.contains(&normal(c)) && !is_key(c))
                            .map(move |c| (a.name.as_str(), c.as_str()))
                    })
            })
            .collect();
        if let Some(&(table, column)) = surface.choose(&mut rng) {
            push(
                "column-surface",
                column_question(&mut rng, table, column),
                Some(format!("{table}.{column}")),
            );
        }
        let related: Vec<&&str> = RELATED
            .iter()
            .filter(|a| !everywhere.contains(&normal(a)))
            .collect();
        if let (Some(attribute), Some(table)) = (related.choose(&mut rng), tables.choose(&mut rng))
        {
            push(
                "column-related",
                column_question(&mut rng, table, attribute),
                Some(format!("{table}.{}", normal(attribute))),
            );
        }
        let borrowed: BTreeSet<String> = others
            .iter()
            .flat_map(|s| {
                s.tables()
                    .iter()
                    .flat_map(|t| t.columns.iter().map(|c| normal(c)))
            })
            .chain(UNRELATED.iter().map(|a| normal(a)))
            .filter(|c| !everywhere.contains(c) && !is_key(c))
            .collect();
        let borrowed: Vec<String> = borrowed.into_iter().collect();
        if let (Some(attribute), Some(table)) = (borrowed.choose(&mut rng), tables.choose(&mut rng))
        {
            push(
                "column-unrelated",
                column_question(&mut rng, table, attribute),
                Some(format!("{table}.{attribute}")),
            );
        }
        if let (Some(template), Some(table)) = (NON_SQL.choose(&mut rng), tables.choose(&mut rng)) {
            push("non-sql", template.replace("{table}", &words(table)), None);
        }
        if let (Some(template), Some(table)) = (EXT_KNOW.choose(&mut rng), tables.choose(&mut rng))
        {
            push("ext-know", template.replace("{table}", &words(table)), None);
        }
    }
    questions
}

fn column_question(rng: &mut ChaCha8Rng, table: &str, column: &str) -> String {
    let template = COLUMN_TEMPLATES
        .choose(rng)
        .copied()
        .unwrap_or(COLUMN_TEMPLATES[0]);
    template
        .replace("{table}", &words(table))
        .replace("{column}", &words(column))
}

/// `order_items` → `order items`.
fn words(name: &str) -> String {
    name.replace('_', " ")
}

/// The form column names are compared in: lowercase, spaces as underscores.
fn normal(name: &str) -> String {
    name.trim().to_lowercase().replace(' ', "_")
}

/// Identifiers are not attributes anyone asks about.
fn is_key(column: &str) -> bool {
    let column = normal(column);
    column == "id" || column.ends_with("_id") || column.ends_with("id") && column.len() <= 4
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
