//! What a database declares: tables, columns (declared type, primary key, NOT NULL) and
//! foreign keys, as each engine's catalog reports them ([`crate::Driver::catalog`]). Used by
//! the generators (JQE's schema graph, TQA, paraphrase names), the structural metrics (ETM's
//! schema facts) and the schema text of model prompts.

use crate::Value;

/// A column `table.column`; names keep their spelling and compare case-insensitively via `key`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ColRef {
    /// The table's name, as declared.
    pub table: String,
    /// The column's name, as declared.
    pub column: String,
}

impl ColRef {
    /// The column `table.column`.
    pub fn new(table: &str, column: &str) -> ColRef {
        ColRef {
            table: table.to_string(),
            column: column.to_string(),
        }
    }

    /// `table.column` lowercased: the identity used by union-find and comparisons.
    pub fn key(&self) -> String {
        format!("{}.{}", self.table, self.column).to_lowercase()
    }
}

/// A column of a table, as `PRAGMA table_info` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The column's name, as declared.
    pub name: String,
    /// The declared type as written (`INTEGER`, `varchar(20)`, or empty).
    pub decl_type: String,
    /// Part of the primary key.
    pub primary_key: bool,
    /// Declared NOT NULL (a primary key is not NOT NULL unless declared so).
    pub not_null: bool,
}

/// A table and its columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The table's name, as declared.
    pub name: String,
    /// Columns in declaration order.
    pub columns: Vec<Column>,
}

impl Table {
    /// The lines of a `CREATE TABLE` for this table: each column with the type `type_of` gives
    /// it and `NOT NULL` as declared, then its primary key, names quoted by `quote`.
    pub fn definition_lines(
        &self,
        quote: impl Fn(&str) -> String,
        type_of: impl Fn(&Column) -> String,
    ) -> Vec<String> {
        let mut lines: Vec<String> = self
            .columns
            .iter()
            .map(|c| {
                let not_null = if c.not_null { " NOT NULL" } else { "" };
                format!("{} {}{not_null}", quote(&c.name), type_of(c))
            })
            .collect();
        let keys: Vec<String> = self
            .columns
            .iter()
            .filter(|c| c.primary_key)
            .map(|c| quote(&c.name))
            .collect();
        if !keys.is_empty() {
            lines.push(format!("PRIMARY KEY ({})", keys.join(", ")));
        }
        lines
    }
}

/// A declared foreign key `from → to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignKey {
    /// The referencing column.
    pub from: ColRef,
    /// The referenced column.
    pub to: ColRef,
}

impl ForeignKey {
    /// An explicit join key `"orders.customer_id = customers.customer_id"`, checked against the
    /// schema (names are matched case-insensitively and written as the schema spells them).
    pub fn parse(text: &str, schema: &Schema) -> Result<ForeignKey, KeyError> {
        let side = |part: &str| -> Result<ColRef, KeyError> {
            let (table, column) = part
                .trim()
                .split_once('.')
                .ok_or_else(|| KeyError::NotAColumn(part.trim().to_string()))?;
            let table = schema
                .tables
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(table.trim()))
                .ok_or_else(|| KeyError::NoTable(table.trim().to_string()))?;
            let column = table
                .columns
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(column.trim()))
                .ok_or_else(|| KeyError::NoColumn {
                    table: table.name.clone(),
                    column: column.trim().to_string(),
                })?;
            Ok(ColRef::new(&table.name, &column.name))
        };
        let (from, to) = text
            .split_once('=')
            .ok_or_else(|| KeyError::NotAJoin(text.to_string()))?;
        Ok(ForeignKey {
            from: side(from)?,
            to: side(to)?,
        })
    }
}

/// Why an explicit join key is refused ([`ForeignKey::parse`]): a malformed key, or a name the
/// schema does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The key is not two sides joined by `=`.
    #[error("`{0}` is not `table.column = table.column`")]
    NotAJoin(String),
    /// A side is not `table.column`.
    #[error("`{0}` is not `table.column`")]
    NotAColumn(String),
    /// The schema has no such table.
    #[error("no table `{0}`")]
    NoTable(String),
    /// The table has no such column.
    #[error("table `{table}` has no column `{column}`")]
    NoColumn {
        /// The table, as the schema spells it.
        table: String,
        /// The column, as the key spells it.
        column: String,
    },
}

/// What a database declares: its tables and foreign keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schema {
    /// Tables in the order the database lists them.
    pub tables: Vec<Table>,
    /// Foreign keys of all tables.
    pub foreign_keys: Vec<ForeignKey>,
}

impl Schema {
    /// `CREATE TABLE` statements with the declared types, NOT NULL, primary and foreign keys:
    /// the schema text a system's prompt shows (`{schema}`) for a server database.
    pub fn ddl(&self) -> String {
        let mut statements = Vec::new();
        for table in &self.tables {
            let mut lines: Vec<String> = table
                .columns
                .iter()
                .map(|c| {
                    let not_null = if c.not_null { " NOT NULL" } else { "" };
                    format!("  {} {}{not_null}", c.name, c.decl_type)
                })
                .collect();
            let keys: Vec<&str> = table
                .columns
                .iter()
                .filter(|c| c.primary_key)
                .map(|c| c.name.as_str())
                .collect();
            if !keys.is_empty() {
                lines.push(format!("  PRIMARY KEY ({})", keys.join(", ")));
            }
            for key in self
                .foreign_keys
                .iter()
                .filter(|k| k.from.table == table.name)
            {
                lines.push(format!(
                    "  FOREIGN KEY ({}) REFERENCES {} ({})",
                    key.from.column, key.to.table, key.to.column
                ));
            }
            statements.push(format!(
                "CREATE TABLE {} (\n{}\n);",
                table.name,
                lines.join(",\n")
            ));
        }
        statements.join("\n")
    }

    /// Adds `column` to `table`: to the last table when it has that name (catalog rows come
    /// ordered by table), else to a new table.
    pub fn push_column(&mut self, table: String, column: Column) {
        if self.tables.last().is_none_or(|t| t.name != table) {
            self.tables.push(Table {
                name: table,
                columns: Vec::new(),
            });
        }
        if let Some(last) = self.tables.last_mut() {
            last.columns.push(column);
        }
    }

    /// The table named `name`, compared case-insensitively.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(name))
    }

    /// The primary key column of `table` when the key is a single column.
    pub fn single_primary_key(&self, table: &str) -> Option<&Column> {
        let table = self.table(table)?;
        let mut keys = table.columns.iter().filter(|c| c.primary_key);
        match (keys.next(), keys.next()) {
            (Some(key), None) => Some(key),
            _ => None,
        }
    }
}

/// The text of a catalog cell: a name or a declared type (NULL reads as empty).
pub fn text(value: &Value) -> String {
    match value {
        Value::Text(text) => text.clone(),
        Value::Int(n) => n.to_string(),
        _ => String::new(),
    }
}

/// A catalog flag: SQLite's integers and PostgreSQL's booleans both read as integers.
pub fn flag(value: &Value) -> bool {
    matches!(value, Value::Int(n) if *n > 0)
}

/// A double-quoted identifier of `name` (SQLite, PostgreSQL, DuckDB; MySQL in ANSI_QUOTES mode).
pub fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
