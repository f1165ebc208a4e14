//! Scratch copies: where a state case's statements run (DML, DDL, several statements), on a
//! private copy of its database that no one else reads and whose changes are never kept.

use std::collections::BTreeSet;

use crate::{ExecError, Execution, Limits};

/// A private, writable copy of one database, opened by [`crate::Backend::scratch`]. The
/// sandbox's guards stay (no ATTACH, no file access, no extension loading, the time and memory
/// bounds); what it adds is writing to the copy's own tables, indexes, views and triggers.
/// [`Scratch::reset`] undoes every change, so one copy serves many cases.
pub trait Scratch: Send {
    /// Runs one statement that may change the copy, within `limits`; returns how many rows
    /// it inserted, updated or deleted.
    fn apply(&mut self, sql: &str, limits: &Limits) -> Result<u64, ExecError>;

    /// Runs one query on the copy as it is now, within `limits`.
    fn query(&mut self, sql: &str, limits: &Limits) -> Execution;

    /// The tables and views that the statements applied since the last reset, or the last
    /// call, may have changed (rows or schema), by name: a state case compares these between
    /// two copies. An error means they cannot be known, and the state cannot be judged.
    fn take_touched(&mut self) -> Result<BTreeSet<String>, ExecError>;

    /// Undoes every change since the copy was opened or last reset. An error means the copy
    /// can no longer be trusted to be the original's content, and is dropped.
    fn reset(&mut self) -> Result<(), ExecError>;
}

/// The table an `INSERT`, `REPLACE`, `UPDATE` or `DELETE` statement changes, unquoted and
/// without its schema (`INSERT OR REPLACE INTO main."Order Items"` changes `Order Items`), for
/// an engine that cannot see what a statement touched; `None` for other statements, and when
/// the name cannot be read.
pub fn modified_table(sql: &str) -> Option<String> {
    let mut words = Words { rest: sql };
    let first = words.keyword()?;
    let name = match first.as_str() {
        "insert" | "replace" => {
            // INSERT [OR action] INTO name
            loop {
                match words.keyword()?.as_str() {
                    "into" => break words.name(),
                    "or" => {
                        words.keyword()?;
                    }
                    _ => return None,
                }
            }
        }
        "update" => {
            let at = words.rest;
            match words.keyword().as_deref() {
                Some("or") => {
                    words.keyword()?;
                    words.name()
                }
                _ => {
                    words.rest = at;
                    words.name()
                }
            }
        }
        "delete" => match words.keyword()?.as_str() {
            "from" => words.name(),
            _ => None,
        },
        _ => None,
    }?;
    (!name.is_empty()).then_some(name)
}

/// Reads words and names off the start of a statement, skipping spaces and comments.
struct Words<'a> {
    rest: &'a str,
}

impl Words<'_> {
    fn skip(&mut self) {
        loop {
            let trimmed = self.rest.trim_start();
            if let Some(after) = trimmed.strip_prefix("--") {
                self.rest = after.find('\n').map_or("", |at| &after[at..]);
            } else if let Some(after) = trimmed.strip_prefix("/*") {
                self.rest = after.find("*/").map_or("", |at| &after[at + 2..]);
            } else {
                self.rest = trimmed;
                return;
            }
        }
    }

    /// The next unquoted word, lower-cased.
    fn keyword(&mut self) -> Option<String> {
        self.skip();
        let end = self
            .rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(self.rest.len());
        if end == 0 {
            return None;
        }
        let word = self.rest[..end].to_lowercase();
        self.rest = &self.rest[end..];
        Some(word)
    }

    /// One part of a name: a word, or a name quoted with `"`, `` ` `` or `[]` (doubled quotes
    /// inside read as one).
    fn part(&mut self) -> Option<String> {
        self.skip();
        let close = match self.rest.chars().next()? {
            '"' => '"',
            '`' => '`',
            '[' => ']',
            _ => {
                let end = self
                    .rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                    .unwrap_or(self.rest.len());
                let word = &self.rest[..end];
                self.rest = &self.rest[end..];
                return (!word.is_empty()).then(|| word.to_string());
            }
        };
        let mut name = String::new();
        let mut chars = self.rest.char_indices().skip(1).peekable();
        while let Some((at, c)) = chars.next() {
            if c == close {
                if close != ']' && chars.peek().is_some_and(|(_, next)| *next == close) {
                    chars.next();
                    name.push(c);
                    continue;
                }
                self.rest = &self.rest[at + c.len_utf8()..];
                return Some(name);
            }
            name.push(c);
        }
        None
    }

    /// A possibly qualified name's last part.
    fn name(&mut self) -> Option<String> {
        let mut last = self.part()?;
        loop {
            self.skip();
            match self.rest.strip_prefix('.') {
                Some(after) => {
                    self.rest = after;
                    last = self.part()?;
                }
                None => return Some(last),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::modified_table;

    #[test]
    fn the_table_a_statement_changes_is_read_whatever_its_spelling() {
        let cases = [
            ("INSERT INTO books VALUES (1)", Some("books")),
            (
                "insert or replace into main.\"Order Items\" (a) values (1)",
                Some("Order Items"),
            ),
            ("REPLACE INTO `t``x` VALUES (1)", Some("t`x")),
            ("UPDATE OR IGNORE [my table] SET a = 1", Some("my table")),
            ("/* c */ update -- x\n books set price = 1", Some("books")),
            ("DELETE FROM s.t WHERE 1", Some("t")),
            ("UPDATE \"a\"\"b\" SET x = 1", Some("a\"b")),
            ("SELECT 1", None),
            ("DELETE t", None),
            ("INSERT INTO \"unterminated", None),
            ("", None),
        ];
        for (sql, table) in cases {
            assert_eq!(modified_table(sql).as_deref(), table, "{sql}");
        }
    }
}
