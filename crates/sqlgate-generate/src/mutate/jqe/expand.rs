//! Stages II–IV of JQE (spec §2.1–2.5): candidate tables, join condition combinations (JCCs),
//! the exact redundancy test, ranking, and isomorphism pruning with canonical forms.

use std::collections::HashMap;

use petgraph::graph::UnGraph;

use super::graph::{JoinLabel, SchemaGraph};
use super::query::Jqg;

/// A JCC: the added table and a non-empty set of labels, each to a table of the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jcc {
    /// The added table, as a schema table index.
    pub candidate: usize,
    /// (query table, label written with the candidate on the left), sorted by column keys.
    pub labels: Vec<(usize, JoinLabel)>,
}

impl Jcc {
    /// Distinct query tables the JCC joins to (= the number of new JQG edges).
    pub fn new_edges(&self) -> usize {
        let mut anchors: Vec<usize> = self.labels.iter().map(|(t, _)| *t).collect();
        anchors.sort_unstable();
        anchors.dedup();
        anchors.len()
    }

    /// The labels as `new.col = anchor.col` strings, sorted.
    pub fn label_strings(&self) -> Vec<String> {
        let mut labels: Vec<String> = self
            .labels
            .iter()
            .map(|(_, l)| {
                format!(
                    "{}.{} = {}.{}",
                    l.left.table, l.left.column, l.right.table, l.right.column
                )
            })
            .collect();
        labels.sort();
        labels
    }
}

/// Every candidate's label pool: tables adjacent in G_S to a query table and not in the query,
/// with all labels to the query's tables (spec §2.1).
pub fn candidates(schema: &SchemaGraph, jqg: &Jqg) -> Vec<(usize, Vec<(usize, JoinLabel)>)> {
    (0..schema.tables.len())
        .filter(|c| !jqg.nodes.contains(c))
        .filter_map(|c| {
            let mut pool: Vec<(usize, JoinLabel)> = jqg
                .nodes
                .iter()
                .flat_map(|&t| {
                    let name = &schema.tables[c];
                    schema
                        .labels(t, c)
                        .iter()
                        .map(move |l| (t, l.oriented(name)))
                })
                .collect();
            // A stable order, whatever order the database lists its keys in.
            pool.sort_by_key(|(_, l)| (l.left.key(), l.right.key()));
            (!pool.is_empty()).then_some((c, pool))
        })
        .collect()
}

/// Pools larger than this are cut: 2^m − 1 subsets would not be enumerable.
pub const MAX_POOL: usize = 12;

/// The non-empty subsets of each candidate's pool (spec §2.2), split into kept and redundant
/// JCCs.
pub fn jccs(schema: &SchemaGraph, jqg: &Jqg) -> (Vec<Jcc>, Vec<Jcc>) {
    let mut kept = Vec::new();
    let mut redundant = Vec::new();
    for (candidate, mut pool) in candidates(schema, jqg) {
        pool.truncate(MAX_POOL);
        for mask in 1u32..(1 << pool.len()) {
            let labels: Vec<(usize, JoinLabel)> = (0..pool.len())
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| pool[i].clone())
                .collect();
            let jcc = Jcc { candidate, labels };
            if is_redundant(jqg, &jcc) {
                redundant.push(jcc);
            } else {
                kept.push(jcc);
            }
        }
    }
    (kept, redundant)
}

/// Spec §2.3: a JCC is redundant iff one of its labels is implied by transitivity of the
/// query's join equalities and the JCC's other labels (union-find over column keys).
pub fn is_redundant(jqg: &Jqg, jcc: &Jcc) -> bool {
    let query: Vec<&JoinLabel> = jqg.conditions().collect();
    (0..jcc.labels.len()).any(|skip| {
        let mut sets = UnionFind::default();
        let others = jcc
            .labels
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != skip)
            .map(|(_, (_, l))| l);
        for label in query.iter().copied().chain(others) {
            sets.union(&label.left.key(), &label.right.key());
        }
        let label = &jcc.labels[skip].1;
        sets.find(&label.left.key()) == sets.find(&label.right.key())
    })
}

#[derive(Default)]
struct UnionFind {
    parent: HashMap<String, String>,
}

impl UnionFind {
    fn find(&mut self, key: &str) -> String {
        let mut root = key.to_string();
        while let Some(parent) = self.parent.get(&root).filter(|p| **p != root) {
            root = parent.clone();
        }
        root
    }

    fn union(&mut self, a: &str, b: &str) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent.insert(ra, rb);
        }
    }
}

/// Centrality of the added table in the schema graph, as a ranking preference (spec §2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Centrality {
    /// Number of tables the added table joins with.
    Degree,
    /// Share of shortest paths between other tables through the added table.
    Betweenness,
}

/// How JCCs are ranked: complexity descending by default (the thesis default); optionally a
/// centrality term, after complexity or before it, descending unless `ascending`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ranking {
    /// Fewest new joins first instead of most.
    pub complexity_ascending: bool,
    /// Also rank by the added table's centrality.
    pub centrality: Option<Centrality>,
    /// Least central tables first instead of most.
    pub centrality_ascending: bool,
    /// Rank by centrality before complexity.
    pub centrality_first: bool,
}

/// Sort order of JCCs (spec §2.4): complexity (new edges, then conditions) and the optional
/// centrality term in the chosen order and directions, then the candidate name and the label
/// strings ascending.
pub fn rank(schema: &SchemaGraph, jccs: &mut [Jcc], ranking: &Ranking) {
    let centrality: Vec<f64> = match ranking.centrality {
        Some(Centrality::Degree) => (0..schema.tables.len())
            .map(|t| schema.degree(t) as f64)
            .collect(),
        Some(Centrality::Betweenness) => schema.betweenness(),
        None => vec![0.0; schema.tables.len()],
    };
    let directed = |order: std::cmp::Ordering, ascending: bool| {
        if ascending {
            order
        } else {
            order.reverse()
        }
    };
    jccs.sort_by(|a, b| {
        let complexity = directed(
            (a.new_edges(), a.labels.len()).cmp(&(b.new_edges(), b.labels.len())),
            ranking.complexity_ascending,
        );
        let central = directed(
            centrality[a.candidate].total_cmp(&centrality[b.candidate]),
            ranking.centrality_ascending,
        );
        let (first, second) = if ranking.centrality_first {
            (central, complexity)
        } else {
            (complexity, central)
        };
        first
            .then(second)
            .then_with(|| {
                schema.tables[a.candidate]
                    .to_lowercase()
                    .cmp(&schema.tables[b.candidate].to_lowercase())
            })
            .then_with(|| a.label_strings().cmp(&b.label_strings()))
    });
}

/// An unlabeled simple graph: `n` nodes and edges between node positions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// Number of nodes.
    pub n: usize,
    /// Edges, as pairs of node positions.
    pub edges: Vec<(usize, usize)>,
}

impl Shape {
    /// The JQG's shape, with `extra` (a new node joined to some query tables) when given.
    pub fn of(jqg: &Jqg, extra: Option<&Jcc>) -> Shape {
        let mut nodes = jqg.nodes.clone();
        let mut pairs: Vec<(usize, usize)> = jqg.edges.keys().copied().collect();
        if let Some(jcc) = extra {
            nodes.push(jcc.candidate);
            pairs.extend(jcc.labels.iter().map(|(t, _)| (*t, jcc.candidate)));
        }
        let position = |t: usize| nodes.iter().position(|&n| n == t).unwrap_or(0);
        let mut edges: Vec<(usize, usize)> = pairs
            .into_iter()
            .map(|(a, b)| {
                let (a, b) = (position(a), position(b));
                (a.min(b), a.max(b))
            })
            .collect();
        edges.sort_unstable();
        edges.dedup();
        Shape {
            n: nodes.len(),
            edges,
        }
    }

    /// Average degree 2|E|/|V|.
    pub fn average_degree(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            2.0 * self.edges.len() as f64 / self.n as f64
        }
    }

    /// Whether the graph has a cycle: |E| > |V| − components.
    pub fn is_cyclic(&self) -> bool {
        let mut root: Vec<usize> = (0..self.n).collect();
        fn find(root: &mut [usize], mut x: usize) -> usize {
            while root[x] != x {
                x = root[x];
            }
            x
        }
        self.edges.iter().any(|&(a, b)| {
            let (ra, rb) = (find(&mut root, a), find(&mut root, b));
            root[ra] = rb;
            ra == rb
        })
    }

    /// Exact canonical form for up to `CANONICAL_MAX` nodes: the lexicographically smallest
    /// upper-triangle adjacency bitstring over all node permutations.
    fn canonical(&self) -> Option<u64> {
        if self.n > CANONICAL_MAX {
            return None;
        }
        let mut best = u64::MAX;
        let mut perm: Vec<usize> = (0..self.n).collect();
        permutations(&mut perm, 0, &mut |p| {
            let mut bits = 0u64;
            for &(a, b) in &self.edges {
                let (x, y) = (p[a].min(p[b]), p[a].max(p[b]));
                bits |= 1 << (y * (y - 1) / 2 + x);
            }
            best = best.min(bits);
        });
        Some(best)
    }

    fn degrees(&self) -> Vec<usize> {
        let mut degrees = vec![0; self.n];
        for &(a, b) in &self.edges {
            degrees[a] += 1;
            degrees[b] += 1;
        }
        degrees.sort_unstable();
        degrees
    }

    fn petgraph(&self) -> UnGraph<(), ()> {
        UnGraph::from_edges(self.edges.iter().map(|&(a, b)| (a as u32, b as u32)))
    }
}

/// 8! = 40,320 permutations: fast enough for every pattern of real queries.
const CANONICAL_MAX: usize = 8;

fn permutations(items: &mut Vec<usize>, k: usize, visit: &mut impl FnMut(&[usize])) {
    if k == items.len() {
        visit(items);
        return;
    }
    for i in k..items.len() {
        items.swap(k, i);
        permutations(items, k + 1, visit);
        items.swap(k, i);
    }
}

/// Bucket of a shape: the canonical form, or for large graphs an invariant whose bucket is then
/// searched with VF2 (petgraph).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum PatternKey {
    Canonical(usize, u64),
    Invariant(usize, Vec<usize>),
}

/// How many queries of one database have each join pattern (up to isomorphism).
#[derive(Default)]
pub struct PatternCounts {
    buckets: HashMap<PatternKey, Vec<(Shape, usize)>>,
}

impl PatternCounts {
    fn key(shape: &Shape) -> PatternKey {
        match shape.canonical() {
            Some(bits) => PatternKey::Canonical(shape.n, bits),
            None => PatternKey::Invariant(shape.n, shape.degrees()),
        }
    }

    fn slot<'a>(bucket: &'a mut Vec<(Shape, usize)>, shape: &Shape) -> &'a mut usize {
        let found = bucket.iter().position(|(other, _)| {
            other.n == shape.n
                && (other.n <= CANONICAL_MAX
                    || petgraph::algo::is_isomorphic(&other.petgraph(), &shape.petgraph()))
        });
        let index = found.unwrap_or_else(|| {
            bucket.push((shape.clone(), 0));
            bucket.len() - 1
        });
        &mut bucket[index].1
    }

    /// How many queries have `shape`'s pattern so far.
    pub fn count(&mut self, shape: &Shape) -> usize {
        let bucket = self.buckets.entry(Self::key(shape)).or_default();
        *Self::slot(bucket, shape)
    }

    /// Counts one more query with `shape`'s pattern.
    pub fn add(&mut self, shape: &Shape) {
        let bucket = self.buckets.entry(Self::key(shape)).or_default();
        *Self::slot(bucket, shape) += 1;
    }
}
