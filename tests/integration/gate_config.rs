//! Malformed `sqlgate.toml` files: exit 2 with the file, line and column of the problem.

use crate::support::{demo, sqlgate, Run};

/// `sqlgate test --list` in a folder whose `sqlgate.toml` is `config`.
fn run_config(config: &str) -> (Run, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
    let output = sqlgate()
        .args(["test", "--list"])
        .current_dir(dir.path())
        .run();
    let stderr = output.stderr.clone();
    (output, stderr)
}

fn demo_suite() -> String {
    format!(
        "[[suite]]\nbenchmark = \"{}\"\n",
        demo("suite.toml").display()
    )
}

fn assert_located(config: &str, line: usize, column: usize, words: &str) {
    let (output, stderr) = run_config(config);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("sqlgate.toml"), "{stderr}");
    assert!(
        stderr.contains(&format!("sqlgate.toml:{line}:{column}: ")),
        "expected line {line}, column {column}: {stderr}"
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
fn a_bad_value_of_a_system_type_is_located_at_its_key() {
    let config = format!(
        "{}\n[[system]]\nname = \"s\"\ntype = \"command\"\ncommand = [\"true\"]\ntimeout_secs = 0\n",
        demo_suite()
    );
    assert_located(
        &config,
        8,
        1,
        "[[system]] `s`: `timeout_secs`: must be a number of seconds in (0, 86400], not 0",
    );
}

#[test]
fn a_system_no_profile_runs_is_checked_all_the_same() {
    // The first system runs; the second one's mistyped key is found when the file is read.
    let config = demo_gate(
        "\n[[system]]\nname = \"later\"\ntype = \"http\"\nurl = \"http://127.0.0.1:9\"\nheader = 1\n",
    );
    assert_located(&config, 13, 1, "[[system]] `later`: unknown field `header`");
}

#[test]
fn an_unknown_system_type_is_located_at_its_value() {
    let config = format!(
        "{}\n[[system]]\nname = \"s\"\ntype = \"grpc\"\n",
        demo_suite()
    );
    assert_located(&config, 6, 8, "unknown variant `grpc`");
}

#[test]
fn broken_toml_syntax() {
    assert_located("[[suite]\nbenchmark = 1\n", 1, 9, "expected `]`");
}

/// A replay system of the demo's sample predictions: five lines, the first blank.
fn replay_system() -> String {
    format!(
        "\n[[system]]\nname = \"s\"\ntype = \"replay\"\npredictions = \"{}\"\n",
        demo("predictions/sample.jsonl").display()
    )
}

/// The demo suite and a replay system (lines 1 to 7), then `rest` from line 8 on.
fn demo_gate(rest: &str) -> String {
    format!("{}{}{rest}", demo_suite(), replay_system())
}

#[test]
fn a_case_setting_for_no_test_and_no_suite_at_all() {
    assert_located(
        &demo_gate("\n[cases.\"demo::bookshop::q99\"]\nmust_pass = true\n"),
        9,
        8,
        "[cases.\"demo::bookshop::q99\"] names no test",
    );
    assert_located(
        &demo_gate("\n[cases]\n\"demo::bookshop::q01\" = {}\n\"demo::bookshop::q99\" = {}\n"),
        11,
        1,
        "names no test",
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
        demo("tqa/tqa-ll.jsonl").display()
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
            demo("predictions/sample.jsonl")
                .display()
        ),
        6,
        17,
        "no [[suite]] has in `families`",
    );
}

#[test]
fn a_negative_penalty_is_located_in_any_profile() {
    // `ci` is not the profile that runs: its penalty is checked all the same, at its value.
    assert_located(
        &demo_gate("\n[profile.ci]\npenalty = -5\n"),
        10,
        11,
        "`penalty`: must be a non-negative number, got -5",
    );
    assert_located(
        &demo_gate("\n[profile.ci]\npenalty = \"high\"\n"),
        10,
        11,
        "invalid type: string \"high\"",
    );
}

#[test]
fn a_suite_timeout_out_of_range_is_located_at_its_value() {
    assert_located(
        &format!("{}timeout = 0\n{}", demo_suite(), replay_system()),
        3,
        11,
        "`timeout`: must be a number of seconds in (0, 86400], not 0",
    );
    // Inside an inline table too.
    let embeddings = format!(
        "{}regime = \"SC-EC-PE\"\nembeddings = {{ base_url = \"http://127.0.0.1:9/v1\", \
         model = \"m\", timeout_secs = -1 }}\n{}",
        demo_suite(),
        replay_system()
    );
    assert_located(
        &embeddings,
        4,
        80,
        "`timeout_secs`: must be a number of seconds in (0, 86400], not -1",
    );
}

#[test]
fn a_threshold_out_of_range_is_located_at_its_key() {
    assert_located(
        &format!("{}gate = {{ ex = \">= 1.5\" }}\n", demo_suite()),
        3,
        10,
        "gate `ex`: threshold \">= 1.5\" is out of range: `ex` is between 0 and 1",
    );
    assert_located(&demo_gate("\n[gate]\nex = 2\n"), 10, 1, "out of range");
    // In a profile that does not run, and overriding a good top-level threshold.
    assert_located(
        &demo_gate("\n[gate]\nex = 0.5\n\n[profile.ci]\ngate = { ex = \"<= -1\" }\n"),
        13,
        10,
        "out of range",
    );
}

#[test]
fn a_problem_of_a_whole_suite_is_located_at_its_header() {
    assert_located(
        &demo_gate(&format!("\n{}", demo_suite())),
        9,
        1,
        "two suites are named `demo`",
    );
}

#[test]
fn a_bad_system_setting_is_located_at_its_key() {
    assert_located(
        &demo_gate("throttle = { concurrency = 0 }\n"),
        8,
        1,
        "[[system]] `s`: throttle: `concurrency` must be at least 1",
    );
}

#[test]
fn a_bad_embeddings_throttle_is_located_at_its_suite() {
    let config = format!(
        "{}regime = \"SC-EC-PE\"\nembeddings = {{ base_url = \"http://127.0.0.1:9/v1\", \
         model = \"m\", throttle = {{ backoff_secs = -1 }} }}\n{}",
        demo_suite(),
        replay_system()
    );
    assert_located(
        &config,
        1,
        1,
        "[[suite]] embeddings: throttle: `backoff_secs` must be a non-negative number",
    );
}

#[test]
fn an_unknown_engine_names_the_known_ones() {
    assert_located(
        &format!("{}engine = \"oracle\"\n", demo_suite()),
        3,
        10,
        "unknown engine `oracle`; sqlgate knows sqlite, postgres, mysql",
    );
}

#[test]
fn a_server_engine_without_its_url_is_refused_at_the_suite() {
    let (output, stderr) = run_config(&format!("{}engine = \"mysql\"\n", demo_suite()));
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("engine `mysql` needs `dsn`"), "{stderr}");
    assert!(stderr.contains("sqlgate.toml:1:"), "{stderr}");
}
