//! What each clause of a gold query is said by in its question, so a rewrite that drops it
//! can be refused: "List the restaurants in Palo Alto ordered by rating" names the ORDER BY's
//! `rating`, and a rewrite with neither "rating", nor a synonym or abbreviation of it, lost it.
//!
//! A clause's mention is a word of the original that names an identifier of the gold's WHERE,
//! GROUP BY, HAVING or ORDER BY (a column or a SELECT alias, not a table alias or a function):
//! the same word up to inflection (the same first five letters of its singular), or a WordNet
//! synonym (a shared synset) when the generator has WordNet. A rewrite keeps it when one of its
//! words names the identifier or the original's word the same way, or abbreviates either (same
//! initial, its letters in order: TQA's `rtng` for `rating`), or, for a column compared with a
//! string, when it states the string ("poetry books" still says `genre = 'Poetry'`).

use sqlparser::dialect::SQLiteDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer};

use sqlgate_eval::metrics::sqlmorph::{cosine, Embedder};

use super::para::word_key;
use super::tqa::wordnet::WordNet;

/// An identifier a clause of the gold uses, and the original's words that name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClauseMention {
    /// The clause: `WHERE`, `GROUP BY`, `HAVING` or `ORDER BY`.
    pub clause: &'static str,
    /// The identifier as the gold writes it.
    pub identifier: String,
    /// The original's words (lowercased) that name it.
    pub said_as: Vec<String>,
    /// The string the clause compares it with (`= 'Poetry'`), lowercased: saying it says the
    /// column ("poetry books"); a number does not ("above 10" of what?).
    pub value: Option<String>,
}

/// Words that name nothing in a question even when an identifier is spelled so.
const FUNCTION_WORDS: &[&str] = &[
    "the", "and", "for", "with", "from", "that", "this", "which", "what", "their", "each", "have",
    "has", "are", "was", "were", "how", "many", "much", "all", "any", "not", "per",
];

/// The identifiers of the gold's WHERE, GROUP BY, HAVING and ORDER BY that `original` names.
pub fn clause_mentions(original: &str, sql: &str, wordnet: Option<&WordNet>) -> Vec<ClauseMention> {
    let original_words = word_key(original);
    let mut out: Vec<ClauseMention> = Vec::new();
    for (clause, identifier, value) in clause_identifiers(sql) {
        let parts = identifier_words(&identifier);
        let said_as: Vec<String> = original_words
            .iter()
            .filter(|w| !FUNCTION_WORDS.contains(&w.as_str()))
            .filter(|w| parts.iter().any(|p| same_word(w, p, wordnet)))
            .cloned()
            .collect();
        let known = out
            .iter()
            .any(|m| m.identifier.eq_ignore_ascii_case(&identifier));
        if !said_as.is_empty() && !known {
            out.push(ClauseMention {
                clause,
                identifier,
                said_as,
                value,
            });
        }
    }
    out
}

/// A word of a rewrite whose sentence-model embedding is more similar than this to one of a
/// mention's words says the mention (SQLMorph's semantic-matching threshold). On
/// all-MiniLM-L6-v2 it accepts "movie" for "film", "cost" for "price", "worker" for
/// "employee", and none of the related words that are no synonyms ("teacher" for "student"
/// 0.66, "lowest" for "highest" 0.66, "month" for "year" 0.65): [`SYNONYM_PAIRS`].
pub const SYNONYM_MIN_CS: f64 = 0.7;

/// Word pairs, and whether one says the other, that [`SYNONYM_MIN_CS`] is measured on.
pub const SYNONYM_PAIRS: &[(&str, &str, bool)] = &[
    ("film", "movie", true),
    ("employee", "worker", true),
    ("country", "nation", true),
    ("price", "cost", true),
    ("author", "writer", true),
    ("revenue", "income", true),
    ("rating", "score", true),
    ("salary", "pay", true),
    ("stadium", "arena", true),
    ("rating", "evaluation", true),
    ("highest", "lowest", false),
    ("student", "teacher", false),
    ("year", "month", false),
    ("singer", "song", false),
    ("city", "country", false),
    ("department", "faculty", false),
    ("capacity", "size", false),
    ("author", "title", false),
    ("age", "name", false),
    ("revenue", "order", false),
    ("rating", "books", false),
    ("price", "genre", false),
];

/// Whether `rewrite` still says `mention` (see the module's comment); with a sentence `model`,
/// a word whose meaning is close enough ([`SYNONYM_MIN_CS`]) says it too.
pub fn still_said(
    rewrite: &str,
    mention: &ClauseMention,
    wordnet: Option<&WordNet>,
    model: Option<&dyn Embedder>,
) -> bool {
    let joined = identifier_words(&mention.identifier).concat();
    let mut names = identifier_words(&mention.identifier);
    names.extend(mention.said_as.iter().cloned());
    let lower = rewrite.to_lowercase();
    let value_said = mention
        .value
        .as_ref()
        .is_some_and(|v| !v.is_empty() && lower.contains(v.as_str()));
    let says = |w: &str| {
        names
            .iter()
            .any(|n| same_word(w, n, wordnet) || abbreviates(w, n))
            || abbreviates(w, &joined)
    };
    let tokens = identifiers(rewrite);
    value_said
        || tokens.iter().any(|token| {
            let first = token.split('_').next().unwrap_or_default();
            // An identifier spelled in the text (TQA's `s_id` for "semester id") names a word by
            // its first part's initial.
            let spelled = token.contains('_') && names.iter().any(|n| initials_of(first, n));
            // An abbreviation may be plural ("cntys" for "countries").
            let plural_free = |part: &str| says(part) || part.strip_suffix('s').is_some_and(says);
            spelled || token.split('_').any(plural_free)
        })
        || model.is_some_and(|model| said_by_meaning(model, &names, &tokens))
}

/// The most words of a rewrite compared by meaning with a mention's.
const MEANING_WORDS: usize = 64;

/// Whether one of `tokens` means one of `names` to `model` ([`SYNONYM_MIN_CS`]). A model that
/// fails says nothing: the rewrite is refused, as without it.
fn said_by_meaning(model: &dyn Embedder, names: &[String], tokens: &[String]) -> bool {
    // Each word once, and a bounded number of them: a reply is the model's, of any length.
    let mut words: Vec<String> = tokens
        .iter()
        .filter(|t| t.len() >= 3 && t.chars().all(char::is_alphabetic))
        .cloned()
        .collect();
    words.sort();
    words.dedup();
    words.truncate(MEANING_WORDS);
    let names: Vec<String> = names.iter().filter(|n| n.len() >= 3).cloned().collect();
    if words.is_empty() || names.is_empty() {
        return false;
    }
    let texts: Vec<String> = names.iter().chain(&words).cloned().collect();
    let Ok(vectors) = model.embed(&texts) else {
        return false;
    };
    if vectors.len() != texts.len() {
        return false;
    }
    let (names, words) = vectors.split_at(names.len());
    names
        .iter()
        .any(|n| words.iter().any(|w| cosine(n, w) > SYNONYM_MIN_CS))
}

/// The lowercased runs of letters, digits and `_` of `text` (`s_id` stays one).
fn identifiers(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// `short` is `long`'s initial, or abbreviates it.
fn initials_of(short: &str, long: &str) -> bool {
    (short.chars().count() == 1 && long.starts_with(short)) || abbreviates(short, long)
}

/// (clause, identifier, the value it is compared with) for each identifier the gold's
/// filtering, grouping and ordering clauses use; a qualifier before `.` and a function name
/// are not one.
fn clause_identifiers(sql: &str) -> Vec<(&'static str, String, Option<String>)> {
    let Ok(tokens) = Tokenizer::new(&SQLiteDialect {}, sql).tokenize() else {
        return Vec::new();
    };
    let tokens: Vec<&Token> = tokens
        .iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let mut clause: Option<&'static str> = None;
    let mut out = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let Token::Word(word) = token else {
            continue;
        };
        let next = tokens.get(i + 1);
        match word.keyword {
            Keyword::WHERE => clause = Some("WHERE"),
            Keyword::GROUP => clause = Some("GROUP BY"),
            Keyword::HAVING => clause = Some("HAVING"),
            Keyword::ORDER => clause = Some("ORDER BY"),
            Keyword::SELECT | Keyword::FROM | Keyword::JOIN | Keyword::LIMIT | Keyword::ON => {
                clause = None
            }
            // Column names are often keywords too (`name`, `year`, `status`).
            keyword if word.quote_style.is_some() || !OPERATOR_KEYWORDS.contains(&keyword) => {
                let qualifier = matches!(next, Some(Token::Period));
                let called = matches!(next, Some(Token::LParen));
                if let (Some(clause), false, false) = (clause, qualifier, called) {
                    out.push((clause, word.value.clone(), compared_value(&tokens[i + 1..])));
                }
            }
            _ => {}
        }
    }
    out
}

/// Keywords of an expression or a clause's syntax, never a column's name.
const OPERATOR_KEYWORDS: &[Keyword] = &[
    Keyword::AND,
    Keyword::OR,
    Keyword::NOT,
    Keyword::IN,
    Keyword::IS,
    Keyword::NULL,
    Keyword::LIKE,
    Keyword::ILIKE,
    Keyword::GLOB,
    Keyword::BETWEEN,
    Keyword::AS,
    Keyword::BY,
    Keyword::ASC,
    Keyword::DESC,
    Keyword::CASE,
    Keyword::WHEN,
    Keyword::THEN,
    Keyword::ELSE,
    Keyword::END,
    Keyword::DISTINCT,
    Keyword::EXISTS,
    Keyword::ALL,
    Keyword::ANY,
    Keyword::SOME,
    Keyword::TRUE,
    Keyword::FALSE,
    Keyword::NULLS,
    Keyword::FIRST,
    Keyword::LAST,
    Keyword::CAST,
    Keyword::COLLATE,
    Keyword::INTERVAL,
    Keyword::ESCAPE,
    Keyword::UNION,
    Keyword::INTERSECT,
    Keyword::EXCEPT,
    Keyword::OFFSET,
    Keyword::WITH,
];

/// The string a comparison at the start of `rest` compares with (`= 'Poetry'`, `LIKE '%a%'`).
fn compared_value(rest: &[&Token]) -> Option<String> {
    let compares = match rest.first()? {
        Token::Eq | Token::Neq | Token::Lt | Token::LtEq | Token::Gt | Token::GtEq => true,
        Token::Word(word) => matches!(word.keyword, Keyword::LIKE | Keyword::ILIKE),
        _ => false,
    };
    match rest.get(1)? {
        Token::SingleQuotedString(value) if compares => {
            Some(value.trim_matches('%').to_lowercase())
        }
        _ => None,
    }
}

/// The lowercased words of an identifier, split at `_`, spaces, digits and lower-to-upper case
/// changes (`total_citations`, `creditOrder` → "credit", "order"); words of one or two letters
/// are no mention.
pub(crate) fn identifier_words(identifier: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in identifier.chars() {
        if !c.is_alphabetic() || (c.is_uppercase() && previous_lower) {
            out.push(std::mem::take(&mut current));
        }
        if c.is_alphabetic() {
            current.extend(c.to_lowercase());
        }
        previous_lower = c.is_lowercase();
    }
    out.push(current);
    out.retain(|w| w.chars().count() > 2);
    out
}

/// The same word up to inflection (the first five letters of its singular, or the whole of
/// a shorter one), or WordNet synonyms (a shared synset).
fn same_word(a: &str, b: &str, wordnet: Option<&WordNet>) -> bool {
    let stem = |w: &str| -> String { w.trim_end_matches('s').chars().take(5).collect() };
    let (sa, sb) = (stem(a), stem(b));
    if sa.chars().count() >= 3 && sa == sb {
        return true;
    }
    wordnet.is_some_and(|wn| {
        let theirs = wn.synsets(b);
        wn.synsets(a).iter().any(|s| theirs.contains(s))
    })
}

/// Two-letter words of English, which abbreviate nothing ("in" is no `inventory`).
const SHORT_WORDS: &[&str] = &[
    "in", "on", "at", "by", "to", "of", "or", "an", "as", "is", "it", "if", "no", "so", "up", "we",
    "my", "do", "be", "me", "us", "he", "go", "am",
];

/// `short` abbreviates `long`: shorter, same initial, at least two letters with a consonant
/// after the first, every letter in order (`rtng` for "rating", `nms` for "names").
fn abbreviates(short: &str, long: &str) -> bool {
    if SHORT_WORDS.contains(&short) {
        return false;
    }
    let letters = short.chars().count();
    let vowel = |c: char| matches!(c, 'a' | 'e' | 'i' | 'o' | 'u');
    letters >= 2
        && letters < long.chars().count()
        && short.chars().all(char::is_alphabetic)
        && short.chars().next() == long.chars().next()
        && short.chars().skip(1).any(|c| !vowel(c))
        && {
            let mut rest = long.chars();
            short.chars().all(|c| rest.any(|d| d == c))
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUESTION: &str = "List the restaurants in Palo Alto ordered by rating.";
    const SQL: &str =
        "SELECT name FROM restaurant AS r WHERE r.city_name = 'Palo Alto' ORDER BY r.rating DESC";

    #[test]
    fn the_clauses_mentions_are_the_originals_words_naming_their_columns() {
        let found = clause_mentions(QUESTION, SQL, None);
        let said: Vec<(&str, &str, Vec<&str>)> = found
            .iter()
            .map(|m| {
                let as_words = m.said_as.iter().map(String::as_str).collect();
                (m.clause, m.identifier.as_str(), as_words)
            })
            .collect();
        // `city_name` is said by no word ("Palo Alto" is its value, checked as one).
        assert_eq!(said, [("ORDER BY", "rating", vec!["rating"])]);
    }

    #[test]
    fn a_rewrite_keeps_a_mention_by_inflection_abbreviation_or_the_identifier() {
        let rating = &clause_mentions(QUESTION, SQL, None)[0];
        for kept in [
            "Show Palo Alto's restaurants by their ratings.",
            "Give the rests in Palo Alto ordered by rtng.",
            "Restaurants of Palo Alto, best rating first.",
        ] {
            assert!(still_said(kept, rating, None, None), "{kept}");
        }
        for lost in [
            "Show the restaurants in Palo Alto.",
            "Which restaurants are in Palo Alto, best first?",
        ] {
            assert!(!still_said(lost, rating, None, None), "{lost}");
        }
    }

    #[test]
    fn a_column_compared_with_a_string_is_kept_by_the_string_not_by_a_number() {
        let sql = "SELECT count(*) FROM orders WHERE total > 10";
        let total = &clause_mentions("How many orders have a total above 10?", sql, None)[0];
        assert!(!still_said(
            "How many orders are above 10?",
            total,
            None,
            None
        ));
    }

    #[test]
    fn a_compared_column_is_kept_by_its_value() {
        let sql = "SELECT title FROM books WHERE genre = 'Poetry'";
        let genre = &clause_mentions("Which books are in the Poetry genre?", sql, None)[0];
        assert_eq!(genre.value.as_deref(), Some("poetry"));
        assert!(still_said(
            "Which poetry books are there?",
            genre,
            None,
            None
        ));
        assert!(!still_said("Which books are there?", genre, None, None));
    }

    #[test]
    fn wordnet_synonyms_name_a_column_too() {
        let Some(wn) = super::super::tqa::wordnet::for_tests() else {
            return;
        };
        let sql = "SELECT name FROM client WHERE nation = 'France'";
        let found = clause_mentions("Which customers live in the country France?", sql, Some(wn));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(still_said(
            "Which clients are from the nation France?",
            &found[0],
            Some(wn),
            None
        ));
        assert!(!still_said(
            "Which clients are French?",
            &found[0],
            Some(wn),
            None
        ));
    }

    #[test]
    fn qualifiers_functions_and_other_clauses_are_no_identifiers() {
        let sql = "SELECT b.title, COUNT(*) FROM books AS b JOIN sales AS s ON s.book_id = b.id \
                   WHERE LOWER(b.genre) = 'poetry' GROUP BY b.title HAVING COUNT(*) > 2 \
                   ORDER BY total_sold LIMIT 3";
        assert_eq!(
            clause_identifiers(sql),
            [
                ("WHERE", "genre".to_string(), None),
                ("GROUP BY", "title".to_string(), None),
                ("ORDER BY", "total_sold".to_string(), None)
            ]
        );
    }
}
