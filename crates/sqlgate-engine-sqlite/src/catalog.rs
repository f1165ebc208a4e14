//! SQLite's catalog: `sqlite_master` and the PRAGMAs.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use sqlgate_engine::catalog::{flag, text, ColRef, Column, ForeignKey};
use sqlgate_engine::{Schema, Value};

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

/// Reads tables, columns and foreign keys of a SQLite file (opened read-only).
pub fn read_schema(db: &Path) -> Result<Schema, rusqlite::Error> {
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

/// The schema from SQLite's catalog, each query's rows given by `rows`.
pub(crate) fn sqlite_catalog<E>(
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
        schema.push_column(
            text(&row[0]),
            Column {
                name: text(&row[1]),
                decl_type: text(&row[2]),
                primary_key: flag(&row[3]),
                not_null: flag(&row[4]),
            },
        );
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

/// Each table's `CREATE TABLE` text, as SQLite keeps it: the trailing `-- comment` of a
/// column's line is that column's comment.
pub(crate) const CREATE_TEXTS: &str = "SELECT name, sql FROM sqlite_master WHERE type = 'table' \
     AND sql IS NOT NULL AND name NOT LIKE 'sqlite_%'";

/// (column, comment) for each line of a `CREATE TABLE` text that defines a column and ends in
/// a `-- comment`; constraint lines and comments on lines of their own are not columns.
pub(crate) fn column_comments(create: &str) -> Vec<(String, String)> {
    const NOT_COLUMNS: &[&str] = &[
        "create",
        "primary",
        "foreign",
        "constraint",
        "unique",
        "check",
    ];
    let mut out = Vec::new();
    for line in create.lines() {
        let Some(start) = comment_start(line) else {
            continue;
        };
        let comment = line[start + 2..].trim();
        let definition = line[..start].trim().trim_start_matches([',', '(']).trim();
        let Some(name) = first_name(definition) else {
            continue;
        };
        let keyword = !definition.starts_with(['"', '`', '['])
            && NOT_COLUMNS.contains(&name.to_lowercase().as_str());
        if !keyword && !comment.is_empty() {
            out.push((name, comment.to_string()));
        }
    }
    out
}

/// Where `--` starts on a line, outside quotes.
fn comment_start(line: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let bytes = line.as_bytes();
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q || (q == '[' && c == ']') => quote = None,
            Some(_) => {}
            None if matches!(c, '\'' | '"' | '`' | '[') => quote = Some(c),
            None if c == '-' && bytes.get(i + 1) == Some(&b'-') => return Some(i),
            None => {}
        }
    }
    None
}

/// The first name of a definition, unquoted: `"aid" INTEGER` → `aid`.
fn first_name(definition: &str) -> Option<String> {
    let close = match definition.chars().next()? {
        '"' => '"',
        '`' => '`',
        '[' => ']',
        _ => {
            let end = definition
                .find(|c: char| c.is_whitespace() || c == ',' || c == '(')
                .unwrap_or(definition.len());
            return (end > 0).then(|| definition[..end].to_string());
        }
    };
    let rest = &definition[1..];
    let end = rest.find(close)?;
    Some(rest[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_end_column_lines() {
        let create = "CREATE TABLE t ( -- the table\n  \"aid\" INTEGER, -- author of the row\n  \
                      name TEXT DEFAULT '--x', -- Name of the author\n  -- a note\n  \
                      PRIMARY KEY (aid) -- the key\n)";
        assert_eq!(
            column_comments(create),
            vec![
                ("aid".to_string(), "author of the row".to_string()),
                ("name".to_string(), "Name of the author".to_string()),
            ]
        );
    }
}
