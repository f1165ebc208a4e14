//! One small random database with the original's schema: a few rows per table (sizes vary
//! from database to database), values from the pools, NULL where the column allows it, child
//! keys drawn from the rows their parent table already holds (a parent may have no children,
//! which is what a LEFT JOIN shows). Rows are inserted through the original's own DDL, so a row
//! breaking a key, NOT NULL, UNIQUE or CHECK is refused by SQLite and drawn again.

use std::path::Path;

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use rand::{Rng, RngExt};
use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection};
use sqlgate_eval::exec::schema::{ColRef, Column};

use super::facts::Facts;
use super::hints::{Hints, Witness, MAX_ROWS};
use super::values::{quoted, Kind, Pools};
use crate::mutate::labelled_stream;

/// The largest table size a candidate draws, by candidate: small databases find empty-group
/// and NULL differences, larger ones find ties and LIMIT differences.
const SIZES: [usize; 6] = [1, 2, 3, 4, 6, 8];
/// Tries per row before the table is left with fewer rows.
const TRIES: usize = 8;
/// Attempts per row that keep to a candidate's narrowed pools and concentrated keys.
const NARROW_TRIES: usize = 2;
/// How often a nullable column gets NULL.
const NULL_ODDS: f64 = 0.15;

/// Builds candidate `index` of database `db` in memory and writes it to `path` with
/// `VACUUM INTO`, whose page layout depends on the content only (same seed, same bytes).
pub fn candidate(
    facts: &Facts,
    pools: &Pools,
    hints: &Hints,
    seed: u64,
    db: &str,
    index: usize,
    path: &Path,
) -> Result<(), rusqlite::Error> {
    let conn = filled(facts, pools, hints, seed, db, index)?;
    conn.execute("VACUUM INTO ?1", [path.to_string_lossy()])?;
    Ok(())
}

/// What a candidate is built for, by its index: one in four is plain random, one draws every
/// non-key column from one or two values (duplicates), one holds the witness rows of a few
/// golds, one has tables of a size a gold's count or LIMIT is compared with.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Plain,
    FewValues,
    /// Indexes of the golds whose witnesses the candidate holds.
    Witnesses(Vec<usize>),
    /// Every table gets `rows` rows; `concentrated` rows share one parent and one value per
    /// column (so the whole table is one group of `rows`).
    Sized {
        rows: usize,
        concentrated: bool,
    },
}

impl Shape {
    fn of(hints: &Hints, index: usize) -> Shape {
        let round = index / 4;
        let witnessed: Vec<usize> = (0..hints.witnesses.len())
            .filter(|&g| !hints.witnesses[g].is_empty())
            .collect();
        match index % 4 {
            1 => Shape::FewValues,
            2 if !witnessed.is_empty() => {
                // About four golds a candidate, each gold in several candidates.
                let groups = witnessed.len().div_ceil(4);
                Shape::Witnesses(
                    witnessed
                        .into_iter()
                        .enumerate()
                        .filter(|(k, _)| k % groups == round % groups)
                        .map(|(_, g)| g)
                        .collect(),
                )
            }
            3 if !hints.thresholds.is_empty() => {
                let n = hints.thresholds[round % hints.thresholds.len()];
                let variant = round / hints.thresholds.len() % 4;
                let rows = match variant {
                    0 => n.saturating_sub(1).max(1),
                    1 => n,
                    2 => n + 1,
                    _ => 2 * n + 2,
                };
                Shape::Sized {
                    rows: rows.min(MAX_ROWS),
                    concentrated: variant < 3,
                }
            }
            _ => Shape::Plain,
        }
    }
}

/// The candidate's rows in an in-memory database with foreign keys enforced (unless the
/// schema's keys are malformed, e.g. naming a column that is not a key of its table: SQLite
/// then refuses every insert into the child, so the keys are only followed, not enforced).
pub(super) fn filled(
    facts: &Facts,
    pools: &Pools,
    hints: &Hints,
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
    let shape = Shape::of(hints, index);
    let narrowed = match shape {
        Shape::FewValues => Some(pools.narrowed(&facts.unique, 2, &mut rng)),
        Shape::Sized {
            concentrated: true, ..
        } => Some(pools.narrowed(&facts.unique, 1, &mut rng)),
        _ => None,
    };
    let filler = Filler {
        conn: &conn,
        facts,
        pools,
        narrowed: narrowed.as_ref(),
        concentrated: matches!(
            shape,
            Shape::Sized {
                concentrated: true,
                ..
            }
        ),
    };
    let witnesses: Vec<&Witness> = match &shape {
        Shape::Witnesses(golds) => golds.iter().flat_map(|&g| &hints.witnesses[g]).collect(),
        _ => Vec::new(),
    };
    let mut anchors: HashMap<(usize, usize), Vec<Value>> = HashMap::new();
    for &at in &facts.fill_order {
        for (w, witness) in witnesses.iter().enumerate() {
            for (i, instance) in witness.instances.iter().enumerate() {
                if instance.table == at {
                    filler.witness_rows(witness, w, i, &mut anchors, &mut rng)?;
                }
            }
        }
        let rows = match shape {
            Shape::Sized { rows, .. } => rows,
            _ => rng.random_range(0..=largest),
        };
        filler.rows(at, rows, &mut rng)?;
    }
    Ok(conn)
}

/// Inserts rows into one candidate.
struct Filler<'a> {
    conn: &'a Connection,
    facts: &'a Facts,
    pools: &'a Pools,
    /// Narrower pools the first [`NARROW_TRIES`] attempts at a row draw from (a value a CHECK
    /// refuses then only costs attempts).
    narrowed: Option<&'a Pools>,
    /// Foreign keys take the first parent key, not a random one, in all but the last attempt.
    concentrated: bool,
}

impl Filler<'_> {
    fn insert_sql(&self, at: usize) -> String {
        let table = &self.facts.schema.tables[at];
        let names: Vec<String> = table.columns.iter().map(|c| quoted(&c.name)).collect();
        let marks = vec!["?"; names.len()].join(", ");
        format!(
            "INSERT INTO {} ({}) VALUES ({marks})",
            quoted(&table.name),
            names.join(", ")
        )
    }

    /// `rows` random rows into table `at`.
    fn rows(&self, at: usize, rows: usize, rng: &mut impl Rng) -> Result<(), rusqlite::Error> {
        let insert = self.insert_sql(at);
        for _ in 0..rows {
            for attempt in 0..TRIES {
                let row = self.draw_row(at, attempt, rng)?;
                if self.conn.execute(&insert, params_from_iter(row)).is_ok() {
                    break;
                }
            }
        }
        Ok(())
    }

    /// A random row of table `at`; after the first attempt, key columns (but foreign keys)
    /// take fresh values (pools are smaller than the larger tables).
    fn draw_row(
        &self,
        at: usize,
        attempt: usize,
        rng: &mut impl Rng,
    ) -> Result<Vec<Value>, rusqlite::Error> {
        let table = &self.facts.schema.tables[at];
        let mut row = Vec::with_capacity(table.columns.len());
        for column in &table.columns {
            let key = ColRef::new(&table.name, &column.name).key();
            let keyed = self.facts.unique.contains(&key) || self.facts.compound.contains(&key);
            let referencing = self
                .facts
                .schema
                .foreign_keys
                .iter()
                .any(|k| k.from.key() == key);
            let value = if attempt > 0 && keyed && !referencing {
                fresh(Kind::of(&column.decl_type), rng)
            } else {
                self.draw(&table.name, column, attempt, rng)?
            };
            row.push(value);
        }
        Ok(row)
    }

    /// The witness rows of `witness`'s instance `i`: two rows holding its fixed values
    /// (other columns vary, so aggregates over them differ), or one when it only joins; a
    /// joined column copies the value of the first row of the instance it is joined with.
    fn witness_rows(
        &self,
        witness: &Witness,
        w: usize,
        i: usize,
        anchors: &mut HashMap<(usize, usize), Vec<Value>>,
        rng: &mut impl Rng,
    ) -> Result<(), rusqlite::Error> {
        let instance = &witness.instances[i];
        let insert = self.insert_sql(instance.table);
        let count = if instance.fixed.is_empty() { 1 } else { 2 };
        for _ in 0..count {
            for attempt in 0..TRIES {
                let mut row = self.draw_row(instance.table, attempt, rng)?;
                for (column, value) in &instance.fixed {
                    row[*column] = value.clone();
                }
                // The last attempt gives up the links (a key the joined row cannot share).
                if attempt + 1 < TRIES {
                    for &(a, b) in &witness.links {
                        for ((here, column), (there, theirs)) in [(a, b), (b, a)] {
                            if here == i {
                                if let Some(anchor) = anchors.get(&(w, there)) {
                                    row[column] = anchor[theirs].clone();
                                }
                            }
                        }
                    }
                }
                self.ensure_parents(instance.table, &row, rng)?;
                if self.conn.execute(&insert, params_from_iter(&row)).is_ok() {
                    // As stored: a column's affinity turns -1.0 into -1, and a joined
                    // column of another type must get the stored value.
                    if let Entry::Vacant(slot) = anchors.entry((w, i)) {
                        slot.insert(self.stored(instance.table).unwrap_or(row));
                    }
                    break;
                }
            }
        }
        Ok(())
    }

    /// The row of table `at` inserted last, as SQLite stored it.
    fn stored(&self, at: usize) -> Option<Vec<Value>> {
        let table = &self.facts.schema.tables[at];
        let names: Vec<String> = table.columns.iter().map(|c| quoted(&c.name)).collect();
        let sql = format!(
            "SELECT {} FROM {} WHERE rowid = last_insert_rowid()",
            names.join(", "),
            quoted(&table.name)
        );
        self.conn
            .query_row(&sql, [], |r| {
                (0..names.len()).map(|k| r.get(k)).collect::<Result<_, _>>()
            })
            .ok()
    }

    /// Adds a parent row for every foreign key value of `row` its parent table lacks (a
    /// witness's fixed code that no airport holds yet).
    fn ensure_parents(
        &self,
        at: usize,
        row: &[Value],
        rng: &mut impl Rng,
    ) -> Result<(), rusqlite::Error> {
        let schema = &self.facts.schema;
        let table = &schema.tables[at];
        for key in &schema.foreign_keys {
            if !key.from.table.eq_ignore_ascii_case(&table.name) {
                continue;
            }
            let Some(column) = table
                .columns
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(&key.from.column))
            else {
                continue;
            };
            let Some(parent) = schema
                .tables
                .iter()
                .position(|t| t.name.eq_ignore_ascii_case(&key.to.table))
            else {
                continue;
            };
            let Some(parent_column) = schema.tables[parent]
                .columns
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(&key.to.column))
            else {
                continue;
            };
            if row[column] == Value::Null || parent == at {
                continue;
            }
            let present = parent_keys(self.conn, &key.to.table, &key.to.column)
                .is_ok_and(|keys| keys.contains(&row[column]));
            if present {
                continue;
            }
            let insert = self.insert_sql(parent);
            for attempt in 0..TRIES {
                let mut parent_row = self.draw_row(parent, attempt, rng)?;
                parent_row[parent_column] = row[column].clone();
                if self
                    .conn
                    .execute(&insert, params_from_iter(parent_row))
                    .is_ok()
                {
                    break;
                }
            }
        }
        Ok(())
    }

    /// One value for `table.column`: a parent's key for a foreign key column, else from its
    /// pool.
    fn draw(
        &self,
        table: &str,
        column: &Column,
        attempt: usize,
        rng: &mut impl Rng,
    ) -> Result<Value, rusqlite::Error> {
        let nullable = !column.not_null && !column.primary_key;
        // NULLs would split a concentrated table's one group.
        if nullable && !self.concentrated && rng.random_bool(NULL_ODDS) {
            return Ok(Value::Null);
        }
        let parent = self.facts.schema.foreign_keys.iter().find(|k| {
            k.from.table.eq_ignore_ascii_case(table)
                && k.from.column.eq_ignore_ascii_case(&column.name)
        });
        if let Some(key) = parent {
            // A key naming a column its table lacks is followed nowhere: the pool decides.
            if let Ok(keys) = parent_keys(self.conn, &key.to.table, &key.to.column) {
                return Ok(match keys.len() {
                    0 => Value::Null,
                    _ if self.concentrated && attempt + 1 < TRIES => keys[0].clone(),
                    n => keys[rng.random_range(0..n)].clone(),
                });
            }
        }
        let pools = match self.narrowed {
            Some(narrowed) if attempt < NARROW_TRIES => narrowed,
            _ => self.pools,
        };
        let pool = pools.of(table, &column.name);
        Ok(match pool.len() {
            0 => Value::Null,
            n => pool[rng.random_range(0..n)].clone(),
        })
    }
}

/// A value of `kind` outside every pool, for a key column of a larger table.
fn fresh(kind: Kind, rng: &mut impl Rng) -> Value {
    let n: i64 = rng.random_range(100..1_000_000);
    match kind {
        Kind::Integer => Value::Integer(n),
        Kind::Real => Value::Real(n as f64 + 0.25),
        Kind::Date => Value::Text(format!("19{:02}-01-01", n % 100)),
        Kind::Text => Value::Text(format!("k{n}")),
    }
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
            candidate(&facts, &pools, &Hints::default(), 7, "hr", index, &path).unwrap();
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
            candidate(&facts, &pools, &Hints::default(), seed, "hr", 3, &path).unwrap();
            std::fs::read(path).unwrap()
        };
        assert_eq!(bytes(7, "a.sqlite"), bytes(7, "b.sqlite"));
        let differ = (8..20).any(|seed| bytes(seed, "x.sqlite") != bytes(7, "a.sqlite"));
        assert!(differ);
    }

    /// Candidates 0..40 of a schema-only copy of `SCHEMA` (plus a `city` column) for `golds`,
    /// each answering `probe`.
    fn probed(golds: &[&str], probe: &str) -> Vec<i64> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hr.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        conn.execute_batch("ALTER TABLE emp ADD COLUMN city TEXT")
            .unwrap();
        let facts = Facts::read(&path).unwrap();
        let literals = Literals::gather(golds.iter().copied(), []);
        let pools = Pools::build(&conn, &facts, &literals, 7, "hr").unwrap();
        let hints = Hints::gather(golds.iter().copied(), &facts.schema);
        (0..40)
            .map(|index| {
                let conn = filled(&facts, &pools, &hints, 7, "hr", index).unwrap();
                conn.query_row(probe, [], |r| r.get::<_, Option<i64>>(0))
                    .unwrap()
                    .unwrap_or(0)
            })
            .collect()
    }

    #[test]
    fn a_count_threshold_gets_groups_of_exactly_that_size_and_one_more() {
        let gold = "SELECT dept FROM emp GROUP BY dept HAVING count(*) > 10";
        let largest = probed(
            &[gold],
            "SELECT max(n) FROM (SELECT count(*) AS n FROM emp GROUP BY dept)",
        );
        for size in [9, 10, 11] {
            assert!(largest.contains(&size), "a group of {size}: {largest:?}");
        }
        assert!(largest.iter().all(|&n| n <= MAX_ROWS as i64));
    }

    #[test]
    fn predicates_of_one_gold_hold_together_in_a_witness_row() {
        let gold = "SELECT T1.pay FROM emp AS T1 JOIN dept AS T2 ON T1.dept = T2.id \
                    WHERE T2.name = 'Sales' AND T1.pay > 5 AND T1.city = 'Oslo'";
        let rows = probed(
            &[gold],
            &format!(
                "SELECT count(*) FROM ({})",
                gold.replacen("T1.pay", "T1.id", 1)
            ),
        );
        assert!(rows.iter().any(|&n| n >= 2), "two witness rows: {rows:?}");
    }

    #[test]
    fn some_candidates_give_different_ids_the_same_name() {
        let shared = probed(
            &["SELECT city FROM emp"],
            "SELECT max(n) FROM (SELECT count(DISTINCT id) AS n FROM emp \
             WHERE city IS NOT NULL GROUP BY city)",
        );
        assert!(
            shared.iter().filter(|&&n| n >= 2).count() >= 5,
            "{shared:?}"
        );
    }
}
