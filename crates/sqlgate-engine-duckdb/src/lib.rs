//! sqlgate's DuckDB engine: `engine = "duckdb"`, a suite's `db_dir` holding `<db>.duckdb`
//! files, opened read-only under the SQLite sandbox's guarantees (see its `sandbox` module and
//! docs/duckdb.md).
//!
//! DuckDB is compiled into the crate from its bundled C++ sources (the `duckdb` crate's
//! `bundled` feature): a long build, which is why the CLI makes this engine an optional feature.

mod sandbox;
mod scratch;
mod values;
mod writer;

use std::path::Path;
use std::sync::Arc;

use sqlgate_engine::catalog::{self, ColRef, Column, ForeignKey, Schema};
use sqlgate_engine::{
    Backend, CatalogRows, Connection, Driver, ExecError, Feature, Open, Settings, Storage, Value,
    Writer,
};

pub use writer::FOREIGN_KEYS_TABLE;

/// The DuckDB engine, registered once.
pub static DRIVER: DuckDb = DuckDb;

/// The DuckDB engine: its name, files and dialect.
#[derive(Debug, Clone, Copy)]
pub struct DuckDb;

impl Driver for DuckDb {
    fn name(&self) -> &'static str {
        "duckdb"
    }

    fn storage(&self) -> Storage {
        Storage::Files {
            extension: "duckdb",
            sidecars: &[".wal"],
        }
    }

    fn connect(
        &self,
        settings: &Settings<'_>,
    ) -> Result<Arc<dyn Backend>, sqlgate_engine::EngineError> {
        if settings.dsn.is_some()
            || settings.password_env.is_some()
            || settings.scratch_dsn.is_some()
        {
            return Err(sqlgate_engine::EngineError::NotAServer(
                "engine `duckdb` reads `<db>.duckdb` files in `db_dir`: it takes no `dsn`, \
                 `password_env` or `scratch_dsn`",
            ));
        }
        Ok(Arc::new(DuckDbBackend))
    }

    fn supports(&self, feature: Feature) -> bool {
        match feature {
            Feature::Explain | Feature::Cost | Feature::Create | Feature::Scratch => true,
            // DuckDB has no switch that returns unordered rows in another order, and no data
            // version: the core compares the file's and its `.wal`'s stamps.
            Feature::ReverseUnordered | Feature::Fingerprint | Feature::StepBound => false,
        }
    }

    fn parser_dialect(&self) -> &'static str {
        "duckdb"
    }

    fn explain(&self, sql: &str) -> Option<String> {
        Some(format!("EXPLAIN {sql}"))
    }

    fn catalog(&self, rows: &mut CatalogRows<'_>) -> Result<Schema, ExecError> {
        read_catalog(rows)
    }

    /// `COMMENT ON COLUMN`'s text, which `duckdb_columns()` reports.
    fn column_comments(
        &self,
        rows: &mut CatalogRows<'_>,
    ) -> Result<Vec<(String, String, String)>, ExecError> {
        let found = rows(&format!(
            "SELECT table_name, column_name, comment FROM duckdb_columns() \
             WHERE {MAIN} AND comment IS NOT NULL AND comment <> '' \
             ORDER BY table_oid, column_index"
        ))?;
        Ok(found
            .iter()
            .filter_map(|row| match row.as_slice() {
                [table, column, comment] => Some((
                    catalog::text(table),
                    catalog::text(column),
                    catalog::text(comment),
                )),
                _ => None,
            })
            .collect())
    }

    fn unique_columns_query(&self) -> Option<String> {
        Some(format!(
            "SELECT table_name, constraint_column_names[1] FROM duckdb_constraints() \
             WHERE {MAIN} AND constraint_type IN ('PRIMARY KEY', 'UNIQUE') \
             AND len(constraint_column_names) = 1"
        ))
    }

    fn compound_unique_columns_query(&self) -> Option<String> {
        Some(format!(
            "SELECT table_name, unnest(constraint_column_names) FROM duckdb_constraints() \
             WHERE {MAIN} AND constraint_type IN ('PRIMARY KEY', 'UNIQUE') \
             AND len(constraint_column_names) > 1"
        ))
    }

    fn index_query(&self) -> Option<&'static str> {
        // `expressions` lists the key columns in order, as `[a, b]`.
        Some(
            "SELECT table_name, CASE WHEN is_unique THEN 1 ELSE 0 END, \
             regexp_replace(expressions::VARCHAR, '[\\[\\]\" ]', '', 'g') FROM duckdb_indexes() \
             WHERE database_name = current_database() AND schema_name = 'main'",
        )
    }

    fn not_iso_date(&self, column: &str) -> String {
        format!(
            "NOT (typeof({column}) = 'VARCHAR' AND \
             regexp_matches({column}::VARCHAR, '^[0-9]{{4}}-[0-1][0-9]-[0-3][0-9]'))"
        )
    }
}

/// The catalog rows of the user's tables: those of the database's `main` schema.
const MAIN: &str = "database_name = current_database() AND schema_name = 'main'";

/// Tables (base tables of `main`, in creation order), their columns with the declared type as
/// DuckDB spells it, primary key and NOT NULL; foreign keys declared in the tables and those
/// that [`Backend::create`]'s writer recorded without enforcing them ([`FOREIGN_KEYS_TABLE`]).
fn read_catalog(rows: &mut CatalogRows<'_>) -> Result<Schema, ExecError> {
    let constraint = |kind: &str| {
        format!(
            "EXISTS (SELECT 1 FROM duckdb_constraints() k WHERE k.database_name = c.database_name \
             AND k.schema_name = c.schema_name AND k.table_name = c.table_name \
             AND k.constraint_type = '{kind}' \
             AND list_contains(k.constraint_column_names, c.column_name))"
        )
    };
    let columns = rows(&format!(
        "SELECT c.table_name, c.column_name, c.data_type, {}, {} \
         FROM duckdb_columns() c JOIN duckdb_tables() t \
         ON t.database_name = c.database_name AND t.schema_name = c.schema_name \
         AND t.table_name = c.table_name \
         WHERE c.database_name = current_database() AND c.schema_name = 'main' \
         AND NOT t.temporary AND NOT t.internal \
         ORDER BY t.table_oid, c.column_index",
        constraint("PRIMARY KEY"),
        constraint("NOT NULL"),
    ))?;
    let mut schema = Schema::default();
    for row in &columns {
        let [table, name, decl_type, primary_key, not_null] = row.as_slice() else {
            continue;
        };
        schema.push_column(
            catalog::text(table),
            Column {
                name: catalog::text(name),
                decl_type: catalog::text(decl_type),
                primary_key: catalog::flag(primary_key),
                not_null: catalog::flag(not_null),
            },
        );
    }
    // Two UNNESTs in one SELECT pair the referencing and referenced columns by position.
    let mut keys = format!(
        "SELECT table_name, unnest(constraint_column_names), referenced_table, \
         unnest(referenced_column_names) FROM duckdb_constraints() \
         WHERE {MAIN} AND constraint_type = 'FOREIGN KEY'"
    );
    let (recorded_schema, recorded_table) = writer::FOREIGN_KEYS_AT;
    let recorded = rows(&format!(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() \
         AND schema_name = '{recorded_schema}' AND table_name = '{recorded_table}'"
    ))?;
    if recorded.first().and_then(|row| row.first()) == Some(&Value::Int(1)) {
        keys.push_str(&format!(
            " UNION ALL SELECT from_table, from_column, to_table, to_column FROM {FOREIGN_KEYS_TABLE}"
        ));
    }
    for row in rows(&keys)? {
        if let [from_table, from_column, to_table, to_column] = row.as_slice() {
            schema.foreign_keys.push(ForeignKey {
                from: ColRef::new(&catalog::text(from_table), &catalog::text(from_column)),
                to: ColRef::new(&catalog::text(to_table), &catalog::text(to_column)),
            });
        }
    }
    Ok(schema)
}

/// DuckDB files of one suite.
struct DuckDbBackend;

impl Backend for DuckDbBackend {
    fn driver(&self) -> &'static dyn Driver {
        &DRIVER
    }

    fn open(&self, db: &Path, how: Open) -> Result<Box<dyn Connection>, ExecError> {
        if how.reverse_unordered {
            return Err(DRIVER.unsupported(Feature::ReverseUnordered).into());
        }
        Ok(Box::new(sandbox::Sandbox::open(db, how.source)?))
    }

    fn create(&self, db: &Path) -> Result<Box<dyn Writer>, ExecError> {
        Ok(Box::new(writer::DuckDbWriter::create(db)?))
    }

    fn reopen(&self, db: &Path) -> Result<Box<dyn Writer>, ExecError> {
        Ok(Box::new(writer::DuckDbWriter::reopen(db)?))
    }

    /// A copy of the file in a private folder, each case's statements in a transaction rolled
    /// back after it (`scratch.rs`).
    fn scratch(&self, db: &Path) -> Result<Box<dyn sqlgate_engine::Scratch>, ExecError> {
        Ok(Box::new(scratch::DuckDbScratch::open(db)?))
    }
}
