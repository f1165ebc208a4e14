//! A state case's statements: a script split into statements as written (no statement is
//! rewritten), each classified by its leading words, and refused unless it is one an answer may
//! run on a scratch copy.

use crate::metrics::ex::sqlparse::{tokenize, Kind, Token};
use sqlgate_engine::limits::MAX_SQL_BYTES;

/// The most statements one script may hold.
pub const MAX_STATEMENTS: usize = 1_000;

/// What a statement does, read from its leading words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// SELECT, VALUES, or WITH ... (its rows are not kept).
    Query,
    /// INSERT, REPLACE, UPDATE or DELETE.
    Modify,
    /// CREATE TABLE, INDEX, VIEW or TRIGGER; ALTER TABLE.
    Define,
    /// DROP TABLE of the table named as written (its rows count against the cap on rows
    /// changed).
    DropTable(String),
    /// DROP INDEX, VIEW or TRIGGER.
    Drop,
}

/// One statement of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The statement as written, without its `;`, trimmed.
    pub text: String,
    /// What it does.
    pub action: Action,
}

/// Why a script cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// The script holds no statement.
    #[error("the answer holds no statement")]
    Empty,
    /// The script is longer than a statement may be.
    #[error("the answer is {0} bytes long, more than the {MAX_SQL_BYTES} it may have")]
    TooLong(usize),
    /// More statements than [`MAX_STATEMENTS`].
    #[error("the answer holds more than {MAX_STATEMENTS} statements")]
    TooMany,
    /// A statement an answer may not run.
    #[error("statement {number} (`{start}`) is refused: {reason}")]
    Refused {
        /// Its 1-based number in the script.
        number: usize,
        /// Its first words.
        start: String,
        /// Why.
        reason: &'static str,
    },
}

const ALLOWED: &str = "a state answer may run SELECT, INSERT, REPLACE, UPDATE, DELETE, \
                       CREATE TABLE / INDEX / VIEW / TRIGGER, ALTER TABLE and DROP TABLE / INDEX / \
                       VIEW / TRIGGER";

/// Splits `script` at its top-level `;` (not those in literals, comments or a trigger's
/// `BEGIN ... END`) and classifies each statement.
pub fn split(script: &str) -> Result<Vec<Statement>, ScriptError> {
    if script.len() > MAX_SQL_BYTES {
        return Err(ScriptError::TooLong(script.len()));
    }
    let mut statements = Vec::new();
    let mut current: Vec<Token<'_>> = Vec::new();
    let mut depth = 0usize;
    for token in tokenize(script) {
        if token.kind == Kind::Punct && token.text == ";" && depth == 0 {
            push(&mut statements, std::mem::take(&mut current))?;
            continue;
        }
        if is_word(&token) && is_trigger(&current) {
            let word = token.text.to_ascii_uppercase();
            match word.as_str() {
                "BEGIN" | "CASE" => depth += 1,
                "END" => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        current.push(token);
    }
    push(&mut statements, current)?;
    if statements.is_empty() {
        return Err(ScriptError::Empty);
    }
    Ok(statements)
}

fn is_word(token: &Token<'_>) -> bool {
    matches!(token.kind, Kind::Word | Kind::Keyword)
}

fn significant<'a>(tokens: &'a [Token<'a>]) -> impl Iterator<Item = &'a Token<'a>> {
    tokens.iter().filter(|t| {
        !matches!(
            t.kind,
            Kind::Space | Kind::Newline | Kind::LineComment | Kind::BlockComment
        )
    })
}

/// The leading words of a statement, upper-cased, a multi-word keyword token split.
fn leading_words(tokens: &[Token<'_>], count: usize) -> Vec<String> {
    significant(tokens)
        .take_while(|t| is_word(t))
        .flat_map(|t| t.text.split_whitespace().map(str::to_ascii_uppercase))
        .take(count)
        .collect()
}

fn is_trigger(tokens: &[Token<'_>]) -> bool {
    let words = leading_words(tokens, 3);
    words.first().is_some_and(|w| w == "CREATE") && words.iter().any(|w| w == "TRIGGER")
}

fn push(statements: &mut Vec<Statement>, tokens: Vec<Token<'_>>) -> Result<(), ScriptError> {
    let text: String = tokens.iter().map(|t| t.text).collect();
    if significant(&tokens).next().is_none() {
        return Ok(());
    }
    if statements.len() == MAX_STATEMENTS {
        return Err(ScriptError::TooMany);
    }
    let number = statements.len() + 1;
    let action = classify(&tokens).map_err(|reason| ScriptError::Refused {
        number,
        start: start_of(&text),
        reason,
    })?;
    statements.push(Statement {
        text: text.trim().to_string(),
        action,
    });
    Ok(())
}

/// The first words of a statement, for messages.
fn start_of(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().take(4).collect();
    let start = words.join(" ");
    match start.char_indices().nth(60) {
        Some((at, _)) => format!("{}...", &start[..at]),
        None => start,
    }
}

fn classify(tokens: &[Token<'_>]) -> Result<Action, &'static str> {
    let words = leading_words(tokens, 4);
    let word = |i: usize| words.get(i).map_or("", String::as_str);
    let refused = match word(0) {
        "SELECT" | "VALUES" | "WITH" => return Ok(Action::Query),
        "INSERT" | "REPLACE" | "UPDATE" | "DELETE" => return Ok(Action::Modify),
        "ALTER" if word(1) == "TABLE" => return Ok(Action::Define),
        "CREATE" => {
            let object = if word(1) == "UNIQUE" {
                word(2)
            } else {
                word(1)
            };
            match object {
                "TABLE" | "INDEX" | "VIEW" | "TRIGGER" => return Ok(Action::Define),
                "TEMP" | "TEMPORARY" => "temporary objects outlive the scratch copy's transaction",
                _ => ALLOWED,
            }
        }
        "DROP" => match word(1) {
            "TABLE" => return Ok(Action::DropTable(dropped_table(tokens))),
            "INDEX" | "VIEW" | "TRIGGER" => return Ok(Action::Drop),
            _ => ALLOWED,
        },
        "BEGIN" | "COMMIT" | "END" | "ROLLBACK" | "SAVEPOINT" | "RELEASE" | "START" => {
            "transaction control is the harness's: the statements run in one transaction"
        }
        "ATTACH" | "DETACH" => "an answer works on its own database only",
        "PRAGMA" | "SET" | "VACUUM" | "COPY" | "LOAD" | "INSTALL" | "GRANT" | "REVOKE" => ALLOWED,
        _ => ALLOWED,
    };
    Err(refused)
}

/// The table a `DROP TABLE [IF EXISTS] name` names, as written (a word, a quoted name, or
/// `schema.name`).
fn dropped_table(tokens: &[Token<'_>]) -> String {
    let mut rest = significant(tokens).skip(2).peekable();
    let mut name = String::new();
    while let Some(token) = rest.peek() {
        let upper = token.text.to_ascii_uppercase();
        if name.is_empty()
            && is_word(token)
            && (upper == "IF" || upper == "EXISTS" || upper == "IF EXISTS")
        {
            rest.next();
            continue;
        }
        break;
    }
    for token in rest {
        match token.kind {
            Kind::Word | Kind::Keyword | Kind::Quoted => name.push_str(token.text),
            Kind::Punct if token.text == "." => name.push('.'),
            _ => break,
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(script: &str) -> Vec<String> {
        split(script).unwrap().into_iter().map(|s| s.text).collect()
    }

    #[test]
    fn scripts_split_at_top_level_semicolons_only() {
        assert_eq!(
            texts("UPDATE t SET a = ';' ; -- c; d\nDELETE FROM t;;"),
            ["UPDATE t SET a = ';'", "-- c; d\nDELETE FROM t"]
        );
        let trigger = "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE u SET n = n + 1; \
                       DELETE FROM v WHERE CASE WHEN 1 THEN 1 END; END; INSERT INTO t VALUES (1)";
        let split = texts(trigger);
        assert_eq!(split.len(), 2, "{split:?}");
        assert!(split[0].ends_with("END"));
    }

    #[test]
    fn only_statements_on_the_copys_own_objects_are_allowed() {
        for allowed in [
            "select 1",
            "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x",
            "insert or replace into t values (1)",
            "REPLACE INTO t VALUES (1)",
            "create unique index i on t(a)",
            "CREATE VIEW v AS SELECT 1",
            "ALTER TABLE t ADD COLUMN c INTEGER",
            "DROP INDEX i",
        ] {
            assert!(split(allowed).is_ok(), "{allowed}");
        }
        for (refused, why) in [
            ("ATTACH DATABASE 'x' AS y", "own database"),
            ("UPDATE t SET a = 1; COMMIT", "transaction control"),
            ("BEGIN TRANSACTION", "transaction control"),
            ("CREATE TEMP TABLE x(a)", "temporary"),
            ("CREATE VIRTUAL TABLE x USING fts5(a)", "may run"),
            ("PRAGMA writable_schema = 1", "may run"),
            ("VACUUM INTO '/tmp/x'", "may run"),
            ("COPY t TO PROGRAM 'sh'", "may run"),
            ("CREATE EXTENSION x", "may run"),
        ] {
            let error = split(refused).unwrap_err().to_string();
            assert!(error.contains(why), "{refused}: {error}");
        }
        assert_eq!(split(" ; -- nothing\n").unwrap_err(), ScriptError::Empty);
        let error = split("SELECT 1; ATTACH 'x' AS y").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("statement 2 (`ATTACH 'x' AS y`)"),
            "{error}"
        );
    }

    #[test]
    fn a_dropped_table_is_named_as_written() {
        let action = |sql: &str| split(sql).unwrap().remove(0).action;
        assert_eq!(
            action("DROP TABLE books"),
            Action::DropTable("books".into())
        );
        assert_eq!(
            action("drop table if exists \"order items\""),
            Action::DropTable("\"order items\"".into())
        );
        assert_eq!(
            action("DROP TABLE main.t"),
            Action::DropTable("main.t".into())
        );
    }

    #[test]
    fn counts_and_sizes_are_bounded() {
        let many = "SELECT 1;".repeat(MAX_STATEMENTS + 1);
        assert_eq!(split(&many).unwrap_err(), ScriptError::TooMany);
        let long = format!("SELECT '{}'", "x".repeat(MAX_SQL_BYTES));
        assert!(matches!(split(&long), Err(ScriptError::TooLong(_))));
    }
}
