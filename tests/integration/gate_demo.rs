//! The gate end to end on the embedded demo: `sqlgate test` with a replayed system, JUnit,
//! snapshots, profiles, and the same verdicts from the libtest-mimic front end.

use std::path::{Path, PathBuf};

use sqlgate::gate::session::Session;
use sqlgate::gate::TestStatus;
use sqlgate::runner::{Selection, TestRunnerBuilder};

use crate::support::{demo_workspace, replace_prediction, repo, sqlgate, Run};

/// A gate over the demo in a temporary folder: its own predictions copy, its own snapshots.
struct Gate {
    dir: tempfile::TempDir,
}

impl Gate {
    fn new() -> Gate {
        Gate::with_suite_settings("structural = [\"etm\"]\ngate = { ex = \">= 0.6\" }")
    }

    /// The demo gate with these `[[suite]]` settings.
    fn with_suite_settings(settings: &str) -> Gate {
        let dir = demo_workspace();
        let config = format!(
            r#"
[[suite]]
benchmark = "{}"
{settings}

[[system]]
name = "sample"
type = "replay"
predictions = "sample.jsonl"

[profile.hospital]
gate = {{ ex = ">= 0.95" }}
penalty = 1000
"#,
            repo().join("benchmarks/demo/suite.toml").display()
        );
        std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
        Gate { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn sqlgate(&self, args: &[&str]) -> Run {
        sqlgate()
            .arg("test")
            .args(args)
            .current_dir(self.dir.path())
            .run()
    }

    fn replace_prediction(&self, id: &str, sql: &str) {
        replace_prediction(&self.path("sample.jsonl"), id, sql);
    }
}

fn junit_failures(path: &Path) -> (usize, Vec<String>) {
    let xml = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let failed = cases
        .iter()
        .filter(|c| {
            c.children()
                .any(|n| n.has_tag_name("failure") || n.has_tag_name("error"))
        })
        .map(|c| {
            format!(
                "{}::{}",
                c.attribute("classname").unwrap(),
                c.attribute("name").unwrap()
            )
        })
        .collect();
    (cases.len(), failed)
}

/// The full test name (`classname::name`) of every `<testcase>`, in document order.
fn junit_names(path: &Path) -> Vec<String> {
    let xml = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|c| {
            format!(
                "{}::{}",
                c.attribute("classname").unwrap(),
                c.attribute("name").unwrap()
            )
        })
        .collect()
}

#[test]
fn the_demo_passes_against_its_accepted_snapshot() {
    let gate = Gate::new();
    let output = gate.sqlgate(&["--junit", "junit.xml"]);
    output.assert_code(0);
    let (cases, failed) = junit_failures(&gate.path("junit.xml"));
    let listed = gate.sqlgate(&["--list", "--format", "terse"]).stdout;
    assert_eq!(
        cases,
        listed.lines().count(),
        "one testcase per listed test"
    );
    assert!(listed.lines().all(|l| l.ends_with(": test")));
    assert!(
        listed.contains("demo::bookshop::q01: test") && listed.contains("demo::gate::ex: test")
    );
    // Whatever order the cases finish in, the report lists them in plan order, so two runs
    // differ only in their times.
    let listed_names: Vec<&str> = listed
        .lines()
        .map(|l| l.trim_end_matches(": test"))
        .collect();
    assert_eq!(junit_names(&gate.path("junit.xml")), listed_names);
    assert!(failed.is_empty(), "{failed:?}");
    assert!(
        !gate.path("snapshots/demo.snap.new").exists(),
        "nothing changed, nothing pending"
    );
}

#[test]
fn one_wrong_prediction_is_exactly_one_failing_test_and_one_snapshot_line() {
    let gate = Gate::new();
    let wrong = "SELECT first_name FROM customers";
    gate.replace_prediction("q02", wrong);
    // Default flags: every test runs, so the pending snapshot shows the whole change.
    let output = gate.sqlgate(&["--junit", "junit.xml"]);
    let text = &output.stdout;
    assert_eq!(output.status.code(), Some(100), "{text}");
    let (_, failed) = junit_failures(&gate.path("junit.xml"));
    assert_eq!(failed, ["demo::bookshop::q02"]);
    // The failure shows both SQLs.
    assert!(text.contains("regression"), "{text}");
    assert!(text.contains(&format!("predicted: {wrong}")), "{text}");
    assert!(
        text.contains("gold:      SELECT first_name, last_name FROM customers WHERE email IS NULL"),
        "{text}"
    );
    // ETM says where the trees part: the prediction drops a column.
    assert!(
        text.contains("etm:       ETM: trees differ at expressions: gold `customers.first_name, customers.last_name`"),
        "{text}"
    );
    // The pending snapshot differs from the accepted one in exactly that case's line.
    let accepted = std::fs::read_to_string(gate.path("snapshots/demo.snap")).unwrap();
    let pending = std::fs::read_to_string(gate.path("snapshots/demo.snap.new")).unwrap();
    let changed: Vec<(&str, &str)> = accepted
        .lines()
        .zip(pending.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(accepted.lines().count(), pending.lines().count());
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert!(changed[0].1.starts_with(
        "demo::bookshop::q02 | fail | incorrect | ex=0 | etm=0 | region=III | SELECT first_name FROM customers"
    ));
    // Accepting makes the new outcome the baseline, judged as such: a known failure.
    let accepting = gate.sqlgate(&["--accept"]);
    accepting.assert_code(0);
    assert!(accepting
        .stdout
        .contains("demo::bookshop::q02 (known failure)"));
    assert!(!gate.path("snapshots/demo.snap.new").exists());
    let rerun = gate.sqlgate(&[]);
    rerun.assert_code(0);
    assert!(rerun.stdout.contains("demo::bookshop::q02 (known failure)"));
}

/// `--junit /dev/stdout`, reached through a link in the gate's folder so that no test can
/// replace a real device: the report goes down the pipe and the link stays; a device that
/// refuses the write (`/dev/full`) is an output error naming the path.
#[cfg(unix)]
#[test]
fn junit_to_standard_output_is_written_in_place() {
    let gate = Gate::new();
    std::os::unix::fs::symlink("/dev/stdout", gate.path("stdout.xml")).unwrap();
    let output = gate.sqlgate(&["--junit", "stdout.xml"]);
    output.assert_code(0);
    assert!(output.stdout.contains("<testsuites"), "{}", output.stdout);
    assert!(gate.path("stdout.xml").is_symlink());

    std::os::unix::fs::symlink("/dev/full", gate.path("full.xml")).unwrap();
    let output = gate.sqlgate(&["--junit", "full.xml"]);
    let stderr = &output.stderr;
    assert_eq!(output.status.code(), Some(73), "{stderr}");
    assert!(stderr.contains("cannot write full.xml"), "{stderr}");
    assert!(gate.path("full.xml").is_symlink());
}

#[test]
fn fail_fast_is_an_explicit_choice_that_says_what_it_left_out() {
    let gate = Gate::new();
    for id in ["q02", "q03", "q04"] {
        gate.replace_prediction(id, "SELECT 1");
    }
    let output = gate.sqlgate(&["--fail-fast", "--junit", "junit.xml"]);
    let text = &output.stdout;
    assert_eq!(output.status.code(), Some(100), "{text}");
    assert!(text.contains("stopped after"), "{text}");
    assert!(
        text.contains("gates not evaluated, snapshots not compared"),
        "{text}"
    );
    assert!(!gate.path("snapshots/demo.snap.new").exists());
    let xml = std::fs::read_to_string(gate.path("junit.xml")).unwrap();
    assert!(
        xml.contains("the run stopped at its --max-fail limit"),
        "{xml}"
    );
    // The gate did not run: it is skipped with its threshold, not failed.
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let gate_case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some("gate::ex"))
        .expect("the gate is reported");
    assert!(gate_case.children().any(|n| n.has_tag_name("skipped")));

    // `--max-fail N` stops at the N-th failure: three failures run to the end under 4.
    let output = gate.sqlgate(&["--max-fail", "4"]);
    assert!(
        !output.stdout.contains("stopped after"),
        "{}",
        output.stdout
    );
    assert!(gate.path("snapshots/demo.snap.new").exists());
    // Conflicting choices are bad input.
    let conflicting = gate.sqlgate(&["--fail-fast", "--no-fail-fast"]);
    assert_eq!(conflicting.status.code(), Some(2));
}

#[test]
fn ignored_and_filtered_tests_are_skipped_like_nextest() {
    let gate = Gate::with_suite_settings(
        "structural = [\"etm\"]\ngate = { ex = \">= 0.6\" }\n\n[cases.\"demo::bookshop::q03\"]\nignore = true",
    );
    let listed = gate.sqlgate(&["--list", "q0"]).stdout;
    assert!(listed.contains("demo::bookshop::q03 (ignored)"), "{listed}");

    // Nine cases named, one of them ignored: eight run, the rest of the 40 tests are skipped.
    let output = gate.sqlgate(&["q0", "--junit", "junit.xml"]);
    let text = &output.stdout;
    assert!(text.contains("8 tests run: 8 passed"), "{text}");
    assert!(text.contains("32 skipped"), "{text}");
    let xml = std::fs::read_to_string(gate.path("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let ignored = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some("bookshop::q03"))
        .expect("the ignored test is in the report");
    assert!(ignored.children().any(|n| n.has_tag_name("skipped")));
    assert_eq!(
        junit_names(&gate.path("junit.xml")).len(),
        9,
        "filtered-out tests are not"
    );

    // A filter that selects nothing is not a green run.
    let none = gate.sqlgate(&["no-such-test"]);
    assert_eq!(none.status.code(), Some(4));
    let message = &none.stderr;
    assert!(message.contains("no tests to run"), "{message}");
    let only_ignored = gate.sqlgate(&["--exact", "demo::bookshop::q03"]);
    assert_eq!(only_ignored.status.code(), Some(4));
    assert!(only_ignored.stderr.contains("--include-ignored"));
}

#[test]
fn every_generated_family_runs_as_cases_of_its_suite() {
    let gate = Gate::with_suite_settings(
        "families = { errors = \"errors\", infeasible = \"infeasible/suite.toml\" }",
    );
    for kind in ["errors", "infeasible"] {
        let generated = sqlgate()
            .args(["generate", kind, "--gold"])
            .arg(repo().join("benchmarks/demo/suite.toml"))
            .args(["--out", kind])
            .current_dir(gate.dir.path())
            .run();
        generated.assert_success();
    }
    let listed = gate.sqlgate(&["--list"]).stdout;
    assert!(listed.contains("demo::bookshop::q01::errors::"), "{listed}");
    assert!(listed.contains("demo::bookshop::inf:bookshop:"), "{listed}");

    // The replayed predictions answer no generated case: each fails, the run goes on.
    let output = gate.sqlgate(&["::errors::", "inf:"]);
    let text = &output.stdout;
    assert_eq!(output.status.code(), Some(100), "{text}");
    assert!(text.contains("0 passed"), "{text}");
    assert!(text.contains("system_error"), "{text}");

    // A generated suite's cases file named directly says what to name instead.
    let wrong = Gate::with_suite_settings("families = { errors = \"errors/cases.jsonl\" }");
    std::fs::create_dir_all(wrong.path("errors")).unwrap();
    for file in ["suite.toml", "cases.jsonl"] {
        std::fs::copy(
            gate.path("errors").join(file),
            wrong.path("errors").join(file),
        )
        .unwrap();
    }
    let refused = wrong.sqlgate(&["--list"]);
    assert_eq!(refused.status.code(), Some(2));
    let message = &refused.stderr;
    assert!(message.contains("name its folder or"), "{message}");
}

#[test]
fn partitions_split_the_cases_between_shards_and_leave_gates_out() {
    let gate = Gate::new();
    let listed = gate.sqlgate(&["--list", "--format", "terse"]).stdout;
    let cases: Vec<String> = listed
        .lines()
        .map(|l| l.trim_end_matches(": test").to_string())
        .filter(|name| !name.contains("::gate::"))
        .collect();
    for kind in ["count", "hash"] {
        let mut covered = Vec::new();
        for shard in 1..=3 {
            let junit = format!("{kind}-{shard}.xml");
            let partition = format!("{kind}:{shard}/3");
            let output = gate.sqlgate(&["--partition", &partition, "--junit", &junit]);
            output.assert_code(0);
            assert!(output.stdout.contains("no gate"), "{}", output.stdout);
            covered.extend(junit_names(&gate.path(&junit)));
        }
        covered.sort();
        let mut expected = cases.clone();
        expected.sort();
        assert_eq!(
            covered, expected,
            "{kind}: every case in exactly one shard, no gate"
        );
    }
    assert!(!gate.path("snapshots/demo.snap.new").exists());
    assert_eq!(
        gate.sqlgate(&["--partition", "count:4/3"]).status.code(),
        Some(2)
    );
}

#[test]
fn libtest_json_events_describe_every_test() {
    let gate = Gate::new();
    gate.replace_prediction("q02", "SELECT 1");
    let output = gate.sqlgate(&["--message-format", "libtest-json", "q0"]);
    assert_eq!(output.status.code(), Some(100));
    let events: Vec<serde_json::Value> = output
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("every stdout line is a JSON event"))
        .collect();
    assert_eq!(events[0]["type"], "suite");
    assert_eq!(events[0]["event"], "started");
    assert_eq!(events[0]["test_count"], 9);
    let verdicts = |event: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["type"] == "test" && e["event"] == event)
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(verdicts("started").len(), 9);
    assert_eq!(verdicts("ok").len(), 8);
    assert_eq!(verdicts("failed"), ["demo::bookshop::q02"]);
    let failed = events.iter().find(|e| e["event"] == "failed").unwrap();
    assert!(failed["stdout"]
        .as_str()
        .unwrap()
        .contains("predicted: SELECT 1"));
    let last = events.last().unwrap();
    assert_eq!(last["type"], "suite");
    assert_eq!(last["event"], "failed");
    assert_eq!(
        (last["passed"].clone(), last["failed"].clone()),
        (8.into(), 1.into())
    );
    assert_eq!(last["filtered_out"], 31);
}

#[test]
fn color_is_the_users_choice() {
    let gate = Gate::new();
    // Not a terminal: `auto` is plain, `always` colors anyway, `never` never does.
    for (choice, colored) in [("auto", false), ("always", true), ("never", false)] {
        let output = gate.sqlgate(&["--color", choice, "q01"]);
        assert_eq!(output.status.code(), Some(0));
        assert_eq!(output.stdout.contains("\x1b["), colored, "--color {choice}");
    }
    assert_eq!(gate.sqlgate(&["--color", "rainbow"]).status.code(), Some(2));
}

#[test]
fn under_ci_nothing_pending_is_written() {
    let gate = Gate::new();
    gate.replace_prediction("q02", "SELECT 1");
    let output = sqlgate()
        .args(["test", "--no-fail-fast"])
        .current_dir(gate.dir.path())
        .env("CI", "true")
        .run();
    assert_eq!(output.status.code(), Some(100));
    assert!(!gate.path("snapshots/demo.snap.new").exists());
}

#[test]
fn a_strict_profile_fails_the_gate_and_only_the_gate() {
    let gate = Gate::new();
    let output = gate.sqlgate(&["--profile", "hospital", "--junit", "junit.xml"]);
    output.assert_code(100);
    let (_, failed) = junit_failures(&gate.path("junit.xml"));
    assert_eq!(failed, ["demo::gate::ex"]);
    assert!(output.stdout.contains("does not meet >= 0.95"));
    let unknown = gate.sqlgate(&["--profile", "nowhere"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(unknown.stderr.contains("no profile `nowhere`"));
}

#[test]
fn filters_select_tests_and_leave_snapshots_alone() {
    let gate = Gate::new();
    gate.replace_prediction("q05", "SELECT 0");
    let output = gate.sqlgate(&["q05"]);
    assert_eq!(output.status.code(), Some(100));
    assert!(
        output.stdout.contains("1 test run: 0 passed, 1 failed"),
        "{}",
        output.stdout
    );
    assert!(
        !gate.path("snapshots/demo.snap.new").exists(),
        "a partial run writes no snapshot"
    );
    let exact = gate.sqlgate(&["--exact", "demo::bookshop::q04"]);
    assert_eq!(exact.status.code(), Some(0));
    assert!(exact.stdout.contains("1 test run: 1 passed"));
}

/// `sqlgate test` runs everything at once; under nextest the libtest-mimic harness runs each
/// test on its own (`--exact NAME`). Both must give every test the same verdict.
#[test]
fn both_front_ends_give_the_same_verdicts() {
    let gate = Gate::new();
    gate.replace_prediction("q02", "SELECT first_name FROM customers");
    gate.replace_prediction("q04", "SELECT nonsense FROM nowhere");
    let session = Session::open(&gate.path("sqlgate.toml"), "default", None, None).unwrap();
    let tests = session.tests();
    let together = TestRunnerBuilder::new().build(&session).run(&mut |_| {});
    let verdicts: std::collections::BTreeMap<&str, TestStatus> = together
        .results
        .iter()
        .map(|r| (r.name.as_str(), r.status))
        .collect();
    assert_eq!(verdicts.len(), tests.len());
    for test in &tests {
        let exact = Selection {
            filters: vec![test.name.clone()],
            exact: true,
            ..Selection::default()
        };
        let alone = TestRunnerBuilder::new()
            .selection(exact)
            .build(&session)
            .run(&mut |_| {});
        assert_eq!(alone.results.len(), 1, "{}", test.name);
        assert_eq!(
            Some(&alone.results[0].status),
            verdicts.get(test.name.as_str()),
            "{}",
            test.name
        );
    }
    let failed: Vec<&str> = verdicts
        .iter()
        .filter(|(_, status)| **status == TestStatus::Failed)
        .map(|(name, _)| *name)
        .collect();
    assert_eq!(failed, ["demo::bookshop::q02", "demo::bookshop::q04"]);
}

#[test]
fn a_suite_regime_gates_on_fine_grained_metrics_and_records_them() {
    let strict = Gate::with_suite_settings(
        "regime = \"EC-PC-PE\"\ngate = { f1 = \">= 0.99\", exr = \">= 0.5\" }",
    );
    let output = strict.sqlgate(&["--no-fail-fast", "--junit", "junit.xml"]);
    let text = &output.stdout;
    assert_eq!(output.status.code(), Some(100), "{text}");
    let (_, failed) = junit_failures(&strict.path("junit.xml"));
    assert_eq!(failed, ["demo::gate::f1"], "{text}");
    // Every case reports its EXP, EXR and F1, in JUnit and in the snapshot.
    let xml = std::fs::read_to_string(strict.path("junit.xml")).unwrap();
    assert!(xml.contains("name=\"f1\""), "{xml}");
    let pending = std::fs::read_to_string(strict.path("snapshots/demo.snap.new")).unwrap();
    let q06 = pending
        .lines()
        .find(|l| l.starts_with("demo::bookshop::q06 "))
        .unwrap();
    assert!(
        q06.contains("ex=0") && q06.contains("exp=") && q06.contains("f1="),
        "{q06}"
    );
    let q01 = pending
        .lines()
        .find(|l| l.starts_with("demo::bookshop::q01 "))
        .unwrap();
    assert!(
        q01.contains("exp=1") && q01.contains("exr=1") && q01.contains("f1=1"),
        "{q01}"
    );
    let lenient = Gate::with_suite_settings("regime = \"EC-PC-PE\"\ngate = { f1 = \">= 0.5\" }");
    let output = lenient.sqlgate(&["--no-fail-fast"]);
    assert!(output.stdout.contains("PASS") && output.stdout.contains("demo::gate::f1"));
}

#[test]
fn structural_metrics_gate_the_suite_and_are_recorded_per_case() {
    let strict = Gate::with_suite_settings("structural = [\"etm\"]\ngate = { etm = \">= 0.99\" }");
    let output = strict.sqlgate(&["--no-fail-fast", "--junit", "junit.xml"]);
    let text = &output.stdout;
    assert_eq!(output.status.code(), Some(100), "{text}");
    let (_, failed) = junit_failures(&strict.path("junit.xml"));
    assert_eq!(failed, ["demo::gate::etm"], "{text}");
    let xml = std::fs::read_to_string(strict.path("junit.xml")).unwrap();
    assert!(xml.contains("name=\"etm\" value=\"1\""), "{xml}");
    assert!(xml.contains("name=\"etm\" value=\"0\""), "{xml}");
    let lenient = Gate::with_suite_settings("structural = [\"etm\"]\ngate = { etm = \">= 0.2\" }");
    let output = lenient.sqlgate(&["--no-fail-fast"]);
    output.assert_code(0);
    // ESM needs tables.json, which a native suite does not have: a clear error, exit 2.
    let esm = Gate::with_suite_settings("structural = [\"esm\"]");
    let output = esm.sqlgate(&[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        output.stderr.contains("structural esm needs"),
        "{}",
        &output.stderr
    );
}

/// A real embeddings server on 127.0.0.1: one vector per input, derived from its text.
fn embeddings_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
    let requests = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&requests);
    std::thread::spawn(move || {
        for mut request in server.incoming_requests() {
            counter.fetch_add(1, Ordering::SeqCst);
            let mut body = String::new();
            let _ = request.as_reader().read_to_string(&mut body);
            let body: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            let inputs = body["input"].as_array().cloned().unwrap_or_default();
            let data: Vec<serde_json::Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, text)| {
                    let text = text.as_str().unwrap_or_default();
                    let letters = |set: &str| text.chars().filter(|c| set.contains(*c)).count() as f64;
                    serde_json::json!({"index": i, "embedding": [letters("aeiou"), letters("nrst"), letters("0123456789"), 1.0]})
                })
                .collect();
            let _ = request.respond(tiny_http::Response::from_string(
                serde_json::json!({"data": data}).to_string(),
            ));
        }
    });
    (url, requests)
}

#[test]
fn semantic_column_matching_uses_a_cached_embeddings_endpoint() {
    use std::sync::atomic::Ordering;
    let (url, requests) = embeddings_server();
    let settings =
        format!("regime = \"SC-EC-PE\"\nembeddings = {{ base_url = \"{url}\", model = \"toy\" }}");
    let gate = Gate::with_suite_settings(&settings);
    let first = gate.sqlgate(&["--no-fail-fast", "--junit", "junit.xml"]);
    assert!(
        matches!(first.status.code(), Some(0 | 100)),
        "{}",
        first.stdout
    );
    let asked = requests.load(Ordering::SeqCst);
    assert!(asked > 0, "SC matching embedded column descriptors");
    let cache = std::fs::read_to_string(gate.path("snapshots/embeddings/toy.jsonl")).unwrap();
    assert!(cache.lines().count() > 0);
    let xml = std::fs::read_to_string(gate.path("junit.xml")).unwrap();
    assert!(xml.contains("name=\"f1\""));
    // A rerun embeds nothing anew: every descriptor is in the cache.
    let second = gate.sqlgate(&["--no-fail-fast"]);
    assert_eq!(second.status.code(), first.status.code());
    assert_eq!(
        requests.load(Ordering::SeqCst),
        asked,
        "the rerun asked the server again"
    );
}

#[test]
fn score_embeds_through_the_same_cached_endpoint() {
    use std::sync::atomic::Ordering;
    let (url, requests) = embeddings_server();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("embeddings.jsonl");
    let score = || {
        sqlgate()
            .args([
                "score",
                "--format",
                "json",
                "--metrics",
                "SC-EC-PE",
                "--embeddings-url",
                &url,
            ])
            .args([
                "--embeddings-model",
                "toy",
                "--embeddings-cache",
                cache.to_str().unwrap(),
                "--gold",
            ])
            .arg(repo().join("benchmarks/demo/suite.toml"))
            .arg("--pred")
            .arg(repo().join("benchmarks/demo/predictions/sample.jsonl"))
            .run()
    };
    let first = score();
    first.assert_success();
    assert!(first.stderr.is_empty(), "{}", &first.stderr);
    let report: serde_json::Value = serde_json::from_str(&first.stdout).unwrap();
    assert!(
        report["summary"]["fine"]["SC-EC-PE"]["f1"]
            .as_f64()
            .is_some(),
        "{}",
        report["summary"]
    );
    let asked = requests.load(Ordering::SeqCst);
    assert!(asked > 0);
    let second = score();
    assert_eq!(second.stdout, first.stdout);
    assert_eq!(
        requests.load(Ordering::SeqCst),
        asked,
        "the cache answered the rerun"
    );
}

#[test]
fn an_apology_select_abstains_unless_the_system_says_otherwise() {
    let gate = Gate::new();
    gate.replace_prediction("q36", "SELECT 'Sorry, we do not record that.' AS answer");
    let output = gate.sqlgate(&["--no-fail-fast"]);
    output.assert_code(0);
    let pending = std::fs::read_to_string(gate.path("snapshots/demo.snap.new")).unwrap();
    assert!(
        pending.contains("demo::bookshop::q36 | pass | abstained"),
        "{pending}"
    );
    // With apologies counted as answers, the infeasible question is answered: a known failure.
    let config = std::fs::read_to_string(gate.path("sqlgate.toml")).unwrap();
    let strict = config.replace(
        "type = \"replay\"",
        "type = \"replay\"\nabstention = { apology = false }",
    );
    std::fs::write(gate.path("sqlgate.toml"), strict).unwrap();
    std::fs::remove_file(gate.path("snapshots/demo.snap.new")).unwrap();
    let output = gate.sqlgate(&["--no-fail-fast"]);
    assert!(
        output
            .stdout
            .contains("demo::bookshop::q36 (known failure)"),
        "{}",
        output.stdout
    );
    let bad = config.replace(
        "type = \"replay\"",
        "type = \"replay\"\nabstention = { pattern = \"(\" }",
    );
    std::fs::write(gate.path("sqlgate.toml"), bad).unwrap();
    let output = gate.sqlgate(&[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stderr.contains("abstention pattern"));
}
