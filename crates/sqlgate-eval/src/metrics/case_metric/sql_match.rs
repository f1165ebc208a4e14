//! Exact match of normalised SQL: whether the predicted query is, token for token, a gold
//! query once case, spacing, comments and a final `;` are set aside. Stricter than EX (an
//! equivalent rewrite fails it), it tells a prompt change that moves answers away from the
//! benchmark's phrasing of SQL.

use sqlparser::dialect::GenericDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

use super::{CaseContext, Definition, MetricError};

/// The registry's entry.
pub const METRIC: Definition = Definition {
    name: "sql_match",
    error_code: "sql_match_error",
    definition: "1 when the predicted SQL is a gold query token for token, ignoring the case of \
                 keywords and unquoted names, spacing, comments and a final `;`, else 0.",
    score,
};

fn score(case: &CaseContext<'_>) -> Result<f64, MetricError> {
    let Some(predicted) = normalised(case.sql) else {
        return Ok(0.0);
    };
    let golds: Vec<Vec<String>> = case.gold.iter().filter_map(|g| normalised(g)).collect();
    if golds.is_empty() {
        return Err(MetricError(
            "the gold query cannot be tokenized as SQL".to_string(),
        ));
    }
    Ok(if golds.contains(&predicted) { 1.0 } else { 0.0 })
}

/// The query's tokens without spacing, comments or final semicolons, unquoted words in lower
/// case; `None` when it is not SQL text.
fn normalised(sql: &str) -> Option<Vec<String>> {
    let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize().ok()?;
    let mut words: Vec<String> = tokens
        .into_iter()
        // Comments are whitespace tokens: dropped with the spacing.
        .filter(|token| !matches!(token, Token::Whitespace(_) | Token::EOF))
        .map(|token| match token {
            Token::Word(word) if word.quote_style.is_none() => word.value.to_lowercase(),
            other => other.to_string(),
        })
        .collect();
    while words.last().is_some_and(|w| w == ";") {
        words.pop();
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::metrics::case_metric::CaseMetric;
    use crate::metrics::ex::testkit::FakeRunner;

    fn value(gold: &[&str], sql: &str) -> Result<f64, String> {
        let gold: Vec<String> = gold.iter().map(|g| g.to_string()).collect();
        let metric = CaseMetric::named("sql_match").unwrap();
        metric
            .score(&gold, Path::new("db"), Some(sql), &FakeRunner::new())
            .map_err(|e| e.0)
    }

    #[test]
    fn case_spacing_comments_and_semicolons_do_not_count_quotes_and_literals_do() {
        let gold = ["SELECT name FROM singer WHERE age > 20"];
        assert_eq!(
            value(
                &gold,
                "select  NAME\nfrom Singer -- adults\n where age>20 ;"
            ),
            Ok(1.0)
        );
        assert_eq!(
            value(&gold, "SELECT name FROM singer WHERE age >= 20"),
            Ok(0.0)
        );
        assert_eq!(
            value(&gold, "SELECT \"Name\" FROM singer WHERE age > 20"),
            Ok(0.0)
        );
        assert_eq!(
            value(&["SELECT 'Bob'"], "SELECT 'bob'"),
            Ok(0.0),
            "string literals keep their case"
        );
        assert_eq!(
            value(&["SELECT 1", "SELECT name FROM t"], "select name from T"),
            Ok(1.0)
        );
        assert_eq!(value(&gold, "SELECT 'unterminated"), Ok(0.0));
        let error = value(&["SELECT 'unterminated"], "SELECT 1").unwrap_err();
        assert!(error.contains("cannot be tokenized"), "{error}");
    }
}
