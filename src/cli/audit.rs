//! `sqlgate audit`: what is wrong with a benchmark's gold queries (docs/audit.md).

use std::fmt::Write;

use clap::{Args, ValueEnum};

use super::score::{parse_timeout, TimeBound};
use super::value_enums::ModeArg;
use super::Source;
use sqlgate::gate::session::Session;
use sqlgate::report::plural;
use sqlgate::Error;
use sqlgate_eval::exec::memory::{self, MaxMemory};
use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_eval::metrics::ex::{Mode, ModeOptions};
use sqlgate_generate::audit::{self, Finding, Kind, Settings};
use sqlgate_generate::mutate::DEFAULT_SEED;

#[derive(Args)]
pub struct AuditArgs {
    #[command(flatten)]
    source: Source,
    /// Comparison mode (default: the gold format's own evaluator).
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// Per-query time bound in seconds, or `none`; a gold past it is a `timeout` finding.
    #[arg(long, default_value = "30", value_parser = parse_timeout)]
    timeout: TimeBound,
    /// Mutation run seed of the single-error mutants the `weak` check tries.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// Output: findings grouped by kind for people, or JSON for tools.
    #[arg(long, value_enum, default_value = "text")]
    format: OutputFormat,
    /// Exit with 100 when there is any finding.
    #[arg(long)]
    strict: bool,
    /// Memory budget of the queries in MiB: SQLite's heap, the results being read and what the
    /// allocator adds, for all queries running at once (see docs/reliability.md#memory).
    #[arg(long, value_name = "MIB", default_value_t = MaxMemory::default())]
    max_memory: MaxMemory,
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    Text,
    Json,
}

pub fn run(args: AuditArgs) -> Result<(), Error> {
    memory::set_max_memory(args.max_memory);
    let benchmark = args.source.load()?;
    let mode = args
        .mode
        .map_or(benchmark.format.default_mode(), Mode::from);
    let settings = Settings {
        mode,
        mode_options: ModeOptions {
            pair_budget: args.timeout.0,
            ..ModeOptions::default()
        },
        seed: args.seed,
    };
    let engine = Engine::new(
        Limits {
            timeout: args.timeout.0,
            ..Limits::default()
        },
        benchmark.backend.clone(),
    );
    let findings = audit::audit(&benchmark, &settings, &engine)?;
    let output = match args.format {
        OutputFormat::Text => render_text(&findings, benchmark.cases.len()),
        // Plain structs with string keys always serialize.
        OutputFormat::Json => {
            serde_json::to_string_pretty(&serde_json::json!({ "findings": findings }))
                .unwrap_or_default()
        }
    };
    println!("{output}");
    if args.strict && !findings.is_empty() {
        return Err(Error::AuditFindings(findings.len()));
    }
    Ok(())
}

/// The findings grouped by kind, each group headed by its count.
fn render_text(findings: &[Finding], cases: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} in {}{}",
        plural(findings.len(), "finding"),
        plural(cases, "case"),
        counts_in_parentheses(findings)
    );
    for kind in Kind::ALL {
        let group: Vec<&Finding> = findings.iter().filter(|f| f.kind == kind).collect();
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{} ({})", kind.name(), group.len());
        for finding in group {
            let _ = writeln!(out, "  {} [{}] {}", finding.id, finding.db, finding.detail);
        }
    }
    out.trim_end().to_string()
}

/// ` (3 weak, 2 order_ties)`, or nothing without findings.
fn counts_in_parentheses(findings: &[Finding]) -> String {
    let counts: Vec<String> = audit::counts(findings)
        .into_iter()
        .map(|(kind, count)| format!("{count} {}", kind.name()))
        .collect();
    if counts.is_empty() {
        String::new()
    } else {
        format!(" ({})", counts.join(", "))
    }
}

/// The line `sqlgate test` prints for a suite with `audit = true`.
fn suite_line(suite: &str, findings: &[Finding], command: &str) -> String {
    format!(
        "audit: suite {suite} has {}{} — {command} for details",
        plural(findings.len(), "finding"),
        counts_in_parentheses(findings)
    )
}

/// For each suite of the session with `audit = true`: its gold's findings in one line, with
/// the command that lists them. Generated families are left out: their golds are the seeds'.
pub(super) fn suite_lines(session: &Session) -> Result<Vec<String>, Error> {
    let mut lines = Vec::new();
    for (plan, entry) in session.suites.iter().zip(&session.config.suites) {
        let suite = entry.get_ref();
        if !suite.audit {
            continue;
        }
        let mut bench = plan.bench.clone();
        bench.cases.retain(|case| !case.tags.contains_key("family"));
        let settings = Settings {
            mode: plan.scoring.mode,
            mode_options: plan.scoring.mode_options.clone(),
            seed: DEFAULT_SEED,
        };
        let findings = audit::audit(&bench, &settings, &plan.engine())?;
        let command = format!(
            "sqlgate audit --gold {} --db-dir {} --mode {}",
            session.config.resolve(&suite.benchmark).display(),
            bench.db_dir.display(),
            plan.scoring.mode.name()
        );
        lines.push(suite_line(&plan.name, &findings, &command));
    }
    Ok(lines)
}
