//! Robustness on real gold queries: every operator, and every depth-2 chain, on every gold of
//! the shared data (Spider dev, Defog) and of the demo benchmark, without a panic. Run with
//! `--nocapture` to see how many queries do not parse and how many mutants each operator gives.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use super::*;
use sqlgate_test_support::shared_data;

/// (id, gold SQL) of the demo benchmark shipped with the repository.
fn demo_golds() -> Vec<(String, String)> {
    super::test_corpus::demo()
        .into_iter()
        .map(|pair| (format!("demo/{}", pair.id), pair.gold))
        .collect()
}

fn spider_golds(data: &Path) -> Vec<(String, String)> {
    let text = fs::read_to_string(data.join("spider-dev/gold.txt")).expect("spider gold reads");
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let sql = line.split('\t').next().unwrap_or_default();
            (format!("spider-dev/{i}"), sql.to_string())
        })
        .collect()
}

fn defog_golds(data: &Path) -> Vec<(String, String)> {
    let mut reader = csv::Reader::from_path(data.join("defog/questions.csv")).expect("csv opens");
    let query_column = reader
        .headers()
        .expect("csv header")
        .iter()
        .position(|name| name == "query")
        .expect("query column");
    let mut golds = Vec::new();
    for (row, record) in reader.records().enumerate() {
        let record = record.expect("csv record");
        let alternatives = record.get(query_column).unwrap_or_default().split(';');
        for (alt, sql) in alternatives
            .filter(|sql| !sql.trim().is_empty())
            .enumerate()
        {
            golds.push((format!("defog/{row}.{alt}"), sql.trim().to_string()));
        }
    }
    golds
}

#[derive(Default)]
struct Tally {
    queries: usize,
    unparsed: Vec<(String, MutateError)>,
    depth_one: BTreeMap<Operator, usize>,
    depth_two: usize,
    rejected: BTreeMap<(usize, RejectReason), usize>,
}

impl Tally {
    fn run(&mut self, id: &str, sql: &str) {
        self.queries += 1;
        let gold = match parse_query(sql) {
            Ok(gold) => gold,
            Err(error) => return self.unparsed.push((id.to_string(), error)),
        };
        let generated = mutants_to_depth(id, sql, 2, DEFAULT_SEED).expect("the gold parses");
        for mutant in &generated.mutants {
            let reparsed = parse_query(&mutant.sql).expect("mutants parse again");
            assert_ne!(reparsed, gold, "{id}: {:?} gave the gold back", mutant.ops);
            match mutant.ops.as_slice() {
                [op] => *self.depth_one.entry(*op).or_default() += 1,
                _ => self.depth_two += 1,
            }
        }
        for rejection in &generated.rejected {
            *self
                .rejected
                .entry((rejection.ops.len(), rejection.reason))
                .or_default() += 1;
        }
    }

    fn report(&self, corpus: &str) {
        println!(
            "{corpus}: {} queries, {} do not parse, {} depth-2 mutants",
            self.queries,
            self.unparsed.len(),
            self.depth_two
        );
        for (id, error) in &self.unparsed {
            println!("  unparsed {id}: {error}");
        }
        for op in Operator::ALL {
            let count = self.depth_one.get(&op).copied().unwrap_or(0);
            println!("  {op:<24} {count}");
        }
        for ((depth, reason), count) in &self.rejected {
            println!("  rejected at depth {depth}, {reason:?}: {count}");
        }
    }
}

#[test]
fn every_operator_and_depth_two_chain_runs_on_every_gold() {
    let mut demo = Tally::default();
    for (id, sql) in demo_golds() {
        demo.run(&id, &sql);
    }
    demo.report("demo");
    assert!(demo.queries >= 30 && demo.unparsed.is_empty());

    let Some(data) = shared_data() else {
        return;
    };
    let mut spider = Tally::default();
    for (id, sql) in spider_golds(&data) {
        spider.run(&id, &sql);
    }
    spider.report("spider-dev");
    let mut defog = Tally::default();
    for (id, sql) in defog_golds(&data) {
        defog.run(&id, &sql);
    }
    defog.report("defog");

    assert_eq!(spider.queries, 1034);
    assert!(spider.unparsed.len() <= 10, "{:?}", spider.unparsed);
    // Spider dev is varied enough for every operator to apply somewhere.
    for op in Operator::ALL {
        assert!(
            spider.depth_one.contains_key(&op),
            "{op} never applied on Spider dev"
        );
    }
}
