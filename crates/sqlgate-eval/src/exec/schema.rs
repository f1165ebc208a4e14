//! What a database declares ([`sqlgate_engine::catalog`]), read through a query runner: its
//! sandbox, its limits and its cache.

use std::path::Path;

pub use sqlgate_engine::catalog::*;

use super::{Backend, ExecError, Limits, Open, QueryRunner, Source};

/// Reads tables, columns and foreign keys of `db` through `runner`, from its engine's catalog
/// (SQLite's PRAGMAs, PostgreSQL's `pg_catalog`, ...).
pub fn query(runner: &dyn QueryRunner, db: &Path) -> Result<Schema, ExecError> {
    runner
        .driver()
        .catalog(&mut |sql: &str| runner.gold(db, sql).result.map(|set| set.rows.clone()))
}

/// The comments on the columns of `db`, `(table, column, comment)`, from its engine's catalog
/// through `runner`.
pub fn column_comments(
    runner: &dyn QueryRunner,
    db: &Path,
) -> Result<Vec<(String, String, String)>, ExecError> {
    runner
        .driver()
        .column_comments(&mut |sql: &str| runner.gold(db, sql).result.map(|set| set.rows.clone()))
}

/// The schema text of `db` a model's prompt shows: the engine's own `CREATE` statements as
/// written where it keeps them ([`sqlgate_engine::Driver::schema_text_query`]), else the
/// catalog written out as `CREATE TABLE` statements.
pub fn schema_text(runner: &dyn QueryRunner, db: &Path) -> Result<String, ExecError> {
    let Some(sql) = runner.driver().schema_text_query() else {
        return query(runner, db).map(|schema| schema.ddl());
    };
    let rows = runner.gold(db, sql).result?;
    Ok(rows
        .rows
        .iter()
        .filter_map(|row| match row.first() {
            Some(super::Value::Text(statement)) => Some(format!("{statement};")),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

/// Whether any table of `db` holds a row. On a database without rows (a schema-only copy)
/// every query returns nothing, so execution accuracy cannot tell a right query from a wrong
/// one.
pub fn holds_rows(backend: &dyn Backend, db: &Path) -> Result<bool, ExecError> {
    let mut connection = backend.open(db, Open::for_source(Source::Gold))?;
    let limits = Limits::default();
    let driver = backend.driver();
    let schema = driver.catalog(&mut |sql: &str| {
        connection
            .execute(sql, &limits)
            .result
            .map(|set| set.rows.clone())
    })?;
    for table in &schema.tables {
        let probe = format!("SELECT 1 FROM {} LIMIT 1", driver.quote(&table.name));
        if !connection.execute(&probe, &limits).result?.rows.is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}
