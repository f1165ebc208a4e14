//! How a word is used in its text, so that a synonym can read in its place: inside a
//! capitalized name (never replaced), as a verb or as a noun (from WordNet's parts of speech
//! for its form and the word before it), and a verb synonym inflected like the word.

use super::text::Token;
use super::wordnet::WordNet;

/// How a mention is used in its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Usage {
    /// A word of a capitalized name ("Zoë Clarke"): the whole name.
    Name(String),
    /// A noun: replaced only by a noun synset's lemma.
    Noun,
    /// A verb: replaced only by a verb synset's lemma, inflected like the word.
    Verb,
}

/// Words after which a word both noun and verb reads as a noun ("an order", "of orders").
const NOUN_BEFORE: &[&str] = &[
    "a", "an", "the", "each", "every", "their", "its", "his", "her", "our", "your", "my", "this",
    "these", "those", "no", "any", "some", "all", "of", "per", "for", "by", "in", "on", "at",
    "with", "from", "which", "what", "whose", "many", "several", "most", "more", "fewer",
];

/// Words after which such a word reads as a verb ("to order", "did they order").
const VERB_BEFORE: &[&str] = &[
    "to", "did", "do", "does", "didn", "don", "doesn", "will", "would", "can", "could", "should",
    "must", "may", "might", "not", "never", "who", "they", "we", "you", "he", "she", "i",
];

/// How `tokens[i]` is used in `text`.
pub fn usage(text: &str, tokens: &[Token], i: usize, wordnet: &WordNet) -> Usage {
    if let Some(name) = name_around(text, tokens, i) {
        return Usage::Name(name);
    }
    let lower = tokens[i].text.to_lowercase();
    let noun = !wordnet.morphy_pos(&lower, 'n').is_empty();
    let verb = !wordnet.morphy_pos(&lower, 'v').is_empty();
    if !verb {
        return Usage::Noun;
    }
    if !noun {
        return Usage::Verb;
    }
    let previous = i.checked_sub(1).map(|p| &tokens[p]);
    let after_name =
        previous.is_some_and(|p| capitalized(&p.text) && !sentence_start(text, tokens, i - 1));
    let previous = previous.map(|p| p.text.to_lowercase()).unwrap_or_default();
    let past = is_past(&lower, wordnet);
    // A sentence opening on a verb's base form is an order ("List ...", "Order them by ...").
    let imperative = sentence_start(text, tokens, i)
        && wordnet.morphy_pos(&lower, 'v').contains(&lower)
        && !lower.ends_with('s');
    // After an auxiliary only a past form is a verb: "have placed", but "have orders".
    if NOUN_BEFORE.contains(&previous.as_str()) {
        Usage::Noun
    } else if VERB_BEFORE.contains(&previous.as_str()) || after_name || past || imperative {
        Usage::Verb
    } else {
        Usage::Noun
    }
}

/// A past form: ends in `-ed`, or an irregular form of a verb ("sold").
fn is_past(lower: &str, wordnet: &WordNet) -> bool {
    let bases = wordnet.morphy_pos(lower, 'v');
    lower.ends_with("ed")
        || (!bases.iter().any(|b| b == lower) && !lower.ends_with('s') && !lower.ends_with("ing"))
}

fn capitalized(word: &str) -> bool {
    word.chars().next().is_some_and(char::is_uppercase)
}

/// Whether `tokens[i]` opens a sentence: the first word, or after `.`, `?` or `!`.
fn sentence_start(text: &str, tokens: &[Token], i: usize) -> bool {
    let Some(previous) = i.checked_sub(1).map(|p| &tokens[p]) else {
        return true;
    };
    text.chars()
        .skip(previous.end)
        .take(tokens[i].start - previous.end)
        .any(|c| matches!(c, '.' | '?' | '!'))
}

/// The capitalized name `tokens[i]` is a word of: capitalized words next to each other (only
/// spaces between). A sentence's first word is capitalized anyway: it is a name's word only
/// with a capitalized neighbour, and never when it is a question word ("Which Zoë ...").
fn name_around(text: &str, tokens: &[Token], i: usize) -> Option<String> {
    let in_name = |j: usize| capitalized(&tokens[j].text) && !tokens[j].quoted;
    if !in_name(i) {
        return None;
    }
    let adjacent = |a: usize| {
        text.chars()
            .skip(tokens[a].end)
            .take(tokens[a + 1].start - tokens[a].end)
            .all(|c| c == ' ')
    };
    let (mut first, mut last) = (i, i);
    while first > 0 && in_name(first - 1) && adjacent(first - 1) {
        first -= 1;
    }
    while last + 1 < tokens.len() && in_name(last + 1) && adjacent(last) {
        last += 1;
    }
    if sentence_start(text, tokens, first)
        && (first == last || OPENERS.contains(&tokens[first].text.to_lowercase().as_str()))
    {
        first += 1;
    }
    let words: Vec<&str> = tokens
        .get(first..=last)?
        .iter()
        .map(|t| t.text.as_str())
        .collect();
    (first <= i).then(|| words.join(" "))
}

/// Words that open a question capitalized but name nothing.
const OPENERS: &[&str] = &[
    "which", "what", "who", "whom", "whose", "how", "when", "where", "list", "show", "give",
    "name", "find", "return", "count", "the", "for", "in", "of", "is", "are", "did", "do", "does",
];

/// `base` (a verb lemma) inflected as `token` is (`placed` → past, `orders` → third person,
/// `ordering` → gerund); `None` when the verb is irregular or its regular form would double
/// a consonant ("stopped"), which this does not spell.
pub fn inflect_verb(base: &str, token: &str, wordnet: &WordNet) -> Option<String> {
    let lower = token.to_lowercase();
    if wordnet.morphy_pos(&lower, 'v').contains(&lower) {
        return Some(base.to_string());
    }
    if wordnet.is_irregular(base, 'v') || doubles_last_consonant(base) {
        return None;
    }
    let consonant_y = base.ends_with('y') && !base.ends_with(['a', 'e', 'o', 'u']);
    Some(if lower.ends_with("ing") {
        match base.strip_suffix('e') {
            Some(stem) if !base.ends_with("ee") => format!("{stem}ing"),
            _ => format!("{base}ing"),
        }
    } else if lower.ends_with('s') {
        if base.ends_with(['s', 'x', 'z']) || base.ends_with("ch") || base.ends_with("sh") {
            format!("{base}es")
        } else if consonant_y {
            format!("{}ies", &base[..base.len() - 1])
        } else {
            format!("{base}s")
        }
    } else if base.ends_with('e') {
        format!("{base}d")
    } else if consonant_y {
        format!("{}ied", &base[..base.len() - 1])
    } else {
        format!("{base}ed")
    })
}

/// A one-syllable verb ending consonant–vowel–consonant ("stop", "plan") doubles its last
/// letter before `-ed` and `-ing`.
fn doubles_last_consonant(base: &str) -> bool {
    let vowel = |c: char| matches!(c, 'a' | 'e' | 'i' | 'o' | 'u');
    let chars: Vec<char> = base.chars().collect();
    let syllables = chars
        .iter()
        .enumerate()
        .filter(|&(i, &c)| vowel(c) && (i == 0 || !vowel(chars[i - 1])))
        .count();
    match chars.as_slice() {
        [.., a, b, c] => {
            syllables == 1 && !vowel(*a) && vowel(*b) && !vowel(*c) && !matches!(c, 'w' | 'x' | 'y')
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::text::tokenize;
    use super::*;

    /// The usage of each of `words` in `text`.
    fn usages(text: &str, words: &[&str], wordnet: &WordNet) -> Vec<Usage> {
        let tokens = tokenize(text);
        words
            .iter()
            .map(|w| {
                let i = tokens.iter().position(|t| t.text == *w).unwrap();
                usage(text, &tokens, i, wordnet)
            })
            .collect()
    }

    /// The shapes the linker's synonyms broke: "have club an order" (a verb read as a noun),
    /// "Zoë Clarke decree" (the verb after a name).
    #[test]
    fn verbs_nouns_and_names_are_told_apart() {
        let Some(wn) = super::super::wordnet::for_tests() else {
            return;
        };
        let text = "Which customers have placed an order at a store?";
        assert_eq!(
            usages(text, &["placed", "order", "store"], wn),
            [Usage::Verb, Usage::Noun, Usage::Noun]
        );
        let text = "Which books has Zoë Clarke ordered? List each title once.";
        assert_eq!(
            usages(text, &["ordered", "Clarke", "Zoë", "Which", "List"], wn),
            [
                Usage::Verb,
                Usage::Name("Zoë Clarke".into()),
                Usage::Name("Zoë Clarke".into()),
                Usage::Noun,
                Usage::Verb
            ]
        );
        let text = "Orders placed in Canada: what was their total? Sort in alphabetical order.";
        assert_eq!(
            usages(text, &["Orders", "placed", "Canada", "order"], wn),
            [
                Usage::Noun,
                Usage::Verb,
                Usage::Name("Canada".into()),
                Usage::Noun
            ]
        );
    }

    #[test]
    fn a_verb_synonym_is_inflected_like_the_word_or_passed_over() {
        let Some(wn) = super::super::wordnet::for_tests() else {
            return;
        };
        let cases = [
            ("request", "ordered", Some("requested")),
            ("rate", "ordered", Some("rated")),
            ("rate", "orders", Some("rates")),
            ("place", "ordering", Some("placing")),
            ("tidy", "ordered", Some("tidied")),
            ("command", "order", Some("command")),
            ("tell", "ordered", None),
            ("stop", "ordered", None),
        ];
        for (base, like, expected) in cases {
            assert_eq!(
                inflect_verb(base, like, wn).as_deref(),
                expected,
                "{base} like {like}"
            );
        }
    }
}
