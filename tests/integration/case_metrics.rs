//! Every registered per-case metric ([`CaseMetric::all`]) through what users read, without a
//! line of this file naming one: `sqlgate score`'s JSON and text, the gate's snapshot lines,
//! JUnit properties, its gate test, run records, shards merged to the numbers of one run,
//! `sqlgate diff`, and the table of docs/metrics.md. A metric added to the registry is
//! covered here as it is.

use std::path::Path;

use serde_json::Value;
use sqlgate_eval::metrics::case_metric::CaseMetric;

use crate::support::{demo, demo_workspace, replace_prediction, repo, sqlgate, Run};

fn names() -> Vec<&'static str> {
    CaseMetric::all().map(CaseMetric::name).collect()
}

/// The demo gate computing every registered metric, each gated `>= 0`.
fn write_config(dir: &Path) {
    let listed: Vec<String> = names().iter().map(|n| format!("\"{n}\"")).collect();
    let gates: Vec<String> = names().iter().map(|n| format!("{n} = \">= 0\"")).collect();
    let config = format!(
        "[[suite]]\nbenchmark = \"{}\"\nmetrics = [{}]\ngate = {{ {} }}\n\n\
         [[system]]\nname = \"sample\"\ntype = \"replay\"\npredictions = \"sample.jsonl\"\n",
        repo().join("benchmarks/demo/suite.toml").display(),
        listed.join(", "),
        gates.join(", ")
    );
    std::fs::write(dir.join("sqlgate.toml"), config).unwrap();
}

fn run(dir: &Path, args: &[&str]) -> Run {
    sqlgate().args(args).current_dir(dir).run()
}

/// `name=value` of every snapshot line that has it, in order.
fn snapshot_values(snapshot: &str, name: &str) -> Vec<String> {
    let prefix = format!("{name}=");
    snapshot
        .lines()
        .filter_map(|line| line.split(" | ").find_map(|w| w.strip_prefix(&prefix)))
        .map(str::to_string)
        .collect()
}

/// The `name` property of every case's test (not the suite's or a gate's), in order.
fn properties(xml: &str, name: &str) -> Vec<String> {
    let property =
        regex::Regex::new(&format!(r#"<property name="{name}" value="[^"]*"/>"#)).unwrap();
    xml.split("<testcase ")
        .filter(|test| test.starts_with("name=\"bookshop::"))
        .filter_map(|test| property.find(test.split("</testcase>").next()?))
        .map(|m| m.as_str().to_string())
        .collect()
}

#[test]
fn every_registered_metric_is_scored_gated_snapshotted_recorded_merged_and_diffed() {
    let dir = demo_workspace();
    // One answer that is wrong in every way a metric can see (rows, text).
    replace_prediction(&dir.path().join("sample.jsonl"), "q01", "SELECT 1");
    write_config(dir.path());

    let scored = sqlgate()
        .args(["score", "--gold"])
        .arg(demo("suite.toml"))
        .arg("--pred")
        .arg(dir.path().join("sample.jsonl"))
        .args(["--metrics", &names().join(","), "--format", "json"])
        .current_dir(demo(""))
        .run();
    scored.assert_success();
    let scored: Value = serde_json::from_str(&scored.stdout).unwrap();
    let text = sqlgate()
        .args(["score", "--gold"])
        .arg(demo("suite.toml"))
        .arg("--pred")
        .arg(dir.path().join("sample.jsonl"))
        .args(["--metrics", &names().join(",")])
        .current_dir(demo(""))
        .run();
    text.assert_success();

    let tested = run(
        dir.path(),
        &[
            "test",
            "--accept",
            "--junit",
            "junit.xml",
            "--record-out",
            "run.json",
        ],
    );
    tested.assert_code(0);
    let snapshot = std::fs::read_to_string(dir.path().join("snapshots/demo.snap")).unwrap();
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    let record: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("run.json")).unwrap()).unwrap();
    let cases = scored["cases"].as_array().expect("per-case values");
    let feasible: Vec<&Value> = cases.iter().filter(|c| c["feasible"] == true).collect();
    assert!(feasible.len() > 10, "{scored}");

    for name in names() {
        // score: each feasible case has a value in [0, 1] and the summary is their mean.
        let values: Vec<f64> = feasible
            .iter()
            .map(|c| {
                c["metrics"][name]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{name}: {c}"))
            })
            .collect();
        assert!(values.iter().all(|v| (0.0..=1.0).contains(v)), "{values:?}");
        assert!(values.contains(&0.0), "{name}: the wrong answer scores 0");
        assert!(
            values.contains(&1.0),
            "{name}: the demo's right answers score 1"
        );
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let summary = scored["summary"]["metrics"][name].as_f64().unwrap();
        assert!(
            (summary - mean).abs() < 1e-12,
            "{name}: {summary} vs {mean}"
        );
        assert!(
            text.stdout.contains(&format!("\n{name} {mean:.3}\n")),
            "{name}:\n{}",
            text.stdout
        );

        // The gate: a snapshot value and a JUnit property per feasible case, the same as
        // score's, and a gate test on the same mean.
        let in_snapshot = snapshot_values(&snapshot, name);
        assert_eq!(in_snapshot.len(), feasible.len(), "{name}:\n{snapshot}");
        let parsed: Vec<f64> = in_snapshot.iter().map(|v| v.parse().unwrap()).collect();
        assert_eq!(parsed, values, "{name}");
        assert_eq!(properties(&junit, name).len(), feasible.len(), "{name}");
        assert!(
            tested.text().contains(&format!("demo::gate::{name}")),
            "{}",
            tested.text()
        );
        let recorded = record["suites"][0]["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["metrics"][name].is_number())
            .count();
        assert_eq!(recorded, feasible.len(), "{name}");
    }

    // Shards merged give the properties of one run; a record edited out of range is refused.
    let shards = ["shard-1.json", "shard-2.json"];
    for (k, shard) in shards.iter().enumerate() {
        let partition = format!("count:{}/2", k + 1);
        let args = ["test", "--partition", &partition, "--record-out", shard];
        run(dir.path(), &args);
    }
    let merged = run(
        dir.path(),
        &[&["merge"], &shards[..], &["--junit", "merged.xml"]].concat(),
    );
    merged.assert_code(0);
    let merged_xml = std::fs::read_to_string(dir.path().join("merged.xml")).unwrap();
    for name in names() {
        assert_eq!(
            properties(&junit, name),
            properties(&merged_xml, name),
            "{name}"
        );
    }
    let path = dir.path().join(shards[1]);
    let mut edited: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let case = edited["suites"][0]["cases"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["metrics"].is_object())
        .unwrap();
    case["metrics"][names()[0]] = 1.5.into();
    std::fs::write(&path, edited.to_string()).unwrap();
    let refused = run(dir.path(), &[&["merge"], &shards[..]].concat());
    refused.assert_code(2);
    let expected = format!("{} = 1.5 does not lie in [0, 1]", names()[0]);
    assert!(refused.text().contains(&expected), "{}", refused.text());

    // diff compares each metric between the accepted snapshot and the run.
    let diff = run(
        dir.path(),
        &[
            "diff",
            "snapshots/demo.snap",
            "run.json",
            "--format",
            "json",
        ],
    );
    diff.assert_code(0);
    let diff: Value = serde_json::from_str(&diff.stdout).unwrap();
    let compared: Vec<&str> = diff["suites"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    for name in names() {
        assert!(compared.contains(&name), "{name}: {compared:?}");
    }
}

#[test]
fn an_unknown_metric_name_is_refused_with_the_registered_ones() {
    let dir = demo_workspace();
    let config = format!(
        "[[suite]]\nbenchmark = \"{}\"\nmetrics = [\"row_cuont\"]\n\n\
         [[system]]\nname = \"sample\"\ntype = \"replay\"\npredictions = \"sample.jsonl\"\n",
        repo().join("benchmarks/demo/suite.toml").display(),
    );
    std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
    let refused = run(dir.path(), &["test"]);
    refused.assert_code(2);
    let text = refused.text();
    assert!(text.contains("sqlgate.toml"), "{text}");
    assert!(
        text.contains("unknown per-case metric `row_cuont`"),
        "{text}"
    );
    for name in names() {
        assert!(text.contains(name), "{text}");
    }
}

#[test]
fn the_docs_table_of_registered_metrics_is_the_registry() {
    let doc = std::fs::read_to_string(repo().join("docs/metrics.md")).unwrap();
    let table = doc
        .split("<!-- registered metrics: checked by tests/integration/case_metrics.rs -->")
        .nth(1)
        .and_then(|rest| {
            rest.split("\n\n")
                .find(|block| block.trim_start().starts_with('|'))
        })
        .expect("docs/metrics.md has the registered metrics' table");
    let rows: Vec<(String, String)> = table
        .lines()
        .skip(2)
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            (cells[0].trim_matches('`').to_string(), cells[1].to_string())
        })
        .collect();
    let registry: Vec<(String, String)> = CaseMetric::all()
        .map(|m| (m.name().to_string(), m.definition().to_string()))
        .collect();
    assert_eq!(rows, registry);
}
