//! Schema facts of one database (`etm.md` §2), read once through the run's query runner from
//! its engine's catalog (SQLite or PostgreSQL): columns, primary and foreign keys, NOT NULL and
//! single-column UNIQUE columns, plus what the guards need (declared types, whether a table has
//! rows, whether a text column holds only ISO-8601 dates).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use crate::exec::schema;
use crate::exec::{Driver, ExecError, QueryRunner, ResultSet, Value};

#[derive(Debug, Clone, Default)]
pub struct TableFacts {
    pub columns: Vec<String>,
    pub primary_keys: Vec<String>,
    /// `fk column → "table.column"`, lowercased; a column with several keys keeps the last.
    pub foreign_keys: HashMap<String, String>,
    pub non_null: HashSet<String>,
    pub unique: HashSet<String>,
    pub declared_types: HashMap<String, String>,
    pub has_rows: bool,
    /// Text columns whose non-null values all look like ISO-8601 dates (vacuously, with no rows).
    pub iso_dates: HashSet<String>,
}

/// What the rules may assume about one database's tables and columns.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Lowercased table name → facts; table names keep their first spelling's order.
    pub tables: HashMap<String, TableFacts>,
}

impl Facts {
    /// The facts of a table, by lowercased name.
    pub fn table(&self, name: &str) -> Option<&TableFacts> {
        self.tables.get(name)
    }

    /// Whether `table.column` alone is unique: a single-column UNIQUE index or primary key.
    pub fn is_unique(&self, table: &str, column: &str) -> bool {
        self.table(table).is_some_and(|t| t.unique.contains(column))
    }

    /// Whether `table.column` is declared NOT NULL or is the table's single-column primary key.
    pub fn is_non_null(&self, table: &str, column: &str) -> bool {
        self.table(table)
            .is_some_and(|t| t.non_null.contains(column))
    }

    /// Whether `name` (lowercased) is a table or a column of any table.
    pub fn knows_name(&self, name: &str) -> bool {
        self.tables.contains_key(name)
            || self
                .tables
                .values()
                .any(|t| t.columns.iter().any(|c| c == name))
    }

    /// Reads the facts of the database `db` through `runner`, in its engine's catalog.
    pub fn read(runner: &dyn QueryRunner, db: &Path) -> Result<Facts, ExecError> {
        let engine = runner.driver();
        let rows = |sql: &str| runner.gold(db, sql).result;
        let schema = schema::query(runner, db)?;
        let unique = unique_columns(engine, &rows)?;
        let mut facts = Facts::default();
        for table in &schema.tables {
            let mut table_facts = TableFacts::default();
            for column in &table.columns {
                let name = column.name.to_lowercase();
                if column.not_null {
                    table_facts.non_null.insert(name.clone());
                }
                if column.primary_key {
                    table_facts.primary_keys.push(name.clone());
                }
                table_facts
                    .declared_types
                    .insert(name.clone(), column.decl_type.clone());
                table_facts.columns.push(name);
            }
            if let [single] = table_facts.primary_keys.as_slice() {
                table_facts.non_null.insert(single.clone());
                table_facts.unique.insert(single.clone());
            }
            let key = table.name.to_lowercase();
            table_facts
                .unique
                .extend(unique.get(&table.name).into_iter().flatten().cloned());
            read_contents(engine, &rows, &table.name, &mut table_facts)?;
            facts.tables.insert(key, table_facts);
        }
        // The catalog lists a table's last declared key first; in reverse, the last one wins,
        // as in the reference.
        for key in schema.foreign_keys.iter().rev() {
            if let Some(table) = facts.tables.get_mut(&key.from.table.to_lowercase()) {
                let target = format!("{}.{}", key.to.table, key.to.column).to_lowercase();
                table
                    .foreign_keys
                    .insert(key.from.column.to_lowercase(), target);
            }
        }
        Ok(facts)
    }
}

/// A query's rows through the runner, or why there are none.
type Rows<'a> = dyn Fn(&str) -> Result<Arc<ResultSet>, ExecError> + 'a;

/// Each table's columns that a single-column UNIQUE index (or constraint) covers, lowercased.
fn unique_columns(
    engine: &dyn Driver,
    rows: &Rows<'_>,
) -> Result<HashMap<String, HashSet<String>>, ExecError> {
    let mut unique: HashMap<String, HashSet<String>> = HashMap::new();
    let Some(sql) = engine.unique_columns_query() else {
        return Ok(unique);
    };
    for row in &rows(&sql)?.rows {
        if let [Value::Text(table), Value::Text(column)] = row.as_slice() {
            unique
                .entry(table.clone())
                .or_default()
                .insert(column.to_lowercase());
        }
    }
    Ok(unique)
}

/// Whether the table has rows, and rule 17's guard: its columns declared as dates or holding
/// only ISO-8601 text. One query per table, each check stopping at its first witness.
fn read_contents(
    engine: &dyn Driver,
    rows: &Rows<'_>,
    name: &str,
    facts: &mut TableFacts,
) -> Result<(), ExecError> {
    let table = engine.quote(name);
    let declared_date = |column: &String| {
        let declared = facts
            .declared_types
            .get(column)
            .map_or(String::new(), |t| t.to_uppercase());
        declared.contains("DATE") || declared.contains("TIME")
    };
    let (declared, undeclared): (Vec<&String>, Vec<&String>) =
        facts.columns.iter().partition(|c| declared_date(c));
    // Only text values that are not dates disqualify a column; a table without rows has none.
    let checks = undeclared.iter().map(|column| {
        let col = engine.quote(column);
        let not_a_date = engine.not_iso_date(&col);
        format!("EXISTS (SELECT 1 FROM {table} WHERE {col} IS NOT NULL AND NOT ({not_a_date}))")
    });
    let sql = format!(
        "SELECT {}",
        std::iter::once(format!("EXISTS (SELECT 1 FROM {table})"))
            .chain(checks)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let result = rows(&sql)?;
    let found: Vec<bool> = match result.rows.as_slice() {
        [row] => row
            .iter()
            .map(|v| matches!(v, Value::Int(n) if *n != 0))
            .collect(),
        _ => Vec::new(),
    };
    facts.has_rows = found.first().copied().unwrap_or(false);
    let mut iso_dates: HashSet<String> = declared.into_iter().cloned().collect();
    for (column, not_dates) in undeclared.into_iter().zip(found.into_iter().skip(1)) {
        if !not_dates {
            iso_dates.insert(column.clone());
        }
    }
    facts.iso_dates = iso_dates;
    Ok(())
}
