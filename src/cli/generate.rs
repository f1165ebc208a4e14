//! `sqlgate generate <family>`: generators write new cases to disk; they never run inside a test.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::{generator_client, Source};
use sqlgate::report::plural;
use sqlgate::Error;
use sqlgate_eval::error::InputError;
use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_eval::files::write_atomically;
use sqlgate_eval::loaders::Case;
use sqlgate_eval::spider::Schema;
use sqlgate_generate::mutate::jqe;
use sqlgate_generate::mutate::jqe::expand::{Centrality, Ranking};
use sqlgate_generate::mutate::jqe::graph::{ForeignKey, SchemaGraph};
use sqlgate_generate::mutate::jqe::rewrite::{Rewrite, Rewriter, DEFAULT_PROMPT};
use sqlgate_generate::mutate::{family, infeasible};
use sqlgate_llm::cache::JsonlCache;
use sqlgate_llm::throttle::Throttle;
use sqlgate_llm::ThrottleConfig;

#[derive(Subcommand)]
pub enum GenerateCommand {
    /// Single-error SQL mutants of every gold query, as a suite whose predictions are the mutants.
    Errors(ErrorsArgs),
    /// TrustSQL's infeasible questions for every database of a benchmark, as a suite.
    Infeasible(InfeasibleArgs),
    /// Join Query Expansion: each gold query joined to one more adjacent table, kept when it
    /// returns rows and its join pattern is new for its database (JSONL, one expansion a line).
    Jqe(JqeArgs),
    /// Textual Query Augmentation: identifiers made less natural (schema, SQL and question) or
    /// the linker table's mentions hidden, as families (see docs/tqa.md).
    Tqa(super::tqa::TqaArgs),
    /// Schema-aligned paraphrases (SQL2NL): k questions per gold query from the offline
    /// verbalizer or a chat model, kept when close to the original (see docs/paraphrase.md).
    Paraphrase(super::para::ParaphraseArgs),
}

#[derive(Args)]
pub struct JqeArgs {
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    server: super::ServerArgs,
    /// JSONL file to write the retained expansions to.
    #[arg(long)]
    out: PathBuf,
    /// Rounds of expansion: round r expands round r-1's retained queries (one more table each).
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Queries kept per unique join pattern and database (the originals count).
    #[arg(long, default_value_t = 1)]
    per_pattern: usize,
    /// At most this many retained expansions in all (databases in name order).
    #[arg(long)]
    budget: Option<usize>,
    /// Use only declared foreign keys, even when a database declares none.
    #[arg(long)]
    no_infer_keys: bool,
    /// Rank join condition combinations by ascending complexity (fewest new joins first).
    #[arg(long)]
    simplest_first: bool,
    /// Also rank by the added table's centrality in the schema graph (after complexity).
    #[arg(long, value_enum)]
    centrality: Option<CentralityArg>,
    /// Rank by centrality before complexity.
    #[arg(long, requires = "centrality")]
    centrality_first: bool,
    /// Prefer the least central tables instead of the most central.
    #[arg(long, requires = "centrality")]
    centrality_ascending: bool,
    /// Rewrite each expansion's question with a chat model at this OpenAI-compatible endpoint
    /// (default: the deterministic template only), e.g. `http://127.0.0.1:8765/v1`.
    #[arg(long, requires = "llm_model")]
    llm_url: Option<String>,
    /// The chat model to ask the `--llm-url` endpoint for.
    #[arg(long, requires = "llm_url")]
    llm_model: Option<String>,
    /// The environment variable holding the endpoint's API key.
    #[arg(long)]
    llm_api_key_env: Option<String>,
    /// The rewrite prompt (default: the built-in one; placeholders in docs/jqe.md).
    #[arg(long)]
    llm_prompt: Option<PathBuf>,
    /// Where rewrites are cached (default: `<out>.rewrites.jsonl`).
    #[arg(long)]
    llm_cache: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum CentralityArg {
    Degree,
    Betweenness,
}

#[derive(Args)]
pub struct ErrorsArgs {
    #[command(flatten)]
    source: Source,
    /// Folder to write `suite.toml`, `cases.jsonl` and `predictions.jsonl` into.
    #[arg(long)]
    out: PathBuf,
    /// Suite name (default: `<benchmark>-errors`).
    #[arg(long)]
    name: Option<String>,
    /// Chains of up to this many compatible operators.
    #[arg(long, default_value_t = 1)]
    depth: usize,
    /// Run seed: the same seed and inputs write the same file.
    #[arg(long, default_value_t = sqlgate_generate::mutate::DEFAULT_SEED)]
    seed: u64,
}

#[derive(Args)]
pub struct InfeasibleArgs {
    #[command(flatten)]
    source: Source,
    /// Folder to write `suite.toml` and `cases.jsonl` into.
    #[arg(long)]
    out: PathBuf,
    /// Suite name (default: `<benchmark>-infeasible`).
    #[arg(long)]
    name: Option<String>,
    /// Questions of each kind per database (at most; duplicates are dropped).
    #[arg(long, default_value_t = 2)]
    per_kind: usize,
    /// Run seed: the same seed and inputs write the same file.
    #[arg(long, default_value_t = sqlgate_generate::mutate::DEFAULT_SEED)]
    seed: u64,
}

pub fn run(command: GenerateCommand) -> Result<(), Error> {
    match command {
        GenerateCommand::Errors(args) => errors(args),
        GenerateCommand::Infeasible(args) => infeasible(args),
        GenerateCommand::Jqe(args) => jqe(args),
        GenerateCommand::Tqa(args) => super::tqa::run(args),
        GenerateCommand::Paraphrase(args) => super::para::run(args),
    }
}

fn errors(args: ErrorsArgs) -> Result<(), Error> {
    if args.depth == 0 {
        return Err(Error::Usage("--depth must be at least 1".into()));
    }
    // State cases get DML mutants.
    let bench = args.source.load_with_state_cases()?;
    let family = family::errors_family(&bench, args.seed, args.depth)?;
    let name = args
        .name
        .unwrap_or_else(|| format!("{}-errors", bench.name));
    family::write(&args.out, &name, &bench, &family)?;
    println!(
        "{} of {} written to {}",
        plural(family.mutants.len() + family.dml.len(), "mutant"),
        plural(bench.cases.len(), "case"),
        args.out.display()
    );
    if !family.unparsed.is_empty() {
        println!(
            "gold queries the SQL parser cannot read: {}",
            family.unparsed.join(", ")
        );
    }
    Ok(())
}

fn infeasible(args: InfeasibleArgs) -> Result<(), Error> {
    let bench = args.source.load()?;
    // One schema per database, in order of first appearance.
    let mut schemas: Vec<(String, Schema)> = Vec::new();
    for case in &bench.cases {
        if !schemas.iter().any(|(db, _)| db == &case.db) {
            let file = bench.db_files(case, false)?.remove(0);
            schemas.push((case.db.clone(), Schema::from_sqlite(&*bench.backend, file)?));
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
        "{} on {} written to {}",
        plural(count, "infeasible question"),
        plural(schemas.len(), "database"),
        args.out.display()
    );
    Ok(())
}

fn jqe(args: JqeArgs) -> Result<(), Error> {
    if args.rounds == 0 || args.per_pattern == 0 {
        return Err(Error::Usage(
            "--rounds and --per-pattern must be at least 1".into(),
        ));
    }
    let options = jqe::Options {
        rounds: args.rounds,
        per_pattern: args.per_pattern,
        budget: args.budget,
        infer_keys: !args.no_infer_keys,
        ranking: Ranking {
            complexity_ascending: args.simplest_first,
            centrality: args.centrality.map(|c| match c {
                CentralityArg::Degree => Centrality::Degree,
                CentralityArg::Betweenness => Centrality::Betweenness,
            }),
            centrality_ascending: args.centrality_ascending,
            centrality_first: args.centrality_first,
        },
    };
    let backend = args.server.backend(&args.source.gold, None)?;
    let bench = args.source.load_from(&backend)?;
    let mut by_db: BTreeMap<&str, Vec<(&Case, jqe::Seed)>> = BTreeMap::new();
    for case in bench.cases.iter().filter(|c| c.feasible) {
        if let Some(sql) = case.gold.first() {
            let seed = jqe::Seed {
                id: case.id.clone(),
                question: case.question.clone(),
                evidence: case.evidence.clone(),
                sql: sql.clone(),
            };
            by_db
                .entry(case.db.as_str())
                .or_default()
                .push((case, seed));
        }
    }
    let rewriter = rewriter(&args)?;
    // (accepted, refused) LLM rewrites.
    let mut rewrites = (0usize, 0usize);
    let engine = Engine::new(Limits::default(), backend.clone());
    let mut total = jqe::Stats::default();
    let mut lines = String::new();
    for (db, seeds) in &by_db {
        let path = bench
            .db_files(seeds[0].0, false)?
            .into_iter()
            .next()
            .ok_or_else(|| {
                InputError::file(&bench.db_dir, format!("no database file for `{db}`"))
            })?;
        let mut schema = sqlgate_eval::exec::schema::query(&engine, &path).map_err(|e| {
            InputError::file(&path, format!("cannot read the schema: {}", e.message))
        })?;
        // Explicit join keys count as declared foreign keys, so they replace inference.
        for key in bench.join_keys.get(*db).into_iter().flatten() {
            let key = ForeignKey::parse(key, &schema).map_err(|e| {
                InputError::file(&args.source.gold, format!("[join_keys] {db}: {e}"))
            })?;
            schema.foreign_keys.push(key);
        }
        let graph = SchemaGraph::build(&schema, options.infer_keys);
        let inferred = graph.inferred_edges();
        if !inferred.is_empty() {
            let pairs: Vec<String> = inferred.iter().map(|(a, b)| format!("{a}–{b}")).collect();
            println!("{db}: inferred join edges: {}", pairs.join(", "));
        }
        let seeds: Vec<jqe::Seed> = seeds.iter().map(|(_, seed)| seed.clone()).collect();
        // The budget caps the whole run: each database gets what earlier ones left.
        let options = jqe::Options {
            budget: options.budget.map(|b| b.saturating_sub(total.retained)),
            ..options.clone()
        };
        let outcome = jqe::expand_database(db, &path, &graph, &seeds, &options, &engine);
        for expansion in &outcome.expansions {
            let mut expansion = expansion.clone();
            let mut refused = None;
            if let Some(rewriter) = &rewriter {
                let seed = seeds.iter().find(|s| s.id == expansion.seed_id);
                let (question, sql) =
                    seed.map_or(("", ""), |s| (s.question.as_str(), s.sql.as_str()));
                match rewriter
                    .rewrite(&expansion, question, sql)
                    .map_err(|e| e.context(format!("--llm-url, rewriting {}", expansion.id)))?
                {
                    Rewrite::Accepted(text) => {
                        expansion.question = text;
                        rewrites.0 += 1;
                    }
                    Rewrite::Rejected { why, reply } => {
                        println!(
                            "{}: kept the literal rewrite, the model's reply was refused ({why}): {reply:?}",
                            expansion.id
                        );
                        rewrites.1 += 1;
                        refused = Some(why);
                    }
                }
            }
            let error = |e: serde_json::Error| InputError::file(&args.out, e.to_string());
            let line = match refused {
                // Why this expansion's question is the literal rewrite, not the model's.
                Some(why) => {
                    let mut record = serde_json::to_value(&expansion).map_err(error)?;
                    record["llm_refused"] = why.into();
                    record.to_string()
                }
                None => serde_json::to_string(&expansion).map_err(error)?,
            };
            lines.push_str(&line);
            lines.push('\n');
        }
        total.merge(&outcome.stats);
    }
    print_stats(&total);
    if rewriter.is_some() {
        println!(
            "LLM rewrites: {} accepted, {} refused (the literal rewrite kept)",
            rewrites.0, rewrites.1
        );
    }
    if lines.is_empty() {
        return Err(Error::Usage(format!(
            "jqe: 0 expansions retained of {} generated (see the counts above); the family would be empty",
            total.generated
        )));
    }
    write_atomically(&args.out, lines.as_bytes())?;
    Ok(())
}

fn rewriter(args: &JqeArgs) -> Result<Option<Rewriter>, Error> {
    let (Some(url), Some(model)) = (&args.llm_url, &args.llm_model) else {
        return Ok(None);
    };
    let client = generator_client::connect("--llm-url", url, &args.llm_api_key_env)?;
    let prompt = match &args.llm_prompt {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| InputError::file(path, format!("cannot read the prompt: {e}")))?,
        None => DEFAULT_PROMPT.to_string(),
    };
    let cache_path = args.llm_cache.clone().unwrap_or_else(|| {
        let mut name = args.out.as_os_str().to_owned();
        name.push(".rewrites.jsonl");
        PathBuf::from(name)
    });
    Ok(Some(Rewriter {
        client,
        model: model.clone(),
        prompt,
        cache: JsonlCache::open(&cache_path)?,
        throttle: Throttle::new(ThrottleConfig::default()),
    }))
}

fn print_stats(stats: &jqe::Stats) {
    println!(
        "seeds without a join graph: {}; redundant JCCs: {}; invalid (error or no rows): {}",
        stats.seeds_unparsed, stats.redundant, stats.invalid
    );
    println!(
        "generated {}, pruned {}, retained {}",
        stats.generated, stats.pruned, stats.retained
    );
    for (name, set) in [
        ("original", &stats.original),
        ("generated", &stats.generated_shapes),
        ("retained", &stats.retained_shapes),
    ] {
        println!(
            "{name:>9}: {:>5} join graphs, average degree {:.2}, cyclic {:.2}%",
            set.count,
            set.average_degree(),
            100.0 * set.cyclic_share()
        );
    }
}
