//! Linker-table elimination (Riahi 2025 thesis ch. 4, corrected as in spec §3.7): find the
//! query's linker table, find the words of the question and evidence that mention it, and
//! replace them with WordNet synonyms (deterministic synonym replacement, spec §6). The SQL is
//! never changed.

use serde::Serialize;

use super::ident::{is_word, segments};
use super::text::{lemma, tokenize, Token};
use super::usage::{inflect_verb, usage, Usage};
use super::wordnet::WordNet;
use crate::mutate::jqe::graph::SchemaGraph;
use crate::mutate::jqe::query::Jqg;
use crate::mutate::rewrite_check;

/// The linker table of a join query graph (spec §3.2): with at least three tables, the node of
/// highest betweenness centrality in G_Q; ties broken by betweenness in the schema graph, then
/// by name. `None` for smaller graphs.
pub fn linker_table(jqg: &Jqg, schema: &SchemaGraph) -> Option<usize> {
    if jqg.nodes.len() < 3 {
        return None;
    }
    let local = SchemaGraph {
        tables: jqg
            .nodes
            .iter()
            .map(|&t| schema.tables[t].clone())
            .collect(),
        edges: jqg
            .edges
            .iter()
            .filter_map(|(&(a, b), labels)| {
                let i = jqg.nodes.iter().position(|&n| n == a)?;
                let j = jqg.nodes.iter().position(|&n| n == b)?;
                Some(((i.min(j), i.max(j)), labels.clone()))
            })
            .collect(),
        columns: Vec::new(),
    };
    let in_query = local.betweenness();
    let in_schema = schema.betweenness();
    const EPS: f64 = 1e-9;
    let best = in_query.iter().cloned().fold(f64::MIN, f64::max);
    let mut tied: Vec<usize> = (0..jqg.nodes.len())
        .filter(|&i| (in_query[i] - best).abs() < EPS)
        .map(|i| jqg.nodes[i])
        .collect();
    tied.sort_by(|&a, &b| {
        in_schema[b]
            .partial_cmp(&in_schema[a])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| {
                schema.tables[a]
                    .to_lowercase()
                    .cmp(&schema.tables[b].to_lowercase())
            })
    });
    tied.first().copied()
}

/// A segment of the linker table's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Segment {
    /// The segment as written in the table's name.
    pub text: String,
    /// Its WordNet lemma (the text itself when WordNet has none).
    pub lemma: String,
    /// WordNet does not know it as a word, or it has at most two letters.
    pub is_abbreviation: bool,
}

/// The linker table's segments, each flagged as an abbreviation when WordNet does not know it
/// as a word or it has at most two letters (spec §3.3).
pub fn linker_segments(table: &str, wordnet: &WordNet) -> Vec<Segment> {
    segments(table)
        .into_iter()
        .map(|text| Segment {
            lemma: lemma(&text, wordnet),
            is_abbreviation: text.chars().count() <= 2 || !is_word(&text, wordnet),
            text,
        })
        .collect()
}

/// A word of the text that mentions a segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mention {
    /// The word as written in the text.
    pub token: String,
    /// Its lemma, which matched the segment's.
    pub lemma: String,
    /// Char offset of the word in the text, and its length in chars.
    pub position: usize,
    /// The word's length in chars.
    pub len: usize,
    /// Index of the segment it mentions.
    pub segment: usize,
}

const STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "in", "on", "at", "by", "for", "to", "and", "or", "is", "are", "was",
    "were", "be", "with", "as", "it", "its", "this", "that", "what", "which", "who", "whom", "how",
    "many", "much", "do", "does", "did", "have", "has", "had", "from", "their", "there", "all",
    "any", "each", "not", "no",
];

fn strip_vowels(word: &str) -> String {
    word.chars()
        .filter(|c| !matches!(c.to_ascii_lowercase(), 'a' | 'e' | 'i' | 'o' | 'u'))
        .collect::<String>()
        .to_lowercase()
}

/// Vowel-stripped substring match (fuzzywuzzy `partial_ratio` = 100), hardened as the spec
/// recommends: the segment inside the token, both at least two letters stripped, same initial.
fn abbreviation_matches(segment: &str, token: &str) -> bool {
    let (s, t) = (strip_vowels(segment), strip_vowels(token));
    s.len() >= 2
        && t.len() >= 2
        && t.contains(&s)
        && segment.chars().next().map(|c| c.to_ascii_lowercase())
            == token.chars().next().map(|c| c.to_ascii_lowercase())
}

/// The threshold of spec §3.5 for ordinary words.
pub const WUP_THRESHOLD: f64 = 0.95;

/// The words of `text` that mention one of `segments` (spec §3.5): an abbreviated segment by
/// vowel-stripped substring, a word by Wu–Palmer ≥ 0.95 between lemmas (max over synsets).
/// `masked` words (quoted, numbers, evidence values and schema names) are never matched.
pub fn find_mentions(
    text: &str,
    segments: &[Segment],
    masked: &dyn Fn(&Token) -> bool,
    wordnet: &WordNet,
) -> Vec<Mention> {
    let mut out = Vec::new();
    for token in tokenize(text) {
        let lower = token.text.to_lowercase();
        if token.quoted
            || masked(&token)
            || lower.chars().any(|c| c.is_ascii_digit())
            || STOPWORDS.contains(&lower.as_str())
        {
            continue;
        }
        let token_lemma = lemma(&token.text, wordnet);
        let found = segments.iter().position(|s| {
            if s.is_abbreviation {
                abbreviation_matches(&s.text, &lower)
            } else {
                s.lemma == token_lemma || wordnet.wup_max(&s.lemma, &token_lemma) >= WUP_THRESHOLD
            }
        });
        if let Some(segment) = found {
            out.push(Mention {
                len: token.end - token.start,
                position: token.start,
                token: token.text,
                lemma: token_lemma,
                segment,
            });
        }
    }
    out
}

/// Evidence words hidden from detection (spec §3.4): schema names, values after a comparison.
pub fn evidence_mask<'a>(
    evidence: &'a str,
    schema_names: &'a [String],
) -> impl Fn(&Token) -> bool + 'a {
    let chars: Vec<char> = evidence.chars().collect();
    move |token: &Token| {
        let is_name = schema_names
            .iter()
            .any(|n| n.eq_ignore_ascii_case(&token.text));
        let qualified = token.start > 0 && chars.get(token.start - 1) == Some(&'.')
            || chars.get(token.end) == Some(&'.');
        let before: String = chars[..token.start].iter().collect();
        let after_comparison = before.trim_end().ends_with(['=', '<', '>']);
        is_name || qualified || after_comparison
    }
}

/// The replacement words for `mention` used as `pos`, best first (`n` or `v`, see [`usage`]) (deterministic
/// synonym replacement): WordNet synonyms of the segment's senses of that part of speech, then
/// their hypernyms, the senses ordered by how close they are to the `context` words (rule 1),
/// ties by frequency; filtered by the thesis's rules 0, 2, 4 and 7 (not in a segment, not an
/// original token, no morphological variant, no substring either way); re-inflected to the
/// token's number, or a verb's tense, and capitalization (rule 6). A verb whose regular
/// inflection would be wrong is passed over.
pub fn synonyms(
    mention: &Mention,
    pos: char,
    segments: &[Segment],
    originals: &[String],
    context: &[String],
    wordnet: &WordNet,
) -> Vec<String> {
    let segment = &segments[mention.segment];
    let base = if segment.is_abbreviation {
        mention.lemma.clone()
    } else {
        segment.lemma.clone()
    };
    let mut senses: Vec<(usize, f64, crate::mutate::tqa::wordnet::SynsetId)> = wordnet
        .synsets(&base)
        .into_iter()
        .filter(|s| s.pos == pos)
        .enumerate()
        .map(|(rank, s)| {
            let closeness: f64 = context
                .iter()
                .flat_map(|w| wordnet.synsets(w))
                .filter_map(|c| wordnet.wup(s, c))
                .fold(0.0, f64::max);
            (rank, closeness, s)
        })
        .collect();
    senses.sort_by(|a, b| {
        b.1.partial_cmp(&a.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.0.cmp(&b.0))
    });
    let allowed = |word: &str| {
        let w = word.to_lowercase();
        !w.contains('_')
            && !w.contains('-')
            && w.chars().all(char::is_alphabetic)
            && segments
                .iter()
                .all(|s| !s.text.contains(&w) && !w.contains(&s.text) && !w.contains(&s.lemma))
            && originals.iter().all(|o| {
                let o = o.to_lowercase();
                w != o && !w.contains(&o) && !o.contains(&w) && common_prefix(&w, &o) < 4
            })
            && common_prefix(&w, &base) < 4
    };
    let candidates = senses.iter().flat_map(|&(_, _, sense)| {
        let own = wordnet.synset(sense).map(|s| s.lemmas).unwrap_or_default();
        let parents = wordnet
            .synset(sense)
            .map(|s| s.hypernyms)
            .unwrap_or_default()
            .into_iter()
            .flat_map(|h| wordnet.synset(h).map(|s| s.lemmas).unwrap_or_default());
        own.into_iter().chain(parents).collect::<Vec<_>>()
    });
    let plural = mention.token.to_lowercase() != mention.lemma && mention.token.ends_with('s');
    let mut words: Vec<String> = candidates
        .filter(|c| allowed(c))
        .filter_map(|c| match pos {
            'v' => inflect_verb(&c, &mention.token, wordnet),
            _ if plural => Some(pluralize(&c)),
            _ => Some(c),
        })
        .map(|word| match_case(&word, &mention.token))
        .collect();
    let mut seen = std::collections::HashSet::new();
    words.retain(|w| seen.insert(w.clone()));
    words
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

fn pluralize(word: &str) -> String {
    if word.ends_with(['s', 'x', 'z']) || word.ends_with("ch") || word.ends_with("sh") {
        format!("{word}es")
    } else if word.ends_with('y') && !word.ends_with(['a', 'e', 'o', 'u']) {
        format!("{}ies", &word[..word.len() - 1])
    } else {
        format!("{word}s")
    }
}

fn match_case(word: &str, like: &str) -> String {
    if like.chars().next().is_some_and(char::is_uppercase) {
        let mut chars = word.chars();
        chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default()
    } else {
        word.to_string()
    }
}

/// Why replacing `mention` by `word` (after the `accepted` replacements) would make `text`
/// ungrammatical (a repeated or dangling word that `text` does not already have), else `None`.
fn ungrammatical_with(
    text: &str,
    accepted: &[(Mention, String)],
    mention: &Mention,
    word: &str,
) -> Option<String> {
    if rewrite_check::ungrammatical(text).is_some() {
        return None;
    }
    let mut trial = accepted.to_vec();
    trial.push((mention.clone(), word.to_string()));
    rewrite_check::ungrammatical(&splice(text, &trial))
        .map(|refusal| format!("the synonym `{word}` would give {refusal}"))
}

/// The first of `candidates` (see [`synonyms`]) that reads in `text` after the `accepted`
/// replacements, or why none is taken: a word of a name is never replaced, a verb without a
/// verb synonym stays (said, rather than swapped for a noun), and a synonym that would make
/// the text ungrammatical is refused. `Err(None)`: a noun without a synonym passing the rules.
fn replacement_for(
    text: &str,
    accepted: &[(Mention, String)],
    mention: &Mention,
    used: &Usage,
    candidates: impl Fn(char) -> Vec<String>,
) -> Result<String, Option<String>> {
    let found = match used {
        Usage::Name(name) => {
            return Err(Some(format!(
                "`{}` is part of the name `{name}`",
                mention.token
            )))
        }
        Usage::Verb => candidates('v'),
        Usage::Noun => candidates('n'),
    };
    if found.is_empty() && *used == Usage::Verb {
        return Err(Some(format!(
            "`{}` is a verb here and no verb synonym passed the rules",
            mention.token
        )));
    }
    let mut first_refusal = None;
    for word in found {
        match ungrammatical_with(text, accepted, mention, &word) {
            None => return Ok(word),
            Some(why) => {
                first_refusal.get_or_insert(why);
            }
        }
    }
    Err(first_refusal)
}

/// `text` with each mention's span replaced (right to left, by char offset).
pub fn splice(text: &str, replacements: &[(Mention, String)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let mut ordered: Vec<&(Mention, String)> = replacements.iter().collect();
    ordered.sort_by_key(|(m, _)| std::cmp::Reverse(m.position));
    for (mention, word) in ordered {
        chars.splice(
            mention.position..mention.position + mention.len,
            word.chars(),
        );
    }
    chars.into_iter().collect()
}

/// The thesis's hiding score for one field (spec §3.9): 1 when none of the original matched
/// words and none of the segments remain in the new text (a surface check, case-insensitive).
pub fn hidden(new_text: &str, mentions: &[Mention], segments: &[Segment]) -> bool {
    let words: Vec<String> = tokenize(new_text)
        .into_iter()
        .map(|t| t.text.to_lowercase())
        .collect();
    mentions
        .iter()
        .map(|m| m.token.to_lowercase())
        .chain(segments.iter().map(|s| s.text.clone()))
        .all(|w| !words.contains(&w))
}

/// A seed question to augment.
pub struct Seed<'a> {
    /// The case's id.
    pub id: &'a str,
    /// Its question.
    pub question: &'a str,
    /// Its evidence, when the benchmark has one.
    pub evidence: Option<&'a str>,
    /// Its gold query, which names the linker table.
    pub sql: &'a str,
}

/// A mention and the word that replaced it, in the question or the evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Replaced {
    /// `question` or `evidence`.
    pub field: &'static str,
    /// The mention replaced.
    #[serde(flatten)]
    pub mention: Mention,
    /// `None` when no synonym passed the rules or it was refused (the mention stays and is not
    /// hidden).
    pub replacement: Option<String>,
    /// Why the synonym found was refused: it would make the text ungrammatical.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// One augmented seed (deterministic synonym replacement).
#[derive(Debug, Clone, Serialize)]
pub struct Augmented {
    /// The table linking the query's others (highest betweenness in the query's join graph).
    pub linker_table: String,
    /// The linker table's name, segmented.
    pub segments: Vec<Segment>,
    /// The question with the mentions replaced.
    pub question: String,
    /// The evidence with the mentions replaced.
    pub evidence: Option<String>,
    /// Every mention, with its replacement or none.
    pub replaced: Vec<Replaced>,
    /// Hiding score per field with at least one mention (spec §3.9).
    pub question_hidden: Option<bool>,
    /// The same for the evidence.
    pub evidence_hidden: Option<bool>,
}

/// Why a seed gives no augmented case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// The gold query has no join graph: why.
    NoJoinGraph(String),
    /// The query joins fewer than three tables, so no table links others.
    FewerThanThreeTables,
    /// Neither the question nor the evidence mentions the linker table.
    NotMentioned,
}

/// Linker-table elimination of one seed with synonym replacement (spec §3.7).
pub fn augment(seed: &Seed, schema: &SchemaGraph, wordnet: &WordNet) -> Result<Augmented, Skip> {
    let query = super::sql::parse_query(seed.sql).map_err(|e| Skip::NoJoinGraph(e.to_string()))?;
    let jqg = Jqg::of(&query, schema).map_err(|e| Skip::NoJoinGraph(e.to_string()))?;
    let lt = linker_table(&jqg, schema).ok_or(Skip::FewerThanThreeTables)?;
    let name = schema.tables[lt].clone();
    let segments = linker_segments(&name, wordnet);
    let schema_names: Vec<String> = schema
        .tables
        .iter()
        .cloned()
        .chain(schema.columns.iter().flatten().cloned())
        .collect();
    let in_question = find_mentions(seed.question, &segments, &|_| false, wordnet);
    let in_evidence = seed
        .evidence
        .map(|e| find_mentions(e, &segments, &evidence_mask(e, &schema_names), wordnet))
        .unwrap_or_default();
    if in_question.is_empty() && in_evidence.is_empty() {
        return Err(Skip::NotMentioned);
    }
    let originals: Vec<String> = in_question
        .iter()
        .chain(&in_evidence)
        .map(|m| m.token.clone())
        .collect();
    let context: Vec<String> = tokenize(seed.question)
        .into_iter()
        .filter(|t| !t.quoted && !in_question.iter().any(|m| m.position == t.start))
        .map(|t| t.text.to_lowercase())
        .filter(|w| !STOPWORDS.contains(&w.as_str()) && w.chars().all(char::is_alphabetic))
        .take(6)
        .collect();
    let mut replaced = Vec::new();
    let mut rewrite = |text: &str, mentions: Vec<Mention>, field: &'static str| {
        let mut splices: Vec<(Mention, String)> = Vec::new();
        let found = mentions.clone();
        let tokens = tokenize(text);
        for mention in mentions {
            let at = tokens.iter().position(|t| t.start == mention.position);
            let used = at.map_or(Usage::Noun, |i| usage(text, &tokens, i, wordnet));
            let found = replacement_for(text, &splices, &mention, &used, |pos| {
                synonyms(&mention, pos, &segments, &originals, &context, wordnet)
            });
            let (replacement, refused) = match found {
                Ok(word) => {
                    splices.push((mention.clone(), word.clone()));
                    (Some(word), None)
                }
                Err(why) => (None, why),
            };
            replaced.push(Replaced {
                field,
                mention,
                replacement,
                refused,
            });
        }
        let new = splice(text, &splices);
        let hidden_here = (!found.is_empty()).then(|| hidden(&new, &found, &segments));
        (new, hidden_here)
    };
    let (question, question_hidden) = rewrite(seed.question, in_question, "question");
    let (evidence, evidence_hidden) = match seed.evidence {
        Some(e) => {
            let (text, hidden) = rewrite(e, in_evidence, "evidence");
            (Some(text), hidden)
        }
        None => (None, None),
    };
    Ok(Augmented {
        linker_table: name,
        segments,
        question,
        evidence,
        replaced,
        question_hidden,
        evidence_hidden,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::jqe::graph::{ColRef, Column, ForeignKey, Schema, Table};

    fn table(name: &str, columns: &[&str]) -> Table {
        Table {
            name: name.into(),
            columns: columns
                .iter()
                .map(|c| Column {
                    name: (*c).into(),
                    decl_type: "TEXT".into(),
                    primary_key: false,
                    not_null: false,
                })
                .collect(),
        }
    }

    #[test]
    fn a_synonym_that_would_repeat_a_word_is_refused() {
        let text = "Name the club an order came from.";
        let order = Mention {
            token: "order".into(),
            lemma: "order".into(),
            position: 17,
            len: 5,
            segment: 0,
        };
        assert_eq!(
            ungrammatical_with(text, &[], &order, "club").as_deref(),
            Some("the synonym `club` would give a repeated word: club … club")
        );
        assert_eq!(ungrammatical_with(text, &[], &order, "item"), None);
        // A text that already reads badly is not the synonym's fault.
        let bad = "Name the the club an order came from.";
        let shifted = Mention {
            position: 21,
            ..order
        };
        assert_eq!(ungrammatical_with(bad, &[], &shifted, "club"), None);
    }

    /// A name's word is never replaced, a verb without a verb synonym stays (its record says
    /// why), and a synonym that would read "an club" gives way to the next.
    #[test]
    fn a_synonym_must_fit_the_words_use_and_article() {
        let text = "Which customers have placed an order? Ask Zoë Clarke.";
        let mention = |token: &str| Mention {
            token: token.into(),
            lemma: token.into(),
            position: text[..text.find(token).unwrap()].chars().count(),
            len: token.chars().count(),
            segment: 0,
        };
        let offers = |words: &'static [&'static str]| {
            move |_: char| words.iter().map(|w| w.to_string()).collect::<Vec<_>>()
        };
        let name = Usage::Name("Zoë Clarke".into());
        assert_eq!(
            replacement_for(text, &[], &mention("Clarke"), &name, offers(&["clerk"])),
            Err(Some("`Clarke` is part of the name `Zoë Clarke`".into()))
        );
        let placed = mention("placed");
        assert_eq!(
            replacement_for(text, &[], &placed, &Usage::Verb, offers(&[])),
            Err(Some(
                "`placed` is a verb here and no verb synonym passed the rules".into()
            ))
        );
        let order = mention("order");
        assert_eq!(
            replacement_for(
                text,
                &[],
                &order,
                &Usage::Noun,
                offers(&["club", "association"])
            ),
            Ok("association".into())
        );
        assert_eq!(
            replacement_for(text, &[], &order, &Usage::Noun, offers(&["club"])),
            Err(Some(
                "the synonym `club` would give a wrong article: an club".into()
            ))
        );
        assert_eq!(
            replacement_for(text, &[], &order, &Usage::Noun, offers(&[])),
            Err(None)
        );
    }

    fn movie_schema() -> SchemaGraph {
        let schema = Schema {
            tables: vec![
                table("actor", &["ActorID", "Name"]),
                table("movie", &["MovieID", "Title"]),
                table(
                    "characters",
                    &["MovieID", "ActorID", "CharacterName", "creditOrder"],
                ),
            ],
            foreign_keys: vec![
                ForeignKey {
                    from: ColRef::new("characters", "MovieID"),
                    to: ColRef::new("movie", "MovieID"),
                },
                ForeignKey {
                    from: ColRef::new("characters", "ActorID"),
                    to: ColRef::new("actor", "ActorID"),
                },
            ],
        };
        SchemaGraph::build(&schema, false)
    }

    const MOVIE_SQL: &str = "SELECT T3.Name FROM movie AS T1 INNER JOIN characters AS T2 ON T1.MovieID = T2.MovieID INNER JOIN actor AS T3 ON T3.ActorID = T2.ActorID WHERE T1.Title = 'American Hustle' AND T2.creditOrder = '2'";
    const MOVIE_NL: &str =
        "Who played the No.2 character in the credit list of the movie \"American Hustle\"?";

    fn jqg(sql: &str, schema: &SchemaGraph) -> Jqg {
        let statements =
            sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::SQLiteDialect {}, sql)
                .unwrap();
        let sqlparser::ast::Statement::Query(query) = &statements[0] else {
            panic!()
        };
        Jqg::of(query, schema).unwrap()
    }

    /// Spec §3.8: the linker table, its segment, the match and its offset.
    #[test]
    fn the_movie_example_finds_characters_at_offset_20() {
        let schema = movie_schema();
        let lt = linker_table(&jqg(MOVIE_SQL, &schema), &schema).unwrap();
        assert_eq!(schema.tables[lt], "characters");
        let Some(wn) = super::super::wordnet::for_tests() else {
            return;
        };
        let segments = linker_segments("characters", wn);
        assert_eq!(
            segments,
            [Segment {
                text: "characters".into(),
                lemma: "character".into(),
                is_abbreviation: false
            }]
        );
        let mentions = find_mentions(MOVIE_NL, &segments, &|_| false, wn);
        assert_eq!(mentions.len(), 1, "{mentions:?}");
        assert_eq!(
            (mentions[0].token.as_str(), mentions[0].position),
            ("character", 20)
        );
        let originals = vec!["character".to_string()];
        let context: Vec<String> = ["movie", "credit"].map(String::from).to_vec();
        let word = synonyms(&mentions[0], 'n', &segments, &originals, &context, wn).remove(0);
        let new = splice(MOVIE_NL, &[(mentions[0].clone(), word.clone())]);
        assert!(hidden(&new, &mentions, &segments), "{new}");
        assert_eq!(new, MOVIE_NL.replace("character", &word));
    }

    #[test]
    fn a_two_table_query_has_no_linker_and_a_triangle_falls_back_to_the_schema() {
        let schema = movie_schema();
        let two = jqg(
            "SELECT * FROM movie JOIN characters ON movie.MovieID = characters.MovieID",
            &schema,
        );
        assert_eq!(linker_table(&two, &schema), None);
        // A triangle a–b–c (every betweenness 0 in the query) where b also links d in the
        // schema: b is the more central table there.
        let fk = |from: &str, to: &str| ForeignKey {
            from: ColRef::new(from, &format!("{to}_id")),
            to: ColRef::new(to, "id"),
        };
        let schema = SchemaGraph::build(
            &Schema {
                tables: ["a", "b", "c", "d"]
                    .map(|t| table(t, &["id", "a_id", "b_id", "c_id", "d_id"]))
                    .to_vec(),
                foreign_keys: vec![fk("a", "b"), fk("b", "c"), fk("c", "a"), fk("b", "d")],
            },
            false,
        );
        let triangle = jqg(
            "SELECT * FROM a JOIN b ON a.b_id = b.id JOIN c ON b.c_id = c.id AND c.a_id = a.id",
            &schema,
        );
        assert_eq!(triangle.nodes.len(), 3);
        assert_eq!(
            linker_table(&triangle, &schema).map(|t| schema.tables[t].as_str()),
            Some("b")
        );
    }

    #[test]
    fn abbreviations_match_by_vowel_stripped_substring() {
        for (segment, token, expected) in [
            ("disp", "display", true),
            ("char", "character", true),
            ("num", "number", true),
            ("img", "image", true),
            ("qty", "quantity", false),
            ("frpm", "free", false),
            ("dsp", "is", false),
        ] {
            assert_eq!(
                abbreviation_matches(segment, token),
                expected,
                "{segment}/{token}"
            );
        }
    }

    #[test]
    fn evidence_values_and_schema_names_are_masked() {
        let evidence = "top role refers to creditOrder = 'top'; characters.name is the role";
        let names = vec!["creditOrder".to_string()];
        let mask = evidence_mask(evidence, &names);
        let masked: Vec<String> = tokenize(evidence)
            .into_iter()
            .filter(|t| mask(t))
            .map(|t| t.text)
            .collect();
        assert_eq!(masked, ["creditOrder", "characters", "name"]);
    }
}
