//! The in-process embedder against a NumPy restatement of the same encoder (`reference.py`),
//! on 1,000 sentences: Defog's questions, its infeasible questions and its column descriptions,
//! and Spider's columns as phrases, when the shared data is there; the demo's questions always. Every pair of vectors agrees to
//! within 1e-4 of cosine similarity.

use std::io::Write;
use std::process::{Command, Stdio};

use sqlgate_base::embed::Embedder;
use sqlgate_embedder::SentenceModel;
use sqlgate_test_support::{minilm, repo_root, shared_data};

/// How many sentences are compared.
const SENTENCES: usize = 1000;

fn sentences() -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let demo = std::fs::read_to_string(repo_root().join("benchmarks/demo/cases.jsonl"))
        .unwrap_or_default();
    for line in demo.lines() {
        if let Ok(case) = serde_json::from_str::<serde_json::Value>(line) {
            if let Some(question) = case["question"].as_str() {
                found.push(question.to_string());
            }
        }
    }
    if let Some(data) = shared_data() {
        let defog = data.join("defog");
        for file in ["questions.csv", "idk.csv"] {
            let mut rows = csv::Reader::from_path(defog.join(file)).expect("a Defog file");
            let headers = rows.headers().expect("its header").clone();
            let at = headers
                .iter()
                .position(|h| h == "question")
                .expect("a question column");
            for row in rows.records() {
                found.push(row.expect("a row")[at].to_string());
            }
        }
        let mut described: Vec<_> = std::fs::read_dir(&defog)
            .expect("the Defog folder")
            .map(|entry| entry.expect("an entry").path())
            .filter(|path| path.to_string_lossy().ends_with(".columns.json"))
            .collect();
        described.sort();
        for file in described {
            let text = std::fs::read_to_string(&file).expect("a column file");
            let json: serde_json::Value = serde_json::from_str(&text).expect("its JSON");
            collect_strings(&json, &mut found);
        }
    }
    if let Some(data) = shared_data() {
        // Spider's schemas, each column read as a phrase: "the singer id of singer".
        let text = std::fs::read_to_string(data.join("spider-dev/tables.json")).expect("tables");
        let schemas: serde_json::Value = serde_json::from_str(&text).expect("its JSON");
        for schema in schemas.as_array().into_iter().flatten() {
            let tables = &schema["table_names"];
            for column in schema["column_names"].as_array().into_iter().flatten() {
                let (Some(table), Some(name)) = (column[0].as_u64(), column[1].as_str()) else {
                    continue;
                };
                if let Some(table) = tables[table as usize].as_str() {
                    found.push(format!("the {name} of {table}"));
                }
            }
        }
    }
    found.retain(|s| !s.trim().is_empty());
    let mut seen = std::collections::HashSet::new();
    found.retain(|s| seen.insert(s.clone()));
    found.truncate(SENTENCES);
    found
}

fn collect_strings(json: &serde_json::Value, into: &mut Vec<String>) {
    match json {
        serde_json::Value::String(s) if s.contains(' ') => into.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|i| collect_strings(i, into)),
        serde_json::Value::Object(map) => map.values().for_each(|v| collect_strings(v, into)),
        _ => {}
    }
}

#[test]
fn embeddings_equal_a_numpy_restatement_of_the_encoder() {
    let Some(dir) = minilm() else { return };
    let model = SentenceModel::open(&dir).expect("the model loads");
    let texts = sentences();
    let vectors = model.embed(&texts).expect("embeddings");
    assert_eq!(vectors.len(), texts.len());

    let mut tokenizer = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
    tokenizer
        .with_truncation(Some(tokenizers::TruncationParams {
            max_length: 256,
            ..Default::default()
        }))
        .unwrap();
    tokenizer.with_padding(None);
    let inputs: Vec<serde_json::Value> = texts
        .iter()
        .map(|text| {
            let encoding = tokenizer.encode(text.as_str(), true).unwrap();
            serde_json::json!({"ids": encoding.get_ids(), "types": encoding.get_type_ids()})
        })
        .collect();
    let request = serde_json::json!({"model": dir, "inputs": inputs});
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference.py");
    let mut python = match Command::new("python3")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(_) => {
            sqlgate_test_support::skip::without_tool("python3 with numpy");
            return;
        }
    };
    let mut stdin = python.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(request.to_string().as_bytes()));
    let output = python.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    if !output.status.success() {
        sqlgate_test_support::skip::without_tool("python3 with numpy");
        return;
    }
    let reference: Vec<Vec<f64>> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(reference.len(), texts.len());
    let mut worst = (1.0f64, String::new());
    for ((ours, theirs), text) in vectors.iter().zip(&reference).zip(&texts) {
        let dot: f64 = ours.iter().zip(theirs).map(|(a, b)| *a as f64 * b).sum();
        let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
        let cosine =
            dot / (norm(&mut ours.iter().map(|&x| x as f64)) * norm(&mut theirs.iter().copied()));
        if cosine < worst.0 {
            worst = (cosine, text.clone());
        }
    }
    println!(
        "{} sentences: the lowest cosine between the two is {:.7} ({:?})",
        texts.len(),
        worst.0,
        worst.1
    );
    assert!(worst.0 >= 1.0 - 1e-4, "{worst:?}");
}
