//! The parser's schema (`process_sql.Schema`): lowercased table names, each with its lowercased
//! column names, and the id map `{'*', 'table', 'table.column'}` → canonical id.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use crate::error::InputError;
use crate::exec::{Backend, ExecError, Limits, Open, Source, Value};

/// A table with its column names, lowercased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The table's name, lowercased.
    pub name: String,
    /// Its columns, lowercased, in declaration order.
    pub columns: Vec<String>,
}

/// The names the Spider parser resolves against (the reference's `Schema`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Schema {
    tables: Vec<Table>,
    table_index: HashMap<String, usize>,
    /// The keys of the reference's `idMap` other than `*`.
    id_keys: HashSet<String>,
}

impl Schema {
    /// Builds a schema from (table, columns) pairs. Names are lowercased; a table name seen twice
    /// keeps its first position and its last columns, like the reference's dict.
    pub fn new<T, C>(tables: impl IntoIterator<Item = (T, Vec<C>)>) -> Schema
    where
        T: AsRef<str>,
        C: AsRef<str>,
    {
        let mut schema = Schema::default();
        for (name, columns) in tables {
            let table = Table {
                name: name.as_ref().to_lowercase(),
                columns: columns.iter().map(|c| c.as_ref().to_lowercase()).collect(),
            };
            match schema.table_index.get(&table.name) {
                Some(&index) => schema.tables[index] = table,
                None => {
                    schema
                        .table_index
                        .insert(table.name.clone(), schema.tables.len());
                    schema.tables.push(table);
                }
            }
        }
        for table in &schema.tables {
            schema.id_keys.insert(table.name.clone());
            for column in &table.columns {
                schema.id_keys.insert(format!("{}.{}", table.name, column));
            }
        }
        schema
    }

    /// Reads the tables (`sqlite_master`, type `table`) and their columns (`PRAGMA
    /// table_info`) of a SQLite database, as the reference does, through `backend`'s sandbox.
    pub fn from_sqlite(
        backend: &dyn Backend,
        path: impl AsRef<Path>,
    ) -> Result<Schema, InputError> {
        let path = path.as_ref();
        let fail =
            |e: ExecError| InputError::file(path, format!("cannot read schema: {}", e.message));
        let mut connection = backend
            .open(path, Open::for_source(Source::Gold))
            .map_err(fail)?;
        let limits = Limits::default();
        let mut column = |sql: &str, at: usize| -> Result<Vec<String>, InputError> {
            let rows = connection.execute(sql, &limits).result.map_err(fail)?;
            Ok(rows
                .rows
                .iter()
                .map(|row| match row.get(at) {
                    Some(Value::Text(text)) => text.clone(),
                    _ => String::new(),
                })
                .collect())
        };
        let names = column("SELECT name FROM sqlite_master WHERE type='table'", 0)?;
        let mut tables = Vec::with_capacity(names.len());
        for name in names {
            let pragma = format!("PRAGMA table_info(\"{}\")", name.replace('"', "\"\""));
            let columns = column(&pragma, 1)?;
            tables.push((name, columns));
        }
        Ok(Schema::new(tables))
    }

    /// Reads every database of a Spider `tables.json`, from `table_names_original` and
    /// `column_names_original`: db_id → schema.
    pub fn from_tables_json(path: impl AsRef<Path>) -> Result<HashMap<String, Schema>, InputError> {
        let path = path.as_ref();
        let entries = read_tables_json(path)?;
        let mut schemas = HashMap::with_capacity(entries.len());
        for (record, entry) in entries.into_iter().enumerate() {
            let schema = entry
                .to_schema()
                .map_err(|message| InputError::file(path, message).at_record(record))?;
            schemas.insert(entry.db_id, schema);
        }
        Ok(schemas)
    }

    /// The tables, in order of first appearance.
    pub fn tables(&self) -> &[Table] {
        &self.tables
    }

    /// The columns of `table` (lowercased name), if it exists.
    pub fn columns(&self, table: &str) -> Option<&[String]> {
        let index = *self.table_index.get(table)?;
        Some(&self.tables[index].columns)
    }

    /// The reference's `idMap[key]`: `__all__` for `*`, `__key__` for a table or `table.column`.
    pub fn id(&self, key: &str) -> Option<String> {
        if key == "*" {
            Some("__all__".to_string())
        } else {
            self.id_keys.contains(key).then(|| format!("__{key}__"))
        }
    }
}

/// One database of a Spider `tables.json`. The key fields default to empty, so that a file
/// holding only names still reads (the parser needs nothing more).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TablesJsonEntry {
    /// The database's name (its folder under the databases directory).
    pub db_id: String,
    /// Table names as written in the database.
    pub table_names_original: Vec<String>,
    /// (table index, name); index -1 is the `*` pseudo-column.
    pub column_names_original: Vec<(i64, String)>,
    /// One per column of `column_names_original`: text, number, time, boolean or others.
    #[serde(default)]
    pub column_types: Vec<String>,
    /// The primary keys, as indexes into `column_names_original`.
    #[serde(default)]
    pub primary_keys: Vec<PrimaryKey>,
    /// (column, referenced column), as indexes into `column_names_original`.
    #[serde(default)]
    pub foreign_keys: Vec<(usize, usize)>,
}

/// A `primary_keys` item: a column index, or a list of them (a composite key, as BIRD writes it).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum PrimaryKey {
    /// A single-column key.
    Column(usize),
    /// A composite key.
    Columns(Vec<usize>),
}

impl PrimaryKey {
    /// The key's column indexes, one for a single-column key.
    pub fn columns(&self) -> &[usize] {
        match self {
            PrimaryKey::Column(column) => std::slice::from_ref(column),
            PrimaryKey::Columns(columns) => columns,
        }
    }
}

/// Reads the entries of a Spider `tables.json`, in file order; a malformed entry is an error
/// naming its record (and its db_id when it has one). Every reader (schemas, foreign keys,
/// `schema-db`) goes through here, so all reject the same files.
pub fn read_tables_json(path: impl AsRef<Path>) -> Result<Vec<TablesJsonEntry>, InputError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::file(path, format!("cannot read: {e}")))?;
    let entries: Vec<serde_json::Value> = serde_json::from_str(&text)
        .map_err(|e| InputError::file(path, format!("not a JSON list: {e}")))?;
    let mut first_record: HashMap<String, usize> = HashMap::new();
    entries
        .into_iter()
        .enumerate()
        .map(|(record, entry)| {
            let db_id = match entry.get("db_id").and_then(serde_json::Value::as_str) {
                Some(db_id) => format!("database {db_id:?}: "),
                None => String::new(),
            };
            let fail = |message: String| {
                InputError::file(path, format!("{db_id}{message}")).at_record(record)
            };
            let entry: TablesJsonEntry = serde_json::from_value(entry)
                .map_err(|e| fail(format!("bad schema entry: {e}")))?;
            entry.check().map_err(fail)?;
            if let Some(first) = first_record.insert(entry.db_id.clone(), record) {
                return Err(fail(format!("also record {first}")));
            }
            Ok(entry)
        })
        .collect()
}

impl TablesJsonEntry {
    /// Every index points at something that exists: a column's table, a key's column (not
    /// `*`); `column_types`, when given, has one type per column.
    fn check(&self) -> Result<(), String> {
        let columns = &self.column_names_original;
        for (index, (table, name)) in columns.iter().enumerate() {
            let known = *table == -1
                || usize::try_from(*table).is_ok_and(|t| t < self.table_names_original.len());
            if !known {
                return Err(format!(
                    "column {index} ({name:?}) refers to missing table {table}"
                ));
            }
        }
        if !self.column_types.is_empty() && self.column_types.len() != columns.len() {
            return Err(format!(
                "column_types has {} entries for {} columns",
                self.column_types.len(),
                columns.len()
            ));
        }
        let primary = self.primary_keys.iter().flat_map(|key| key.columns());
        let foreign = self.foreign_keys.iter().flat_map(|&(from, to)| [from, to]);
        let keys = primary
            .map(|&column| ("primary", column))
            .chain(foreign.map(|column| ("foreign", column)));
        for (role, column) in keys {
            match columns.get(column) {
                Some((table, _)) if *table >= 0 => {}
                Some(_) => {
                    return Err(format!(
                        "a {role} key refers to column {column}, the * pseudo-column"
                    ))
                }
                None => {
                    return Err(format!(
                        "a {role} key refers to column {column}, which does not exist ({} columns)",
                        columns.len()
                    ))
                }
            }
        }
        Ok(())
    }

    fn to_schema(&self) -> Result<Schema, String> {
        let mut columns: Vec<Vec<&str>> = vec![Vec::new(); self.table_names_original.len()];
        for (table, column) in &self.column_names_original {
            if *table < 0 {
                continue;
            }
            let slot = usize::try_from(*table)
                .ok()
                .and_then(|index| columns.get_mut(index))
                .ok_or_else(|| format!("column {column:?} refers to missing table {table}"))?;
            slot.push(column);
        }
        Ok(Schema::new(self.table_names_original.iter().zip(columns)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_reference_id_map() {
        let schema = Schema::new([("Singer", vec!["Name", "Age"])]);
        assert_eq!(schema.id("*").as_deref(), Some("__all__"));
        assert_eq!(schema.id("singer").as_deref(), Some("__singer__"));
        assert_eq!(schema.id("singer.name").as_deref(), Some("__singer.name__"));
        assert_eq!(schema.id("singer.Name"), None);
        assert_eq!(schema.id("singer.country"), None);
        assert_eq!(
            schema.columns("singer"),
            Some(&["name".to_string(), "age".to_string()][..])
        );
    }

    #[test]
    fn duplicate_table_keeps_first_position_and_last_columns() {
        let schema = Schema::new([("a", vec!["x"]), ("b", vec!["y"]), ("A", vec!["z"])]);
        let names: Vec<&str> = schema.tables().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(schema.columns("a"), Some(&["z".to_string()][..]));
        assert_eq!(schema.id("a.x"), None);
    }

    #[test]
    fn reads_sqlite_and_tables_json_alike() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("t.sqlite");
        let conn = rusqlite::Connection::open(&db).expect("create db");
        conn.execute_batch(
            "CREATE TABLE Singer (Singer_ID INTEGER PRIMARY KEY, Name TEXT);
             CREATE TABLE \"my table\" (\"Some Col\" TEXT);",
        )
        .expect("create tables");
        drop(conn);
        let json = dir.path().join("tables.json");
        std::fs::write(
            &json,
            r#"[{"db_id": "t", "table_names_original": ["Singer", "my table"],
                 "column_names_original": [[-1, "*"], [0, "Singer_ID"], [0, "Name"], [1, "Some Col"]]}]"#,
        )
        .expect("write json");

        let from_db =
            Schema::from_sqlite(&*sqlgate_engine_sqlite::files(), &db).expect("schema from sqlite");
        let from_json = Schema::from_tables_json(&json).expect("schema from json");
        assert_eq!(from_json.get("t"), Some(&from_db));
        assert_eq!(
            from_db.columns("my table"),
            Some(&["some col".to_string()][..])
        );
    }

    #[test]
    fn bad_inputs_are_input_errors() {
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("missing.sqlite");
        assert!(Schema::from_sqlite(&*sqlgate_engine_sqlite::files(), &missing).is_err());

        let json = dir.path().join("tables.json");
        std::fs::write(
            &json,
            r#"[{"db_id": "t", "table_names_original": ["a"], "column_names_original": [[3, "x"]]}]"#,
        )
        .expect("write json");
        let error = Schema::from_tables_json(&json).expect_err("bad table index");
        assert_eq!(error.record, Some(0));
        assert!(error.message.contains("missing table 3"), "{error}");

        std::fs::write(&json, r#"{"db_id": "t"}"#).expect("write json");
        assert!(Schema::from_tables_json(&json).is_err());
    }
}
