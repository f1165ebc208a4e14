//! The one acceptance check every generator applies to a model's rewrite (issue 30): a rewrite
//! is kept only when it is a rewrite of this text. Refused, with the reason: a prompt's own
//! example, the original unchanged where a change was asked, the original with a sentence
//! dropped, a lost value, number or required mention, a clause's mention lost (see
//! [`clause_mentions`]), and the detectable ungrammatical shapes (a repeated word, a wrong
//! article, a dangling word at the end).

use std::fmt;

use sqlgate_eval::metrics::sqlmorph::Embedder;

use super::clause_mentions::{clause_mentions, identifier_words, still_said};
use super::para::word_key;
use super::tqa::wordnet::WordNet;

/// What a rewrite is checked against.
#[derive(Default)]
pub struct Request<'a> {
    /// The text the model was asked to rewrite.
    pub original: &'a str,
    /// The gold query: its string literals and numbers that the original states must stay.
    pub sql: Option<&'a str>,
    /// The texts the prompt shows as examples (see [`template_examples`]).
    pub examples: &'a [String],
    /// Whether the model was asked to change the text (an unchanged answer is then refused).
    pub change_asked: bool,
    /// Names the rewrite must still mention, each by one of its words (JQE's added table).
    pub mentions: &'a [String],
    /// WordNet, when the generator has it: a synonym then keeps a clause's mention.
    pub wordnet: Option<&'a WordNet>,
    /// A sentence model, when the generator has one: a word it finds close enough in meaning
    /// keeps a clause's mention too (above `clause_mentions::SYNONYM_MIN_CS`).
    pub model: Option<&'a dyn Embedder>,
    /// Words of the original the rewrite was asked to remove (a linker table's mentions): a
    /// clause's mention said only by them need not stay.
    pub may_drop: &'a [String],
}

/// Why a rewrite is refused: a fixed reason (for tallies) and what triggered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The reason, one of a few fixed phrases.
    pub why: &'static str,
    /// The value, word or sentence concerned (may be empty).
    pub detail: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.detail.is_empty() {
            f.write_str(self.why)
        } else {
            write!(f, "{}: {}", self.why, self.detail)
        }
    }
}

fn refused(why: &'static str, detail: impl Into<String>) -> Option<Refusal> {
    Some(Refusal {
        why,
        detail: detail.into(),
    })
}

/// Why `rewrite` is no acceptable rewrite for `request`, or `None` when it is one.
pub fn refusal(rewrite: &str, request: &Request<'_>) -> Option<Refusal> {
    let said = word_key(rewrite);
    if let Some(example) = request.examples.iter().find(|e| word_key(e) == said) {
        return refused("the prompt's example", example.as_str());
    }
    if request.change_asked && said == word_key(request.original) {
        return refused("unchanged", "");
    }
    if let Some(dropped) = dropped_sentences(rewrite, request.original) {
        return refused("a sentence of the original dropped", dropped);
    }
    if let Some(value) = required_values(request.original, request.sql)
        .into_iter()
        .find(|v| !contains_value(rewrite, v))
    {
        return refused("a value or number of the original lost", value);
    }
    if let Some(name) = request.mentions.iter().find(|n| !mentions(&said, n)) {
        return refused("a required mention lost", name.as_str());
    }
    if let Some(lost) = lost_clause_mention(rewrite, request) {
        return Some(lost);
    }
    ungrammatical(rewrite)
}

/// The first mention of a gold clause that the original says and `rewrite` no longer does.
fn lost_clause_mention(rewrite: &str, request: &Request<'_>) -> Option<Refusal> {
    let droppable = |word: &String| {
        request
            .may_drop
            .iter()
            .any(|d| d.eq_ignore_ascii_case(word))
    };
    let lost = clause_mentions(request.original, request.sql?, request.wordnet)
        .into_iter()
        .filter(|m| !m.said_as.iter().all(droppable))
        .find(|m| !still_said(rewrite, m, request.wordnet, request.model))?;
    refused(
        "a clause's mention lost",
        format!("{} ({} {})", lost.said_as[0], lost.clause, lost.identifier),
    )
}

/// The detectable ungrammatical shapes of `text`: a word repeated next to itself (or across
/// one article, "club an club"), plural or not ("commands command"), an article that does not
/// fit the next word ("an club"), and a sentence ending on an article, possessive or
/// conjunction.
pub fn ungrammatical(text: &str) -> Option<Refusal> {
    // An identifier spelled in the text (`course.course_id`) is one word, not a repetition.
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '_' && c != '.')
        .map(|w| w.trim_matches('.'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    for (i, word) in words.iter().enumerate() {
        if !word.chars().all(char::is_alphabetic) {
            continue;
        }
        let next = words.get(i + 1);
        let across_article = words
            .get(i + 2)
            .filter(|_| next.is_some_and(|n| ARTICLES.contains(&n.as_str())));
        if let Some(repeat) = [next, across_article]
            .into_iter()
            .flatten()
            .find(|other| singular(other) == singular(word))
        {
            return refused("a repeated word", format!("{word} … {repeat}"));
        }
        if let Some(next) = next.filter(|n| !article_fits(word, n)) {
            return refused("a wrong article", format!("{word} {next}"));
        }
    }
    match words.last() {
        Some(last) if DANGLING.contains(&last.as_str()) => {
            refused("a dangling word at the end", last)
        }
        _ => None,
    }
}

const ARTICLES: &[&str] = &["a", "an", "the"];

/// Whether the article `word` (any other word passes) fits the `next` word: "an" before a
/// vowel sound, "a" before a consonant sound ("an club" does not). Words whose spelling
/// misleads ("an hour", "a user", "a one") pass either way.
fn article_fits(word: &str, next: &str) -> bool {
    const EITHER: &[&str] = &["hour", "hon", "heir", "un", "us", "eu", "one", "once", "ur"];
    // "a grade of A or C": the letter, not an article.
    const NO_NOUN: &[&str] = &["or", "and", "of", "to", "in", "is", "on", "at", "as"];
    if NO_NOUN.contains(&next) {
        return true;
    }
    let vowel = next.starts_with(['a', 'e', 'i', 'o', 'u']);
    let unsure =
        EITHER.iter().any(|p| next.starts_with(p)) || !next.starts_with(char::is_alphabetic);
    match word {
        "a" => !vowel || unsure,
        "an" => vowel || unsure,
        _ => true,
    }
}

/// Words a sentence cannot end on (a preposition can: "which city is it in?").
const DANGLING: &[&str] = &[
    "a", "an", "the", "of", "and", "or", "than", "their", "its", "whose",
];

/// `word` without a plural ending; words of three letters or fewer ("as", "has") keep theirs.
fn singular(word: &str) -> &str {
    if word.chars().count() <= 3 {
        return word;
    }
    word.strip_suffix("es")
        .filter(|stem| stem.ends_with(['s', 'x', 'z', 'h']))
        .or_else(|| word.strip_suffix('s').filter(|stem| !stem.ends_with('s')))
        .unwrap_or(word)
}

/// The sentences of `original` that `rewrite` dropped, when it is exactly the original with
/// one or more whole sentences left out.
fn dropped_sentences(rewrite: &str, original: &str) -> Option<String> {
    let sentences = sentences(original);
    // Subsets of more than a few sentences are not worth enumerating.
    if sentences.len() < 2 || sentences.len() > 8 {
        return None;
    }
    let target = word_key(rewrite);
    let all = (1u32 << sentences.len()) - 1;
    (1..all).find_map(|kept| {
        let chosen = (0..sentences.len()).filter(|i| kept & (1 << i) != 0);
        let words: Vec<String> = chosen.flat_map(|i| word_key(&sentences[i])).collect();
        (words == target).then(|| {
            (0..sentences.len())
                .filter(|i| kept & (1 << i) == 0)
                .map(|i| sentences[i].trim().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
    })
}

/// `text` split after `.`, `?` and `!` that end a sentence (followed by a space or the end).
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        current.push(c);
        if matches!(c, '.' | '?' | '!') && chars.peek().is_none_or(|n| n.is_whitespace()) {
            out.push(std::mem::take(&mut current));
        }
    }
    out.push(current);
    out.retain(|s| !word_key(s).is_empty());
    out
}

/// The values a rewrite must keep: the original's quoted values and numbers, and the gold
/// query's string literals and numbers that the original states (case-insensitively).
fn required_values(original: &str, sql: Option<&str>) -> Vec<String> {
    let mut values = quoted(original);
    values.extend(numbers(original));
    if let Some(sql) = sql {
        let lower = original.to_lowercase();
        let stated = |v: &String| {
            let v = v.to_lowercase();
            !v.is_empty() && contains_value(&lower, &v)
        };
        values.extend(quoted(sql).into_iter().filter(stated));
    }
    values.sort();
    values.dedup();
    values
}

/// The texts between matching quotes, an apostrophe after a letter excepted ("John's").
fn quoted(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut open: Option<(char, usize)> = None;
    for (i, &c) in chars.iter().enumerate() {
        if !matches!(c, '\'' | '"' | '“' | '”') {
            continue;
        }
        let closes = |q: char| q == c || (q == '“' && c == '”');
        match open {
            Some((q, start)) if closes(q) => {
                let value: String = chars[start..i].iter().collect();
                if !value.trim().is_empty() {
                    out.push(value);
                }
                open = None;
            }
            None if !(c == '\'' && i > 0 && chars[i - 1].is_alphanumeric()) => {
                open = Some((c, i + 1))
            }
            _ => {}
        }
    }
    out
}

/// The numbers of `text` (digit runs, with a decimal part).
fn numbers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let decimal_point =
            c == '.' && !current.is_empty() && chars.peek().is_some_and(char::is_ascii_digit);
        if c.is_ascii_digit() || decimal_point {
            current.push(c);
        } else if !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
    }
    out.extend((!current.is_empty()).then_some(current));
    out
}

/// Whether `value` is in `text` on word boundaries, case-insensitively.
fn contains_value(text: &str, value: &str) -> bool {
    let text = text.to_lowercase();
    let value = value.to_lowercase();
    text.match_indices(&value).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + value.len()..].chars().next();
        let edge = |c: Option<char>| !c.is_some_and(char::is_alphanumeric);
        edge(before) && edge(after)
    })
}

/// Whether `words` mention `name` (`order_items`, `OrderItems`): a word that starts with the
/// stem of one of the name's words ("ordered" mentions `orders`).
fn mentions(words: &[String], name: &str) -> bool {
    identifier_words(name).iter().any(|part| {
        let stem: String = singular(part).chars().take(5).collect();
        words.iter().any(|w| w.starts_with(&stem))
    })
}

/// The texts a prompt template shows (its lines, without a leading `Label:` or list number and
/// without lines holding a `{placeholder}`): a rewrite equal to one of them is the prompt's
/// example.
pub fn template_examples(template: &str) -> Vec<String> {
    template
        .lines()
        .filter(|line| !line.contains('{') || !line.contains('}'))
        .map(|line| match line.split_once(':') {
            Some((label, rest)) if word_key(label).len() <= 3 => rest,
            _ => line,
        })
        .map(|line| {
            line.trim_start()
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .trim_start_matches(['.', ')'])
        })
        .map(|line| line.trim().to_string())
        .filter(|line| word_key(line).len() >= 3)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::test_corpus;

    const QUESTION: &str =
        "List the customers from 'Paris' with more than 3 orders. Show their first and last names.";
    const SQL: &str = "SELECT first, last FROM customers WHERE city = 'Paris'";

    fn check(rewrite: &str, examples: &[String], mentions: &[String]) -> Option<Refusal> {
        refusal(
            rewrite,
            &Request {
                original: QUESTION,
                sql: Some(SQL),
                examples,
                change_asked: true,
                mentions,
                ..Default::default()
            },
        )
    }

    fn why(rewrite: &str) -> Option<&'static str> {
        let examples = vec!["How many reviews does each restaurant have?".to_string()];
        check(rewrite, &examples, &["order_items".to_string()]).map(|r| r.why)
    }

    #[test]
    fn a_true_rewrite_is_kept() {
        assert_eq!(
            why("Which clients in 'Paris' placed more than 3 order items? Give their first and last names."),
            None
        );
    }

    #[test]
    fn no_rewrites_are_refused_with_the_reason() {
        let cases = [
            (
                "how many REVIEWS does each restaurant have",
                "the prompt's example",
            ),
            (QUESTION, "unchanged"),
            (
                "List the customers from 'Paris' with more than 3 orders.",
                "a sentence of the original dropped",
            ),
            (
                "Show their first and last names.",
                "a sentence of the original dropped",
            ),
            (
                "Which clients placed more than 3 order items? Give their names.",
                "a value or number of the original lost",
            ),
            (
                "Which clients in 'Paris' placed more than three order items?",
                "a value or number of the original lost",
            ),
            (
                "Which clients in 'Paris' bought more than 3 times? Give their names.",
                "a required mention lost",
            ),
            (
                "Which clients in 'Paris' have club an club at 3 order items?",
                "a repeated word",
            ),
            (
                "Which clients in 'Paris' completed commands command of 3 order items?",
                "a repeated word",
            ),
            (
                "Which clients in 'Paris' have more than 3 order items of the",
                "a dangling word at the end",
            ),
            (
                "Which clients in 'Paris' have regulated an club of 3 order items?",
                "a wrong article",
            ),
        ];
        for (rewrite, expected) in cases {
            assert_eq!(why(rewrite), Some(expected), "{rewrite}");
        }
    }

    #[test]
    fn gold_literals_stated_in_the_question_must_stay() {
        let request = Request {
            original: "Which books are in the Poetry genre?",
            sql: Some("SELECT title FROM books WHERE genre = 'Poetry' AND price > 'x'"),
            examples: &[],
            change_asked: true,
            mentions: &[],
            ..Default::default()
        };
        let lost = refusal("Which books are verse?", &request).unwrap();
        assert_eq!(
            lost.to_string(),
            "a value or number of the original lost: Poetry"
        );
        assert_eq!(refusal("Which poetry books are there?", &request), None);
    }

    #[test]
    fn a_rewrite_that_drops_a_clauses_mention_is_refused() {
        let request = Request {
            original: "List the restaurants in Palo Alto ordered by rating.",
            sql: Some("SELECT name FROM restaurant WHERE city = 'Palo Alto' ORDER BY rating DESC"),
            change_asked: true,
            ..Default::default()
        };
        let lost = refusal("Show the restaurants located in Palo Alto.", &request).unwrap();
        assert_eq!(
            lost.to_string(),
            "a clause's mention lost: rating (ORDER BY rating)"
        );
        for kept in [
            "Show Palo Alto's restaurants, sorted by their ratings.",
            "List the rests in Palo Alto ordered by rtng.",
        ] {
            assert_eq!(refusal(kept, &request), None, "{kept}");
        }
    }

    /// A human's question passes its own check, and TQA's deterministic rewrites of the demo
    /// (its abbreviations: `csts`, `cntys`, `l_nm`) are not refused.
    #[test]
    fn originals_and_tqas_own_rewrites_pass() {
        let wordnet = crate::mutate::tqa::wordnet::for_tests();
        let cases = test_corpus::demo_by_id();
        let mut originals: Vec<test_corpus::Pair> = cases.values().cloned().collect();
        if let Some(data) = sqlgate_test_support::shared_data() {
            originals.extend(test_corpus::defog(&data));
        }
        for test_corpus::Pair { question, gold, .. } in &originals {
            let own = Request {
                original: question,
                sql: Some(gold),
                wordnet,
                ..Default::default()
            };
            assert_eq!(refusal(question, &own), None, "{question}");
        }
        let family = sqlgate_test_support::repo_root().join("benchmarks/demo/tqa/tqa-lo.jsonl");
        for line in std::fs::read_to_string(family).unwrap().lines() {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            let seed = &cases[record["seed_id"].as_str().unwrap()];
            let rewrite = record["question"].as_str().unwrap();
            let check = Request {
                original: &seed.question,
                sql: Some(&seed.gold),
                change_asked: rewrite != seed.question,
                wordnet,
                ..Default::default()
            };
            assert_eq!(refusal(rewrite, &check), None, "{rewrite}");
        }
    }

    #[test]
    fn unchanged_is_fine_when_no_change_was_asked() {
        let request = Request {
            original: "Which books sold?",
            sql: None,
            examples: &[],
            change_asked: false,
            mentions: &[],
            ..Default::default()
        };
        assert_eq!(refusal("which books sold", &request), None);
    }

    #[test]
    fn examples_are_the_template_lines_without_placeholders_or_labels() {
        let template = "Rewrite it.\nExample:\nQuestion: How many reviews does each restaurant have?\nQuestion: {question}\n1. <First question>\n";
        assert_eq!(
            template_examples(template),
            vec!["How many reviews does each restaurant have?"]
        );
        let numbered = template_examples("Output Format:\n1. <First question of them>");
        assert_eq!(numbered, vec!["<First question of them>"]);
    }

    #[test]
    fn plural_and_identifier_shapes_are_read() {
        assert_eq!(singular("commands"), "command");
        assert_eq!(singular("boxes"), "box");
        assert_eq!(singular("class"), "class");
        assert_eq!(singular("as"), "as");
        assert_eq!(ungrammatical("Return the month as a date"), None);
        assert_eq!(ungrammatical("Is it an hour, a user or an order?"), None);
        assert_eq!(ungrammatical("A grade of A or C"), None);
        assert_eq!(
            ungrammatical("a related area (where area.course_id = course.course_id)"),
            None
        );
        assert_eq!(identifier_words("OrderItems_2x"), vec!["order", "items"]);
        assert_eq!(numbers("above 3.5 and 12."), vec!["3.5", "12"]);
        assert_eq!(quoted("John's book 'Dune' and \"It\""), vec!["Dune", "It"]);
    }
}
