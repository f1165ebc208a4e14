//! sqlgate's SQLite engine: `<db_dir>/<db>.sqlite` files opened read-only in a sandbox
//! ([`sandbox`]), their catalog read from `sqlite_master` and the PRAGMAs, plans from
//! `EXPLAIN QUERY PLAN`, and work counted in virtual-machine steps.

pub mod catalog;
mod heap;
pub mod sandbox;
mod scratch;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sqlgate_engine::catalog::text;
use sqlgate_engine::{
    Backend, CatalogRows, Connection, Driver, EngineError, ExecError, Execution, Feature, Limits,
    Open, Schema, Scratch, Settings, Storage, Writer,
};

pub use catalog::{holds_rows, read_schema};
pub use sandbox::Sandbox;

/// The SQLite engine.
pub struct Sqlite;

/// The SQLite engine, as the registry lists it.
pub static DRIVER: Sqlite = Sqlite;

/// SQLite files: nothing to configure.
struct Files;

/// The path of the file beside `path` whose name ends in `suffix` (SQLite's `-wal`).
pub fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The SQLite engine on files, for callers that need no settings.
pub fn files() -> Arc<dyn Backend> {
    Arc::new(Files)
}

impl Driver for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn storage(&self) -> Storage {
        Storage::Files {
            extension: "sqlite",
            sidecars: &["-wal"],
        }
    }

    fn connect(&self, settings: &Settings<'_>) -> Result<Arc<dyn Backend>, EngineError> {
        if settings.dsn.is_some()
            || settings.password_env.is_some()
            || settings.scratch_dsn.is_some()
        {
            return Err(EngineError::NotAServer(
                "a connection URL and its password variable need a server engine (`postgres`, \
                 `mysql`); SQLite databases are files in `db_dir`",
            ));
        }
        Ok(files())
    }

    fn supports(&self, _feature: Feature) -> bool {
        true
    }

    fn parser_dialect(&self) -> &'static str {
        "sqlite"
    }

    fn explain(&self, sql: &str) -> Option<String> {
        Some(format!("EXPLAIN QUERY PLAN {sql}"))
    }

    fn catalog(&self, rows: &mut CatalogRows<'_>) -> Result<Schema, ExecError> {
        catalog::sqlite_catalog(rows)
    }

    fn unique_columns_query(&self) -> Option<String> {
        // An index on an expression has no column name.
        Some(
            "SELECT m.name, max(ii.name) FROM sqlite_master AS m, pragma_index_list(m.name) AS il, \
             pragma_index_info(il.name) AS ii WHERE m.type = 'table' AND il.\"unique\" \
             GROUP BY m.name, il.name HAVING count(*) = 1 AND max(ii.name) IS NOT NULL"
                .to_string(),
        )
    }

    fn compound_unique_columns_query(&self) -> Option<String> {
        Some(
            "SELECT m.name, ii.name FROM sqlite_master AS m, pragma_index_list(m.name) AS il, \
             pragma_index_info(il.name) AS ii WHERE m.type = 'table' AND il.\"unique\" \
             AND ii.name IS NOT NULL \
             AND (SELECT count(*) FROM pragma_index_info(il.name)) > 1"
                .to_string(),
        )
    }

    fn column_comments(
        &self,
        rows: &mut CatalogRows<'_>,
    ) -> Result<Vec<(String, String, String)>, ExecError> {
        let mut comments = Vec::new();
        for row in rows(catalog::CREATE_TEXTS)? {
            let (table, create) = (text(&row[0]), text(&row[1]));
            for (column, comment) in catalog::column_comments(&create) {
                comments.push((table.clone(), column, comment));
            }
        }
        Ok(comments)
    }

    fn index_query(&self) -> Option<&'static str> {
        // Every index of every table, SQLite's own for PRIMARY KEY and UNIQUE included: both
        // states a case compares come from the same engine.
        Some(
            "SELECT m.name, i.\"unique\", (SELECT group_concat(name, ',') FROM \
             (SELECT c.name FROM pragma_index_info(i.name) c ORDER BY c.seqno)) \
             FROM sqlite_schema m, pragma_index_list(m.name) i WHERE m.type = 'table'",
        )
    }

    fn schema_text_query(&self) -> Option<&'static str> {
        Some(
            "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' \
             ORDER BY rowid",
        )
    }

    fn not_iso_date(&self, column: &str) -> String {
        format!(
            "typeof({column}) = 'text' AND {column} GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*'"
        )
    }
}

impl Backend for Files {
    fn driver(&self) -> &'static dyn Driver {
        &DRIVER
    }

    fn open(&self, db: &Path, how: Open) -> Result<Box<dyn Connection>, ExecError> {
        let sandbox = if how.reverse_unordered {
            Sandbox::open_reversing_unordered(db, how.source)?
        } else {
            Sandbox::open(db, how.source)?
        };
        Ok(Box::new(sandbox))
    }

    fn create(&self, db: &Path) -> Result<Box<dyn Writer>, ExecError> {
        Ok(Box::new(writer::SqliteWriter::create(db)?))
    }

    fn reopen(&self, db: &Path) -> Result<Box<dyn Writer>, ExecError> {
        Ok(Box::new(writer::SqliteWriter::reopen(db)?))
    }

    fn scratch(&self, db: &Path) -> Result<Box<dyn Scratch>, ExecError> {
        Ok(Box::new(scratch::SqliteScratch::open(db)?))
    }
}

impl Connection for Sandbox {
    fn execute(&mut self, sql: &str, limits: &Limits) -> Execution {
        Sandbox::execute(self, sql, limits)
    }

    fn cost(&mut self, sql: &str, limits: &Limits) -> Result<f64, ExecError> {
        let (execution, steps) = self.execute_counting_steps(sql, limits);
        execution.result?;
        Ok(steps as f64)
    }

    fn data_version(&self) -> Option<u32> {
        Sandbox::data_version(self)
    }
}
