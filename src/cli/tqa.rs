//! `sqlgate generate tqa`: the TQA families written to a folder (see docs/tqa.md).

use std::collections::{BTreeMap, HashMap};


use super::generate::{TqaArgs, TqaMethod};
use super::EXIT_OK;
use crate::bench::{self, Answer, Benchmark, Case};
use crate::error::InputError;
use crate::exec::{Engine, Limits};
use crate::gate::snapshot::write_atomically;
use crate::mutate::tqa::naturalness::{self, Seed, MUTANT_ID, SETTINGS};
use crate::mutate::tqa::rename::RenameMap;
use crate::mutate::tqa::sql::rename_sql;
use crate::mutate::tqa::{ident, wordnet::WordNet};

pub fn run(args: TqaArgs) -> Result<u8, InputError> {
    let wordnet = WordNet::open(&WordNet::locate(args.wordnet.as_deref()))?;
    let bench = args.source.load()?;
    match args.method {
        TqaMethod::Naturalness => naturalness(&args, &bench, &wordnet),
        TqaMethod::Linker => Err(InputError::file(
            &args.out,
            "--method linker is not available yet",
        )),
    }
}

/// The feasible cases of each database with their first gold query, databases in name order.
fn seeds_by_db(bench: &Benchmark) -> BTreeMap<&str, Vec<&Case>> {
    let mut by_db: BTreeMap<&str, Vec<&Case>> = BTreeMap::new();
    for case in bench.cases.iter().filter(|c| c.feasible && !c.gold.is_empty()) {
        by_db.entry(case.db.as_str()).or_default().push(case);
    }
    by_db
}

fn naturalness(args: &TqaArgs, bench: &Benchmark, wordnet: &WordNet) -> Result<u8, InputError> {
    let out = &args.out;
    std::fs::create_dir_all(out)
        .map_err(|e| InputError::file(out, format!("cannot create the folder: {e}")))?;
    let engine = Engine::new(Limits::default());
    let answers = carried_answers(args, bench)?;
    let mut families: Vec<String> = vec![String::new(); SETTINGS.len()];
    // The benchmark's own answers first, so the file serves a suite that adds the families.
    let mut carried = String::new();
    for case in &bench.cases {
        if let Some(answer) = answers.get(case.id.as_str()) {
            carried.push_str(&answer_line(&case.id, answer, None).to_string());
            carried.push('\n');
        }
    }
    let (mut kept_total, mut dropped_total) = (0, 0);
    for (db, cases) in seeds_by_db(bench) {
        let original = bench.db_files(cases[0], false)?.remove(0);
        let (schema, map, levels, script) =
            naturalness::plan(db, &original, wordnet, &ident::lower)
                .map_err(|e| InputError::file(&original, e))?;
        let script_name = format!("{db}.tqa.sql");
        write_atomically(&out.join(&script_name), script.as_bytes())?;
        // The clone is built exactly as the family loader builds it, so a test run reuses it.
        let clone = out.join("build").join(format!("{db}.tqa.sqlite"));
        bench::build_clone_if_stale(&original, &out.join(&script_name), &clone)?;
        map.verify(&schema, &clone)
            .map_err(|e| InputError::file(&clone, format!("the renamed clone is wrong: {e}")))?;
        let seeds: Vec<Seed> = cases
            .iter()
            .map(|case| Seed {
                id: case.id.clone(),
                question: case.question.clone(),
                evidence: case.evidence.clone(),
                sql: case.gold[0].clone(),
            })
            .collect();
        let (kept, dropped) =
            naturalness::reduce(&original, &clone, &map, &seeds, wordnet, &engine);
        let total = levels.total().max(1) as f64;
        println!(
            "{db}: identifiers N1 {} ({:.0}%), N2 {} ({:.0}%), N3 {} ({:.0}%); renamed {} tables, {} column names; kept {} of {} gold queries, dropped {}",
            levels.n1,
            100.0 * levels.n1 as f64 / total,
            levels.n2,
            100.0 * levels.n2 as f64 / total,
            levels.n3,
            100.0 * levels.n3 as f64 / total,
            map.tables.len(),
            map.columns.len(),
            kept.len(),
            seeds.len(),
            dropped.len()
        );
        for (id, why) in &dropped {
            println!("  dropped {id}: {why}");
        }
        kept_total += kept.len();
        dropped_total += dropped.len();
        for k in &kept {
            for (slot, (setting, family)) in SETTINGS.iter().enumerate() {
                let record = naturalness::record(k, setting, db, &script_name);
                families[slot].push_str(&record.to_string());
                families[slot].push('\n');
                if let Some(answer) = answers.get(k.seed_id.as_str()) {
                    let id = format!("{}::{family}::{MUTANT_ID}", k.seed_id);
                    let renamed = setting.ends_with('L').then_some(&map);
                    carried.push_str(&answer_line(&id, answer, renamed).to_string());
                    carried.push('\n');
                }
            }
        }
    }
    for (slot, (_, family)) in SETTINGS.iter().enumerate() {
        write_atomically(&out.join(format!("{family}.jsonl")), families[slot].as_bytes())?;
    }
    if args.predictions.is_some() {
        write_atomically(&out.join("predictions.jsonl"), carried.as_bytes())?;
    }
    println!(
        "kept {kept_total} seeds in four settings (O/O, L/O, O/L, L/L), dropped {dropped_total}; families written to {}",
        out.display()
    );
    Ok(EXIT_OK)
}

/// A predictions line answering `id`; with `renamed`, the SQL moved onto the clone (an answer
/// the parser cannot read stays as it was: it fails there too).
fn answer_line(id: &str, answer: &Answer, renamed: Option<&RenameMap>) -> serde_json::Value {
    match (answer, renamed) {
        (Answer::Abstain, _) => serde_json::json!({"id": id, "abstain": true}),
        (Answer::Sql(sql), Some(map)) => {
            let sql = rename_sql(sql, map).unwrap_or_else(|_| sql.clone());
            serde_json::json!({"id": id, "sql": sql})
        }
        (Answer::Sql(sql), None) => serde_json::json!({"id": id, "sql": sql}),
    }
}

/// The answers of `--predictions`, by case id.
fn carried_answers<'a>(
    args: &TqaArgs,
    bench: &'a Benchmark,
) -> Result<HashMap<&'a str, Answer>, InputError> {
    let Some(path) = &args.predictions else {
        return Ok(HashMap::new());
    };
    let predictions = bench::load_predictions(path, None, bench)?;
    Ok(bench
        .cases
        .iter()
        .zip(predictions)
        .map(|(case, p)| (case.id.as_str(), p.answer))
        .collect())
}

