//! `sqlgate audit`: what is wrong with a benchmark's gold queries (docs/audit.md).

use std::collections::HashSet;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::score::{parse_timeout, TimeBound};
use super::value_enums::ModeArg;
use super::Source;
use sqlgate::gate::session::Session;
use sqlgate::report::plural;
use sqlgate::Error;
use sqlgate_engines::EngineKind;
use sqlgate_eval::error::InputError;
use sqlgate_eval::exec::memory::{self, MaxMemory};
use sqlgate_eval::exec::Settings;
use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_eval::loaders::{self, Benchmark, GoldFormat, LoadOptions};
use sqlgate_eval::metrics::ex::{Mode, ModeOptions};
use sqlgate_generate::audit::{self, Comparison, Finding, Kind};
use sqlgate_generate::mutate::DEFAULT_SEED;

#[derive(Args)]
pub struct AuditArgs {
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    server: super::ServerArgs,
    /// Compare each case's gold with its run on this engine too: a different result (as the
    /// mode scores it) or a failure there only is an `engine_disagrees` finding.
    #[arg(long)]
    compare_engine: Option<EngineKind>,
    /// The compared engine's gold file, cases matched by id (default: the audited one), for a
    /// benchmark whose golds exist in each engine's dialect (Defog's `questions_postgres.csv`).
    #[arg(long, requires = "compare_engine")]
    compare_gold: Option<PathBuf>,
    /// The compared engine's database folder (file engines; default: the audited one's).
    #[arg(long, requires = "compare_engine")]
    compare_db_dir: Option<PathBuf>,
    /// The compared server's connection URL template, `{db}` standing for each database.
    #[arg(long, requires = "compare_engine")]
    compare_dsn: Option<String>,
    /// The environment variable holding the compared server's password.
    #[arg(long, requires = "compare_engine")]
    compare_password_env: Option<String>,
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
    let backend = args.server.backend(&args.source.gold, None)?;
    let benchmark = args.source.load_from(&backend)?;
    let mode = args
        .mode
        .map_or(benchmark.format.default_mode(), Mode::from);
    let settings = audit::Settings {
        mode,
        mode_options: ModeOptions {
            pair_budget: args.timeout.0,
            ..ModeOptions::default()
        },
        seed: args.seed,
    };
    let limits = Limits {
        timeout: args.timeout.0,
        ..Limits::default()
    };
    let engine = Engine::new(limits, backend);
    let compared = match args.compare_engine {
        Some(kind) => Some(compared_benchmark(&args, kind)?),
        None => None,
    };
    let other_engine = compared
        .as_ref()
        .map(|bench| Engine::new(limits, bench.backend.clone()));
    let comparison = compared
        .as_ref()
        .zip(other_engine.as_ref())
        .map(|(bench, engine)| Comparison { bench, engine });
    if let Some(comparison) = &comparison {
        let ids: HashSet<&str> = comparison
            .bench
            .cases
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        let missing = benchmark
            .cases
            .iter()
            .filter(|case| !ids.contains(case.id.as_str()))
            .count();
        if missing > 0 {
            eprintln!(
                "note: {} of the audited benchmark not compared: no case of the same id in {}",
                plural(missing, "case"),
                comparison_gold(&args).display()
            );
        }
    }
    let findings = audit::audit(&benchmark, &settings, &engine, comparison.as_ref())?;
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

/// The compared engine's gold file.
fn comparison_gold(args: &AuditArgs) -> &Path {
    args.compare_gold.as_deref().unwrap_or(&args.source.gold)
}

/// The benchmark as the compared engine runs it: its gold file, its databases.
fn compared_benchmark(args: &AuditArgs, kind: EngineKind) -> Result<Benchmark, Error> {
    let gold = comparison_gold(args);
    let settings = Settings {
        dsn: args.compare_dsn.as_deref(),
        password_env: args.compare_password_env.as_deref(),
        ..Settings::default()
    };
    let backend = sqlgate_eval::exec::connect(kind.driver(), &settings)
        .map_err(|message| InputError::file(gold, format!("--compare-engine: {message}")))?;
    let options = LoadOptions {
        db_dir: args
            .compare_db_dir
            .clone()
            .or_else(|| args.source.db_dir.clone()),
        format: args.source.gold_format.map(GoldFormat::from),
        ..LoadOptions::on(backend.clone())
    };
    let bench = loaders::load(gold, &options)?;
    bench.refuse_state_cases()?;
    super::warn_about_the_role(&bench, &*backend)?;
    Ok(bench)
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
        let settings = audit::Settings {
            mode: plan.scoring.mode,
            mode_options: plan.scoring.mode_options.clone(),
            seed: DEFAULT_SEED,
        };
        let findings = audit::audit(&bench, &settings, &plan.engine(), None)?;
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
