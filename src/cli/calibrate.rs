//! `sqlgate calibrate`: the fine-grained metrics' reaction to single-error mutants of a gold set
//! (the SQLMorph paper's Table X for this data, and the contradictions of its Table IX).

use std::fmt::Write;

use clap::{Args, ValueEnum};

use super::score::{check_regimes, parse_regimes, RegimeList};
use super::Source;
use sqlgate::Error;
use sqlgate_eval::error::InputError;
use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_eval::metrics::sqlmorph;
use sqlgate_generate::calibrate::{self, CalibrateError, Calibration, Settings};
use sqlgate_generate::mutate::DEFAULT_SEED;

/// The regimes of the paper's Table X, and PE to show what IE hides.
const DEFAULT_REGIMES: &str = "EC-EC-IE,EC-EC-PE,EC-PC-IE,SC-EC-IE";

#[derive(Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    source: Source,
    /// Regimes to calibrate, comma-separated.
    #[arg(long, default_value = DEFAULT_REGIMES, value_parser = parse_regimes)]
    regimes: RegimeList,
    /// Mutation run seed.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// Compute the metrics like the SQLMorph reference implementation.
    #[arg(long)]
    sqlmorph_compat: bool,
    /// Output: a table for people, or JSON for tools.
    #[arg(long, value_enum, default_value = "text")]
    format: OutputFormat,
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    Text,
    Json,
}

pub fn run(args: CalibrateArgs) -> Result<(), Error> {
    check_regimes("--regimes", &args.regimes.0, args.sqlmorph_compat)?;
    let benchmark = args.source.load()?;
    let settings = Settings {
        regimes: args.regimes.0,
        seed: args.seed,
        options: sqlmorph::Options {
            sqlmorph_compat: args.sqlmorph_compat,
            ..sqlmorph::Options::default()
        },
    };
    let engine = Engine::new(Limits::default(), benchmark.backend.clone());
    let calibration =
        calibrate::calibrate(&benchmark, &settings, &engine).map_err(|error| match error {
            CalibrateError::Input(error) => error,
            CalibrateError::Metric(error) => InputError::file(&args.source.gold, error.to_string()),
        })?;
    let output = match args.format {
        OutputFormat::Text => render_text(&calibration, &args.source.gold.display().to_string()),
        // Serializing plain structs with string keys cannot fail.
        OutputFormat::Json => serde_json::to_string_pretty(&calibration).unwrap_or_default(),
    };
    println!("{output}");
    Ok(())
}

fn render_text(calibration: &Calibration, source: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{source}: {} cases mutated (seed {}{}), {} gold errors, {} unparsed",
        calibration.cases,
        calibration.seed,
        if calibration.sqlmorph_compat {
            ", sqlmorph compat"
        } else {
            ""
        },
        calibration.gold_errors,
        calibration.unparsed
    );
    let _ = writeln!(
        out,
        "Δ = mean metric − 1, in percentage points; exec_err: mutants that failed to execute"
    );
    render_table(&mut out, calibration);
    render_contradictions(&mut out, calibration);
    out
}

fn render_table(out: &mut String, calibration: &Calibration) {
    let mut header = format!(
        "\n{:<22} {:>7} {:>8} {:>6}",
        "operator", "mutants", "exec_err", "ΔEX"
    );
    for regime in &calibration.regimes {
        let _ = write!(header, " │ {:>6} {:>6} {:>6}", "ΔEXP", "ΔEXR", "ΔF1");
        let _ = regime;
    }
    let mut regimes_line = format!("{:<46}", "");
    for regime in &calibration.regimes {
        let _ = write!(regimes_line, " │ {regime:^20}");
    }
    let _ = writeln!(out, "{header}\n{regimes_line}");
    let points =
        |delta: Option<f64>| delta.map_or("-".to_string(), |d| format!("{:.1}", d * 100.0));
    for row in &calibration.table {
        let _ = write!(
            out,
            "{:<22} {:>7} {:>8} {:>6}",
            row.operator.name(),
            row.mutants,
            row.exec_errors,
            points(row.delta_ex)
        );
        for regime in &calibration.regimes {
            let deltas = row.deltas.get(regime);
            let _ = write!(
                out,
                " │ {:>6} {:>6} {:>6}",
                points(deltas.map(|d| d.exp)),
                points(deltas.map(|d| d.exr)),
                points(deltas.map(|d| d.f1))
            );
        }
        let _ = writeln!(out);
    }
}

fn render_contradictions(out: &mut String, calibration: &Calibration) {
    let contradictions = &calibration.contradictions;
    let counts = calibrate::reason_counts(contradictions);
    let by_reason: Vec<String> = counts
        .iter()
        .map(|(reason, count)| format!("{} {count}", reason.name()))
        .collect();
    let _ = writeln!(
        out,
        "\ncontradictions of Table IX: {}{}",
        contradictions.len(),
        if by_reason.is_empty() {
            String::new()
        } else {
            format!(" ({})", by_reason.join(", "))
        }
    );
    for c in contradictions {
        let _ = writeln!(
            out,
            "  {:<22} {:<12} {:<9} {} expected {} observed {:.3}  [{}]",
            c.operator.name(),
            c.case_id,
            c.regime,
            c.metric,
            c.expected.symbol(),
            c.observed,
            c.reason.name()
        );
    }
}
