use super::*;
use sqlgate_eval::exec::Limits;

/// `t(id, name)` with rows (1,a) (2,b) (3,c) (4,d), in a temporary folder.
fn tiny_db() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("tiny.sqlite");
    let conn = rusqlite::Connection::open(&path).expect("create db");
    conn.execute_batch(
        "CREATE TABLE t (id INTEGER, name TEXT);
         INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd');",
    )
    .expect("fill db");
    (dir, path)
}

fn settings(regimes: &[&str]) -> Settings<'static> {
    Settings {
        regimes: regimes.iter().map(|r| r.parse().expect("regime")).collect(),
        seed: 42,
        options: Options::default(),
    }
}

fn runs(sql: &str, settings: &Settings) -> Vec<MutantRun> {
    let (_dir, db) = tiny_db();
    let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
    match mutate_and_score("q", sql, &db, settings, &engine).expect("scored") {
        SeedOutcome::Mutated(runs) => runs,
        _ => panic!("the gold executes and parses"),
    }
}

fn row(table: &[OperatorRow], op: Operator) -> &OperatorRow {
    table
        .iter()
        .find(|r| r.operator == op)
        .expect("every operator has a row")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn projection_drop_and_star_match_the_hand_computed_deltas() {
    let settings = settings(&["EC-EC-IE", "EC-EC-PE"]);
    let runs = runs("SELECT id, name FROM t", &settings);
    let table = table(&runs, &settings.regimes);
    assert_eq!(table.len(), Operator::ALL.len());

    // One of two columns dropped: EXP 1, EXR 1/2, F1 2/3 under both extras rules.
    let drop = row(&table, Operator::ProjectionDrop);
    assert_eq!((drop.mutants, drop.exec_errors), (1, 0));
    assert_eq!(drop.delta_ex, Some(-1.0));
    for regime in ["EC-EC-IE", "EC-EC-PE"] {
        let d = drop.deltas[regime];
        assert!(close(d.exp, 0.0) && close(d.exr, -0.5) && close(d.f1, 2.0 / 3.0 - 1.0));
    }

    // `t.*` appended: 4 columns of which 2 are extras; IE ignores them, PE halves EXP.
    let star = row(&table, Operator::AddStarWildcard);
    assert_eq!(star.mutants, 1);
    let ie = star.deltas["EC-EC-IE"];
    assert!(close(ie.exp, 0.0) && close(ie.exr, 0.0));
    let pe = star.deltas["EC-EC-PE"];
    assert!(close(pe.exp, -0.5) && close(pe.exr, 0.0) && close(pe.f1, 2.0 / 3.0 - 1.0));

    // Inapplicable operators have no mutants and no deltas.
    let limit = row(&table, Operator::LimitIncrease);
    assert_eq!((limit.mutants, limit.delta_ex), (0, None));
    assert!(limit.deltas.is_empty());

    // Both movements agree with Table IX.
    assert!(contradictions(&runs, &settings.regimes).is_empty());
}

#[test]
fn limit_increase_adds_rows_without_losing_the_gold() {
    let settings = settings(&["EC-EC-IE"]);
    let runs = runs("SELECT id FROM t ORDER BY id LIMIT 2", &settings);
    let increase = runs
        .iter()
        .find(|r| r.operator == Operator::LimitIncrease)
        .expect("applicable");
    // LIMIT 2 becomes at least 5: all 4 rows.
    assert_eq!((increase.gold_rows, increase.mutant_rows), (2, Some(4)));
    let scores = increase.scores["EC-EC-IE"];
    assert!(close(scores.exp, 0.5) && close(scores.exr, 1.0));
    let decrease = runs
        .iter()
        .find(|r| r.operator == Operator::LimitDecrease)
        .expect("applicable");
    let scores = decrease.scores["EC-EC-IE"];
    assert!(close(scores.exp, 1.0) && close(scores.exr, 0.5));
}

#[test]
fn inverted_where_strengthen_is_a_row_count_contradiction() {
    let settings = settings(&["EC-EC-IE"]);
    let runs = runs("SELECT id FROM t WHERE id > 2", &settings);
    let found = contradictions(&runs, &settings.regimes);
    let strengthen: Vec<&Contradiction> = found
        .iter()
        .filter(|c| c.operator == Operator::WhereStrengthen)
        .collect();
    // `>` became `>=`: row 2 joins, so EXP drops where Table IX expects it unchanged, and
    // EXR stays 1 where it expects a drop.
    assert_eq!(strengthen.len(), 2, "{found:?}");
    assert_eq!(strengthen[0].metric, "EXP");
    assert_eq!(strengthen[0].expected, Direction::Same);
    assert!(close(strengthen[0].observed, 2.0 / 3.0));
    assert_eq!(strengthen[1].metric, "EXR");
    assert_eq!(strengthen[1].expected, Direction::Down);
    assert!(close(strengthen[1].observed, 1.0));
    assert!(strengthen.iter().all(|c| c.reason == Reason::RowCount));
}

#[test]
fn failing_mutants_are_counted_not_scored() {
    let settings = settings(&["EC-EC-IE"]);
    let runs = runs("SELECT COUNT(*) FROM t", &settings);
    let table = table(&runs, &settings.regimes);
    let swap = row(&table, Operator::AggregationSwap);
    // COUNT(*) becomes SUM(*), which SQLite refuses.
    assert_eq!((swap.mutants, swap.exec_errors), (0, 1));
    assert_eq!(swap.delta_ex, None);
}

#[test]
fn ordered_prefix_tells_ties_apart() {
    let result = |rows: &[i64]| ResultSet {
        columns: vec!["x".into()],
        rows: rows
            .iter()
            .map(|&v| vec![sqlgate_eval::exec::Value::Int(v)])
            .collect(),
        lossy_text: false,
    };
    assert!(is_ordered_prefix(&result(&[2, 1]), &result(&[1, 2, 3])));
    assert!(!is_ordered_prefix(&result(&[1, 3]), &result(&[1, 2, 3])));
}
