//! JUnit XML: structure read back with an XML parser, validity against the JUnit schema Jenkins
//! reads (with `xmllint`), and loading in a real consumer (Python's `junitparser`). The last two
//! skip, saying so, when the tool is not installed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sqlgate::config::Threshold;
use sqlgate::gate::{SuiteSummary, TestKind, TestResult, TestStatus};
use sqlgate::report::junit;
use sqlgate_eval::loaders::{self, Answer, LoadOptions, SourceRef};
use sqlgate_eval::metrics::ex::Verdict;
use sqlgate_test_support::skip::without_tool;

use crate::support::{demo, python_with, repo, run_python};

/// The demo benchmark answered by its sample predictions, judged by comparing SQL text (these
/// tests are about reporting, not scoring), plus a gate, a skipped test and a gold error.
fn demo_results() -> (Vec<TestResult>, Vec<SuiteSummary>) {
    let bench = loaders::load(
        &demo("suite.toml"),
        &LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .expect("demo loads");
    let predictions = loaders::load_predictions(&demo("predictions/sample.jsonl"), None, &bench)
        .expect("sample predictions load");
    let mut results: Vec<TestResult> = bench
        .cases
        .iter()
        .zip(&predictions)
        .map(|(case, prediction)| {
            let predicted = match &prediction.answer {
                Answer::Sql(sql) => Some(sql.clone()),
                Answer::Abstain => None,
            };
            let correct =
                predicted.as_ref() == case.gold.first() || (!case.feasible && predicted.is_none());
            let (status, verdict) = match (correct, &predicted) {
                (true, None) => (TestStatus::Passed, "abstained"),
                (true, Some(_)) => (TestStatus::Passed, "correct"),
                (false, _) => (TestStatus::Failed, "incorrect"),
            };
            let ex = if correct { "1" } else { "0" };
            let name = format!("demo::{}::{}", case.db, case.id);
            let mut result = TestResult::new(name, "demo", TestKind::Case(0), status);
            result.duration = Duration::from_millis(3);
            result.message = (!correct).then(|| format!("regression: {verdict} (ex = {ex})"));
            result.detail = (!correct).then(|| {
                format!(
                    "question:  {}\ngold:      {}\npredicted: {}",
                    case.question,
                    case.gold.join(" ; "),
                    predicted.as_deref().unwrap_or("(abstained)")
                )
            });
            result.properties = BTreeMap::from([
                ("ex".to_string(), ex.to_string()),
                ("verdict".to_string(), verdict.to_string()),
            ]);
            result.source = Some(case.source.clone());
            result.gold_sql = case.gold.clone();
            result.verdict = Some(if correct && verdict == "abstained" {
                Verdict::Abstained
            } else if correct {
                Verdict::Correct
            } else {
                Verdict::Incorrect
            });
            result.predicted_sql = predicted;
            result
        })
        .collect();
    let passed = results
        .iter()
        .filter(|r| r.status == TestStatus::Passed)
        .count();
    let ex = passed as f64 / results.len() as f64;
    results.push(gate_result("demo", "ex", ">= 0.95", ex >= 0.95, ex));
    results.push(odd_result());
    let mut skipped = plain("other::db::skipped", "other");
    skipped.status = TestStatus::Skipped;
    skipped.message = Some("ignored".to_string());
    results.push(skipped);
    let summaries = vec![
        SuiteSummary::from_results(
            "demo",
            BTreeMap::from([("ex".parse().unwrap(), ex)]),
            &results,
        ),
        SuiteSummary::from_results(
            "other",
            BTreeMap::from([("ex".parse().unwrap(), 0.0)]),
            &results,
        ),
    ];
    (results, summaries)
}

fn plain(name: &str, suite: &str) -> TestResult {
    let mut result = TestResult::new(name, suite, TestKind::Case(0), TestStatus::Passed);
    result.duration = Duration::from_micros(1500);
    result
}

fn gate_result(suite: &str, metric: &str, threshold: &str, passed: bool, value: f64) -> TestResult {
    let mut result = plain(&format!("{suite}::gate::{metric}"), suite);
    result.status = if passed {
        TestStatus::Passed
    } else {
        TestStatus::Failed
    };
    result.message = (!passed).then(|| format!("{metric} = {value:.4} does not meet {threshold}"));
    result.properties = BTreeMap::from([
        ("threshold".to_string(), threshold.to_string()),
        (metric.to_string(), format!("{value:.4}")),
    ]);
    result.kind = TestKind::Gate(metric.parse().unwrap());
    result.threshold = Some(Threshold::parse(threshold).unwrap());
    result
}

/// Characters XML must escape or cannot hold, a multi-line message, and a JUnit `error`.
fn odd_result() -> TestResult {
    let mut result = plain("other::db::odd <case>", "other");
    result.status = TestStatus::Failed;
    result.message = Some("gold_error: <no such table> & \"quotes\"\nsecond line".to_string());
    result.detail = Some(
        "question:  Who's <first>? ]]> \u{1b}[31mred\u{1b}[0m\ngold:      SELECT 1 -- é ✓"
            .to_string(),
    );
    result.properties = BTreeMap::from([
        ("verdict".to_string(), "gold_error".to_string()),
        ("note".to_string(), "a < b & c > \"d\"".to_string()),
    ]);
    result.verdict = Some(Verdict::GoldError);
    result.source = Some(SourceRef {
        file: PathBuf::from("suites/other/cases.jsonl"),
        record: 4,
        line: None,
    });
    result
}

fn attribute<'a>(node: roxmltree::Node<'a, '_>, name: &str) -> &'a str {
    node.attribute(name)
        .unwrap_or_else(|| panic!("<{}> has no `{name}`", node.tag_name().name()))
}

fn children<'a, 'input>(
    node: roxmltree::Node<'a, 'input>,
    tag: &str,
) -> Vec<roxmltree::Node<'a, 'input>> {
    node.children().filter(|c| c.has_tag_name(tag)).collect()
}

fn properties(node: roxmltree::Node<'_, '_>) -> BTreeMap<String, String> {
    children(node, "properties")
        .iter()
        .flat_map(|p| children(*p, "property"))
        .map(|p| {
            (
                attribute(p, "name").to_string(),
                attribute(p, "value").to_string(),
            )
        })
        .collect()
}

fn count(results: &[&TestResult], keep: impl Fn(&TestResult) -> bool) -> String {
    results.iter().filter(|r| keep(r)).count().to_string()
}

fn is_error(result: &TestResult) -> bool {
    result.status == TestStatus::Failed
        && result
            .properties
            .get("verdict")
            .is_some_and(|v| v.starts_with("gold_"))
}

fn is_failure(result: &TestResult) -> bool {
    result.status == TestStatus::Failed && !is_error(result)
}

#[test]
fn report_reads_back_with_one_suite_per_suite_and_one_case_per_test() {
    let (results, summaries) = demo_results();
    let xml = junit::render(&results, &summaries).expect("renders");
    let document = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let all: Vec<&TestResult> = results.iter().collect();
    assert_eq!(attribute(root, "tests"), all.len().to_string());
    assert_eq!(attribute(root, "failures"), count(&all, is_failure));
    assert_eq!(attribute(root, "errors"), count(&all, is_error));
    assert_eq!(
        attribute(root, "skipped"),
        count(&all, |r| r.status == TestStatus::Skipped)
    );

    let suites = children(root, "testsuite");
    let names: Vec<&str> = suites.iter().map(|s| attribute(*s, "name")).collect();
    assert_eq!(names, ["demo", "other"]);
    for (suite, summary) in suites.iter().zip(&summaries) {
        let expected: Vec<&TestResult> =
            results.iter().filter(|r| r.suite == summary.name).collect();
        let cases = children(*suite, "testcase");
        assert_eq!(cases.len(), expected.len());
        assert_eq!(attribute(*suite, "tests"), expected.len().to_string());
        assert_eq!(attribute(*suite, "failures"), count(&expected, is_failure));
        let metrics: BTreeMap<String, String> = summary
            .metrics
            .iter()
            .map(|(k, v)| (k.to_string(), sqlgate::gate::judge::format_metric(*v)))
            .collect();
        assert_eq!(properties(*suite), metrics);
        for (case, result) in cases.iter().zip(&expected) {
            check_case(*case, result);
        }
    }
}

fn check_case(case: roxmltree::Node<'_, '_>, result: &TestResult) {
    let rest = result
        .name
        .strip_prefix(&format!("{}::", result.suite))
        .expect("suite prefix");
    assert_eq!(attribute(case, "name"), rest);
    assert_eq!(attribute(case, "classname"), result.suite);
    assert_eq!(properties(case), result.properties);
    let source = result.source.as_ref();
    assert_eq!(
        case.attribute("file"),
        source.map(|s| s.file.to_str().expect("utf-8 path"))
    );
    let line = source.and_then(|s| s.line).map(|l| l.to_string());
    assert_eq!(case.attribute("line"), line.as_deref());

    let outcome: Vec<_> = case
        .children()
        .filter(|c| c.is_element() && !c.has_tag_name("properties"))
        .collect();
    match result.status {
        TestStatus::Passed => assert!(outcome.is_empty(), "{}", result.name),
        TestStatus::Skipped => assert!(outcome.len() == 1 && outcome[0].has_tag_name("skipped")),
        TestStatus::Failed => {
            let tag = if is_error(result) { "error" } else { "failure" };
            assert!(
                outcome.len() == 1 && outcome[0].has_tag_name(tag),
                "{}",
                result.name
            );
            let verdict = result.properties.get("verdict").map(String::as_str);
            let gate = result.name.contains("::gate::");
            assert_eq!(
                Some(attribute(outcome[0], "type")),
                verdict.or(gate.then_some("gate"))
            );
            let message = attribute(outcome[0], "message");
            assert!(!message.contains('\n'), "one line: {message:?}");
            let words: Vec<&str> = result
                .message
                .as_deref()
                .unwrap_or_default()
                .split_whitespace()
                .collect();
            assert_eq!(message, words.join(" "));
            // The body is the detail, less what XML cannot carry (ANSI escapes).
            let body = outcome[0].text().unwrap_or_default();
            let detail = result.detail.as_deref().unwrap_or_default();
            assert_eq!(
                body,
                detail.replace("\u{1b}[31m", "").replace("\u{1b}[0m", "")
            );
        }
    }
}

#[test]
fn failing_case_carries_metrics_in_its_message_and_points_at_its_record() {
    let (results, summaries) = demo_results();
    let failing = results
        .iter()
        .find(|r| r.suite == "demo" && r.status == TestStatus::Failed && r.source.is_some())
        .expect("the sample predictions get some demo case wrong");
    let xml = junit::render(&results, &summaries).expect("renders");
    let document = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let rest = failing.name.trim_start_matches("demo::");
    let case = document
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(rest))
        .expect("the failing case is reported");
    let failure = children(case, "failure")[0];
    assert!(attribute(failure, "message").contains("ex = 0"));
    let source = failing.source.as_ref().expect("source");
    // The record really is at that line of that file.
    let text = std::fs::read_to_string(&source.file).expect("the case file is readable");
    let line = text
        .lines()
        .nth(source.line.expect("JSONL has lines") - 1)
        .expect("line exists");
    let id = rest.rsplit("::").next().expect("case id");
    assert!(line.contains(&format!("\"{id}\"")), "{line}");
    assert_eq!(case.attribute("file"), source.file.to_str());
}

#[test]
fn write_replaces_the_file_whole_and_creates_folders() {
    let (results, summaries) = demo_results();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("nested/reports/junit.xml");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, "x".repeat(1_000_000)).expect("old content");
    junit::write(&path, &results, &summaries).expect("writes");
    let written = std::fs::read_to_string(&path).expect("readable");
    assert_eq!(
        written,
        junit::render(&results, &summaries).expect("renders")
    );
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().expect("parent"))
        .expect("listable")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(leftovers, ["junit.xml"], "no temporary file is left behind");

    let fresh = dir.path().join("a/b/c/junit.xml");
    junit::write(&fresh, &results, &summaries).expect("creates the folders");
    assert!(fresh.is_file());

    // A parent that is a file: an error naming the path, not a panic.
    let blocked = dir.path().join("nested/reports/junit.xml/inner.xml");
    let error =
        junit::write(&blocked, &results, &summaries).expect_err("cannot write under a file");
    assert_eq!(error.path, blocked);
}

fn schema() -> PathBuf {
    repo().join("tests/data/junit.xsd")
}

fn xmllint(document: &Path) -> Option<std::process::Output> {
    let output = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(schema())
        .arg(document)
        .output();
    match output {
        Ok(output) => Some(output),
        Err(_) => {
            without_tool("xmllint (apt-get install libxml2-utils)");
            None
        }
    }
}

#[test]
fn report_is_valid_against_the_jenkins_junit_schema() {
    let (results, summaries) = demo_results();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("junit.xml");
    junit::write(&path, &results, &summaries).expect("writes");
    let Some(output) = xmllint(&path) else { return };
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // The schema is strict enough to matter: an unknown attribute or element fails it.
    let xml = std::fs::read_to_string(&path).expect("readable");
    for broken in [
        xml.replacen("<testcase ", "<testcase flavour=\"x\" ", 1),
        xml.replacen("<failure ", "<failed ", 1)
            .replacen("</failure>", "</failed>", 1),
        xml.replacen(" tests=\"", " tests=\"-", 1),
    ] {
        assert_ne!(broken, xml);
        let bad = dir.path().join("bad.xml");
        std::fs::write(&bad, broken).expect("writes");
        let output = xmllint(&bad).expect("xmllint ran before");
        assert!(
            !output.status.success(),
            "the schema accepted a broken report"
        );
    }
}

/// Loads the report with junitparser and prints one JSON object per test case.
const JUNITPARSER_SCRIPT: &str = r#"
import json, sys
from junitparser import JUnitXml, Failure, Error, Skipped
for suite in JUnitXml.fromfile(sys.argv[1]):
    for case in suite:
        kinds = [type(r).__name__ for r in case.result]
        message = case.result[0].message if case.result else None
        print(json.dumps({"suite": suite.name, "tests": suite.tests, "classname": case.classname,
                          "name": case.name, "kinds": kinds, "message": message,
                          "file": case._elem.get("file")}))
"#;

#[test]
fn junitparser_reads_every_case() {
    let (results, summaries) = demo_results();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("junit.xml");
    junit::write(&path, &results, &summaries).expect("writes");
    if !python_with("junitparser", "pip install junitparser") {
        return;
    }
    let output = run_python(JUNITPARSER_SCRIPT, &[&path], b"");
    let cases: Vec<serde_json::Value> = String::from_utf8_lossy(&output)
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON line"))
        .collect();
    assert_eq!(cases.len(), results.len());
    for (case, result) in cases.iter().zip(&results) {
        let rest = result
            .name
            .strip_prefix(&format!("{}::", result.suite))
            .expect("prefix");
        assert_eq!(case["name"], rest);
        assert_eq!(case["classname"], result.suite.as_str());
        assert_eq!(case["suite"], result.suite.as_str());
        let expected_kind = match result.status {
            TestStatus::Passed => None,
            TestStatus::Skipped => Some("Skipped"),
            TestStatus::Failed if is_error(result) => Some("Error"),
            TestStatus::Failed => Some("Failure"),
        };
        assert_eq!(
            case["kinds"]
                .as_array()
                .expect("list")
                .first()
                .and_then(|k| k.as_str()),
            expected_kind
        );
        if result.status == TestStatus::Failed {
            let message = case["message"].as_str().expect("a message");
            assert!(message.starts_with(
                result
                    .message
                    .as_deref()
                    .expect("message")
                    .lines()
                    .next()
                    .expect("line")
            ));
        }
        let file = result
            .source
            .as_ref()
            .map(|s| s.file.to_string_lossy().into_owned());
        assert_eq!(case["file"].as_str(), file.as_deref());
    }
}
