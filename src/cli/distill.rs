//! `sqlgate distill`: counterexample databases for every database of a benchmark, written as
//! test-suite folders (the work is `sqlgate_generate::distill`; this file parses and prints).

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use sqlgate::report::plural;
use sqlgate::Error;
use sqlgate_eval::error::OutputError;
use sqlgate_eval::exec::memory::{self, MaxMemory};
use sqlgate_eval::loaders::{self, Answer, Prediction};
use sqlgate_generate::distill::{
    check_engine, distill, DatabaseReport, DistillError, KnownAnswers, Options, Provenance,
    MAX_CANDIDATES,
};

use super::{ServerArgs, Source};
use crate::console::progress::DistillMeter;

#[derive(Args)]
pub struct DistillArgs {
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    server: ServerArgs,
    /// Output folder: `<out>/<db>/<db>.<ext>` (the original) and `<db>_<k>.<ext>`, `<ext>` the
    /// engine's (`sqlite`, `duckdb`); on a server engine, `<out>/<db>/databases.txt` naming the
    /// suite's databases on the server.
    #[arg(long)]
    out: PathBuf,
    /// Databases kept per schema by the greedy choice (one more for a gold that returns rows
    /// nowhere else).
    #[arg(long, default_value_t = Options::default().per_db)]
    per_db: usize,
    /// Run seed: the same seed writes the same bytes.
    #[arg(long, default_value_t = Options::default().seed)]
    seed: u64,
    /// Candidate databases generated per schema (at most 100,000).
    #[arg(long, default_value_t = Options::default().candidates as u32,
          value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_CANDIDATES)))]
    candidates: u32,
    /// Predictions (any format `score --pred` reads; repeatable) whose answers the suite must
    /// also tell apart from their gold: a system's past wrong answers, other systems'
    /// predictions. Counted under the operator `prediction`.
    #[arg(long = "predictions", value_name = "FILE")]
    predictions: Vec<PathBuf>,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value = "text")]
    format: DistillFormat,
    /// Memory budget of the queries in MiB: SQLite's heap, the results being read and what the
    /// allocator adds, for all queries running at once (see docs/reliability.md#memory).
    #[arg(long, value_name = "MIB", default_value_t = MaxMemory::default())]
    max_memory: MaxMemory,
}

#[derive(Clone, Copy, ValueEnum)]
enum DistillFormat {
    /// A table per database.
    Text,
    /// `{"databases": [...]}` with the counts and every rejection the suite adds.
    Json,
}

pub fn run(args: DistillArgs) -> Result<(), Error> {
    memory::set_max_memory(args.max_memory);
    // Before connecting: an engine that cannot create databases needs no server to be refused.
    check_engine(args.server.engine.driver()).map_err(|e| Error::Usage(e.to_string()))?;
    // Shown from the start: reading a large benchmark or connecting takes time too.
    let text = matches!(args.format, DistillFormat::Text);
    let meter = DistillMeter::new(text && std::io::stderr().is_terminal());
    let backend = args.server.backend(&args.source.gold, None)?;
    let bench = args.source.load_from(&backend)?;
    let options = Options {
        per_db: args.per_db,
        seed: args.seed,
        candidates: args.candidates as usize,
    };
    let mut answers = KnownAnswers::new();
    for file in &args.predictions {
        let slots = loaders::load_prediction_slots(file, None, &bench)?;
        for (case, slot) in bench.cases.iter().zip(slots) {
            if let Some(Prediction {
                answer: Answer::Sql(sql),
                ..
            }) = slot
            {
                answers.entry(case.id.clone()).or_default().push(sql);
            }
        }
    }
    let provenance = Provenance {
        sqlgate_version: env!("CARGO_PKG_VERSION").to_string(),
        command: std::env::args_os()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect(),
        inputs: std::iter::once(args.source.gold.clone())
            .chain(args.predictions.iter().cloned())
            .collect(),
    };
    let reports = distill(
        &bench,
        &args.out,
        &options,
        &answers,
        &provenance,
        &|progress| meter.update(progress),
    )
    .map_err(|e| match e {
        DistillError::Input(e) => Error::from(e),
        DistillError::Output(e) => Error::from(e),
    })?;
    meter.clear();
    match args.format {
        DistillFormat::Json => {
            let json = serde_json::json!({ "databases": reports });
            let text = serde_json::to_string_pretty(&json)
                .map_err(|e| OutputError::new("stdout", std::io::Error::other(e)))?;
            println!("{text}");
        }
        DistillFormat::Text => {
            for report in &reports {
                print_table(report);
            }
        }
    }
    if text {
        let golds: usize = reports.iter().map(|r| r.golds).sum();
        let kept: usize = reports.iter().map(|r| r.kept).sum();
        meter.finish(&format!(
            "{} ({}), kept {}",
            plural(reports.len(), "database"),
            plural(golds, "gold"),
            plural(kept, "database")
        ));
    }
    Ok(())
}

/// Case ids listed in a line of the text summary.
const SHOWN_IDS: usize = 10;

fn print_table(r: &DatabaseReport) {
    println!(
        "{}: {} golds, {} neighbours; kept {} of {} databases ({} gold skips) in {:.1} s",
        r.db, r.golds, r.neighbours, r.kept, r.candidates, r.gold_skips, r.seconds
    );
    println!(
        "  killed by the original alone {}, by the suite {}, survivors {}",
        r.killed_by_original, r.killed_by_suite, r.survivors
    );
    println!(
        "  {:<26} {:>8} {:>22} {:>18}",
        "operator", "mutants", "accepted by original", "rejected by suite"
    );
    for (operator, c) in &r.operators {
        println!(
            "  {operator:<26} {:>8} {:>22} {:>18}",
            c.mutants, c.accepted_by_original, c.rejected_by_suite
        );
    }
    if let Some(sample) = &r.sample {
        println!(
            "  judged on a sample of the original, not on it: {} ({} rows, drawn from {}; {})",
            plural(sample.neighbours, "neighbour"),
            sample.rows,
            sample
                .tables_drawn
                .iter()
                .map(|table| table.escape_debug().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if sample.kept {
                "kept in the suite"
            } else {
                "not kept"
            }
        );
        if !sample.golds.is_empty() {
            // The first few: the JSON summary lists them all.
            let more = match sample.golds.len().saturating_sub(SHOWN_IDS) {
                0 => String::new(),
                more => format!(" and {more} more"),
            };
            println!(
                "  golds past the bound on the original, all their neighbours judged on the \
                 sample: {}{more}",
                sample.golds[..sample.golds.len().min(SHOWN_IDS)].join(", ")
            );
        }
    }
    if !r.broken_golds.is_empty() {
        println!(
            "  golds failing on the original: {}",
            r.broken_golds.join(", ")
        );
    }
    if !r.rewrites_rejected_by_original.is_empty() {
        println!(
            "  equivalent rewrites the original itself rejects: {}",
            r.rewrites_rejected_by_original.join(", ")
        );
    }
    if !r.relaxed_keys.is_empty() {
        println!(
            "  primary keys of the schema-only original read as truncated composite keys, not \
             unique: {}",
            // Table and column names are the database's: one line each, escaped.
            r.relaxed_keys
                .iter()
                .map(|key| key.escape_debug().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !r.empty_on_suite.is_empty() {
        println!(
            "  golds returning no row (or only 0 and NULL) on every database of the suite: {}",
            r.empty_on_suite.join(", ")
        );
    }
}
