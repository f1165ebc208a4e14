//! Schema identifiers as English words: `order_items` → "order items", `birthYear` → "birth
//! year", with the plural and singular a question needs ("books", "book").

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
