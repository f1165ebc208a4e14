//! The schema graph G_S (spec `jqe-tqa.md` §1.1): tables as nodes, one undirected edge per table
//! pair carrying every admissible equi-join label, from declared PK–FK and FK–FK pairs, or from
//! inferred keys when a database declares no foreign key at all.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

/// A column `table.column`; names keep their spelling and compare case-insensitively via `key`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ColRef {
    pub table: String,
    pub column: String,
}

impl ColRef {
    pub fn new(table: &str, column: &str) -> ColRef {
        ColRef {
            table: table.to_string(),
            column: column.to_string(),
        }
    }

    /// `table.column` lowercased: the identity used by union-find and comparisons.
    pub fn key(&self) -> String {
        format!("{}.{}", self.table, self.column).to_lowercase()
    }
}

/// An equi-join `left = right`, `inferred` when it comes from key inference, not a declaration.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct JoinLabel {
    pub left: ColRef,
    pub right: ColRef,
    pub inferred: bool,
}

impl JoinLabel {
    /// The same equality with `table` on the left (the added table is written first).
    pub fn oriented(&self, table: &str) -> JoinLabel {
        if self.left.table.eq_ignore_ascii_case(table) {
            self.clone()
        } else {
            JoinLabel {
                left: self.right.clone(),
                right: self.left.clone(),
                inferred: self.inferred,
            }
        }
    }

    /// Order-independent identity, for deduplication.
    fn identity(&self) -> (String, String) {
        let (a, b) = (self.left.key(), self.right.key());
        if a <= b {
            (a, b)
        } else {
            (b, a)
        }
    }
}

/// A column of a table, as `PRAGMA table_info` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub decl_type: String,
    pub primary_key: bool,
}

/// A table and its columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<Column>,
}

/// A declared foreign key `from → to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignKey {
    pub from: ColRef,
    pub to: ColRef,
}

impl ForeignKey {
    /// An explicit join key `"orders.customer_id = customers.customer_id"`, checked against the
    /// schema (names are matched case-insensitively and written as the schema spells them).
    pub fn parse(text: &str, schema: &Schema) -> Result<ForeignKey, String> {
        let side = |part: &str| -> Result<ColRef, String> {
            let (table, column) = part
                .trim()
                .split_once('.')
                .ok_or_else(|| format!("`{}` is not `table.column`", part.trim()))?;
            let table = schema
                .tables
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(table.trim()))
                .ok_or_else(|| format!("no table `{}`", table.trim()))?;
            let column = table
                .columns
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(column.trim()))
                .ok_or_else(|| {
                    format!("table `{}` has no column `{}`", table.name, column.trim())
                })?;
            Ok(ColRef::new(&table.name, &column.name))
        };
        let (from, to) = text
            .split_once('=')
            .ok_or_else(|| format!("`{text}` is not `table.column = table.column`"))?;
        Ok(ForeignKey {
            from: side(from)?,
            to: side(to)?,
        })
    }
}

/// What a database declares: its tables and foreign keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schema {
    pub tables: Vec<Table>,
    pub foreign_keys: Vec<ForeignKey>,
}

impl Schema {
    /// Reads tables, columns and foreign keys of a SQLite file (opened read-only).
    pub fn read(db: &Path) -> Result<Schema, rusqlite::Error> {
        let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let names: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")?
            .query_map([], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        let mut schema = Schema::default();
        for name in &names {
            let columns: Vec<Column> = conn
                .prepare("SELECT name, type, pk FROM pragma_table_info(?1) ORDER BY cid")?
                .query_map([name], |row| {
                    Ok(Column {
                        name: row.get(0)?,
                        decl_type: row.get(1)?,
                        primary_key: row.get::<_, i64>(2)? > 0,
                    })
                })?
                .collect::<Result<_, _>>()?;
            schema.tables.push(Table {
                name: name.clone(),
                columns,
            });
        }
        for name in &names {
            let rows: Vec<(String, String, Option<String>)> = conn
                .prepare("SELECT \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?1) ORDER BY id, seq")?
                .query_map([name], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
                .collect::<Result<_, _>>()?;
            for (target, from, to) in rows {
                // A foreign key without a target column references the target's primary key.
                let to = to.or_else(|| schema.single_primary_key(&target).map(|c| c.name.clone()));
                if let (Some(table), Some(to)) = (schema.table(&target), to) {
                    let to = ColRef::new(&table.name, &to);
                    schema.foreign_keys.push(ForeignKey {
                        from: ColRef::new(name, &from),
                        to,
                    });
                }
            }
        }
        Ok(schema)
    }

    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(name))
    }

    fn single_primary_key(&self, table: &str) -> Option<&Column> {
        let table = self.table(table)?;
        let mut keys = table.columns.iter().filter(|c| c.primary_key);
        match (keys.next(), keys.next()) {
            (Some(key), None) => Some(key),
            _ => None,
        }
    }

    /// The column a table is identified by: its single declared primary key, or else a column
    /// named `id`, `<table>_id` or `<table>_name` (the table name also without a plural `s`).
    fn key_column<'a>(&'a self, table: &'a Table) -> Option<&'a Column> {
        if let Some(key) = self.single_primary_key(&table.name) {
            return Some(key);
        }
        let stems = stems(&table.name);
        table.columns.iter().find(|c| {
            let name = c.name.to_lowercase();
            name == "id"
                || stems
                    .iter()
                    .any(|s| name == format!("{s}_id") || name == format!("{s}_name"))
        })
    }

    /// Foreign keys inferred from naming conventions (see `docs/jqe.md`): `R.c → S.k` where `k`
    /// is S's key column and either `c` has the same name as `k` (when `k` is not a generic
    /// `id`), or `k` is `id` and `c` is `<S>_id`; the declared types must have the same
    /// affinity.
    pub fn inferred_foreign_keys(&self) -> Vec<ForeignKey> {
        let mut inferred = Vec::new();
        for target in &self.tables {
            let Some(key) = self.key_column(target) else {
                continue;
            };
            let generic = key.name.eq_ignore_ascii_case("id");
            let stems = stems(&target.name);
            for source in self.tables.iter().filter(|t| t.name != target.name) {
                for column in &source.columns {
                    let name = column.name.to_lowercase();
                    let matches = if generic {
                        stems.iter().any(|s| name == format!("{s}_id"))
                    } else {
                        name == key.name.to_lowercase()
                    };
                    if matches && affinity(&column.decl_type) == affinity(&key.decl_type) {
                        inferred.push(ForeignKey {
                            from: ColRef::new(&source.name, &column.name),
                            to: ColRef::new(&target.name, &key.name),
                        });
                    }
                }
            }
        }
        inferred
    }
}

/// The table name lowercased, and without a trailing plural `s`.
fn stems(table: &str) -> Vec<String> {
    let name = table.to_lowercase();
    let mut stems = vec![name.clone()];
    if let Some(singular) = name.strip_suffix('s').filter(|s| !s.is_empty()) {
        stems.push(singular.to_string());
    }
    stems
}

/// SQLite's type affinity rules (datatype3 §3.1), on a declared type.
fn affinity(decl_type: &str) -> &'static str {
    let t = decl_type.to_uppercase();
    if t.contains("INT") {
        "INTEGER"
    } else if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") {
        "TEXT"
    } else if t.contains("BLOB") || t.is_empty() {
        "BLOB"
    } else if t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB") {
        "REAL"
    } else {
        "NUMERIC"
    }
}

/// The undirected simple schema graph; `edges` is keyed by table indices, smaller first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemaGraph {
    pub tables: Vec<String>,
    pub edges: BTreeMap<(usize, usize), Vec<JoinLabel>>,
    /// Column names per table (same order as `tables`), for resolving unqualified columns.
    pub columns: Vec<Vec<String>>,
}

impl SchemaGraph {
    /// Builds G_S. Declared foreign keys are used when there are any; otherwise, with `infer`,
    /// the inferred ones, whose labels are marked `inferred`.
    pub fn build(schema: &Schema, infer: bool) -> SchemaGraph {
        let mut graph = SchemaGraph {
            tables: schema.tables.iter().map(|t| t.name.clone()).collect(),
            columns: schema
                .tables
                .iter()
                .map(|t| t.columns.iter().map(|c| c.name.clone()).collect())
                .collect(),
            edges: BTreeMap::new(),
        };
        let (keys, inferred) = if schema.foreign_keys.is_empty() && infer {
            (schema.inferred_foreign_keys(), true)
        } else {
            (schema.foreign_keys.clone(), false)
        };
        // PK–FK: every foreign key between two different tables (self-references are skipped).
        for fk in &keys {
            graph.add(fk.from.clone(), fk.to.clone(), inferred);
        }
        // FK–FK: two foreign keys of different tables referencing the same column.
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                if a.to.key() == b.to.key() {
                    graph.add(a.from.clone(), b.from.clone(), inferred);
                }
            }
        }
        graph
    }

    pub fn index(&self, table: &str) -> Option<usize> {
        self.tables
            .iter()
            .position(|t| t.eq_ignore_ascii_case(table))
    }

    fn add(&mut self, left: ColRef, right: ColRef, inferred: bool) {
        let (Some(a), Some(b)) = (self.index(&left.table), self.index(&right.table)) else {
            return;
        };
        if a == b {
            return;
        }
        let label = JoinLabel {
            left,
            right,
            inferred,
        };
        let labels = self.edges.entry((a.min(b), a.max(b))).or_default();
        if !labels.iter().any(|l| l.identity() == label.identity()) {
            labels.push(label);
        }
    }

    /// The labels between tables `a` and `b` (empty when not adjacent).
    pub fn labels(&self, a: usize, b: usize) -> &[JoinLabel] {
        self.edges
            .get(&(a.min(b), a.max(b)))
            .map_or(&[], Vec::as_slice)
    }

    /// Degree centrality of table `t` in G_S (number of adjacent tables).
    pub fn degree(&self, t: usize) -> usize {
        self.edges
            .keys()
            .filter(|(a, b)| *a == t || *b == t)
            .count()
    }

    /// Betweenness centrality of every table (Brandes' algorithm, unweighted, undirected):
    /// how many shortest paths between other tables pass through it.
    pub fn betweenness(&self) -> Vec<f64> {
        let n = self.tables.len();
        let neighbours: Vec<Vec<usize>> = (0..n)
            .map(|t| {
                (0..n)
                    .filter(|&u| u != t && !self.labels(t, u).is_empty())
                    .collect()
            })
            .collect();
        let mut centrality = vec![0.0; n];
        for source in 0..n {
            let mut order = Vec::with_capacity(n);
            let mut predecessors: Vec<Vec<usize>> = vec![Vec::new(); n];
            let mut paths = vec![0.0f64; n];
            let mut distance: Vec<Option<usize>> = vec![None; n];
            paths[source] = 1.0;
            distance[source] = Some(0);
            let mut queue = std::collections::VecDeque::from([source]);
            while let Some(v) = queue.pop_front() {
                order.push(v);
                for &w in &neighbours[v] {
                    let next = distance[v].map(|d| d + 1);
                    if distance[w].is_none() {
                        distance[w] = next;
                        queue.push_back(w);
                    }
                    if distance[w] == next {
                        paths[w] += paths[v];
                        predecessors[w].push(v);
                    }
                }
            }
            let mut dependency = vec![0.0f64; n];
            for &w in order.iter().rev() {
                for &v in &predecessors[w] {
                    dependency[v] += paths[v] / paths[w] * (1.0 + dependency[w]);
                }
                if w != source {
                    centrality[w] += dependency[w];
                }
            }
        }
        // Each undirected path was counted from both ends.
        centrality.iter().map(|c| c / 2.0).collect()
    }

    /// The edges whose labels were inferred, as `a–b` table pairs.
    pub fn inferred_edges(&self) -> Vec<(String, String)> {
        self.edges
            .iter()
            .filter(|(_, labels)| labels.iter().any(|l| l.inferred))
            .map(|((a, b), _)| (self.tables[*a].clone(), self.tables[*b].clone()))
            .collect()
    }

    pub fn has_column(&self, table: usize, column: &str) -> bool {
        self.columns[table]
            .iter()
            .any(|c| c.eq_ignore_ascii_case(column))
    }
}
