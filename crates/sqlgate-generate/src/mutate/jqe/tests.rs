use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::expand::{is_redundant, jccs, Jcc, PatternCounts, Ranking, Shape};
use super::graph::SchemaGraph;
use super::query::Jqg;
use super::*;
use sqlgate_eval::exec::Limits;

/// The four `CREATE TABLE` statements of the thesis (§3.1.1), with a few rows.
const TOXICOLOGY: &str = "
CREATE TABLE molecule (molecule_id TEXT PRIMARY KEY, label TEXT);
CREATE TABLE atom (atom_id TEXT PRIMARY KEY, molecule_id TEXT REFERENCES molecule (molecule_id), element TEXT);
CREATE TABLE bond (bond_id TEXT PRIMARY KEY, molecule_id TEXT REFERENCES molecule (molecule_id), bond_type TEXT);
CREATE TABLE connected (atom_id TEXT REFERENCES atom (atom_id), atom_id2 TEXT REFERENCES atom (atom_id),
    bond_id TEXT REFERENCES bond (bond_id), PRIMARY KEY (atom_id, atom_id2));
INSERT INTO molecule VALUES ('m1', '-'), ('m2', '+');
INSERT INTO atom VALUES ('a1', 'm1', 'cl'), ('a2', 'm1', 'c'), ('a3', 'm2', 'cl');
INSERT INTO bond VALUES ('b1', 'm1', '-');
INSERT INTO connected VALUES ('a1', 'a2', 'b1'), ('a1', 'a1', 'b1');
";

const WORKED_EXAMPLE: &str = "SELECT COUNT(DISTINCT molecule.molecule_id) FROM molecule \
    JOIN atom ON atom.molecule_id = molecule.molecule_id \
    WHERE molecule.label = '-' AND atom.element = 'cl'";

fn database(dir: &Path, script: &str) -> PathBuf {
    let path = dir.join("db.sqlite");
    Connection::open(&path)
        .unwrap()
        .execute_batch(script)
        .unwrap();
    path
}

fn graph_of(script: &str, infer: bool) -> SchemaGraph {
    let dir = tempfile::tempdir().unwrap();
    SchemaGraph::build(
        &sqlgate_engine_sqlite::read_schema(&database(dir.path(), script)).unwrap(),
        infer,
    )
}

fn jqg(sql: &str, schema: &SchemaGraph) -> (Query, Jqg) {
    let query = crate::mutate::parse_query(sql).unwrap();
    let jqg = Jqg::of(&query, schema).unwrap();
    (query, jqg)
}

/// The JCCs as `table:{label; label}` strings.
fn describe(schema: &SchemaGraph, jccs: &[Jcc]) -> Vec<String> {
    let mut all: Vec<String> = jccs
        .iter()
        .map(|j| {
            format!(
                "{}:{{{}}}",
                schema.tables[j.candidate],
                j.label_strings().join("; ")
            )
        })
        .collect();
    all.sort();
    all
}

#[test]
fn toxicology_schema_graph_has_four_tables_and_five_edges() {
    let schema = graph_of(TOXICOLOGY, true);
    assert_eq!(schema.tables.len(), 4);
    let labels = |a: &str, b: &str| {
        schema
            .labels(schema.index(a).unwrap(), schema.index(b).unwrap())
            .len()
    };
    assert_eq!(schema.edges.len(), 5);
    assert_eq!(labels("atom", "molecule"), 1);
    assert_eq!(labels("bond", "molecule"), 1);
    assert_eq!(labels("atom", "connected"), 2);
    assert_eq!(labels("bond", "connected"), 1);
    assert_eq!(labels("atom", "bond"), 1, "FK–FK on molecule_id");
    assert!(
        schema.inferred_edges().is_empty(),
        "declared keys: nothing inferred"
    );
}

#[test]
fn toxicology_seed_yields_the_specs_jccs_and_rejects_the_transitive_one() {
    let schema = graph_of(TOXICOLOGY, true);
    let (_, graph) = jqg(WORKED_EXAMPLE, &schema);
    assert_eq!(graph.nodes.len(), 2);
    assert_eq!(graph.edges.len(), 1);
    let (kept, redundant) = jccs(&schema, &graph);
    let jc1 = "bond.molecule_id = molecule.molecule_id";
    let jc2 = "bond.molecule_id = atom.molecule_id";
    let jc3 = "connected.atom_id = atom.atom_id";
    let jc4 = "connected.atom_id2 = atom.atom_id";
    let mut expected_kept = vec![
        format!("bond:{{{jc1}}}"),
        format!("bond:{{{jc2}}}"),
        format!("connected:{{{jc3}}}"),
        format!("connected:{{{jc4}}}"),
        format!("connected:{{{jc3}; {jc4}}}"),
    ];
    expected_kept.sort();
    assert_eq!(describe(&schema, &kept), expected_kept);
    let mut pair = [jc1, jc2];
    pair.sort();
    assert_eq!(
        describe(&schema, &redundant),
        vec![format!("bond:{{{}}}", pair.join("; "))]
    );
    // All five valid JCCs give the same shape: a 3-node path.
    let mut counts = PatternCounts::default();
    for jcc in &kept {
        counts.add(&Shape::of(&graph, Some(jcc)));
    }
    assert_eq!(counts.count(&Shape::of(&graph, Some(&kept[0]))), 5);
}

#[test]
fn redundancy_is_implication_not_a_shared_attribute() {
    // Spec §2.3: qualifying joined to races on raceId and to drivers on driverId closes a cycle
    // whose two edges at races share races.raceId, yet nothing is implied.
    let schema = graph_of(
        "CREATE TABLE races (raceId INTEGER PRIMARY KEY);
         CREATE TABLE drivers (driverId INTEGER PRIMARY KEY);
         CREATE TABLE results (resultId INTEGER PRIMARY KEY, raceId INTEGER REFERENCES races (raceId),
             driverId INTEGER REFERENCES drivers (driverId));
         CREATE TABLE qualifying (qualifyId INTEGER PRIMARY KEY, raceId INTEGER REFERENCES races (raceId),
             driverId INTEGER REFERENCES drivers (driverId));",
        true,
    );
    let (_, graph) = jqg(
        "SELECT COUNT(*) FROM races JOIN results ON results.raceId = races.raceId \
         JOIN drivers ON drivers.driverId = results.driverId",
        &schema,
    );
    let (kept, redundant) = jccs(&schema, &graph);
    let kept = describe(&schema, &kept);
    assert!(kept.contains(
        &"qualifying:{qualifying.driverId = drivers.driverId; qualifying.raceId = races.raceId}"
            .to_string()
    ));
    // raceId to both races and results: implied through results.raceId = races.raceId.
    assert!(describe(&schema, &redundant).contains(
        &"qualifying:{qualifying.raceId = races.raceId; qualifying.raceId = results.raceId}"
            .to_string()
    ));
    assert!(redundant.iter().all(|j| is_redundant(&graph, j)));
}

fn seed(id: &str, sql: &str) -> Seed {
    Seed {
        id: id.into(),
        question: "How many molecules with label '-' have a chlorine atom?".into(),
        evidence: None,
        sql: sql.into(),
    }
}

fn run(per_pattern: usize, seeds: &[Seed]) -> DbOutcome {
    let options = Options {
        per_pattern,
        ..Options::default()
    };
    run_with(&options, seeds)
}

fn run_with(options: &Options, seeds: &[Seed]) -> DbOutcome {
    let dir = tempfile::tempdir().unwrap();
    let path = database(dir.path(), TOXICOLOGY);
    let schema = SchemaGraph::build(&sqlgate_engine_sqlite::read_schema(&path).unwrap(), true);
    expand_database(
        "toxicology",
        &path,
        &schema,
        seeds,
        options,
        &Engine::new(Limits::default(), sqlgate_engine_sqlite::files()),
    )
}

#[test]
fn isomorphic_expansions_keep_only_the_first_ranked_with_n_1() {
    let outcome = run(1, &[seed("q1", WORKED_EXAMPLE)]);
    assert_eq!(outcome.stats.redundant, 1);
    assert_eq!(outcome.stats.generated, 5);
    assert_eq!(outcome.stats.pruned, 4);
    assert_eq!(outcome.expansions.len(), 1);
    let kept = &outcome.expansions[0];
    // Complexity descending: the two-condition JCC ranks first.
    assert_eq!(kept.added_table, "connected");
    assert_eq!(
        kept.conditions,
        [
            "connected.atom_id = atom.atom_id",
            "connected.atom_id2 = atom.atom_id"
        ]
    );
    assert_eq!(
        kept.sql,
        "SELECT COUNT(DISTINCT molecule.molecule_id) FROM molecule \
         JOIN atom ON atom.molecule_id = molecule.molecule_id \
         INNER JOIN connected ON connected.atom_id = atom.atom_id AND connected.atom_id2 = atom.atom_id \
         WHERE molecule.label = '-' AND atom.element = 'cl'"
    );
    assert!(
        kept.question.contains("related connected"),
        "{}",
        kept.question
    );
    assert_eq!(kept.pattern.tables, ["molecule", "atom", "connected"]);
    assert!(!kept.pattern.cyclic);
    assert_eq!(run(2, &[seed("q1", WORKED_EXAMPLE)]).expansions.len(), 2);
    // Ascending complexity: a single-condition JCC first, the first in name and label order.
    let simplest = Options {
        ranking: Ranking {
            complexity_ascending: true,
            ..Ranking::default()
        },
        ..Options::default()
    };
    let kept = &run_with(&simplest, &[seed("q1", WORKED_EXAMPLE)]).expansions;
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].conditions, ["bond.molecule_id = atom.molecule_id"]);
}

#[test]
fn deep_seeds_are_unparsed_or_expanded_on_a_large_stack() {
    // Issue 11 item 1: a seed far past the depth limit is counted as unparsed; one deep but
    // within it is expanded like any other (its trees live on a thread with a large stack).
    let too_deep = format!(
        "SELECT COUNT(*) FROM molecule WHERE molecule.label = '-'{}",
        " AND 1".repeat(20_000)
    );
    let deep = format!(
        "SELECT COUNT(*) FROM molecule WHERE molecule.label = '-'{}",
        " AND 1 = 1".repeat(400)
    );
    let outcome = run(1, &[seed("q1", &too_deep), seed("q2", &deep)]);
    assert_eq!(outcome.stats.seeds_unparsed, 1);
    assert!(!outcome.expansions.is_empty());
    assert!(outcome.expansions.iter().all(|e| e.seed_id == "q2"));
}

#[test]
fn outer_join_conditions_are_join_edges() {
    let schema = graph_of(TOXICOLOGY, true);
    let (_, graph) = jqg(
        "SELECT m.label FROM molecule AS m LEFT JOIN atom AS a ON a.molecule_id = m.molecule_id",
        &schema,
    );
    assert_eq!(graph.edges.len(), 1);
}

#[test]
fn patterns_of_the_originals_count_as_taken() {
    // A second original that already is a 3-node path: no expansion of the seed is new.
    let path3 =
        "SELECT COUNT(*) FROM molecule JOIN atom ON atom.molecule_id = molecule.molecule_id \
                 JOIN bond ON bond.molecule_id = molecule.molecule_id";
    let outcome = run(1, &[seed("q1", WORKED_EXAMPLE), seed("q2", path3)]);
    assert!(outcome
        .expansions
        .iter()
        .all(|e| e.seed_id == "q2" && e.pattern.tables.len() == 4));
    assert_eq!(outcome.stats.original.count, 2);
}

#[test]
fn synthesis_qualifies_columns_expands_star_and_continues_aliases() {
    let schema = graph_of(TOXICOLOGY, true);
    let expand = |sql: &str, table: &str| {
        let (query, graph) = jqg(sql, &schema);
        let (kept, _) = jccs(&schema, &graph);
        let jcc = kept
            .iter()
            .find(|j| schema.tables[j.candidate] == table && j.labels.len() == 1)
            .unwrap();
        synth::synthesize(&query, &graph, &schema, jcc)
            .unwrap()
            .0
            .to_string()
    };
    assert_eq!(
        expand("SELECT label FROM molecule WHERE label = '-'", "atom"),
        "SELECT molecule.label FROM molecule INNER JOIN atom ON atom.molecule_id = molecule.molecule_id WHERE molecule.label = '-'"
    );
    assert_eq!(
        expand(
            "SELECT COUNT(*) AS label FROM molecule GROUP BY molecule.label ORDER BY label",
            "atom"
        ),
        "SELECT COUNT(*) AS label FROM molecule INNER JOIN atom ON atom.molecule_id = molecule.molecule_id \
         GROUP BY molecule.label ORDER BY label"
    );
    // The worked example (ii) of spec §2.9: bond joined through atom.
    assert_eq!(
        expand(WORKED_EXAMPLE, "bond"),
        "SELECT COUNT(DISTINCT molecule.molecule_id) FROM molecule \
         JOIN atom ON atom.molecule_id = molecule.molecule_id \
         INNER JOIN bond ON bond.molecule_id = atom.molecule_id \
         WHERE molecule.label = '-' AND atom.element = 'cl'"
    );
    assert_eq!(
        expand("SELECT * FROM molecule", "bond"),
        "SELECT molecule.* FROM molecule INNER JOIN bond ON bond.molecule_id = molecule.molecule_id"
    );
    assert_eq!(
        expand(
            "SELECT T1.label FROM molecule AS T1 JOIN bond AS T2 ON T1.molecule_id = T2.molecule_id",
            "connected"
        ),
        "SELECT T1.label FROM molecule AS T1 JOIN bond AS T2 ON T1.molecule_id = T2.molecule_id \
         INNER JOIN connected AS T3 ON T3.bond_id = T2.bond_id"
    );
}

#[test]
fn subquery_columns_stay_unqualified_and_self_joins_collapse() {
    let schema = graph_of(TOXICOLOGY, true);
    let (_, graph) = jqg(
        "SELECT a.atom_id FROM atom AS a JOIN atom AS b ON a.molecule_id = b.molecule_id \
         WHERE a.molecule_id IN (SELECT molecule_id FROM bond)",
        &schema,
    );
    assert_eq!(
        graph.nodes.len(),
        1,
        "self-join is one node; subquery tables are out of scope"
    );
    assert!(graph.edges.is_empty());
}

const NO_KEYS: &str = "
CREATE TABLE restaurant (id INTEGER, name TEXT, city_name TEXT);
CREATE TABLE location (restaurant_id INTEGER, street_name TEXT, city_name TEXT);
CREATE TABLE city (city_name TEXT, state_name TEXT);
";

#[test]
fn keys_are_inferred_only_when_none_are_declared_and_inference_is_on() {
    let schema = graph_of(NO_KEYS, true);
    let pair = |a: &str, b: &str| {
        let mut labels: Vec<String> = schema
            .labels(schema.index(a).unwrap(), schema.index(b).unwrap())
            .iter()
            .map(|l| {
                format!(
                    "{} = {}",
                    l.oriented(a).left.key(),
                    l.oriented(a).right.key()
                )
            })
            .collect();
        labels.sort();
        labels
    };
    // `<table>_id` to a generic `id`, plus FK–FK through the inferred key city.city_name.
    assert_eq!(
        pair("location", "restaurant"),
        [
            "location.city_name = restaurant.city_name",
            "location.restaurant_id = restaurant.id"
        ]
    );
    assert_eq!(
        pair("restaurant", "city"),
        ["restaurant.city_name = city.city_name"]
    );
    assert_eq!(schema.inferred_edges().len(), 3);
    assert!(schema.edges.values().flatten().all(|l| l.inferred));
    assert!(graph_of(NO_KEYS, false).edges.is_empty());
}

#[test]
fn canonical_forms_and_large_graphs_compare_up_to_isomorphism() {
    let shape = |n, edges: &[(usize, usize)]| Shape {
        n,
        edges: edges.to_vec(),
    };
    let mut counts = PatternCounts::default();
    counts.add(&shape(3, &[(0, 1), (1, 2)]));
    assert_eq!(counts.count(&shape(3, &[(0, 2), (1, 2)])), 1);
    assert_eq!(counts.count(&shape(3, &[(0, 1), (1, 2), (0, 2)])), 0);
    let cycle = |order: &[usize]| {
        let edges: Vec<(usize, usize)> = (0..order.len())
            .map(|i| {
                let (a, b) = (order[i], order[(i + 1) % order.len()]);
                (a.min(b), a.max(b))
            })
            .collect();
        shape(order.len(), &edges)
    };
    counts.add(&cycle(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
    assert_eq!(counts.count(&cycle(&[3, 1, 4, 0, 5, 9, 2, 6, 8, 7])), 1);
    // Two 5-cycles have the same degrees as one 10-cycle, but are not isomorphic to it.
    let mut two = cycle(&[0, 1, 2, 3, 4]).edges;
    two.extend(cycle(&[5, 6, 7, 8, 9]).edges);
    assert_eq!(counts.count(&shape(10, &two)), 0);
}

#[test]
fn betweenness_counts_shortest_paths_through_a_table_and_ranks_candidates() {
    // A path a – b – c – d: b and c each sit on the shortest paths between the other sides.
    let path = graph_of(
        "CREATE TABLE a(id INTEGER PRIMARY KEY);
         CREATE TABLE b(id INTEGER PRIMARY KEY, a_id INTEGER REFERENCES a(id));
         CREATE TABLE c(id INTEGER PRIMARY KEY, b_id INTEGER REFERENCES b(id));
         CREATE TABLE d(id INTEGER PRIMARY KEY, c_id INTEGER REFERENCES c(id));",
        false,
    );
    let by_name = |name: &str| path.betweenness()[path.index(name).unwrap()];
    assert_eq!(
        (by_name("a"), by_name("b"), by_name("c"), by_name("d")),
        (0.0, 2.0, 2.0, 0.0)
    );
    // A star: the hub is on the path between every pair of leaves.
    let star = graph_of(
        "CREATE TABLE hub(id INTEGER PRIMARY KEY);
         CREATE TABLE x(id INTEGER PRIMARY KEY, hub_id INTEGER REFERENCES hub(id));
         CREATE TABLE y(id INTEGER PRIMARY KEY, hub_id INTEGER REFERENCES hub(id));
         CREATE TABLE z(id INTEGER PRIMARY KEY, hub_id INTEGER REFERENCES hub(id));",
        false,
    );
    let hub = star.index("hub").unwrap();
    // The leaves are FK–FK adjacent too (all reference hub.id), so the hub carries no path.
    assert_eq!(star.betweenness()[hub], 0.0);
    // On the path, a query on b can add a or c: centrality decides between equal complexities.
    let (_, graph_b) = jqg("SELECT id FROM b", &path);
    let (mut candidates, _) = jccs(&path, &graph_b);
    let most_central = Ranking {
        centrality: Some(super::expand::Centrality::Betweenness),
        ..Ranking::default()
    };
    super::expand::rank(&path, &mut candidates, &most_central);
    assert_eq!(path.tables[candidates[0].candidate], "c");
    let least_central = Ranking {
        centrality_ascending: true,
        ..most_central
    };
    super::expand::rank(&path, &mut candidates, &least_central);
    assert_eq!(path.tables[candidates[0].candidate], "a");
}
