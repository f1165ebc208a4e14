//! sqlgate's PostgreSQL engine: databases on a server named by a `dsn` template
//! (docs/postgres.md), queried through [`Server`] with the SQLite sandbox's guarantees.

mod catalog;
mod server;
mod values;

use std::path::Path;
use std::sync::Arc;

use sqlgate_engine::{
    Backend, CatalogRows, Connection, Driver, ExecError, Execution, Feature, Limits, Open,
    Schema, Settings, Storage,
};

pub use server::Server;

/// The PostgreSQL engine.
pub struct Postgres;

/// The PostgreSQL engine, as the registry lists it.
pub static DRIVER: Postgres = Postgres;

impl Driver for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn storage(&self) -> Storage {
        Storage::Server
    }

    fn connect(&self, settings: &Settings<'_>) -> Result<Arc<dyn Backend>, String> {
        let dsn = settings.dsn.ok_or(
            "engine `postgres` needs a connection URL template such as \
             `postgres://sqlgate_reader@127.0.0.1:5432/{db}`",
        )?;
        Ok(Arc::new(Server::new(dsn, settings.password_env)?))
    }

    fn supports(&self, feature: Feature) -> bool {
        matches!(feature, Feature::Explain | Feature::Cost)
    }

    fn parser_dialect(&self) -> &'static str {
        "postgresql"
    }

    fn explain(&self, sql: &str) -> Option<String> {
        Some(format!("EXPLAIN {sql}"))
    }

    fn catalog(&self, rows: &mut CatalogRows<'_>) -> Result<Schema, ExecError> {
        catalog::postgres_catalog(rows)
    }

    fn unique_columns_query(&self) -> Option<String> {
        // indkey[0] is 0 for an index on an expression, which no attribute matches.
        Some(
            "SELECT c.relname::text, a.attname::text FROM pg_index i \
             JOIN pg_class c ON c.oid = i.indrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0] \
             WHERE i.indisunique AND i.indnkeyatts = 1 \
             AND n.nspname = ANY (current_schemas(false))"
                .to_string(),
        )
    }

    fn not_iso_date(&self, column: &str) -> String {
        format!(
            "pg_typeof({column}) IN ('text'::regtype, 'character varying'::regtype, \
             'character'::regtype) AND {column}::text ~ '^[0-9]{{4}}-[0-1][0-9]-[0-3][0-9]'"
        )
    }
}

impl Backend for Server {
    fn driver(&self) -> &'static dyn Driver {
        &DRIVER
    }

    /// A handle on the server's pooled connections to `db` (connecting costs more than most
    /// queries): the first query connects.
    fn open(&self, db: &Path, _how: Open) -> Result<Box<dyn Connection>, ExecError> {
        Ok(Box::new(OnServer {
            server: self.clone(),
            db: db.to_string_lossy().into_owned(),
        }))
    }

    fn check_reader(&self, db: &Path) -> Result<Vec<String>, String> {
        let db = db.to_string_lossy();
        let warnings = Server::check_reader(self, &db)?;
        Ok(warnings
            .into_iter()
            .map(|w| format!("{}: {w} (docs/postgres.md sets up a read-only role)", self.url(&db)))
            .collect())
    }
}

/// One database of a server.
struct OnServer {
    server: Server,
    db: String,
}

impl Connection for OnServer {
    fn execute(&mut self, sql: &str, limits: &Limits) -> Execution {
        self.server.execute(&self.db, sql, limits)
    }

    fn cost(&mut self, sql: &str, limits: &Limits) -> Result<f64, ExecError> {
        self.server.planned_cost(&self.db, sql, limits)
    }
}
