//! Names and ids are data (issue 38): a case id, database, suite, system or family name with a
//! control character is refused where it is read (exit 2, naming the file and record), so no
//! report prints a line of it; what sqlgate writes into TOML, YAML, XML, HTML or a GitHub
//! workflow command is that format's escaping of the text, read back as the same text.

use std::path::Path;

use proptest::prelude::*;
use sqlgate::gate::snapshot::{self, SnapshotEntry};
use sqlgate::gate::{TestKind, TestResult, TestStatus};
use sqlgate::report::github;
use sqlgate_eval::error::unprintable_char;
use sqlgate_eval::loaders::SourceRef;

use crate::report_github::{parse_command, Command};
use crate::support::{sqlgate, Run};

/// The id that printed `::warning::pwned` as a line of its own in four places of the terminal
/// report, which GitHub Actions runs as a workflow command.
const HOSTILE_ID: &str = "c\n::warning::pwned";

/// A folder with `db/shop.sqlite` (one table `t` of one row).
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("db")).unwrap();
    let db = rusqlite::Connection::open(dir.path().join("db/shop.sqlite")).unwrap();
    db.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
        .unwrap();
    dir
}

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::write(dir.join(file), text).unwrap();
}

fn score(dir: &Path, gold: &str, pred: &str) -> Run {
    sqlgate()
        .args(["score", "--gold", gold, "--pred", pred, "--db-dir", "db"])
        .current_dir(dir)
        .run()
}

/// Exit 2, naming `place` (file and record or line) and the control character.
fn assert_refused(run: &Run, place: &str) {
    run.assert_bad_input(&[place, "U+000A"]);
    assert_no_workflow_command_but_annotations(run);
}

fn jsonl(records: &[serde_json::Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

#[test]
fn a_case_id_with_a_control_character_is_refused_at_load() {
    let dir = folder();
    let good =
        serde_json::json!({"id": "a", "db": "shop", "question": "q", "gold": "SELECT x FROM t"});
    let bad = serde_json::json!({"id": HOSTILE_ID, "db": "shop", "question": "q", "gold": "SELECT x FROM t"});
    write(
        dir.path(),
        "suite.toml",
        "name = \"s\"\ncases = \"cases.jsonl\"\ndb_dir = \"db\"\n",
    );
    write(dir.path(), "cases.jsonl", &jsonl(&[good.clone(), bad]));
    write(
        dir.path(),
        "pred.jsonl",
        "{\"id\": \"a\", \"sql\": \"SELECT 1\"}\n",
    );
    assert_refused(
        &score(dir.path(), "suite.toml", "pred.jsonl"),
        "cases.jsonl: record 1 (line 2)",
    );

    // JSON gold (TrustSQL, BIRD): the record is named.
    let trustsql = serde_json::json!([
        {"id": "a", "db_id": "shop", "question": "q", "query": "SELECT x FROM t", "type": "sql", "note": ""},
        {"id": HOSTILE_ID, "db_id": "shop", "question": "q", "query": "SELECT x FROM t", "type": "sql", "note": ""}
    ]);
    write(dir.path(), "trust.json", &trustsql.to_string());
    assert_refused(
        &score(dir.path(), "trust.json", "pred.jsonl"),
        "trust.json: record 1",
    );
    let bird = serde_json::json!([
        {"question_id": HOSTILE_ID, "db_id": "shop", "question": "q", "SQL": "SELECT x FROM t"}
    ]);
    write(dir.path(), "bird.json", &bird.to_string());
    assert_refused(
        &score(dir.path(), "bird.json", "pred.jsonl"),
        "bird.json: record 0",
    );

    // A Defog CSV's ids are row numbers; its database name is the row's text.
    write(
        dir.path(),
        "questions.csv",
        "db_name,query_category,query,question\nshop,c,SELECT x FROM t,q\n\"sh\nop\",c,SELECT x FROM t,q\n",
    );
    assert_refused(
        &score(dir.path(), "questions.csv", "pred.jsonl"),
        "questions.csv: record 1",
    );

    // A predictions file's id, refused before it is looked up.
    write(dir.path(), "cases.jsonl", &jsonl(&[good]));
    let pred = jsonl(&[serde_json::json!({"id": HOSTILE_ID, "sql": "SELECT 1"})]);
    write(dir.path(), "pred.jsonl", &pred);
    assert_refused(
        &score(dir.path(), "suite.toml", "pred.jsonl"),
        "pred.jsonl: record 0 (line 1)",
    );
}

/// Other control characters than line breaks (NUL, escape, a bidirectional override) are
/// refused alike, and a suite, system or family name in `sqlgate.toml` too.
#[test]
fn names_in_the_configuration_with_control_characters_are_refused() {
    let dir = folder();
    write(
        dir.path(),
        "cases.jsonl",
        &jsonl(&[
            serde_json::json!({"id": "a", "db": "shop", "question": "q", "gold": "SELECT x FROM t"}),
        ]),
    );
    write(
        dir.path(),
        "pred.jsonl",
        "{\"id\": \"a\", \"sql\": \"SELECT x FROM t\"}\n",
    );
    for control in ["\0", "\u{1b}[31m", "\u{202e}", "\r"] {
        let name = toml::Value::String(format!("x{control}y")).to_string();
        write(
            dir.path(),
            "suite.toml",
            &format!("name = {name}\ncases = \"cases.jsonl\"\ndb_dir = \"db\"\n"),
        );
        // The suite's name from its manifest, or in sqlgate.toml; a system's; a family's.
        let config = |suite: &str, system: &str, families: &str| {
            format!(
                "[[suite]]\n{suite}benchmark = \"suite.toml\"\n{families}\n\
                 [[system]]\nname = {system}\ntype = \"replay\"\npredictions = \"pred.jsonl\"\n"
            )
        };
        let configs = [
            config("", "\"r\"", ""),
            config(&format!("name = {name}\n"), "\"r\"", ""),
            config("name = \"s\"\n", &name, ""),
            config(
                "name = \"s\"\n",
                "\"r\"",
                &format!("families = {{ {name} = \"cases.jsonl\" }}"),
            ),
        ];
        for config in configs {
            write(dir.path(), "sqlgate.toml", &config);
            let run = sqlgate()
                .args(["test", "--list"])
                .current_dir(dir.path())
                .run();
            run.assert_code(2);
            assert!(
                run.stderr.contains("control character"),
                "{config}\n{}",
                run.stderr
            );
            assert!(!run.stderr.contains(control), "printed raw: {}", run.stderr);
        }
    }
}

/// Pieces of hostile text: line breaks, NUL, workflow commands, GitHub expressions, shell,
/// TOML, markdown and HTML syntax, escapes of the formats themselves, a huge number.
const PIECES: [&str; 22] = [
    "\n",
    "\r",
    "\0",
    "\u{202e}",
    "::warning::pwned",
    "::add-mask::x",
    "${{ github.token }}",
    "`touch PWNED`",
    "$(touch PWNED)",
    "\"",
    "'",
    "#",
    "[[system]]",
    "<script>",
    "&amp;",
    "%0A",
    ", title=x:",
    " | ",
    "\\",
    "é",
    "184467440737095516160",
    "q",
];

fn hostile() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(&PIECES[..]), 1..5)
        .prop_map(|pieces| pieces.concat())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 12,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A gate over one case with id `id`, answered wrongly by `sql`, run as GitHub Actions runs it.
fn gate_run(id: &str, sql: &str) -> (tempfile::TempDir, Run) {
    let dir = folder();
    let case =
        serde_json::json!({"id": id, "db": "shop", "question": "q", "gold": "SELECT x FROM t"});
    write(
        dir.path(),
        "suite.toml",
        "name = \"s\"\ncases = \"cases.jsonl\"\ndb_dir = \"db\"\n",
    );
    write(dir.path(), "cases.jsonl", &jsonl(&[case]));
    write(
        dir.path(),
        "pred.jsonl",
        &jsonl(&[serde_json::json!({"id": id, "sql": sql})]),
    );
    write(
        dir.path(),
        "sqlgate.toml",
        "[[suite]]\nbenchmark = \"suite.toml\"\n[[system]]\nname = \"r\"\ntype = \"replay\"\npredictions = \"pred.jsonl\"\n",
    );
    let run = sqlgate()
        .args(["test", "--junit", "junit.xml", "--html", "report.html"])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", dir.path().join("summary.md"))
        .current_dir(dir.path())
        .run();
    (dir, run)
}

/// A model's answer is text an attacker may steer: its SQL, shown in the failure's detail and in
/// the database's error message, printed `    ::warning::pwned` as a line GitHub ran (it skips
/// leading white space, and ends lines at CR too). Such a line is printed with a `\` first.
#[test]
fn an_answer_never_prints_a_workflow_command() {
    let (_dir, run) = gate_run("a", "SELECT 2 -- x\n  ::warning::pwned\r::add-mask::y");
    run.assert_code(100);
    assert_no_workflow_command_but_annotations(&run);
    assert!(
        run.stdout.contains("  \\::warning::pwned"),
        "{}",
        run.stdout
    );
}

proptest! {
    #![proptest_config(config())]

    /// Through the terminal report, the annotations, the step summary, JUnit and HTML: an id
    /// that could break a line is refused at load; any other is written in each format's
    /// escaping and reads back as itself. A wrong answer's SQL, a model's text, may hold
    /// anything: no line of it is a workflow command.
    #[test]
    fn every_report_refuses_or_escapes_a_hostile_case_id(id in hostile(), sql in hostile()) {
        let (dir, run) = gate_run(&id, &format!("SELECT 2 -- {sql}"));
        assert_no_workflow_command_but_annotations(&run);
        if unprintable_char(&id).is_some() {
            // Refused (an id of white space alone is empty once trimmed, also refused).
            prop_assert_eq!(run.code(), Some(2), "{}", run.stderr);
            return Ok(());
        }
        prop_assert_eq!(run.code(), Some(100), "{}", run.text());
        let test = format!("s::shop::{id}");
        let annotations: Vec<Command> = run
            .stdout
            .lines()
            .filter(|line| line.starts_with("::"))
            .map(parse_command)
            .collect();
        prop_assert_eq!(annotations.len(), 1, "{}", run.stdout);
        prop_assert_eq!(&annotations[0].properties["title"], &test);

        let xml = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let name = format!("shop::{id}");
        prop_assert!(
            doc.descendants().any(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(&name)),
            "{}", xml
        );
        let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
        let heading = summary.lines().find(|line| line.starts_with("#### ")).unwrap();
        prop_assert!(heading.contains(&test), "{}", summary);
        let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
        // HTML-escaped: a `<` or `"` of the id is never written as itself.
        prop_assert!(!id.contains(['<', '"']) || !html.contains(&test), "raw in the HTML report");
    }

    /// A snapshot line of any test name reads back as itself, or (a control character) is
    /// refused naming its line; it is always one line.
    #[test]
    fn a_snapshot_line_of_a_hostile_name_reads_back_or_is_refused(name in hostile()) {
        let entry = SnapshotEntry {
            name: format!("s::db::{name}"),
            passed: true,
            verdict: sqlgate_eval::metrics::ex::Verdict::Correct,
            metrics: [("ex".to_string(), "1".to_string())].into(),
            sql: Some("SELECT 1".to_string()),
            system_error: None,
        };
        let text = snapshot::render("s", std::slice::from_ref(&entry));
        prop_assert_eq!(text.lines().count(), 5, "{:?}", text);
        match snapshot::parse(Path::new("s.snap"), &text) {
            Ok(entries) => prop_assert_eq!(entries, vec![entry]),
            Err(error) => {
                prop_assert!(unprintable_char(&name).is_some(), "{}", error);
                prop_assert_eq!(error.line, Some(5));
            }
        }
    }

    /// A workflow command's title, file and message hold any text, escaped: one line each,
    /// read back by the runner's rules as the text.
    #[test]
    fn an_annotation_of_any_text_is_one_command_that_reads_back(
        name in hostile(), message in hostile(), file in hostile()
    ) {
        let mut result = TestResult::new(&name, "s", TestKind::Case(0), TestStatus::Failed);
        result.message = Some(message.clone());
        result.source = Some(SourceRef { file: file.clone().into(), record: 0, line: Some(1) });
        let lines = github::annotations(&[result], 5, None);
        prop_assert_eq!(lines.len(), 1);
        let command = parse_command(&lines[0]);
        prop_assert_eq!(command.name, "error");
        prop_assert_eq!(&command.properties["title"], &name);
        // A path's `\` is written `/`, as GitHub expects.
        prop_assert_eq!(&command.properties["file"], &file.replace('\\', "/"));
        prop_assert_eq!(command.message, message);
    }

    /// `init` writes a predictions file's name as a TOML string that reads back as itself, in
    /// no comment and no other key, or refuses it (a control character) writing nothing.
    #[test]
    fn init_writes_a_hostile_file_name_as_data_or_refuses_it(stem in hostile()) {
        let stem = stem.replace(['\0', '/'], "_");
        let predictions = format!("{stem}.jsonl");
        let dir = folder();
        write(dir.path(), "questions.csv", "db_name,query_category,query,question\nshop,c,SELECT x FROM t,q\n");
        write(dir.path(), &predictions, "{\"id\": \"0\", \"sql\": \"SELECT x FROM t\"}\n");
        let run = sqlgate()
            .args(["init", "--benchmark", "questions.csv", "--db-dir", "db", "--predictions", &predictions])
            .current_dir(dir.path())
            .run();
        assert_no_workflow_command_but_annotations(&run);
        if unprintable_char(&predictions).is_some() {
            prop_assert_eq!(run.code(), Some(2), "{}", run.stderr);
            prop_assert!(!dir.path().join("sqlgate.toml").exists());
            return Ok(());
        }
        prop_assert_eq!(run.code(), Some(0), "{}", run.text());
        let text = std::fs::read_to_string(dir.path().join("sqlgate.toml")).unwrap();
        let config: toml::Table = text.parse().unwrap();
        let systems = config["system"].as_array().unwrap();
        prop_assert_eq!(systems.len(), 1);
        prop_assert_eq!(systems[0]["predictions"].as_str(), Some(predictions.as_str()));
        prop_assert_eq!(config["profile"].as_table().unwrap().keys().collect::<Vec<_>>(), ["ci"]);
        prop_assert!(!text.lines().any(|line| line.starts_with('#') && line.contains(&predictions)), "{}", text);
        let workflow = std::fs::read_to_string(dir.path().join(".github/workflows/sqlgate.yml")).unwrap();
        prop_assert!(!workflow.contains(&predictions));
    }
}

/// Every line that GitHub would run as a workflow command (a `::` after leading white space;
/// a line ends at LF or CR) is one of sqlgate's `::error` annotations.
fn assert_no_workflow_command_but_annotations(run: &Run) {
    let text = run.text();
    for line in text.split(['\n', '\r']) {
        let trimmed = line.trim_start();
        assert!(
            !trimmed.starts_with("::") || line.starts_with("::error "),
            "a workflow command line: {line:?}\n{text}"
        );
    }
}
