//! Schema-aligned paraphrases (SQL2NL, spec `trustsql.md` Part B): k questions per gold SQL
//! that ask the same thing in other words, each kept when its embedding stays close to the
//! original question's (cosine similarity ≥ a threshold, paper §3.1), written as the `para`
//! family (one case per paraphrase, gold SQL unchanged).
//!
//! Two sources of paraphrases: the offline [`verbalize`]r (the gold's tree read back with
//! seeded template choices) and a chat model asked with the paper's Appendix A prompt
//! ([`llm`]).

mod agree;
pub mod calibration;
pub mod descriptions;
pub mod llm;
pub mod names;
pub mod verbalize;
mod words;

#[cfg(test)]
mod calibration_tests;

use std::collections::HashSet;

use serde::Serialize;
use sqlgate_eval::error::{AskError, ServiceError};

use super::registry::Operator;
use super::tqa::wordnet::WordNet;
use super::{labelled_stream, on_enough_stack, MutateError, DEFAULT_SEED};
pub use agree::{agrees_with, agrees_with_gold};
pub use names::SchemaNames;
use sqlgate_eval::metrics::sqlmorph::{cosine, Embedder};
pub use verbalize::Unsupported;

/// The family name cases are tagged with: test `<suite>::<db>::<seed>::para::p<n>`.
pub const FAMILY: &str = "para";

/// The paper's threshold: paraphrases scoring above 0.6 kept the original's intent (§3.1). It
/// is the default for a sentence-embedding model behind `--embeddings-url`.
pub const DEFAULT_MIN_CS: f64 = 0.6;

/// The offline n-gram embedder's threshold, calibrated on Defog (docs/paraphrase.md): its
/// scores are lexical, so the verbalizer's faithful paraphrases score 0.36 at the 5th
/// percentile and the paper's 0.6 would drop most of them.
pub const OFFLINE_MIN_CS: f64 = 0.35;

/// The in-process sentence model's threshold (`--embedder`, all-MiniLM-L6-v2), calibrated on
/// Defog (docs/paraphrase.md).
pub const MODEL_MIN_CS: f64 = 0.55;

/// Who wrote a paraphrase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// The offline verbalizer.
    Verbalizer,
    /// A chat model.
    Llm,
}

/// Up to `k` distinct questions for `sql` (identifiers split with `wordnet` when given, named
/// as the database's `names` say), none of them the `original` question again, each
/// drawn from its own stream of (`run_seed`, `seed_id`, attempt): deterministic, and
/// independent of the other golds. Fewer than `k` when the query offers too few wordings;
/// `Err` names the first construct without a wording.
pub fn verbalizations(
    seed_id: &str,
    sql: &str,
    original: &str,
    k: usize,
    run_seed: u64,
    wordnet: Option<&WordNet>,
    names: &SchemaNames,
) -> Result<Vec<String>, Unsupported> {
    let found = on_enough_stack(sql, |query| {
        let mut questions: Vec<String> = Vec::new();
        let mut seen = HashSet::from([word_key(original)]);
        // Each attempt draws every choice afresh; a few per wanted question is plenty.
        for attempt in 0..k.saturating_mul(8) {
            if questions.len() == k {
                break;
            }
            let label = attempt.to_string();
            let mut rng = labelled_stream(run_seed, seed_id, &[FAMILY, &label]);
            match verbalize::question(&query, &mut rng, wordnet, names) {
                Ok(question) => {
                    if seen.insert(word_key(&question)) {
                        questions.push(question);
                    }
                }
                Err(unsupported) => return Ok(Err(unsupported)),
            }
        }
        Ok(Ok(questions))
    });
    found.unwrap_or_else(|error| Err(unreadable(error)))
}

/// What a paraphrase's similarity is measured against: the case's question, or, when the
/// benchmark has none (Spider's `gold.txt`), the gold's own reading (one verbalization from a
/// stream of its own, never among the paraphrases, which must differ from it). With no
/// reference a paraphrase could only score 0, and the filter would keep nothing.
pub fn reference(
    seed_id: &str,
    sql: &str,
    question: &str,
    run_seed: u64,
    wordnet: Option<&WordNet>,
    names: &SchemaNames,
) -> Result<Reference, Unsupported> {
    if !question.trim().is_empty() {
        return Ok(Reference::Question(question.to_string()));
    }
    let found = on_enough_stack(sql, |query| {
        let mut rng = labelled_stream(run_seed, seed_id, &[FAMILY, "reading"]);
        Ok(verbalize::question(&query, &mut rng, wordnet, names))
    });
    found
        .unwrap_or_else(|error| Err(unreadable(error)))
        .map(Reference::GoldReading)
}

/// The text paraphrases are compared with, see [`reference()`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// The benchmark's question.
    Question(String),
    /// The gold's reading, for a case without a question.
    GoldReading(String),
}

impl Reference {
    /// The text itself.
    pub fn text(&self) -> &str {
        match self {
            Reference::Question(text) | Reference::GoldReading(text) => text,
        }
    }
}

/// The single-error mutants of the gold `sql` (case `id`) that mean something else, as the
/// filter's calibration draws its wrong paraphrases from (docs/paraphrase.md): a mutant the
/// verbalizer reads as it reads the gold (`SUM(CASE WHEN c THEN 1 END)` for `COUNT(CASE WHEN
/// c THEN 1 END)`, both "the number of ... where c") computes the same thing in other SQL, and
/// its readings are faithful, so it is left out. A gold the parser refuses has none.
pub fn wrong_queries(id: &str, sql: &str) -> Vec<(Operator, String)> {
    let names = SchemaNames::default();
    let reading =
        |sql: &str| reference(id, sql, "", DEFAULT_SEED, None, &names).map(|r| word_key(r.text()));
    let gold = reading(sql);
    let mutants = super::every_variant(sql, 1).unwrap_or_default();
    mutants
        .into_iter()
        .filter(|(_, mutant)| gold.is_err() || reading(mutant) != gold)
        .collect()
}

/// Why the parser's refusal means the gold gets no paraphrase.
fn unreadable(error: MutateError) -> Unsupported {
    match error {
        MutateError::TooComplex(why) => Unsupported(format!("SQL that is {why}")),
        MutateError::NotAQuery => Unsupported("statement other than a query".into()),
        _ => Unsupported("SQL the parser cannot read".into()),
    }
}

/// The words of a text, lower case: two texts that differ only in case, punctuation and
/// spacing have the same key (they are the same question).
pub fn word_key(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// What the filter decides about one paraphrase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Similar enough and faithful to the gold.
    Kept,
    /// Its cosine similarity to the [`reference()`] is below the threshold.
    TooDissimilar,
    /// It drops a value, negates a condition, flips a comparison or swaps an aggregate of the
    /// gold ([`agrees_with_gold`]): a lexical embedder scores such a question as close as a
    /// faithful one.
    Disagrees,
}

/// The filter (docs/paraphrase.md): similar enough to the original question, and saying what
/// the `gold` computes (the verbalizer's paraphrases and a chat model's alike), its tables and
/// columns also said by their human `names`.
pub fn judge(cs: f64, min_cs: f64, gold: &str, paraphrase: &str, names: &SchemaNames) -> Verdict {
    if cs < min_cs {
        Verdict::TooDissimilar
    } else if !agrees_with(gold, paraphrase, names) {
        Verdict::Disagrees
    } else {
        Verdict::Kept
    }
}

/// The cosine similarity of each paraphrase's embedding to the original question's.
pub fn similarities(
    embedder: &dyn Embedder,
    original: &str,
    paraphrases: &[String],
) -> Result<Vec<f64>, AskError> {
    if paraphrases.is_empty() {
        return Ok(Vec::new());
    }
    let mut texts = Vec::with_capacity(paraphrases.len() + 1);
    texts.push(original.to_string());
    texts.extend(paraphrases.iter().cloned());
    let vectors = embedder.embed(&texts)?;
    if vectors.len() != texts.len() {
        let problem = format!(
            "the embedder returned {} vectors for {} texts",
            vectors.len(),
            texts.len()
        );
        return Err(ServiceError(problem).into());
    }
    let (original, rest) = vectors
        .split_first()
        .ok_or_else(|| ServiceError("no vectors".into()))?;
    Ok(rest.iter().map(|v| cosine(original, v)).collect())
}

/// The gold SQL as the seed has it: one query, or the list of equally correct ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum GoldSql {
    /// A single gold query.
    One(String),
    /// Several equally correct ones.
    Several(Vec<String>),
}

impl GoldSql {
    /// `gold` as the seed had it: a one-element list becomes a single query.
    pub fn of(gold: &[String]) -> GoldSql {
        match gold {
            [one] => GoldSql::One(one.clone()),
            several => GoldSql::Several(several.to_vec()),
        }
    }
}

/// One line of the family file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// The paraphrase's id, from [`paraphrase_id`].
    pub id: String,
    /// The case it paraphrases.
    pub seed_id: String,
    /// The seed's database.
    pub db: String,
    /// The seed's gold SQL, unchanged.
    pub sql: GoldSql,
    /// The paraphrased question.
    pub question: String,
    /// The seed's evidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// Cosine similarity to the original question (or to `reading`), rounded to 4 decimals.
    pub cs: f64,
    /// The gold's reading `cs` was measured against, when the seed has no question.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reading: Option<String>,
    /// Who wrote the paraphrase.
    pub method: Method,
}

/// `<seed>::para::p<n>`, n counting the generated paraphrases from 1 (a dropped one leaves
/// its number unused, so ids do not shift with the threshold).
pub fn paraphrase_id(seed_id: &str, n: usize) -> String {
    format!("{seed_id}::{FAMILY}::p{n}")
}

/// `cs` as written: 4 decimals are plenty and keep the file readable.
pub fn rounded(cs: f64) -> f64 {
    (cs * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlgate_eval::metrics::sqlmorph::NgramEmbedder;

    #[test]
    fn verbalizations_are_distinct_deterministic_and_seeded() {
        let sql =
            "SELECT title, price FROM books WHERE genre = 'Poetry' ORDER BY price DESC LIMIT 3";
        let first = verbalizations("q1", sql, "", 5, 42, None, &SchemaNames::default()).unwrap();
        assert_eq!(first.len(), 5);
        assert_eq!(first.iter().collect::<HashSet<_>>().len(), 5);
        assert_eq!(
            first,
            verbalizations("q1", sql, "", 5, 42, None, &SchemaNames::default()).unwrap()
        );
        assert_ne!(
            first,
            verbalizations("q1", sql, "", 5, 43, None, &SchemaNames::default()).unwrap()
        );
        for question in &first {
            assert!(question.contains("\"Poetry\""), "{question}");
            assert!(question.contains('3'), "{question}");
        }
    }

    #[test]
    fn the_original_question_is_no_paraphrase_of_itself() {
        let sql = "SELECT COUNT(*) FROM customers";
        let all = verbalizations("q", sql, "", 50, 42, None, &SchemaNames::default()).unwrap();
        let original = all[0].to_uppercase();
        let without =
            verbalizations("q", sql, &original, 50, 42, None, &SchemaNames::default()).unwrap();
        assert_eq!(without.len(), all.len() - 1);
        assert!(!without.contains(&all[0]));
    }

    #[test]
    fn a_case_without_a_question_is_compared_with_the_golds_reading() {
        let sql = "SELECT name FROM singer WHERE age > 30";
        let asked = reference(
            "q",
            sql,
            "Who is over 30?",
            42,
            None,
            &SchemaNames::default(),
        )
        .unwrap();
        assert_eq!(asked, Reference::Question("Who is over 30?".into()));
        let reading = reference("q", sql, "  ", 42, None, &SchemaNames::default()).unwrap();
        let Reference::GoldReading(text) = &reading else {
            panic!("{reading:?}");
        };
        assert!(text.contains("30") && text.contains("singer"), "{text}");
        assert_eq!(
            reading,
            reference("q", sql, "", 42, None, &SchemaNames::default()).unwrap()
        );
        let paraphrases = verbalizations(
            "q",
            sql,
            reading.text(),
            10,
            42,
            None,
            &SchemaNames::default(),
        )
        .unwrap();
        assert!(!paraphrases.contains(text), "{paraphrases:?}");
        let error =
            reference("q", "SELECT FROM", "", 42, None, &SchemaNames::default()).unwrap_err();
        assert_eq!(error.0, "SQL the parser cannot read");
    }

    #[test]
    fn unreadable_sql_is_reported_not_guessed() {
        let error = verbalizations(
            "q",
            "SELECT FROM WHERE",
            "",
            3,
            42,
            None,
            &SchemaNames::default(),
        )
        .unwrap_err();
        assert_eq!(error.0, "SQL the parser cannot read");
        let sql = "WITH t AS (SELECT 1) SELECT * FROM t";
        let error = verbalizations("q", sql, "", 3, 42, None, &SchemaNames::default()).unwrap_err();
        assert_eq!(error.0, "WITH clause");
    }

    #[test]
    fn similarity_is_one_for_the_same_text_and_lower_for_others() {
        let embedder = NgramEmbedder::default();
        let scores = similarities(
            &embedder,
            "How many books are there?",
            &[
                "How many books are there?".to_string(),
                "Count the books.".to_string(),
                "What is the capital of France?".to_string(),
            ],
        )
        .unwrap();
        assert!((scores[0] - 1.0).abs() < 1e-9);
        assert!(scores[1] > scores[2], "{scores:?}");
        assert!(similarities(&embedder, "x", &[]).unwrap().is_empty());
    }

    #[test]
    fn gold_sql_keeps_its_shape() {
        let one = serde_json::to_string(&GoldSql::of(&["SELECT 1".to_string()])).unwrap();
        assert_eq!(one, "\"SELECT 1\"");
        let two = GoldSql::of(&["SELECT 1".to_string(), "SELECT 2".to_string()]);
        assert_eq!(
            serde_json::to_string(&two).unwrap(),
            "[\"SELECT 1\",\"SELECT 2\"]"
        );
        assert_eq!(rounded(0.123_456), 0.1235);
        assert_eq!(paraphrase_id("q01", 3), "q01::para::p3");
    }
}
