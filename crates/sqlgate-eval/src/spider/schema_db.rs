//! Schema-only SQLite databases from a Spider `tables.json`: each database's tables, columns,
//! primary and foreign keys, and no rows. Queries can be parsed and planned against them (the
//! ETM reference runs EXPLAIN QUERY PLAN on such files); every result is empty.
//!
//! The conventions are those of the reference files in the shared data
//! (`spider-dev/schema-db/`), which these builds reproduce exactly:
//! - tables in `table_names_original` order, columns in `column_names_original` order, with their
//!   original names, always double-quoted;
//! - SQLite affinities for types: text → TEXT; number, time, boolean → NUMERIC; others → BLOB;
//! - after the columns, one `PRIMARY KEY (...)` with the table's `primary_keys` columns (several
//!   make a composite key), then one `FOREIGN KEY ("c") REFERENCES "t" ("r")` per `foreign_keys`
//!   pair, in file order, duplicates kept, whether or not the referenced column is a key;
//! - no NOT NULL, UNIQUE or any other constraint;
//! - `sqlite_sequence` cannot be created by hand: SQLite adds it right after the first
//!   AUTOINCREMENT table, so the table listed just before it declares its single number primary
//!   key inline as `INTEGER PRIMARY KEY AUTOINCREMENT` (world_1's `city`), which recreates it in
//!   the same place.
//!
//! A statement reads `CREATE TABLE "t" (\n  "c" TYPE,\n  ...\n)`: one item per line, indented by
//! two spaces.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::schema::{read_tables_json, TablesJsonEntry};
use crate::error::{is_plain_name, FileError, InputError, OutputError};
use crate::exec::{Backend, ExecError};

/// One `CREATE TABLE` statement of a database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTable {
    /// The table it creates.
    pub table: String,
    /// The statement, ready to execute.
    pub sql: String,
}

/// What became of one database file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Written, replacing an existing file only when forced.
    Written,
    /// Left as it was: the file exists and replacing was not forced.
    Skipped,
}

/// One database of a [`build_databases`] run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    /// The database's name in `tables.json`.
    pub db_id: String,
    /// Where its file is.
    pub path: PathBuf,
    /// Whether the file was written or left alone.
    pub outcome: Outcome,
}

/// Why a database could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The entry describes a schema that cannot be built.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The file could not be written.
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// Builds the databases of `tables_json` (only those of `db_ids`, unless it is empty) into
/// `out_dir/<db_id>/<db_id>.sqlite`, in file order. An existing file is replaced only when
/// `force` is set, and skipped otherwise. Every selected entry is checked before anything is
/// written, so bad input writes nothing.
pub fn build_databases(
    tables_json: &Path,
    out_dir: &Path,
    db_ids: &[String],
    force: bool,
    sqlite: &dyn Backend,
) -> Result<Vec<Built>, FileError> {
    let entries = read_tables_json(tables_json)?;
    if entries.is_empty() {
        return Err(
            InputError::file(tables_json, "the file holds no databases: nothing to build").into(),
        );
    }
    let selected = select(&entries, db_ids, tables_json)?;
    let at_record = |record: usize, db_id: &str, message: String| {
        InputError::file(tables_json, format!("database {db_id:?}: {message}")).at_record(record)
    };
    let mut plans = Vec::with_capacity(selected.len());
    for (record, entry) in selected {
        check_plain_name(&entry.db_id).map_err(|m| at_record(record, &entry.db_id, m))?;
        let tables = create_statements(entry)
            .map_err(|error| at_record(record, &entry.db_id, error.to_string()))?;
        plans.push((record, entry, tables));
    }
    let mut built = Vec::with_capacity(plans.len());
    for (record, entry, tables) in plans {
        let db_id = &entry.db_id;
        let path = out_dir.join(db_id).join(format!("{db_id}.sqlite"));
        let outcome =
            write_database(&tables, &path, force, sqlite).map_err(|error| match error {
                BuildError::Schema(error) => {
                    FileError::Input(at_record(record, db_id, error.to_string()))
                }
                BuildError::Output(error) => FileError::Output(error),
            })?;
        built.push(Built {
            db_id: db_id.clone(),
            path,
            outcome,
        });
    }
    Ok(built)
}

/// Builds one database at `path` from its `tables.json` entry; an existing file is replaced
/// only when `force` is set. The file is built in a temporary folder beside `path` and renamed
/// into place, so an interrupted build never leaves a partial file under `path`.
pub fn build_database(
    entry: &TablesJsonEntry,
    path: &Path,
    force: bool,
    sqlite: &dyn Backend,
) -> Result<Outcome, BuildError> {
    let tables = create_statements(entry)?;
    write_database(&tables, path, force, sqlite)
}

/// The `CREATE TABLE` statements of one entry, in creation order (`sqlite_sequence` excluded:
/// SQLite creates it). An error names the problem and the column, key or table at fault.
pub fn create_statements(entry: &TablesJsonEntry) -> Result<Vec<CreateTable>, SchemaError> {
    let columns = resolve_columns(entry)?;
    let tables = &entry.table_names_original;
    let mut primary: Vec<Vec<&Column>> = vec![Vec::new(); tables.len()];
    for (key, primary_key) in entry.primary_keys.iter().enumerate() {
        for &index in primary_key.columns() {
            let column = column(&columns, index, "primary key", key)?;
            if !primary[column.table].iter().any(|c| c.index == index) {
                primary[column.table].push(column);
            }
        }
    }
    let mut foreign: Vec<Vec<(&Column, &Column)>> = vec![Vec::new(); tables.len()];
    for (key, &(from, to)) in entry.foreign_keys.iter().enumerate() {
        let from = column(&columns, from, "foreign key", key)?;
        let to = column(&columns, to, "foreign key", key)?;
        foreign[from.table].push((from, to));
    }
    let autoincrement = autoincrement_column(tables, &primary)?;
    if let Some(column) = autoincrement {
        // Declared inline with the column instead.
        primary[column.table].clear();
    }

    let mut statements = Vec::with_capacity(tables.len());
    for (table, name) in tables.iter().enumerate() {
        if is_sqlite_sequence(name) {
            if !foreign[table].is_empty() {
                return Err(SchemaError::SequenceForeignKeys {
                    table,
                    name: name.clone(),
                });
            }
            continue;
        }
        let mut items: Vec<String> = (columns.iter().flatten())
            .filter(|column| column.table == table)
            .map(|column| {
                if autoincrement.is_some_and(|auto| auto.index == column.index) {
                    format!("{} INTEGER PRIMARY KEY AUTOINCREMENT", quote(column.name))
                } else {
                    format!("{} {}", quote(column.name), column.affinity)
                }
            })
            .collect();
        if items.is_empty() {
            return Err(SchemaError::NoColumns {
                table,
                name: name.clone(),
            });
        }
        if !primary[table].is_empty() {
            let keys: Vec<String> = primary[table].iter().map(|c| quote(c.name)).collect();
            items.push(format!("PRIMARY KEY ({})", keys.join(", ")));
        }
        for (from, to) in &foreign[table] {
            items.push(format!(
                "FOREIGN KEY ({}) REFERENCES {} ({})",
                quote(from.name),
                quote(&tables[to.table]),
                quote(to.name)
            ));
        }
        let body: Vec<String> = items.iter().map(|item| format!("  {item}")).collect();
        statements.push(CreateTable {
            table: name.clone(),
            sql: format!("CREATE TABLE {} (\n{}\n)", quote(name), body.join(",\n")),
        });
    }
    Ok(statements)
}

/// Why a `tables.json` entry describes no schema that can be built ([`create_statements`]):
/// each names the column, key or table at fault by its index and name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// `column_types` and `column_names_original` differ in length.
    #[error("column_types has {types} entries for {columns} columns")]
    TypeCount {
        /// Entries of `column_types`.
        types: usize,
        /// Entries of `column_names_original`.
        columns: usize,
    },
    /// A column names a table index past the last table.
    #[error("column {index} ({name:?}) refers to missing table {table}")]
    MissingTable {
        /// The column's index.
        index: usize,
        /// The column's name.
        name: String,
        /// The table index it gives.
        table: i64,
    },
    /// A column's type is none of Spider's five.
    #[error(
        "column {index} ({name:?}) has unknown type {spider_type:?} (expected text, number, \
         time, boolean or others)"
    )]
    UnknownType {
        /// The column's index.
        index: usize,
        /// The column's name.
        name: String,
        /// The type as written.
        spider_type: String,
    },
    /// A key names the `*` pseudo-column.
    #[error("{role} {key} refers to column {index}, the * pseudo-column")]
    StarColumn {
        /// `primary key` or `foreign key`.
        role: &'static str,
        /// The key's index in its list.
        key: usize,
        /// The column index it gives.
        index: usize,
    },
    /// A key names a column index past the last column.
    #[error("{role} {key} refers to column {index}, which does not exist ({columns} columns)")]
    MissingColumn {
        /// `primary key` or `foreign key`.
        role: &'static str,
        /// The key's index in its list.
        key: usize,
        /// The column index it gives.
        index: usize,
        /// The entry's columns.
        columns: usize,
    },
    /// `sqlite_sequence` is listed after a table that cannot be SQLite's AUTOINCREMENT table.
    #[error(
        "table {table} ({name:?}) is created by SQLite with an AUTOINCREMENT table: the table \
         listed before it needs a single number primary key"
    )]
    SequenceOwner {
        /// The index of `sqlite_sequence`.
        table: usize,
        /// Its name as listed.
        name: String,
    },
    /// `sqlite_sequence` declares foreign keys, which SQLite's own table cannot have.
    #[error("table {table} ({name:?}) is created by SQLite and cannot declare foreign keys")]
    SequenceForeignKeys {
        /// The index of `sqlite_sequence`.
        table: usize,
        /// Its name as listed.
        name: String,
    },
    /// A table without a column.
    #[error("table {table} ({name:?}) has no columns")]
    NoColumns {
        /// The table's index.
        table: usize,
        /// Its name.
        name: String,
    },
    /// SQLite refuses a table's statement (a duplicate column, a reserved name).
    #[error("SQLite rejects table {table:?}: {message}")]
    Rejected {
        /// The table's name.
        table: String,
        /// SQLite's message.
        message: String,
    },
}

/// A column of the entry other than the `*` pseudo-column.
struct Column<'a> {
    /// Its index in `column_names_original`.
    index: usize,
    table: usize,
    name: &'a str,
    spider_type: &'a str,
    affinity: &'static str,
}

/// Every entry of `column_names_original`, `None` for `*`, checked against the tables and types.
fn resolve_columns(entry: &TablesJsonEntry) -> Result<Vec<Option<Column<'_>>>, SchemaError> {
    let names = &entry.column_names_original;
    if entry.column_types.len() != names.len() {
        return Err(SchemaError::TypeCount {
            types: entry.column_types.len(),
            columns: names.len(),
        });
    }
    let mut columns = Vec::with_capacity(names.len());
    for (index, ((table, name), spider_type)) in names.iter().zip(&entry.column_types).enumerate() {
        if *table < 0 {
            columns.push(None);
            continue;
        }
        let table = usize::try_from(*table)
            .ok()
            .filter(|&table| table < entry.table_names_original.len())
            .ok_or_else(|| SchemaError::MissingTable {
                index,
                name: name.clone(),
                table: *table,
            })?;
        let affinity = affinity(spider_type).ok_or_else(|| SchemaError::UnknownType {
            index,
            name: name.clone(),
            spider_type: spider_type.clone(),
        })?;
        columns.push(Some(Column {
            index,
            table,
            name,
            spider_type,
            affinity,
        }));
    }
    Ok(columns)
}

/// The column `index` named by item `key` of `primary_keys` or `foreign_keys` (`role`).
fn column<'c, 'a>(
    columns: &'c [Option<Column<'a>>],
    index: usize,
    role: &'static str,
    key: usize,
) -> Result<&'c Column<'a>, SchemaError> {
    match columns.get(index) {
        Some(Some(column)) => Ok(column),
        Some(None) => Err(SchemaError::StarColumn { role, key, index }),
        None => Err(SchemaError::MissingColumn {
            role,
            key,
            index,
            columns: columns.len(),
        }),
    }
}

/// The column to declare AUTOINCREMENT so that SQLite creates a listed `sqlite_sequence`: the
/// single number primary key of the table just before it (SQLite adds `sqlite_sequence` to the
/// schema after the first AUTOINCREMENT table, and `tables.json` lists tables in schema order).
fn autoincrement_column<'c, 'a>(
    tables: &[String],
    primary: &[Vec<&'c Column<'a>>],
) -> Result<Option<&'c Column<'a>>, SchemaError> {
    let Some(position) = tables.iter().position(|name| is_sqlite_sequence(name)) else {
        return Ok(None);
    };
    let owner_key = position
        .checked_sub(1)
        .map_or(&[][..], |owner| &primary[owner][..]);
    match owner_key {
        [key] if key.spider_type == "number" => Ok(Some(*key)),
        _ => Err(SchemaError::SequenceOwner {
            table: position,
            name: tables[position].clone(),
        }),
    }
}

fn is_sqlite_sequence(table: &str) -> bool {
    table.eq_ignore_ascii_case("sqlite_sequence")
}

/// The SQLite affinity of a Spider column type.
fn affinity(spider_type: &str) -> Option<&'static str> {
    match spider_type {
        "text" => Some("TEXT"),
        "number" | "time" | "boolean" => Some("NUMERIC"),
        "others" => Some("BLOB"),
        _ => None,
    }
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The entries to build, with their record index: all, or those named in `db_ids`.
fn select<'e>(
    entries: &'e [TablesJsonEntry],
    db_ids: &[String],
    file: &Path,
) -> Result<Vec<(usize, &'e TablesJsonEntry)>, InputError> {
    // `read_tables_json` refused duplicate db_ids, so no two entries share an output file.
    let selected: Vec<(usize, &TablesJsonEntry)> = entries
        .iter()
        .enumerate()
        .filter(|(_, entry)| db_ids.is_empty() || db_ids.contains(&entry.db_id))
        .collect();
    match db_ids
        .iter()
        .find(|id| !selected.iter().any(|(_, entry)| &entry.db_id == *id))
    {
        Some(missing) => Err(InputError::file(
            file,
            format!("no database {missing:?} in this file"),
        )),
        None => Ok(selected),
    }
}

/// A db_id names a folder and a file: it must not reach outside the output folder.
fn check_plain_name(db_id: &str) -> Result<(), String> {
    if is_plain_name(db_id) {
        Ok(())
    } else {
        Err("db_id is not a plain file name".to_string())
    }
}

fn write_database(
    tables: &[CreateTable],
    path: &Path,
    force: bool,
    sqlite: &dyn Backend,
) -> Result<Outcome, BuildError> {
    if path.exists() && !force {
        return Ok(Outcome::Skipped);
    }
    let output = |error: io::Error| BuildError::Output(OutputError::new(path, error));
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    fs::create_dir_all(folder).map_err(output)?;
    // A hidden subfolder, removed on drop: database lookups skip subfolders, and whatever an
    // interruption leaves there (the file, its journal) never passes for a database.
    let staging = tempfile::Builder::new()
        .prefix(".schema-db-")
        .tempdir_in(folder)
        .map_err(output)?;
    let staged = staging.path().join("database");
    create_tables(&staged, tables, sqlite).map_err(|error| match error {
        CreateError::Rejected(error) => BuildError::Schema(error),
        CreateError::Sqlite(error) => output(io::Error::other(error.message)),
    })?;
    fs::rename(&staged, path).map_err(output)?;
    Ok(Outcome::Written)
}

enum CreateError {
    /// SQLite rejects a statement: a problem of the input (a duplicate column, a reserved name).
    Rejected(SchemaError),
    Sqlite(ExecError),
}

/// Creates `file` with `tables`, through the SQLite engine's writer (one transaction).
fn create_tables(
    file: &Path,
    tables: &[CreateTable],
    sqlite: &dyn Backend,
) -> Result<(), CreateError> {
    let mut writer = sqlite.create(file).map_err(CreateError::Sqlite)?;
    for table in tables {
        writer.execute_batch(&table.sql).map_err(|error| {
            CreateError::Rejected(SchemaError::Rejected {
                table: table.table.clone(),
                message: error.message,
            })
        })?;
    }
    writer.finish().map_err(CreateError::Sqlite)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spider::PrimaryKey;

    /// An entry from (table, columns) with (name, type) columns, and its keys.
    fn entry(
        tables: &[(&str, &[(&str, &str)])],
        primary_keys: Vec<PrimaryKey>,
        foreign_keys: Vec<(usize, usize)>,
    ) -> TablesJsonEntry {
        let mut column_names_original = vec![(-1, "*".to_string())];
        let mut column_types = vec!["text".to_string()];
        for (table, (_, columns)) in tables.iter().enumerate() {
            for (name, spider_type) in columns.iter() {
                column_names_original.push((table as i64, name.to_string()));
                column_types.push(spider_type.to_string());
            }
        }
        TablesJsonEntry {
            db_id: "db".to_string(),
            table_names_original: tables.iter().map(|(name, _)| name.to_string()).collect(),
            column_names_original,
            column_types,
            primary_keys,
            foreign_keys,
        }
    }

    fn sql(entry: &TablesJsonEntry) -> Vec<String> {
        let statements = create_statements(entry).expect("valid entry");
        statements.into_iter().map(|s| s.sql).collect()
    }

    #[test]
    fn types_map_to_affinities_and_names_are_quoted() {
        let columns: &[(&str, &str)] = &[
            ("a", "text"),
            ("b", "number"),
            ("c", "time"),
            ("d", "boolean"),
            ("e", "others"),
            ("say \"hi\"", "text"),
        ];
        let entry = entry(&[("My Table", columns)], vec![], vec![]);
        assert_eq!(
            sql(&entry),
            ["CREATE TABLE \"My Table\" (\n  \"a\" TEXT,\n  \"b\" NUMERIC,\n  \"c\" NUMERIC,\n  \
              \"d\" NUMERIC,\n  \"e\" BLOB,\n  \"say \"\"hi\"\"\" TEXT\n)"]
        );
    }

    #[test]
    fn primary_key_follows_columns_and_several_make_one_composite_key() {
        let columns: &[(&str, &str)] = &[("x", "number"), ("y", "text"), ("z", "text")];
        let single = entry(&[("t", columns)], vec![PrimaryKey::Column(2)], vec![]);
        assert_eq!(
            sql(&single),
            [
                "CREATE TABLE \"t\" (\n  \"x\" NUMERIC,\n  \"y\" TEXT,\n  \"z\" TEXT,\n  \
              PRIMARY KEY (\"y\")\n)"
            ]
        );
        let expected = "CREATE TABLE \"t\" (\n  \"x\" NUMERIC,\n  \"y\" TEXT,\n  \"z\" TEXT,\n  \
                        PRIMARY KEY (\"z\", \"x\")\n)";
        let flat = entry(
            &[("t", columns)],
            vec![PrimaryKey::Column(3), PrimaryKey::Column(1)],
            vec![],
        );
        let nested = entry(
            &[("t", columns)],
            vec![PrimaryKey::Columns(vec![3, 1])],
            vec![],
        );
        assert_eq!(sql(&flat), [expected]);
        assert_eq!(sql(&nested), [expected]);
    }

    #[test]
    fn foreign_keys_keep_file_order_duplicates_and_non_key_targets() {
        let parent: &[(&str, &str)] = &[("id", "number"), ("code", "text")];
        let child: &[(&str, &str)] = &[("pid", "number"), ("pcode", "text")];
        let entry = entry(
            &[("parent", parent), ("child", child)],
            vec![PrimaryKey::Column(1)],
            vec![(4, 2), (3, 1), (3, 1)],
        );
        let statements = sql(&entry);
        assert_eq!(
            statements[0],
            "CREATE TABLE \"parent\" (\n  \"id\" NUMERIC,\n  \"code\" TEXT,\n  PRIMARY KEY (\"id\")\n)"
        );
        assert_eq!(
            statements[1],
            "CREATE TABLE \"child\" (\n  \"pid\" NUMERIC,\n  \"pcode\" TEXT,\n  \
             FOREIGN KEY (\"pcode\") REFERENCES \"parent\" (\"code\"),\n  \
             FOREIGN KEY (\"pid\") REFERENCES \"parent\" (\"id\"),\n  \
             FOREIGN KEY (\"pid\") REFERENCES \"parent\" (\"id\")\n)"
        );
    }

    #[test]
    fn sqlite_sequence_comes_from_the_autoincrement_key_of_the_table_before_it() {
        let city: &[(&str, &str)] = &[("ID", "number"), ("Name", "text")];
        let sequence: &[(&str, &str)] = &[("name", "text"), ("seq", "text")];
        let country: &[(&str, &str)] = &[("Code", "text")];
        let entry = entry(
            &[
                ("city", city),
                ("sqlite_sequence", sequence),
                ("country", country),
            ],
            vec![PrimaryKey::Column(1), PrimaryKey::Column(5)],
            vec![],
        );
        let statements = create_statements(&entry).expect("valid entry");
        let names: Vec<&str> = statements.iter().map(|s| s.table.as_str()).collect();
        assert_eq!(names, ["city", "country"]);
        assert_eq!(
            statements[0].sql,
            "CREATE TABLE \"city\" (\n  \"ID\" INTEGER PRIMARY KEY AUTOINCREMENT,\n  \"Name\" TEXT\n)"
        );

        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("db.sqlite");
        build_database(&entry, &path, false, &*sqlgate_engine_sqlite::files()).expect("built");
        let conn = rusqlite::Connection::open(&path).expect("open");
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect())
            .expect("tables");
        assert_eq!(tables, ["city", "sqlite_sequence", "country"]);
    }

    #[test]
    fn sqlite_sequence_without_a_number_key_before_it_is_an_error() {
        let first: &[(&str, &str)] = &[("code", "text")];
        let sequence: &[(&str, &str)] = &[("name", "text"), ("seq", "text")];
        let text_key = entry(
            &[("t", first), ("sqlite_sequence", sequence)],
            vec![PrimaryKey::Column(1)],
            vec![],
        );
        let leading = entry(&[("sqlite_sequence", sequence)], vec![], vec![]);
        for entry in [text_key, leading] {
            let error = create_statements(&entry)
                .expect_err("no AUTOINCREMENT table")
                .to_string();
            assert!(error.contains("single number primary key"), "{error}");
        }
    }

    #[test]
    fn bad_entries_name_the_problem() {
        let columns: &[(&str, &str)] = &[("a", "number")];
        let missing_fk = entry(&[("t", columns)], vec![], vec![(1, 7)]);
        let star_pk = entry(&[("t", columns)], vec![PrimaryKey::Column(0)], vec![]);
        let mut unknown_type = entry(&[("t", columns)], vec![], vec![]);
        unknown_type.column_types[1] = "integer".to_string();
        let mut short_types = entry(&[("t", columns)], vec![], vec![]);
        short_types.column_types.pop();
        let mut bad_table = entry(&[("t", columns)], vec![], vec![]);
        bad_table.column_names_original[1].0 = 4;
        let mut empty_table = entry(&[("t", columns)], vec![], vec![]);
        empty_table.table_names_original.push("empty".to_string());
        let cases = [
            (
                missing_fk,
                "foreign key 0 refers to column 7, which does not exist",
            ),
            (
                star_pk,
                "primary key 0 refers to column 0, the * pseudo-column",
            ),
            (
                unknown_type,
                "column 1 (\"a\") has unknown type \"integer\"",
            ),
            (short_types, "column_types has 1 entries for 2 columns"),
            (bad_table, "column 1 (\"a\") refers to missing table 4"),
            (empty_table, "table 1 (\"empty\") has no columns"),
        ];
        for (entry, expected) in cases {
            let error = create_statements(&entry).expect_err(expected).to_string();
            assert!(error.contains(expected), "{error}");
        }
    }

    #[test]
    fn schema_errors_read_as_before_they_were_typed() {
        let unknown = SchemaError::UnknownType {
            index: 1,
            name: "a".into(),
            spider_type: "integer".into(),
        };
        assert_eq!(
            unknown.to_string(),
            "column 1 (\"a\") has unknown type \"integer\" (expected text, number, time, \
             boolean or others)"
        );
        let owner = SchemaError::SequenceOwner {
            table: 2,
            name: "sqlite_sequence".into(),
        };
        assert_eq!(
            owner.to_string(),
            "table 2 (\"sqlite_sequence\") is created by SQLite with an AUTOINCREMENT table: the \
             table listed before it needs a single number primary key"
        );
    }

    #[test]
    fn sqlite_rejections_are_schema_errors() {
        let columns: &[(&str, &str)] = &[("a", "number"), ("A", "text")];
        let entry = entry(&[("t", columns)], vec![], vec![]);
        let dir = tempfile::tempdir().expect("temp dir");
        let error = build_database(
            &entry,
            &dir.path().join("db.sqlite"),
            false,
            &*sqlgate_engine_sqlite::files(),
        )
        .expect_err("duplicate column");
        match error {
            BuildError::Schema(error) => {
                let message = error.to_string();
                assert!(message.contains("duplicate column"), "{message}")
            }
            other => panic!("expected a schema error, got {other:?}"),
        }
        let left: Vec<_> = fs::read_dir(dir.path()).expect("list").collect();
        assert!(left.is_empty(), "nothing is left behind: {left:?}");
    }

    #[test]
    fn existing_files_are_skipped_unless_forced() {
        let columns: &[(&str, &str)] = &[("a", "number")];
        let first = entry(&[("first", columns)], vec![], vec![]);
        let second = entry(&[("second", columns)], vec![], vec![]);
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("nested").join("db.sqlite");
        let table_names = |path: &Path| -> Vec<String> {
            let conn = rusqlite::Connection::open(path).expect("open");
            conn.prepare("SELECT name FROM sqlite_master")
                .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect())
                .expect("names")
        };
        let build = |entry, force| {
            build_database(entry, &path, force, &*sqlgate_engine_sqlite::files()).expect("builds")
        };
        assert_eq!(build(&first, false), Outcome::Written);
        assert_eq!(build(&second, false), Outcome::Skipped);
        assert_eq!(table_names(&path), ["first"]);
        assert_eq!(build(&second, true), Outcome::Written);
        assert_eq!(table_names(&path), ["second"]);
        let left: Vec<_> = fs::read_dir(path.parent().expect("folder"))
            .expect("list")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(left, ["db.sqlite"], "no staging folder is left");
    }

    #[test]
    fn selection_and_db_ids_are_checked() {
        let dir = tempfile::tempdir().expect("temp dir");
        let json = dir.path().join("tables.json");
        let one = r#"{"db_id": "ID", "table_names_original": ["t"],
            "column_names_original": [[-1, "*"], [0, "a"]], "column_types": ["text", "number"],
            "primary_keys": [1], "foreign_keys": []}"#;
        let write = |ids: &[&str]| {
            let entries: Vec<String> = ids.iter().map(|id| one.replace("ID", id)).collect();
            fs::write(&json, format!("[{}]", entries.join(","))).expect("write json");
        };
        let out = dir.path().join("out");
        let input_error = |ids: &[String]| match build_databases(
            &json,
            &out,
            ids,
            false,
            &*sqlgate_engine_sqlite::files(),
        ) {
            Err(FileError::Input(error)) => error,
            other => panic!("expected an input error, got {other:?}"),
        };

        write(&["a", "b"]);
        let built = build_databases(
            &json,
            &out,
            &["b".to_string()],
            false,
            &*sqlgate_engine_sqlite::files(),
        )
        .expect("built");
        assert_eq!(built.len(), 1);
        assert_eq!(built[0].path, out.join("b").join("b.sqlite"));
        assert!(built[0].path.is_file() && !out.join("a").exists());
        let error = input_error(&["c".to_string()]);
        assert!(error.message.contains("no database \"c\""), "{error}");

        write(&["a", "a"]);
        let error = input_error(&[]);
        assert_eq!(error.record, Some(1));
        assert!(error.message.contains("also record 0"), "{error}");

        write(&["ok", "../up"]);
        let error = input_error(&[]);
        assert_eq!(error.record, Some(1));
        assert!(error.message.contains("not a plain file name"), "{error}");
        assert!(!out.join("ok").exists(), "bad input writes nothing");
    }
}
