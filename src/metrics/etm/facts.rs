//! Schema facts of one database (`etm.md` §2), read once from SQLite: columns, primary and
//! foreign keys, NOT NULL and single-column UNIQUE columns, plus what the guards need (declared
//! types, whether a table has rows, whether a text column holds only ISO-8601 dates).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

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

#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Lowercased table name → facts; table names keep their first spelling's order.
    pub tables: HashMap<String, TableFacts>,
}

impl Facts {
    pub fn table(&self, name: &str) -> Option<&TableFacts> {
        self.tables.get(name)
    }

    pub fn is_unique(&self, table: &str, column: &str) -> bool {
        self.table(table).is_some_and(|t| t.unique.contains(column))
    }

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

    pub fn read(path: &Path) -> Result<Facts, rusqlite::Error> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
        let names: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?
            .query_map([], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        let mut facts = Facts::default();
        for name in names {
            let table = read_table(&conn, &name)?;
            facts.tables.insert(name.to_lowercase(), table);
        }
        Ok(facts)
    }
}

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn read_table(conn: &Connection, name: &str) -> Result<TableFacts, rusqlite::Error> {
    let mut facts = TableFacts::default();
    let mut pk_columns: Vec<(i64, String)> = Vec::new();
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({})", quoted(name)))?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let column = row.get::<_, String>(1)?.to_lowercase();
        let declared: String = row.get::<_, Option<String>>(2)?.unwrap_or_default();
        let not_null: bool = row.get(3)?;
        let pk: i64 = row.get(5)?;
        if not_null {
            facts.non_null.insert(column.clone());
        }
        if pk > 0 {
            pk_columns.push((pk, column.clone()));
        }
        facts.declared_types.insert(column.clone(), declared);
        facts.columns.push(column);
    }
    pk_columns.sort();
    facts.primary_keys = pk_columns.into_iter().map(|(_, c)| c).collect();
    if let [single] = facts.primary_keys.as_slice() {
        facts.non_null.insert(single.clone());
        facts.unique.insert(single.clone());
    }
    read_foreign_keys(conn, name, &mut facts)?;
    read_unique_indexes(conn, name, &mut facts)?;
    facts.has_rows = conn
        .prepare(&format!("SELECT 1 FROM {} LIMIT 1", quoted(name)))?
        .exists([])?;
    facts.iso_dates = iso_date_columns(conn, name, &facts)?;
    Ok(facts)
}

fn read_foreign_keys(
    conn: &Connection,
    name: &str,
    facts: &mut TableFacts,
) -> Result<(), rusqlite::Error> {
    let mut stmt = conn.prepare(&format!("PRAGMA foreign_key_list({})", quoted(name)))?;
    let mut rows = stmt.query([])?;
    let mut keys = Vec::new();
    while let Some(row) = rows.next()? {
        let table: String = row.get(2)?;
        let from: String = row.get(3)?;
        let to: Option<String> = row.get(4)?;
        keys.push((table.to_lowercase(), from.to_lowercase(), to));
    }
    drop(rows);
    // PRAGMA lists the last declared key first; "the last one" wins, as in the reference.
    for (table, from, to) in keys.into_iter().rev() {
        let to = match to {
            Some(to) => to.to_lowercase(),
            None => match referenced_primary_key(conn, &table)? {
                Some(pk) => pk,
                None => continue,
            },
        };
        facts.foreign_keys.insert(from, format!("{table}.{to}"));
    }
    Ok(())
}

fn referenced_primary_key(
    conn: &Connection,
    table: &str,
) -> Result<Option<String>, rusqlite::Error> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({})", quoted(table)))?;
    let keys: Vec<String> = stmt
        .query_map([], |row| {
            Ok((row.get::<_, String>(1)?, row.get::<_, i64>(5)?))
        })?
        .filter_map(|row| row.ok())
        .filter(|(_, pk)| *pk > 0)
        .map(|(name, _)| name.to_lowercase())
        .collect();
    Ok(match keys.as_slice() {
        [single] => Some(single.clone()),
        _ => None,
    })
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
