//! What the MySQL engine's tests share: the engine on the test server, a test-only SQLite side
//! (a `Driver` and `Connection` over rusqlite, to copy the Defog files and to run their golds),
//! and result comparison as multisets.
#![allow(dead_code)] // Each test binary uses its own part.

use std::path::Path;
use std::sync::Arc;

use sqlgate_engine::catalog::{self, ColRef, Column, ForeignKey, Schema, Table};
use sqlgate_engine::{
    Backend, CatalogRows, Connection, Driver, ExecError, ExecErrorKind, Execution, Feature, Limits,
    Open, ResultSet, Settings, Source, Storage, Value,
};
use sqlgate_test_support::mariadb::{self, MariaDb};

/// The engine on `server` as `user`.
pub fn backend(server: &MariaDb, user: &str) -> Arc<dyn Backend> {
    let template = server.template(user);
    sqlgate_engine_mysql::DRIVER
        .connect(&Settings {
            dsn: Some(&template),
            password_env: None,
        })
        .unwrap()
}

/// `db` opened for predictions.
pub fn open(backend: &Arc<dyn Backend>, db: &str) -> Box<dyn Connection> {
    backend
        .open(Path::new(db), Open::for_source(Source::Prediction))
        .unwrap_or_else(|e| panic!("cannot open {db}: {}", e.message))
}

/// A database `db` created by the writer and readable by the reader, from `sqlite` (a SQLite
/// file) copied with `copy_database`.
pub fn copy_sqlite(server: &MariaDb, sqlite: &Path, db: &str) -> Schema {
    let writer = backend(server, mariadb::WRITER);
    let mut to = writer.create(Path::new(db)).unwrap();
    let mut from = SqliteConnection::open(sqlite);
    let schema =
        sqlgate_engine::copy_database(&SQLITE, &mut from, &mut *to, &Limits::default(), 500)
            .unwrap_or_else(|e| panic!("cannot copy {}: {}", sqlite.display(), e.message));
    to.finish().unwrap();
    server.add_reader(db);
    schema
}

/// The SQLite side of the tests: enough of a driver to read a catalog.
pub struct Sqlite;

pub static SQLITE: Sqlite = Sqlite;

impl Driver for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn storage(&self) -> Storage {
        Storage::Files {
            extension: "sqlite",
            sidecars: &[],
        }
    }

    fn connect(&self, _: &Settings<'_>) -> Result<Arc<dyn Backend>, String> {
        Err("the tests' SQLite side opens files itself".into())
    }

    fn supports(&self, _: Feature) -> bool {
        false
    }

    fn parser_dialect(&self) -> &'static str {
        "sqlite"
    }

    fn explain(&self, _: &str) -> Option<String> {
        None
    }

    fn catalog(&self, rows: &mut CatalogRows<'_>) -> Result<Schema, ExecError> {
        let mut schema = Schema::default();
        for row in rows(
            "SELECT m.name, c.name, c.type, c.pk, c.\"notnull\" \
             FROM sqlite_master AS m, pragma_table_info(m.name) AS c \
             WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, c.cid",
        )? {
            let table = catalog::text(&row[0]);
            if schema.tables.last().is_none_or(|t| t.name != table) {
                schema.tables.push(Table {
                    name: table,
                    columns: Vec::new(),
                });
            }
            schema.tables.last_mut().unwrap().columns.push(Column {
                name: catalog::text(&row[1]),
                decl_type: catalog::text(&row[2]),
                primary_key: catalog::flag(&row[3]),
                not_null: catalog::flag(&row[4]),
            });
        }
        for row in rows(
            "SELECT m.name, f.\"from\", f.\"table\", f.\"to\" \
             FROM sqlite_master AS m, pragma_foreign_key_list(m.name) AS f \
             WHERE m.type = 'table' ORDER BY m.name, f.id, f.seq",
        )? {
            let target = catalog::text(&row[2]);
            let to = match &row[3] {
                Value::Null => schema
                    .single_primary_key(&target)
                    .map(|c| c.name.clone())
                    .unwrap(),
                to => catalog::text(to),
            };
            schema.foreign_keys.push(ForeignKey {
                from: ColRef::new(&catalog::text(&row[0]), &catalog::text(&row[1])),
                to: ColRef::new(&target, &to),
            });
        }
        Ok(schema)
    }

    fn unique_columns_query(&self) -> Option<String> {
        None
    }

    fn not_iso_date(&self, _: &str) -> String {
        unimplemented!("not used by the tests")
    }
}

/// A read-only SQLite file.
pub struct SqliteConnection(rusqlite::Connection);

impl SqliteConnection {
    pub fn open(path: &Path) -> SqliteConnection {
        let conn =
            rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        SqliteConnection(conn)
    }
}

impl Connection for SqliteConnection {
    fn execute(&mut self, sql: &str, _: &Limits) -> Execution {
        let start = std::time::Instant::now();
        let result = (|| {
            let mut statement = self.0.prepare(sql)?;
            let columns: Vec<String> = statement.column_names().map(String::from).collect();
            let width = columns.len();
            let mut rows = statement.raw_query();
            let mut set = ResultSet {
                columns,
                ..ResultSet::default()
            };
            while let Some(row) = rows.next()? {
                let mut cells = Vec::with_capacity(width);
                for i in 0..width {
                    use rusqlite::types::ValueRef;
                    cells.push(match row.get_ref(i)? {
                        ValueRef::Null => Value::Null,
                        ValueRef::Integer(n) => Value::Int(n),
                        ValueRef::Real(f) => Value::Real(f),
                        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
                    });
                }
                set.rows.push(cells);
            }
            Ok(set)
        })()
        .map(Arc::new)
        .map_err(|e: rusqlite::Error| ExecError {
            kind: ExecErrorKind::Runtime,
            message: e.to_string(),
        });
        Execution {
            result,
            elapsed: start.elapsed(),
        }
    }

    fn cost(&mut self, _: &str, _: &Limits) -> Result<f64, ExecError> {
        unimplemented!("not used by the tests")
    }
}

/// Whether two cells are the same: numbers within 1e-9 (an integer and a real alike), others
/// exactly.
fn same_cell(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}

/// Whether two results hold the same rows as multisets, whatever their order and column names.
pub fn same_rows(a: &ResultSet, b: &ResultSet) -> bool {
    if a.rows.len() != b.rows.len() || a.columns.len() != b.columns.len() {
        return false;
    }
    let mut unmatched: Vec<&Vec<Value>> = b.rows.iter().collect();
    a.rows.iter().all(|row| {
        let found = unmatched
            .iter()
            .position(|other| row.iter().zip(other.iter()).all(|(x, y)| same_cell(x, y)));
        found.map(|at| unmatched.swap_remove(at)).is_some()
    })
}
