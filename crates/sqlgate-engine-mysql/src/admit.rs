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
/// MySQL's `WITH ... UPDATE`), `SELECT ... INTO` a file or variable, and every word of
/// [`REACHING`].
const DENIED_WORDS: &[&str] = &[
    "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "RENAME", "INTO",
];

/// Words refused in any statement, a query's or a state case's: locks (`FOR UPDATE`,
/// `LOCK IN SHARE MODE`), statements that cannot appear inside another (a sign of a second
/// one), privileges, and functions that reach files, hold locks across sessions or advance
/// sequences.
const REACHING: &[&str] = &[
    "GRANT",
    "REVOKE",
    "LOCK",
    "UNLOCK",
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

/// One statement's text without its final `;`, its bare words (upper-cased, each with whether
/// `(` follows it) and its first word, skipping opening parentheses.
struct Statement<'s> {
    text: &'s str,
    words: Vec<(String, bool)>,
    first: Option<String>,
}

/// Reads `sql` as one statement: refused when it is too long, holds a second statement or
/// assigns a variable (`:=`), whatever the statement.
fn statement(sql: &str, quoting: Quoting) -> Result<Statement<'_>, ExecError> {
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
                        "the text holds more than one statement: one is run at a time".into(),
                    ));
                }
                end = end.min(*at);
            }
            Token::Assign => {
                return Err(denied(
                    "the statement assigns a variable (`:=`), which outlives the statement".into(),
                ))
            }
            Token::Word(word, followed_by_paren) => {
                words.push((word.to_ascii_uppercase(), *followed_by_paren))
            }
            Token::Other(_) => {}
        }
    }
    // `(SELECT ...) UNION (SELECT ...)` starts with parentheses.
    let first = match tokens
        .iter()
        .find(|token| !matches!(token, Token::Other(b'(')))
    {
        Some(Token::Word(word, _)) => Some(word.to_ascii_uppercase()),
        Some(_) => return Err(denied("the text does not start with a statement".into())),
        None => None,
    };
    Ok(Statement {
        text: sql[..end].trim(),
        words,
        first,
    })
}

/// `sql` without its final `;` when it is one reading statement that may run; else why not.
pub(crate) fn admit(sql: &str, quoting: Quoting) -> Result<&str, ExecError> {
    let statement = statement(sql, quoting)?;
    match &statement.first {
        Some(word) if READING.contains(&word.as_str()) => {}
        Some(word) => {
            return Err(denied(format!(
                "`{word}` statements are not run: only queries (SELECT, WITH, VALUES, TABLE, \
                 SHOW, DESCRIBE, EXPLAIN)"
            )))
        }
        None => return Err(denied("the text holds no query".into())),
    }
    let words = &statement.words;
    for (i, (word, followed_by_paren)) in words.iter().enumerate() {
        if DENIED_WORDS.contains(&word.as_str()) || REACHING.contains(&word.as_str()) {
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
    Ok(statement.text)
}

/// What a statement a state case applies may change on its scratch copy (`scratch.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// Nothing: a query.
    Nothing,
    /// Rows, in a transaction rolled back afterwards. `one_table`: an `INSERT`, `REPLACE`,
    /// single-table `UPDATE` or single-table `DELETE`, whose table
    /// [`sqlgate_engine::scratch::modified_table`] names; else any table.
    Rows { one_table: bool },
    /// The schema: the server commits before and after it, so the copy is rebuilt afterwards.
    Schema,
    /// Every row of a table (`TRUNCATE`), committed as a schema change is.
    Truncate,
}

/// The objects a state case may create, alter or drop.
const SCHEMA_OBJECTS: &[&str] = &["TABLE", "INDEX", "VIEW", "TRIGGER"];

/// Words that may stand between `CREATE`, `ALTER` or `DROP` and the object's kind.
const SCHEMA_MODIFIERS: &[&str] = &[
    "OR",
    "REPLACE",
    "IF",
    "NOT",
    "EXISTS",
    "UNIQUE",
    "FULLTEXT",
    "SPATIAL",
    "ONLINE",
    "OFFLINE",
    "IGNORE",
    "ALGORITHM",
    "UNDEFINED",
    "MERGE",
    "TEMPTABLE",
    "SQL",
    "SECURITY",
    "INVOKER",
];

/// Words refused in a statement that changes a scratch copy, beyond [`REACHING`]: what reaches
/// beyond the copy (other sessions' locks, other storage, other databases), ends or nests the
/// case's transaction, or keeps something past the case (a temporary table, a definer).
const DENIED_IN_CHANGES: &[&str] = &[
    "IS_FREE_LOCK",
    "IS_USED_LOCK",
    "LASTVAL",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT",
    "TEMPORARY",
    "DEFINER",
    "DIRECTORY",
    "TABLESPACE",
    "CONNECTION",
    "DATABASE",
    "SCHEMA",
];

/// The storage engines a table created or altered by a state case may use: the server's own,
/// none of which reads files or other servers (MariaDB's `CONNECT`, `FEDERATED`, `SPIDER`).
const ENGINES: &[&str] = &["INNODB", "MYISAM", "ARIA", "MEMORY", "HEAP"];

/// `sql` without its final `;` when it is one statement a state case may apply to its scratch
/// copy, with what it may change; else why not. A query is admitted as [`admit`] admits one.
pub(crate) fn admit_change(sql: &str, quoting: Quoting) -> Result<(&str, Change), ExecError> {
    let statement = statement(sql, quoting)?;
    let Some(first) = statement.first.as_deref() else {
        return Err(denied("the text holds no statement".into()));
    };
    if READING.contains(&first) {
        return admit(sql, quoting).map(|text| (text, Change::Nothing));
    }
    // sqlgate's scratch databases are all reachable by the scratch user: a statement naming
    // one could change another worker's copy.
    if sql.to_ascii_lowercase().contains(crate::scratch::PREFIX) {
        return Err(denied(format!(
            "the statement names a database of sqlgate's own (`{}...`)",
            crate::scratch::PREFIX
        )));
    }
    let words = &statement.words;
    if let Some((word, _)) = words.iter().find(|(word, _)| {
        DENIED_IN_CHANGES.contains(&word.as_str()) || REACHING.contains(&word.as_str())
    }) {
        return Err(denied(format!(
            "the statement uses `{word}`, which reaches beyond the case's scratch copy or \
             outlives the case"
        )));
    }
    if let Some(at) = words.iter().position(|(word, _)| word == "ENGINE") {
        // ENGINE [=] name: the `=` is not a word.
        let engine = words.get(at + 1).map(|(word, _)| word.as_str());
        if !engine.is_some_and(|engine| ENGINES.contains(&engine)) {
            return Err(denied(format!(
                "the statement names a storage engine other than {}",
                ENGINES.join(", ")
            )));
        }
    }
    let change = match first {
        "INSERT" | "REPLACE" => Change::Rows { one_table: true },
        "UPDATE" => {
            // UPDATE a JOIN b SET ..., UPDATE a, b SET ...: several tables.
            let before_set = words.iter().take_while(|(word, _)| word != "SET");
            let joined = before_set.clone().any(|(word, _)| word == "JOIN");
            let listed = words
                .iter()
                .position(|(word, _)| word == "SET")
                .is_none_or(|at| comma_before(sql, quoting, &words[..at]));
            Change::Rows {
                one_table: !joined && !listed,
            }
        }
        "DELETE" => {
            // DELETE t1 FROM ..., DELETE FROM t1, t2 USING ...: several tables.
            let one_table = words.get(1).is_some_and(|(word, _)| word == "FROM")
                && !words
                    .iter()
                    .any(|(word, _)| word == "USING" || word == "JOIN")
                && !comma_before(sql, quoting, words);
            Change::Rows { one_table }
        }
        "CREATE" | "ALTER" | "DROP" => {
            let object = words[1..]
                .iter()
                .map(|(word, _)| word.as_str())
                .find(|word| !SCHEMA_MODIFIERS.contains(word));
            if !object.is_some_and(|object| SCHEMA_OBJECTS.contains(&object)) {
                return Err(denied(format!(
                    "`{first} {}` is not run: a state case may create, alter and drop tables, \
                     indexes, views and triggers",
                    object.unwrap_or_default()
                )));
            }
            Change::Schema
        }
        "RENAME" if words.get(1).is_some_and(|(word, _)| word == "TABLE") => Change::Schema,
        "TRUNCATE" => Change::Truncate,
        _ => {
            return Err(denied(format!(
                "`{first}` statements are not run: a state case's statements are queries, \
                 INSERT, REPLACE, UPDATE, DELETE, TRUNCATE, RENAME TABLE and CREATE, ALTER or \
                 DROP of a table, index, view or trigger"
            )))
        }
    };
    Ok((statement.text, change))
}

/// Whether a `,` stands outside parentheses before the words `upto` end (all words when
/// `upto` is every word): a list of tables.
fn comma_before(sql: &str, quoting: Quoting, upto: &[(String, bool)]) -> bool {
    let Ok(tokens) = tokens(sql, quoting) else {
        return true;
    };
    let mut depth = 0usize;
    let mut words_seen = 0;
    for token in tokens {
        match token {
            Token::Word(..) => {
                if words_seen == upto.len() {
                    return false;
                }
                words_seen += 1;
            }
            Token::Other(b'(') => depth += 1,
            Token::Other(b')') => depth = depth.saturating_sub(1),
            Token::Other(b',') if depth == 0 => return true,
            _ => {}
        }
    }
    false
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
    fn a_state_case_may_change_its_copy_and_nothing_else() {
        let rows = |one_table| Change::Rows { one_table };
        for (sql, change) in [
            ("SELECT 1;", Change::Nothing),
            ("INSERT INTO t VALUES (1)", rows(true)),
            ("REPLACE INTO t VALUES (1)", rows(true)),
            ("UPDATE t SET a = 1, b = 2 WHERE c IN (1, 2)", rows(true)),
            ("UPDATE `a`, `b` SET a.x = b.x", rows(false)),
            ("UPDATE a JOIN b ON a.id = b.id SET a.x = 1", rows(false)),
            ("DELETE FROM t WHERE a IN (1, 2)", rows(true)),
            ("DELETE t1 FROM t1 JOIN t2 ON t1.a = t2.a", rows(false)),
            ("DELETE FROM t1, t2 USING t1 JOIN t2", rows(false)),
            ("CREATE TABLE x (a INT) ENGINE = InnoDB", Change::Schema),
            ("CREATE OR REPLACE VIEW v AS SELECT 1", Change::Schema),
            (
                "CREATE ALGORITHM = MERGE VIEW v AS SELECT 1",
                Change::Schema,
            ),
            ("CREATE UNIQUE INDEX i ON t (a)", Change::Schema),
            ("ALTER TABLE t ADD COLUMN b INT", Change::Schema),
            ("DROP TABLE IF EXISTS t", Change::Schema),
            ("RENAME TABLE a TO b", Change::Schema),
            (
                "CREATE TRIGGER g BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1",
                Change::Schema,
            ),
            ("TRUNCATE TABLE t", Change::Truncate),
        ] {
            let (_, found) = admit_change(sql, DEFAULT).expect(sql);
            assert_eq!(found, change, "{sql}");
        }
        for sql in [
            "SET autocommit = 1",
            "COMMIT",
            "START TRANSACTION",
            "CALL p()",
            "CREATE DATABASE x",
            "DROP SCHEMA bookshop",
            "CREATE EVENT e ON SCHEDULE EVERY 1 SECOND DO DELETE FROM t",
            "CREATE PROCEDURE p() SELECT 1",
            "CREATE USER x",
            "CREATE TEMPORARY TABLE t (a INT)",
            "CREATE DEFINER = root VIEW v AS SELECT 1",
            "CREATE TABLE t (a INT) DATA DIRECTORY = '/tmp'",
            "CREATE TABLE t (a INT) ENGINE = CONNECT",
            "ALTER TABLE t ENGINE = FEDERATED",
            "ALTER TABLE t DISCARD TABLESPACE",
            "INSERT INTO t SELECT LOAD_FILE('/etc/passwd')",
            "UPDATE t SET a = (@x := 1)",
            "DELETE FROM t; DROP TABLE u",
            "DELETE FROM t /*! , u */",
            "DROP TABLE sqlgate_scratch_0123456789abcdef.t",
            "INSERT INTO `SQLGATE_SCRATCH_0123456789ABCDEF`.t VALUES (1)",
            "SELECT * FROM t INTO OUTFILE '/tmp/x'",
            "LOAD DATA INFILE '/etc/passwd' INTO TABLE t",
            "HANDLER t OPEN",
            "",
        ] {
            let error = admit_change(sql, DEFAULT).expect_err(sql);
            assert_eq!(
                error.kind,
                ExecErrorKind::Denied,
                "{sql}: {}",
                error.message
            );
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
