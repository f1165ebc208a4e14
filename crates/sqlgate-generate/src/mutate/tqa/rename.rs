//! The rename map of one database (every N1/N2 identifier lowered to N3), the `ALTER TABLE`
//! script that applies it to a copy, and the check that the clone has exactly the new names.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::Serialize;

use super::ident::{self, Level};
use super::wordnet::WordNet;
use sqlgate_eval::exec::schema::Schema;
use sqlgate_eval::exec::{Backend, ExecError, Limits, Open, Source, Value};

/// Old name → new name, for tables and (database-wide, so that an unqualified column needs no
/// scope resolution) columns. Keys are lowercased; identifiers that stay are absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RenameMap {
    /// Table renames.
    pub tables: BTreeMap<String, String>,
    /// Column renames, database-wide.
    pub columns: BTreeMap<String, String>,
}

/// How many identifiers of a database sit at each naturalness level (SQLMorph Fig. 4).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LevelCounts {
    /// Identifiers at N1.
    pub n1: usize,
    /// Identifiers at N2.
    pub n2: usize,
    /// Identifiers at N3.
    pub n3: usize,
}

impl LevelCounts {
    fn add(&mut self, level: Level) {
        match level {
            Level::N1 => self.n1 += 1,
            Level::N2 => self.n2 += 1,
            Level::N3 => self.n3 += 1,
        }
    }

    /// Identifiers counted.
    pub fn total(&self) -> usize {
        self.n1 + self.n2 + self.n3
    }
}

/// A function turning an identifier into its N3 candidate (the deterministic rule, or a
/// validated LLM answer falling back to it).
pub type Lowering<'a> = &'a dyn Fn(&str) -> String;

impl RenameMap {
    /// Lowers every N1/N2 table and column name of `schema`; each new name is unique among the
    /// database's old and new names and is not an SQL keyword. Deterministic: tables, then
    /// distinct column names, in name order.
    pub fn build(
        schema: &Schema,
        wordnet: &WordNet,
        lowering: Lowering,
    ) -> (RenameMap, LevelCounts) {
        let mut taken: HashSet<String> = schema
            .tables
            .iter()
            .flat_map(|t| std::iter::once(&t.name).chain(t.columns.iter().map(|c| &c.name)))
            .map(|n| n.to_lowercase())
            .collect();
        let mut map = RenameMap::default();
        let mut counts = LevelCounts::default();
        let mut tables: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
        tables.sort_by_key(|t| t.to_lowercase());
        let mut columns: BTreeMap<String, &str> = BTreeMap::new();
        for table in &schema.tables {
            for column in &table.columns {
                counts.add(ident::classify(&column.name, wordnet));
                columns
                    .entry(column.name.to_lowercase())
                    .or_insert(&column.name);
            }
        }
        for table in tables {
            let level = ident::classify(table, wordnet);
            counts.add(level);
            if let Some(new) = rename(table, level, lowering, &mut taken) {
                map.tables.insert(table.to_lowercase(), new);
            }
        }
        for (key, column) in columns {
            let level = ident::classify(column, wordnet);
            if let Some(new) = rename(column, level, lowering, &mut taken) {
                map.columns.insert(key, new);
            }
        }
        (map, counts)
    }

    /// The new name of table `name`, if it is renamed.
    pub fn table(&self, name: &str) -> Option<&str> {
        self.tables.get(&name.to_lowercase()).map(String::as_str)
    }

    /// The new name of column `name`, if it is renamed.
    pub fn column(&self, name: &str) -> Option<&str> {
        self.columns.get(&name.to_lowercase()).map(String::as_str)
    }

    /// Whether nothing is renamed.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty() && self.columns.is_empty()
    }

    /// The script that renames a copy of the database: columns first, then tables, with
    /// foreign keys off (SQLMorph §V). SQLite rewrites foreign keys, indices, views and
    /// triggers that refer to a renamed name.
    pub fn script(&self, schema: &Schema, about: &str) -> String {
        let mut out = format!("-- {about}\nPRAGMA foreign_keys = OFF;\n");
        for table in &schema.tables {
            for column in &table.columns {
                if let Some(new) = self.column(&column.name) {
                    out.push_str(&format!(
                        "ALTER TABLE {} RENAME COLUMN {} TO {};\n",
                        quote(&table.name),
                        quote(&column.name),
                        quote(new)
                    ));
                }
            }
        }
        for table in &schema.tables {
            if let Some(new) = self.table(&table.name) {
                out.push_str(&format!(
                    "ALTER TABLE {} RENAME TO {};\n",
                    quote(&table.name),
                    quote(new)
                ));
            }
        }
        out
    }

    /// Checks through the engine's catalog (SQLite's `PRAGMA table_info` and `sqlite_master`)
    /// that `clone` has exactly the renamed tables and columns of `original`, and that its views
    /// still run.
    pub fn verify(
        &self,
        original: &Schema,
        clone: &Path,
        backend: &dyn Backend,
    ) -> Result<(), CloneError> {
        let mut connection = backend
            .open(clone, Open::for_source(Source::Gold))
            .map_err(CloneError::Engine)?;
        let limits = Limits::default();
        let mut rows = |sql: &str| -> Result<Vec<Vec<Value>>, ExecError> {
            connection
                .execute(sql, &limits)
                .result
                .map(|set| set.rows.clone())
        };
        let renamed = backend
            .driver()
            .catalog(&mut rows)
            .map_err(CloneError::Engine)?;
        let expected: Vec<(String, Vec<String>)> = original
            .tables
            .iter()
            .map(|t| {
                let name = self.table(&t.name).unwrap_or(&t.name).to_string();
                let columns = t
                    .columns
                    .iter()
                    .map(|c| self.column(&c.name).unwrap_or(&c.name).to_string())
                    .collect();
                (name, columns)
            })
            .collect();
        for (table, columns) in &expected {
            let found = renamed
                .table(table)
                .ok_or_else(|| CloneError::NoTable(table.clone()))?;
            let names: Vec<&String> = found.columns.iter().map(|c| &c.name).collect();
            if names.len() != columns.len() || names.iter().zip(columns).any(|(a, b)| *a != b) {
                return Err(CloneError::Columns {
                    table: table.clone(),
                    found: names.into_iter().cloned().collect(),
                    expected: columns.clone(),
                });
            }
        }
        if renamed.tables.len() != expected.len() {
            return Err(CloneError::TableCount);
        }
        if renamed.foreign_keys.len() != original.foreign_keys.len() {
            return Err(CloneError::LostForeignKeys);
        }
        let views = rows("SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name")
            .map_err(CloneError::Engine)?;
        for view in views {
            let Some(Value::Text(view)) = view.first() else {
                continue;
            };
            rows(&format!("SELECT * FROM {} LIMIT 0", quote(view))).map_err(|e| {
                CloneError::BrokenView {
                    view: view.clone(),
                    message: e.message,
                }
            })?;
        }
        Ok(())
    }
}

/// Why a clone is not the renamed original ([`RenameMap::verify`]).
#[derive(Debug, thiserror::Error)]
pub enum CloneError {
    /// The clone could not be opened or its catalog read: the engine's message.
    #[error("{}", .0.message)]
    Engine(ExecError),
    /// A renamed table is missing.
    #[error("the clone has no table `{0}`")]
    NoTable(String),
    /// A table's columns are not the renamed ones, in order.
    #[error("table `{table}` has columns {found:?}, expected {expected:?}")]
    Columns {
        /// The table, by its new name.
        table: String,
        /// Its columns in the clone.
        found: Vec<String>,
        /// The renamed columns of the original.
        expected: Vec<String>,
    },
    /// The clone has tables the original does not.
    #[error("the clone has a different number of tables")]
    TableCount,
    /// The clone has fewer foreign keys than the original.
    #[error("the clone lost foreign keys")]
    LostForeignKeys,
    /// A view fails on the clone.
    #[error("view `{view}` no longer works: {message}")]
    BrokenView {
        /// The view's name.
        view: String,
        /// The engine's message.
        message: String,
    },
}

fn rename(
    name: &str,
    level: Level,
    lowering: Lowering,
    taken: &mut HashSet<String>,
) -> Option<String> {
    if level == Level::N3 {
        return None;
    }
    let candidate = lowering(name);
    if candidate.is_empty() || candidate.eq_ignore_ascii_case(name) {
        return None;
    }
    let new = ident::unique(&candidate, name, taken);
    taken.insert(new.to_lowercase());
    Some(new)
}

/// A double-quoted SQL identifier.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
