//! `sqlgate diff`: two run records (or snapshots) compared: regressions, fixes, new and
//! removed cases, and each suite's metric changes with a paired bootstrap interval. A report,
//! so it exits 0 whatever it finds; 2 when an input cannot be read.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use sqlgate::diff::{self, markdown, outcome, text};
use sqlgate::Error;
use sqlgate_eval::metrics::bootstrap::Bootstrap;

#[derive(Args)]
pub struct DiffArgs {
    /// The earlier run: a run record (`sqlgate test --record-out FILE`) or a snapshot (`.snap`).
    #[arg(value_name = "BASE")]
    base: PathBuf,
    /// The later run, of either kind.
    #[arg(value_name = "HEAD")]
    head: PathBuf,
    /// `text` for a terminal, `markdown` for a pull-request comment (at most 60,000
    /// characters), `json` for tools.
    #[arg(long, value_enum, default_value = "text")]
    format: DiffFormat,
    /// The seed of the bootstrap's resampling: the same inputs and seed give the same report.
    #[arg(long, default_value_t = Bootstrap::default().seed)]
    seed: u64,
    /// Resamples per bootstrap interval (100 to 1,000,000; default 2,000).
    #[arg(long, default_value_t = Bootstrap::default().resamples as u32, value_parser = clap::value_parser!(u32).range(100..=1_000_000))]
    resamples: u32,
}

#[derive(Clone, Copy, ValueEnum)]
enum DiffFormat {
    Text,
    Markdown,
    Json,
}

pub fn run(args: DiffArgs) -> Result<(), Error> {
    let base = outcome::read(&args.base)?;
    let head = outcome::read(&args.head)?;
    let bootstrap = Bootstrap {
        resamples: args.resamples as usize,
        seed: args.seed,
    };
    let diff = diff::compare(&base, &head, bootstrap);
    let output = match args.format {
        DiffFormat::Text => text::render(&diff),
        DiffFormat::Markdown => markdown::render(&diff),
        DiffFormat::Json => serde_json::to_string_pretty(&diff).unwrap_or_default(),
    };
    print!("{output}");
    Ok(())
}
