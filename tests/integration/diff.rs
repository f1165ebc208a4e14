//! `sqlgate diff`: two run records (or snapshots) of the demo compared, a large pair rendered
//! for a pull-request comment, bad inputs refused.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{json, Value};

use crate::support::{demo_workspace, replace_prediction, repo, sqlgate, Run};

/// The demo gate in a temporary folder (its own predictions and snapshots), with two run
/// records: `base.json` of the sample system as it is, `head.json` after q01's answer changed
/// to a wrong one.
struct TwoRuns {
    dir: tempfile::TempDir,
}

impl TwoRuns {
    fn new() -> TwoRuns {
        let dir = demo_workspace();
        let config = format!(
            "[[suite]]\nbenchmark = \"{}\"\nstructural = [\"etm\"]\ngate = {{ ex = \">= 0.6\" }}\n\n\
             [[system]]\nname = \"sample\"\ntype = \"replay\"\npredictions = \"sample.jsonl\"\n",
            repo().join("benchmarks/demo/suite.toml").display()
        );
        std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
        let runs = TwoRuns { dir };
        runs.sqlgate(&["test", "--record-out", "base.json"])
            .assert_success();
        replace_prediction(
            &runs.path("sample.jsonl"),
            "q01",
            "SELECT title FROM books WHERE genre = 'Fiction'",
        );
        // q01 passed in the accepted snapshot: now a regression, and the gate fails.
        runs.sqlgate(&["test", "--record-out", "head.json"])
            .assert_code(100);
        runs
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn sqlgate(&self, args: &[&str]) -> Run {
        sqlgate().args(args).current_dir(self.dir.path()).run()
    }

    fn diff(&self, args: &[&str]) -> Run {
        let run = self.sqlgate(&[&["diff"], args].concat());
        run.assert_success();
        run
    }
}

/// The lines of the markdown section `#### <title> (...)`, up to the next section.
fn section<'a>(markdown: &'a str, title: &str) -> Vec<&'a str> {
    let heading = format!("#### {title}");
    markdown
        .lines()
        .skip_while(|line| !line.starts_with(&heading))
        .skip(1)
        .take_while(|line| !line.starts_with("#### "))
        .collect()
}

#[test]
fn a_changed_answer_for_q01_is_named_as_a_regression() {
    // The scenario: record the demo, change q01's answer, record again, diff.
    let runs = TwoRuns::new();
    let markdown = runs
        .diff(&["base.json", "head.json", "--format", "markdown"])
        .stdout
        .clone();
    let headline = markdown.lines().next().unwrap();
    assert!(
        headline.starts_with("### sqlgate diff: 1 regression, 0 fixes"),
        "{markdown}"
    );
    let regressions = section(&markdown, "Regressions (1)");
    let rows: Vec<&&str> = regressions
        .iter()
        .filter(|line| line.starts_with("| `"))
        .collect();
    assert_eq!(rows.len(), 1, "{markdown}");
    assert!(
        rows[0].starts_with("| `demo::bookshop::q01` | correct: `SELECT b.title")
            && rows[0].contains("| incorrect: `SELECT title FROM books WHERE genre = 'Fiction'` |"),
        "{}",
        rows[0]
    );
    // The record's detail: the question and the gold SQL, collapsed.
    let details = regressions.join("\n");
    assert!(details.contains("<summary><code>demo::bookshop::q01</code>: why it fails in head"));
    assert!(details.contains("question:  List the titles of all our poetry books."));
    assert!(details.contains("gold:      SELECT title FROM books WHERE genre = 'Poetry'"));
    // One case of 34 feasible ones lost: EX falls by 1/34, within noise.
    let metrics = section(&markdown, "Metrics").join("\n");
    assert!(
        metrics
            .contains("| `demo` | ex | 0.7647 | 0.7353 | -0.0294 | [-0.0882, 0] | within noise |"),
        "{metrics}"
    );
    // The replayed predictions changed: the system's fingerprint says so.
    assert!(section(&markdown, "Notes")
        .iter()
        .any(|line| line.contains("the system `sample` differs in its fingerprint")));
    // The terminal form says the same.
    let text = runs.diff(&["base.json", "head.json"]).stdout.clone();
    assert!(text.starts_with("sqlgate diff: 1 regression, 0 fixes; metrics within noise\n"));
    assert!(text.contains("\nregressions (1):\n  demo::bookshop::q01  correct -> incorrect\n"));
}

#[test]
fn snapshots_compare_like_the_records_they_were_written_with() {
    let runs = TwoRuns::new();
    // The head run wrote its outcomes as a pending snapshot beside the accepted one.
    let snapshots = runs.diff(&[
        "snapshots/demo.snap",
        "snapshots/demo.snap.new",
        "--format",
        "json",
    ]);
    let records = runs.diff(&["base.json", "head.json", "--format", "json"]);
    let (snapshots, records) = (snapshots.json(), records.json());
    assert_eq!(snapshots["summary"], records["summary"]);
    assert_eq!(
        snapshots["suites"], records["suites"],
        "the same means and intervals"
    );
    assert_eq!(snapshots["regressions"][0]["test"], "demo::bookshop::q01");
    assert_eq!(snapshots["base"]["kind"], "snapshot");
    // A snapshot has no detail; a record does.
    assert_eq!(snapshots["regressions"][0]["head"]["detail"], Value::Null);
    assert!(records["regressions"][0]["head"]["detail"].is_string());
    // Either kind against the other.
    let mixed = runs.diff(&["snapshots/demo.snap", "head.json", "--format", "json"]);
    assert_eq!(mixed.json()["suites"], records["suites"]);
    assert!(mixed.json()["notes"][0]
        .as_str()
        .unwrap()
        .starts_with("base is a snapshot"));
}

#[test]
fn a_shard_is_compared_on_its_cases_and_says_so() {
    let runs = TwoRuns::new();
    runs.sqlgate(&[
        "test",
        "--partition",
        "count:1/2",
        "--record-out",
        "shard.json",
    ]);
    let diff = runs
        .diff(&["base.json", "shard.json", "--format", "json"])
        .json();
    let in_shard = diff["head"]["cases"].as_u64().unwrap();
    assert_eq!(in_shard, 20, "count:1/2 of 39 cases");
    assert_eq!(diff["summary"]["compared"], in_shard);
    assert_eq!(diff["summary"]["removed"], 39 - in_shard);
    let notes: Vec<&str> = diff["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("head is shard count:1/2")),
        "{notes:?}"
    );
}

#[test]
fn the_json_fields_are_the_documented_ones() {
    let runs = TwoRuns::new();
    let diff = runs
        .diff(&["base.json", "head.json", "--format", "json", "--seed", "7"])
        .json();
    let keys = |value: &Value| -> BTreeSet<String> {
        value.as_object().unwrap().keys().cloned().collect()
    };
    let set =
        |names: &[&str]| -> BTreeSet<String> { names.iter().map(|n| n.to_string()).collect() };
    assert_eq!(
        keys(&diff),
        set(&[
            "headline",
            "base",
            "head",
            "bootstrap",
            "summary",
            "suites",
            "regressions",
            "fixes",
            "changed",
            "new",
            "removed",
            "notes"
        ])
    );
    assert_eq!(
        keys(&diff["base"]),
        set(&["path", "kind", "cases", "partition"])
    );
    assert_eq!(diff["bootstrap"], json!({"resamples": 2000, "seed": 7}));
    assert_eq!(
        diff["summary"],
        json!({"compared": 39, "regressions": 1, "fixes": 0, "changed": 0, "new": 0, "removed": 0})
    );
    let suite = &diff["suites"][0];
    assert_eq!(
        keys(suite),
        set(&["name", "base_cases", "head_cases", "paired", "metrics"])
    );
    assert_eq!(suite["paired"], 34, "the feasible cases");
    let metrics: Vec<&Value> = suite["metrics"].as_array().unwrap().iter().collect();
    assert_eq!(
        metrics
            .iter()
            .map(|m| m["metric"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["ex", "etm"]
    );
    assert_eq!(
        keys(metrics[0]),
        set(&[
            "metric",
            "base",
            "head",
            "delta",
            "interval",
            "beyond_noise"
        ])
    );
    assert_eq!(keys(&metrics[0]["interval"]), set(&["low", "high"]));
    let regression = &diff["regressions"][0];
    assert_eq!(keys(regression), set(&["test", "suite", "base", "head"]));
    assert_eq!(
        keys(&regression["head"]),
        set(&["correct", "verdict", "answer", "detail"])
    );
}

/// A run record of suite `big`: per case its index, whether it was correct and its answer's
/// variant (every answer is a 400-character query, wrong ones with a long detail).
fn large_record(cases: impl Iterator<Item = (usize, bool, &'static str)>) -> Value {
    let case = |(index, correct, variant): (usize, bool, &str)| {
        let sql = format!(
            "SELECT name, price FROM items WHERE id = {index}{} {variant}",
            " AND price > 0".repeat(25)
        );
        let mut case = json!({
            "test": format!("big::shop::q{index:05}"),
            "case": index,
            "verdict": if correct { "correct" } else { "incorrect" },
            "ex": if correct { 1.0 } else { 0.0 },
            "sql": sql,
            "seconds": 0.01,
        });
        if !correct {
            case["detail"] = json!(format!(
                "question:  Which items cost what? (case {index})\ngold:      {}\npredicted: {sql}",
                "SELECT name, price FROM items ".repeat(40)
            ));
        }
        case
    };
    json!({
        "inputs": {
            "sqlgate": "0.1.0", "config": "c", "profile": "default", "system": "s",
            "fingerprints": ["f"], "plan": "p", "databases": {}
        },
        "suites": [{"name": "big", "cases": cases.map(case).collect::<Vec<_>>()}]
    })
}

#[test]
fn a_large_diff_fits_a_pull_request_comment() {
    // 6,000 cases a side, a thousand or more of each kind of change, every answer long.
    let removed = 0..500;
    let regressed = 500..1_500;
    let fixed = 1_500..2_500;
    let changed = 2_500..3_500;
    let base = (removed.start..6_000).map(|i| (i, !fixed.contains(&i), ""));
    let head = (removed.end..6_500).map(|i| {
        let variant = if changed.contains(&i) {
            "ORDER BY 1"
        } else {
            ""
        };
        (i, !regressed.contains(&i), variant)
    });
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, record: &Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::to_vec(record).unwrap()).unwrap();
        path
    };
    let base = write("base.json", &large_record(base));
    let head = write("head.json", &large_record(head));
    let diff = |format: &str| {
        let run = sqlgate()
            .arg("diff")
            .args([&base, &head])
            .args(["--format", format])
            .run();
        run.assert_success();
        run
    };
    let markdown = diff("markdown").stdout.clone();
    let length = markdown.chars().count();
    assert!(length <= 60_000, "{length} characters");
    assert!(
        markdown.starts_with(
            "### sqlgate diff: 1000 regressions, 1000 fixes, 500 new cases, 500 removed \
             cases, 1000 changed answers"
        ),
        "{}",
        markdown.lines().next().unwrap()
    );
    // Every list is there, each cut with a line saying how many it leaves out; the last ones
    // show fewer than the 50 rows a list may show, for want of room.
    let mut shown = Vec::new();
    for (title, total) in [
        ("Regressions", 1000),
        ("Fixes", 1000),
        ("New cases", 500),
        ("Removed cases", 500),
        ("Changed answers (same pass/fail)", 1000),
    ] {
        let lines = section(&markdown, &format!("{title} ({total})"));
        let rows = lines
            .iter()
            .filter(|l| l.starts_with("| `big::shop::"))
            .count();
        let omitted = format!(
            "_{} of {total} not shown here: `sqlgate diff --format json`",
            total - rows
        );
        assert!(
            lines.iter().any(|l| l.starts_with(&omitted)),
            "{title}: {lines:?}"
        );
        shown.push(rows);
    }
    assert_eq!(shown[0], 50, "the regressions come first: {shown:?}");
    assert!(shown.iter().sum::<usize>() < 5 * 50, "{shown:?}");
    // The first regressions with their detail; the metric table whole.
    assert_eq!(markdown.matches("</summary>").count(), 10);
    let ex = "| `big` | ex | 0.8333 | 0.8333 | 0 | [";
    assert!(markdown.contains(ex), "{markdown}");
    // JSON lists them all.
    let json = diff("json").json();
    assert_eq!(json["regressions"].as_array().unwrap().len(), 1000);
    assert_eq!(json["new"].as_array().unwrap().len(), 500);
}

#[test]
fn an_input_that_is_not_a_run_or_snapshot_exits_2_naming_it() {
    let runs = TwoRuns::new();
    let write = |name: &str, text: &str| std::fs::write(runs.path(name), text).unwrap();
    let mut record: Value =
        serde_json::from_str(&std::fs::read_to_string(runs.path("base.json")).unwrap()).unwrap();
    record["suites"][0]["cases"][1]["ex"] = json!(1.0);
    record["suites"][0]["cases"][1]["verdict"] = json!("incorrect");
    write("edited.json", &record.to_string());
    write("notes.txt", "regressions: none\n");
    write(
        "broken.snap",
        "---\nsource: sqlgate test\n---\ndemo::bookshop::q01 | maybe | correct | ex=1 | SELECT 1\n",
    );
    write("wrong-metric.snap", "---\nsource: sqlgate test\n---\ndemo::bookshop::q01 | pass | correct | ex=yes | SELECT 1\n");
    let cases: [(&str, &str); 6] = [
        ("missing.json", "missing.json: cannot read"),
        (
            "sample.jsonl",
            "sample.jsonl: line 1: column 5: not a sqlgate run record: unknown field `id`",
        ),
        (
            "edited.json",
            "edited.json: case `demo::bookshop::q02`: verdict `incorrect` contradicts ex = 1",
        ),
        ("notes.txt", "notes.txt: neither a run record"),
        (
            "broken.snap",
            "broken.snap: line 4: status must be `pass` or `fail`",
        ),
        (
            "wrong-metric.snap",
            "wrong-metric.snap: line 4: ex=yes: must be 0 or 1",
        ),
    ];
    for (bad, message) in cases {
        for args in [["diff", bad, "head.json"], ["diff", "base.json", bad]] {
            let run = runs.sqlgate(&args);
            run.assert_code(2);
            assert!(run.stderr.contains(message), "{args:?}: {}", run.stderr);
            assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
        }
    }
}
