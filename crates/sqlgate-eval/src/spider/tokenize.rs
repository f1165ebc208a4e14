//! The reference tokenizer (`process_sql.tokenize`).
//!
//! 1. Every `'` becomes `"`; quotes pair up in order (an odd count is an error) and each quoted
//!    span, quotes included, is replaced by a placeholder word.
//! 2. The text is split the way NLTK's `word_tokenize` splits it, and every token lowercased.
//! 3. Placeholder tokens get their literal back (original case, `"` quotes).
//! 4. `!`, `>` or `<` followed by a `=` token merge into one operator (`>=`...).
//!
//! Step 2 reproduces `NLTKWordTokenizer` for text without quotes (none are left after step 1):
//! its padding rules for punctuation, brackets, `*`, dashes and the final period, and its
//! contraction splits (`cannot` → `can not`). NLTK first splits sentences with Punkt; that can
//! only change the tokens next to a period followed by a space outside string literals, which
//! Spider queries do not contain, so the text is treated as one sentence.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::ParseError;

/// Tokenizes `sql` as the reference does.
pub fn tokenize(sql: &str) -> Result<Vec<String>, ParseError> {
    let (masked, literals) = mask_literals(sql)?;
    let tokens = word_tokenize(&masked).into_iter().map(|token| {
        let lower = token.to_lowercase();
        literals.get(&lower).cloned().unwrap_or(lower)
    });
    Ok(merge_comparisons(tokens))
}

/// Replaces each quoted span with `__val_<open>_<close>__` (character positions, as in Python)
/// and returns the masked text with the map placeholder → literal.
fn mask_literals(sql: &str) -> Result<(String, HashMap<String, String>), ParseError> {
    let text = sql.replace('\'', "\"");
    // (byte offset, character index) of every quote
    let quotes: Vec<(usize, usize)> = text
        .char_indices()
        .enumerate()
        .filter(|(_, (_, c))| *c == '"')
        .map(|(char_index, (byte, _))| (byte, char_index))
        .collect();
    if !quotes.len().is_multiple_of(2) {
        return Err(ParseError::new("unexpected quote: quotes are not balanced"));
    }
    let mut masked = String::with_capacity(text.len());
    let mut literals = HashMap::new();
    let mut copied_up_to = 0;
    for pair in quotes.chunks_exact(2) {
        let ((open, open_char), (close, close_char)) = (pair[0], pair[1]);
        let placeholder = format!("__val_{open_char}_{close_char}__");
        masked.push_str(&text[copied_up_to..open]);
        masked.push_str(&placeholder);
        // a quote is one byte, so `close + 1` is the end of the literal
        literals.insert(placeholder, text[open..close + 1].to_string());
        copied_up_to = close + 1;
    }
    masked.push_str(&text[copied_up_to..]);
    Ok((masked, literals))
}

/// NLTK's substitutions, in its order; `${n}` replaces Python's `\n`. The rules about quotes are
/// left out: the masked text has none.
const BEFORE_OUTER_SPACE: &[(&str, &str)] = &[
    // starting quotes
    ("([«“‘„]|`+)", " ${1} "),
    ("(``)", " ${1} "),
    // punctuation
    (r#"([^.])(\.)([\])}>"'»”’ ]*)\s*$"#, "${1} ${2} ${3} "),
    (r"([:,])([^\d])", " ${1} ${2}"),
    // Python's `$` also matches before a final newline
    (r"([:,])(\n?)$", " ${1} ${2}"),
    (r"\.{2,}", " ${0} "),
    (r"[;@#$%&]", " ${0} "),
    (r"[\x{2012}-\x{2015}]", " ${0} "),
    (r#"([^.])(\.)([\])}>"']*)\s*$"#, "${1} ${2}${3} "),
    (r"[?!]", " ${0} "),
    (r"\*", " ${0} "),
    // brackets and double dashes
    (r"[\]\[(){}<>]", " ${0} "),
    ("--", " -- "),
];

/// Applied after NLTK pads the text with one space on each side.
const AFTER_OUTER_SPACE: &[(&str, &str)] = &[
    // ending quotes
    ("([»”’])", " ${1} "),
    // contractions
    (r"(?i)\b(can)(not)\b", " ${1} ${2} "),
    (r"(?i)\b(gim)(me)\b", " ${1} ${2} "),
    (r"(?i)\b(gon)(na)\b", " ${1} ${2} "),
    (r"(?i)\b(got)(ta)\b", " ${1} ${2} "),
    (r"(?i)\b(lem)(me)\b", " ${1} ${2} "),
    // NLTK uses a lookahead `(?=\s)`; the whitespace is captured and put back instead
    (r"(?i)\b(wan)(na)(\s)", " ${1} ${2} ${3}"),
];

type Rules = Vec<(Regex, &'static str)>;

fn compile(rules: &[(&str, &'static str)]) -> Rules {
    rules
        .iter()
        .map(|(pattern, replacement)| {
            let regex = Regex::new(pattern).expect("tokenizer patterns are valid");
            (regex, *replacement)
        })
        .collect()
}

static RULES_BEFORE: LazyLock<Rules> = LazyLock::new(|| compile(BEFORE_OUTER_SPACE));
static RULES_AFTER: LazyLock<Rules> = LazyLock::new(|| compile(AFTER_OUTER_SPACE));

fn apply(rules: &Rules, mut text: String) -> String {
    for (regex, replacement) in rules {
        if let std::borrow::Cow::Owned(changed) = regex.replace_all(&text, *replacement) {
            text = changed;
        }
    }
    text
}

fn word_tokenize(text: &str) -> Vec<String> {
    let padded = format!(" {} ", apply(&RULES_BEFORE, text.to_string()));
    let done = apply(&RULES_AFTER, padded);
    split_python_whitespace(&done).map(str::to_string).collect()
}

/// Python's `str.split()` separators: Unicode whitespace plus the ASCII separators 0x1C–0x1F.
fn is_python_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

fn split_python_whitespace(text: &str) -> impl Iterator<Item = &str> {
    text.split(is_python_whitespace)
        .filter(|token| !token.is_empty())
}

/// Merges `!`, `>`, `<` with a following `=` token. The reference scans from the end; a single
/// forward pass gives the same tokens, since a merged token never ends in `!`, `>` or `<`.
fn merge_comparisons(tokens: impl Iterator<Item = String>) -> Vec<String> {
    let mut merged: Vec<String> = Vec::new();
    for token in tokens {
        if token == "=" {
            if let Some(previous) = merged.last_mut() {
                if matches!(previous.as_str(), "!" | ">" | "<") {
                    previous.push('=');
                    continue;
                }
            }
        }
        merged.push(token);
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(sql: &str) -> Vec<String> {
        tokenize(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    #[test]
    fn literals_are_single_tokens_with_their_case() {
        assert_eq!(
            tokens("SELECT Name FROM singer WHERE country = 'New York' OR x = \"A b\""),
            [
                "select",
                "name",
                "from",
                "singer",
                "where",
                "country",
                "=",
                "\"New York\"",
                "or",
                "x",
                "=",
                "\"A b\""
            ]
        );
    }

    #[test]
    fn unbalanced_quotes_fail() {
        assert!(tokenize("SELECT a FROM t WHERE b = 'it's'").is_err());
    }

    #[test]
    fn comparison_operators_merge() {
        assert_eq!(
            tokens("a >= 1 AND b != 2 AND c <= 3"),
            ["a", ">=", "1", "and", "b", "!=", "2", "and", "c", "<=", "3"]
        );
        // NLTK pads `<` and `>` but not `=`, so `>=20` keeps `=20` glued and `<>` stays apart
        assert_eq!(tokens("a>=20"), ["a", ">", "=20"]);
        assert_eq!(tokens("a <> b"), ["a", "<", ">", "b"]);
    }

    #[test]
    fn nltk_punctuation_rules() {
        assert_eq!(tokens("count(*)"), ["count", "(", "*", ")"]);
        assert_eq!(tokens("a,b"), ["a", ",", "b"]);
        // a comma before a digit is not split
        assert_eq!(tokens("a,1"), ["a,1"]);
        assert_eq!(tokens("x = 'a';"), ["x", "=", "\"a\"", ";"]);
        // only the final period of the text is split off
        assert_eq!(tokens("FROM t1.a."), ["from", "t1.a", "."]);
        assert_eq!(tokens("price*2"), ["price", "*", "2"]);
        assert_eq!(tokens("a--b"), ["a", "--", "b"]);
        assert_eq!(tokens("cannot gonna"), ["can", "not", "gon", "na"]);
    }

    #[test]
    fn a_literal_glued_to_a_word_stays_masked() {
        assert_eq!(tokens("name='x'"), ["name=__val_5_7__"]);
    }
}
