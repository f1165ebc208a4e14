//! What a database declares: tables, columns (declared type, primary key, NOT NULL) and
//! foreign keys, read once from `sqlite_master` and the PRAGMAs (PostgreSQL: from
//! `pg_catalog`, see [`super::postgres::Server::schema`]). Used by the generators (JQE's
//! schema graph) and the structural metrics (ETM's schema facts).

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::{EngineKind, ExecError, QueryRunner, Value};

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
    pub fn parse(text: &str, schema: &Schema) -> Result<ForeignKey, String> {
        let side = |part: &str| -> Result<ColRef, String> {
            let (table, column) = part
                .trim()
                .split_once('.')
                .ok_or_else(|| format!("`{}` is not `table.column`", part.trim()))?;
            let table = schema
                .tables
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(table.trim()))
                .ok_or_else(|| format!("no table `{}`", table.trim()))?;
            let column = table
                .columns
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(column.trim()))
                .ok_or_else(|| {
                    format!("table `{}` has no column `{}`", table.name, column.trim())
                })?;
            Ok(ColRef::new(&table.name, &column.name))
        };
        let (from, to) = text
            .split_once('=')
            .ok_or_else(|| format!("`{text}` is not `table.column = table.column`"))?;
        Ok(ForeignKey {
            from: side(from)?,
            to: side(to)?,
        })
    }
}

/// What a database declares: its tables and foreign keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schema {
    /// Tables in the order the database lists them.
    pub tables: Vec<Table>,
    /// Foreign keys of all tables.
    pub foreign_keys: Vec<ForeignKey>,
}

/// Whether any table of the SQLite file `db` holds a row. On a database without rows (a
/// schema-only copy) every query returns nothing, so execution accuracy cannot tell a
/// right query from a wrong one.
pub fn holds_rows(db: &Path) -> Result<bool, rusqlite::Error> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let names: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        )?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    for name in names {
        let quoted = name.replace('"', "\"\"");
        let mut rows = conn.prepare(&format!("SELECT 1 FROM \"{quoted}\" LIMIT 1"))?;
        if rows.exists([])? {
            return Ok(true);
        }
    }
    Ok(false)
}

impl Schema {
    /// Reads tables, columns and foreign keys of a SQLite file (opened read-only).
    pub fn read(db: &Path) -> Result<Schema, rusqlite::Error> {
        let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        sqlite_catalog(|sql| {
            let mut stmt = conn.prepare(sql)?;
            let width = stmt.column_count();
            let rows = stmt.query_map([], |row| {
                (0..width)
                    .map(|i| Ok(catalog_value(row.get_ref(i)?)))
                    .collect::<Result<Vec<Value>, rusqlite::Error>>()
            })?;
            rows.collect()
        })
    }

    /// Reads tables, columns and foreign keys through `runner`, from its engine's catalog:
    /// SQLite's PRAGMAs, or PostgreSQL's `pg_catalog` for the schemas on the search path.
    pub fn query(runner: &dyn QueryRunner, db: &Path) -> Result<Schema, ExecError> {
        let rows = |sql: &str| runner.gold(db, sql).result.map(|set| set.rows.clone());
        match runner.engine() {
            EngineKind::Sqlite => sqlite_catalog(rows),
            EngineKind::Postgres => postgres_catalog(rows),
        }
    }

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

/// A double-quoted identifier of `name`, for SQLite and PostgreSQL.
pub(crate) fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A catalog cell read directly from SQLite (names, declared types, flags).
fn catalog_value(value: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(n) => Value::Int(n),
        ValueRef::Real(x) => Value::Real(x),
        ValueRef::Text(bytes) => Value::Text(String::from_utf8_lossy(bytes).into_owned()),
        ValueRef::Blob(bytes) => Value::Blob(bytes.to_vec()),
    }
}

/// The text of a catalog cell: a name or a declared type (NULL reads as empty).
fn text(value: &Value) -> String {
    match value {
        Value::Text(text) => text.clone(),
        Value::Int(n) => n.to_string(),
        _ => String::new(),
    }
}

/// A catalog flag: SQLite's integers and PostgreSQL's booleans both read as integers.
fn flag(value: &Value) -> bool {
    matches!(value, Value::Int(n) if *n > 0)
}

/// The schema from SQLite's catalog, each query's rows given by `rows`.
fn sqlite_catalog<E>(
    mut rows: impl FnMut(&str) -> Result<Vec<Vec<Value>>, E>,
) -> Result<Schema, E> {
    const TABLES: &str = "sqlite_master AS m";
    const USER_TABLES: &str = "m.type = 'table' AND m.name NOT LIKE 'sqlite_%'";
    let columns = rows(&format!(
        "SELECT m.name, c.name, c.type, c.pk, c.\"notnull\" \
         FROM {TABLES}, pragma_table_info(m.name) AS c WHERE {USER_TABLES} \
         ORDER BY m.name, c.cid"
    ))?;
    let mut schema = Schema::default();
    for row in columns {
        let table = text(&row[0]);
        if schema.tables.last().is_none_or(|t| t.name != table) {
            schema.tables.push(Table {
                name: table,
                columns: Vec::new(),
            });
        }
        let last = schema.tables.last_mut().expect("pushed above");
        last.columns.push(Column {
            name: text(&row[1]),
            decl_type: text(&row[2]),
            primary_key: flag(&row[3]),
            not_null: flag(&row[4]),
        });
    }
    let keys = rows(&format!(
        "SELECT m.name, f.\"table\", f.\"from\", f.\"to\" \
         FROM {TABLES}, pragma_foreign_key_list(m.name) AS f WHERE {USER_TABLES} \
         ORDER BY m.name, f.id, f.seq"
    ))?;
    for row in keys {
        let (name, target, from) = (text(&row[0]), text(&row[1]), text(&row[2]));
        // A foreign key without a target column references the target's primary key.
        let to = match &row[3] {
            Value::Null => schema.single_primary_key(&target).map(|c| c.name.clone()),
            to => Some(text(to)),
        };
        if let (Some(table), Some(to)) = (schema.table(&target), to) {
            let to = ColRef::new(&table.name, &to);
            schema.foreign_keys.push(ForeignKey {
                from: ColRef::new(&name, &from),
                to,
            });
        }
    }
    Ok(schema)
}

/// The schema from PostgreSQL's catalog (tables of the schemas on the search path), each
/// query's rows given by `rows`.
pub(super) fn postgres_catalog<E>(
    mut rows: impl FnMut(&str) -> Result<Vec<Vec<Value>>, E>,
) -> Result<Schema, E> {
    let columns = rows(
        "SELECT c.relname::text, a.attname::text, format_type(a.atttypid, a.atttypmod), \
                a.attnotnull, \
                EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = c.oid \
                        AND k.contype = 'p' AND a.attnum = ANY (k.conkey)) \
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped \
         WHERE c.relkind IN ('r', 'p') AND n.nspname = ANY (current_schemas(false)) \
         ORDER BY c.relname, a.attnum",
    )?;
    let mut schema = Schema::default();
    for row in columns {
        let table = text(&row[0]);
        if schema.tables.last().is_none_or(|t| t.name != table) {
            schema.tables.push(Table {
                name: table,
                columns: Vec::new(),
            });
        }
        let last = schema.tables.last_mut().expect("pushed above");
        last.columns.push(Column {
            name: text(&row[1]),
            decl_type: text(&row[2]),
            primary_key: flag(&row[4]),
            not_null: flag(&row[3]),
        });
    }
    let keys = rows(
        "SELECT src.relname::text, sa.attname::text, dst.relname::text, da.attname::text \
         FROM pg_constraint k \
         JOIN pg_class src ON src.oid = k.conrelid JOIN pg_class dst ON dst.oid = k.confrelid \
         JOIN pg_namespace n ON n.oid = src.relnamespace \
         CROSS JOIN LATERAL unnest(k.conkey, k.confkey) AS pair(from_col, to_col) \
         JOIN pg_attribute sa ON sa.attrelid = src.oid AND sa.attnum = pair.from_col \
         JOIN pg_attribute da ON da.attrelid = dst.oid AND da.attnum = pair.to_col \
         WHERE k.contype = 'f' AND n.nspname = ANY (current_schemas(false)) \
         ORDER BY src.relname, k.conname, sa.attnum",
    )?;
    for row in keys {
        schema.foreign_keys.push(ForeignKey {
            from: ColRef::new(&text(&row[0]), &text(&row[1])),
            to: ColRef::new(&text(&row[2]), &text(&row[3])),
        });
    }
    Ok(schema)
}
