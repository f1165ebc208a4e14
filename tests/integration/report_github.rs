//! GitHub Actions outputs: workflow-command annotations (read back the way the runner parses
//! them) and the markdown job summary (content, SQL diffs, the 1 MiB limit).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlgate::config::{Metric, Threshold};
use sqlgate::gate::{SuiteSummary, TestKind, TestResult, TestStatus};
use sqlgate::report::github::{self, STEP_SUMMARY_LIMIT};
use sqlgate_eval::loaders::SourceRef;
use sqlgate_eval::metrics::ex::Verdict;
use sqlgate_eval::scoring::FamilySummary;

fn result(name: &str, status: TestStatus) -> TestResult {
    let suite = name.split("::").next().unwrap_or_default();
    let mut result = TestResult::new(name, suite, TestKind::Case(0), status);
    result.duration = Duration::from_millis(2);
    result
}

fn failing_case(name: &str, line: usize, gold: &str, predicted: Option<&str>) -> TestResult {
    let mut failing = result(name, TestStatus::Failed);
    failing.message =
        Some("regression: correct in the accepted snapshot: incorrect (ex = 0)".to_string());
    failing.detail = Some(format!(
        "question:  q {name}?\ngold:      {gold}\npredicted: {predicted:?}"
    ));
    failing.properties = BTreeMap::from([("verdict".to_string(), "incorrect".to_string())]);
    failing.verdict = Some(Verdict::Incorrect);
    failing.source = Some(SourceRef {
        file: PathBuf::from("/repo/benchmarks/demo/cases.jsonl"),
        record: line - 1,
        line: Some(line),
    });
    failing.gold_sql = vec![gold.to_string()];
    failing.predicted_sql = predicted.map(str::to_string);
    failing
}

fn failing_gate(suite: &str, threshold: &str) -> TestResult {
    let name = format!("{suite}::gate::ex");
    let mut gate = gate(
        &name,
        TestKind::Gate(Metric::Ex),
        threshold,
        TestStatus::Failed,
    );
    gate.message = Some(format!("ex = 0.5 does not meet {threshold}"));
    gate.properties = BTreeMap::from([("threshold".to_string(), threshold.to_string())]);
    gate
}

/// A gate test with its threshold.
fn gate(name: &str, kind: TestKind, threshold: &str, status: TestStatus) -> TestResult {
    let mut gate = result(name, status);
    gate.kind = kind;
    gate.threshold = Some(Threshold::parse(threshold).unwrap());
    gate
}

fn run() -> (Vec<TestResult>, Vec<SuiteSummary>) {
    let results = vec![
        result("demo::bookshop::q01", TestStatus::Passed),
        failing_case(
            "demo::bookshop::q02",
            2,
            "SELECT title FROM books WHERE genre = 'Poetry'",
            Some("SELECT title FROM books WHERE genre = 'poetry'"),
        ),
        failing_case(
            "demo::bookshop::q03",
            3,
            "SELECT COUNT(*) FROM customers",
            None,
        ),
        result("demo::bookshop::q04", TestStatus::Skipped),
        failing_gate("demo", ">= 0.9"),
        gate(
            "spider::gate::ex",
            TestKind::Gate(Metric::Ex),
            ">= 0.8",
            TestStatus::Passed,
        ),
    ];
    let summaries = vec![
        SuiteSummary::from_results(
            "demo",
            BTreeMap::from([("ex".parse().unwrap(), 0.5)]),
            &results,
        ),
        SuiteSummary::from_results(
            "spider",
            BTreeMap::from([
                ("ex".parse().unwrap(), 0.8125),
                ("esm".parse().unwrap(), 0.25),
            ]),
            &results,
        ),
    ];
    (results, summaries)
}

/// A workflow command as the runner reads it: `::name key=value,...::message`, unescaped.
#[derive(Debug)]
pub(crate) struct Command {
    pub(crate) name: String,
    pub(crate) properties: BTreeMap<String, String>,
    pub(crate) message: String,
}

fn unescape(text: &str) -> String {
    text.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%")
}

pub(crate) fn parse_command(line: &str) -> Command {
    assert!(!line.contains(['\n', '\r']), "one line: {line:?}");
    let rest = line.strip_prefix("::").expect("starts with ::");
    let (head, message) = rest.split_once("::").expect("a second ::");
    let (name, properties) = head.split_once(' ').unwrap_or((head, ""));
    let properties = properties
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (key, value) = p.split_once('=').expect("key=value");
            (key.to_string(), unescape(value))
        })
        .collect();
    Command {
        name: name.to_string(),
        properties,
        message: unescape(message),
    }
}

#[test]
fn escaping_follows_the_actions_toolkit() {
    assert_eq!(
        github::escape_data("100% done\r\nnext: a,b"),
        "100%25 done%0D%0Anext: a,b"
    );
    assert_eq!(
        github::escape_property("demo::q1, 50%\n"),
        "demo%3A%3Aq1%2C 50%25%0A"
    );
    let tricky = "%0A is not a newline: 5%, a,b\r\n";
    assert_eq!(unescape(&github::escape_property(tricky)), tricky);
}

#[test]
fn annotations_point_at_the_worst_failures_and_read_back_intact() {
    let (results, _) = run();
    let lines = github::annotations(
        &results,
        github::DEFAULT_ANNOTATIONS,
        Some(Path::new("/repo")),
    );
    let commands: Vec<Command> = lines.iter().map(|l| parse_command(l)).collect();
    let titles: Vec<&str> = commands
        .iter()
        .map(|c| c.properties["title"].as_str())
        .collect();
    // The missed threshold first, then the cases in run order; passing and skipped tests never.
    assert_eq!(
        titles,
        [
            "demo::gate::ex",
            "demo::bookshop::q02",
            "demo::bookshop::q03"
        ]
    );
    assert!(commands.iter().all(|c| c.name == "error"));

    let case = &commands[1];
    assert_eq!(case.properties["file"], "benchmarks/demo/cases.jsonl");
    assert_eq!(case.properties["line"], "2");
    let expected = &results[1];
    let message = format!(
        "{}\n{}",
        expected.message.as_deref().expect("message"),
        expected.detail.as_deref().expect("detail")
    );
    assert_eq!(case.message, message);
    assert!(
        !commands[0].properties.contains_key("file"),
        "a gate has no source record"
    );

    // Outside the workspace a path is kept as it is.
    let elsewhere = github::annotations(&results, 5, Some(Path::new("/other")));
    assert_eq!(
        parse_command(&elsewhere[1]).properties["file"],
        "/repo/benchmarks/demo/cases.jsonl"
    );
}

#[test]
fn annotations_stop_at_the_limit_and_count_the_rest() {
    let results: Vec<TestResult> = (1..=12)
        .map(|i| failing_case(&format!("s::d::q{i:02}"), i, "SELECT 1", Some("SELECT 2")))
        .collect();
    let lines = github::annotations(&results, 5, None);
    assert_eq!(lines.len(), 6);
    let notice = parse_command(&lines[5]);
    assert_eq!(notice.name, "notice");
    assert!(
        notice.message.starts_with("7 more failing tests"),
        "{}",
        notice.message
    );
    assert_eq!(github::annotations(&results, 12, None).len(), 12);
    assert!(
        github::annotations(&run().0[..1], 5, None).is_empty(),
        "nothing failed"
    );
}

/// The whole summary, byte for byte: counts, the metrics and gates tables, and each failure
/// with its SQL diff, where only the clause that differs is marked.
#[test]
fn summary_has_counts_metrics_gates_and_each_failure_with_its_sql_diff() {
    let (results, summaries) = run();
    let markdown = github::step_summary(&results, &summaries);
    assert_tables_are_rectangular(&markdown);
    insta::assert_snapshot!(markdown);

    let all_passed = github::step_summary(&results[..1], &[]);
    assert!(all_passed.starts_with("## ✅ sqlgate: 1 passed, 0 failed, 0 skipped"));
    assert!(!all_passed.contains("Failing tests"));
}

#[test]
fn summary_shows_family_gates_and_each_family_against_its_seeds() {
    let gate = gate(
        "tqa::gate::tqa-ll::drop",
        TestKind::FamilyGate(0),
        "<= 10",
        TestStatus::Failed,
    );
    let mut ll = FamilySummary::default();
    ll.n = 34;
    ll.seeds = 34;
    ll.setting = Some("L/L".to_string());
    ll.a_orig = Some(0.75);
    ll.ex = 0.5;
    ll.drop = Some(25.0);
    ll.pass_at_k = BTreeMap::from([(1, 0.5)]);
    let metrics = BTreeMap::from([
        ("ex".parse().unwrap(), 0.6),
        ("tqa-ll::drop".parse().unwrap(), 25.0),
        ("tqa-ll::ex".parse().unwrap(), 0.5),
    ]);
    let summaries = vec![
        SuiteSummary::from_results("tqa", metrics, std::slice::from_ref(&gate))
            .with_families(BTreeMap::from([("tqa-ll".to_string(), ll)])),
    ];
    let markdown = github::step_summary(&[gate], &summaries);
    assert_tables_are_rectangular(&markdown);
    // Family metrics stay out of the suites table: they have their own.
    insta::assert_snapshot!(markdown);
}

/// Every row of a table has as many cells as its header (else GitHub drops the table).
fn assert_tables_are_rectangular(markdown: &str) {
    let cells = |line: &str| line.replace("\\|", "").matches('|').count();
    for table in markdown.split("\n\n") {
        let rows: Vec<&str> = table.lines().filter(|l| l.starts_with('|')).collect();
        if let Some(header) = rows.first() {
            assert!(
                rows.iter().all(|row| cells(row) == cells(header)),
                "{table}"
            );
        }
    }
}

#[test]
fn summary_stays_under_githubs_limit_and_says_what_it_left_out() {
    let long_sql = format!(
        "SELECT {} FROM wide_table",
        vec!["some_rather_long_column_name"; 25].join(", ")
    );
    let failures = 3000;
    let results: Vec<TestResult> = (0..failures)
        .map(|i| {
            failing_case(
                &format!("big::db::q{i:04}"),
                i + 1,
                &long_sql,
                Some("SELECT 1"),
            )
        })
        .collect();
    let markdown = github::step_summary(&results, &[]);
    assert!(
        markdown.len() <= STEP_SUMMARY_LIMIT,
        "{} bytes",
        markdown.len()
    );
    assert!(
        markdown.len() > STEP_SUMMARY_LIMIT * 9 / 10,
        "the room is used"
    );
    let shown = markdown.matches("\n#### ❌ ").count();
    let note = markdown.lines().last().expect("a closing note");
    assert!(
        note.contains(&format!(
            "{} more failing tests are not shown",
            failures - shown
        )),
        "{note}"
    );
    assert_eq!(
        markdown.matches("```diff\n").count(),
        shown,
        "one SQL diff per failure shown"
    );
    let fences = markdown.lines().filter(|l| l.starts_with("```")).count();
    assert_eq!(fences % 2, 0, "no code block is cut open");
}

#[test]
fn summary_of_absurdly_many_suites_is_cut_with_a_note() {
    let summaries: Vec<SuiteSummary> = (0..40_000)
        .map(|i| {
            let metrics = BTreeMap::from([("ex".parse().unwrap(), 0.5)]);
            SuiteSummary::from_results(&format!("suite-{i:05}"), metrics, &[])
        })
        .collect();
    let markdown = github::step_summary(&[], &summaries);
    assert!(
        markdown.len() <= STEP_SUMMARY_LIMIT,
        "{} bytes",
        markdown.len()
    );
    assert!(markdown
        .trim_end()
        .ends_with("> **Truncated:** GitHub limits a step summary to 1 MiB."));
}

#[test]
fn sql_diff_picks_the_closest_gold_alternative() {
    let gold = [
        "SELECT name FROM pets WHERE age > 3".to_string(),
        "SELECT name FROM pets WHERE age >= 4 ORDER BY name".to_string(),
    ];
    let diff = github::sql_diff(&gold, Some("SELECT name FROM pets WHERE age >= 4"));
    assert_eq!(
        diff,
        "# closest of 2 gold alternatives\n  SELECT name\n  FROM pets\n  WHERE age >= 4\n- ORDER BY name\n"
    );
}

#[test]
fn summary_is_appended_to_the_step_summary_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("step_summary.md");
    github::append_step_summary(&path, "first\n").expect("appends");
    github::append_step_summary(&path, "second\n").expect("appends");
    assert_eq!(
        std::fs::read_to_string(&path).expect("readable"),
        "first\nsecond\n"
    );
    let error = github::append_step_summary(dir.path(), "x").expect_err("a folder is not a file");
    assert_eq!(error.path, dir.path());
}
