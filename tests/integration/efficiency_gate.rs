//! Efficiency end to end: `score --efficiency` and the gate's `efficiency` give the same
//! per-case and mean VES and R-VES by steps, the same from run to run; gates on them; timed
//! numbers reach the JUnit report but never the snapshot; settings the gate cannot honour are
//! configuration errors.

use serde_json::Value;
use sqlgate::gate::judge::format_metric;

use crate::score_gate_parity::gate;
use crate::support::{repo, sqlgate};

fn demo_suite() -> String {
    repo()
        .join("benchmarks/demo/suite.toml")
        .display()
        .to_string()
}

fn sample() -> std::path::PathBuf {
    repo().join("benchmarks/demo/predictions/sample.jsonl")
}

fn score_steps() -> Value {
    let output = sqlgate()
        .args(["score", "--gold", &demo_suite(), "--pred"])
        .arg(sample())
        .args(["--efficiency", "steps", "--format", "json"])
        .run();
    output.assert_success();
    serde_json::from_str(&output.stdout).expect("JSON")
}

#[test]
fn steps_score_the_same_through_score_and_the_gate_run_after_run() {
    let score = score_steps();
    assert_eq!(score, score_steps(), "two runs of score differ");
    let settings = format!(
        "benchmark = \"{}\"\nefficiency = [\"steps\"]\ngate = {{ rves_steps = \">= 50\", ves_steps = \">= 150\" }}",
        demo_suite()
    );
    let first = gate(&settings, &sample());
    let second = gate(&settings, &sample());
    assert_eq!(first.properties, second.properties, "two gate runs differ");
    let mut compared = 0;
    for case in score["cases"].as_array().unwrap() {
        if case["feasible"] != true {
            continue;
        }
        let name = format!(
            "{}::{}",
            case["db"].as_str().unwrap(),
            case["id"].as_str().unwrap()
        );
        let properties = &first.properties[&name];
        for metric in ["ves", "rves"] {
            let value = case["efficiency"]["steps"][metric].as_f64().unwrap();
            let property = properties.get(&format!("{metric}_steps"));
            assert_eq!(property, Some(&format_metric(value)), "{name}: {metric}");
        }
        // A wrong answer scores 0; a correct one something.
        let ratio = case["efficiency"]["steps"]["ratio"].as_f64().unwrap();
        assert_eq!(case["ex"] == 1, ratio > 0.0, "{name}");
        compared += 1;
    }
    assert_eq!(compared, 34);
    let summary = &score["summary"]["efficiency"];
    for metric in ["ves_steps", "rves_steps"] {
        let mean = summary[metric].as_f64().unwrap();
        assert_eq!(first.properties[""].get(metric), Some(&format_metric(mean)));
    }
    // The sample's correct answers are about as costly as the gold: R-VES passes at 50, and
    // no mean of 100·sqrt(R) over a quarter of wrong answers reaches 150.
    assert!(
        !first.failures.contains_key("gate::rves_steps"),
        "{:?}",
        first.failures
    );
    let ves_gate = first
        .failures
        .get("gate::ves_steps")
        .expect("ves_steps >= 150 fails");
    assert!(ves_gate.contains("150"), "{ves_gate}");
    // The counted steps are in the snapshot lines, as any deterministic metric.
    let snapshot = std::fs::read_to_string(first.dir.path().join("snapshots/parity.snap.new"))
        .expect("a pending snapshot");
    assert!(snapshot.contains("rves_steps="), "{snapshot}");
}

#[test]
fn timed_numbers_reach_the_report_but_never_the_snapshot() {
    let settings = format!(
        "benchmark = \"{}\"\nefficiency = [\"time\", \"steps\"]\nefficiency_iterations = 3\n\
         gate = {{ ves = \">= 0\", rves = \">= 0\" }}",
        demo_suite()
    );
    let run = gate(&settings, &sample());
    // Wrong answers fail (nothing is accepted yet); the gates pass.
    assert!(
        !run.failures.keys().any(|test| test.starts_with("gate::")),
        "{:?}",
        run.failures
    );
    let suite = &run.properties[""];
    for metric in ["ves", "rves", "ves_steps", "rves_steps"] {
        assert!(suite.contains_key(metric), "{metric}: {suite:?}");
    }
    let correct = &run.properties["bookshop::q01"];
    let rves: f64 = correct["rves"].parse().unwrap();
    assert!(rves > 0.0, "{correct:?}");
    let snapshot = std::fs::read_to_string(run.dir.path().join("snapshots/parity.snap.new"))
        .expect("a pending snapshot");
    assert!(snapshot.contains(" ves_steps="), "{snapshot}");
    assert!(
        !snapshot.contains(" ves=") && !snapshot.contains(" rves="),
        "{snapshot}"
    );
}

#[test]
fn a_gate_the_suite_cannot_compute_or_reach_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sqlgate.toml");
    let check = |suite: &str, expected: &str| {
        std::fs::write(
            &config,
            format!(
                "[[suite]]\nbenchmark = \"{}\"\n{suite}\n\n[[system]]\nname = \"r\"\n\
                 type = \"replay\"\npredictions = \"{}\"\n",
                demo_suite(),
                sample().display()
            ),
        )
        .unwrap();
        let output = sqlgate()
            .args(["test", "--config", config.to_str().unwrap()])
            .run();
        output.assert_code(2);
        assert!(
            output.stderr.contains(expected),
            "{suite}: {}",
            output.stderr
        );
    };
    check(
        "gate = { ves_steps = \">= 90\" }",
        "gate `ves_steps` needs `efficiency = [\"steps\"]`",
    );
    check(
        "efficiency = [\"steps\"]\ngate = { rves = \">= 90\" }",
        "gate `rves` needs `efficiency = [\"time\"]`",
    );
    check(
        "efficiency = [\"steps\"]\ngate = { rves_steps = \">= 112\" }",
        "between 0 and 111.8",
    );
    check("efficiency = [\"seconds\"]", "unknown variant `seconds`");
    check(
        "efficiency = [\"time\"]\nefficiency_iterations = 0",
        "efficiency_iterations",
    );
}
