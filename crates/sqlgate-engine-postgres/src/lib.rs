//! sqlgate's PostgreSQL engine: databases on a server named by a `dsn` template
//! (docs/postgres.md), queried through [`Server`] with the SQLite sandbox's guarantees.

mod catalog;
mod scratch;
mod server;
mod values;
mod writer;

use std::path::Path;
use std::sync::Arc;

use sqlgate_engine::catalog::text;
use sqlgate_engine::{
    Backend, CatalogRows, Connection, Driver, EngineError, ExecError, Execution, Feature, Limits,
    Open, Schema, Settings, Storage,
};

pub use server::{Server, ServerError};

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

    fn connect(&self, settings: &Settings<'_>) -> Result<Arc<dyn Backend>, EngineError> {
        let dsn = settings.dsn.ok_or(EngineError::NoDsn(
            "engine `postgres` needs a connection URL template such as \
             `postgres://sqlgate_reader@127.0.0.1:5432/{db}`",
        ))?;
        let mut server = Server::new(dsn, settings.password_env).map_err(EngineError::server)?;
        if let Some(scratch) = settings.scratch_dsn {
            server = server.with_scratch(scratch).map_err(EngineError::server)?;
        }
        Ok(Arc::new(server))
    }

    fn supports(&self, feature: Feature) -> bool {
        matches!(
            feature,
            Feature::Explain | Feature::Cost | Feature::Create | Feature::Scratch
        )
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

    fn column_comments(
        &self,
        rows: &mut CatalogRows<'_>,
    ) -> Result<Vec<(String, String, String)>, ExecError> {
        let found = rows(
            "SELECT c.relname::text, a.attname::text, col_description(c.oid, a.attnum) \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped \
             WHERE c.relkind IN ('r', 'p') AND n.nspname = ANY (current_schemas(false)) \
             AND col_description(c.oid, a.attnum) IS NOT NULL \
             ORDER BY c.relname, a.attnum",
        )?;
        Ok(found
            .iter()
            .map(|row| (text(&row[0]), text(&row[1]), text(&row[2])))
            .collect())
    }

    fn index_query(&self) -> Option<&'static str> {
        // Each key column's definition (an expression's too), in order.
        Some(
            "SELECT c.relname::text, i.indisunique::int, \
             (SELECT string_agg(pg_get_indexdef(i.indexrelid, k, true), ',' ORDER BY k) \
              FROM generate_series(1, i.indnkeyatts) k) \
             FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = ANY (current_schemas(false))",
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
    fn open(&self, db: &Path, how: Open) -> Result<Box<dyn Connection>, ExecError> {
        if how.reverse_unordered {
            return Err(DRIVER.unsupported(Feature::ReverseUnordered).into());
        }
        Ok(Box::new(OnServer {
            server: self.clone(),
            db: db.to_string_lossy().into_owned(),
        }))
    }

    /// A new database on the server, created by the URL's role (which needs `CREATEDB`).
    fn create(&self, db: &Path) -> Result<Box<dyn sqlgate_engine::Writer>, ExecError> {
        Ok(Box::new(writer::PgWriter::create(
            self,
            &db.to_string_lossy(),
        )?))
    }

    fn remove(&self, db: &Path) -> Result<(), ExecError> {
        writer::drop_database(self, &db.to_string_lossy())
    }

    /// A session of the `scratch_dsn` role whose every case's transaction is rolled back
    /// (`scratch.rs`): PostgreSQL's DDL is transactional, so no copy is made.
    fn scratch(&self, db: &Path) -> Result<Box<dyn sqlgate_engine::Scratch>, ExecError> {
        Ok(Box::new(scratch::PgScratch::open(
            self,
            &db.to_string_lossy(),
        )?))
    }

    fn check_reader(&self, db: &Path) -> Result<Vec<String>, EngineError> {
        let db = db.to_string_lossy();
        let warnings = Server::check_reader(self, &db).map_err(EngineError::server)?;
        Ok(warnings
            .into_iter()
            .map(|w| {
                format!(
                    "{}: {w} (docs/postgres.md sets up a read-only role)",
                    self.url(&db)
                )
            })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(dsn: Option<&str>, password_env: Option<&str>) -> String {
        let settings = Settings {
            dsn,
            password_env,
            ..Settings::default()
        };
        DRIVER.connect(&settings).expect_err("refused").to_string()
    }

    #[test]
    fn a_server_needs_a_url_template_without_a_password() {
        let url = "postgres://reader@127.0.0.1:5432/{db}";
        let settings = Settings {
            dsn: Some(url),
            password_env: Some("PW"),
            ..Settings::default()
        };
        let backend = DRIVER.connect(&settings).unwrap();
        assert!(backend.on_server());
        assert_eq!(backend.driver().name(), "postgres");
        assert!(refused(None, None).contains("needs a connection URL"));
        let no_db = refused(Some("postgres://r@h/x"), None);
        assert!(no_db.contains("lacks `{db}`"), "{no_db}");
        let secret = refused(Some("postgres://r:secret@h/{db}"), None);
        assert!(
            secret.contains("holds a password") && !secret.contains("secret@"),
            "{secret}"
        );
        let garbage = refused(Some("postgres://r@h:notaport/{db}"), None);
        assert!(garbage.contains("does not parse"), "{garbage}");
    }

    #[test]
    fn a_missing_password_variable_fails_the_query_saying_so() {
        let settings = Settings {
            dsn: Some("postgres://reader@127.0.0.1:1/{db}"),
            password_env: Some("SQLGATE_TEST_UNSET_PASSWORD_VARIABLE"),
            ..Settings::default()
        };
        let backend = DRIVER.connect(&settings).unwrap();
        let mut connection = backend
            .open(
                Path::new("atis"),
                Open::for_source(sqlgate_engine::Source::Gold),
            )
            .unwrap();
        let error = connection
            .execute("SELECT 1", &Limits::default())
            .result
            .unwrap_err();
        assert_eq!(error.kind, sqlgate_engine::ExecErrorKind::Unavailable);
        assert!(
            error
                .message
                .contains("SQLGATE_TEST_UNSET_PASSWORD_VARIABLE"),
            "{}",
            error.message
        );
    }
}
