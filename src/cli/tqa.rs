//! `sqlgate generate tqa`: the TQA families written to a folder (see docs/tqa.md).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{generator_client, Source};
use sqlgate::Error;
use sqlgate_eval::error::{InputError, OutputError};
use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_eval::files::write_atomically;
use sqlgate_eval::loaders::{self, Answer, Benchmark, Case};
use sqlgate_generate::mutate::jqe::graph as jqe_graph;
use sqlgate_generate::mutate::tqa::llm::{Hiding, HidingInput, QuestionInput, TqaLlm};
use sqlgate_generate::mutate::tqa::naturalness::{self, Seed, MUTANT_ID, SETTINGS};
use sqlgate_generate::mutate::tqa::rename::RenameMap;
use sqlgate_generate::mutate::tqa::sql::rename_sql;
use sqlgate_generate::mutate::tqa::{ident, linker, wordnet::WordNet};
use sqlgate_llm::cache::JsonlCache;

#[derive(Args)]
pub struct TqaArgs {
    #[command(flatten)]
    source: Source,
    /// `naturalness` (SQLMorph §V) or `linker` (Riahi 2025 thesis ch. 4).
    #[arg(long, value_enum)]
    method: TqaMethod,
    /// Folder to write the families (and, for naturalness, the clone scripts) into.
    #[arg(long)]
    out: PathBuf,
    /// WordNet 3.0 dict folder (default: $SQLGATE_WORDNET, else /usr/share/wordnet).
    #[arg(long)]
    wordnet: Option<PathBuf>,
    /// Lower identifiers with a chat model at this OpenAI-compatible endpoint (the paper's
    /// few-shot prompt, temperature 0, seed 42, cached; unusable answers fall back to the rule).
    #[arg(
        long,
        requires = "llm_model",
        required_if_eq_any([("strategy", "back-translation"), ("strategy", "contextual")])
    )]
    llm_url: Option<String>,
    /// The chat model to ask the `--llm-url` endpoint for.
    #[arg(long, requires = "llm_url")]
    llm_model: Option<String>,
    /// The environment variable holding the endpoint's API key.
    #[arg(long)]
    llm_api_key_env: Option<String>,
    /// Also rewrite each question and evidence with the model (the paper's JSON prompt; an
    /// answer that loses a value falls back to the deterministic rewrite).
    #[arg(long, requires = "llm_url")]
    llm_questions: bool,
    /// How `--method linker` hides the linker table's mentions: `synonym` (WordNet, the
    /// default), or with the `--llm-url` model `back-translation` (through French) or
    /// `contextual` (masked-word prediction); an unusable answer keeps the synonym rewrite.
    #[arg(long, value_enum, default_value = "synonym")]
    strategy: LinkerStrategy,
    /// Where answers are cached (default: `<out>/llm-cache.jsonl`).
    #[arg(long)]
    llm_cache: Option<PathBuf>,
    /// A predictions file for the benchmark: its answers are carried to every generated case
    /// (renamed onto the clone where the case runs there) into `<out>/predictions.jsonl`.
    #[arg(long)]
    predictions: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TqaMethod {
    Naturalness,
    Linker,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LinkerStrategy {
    Synonym,
    BackTranslation,
    Contextual,
}

pub fn run(args: TqaArgs) -> Result<(), Error> {
    let wordnet = WordNet::open(&WordNet::locate(args.wordnet.as_deref()))?;
    let bench = args.source.load()?;
    match args.method {
        TqaMethod::Naturalness => naturalness(&args, &bench, &wordnet),
        TqaMethod::Linker => linker(&args, &bench, &wordnet),
    }
}

/// The feasible cases of each database, databases in name order.
fn seeds_by_db(bench: &Benchmark) -> BTreeMap<&str, Vec<&Case>> {
    let mut by_db: BTreeMap<&str, Vec<&Case>> = BTreeMap::new();
    for case in bench
        .cases
        .iter()
        .filter(|c| c.feasible && !c.gold.is_empty())
    {
        by_db.entry(case.db.as_str()).or_default().push(case);
    }
    by_db
}

fn naturalness(args: &TqaArgs, bench: &Benchmark, wordnet: &WordNet) -> Result<(), Error> {
    let out = &args.out;
    std::fs::create_dir_all(out).map_err(|e| OutputError::new(out, e))?;
    let engine = Engine::new(Limits::default(), bench.backend.clone());
    let llm = llm_lowering(args)?;
    let lowering = |identifier: &str| match &llm {
        Some(llm) => llm.lower(identifier),
        None => ident::lower(identifier),
    };
    let answers = carried_answers(args, bench)?;
    let mut families: Vec<String> = vec![String::new(); SETTINGS.len()];
    // The benchmark's own answers first, so the file serves a suite that adds the families.
    let mut carried = String::new();
    for case in &bench.cases {
        if let Some(answer) = answers.get(case.id.as_str()) {
            carried.push_str(&answer_line(&case.id, answer, None).to_string());
            carried.push('\n');
        }
    }
    let (mut kept_total, mut dropped_total) = (0, 0);
    // (accepted, refused) model rewrites of questions, and why each refused one was.
    let mut question_rewrites = (0usize, 0usize);
    let mut refused: HashMap<String, String> = HashMap::new();
    for (db, cases) in seeds_by_db(bench) {
        let original = bench.db_files(cases[0], false)?.remove(0);
        let (schema, map, levels, script) = naturalness::plan(db, &original, wordnet, &lowering)
            .map_err(|e| InputError::file(&original, e.to_string()))?;
        if let Some(error) = llm.as_ref().and_then(TqaLlm::take_failure) {
            return Err(error.context("--llm-url").into());
        }
        let script_name = format!("{db}.tqa.sql");
        write_atomically(&out.join(&script_name), script.as_bytes())?;
        // The clone is built exactly as the family loader builds it, so a test run reuses it.
        let clone = out.join("build").join(format!("{db}.tqa.sqlite"));
        loaders::build_clone_if_stale(&original, &out.join(&script_name), &clone, &*bench.backend)?;
        map.verify(&schema, &clone, &*bench.backend)
            .map_err(|e| InputError::file(&clone, format!("the renamed clone is wrong: {e}")))?;
        let seeds: Vec<Seed> = cases
            .iter()
            .map(|case| Seed {
                id: case.id.clone(),
                question: case.question.clone(),
                evidence: case.evidence.clone(),
                golds: case.gold.clone(),
            })
            .collect();
        let (mut kept, dropped) =
            naturalness::reduce(&original, &clone, &map, &seeds, wordnet, &engine);
        if let Some(llm) = llm.as_ref().filter(|_| args.llm_questions) {
            let mapping = mapping_block(&map);
            for k in &mut kept {
                let evidence = k.evidence.clone().unwrap_or_default();
                let input = QuestionInput {
                    question: &k.question,
                    evidence: &evidence,
                    sql: k.golds.first().map_or("", String::as_str),
                    change_asked: k.renamed_question != k.question,
                    wordnet: Some(wordnet),
                };
                match llm.rewrite_question(&mapping, &input) {
                    Ok((question, new_evidence)) => {
                        k.renamed_question = question;
                        k.renamed_evidence = k.evidence.as_ref().map(|_| new_evidence);
                        // The model's rewrite has no offsets: the deterministic mentions no
                        // longer apply.
                        k.mentions.clear();
                        question_rewrites.0 += 1;
                    }
                    Err(why) => {
                        println!(
                            "  {}: the model's rewrite was refused ({why}); the deterministic rewrite kept",
                            k.seed_id
                        );
                        refused.insert(k.seed_id.clone(), why.to_string());
                        question_rewrites.1 += 1;
                    }
                }
            }
            if let Some(error) = llm.take_failure() {
                return Err(error.context("--llm-url").into());
            }
        }
        let total = levels.total().max(1) as f64;
        println!(
            "{db}: identifiers N1 {} ({:.0}%), N2 {} ({:.0}%), N3 {} ({:.0}%); renamed {} tables, {} column names; kept {} of {} gold queries, dropped {}",
            levels.n1,
            100.0 * levels.n1 as f64 / total,
            levels.n2,
            100.0 * levels.n2 as f64 / total,
            levels.n3,
            100.0 * levels.n3 as f64 / total,
            map.tables.len(),
            map.columns.len(),
            kept.len(),
            seeds.len(),
            dropped.len()
        );
        for (id, why) in &dropped {
            println!("  dropped {id}: {why}");
        }
        kept_total += kept.len();
        dropped_total += dropped.len();
        for k in &kept {
            for (slot, (setting, family)) in SETTINGS.iter().enumerate() {
                let mut record = naturalness::record(k, setting, db, &script_name);
                if let Some(why) = refused.get(&k.seed_id).filter(|_| setting.starts_with('L')) {
                    // Why this case's question is the deterministic rewrite, not the model's.
                    record["llm_refused"] = why.clone().into();
                }
                families[slot].push_str(&record.to_string());
                families[slot].push('\n');
                if let Some(answer) = answers.get(k.seed_id.as_str()) {
                    let id = format!("{}::{family}::{MUTANT_ID}", k.seed_id);
                    let renamed = setting.ends_with('L').then_some(&map);
                    carried.push_str(&answer_line(&id, answer, renamed).to_string());
                    carried.push('\n');
                }
            }
        }
    }
    if kept_total == 0 {
        return Err(Error::Usage(format!(
            "tqa naturalness: 0 of {dropped_total} seeds kept (see `dropped` above): the families would be empty"
        )));
    }
    for (slot, (_, family)) in SETTINGS.iter().enumerate() {
        write_atomically(
            &out.join(format!("{family}.jsonl")),
            families[slot].as_bytes(),
        )?;
    }
    if args.predictions.is_some() {
        write_atomically(&out.join("predictions.jsonl"), carried.as_bytes())?;
    }
    if let Some(llm) = &llm {
        println!(
            "LLM lowering: {} requests (the rest from the cache), {} unusable answers replaced by the deterministic rule",
            llm.requests.get(),
            llm.fallbacks.get()
        );
    }
    if args.llm_questions && llm.is_some() {
        println!(
            "LLM question rewrites: {} accepted, {} refused (the deterministic rewrite kept)",
            question_rewrites.0, question_rewrites.1
        );
    }
    println!(
        "kept {kept_total} seeds in four settings (O/O, L/O, O/L, L/L), dropped {dropped_total}; families written to {}",
        out.display()
    );
    Ok(())
}

/// The paper's mapping block: `Table old -> new:` then the renamed columns.
fn mapping_block(map: &RenameMap) -> String {
    let mut text = String::new();
    for (old, new) in &map.tables {
        text.push_str(&format!("Table {old} -> {new}:\n"));
    }
    for (old, new) in &map.columns {
        text.push_str(&format!("  {old} -> {new}\n"));
    }
    text
}

fn llm_lowering(args: &TqaArgs) -> Result<Option<TqaLlm>, Error> {
    let (Some(url), Some(model)) = (&args.llm_url, &args.llm_model) else {
        return Ok(None);
    };
    let client = generator_client::connect("--llm-url", url, &args.llm_api_key_env)?;
    let cache = args
        .llm_cache
        .clone()
        .unwrap_or_else(|| args.out.join("llm-cache.jsonl"));
    Ok(Some(TqaLlm::new(
        client,
        model.clone(),
        JsonlCache::open(&cache)?,
    )))
}

/// A linker strategy's family, mutant id, recorded name and model prompt (`None`: WordNet
/// synonyms only).
fn linker_family(
    strategy: LinkerStrategy,
) -> (&'static str, &'static str, &'static str, Option<Hiding>) {
    match strategy {
        LinkerStrategy::Synonym => ("tqa-sr", "sr", "synonym-replacement", None),
        LinkerStrategy::BackTranslation => (
            "tqa-bt",
            "bt",
            "back-translation",
            Some(Hiding::BackTranslation),
        ),
        LinkerStrategy::Contextual => (
            "tqa-ca",
            "ca",
            "contextual-augmentation",
            Some(Hiding::Contextual),
        ),
    }
}

fn linker(args: &TqaArgs, bench: &Benchmark, wordnet: &WordNet) -> Result<(), Error> {
    let out = &args.out;
    std::fs::create_dir_all(out).map_err(|e| OutputError::new(out, e))?;
    let (family_name, mutant_id, strategy, hiding) = linker_family(args.strategy);
    // Clap requires --llm-url for the model strategies.
    let llm = match hiding {
        Some(_) => llm_lowering(args)?,
        None => None,
    };
    let answers = carried_answers(args, bench)?;
    let mut family = String::new();
    let mut carried = String::new();
    for case in &bench.cases {
        if let Some(answer) = answers.get(case.id.as_str()) {
            carried.push_str(&answer_line(&case.id, answer, None).to_string());
            carried.push('\n');
        }
    }
    let (mut augmented, mut small, mut unmentioned, mut unparsed) = (0, 0, 0, 0);
    let (mut hidden_q, mut fields_q, mut hidden_e, mut fields_e) = (0, 0, 0, 0);
    for (db, cases) in seeds_by_db(bench) {
        let path = bench.db_files(cases[0], false)?.remove(0);
        let schema = sqlgate_engine_sqlite::read_schema(&path)
            .map_err(|e| InputError::file(&path, format!("cannot read the schema: {e}")))?;
        let graph = jqe_graph::SchemaGraph::build(&schema, true);
        for case in cases {
            let seed = linker::Seed {
                id: &case.id,
                question: &case.question,
                evidence: case.evidence.as_deref(),
                sql: &case.gold[0],
            };
            let mut result = match linker::augment(&seed, &graph, wordnet) {
                Ok(result) => result,
                Err(linker::Skip::FewerThanThreeTables) => {
                    small += 1;
                    continue;
                }
                Err(linker::Skip::NotMentioned) => {
                    unmentioned += 1;
                    continue;
                }
                Err(linker::Skip::NoJoinGraph(why)) => {
                    println!("  {}: no join graph ({why})", case.id);
                    unparsed += 1;
                    continue;
                }
            };
            augmented += 1;
            let mut fallbacks = serde_json::Map::new();
            if let (Some(hiding), Some(llm)) = (hiding, &llm) {
                fallbacks = hide_with_model(llm, hiding, &seed, db, &mut result);
                if let Some(error) = llm.take_failure() {
                    return Err(error.context("--llm-url").into());
                }
            }
            for (hidden, count, total) in [
                (result.question_hidden, &mut hidden_q, &mut fields_q),
                (result.evidence_hidden, &mut hidden_e, &mut fields_e),
            ] {
                if let Some(hidden) = hidden {
                    *total += 1;
                    *count += usize::from(hidden);
                }
            }
            let mut record = serde_json::json!({
                "id": mutant_id, "seed_id": seed.id, "db": db,
                "sql": naturalness::gold_field(&case.gold),
                "question": result.question, "linker_table": result.linker_table,
                "replaced": result.replaced, "strategy": strategy,
                "hidden": {"question": result.question_hidden, "evidence": result.evidence_hidden},
            });
            if let Some(evidence) = &result.evidence {
                record["evidence"] = evidence.clone().into();
            }
            if !fallbacks.is_empty() {
                // Fields where the model's answer was unusable and the synonym rewrite stayed.
                record["fallback"] = fallbacks.into();
            }
            family.push_str(&record.to_string());
            family.push('\n');
            if let Some(answer) = answers.get(seed.id) {
                let id = format!("{}::{family_name}::{mutant_id}", seed.id);
                carried.push_str(&answer_line(&id, answer, None).to_string());
                carried.push('\n');
            }
        }
    }
    if augmented == 0 {
        return Err(Error::Usage(format!(
            "tqa linker: 0 seeds augmented: {small} with fewer than three tables, {unmentioned} whose linker table is not mentioned, {unparsed} without a join graph; the family would be empty"
        )));
    }
    write_atomically(&out.join(format!("{family_name}.jsonl")), family.as_bytes())?;
    if args.predictions.is_some() {
        write_atomically(&out.join("predictions.jsonl"), carried.as_bytes())?;
    }
    let share = |a: usize, b: usize| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    println!(
        "augmented {augmented} seeds; skipped {small} with fewer than three tables, {unmentioned} whose linker table is not mentioned, {unparsed} without a join graph"
    );
    println!(
        "hiding score: question {:.1}% ({hidden_q}/{fields_q}), evidence {:.1}% ({hidden_e}/{fields_e}); family written to {}",
        share(hidden_q, fields_q),
        share(hidden_e, fields_e),
        out.join(format!("{family_name}.jsonl")).display()
    );
    if let Some(llm) = &llm {
        println!(
            "{strategy}: {} requests (the rest from the cache), {} unusable answers kept the synonym rewrite",
            llm.requests.get(),
            llm.fallbacks.get()
        );
    }
    Ok(())
}

/// Rewrites the question, then the evidence (which sees the new question), of `result` with
/// the model; a field whose answer is unusable keeps its synonym rewrite. Returns why, by field.
fn hide_with_model(
    llm: &TqaLlm,
    hiding: Hiding,
    seed: &linker::Seed,
    db: &str,
    result: &mut linker::Augmented,
) -> serde_json::Map<String, serde_json::Value> {
    let mut fallbacks = serde_json::Map::new();
    for field in ["question", "evidence"] {
        let text = match (field, seed.evidence) {
            ("question", _) => seed.question,
            (_, Some(evidence)) => evidence,
            (_, None) => continue,
        };
        let mentions: Vec<linker::Mention> = result
            .replaced
            .iter()
            .filter(|r| r.field == field)
            .map(|r| r.mention.clone())
            .collect();
        if mentions.is_empty() {
            continue;
        }
        let input = HidingInput {
            field,
            text,
            db,
            sql: seed.sql,
            table: &result.linker_table,
            segments: &result.segments,
            mentions: &mentions,
            new_question: (field == "evidence").then_some(result.question.as_str()),
        };
        let answer = llm.hide(hiding, &input);
        let (slot, hidden) = match field {
            "question" => (&mut result.question, &mut result.question_hidden),
            _ => match result.evidence.as_mut() {
                Some(evidence) => (evidence, &mut result.evidence_hidden),
                None => continue,
            },
        };
        match answer {
            // A validated answer hides every mention (its hiding score is 1).
            Ok(new) => {
                *slot = new;
                *hidden = Some(true);
            }
            Err(why) => {
                fallbacks.insert(field.to_string(), why.to_string().into());
            }
        }
    }
    fallbacks
}

/// A predictions line answering `id`; with `renamed`, the SQL moved onto the clone (an answer
/// the parser cannot read stays as it was: it fails there too).
fn answer_line(id: &str, answer: &Answer, renamed: Option<&RenameMap>) -> serde_json::Value {
    match (answer, renamed) {
        (Answer::Abstain, _) => serde_json::json!({"id": id, "abstain": true}),
        (Answer::Sql(sql), Some(map)) => {
            let sql = rename_sql(sql, map).unwrap_or_else(|_| sql.clone());
            serde_json::json!({"id": id, "sql": sql})
        }
        (Answer::Sql(sql), None) => serde_json::json!({"id": id, "sql": sql}),
    }
}

/// The answers of `--predictions`, by case id.
fn carried_answers<'a>(
    args: &TqaArgs,
    bench: &'a Benchmark,
) -> Result<HashMap<&'a str, Answer>, InputError> {
    let Some(path) = &args.predictions else {
        return Ok(HashMap::new());
    };
    let predictions = loaders::load_predictions(path, None, bench)?;
    Ok(bench
        .cases
        .iter()
        .zip(predictions)
        .map(|(case, p)| (case.id.as_str(), p.answer))
        .collect())
}
