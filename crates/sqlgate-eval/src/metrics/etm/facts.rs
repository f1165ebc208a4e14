//! Schema facts of one database (`etm.md` §2), read once through the run's query runner from
//! its engine's catalog (SQLite or PostgreSQL): columns, primary and foreign keys, NOT NULL and
//! single-column UNIQUE columns, plus what the guards need (declared types, whether a table has
//! rows, whether a text column holds only ISO-8601 dates).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use crate::exec::schema::{quoted, Schema};
use crate::exec::{EngineKind, ExecError, QueryRunner, ResultSet, Value};

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
        let engine = runner.engine();
        let rows = |sql: &str| runner.gold(db, sql).result;
        let schema = Schema::query(runner, db)?;
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
    engine: EngineKind,
    rows: &Rows<'_>,
) -> Result<HashMap<String, HashSet<String>>, ExecError> {
    let sql = match engine {
        // An index on an expression has no column name.
        EngineKind::Sqlite => {
            "SELECT m.name, max(ii.name) FROM sqlite_master AS m, pragma_index_list(m.name) AS il, \
             pragma_index_info(il.name) AS ii WHERE m.type = 'table' AND il.\"unique\" \
             GROUP BY m.name, il.name HAVING count(*) = 1 AND max(ii.name) IS NOT NULL"
        }
        // indkey[0] is 0 for an index on an expression, which no attribute matches.
        EngineKind::Postgres => {
            "SELECT c.relname::text, a.attname::text FROM pg_index i \
             JOIN pg_class c ON c.oid = i.indrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0] \
             WHERE i.indisunique AND i.indnkeyatts = 1 \
             AND n.nspname = ANY (current_schemas(false))"
        }
    };
    let mut unique: HashMap<String, HashSet<String>> = HashMap::new();
    for row in &rows(sql)?.rows {
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
    engine: EngineKind,
    rows: &Rows<'_>,
    name: &str,
    facts: &mut TableFacts,
) -> Result<(), ExecError> {
    let table = quoted(name);
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
        let col = quoted(column);
        let not_a_date = match engine {
            EngineKind::Sqlite => format!(
                "typeof({col}) = 'text' AND {col} GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*'"
            ),
            EngineKind::Postgres => format!(
                "pg_typeof({col}) IN ('text'::regtype, 'character varying'::regtype, \
                 'character'::regtype) AND {col}::text ~ '^[0-9]{{4}}-[0-1][0-9]-[0-3][0-9]'"
            ),
        };
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
