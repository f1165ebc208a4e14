//! How a person names a database's tables and columns, decided once per database from its
//! schema and descriptions: Spider's human names, a description's noun (`aid` "Unique identifier
//! for each author" → "author ID"), an abbreviated key's table (`jid` referencing `journal` →
//! "journal ID"), and the foreign keys that let a join read as a relationship.

use std::collections::HashMap;

use sqlgate_eval::exec::schema::Schema;

use super::descriptions::{Described, Descriptions};
use super::words::{dictionary_words, is_abbreviated_key, is_readable, singular, words};
use crate::mutate::tqa::wordnet::WordNet;

/// The names of one database's tables and columns, and its foreign keys (all keys lower case).
/// Empty when nothing is known: the verbalizer then reads identifiers alone.
#[derive(Debug, Clone, Default)]
pub struct SchemaNames {
    tables: HashMap<String, String>,
    columns: HashMap<(String, String), String>,
    table_columns: HashMap<String, Vec<String>>,
    /// (from table, from column, to table).
    foreign_keys: Vec<(String, String, String)>,
    /// Tables that only link two others, by the two tables they link.
    bridges: HashMap<String, (String, String)>,
}

impl SchemaNames {
    /// The names of a database from its `schema` (when it could be read) and `descriptions`.
    pub fn build(
        schema: Option<&Schema>,
        descriptions: &Descriptions,
        wordnet: Option<&WordNet>,
    ) -> SchemaNames {
        let mut names = SchemaNames::default();
        if let Some(schema) = schema {
            for table in &schema.tables {
                let columns = table.columns.iter().map(|c| c.name.to_lowercase());
                names
                    .table_columns
                    .insert(table.name.to_lowercase(), columns.collect());
            }
            for key in &schema.foreign_keys {
                names.foreign_keys.push((
                    key.from.table.to_lowercase(),
                    key.from.column.to_lowercase(),
                    key.to.table.to_lowercase(),
                ));
            }
            names.bridges = bridges(schema);
        }
        for (table, name) in &descriptions.tables {
            if differs(name, table) {
                names.tables.insert(table.clone(), words(name));
            }
        }
        let mut described: Vec<(String, String)> = descriptions.columns.keys().cloned().collect();
        for (table, columns) in &names.table_columns {
            described.extend(columns.iter().map(|c| (table.clone(), c.clone())));
        }
        for (table, column) in described {
            let name = match descriptions.columns.get(&(table.clone(), column.clone())) {
                Some(Described::Name(name)) if differs(name, &column) => Some(words(name)),
                Some(Described::Sentence(sentence)) if !is_readable(&column, wordnet) => {
                    name_from_sentence(sentence)
                }
                _ => None,
            };
            // "abandoned yes or no" would read as a negation the query does not have.
            let name = name.filter(|n| !says_no(n));
            let name = name.or_else(|| names.abbreviated_key(&table, &column, wordnet));
            if let Some(name) = name {
                names.columns.insert((table, column), name);
            }
        }
        names
    }

    /// The human name of `table`, when it has one other than its identifier's words.
    pub fn table(&self, table: &str) -> Option<&str> {
        self.tables.get(&table.to_lowercase()).map(String::as_str)
    }

    /// The human name of `table.column`, when it has one other than its identifier's words.
    pub fn column(&self, table: &str, column: &str) -> Option<&str> {
        let key = (table.to_lowercase(), column.to_lowercase());
        self.columns.get(&key).map(String::as_str)
    }

    /// The first of `tables` that has a column `column`.
    pub fn owner<'t>(&self, tables: &[&'t str], column: &str) -> Option<&'t str> {
        let column = column.to_lowercase();
        tables.iter().copied().find(|table| {
            self.table_columns
                .get(&table.to_lowercase())
                .is_some_and(|columns| columns.contains(&column))
        })
    }

    /// Whether `table.column` references another table.
    pub fn is_foreign_key(&self, table: &str, column: &str) -> bool {
        let (table, column) = (table.to_lowercase(), column.to_lowercase());
        self.foreign_keys
            .iter()
            .any(|(t, c, _)| *t == table && *c == column)
    }

    /// Whether `table` has a column `column`; `None` when the table's columns are unknown.
    pub fn has_column(&self, table: &str, column: &str) -> Option<bool> {
        let columns = self.table_columns.get(&table.to_lowercase())?;
        Some(columns.contains(&column.to_lowercase()))
    }

    /// Whether `from` has a foreign key to `to`.
    pub fn references(&self, from: &str, to: &str) -> bool {
        let (from, to) = (from.to_lowercase(), to.to_lowercase());
        self.foreign_keys
            .iter()
            .any(|(f, _, t)| *f == from && *t == to)
    }

    /// Whether a foreign key links `a` and `b`, either way.
    pub fn linked(&self, a: &str, b: &str) -> bool {
        let (a, b) = (a.to_lowercase(), b.to_lowercase());
        self.foreign_keys
            .iter()
            .any(|(from, _, to)| (*from == a && *to == b) || (*from == b && *to == a))
    }

    /// The two tables `table` links, when it is a bridge: its columns are its two foreign keys
    /// to two other tables (`writes(aid, pid)` between `author` and `publication`).
    pub fn bridge(&self, table: &str) -> Option<(&str, &str)> {
        self.bridges
            .get(&table.to_lowercase())
            .map(|(a, b)| (a.as_str(), b.as_str()))
    }

    /// "author ID" for a key whose name is a table's initials plus `id` (`aid` in `author`, `jid`
    /// referencing `journal`): the referenced table first, else the column's own table, else
    /// the one table of the schema those initials name.
    fn abbreviated_key(
        &self,
        table: &str,
        column: &str,
        wordnet: Option<&WordNet>,
    ) -> Option<String> {
        if !is_abbreviated_key(column, wordnet) {
            return None;
        }
        let initials: String = column
            .chars()
            .filter(char::is_ascii_alphabetic)
            .collect::<String>()
            .to_lowercase();
        let initials = initials.strip_suffix("id").unwrap_or_default();
        let target = self
            .foreign_keys
            .iter()
            .find(|(t, c, _)| t == table && c == column)
            .map(|(_, _, to)| to.as_str());
        let named = |candidate: &str| abbreviates(initials, candidate);
        let owner = match target {
            Some(target) => Some(target),
            None if named(table) => Some(table),
            None => {
                let mut matching = self.table_columns.keys().filter(|t| named(t));
                match (matching.next(), matching.next()) {
                    (Some(only), None) => Some(only.as_str()),
                    _ => None,
                }
            }
        }?;
        let owner = self
            .tables
            .get(owner)
            .cloned()
            .unwrap_or_else(|| dictionary_words(owner, wordnet));
        Some(format!("{} ID", singular(&owner)))
    }
}

/// Whether `initials` abbreviate `table`: the first letters of its words (`ms` for
/// `medical_staff`) or its first letters (`stu` for `student`).
fn abbreviates(initials: &str, table: &str) -> bool {
    let first_letters: String = words(table)
        .split(' ')
        .filter_map(|w| w.chars().next())
        .collect();
    first_letters == initials || table.to_lowercase().starts_with(initials)
}

/// Tables whose every column is one of exactly two foreign keys to two other tables.
fn bridges(schema: &Schema) -> HashMap<String, (String, String)> {
    let mut out = HashMap::new();
    for table in &schema.tables {
        let keys: Vec<_> = schema
            .foreign_keys
            .iter()
            .filter(|k| k.from.table.eq_ignore_ascii_case(&table.name))
            .collect();
        let [a, b] = keys.as_slice() else {
            continue;
        };
        let only_keys = table.columns.iter().all(|c| {
            c.name.eq_ignore_ascii_case(&a.from.column)
                || c.name.eq_ignore_ascii_case(&b.from.column)
        });
        let (ta, tb) = (a.to.table.to_lowercase(), b.to.table.to_lowercase());
        let name = table.name.to_lowercase();
        if only_keys && ta != tb && ta != name && tb != name {
            out.insert(name, (ta, tb));
        }
    }
    out
}

/// Whether a human name says more than its identifier's words (not only case and `_`):
/// "student id" for `StuID`, "country language" for `countrylanguage`.
fn differs(name: &str, identifier: &str) -> bool {
    words(name).to_lowercase() != words(identifier).to_lowercase()
}

/// Whether a name has a word of negation in it.
fn says_no(name: &str) -> bool {
    name.split(|c: char| !c.is_alphanumeric())
        .any(|w| matches!(w, "no" | "not" | "none" | "without" | "never" | "non"))
}

/// Words that end the noun a description names ("the organization *the* author belongs to").
const STOP: &[&str] = &[
    "the", "a", "an", "where", "that", "which", "who", "whose", "being", "to", "of", "in", "for",
    "on", "at", "by", "with", "from", "is", "was", "are", "table", "table's", "column", "and",
    "or", "belongs",
];

/// A short name for a column from its description: "Unique identifier for each X", "ID of the
/// X ...", "Foreign key referencing the X ..." → "X ID"; otherwise a description of at most four
/// words as it is ("Name of the author"); a longer sentence names nothing.
pub fn name_from_sentence(sentence: &str) -> Option<String> {
    let text = sentence.trim().trim_end_matches('.').to_lowercase();
    let tokens: Vec<String> = text
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| "'\"`(),".contains(c)).to_string())
        .collect();
    let position = |word: &str| tokens.iter().position(|t| t == word);
    let noun_after = |start: usize| -> Option<String> {
        let rest = tokens.get(start..)?;
        let rest = rest
            .iter()
            .skip_while(|t| matches!(t.as_str(), "each" | "a" | "an" | "the" | "every"));
        let noun: Vec<&str> = rest
            .take_while(|t| !STOP.contains(&t.as_str()) && !t.is_empty())
            .take(3)
            .map(String::as_str)
            .collect();
        (!noun.is_empty()).then(|| format!("{} ID", noun.join(" ")))
    };
    if text.starts_with("foreign key") {
        // "... the 'did' column of the 'domain' table", "... the author table's primary key".
        if let Some(table) = tokens
            .iter()
            .position(|t| t == "table" || t == "table's")
            .and_then(|i| i.checked_sub(1))
        {
            return Some(format!("{} ID", tokens[table]));
        }
        let after = tokens
            .iter()
            .position(|t| t.starts_with("referenc"))
            .map_or(2, |i| i + 1);
        return noun_after(after);
    }
    for marker in ["identifier", "id"] {
        if let Some(i) = position(marker) {
            if matches!(tokens.get(i + 1).map(String::as_str), Some("for" | "of")) {
                return noun_after(i + 2);
            }
        }
    }
    let short = text.strip_prefix("the ").unwrap_or(&text);
    (short.split_whitespace().count() <= 4).then(|| words(short))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use sqlgate_eval::exec::schema::{ColRef, Column, ForeignKey, Table};

    fn table(name: &str, columns: &[&str]) -> Table {
        Table {
            name: name.to_string(),
            columns: columns
                .iter()
                .map(|c| Column {
                    name: c.to_string(),
                    decl_type: "INTEGER".into(),
                    primary_key: false,
                    not_null: false,
                })
                .collect(),
        }
    }

    fn key(from: (&str, &str), to: (&str, &str)) -> ForeignKey {
        ForeignKey {
            from: ColRef::new(from.0, from.1),
            to: ColRef::new(to.0, to.1),
        }
    }

    /// Defog's academic database in small: abbreviated keys, a bridge.
    pub(crate) fn academic() -> Schema {
        Schema {
            tables: vec![
                table("author", &["aid", "name", "oid"]),
                table("organization", &["oid", "name"]),
                table("journal", &["jid", "name"]),
                table("publication", &["pid", "title", "jid"]),
                table("writes", &["aid", "pid"]),
            ],
            foreign_keys: vec![
                key(("author", "oid"), ("organization", "oid")),
                key(("publication", "jid"), ("journal", "jid")),
                key(("writes", "aid"), ("author", "aid")),
                key(("writes", "pid"), ("publication", "pid")),
            ],
        }
    }

    #[test]
    fn descriptions_name_what_the_identifier_does_not() {
        for (sentence, name) in [
            ("Unique identifier for each author", "author ID"),
            (
                "The ID of the conference where the publication was presented",
                "conference ID",
            ),
            (
                "Foreign key referencing the organization the author belongs to",
                "organization ID",
            ),
            (
                "Foreign key referencing the 'did' column of the 'domain' table",
                "domain ID",
            ),
            (
                "Foreign key referencing the author table's primary key",
                "author ID",
            ),
            ("Name of the author", "name of the author"),
        ] {
            assert_eq!(
                name_from_sentence(sentence).as_deref(),
                Some(name),
                "{sentence}"
            );
        }
        assert_eq!(
            name_from_sentence("URL of the author's personal website and blog"),
            None
        );
    }

    #[test]
    fn abbreviated_keys_are_named_by_their_table() {
        let names = SchemaNames::build(Some(&academic()), &Descriptions::default(), None);
        assert_eq!(names.column("author", "aid"), Some("author ID"));
        assert_eq!(names.column("author", "oid"), Some("organization ID"));
        assert_eq!(names.column("publication", "jid"), Some("journal ID"));
        assert_eq!(names.column("writes", "pid"), Some("publication ID"));
        assert_eq!(names.column("author", "name"), None);
        assert_eq!(names.bridge("writes"), Some(("author", "publication")));
        assert_eq!(names.bridge("publication"), None);
    }

    #[test]
    fn spider_names_are_used_when_they_say_more() {
        let mut descriptions = Descriptions::default();
        for (column, name) in [
            ("stuid", "student id"),
            ("lname", "last name"),
            ("age", "age"),
            ("abandoned_yn", "abandoned yes or no"),
        ] {
            descriptions.columns.insert(
                ("student".into(), column.into()),
                Described::Name(name.into()),
            );
        }
        descriptions
            .tables
            .insert("countrylanguage".into(), "country language".into());
        let names = SchemaNames::build(None, &descriptions, None);
        assert_eq!(names.column("Student", "StuID"), Some("student ID"));
        assert_eq!(names.column("student", "lname"), Some("last name"));
        assert_eq!(names.column("student", "age"), None);
        assert_eq!(names.column("student", "abandoned_yn"), None);
        assert_eq!(names.table("countrylanguage"), Some("country language"));
    }
}
