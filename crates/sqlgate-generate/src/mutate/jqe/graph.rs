//! The schema graph G_S (spec `jqe-tqa.md` §1.1): tables as nodes, one undirected edge per table
//! pair carrying every admissible equi-join label, from declared PK–FK and FK–FK pairs, or from
//! inferred keys when a database declares no foreign key at all.

use std::collections::BTreeMap;

pub use sqlgate_eval::exec::schema::{ColRef, Column, ForeignKey, Schema, Table};

/// An equi-join `left = right`, `inferred` when it comes from key inference, not a declaration.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct JoinLabel {
    /// One side of the equality.
    pub left: ColRef,
    /// The other side.
    pub right: ColRef,
    /// From key inference rather than a declared foreign key.
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

/// The column a table is identified by: its single declared primary key, or else a column
/// named `id`, `<table>_id` or `<table>_name` (the table name also without a plural `s`).
fn key_column<'a>(schema: &'a Schema, table: &'a Table) -> Option<&'a Column> {
    if let Some(key) = schema.single_primary_key(&table.name) {
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
pub fn inferred_foreign_keys(schema: &Schema) -> Vec<ForeignKey> {
    let mut inferred = Vec::new();
    for target in &schema.tables {
        let Some(key) = key_column(schema, target) else {
            continue;
        };
        let generic = key.name.eq_ignore_ascii_case("id");
        let stems = stems(&target.name);
        for source in schema.tables.iter().filter(|t| t.name != target.name) {
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
    /// Table names, in schema order; nodes are their indices.
    pub tables: Vec<String>,
    /// The equi-joins admissible between each pair of tables.
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
            (inferred_foreign_keys(schema), true)
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

    /// The index of `table`, compared case-insensitively.
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

    /// Whether `table` has a column named `column` (case-insensitively).
    pub fn has_column(&self, table: usize, column: &str) -> bool {
        self.columns[table]
            .iter()
            .any(|c| c.eq_ignore_ascii_case(column))
    }
}
