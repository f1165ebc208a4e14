//! `sqlgate generate paraphrase`: the offline verbalizer covers the demo and Defog, reruns are
//! byte-identical, the committed demo family is what its documented command writes, the LLM
//! mode parses a model's messy replies and caches them, and the similarity filter runs through
//! an embeddings endpoint.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::llm_support::{Canned, TestServer};
use crate::support::{repo, shared_data, sqlgate};

fn generate(args: &[&str]) -> String {
    let output = sqlgate()
        .current_dir(repo())
        .args(["generate", "paraphrase"])
        .args(args)
        .run();
    output.assert_success();
    output.stdout
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn demo_seeds() -> HashMap<String, Value> {
    std::fs::read_to_string(repo().join("benchmarks/demo/cases.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["id"].as_str().unwrap().to_string(), v))
        .collect()
}

/// Kept paraphrases per seed id.
fn per_seed(records: &[Value]) -> BTreeMap<String, Vec<String>> {
    let mut by_seed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for record in records {
        by_seed
            .entry(record["seed_id"].as_str().unwrap().to_string())
            .or_default()
            .push(record["question"].as_str().unwrap().to_string());
    }
    by_seed
}

#[test]
fn the_committed_demo_family_is_what_the_documented_command_writes() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| {
        let out = dir.path().join(format!("{name}.jsonl"));
        let predictions = dir.path().join(format!("{name}.predictions.jsonl"));
        let stdout = generate(&[
            "--gold",
            "benchmarks/demo/suite.toml",
            "--out",
            out.to_str().unwrap(),
            "-k",
            "5",
            "--predictions",
            "benchmarks/demo/predictions/sample.jsonl",
            "--predictions-out",
            predictions.to_str().unwrap(),
        ]);
        (out, predictions, stdout)
    };
    let (a, a_predictions, stdout) = run("a");
    let (b, b_predictions, _) = run("b");
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(
        std::fs::read(&a_predictions).unwrap(),
        std::fs::read(&b_predictions).unwrap()
    );
    let stale = "benchmarks/demo/paraphrase is stale: regenerate it (docs/paraphrase.md)";
    assert_eq!(
        std::fs::read(repo().join("benchmarks/demo/paraphrase/para.jsonl")).unwrap(),
        std::fs::read(&a).unwrap(),
        "{stale}"
    );
    assert_eq!(
        std::fs::read(repo().join("benchmarks/demo/paraphrase/predictions.jsonl")).unwrap(),
        std::fs::read(&a_predictions).unwrap(),
        "{stale}"
    );
    assert!(stdout.contains("dropped paraphrase"), "{stdout}");

    let seeds = demo_seeds();
    let family = records(&a);
    let mut ids = HashSet::new();
    for record in &family {
        let seed_id = record["seed_id"].as_str().unwrap();
        let seed = &seeds[seed_id];
        assert_eq!(record["sql"], seed["gold"], "{record}");
        assert_eq!(record["db"], seed["db"]);
        assert_eq!(record["evidence"], seed["evidence"]);
        assert_eq!(record["method"], "verbalizer");
        let cs = record["cs"].as_f64().unwrap();
        assert!((0.3..=1.0).contains(&cs), "{record}");
        let id = record["id"].as_str().unwrap();
        assert!(id.starts_with(&format!("{seed_id}::para::p")), "{id}");
        assert!(ids.insert(id.to_string()), "duplicate id {id}");
        assert_ne!(record["question"], seed["question"]);
    }
    for questions in per_seed(&family).values() {
        assert_eq!(
            questions.iter().collect::<HashSet<_>>().len(),
            questions.len()
        );
    }
    // Every paraphrase is answered with its seed's answer, after the benchmark's own answers.
    let carried = records(&a_predictions);
    assert_eq!(carried.len(), seeds.len() + family.len());
    let own: HashMap<&str, &Value> = carried[..seeds.len()]
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p))
        .collect();
    assert!(seeds.keys().all(|id| own.contains_key(id.as_str())));
    for (line, record) in carried[seeds.len()..].iter().zip(&family) {
        assert_eq!(line["id"], record["id"]);
        let seed_answer = own[record["seed_id"].as_str().unwrap()];
        assert_eq!(line["sql"], seed_answer["sql"]);
        assert_eq!(line["abstain"], seed_answer["abstain"]);
    }
}

#[test]
fn the_verbalizer_gives_every_demo_gold_k_distinct_questions() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("para.jsonl");
    let stdout = generate(&[
        "--gold",
        "benchmarks/demo/suite.toml",
        "--out",
        out.to_str().unwrap(),
        "-k",
        "5",
        "--min-cs",
        "0",
    ]);
    let by_seed = per_seed(&records(&out));
    let feasible = demo_seeds()
        .values()
        .filter(|s| s.get("gold").is_some())
        .count();
    assert_eq!(by_seed.len(), feasible, "{stdout}");
    for (seed, questions) in &by_seed {
        assert_eq!(questions.len(), 5, "{seed}: {questions:?}");
    }
    assert!(!stdout.contains("skipped"), "{stdout}");
}

#[test]
fn the_verbalizer_covers_defog_and_names_what_it_skips() {
    let Some(data) = shared_data() else {
        return;
    };
    let gold = data.join("defog/questions.csv");
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    let args = |out: &Path| {
        vec![
            "--gold".to_string(),
            gold.to_str().unwrap().to_string(),
            "--out".to_string(),
            out.to_str().unwrap().to_string(),
            "--min-cs".to_string(),
            "0".to_string(),
        ]
    };
    let a_args = args(&a);
    let stdout = generate(&a_args.iter().map(String::as_str).collect::<Vec<_>>());
    let b_args = args(&b);
    generate(&b_args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());

    let bench = sqlgate_eval::loaders::load(
        &gold,
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .unwrap();
    let golds = bench.cases.iter().filter(|c| c.feasible).count();
    let by_seed = per_seed(&records(&a));
    let three_or_more = by_seed.values().filter(|q| q.len() >= 3).count();
    assert!(
        three_or_more * 100 >= golds * 95,
        "{three_or_more} of {golds} golds have 3 paraphrases\n{stdout}"
    );
    // A skipped gold is counted under the construct that stopped it.
    let skipped = golds - by_seed.len();
    if skipped > 0 {
        assert!(
            stdout.contains(&format!("{skipped} gold")) && stdout.contains("skipped"),
            "{stdout}"
        );
    }
    // The family loads as cases whose gold is every gold query of the seed.
    let cases = sqlgate_eval::loaders::load_family(&a, "para", &bench).unwrap();
    assert_eq!(cases.len(), records(&a).len());
    let seeds: HashMap<&str, &sqlgate_eval::loaders::Case> =
        bench.cases.iter().map(|c| (c.id.as_str(), c)).collect();
    for case in &cases {
        let seed = seeds[case.tags["seed"].as_str()];
        assert_eq!(case.gold, seed.gold, "{}", case.id);
        assert!(case.id.starts_with(&format!("{}::para::p", seed.id)));
    }
    assert!(cases.iter().any(|c| c.gold.len() > 1));
}

/// The demo's feasible golds in order, as the generator asks about them.
fn demo_golds() -> Vec<String> {
    demo_questions_and_golds()
        .into_iter()
        .map(|(_, sql)| sql)
        .collect()
}

/// The demo's feasible cases in order: question and first gold.
fn demo_questions_and_golds() -> Vec<(String, String)> {
    std::fs::read_to_string(repo().join("benchmarks/demo/cases.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|v| {
            let sql = match &v["gold"] {
                Value::String(sql) => sql.clone(),
                Value::Array(list) => list[0].as_str().unwrap().to_string(),
                _ => return None,
            };
            Some((v["question"].as_str().unwrap().to_string(), sql))
        })
        .collect()
}

#[test]
fn llm_replies_are_parsed_leniently_cached_and_refused_when_garbage() {
    let cases = demo_questions_and_golds();
    let golds: Vec<String> = cases.iter().map(|(_, sql)| sql.clone()).collect();
    let messy = "Sure! Here are the questions you asked for:\n\n1. Which poetry titles do we have?\n2. SELECT title FROM books WHERE genre = 'Poetry'\n3. **List the poetry books.**\n4) Name every poetry title.\n\nI hope this helps!";
    let mut script = vec![Canned::chat(messy)];
    // Two rewordings that keep every value of the question (a generic question that drops
    // them is refused).
    for (question, _) in &cases[1..] {
        script.push(Canned::chat(&format!(
            "- Tell me: {question}\n- {question} Thanks."
        )));
    }
    let server = TestServer::start(script);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("para.jsonl");
    let cache = dir.path().join("llm.jsonl");
    let args = |url: &str| {
        vec![
            "--gold".to_string(),
            "benchmarks/demo/suite.toml".to_string(),
            "--out".to_string(),
            out.to_str().unwrap().to_string(),
            "-k".to_string(),
            "3".to_string(),
            "--min-cs".to_string(),
            "0".to_string(),
            "--llm-url".to_string(),
            url.to_string(),
            "--model".to_string(),
            "tiny".to_string(),
            "--llm-cache".to_string(),
            cache.to_str().unwrap().to_string(),
        ]
    };
    let first_args = args(&server.base_url);
    let stdout = generate(&first_args.iter().map(String::as_str).collect::<Vec<_>>());
    let requests = server.finish();
    assert_eq!(requests.len(), golds.len());
    let first = requests[0].json();
    assert_eq!(first["temperature"], 0.0);
    assert_eq!(first["seed"], 42);
    let prompt = first["messages"][0]["content"].as_str().unwrap();
    assert!(
        prompt.contains("generate 3 distinct natural language questions"),
        "{prompt}"
    );
    assert!(prompt.contains(&golds[0]), "{prompt}");
    assert!(prompt.contains("CREATE TABLE books"), "{prompt}");
    assert!(!prompt.contains("CREATE TABLE orders"), "{prompt}");
    assert!(stdout.contains("SQL, not a question"), "{stdout}");

    let family = records(&out);
    // A question a person wrote may not say all its gold computes ("sold" for `status =
    // 'completed'`): its rewordings are dropped by the agreement check, and counted.
    let disagreeing = cases[1..]
        .iter()
        .filter(|(question, sql)| !sqlgate_generate::mutate::para::agrees_with_gold(sql, question))
        .count();
    assert!(
        stdout.contains(&format!("{} that do not say", 2 * disagreeing)),
        "{stdout}"
    );
    assert_eq!(
        family.len(),
        3 + 2 * (golds.len() - 1 - disagreeing),
        "{stdout}"
    );
    let q01: Vec<&str> = family
        .iter()
        .filter(|r| r["seed_id"] == "q01")
        .map(|r| r["question"].as_str().unwrap())
        .collect();
    assert_eq!(
        q01,
        vec![
            "Which poetry titles do we have?",
            "List the poetry books.",
            "Name every poetry title."
        ]
    );
    assert!(family.iter().all(|r| r["method"] == "llm"));

    // The second run answers from the cache: the endpoint is gone and nothing changes.
    let before = std::fs::read(&out).unwrap();
    let dead = args("http://127.0.0.1:9/v1");
    generate(&dead.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(std::fs::read(&out).unwrap(), before);
}

/// An embeddings server on 127.0.0.1 that places a text by its last character: questions
/// (`?`) on one axis, other sentences on the other; `per_token` answers like llama.cpp without
/// pooling (two token vectors per text). It answers `limit` requests at most.
fn embeddings_server(limit: usize, per_token: bool) -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for _ in 0..limit {
            let Ok(Some(mut request)) = server.recv_timeout(std::time::Duration::from_secs(20))
            else {
                break;
            };
            let mut body = String::new();
            let _ = request.as_reader().read_to_string(&mut body);
            let body: Value = serde_json::from_str(&body).unwrap_or_default();
            let inputs = body["input"].as_array().cloned().unwrap_or_default();
            let data: Vec<Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, text)| {
                    let question = text.as_str().unwrap_or_default().ends_with('?');
                    let vector = if question { [1.0, 0.0] } else { [0.0, 1.0] };
                    if per_token {
                        serde_json::json!({"index": i, "embedding": [vector, vector]})
                    } else {
                        serde_json::json!({"index": i, "embedding": vector})
                    }
                })
                .collect();
            let _ = request.respond(tiny_http::Response::from_string(
                serde_json::json!({"data": data}).to_string(),
            ));
        }
    });
    url
}

#[test]
fn the_similarity_filter_runs_through_an_embeddings_endpoint() {
    let golds = demo_golds().len();
    let url = embeddings_server(golds, true);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("para.jsonl");
    let stdout = generate(&[
        "--gold",
        "benchmarks/demo/suite.toml",
        "--out",
        out.to_str().unwrap(),
        "-k",
        "4",
        "--embeddings-url",
        &url,
        "--embeddings-model",
        "toy",
    ]);
    assert!(stdout.contains("(toy)"), "{stdout}");
    let seeds = demo_seeds();
    let family = records(&out);
    assert!(!family.is_empty());
    for record in &family {
        let original = seeds[record["seed_id"].as_str().unwrap()]["question"]
            .as_str()
            .unwrap();
        let question = record["question"].as_str().unwrap();
        assert_eq!(original.ends_with('?'), question.ends_with('?'), "{record}");
        assert_eq!(record["cs"], 1.0);
    }
    let dropped = 4 * golds - family.len();
    assert!(dropped > 0);
    assert!(
        stdout.contains(&format!("{dropped} dropped paraphrase")),
        "{stdout}"
    );
    // Cached beside the family: a rerun needs no endpoint.
    let before = std::fs::read(&out).unwrap();
    generate(&[
        "--gold",
        "benchmarks/demo/suite.toml",
        "--out",
        out.to_str().unwrap(),
        "-k",
        "4",
        "--embeddings-url",
        "http://127.0.0.1:9/v1",
        "--embeddings-model",
        "toy",
    ]);
    assert_eq!(std::fs::read(&out).unwrap(), before);
}

#[test]
fn bad_input_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("para.jsonl");
    let out_text = out.to_str().unwrap();
    let base = ["--gold", "benchmarks/demo/suite.toml", "--out", out_text];
    let fails = |extra: &[&str], expected: &str| {
        let output = sqlgate()
            .current_dir(repo())
            .args(["generate", "paraphrase"])
            .args([&base[..], extra].concat())
            .run();
        assert_eq!(output.status.code(), Some(2), "{extra:?}");
        let stderr = &output.stderr;
        assert!(stderr.contains(expected), "{stderr}");
        assert!(!out.exists(), "nothing half-written");
    };
    fails(&["-k", "0"], "-k must be at least 1");
    fails(&["--min-cs", "1.5"], "--min-cs must be between 0 and 1");
    let prompt = dir.path().join("prompt.txt");
    std::fs::write(&prompt, "Questions for {sql_query}").unwrap();
    let prompt_text = prompt.to_str().unwrap();
    fails(
        &[
            "--llm-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--prompt",
            prompt_text,
        ],
        "{num_queries}",
    );
}

/// A one-database Spider-style benchmark (`gold.txt`, `db/clinic/clinic.sqlite`) whose keys are
/// abbreviations: `vid` of `visit`, `nid` referencing `nurse`.
fn clinic(dir: &Path) -> std::path::PathBuf {
    let db_dir = dir.join("db/clinic");
    std::fs::create_dir_all(&db_dir).unwrap();
    let conn = rusqlite::Connection::open(db_dir.join("clinic.sqlite")).unwrap();
    conn.execute_batch(
        "CREATE TABLE nurse (nid INTEGER PRIMARY KEY, name TEXT);
         CREATE TABLE visit (vid INTEGER PRIMARY KEY, nid INTEGER REFERENCES nurse (nid), day TEXT);",
    )
    .unwrap();
    let gold = dir.join("gold.txt");
    std::fs::write(
        &gold,
        "SELECT vid, nid, day FROM visit WHERE day = 'Monday'\tclinic\n",
    )
    .unwrap();
    gold
}

#[test]
fn descriptions_name_the_columns_their_identifiers_abbreviate() {
    let dir = tempfile::tempdir().unwrap();
    let gold = clinic(dir.path());
    let described = dir.path().join("described");
    std::fs::create_dir(&described).unwrap();
    let file = described.join("clinic.columns.json");
    std::fs::write(
        &file,
        r#"{"table_metadata": {"visit": [{"column_name": "vid", "data_type": "bigint",
            "column_description": "Unique identifier for each appointment"}]}}"#,
    )
    .unwrap();
    let questions = |extra: &[&str]| -> Vec<String> {
        let out = dir.path().join("para.jsonl");
        let base = ["--gold", gold.to_str().unwrap(), "--db-dir"];
        let db_dir = dir.path().join("db");
        let tail = ["--out", out.to_str().unwrap(), "--min-cs", "0", "-k", "3"];
        generate(&[&base[..], &[db_dir.to_str().unwrap()], &tail, extra].concat());
        records(&out)
            .iter()
            .map(|r| r["question"].as_str().unwrap().to_string())
            .collect()
    };
    // From the schema alone: the key of `visit` and the one referencing `nurse`.
    for question in questions(&[]) {
        assert!(question.contains("visit ID"), "{question}");
        assert!(question.contains("nurse ID"), "{question}");
        assert!(question.contains("\"Monday\""), "{question}");
    }
    // A description names what the identifier does not say: as a file, or a folder of them.
    for flag in [&file, &described] {
        for question in questions(&["--descriptions", flag.to_str().unwrap()]) {
            assert!(question.contains("appointment ID"), "{question}");
            assert!(question.contains("nurse ID"), "{question}");
        }
    }
    // Without the flag, `<db>.columns.json` beside the database file is found.
    std::fs::copy(&file, dir.path().join("db/clinic/clinic.columns.json")).unwrap();
    for question in questions(&[]) {
        assert!(question.contains("appointment ID"), "{question}");
    }
    // A file of one database must say which.
    let misnamed = dir.path().join("notes.json");
    std::fs::copy(&file, &misnamed).unwrap();
    let output = sqlgate()
        .args(["generate", "paraphrase", "--gold", gold.to_str().unwrap()])
        .args(["--db-dir", dir.path().join("db").to_str().unwrap()])
        .args(["--out", dir.path().join("x.jsonl").to_str().unwrap()])
        .args(["--descriptions", misnamed.to_str().unwrap()])
        .run();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stderr.contains("notes.json"), "{}", output.stderr);
    assert!(
        output.stderr.contains("<db>.columns.json"),
        "{}",
        output.stderr
    );
}

/// The coverage issue 30 asks for: with default flags, at least 95% of the shared Defog and
/// Spider dev golds keep at least 3 distinct paraphrases (the command's own count, checked
/// against the written family); the report lists the skipped golds by construct. Spider's
/// `gold.txt` has no questions: its paraphrases are compared with the gold's own reading.
/// Spider dev is run without and with its `tables.json` names (`--descriptions`).
#[test]
fn default_flags_keep_three_paraphrases_for_most_shared_golds() {
    let Some(data) = shared_data() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("para.jsonl");
    let defog = data.join("defog/questions.csv");
    let spider = data.join("spider-dev/gold.txt");
    let db_dir = data.join("spider-dev/schema-db");
    let tables = data.join("spider-dev/tables.json");
    let sets: [(&str, Vec<&str>); 3] = [
        ("Defog", vec!["--gold", defog.to_str().unwrap()]),
        (
            "Spider dev",
            vec![
                "--gold",
                spider.to_str().unwrap(),
                "--db-dir",
                db_dir.to_str().unwrap(),
            ],
        ),
        (
            "Spider dev with its tables.json names",
            vec![
                "--gold",
                spider.to_str().unwrap(),
                "--db-dir",
                db_dir.to_str().unwrap(),
                "--descriptions",
                tables.to_str().unwrap(),
            ],
        ),
    ];
    for (name, args) in sets {
        let stdout = generate(&[&args[..], &["--out", out.to_str().unwrap()]].concat());
        println!("{name}, default flags:\n{stdout}");
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix("golds with at least 3 kept paraphrases: "))
            .unwrap_or_else(|| panic!("{name}: no coverage line in\n{stdout}"));
        let (three, golds) = line.split_once(' ').unwrap().0.split_once('/').unwrap();
        let (three, golds): (usize, usize) = (three.parse().unwrap(), golds.parse().unwrap());
        let family = per_seed(&records(&out));
        let written = family
            .values()
            .filter(|questions| questions.iter().collect::<HashSet<_>>().len() >= 3)
            .count();
        assert_eq!(written, three, "{name}: the report and the family disagree");
        // Each gold under 3 is named with what it kept.
        let short: Vec<(&str, usize)> = stdout
            .lines()
            .skip_while(|l| !l.starts_with("golds with fewer than 3"))
            .filter_map(|l| l.strip_prefix("  ")?.split_once(": "))
            .filter_map(|(id, rest)| Some((id, rest.split_once(" kept of ")?.0.parse().ok()?)))
            .collect();
        for (id, kept) in &short {
            assert!(*kept < 3, "{name}: {id} listed with {kept}");
            assert_eq!(family.get(*id).map_or(0, Vec::len), *kept, "{name}: {id}");
        }
        assert!(
            three * 100 >= golds * 95,
            "{name}: {three}/{golds} golds with 3 paraphrases"
        );
        // docs/paraphrase.md's coverage table and prose state the same.
        let doc = std::fs::read_to_string(repo().join("docs/paraphrase.md")).unwrap();
        let shown = if three >= 1000 {
            format!("{},{:03}", three / 1000, three % 1000)
        } else {
            three.to_string()
        };
        let share = format!("{shown} ({:.1}%", 100.0 * three as f64 / golds as f64);
        assert!(
            doc.contains(&share),
            "docs/paraphrase.md lacks `{share}` for {name}"
        );
        if name == "Spider dev" {
            let mean = line.rsplit_once("mean cs ").unwrap().1;
            let stated = format!("(mean cs {mean})");
            assert!(doc.contains(&stated), "docs/paraphrase.md lacks `{stated}`");
        }
    }
}

/// A build without the `embedder` feature refuses `--embedder`, saying how to get it.
#[cfg(not(feature = "embedder"))]
#[test]
fn embedder_needs_the_feature() {
    let dir = tempfile::tempdir().unwrap();
    let run = sqlgate()
        .args(["generate", "paraphrase", "--gold"])
        .arg(crate::support::demo("suite.toml"))
        .arg("--out")
        .arg(dir.path().join("para.jsonl"))
        .arg("--embedder")
        .arg(dir.path())
        .run();
    run.assert_code(2);
    assert!(run.stderr.contains("--features embedder"), "{}", run.stderr);
    assert!(!dir.path().join("para.jsonl").exists());
}
