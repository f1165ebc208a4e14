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
    // "the no. of students" is a number, not a negation.
    ("no. of", "number of"),
    ("in the last", "since"),
    (">=", " atleast "),
    ("<=", " atmost "),
    (">", " greater "),
    ("<", " less "),
];

/// Numbers a question writes as words ("more than one restaurant").
const NUMBER_WORDS: &[(&str, &str)] = &[
    ("one", "1"),
    ("two", "2"),
    ("three", "3"),
    ("four", "4"),
    ("five", "5"),
    ("six", "6"),
    ("seven", "7"),
    ("eight", "8"),
    ("nine", "9"),
    ("ten", "10"),
];

/// Values that are flags, said as a condition ("round trips required") rather than as values.
const FLAGS: &[&str] = &["yes", "no", "true", "false", "y", "n", "0"];

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
    "non",
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
    "atleast",
];
const LESS: &[&str] = &[
    "less", "fewer", "below", "under", "most", "atmost", "before", "lower", "smaller", "earlier",
    "shorter", "younger", "maximum", "up", "within", "beneath",
];
const AVERAGE: &[&str] = &["average", "mean", "avg", "averaged"];
/// `SUM(CASE WHEN c THEN 1 ...)` counts: "number of" says a sum too, and a ratio, share or
/// percentage divides sums or counts.
const TOTAL: &[&str] = &[
    "total",
    "sum",
    "combined",
    "overall",
    "altogether",
    "totals",
    "number",
    "numbers",
    "count",
    "ratio",
    "proportion",
    "percentage",
    "share",
    "fraction",
];
const COUNT: &[&str] = &[
    "number",
    "numbers",
    "count",
    "many",
    "counts",
    "tally",
    "amount",
    "ratio",
    "proportion",
    "percentage",
    "share",
    "fraction",
    "most",
    "fewest",
];
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
    /// `IS NULL` reads as "missing" or "has no", `= 0` as "with no", `> 0` as "with": either
    /// polarity is faithful, and no direction need be said.
    null_test: bool,
    /// `> 0` reads as "with", but never as "below": the opposite direction is refused.
    above_zero: bool,
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
    /// The values conditions compare with (`= 'Poetry'`, `> 30`, `LIKE '%ann%'` as "ann"), and
    /// a `LIMIT` above 1.
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
        let zero_next = matches!(significant.get(i + 1), Some(Token::Number(n, _)) if n == "0");
        // "the five most expensive": how many rows are asked for is a value too (one row is
        // said in too many ways: "the", "top", "which").
        let limited =
            i > 0 && matches!(significant[i - 1], Token::Word(w) if w.keyword == Keyword::LIMIT);
        match token {
            Token::Number(count, _) if limited && count != "1" => cues.values.push(count.clone()),
            // SQLite takes a double-quoted name that is no column as a string: Spider's
            // `= "ATO"` (a qualified `"t"."c"` is a column).
            Token::Word(word)
                if compared
                    && word.quote_style == Some('"')
                    && !matches!(significant.get(i + 1), Some(Token::Period)) =>
            {
                cues.values.push(word.value.to_lowercase());
            }
            Token::SingleQuotedString(value) | Token::Number(value, _) if compared => {
                let value = value.trim_matches('%').to_lowercase();
                if !value.is_empty() && !value.contains('%') && !FLAGS.contains(&value.as_str()) {
                    cues.values.push(value);
                }
            }
            Token::Eq if zero_next => cues.null_test = true,
            Token::Gt if zero_next => {
                cues.null_test = true;
                cues.above_zero = true;
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
    if !gold.values.iter().all(|value| names_value(&text, value)) {
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
    let direction_flipped = gold.above_zero && !gold.less && says(LESS);
    polarity_kept
        && !direction_flipped
        && said(gold.greater, GREATER)
        && said(gold.less, LESS)
        && said(gold.count, COUNT)
        && said(gold.average, AVERAGE)
        && said(gold.total, TOTAL)
        && said(gold.lowest, LOWEST)
        && said(gold.highest, HIGHEST)
}

/// Whether `text` (lowercased) names `value`: as written, as a number word ("one" for 1), or
/// a longer value by its stem ("Canadian" for "canada").
fn names_value(text: &str, value: &str) -> bool {
    if text.contains(value) {
        return true;
    }
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let as_word = NUMBER_WORDS
        .iter()
        .any(|(word, digits)| *digits == value && words.contains(word));
    let stem = (value.len() >= 5 && value.chars().all(char::is_alphabetic))
        .then(|| &value[..value.len() - 1]);
    as_word || stem.is_some_and(|stem| words.iter().any(|w| w.starts_with(stem)))
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
        let sql = "SELECT count(*) FROM flights WHERE DestAirport = \"ATO\"";
        assert!(agrees_with_gold(sql, "How many flights go to \"ATO\"?"));
        assert!(!agrees_with_gold(sql, "How many flights are there?"));
        let sql = "SELECT title FROM books ORDER BY price DESC LIMIT 5";
        assert!(agrees_with_gold(sql, "Our five most expensive books?"));
        assert!(agrees_with_gold(sql, "The 5 books with the highest price."));
        assert!(!agrees_with_gold(sql, "What determines a book's price?"));
        let sql = "SELECT title, price FROM books ORDER BY price DESC, title ASC LIMIT 5";
        let model = "The genre of a book determines its price, but what about the author's voice and style?";
        assert!(!agrees_with_gold(sql, model));
        let sql = "SELECT title FROM books ORDER BY price DESC LIMIT 1";
        assert!(agrees_with_gold(sql, "The most expensive book?"));
    }

    /// The wordings of the Defog and demo questions that read as disagreeing before.
    #[test]
    fn a_humans_wording_of_counts_ratios_and_flags_agrees() {
        let ratio =
            "SELECT CAST(COUNT(*) AS REAL) / (SELECT COUNT(*) FROM r) FROM r WHERE rating > 4.5";
        assert!(agrees_with_gold(
            ratio,
            "The ratio of restaurants with rating > 4.5 to all?"
        ));
        assert!(!agrees_with_gold(
            ratio,
            "The ratio of restaurants with rating < 4.5 to all?"
        ));
        let sql = "SELECT COUNT(*) FROM student GROUP BY month";
        assert!(agrees_with_gold(
            sql,
            "Return the no. of students per month"
        ));
        let sql = "SELECT city FROM r GROUP BY city HAVING COUNT(id) > 1";
        assert!(agrees_with_gold(
            sql,
            "Cities whose number of restaurants is more than one"
        ));
        assert!(!agrees_with_gold(
            sql,
            "Cities whose number of restaurants is more than two"
        ));
        let sql = "SELECT title FROM books WHERE country = 'Canada'";
        assert!(agrees_with_gold(sql, "Books by Canadian authors?"));
        let sql = "SELECT COUNT(*) FROM fare WHERE round_trip_required = 'Yes'";
        assert!(agrees_with_gold(
            sql,
            "How many fares require a round trip?"
        ));
        let sql = "SELECT code FROM flight WHERE stops > 0";
        assert!(agrees_with_gold(sql, "Flights with stops?"));
        assert!(!agrees_with_gold(sql, "Flights whose stops are under 0?"));
        let sql = "SELECT code FROM flight WHERE connections = 0";
        assert!(agrees_with_gold(sql, "Flights without connections?"));
    }
}
