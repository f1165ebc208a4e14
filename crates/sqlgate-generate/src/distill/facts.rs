//! What a database declares, as `distill` needs it to build look-alikes: the original's own
//! `CREATE` statements (so SQLite itself enforces every key, NOT NULL, UNIQUE and CHECK on the
//! generated rows), the tables parents first, and the single columns that must stay unique.

use std::collections::HashSet;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use sqlgate_eval::exec::schema::{ColRef, Schema};

/// A database's schema facts.
#[derive(Debug, Clone)]
pub struct Facts {
    /// Tables, columns, declared types, primary and foreign keys.
    pub schema: Schema,
    /// The original's `CREATE TABLE`, `CREATE INDEX` and `CREATE VIEW` statements, in that order.
    pub ddl: Vec<String>,
    /// Indexes of `schema.tables`, parents before the tables that reference them.
    pub fill_order: Vec<usize>,
    /// Single columns a primary key or unique index keeps distinct (lowercased `table.column`).
    pub unique: HashSet<String>,
    /// Columns of a multi-column primary key or unique index (lowercased `table.column`):
    /// rows sharing all their other values need a new value there.
    pub compound: HashSet<String>,
    /// Whether any table holds a row (schema-only copies hold none).
    pub holds_rows: bool,
}

impl Facts {
    /// Reads the facts of the SQLite file `db`, opened read-only.
    pub fn read(db: &Path) -> Result<Facts, rusqlite::Error> {
        let schema = sqlgate_engine_sqlite::read_schema(db)?;
        let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let ddl = conn
            .prepare(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' \
                 AND type IN ('table', 'index', 'view') \
                 ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, rowid",
            )?
            .query_map([], |row| row.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        let (unique, compound) = unique_columns(&conn, &schema)?;
        let holds_rows = sqlgate_engine_sqlite::holds_rows(db)?;
        Ok(Facts {
            fill_order: parents_first(&schema),
            schema,
            ddl,
            unique,
            compound,
            holds_rows,
        })
    }
}

/// Columns that a single-column primary key or unique index (declared or automatic) covers,
/// and those that a multi-column one covers.
type KeyColumns = (HashSet<String>, HashSet<String>);

fn unique_columns(conn: &Connection, schema: &Schema) -> Result<KeyColumns, rusqlite::Error> {
    let mut unique = HashSet::new();
    let mut compound = HashSet::new();
    for table in &schema.tables {
        let keys: Vec<_> = table.columns.iter().filter(|c| c.primary_key).collect();
        match keys.as_slice() {
            [key] => {
                unique.insert(ColRef::new(&table.name, &key.name).key());
            }
            keys => compound.extend(keys.iter().map(|k| ColRef::new(&table.name, &k.name).key())),
        }
        let indexes: Vec<String> = conn
            .prepare("SELECT name FROM pragma_index_list(?1) WHERE \"unique\" = 1")?
            .query_map([&table.name], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        for index in indexes {
            let columns: Vec<Option<String>> = conn
                .prepare("SELECT name FROM pragma_index_info(?1)")?
                .query_map([&index], |row| row.get(0))?
                .collect::<Result<_, _>>()?;
            if let [Some(column)] = columns.as_slice() {
                unique.insert(ColRef::new(&table.name, column).key());
            } else {
                compound.extend(
                    columns
                        .iter()
                        .flatten()
                        .map(|c| ColRef::new(&table.name, c).key()),
                );
            }
        }
    }
    Ok((unique, compound))
}

/// Table indexes with every referenced table before its referencing ones; a cycle (or a
/// self-reference) is cut at the table declared first.
fn parents_first(schema: &Schema) -> Vec<usize> {
    let index_of = |name: &str| {
        schema
            .tables
            .iter()
            .position(|t| t.name.eq_ignore_ascii_case(name))
    };
    let mut order = Vec::new();
    let mut placed = vec![false; schema.tables.len()];
    let mut visiting = vec![false; schema.tables.len()];
    fn visit(
        at: usize,
        schema: &Schema,
        index_of: &dyn Fn(&str) -> Option<usize>,
        placed: &mut [bool],
        visiting: &mut [bool],
        order: &mut Vec<usize>,
    ) {
        if placed[at] || visiting[at] {
            return;
        }
        visiting[at] = true;
        let name = &schema.tables[at].name;
        for key in &schema.foreign_keys {
            if key.from.table.eq_ignore_ascii_case(name) {
                if let Some(parent) = index_of(&key.to.table) {
                    visit(parent, schema, index_of, placed, visiting, order);
                }
            }
        }
        visiting[at] = false;
        placed[at] = true;
        order.push(at);
    }
    for at in 0..schema.tables.len() {
        visit(
            at,
            schema,
            &index_of,
            &mut placed,
            &mut visiting,
            &mut order,
        );
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_name_parents_first_unique_columns_and_keep_checks() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("shop.sqlite");
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER NOT NULL \
               REFERENCES customers(id), amount REAL CHECK (amount >= 0));
             CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT UNIQUE, name TEXT);
             CREATE UNIQUE INDEX by_name ON customers(name);",
        )
        .unwrap();
        drop(conn);
        let facts = Facts::read(&db).unwrap();
        let names: Vec<&str> = facts
            .fill_order
            .iter()
            .map(|&i| facts.schema.tables[i].name.as_str())
            .collect();
        assert_eq!(names, ["customers", "orders"]);
        for column in [
            "customers.id",
            "customers.email",
            "customers.name",
            "orders.id",
        ] {
            assert!(facts.unique.contains(column), "{column} is unique");
        }
        assert!(!facts.unique.contains("orders.customer"));
        assert!(facts.compound.is_empty());
        assert!(facts
            .ddl
            .iter()
            .any(|sql| sql.contains("CHECK (amount >= 0)")));
        assert!(facts.ddl.last().unwrap().contains("CREATE UNIQUE INDEX"));
        assert!(!facts.holds_rows);
    }
}
