//! `sqlgate generate jqe`: every retained expansion executes with rows, adds exactly one table to
//! its seed's join graph, has a join pattern new for its database, and two runs agree byte for
//! byte.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;
use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_generate::mutate::jqe::expand::{PatternCounts, Shape};
use sqlgate_generate::mutate::jqe::graph::SchemaGraph;
use sqlgate_generate::mutate::jqe::query::Jqg;

use crate::support::{demo, repo, shared_data, sqlgate};

fn generate(gold: &Path, out: &Path, extra: &[&str]) -> String {
    let output = sqlgate()
        .args(["generate", "jqe", "--gold", gold.to_str().unwrap()])
        .args(["--out", out.to_str().unwrap()])
        .args(extra)
        .run();
    output.assert_success();
    output.stdout
}

fn jqg_tables(sql: &str, schema: &SchemaGraph) -> Vec<String> {
    let statements =
        sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::SQLiteDialect {}, sql).unwrap();
    let sqlparser::ast::Statement::Query(query) = &statements[0] else {
        panic!("not a query: {sql}");
    };
    let jqg = Jqg::of(query, schema).unwrap();
    jqg.nodes
        .iter()
        .map(|&t| schema.tables[t].to_lowercase())
        .collect()
}

fn shape(pattern: &Value) -> Shape {
    let tables: Vec<&str> = pattern["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let position = |v: &Value| tables.iter().position(|t| Some(*t) == v.as_str()).unwrap();
    Shape {
        n: tables.len(),
        edges: pattern["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (position(&e[0]), position(&e[1])))
            .collect(),
    }
}

/// Runs twice, checks determinism and every property of each retained expansion.
fn check(gold: &Path, db_dir: Option<&Path>, extra: &[&str]) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    let mut args: Vec<&str> = extra.to_vec();
    let db_dir_text = db_dir.map(|d| d.to_str().unwrap().to_string());
    if let Some(d) = &db_dir_text {
        args.extend(["--db-dir", d.as_str()]);
    }
    let stdout = generate(gold, &first, &args);
    generate(gold, &second, &args);
    assert_eq!(
        std::fs::read(&first).unwrap(),
        std::fs::read(&second).unwrap()
    );
    assert!(stdout.contains("retained"), "{stdout}");

    let options = sqlgate_eval::loaders::LoadOptions {
        db_dir: db_dir.map(PathBuf::from),
        ..sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files())
    };
    let bench = sqlgate_eval::loaders::load(gold, &options).unwrap();
    let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
    let mut seeds: HashMap<String, String> = HashMap::new();
    let mut taken: BTreeMap<String, PatternCounts> = BTreeMap::new();
    let mut paths = HashMap::new();
    let mut graphs = HashMap::new();
    for case in bench.cases.iter().filter(|c| c.feasible) {
        let path = bench.db_files(case, false).unwrap().remove(0);
        let graph = graphs.entry(case.db.clone()).or_insert_with(|| {
            SchemaGraph::build(&sqlgate_engine_sqlite::read_schema(&path).unwrap(), true)
        });
        seeds.insert(case.id.clone(), case.gold[0].clone());
        paths.insert(case.db.clone(), path);
        // The originals' patterns count as taken (they are parsed the way JQE parses them).
        let statements = sqlparser::parser::Parser::parse_sql(
            &sqlparser::dialect::SQLiteDialect {},
            &case.gold[0],
        );
        if let Ok([sqlparser::ast::Statement::Query(query)]) = statements.as_deref() {
            if let Ok(jqg) = Jqg::of(query, graph) {
                taken
                    .entry(case.db.clone())
                    .or_default()
                    .add(&Shape::of(&jqg, None));
            }
        }
    }
    let text = std::fs::read_to_string(&first).unwrap();
    for line in text.lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        let (id, db, sql) = (
            e["id"].as_str().unwrap(),
            e["db"].as_str().unwrap(),
            e["sql"].as_str().unwrap(),
        );
        for field in [
            "seed_id",
            "question",
            "added_table",
            "conditions",
            "pattern",
        ] {
            assert!(!e[field].is_null(), "{id}: no {field}");
        }
        let rows = engine.execute(&paths[db], sql).result.unwrap();
        assert!(!rows.rows.is_empty(), "{id}: no rows");
        let graph = &graphs[db];
        let seed_sql = &seeds[e["seed_id"].as_str().unwrap()];
        let before = jqg_tables(seed_sql, graph);
        let after = jqg_tables(sql, graph);
        let added = e["added_table"].as_str().unwrap().to_lowercase();
        assert_eq!(
            after.len(),
            before.len() + 1,
            "{id}: not exactly one more table"
        );
        assert!(!before.contains(&added) && after.contains(&added), "{id}");
        let pattern = shape(&e["pattern"]);
        let counts = taken.entry(db.to_string()).or_default();
        assert_eq!(counts.count(&pattern), 0, "{id}: pattern already taken");
        counts.add(&pattern);
        seeds.insert(id.to_string(), sql.to_string());
    }
    text.lines().count()
}

#[test]
fn demo_expansions_are_valid_new_and_deterministic() {
    let gold = demo("suite.toml");
    assert!(check(&gold, None, &[]) > 0);
    assert!(check(&gold, None, &["--rounds", "2"]) > 0);
}

#[test]
fn defog_expansions_are_valid_new_and_deterministic() {
    let Some(data) = shared_data() else {
        return;
    };
    let defog = data.join("defog");
    let gold = defog.join("questions.csv");
    let all = check(&gold, Some(&defog), &[]);
    assert!(all > 5);
    // Across several databases, the budget still caps the whole run.
    assert_eq!(check(&gold, Some(&defog), &["--budget", "5"]), 5);
    assert!(check(&gold, Some(&defog), &["--rounds", "2"]) >= all);
}

#[test]
fn the_budget_caps_the_run() {
    let gold = demo("suite.toml");
    assert_eq!(check(&gold, None, &["--budget", "2"]), 2);
}

/// The expansions run as tests of the suite they came from, named
/// `<suite>::<db>::<seed>::jqe::<mutant-id>`, answered here by a `command` system that looks the
/// SQL up by case id.
#[test]
fn the_jqe_family_runs_as_tests_of_its_suite() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo();
    let family = dir.path().join("jqe.jsonl");
    let output = sqlgate()
        .args(["generate", "jqe", "--gold"])
        .arg(repo.join("benchmarks/demo/suite.toml"))
        .arg("--out")
        .arg(&family)
        .run();
    output.assert_success();
    // Answers: the gold of every original case and of every expansion, by id.
    let mut answers = serde_json::Map::new();
    let cases = std::fs::read_to_string(repo.join("benchmarks/demo/cases.jsonl")).unwrap();
    for line in cases.lines() {
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        let gold = match &case["gold"] {
            serde_json::Value::Array(golds) => golds[0].clone(),
            other => other.clone(),
        };
        answers.insert(case["id"].as_str().unwrap().to_string(), gold);
    }
    let expansions: Vec<serde_json::Value> = std::fs::read_to_string(&family)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!expansions.is_empty());
    for expansion in &expansions {
        answers.insert(
            expansion["id"].as_str().unwrap().to_string(),
            expansion["sql"].clone(),
        );
    }
    std::fs::write(
        dir.path().join("answers.json"),
        serde_json::Value::Object(answers).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("answer.py"),
        "import json, sys\nrequest = json.load(sys.stdin)\nanswers = json.load(open(sys.argv[1]))\n\
         sql = answers.get(request['id'])\nprint(json.dumps({'sql': sql} if sql else {'abstain': True}))\n",
    )
    .unwrap();
    let config = format!(
        "[[suite]]\nbenchmark = \"{}\"\nfamilies = {{ jqe = \"jqe.jsonl\" }}\n\n[[system]]\nname = \"lookup\"\ntype = \"command\"\n\
         command = [\"python3\", \"answer.py\", \"answers.json\"]\n",
        repo.join("benchmarks/demo/suite.toml").display()
    );
    std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
    let gate_test = |args: &[&str]| {
        sqlgate()
            .arg("test")
            .args(args)
            .current_dir(dir.path())
            .run()
    };
    let listed = gate_test(&["--list"]).stdout;
    for expansion in &expansions {
        let name = format!("demo::bookshop::{}", expansion["id"].as_str().unwrap());
        assert!(
            listed.lines().any(|l| l == name),
            "{name} not listed:\n{listed}"
        );
        assert!(name.contains("::jqe::"));
    }
    let run = gate_test(&["--record", "new", "--no-fail-fast", "jqe"]);
    let text = &run.stdout;
    assert_eq!(run.status.code(), Some(0), "{text}{}", &run.stderr);
    assert!(
        text.contains(&format!(
            "{} tests run: {} passed",
            expansions.len(),
            expansions.len()
        )),
        "{text}"
    );
}

/// The optional LLM rewrite: questions come from a chat model at temperature 0 with a seed,
/// cached, so a rerun sends no request and writes the same file. A 429 is retried; a reply that
/// is no rewrite is refused and the literal rewrite kept.
#[test]
fn questions_can_be_rewritten_by_a_cached_chat_model() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&requests);
    std::thread::spawn(move || {
        for mut request in server.incoming_requests() {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let mut body = String::new();
            let _ = request.as_reader().read_to_string(&mut body);
            let body: Value = serde_json::from_str(&body).unwrap_or_default();
            assert_eq!(body["temperature"], 0.0);
            assert!(body["messages"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .contains("Expanded SQL:"));
            if n == 0 {
                let busy = tiny_http::Response::from_string("slow down").with_status_code(429);
                let _ = request.respond(busy);
                continue;
            }
            let prompt = body["messages"][0]["content"].as_str().unwrap_or_default();
            let line = |label: &str| {
                let start = prompt.find(label).unwrap() + label.len();
                prompt[start..].lines().next().unwrap().trim().to_string()
            };
            let answer = if n == 1 {
                "The original question was: which books?".to_string()
            } else {
                // A true rewrite: the seed's question, its values, and the added join's condition
                // (the table and the columns it joins on).
                let question = line("Original question:");
                let table = line("Added table:");
                let literal = line("Literal rewrite:");
                let relation = literal
                    .split_once("(where ")
                    .and_then(|(_, rest)| rest.split_once(')'))
                    .map_or("", |(relation, _)| relation);
                format!(
                    "\"{}, with a related {table} where {relation} (rewrite {n})?\"\nHope this helps!",
                    question.trim_end_matches(['?', '.'])
                )
            };
            let reply = serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}]});
            let _ = request.respond(tiny_http::Response::from_string(reply.to_string()));
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("jqe.jsonl");
    let generate = || {
        let output = sqlgate()
            .args([
                "generate",
                "jqe",
                "--llm-url",
                &url,
                "--llm-model",
                "toy",
                "--gold",
            ])
            .arg(demo("suite.toml"))
            .arg("--out")
            .arg(&out)
            .run();
        output.assert_success();
        let text = &output.stdout;
        assert!(text.contains("1 refused"), "{text}");
        std::fs::read_to_string(&out).unwrap()
    };
    let first = generate();
    let asked = requests.load(Ordering::SeqCst);
    let expansions: Vec<Value> = first
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        asked,
        expansions.len() + 1,
        "one request per expansion, and the retry"
    );
    let rewritten = expansions
        .iter()
        .filter(|e| {
            let question = e["question"].as_str().unwrap();
            question.contains("(rewrite ") && question.ends_with('?')
        })
        .count();
    assert_eq!(rewritten, expansions.len() - 1, "all but the refused reply");
    assert_eq!(generate(), first, "the rerun writes the same file");
    assert_eq!(
        requests.load(Ordering::SeqCst),
        asked,
        "the rerun is answered by the cache"
    );
    assert!(dir.path().join("jqe.jsonl.rewrites.jsonl").exists());
}

/// A native suite's `[join_keys]` replaces key inference for a database without foreign keys.
#[test]
fn explicit_join_keys_replace_inference() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("schema.sql"),
        "CREATE TABLE b(id INTEGER PRIMARY KEY, name TEXT);\n\
         CREATE TABLE a(id INTEGER PRIMARY KEY, b_id INTEGER, label TEXT);\n\
         CREATE TABLE c(id INTEGER PRIMARY KEY, a_id INTEGER, note TEXT);\n\
         INSERT INTO b VALUES (1, 'x'); INSERT INTO a VALUES (1, 1, 'y'); INSERT INTO c VALUES (1, 1, 'z');\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("cases.jsonl"),
        "{\"id\": \"q1\", \"db\": \"tiny\", \"question\": \"Labels?\", \"gold\": \"SELECT label FROM a\"}\n",
    )
    .unwrap();
    let manifest = |keys: &str| {
        let text = format!(
            "name = \"tiny\"\ncases = \"cases.jsonl\"\ndb_dir = \"build\"\n[databases.tiny]\nscripts = [\"schema.sql\"]\n{keys}"
        );
        std::fs::write(dir.path().join("suite.toml"), text).unwrap();
    };
    let generate = || {
        sqlgate()
            .args(["generate", "jqe", "--gold"])
            .arg(dir.path().join("suite.toml"))
            .arg("--out")
            .arg(dir.path().join("jqe.jsonl"))
            .run()
    };
    let added = || -> Vec<String> {
        std::fs::read_to_string(dir.path().join("jqe.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["added_table"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    // Inference finds both a–b and a–c; one pattern (a path of two tables) is kept.
    manifest("");
    let inferred = generate();
    assert!(inferred.stdout.contains("inferred join edges"));
    assert_eq!(added().len(), 1);
    // With only c.a_id = a.id declared, nothing is inferred and only c can be added.
    manifest("[join_keys]\ntiny = [\"c.a_id = a.id\"]\n");
    let explicit = generate();
    explicit.assert_success();
    assert!(!explicit.stdout.contains("inferred join edges"));
    assert_eq!(added(), ["c"]);
    manifest("[join_keys]\ntiny = [\"c.nope = a.id\"]\n");
    let bad = generate();
    assert_eq!(bad.status.code(), Some(2));
    let message = &bad.stderr;
    assert!(
        message.contains("suite.toml") && message.contains("no column `nope`"),
        "{message}"
    );
}
