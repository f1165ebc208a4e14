//! What a run tells the person reading it: every gate's value beside its threshold, and hints
//! that fit the system (no cassette advice for a predictions file) and the repository (no
//! `cargo insta` without a `Cargo.toml`), from the first run to a committed baseline.

use std::path::PathBuf;

use crate::support::{demo_workspace, replace_prediction, repo, sqlgate, Run};

/// The demo suite(s) over the sample predictions in a scratch folder without a `Cargo.toml`.
struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    /// One `[[suite]]` per name, each over the demo benchmark, gated at `ex >= 0.6`.
    fn new(suites: &[&str]) -> Workspace {
        let dir = demo_workspace();
        let mut config = String::new();
        for name in suites {
            config.push_str(&format!(
                "[[suite]]\nname = \"{name}\"\nbenchmark = \"{}\"\ngate = {{ ex = \">= 0.6\" }}\n\n",
                repo().join("benchmarks/demo/suite.toml").display()
            ));
        }
        let predictions: Vec<String> = suites
            .iter()
            .map(|name| format!("\"{name}\" = \"sample.jsonl\""))
            .collect();
        config.push_str(&format!(
            "[[system]]\nname = \"sample\"\ntype = \"replay\"\npredictions = {{ {} }}\n\n\
             [profile.strict]\ngate = {{ ex = \">= 0.95\" }}\n",
            predictions.join(", ")
        ));
        std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
        Workspace { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn test(&self, args: &[&str]) -> Run {
        self.test_with_ci(None, args)
    }

    /// `sqlgate test` as CI runs it (`CI=true`).
    fn test_in_ci(&self) -> Run {
        self.test_with_ci(Some("true"), &[])
    }

    fn test_with_ci(&self, ci: Option<&str>, args: &[&str]) -> Run {
        let mut command = sqlgate();
        command
            .arg("test")
            .args(args)
            .current_dir(self.dir.path())
            .env_remove("CI")
            .env_remove("GITHUB_ACTIONS");
        if let Some(ci) = ci {
            command.env("CI", ci);
        }
        command.run()
    }
}

/// The number after `name` on its status line, and what follows it.
fn gate_line<'a>(run: &'a Run, name: &str) -> (&'a str, f64, &'a str) {
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains(&format!("] {name}  ")))
        .unwrap_or_else(|| panic!("no status line for {name}:\n{}", run.stdout));
    let after = line.split_once(&format!("] {name}  ")).unwrap().1;
    let (number, rest) = after.split_once([' ', ',']).unwrap();
    (
        line.split_whitespace().next().unwrap(),
        number.parse().unwrap(),
        rest,
    )
}

/// The `ex` property of `<suite>::gate::ex` in a JUnit report.
fn junit_gate_value(path: &std::path::Path, suite: &str) -> f64 {
    let xml = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let case = doc
        .descendants()
        .find(|n| {
            n.has_tag_name("testcase")
                && n.attribute("classname") == Some(suite)
                && n.attribute("name") == Some("gate::ex")
        })
        .expect("the gate's testcase");
    let property = case
        .descendants()
        .find(|n| n.has_tag_name("property") && n.attribute("name") == Some("ex"))
        .expect("the gate's ex property");
    property.attribute("value").unwrap().parse().unwrap()
}

#[test]
fn passing_and_failing_gates_show_their_value_beside_the_threshold() {
    let workspace = Workspace::new(&["demo"]);
    let run = workspace.test(&["--junit", "junit.xml"]);
    run.assert_code(0);
    let (status, value, rest) = gate_line(&run, "demo::gate::ex");
    assert_eq!((status, rest), ("PASS", ">= 0.6"), "{}", run.stdout);
    assert_eq!(
        value,
        junit_gate_value(&workspace.path("junit.xml"), "demo")
    );
    assert!(value >= 0.6);

    let strict = workspace.test(&["--profile", "strict", "--junit", "strict.xml"]);
    strict.assert_code(100);
    let (status, failing, rest) = gate_line(&strict, "demo::gate::ex");
    assert_eq!(
        (status, rest),
        ("FAIL", " needs >= 0.95"),
        "{}",
        strict.stdout
    );
    assert_eq!(failing, value, "the same answers, the same value");
}

#[test]
fn a_predictions_file_missing_a_case_says_so_without_cassette_advice() {
    let workspace = Workspace::new(&["demo"]);
    let predictions = workspace.path("sample.jsonl");
    let text = std::fs::read_to_string(&predictions).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"] != "q03")
        .collect();
    assert_eq!(kept.len() + 1, text.lines().count(), "q03 is answered once");
    std::fs::write(&predictions, kept.join("\n") + "\n").unwrap();

    let run = workspace.test(&[]);
    run.assert_code(100);
    let text = run.text();
    assert!(
        text.contains("1 answer is missing from the predictions file"),
        "{text}"
    );
    assert!(
        !text.contains("cassette"),
        "a replay system has none: {text}"
    );
    // Accepting the run does not make a missing answer a known failure.
    workspace.test(&["--accept"]).assert_code(100);
}

#[test]
fn a_first_run_says_how_a_baseline_is_made_and_accepting_it_makes_ci_pass() {
    let workspace = Workspace::new(&["demo"]);
    std::fs::remove_file(workspace.path("snapshots/demo.snap")).unwrap();

    let in_ci = workspace.test_in_ci();
    in_ci.assert_code(100);
    assert!(
        in_ci
            .text()
            .contains("no accepted snapshot snapshots/demo.snap in this checkout"),
        "{}",
        in_ci.text()
    );

    let first = workspace.test(&[]);
    first.assert_code(100);
    let text = first.text();
    assert!(
        text.contains(
            "no snapshot accepted yet for `demo`: until one is, every wrong answer fails"
        ),
        "{text}"
    );
    assert!(
        text.contains("`sqlgate test --accept` makes it the baseline"),
        "{text}"
    );
    assert!(workspace.path("snapshots/demo.snap.new").is_file());

    workspace.test(&["--accept"]).assert_code(0);
    assert!(workspace.path("snapshots/demo.snap").is_file());
    workspace.test_in_ci().assert_code(0);
}

#[test]
fn the_review_hint_names_cargo_insta_only_in_a_cargo_project() {
    let workspace = Workspace::new(&["demo"]);
    // q01 answered wrongly: a regression, and a changed snapshot line.
    replace_prediction(
        &workspace.path("sample.jsonl"),
        "q01",
        "SELECT title FROM books",
    );
    let plain = workspace.test(&[]).text();
    assert!(
        plain.contains("accept it with `sqlgate test --accept`") && !plain.contains("cargo insta"),
        "{plain}"
    );

    std::fs::write(workspace.path("Cargo.toml"), "[workspace]\n").unwrap();
    let cargo = workspace.test(&[]).text();
    assert!(
        cargo.contains("with `cargo insta review`, or accept with `sqlgate test --accept`"),
        "{cargo}"
    );
}

#[test]
fn queries_another_suite_of_the_run_executed_count_as_shared_not_cached() {
    let workspace = Workspace::new(&["demo", "again"]);
    let run = workspace.test(&["--accept"]);
    run.assert_code(0);
    let text = run.text();
    let line = text
        .lines()
        .find(|l| l.starts_with("reused "))
        .unwrap_or_else(|| panic!("{text}"));
    // The second suite runs exactly the first's queries: all of them shared, none executed
    // twice, none from an earlier run.
    let number_before = |word: &str| -> usize {
        let head = line.split(word).next().unwrap();
        head.rsplit([' ', ':'])
            .find(|w| !w.is_empty())
            .unwrap()
            .parse()
            .unwrap()
    };
    let distinct = number_before(" distinct queries");
    let executed = number_before(" executed");
    let shared = number_before(" shared within this run");
    assert_eq!(executed + shared, distinct, "{line}");
    assert_eq!(executed, shared, "{line}");
    assert!(
        line.ends_with("0 results from an earlier run's cache"),
        "{line}"
    );
}
