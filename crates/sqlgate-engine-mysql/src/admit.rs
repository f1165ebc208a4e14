//! Which statements a MySQL connection may run: one read-only statement, checked on its text
//! before the server sees it.
//!
//! The read-only transaction and the user's privileges are the main defences (docs/mysql.md);
//! this check is conservative on purpose: a word that could write, lock, reach a file or run a
//! second statement refuses the statement even where the server would have refused it too, and
//! even where it would have been harmless (`SHOW CREATE TABLE`).

use sqlgate_engine::limits::MAX_SQL_BYTES;
use sqlgate_engine::{ExecError, ExecErrorKind};

/// The words a statement may start with: the statements that read.
const READING: &[&str] = &[
    "SELECT", "WITH", "VALUES", "TABLE", "SHOW", "DESCRIBE", "DESC", "EXPLAIN",
];

/// Words refused anywhere outside strings and quoted names: writes (also `EXPLAIN` of one, and
/// MySQL's `WITH ... UPDATE`), `SELECT ... INTO` a file or variable, locks (`FOR UPDATE`,
/// `LOCK IN SHARE MODE`), statements that cannot appear inside a query (a sign of a second
/// one), and functions that read server files, hold locks across sessions or advance sequences.
const DENIED_WORDS: &[&str] = &[
    "INSERT",
    "UPDATE",
    "DELETE",
    "CREATE",
    "DROP",
    "ALTER",
    "RENAME",
    "GRANT",
    "REVOKE",
    "LOCK",
    "UNLOCK",
    "INTO",
    "OUTFILE",
    "DUMPFILE",
    "CALL",
    "HANDLER",
    "LOAD",
    "KILL",
    "PREPARE",
    "EXECUTE",
    "DEALLOCATE",
    "LOAD_FILE",
    "GET_LOCK",
    "RELEASE_LOCK",
    "RELEASE_ALL_LOCKS",
    "NEXTVAL",
    "SETVAL",
];

fn denied(message: String) -> ExecError {
    ExecError {
        kind: ExecErrorKind::Denied,
        message,
    }
}

/// How the server reads quotes (its `sql_mode`), so that strings and quoted names end where the
/// server ends them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quoting {
    /// `\` escapes a quote in a string (no `NO_BACKSLASH_ESCAPES`).
    pub backslash_escapes: bool,
    /// `"` quotes a name, not a string, and no `\` escapes in it (`ANSI_QUOTES`).
    pub ansi_quotes: bool,
}

/// `sql` without its final `;` when it is one reading statement that may run; else why not.
pub(crate) fn admit(sql: &str, quoting: Quoting) -> Result<&str, ExecError> {
    if sql.len() > MAX_SQL_BYTES {
        return Err(ExecError {
            kind: ExecErrorKind::TooLarge,
            message: format!(
                "the statement is {} bytes long, more than the {MAX_SQL_BYTES} a statement may have",
                sql.len()
            ),
        });
    }
    let tokens = tokens(sql, quoting)?;
    let mut end = sql.len();
    let mut words = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            Token::Semicolon(at) => {
                if tokens[i + 1..]
                    .iter()
                    .any(|t| !matches!(t, Token::Semicolon(_)))
                {
                    return Err(denied(
                        "the text holds more than one statement: one query is run at a time".into(),
                    ));
                }
                end = end.min(*at);
            }
            Token::Assign => {
                return Err(denied(
                    "the statement assigns a variable (`:=`): a query may only read".into(),
                ))
            }
            Token::Word(word, followed_by_paren) => {
                words.push((word.to_ascii_uppercase(), *followed_by_paren))
            }
            Token::Other(_) => {}
        }
    }
    // `(SELECT ...) UNION (SELECT ...)` starts with parentheses.
    let first = tokens
        .iter()
        .find(|token| !matches!(token, Token::Other(b'(')));
    match first {
        Some(Token::Word(word, _)) if READING.contains(&word.to_ascii_uppercase().as_str()) => {}
        Some(Token::Word(word, _)) => {
            return Err(denied(format!(
                "`{}` statements are not run: only queries (SELECT, WITH, VALUES, TABLE, SHOW, \
                 DESCRIBE, EXPLAIN)",
                word.to_ascii_uppercase()
            )))
        }
        Some(_) => return Err(denied("the text does not start with a query".into())),
        None => return Err(denied("the text holds no query".into())),
    }
    for (i, (word, followed_by_paren)) in words.iter().enumerate() {
        if DENIED_WORDS.contains(&word.as_str()) {
            return Err(denied(format!(
                "the statement uses `{word}`, which may write, lock or reach outside the \
                 database: a query may only read"
            )));
        }
        // REPLACE(...) is a string function; REPLACE INTO is a write.
        if word == "REPLACE" && !followed_by_paren {
            return Err(denied(
                "the statement uses `REPLACE`, which may write: a query may only read".into(),
            ));
        }
        // MariaDB's NEXT VALUE FOR advances a sequence.
        if word == "NEXT" && words.get(i + 1).is_some_and(|(next, _)| next == "VALUE") {
            return Err(denied(
                "the statement advances a sequence (`NEXT VALUE FOR`): a query may only read"
                    .into(),
            ));
        }
    }
    Ok(sql[..end].trim())
}

enum Token<'a> {
    /// A bare word (keyword, name, number), and whether `(` follows it.
    Word(&'a str, bool),
    /// `;`, at its byte offset.
    Semicolon(usize),
    /// `:=`
    Assign,
    /// A string or quoted name (its opening quote), or another character.
    Other(u8),
}

/// The statement's tokens, comments skipped; executable comments (`/*! */`, `/*M! */`) and
/// optimizer hints (`/*+ */`, which can set session variables) are refused.
fn tokens(sql: &str, quoting: Quoting) -> Result<Vec<Token<'_>>, ExecError> {
    let bytes = sql.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    let unterminated = |what: &str| ExecError {
        kind: ExecErrorKind::Prepare,
        message: format!("the statement has an unterminated {what}"),
    };
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c' => i += 1,
            b'#' => i = line_end(bytes, i),
            b'-' if bytes.get(i + 1) == Some(&b'-')
                && bytes
                    .get(i + 2)
                    .is_none_or(|c| c.is_ascii_whitespace() || c.is_ascii_control()) =>
            {
                i = line_end(bytes, i)
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let body = &sql[i + 2..];
                if body.starts_with('!') || body.starts_with("M!") || body.starts_with('+') {
                    return Err(denied(
                        "the statement holds an executable comment or optimizer hint \
                         (`/*!`, `/*M!`, `/*+`), which sqlgate does not run"
                            .into(),
                    ));
                }
                let close = body.find("*/").ok_or_else(|| unterminated("comment"))?;
                i += 2 + close + 2;
            }
            b'\'' | b'"' | b'`' => {
                let escapes = match c {
                    b'\'' => quoting.backslash_escapes,
                    b'"' => quoting.backslash_escapes && !quoting.ansi_quotes,
                    _ => false,
                };
                i = quoted_end(bytes, i, escapes)
                    .ok_or_else(|| unterminated("string or quoted name"))?;
                tokens.push(Token::Other(c));
            }
            b';' => {
                tokens.push(Token::Semicolon(i));
                i += 1;
            }
            b':' if bytes.get(i + 1) == Some(&b'=') => {
                tokens.push(Token::Assign);
                i += 2;
            }
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 => {
                let start = i;
                while i < bytes.len()
                    && (bytes[i].is_ascii_alphanumeric()
                        || bytes[i] == b'_'
                        || bytes[i] == b'$'
                        || bytes[i] >= 0x80)
                {
                    i += 1;
                }
                let rest = sql[i..].trim_start();
                tokens.push(Token::Word(&sql[start..i], rest.starts_with('(')));
            }
            _ => {
                tokens.push(Token::Other(c));
                i += 1;
            }
        }
    }
    Ok(tokens)
}

fn line_end(bytes: &[u8], from: usize) -> usize {
    bytes[from..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |at| from + at + 1)
}

/// Just past the quote closing the one at `start` (doubled quotes stay inside).
fn quoted_end(bytes: &[u8], start: usize, backslash_escapes: bool) -> Option<usize> {
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if backslash_escapes => i += 2,
            c if c == quote => {
                if bytes.get(i + 1) == Some(&quote) {
                    i += 2;
                } else {
                    return Some(i + 1);
                }
            }
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: Quoting = Quoting {
        backslash_escapes: true,
        ansi_quotes: false,
    };

    fn refused(sql: &str) -> String {
        let error = admit(sql, DEFAULT).expect_err(sql);
        assert_eq!(
            error.kind,
            ExecErrorKind::Denied,
            "{sql}: {}",
            error.message
        );
        error.message
    }

    #[test]
    fn queries_are_admitted_without_their_final_semicolon() {
        for (sql, admitted) in [
            ("SELECT 1", "SELECT 1"),
            ("select a FROM t;  ", "select a FROM t"),
            ("SELECT 1;;", "SELECT 1"),
            (
                "  WITH c AS (SELECT 1) SELECT * FROM c ; -- done",
                "WITH c AS (SELECT 1) SELECT * FROM c",
            ),
            ("(SELECT 1) UNION (SELECT 2)", "(SELECT 1) UNION (SELECT 2)"),
            (
                "SELECT REPLACE(name, 'a', 'b') FROM t",
                "SELECT REPLACE(name, 'a', 'b') FROM t",
            ),
            (
                "SELECT 'DROP TABLE t; INSERT' AS `delete`, \"into\"",
                "SELECT 'DROP TABLE t; INSERT' AS `delete`, \"into\"",
            ),
            (
                "SELECT 'it''s', 'a\\'; DROP' FROM t",
                "SELECT 'it''s', 'a\\'; DROP' FROM t",
            ),
            (
                "SELECT update_time, created_at FROM t",
                "SELECT update_time, created_at FROM t",
            ),
            ("SHOW TABLES", "SHOW TABLES"),
            ("DESCRIBE t", "DESCRIBE t"),
            (
                "EXPLAIN SELECT 1 /* a comment; */",
                "EXPLAIN SELECT 1 /* a comment; */",
            ),
            (
                "SELECT CAST(x AS CHAR CHARACTER SET utf8mb4) FROM t",
                "SELECT CAST(x AS CHAR CHARACTER SET utf8mb4) FROM t",
            ),
        ] {
            assert_eq!(admit(sql, DEFAULT).unwrap(), admitted, "{sql}");
        }
    }

    #[test]
    fn writes_second_statements_and_outside_reach_are_refused() {
        for sql in [
            "INSERT INTO t VALUES (1)",
            "update t set a = 1",
            "DELETE FROM t",
            "CREATE TABLE x (a int)",
            "DROP TABLE t",
            "ALTER TABLE t ADD b int",
            "TRUNCATE TABLE t",
            "SET GLOBAL max_connections = 1",
            "SET SESSION sql_mode = ''",
            "LOAD DATA INFILE '/etc/passwd' INTO TABLE t",
            "SELECT * FROM t INTO OUTFILE '/tmp/x'",
            "SELECT 1 INTO DUMPFILE '/tmp/x'",
            "SELECT 1 INTO @x",
            "SELECT LOAD_FILE('/etc/passwd')",
            "select load_file ('/etc/passwd')",
            "CALL p()",
            "LOCK TABLES t READ",
            "GRANT ALL ON *.* TO x",
            "SELECT * FROM t FOR UPDATE",
            "SELECT * FROM t LOCK IN SHARE MODE",
            "SELECT 1; DROP TABLE t",
            "SELECT 1; SELECT 2",
            "SELECT 1 /*! ; DROP TABLE t */",
            "SELECT 1 /*M!100000 , SLEEP(1) */",
            "SELECT /*+ SET_VAR(max_execution_time = 0) */ 1",
            "SELECT @x := 1",
            "SELECT GET_LOCK('a', 10)",
            "SELECT NEXT VALUE FOR s",
            "SELECT NEXTVAL(s)",
            "REPLACE INTO t VALUES (1)",
            "EXPLAIN DELETE FROM t",
            "WITH c AS (SELECT 1) DELETE FROM t",
            "HANDLER t OPEN",
            "DO SLEEP(1)",
            "PREPARE s FROM 'DROP TABLE t'",
            "KILL 1",
            "",
            "  ;",
        ] {
            refused(sql);
        }
        // Quotes that the server ends at a backslash: strings under NO_BACKSLASH_ESCAPES,
        // names under ANSI_QUOTES.
        for (sql, quoting) in [
            (
                "SELECT 'a\\'; DROP TABLE t; -- '",
                Quoting {
                    backslash_escapes: false,
                    ansi_quotes: false,
                },
            ),
            (
                "SELECT \"a\\\"; DROP TABLE t; -- \"",
                Quoting {
                    backslash_escapes: true,
                    ansi_quotes: true,
                },
            ),
        ] {
            let error = admit(sql, quoting).expect_err(sql);
            assert_eq!(error.kind, ExecErrorKind::Denied, "{}", error.message);
            // Read with the default quoting, the same text is one string.
            assert!(admit(sql, DEFAULT).is_ok(), "{sql}");
        }
    }

    #[test]
    fn unterminated_strings_and_comments_do_not_parse() {
        for sql in ["SELECT 'a", "SELECT `a", "SELECT 1 /* x", "SELECT 'a\\'"] {
            let error = admit(sql, DEFAULT).unwrap_err();
            assert_eq!(error.kind, ExecErrorKind::Prepare, "{sql}");
        }
        let long = format!("SELECT '{}'", "x".repeat(MAX_SQL_BYTES));
        assert_eq!(
            admit(&long, DEFAULT).unwrap_err().kind,
            ExecErrorKind::TooLarge
        );
    }
}
