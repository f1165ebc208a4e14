//! What the MySQL engine's tests share: the engine on the test server, the SQLite engine (to
//! copy the Defog files and to run their golds), and result comparison as multisets.
#![allow(dead_code)] // Each test binary uses its own part.

use std::path::Path;
use std::sync::Arc;

use sqlgate_engine::catalog::Schema;
use sqlgate_engine::{
    Backend, Connection, Driver, Limits, Open, ResultSet, Settings, Source, Value,
};
use sqlgate_engine_sqlite::{Sandbox, DRIVER as SQLITE};
use sqlgate_test_support::mariadb::{self, MariaDb};

/// The engine on `server` as `user`.
pub fn backend(server: &MariaDb, user: &str) -> Arc<dyn Backend> {
    let template = server.template(user);
    sqlgate_engine_mysql::DRIVER
        .connect(&Settings {
            dsn: Some(&template),
            password_env: None,
            ..Settings::default()
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
    let mut from = open_sqlite(sqlite);
    let schema =
        sqlgate_engine::copy_database(&SQLITE, &mut from, &mut *to, &Limits::default(), 500)
            .unwrap_or_else(|e| panic!("cannot copy {}: {}", sqlite.display(), e.message));
    to.finish().unwrap();
    server.add_reader(db);
    schema
}

/// A Defog file, opened read-only by the SQLite engine.
pub fn open_sqlite(path: &Path) -> Sandbox {
    Sandbox::open(path, Source::Gold).unwrap_or_else(|e| panic!("{}", e.message))
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
