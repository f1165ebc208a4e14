//! Malformed `sqlgate.toml` files: exit 2 with the file, line and column of the problem.

use std::process::{Command, Output};

fn run_config(config: &str) -> (Output, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_sqlgate"))
        .args(["test", "--list"])
        .current_dir(dir.path())
        .env_remove("CI")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stderr)
}

fn demo_suite() -> String {
    format!(
        "[[suite]]\nbenchmark = \"{}\"\n",
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("benchmarks/demo/suite.toml")
            .display()
    )
}

fn assert_located(config: &str, line: usize, column: usize, words: &str) {
    let (output, stderr) = run_config(config);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("sqlgate.toml"), "{stderr}");
    assert!(
        stderr.contains(&format!("line {line}")),
        "expected line {line}: {stderr}"
    );
    assert!(
        stderr.contains(&format!("column {column}")),
        "expected column {column}: {stderr}"
    );
    assert!(stderr.contains(words), "expected `{words}`: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn an_unknown_top_level_key() {
    assert_located(
        &format!("{}thresholds = 3\n", demo_suite()),
        3,
        1,
        "unknown field `thresholds`",
    );
}

#[test]
fn an_unknown_suite_key() {
    assert_located(
        &format!("{}  modee = \"bird\"\n", demo_suite()),
        3,
        3,
        "unknown field `modee`",
    );
}

#[test]
fn an_unknown_mode() {
    assert_located(
        &format!("{}mode = \"exact\"\n", demo_suite()),
        3,
        8,
        "exact",
    );
}

#[test]
fn a_malformed_threshold() {
    assert_located(
        &format!("{}\n[gate]\nex = \"> 0.5\"\n", demo_suite()),
        5,
        6,
        "threshold",
    );
}

#[test]
fn an_unknown_key_of_a_system_type() {
    let config = format!(
        "{}\n[[system]]\nname = \"s\"\ntype = \"command\"\ncommand = [\"true\"]\ntimout_secs = 3\n",
        demo_suite()
    );
    assert_located(&config, 8, 1, "unknown field `timout_secs`");
}

#[test]
fn an_unknown_system_type() {
    let config = format!(
        "{}\n[[system]]\nname = \"s\"\ntype = \"grpc\"\n",
        demo_suite()
    );
    assert_located(&config, 4, 1, "grpc");
}

#[test]
fn broken_toml_syntax() {
    assert_located("[[suite]\nbenchmark = 1\n", 1, 9, "expected `]`");
}

#[test]
fn a_case_setting_for_no_test_and_no_suite_at_all() {
    let config = format!(
        "{}\n[[system]]\nname = \"s\"\ntype = \"replay\"\npredictions = \"{}\"\n\n[cases.\"demo::bookshop::q99\"]\nmust_pass = true\n",
        demo_suite(),
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benchmarks/demo/predictions/sample.jsonl").display()
    );
    let (output, stderr) = run_config(&config);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr.contains("demo::bookshop::q99") && stderr.contains("names no test"),
        "{stderr}"
    );
    let (output, stderr) = run_config("snapshots = \"s\"\n");
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr.contains("no [[suite]]"), "{stderr}");
}

#[test]
fn a_gate_key_typo() {
    assert_located(
        &format!("{}gate = {{ exx = \">= 0.5\" }}\n", demo_suite()),
        3,
        10,
        "unknown metric `exx`",
    );
}

#[test]
fn a_profile_gate_on_an_unknown_metric() {
    assert_located(
        &format!(
            "{}\n[profile.ci]\ngate = {{ accuracy = \">= 0.5\" }}\n",
            demo_suite()
        ),
        5,
        10,
        "unknown metric `accuracy`",
    );
}

#[test]
fn a_gate_on_a_metric_the_suite_does_not_compute() {
    assert_located(
        &format!("{}gate = {{ ex = 0.5, esm = \">= 0.5\" }}\n", demo_suite()),
        3,
        20,
        "gate `esm` needs `structural = [\"esm\"]`",
    );
    assert_located(
        &format!("{}\n[gate]\nf1 = 0.5\n", demo_suite()),
        5,
        1,
        "gate `f1` needs a `regime`",
    );
}

fn tqa_suite() -> String {
    format!(
        "{}families = {{ tqa-ll = \"{}\" }}\n",
        demo_suite(),
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("benchmarks/demo/tqa/tqa-ll.jsonl")
            .display()
    )
}

#[test]
fn family_gates_are_checked_at_their_keys() {
    // A family the suite does not have.
    assert_located(
        &format!(
            "{}family_gate = {{ tqa-xx = {{ drop = \"<= 5\" }} }}\n",
            tqa_suite()
        ),
        4,
        17,
        "family_gate names family `tqa-xx`, which is not in this suite's `families` (tqa-ll)",
    );
    // A suite metric on a family, and a family metric on the suite.
    assert_located(
        &format!(
            "{}family_gate = {{ tqa-ll = {{ etm = 0.5 }} }}\n",
            tqa_suite()
        ),
        4,
        28,
        "`etm` is not a family metric (family metrics: ex, drop, qvt, pass@K, recall, fpr)",
    );
    assert_located(
        &format!("{}gate = {{ drop = \"<= 5\" }}\n", tqa_suite()),
        4,
        10,
        "`drop` is measured per family against its seeds",
    );
    // pass@K carries a K of at least 1; drop is in points.
    assert_located(
        &format!(
            "{}family_gate = {{ tqa-ll = {{ \"pass@0\" = 0.5 }} }}\n",
            tqa_suite()
        ),
        4,
        28,
        "the K of pass@K must be a whole number of at least 1",
    );
    assert_located(
        &format!(
            "{}family_gate = {{ tqa-ll = {{ drop = \"<= 150\" }} }}\n",
            tqa_suite()
        ),
        4,
        28,
        "between -100 and 100",
    );
    // A profile's family gate on a family that no suite has.
    assert_located(
        &format!(
            "{}\n[profile.ci]\nfamily_gate = {{ para = {{ qvt = 0.7 }} }}\n\n[[system]]\nname = \"s\"\ntype = \"replay\"\npredictions = \"{}\"\n",
            tqa_suite(),
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("benchmarks/demo/predictions/sample.jsonl")
                .display()
        ),
        6,
        17,
        "no [[suite]] has in `families`",
    );
}
