//! Property tests of the SQLMorph metrics on real mutants (spec `sqlmorph-metrics.md` §9.7):
//! every depth-1 mutant of the demo's and Defog's gold queries, scored in paper mode. A mutant
//! that misses a definite Table IX direction must show, in its own data, the reason it does
//! (checked here from the queries and results, independently of `calibrate`'s reasons).

use std::path::Path;

use regex::Regex;
use sqlgate_eval::exec::QueryRunner;
use sqlgate_eval::exec::{Engine, Limits, ResultSet, Value};
use sqlgate_eval::loaders::{self, LoadOptions};
use sqlgate_eval::metrics::sqlmorph::Options;
use sqlgate_generate::calibrate::{mutate_and_score, MutantRun, SeedOutcome, Settings};
use sqlgate_generate::mutate::Operator;

const REGIMES: [&str; 3] = ["EC-EC-IE", "EC-EC-PE", "EC-PC-IE"];

/// A scored mutant with its gold, both executed again for the independent checks.
struct Sample {
    gold_sql: String,
    run: MutantRun,
    gold: ResultSet,
    mutant: ResultSet,
}

impl Sample {
    fn exp(&self, regime: &str) -> f64 {
        self.run.scores[regime].exp
    }
    fn exr(&self, regime: &str) -> f64 {
        self.run.scores[regime].exr
    }
    fn grew(&self) -> bool {
        self.mutant.rows.len() > self.gold.rows.len()
    }
    fn has(&self, pattern: &str) -> bool {
        Regex::new(&format!("(?is){pattern}"))
            .expect("pattern")
            .is_match(&self.gold_sql)
    }
    fn aggregates(&self) -> bool {
        self.has(r"\b(count|sum|avg|min|max)\s*\(|\bgroup\s+by\b")
    }
    /// Select-project-join: rows only appear or disappear when filters change.
    fn spj(&self) -> bool {
        !self.aggregates()
            && !self.has(r"\bdistinct\b|\blimit\b|\bunion\b|\bexcept\b|\bintersect\b")
    }
    /// The shorter result holds exactly the longer one's first rows.
    fn ordered_prefix(&self) -> bool {
        let (short, long) = if self.grew() {
            (&self.gold, &self.mutant)
        } else {
            (&self.mutant, &self.gold)
        };
        bag(&short.rows) == bag(&long.rows[..short.rows.len()])
    }
    fn describe(&self) -> String {
        format!(
            "{} {}: gold `{}` ({} rows) mutant `{}` ({} rows) scores {:?}",
            self.run.case_id,
            self.run.operator,
            self.gold_sql,
            self.gold.rows.len(),
            self.run.sql,
            self.mutant.rows.len(),
            self.run.scores
        )
    }
}

/// Rows as sortable keys under Python equality: `3` equals `3.0`.
fn bag(rows: &[Vec<Value>]) -> Vec<String> {
    let key = |value: &Value| match value {
        Value::Real(real) if real.fract() == 0.0 && real.abs() < 1e15 => {
            format!("{:?}", Value::Int(*real as i64))
        }
        other => format!("{other:?}"),
    };
    let mut keys: Vec<String> = rows
        .iter()
        .map(|row| row.iter().map(key).collect::<Vec<_>>().join("|"))
        .collect();
    keys.sort();
    keys
}

fn one(value: f64) -> bool {
    value >= 1.0 - 1e-12
}

/// Every scored mutant of the feasible cases' first gold query.
fn samples(gold: &Path) -> Vec<Sample> {
    let bench =
        loaders::load(gold, &LoadOptions::on(sqlgate_engine_sqlite::files())).expect("gold loads");
    let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
    let settings = Settings {
        regimes: REGIMES.iter().map(|r| r.parse().expect("regime")).collect(),
        seed: 42,
        options: Options::default(),
    };
    let mut samples = Vec::new();
    for case in bench.cases.iter().filter(|c| c.feasible) {
        let files = bench.db_files(case, false).expect("database");
        let (Some(db), Some(sql)) = (files.first(), case.gold.first()) else {
            continue;
        };
        let outcome = mutate_and_score(&case.id, sql, db, &settings, &engine).expect("scores");
        let SeedOutcome::Mutated(runs) = outcome else {
            panic!("{}: the gold executes and parses", case.id);
        };
        let gold = engine.gold(db, sql).result.expect("gold executes");
        for run in runs.into_iter().filter(|r| r.exec_error.is_none()) {
            let mutant = engine
                .pred(db, &run.sql)
                .result
                .expect("mutant executed once");
            samples.push(Sample {
                gold_sql: sql.clone(),
                run,
                gold: (*gold).clone(),
                mutant: (*mutant).clone(),
            });
        }
    }
    samples
}

fn demo() -> Vec<Sample> {
    samples(&crate::support::demo("suite.toml"))
}

fn defog() -> Option<Vec<Sample>> {
    let data = sqlgate_test_support::shared_data()?;
    Some(samples(&data.join("defog/questions.csv")))
}

/// Runs `check` on the demo and, when present, on Defog; returns how many samples it judged.
fn on_all(check: impl Fn(&Sample) -> bool) -> usize {
    let mut judged = 0;
    for samples in std::iter::once(demo()).chain(defog()) {
        judged += samples.iter().filter(|s| check(s)).count();
    }
    judged
}

fn of(op: Operator) -> impl Fn(&Sample) -> bool {
    move |s: &Sample| s.run.operator == op
}

#[test]
fn identical_results_score_one_and_scores_are_bounded() {
    let judged = on_all(|s| {
        for regime in REGIMES {
            let scores = s.run.scores[regime];
            for value in [scores.exp, scores.exr, scores.f1] {
                assert!((0.0..=1.0).contains(&value), "{}", s.describe());
            }
            assert_eq!(
                scores.f1 == 0.0,
                scores.exp * scores.exr == 0.0,
                "{}",
                s.describe()
            );
            if s.run.ex {
                assert!(one(scores.exp) && one(scores.exr) && one(scores.f1));
            }
        }
        if s.run.ex {
            assert_eq!(bag(&s.gold.rows), bag(&s.mutant.rows), "{}", s.describe());
        }
        s.run.ex
    });
    assert!(judged > 0, "some mutants return the gold's rows");
}

#[test]
fn limit_increase_keeps_recall_when_rows_grow() {
    let judged = on_all(|s| {
        if !of(Operator::LimitIncrease)(s) {
            return false;
        }
        if !s.grew() {
            // No more rows qualify: the larger LIMIT returns the same rows.
            assert!(s.run.ex, "{}", s.describe());
            return false;
        }
        for regime in ["EC-EC-IE", "EC-EC-PE"] {
            if s.ordered_prefix() {
                assert!(
                    one(s.exr(regime)) && s.exp(regime) < 1.0,
                    "{}",
                    s.describe()
                );
            } else {
                // Ties in ORDER BY: the gold's rows are not the mutant's first rows.
                assert!(s.exr(regime) < 1.0, "{}", s.describe());
            }
        }
        true
    });
    assert!(judged > 0);
}

#[test]
fn limit_decrease_keeps_precision() {
    let judged = on_all(|s| {
        if !of(Operator::LimitDecrease)(s) || !s.ordered_prefix() {
            return false;
        }
        let expected_recall = s.mutant.rows.len() as f64 / s.gold.rows.len() as f64;
        assert!(one(s.exp("EC-EC-IE")), "{}", s.describe());
        assert!((s.exr("EC-EC-IE") - expected_recall).abs() < 1e-12);
        true
    });
    assert!(judged > 0);
}

#[test]
fn projection_drop_keeps_precision_and_loses_recall() {
    let judged = on_all(|s| {
        if !of(Operator::ProjectionDrop)(s) {
            return false;
        }
        let mut names = s.gold.columns.clone();
        names.sort();
        names.dedup();
        if names.len() < s.gold.columns.len() {
            // Duplicate names pair by occurrence: the dropped one may shift the pairing.
            return false;
        }
        if s.gold.rows.is_empty() {
            assert!(s.run.ex, "{}", s.describe());
            return false;
        }
        for regime in ["EC-EC-IE", "EC-PC-IE"] {
            assert!(
                one(s.exp(regime)) && s.exr(regime) < 1.0,
                "{}",
                s.describe()
            );
        }
        true
    });
    assert!(judged > 0);
}

#[test]
fn add_star_wildcard_costs_precision_only_when_extras_count() {
    let judged = on_all(|s| {
        if !of(Operator::AddStarWildcard)(s) || s.gold.rows.is_empty() {
            return false;
        }
        assert!(s.exp("EC-EC-PE") < 1.0, "{}", s.describe());
        assert!(one(s.exr("EC-EC-PE")), "{}", s.describe());
        if s.grew() {
            // DISTINCT over the widened projection keeps rows it used to merge.
            assert!(s.has(r"\bdistinct\b"), "{}", s.describe());
        } else {
            assert!(one(s.exp("EC-EC-IE")), "{}", s.describe());
        }
        true
    });
    assert!(judged > 0);
}

#[test]
fn distinct_toggle_and_join_break_cost_precision() {
    let judged = on_all(|s| {
        let applies = of(Operator::DistinctToggle)(s) || of(Operator::JoinBreak)(s);
        if !applies || s.run.ex {
            return false;
        }
        if s.run.operator == Operator::JoinBreak && !s.spj() && one(s.exp("EC-EC-IE")) {
            // An aggregate over the cross product can shrink to values the gold also holds.
            assert!(s.aggregates() || s.has(r"\blimit\b"), "{}", s.describe());
            return false;
        }
        assert!(s.exp("EC-EC-IE") < 1.0, "{}", s.describe());
        true
    });
    assert!(judged > 0);
}

#[test]
fn removed_filters_keep_recall_on_select_project_join() {
    let growing = [
        Operator::WhereRemove,
        Operator::WherePredicateDelete,
        Operator::JoinTypeToLeft,
        // Inverted name (spec §9.2): `<` becomes `<=`, adding boundary rows.
        Operator::WhereStrengthen,
    ];
    let judged = on_all(|s| {
        if !growing.contains(&s.run.operator) || !s.spj() {
            return false;
        }
        if s.run.operator == Operator::WherePredicateDelete && s.has(r"\bwhere\b.*\bor\b") {
            // The remaining atoms are rebuilt as an AND chain: rows may disappear.
            return false;
        }
        assert!(one(s.exr("EC-EC-IE")), "{}", s.describe());
        assert_eq!(s.exp("EC-EC-IE") < 1.0, s.grew(), "{}", s.describe());
        true
    });
    assert!(judged > 0);
}

#[test]
fn narrowed_filters_keep_precision_on_select_project_join() {
    // where_weaken is the inverted name (spec §9.2): `<=` becomes `<`, dropping boundary rows.
    let judged = on_all(|s| {
        if !of(Operator::WhereWeaken)(s) {
            return false;
        }
        if s.spj() {
            assert!(one(s.exp("EC-EC-IE")), "{}", s.describe());
            assert_eq!(
                s.exr("EC-EC-IE") < 1.0,
                s.mutant.rows.len() < s.gold.rows.len()
            );
        } else if !one(s.exp("EC-EC-IE")) {
            // An aggregate over fewer rows changes values instead of dropping rows.
            assert!(s.aggregates() && !s.run.ex, "{}", s.describe());
        }
        true
    });
    // The demo has no `<=`/`>=` filter; Defog has one.
    assert!(judged > 0 || defog().is_none());
}

#[test]
fn having_remove_keeps_recall() {
    let judged = on_all(|s| {
        if !of(Operator::HavingRemove)(s) || s.has(r"\blimit\b") {
            return false;
        }
        // Without HAVING every gold group is still there, with the same aggregates.
        assert!(one(s.exr("EC-EC-IE")), "{}", s.describe());
        true
    });
    assert!(judged > 0);
}

#[test]
fn aggregation_swap_costs_both_when_the_rows_stay() {
    let judged = on_all(|s| {
        if !of(Operator::AggregationSwap)(s) || s.run.ex {
            return false;
        }
        if s.gold.rows.len() != s.mutant.rows.len() {
            // The swapped aggregate sat in HAVING (or ORDER BY ... LIMIT): groups changed.
            assert!(s.has(r"\bhaving\b|\blimit\b"), "{}", s.describe());
            return false;
        }
        if s.gold.columns != s.mutant.columns {
            // The swap renamed its column (`MIN(x)` → `MAX(x)`): EC matches the other columns
            // by name, so the changed one is an extra that IE ignores; recall still drops.
            assert!(s.exr("EC-EC-IE") < 1.0, "{}", s.describe());
            return true;
        }
        assert!(
            s.exp("EC-EC-IE") < 1.0 && s.exr("EC-EC-IE") < 1.0,
            "{}",
            s.describe()
        );
        true
    });
    assert!(judged > 0);
}
