//! The (question, gold) pairs tests measure the generators' checks on: the demo benchmark
//! shipped with the repository and, when the shared data is beside it, Defog.

use std::collections::HashMap;
use std::path::Path;

/// One case: its id, question and first gold query (the one a generator rewrites).
#[derive(Debug, Clone)]
pub struct Pair {
    pub id: String,
    pub question: String,
    pub gold: String,
}

/// The demo's cases with a gold (infeasible ones have none; alternatives give the first).
pub fn demo() -> Vec<Pair> {
    let path = sqlgate_test_support::repo_root().join("benchmarks/demo/cases.jsonl");
    std::fs::read_to_string(path)
        .expect("the demo's cases are in the repository")
        .lines()
        .filter_map(|line| {
            let case: serde_json::Value = serde_json::from_str(line).unwrap();
            let gold = case["gold"].get(0).unwrap_or(&case["gold"]).as_str()?;
            Some(Pair {
                id: case["id"].as_str()?.to_string(),
                question: case["question"].as_str()?.to_string(),
                gold: gold.to_string(),
            })
        })
        .collect()
}

/// The demo's cases by id.
pub fn demo_by_id() -> HashMap<String, Pair> {
    demo().into_iter().map(|p| (p.id.clone(), p)).collect()
}

/// Defog's rows (`data` is the shared data folder), id = row number, the first of the `;`
/// separated gold alternatives.
pub fn defog(data: &Path) -> Vec<Pair> {
    let mut reader = csv::Reader::from_path(data.join("defog/questions.csv")).unwrap();
    let headers = reader.headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (query, question) = (column("query"), column("question"));
    reader
        .records()
        .enumerate()
        .map(|(row, record)| {
            let record = record.unwrap();
            let sql = record[query].split(';').next().unwrap_or_default();
            Pair {
                id: row.to_string(),
                question: record[question].to_string(),
                gold: sql.trim().to_string(),
            }
        })
        .collect()
}
