//! Schema facts of one database (`etm.md` §2), read once from SQLite: columns, primary and
//! foreign keys, NOT NULL and single-column UNIQUE columns, plus what the guards need (declared
//! types, whether a table has rows, whether a text column holds only ISO-8601 dates).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::exec::schema::Schema;

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

    /// Reads the facts of the SQLite database at `path`.
    pub fn read(path: &Path) -> Result<Facts, rusqlite::Error> {
        let schema = Schema::read(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
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
            read_unique_indexes(&conn, &table.name, &mut table_facts)?;
            table_facts.has_rows = conn
                .prepare(&format!("SELECT 1 FROM {} LIMIT 1", quoted(&table.name)))?
                .exists([])?;
            table_facts.iso_dates = iso_date_columns(&conn, &table.name, &table_facts)?;
            facts.tables.insert(table.name.to_lowercase(), table_facts);
        }
        // PRAGMA lists a table's last declared key first; in reverse, the last one wins, as in
        // the reference.
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

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn read_unique_indexes(
    conn: &Connection,
    name: &str,
    facts: &mut TableFacts,
) -> Result<(), rusqlite::Error> {
    let mut stmt = conn.prepare(&format!("PRAGMA index_list({})", quoted(name)))?;
    let indexes: Vec<(String, bool)> = stmt
        .query_map([], |row| {
            Ok((row.get::<_, String>(1)?, row.get::<_, bool>(2)?))
        })?
        .collect::<Result<_, _>>()?;
    for (index, unique) in indexes {
        if !unique {
            continue;
        }
        let mut info = conn.prepare(&format!("PRAGMA index_info({})", quoted(&index)))?;
        let columns: Vec<Option<String>> = info
            .query_map([], |row| row.get(2))?
            .collect::<Result<_, _>>()?;
        if let [Some(column)] = columns.as_slice() {
            facts.unique.insert(column.to_lowercase());
        }
    }
    Ok(())
}

/// Rule 17's guard: columns declared as dates, or holding only ISO-8601 text.
fn iso_date_columns(
    conn: &Connection,
    name: &str,
    facts: &TableFacts,
) -> Result<HashSet<String>, rusqlite::Error> {
    let mut columns = HashSet::new();
    for column in &facts.columns {
        let declared = facts
            .declared_types
            .get(column)
            .map_or(String::new(), |t| t.to_uppercase());
        if declared.contains("DATE") || declared.contains("TIME") {
            columns.insert(column.clone());
            continue;
        }
        // Only text values that are not dates disqualify a column; a table without rows has none.
        let sql = format!(
            "SELECT 1 FROM {table} WHERE {col} IS NOT NULL AND NOT (typeof({col}) = 'text' \
             AND {col} GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*') LIMIT 1",
            table = quoted(name),
            col = quoted(column),
        );
        if !conn.prepare(&sql)?.exists([])? {
            columns.insert(column.clone());
        }
    }
    Ok(columns)
}
