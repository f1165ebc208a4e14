//! Cleanup of raw model output into one SQL query (rules in `docs/formats.md`).
//!
//! Conservative by design: the result is always a piece of the input, nothing is rewritten,
//! and when no query can be found the text is kept as it is (it then fails to execute, which
//! is the honest verdict). Deterministic: no state, no randomness.

use std::sync::OnceLock;

use regex::Regex;
use sqlparser::ast::{Expr, SelectItem, SetExpr, Statement, Value};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

use crate::sqltext;

/// The SQL kept from a raw prediction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanedSql {
    /// The one statement kept, trimmed and without its trailing semicolons.
    pub sql: String,
    /// Something other than surrounding whitespace and trailing semicolons was removed:
    /// markdown fences, prose, or other statements.
    pub cleaned: bool,
}

/// Extracts the query from raw model output: the first SQL-like fenced block holding a
/// query, else the text itself; within it, the first query statement (prose before it and
/// other statements dropped); then a trailing prose paragraph is cut, and surrounding
/// whitespace and trailing semicolons are trimmed.
pub fn clean_sql(raw: &str) -> CleanedSql {
    let text = raw.trim();
    let sql = match fenced_blocks(text) {
        // A stray fence (```` ``` ```` after the query, no opening one) holds no query: the
        // query is then in the text around the fence lines.
        Some(blocks) => blocks
            .iter()
            .filter(|block| is_sql_language(&block.language))
            .find_map(|block| first_query(&block.content).map(str::to_string))
            .or_else(|| first_query(&without_fence_lines(text)).map(str::to_string)),
        None => first_query(unwrap_backticks(text)).map(str::to_string),
    };
    let sql = finish(sql.as_deref().unwrap_or(text));
    CleanedSql {
        cleaned: sql != finish(text),
        sql: sql.to_string(),
    }
}

/// A state case's answer, whose statements all count ([`crate::metrics::state`]): the first
/// SQL-like fenced block, else the text; every statement kept, surrounding whitespace and
/// trailing semicolons trimmed.
pub fn clean_script(raw: &str) -> String {
    let text = raw.trim();
    let block = fenced_blocks(text).and_then(|blocks| {
        blocks
            .into_iter()
            .find(|block| is_sql_language(&block.language) && !block.content.trim().is_empty())
    });
    match block {
        Some(block) => finish(&block.content).to_string(),
        None => finish(text).to_string(),
    }
}

/// The text with each fence line blanked: a fence still ends the paragraph before it.
fn without_fence_lines(text: &str) -> String {
    text.lines()
        .map(|line| {
            if line.trim_start().starts_with("```") {
                ""
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Trims whitespace and trailing semicolons.
fn finish(sql: &str) -> &str {
    sql.trim()
        .trim_end_matches(|c: char| c == ';' || c.is_whitespace())
}

/// A whole answer in single backticks (`` `SELECT 1` ``) loses them; identifiers quoted
/// with backticks inside a query are untouched.
fn unwrap_backticks(text: &str) -> &str {
    match text.strip_prefix('`').and_then(|t| t.strip_suffix('`')) {
        Some(inner) if !inner.contains('`') && start_kind(inner) == Start::Query => inner,
        _ => text,
    }
}

struct Block {
    language: String,
    content: String,
}

/// Markdown code blocks, or `None` when the text has no fence line. A fence opens on a line
/// starting with three backticks (the info string names the language) and closes on a line
/// ending with three backticks; an unclosed block runs to the end.
fn fenced_blocks(text: &str) -> Option<Vec<Block>> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for line in text.lines() {
        if let Some(block) = open.as_mut() {
            match line.trim_end().strip_suffix("```") {
                Some(before) => {
                    block.content.push_str(before);
                    blocks.extend(open.take());
                }
                None => {
                    block.content.push_str(line);
                    block.content.push('\n');
                }
            }
            continue;
        }
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        let info = info.trim();
        let is_language = info
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_+-.#".contains(c));
        if is_language {
            open = Some(Block {
                language: info.to_ascii_lowercase(),
                content: String::new(),
            });
        } else if let Some(inline) = info.strip_suffix("```") {
            // A one-line block: ```SELECT 1```
            blocks.push(Block {
                language: String::new(),
                content: inline.to_string(),
            });
        } else {
            open = Some(Block {
                language: String::new(),
                content: format!("{info}\n"),
            });
        }
    }
    blocks.extend(open);
    let had_fence = !blocks.is_empty();
    had_fence.then_some(blocks)
}

/// Unlabelled blocks and SQL dialects (`sql`, `sqlite`, `mysql`, `postgresql`...).
fn is_sql_language(language: &str) -> bool {
    language.is_empty() || language.contains("sql") || language.starts_with("postgres")
}

#[derive(Debug, PartialEq, Eq)]
enum Start {
    /// SELECT, a WITH clause, or a parenthesised query.
    Query,
    /// Another SQL statement (DDL, DML, PRAGMA...), skipped.
    Statement,
    /// Anything else: prose.
    Prose,
}

/// Words that begin a non-query SQL statement.
const STATEMENT_WORDS: &[&str] = &[
    "alter",
    "analyze",
    "attach",
    "begin",
    "commit",
    "create",
    "delete",
    "detach",
    "drop",
    "end",
    "explain",
    "insert",
    "pragma",
    "reindex",
    "release",
    "replace",
    "rollback",
    "savepoint",
    "update",
    "upsert",
    "vacuum",
];

/// Words that may begin a line of a query, so a paragraph starting with one is not prose.
const CONTINUATION_WORDS: &[&str] = &[
    "all",
    "and",
    "as",
    "asc",
    "between",
    "by",
    "case",
    "cross",
    "desc",
    "distinct",
    "else",
    "end",
    "except",
    "exists",
    "from",
    "full",
    "group",
    "having",
    "in",
    "inner",
    "intersect",
    "is",
    "join",
    "left",
    "like",
    "limit",
    "natural",
    "not",
    "null",
    "offset",
    "on",
    "or",
    "order",
    "outer",
    "over",
    "partition",
    "right",
    "select",
    "then",
    "union",
    "using",
    "values",
    "when",
    "where",
    "window",
    "with",
];

/// What the text begins with, after whitespace and SQL comments.
fn start_kind(text: &str) -> Start {
    let text = skip_comments(text);
    if text.starts_with('(') {
        return Start::Query;
    }
    let word = first_word(text).to_ascii_lowercase();
    match word.as_str() {
        "select" => Start::Query,
        "with" if cte_start().is_match(text) => Start::Query,
        _ if STATEMENT_WORDS.contains(&word.as_str()) => Start::Statement,
        _ => Start::Prose,
    }
}

/// `WITH [RECURSIVE] name [(columns)] AS (`: a common table expression, not prose.
fn cte_start() -> &'static Regex {
    static CTE: OnceLock<Regex> = OnceLock::new();
    CTE.get_or_init(|| {
        Regex::new(r#"(?is)^with\s+(recursive\s+)?[\w"`\[\]]+\s*(\([^)]*\)\s*)?as\s*(not\s+)?(materialized\s+)?\("#)
            .expect("the CTE pattern is a valid regex")
    })
}

/// A query starting at a line start or after a colon, inside prose.
fn query_in_prose() -> &'static Regex {
    static START: OnceLock<Regex> = OnceLock::new();
    START.get_or_init(|| {
        Regex::new(r"(?im)(?:^|:)[ \t]*((?:select|with)\b)")
            .expect("the query-start pattern is a valid regex")
    })
}

fn first_word(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The text after leading whitespace and `--` / `/* */` comments.
fn skip_comments(mut text: &str) -> &str {
    loop {
        text = text.trim_start();
        if let Some(rest) = text.strip_prefix("--") {
            text = rest.find('\n').map_or("", |at| &rest[at..]);
        } else if let Some(rest) = text.strip_prefix("/*") {
            text = rest.find("*/").map_or("", |at| &rest[at + 2..]);
        } else {
            return text;
        }
    }
}

/// The first query statement of the text: non-query statements are skipped, and prose is
/// skipped up to a SELECT or WITH at a line start or after a colon.
fn first_query(text: &str) -> Option<&str> {
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return None;
        }
        match start_kind(rest) {
            Start::Query => {
                let statement = first_statement(rest);
                return Some(cut_trailing_prose(statement));
            }
            Start::Statement => {
                let statement = first_statement(rest);
                rest = rest[statement.len()..].strip_prefix(';')?;
            }
            Start::Prose => {
                let found = query_in_prose().captures(rest)?.get(1)?;
                rest = &rest[found.start()..];
                if start_kind(rest) != Start::Query {
                    // "With" opening a sentence: look further on.
                    rest = &rest[found.len()..];
                }
            }
        }
    }
}

/// The text up to its first `;` outside string literals, quoted identifiers and comments.
fn first_statement(text: &str) -> &str {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let skip_to = |closing: &str, from: usize| {
            text[from..]
                .find(closing)
                .map_or(bytes.len(), |at| from + at + closing.len())
        };
        i = match bytes[i] {
            b';' => return &text[..i],
            b'\'' => skip_to("'", i + 1),
            b'"' => skip_to("\"", i + 1),
            b'`' => skip_to("`", i + 1),
            b'[' => skip_to("]", i + 1),
            b'-' if bytes.get(i + 1) == Some(&b'-') => skip_to("\n", i + 2),
            b'/' if bytes.get(i + 1) == Some(&b'*') => skip_to("*/", i + 2),
            _ => i + 1,
        };
    }
    text
}

/// Cuts the statement at a blank line followed by a paragraph that does not read as SQL
/// ("This query counts...", "Explanation:").
fn cut_trailing_prose(statement: &str) -> &str {
    let mut offset = 0;
    let mut after_blank = false;
    for line in statement.split_inclusive('\n') {
        let content = line.trim();
        if content.is_empty() {
            after_blank = true;
        } else {
            if after_blank && !continues_sql(content) {
                return &statement[..offset];
            }
            after_blank = false;
        }
        offset += line.len();
    }
    statement
}

fn continues_sql(line: &str) -> bool {
    let starts_with_symbol = line.starts_with(['(', ')', ',', '\'', '"', '`', '[', '*', '='])
        || line.starts_with("--")
        || line.starts_with("/*");
    let word = first_word(line).to_ascii_lowercase();
    starts_with_symbol
        || CONTINUATION_WORDS.contains(&word.as_str())
        || STATEMENT_WORDS.contains(&word.as_str())
}

/// Whether `sql` is an apology rather than an answer: one SELECT of string literals only, with
/// no FROM (Defog's `idk.csv` convention, `SELECT 'Sorry, ...' AS answer;`). A text too long or
/// too deep to parse safely ([`sqltext::check`]) is no apology.
pub fn is_apology(sql: &str) -> bool {
    // A string literal needs a quote: most answers are told apart without parsing them.
    if !sql.contains(['\'', '"']) {
        return false;
    }
    let Ok(checked) = sqltext::check(sql) else {
        return false;
    };
    sqltext::run(checked.depth, || parsed_is_apology(sql)).unwrap_or(false)
}

fn parsed_is_apology(sql: &str) -> bool {
    let Ok(statements) = Parser::parse_sql(&SQLiteDialect {}, sql) else {
        return false;
    };
    let [Statement::Query(query)] = statements.as_slice() else {
        return false;
    };
    let SetExpr::Select(select) = query.body.as_ref() else {
        return false;
    };
    let string_literal = |expr: &Expr| {
        matches!(expr, Expr::Value(v) if matches!(
            v.value,
            Value::SingleQuotedString(_) | Value::DoubleQuotedString(_)
        ))
    };
    select.from.is_empty()
        && select.selection.is_none()
        && !select.projection.is_empty()
        && select.projection.iter().all(|item| match item {
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => {
                string_literal(expr)
            }
            _ => false,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apologies_are_string_only_selects_without_from() {
        assert!(is_apology(
            "SELECT 'Alas, without the necessary data, I can''t provide an answer.' AS answer;"
        ));
        assert!(is_apology("select 'sorry'"));
        assert!(!is_apology("SELECT 1"));
        assert!(!is_apology("SELECT 'x' FROM books"));
        assert!(!is_apology("SELECT 'x', 2"));
        assert!(!is_apology("SELECT 'a'; SELECT 'b'"));
        assert!(!is_apology("not sql at all"));
    }

    #[test]
    fn huge_or_deep_predictions_are_no_apologies_and_do_not_crash() {
        // Issue 11 item 1: `SELECT 1+1+...` with 140,000 terms overflowed the stack here.
        let deep = format!("SELECT 1{}", "+1".repeat(140_000));
        assert!(!is_apology(&deep));
        let where_chain = format!("SELECT 'x' WHERE 1{}", " AND 1".repeat(140_000));
        assert!(!is_apology(&where_chain));
        // Deep but within the bound: parsed and dropped on a large stack.
        let within = format!("SELECT 1{}", "+1".repeat(4_000));
        assert!(!is_apology(&within));
        // Over the size bound: refused before the parser allocates anything.
        let long = format!(
            "SELECT 'sorry' WHERE 1 IN ({})",
            vec!["1"; 600_000].join(",")
        );
        assert!(!is_apology(&long));
    }

    fn check(raw: &str, sql: &str, cleaned: bool) {
        let result = clean_sql(raw);
        assert_eq!(result.sql, sql, "raw: {raw:?}");
        assert_eq!(result.cleaned, cleaned, "raw: {raw:?}");
        // Cleaning is idempotent: its output is already clean.
        let again = clean_sql(&result.sql);
        assert_eq!(again.sql, result.sql, "second pass of {raw:?}");
        assert!(!again.cleaned, "second pass of {raw:?}");
    }

    #[test]
    fn a_stray_closing_fence_is_dropped() {
        // Seen from a small real model: no opening fence, a closing one after the query.
        check(
            "SELECT name FROM singer;\n```",
            "SELECT name FROM singer",
            true,
        );
        check("Answer:\nSELECT 1\n```\nHope it helps", "SELECT 1", true);
    }

    #[test]
    fn plain_sql_is_kept_and_not_flagged() {
        check("SELECT a FROM t", "SELECT a FROM t", false);
        check("  SELECT a FROM t;  \n", "SELECT a FROM t", false);
        check("SELECT a FROM t;;", "SELECT a FROM t", false);
        check(
            "-- the names\nSELECT name FROM t",
            "-- the names\nSELECT name FROM t",
            false,
        );
        check(
            "WITH c AS (SELECT 1 AS x) SELECT x FROM c;",
            "WITH c AS (SELECT 1 AS x) SELECT x FROM c",
            false,
        );
        check(
            "(SELECT 1) UNION (SELECT 2)",
            "(SELECT 1) UNION (SELECT 2)",
            false,
        );
    }

    #[test]
    fn semicolons_in_literals_and_comments_do_not_split() {
        check(
            "SELECT a FROM t WHERE b = 'x;y' AND \"c;d\" = 1",
            "SELECT a FROM t WHERE b = 'x;y' AND \"c;d\" = 1",
            false,
        );
        check(
            "SELECT a -- pick a; then b\nFROM t",
            "SELECT a -- pick a; then b\nFROM t",
            false,
        );
        check(
            "SELECT 'it''s; fine' FROM t",
            "SELECT 'it''s; fine' FROM t",
            false,
        );
    }

    #[test]
    fn prose_and_fence_are_stripped() {
        let raw = "Here is the query:\n\n```sql\nSELECT name FROM singer WHERE age > 30;\n```\n\nThis returns the names of singers older than 30.";
        check(raw, "SELECT name FROM singer WHERE age > 30", true);
    }

    #[test]
    fn fence_without_language() {
        check("```\nSELECT 1 FROM t\n```", "SELECT 1 FROM t", true);
        check("```SQL\nSELECT 1 FROM t\n```", "SELECT 1 FROM t", true);
        check("```sqlite\nSELECT 1 FROM t```", "SELECT 1 FROM t", true);
        check("```SELECT 1 FROM t```", "SELECT 1 FROM t", true);
    }

    #[test]
    fn unclosed_fence_runs_to_the_end() {
        check(
            "Sure!\n```sql\nSELECT a\nFROM t\nWHERE b = 1",
            "SELECT a\nFROM t\nWHERE b = 1",
            true,
        );
    }

    #[test]
    fn first_sql_block_with_a_query_wins() {
        let raw = "First the schema:\n```python\nq = 'SELECT 0'\n```\n```sql\nCREATE TABLE t (a INT);\n```\nThen:\n```sql\nSELECT a FROM t\n```\nOr:\n```sql\nSELECT b FROM t\n```";
        check(raw, "SELECT a FROM t", true);
    }

    #[test]
    fn fences_without_sql_leave_the_text_alone() {
        let raw = "```python\nprint(1)\n```";
        check(raw, raw, false);
    }

    #[test]
    fn ddl_before_the_select_is_dropped() {
        let raw = "CREATE TABLE t (a INT, b TEXT);\nINSERT INTO t VALUES (1, 'x;y');\nSELECT a FROM t WHERE b = 'x;y';";
        check(raw, "SELECT a FROM t WHERE b = 'x;y'", true);
        let fenced = "```sql\nCREATE TEMP VIEW v AS SELECT 1 AS a;\nSELECT a FROM v;\n```";
        check(fenced, "SELECT a FROM v", true);
    }

    #[test]
    fn prose_before_the_query_is_dropped() {
        check(
            "Here is the query: SELECT count(*) FROM singer",
            "SELECT count(*) FROM singer",
            true,
        );
        check(
            "Here's the SQL you asked for:\nSELECT name FROM t WHERE x = 'a;b';\nIt's simple, isn't it?",
            "SELECT name FROM t WHERE x = 'a;b'",
            true,
        );
        check(
            "With this query we count the singers:\nSELECT count(*) FROM singer",
            "SELECT count(*) FROM singer",
            true,
        );
        check(
            "SQL query:\nWITH c AS (SELECT 1 AS x)\nSELECT x FROM c",
            "WITH c AS (SELECT 1 AS x)\nSELECT x FROM c",
            true,
        );
    }

    #[test]
    fn trailing_prose_paragraph_is_cut() {
        check(
            "SELECT a\nFROM t\n\nThis query selects column a from t.",
            "SELECT a\nFROM t",
            true,
        );
        check(
            "SELECT a FROM t;\nExplanation: it reads t.",
            "SELECT a FROM t",
            true,
        );
        // A blank line inside a query is kept when SQL follows it.
        let spaced = "WITH x AS (SELECT 1 AS a)\n\nSELECT a FROM x\n\nORDER BY a";
        check(spaced, spaced, false);
    }

    #[test]
    fn later_statements_are_dropped() {
        check("SELECT 1; SELECT 2", "SELECT 1", true);
    }

    #[test]
    fn whole_answer_in_backticks() {
        check("`SELECT a FROM t`", "SELECT a FROM t", true);
        check("SELECT `a` FROM `t`", "SELECT `a` FROM `t`", false);
    }

    #[test]
    fn text_without_a_query_is_kept() {
        check(
            "I cannot answer that question.",
            "I cannot answer that question.",
            false,
        );
        check("", "", false);
        check(
            "EXPLAIN QUERY PLAN SELECT 1",
            "EXPLAIN QUERY PLAN SELECT 1",
            false,
        );
        check(
            "Select the rows you need",
            "Select the rows you need",
            false,
        );
    }

    #[test]
    fn odd_inputs_never_panic() {
        let odd = [
            "```",
            "``````",
            "`",
            "``",
            "'",
            "--",
            "/*",
            "/* SELECT",
            "SELECT '",
            "é;ü",
            ";;;",
            "WITH",
            "with é",
            ":select",
            "```sql",
            "```sql\n```",
            "SELECT [a",
            "\u{0}SELECT 1",
            "Here: WITH x AS (SELECT 1) SELECT * FROM x; é",
        ];
        for text in odd {
            let result = clean_sql(text);
            assert!(
                text.contains(result.sql.as_str()) || result.sql.is_empty(),
                "{text:?}"
            );
        }
    }
}
