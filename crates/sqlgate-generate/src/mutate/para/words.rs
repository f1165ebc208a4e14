//! Schema identifiers as English words: `order_items` → "order items", `birthYear` → "birth
//! year", `citingpaperid` → "citing paper ID" (with WordNet), with the plural and singular a
//! question needs ("books", "book").

use crate::mutate::tqa::ident::is_word;
use crate::mutate::tqa::wordnet::WordNet;

/// [`words`], with each run of letters that is no word itself split into the fewest dictionary
/// words that spell it (`citingpaperid` → "citing paper ID"); a run that no split spells stays.
/// A name with spaces is a value SQLite read as a quoted identifier (`"Ben Jones"`): not split.
pub fn dictionary_words(identifier: &str, wordnet: Option<&WordNet>) -> String {
    let plain = words(identifier);
    let Some(wordnet) = wordnet.filter(|_| !identifier.contains(' ')) else {
        return plain;
    };
    plain
        .split(' ')
        .map(|word| match split_run(&word.to_lowercase(), wordnet) {
            Some(parts) => words(&parts.join("_")),
            None => word.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether an identifier reads as words: not a table's initials plus `id` ([`is_abbreviated_key`]),
/// and (with WordNet) each of its words a dictionary word, a number or "ID" once split.
pub fn is_readable(identifier: &str, wordnet: Option<&WordNet>) -> bool {
    if is_abbreviated_key(identifier, wordnet) {
        return false;
    }
    let Some(wordnet) = wordnet else {
        return true;
    };
    dictionary_words(identifier, Some(wordnet))
        .split(' ')
        .all(|w| {
            w == "ID" || w == "IDs" || w.chars().all(|c| c.is_ascii_digit()) || is_word(w, wordnet)
        })
}

/// Whether an identifier is a few initials plus `id` (`aid`, `jid`, `msid`, `stuid`): initials
/// that are no word themselves, in a name that is no longer word (`paid`, `void` are words;
/// `aid`, `did`, `kid` are too short to be meant as words here).
pub fn is_abbreviated_key(identifier: &str, wordnet: Option<&WordNet>) -> bool {
    let compact: String = identifier
        .chars()
        .filter(char::is_ascii_alphabetic)
        .collect::<String>()
        .to_lowercase();
    let Some(initials) = compact.strip_suffix("id") else {
        return false;
    };
    !initials.is_empty()
        && initials.len() <= 3
        && match wordnet {
            Some(w) => !is_word(initials, w) && (compact.len() <= 3 || !is_word(&compact, w)),
            None => initials.len() <= 2,
        }
}

/// The fewest words (each a dictionary word or "id", at least 2 letters) that spell `run`,
/// when it is not a word itself and at least two are needed.
fn split_run(run: &str, wordnet: &WordNet) -> Option<Vec<String>> {
    if run.len() < 5 || !run.chars().all(|c| c.is_ascii_lowercase()) || is_word(run, wordnet) {
        return None;
    }
    let known = |piece: &str| piece == "id" || (piece.len() >= 3 && is_word(piece, wordnet));
    // best[i]: the fewest pieces spelling run[..i], and where the last piece starts.
    let mut best: Vec<Option<(usize, usize)>> = vec![None; run.len() + 1];
    best[0] = Some((0, 0));
    for end in 2..=run.len() {
        for start in 0..end - 1 {
            let Some((count, _)) = best[start] else {
                continue;
            };
            if known(&run[start..end]) && best[end].is_none_or(|(c, _)| count + 1 < c) {
                best[end] = Some((count + 1, start));
            }
        }
    }
    let mut parts = Vec::new();
    let mut end = run.len();
    while end > 0 {
        let (_, start) = best[end]?;
        parts.push(run[start..end].to_string());
        end = start;
    }
    parts.reverse();
    (parts.len() >= 2).then_some(parts)
}

/// The words of an identifier, lower case: snake_case, camelCase and digits split apart.
pub fn words(identifier: &str) -> String {
    let mut out = String::new();
    let mut previous: Option<char> = None;
    for c in identifier.chars() {
        let boundary = match previous {
            None => false,
            Some(p) => {
                (p.is_lowercase() && c.is_uppercase())
                    || (p.is_alphabetic() && c.is_ascii_digit())
                    || (p.is_ascii_digit() && c.is_alphabetic())
            }
        };
        if c == '_' || c == '-' || c.is_whitespace() {
            if !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
        } else {
            if boundary && !out.ends_with(' ') {
                out.push(' ');
            }
            out.extend(c.to_lowercase());
        }
        previous = Some(c);
    }
    let out = out.trim_end().to_string();
    // "id" reads as the abbreviation it is.
    out.split(' ')
        .map(|w| {
            if w == "id" || w == "ids" {
                w.to_uppercase()
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The phrase with its last word in the plural ("order item" → "order items").
pub fn plural(phrase: &str) -> String {
    map_last_word(phrase, plural_word)
}

/// The phrase with its last word in the singular ("order items" → "order item").
pub fn singular(phrase: &str) -> String {
    map_last_word(phrase, singular_word)
}

fn map_last_word(phrase: &str, change: fn(&str) -> String) -> String {
    match phrase.rsplit_once(' ') {
        Some((head, last)) => format!("{head} {}", change(last)),
        None => change(phrase),
    }
}

/// Words whose plural is not made by a suffix rule, or that have no plural.
const IRREGULAR: &[(&str, &str)] = &[
    ("person", "people"),
    ("child", "children"),
    ("man", "men"),
    ("woman", "women"),
    ("datum", "data"),
    ("ID", "IDs"),
    ("info", "info"),
    ("information", "information"),
    ("series", "series"),
    ("staff", "staff"),
];

fn plural_word(word: &str) -> String {
    if let Some((_, many)) = IRREGULAR.iter().find(|(one, _)| *one == word) {
        return (*many).to_string();
    }
    if IRREGULAR.iter().any(|(_, many)| *many == word) || is_plural(word) {
        return word.to_string();
    }
    let consonant_y = word.ends_with('y')
        && !word.ends_with("ay")
        && !word.ends_with("ey")
        && !word.ends_with("oy")
        && !word.ends_with("uy");
    if consonant_y {
        format!("{}ies", &word[..word.len() - 1])
    } else if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|end| word.ends_with(end))
    {
        format!("{word}es")
    } else {
        format!("{word}s")
    }
}

fn singular_word(word: &str) -> String {
    if let Some((one, _)) = IRREGULAR.iter().find(|(_, many)| *many == word) {
        return (*one).to_string();
    }
    if !is_plural(word) {
        return word.to_string();
    }
    if let Some(stem) = word.strip_suffix("ies") {
        format!("{stem}y")
    } else if ["sses", "xes", "zes", "ches", "shes"]
        .iter()
        .any(|end| word.ends_with(end))
    {
        word[..word.len() - 2].to_string()
    } else {
        word[..word.len() - 1].to_string()
    }
}

/// An English plural by its ending: "books", "cities"; not "status", "address", "bus".
fn is_plural(word: &str) -> bool {
    word.len() > 3
        && word.ends_with('s')
        && !["ss", "us", "is", "os"]
            .iter()
            .any(|end| word.ends_with(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_become_words() {
        assert_eq!(words("order_items"), "order items");
        assert_eq!(words("birthYear"), "birth year");
        assert_eq!(words("customer_id"), "customer ID");
        assert_eq!(words("Address2"), "address 2");
        assert_eq!(words("DOMAIN"), "domain");
        assert_eq!(words("__x__"), "x");
    }

    #[test]
    fn runs_of_words_are_split_with_wordnet() {
        let Some(wordnet) = crate::mutate::tqa::wordnet::for_tests() else {
            return;
        };
        let split = |id: &str| dictionary_words(id, Some(wordnet));
        assert_eq!(split("citingpaperid"), "citing paper ID");
        assert_eq!(split("authorid"), "author ID");
        assert_eq!(split("paper_id"), "paper ID");
        assert_eq!(split("publication"), "publication");
        assert_eq!(split("xqzv"), "xqzv");
        assert_eq!(split("Brandon Vietti"), "brandon vietti");
        assert_eq!(dictionary_words("citingpaperid", None), "citingpaperid");
    }

    #[test]
    fn inflected_words_and_spelling_variants_are_not_split() {
        let Some(wordnet) = crate::mutate::tqa::wordnet::for_tests() else {
            return;
        };
        let split = |id: &str| dictionary_words(id, Some(wordnet));
        for word in ["program", "programs", "courses", "addresses", "studies"] {
            assert_eq!(split(word), word);
        }
        assert_eq!(split("program_name"), "program name");
        assert_eq!(split("programname"), "program name");
        assert_eq!(split("studentrecords"), "student records");
    }

    #[test]
    fn abbreviated_keys_are_not_readable() {
        let wordnet = crate::mutate::tqa::wordnet::for_tests();
        for key in ["aid", "did", "kid", "jid", "msid"] {
            assert!(!is_readable(key, wordnet), "{key}");
        }
        for name in ["author_id", "name", "paperid"] {
            assert!(is_readable(name, wordnet), "{name}");
        }
        // Three initials (`stuid`), and a word shaped like a key (`paid`), only WordNet tells
        // apart: without it, initials are at most two letters.
        if wordnet.is_some() {
            assert!(!is_readable("stuid", wordnet));
            assert!(is_readable("paid", wordnet));
        }
    }

    #[test]
    fn plurals_and_singulars() {
        for (one, many) in [
            ("book", "books"),
            ("city", "cities"),
            ("order item", "order items"),
            ("address", "addresses"),
            ("day", "days"),
            ("person", "people"),
            ("customer ID", "customer IDs"),
            ("match", "matches"),
        ] {
            assert_eq!(plural(one), many);
            assert_eq!(singular(many), one);
        }
        assert_eq!(plural("books"), "books");
        assert_eq!(singular("status"), "status");
        assert_eq!(singular("book"), "book");
    }
}
