//! One small random database with the original's schema: a few rows per table (sizes vary
//! from database to database), values from the pools, NULL where the column allows it, child
//! keys drawn from the rows their parent table already holds (a parent may have no children,
//! which is what a LEFT JOIN shows). Written through the engine's [`Writer`]: on SQLite the
//! tables are the original's own DDL, so a row breaking a key, NOT NULL, UNIQUE or CHECK is
//! refused by SQLite and drawn again; on other engines, by the constraints their catalog
//! tables keep. Foreign keys are kept by the filler itself (a child's value is one its parent
//! holds), on every engine.

use std::cmp::Ordering;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::path::Path;

use rand::{Rng, RngExt};
use sqlgate_eval::exec::schema::{ColRef, Column, ForeignKey};
use sqlgate_eval::exec::{Backend, ExecError, ExecErrorKind, Value, Writer};

use super::facts::Facts;
use super::hints::{Hints, Witness, MAX_ROWS};
use super::values::{Affinity, Kind, Pools};
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

/// Builds candidate `index` of database `db` as the new database `path` of `backend`'s
/// engine. Its content depends on (seed, database name, candidate number) only, and the
/// statements that write it on its content: the same seed writes the same bytes.
#[allow(clippy::too_many_arguments)]
pub fn candidate(
    backend: &dyn Backend,
    facts: &Facts,
    pools: &Pools,
    hints: &Hints,
    seed: u64,
    db: &str,
    index: usize,
    path: &Path,
) -> Result<(), ExecError> {
    let mut writer = backend.create(path)?;
    create_schema(&mut *writer, facts)?;
    fill(&mut *writer, facts, pools, hints, seed, db, index)?;
    writer.finish()
}

/// Creates the original's tables (and, where its engine keeps its DDL, its indexes and views).
pub(super) fn create_schema(writer: &mut dyn Writer, facts: &Facts) -> Result<(), ExecError> {
    match &facts.ddl {
        Some(ddl) => {
            for sql in ddl {
                writer.execute_batch(sql)?;
            }
        }
        None => {
            for table in &facts.schema.tables {
                let keys: Vec<ForeignKey> = facts
                    .schema
                    .foreign_keys
                    .iter()
                    .filter(|key| key.from.table == table.name)
                    .cloned()
                    .collect();
                writer.create_table(table, &keys)?;
            }
        }
    }
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

/// Writes the candidate's rows, table by table, parents first.
fn fill(
    writer: &mut dyn Writer,
    facts: &Facts,
    pools: &Pools,
    hints: &Hints,
    seed: u64,
    db: &str,
    index: usize,
) -> Result<(), ExecError> {
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
    let mut filler = Filler {
        writer,
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
        written: vec![Vec::new(); facts.schema.tables.len()],
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
    Ok(())
}

/// Inserts rows into one candidate.
struct Filler<'a> {
    writer: &'a mut dyn Writer,
    facts: &'a Facts,
    pools: &'a Pools,
    /// Narrower pools the first [`NARROW_TRIES`] attempts at a row draw from (a value a CHECK
    /// refuses then only costs attempts).
    narrowed: Option<&'a Pools>,
    /// Foreign keys take the first parent key, not a random one, in all but the last attempt.
    concentrated: bool,
    /// The rows written to each table (by index in the schema), as the database holds them.
    written: Vec<Vec<Vec<Value>>>,
}

impl Filler<'_> {
    /// Writes `row` into table `at` unless a foreign key's value is not among its parent's
    /// or the database refuses it; whether it was written.
    fn insert(&mut self, at: usize, row: Vec<Value>) -> Result<bool, ExecError> {
        let table = &self.facts.schema.tables[at];
        let row: Vec<Value> = row
            .into_iter()
            .zip(&table.columns)
            .map(|(value, column)| Affinity::of(&column.decl_type).hold(value))
            .collect();
        if !self.keys_hold(at, &row) {
            return Ok(false);
        }
        let columns: Vec<String> = table.columns.iter().map(|c| c.name.clone()).collect();
        match self
            .writer
            .insert(&table.name, &columns, std::slice::from_ref(&row))
        {
            Ok(()) => {
                self.written[at].push(row);
                Ok(true)
            }
            // A constraint refused the row (see `Writer::insert`).
            Err(error) if error.kind == ExecErrorKind::Runtime => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Whether every foreign key value of `row` (of table `at`) is NULL or held by its parent
    /// column (compared as the parent column holds it; a row may reference itself).
    fn keys_hold(&self, at: usize, row: &[Value]) -> bool {
        let schema = &self.facts.schema;
        schema.foreign_keys.iter().all(|key| {
            let Some((child, column)) = self.locate(&key.from) else {
                return true;
            };
            let Some((parent, parent_column)) = self.locate(&key.to) else {
                return true;
            };
            if child != at || row[column] == Value::Null {
                return true;
            }
            let declared = &schema.tables[parent].columns[parent_column].decl_type;
            let value = Affinity::of(declared).hold(row[column].clone());
            (parent == at && row[parent_column] == value)
                || self.written[parent]
                    .iter()
                    .any(|held| held[parent_column] == value)
        })
    }

    /// The table and column indexes of `column`, when the schema has them.
    fn locate(&self, column: &ColRef) -> Option<(usize, usize)> {
        let schema = &self.facts.schema;
        let table = schema
            .tables
            .iter()
            .position(|t| t.name.eq_ignore_ascii_case(&column.table))?;
        let at = schema.tables[table]
            .columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(&column.column))?;
        Some((table, at))
    }

    /// The distinct values the candidate's `column` holds, NULL aside, in SQL's order
    /// (numbers, then texts, then blobs); `None` for a column the schema does not have.
    fn parent_keys(&self, column: &ColRef) -> Option<Vec<Value>> {
        let (table, at) = self.locate(column)?;
        let mut keys: Vec<Value> = self.written[table]
            .iter()
            .map(|row| row[at].clone())
            .filter(|value| *value != Value::Null)
            .collect();
        keys.sort_by(sql_order);
        keys.dedup();
        Some(keys)
    }

    /// `rows` random rows into table `at`.
    fn rows(&mut self, at: usize, rows: usize, rng: &mut impl Rng) -> Result<(), ExecError> {
        for _ in 0..rows {
            for attempt in 0..TRIES {
                let row = self.draw_row(at, attempt, rng);
                if self.insert(at, row)? {
                    break;
                }
            }
        }
        Ok(())
    }

    /// A random row of table `at`; after the first attempt, key columns (but foreign keys)
    /// take fresh values (pools are smaller than the larger tables).
    fn draw_row(&self, at: usize, attempt: usize, rng: &mut impl Rng) -> Vec<Value> {
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
                self.draw(&table.name, column, attempt, rng)
            };
            row.push(value);
        }
        row
    }

    /// The witness rows of `witness`'s instance `i`: two rows holding its fixed values
    /// (other columns vary, so aggregates over them differ), or one when it only joins; a
    /// joined column copies the value of the first row of the instance it is joined with.
    fn witness_rows(
        &mut self,
        witness: &Witness,
        w: usize,
        i: usize,
        anchors: &mut HashMap<(usize, usize), Vec<Value>>,
        rng: &mut impl Rng,
    ) -> Result<(), ExecError> {
        let instance = &witness.instances[i];
        let count = if instance.fixed.is_empty() { 1 } else { 2 };
        for _ in 0..count {
            for attempt in 0..TRIES {
                let mut row = self.draw_row(instance.table, attempt, rng);
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
                if self.insert(instance.table, row)? {
                    // As stored: a column's affinity turns -1.0 into -1, and a joined
                    // column of another type must get the stored value.
                    if let Entry::Vacant(slot) = anchors.entry((w, i)) {
                        if let Some(stored) = self.written[instance.table].last() {
                            slot.insert(stored.clone());
                        }
                    }
                    break;
                }
            }
        }
        Ok(())
    }

    /// Adds a parent row for every foreign key value of `row` its parent table lacks (a
    /// witness's fixed code that no airport holds yet).
    fn ensure_parents(
        &mut self,
        at: usize,
        row: &[Value],
        rng: &mut impl Rng,
    ) -> Result<(), ExecError> {
        let facts = self.facts;
        for key in &facts.schema.foreign_keys {
            let Some((child, column)) = self.locate(&key.from) else {
                continue;
            };
            let Some((parent, parent_column)) = self.locate(&key.to) else {
                continue;
            };
            if child != at || row[column] == Value::Null || parent == at {
                continue;
            }
            let declared = &facts.schema.tables[parent].columns[parent_column].decl_type;
            let value = Affinity::of(declared).hold(row[column].clone());
            let present = self
                .parent_keys(&key.to)
                .is_some_and(|keys| keys.contains(&value));
            if present {
                continue;
            }
            for attempt in 0..TRIES {
                let mut parent_row = self.draw_row(parent, attempt, rng);
                parent_row[parent_column] = row[column].clone();
                if self.insert(parent, parent_row)? {
                    break;
                }
            }
        }
        Ok(())
    }

    /// One value for `table.column`: a parent's key for a foreign key column, else from its
    /// pool.
    fn draw(&self, table: &str, column: &Column, attempt: usize, rng: &mut impl Rng) -> Value {
        let nullable = !column.not_null && !column.primary_key;
        // NULLs would split a concentrated table's one group.
        if nullable && !self.concentrated && rng.random_bool(NULL_ODDS) {
            return Value::Null;
        }
        let parent = self.facts.schema.foreign_keys.iter().find(|k| {
            k.from.table.eq_ignore_ascii_case(table)
                && k.from.column.eq_ignore_ascii_case(&column.name)
        });
        // A key naming a column its table lacks is followed nowhere: the pool decides.
        if let Some(keys) = parent.and_then(|key| self.parent_keys(&key.to)) {
            return match keys.len() {
                0 => Value::Null,
                _ if self.concentrated && attempt + 1 < TRIES => keys[0].clone(),
                n => keys[rng.random_range(0..n)].clone(),
            };
        }
        let pools = match self.narrowed {
            Some(narrowed) if attempt < NARROW_TRIES => narrowed,
            _ => self.pools,
        };
        let pool = pools.of(table, &column.name);
        match pool.len() {
            0 => Value::Null,
            n => pool[rng.random_range(0..n)].clone(),
        }
    }
}

/// SQL's order of values: NULL, numbers (by value), texts (by bytes), blobs.
pub(super) fn sql_order(a: &Value, b: &Value) -> Ordering {
    let rank = |v: &Value| match v {
        Value::Null => 0,
        Value::Int(_) | Value::Real(_) => 1,
        Value::Text(_) => 2,
        Value::Blob(_) => 3,
    };
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Text(x), Value::Text(y)) => x.cmp(y),
        (Value::Blob(x), Value::Blob(y)) => x.cmp(y),
        _ if a.is_numeric() && b.is_numeric() => {
            let (x, y) = (
                a.as_f64().unwrap_or_default(),
                b.as_f64().unwrap_or_default(),
            );
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// A value of `kind` outside every pool, for a key column of a larger table.
fn fresh(kind: Kind, rng: &mut impl Rng) -> Value {
    let n: i64 = rng.random_range(100..1_000_000);
    match kind {
        Kind::Integer => Value::Int(n),
        Kind::Real => Value::Real(n as f64 + 0.25),
        Kind::Date => Value::Text(format!("19{:02}-01-01", n % 100)),
        Kind::Text => Value::Text(format!("k{n}")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::values::tests::pools_of;
    use super::super::values::Literals;
    use super::*;
    use rusqlite::Connection;

    fn sqlite() -> std::sync::Arc<dyn Backend> {
        sqlgate_engine_sqlite::files()
    }

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
        let facts = Facts::read(&*sqlite(), &path).unwrap();
        let pools = pools_of(&path, &facts, &Literals::default(), 7, "hr");
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
            let hints = Hints::default();
            candidate(&*sqlite(), &facts, &pools, &hints, 7, "hr", index, &path).unwrap();
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

    /// The way of engines that keep no `CREATE` text: tables from the catalog, which SQLite's
    /// writer creates with their foreign keys but does not enforce them; distill keeps them.
    #[test]
    fn candidates_from_the_catalog_keep_every_foreign_key() {
        let (dir, mut facts, pools) = setup(
            "INSERT INTO dept VALUES (1, 'ops'), (2, 'dev');
             INSERT INTO emp VALUES (1, 1, NULL, 10.0, 'a'), (2, 2, 1, 20.0, 'b');",
        );
        facts.ddl = None;
        // Witnesses fix a department no original row holds: its parent is added first.
        let gold = "SELECT id FROM emp WHERE dept = 7 AND code = 'zz'";
        let hints = Hints::gather([gold], &facts.schema);
        let (mut emp_rows, mut witnessed) = (0, 0);
        for index in 0..24 {
            let path = dir.path().join(format!("catalog{index}.sqlite"));
            candidate(&*sqlite(), &facts, &pools, &hints, 7, "hr", index, &path).unwrap();
            let conn = Connection::open(&path).unwrap();
            let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
            assert_eq!(count("SELECT count(*) FROM pragma_foreign_key_check"), 0);
            emp_rows += count("SELECT count(*) FROM emp");
            witnessed += count(&format!("SELECT count(*) FROM ({gold})"));
        }
        assert!(emp_rows > 24, "candidates hold rows ({emp_rows})");
        assert!(witnessed > 0, "a witness row and its added parent");
    }

    #[test]
    fn a_seed_gives_the_same_bytes_and_another_seed_other_rows() {
        let (dir, facts, pools) = setup("INSERT INTO dept VALUES (1, 'ops'), (2, 'dev');");
        let bytes = |seed: u64, name: &str| {
            let path = dir.path().join(format!("{name}-{seed}"));
            let _ = std::fs::remove_file(&path);
            let hints = Hints::default();
            candidate(&*sqlite(), &facts, &pools, &hints, seed, "hr", 3, &path).unwrap();
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
        let facts = Facts::read(&*sqlite(), &path).unwrap();
        let literals = Literals::gather(golds.iter().copied(), []);
        let pools = pools_of(&path, &facts, &literals, 7, "hr");
        let hints = Hints::gather(golds.iter().copied(), &facts.schema);
        (0..40)
            .map(|index| {
                let built = dir.path().join(format!("c{index}.sqlite"));
                candidate(&*sqlite(), &facts, &pools, &hints, 7, "hr", index, &built).unwrap();
                let conn = Connection::open(&built).unwrap();
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
