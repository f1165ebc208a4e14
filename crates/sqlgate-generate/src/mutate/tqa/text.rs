//! Words of a question with their character offsets, and the deterministic rewrite of schema
//! mentions from a rename map (spec §6: each identifier's natural segments matched by lemma,
//! plural and case variants; quoted values and numbers skipped).

use serde::Serialize;

use super::ident::segments;
use super::rename::RenameMap;
use super::wordnet::WordNet;

/// A word of a text: `start..end` are char offsets into it (the thesis's "position").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Token {
    /// The word as written.
    pub text: String,
    /// Char offset of its first char.
    pub start: usize,
    /// Char offset just past its last char.
    pub end: usize,
    /// Inside a quoted value: never matched, never changed.
    #[serde(skip)]
    pub quoted: bool,
}

/// The words (runs of letters, digits and `_`) of `text`, with char offsets. A quote opens a
/// value unless it is an apostrophe (after a letter).
pub fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut quote: Option<char> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let word_char = |c: char| c.is_alphanumeric() || c == '_';
        if matches!(c, '\'' | '"' | '`') {
            let after_word = i > 0 && word_char(chars[i - 1]);
            match quote {
                Some(q) if q == c => quote = None,
                None if !(c == '\'' && after_word) => quote = Some(c),
                _ => {}
            }
            i += 1;
            continue;
        }
        if word_char(c) {
            let start = i;
            while i < chars.len() && word_char(chars[i]) {
                i += 1;
            }
            tokens.push(Token {
                text: chars[start..i].iter().collect(),
                start,
                end: i,
                quoted: quote.is_some(),
            });
            continue;
        }
        i += 1;
    }
    tokens
}

/// A word's lemma: WordNet's noun base form, else its verb base form, else the word lowercased.
pub fn lemma(word: &str, wordnet: &WordNet) -> String {
    let lower = word.to_lowercase();
    wordnet
        .morphy_pos(&lower, 'n')
        .into_iter()
        .chain(wordnet.morphy_pos(&lower, 'v'))
        .next()
        .unwrap_or(lower)
}

/// One mention replaced in a text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Replacement {
    /// Char offset of the replaced text in the original.
    pub start: usize,
    /// Char offset just past it.
    pub end: usize,
    /// The text replaced.
    pub from: String,
    /// What replaced it.
    pub to: String,
}

const STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "in", "on", "at", "by", "for", "to", "and", "or", "is", "are", "was",
    "be", "with", "as", "it", "its", "no", "not", "all", "any", "each",
];

/// A word's noun base forms (morphy, all of them), or the word itself lowercased.
fn noun_forms(word: &str, wordnet: &WordNet) -> Vec<String> {
    let lower = word.to_lowercase();
    let mut forms = wordnet.morphy_pos(&lower, 'n');
    if forms.is_empty() {
        forms.push(lower);
    }
    forms
}

/// `text` with every mention of a renamed table or column replaced by its new name: the
/// identifier spelled as is (`bond_id`), or its segments as consecutive words matched by lemma
/// (`bonds` → `bnds`, `first names` → `f_nms`). Longest, then leftmost matches win.
pub fn rewrite(text: &str, map: &RenameMap, wordnet: &WordNet) -> (String, Vec<Replacement>) {
    let tokens = tokenize(text);
    let forms: Vec<Vec<String>> = tokens
        .iter()
        .map(|t| noun_forms(&t.text, wordnet))
        .collect();
    // (token span, new name, segment count)
    let mut candidates: Vec<(usize, usize, String)> = Vec::new();
    for (old, new) in map.tables.iter().chain(&map.columns) {
        let parts: Vec<Vec<String>> = segments(old)
            .iter()
            .map(|s| noun_forms(s, wordnet))
            .collect();
        let old_last = segments(old).last().cloned().unwrap_or_default();
        // A plural segment (`books`) is already plural in its new name.
        let old_plural = parts.last().is_some_and(|f| !f.contains(&old_last));
        for i in 0..tokens.len() {
            if tokens[i].quoted || tokens[i].text.chars().all(|c| c.is_ascii_digit()) {
                continue;
            }
            if tokens[i].text.eq_ignore_ascii_case(old) {
                candidates.push((i, i + 1, new.clone()));
                continue;
            }
            let end = i + parts.len();
            if parts.is_empty() || end > tokens.len() {
                continue;
            }
            let matches = (i..end).all(|j| {
                !tokens[j].quoted
                    && !STOPWORDS.contains(&tokens[j].text.to_lowercase().as_str())
                    && forms[j].iter().any(|f| parts[j - i].contains(f))
            });
            if matches {
                let last = tokens[end - 1].text.to_lowercase();
                let base = &segments(old)[parts.len() - 1];
                let plural = last != *base && last.ends_with('s') && !old_plural;
                let mut to = new.clone();
                if plural {
                    to.push('s');
                }
                candidates.push((i, end, to));
            }
        }
    }
    candidates.sort_by(|a, b| (b.1 - b.0).cmp(&(a.1 - a.0)).then(a.0.cmp(&b.0)));
    let mut chosen: Vec<(usize, usize, String)> = Vec::new();
    for candidate in candidates {
        if chosen
            .iter()
            .all(|c| candidate.1 <= c.0 || candidate.0 >= c.1)
        {
            chosen.push(candidate);
        }
    }
    chosen.sort_by_key(|c| c.0);
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut replacements = Vec::new();
    let mut at = 0;
    for (first, end, to) in chosen {
        let (start, stop) = (tokens[first].start, tokens[end - 1].end);
        out.extend(&chars[at..start]);
        out.push_str(&to);
        replacements.push(Replacement {
            start,
            end: stop,
            from: chars[start..stop].iter().collect(),
            to,
        });
        at = stop;
    }
    out.extend(&chars[at..]);
    (out, replacements)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_carry_offsets_and_quotes() {
        let tokens = tokenize("Who's in \"American Hustle\" at No.2?");
        let words: Vec<(&str, usize, bool)> = tokens
            .iter()
            .map(|t| (t.text.as_str(), t.start, t.quoted))
            .collect();
        assert_eq!(
            words,
            [
                ("Who", 0, false),
                ("s", 4, false),
                ("in", 6, false),
                ("American", 10, true),
                ("Hustle", 19, true),
                ("at", 27, false),
                ("No", 30, false),
                ("2", 33, false)
            ]
        );
    }

    #[test]
    fn mentions_are_replaced_but_not_values() {
        let Some(wn) = super::super::wordnet::for_tests() else {
            return;
        };
        let mut map = RenameMap::default();
        map.tables.insert("books".into(), "bks".into());
        map.columns.insert("first_name".into(), "f_nm".into());
        map.columns.insert("title".into(), "ttl".into());
        let (text, replacements) = rewrite(
            "List the first names and the title of books titled 'title' or \"Books\" (first_name).",
            &map,
            wn,
        );
        assert_eq!(
            text,
            "List the f_nms and the ttl of bks titled 'title' or \"Books\" (f_nm)."
        );
        assert_eq!(replacements.len(), 4);
        assert_eq!(replacements[0].from, "first names");
    }
}
