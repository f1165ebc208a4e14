//! `sqlgate generate <family>`: generators write new cases to disk; they never run inside a test.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::EXIT_OK;
use crate::bench::{self, GoldFormat, LoadOptions};
use crate::error::InputError;
use crate::mutate::family;

#[derive(Subcommand)]
pub enum GenerateCommand {
    /// Single-error SQL mutants of every gold query, as a suite whose predictions are the mutants.
    Errors(ErrorsArgs),
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

pub fn run(command: GenerateCommand) -> Result<u8, InputError> {
    match command {
        GenerateCommand::Errors(args) => errors(args),
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
