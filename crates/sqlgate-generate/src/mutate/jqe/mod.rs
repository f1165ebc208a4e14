//! Join Query Expansion (spec `jqe-tqa.md` §1–2): each gold query gains one table adjacent in the
//! schema graph, joined by a non-redundant combination of admissible equi-joins; an expansion is
//! kept when it executes with rows and its join pattern is new for its database (up to
//! isomorphism, `per_pattern` queries per pattern, the originals counting as taken). Running
//! `rounds` rounds feeds each round's retained expansions back in as seeds.

pub mod expand;
pub mod graph;
pub mod nl;
pub mod query;
pub mod rewrite;
pub mod synth;

#[cfg(test)]
mod tests;

use std::path::Path;

use serde::Serialize;
use sqlparser::ast::{Query, SetExpr};

use expand::{jccs, rank, PatternCounts, Ranking, Shape};
use graph::SchemaGraph;
use query::Jqg;
use sqlgate_eval::exec::Engine;
use sqlgate_eval::sqltext;

/// User preferences (spec §2.4), defaults as in the thesis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Rounds of expansion: round r expands round r-1's retained queries.
    pub rounds: usize,
    /// Queries kept per join pattern and database, the originals counting.
    pub per_pattern: usize,
    /// Cap on the number of retained expansions of [`expand_database`].
    pub budget: Option<usize>,
    /// Infer join keys when a database declares no foreign key.
    pub infer_keys: bool,
    /// How JCCs are ranked before pattern pruning.
    pub ranking: Ranking,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            rounds: 1,
            per_pattern: 1,
            budget: None,
            infer_keys: true,
            ranking: Ranking::default(),
        }
    }
}

/// A gold NL–SQL pair to expand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seed {
    /// The case's id.
    pub id: String,
    /// Its question.
    pub question: String,
    /// Its evidence, carried to the expansions unchanged.
    pub evidence: Option<String>,
    /// Its gold query.
    pub sql: String,
}

/// The join pattern of an expanded query: its tables and joined table pairs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pattern {
    /// The tables joined, in order of appearance.
    pub tables: Vec<String>,
    /// The joined table pairs.
    pub edges: Vec<(String, String)>,
    /// Whether the join graph has a cycle.
    pub cyclic: bool,
}

/// One retained expansion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Expansion {
    /// A stable id: `<seed>::jqe::<table>::<rank>`.
    pub id: String,
    /// The seed it expands.
    pub seed_id: String,
    /// The database it runs on.
    pub db: String,
    /// The round that produced it, from 1.
    pub round: usize,
    /// The expanded query.
    pub sql: String,
    /// Its question: the template rewrite, or the model's when accepted.
    pub question: String,
    /// The seed's evidence.
    pub evidence: Option<String>,
    /// The table joined in.
    pub added_table: String,
    /// `new.col = anchor.col`, sorted.
    pub conditions: Vec<String>,
    /// Whether a condition comes from key inference rather than a declared foreign key.
    pub inferred: bool,
    /// Its join pattern.
    pub pattern: Pattern,
}

/// Average degree and cyclic share of a set of join graphs (spec §2.10).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ShapeStats {
    /// Join graphs counted.
    pub count: usize,
    degree_sum: f64,
    cyclic: usize,
}

impl ShapeStats {
    fn add(&mut self, shape: &Shape) {
        self.count += 1;
        self.degree_sum += shape.average_degree();
        self.cyclic += usize::from(shape.is_cyclic());
    }

    fn merge(&mut self, other: &ShapeStats) {
        self.count += other.count;
        self.degree_sum += other.degree_sum;
        self.cyclic += other.cyclic;
    }

    /// Mean over the graphs of their average node degree.
    pub fn average_degree(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.degree_sum / self.count as f64
        }
    }

    /// Share of the graphs with a cycle, in [0, 1].
    pub fn cyclic_share(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.cyclic as f64 / self.count as f64
        }
    }
}

/// Counts of a run. `generated` = valid expansions (executed with rows), `pruned` = valid
/// ones whose pattern was taken, `retained` = written.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Seeds with no join graph (not a plain SELECT, unknown table).
    pub seeds_unparsed: usize,
    /// JCCs dropped as redundant.
    pub redundant: usize,
    /// Expansions that failed or returned no rows.
    pub invalid: usize,
    /// Valid expansions.
    pub generated: usize,
    /// Valid expansions whose pattern was already taken.
    pub pruned: usize,
    /// Expansions written.
    pub retained: usize,
    /// Shapes of the seeds' join graphs.
    pub original: ShapeStats,
    /// Shapes of the valid expansions.
    pub generated_shapes: ShapeStats,
    /// Shapes of the written expansions.
    pub retained_shapes: ShapeStats,
}

impl Stats {
    /// Adds another database's counts.
    pub fn merge(&mut self, other: &Stats) {
        self.seeds_unparsed += other.seeds_unparsed;
        self.redundant += other.redundant;
        self.invalid += other.invalid;
        self.generated += other.generated;
        self.pruned += other.pruned;
        self.retained += other.retained;
        self.original.merge(&other.original);
        self.generated_shapes.merge(&other.generated_shapes);
        self.retained_shapes.merge(&other.retained_shapes);
    }
}

/// The expansions of one database's seeds, in seed order then rank order.
#[derive(Debug, Clone, Default)]
pub struct DbOutcome {
    /// The retained expansions.
    pub expansions: Vec<Expansion>,
    /// What the run counted.
    pub stats: Stats,
}

/// A seed with its parsed tree and join graph.
struct Parsed {
    seed: Seed,
    query: Query,
    jqg: Jqg,
}

/// Runs JQE over the seeds of database `db` (file `db_path`), executing candidates with
/// `engine`. The seeds are the database's whole evaluation set: their patterns count as taken.
pub fn expand_database(
    db: &str,
    db_path: &Path,
    schema: &SchemaGraph,
    seeds: &[Seed],
    options: &Options,
    engine: &Engine,
) -> DbOutcome {
    // Trees of the seeds and their expansions are kept, cloned, printed and dropped
    // recursively: all of it runs on a stack large enough for the deepest seed.
    let deepest = seeds
        .iter()
        .filter_map(|seed| sqltext::check(&seed.sql).ok())
        .map(|checked| checked.depth)
        .max()
        .unwrap_or(0);
    sqltext::run(deepest, || {
        expand(db, db_path, schema, seeds, options, engine)
    })
    .unwrap_or_else(|_| {
        let mut outcome = DbOutcome::default();
        outcome.stats.seeds_unparsed = seeds.len();
        outcome
    })
}

fn expand(
    db: &str,
    db_path: &Path,
    schema: &SchemaGraph,
    seeds: &[Seed],
    options: &Options,
    engine: &Engine,
) -> DbOutcome {
    let mut outcome = DbOutcome::default();
    let mut taken = PatternCounts::default();
    let mut frontier = Vec::new();
    for seed in seeds {
        match parse(seed, schema) {
            Some(parsed) => {
                let shape = Shape::of(&parsed.jqg, None);
                outcome.stats.original.add(&shape);
                taken.add(&shape);
                frontier.push(parsed);
            }
            None => outcome.stats.seeds_unparsed += 1,
        }
    }
    for round in 1..=options.rounds {
        let mut next = Vec::new();
        for parsed in &frontier {
            if options
                .budget
                .is_some_and(|b| outcome.expansions.len() >= b)
            {
                return outcome;
            }
            let (mut kept, redundant) = jccs(schema, &parsed.jqg);
            outcome.stats.redundant += redundant.len();
            rank(schema, &mut kept, &options.ranking);
            for (rank_index, jcc) in kept.iter().enumerate() {
                if options
                    .budget
                    .is_some_and(|b| outcome.expansions.len() >= b)
                {
                    break;
                }
                let Some((query, sql)) = synthesize_valid(parsed, schema, jcc, db_path, engine)
                else {
                    outcome.stats.invalid += 1;
                    continue;
                };
                outcome.stats.generated += 1;
                let shape = Shape::of(&parsed.jqg, Some(jcc));
                outcome.stats.generated_shapes.add(&shape);
                if taken.count(&shape) >= options.per_pattern {
                    outcome.stats.pruned += 1;
                    continue;
                }
                taken.add(&shape);
                outcome.stats.retained += 1;
                outcome.stats.retained_shapes.add(&shape);
                let expansion = expansion(db, round, rank_index, parsed, schema, jcc, &shape, sql);
                if let Some(jqg) = Jqg::of(&query, schema)
                    .ok()
                    .filter(|_| round < options.rounds)
                {
                    next.push(Parsed {
                        seed: Seed {
                            id: expansion.id.clone(),
                            question: expansion.question.clone(),
                            evidence: expansion.evidence.clone(),
                            sql: expansion.sql.clone(),
                        },
                        query,
                        jqg,
                    });
                }
                outcome.expansions.push(expansion);
            }
        }
        frontier = next;
    }
    outcome
}

fn parse(seed: &Seed, schema: &SchemaGraph) -> Option<Parsed> {
    let query = crate::mutate::parse_query(&seed.sql).ok()?;
    let jqg = Jqg::of(&query, schema).ok()?;
    Some(Parsed {
        seed: seed.clone(),
        query,
        jqg,
    })
}

/// The expanded SQL when it parses again, executes and returns at least one row.
fn synthesize_valid(
    parsed: &Parsed,
    schema: &SchemaGraph,
    jcc: &expand::Jcc,
    db_path: &Path,
    engine: &Engine,
) -> Option<(Query, String)> {
    let (query, _) = synth::synthesize(&parsed.query, &parsed.jqg, schema, jcc)?;
    let sql = query.to_string();
    let reparsed = crate::mutate::parse_query(&sql).ok()?;
    let rows = engine.execute(db_path, &sql).result.ok()?;
    (!rows.rows.is_empty()).then_some((reparsed, sql))
}

#[allow(clippy::too_many_arguments)]
fn expansion(
    db: &str,
    round: usize,
    rank_index: usize,
    parsed: &Parsed,
    schema: &SchemaGraph,
    jcc: &expand::Jcc,
    shape: &Shape,
    sql: String,
) -> Expansion {
    let table = schema.tables[jcc.candidate].clone();
    let mut tables: Vec<String> = parsed
        .jqg
        .nodes
        .iter()
        .map(|&t| schema.tables[t].clone())
        .collect();
    tables.push(table.clone());
    let distinct = matches!(parsed.query.body.as_ref(), SetExpr::Select(s) if s.distinct.is_some());
    Expansion {
        id: format!("{}::jqe::{}::{}", parsed.seed.id, table, rank_index + 1),
        seed_id: parsed.seed.id.clone(),
        db: db.to_string(),
        round,
        sql,
        question: nl::question(&parsed.seed.question, schema, jcc, distinct),
        evidence: parsed.seed.evidence.clone(),
        added_table: table,
        conditions: jcc.label_strings(),
        inferred: jcc.labels.iter().any(|(_, l)| l.inferred),
        pattern: Pattern {
            edges: shape
                .edges
                .iter()
                .map(|&(a, b)| (tables[a].clone(), tables[b].clone()))
                .collect(),
            cyclic: shape.is_cyclic(),
            tables,
        },
    }
}
