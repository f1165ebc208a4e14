//! Does a paraphrase say what its gold computes? A lexical embedder scores "price above 30"
//! and "price below 30" alike, so the similarity filter cannot see a negated condition, a
//! flipped comparison or a swapped aggregate; this check can. The gold SQL's tokens give its
//! polarity (a negation or not), its comparison directions and its aggregates; a paraphrase
//! agrees when it says each of them with a cue word and adds no negation the gold lacks.

use sqlparser::dialect::SQLiteDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer};

use super::words::words;

/// Phrases whose words would read as other cues ("no less than" is a direction, not a
/// negation; "at least one" is existence, not a minimum), replaced before the cues are read.
const IDIOMS: &[(&str, &str)] = &[
    ("no less than", "atleast"),
    ("no more than", "atmost"),
    ("at least one", "some"),
    ("not empty", "present"),
    ("different from", "not"),
    ("other than", "not"),
];

const NEGATION: &[&str] = &[
    "not",
    "no",
    "without",
    "except",
    "never",
    "none",
    "neither",
    "nor",
    "excluding",
    "isn",
    "doesn",
    "don",
    "didn",
    "aren",
    "hasn",
    "haven",
    "other",
    "false",
];
const GREATER: &[&str] = &[
    "greater",
    "more",
    "above",
    "exceeds",
    "exceed",
    "exceeding",
    "over",
    "least",
    "atleast",
    "after",
    "higher",
    "larger",
    "bigger",
    "later",
    "beyond",
    "longer",
    "older",
    "newer",
    "minimum",
    "since",
    "upwards",
];
const LESS: &[&str] = &[
    "less", "fewer", "below", "under", "most", "atmost", "before", "lower", "smaller", "earlier",
    "shorter", "younger", "maximum", "up", "within", "beneath",
];
const AVERAGE: &[&str] = &["average", "mean", "avg", "averaged"];
/// `SUM(CASE WHEN c THEN 1 ...)` counts: "number of" says a sum too.
const TOTAL: &[&str] = &[
    "total",
    "sum",
    "combined",
    "overall",
    "altogether",
    "totals",
    "number",
    "count",
];
const COUNT: &[&str] = &["number", "count", "many", "counts", "tally", "amount"];
const LOWEST: &[&str] = &[
    "lowest", "minimum", "smallest", "least", "min", "fewest", "earliest", "first", "shortest",
    "cheapest", "oldest",
];
const HIGHEST: &[&str] = &[
    "highest", "maximum", "largest", "max", "most", "greatest", "latest", "biggest", "top",
    "longest", "last", "newest", "youngest",
];

/// What the gold says that a paraphrase must say too.
#[derive(Debug, Default, PartialEq, Eq)]
struct Cues {
    negated: bool,
    /// `IS NULL` reads as "missing" or "has no": either polarity is faithful.
    null_test: bool,
    greater: bool,
    less: bool,
    count: bool,
    average: bool,
    total: bool,
    lowest: bool,
    highest: bool,
    /// The words of the gold's identifiers (`FlightNo` → "flight", "no"): said as names, they
    /// negate nothing.
    names: Vec<String>,
    /// The values conditions compare with (`= 'Poetry'`, `> 30`, `LIKE '%ann%'` as "ann").
    values: Vec<String>,
}

fn gold_cues(sql: &str) -> Option<Cues> {
    let tokens = Tokenizer::new(&SQLiteDialect {}, sql).tokenize().ok()?;
    let mut cues = Cues::default();
    let significant: Vec<&Token> = tokens
        .iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    for (i, token) in significant.iter().enumerate() {
        let called = matches!(significant.get(i + 1), Some(Token::LParen));
        let compared = i > 0 && compares(significant[i - 1]);
        match token {
            Token::SingleQuotedString(value) | Token::Number(value, _) if compared => {
                let value = value.trim_matches('%').to_lowercase();
                if !value.is_empty() && !value.contains('%') {
                    cues.values.push(value);
                }
            }
            Token::Neq => cues.negated = true,
            Token::Gt | Token::GtEq => cues.greater = true,
            Token::Lt | Token::LtEq => cues.less = true,
            Token::Word(word)
                if word.keyword == Keyword::NoKeyword || word.quote_style.is_some() =>
            {
                cues.names
                    .extend(words(&word.value).split(' ').map(str::to_lowercase));
            }
            Token::Word(word) => match word.keyword {
                Keyword::NOT | Keyword::EXCEPT => cues.negated = true,
                Keyword::NULL => cues.null_test = true,
                Keyword::COUNT if called => cues.count = true,
                Keyword::AVG if called => cues.average = true,
                Keyword::SUM if called => cues.total = true,
                Keyword::MIN if called => cues.lowest = true,
                Keyword::MAX if called => cues.highest = true,
                _ => {}
            },
            _ => {}
        }
    }
    Some(cues)
}

/// A comparison operator or LIKE: the literal after it is a value the question must name.
fn compares(token: &Token) -> bool {
    match token {
        Token::Eq | Token::Neq | Token::Lt | Token::LtEq | Token::Gt | Token::GtEq => true,
        Token::Word(word) => matches!(word.keyword, Keyword::LIKE | Keyword::ILIKE),
        _ => false,
    }
}

/// Whether `paraphrase` keeps the values of the gold's conditions, the gold's polarity, comparison directions and aggregates.
/// A gold the tokenizer cannot read has no cues to check: the paraphrase agrees.
pub fn agrees_with_gold(sql: &str, paraphrase: &str) -> bool {
    let Some(gold) = gold_cues(sql) else {
        return true;
    };
    let mut text = paraphrase.to_lowercase();
    if !gold
        .values
        .iter()
        .all(|value| text.contains(value.as_str()))
    {
        return false;
    }
    for (idiom, reading) in IDIOMS {
        text = text.replace(idiom, reading);
    }
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let says = |cues: &[&str]| words.iter().any(|w| cues.contains(w));
    // A negation must be said, not named: "flight no" is a column.
    let negates = words
        .iter()
        .any(|w| NEGATION.contains(w) && !gold.names.iter().any(|name| name == w));
    let polarity_kept = gold.null_test || gold.negated == negates;
    let said = |wanted: bool, cues: &[&str]| !wanted || says(cues);
    polarity_kept
        && said(gold.greater, GREATER)
        && said(gold.less, LESS)
        && said(gold.count, COUNT)
        && said(gold.average, AVERAGE)
        && said(gold.total, TOTAL)
        && said(gold.lowest, LOWEST)
        && said(gold.highest, HIGHEST)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_negated_condition_or_a_swapped_aggregate_disagrees() {
        let sql = "SELECT MAX(price) FROM books WHERE genre = 'Poetry'";
        assert!(agrees_with_gold(
            sql,
            "What is the highest price of poetry books?"
        ));
        assert!(!agrees_with_gold(
            sql,
            "What is the lowest price of poetry books?"
        ));
        assert!(!agrees_with_gold(
            sql,
            "What is the highest price of books not in poetry?"
        ));
        let sql = "SELECT title FROM books WHERE price >= 30";
        assert!(agrees_with_gold(
            sql,
            "Books whose price is no less than 30?"
        ));
        assert!(!agrees_with_gold(sql, "Books whose price is below 30?"));
        let sql = "SELECT FlightNo, other_details FROM flights WHERE source = 'APG'";
        assert!(agrees_with_gold(
            sql,
            "Flight no and other details of flights from \"APG\"."
        ));
        let sql = "SELECT title FROM books WHERE genre != 'Poetry'";
        assert!(agrees_with_gold(
            sql,
            "Titles of books that are not poetry."
        ));
        assert!(!agrees_with_gold(sql, "Titles of poetry books."));
    }
}
