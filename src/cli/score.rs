//! `sqlgate score`: a predictions file against a gold set.

use super::value_enums::{GoldFormatArg, ModeArg, PredFormatArg};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgAction, Args, ValueEnum};

use crate::console::{score_json, score_text};
use sqlgate::Error;
use sqlgate_eval::error::InputError;
use sqlgate_eval::exec::limits::{timeout_from_secs, MAX_TIMEOUT};
use sqlgate_eval::exec::memory::{self, MaxMemory};
use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_eval::loaders::{
    self, Answer, Benchmark, GoldFormat, LoadOptions, PredFormat, Prediction,
};
use sqlgate_eval::metrics::case_metric::CaseMetric;
use sqlgate_eval::metrics::efficiency::measure::{self as efficiency, BIRD_ITERATIONS};
use sqlgate_eval::metrics::ex::{Mode, ModeOptions};
use sqlgate_eval::metrics::reliability::Penalty;
use sqlgate_eval::metrics::sqlmorph::{self, ColumnMatching, Extras, Regime};
use sqlgate_eval::metrics::{esm, etm};
use sqlgate_eval::scoring::{self, Scoring};
use sqlgate_llm::throttle::Throttle;
use sqlgate_llm::ThrottleConfig;
use sqlgate_llm::{CachedEmbedder, Client, ClientConfig};

#[derive(Args)]
pub struct ScoreArgs {
    /// Gold set: a suite manifest (.toml), Defog CSV, Spider/BIRD `SQL<TAB>db` lines, or a
    /// Spider, BIRD or TrustSQL JSON file.
    #[arg(long)]
    gold: PathBuf,
    /// Predictions: JSONL `{"id", "sql"|"abstain"}`, Spider pred.txt, BIRD predict_dev.json or
    /// TrustSQL JSON.
    #[arg(long)]
    pred: PathBuf,
    /// Folder holding `<db>.sqlite` or `<db>/<db>.sqlite` (default: beside the gold file).
    #[arg(long)]
    db_dir: Option<PathBuf>,
    #[command(flatten)]
    server: super::ServerArgs,
    /// PostgreSQL: a connection URL template for a role that may write, without a password,
    /// for state cases (DML, DDL): their statements run in transactions that are always
    /// rolled back (docs/state.md).
    #[arg(long)]
    scratch_dsn: Option<String>,
    /// Judge LiveSQLBench tasks by their Python test cases, run with `python3` (the
    /// benchmark's own code, run with your rights; docs/state.md).
    #[arg(long)]
    python_tests: bool,
    /// Spider `tables.json` (schemas for parsing when databases are absent).
    #[arg(long)]
    tables: Option<PathBuf>,
    /// Comparison mode (default: the gold format's own evaluator; `testsuite` for suites).
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// Per-query time bound in seconds, or `none` (BIRD: the budget of prediction plus gold).
    #[arg(long, default_value = "30", value_parser = parse_timeout)]
    timeout: TimeBound,
    /// Largest result a query may return, in rows.
    #[arg(long, default_value_t = Limits::default().max_rows)]
    max_rows: usize,
    /// Largest result a query may return, in bytes of memory (cells, their contents and rows).
    #[arg(long, default_value_t = Limits::default().max_bytes)]
    max_bytes: usize,
    /// Memory budget of the queries in MiB: SQLite's heap, the results being read and what the
    /// allocator adds, for all queries running at once (see docs/reliability.md#memory).
    #[arg(long, value_name = "MIB", default_value_t = MaxMemory::default())]
    max_memory: MaxMemory,
    /// Keep DISTINCT in `testsuite` mode (the reference's `--keep_distinct`).
    #[arg(long)]
    keep_distinct: bool,
    /// Run every case on every database of its folder (`<db>/<db>.sqlite` and the
    /// `<db>_<k>.sqlite` beside it) in any mode: correct only where correct on all of them,
    /// as `every_database = true` in a `[[suite]]` (always so in `testsuite` mode).
    #[arg(long)]
    every_database: bool,
    /// TrustSQL: score predictions as a raw file, without the official post-processing step
    /// that removes DISTINCT from Spider-family predictions.
    #[arg(long)]
    trustsql_raw: bool,
    /// Force the gold file's format instead of detecting it.
    #[arg(long, value_enum)]
    gold_format: Option<GoldFormatArg>,
    /// Force the predictions file's format instead of detecting it.
    #[arg(long, value_enum)]
    pred_format: Option<PredFormatArg>,
    /// Output: tables for people, or JSON for tools (per-case values and the summary).
    #[arg(long, value_enum, default_value = "text")]
    format: OutputFormat,
    /// Metrics to add, comma-separated: `esm` (Spider exact set match, needs `--tables`), `etm`
    /// (Enhanced Tree Matching, needs the databases; schema-only ones do) and SQLMorph regime
    /// names for EXP/EXR/F1, e.g. `EC-EC-IE,EC-PC-PE,SC-EC-IE,NC-PC`, and the registered
    /// per-case metrics such as `row_count` (docs/metrics.md lists them).
    #[arg(long, value_parser = parse_metrics)]
    metrics: Option<MetricList>,
    /// Add BIRD mini-dev Soft-F1 (`evaluation_f1.py`) per case and as a mean, on a 0..1 scale
    /// (the BIRD script prints 100 × the mean), as `soft_f1 = true` in a `[[suite]]`.
    #[arg(long)]
    soft_f1: bool,
    /// Efficiency of each correct answer against its gold, comma-separated: `time` (BIRD's
    /// VES and R-VES from repeated timed executions; machine-dependent) and `steps` (the same
    /// formulas on SQLite VM steps, or PostgreSQL's planner cost: the same on any machine).
    /// See docs/metrics.md.
    #[arg(long, value_parser = parse_efficiency)]
    efficiency: Option<EfficiencyList>,
    /// Timed executions of each query per correct case, with `--efficiency time`.
    #[arg(long, value_name = "N", default_value_t = BIRD_ITERATIONS,
          value_parser = clap::value_parser!(u32).range(1..))]
    efficiency_iterations: u32,
    /// Compute the fine-grained metrics like the SQLMorph reference implementation instead of
    /// the paper's definitions.
    #[arg(long)]
    sqlmorph_compat: bool,
    /// Compute ETM like the reference program (emorynlp/ETM): no soundness guards, its
    /// traversal quirks kept (see docs/metrics.md).
    #[arg(long)]
    etm_compat: bool,
    /// SC column matching with the sentence-transformers model in this folder, in process
    /// (all-MiniLM-L6-v2 or another BERT-family model; a build with the `embedder` feature).
    #[arg(long, conflicts_with = "embeddings_url")]
    embedder: Option<PathBuf>,
    /// SC column matching through an OpenAI-compatible `/v1/embeddings` endpoint (default: the
    /// offline n-gram embedder), e.g. `http://127.0.0.1:8080/v1`.
    #[arg(long, requires = "embeddings_model")]
    embeddings_url: Option<String>,
    /// The embedding model to ask the `--embeddings-url` endpoint for.
    #[arg(long, requires = "embeddings_url")]
    embeddings_model: Option<String>,
    /// Where embeddings are cached.
    #[arg(long, default_value = "snapshots/embeddings.jsonl")]
    embeddings_cache: PathBuf,
    /// A second gold file whose questions are appended as infeasible cases (e.g. Defog's
    /// `idk.csv`), read like `--gold`; their ids become `<file stem>:<id>`.
    #[arg(long)]
    infeasible: Option<PathBuf>,
    /// A generated family run as cases beside the gold's, as `families` does in
    /// `sqlgate.toml`: `NAME=PATH` (a generator's JSONL or a generated suite); repeatable. The
    /// report then compares each family with its seed cases (see docs/metrics.md).
    #[arg(long = "family", value_name = "NAME=PATH", value_parser = parse_family)]
    families: Vec<(String, PathBuf)>,
    /// A penalty c for RS(c), besides 0, 10 and N (the number of cases); repeatable.
    #[arg(long = "penalty", value_name = "C")]
    penalties: Vec<Penalty>,
    /// Count an apology SELECT (string literals only, no FROM, as in `idk.csv`) as an
    /// abstention. Default: only where the suite declares abstention (`trustsql` mode, or
    /// infeasible questions such as `--infeasible`'s); elsewhere it is scored as SQL, as the
    /// references score it.
    #[arg(long, action = ArgAction::Set, value_name = "BOOL")]
    apology_abstains: Option<bool>,
}

/// Regimes named on the command line, in order, without repeats.
#[derive(Clone)]
pub(super) struct RegimeList(pub Vec<Regime>);

/// `--metrics`: `esm`, `etm` and SQLMorph regime names.
#[derive(Clone)]
struct MetricList {
    regimes: Vec<Regime>,
    esm: bool,
    etm: bool,
    registered: Vec<CaseMetric>,
}

fn parse_metrics(text: &str) -> Result<MetricList, String> {
    let names: Vec<&str> = text.split(',').map(str::trim).collect();
    let esm = names.contains(&"esm");
    let etm = names.contains(&"etm");
    let mut registered: Vec<CaseMetric> = names
        .iter()
        .filter_map(|name| CaseMetric::named(name))
        .collect();
    registered.sort();
    registered.dedup();
    let regimes: Vec<&str> = names
        .into_iter()
        .filter(|n| !matches!(*n, "esm" | "etm") && CaseMetric::named(n).is_none())
        .collect();
    let regimes = if regimes.is_empty() {
        Vec::new()
    } else {
        parse_regimes(&regimes.join(","))?.0
    };
    Ok(MetricList {
        regimes,
        esm,
        etm,
        registered,
    })
}

pub(super) fn parse_regimes(text: &str) -> Result<RegimeList, String> {
    let mut regimes = Vec::new();
    for name in text.split(',') {
        let regime: Regime = name
            .parse()
            .map_err(|e: sqlmorph::ParseRegimeError| e.to_string())?;
        if !regimes.contains(&regime) {
            regimes.push(regime);
        }
    }
    Ok(RegimeList(regimes))
}

/// IE is undefined under NC except in compat mode (spec §5): refuse it before any work.
pub(super) fn check_regimes(
    flag: &str,
    regimes: &[Regime],
    compat: bool,
) -> Result<(), InputError> {
    let undefined = regimes
        .iter()
        .find(|r| r.columns == ColumnMatching::NoColumn && r.extras == Extras::Ignore);
    match undefined {
        Some(regime) if !compat => Err(InputError::file(
            flag,
            format!("{}", sqlmorph::MetricError::IgnoreExtrasUnderNc(*regime)),
        )),
        _ => Ok(()),
    }
}

/// `--efficiency`: `time` and `steps`.
#[derive(Clone, Copy)]
struct EfficiencyList {
    timed: bool,
    steps: bool,
}

fn parse_efficiency(text: &str) -> Result<EfficiencyList, String> {
    let mut list = EfficiencyList {
        timed: false,
        steps: false,
    };
    for name in text.split(',').map(str::trim) {
        match name {
            "time" => list.timed = true,
            "steps" => list.steps = true,
            other => return Err(format!("unknown measurement `{other}` (time, steps)")),
        }
    }
    Ok(list)
}

fn parse_family(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, path)) if !name.trim().is_empty() && !path.is_empty() => {
            Ok((name.trim().to_string(), PathBuf::from(path)))
        }
        _ => Err(format!("expected NAME=PATH, got `{text}`")),
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    Text,
    Json,
}

/// A time bound, or none (`--timeout none`).
#[derive(Clone, Copy)]
pub(super) struct TimeBound(pub(super) Option<Duration>);

pub(super) fn parse_timeout(text: &str) -> Result<TimeBound, String> {
    if text == "none" {
        return Ok(TimeBound(None));
    }
    match text.parse::<f64>().ok().and_then(timeout_from_secs) {
        Some(timeout) => Ok(TimeBound(Some(timeout))),
        None => Err(format!(
            "expected a number of seconds in (0, {}] or `none`, got `{text}`",
            MAX_TIMEOUT.as_secs()
        )),
    }
}

pub fn run(args: ScoreArgs) -> Result<(), Error> {
    memory::set_max_memory(args.max_memory);
    let esm = args.metrics.as_ref().is_some_and(|m| m.esm);
    let etm = args.metrics.as_ref().is_some_and(|m| m.etm);
    let (regimes, case_metrics) = args
        .metrics
        .map(|list| (list.regimes, list.registered))
        .unwrap_or_default();
    check_regimes("--metrics", &regimes, args.sqlmorph_compat)?;
    let backend = args
        .server
        .backend(&args.gold, args.scratch_dsn.as_deref())?;
    let options = LoadOptions {
        db_dir: args.db_dir,
        tables: args.tables,
        format: args.gold_format.map(GoldFormat::from),
        backend: backend.clone(),
        python_tests: args.python_tests,
    };
    let mut benchmark = loaders::load(&args.gold, &options)?;
    if let Some(path) = &args.infeasible {
        let extra = loaders::load(path, &options)?;
        append_infeasible(&mut benchmark, extra, path)?;
    }
    for (family, path) in &args.families {
        let cases = loaders::load_family(path, family, &benchmark)?;
        benchmark.cases.extend(cases);
    }
    if !args.families.is_empty() {
        benchmark.check_ids()?;
        benchmark.check_databases()?;
    }
    let mut predictions = loaders::load_predictions(
        &args.pred,
        args.pred_format.map(PredFormat::from),
        &benchmark,
    )?;
    let mode = args
        .mode
        .map_or(benchmark.format.default_mode(), Mode::from);
    if args
        .apology_abstains
        .unwrap_or_else(|| benchmark.apology_abstains_by_default(mode))
    {
        abstain_on_apologies(&mut predictions);
    }
    let limits = Limits {
        timeout: args.timeout.0,
        max_rows: args.max_rows,
        max_bytes: args.max_bytes,
        max_steps: None,
    };
    let mode_options = ModeOptions {
        keep_distinct: args.keep_distinct,
        pair_budget: args.timeout.0,
        trustsql_raw: args.trustsql_raw,
    };
    super::warn_about_the_role(&benchmark, &*backend)?;
    let engine = Engine::new(limits, backend.clone());
    let embedder = match (&args.embeddings_url, &args.embeddings_model) {
        (Some(url), Some(model)) => {
            let client = Client::new(&ClientConfig {
                base_url: url.clone(),
                api_key_env: None,
                timeout: Duration::from_secs(60),
            })
            .map_err(|e| Error::Usage(format!("--embeddings-url: {}", e.0)))?;
            let throttle = Throttle::new(ThrottleConfig::default());
            let embedder =
                CachedEmbedder::open(client, model, &args.embeddings_cache, Box::new(throttle))?;
            Some(Arc::new(embedder) as Arc<dyn sqlmorph::Embedder + Send>)
        }
        _ => match &args.embedder {
            Some(dir) => Some(Arc::from(super::embedder::open(dir)?)),
            None => None,
        },
    };
    let esm = if esm {
        let tables = benchmark.tables.clone().ok_or_else(|| {
            InputError::file(
                &args.gold,
                "--metrics esm needs the schemas' foreign keys: pass --tables tables.json",
            )
        })?;
        Some(Arc::new(esm::Evaluator::with_database_dir(
            &tables,
            &benchmark.db_dir,
            benchmark.backend.clone(),
        )?))
    } else {
        None
    };
    let scoring = Scoring {
        mode,
        mode_options,
        every_database: args.every_database,
        regimes,
        sqlmorph_compat: args.sqlmorph_compat,
        embedder,
        esm,
        etm: etm.then(|| Arc::new(etm::Evaluator::new(args.etm_compat))),
        robustness: !args.families.is_empty(),
        soft_f1: args.soft_f1,
        efficiency: args.efficiency.map(|list| efficiency::Settings {
            timed: list.timed,
            steps: list.steps,
            iterations: args.efficiency_iterations,
        }),
        case_metrics,
        ..Scoring::new(mode)
    };
    let databases = scoring.databases(&benchmark)?;
    if let Some(problem) = scoring.every_database_problem(&benchmark, &databases) {
        return Err(Error::Usage(format!("--every-database: {problem}")));
    }
    // Server databases are names, not files to look into.
    if !benchmark.on_server() {
        for warning in scoring::empty_database_warnings(&*backend, &databases) {
            eprintln!("warning: {warning}");
        }
    }
    let scores = scoring::score_all(
        &scoring,
        &benchmark.cases,
        &databases,
        &predictions,
        &engine,
    );
    let summary = scoring::summarize(
        &scoring,
        &scores.iter().collect::<Vec<_>>(),
        &args.penalties,
    );
    let output = match args.format {
        OutputFormat::Text => score_text::render(&summary, &args.gold.display().to_string()),
        OutputFormat::Json => score_json::render(&summary, &scores),
    };
    println!("{output}");
    // Counted in the report; said on stderr too, so a dead embeddings server cannot pass
    // unnoticed in a script that reads only the JSON's means.
    for (metric, count) in &summary.metric_errors {
        let first = scores
            .iter()
            .flat_map(|s| s.metric_errors())
            .find(|(failed, _)| failed == metric)
            .map_or("", |(_, reason)| reason);
        eprintln!(
            "warning: {} could not be computed for {count} case(s), scored 0; first: {first}",
            metric.name()
        );
    }
    Ok(())
}

/// Appends the cases of `extra` as infeasible ones (no gold), their ids prefixed with the
/// file's stem so that they cannot collide with the gold file's (`idk:0`).
fn append_infeasible(
    benchmark: &mut Benchmark,
    extra: Benchmark,
    path: &std::path::Path,
) -> Result<(), InputError> {
    let stem = path
        .file_stem()
        .map_or_else(|| "infeasible".into(), |s| s.to_string_lossy());
    let mut ids: std::collections::HashSet<String> =
        benchmark.cases.iter().map(|c| c.id.clone()).collect();
    for (index, mut case) in extra.cases.into_iter().enumerate() {
        case.id = format!("{stem}:{}", case.id);
        if !ids.insert(case.id.clone()) {
            return Err(InputError::file(
                path,
                format!("case id `{}` is also in the gold file", case.id),
            )
            .at_record(index));
        }
        case.feasible = false;
        case.gold.clear();
        benchmark.cases.push(case);
    }
    Ok(())
}

/// Turns apology SELECTs into abstentions ([`loaders::is_apology`]).
fn abstain_on_apologies(predictions: &mut [Prediction]) {
    for prediction in predictions {
        if matches!(&prediction.answer, Answer::Sql(sql) if sqlgate_eval::model_output::is_apology(sql))
        {
            prediction.answer = Answer::Abstain;
        }
    }
}
