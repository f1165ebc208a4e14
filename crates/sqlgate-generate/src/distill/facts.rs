//! What a database declares, as `distill` needs it to build look-alikes, read through its
//! engine: the tables parents first, the single columns that must stay unique, and, where the
//! engine keeps them (SQLite), the original's own `CREATE` statements, so that the engine
//! itself enforces every NOT NULL, UNIQUE and CHECK on the generated rows.

use std::collections::HashSet;
use std::path::Path;

use sqlgate_eval::exec::schema::{self, ColRef, Schema};
use sqlgate_eval::exec::{Backend, Connection, ExecError, Limits, Open, Source, Value};

/// A database's schema facts.
#[derive(Debug, Clone)]
pub struct Facts {
    /// Tables, columns, declared types, primary and foreign keys.
    pub schema: Schema,
    /// The original's `CREATE TABLE`, `CREATE INDEX` and `CREATE VIEW` statements, in that
    /// order, when its engine keeps them as written ([`Driver::schema_text_query`]); `None`:
    /// the tables are created from the catalog ([`Writer::create_table`]).
    ///
    /// [`Driver::schema_text_query`]: sqlgate_eval::exec::Driver::schema_text_query
    /// [`Writer::create_table`]: sqlgate_eval::exec::Writer::create_table
    pub ddl: Option<Vec<String>>,
    /// Indexes of `schema.tables`, parents before the tables that reference them.
    pub fill_order: Vec<usize>,
    /// Single columns a primary key or unique index keeps distinct (lowercased `table.column`).
    pub unique: HashSet<String>,
    /// Columns of a multi-column primary key or unique index (lowercased `table.column`):
    /// rows sharing all their other values need a new value there.
    pub compound: HashSet<String>,
    /// Whether any table holds a row (schema-only copies hold none).
    pub holds_rows: bool,
    /// Primary keys declared but not enforced (`table.column`, as declared): on a database
    /// that holds no row, a one-column primary key that is also a foreign key, in a table with
    /// more columns, read as the first column of a composite key its source could not state.
    pub relaxed_keys: Vec<String>,
}

impl Facts {
    /// Reads the facts of `db` through `backend`'s read-only sandbox.
    pub fn read(backend: &dyn Backend, db: &Path) -> Result<Facts, ExecError> {
        let driver = backend.driver();
        let mut conn = backend.open(db, Open::for_source(Source::Gold))?;
        let schema = driver.catalog(&mut |sql: &str| rows(&mut *conn, sql))?;
        let ddl = match driver.schema_text_query() {
            Some(sql) => Some(creates(rows(&mut *conn, sql)?)),
            None => None,
        };
        let mut unique = HashSet::new();
        let mut compound = HashSet::new();
        for table in &schema.tables {
            let keys: Vec<_> = table.columns.iter().filter(|c| c.primary_key).collect();
            match keys.as_slice() {
                [key] => {
                    unique.insert(ColRef::new(&table.name, &key.name).key());
                }
                keys => {
                    compound.extend(keys.iter().map(|k| ColRef::new(&table.name, &k.name).key()))
                }
            }
        }
        let queries = [
            (driver.unique_columns_query(), &mut unique),
            (driver.compound_unique_columns_query(), &mut compound),
        ];
        for (sql, set) in queries {
            for row in sql.map_or(Ok(Vec::new()), |sql| rows(&mut *conn, &sql))? {
                if let [Value::Text(table), Value::Text(column)] = row.as_slice() {
                    set.insert(ColRef::new(table, column).key());
                }
            }
        }
        drop(conn);
        let mut facts = Facts {
            fill_order: parents_first(&schema),
            holds_rows: schema::holds_rows(backend, db)?,
            schema,
            ddl,
            unique,
            compound,
            relaxed_keys: Vec::new(),
        };
        if !facts.holds_rows {
            facts.relax_truncated_keys();
        }
        Ok(facts)
    }

    /// A schema-only database built from Spider's `tables.json` declares only the first
    /// column of a composite primary key (`countrylanguage(CountryCode)` for `(CountryCode,
    /// Language)`, `Friend(student_id)` for `(student_id, friend_id)`): enforced, no country
    /// could have two languages. So on a database that holds no row, a one-column primary key
    /// that is also a foreign key, in a table with more columns, is read as such a truncated
    /// key: kept NOT NULL, no longer unique. A database with rows keeps its keys as declared.
    /// A statement that does not parse keeps its key.
    fn relax_truncated_keys(&mut self) {
        for table in &mut self.schema.tables {
            let keys: Vec<usize> = (0..table.columns.len())
                .filter(|&c| table.columns[c].primary_key)
                .collect();
            let [key] = keys.as_slice() else { continue };
            let column = &table.columns[*key];
            let referencing = self.schema.foreign_keys.iter().any(|fk| {
                fk.from.table.eq_ignore_ascii_case(&table.name)
                    && fk.from.column.eq_ignore_ascii_case(&column.name)
            });
            if !referencing || table.columns.len() < 2 {
                continue;
            }
            if let Some(ddl) = &mut self.ddl {
                let Some(rewritten) = ddl
                    .iter()
                    .enumerate()
                    .find_map(|(i, sql)| Some((i, without_primary_key(sql, &table.name)?)))
                else {
                    continue;
                };
                ddl[rewritten.0] = rewritten.1;
            }
            let name = ColRef::new(&table.name, &column.name);
            self.unique.remove(&name.key());
            self.relaxed_keys
                .push(format!("{}.{}", table.name, column.name));
            let column = &mut table.columns[*key];
            column.primary_key = false;
            column.not_null = true;
        }
    }
}

/// `sql` without its primary key (a table constraint or a column's, with what only a key
/// allows: `AUTOINCREMENT`), its key column NOT NULL instead, when it creates table `table`;
/// `None` when it does not, does not parse, or is a `WITHOUT ROWID` table, which needs its key.
fn without_primary_key(sql: &str, table: &str) -> Option<String> {
    use sqlparser::ast::{ColumnOption, ColumnOptionDef, Statement, TableConstraint};
    let mut statements =
        sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::SQLiteDialect {}, sql).ok()?;
    let [Statement::CreateTable(create)] = statements.as_mut_slice() else {
        return None;
    };
    let named = create
        .name
        .0
        .last()?
        .as_ident()?
        .value
        .eq_ignore_ascii_case(table);
    if !named || create.without_rowid {
        return None;
    }
    let mut key_columns: Vec<String> = Vec::new();
    create.constraints.retain(|constraint| match constraint {
        TableConstraint::PrimaryKey(key) => {
            key_columns.extend(key.columns.iter().map(|c| c.column.expr.to_string()));
            false
        }
        _ => true,
    });
    for column in &mut create.columns {
        let keyed = column
            .options
            .iter()
            .any(|o| matches!(o.option, ColumnOption::PrimaryKey(_)));
        let quoted = column.name.to_string();
        if keyed || key_columns.contains(&quoted) {
            column.options.retain(|o| {
                !matches!(
                    o.option,
                    ColumnOption::PrimaryKey(_)
                        | ColumnOption::NotNull
                        | ColumnOption::DialectSpecific(_)
                )
            });
            column.options.push(ColumnOptionDef {
                name: None,
                option: ColumnOption::NotNull,
            });
        }
    }
    Some(statements[0].to_string())
}

/// The rows of a catalog query.
fn rows(conn: &mut dyn Connection, sql: &str) -> Result<Vec<Vec<Value>>, ExecError> {
    let result = conn.execute(sql, &Limits::default()).result?;
    Ok(result.rows.clone())
}

/// Of the engine's own statements (first column of `rows`), those creating tables, indexes
/// and views, in that order (a view may name a table created after it): never a trigger, which
/// would write rows of its own.
fn creates(rows: Vec<Vec<Value>>) -> Vec<String> {
    let mut found: Vec<(usize, String)> = rows
        .into_iter()
        .filter_map(|row| match row.into_iter().next() {
            Some(Value::Text(sql)) => Some(sql),
            _ => None,
        })
        .filter_map(|sql| {
            let words: Vec<String> = sql
                .split_whitespace()
                .take(3)
                .map(str::to_ascii_uppercase)
                .collect();
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let rank = match words.as_slice() {
                ["CREATE", "TABLE", ..] | ["CREATE", "VIRTUAL", "TABLE"] => 0,
                ["CREATE", "INDEX", ..] | ["CREATE", "UNIQUE", "INDEX"] => 1,
                ["CREATE", "VIEW", ..] => 2,
                _ => return None,
            };
            Some((rank, sql))
        })
        .collect();
    found.sort_by_key(|(rank, _)| *rank);
    found.into_iter().map(|(_, sql)| sql).collect()
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
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE VIEW big AS SELECT * FROM orders WHERE amount > 10;
             CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER NOT NULL \
               REFERENCES customers(id), amount REAL CHECK (amount >= 0));
             CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT UNIQUE, name TEXT);
             CREATE UNIQUE INDEX by_name ON customers(name);
             CREATE TABLE line (o INTEGER, n INTEGER, x TEXT, y TEXT, PRIMARY KEY (o, n), \
               UNIQUE (x, y));
             CREATE TRIGGER stamp AFTER INSERT ON line BEGIN DELETE FROM line; END;",
        )
        .unwrap();
        drop(conn);
        let facts = Facts::read(&*sqlgate_engine_sqlite::files(), &db).unwrap();
        let names: Vec<&str> = facts
            .fill_order
            .iter()
            .map(|&i| facts.schema.tables[i].name.as_str())
            .collect();
        assert_eq!(names, ["customers", "line", "orders"]);
        for column in [
            "customers.id",
            "customers.email",
            "customers.name",
            "orders.id",
        ] {
            assert!(facts.unique.contains(column), "{column} is unique");
        }
        assert!(!facts.unique.contains("orders.customer"));
        let compound: Vec<&str> = facts.compound.iter().map(String::as_str).collect();
        assert_eq!(compound.len(), 4, "{compound:?}");
        for column in ["line.o", "line.n", "line.x", "line.y"] {
            assert!(
                facts.compound.contains(column),
                "{column} is in a compound key"
            );
        }
        let ddl = facts.ddl.unwrap();
        assert!(ddl.iter().any(|sql| sql.contains("CHECK (amount >= 0)")));
        // Tables, then indexes, then views; no trigger.
        assert_eq!(ddl.len(), 5, "{ddl:?}");
        assert!(ddl[3].contains("CREATE UNIQUE INDEX"));
        assert!(ddl[4].starts_with("CREATE VIEW"));
        assert!(!facts.holds_rows);
    }

    /// Spider's `tables.json` states one column of a composite key: on a schema-only copy, a
    /// key that is also a foreign key is not enforced; on a database with rows it is.
    #[test]
    fn a_schema_only_key_that_is_a_foreign_key_is_read_as_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let schema = "CREATE TABLE country (code TEXT, name TEXT, PRIMARY KEY (code));
             CREATE TABLE lang (code TEXT, language TEXT, PRIMARY KEY (code),
               FOREIGN KEY (code) REFERENCES country (code));
             CREATE TABLE friend (student INTEGER PRIMARY KEY REFERENCES country(code),
               other INTEGER);
             CREATE TABLE extra (code TEXT PRIMARY KEY REFERENCES country(code));
             CREATE TABLE counter (n INTEGER PRIMARY KEY AUTOINCREMENT REFERENCES friend(student),
               note TEXT);
             CREATE TABLE keyed (code TEXT PRIMARY KEY REFERENCES country(code), x TEXT)
               WITHOUT ROWID;";
        let read = |name: &str, rows: &str| {
            let db = dir.path().join(name);
            let conn = rusqlite::Connection::open(&db).unwrap();
            conn.execute_batch(schema).unwrap();
            conn.execute_batch(rows).unwrap();
            drop(conn);
            Facts::read(&*sqlgate_engine_sqlite::files(), &db).unwrap()
        };
        let facts = read("empty.sqlite", "");
        // A WITHOUT ROWID table needs its key; AUTOINCREMENT goes with the key it needs.
        assert_eq!(
            facts.relaxed_keys,
            ["counter.n", "friend.student", "lang.code"]
        );
        assert!(!facts.unique.contains("lang.code") && facts.unique.contains("country.code"));
        assert!(
            facts.unique.contains("extra.code"),
            "a one-column table keeps its key"
        );
        // The rewritten statements build tables where a code repeats but is never NULL.
        let copy = rusqlite::Connection::open_in_memory().unwrap();
        copy.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        for sql in facts.ddl.as_ref().unwrap() {
            copy.execute_batch(sql).unwrap();
        }
        copy.execute_batch(
            "INSERT INTO lang VALUES ('NL', 'Dutch'), ('NL', 'Frisian');
             INSERT INTO friend VALUES (1, 2), (1, 3);",
        )
        .unwrap();
        assert!(copy
            .execute_batch("INSERT INTO lang VALUES (NULL, 'x')")
            .is_err());
        assert!(copy
            .execute_batch("INSERT INTO country VALUES ('NL', 'a'), ('NL', 'b')")
            .is_err());
        let real = read(
            "rows.sqlite",
            "INSERT INTO country VALUES ('NL', 'Netherlands');",
        );
        assert!(real.relaxed_keys.is_empty());
        assert!(real.unique.contains("lang.code"));
    }
}
