//! `sqlgate score` and the gate score a case through one pipeline: the same predictions give the
//! same per-case and mean EX, ESM, ETM, F1 and Soft-F1 in `score --format json` and in the gate's JUnit
//! properties, on the demo and on Spider dev. Also: ESM finds databases in the flat layout, and a
//! database missing from `tables.json` is an input error before anything is scored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use sqlgate::gate::judge::format_metric;

use crate::support::{repo, shared_data, sqlgate};

const REGIME: &str = "EC-EC-IE";

fn score_json(args: &[&str]) -> Value {
    let output = sqlgate().args([args, &["--format", "json"]].concat()).run();
    output.assert_success();
    serde_json::from_str(&output.stdout).expect("score prints JSON")
}

pub(crate) type Properties = BTreeMap<String, BTreeMap<String, String>>;

/// The JUnit properties of a gate run: the suite's (key `""`) and each case's (`<db>::<id>`).
fn gate_properties(suite_settings: &str, predictions: &Path) -> Properties {
    gate_run(suite_settings, predictions).1
}

/// A gate run of suite `parity` in a folder of its own (its pending snapshot is kept there).
fn gate_run(suite_settings: &str, predictions: &Path) -> (tempfile::TempDir, Properties) {
    let run = gate(suite_settings, predictions);
    (run.dir, run.properties)
}

/// What a gate run left: its folder, its terminal output, the JUnit properties of the suite
/// (key `""`) and of each test, and the failure message of each failing test.
pub(crate) struct GateRun {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) stdout: String,
    pub(crate) properties: Properties,
    pub(crate) failures: BTreeMap<String, String>,
}

pub(crate) fn gate(suite_settings: &str, predictions: &Path) -> GateRun {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sqlgate.toml");
    std::fs::write(
        &config,
        format!(
            "snapshots = \"snapshots\"\n\n[[suite]]\nname = \"parity\"\n{suite_settings}\n\n\
             [[system]]\nname = \"replayed\"\ntype = \"replay\"\npredictions = \"{}\"\n",
            predictions.display()
        ),
    )
    .unwrap();
    let junit = dir.path().join("junit.xml");
    let output = sqlgate()
        .args([
            "test",
            "--config",
            config.to_str().unwrap(),
            "--no-fail-fast",
            "--junit",
            junit.to_str().unwrap(),
        ])
        .run();
    let code = output.status.code();
    assert!(code == Some(0) || code == Some(100), "{}", &output.stderr);
    let xml = std::fs::read_to_string(&junit).expect("JUnit written");
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let properties = |node: roxmltree::Node<'_, '_>| -> BTreeMap<String, String> {
        node.children()
            .filter(|n| n.has_tag_name("properties"))
            .flat_map(|p| p.children().filter(|n| n.has_tag_name("property")))
            .map(|p| {
                let name = p.attribute("name").unwrap().to_string();
                (name, p.attribute("value").unwrap().to_string())
            })
            .collect()
    };
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite") && n.attribute("name") == Some("parity"))
        .expect("the suite is in the report");
    let mut all = BTreeMap::from([(String::new(), properties(suite))]);
    let mut failures = BTreeMap::new();
    for case in suite.children().filter(|n| n.has_tag_name("testcase")) {
        let name = case.attribute("name").unwrap().to_string();
        all.insert(name.clone(), properties(case));
        let failure = case.children().find(|n| n.has_tag_name("failure"));
        if let Some(message) = failure.and_then(|n| n.attribute("message")) {
            failures.insert(name, message.to_string());
        }
    }
    GateRun {
        dir,
        stdout: output.stdout.clone(),
        properties: all,
        failures,
    }
}

/// Each metric of `score`'s JSON equals the gate's property, per case and as a mean.
fn assert_same(score: &Value, gate: &Properties, metrics: &[&str]) {
    let cases = score["cases"].as_array().unwrap();
    let mut compared = 0;
    for case in cases.iter().filter(|c| c["feasible"] == true) {
        let name = format!(
            "{}::{}",
            case["db"].as_str().unwrap(),
            case["id"].as_str().unwrap()
        );
        let properties = &gate[&name];
        for metric in metrics {
            let value = match *metric {
                "f1" => &case["fine"][REGIME]["f1"],
                other => &case[other],
            };
            let value = value
                .as_f64()
                .unwrap_or_else(|| panic!("{name}: no {metric} in {case}"));
            assert_eq!(
                properties.get(*metric).map(String::as_str),
                Some(format_metric(value).as_str()),
                "{name}: {metric}"
            );
            compared += 1;
        }
    }
    assert!(compared > 0);
    let summary = &score["summary"];
    for metric in metrics {
        let mean = match *metric {
            "ex" => &summary["ex"],
            "f1" => &summary["fine"][REGIME]["f1"],
            other => &summary[other]["all"],
        };
        assert_eq!(
            gate[""].get(*metric).map(String::as_str),
            Some(format_metric(mean.as_f64().unwrap()).as_str()),
            "mean {metric}"
        );
    }
}

#[test]
fn demo_scores_the_same_through_score_and_the_gate() {
    let suite = repo().join("benchmarks/demo/suite.toml");
    let predictions = repo().join("benchmarks/demo/predictions/sample.jsonl");
    let metrics = format!("etm,{REGIME}");
    let score = score_json(&[
        "score",
        "--gold",
        suite.to_str().unwrap(),
        "--pred",
        predictions.to_str().unwrap(),
        "--metrics",
        &metrics,
        "--soft-f1",
    ]);
    let gate = gate_properties(
        &format!(
            "benchmark = \"{}\"\nstructural = [\"etm\"]\nregime = \"{REGIME}\"\nsoft_f1 = true",
            suite.display()
        ),
        &predictions,
    );
    assert_same(&score, &gate, &["ex", "etm", "f1", "soft_f1"]);
}

#[test]
fn tqa_families_score_the_same_through_score_and_the_gate() {
    let suite = repo().join("benchmarks/demo/suite.toml");
    let tqa = repo().join("benchmarks/demo/tqa");
    let predictions = tqa.join("predictions.jsonl");
    let families = ["tqa-oo", "tqa-lo", "tqa-ol", "tqa-ll"];
    let flags: Vec<String> = families
        .iter()
        .flat_map(|f| {
            let path = tqa.join(format!("{f}.jsonl"));
            ["--family".to_string(), format!("{f}={}", path.display())]
        })
        .collect();
    let mut args = vec![
        "score",
        "--gold",
        suite.to_str().unwrap(),
        "--pred",
        predictions.to_str().unwrap(),
    ];
    args.extend(flags.iter().map(String::as_str));
    let score = score_json(&args);
    let table: Vec<String> = families
        .iter()
        .map(|f| format!("{f} = \"{}\"", tqa.join(format!("{f}.jsonl")).display()))
        .collect();
    // Gates on every family metric the demo can give, so the gate computes each one.
    let gate = gate_properties(
        &format!(
            "benchmark = \"{}\"\nfamilies = {{ {} }}\nfamily_gate = {{ tqa-ll = {{ \"pass@1\" = 0, qvt = 0, drop = 100 }} }}",
            suite.display(),
            table.join(", ")
        ),
        &predictions,
    );
    assert_same(&score, &gate, &["ex"]);
    let summary = &score["summary"]["families"];
    for family in families {
        let values = &summary[family];
        for (metric, value) in [
            ("ex", &values["ex"]),
            ("drop", &values["drop"]),
            ("qvt", &values["qvt"]["mean"]),
            ("pass@1", &values["pass_at_k"]["1"]),
        ] {
            assert_eq!(
                gate[""]
                    .get(&format!("{family}::{metric}"))
                    .map(String::as_str),
                Some(format_metric(value.as_f64().unwrap()).as_str()),
                "{family} {metric}"
            );
        }
    }
    // The family's own cases carry their seed in the gate's report.
    assert_eq!(gate["bookshop::q01::tqa-ll::n3"]["seed_id"], "q01");
}

#[test]
fn spider_dev_scores_the_same_through_score_and_the_gate() {
    let Some(data) = shared_data() else {
        return;
    };
    let spider = data.join("spider-dev");
    let (gold, db_dir, tables) = (
        spider.join("gold.txt"),
        spider.join("schema-db"),
        spider.join("tables.json"),
    );
    let predictions = spider.join("predictions/C3.txt");
    let metrics = format!("esm,etm,{REGIME}");
    let score = score_json(&[
        "score",
        "--gold",
        gold.to_str().unwrap(),
        "--pred",
        predictions.to_str().unwrap(),
        "--db-dir",
        db_dir.to_str().unwrap(),
        "--tables",
        tables.to_str().unwrap(),
        "--metrics",
        &metrics,
    ]);
    let gate = gate_properties(
        &format!(
            "benchmark = \"{}\"\ndb_dir = \"{}\"\ntables = \"{}\"\nstructural = [\"esm\", \"etm\"]\nregime = \"{REGIME}\"",
            gold.display(),
            db_dir.display(),
            tables.display()
        ),
        &predictions,
    );
    assert_same(&score, &gate, &["ex", "esm", "etm", "f1"]);
    // The test-suite evaluator's exact match for C3 is 46.9: not a silent 0.000.
    let esm = score["summary"]["esm"]["all"].as_f64().unwrap();
    assert_eq!((esm * 1000.0).round(), 469.0, "{esm}");
}

/// Spider's databases copied into the flat layout `<db-dir>/<db>.sqlite` (issue: ESM looked only
/// in `<db>/<db>.sqlite` and reported 0.000 with no warning).
fn flat_copy(schema_db: &Path, dbs: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for db in dbs {
        std::fs::copy(
            schema_db.join(db).join(format!("{db}.sqlite")),
            dir.path().join(format!("{db}.sqlite")),
        )
        .unwrap();
    }
    dir
}

/// The first `n` Spider dev pairs of `db`, as gold and prediction files.
fn spider_subset(spider: &Path, db: &str, n: usize, dir: &Path) -> (PathBuf, PathBuf) {
    let gold = std::fs::read_to_string(spider.join("gold.txt")).unwrap();
    let lines: Vec<&str> = gold
        .lines()
        .filter(|line| line.ends_with(&format!("\t{db}")))
        .take(n)
        .collect();
    let (gold_path, pred_path) = (dir.join("gold.txt"), dir.join("pred.txt"));
    std::fs::write(&gold_path, lines.join("\n") + "\n").unwrap();
    let predictions: Vec<&str> = lines
        .iter()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    std::fs::write(&pred_path, predictions.join("\n") + "\n").unwrap();
    (gold_path, pred_path)
}

#[test]
fn esm_reads_the_flat_database_layout() {
    let Some(data) = shared_data() else {
        return;
    };
    let spider = data.join("spider-dev");
    let flat = flat_copy(&spider.join("schema-db"), &["concert_singer"]);
    let files = tempfile::tempdir().unwrap();
    let (gold, pred) = spider_subset(&spider, "concert_singer", 10, files.path());
    let score = score_json(&[
        "score",
        "--gold",
        gold.to_str().unwrap(),
        "--pred",
        pred.to_str().unwrap(),
        "--db-dir",
        flat.path().to_str().unwrap(),
        "--tables",
        spider.join("tables.json").to_str().unwrap(),
        "--metrics",
        "esm",
    ]);
    // Gold against itself: every case matches, and none reports an error.
    let cases = score["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 10);
    for case in cases {
        assert_eq!(case["esm"], 1, "{case}");
        assert!(case.get("diagnostics").is_none(), "{case}");
    }
    assert_eq!(score["summary"]["esm"]["all"], 1.0);
    assert!(score["summary"].get("metric_errors").is_none());
}

#[test]
fn a_database_missing_from_tables_json_is_bad_input() {
    let Some(data) = shared_data() else {
        return;
    };
    let spider = data.join("spider-dev");
    let files = tempfile::tempdir().unwrap();
    let (gold, pred) = spider_subset(&spider, "concert_singer", 3, files.path());
    let tables: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(spider.join("tables.json")).unwrap())
            .unwrap();
    let without: Vec<&Value> = tables
        .iter()
        .filter(|t| t["db_id"] != "concert_singer")
        .collect();
    let tables_path = files.path().join("tables.json");
    std::fs::write(&tables_path, serde_json::to_string(&without).unwrap()).unwrap();
    let output = sqlgate()
        .args([
            "score",
            "--gold",
            gold.to_str().unwrap(),
            "--pred",
            pred.to_str().unwrap(),
            "--db-dir",
            spider.join("schema-db").to_str().unwrap(),
            "--tables",
            tables_path.to_str().unwrap(),
            "--metrics",
            "esm",
        ])
        .run();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty(), "nothing is scored");
    let stderr = &output.stderr;
    assert!(stderr.contains("gold.txt"), "{stderr}");
    assert!(stderr.contains("`concert_singer` is not in"), "{stderr}");
    assert!(stderr.contains("tables.json"), "{stderr}");
}

#[test]
fn a_metric_that_cannot_be_computed_scores_zero_and_is_counted_everywhere() {
    let suite = repo().join("benchmarks/demo/suite.toml");
    let predictions = repo().join("benchmarks/demo/predictions/sample.jsonl");
    // Nothing listens on the discard port: every embedding request is refused.
    let dead = "http://127.0.0.1:9/v1";
    let cache = tempfile::tempdir().unwrap();
    let cache_file = cache.path().join("embeddings.jsonl");
    let args = [
        "score",
        "--gold",
        suite.to_str().unwrap(),
        "--pred",
        predictions.to_str().unwrap(),
        "--metrics",
        "SC-EC-PE",
        "--embeddings-url",
        dead,
        "--embeddings-model",
        "nomic-embed-text",
        "--embeddings-cache",
        cache_file.to_str().unwrap(),
    ];
    let score = score_json(&args);
    let failed: Vec<&Value> = score["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|case| {
            case["diagnostics"]
                .as_array()
                .is_some_and(|d| d.iter().any(|d| d["code"] == "sqlmorph_error"))
        })
        .collect();
    assert!(!failed.is_empty());
    for case in &failed {
        assert_eq!(case["fine"]["SC-EC-PE"]["f1"], 0.0, "{case}");
    }
    assert_eq!(
        score["summary"]["metric_errors"]["sqlmorph"],
        failed.len(),
        "counted in the summary"
    );
    let text = sqlgate().args(args).run();
    let stdout = &text.stdout;
    assert!(
        stdout.contains(&format!(
            "sqlmorph could not be computed for {} case(s)",
            failed.len()
        )),
        "{stdout}"
    );

    let (dir, gate) = gate_run(
        &format!(
            "benchmark = \"{}\"\nregime = \"SC-EC-PE\"\nembeddings = {{ base_url = \"{dead}\", model = \"nomic-embed-text\", throttle = {{ backoff_secs = 0 }} }}",
            suite.display()
        ),
        &predictions,
    );
    let snapshot = std::fs::read_to_string(dir.path().join("snapshots/parity.snap.new"))
        .expect("a pending snapshot");
    for case in &failed {
        let name = format!(
            "{}::{}",
            case["db"].as_str().unwrap(),
            case["id"].as_str().unwrap()
        );
        let properties = &gate[&name];
        assert_eq!(properties["f1"], "0", "{name}");
        assert!(
            properties["sqlmorph_error"].contains("127.0.0.1:9"),
            "the property gives the reason: {properties:?}"
        );
        let line = snapshot
            .lines()
            .find(|line| line.starts_with(&format!("parity::{name} ")))
            .expect("the case is in the snapshot");
        assert!(line.contains("sqlmorph_error=1"), "{line}");
    }
    assert_eq!(
        gate[""]["f1"],
        format_metric(score["summary"]["fine"]["SC-EC-PE"]["f1"].as_f64().unwrap())
    );
}

/// An embeddings server on 127.0.0.1 whose first `failures` requests get HTTP 503; its vectors
/// are derived from the text. Also the count of requests it got.
fn embeddings_server(failures: usize) -> (String, std::sync::Arc<AtomicUsize>) {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
    let requests = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&requests);
    std::thread::spawn(move || {
        for mut request in server.incoming_requests() {
            let mut body = String::new();
            let _ = request.as_reader().read_to_string(&mut body);
            if counter.fetch_add(1, Ordering::SeqCst) < failures {
                let _ = request.respond(
                    tiny_http::Response::from_string("{\"error\": {\"message\": \"loading\"}}")
                        .with_status_code(503),
                );
                continue;
            }
            let body: Value = serde_json::from_str(&body).unwrap_or_default();
            let inputs = body["input"].as_array().cloned().unwrap_or_default();
            let data: Vec<Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, text)| {
                    let text = text.as_str().unwrap_or_default();
                    let count = |set: &str| text.chars().filter(|c| set.contains(*c)).count();
                    let vector = [count("aeiou"), count("nrst"), count("0123456789"), 1];
                    serde_json::json!({"index": i, "embedding": vector})
                })
                .collect();
            let response = serde_json::json!({"data": data}).to_string();
            let _ = request.respond(tiny_http::Response::from_string(response));
        }
    });
    (url, requests)
}

/// A port on 127.0.0.1 nothing listens on.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

/// The demo under SC-EC-PE with embeddings from `url` and `gate = { f1 = ">= 0.5" }`.
fn semantic_suite(url: &str, more: &str) -> String {
    format!(
        "benchmark = \"{}\"\nregime = \"SC-EC-PE\"\n\
         embeddings = {{ base_url = \"{url}\", model = \"toy\", throttle = {{ backoff_secs = 0 }} }}\n\
         gate = {{ f1 = \">= 0.5\" }}\n{more}",
        repo().join("benchmarks/demo/suite.toml").display()
    )
}

fn sample_predictions() -> PathBuf {
    repo().join("benchmarks/demo/predictions/sample.jsonl")
}

/// Issue 24 item 4: with the embeddings server down, some cases scored 0 and the f1 gate still
/// passed on the lowered mean. A gate over a metric missing for some cases fails, saying how
/// many, unless the suite allows it; the warning shows either way.
#[test]
fn an_embeddings_outage_fails_the_gate_unless_the_suite_allows_it() {
    let (url, _) = embeddings_server(0);
    let healthy = gate(&semantic_suite(&url, ""), &sample_predictions());
    assert!(
        !healthy.failures.contains_key("gate::f1"),
        "{}",
        healthy.stdout
    );
    let healthy_f1: f64 = healthy.properties[""]["f1"].parse().unwrap();

    let down = gate(&semantic_suite(&closed_port(), ""), &sample_predictions());
    let lowered: f64 = down.properties[""]["f1"].parse().unwrap();
    assert!(
        (0.5..healthy_f1).contains(&lowered),
        "the number alone would pass: {lowered} against {healthy_f1}"
    );
    let not_computed = down
        .properties
        .values()
        .filter(|p| p.contains_key("sqlmorph_error"))
        .count();
    assert!(not_computed > 0);
    let suite = repo().join("benchmarks/demo/suite.toml");
    let predictions = sample_predictions();
    let plain = score_json(&[
        "score",
        "--gold",
        suite.to_str().unwrap(),
        "--pred",
        predictions.to_str().unwrap(),
    ]);
    let feasible = plain["summary"]["n"].as_u64().unwrap();
    let message = &down.failures["gate::f1"];
    let counted = format!(
        "f1 = {} over {feasible} cases, {not_computed} of which could not be computed (",
        format_metric(lowered)
    );
    assert!(message.starts_with(&counted), "{message}");
    assert!(
        message.contains("Connection refused") || message.contains("connect"),
        "{message}"
    );
    assert!(message.contains("allow_metric_errors = true"), "{message}");
    assert!(
        down.stdout.contains(&format!(
            "sqlmorph could not be computed for {not_computed} cases"
        )),
        "{}",
        down.stdout
    );

    let allowed = gate(
        &semantic_suite(&closed_port(), "allow_metric_errors = true"),
        &sample_predictions(),
    );
    assert!(
        !allowed.failures.contains_key("gate::f1"),
        "{}",
        allowed.stdout
    );
    assert_eq!(allowed.properties[""]["f1"], format_metric(lowered));
    assert_eq!(
        allowed.properties["gate::f1"]["not_computed"],
        not_computed.to_string()
    );
    assert!(
        allowed.stdout.contains(&format!(
            "sqlmorph could not be computed for {not_computed} cases"
        )),
        "the warning still shows: {}",
        allowed.stdout
    );
}

/// Issue 24 item 4: embedding requests are retried like chat requests, so a server that fails
/// twice gives the numbers of a healthy one, in the gate and in `sqlgate score`.
#[test]
fn embedding_requests_are_retried_to_the_numbers_of_a_healthy_server() {
    let (url, _) = embeddings_server(0);
    let healthy = gate(&semantic_suite(&url, ""), &sample_predictions());
    let (url, requests) = embeddings_server(2);
    let flaky = gate(&semantic_suite(&url, ""), &sample_predictions());
    assert!(requests.load(Ordering::SeqCst) > 2);
    assert_eq!(flaky.properties, healthy.properties, "{}", flaky.stdout);
    assert!(
        !flaky.stdout.contains("could not be computed"),
        "{}",
        flaky.stdout
    );
    assert!(!flaky.failures.contains_key("gate::f1"), "{}", flaky.stdout);

    let (url, _) = embeddings_server(2);
    let cache = tempfile::tempdir().unwrap();
    let score = score_json(&[
        "score",
        "--gold",
        repo().join("benchmarks/demo/suite.toml").to_str().unwrap(),
        "--pred",
        sample_predictions().to_str().unwrap(),
        "--metrics",
        "SC-EC-PE",
        "--embeddings-url",
        &url,
        "--embeddings-model",
        "toy",
        "--embeddings-cache",
        cache.path().join("embeddings.jsonl").to_str().unwrap(),
    ]);
    assert!(score["summary"].get("metric_errors").is_none(), "{score}");
    assert_eq!(
        format_metric(score["summary"]["fine"]["SC-EC-PE"]["f1"].as_f64().unwrap()),
        healthy.properties[""]["f1"]
    );
}
