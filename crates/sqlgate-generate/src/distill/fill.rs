//! One small random database with the original's schema: a few rows per table (sizes vary
//! from database to database), values from the pools, NULL where the column allows it, child
//! keys drawn from the rows their parent table already holds (a parent may have no children,
//! which is what a LEFT JOIN shows). Rows are inserted through the original's own DDL, so a row
//! breaking a key, NOT NULL, UNIQUE or CHECK is refused by SQLite and drawn again.

use std::path::Path;

use rand::{Rng, RngExt};
use rusqlite::types::Value;
use rusqlite::Connection;

use super::facts::Facts;
use super::values::{quoted, Pools};
use crate::mutate::labelled_stream;

/// The largest table size a candidate draws, by candidate: small databases find empty-group
/// and NULL differences, larger ones find ties and LIMIT differences.
const SIZES: [usize; 6] = [1, 2, 3, 4, 6, 8];
/// Tries per row before the table is left with fewer rows.
const TRIES: usize = 4;
/// How often a nullable column gets NULL.
const NULL_ODDS: f64 = 0.15;

/// Builds candidate `index` of database `db` in memory and writes it to `path` with
/// `VACUUM INTO`, whose page layout depends on the content only (same seed, same bytes).
pub fn candidate(
    facts: &Facts,
    pools: &Pools,
    seed: u64,
    db: &str,
    index: usize,
    path: &Path,
) -> Result<(), rusqlite::Error> {
    let conn = filled(facts, pools, seed, db, index)?;
    conn.execute("VACUUM INTO ?1", [path.to_string_lossy()])?;
    Ok(())
}

/// The candidate's rows in an in-memory database with foreign keys enforced (unless the
/// schema's keys are malformed, e.g. naming a column that is not a key of its table: SQLite
/// then refuses every insert into the child, so the keys are only followed, not enforced).
pub(super) fn filled(
    facts: &Facts,
    pools: &Pools,
    seed: u64,
    db: &str,
    index: usize,
) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open_in_memory()?;
    for sql in &facts.ddl {
        conn.execute_batch(sql)?;
    }
    conn.execute_batch("PRAGMA foreign_keys = ON")?;
    if conn.execute_batch("PRAGMA foreign_key_check").is_err() {
        conn.execute_batch("PRAGMA foreign_keys = OFF")?;
    }
    let label = index.to_string();
    let mut rng = labelled_stream(seed, db, &["fill", &label]);
    let largest = SIZES[rng.random_range(0..SIZES.len())];
    for &at in &facts.fill_order {
        let rows = rng.random_range(0..=largest);
        fill_table(&conn, facts, pools, at, rows, &mut rng)?;
    }
    Ok(conn)
}

fn fill_table(
    conn: &Connection,
    facts: &Facts,
    pools: &Pools,
    at: usize,
    rows: usize,
    rng: &mut impl Rng,
) -> Result<(), rusqlite::Error> {
    let table = &facts.schema.tables[at];
    let names: Vec<String> = table.columns.iter().map(|c| quoted(&c.name)).collect();
    let marks = vec!["?"; names.len()].join(", ");
    let insert = format!(
        "INSERT INTO {} ({}) VALUES ({marks})",
        quoted(&table.name),
        names.join(", ")
    );
    for _ in 0..rows {
        for _ in 0..TRIES {
            let mut row = Vec::with_capacity(table.columns.len());
            for column in &table.columns {
                row.push(draw(conn, facts, pools, &table.name, column, rng)?);
            }
            if conn
                .execute(&insert, rusqlite::params_from_iter(row))
                .is_ok()
            {
                break;
            }
        }
    }
    Ok(())
}

/// One value for `table.column`: a parent's key for a foreign key column, else from its pool.
fn draw(
    conn: &Connection,
    facts: &Facts,
    pools: &Pools,
    table: &str,
    column: &sqlgate_eval::exec::schema::Column,
    rng: &mut impl Rng,
) -> Result<Value, rusqlite::Error> {
    let nullable = !column.not_null && !column.primary_key;
    if nullable && rng.random_bool(NULL_ODDS) {
        return Ok(Value::Null);
    }
    let parent = facts.schema.foreign_keys.iter().find(|k| {
        k.from.table.eq_ignore_ascii_case(table) && k.from.column.eq_ignore_ascii_case(&column.name)
    });
    if let Some(key) = parent {
        // A key naming a column its table lacks is followed nowhere: the pool decides.
        if let Ok(keys) = parent_keys(conn, &key.to.table, &key.to.column) {
            return Ok(match keys.len() {
                0 => Value::Null,
                n => keys[rng.random_range(0..n)].clone(),
            });
        }
    }
    let pool = pools.of(table, &column.name);
    Ok(match pool.len() {
        0 => Value::Null,
        n => pool[rng.random_range(0..n)].clone(),
    })
}

fn parent_keys(
    conn: &Connection,
    table: &str,
    column: &str,
) -> Result<Vec<Value>, rusqlite::Error> {
    let c = quoted(column);
    conn.prepare_cached(&format!(
        "SELECT DISTINCT {c} FROM {} WHERE {c} IS NOT NULL ORDER BY {c}",
        quoted(table)
    ))?
    .query_map([], |row| row.get(0))?
    .collect()
}

#[cfg(test)]
mod tests {
    use super::super::values::Literals;
    use super::*;

    const SCHEMA: &str = "
        CREATE TABLE dept (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
        CREATE TABLE emp (id INTEGER PRIMARY KEY, dept INTEGER NOT NULL REFERENCES dept(id),
                          boss INTEGER REFERENCES emp(id), pay REAL CHECK (pay > 0),
                          code TEXT NOT NULL, UNIQUE (dept, code));";

    fn setup(rows: &str) -> (tempfile::TempDir, Facts, Pools) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hr.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        conn.execute_batch(rows).unwrap();
        let facts = Facts::read(&path).unwrap();
        let pools = Pools::build(&conn, &facts, &Literals::default(), 7, "hr").unwrap();
        (dir, facts, pools)
    }

    #[test]
    fn candidates_respect_every_constraint_with_foreign_keys_enforced() {
        let (dir, facts, pools) = setup(
            "INSERT INTO dept VALUES (1, 'ops'), (2, 'dev');
             INSERT INTO emp VALUES (1, 1, NULL, 10.0, 'a'), (2, 2, 1, 20.0, 'b');",
        );
        let mut emp_rows = 0;
        for index in 0..30 {
            let path = dir.path().join(format!("c{index}.sqlite"));
            candidate(&facts, &pools, 7, "hr", index, &path).unwrap();
            let conn = Connection::open(&path).unwrap();
            let broken: i64 = conn
                .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
                    r.get(0)
                })
                .unwrap();
            assert_eq!(broken, 0);
            let bad_pay: i64 = conn
                .query_row("SELECT count(*) FROM emp WHERE pay <= 0", [], |r| r.get(0))
                .unwrap();
            assert_eq!(bad_pay, 0, "CHECK (pay > 0) holds");
            emp_rows += conn
                .query_row("SELECT count(*) FROM emp", [], |r| r.get::<_, i64>(0))
                .unwrap();
            // Every row goes into a fresh copy of the real schema with keys enforced.
            let copy = Connection::open_in_memory().unwrap();
            copy.execute_batch(SCHEMA).unwrap();
            copy.execute_batch("PRAGMA foreign_keys = ON").unwrap();
            copy.execute("ATTACH ?1 AS c", [path.to_string_lossy()])
                .unwrap();
            copy.execute_batch(
                "INSERT INTO main.dept SELECT * FROM c.dept;
                 INSERT INTO main.emp SELECT * FROM c.emp ORDER BY boss IS NOT NULL, id;",
            )
            .unwrap();
        }
        assert!(emp_rows > 30, "candidates hold rows ({emp_rows})");
    }

    #[test]
    fn a_seed_gives_the_same_bytes_and_another_seed_other_rows() {
        let (dir, facts, pools) = setup("INSERT INTO dept VALUES (1, 'ops'), (2, 'dev');");
        let bytes = |seed: u64, name: &str| {
            let path = dir.path().join(format!("{name}-{seed}"));
            let _ = std::fs::remove_file(&path);
            candidate(&facts, &pools, seed, "hr", 3, &path).unwrap();
            std::fs::read(path).unwrap()
        };
        assert_eq!(bytes(7, "a.sqlite"), bytes(7, "b.sqlite"));
        let differ = (8..20).any(|seed| bytes(seed, "x.sqlite") != bytes(7, "a.sqlite"));
        assert!(differ);
    }
}
