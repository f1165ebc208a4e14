//! A sample of a large original: when a table holds more than [`SAMPLE_ROWS`] rows, trying
//! every neighbour on the original would take as long as the original is large. A neighbour
//! that runs past the bound there ([`super::trial::NEIGHBOUR_STEPS`]) is judged on this sample
//! instead, and the value pools of the large tables come from it rather than from a scan of
//! each column. The sample is one more candidate database that the greedy choice may keep.
//!
//! Rows are drawn by key: `WINDOWS` runs of consecutive rows in primary key order, one at a
//! seeded offset in each of as many equal parts of a large table; smaller tables are copied whole. Then the rows the drawn
//! rows reference are added, by the declared foreign keys and by the golds' join equalities,
//! so the sample's joins find their rows as the original's do.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use rand::RngExt;
use sqlgate_eval::exec::{Backend, Connection, Driver, ExecError, ExecErrorKind, Limits, Value};

use super::facts::Facts;
use super::fill::create_schema;
use super::hints::Hints;
use crate::mutate::labelled_stream;

/// A table with more rows than this is drawn from; one with as many or fewer is copied.
pub const SAMPLE_ROWS: usize = 1_000;
/// The runs of consecutive rows a large table's draw is made of.
const WINDOWS: usize = 10;
/// Passes over the references: a row added for a reference can reference further.
const REFERENCE_PASSES: usize = 3;
/// Most rows added along one reference in one pass.
const ROWS_PER_REFERENCE: usize = 2 * SAMPLE_ROWS;
/// Most rows a sample holds: references stop being followed past it.
const MAX_ROWS: usize = 20 * SAMPLE_ROWS;
/// Values in one `IN (...)` list.
const IN_LIST: usize = 500;
/// Most bytes one query of the draw reads: a query past it (rows of large texts or blobs)
/// adds no row.
const QUERY_BYTES: usize = 4 << 20;

/// The rows drawn from the original, per table of the schema.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Per table (by index in the schema): the rows, each once.
    rows: Vec<Vec<Vec<Value>>>,
    /// Per table: whether it was drawn from (it holds more than [`SAMPLE_ROWS`] rows), not
    /// copied whole.
    drawn: Vec<bool>,
}

impl Sample {
    /// Whether the original `conn` has a table past [`SAMPLE_ROWS`] rows (without counting
    /// the rows of any).
    pub fn needed(
        conn: &mut dyn Connection,
        driver: &dyn Driver,
        facts: &Facts,
    ) -> Result<bool, ExecError> {
        if !facts.holds_rows {
            return Ok(false);
        }
        for table in &facts.schema.tables {
            let sql = format!(
                "SELECT 1 FROM {} LIMIT 1 OFFSET {SAMPLE_ROWS}",
                driver.quote(&table.name)
            );
            if !query(conn, &sql, 1)?.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Draws the sample of the original `conn`, seeded by `seed` and the database's name.
    pub fn draw(
        conn: &mut dyn Connection,
        driver: &dyn Driver,
        facts: &Facts,
        hints: &Hints,
        seed: u64,
        db: &str,
    ) -> Result<Sample, ExecError> {
        let tables = &facts.schema.tables;
        let mut sample = Sample {
            rows: vec![Vec::new(); tables.len()],
            drawn: vec![false; tables.len()],
        };
        let mut seen: Vec<HashSet<String>> = vec![HashSet::new(); tables.len()];
        for (t, table) in tables.iter().enumerate() {
            let from = format!(
                "SELECT {} FROM {}",
                columns(driver, t, facts),
                driver.quote(&table.name)
            );
            let count = query(
                conn,
                &format!("SELECT COUNT(*) FROM {}", driver.quote(&table.name)),
                1,
            )?;
            let count = match count.first().and_then(|row| row.first()) {
                Some(Value::Int(n)) => usize::try_from(*n).unwrap_or(0),
                _ => 0,
            };
            let rows = if count <= SAMPLE_ROWS {
                query(conn, &from, SAMPLE_ROWS)?
            } else {
                sample.drawn[t] = true;
                let keys: Vec<String> = match table.columns.iter().any(|c| c.primary_key) {
                    true => table
                        .columns
                        .iter()
                        .filter(|c| c.primary_key)
                        .map(|c| driver.quote(&c.name))
                        .collect(),
                    false => table
                        .columns
                        .iter()
                        .map(|c| driver.quote(&c.name))
                        .collect(),
                };
                // One window at a seeded place in each of WINDOWS equal parts of the table:
                // spread over its keys, never overlapping.
                let per_window = SAMPLE_ROWS / WINDOWS;
                let stratum = count / WINDOWS;
                let mut rng = labelled_stream(seed, db, &["sample", &table.name]);
                let offsets: Vec<usize> = (0..WINDOWS)
                    .map(|w| w * stratum + rng.random_range(0..=stratum - per_window))
                    .collect();
                let mut rows = Vec::new();
                for offset in offsets {
                    rows.extend(query(
                        conn,
                        &format!(
                            "{from} ORDER BY {} LIMIT {per_window} OFFSET {offset}",
                            keys.join(", ")
                        ),
                        per_window,
                    )?);
                }
                rows
            };
            sample.add(t, rows, &mut seen[t]);
        }
        for _ in 0..REFERENCE_PASSES {
            let mut added = false;
            for (from, to) in references(facts, hints) {
                if sample.len() >= MAX_ROWS {
                    break;
                }
                let values: BTreeSet<InValue> = sample.rows[from.0]
                    .iter()
                    .filter_map(|row| InValue::of(&row[from.1]))
                    .collect();
                let values: Vec<InValue> = values.into_iter().collect();
                let mut found = Vec::new();
                for chunk in values.chunks(IN_LIST) {
                    let list: Vec<String> = chunk.iter().map(InValue::literal).collect();
                    let sql = format!(
                        "SELECT {} FROM {} WHERE {} IN ({})",
                        columns(driver, to.0, facts),
                        driver.quote(&tables[to.0].name),
                        driver.quote(&tables[to.0].columns[to.1].name),
                        list.join(", ")
                    );
                    found.extend(query(conn, &sql, ROWS_PER_REFERENCE)?);
                    if found.len() >= ROWS_PER_REFERENCE {
                        break;
                    }
                }
                found.truncate(ROWS_PER_REFERENCE);
                added |= sample.add(to.0, found, &mut seen[to.0]);
            }
            if !added {
                break;
            }
        }
        Ok(sample)
    }

    /// Adds the rows of table `t` not already held; whether any was new.
    fn add(&mut self, t: usize, rows: Vec<Vec<Value>>, seen: &mut HashSet<String>) -> bool {
        let before = self.rows[t].len();
        for row in rows {
            if seen.insert(format!("{row:?}")) {
                self.rows[t].push(row);
            }
        }
        self.rows[t].len() > before
    }

    /// Rows held, all tables together.
    pub fn len(&self) -> usize {
        self.rows.iter().map(Vec::len).sum()
    }

    /// Whether no table holds a row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether table `t` (by index in the schema) was drawn from rather than copied whole.
    pub fn drawn(&self, t: usize) -> bool {
        self.drawn[t]
    }

    /// The values of column `c` of table `t` the sample holds.
    pub fn column(&self, t: usize, c: usize) -> impl Iterator<Item = &Value> {
        self.rows[t].iter().map(move |row| &row[c])
    }

    /// Writes the sample as the new database `path` of `backend`'s engine, with the original's
    /// schema: parents first; a row the database refuses (a reference to a row not drawn,
    /// where the engine enforces it) is left out.
    pub fn write(
        &self,
        backend: &dyn Backend,
        facts: &Facts,
        path: &Path,
    ) -> Result<(), ExecError> {
        let mut writer = backend.create(path)?;
        create_schema(&mut *writer, facts)?;
        for &t in &facts.fill_order {
            let table = &facts.schema.tables[t];
            let names: Vec<String> = table.columns.iter().map(|c| c.name.clone()).collect();
            for batch in self.rows[t].chunks(200) {
                match writer.insert(&table.name, &names, batch) {
                    Ok(()) => {}
                    Err(error) if error.kind == ExecErrorKind::Runtime => {
                        for row in batch {
                            match writer.insert(&table.name, &names, std::slice::from_ref(row)) {
                                Err(error) if error.kind != ExecErrorKind::Runtime => {
                                    return Err(error)
                                }
                                _ => {}
                            }
                        }
                    }
                    Err(error) => return Err(error),
                }
            }
        }
        writer.finish()
    }
}

/// The quoted columns of table `t`, in declaration order.
fn columns(driver: &dyn Driver, t: usize, facts: &Facts) -> String {
    facts.schema.tables[t]
        .columns
        .iter()
        .map(|c| driver.quote(&c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs `sql` on the original, reading at most `most` rows and [`QUERY_BYTES`]: no row when
/// its rows are larger.
fn query(conn: &mut dyn Connection, sql: &str, most: usize) -> Result<Vec<Vec<Value>>, ExecError> {
    let limits = Limits {
        max_rows: most.max(1),
        max_bytes: QUERY_BYTES,
        ..Limits::default()
    };
    match conn.execute(sql, &limits).result {
        Ok(set) => Ok(set.rows.clone()),
        Err(error) if error.kind == ExecErrorKind::TooLarge => Ok(Vec::new()),
        Err(error) => Err(error),
    }
}

/// ((table, column) that references, (table, column) referenced), by index in the schema:
/// each declared foreign key, and each join equality of a gold towards its side whose values
/// are unique (both ways when neither is).
fn references(facts: &Facts, hints: &Hints) -> Vec<((usize, usize), (usize, usize))> {
    let schema = &facts.schema;
    let locate = |table: &str, column: &str| {
        let t = schema
            .tables
            .iter()
            .position(|x| x.name.eq_ignore_ascii_case(table))?;
        let c = schema.tables[t]
            .columns
            .iter()
            .position(|x| x.name.eq_ignore_ascii_case(column))?;
        Some((t, c))
    };
    let mut found = BTreeSet::new();
    for key in &schema.foreign_keys {
        if let (Some(from), Some(to)) = (
            locate(&key.from.table, &key.from.column),
            locate(&key.to.table, &key.to.column),
        ) {
            found.insert((from, to));
        }
    }
    for witness in hints.witnesses.iter().flatten() {
        for &((a, ac), (b, bc)) in &witness.links {
            let (a, b) = (
                (witness.instances[a].table, ac),
                (witness.instances[b].table, bc),
            );
            let unique = |(t, c): (usize, usize)| {
                let table = &schema.tables[t];
                facts
                    .unique
                    .contains(&format!("{}.{}", table.name, table.columns[c].name).to_lowercase())
            };
            if a == b {
                continue;
            }
            if unique(b) || !unique(a) {
                found.insert((a, b));
            }
            if unique(a) || !unique(b) {
                found.insert((b, a));
            }
        }
    }
    found.into_iter().collect()
}

/// A value written into an `IN` list: integers, and texts that every engine reads the same
/// way between single quotes. Other values are not followed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum InValue {
    Int(i64),
    Text(String),
}

impl InValue {
    fn of(value: &Value) -> Option<InValue> {
        match value {
            Value::Int(n) => Some(InValue::Int(*n)),
            Value::Text(text) if !text.contains(['\\', '\0']) && text.len() <= 256 => {
                Some(InValue::Text(text.clone()))
            }
            _ => None,
        }
    }

    fn literal(&self) -> String {
        match self {
            InValue::Int(n) => n.to_string(),
            InValue::Text(text) => format!("'{}'", text.replace('\'', "''")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlgate_eval::exec::{Open, Source};

    /// A shop whose `orders` (3,000 rows) reference `customer` (1,500 rows) by a declared key,
    /// and whose `payment` (2,000 rows) references `orders` only through the golds' join.
    fn shop(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("shop.sqlite");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE region (code TEXT PRIMARY KEY, name TEXT);
             CREATE TABLE customer (id INTEGER PRIMARY KEY, region TEXT, name TEXT);
             CREATE TABLE orders (id INTEGER PRIMARY KEY,
                                  customer_id INTEGER REFERENCES customer(id), amount INTEGER);
             INSERT INTO region VALUES ('n', 'north'), ('s', 'south'), ('e', 'east');
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1500)
             INSERT INTO customer SELECT i, substr('nse', i % 3 + 1, 1), 'c' || i FROM n;
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
             INSERT INTO orders SELECT i, (i * 7919) % 1500 + 1, i % 97 FROM n;
             CREATE TABLE payment (id INTEGER PRIMARY KEY, order_id INTEGER, paid INTEGER);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
             INSERT INTO payment SELECT i, (i * 31) % 3000 + 1, i % 5 FROM n;",
        )
        .unwrap();
        path
    }

    fn draw(path: &Path, seed: u64) -> (Facts, Sample) {
        let backend = sqlgate_engine_sqlite::files();
        let facts = Facts::read(&*backend, path).unwrap();
        let hints = Hints::gather(
            [
                "SELECT sum(p.paid) FROM payment AS p JOIN orders AS o ON o.id = p.order_id \
              WHERE o.amount > 3",
            ],
            &facts.schema,
        );
        let mut conn = backend.open(path, Open::for_source(Source::Gold)).unwrap();
        let driver = backend.driver();
        assert!(Sample::needed(&mut *conn, driver, &facts).unwrap());
        let sample = Sample::draw(&mut *conn, driver, &facts, &hints, seed, "shop").unwrap();
        (facts, sample)
    }

    #[test]
    fn a_sample_draws_large_tables_by_key_and_keeps_what_their_rows_reference() {
        let dir = tempfile::tempdir().unwrap();
        let path = shop(dir.path());
        let (facts, sample) = draw(&path, 7);
        let index = |name: &str| {
            facts
                .schema
                .tables
                .iter()
                .position(|t| t.name == name)
                .unwrap()
        };
        let (region, customer, orders, payment) = (
            index("region"),
            index("customer"),
            index("orders"),
            index("payment"),
        );
        assert!(!sample.drawn(region));
        assert!(sample.drawn(customer) && sample.drawn(orders) && sample.drawn(payment));
        // The small table whole, the large ones drawn to its size, and then what is
        // referenced.
        assert_eq!(sample.rows[region].len(), 3);
        assert_eq!(sample.rows[payment].len(), SAMPLE_ROWS);
        // Runs of consecutive keys: most rows follow the one before them.
        let ids: Vec<i64> = sample
            .column(payment, 0)
            .map(|v| match v {
                Value::Int(id) => *id,
                other => panic!("{other:?}"),
            })
            .collect();
        let consecutive = ids.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(consecutive >= SAMPLE_ROWS - WINDOWS, "{consecutive}");
        // Every payment's order is there (the golds' join), and every order's customer (a
        // declared key), those of the orders added for payments too.
        let held = |t: usize, c: usize| -> HashSet<String> {
            sample.column(t, c).map(|v| format!("{v:?}")).collect()
        };
        assert!(held(payment, 1).is_subset(&held(orders, 0)));
        assert!(held(orders, 1).is_subset(&held(customer, 0)));
        assert!(sample.rows[orders].len() > SAMPLE_ROWS);
        assert!(sample.rows[customer].len() > SAMPLE_ROWS);
        assert!(sample.len() <= MAX_ROWS);

        // Written with the original's schema, it holds exactly those rows.
        let written = dir.path().join("sample.sqlite");
        sample
            .write(&*sqlgate_engine_sqlite::files(), &facts, &written)
            .unwrap();
        let conn = rusqlite::Connection::open(&written).unwrap();
        let count = |table: &str| -> usize {
            let n: i64 = conn
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
                .unwrap();
            usize::try_from(n).unwrap()
        };
        assert_eq!(count("orders"), sample.rows[orders].len());
        assert_eq!(count("customer"), sample.rows[customer].len());
        let orphans: i64 = conn
            .query_row(
                "SELECT count(*) FROM orders WHERE customer_id NOT IN (SELECT id FROM customer)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(orphans, 0);
    }

    #[test]
    fn a_seed_draws_the_same_rows_and_another_seed_others() {
        let dir = tempfile::tempdir().unwrap();
        let path = shop(dir.path());
        let rows = |seed| draw(&path, seed).1.rows;
        assert_eq!(rows(7), rows(7));
        assert_ne!(rows(7), rows(8));
    }

    #[test]
    fn rows_past_the_byte_bound_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blobs.sqlite");
        let conn = rusqlite::Connection::open(&path).unwrap();
        // 1,200 rows: the first 600 of 60 kB (a run of 100 is past the bound), the others
        // small.
        conn.execute_batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200)
             INSERT INTO t SELECT i, CASE WHEN i <= 600 THEN randomblob(60000) ELSE x'00' END
             FROM n;",
        )
        .unwrap();
        let backend = sqlgate_engine_sqlite::files();
        let facts = Facts::read(&*backend, &path).unwrap();
        let mut session = backend.open(&path, Open::for_source(Source::Gold)).unwrap();
        let driver = backend.driver();
        let sample =
            Sample::draw(&mut *session, driver, &facts, &Hints::default(), 1, "blobs").unwrap();
        // The runs in the large rows' half were left out, the others kept.
        assert_eq!(sample.len(), SAMPLE_ROWS / 2);
        assert!(sample.column(0, 1).all(|v| *v == Value::Blob(vec![0])));
    }

    #[test]
    fn a_database_whose_tables_all_fit_needs_no_sample() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("small.sqlite");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE t (id INTEGER PRIMARY KEY);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {SAMPLE_ROWS})
             INSERT INTO t SELECT i FROM n;"
        ))
        .unwrap();
        let backend = sqlgate_engine_sqlite::files();
        let facts = Facts::read(&*backend, &path).unwrap();
        let mut session = backend.open(&path, Open::for_source(Source::Gold)).unwrap();
        assert!(!Sample::needed(&mut *session, backend.driver(), &facts).unwrap());
        conn.execute("INSERT INTO t VALUES (NULL)", []).unwrap();
        let mut session = backend.open(&path, Open::for_source(Source::Gold)).unwrap();
        assert!(Sample::needed(&mut *session, backend.driver(), &facts).unwrap());
    }

    /// `1000000` as `1,000,000`, as the docs write numbers.
    fn thousands(n: u64) -> String {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, digit) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(digit);
        }
        out
    }

    #[test]
    fn docs_distill_gives_the_samples_numbers() {
        let doc = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/distill.md"),
        )
        .unwrap();
        let start = doc
            .find("## Large databases: a sample of the original")
            .unwrap();
        let section = &doc[start..start + doc[start..].find("**Progress.**").unwrap()];
        let size = |n: usize| u64::try_from(n).unwrap();
        for said in [
            format!("more\nthan **{} rows**", thousands(size(SAMPLE_ROWS))),
            format!(
                "gives {WINDOWS} runs of {} consecutive rows",
                SAMPLE_ROWS / WINDOWS
            ),
            format!("in up to {REFERENCE_PASSES} passes"),
            format!(
                "at most {} rows per reference",
                thousands(size(ROWS_PER_REFERENCE))
            ),
            format!("the sample holds {} rows", thousands(size(MAX_ROWS))),
            format!("more than {} MiB", QUERY_BYTES >> 20),
            format!(
                "within **{}** virtual-machine steps",
                thousands(super::super::trial::GOLD_STEPS)
            ),
            format!(
                "each within **{}** steps",
                thousands(super::super::trial::NEIGHBOUR_STEPS)
            ),
        ] {
            let flat = section.split_whitespace().collect::<Vec<_>>().join(" ");
            let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(flat.contains(&said), "docs/distill.md lacks `{said}`");
        }
    }
}
