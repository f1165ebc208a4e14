//! `sqlgate audit` on a crafted native suite (text, JSON, `--strict`, bad input), and the
//! `audit = true` suite key of `sqlgate test`.

use std::path::Path;

use crate::support::{demo_workspace, repo, sqlgate, Run};

/// bob and cy tie at 5; nobody reaches 10.
const SHOP: &str = "CREATE TABLE scores (name TEXT, score INTEGER);
INSERT INTO scores VALUES ('ann', 3), ('bob', 5), ('cy', 5), ('dee', 1);
";

/// A native suite over the `shop` database whose cases are `cases` (JSON lines).
fn suite(cases: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("shop.sql"), SHOP).unwrap();
    std::fs::write(dir.path().join("cases.jsonl"), cases).unwrap();
    std::fs::write(
        dir.path().join("suite.toml"),
        "name = \"shop\"\ncases = \"cases.jsonl\"\ndb_dir = \"build\"\n\n\
         [databases.shop]\nscripts = [\"shop.sql\"]\n",
    )
    .unwrap();
    dir
}

const FLAWED: &str = r#"{"id": "cut", "db": "shop", "question": "Who scored most?", "gold": "SELECT name FROM scores ORDER BY score DESC LIMIT 1"}
{"id": "none", "db": "shop", "question": "Who scored 10?", "gold": "SELECT name FROM scores WHERE score >= 10 ORDER BY name"}
{"id": "broken", "db": "shop", "question": "Who?", "gold": "SELECT nobody FROM scores"}
"#;

const CLEAN: &str = r#"{"id": "clean", "db": "shop", "question": "Who scored at least 3, best first?", "gold": "SELECT name, score FROM scores WHERE score >= 3 ORDER BY score DESC, name"}
"#;

fn audit(dir: &Path, args: &[&str]) -> Run {
    sqlgate()
        .args(["audit", "--gold", "suite.toml"])
        .args(args)
        .current_dir(dir)
        .run()
}

#[test]
fn text_groups_the_findings_by_kind_with_counts() {
    let dir = suite(FLAWED);
    let output = audit(dir.path(), &[]);
    output.assert_success();
    let text = &output.stdout;
    let header = text.lines().next().unwrap_or_default();
    assert!(
        header.ends_with("in 3 cases (1 error, 1 empty, 1 order_ties, 1 weak)"),
        "{text}"
    );
    assert!(text.contains("\norder_ties (1)\n  cut [shop] "), "{text}");
    assert!(text.contains("\nerror (1)\n  broken [shop] "), "{text}");
    assert!(text.contains("no such column: nobody"), "{text}");
}

#[test]
fn json_lists_every_finding_with_its_four_fields() {
    let dir = suite(FLAWED);
    let output = audit(dir.path(), &["--format", "json"]);
    output.assert_success();
    let json = output.json();
    let object = json.as_object().unwrap();
    assert_eq!(object.keys().collect::<Vec<_>>(), ["findings"]);
    let findings = json["findings"].as_array().unwrap();
    let mut seen = Vec::new();
    for finding in findings {
        let mut keys: Vec<&String> = finding.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["db", "detail", "id", "kind"]);
        assert_eq!(finding["db"], "shop");
        seen.push(format!(
            "{}:{}",
            finding["id"].as_str().unwrap(),
            finding["kind"].as_str().unwrap()
        ));
    }
    // Case order, then kind order.
    assert_eq!(
        seen,
        ["cut:order_ties", "none:empty", "none:weak", "broken:error"]
    );
}

#[test]
fn strict_exits_100_with_findings_and_0_without() {
    let flawed = suite(FLAWED);
    let output = audit(flawed.path(), &["--strict"]);
    output.assert_code(100);
    assert!(
        output
            .stderr
            .contains("the audit has 4 findings (--strict)"),
        "{}",
        output.stderr
    );
    let clean = suite(CLEAN);
    let output = audit(clean.path(), &["--strict", "--format", "json"]);
    output.assert_success();
    assert_eq!(output.json(), serde_json::json!({ "findings": [] }));
}

#[test]
fn bad_input_names_the_file_and_line() {
    let dir = suite(&format!("{CLEAN}{{\"id\": \"oops\", \n"));
    let output = audit(dir.path(), &[]);
    output.assert_code(2);
    assert!(
        output.stderr.contains("cases.jsonl: record 1 (line 2)"),
        "{}",
        output.stderr
    );
    let missing = sqlgate()
        .args(["audit", "--gold", "nowhere.csv"])
        .current_dir(dir.path())
        .run();
    missing.assert_code(2);
    assert!(missing.stderr.contains("nowhere.csv"), "{}", missing.stderr);
}

/// `sqlgate test` over the demo, its suite with `audit = true` or not.
fn demo_test(audit: bool, summary: &Path) -> (Run, tempfile::TempDir) {
    let dir = demo_workspace();
    let config = format!(
        "[[suite]]\nbenchmark = \"{}\"\naudit = {audit}\n\n\
         [[system]]\nname = \"sample\"\ntype = \"replay\"\npredictions = \"sample.jsonl\"\n",
        repo().join("benchmarks/demo/suite.toml").display()
    );
    std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
    let output = sqlgate()
        .arg("test")
        .env("GITHUB_STEP_SUMMARY", summary)
        .current_dir(dir.path())
        .run();
    (output, dir)
}

#[test]
fn a_suite_with_audit_says_how_many_findings_its_gold_has_and_keeps_its_verdict() {
    let scratch = tempfile::tempdir().unwrap();
    let summary = scratch.path().join("summary.md");
    let (plain, _dir) = demo_test(false, &summary);
    assert!(!plain.stdout.contains("audit:"), "{}", plain.stdout);
    let (audited, _dir) = demo_test(true, &summary);
    assert_eq!(audited.code(), plain.code(), "{}", audited.text());
    let line = audited
        .stdout
        .lines()
        .find(|l| l.starts_with("audit: suite demo has "))
        .unwrap_or_else(|| panic!("no audit line: {}", audited.stdout));
    // The count is the audit command's.
    let json = sqlgate()
        .args(["audit", "--format", "json", "--gold"])
        .arg(repo().join("benchmarks/demo/suite.toml"))
        .run()
        .json();
    let count = json["findings"].as_array().unwrap().len();
    assert!(
        line.starts_with(&format!("audit: suite demo has {count} finding")),
        "{line}"
    );
    assert!(line.ends_with("--mode testsuite for details"), "{line}");
    let markdown = std::fs::read_to_string(&summary).unwrap();
    assert!(
        markdown.contains("### Gold audit\n\n- audit: suite demo has"),
        "{markdown}"
    );
}
