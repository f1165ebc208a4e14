//! A test-only SQLite side over rusqlite (no sandbox: it reads the shared data's files), to
//! copy SQLite databases into DuckDB and compare results; and small helpers.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rusqlite::types::ValueRef;
use sqlgate_engine::catalog::{self, ColRef, Column, ForeignKey, Schema, Table};
use sqlgate_engine::{
    Backend, CatalogRows, Connection, Driver, ExecError, ExecErrorKind, Execution, Feature, Limits,
    Open, ResultSet, Settings, Source, Storage, Value,
};
use sqlgate_engine_duckdb::DRIVER;

/// SQLite's catalog, as the core's SQLite engine reads it.
pub struct SqliteDriver;

impl Driver for SqliteDriver {
    fn name(&self) -> &'static str {
        "sqlite (test)"
    }
    fn storage(&self) -> Storage {
        Storage::Files {
            extension: "sqlite",
            sidecars: &["-wal"],
        }
    }
    fn connect(&self, _: &Settings<'_>) -> Result<Arc<dyn Backend>, sqlgate_engine::EngineError> {
        Err(sqlgate_engine::EngineError::server("a test-only driver"))
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
        let user_tables = "m.type = 'table' AND m.name NOT LIKE 'sqlite_%'";
        let mut schema = Schema::default();
        for row in rows(&format!(
            "SELECT m.name, c.name, c.type, c.pk, c.\"notnull\" FROM sqlite_master AS m, \
             pragma_table_info(m.name) AS c WHERE {user_tables} ORDER BY m.name, c.cid"
        ))? {
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
        for row in rows(&format!(
            "SELECT m.name, f.\"table\", f.\"from\", f.\"to\" FROM sqlite_master AS m, \
             pragma_foreign_key_list(m.name) AS f WHERE {user_tables} ORDER BY m.name, f.id, f.seq"
        ))? {
            let target = catalog::text(&row[1]);
            let to = match &row[3] {
                Value::Null => schema.single_primary_key(&target).map(|c| c.name.clone()),
                to => Some(catalog::text(to)),
            };
            if let (Some(table), Some(to)) = (schema.table(&target), to) {
                let to = ColRef::new(&table.name, &to);
                schema.foreign_keys.push(ForeignKey {
                    from: ColRef::new(&catalog::text(&row[0]), &catalog::text(&row[2])),
                    to,
                });
            }
        }
        Ok(schema)
    }
    fn unique_columns_query(&self) -> Option<String> {
        None
    }
    fn not_iso_date(&self, _: &str) -> String {
        String::new()
    }
}

/// A SQLite file read without a sandbox (the tests' trusted data).
pub struct SqliteFile(pub rusqlite::Connection);

impl SqliteFile {
    pub fn open(path: &Path) -> SqliteFile {
        SqliteFile(
            rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap(),
        )
    }

    fn rows(&self, sql: &str) -> rusqlite::Result<ResultSet> {
        let mut stmt = self.0.prepare(sql)?;
        let columns: Vec<String> = stmt.column_names().map(String::from).collect();
        let width = columns.len();
        let mut result = ResultSet {
            columns,
            rows: Vec::new(),
            lossy_text: false,
        };
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let mut cells = Vec::with_capacity(width);
            for i in 0..width {
                cells.push(match row.get_ref(i)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(i) => Value::Int(i),
                    ValueRef::Real(f) => Value::Real(f),
                    ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(b) => Value::Blob(b.to_vec()),
                });
            }
            result.rows.push(cells);
        }
        Ok(result)
    }
}

impl Connection for SqliteFile {
    fn execute(&mut self, sql: &str, _: &Limits) -> Execution {
        let start = Instant::now();
        let result = self.rows(sql).map(Arc::new).map_err(|e| ExecError {
            kind: ExecErrorKind::Runtime,
            message: e.to_string(),
        });
        Execution {
            result,
            elapsed: start.elapsed(),
        }
    }
    fn cost(&mut self, _: &str, _: &Limits) -> Result<f64, ExecError> {
        Err(SqliteDriver.unsupported(Feature::Cost).into())
    }
}

/// The DuckDB backend.
pub fn backend() -> Arc<dyn Backend> {
    DRIVER.connect(&Settings::default()).unwrap()
}

/// A sandboxed connection to `db` for SQL from `source`.
pub fn open(db: &Path, source: Source) -> Box<dyn Connection> {
    backend().open(db, Open::for_source(source)).unwrap()
}

/// A DuckDB file `name` in `dir` made by `sql` through the engine's writer.
pub fn fixture(dir: &Path, name: &str, sql: &str) -> PathBuf {
    let path = dir.join(name);
    let mut writer = backend().create(&path).unwrap();
    writer.execute_batch(sql).unwrap();
    writer.finish().unwrap();
    path
}

/// Copies the SQLite file `from` into a new DuckDB file `to` through the interface.
pub fn copy_sqlite(from: &Path, to: &Path) -> Schema {
    let mut source = SqliteFile::open(from);
    let mut writer = backend().create(to).unwrap();
    let schema = sqlgate_engine::copy_database(
        &SqliteDriver,
        &mut source,
        writer.as_mut(),
        &Limits::default(),
        5000,
    )
    .unwrap();
    writer.finish().unwrap();
    schema
}

/// The rows of `sql`, or the error.
pub fn run(
    conn: &mut dyn Connection,
    sql: &str,
    limits: &Limits,
) -> Result<Arc<ResultSet>, ExecError> {
    conn.execute(sql, limits).result
}
