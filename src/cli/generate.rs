//! `sqlgate generate <family>`: generators write new cases to disk; they never run inside a test.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::EXIT_OK;
use crate::bench::{self, GoldFormat, LoadOptions};
use crate::error::InputError;
use crate::mutate::{family, infeasible};
use crate::spider::Schema;

#[derive(Subcommand)]
pub enum GenerateCommand {
    /// Single-error SQL mutants of every gold query, as a suite whose predictions are the mutants.
    Errors(ErrorsArgs),
    /// TrustSQL's infeasible questions for every database of a benchmark, as a suite.
    Infeasible(InfeasibleArgs),
}

#[derive(Args)]
pub struct ErrorsArgs {
    /// The benchmark to mutate (any gold format `score` reads).
    #[arg(long)]
    gold: PathBuf,
    #[arg(long)]
    db_dir: Option<PathBuf>,
    #[arg(long, value_enum)]
    gold_format: Option<GoldFormat>,
    /// Folder to write `suite.toml`, `cases.jsonl` and `predictions.jsonl` into.
    #[arg(long)]
    out: PathBuf,
    /// Suite name (default: `<benchmark>-errors`).
    #[arg(long)]
    name: Option<String>,
    /// Chains of up to this many compatible operators.
    #[arg(long, default_value_t = 1)]
    depth: usize,
    #[arg(long, default_value_t = crate::mutate::DEFAULT_SEED)]
    seed: u64,
}

#[derive(Args)]
pub struct InfeasibleArgs {
    /// The benchmark whose databases the questions are about (any gold format `score` reads).
    #[arg(long)]
    gold: PathBuf,
    #[arg(long)]
    db_dir: Option<PathBuf>,
    #[arg(long, value_enum)]
    gold_format: Option<GoldFormat>,
    /// Folder to write `suite.toml` and `cases.jsonl` into.
    #[arg(long)]
    out: PathBuf,
    /// Suite name (default: `<benchmark>-infeasible`).
    #[arg(long)]
    name: Option<String>,
    /// Questions of each kind per database (at most; duplicates are dropped).
    #[arg(long, default_value_t = 2)]
    per_kind: usize,
    #[arg(long, default_value_t = crate::mutate::DEFAULT_SEED)]
    seed: u64,
}

pub fn run(command: GenerateCommand) -> Result<u8, InputError> {
    match command {
        GenerateCommand::Errors(args) => errors(args),
        GenerateCommand::Infeasible(args) => infeasible(args),
    }
}

fn errors(args: ErrorsArgs) -> Result<u8, InputError> {
    if args.depth == 0 {
        return Err(InputError::file(&args.out, "--depth must be at least 1"));
    }
    let options = LoadOptions {
        db_dir: args.db_dir,
        tables: None,
        format: args.gold_format,
    };
    let bench = bench::load(&args.gold, &options)?;
    let family = family::errors_family(&bench, args.seed, args.depth);
    let name = args
        .name
        .unwrap_or_else(|| format!("{}-errors", bench.name));
    family::write(&args.out, &name, &bench, &family)?;
    println!(
        "{} mutants of {} cases written to {}",
        family.mutants.len(),
        bench.cases.len(),
        args.out.display()
    );
    if !family.unparsed.is_empty() {
        println!(
            "gold queries the SQL parser cannot read: {}",
            family.unparsed.join(", ")
        );
    }
    Ok(EXIT_OK)
}

fn infeasible(args: InfeasibleArgs) -> Result<u8, InputError> {
    let options = LoadOptions {
        db_dir: args.db_dir,
        tables: None,
        format: args.gold_format,
    };
    let bench = bench::load(&args.gold, &options)?;
    // One schema per database, in order of first appearance.
    let mut schemas: Vec<(String, Schema)> = Vec::new();
    for case in &bench.cases {
        if !schemas.iter().any(|(db, _)| db == &case.db) {
            let file = bench.db_files(case, false)?.remove(0);
            schemas.push((case.db.clone(), Schema::from_sqlite(file)?));
        }
    }
    let mut cases = String::new();
    let mut count = 0;
    for (db, schema) in &schemas {
        let others: Vec<&Schema> = schemas
            .iter()
            .filter(|(d, _)| d != db)
            .map(|(_, s)| s)
            .collect();
        for (index, question) in infeasible::generate(db, schema, &others, args.seed, args.per_kind)
            .iter()
            .enumerate()
        {
            let mut tags = serde_json::json!({
                "category": "infeasible", "infeasible": question.kind, "type": "inf", "note": question.kind,
            });
            if let Some(column) = &question.hypothetical {
                tags["hypothetical"] = column.clone().into();
            }
            let id = format!("inf:{db}:{}:{index}", question.kind);
            let record = serde_json::json!({"id": id, "db": db, "question": question.question, "type": "infeasible", "tags": tags});
            cases.push_str(&record.to_string());
            cases.push('\n');
            count += 1;
        }
    }
    let name = args
        .name
        .unwrap_or_else(|| format!("{}-infeasible", bench.name));
    family::write_suite(
        &args.out,
        &name,
        &bench,
        "infeasible",
        "questions no database can answer",
        &cases,
        &[],
    )?;
    println!(
        "{count} infeasible questions on {} databases written to {}",
        schemas.len(),
        args.out.display()
    );
    Ok(EXIT_OK)
}
