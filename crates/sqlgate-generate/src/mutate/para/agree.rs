//! Does a paraphrase say what its gold computes? A lexical embedder scores "price above 30"
//! and "price below 30" alike, so the similarity filter cannot see a negated condition, a
//! flipped comparison or a swapped aggregate; this check can. The gold SQL's tokens give its
//! polarity (a negation or not), its comparison directions and its aggregates; a paraphrase
//! agrees when it says each of them with a cue word and adds no negation the gold lacks.

use std::collections::HashMap;

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, OrderByKind, Query,
    SelectItem, SetExpr, TableFactor,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer};

use super::names::SchemaNames;
use super::words::{is_abbreviated_key, singular, words};
use crate::mutate::on_enough_stack;

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
/// Words that say a sum or an average and nothing else: a paraphrase using one for a gold that
/// computes no such aggregate swapped it ("total" and "number" also say a count).
const ONLY_SUM: &[&str] = &["sum", "summed", "combined"];
const ONLY_AVERAGE: &[&str] = &["average", "averaged", "mean", "avg"];
/// The words after "total" that make it a count ("the total number of").
const COUNTED_TOTAL: &[&str] = &["number", "numbers", "count", "counts", "amount", "of", "no"];
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
        let compared = i > 0 && compared_at(&significant[..i]);
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

/// Whether the literal after `before` is compared: right after a comparison operator or LIKE,
/// or inside a case function there (`LIKE LOWER('%Dallas%')`).
fn compared_at(before: &[&Token]) -> bool {
    match before {
        [.., operator, Token::Word(function), Token::LParen]
            if matches!(function.keyword, Keyword::LOWER | Keyword::UPPER) =>
        {
            compares(operator)
        }
        [.., last] => compares(last),
        [] => false,
    }
}

/// A comparison operator or LIKE: the literal after it is a value the question must name.
fn compares(token: &Token) -> bool {
    match token {
        Token::Eq | Token::Neq | Token::Lt | Token::LtEq | Token::Gt | Token::GtEq => true,
        Token::Word(word) => matches!(word.keyword, Keyword::LIKE | Keyword::ILIKE),
        _ => false,
    }
}

/// Whether `paraphrase` keeps the values of the gold's conditions, the gold's polarity,
/// comparison directions and aggregates, adds no aggregate and names what the gold returns,
/// by its identifiers' words alone. A gold the tokenizer cannot read has no cues to check: the
/// paraphrase agrees.
pub fn agrees_with_gold(sql: &str, paraphrase: &str) -> bool {
    agrees_with(sql, paraphrase, &SchemaNames::default())
}

/// [`agrees_with_gold`], a table or column also named by its human name in `names`
/// ("customers" for Spider's `visitor`, as its `tables.json` calls it).
pub fn agrees_with(sql: &str, paraphrase: &str, names: &SchemaNames) -> bool {
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
    // An aggregate word the gold has no aggregate for, unless it is a name ("avg_rating").
    let adds = |wanted: bool, cues: &[&str]| {
        !wanted
            && words
                .iter()
                .any(|w| cues.contains(w) && !gold.names.iter().any(|name| name == w))
    };
    // "total" says a count in "the total number of"; before anything else it says a sum
    // ("the total pid").
    let total_sum = words.windows(2).any(|pair| {
        pair[0] == "total"
            && !COUNTED_TOTAL.contains(&pair[1])
            && !gold.names.iter().any(|name| name == "total")
    });
    let aggregate_added = adds(gold.total, ONLY_SUM)
        || (!gold.total && total_sum)
        || adds(gold.average, ONLY_AVERAGE);
    polarity_kept
        && !direction_flipped
        && !aggregate_added
        && names_what_it_returns(sql, &words, names)
        && said(gold.greater, GREATER)
        && said(gold.less, LESS)
        && said(gold.count, COUNT)
        && said(gold.average, AVERAGE)
        && said(gold.total, TOTAL)
        && said(gold.lowest, LOWEST)
        && said(gold.highest, HIGHEST)
}

/// Column words that say what kind of value a column holds, not which: "name" is named by its
/// table ("the singers"), "department" by itself.
const GENERIC: &[&str] = &[
    "id", "name", "code", "no", "num", "number", "type", "value", "key", "has", "is",
];
/// Column words that label a row of their table: named by themselves or by the table ("Books
/// by Canadian authors?" for `SELECT title FROM books`).
const LABELS: &[&str] = &["title", "label"];

/// Whether the paraphrase's `said` words name what the gold returns ([`requirements`]): a
/// column by one of its own words, or, when those are generic ("name", an abbreviated key
/// such as `aid`), by a word of its table; a label ("title") by either. "How many mountains
/// are in each country?" for a gold returning `river.country_name, COUNT(river.river_name)`
/// names no river: another question. A gold that does not parse asks nothing.
fn names_what_it_returns(sql: &str, said: &[&str], names: &SchemaNames) -> bool {
    // Two words said in a row are also one: "pet ID" says `petid`.
    let pairs = said.windows(2).map(|pair| singular(&pair.concat()));
    let said: Vec<String> = said.iter().map(|w| singular(w)).chain(pairs).collect();
    let words_of = |name: &str| -> Vec<String> {
        words(name)
            .split(' ')
            .map(|w| singular(&w.to_lowercase()))
            .filter(|w| w.len() >= 2)
            .collect()
    };
    let is_said = |w: &String| said.iter().any(|s| same_word(w, s));
    // Names without a word of three letters or more (a table `r`) cannot be checked: met.
    let met_by = |names: Vec<String>| {
        let checkable: Vec<&String> = names.iter().filter(|w| w.len() >= 3).collect();
        checkable.is_empty() || checkable.into_iter().any(is_said)
    };
    let named = |(column, tables): &Column| {
        let own = words_of(column);
        let mut specific: Vec<String> = own
            .iter()
            .filter(|w| !GENERIC.contains(&w.as_str()))
            .cloned()
            .collect();
        let human = tables.iter().filter_map(|t| names.column(t, column));
        specific.extend(
            human
                .flat_map(&words_of)
                .filter(|w| !GENERIC.contains(&w.as_str())),
        );
        // `pay_load` is also said "payload".
        if own.len() >= 2 && !specific.is_empty() {
            specific.push(own.concat());
        }
        let table_words = || {
            let human = tables.iter().filter_map(|t| names.table(t));
            tables
                .iter()
                .map(String::as_str)
                .chain(human)
                .flat_map(&words_of)
                .collect()
        };
        // A one-word key or name run into its abbreviation (`stuid`, `Fname`, `pettype`) is
        // said by its table too ("the students' first names").
        let generic_end = own.len() == 1 && GENERIC.iter().any(|g| own[0].ends_with(g));
        if specific.is_empty() || is_abbreviated_key(column, None) {
            met_by(table_words())
        } else if generic_end || specific.iter().all(|w| LABELS.contains(&w.as_str())) {
            met_by(specific) || met_by(table_words())
        } else {
            met_by(specific)
        }
    };
    let required = on_enough_stack(sql, |query| Ok(requirements(&query)));
    required.map_or(true, |required| {
        required.iter().all(|any| any.iter().any(named))
    })
}

/// Measures said by their adjective: "the longest rivers" names `length`.
const DIMENSIONS: &[(&str, &[&str])] = &[
    ("length", &["long", "short"]),
    ("height", &["high", "tall", "low"]),
    ("width", &["wide", "narrow"]),
    ("depth", &["deep", "shallow"]),
    ("age", &["old", "young"]),
    ("size", &["big", "large", "small"]),
    ("weight", &["heavy", "light"]),
    ("price", &["expensive", "cheap"]),
    ("cost", &["expensive", "cheap"]),
    ("population", &["people", "populous", "populated"]),
];

/// Whether a column's word `name` and a paraphrase's word `said` (both singular, lower case)
/// are one word: the same, one inflected from the other ("admit", "admitted": one begins the
/// other; "participation", "participated": a shared beginning of at least 6 letters and 70% of
/// the shorter; "department" and "departure" are not), or a measure and its adjective
/// ("length", "longest").
fn same_word(name: &str, said: &str) -> bool {
    let shared = name
        .chars()
        .zip(said.chars())
        .take_while(|(a, b)| a == b)
        .count();
    let shorter = name.chars().count().min(said.chars().count());
    name == said
        || (shared >= 4 && shared == shorter)
        || (shared >= 6 && shared * 10 >= shorter * 7)
        || DIMENSIONS.iter().any(|(measure, adjectives)| {
            *measure == name && adjectives.iter().any(|a| said.starts_with(a))
        })
}

/// A column of the gold, with its table (a qualifier resolved through the FROM clause's
/// aliases) or, unqualified, every table of the FROM clause; an empty column for `COUNT(*)`.
type Column = (String, Vec<String>);

/// What a paraphrase must name, each requirement met by naming any one of its columns:
/// - each item of the leftmost SELECT list that is a column as stored;
/// - each count in an item ("how many rivers", "the ratio of publications to authors"): its
///   table or the column counted. Other computed items (`SUM(quantity * price)`) ask
///   nothing: a person names what they mean ("revenue"), not the columns they read;
/// - with a LIMIT, each ORDER BY column, which picks the rows ("the 3 most cited").
fn requirements(query: &Query) -> Vec<Vec<Column>> {
    let mut body = &*query.body;
    let select = loop {
        match body {
            SetExpr::Select(select) => break select,
            SetExpr::Query(inner) => return requirements(inner),
            SetExpr::SetOperation { left, .. } => body = left,
            _ => return Vec::new(),
        }
    };
    let mut tables: HashMap<String, String> = HashMap::new();
    let factors = select.from.iter().flat_map(|from| {
        std::iter::once(&from.relation).chain(from.joins.iter().map(|j| &j.relation))
    });
    for factor in factors {
        if let TableFactor::Table { name, alias, .. } = factor {
            let table = name
                .0
                .last()
                .map(|part| part.to_string())
                .unwrap_or_default();
            let table = table.trim_matches(['"', '`', '[', ']']).to_lowercase();
            if let Some(alias) = alias {
                tables.insert(alias.name.value.to_lowercase(), table.clone());
            }
            tables.insert(table.clone(), table);
        }
    }
    let mut every_table: Vec<String> = tables.values().cloned().collect();
    every_table.sort();
    every_table.dedup();
    let column = |expr: &Expr| -> Option<Column> {
        match expr {
            Expr::Identifier(column) => Some((column.value.clone(), every_table.clone())),
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                let qualifier = parts[parts.len() - 2].value.to_lowercase();
                let table = tables.get(&qualifier).cloned().unwrap_or(qualifier);
                Some((parts[parts.len() - 1].value.clone(), vec![table]))
            }
            _ => None,
        }
    };
    let count = |argument: Option<&Expr>| -> Vec<Column> {
        let counted = argument.and_then(column);
        let tables = counted.as_ref().map_or(&every_table, |(_, tables)| tables);
        let mut any = vec![(String::new(), tables.clone())];
        any.extend(counted);
        any
    };
    let mut required = Vec::new();
    let mut aliases = Vec::new();
    for item in &select.projection {
        let expr = match item {
            SelectItem::UnnamedExpr(expr) => expr,
            SelectItem::ExprWithAlias { expr, alias } => {
                aliases.push(alias.value.to_lowercase());
                expr
            }
            SelectItem::ExprWithAliases { expr, .. } => expr,
            SelectItem::QualifiedWildcard(..) | SelectItem::Wildcard(_) => continue,
        };
        if let Some(stored) = column(expr) {
            required.push(vec![stored]);
            continue;
        }
        // Arithmetic on stored columns ("the ratio of capacity to range") names each of them;
        // an aggregate's meaning has a name of its own ("revenue"): only counts are named.
        let mut counts = Vec::new();
        let mut stored = Vec::new();
        let mut aggregated = false;
        let _ = visit_expressions(expr, |inner| {
            if let Some(argument) = counted_argument(inner) {
                counts.push(count(argument));
            }
            if let Expr::Function(function) = inner {
                let name = function.name.to_string().to_lowercase();
                aggregated |= AGGREGATES.contains(&name.as_str());
            }
            stored.extend(column(inner));
            ControlFlow::<()>::Continue(())
        });
        if aggregated {
            required.extend(counts);
        } else {
            required.extend(stored.into_iter().map(|c| vec![c]));
        }
    }
    if query.limit_clause.is_some() {
        if let Some(OrderByKind::Expressions(order)) = query.order_by.as_ref().map(|o| &o.kind) {
            for by in order {
                let alias = matches!(&by.expr, Expr::Identifier(name)
                    if aliases.contains(&name.value.to_lowercase()));
                if let (false, Some(stored)) = (alias, column(&by.expr)) {
                    required.push(vec![stored]);
                }
            }
        }
    }
    required
}

/// SQLite's aggregate functions.
const AGGREGATES: &[&str] = &["count", "sum", "total", "avg", "min", "max", "group_concat"];

/// The argument of a `COUNT(...)` call: `None` for `COUNT(*)`.
fn counted_argument(expr: &Expr) -> Option<Option<&Expr>> {
    let Expr::Function(function) = expr else {
        return None;
    };
    if !function.name.to_string().eq_ignore_ascii_case("count") {
        return None;
    }
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    match list.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] => Some(None),
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(argument))] => Some(Some(argument)),
        _ => None,
    }
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
