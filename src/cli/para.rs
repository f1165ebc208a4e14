//! `sqlgate generate paraphrase`: the `para` family written to a JSONL file (docs/paraphrase.md).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use clap::Args;

use super::{generator_client, Source};
use sqlgate::report::plural;
use sqlgate::Error;
use sqlgate_eval::error::InputError;
use sqlgate_eval::exec::schema::Schema;
use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_eval::files::write_atomically;
use sqlgate_eval::loaders::{self, Answer, Benchmark, Case};
use sqlgate_eval::metrics::sqlmorph::{Embedder, NgramEmbedder};
use sqlgate_generate::mutate::para::descriptions::{self, DescriptionFile, Descriptions};
use sqlgate_generate::mutate::para::llm::{
    parse_reply, schema_definitions, Paraphraser, DEFAULT_PROMPT, PLACEHOLDERS,
};
use sqlgate_generate::mutate::para::{
    judge, paraphrase_id, reference, rounded, similarities, verbalizations, GoldSql, Method,
    Record, Reference, SchemaNames, Verdict, DEFAULT_MIN_CS, MODEL_MIN_CS, OFFLINE_MIN_CS,
};
use sqlgate_generate::mutate::tqa::wordnet::WordNet;
use sqlgate_llm::cache::JsonlCache;
use sqlgate_llm::throttle::Throttle;
use sqlgate_llm::CachedEmbedder;
use sqlgate_llm::ThrottleConfig;

#[derive(Args)]
pub struct ParaphraseArgs {
    #[command(flatten)]
    source: Source,
    /// JSONL file to write the family to (one paraphrase a line).
    #[arg(long)]
    out: PathBuf,
    /// Paraphrases asked for per gold query.
    #[arg(short, long, default_value_t = 10)]
    k: usize,
    /// Run seed of the verbalizer's choices (and the chat model's `seed`): the same seed and
    /// inputs write the same file.
    #[arg(long, default_value_t = sqlgate_generate::mutate::DEFAULT_SEED)]
    seed: u64,
    /// Keep a paraphrase when the cosine similarity of its embedding to the original
    /// question's is at least this (paper §3.1). Default: the embedder's calibrated threshold
    /// (0.35 for the offline n-gram embedder, 0.55 for `--embedder`, the paper's 0.6 for
    /// `--embeddings-url`).
    #[arg(long)]
    min_cs: Option<f64>,
    /// WordNet 3.0 dict folder, to split identifiers that run words together
    /// (`citingpaperid` → "citing paper ID") and, with `--llm-url`, to accept a synonym for a
    /// clause's word ("evaluation" for "rating"); default: $SQLGATE_WORDNET, else
    /// /usr/share/wordnet; without it identifiers are split at `_` and case changes only.
    #[arg(long)]
    wordnet: Option<PathBuf>,
    /// Human names and descriptions of the schema, for the verbalizer: Spider's `tables.json`,
    /// a Defog-style `<db>.columns.json` (it describes the database `<db>`), or a folder of
    /// them. Without it, `<db>.columns.json` beside a database file `<db>.sqlite` is used when
    /// present; SQLite column comments (`-- ...` on a column's line) always are.
    #[arg(long, conflicts_with = "llm_url")]
    descriptions: Option<PathBuf>,
    /// Ask a chat model at this OpenAI-compatible endpoint (the paper's Appendix A prompt,
    /// temperature 0, cached) instead of the offline verbalizer, e.g. `http://127.0.0.1:8765/v1`.
    #[arg(long, requires = "model")]
    llm_url: Option<String>,
    /// The chat model to ask the `--llm-url` endpoint for.
    #[arg(long, requires = "llm_url")]
    model: Option<String>,
    /// The environment variable holding the chat endpoint's API key.
    #[arg(long, requires = "llm_url")]
    llm_api_key_env: Option<String>,
    /// The prompt template (default: the paper's; placeholders `{num_queries}`,
    /// `{schema_definitions}`, `{sql_query}`).
    #[arg(long, requires = "llm_url")]
    prompt: Option<PathBuf>,
    /// Where the model's replies are cached (default: `<out>.llm.jsonl`).
    #[arg(long, requires = "llm_url")]
    llm_cache: Option<PathBuf>,
    /// Embed with the sentence-transformers model in this folder, in process (all-MiniLM-L6-v2
    /// or another BERT-family model; a build with the `embedder` feature), for the similarity
    /// filter (default: the offline n-gram embedder).
    #[arg(long, conflicts_with = "embeddings_url")]
    embedder: Option<PathBuf>,
    /// Embed through this OpenAI-compatible `/v1/embeddings` endpoint for the similarity
    /// filter (default: the offline n-gram embedder).
    #[arg(long, requires = "embeddings_model")]
    embeddings_url: Option<String>,
    /// The embedding model to ask the `--embeddings-url` endpoint for.
    #[arg(long, requires = "embeddings_url")]
    embeddings_model: Option<String>,
    /// The environment variable holding the embeddings endpoint's API key.
    #[arg(long, requires = "embeddings_url")]
    embeddings_api_key_env: Option<String>,
    /// Where embeddings are cached (default: `<out>.embeddings.jsonl`).
    #[arg(long, requires = "embeddings_url")]
    embeddings_cache: Option<PathBuf>,
    /// A predictions file for the benchmark: its answers, and each answer again for every
    /// paraphrase of its case, are written to `--predictions-out` (a replay system's file for
    /// a suite with this family).
    #[arg(long, requires = "predictions_out")]
    predictions: Option<PathBuf>,
    /// Where the carried predictions are written.
    #[arg(long, requires = "predictions")]
    predictions_out: Option<PathBuf>,
}

/// What one run did, for the closing report.
#[derive(Default)]
struct Tally {
    golds: usize,
    /// Golds without a question, whose paraphrases were compared with the gold's reading.
    without_question: usize,
    /// Golds skipped, by the construct the verbalizer has no wording for.
    skipped: BTreeMap<String, usize>,
    generated: usize,
    dropped: usize,
    /// Paraphrases that negate, flip or swap what the gold computes.
    disagreed: usize,
    written: usize,
    /// Golds with at least three kept paraphrases.
    three_or_more: usize,
    /// The other paraphrased golds, with why their paraphrases were dropped.
    short: Vec<Short>,
    cs_sum: f64,
    /// LLM items refused, by reason.
    rejected: BTreeMap<&'static str, usize>,
}

/// A gold that kept fewer than three paraphrases, and why.
#[derive(Default)]
struct Short {
    id: String,
    generated: usize,
    /// A chat model's items refused before the filter.
    refused: usize,
    kept: usize,
    below: usize,
    disagreeing: usize,
}

/// How many golds under three the report names one by one.
const SHORT_LISTED: usize = 20;

pub fn run(args: ParaphraseArgs) -> Result<(), Error> {
    if args.k == 0 {
        return Err(Error::Usage("-k must be at least 1".into()));
    }
    let min_cs = args.min_cs.unwrap_or(if args.embeddings_url.is_some() {
        DEFAULT_MIN_CS
    } else if args.embedder.is_some() {
        MODEL_MIN_CS
    } else {
        OFFLINE_MIN_CS
    });
    if !(0.0..=1.0).contains(&min_cs) {
        return Err(Error::Usage("--min-cs must be between 0 and 1".into()));
    }
    let bench = args.source.load()?;
    let embedder = embedder(&args)?;
    let paraphraser = paraphraser(&args)?;
    let wordnet = wordnet(&args)?;
    let described = DescribedBy::open(args.descriptions.as_deref(), &bench)?;
    let mut names_by_db: HashMap<String, SchemaNames> = HashMap::new();
    let mut schemas: HashMap<String, Schema> = HashMap::new();
    let mut tally = Tally::default();
    let mut lines = String::new();
    let mut kept_ids: Vec<(String, &Case)> = Vec::new();
    for case in bench.cases.iter().filter(|c| c.feasible) {
        let Some(sql) = case.gold.first() else {
            continue;
        };
        tally.golds += 1;
        let names = schema_names(&bench, case, &described, wordnet.as_ref(), &mut names_by_db)?;
        let reference = match reference(
            &case.id,
            sql,
            &case.question,
            args.seed,
            wordnet.as_ref(),
            names,
        ) {
            Ok(reference) => reference,
            Err(unsupported) => {
                *tally.skipped.entry(unsupported.0).or_default() += 1;
                continue;
            }
        };
        if let Reference::GoldReading(_) = reference {
            tally.without_question += 1;
        }
        let (candidates, refused) = match &paraphraser {
            None => match verbalizations(
                &case.id,
                sql,
                reference.text(),
                args.k,
                args.seed,
                wordnet.as_ref(),
                names,
            ) {
                Ok(found) => (found, 0),
                Err(unsupported) => {
                    *tally.skipped.entry(unsupported.0).or_default() += 1;
                    continue;
                }
            },
            Some(paraphraser) => {
                let schema = schema_text(&bench, case, &mut schemas, sql)?;
                let reply = paraphraser
                    .ask(&schema, sql, args.k)
                    .map_err(|e| e.context(format!("--llm-url, case {}", case.id)))?;
                let parsed = parse_reply(
                    &reply,
                    sql,
                    reference.text(),
                    &paraphraser.examples(),
                    args.k,
                    wordnet.as_ref(),
                    // The n-gram embedder reads spelling, not meaning: no synonym by it.
                    args.embedder.as_ref().map(|_| embedder.as_ref()),
                );
                for (why, _) in &parsed.rejected {
                    *tally.rejected.entry(why).or_default() += 1;
                }
                (parsed.questions, parsed.rejected.len())
            }
        };
        tally.generated += candidates.len();
        let scores = similarities(embedder.as_ref(), reference.text(), &candidates)
            .map_err(|e| e.context(format!("--embeddings-url, case {}", case.id)))?;
        let mut gold = Short {
            id: case.id.clone(),
            generated: candidates.len(),
            refused,
            ..Short::default()
        };
        for (n, (question, cs)) in candidates.into_iter().zip(scores).enumerate() {
            match judge(cs, min_cs, sql, &question, names) {
                Verdict::Kept => {}
                Verdict::TooDissimilar => {
                    gold.below += 1;
                    continue;
                }
                Verdict::Disagrees => {
                    gold.disagreeing += 1;
                    continue;
                }
            }
            gold.kept += 1;
            tally.cs_sum += cs;
            let record = Record {
                id: paraphrase_id(&case.id, n + 1),
                seed_id: case.id.clone(),
                db: case.db.clone(),
                sql: GoldSql::of(&case.gold),
                question,
                evidence: case.evidence.clone(),
                cs: rounded(cs),
                reading: match &reference {
                    Reference::GoldReading(text) => Some(text.clone()),
                    Reference::Question(_) => None,
                },
                method: if paraphraser.is_some() {
                    Method::Llm
                } else {
                    Method::Verbalizer
                },
            };
            let line = serde_json::to_string(&record)
                .map_err(|e| InputError::file(&args.out, e.to_string()))?;
            lines.push_str(&line);
            lines.push('\n');
            kept_ids.push((record.id, case));
        }
        tally.written += gold.kept;
        tally.dropped += gold.below;
        tally.disagreed += gold.disagreeing;
        if gold.kept >= 3 {
            tally.three_or_more += 1;
        } else {
            tally.short.push(gold);
        }
    }
    report(&args, &tally, min_cs, embedder.model_id());
    if tally.written == 0 {
        return Err(Error::Usage(empty_family(&tally)));
    }
    write_atomically(&args.out, lines.as_bytes())?;
    if let (Some(input), Some(output)) = (&args.predictions, &args.predictions_out) {
        carry_predictions(&bench, input, output, &kept_ids)?;
    }
    Ok(())
}

/// Why nothing was kept: `paraphrase: 0 of 39 kept: 20 below --min-cs, 19 refused as the
/// prompt's example`.
fn empty_family(tally: &Tally) -> String {
    let refused: usize = tally.rejected.values().sum();
    let mut reasons = vec![format!("{} below --min-cs", tally.dropped)];
    if tally.disagreed > 0 {
        reasons.push(format!("{} disagreeing with the gold", tally.disagreed));
    }
    reasons.extend(
        tally
            .rejected
            .iter()
            .map(|(why, count)| format!("{count} refused as {why}")),
    );
    let skipped: usize = tally.skipped.values().sum();
    if skipped > 0 {
        reasons.push(format!("{} skipped", plural(skipped, "gold")));
    }
    format!(
        "paraphrase: 0 of {} kept: {}; the family would be empty",
        tally.generated + refused,
        reasons.join(", ")
    )
}

fn report(args: &ParaphraseArgs, tally: &Tally, min_cs: f64, embedder: &str) {
    let source = if args.llm_url.is_some() {
        "the chat model"
    } else {
        "the verbalizer"
    };
    println!(
        "{} of {} generated by {source}; {} below cs {min_cs} ({embedder}) and {} that \
         {} not say the gold's values, negations, comparisons or aggregates; {} written to {}",
        plural(tally.generated, "paraphrase"),
        plural(tally.golds, "gold"),
        plural(tally.dropped, "dropped paraphrase"),
        tally.disagreed,
        if tally.disagreed == 1 { "does" } else { "do" },
        plural(tally.written, "paraphrase"),
        args.out.display()
    );
    let mean = if tally.written == 0 {
        0.0
    } else {
        tally.cs_sum / tally.written as f64
    };
    println!(
        "golds with at least 3 kept paraphrases: {}/{} ({:.1}%); mean cs {mean:.3}",
        tally.three_or_more,
        tally.golds,
        100.0 * tally.three_or_more as f64 / tally.golds.max(1) as f64
    );
    if tally.without_question > 0 {
        println!(
            "{} without a question: cs measured against the gold's own reading",
            plural(tally.without_question, "gold")
        );
    }
    if !tally.short.is_empty() {
        println!("golds with fewer than 3 kept paraphrases:");
        for gold in tally.short.iter().take(SHORT_LISTED) {
            let refused = if gold.refused > 0 {
                format!("{} refused, ", gold.refused)
            } else {
                String::new()
            };
            println!(
                "  {}: {} kept of {} ({refused}{} below cs, {} disagreeing)",
                gold.id,
                gold.kept,
                gold.generated + gold.refused,
                gold.below,
                gold.disagreeing
            );
        }
        if tally.short.len() > SHORT_LISTED {
            println!("  and {} more", tally.short.len() - SHORT_LISTED);
        }
    }
    if !tally.skipped.is_empty() {
        let skipped: usize = tally.skipped.values().sum();
        println!(
            "{} skipped, by the construct the verbalizer cannot say:",
            plural(skipped, "gold")
        );
        for (construct, count) in &tally.skipped {
            println!("  {count:>4}  {construct}");
        }
    }
    if !tally.rejected.is_empty() {
        println!("model items refused:");
        for (why, count) in &tally.rejected {
            println!("  {count:>4}  {why}");
        }
    }
}

/// The schema part of the prompt for `case`'s database, read once per database.
fn schema_text(
    bench: &Benchmark,
    case: &Case,
    schemas: &mut HashMap<String, Schema>,
    sql: &str,
) -> Result<String, InputError> {
    if !schemas.contains_key(&case.db) {
        let path = bench.db_files(case, false)?.remove(0);
        let schema = sqlgate_engine_sqlite::read_schema(&path)
            .map_err(|e| InputError::file(&path, format!("cannot read the schema: {e}")))?;
        schemas.insert(case.db.clone(), schema);
    }
    Ok(schemas
        .get(&case.db)
        .map(|schema| schema_definitions(schema, sql))
        .unwrap_or_default())
}

/// Where the databases' descriptions come from (`--descriptions`, docs/paraphrase.md).
enum DescribedBy {
    /// No file: `<db>.columns.json` beside the database file, when there is one.
    BesideDatabases,
    /// Spider's `tables.json`, or one Defog-style file for the database its name says.
    File(HashMap<String, Descriptions>),
    /// A folder of `<db>.columns.json` files.
    Folder(PathBuf),
}

impl DescribedBy {
    fn open(path: Option<&Path>, bench: &Benchmark) -> Result<DescribedBy, InputError> {
        let Some(path) = path else {
            return Ok(DescribedBy::BesideDatabases);
        };
        if path.is_dir() {
            return Ok(DescribedBy::Folder(path.to_path_buf()));
        }
        match read_descriptions(path)? {
            DescriptionFile::Databases(databases) => Ok(DescribedBy::File(databases)),
            DescriptionFile::OneDatabase(one) => {
                let name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default();
                let Some(db) = name.strip_suffix(".columns.json") else {
                    return Err(InputError::file(
                        path,
                        "a descriptions file of one database is named `<db>.columns.json` \
                         after the database it describes",
                    ));
                };
                if !bench.cases.iter().any(|c| c.db == db) {
                    return Err(InputError::file(
                        path,
                        format!(
                            "describes the database `{db}`, which no case of the benchmark uses"
                        ),
                    ));
                }
                Ok(DescribedBy::File(HashMap::from([(db.to_string(), one)])))
            }
        }
    }

    /// The descriptions of `db`, whose file (when it has one) is `file`.
    fn of(&self, db: &str, file: Option<&Path>) -> Result<Descriptions, InputError> {
        let path = match self {
            DescribedBy::File(databases) => {
                return Ok(databases.get(db).cloned().unwrap_or_default())
            }
            DescribedBy::Folder(dir) => dir.join(format!("{db}.columns.json")),
            DescribedBy::BesideDatabases => match file.and_then(Path::parent) {
                Some(dir) => dir.join(format!("{db}.columns.json")),
                None => return Ok(Descriptions::default()),
            },
        };
        if !path.is_file() {
            return Ok(Descriptions::default());
        }
        match read_descriptions(&path)? {
            DescriptionFile::OneDatabase(one) => Ok(one),
            DescriptionFile::Databases(mut databases) => {
                Ok(databases.remove(db).unwrap_or_default())
            }
        }
    }
}

fn read_descriptions(path: &Path) -> Result<DescriptionFile, InputError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::file(path, format!("cannot read the descriptions: {e}")))?;
    descriptions::parse(&text).map_err(|e| InputError::file(path, e.to_string()))
}

/// The names the verbalizer gives `case`'s database, built once per database from its
/// descriptions, its column comments and its schema. A benchmark on a server, or a database
/// file that cannot be read, leaves the schema unknown: the verbalizer then reads the
/// identifiers alone (it needs no database).
fn schema_names<'n>(
    bench: &Benchmark,
    case: &Case,
    described: &DescribedBy,
    wordnet: Option<&WordNet>,
    names: &'n mut HashMap<String, SchemaNames>,
) -> Result<&'n SchemaNames, InputError> {
    if !names.contains_key(&case.db) {
        let db = bench.db_files(case, false).ok().and_then(|mut f| f.pop());
        let file = db.as_deref().filter(|_| !bench.on_server());
        let mut descriptions = described.of(&case.db, file)?;
        // The schema and the comments of its catalog, through the suite's engine.
        let engine = Engine::new(Limits::default(), bench.backend.clone());
        let schema = db
            .as_deref()
            .and_then(|db| sqlgate_eval::exec::schema::query(&engine, db).ok());
        if let Some(comments) = db
            .as_deref()
            .and_then(|db| descriptions::catalog_comments(&engine, db).ok())
        {
            descriptions.fill_from(comments);
        }
        let built = SchemaNames::build(schema.as_ref(), &descriptions, wordnet);
        names.insert(case.db.clone(), built);
    }
    Ok(&names[&case.db])
}

/// WordNet for the verbalizer's identifiers and for the synonyms a chat model's paraphrase
/// may say a clause with: `--wordnet` must open; the default location is used when it holds
/// WordNet, and both go without it otherwise.
fn wordnet(args: &ParaphraseArgs) -> Result<Option<WordNet>, Error> {
    let dir = WordNet::locate(args.wordnet.as_deref());
    match WordNet::open(&dir) {
        Ok(wordnet) => Ok(Some(wordnet)),
        Err(error) if args.wordnet.is_some() => Err(error.into()),
        Err(_) => Ok(None),
    }
}

fn embedder(args: &ParaphraseArgs) -> Result<Box<dyn Embedder>, Error> {
    if let Some(dir) = &args.embedder {
        return Ok(super::embedder::open(dir)?);
    }
    let (Some(url), Some(model)) = (&args.embeddings_url, &args.embeddings_model) else {
        return Ok(Box::new(NgramEmbedder::default()));
    };
    let client = generator_client::connect("--embeddings-url", url, &args.embeddings_api_key_env)?;
    let cache = args
        .embeddings_cache
        .clone()
        .unwrap_or_else(|| beside(&args.out, ".embeddings.jsonl"));
    let throttle = Box::new(Throttle::new(ThrottleConfig::default()));
    Ok(Box::new(CachedEmbedder::open(
        client, model, &cache, throttle,
    )?))
}

fn paraphraser(args: &ParaphraseArgs) -> Result<Option<Paraphraser>, Error> {
    let (Some(url), Some(model)) = (&args.llm_url, &args.model) else {
        return Ok(None);
    };
    let client = generator_client::connect("--llm-url", url, &args.llm_api_key_env)?;
    let prompt = match &args.prompt {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| InputError::file(path, format!("cannot read the prompt: {e}")))?;
            if let Some(missing) = PLACEHOLDERS.iter().find(|p| !text.contains(*p)) {
                return Err(InputError::file(
                    path,
                    format!("the prompt does not use the placeholder {missing}"),
                )
                .into());
            }
            text
        }
        None => DEFAULT_PROMPT.to_string(),
    };
    let cache = args
        .llm_cache
        .clone()
        .unwrap_or_else(|| beside(&args.out, ".llm.jsonl"));
    Ok(Some(Paraphraser {
        client,
        model: model.clone(),
        prompt,
        seed: args.seed,
        cache: JsonlCache::open(&cache)?,
        throttle: Throttle::new(ThrottleConfig::default()),
    }))
}

/// `<out><suffix>`: caches live beside the family they made.
fn beside(out: &Path, suffix: &str) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The benchmark's answers, then each answer again under every kept paraphrase of its case.
fn carry_predictions(
    bench: &Benchmark,
    input: &Path,
    output: &Path,
    kept: &[(String, &Case)],
) -> Result<(), Error> {
    let predictions = loaders::load_predictions(input, None, bench)?;
    let answers: HashMap<&str, &Answer> = bench
        .cases
        .iter()
        .zip(&predictions)
        .map(|(case, p)| (case.id.as_str(), &p.answer))
        .collect();
    let line = |id: &str, answer: &Answer| match answer {
        Answer::Sql(sql) => serde_json::json!({"id": id, "sql": sql}).to_string(),
        Answer::Abstain => serde_json::json!({"id": id, "abstain": true}).to_string(),
    };
    let mut text = String::new();
    for case in &bench.cases {
        if let Some(answer) = answers.get(case.id.as_str()) {
            text.push_str(&line(&case.id, answer));
            text.push('\n');
        }
    }
    for (id, case) in kept {
        if let Some(answer) = answers.get(case.id.as_str()) {
            text.push_str(&line(id, answer));
            text.push('\n');
        }
    }
    Ok(write_atomically(output, text.as_bytes())?)
}
