//! Snapshots in insta's `.snap` format: rendering, reading back, comparing, the pending/accept
//! workflow, diffs, and (when cargo-insta is installed) `cargo insta accept` on our files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use sqlgate::gate::snapshot::{self, normalize_sql, SnapshotEntry};
use sqlgate_eval::loaders::{self, Answer, LoadOptions};

use crate::support::{demo, sqlgate};
use sqlgate_test_support::skip::without_tool;

fn entry(name: &str, passed: bool, verdict: &str, ex: &str, sql: Option<&str>) -> SnapshotEntry {
    SnapshotEntry {
        name: name.to_string(),
        passed,
        verdict: serde_json::from_value(verdict.into()).unwrap(),
        metrics: BTreeMap::from([("ex".to_string(), ex.to_string())]),
        sql: sql.map(str::to_string),
        system_error: None,
    }
}

/// The demo benchmark's sample predictions as entries (pass = same SQL text as the gold).
fn demo_entries() -> Vec<SnapshotEntry> {
    let demo = demo("");
    let bench = loaders::load(
        &demo.join("suite.toml"),
        &LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .expect("demo loads");
    let predictions =
        loaders::load_predictions(&demo.join("predictions/sample.jsonl"), None, &bench)
            .expect("predictions load");
    bench
        .cases
        .iter()
        .zip(predictions)
        .map(|(case, prediction)| {
            let sql = match prediction.answer {
                Answer::Sql(sql) => Some(sql),
                Answer::Abstain => None,
            };
            let passed = sql.as_ref() == case.gold.first();
            let verdict = if passed { "correct" } else { "incorrect" };
            entry(
                &format!("demo::{}::{}", case.db, case.id),
                passed,
                verdict,
                if passed { "1" } else { "0" },
                sql.as_deref(),
            )
        })
        .collect()
}

/// Names, metrics and SQL that collide with the line format.
fn awkward_entries() -> Vec<SnapshotEntry> {
    let mut odd = entry(
        "x::db::pipe | in \\ name",
        false,
        "pred_error",
        "0",
        Some("SELECT a || ' | ' || b\nFROM t;"),
    );
    odd.metrics
        .insert("latency ms".to_string(), "1 200".to_string());
    odd.metrics.insert("k=v".to_string(), "=|".to_string());
    vec![
        odd,
        entry("x::db::abstained", true, "abstained", "0", None),
        entry("x::db::empty", false, "pred_error", "0", Some("   ")),
        entry(
            "x::db::literal",
            true,
            "correct",
            "1",
            Some("SELECT 'abstain'"),
        ),
        entry(
            "x::db::no-metrics",
            true,
            "correct",
            "1",
            Some("SELECT x=1 FROM t"),
        ),
    ]
}

/// What reading back must give: the SQL as the snapshot normalizes it.
fn normalized(entries: &[SnapshotEntry]) -> Vec<SnapshotEntry> {
    let mut entries: Vec<SnapshotEntry> = entries
        .iter()
        .map(|e| SnapshotEntry {
            sql: e.sql.as_deref().map(normalize_sql),
            ..e.clone()
        })
        .collect();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

fn parse(text: &str) -> Result<Vec<SnapshotEntry>, sqlgate_eval::error::InputError> {
    snapshot::parse(Path::new("snapshots/demo.snap"), text)
}

#[test]
fn renders_insta_front_matter_then_one_sorted_line_per_case() {
    let mut entries = vec![
        entry(
            "demo::b::q2",
            false,
            "pred_error",
            "0",
            Some("SELECT nme\n  FROM customers ;"),
        ),
        entry(
            "demo::b::q1",
            true,
            "correct",
            "1",
            Some("SELECT title FROM books"),
        ),
        entry("demo::b::q3", true, "abstained", "0", None),
    ];
    entries[1]
        .metrics
        .insert("exact".to_string(), "1".to_string());
    let text = snapshot::render("demo", &entries);
    assert_eq!(
        text,
        "---\nsource: sqlgate test\nexpression: suite demo\n---\n\
         demo::b::q1 | pass | correct | ex=1 | exact=1 | SELECT title FROM books\n\
         demo::b::q2 | fail | pred_error | ex=0 | SELECT nme FROM customers\n\
         demo::b::q3 | pass | abstained | ex=0 | abstain\n"
    );
    let mut reversed = entries.clone();
    reversed.reverse();
    assert_eq!(
        snapshot::render("demo", &reversed),
        text,
        "order of input does not matter"
    );
}

#[test]
fn what_is_rendered_reads_back() {
    for entries in [demo_entries(), awkward_entries()] {
        let text = snapshot::render("demo", &entries);
        assert_eq!(parse(&text).expect("parses"), normalized(&entries));
        assert_eq!(text.lines().count(), entries.len() + 4);
    }
}

#[test]
fn a_rendered_suite_compares_equal_to_itself() {
    let entries = awkward_entries();
    let read_back = parse(&snapshot::render("x", &entries)).expect("parses");
    let diff = snapshot::compare(&read_back, &entries);
    assert!(diff.is_empty(), "{diff:?}");
    assert_eq!(
        snapshot::unified_diff(&snapshot::body(&read_back), &snapshot::body(&entries)),
        ""
    );
}

#[test]
fn read_distinguishes_missing_from_malformed() {
    let dir = tempfile::tempdir().expect("temp dir");
    assert_eq!(
        snapshot::read(&dir.path().join("absent.snap")).expect("no error"),
        None
    );

    let good = snapshot::render("demo", &demo_entries());
    let path = dir.path().join("demo.snap");
    std::fs::write(&path, &good).expect("writes");
    assert_eq!(
        snapshot::read(&path).expect("reads").map(|a| a.entries),
        Some(normalized(&demo_entries()))
    );

    let cases: [(&str, usize, &str); 7] = [
        ("", 1, "---"),
        ("name | pass | correct | ex=1 | SELECT 1\n", 1, "---"),
        ("---\nsource: x\n", 0, "closing"),
        ("---\nnot yaml\n---\n", 2, "key: value"),
        (
            "---\n---\nq1 | maybe | correct | ex=1 | SELECT 1\n",
            3,
            "pass",
        ),
        ("---\n---\nq1 | pass | correct\n", 3, "expected"),
        (
            "---\n---\n\nq1 | pass | correct | ex=1 | SELECT 1\nq1 | fail | incorrect | ex=0 | SELECT 2\n",
            5,
            "twice",
        ),
    ];
    for (text, line, words) in cases {
        std::fs::write(&path, text).expect("writes");
        let error = snapshot::read(&path).expect_err(text);
        assert_eq!(error.file, path, "{text:?}");
        assert_eq!(error.line, (line > 0).then_some(line), "{text:?}: {error}");
        assert!(error.message.contains(words), "{text:?}: {error}");
    }
    std::fs::write(
        &path,
        "---\n---\nbad\\q | pass | correct | ex=1 | SELECT 1\n",
    )
    .expect("writes");
    assert!(snapshot::read(&path)
        .expect_err("bad escape")
        .message
        .contains("escape"));
    std::fs::write(&path, [0xff, 0xfe]).expect("writes");
    assert!(snapshot::read(&path).is_err(), "not UTF-8");
}

#[test]
fn compare_sorts_changes_into_kinds() {
    let accepted = vec![
        entry("s::d::regressed", true, "correct", "1", Some("SELECT 1")),
        entry("s::d::improved", false, "incorrect", "0", Some("SELECT 2")),
        entry("s::d::new-sql", false, "incorrect", "0", Some("SELECT 3")),
        entry(
            "s::d::same-sql-reflowed",
            true,
            "correct",
            "1",
            Some("SELECT  4"),
        ),
        entry(
            "s::d::new-verdict",
            false,
            "incorrect",
            "0",
            Some("SELECT 5"),
        ),
        entry("s::d::gone", true, "correct", "1", Some("SELECT 6")),
        entry(
            "s::d::abstains-now",
            false,
            "incorrect",
            "0",
            Some("SELECT 7"),
        ),
    ];
    let current = vec![
        entry(
            "s::d::regressed",
            false,
            "incorrect",
            "0",
            Some("SELECT 1 + 0"),
        ),
        entry("s::d::improved", true, "correct", "1", Some("SELECT 2")),
        entry("s::d::new-sql", false, "incorrect", "0", Some("SELECT 33")),
        entry(
            "s::d::same-sql-reflowed",
            true,
            "correct",
            "1",
            Some("SELECT\n4;"),
        ),
        entry(
            "s::d::new-verdict",
            false,
            "pred_error",
            "0",
            Some("SELECT 5"),
        ),
        entry("s::d::abstains-now", false, "incorrect", "0", None),
        entry("s::d::added", true, "correct", "1", Some("SELECT 8")),
    ];
    let diff = snapshot::compare(&accepted, &current);
    assert_eq!(diff.regressions, ["s::d::regressed"]);
    assert_eq!(diff.improvements, ["s::d::improved"]);
    assert_eq!(diff.sql_changed, ["s::d::abstains-now", "s::d::new-sql"]);
    assert_eq!(diff.other_changed, ["s::d::new-verdict"]);
    assert_eq!(diff.added, ["s::d::added"]);
    assert_eq!(diff.removed, ["s::d::gone"]);
    assert!(!diff.is_empty());
}

#[test]
fn unified_diff_shows_changed_lines_with_a_little_context() {
    let accepted: Vec<SnapshotEntry> = (1..=9)
        .map(|i| {
            entry(
                &format!("s::d::q{i}"),
                true,
                "correct",
                "1",
                Some(&format!("SELECT {i}")),
            )
        })
        .collect();
    let mut current = accepted.clone();
    current[4] = entry("s::d::q5", false, "incorrect", "0", Some("SELECT 55"));
    let text = snapshot::unified_diff(&snapshot::body(&accepted), &snapshot::body(&current));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "--- accepted");
    assert_eq!(lines[1], "+++ current");
    assert!(lines[2].starts_with("@@ -4,3 +4,3 @@"), "{text}");
    assert_eq!(
        &lines[3..],
        [
            " s::d::q4 | pass | correct | ex=1 | SELECT 4",
            "-s::d::q5 | pass | correct | ex=1 | SELECT 5",
            "+s::d::q5 | fail | incorrect | ex=0 | SELECT 55",
            " s::d::q6 | pass | correct | ex=1 | SELECT 6",
        ]
    );
    let bodies = snapshot::unified_diff(&snapshot::body(&accepted), &snapshot::body(&current));
    assert_eq!(bodies, text);
}

#[test]
fn pending_snapshots_are_written_beside_and_accepted_by_rename() {
    let dir = tempfile::tempdir().expect("temp dir");
    let snapshots = dir.path().join("snapshots");
    let old = snapshot::render(
        "demo",
        &[entry("demo::d::q1", true, "correct", "1", Some("SELECT 1"))],
    );
    let new = snapshot::render("demo", &demo_entries());
    assert!(!snapshot::accept(&snapshots, "demo").expect("nothing to accept is fine"));

    let accepted = snapshot::write_accepted(&snapshots, "demo", &old).expect("writes");
    assert_eq!(accepted, snapshots.join("demo.snap"));
    let pending = snapshot::write_pending(&snapshots, "demo", &new).expect("writes");
    assert_eq!(pending, snapshots.join("demo.snap.new"));
    assert_eq!(
        std::fs::read_to_string(&accepted).expect("accepted stays"),
        old
    );
    assert_eq!(std::fs::read_to_string(&pending).expect("pending"), new);

    assert!(snapshot::accept(&snapshots, "demo").expect("accepts"));
    assert!(!pending.exists());
    assert_eq!(std::fs::read_to_string(&accepted).expect("accepted"), new);

    // Accepting directly supersedes a pending file.
    snapshot::write_pending(&snapshots, "demo", &old).expect("writes");
    snapshot::write_accepted(&snapshots, "demo", &old).expect("writes");
    assert!(!pending.exists());

    for bad in ["", "../escape", "a/b", ".hidden"] {
        let error = snapshot::write_pending(&snapshots, bad, &new).expect_err(bad);
        assert!(error.to_string().contains("suite name"), "{error}");
    }
}

fn cargo_insta_available() -> bool {
    let probe = Command::new("cargo").args(["insta", "--version"]).output();
    probe.is_ok_and(|output| output.status.success())
}

fn write_crate(root: &Path) {
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"gated\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .expect("writes");
    std::fs::write(root.join("src/lib.rs"), "").expect("writes");
    std::fs::write(root.join(".gitignore"), "*.snap.new\n").expect("writes");
}

fn cargo_insta(root: &Path, args: &[&str]) -> String {
    let output = Command::new("cargo")
        .arg("insta")
        .args(args)
        .current_dir(root)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("cargo insta runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn cargo_insta_finds_and_accepts_pending_snapshots_unchanged() {
    if !cargo_insta_available() {
        without_tool("cargo-insta (cargo install --locked cargo-insta)");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    write_crate(root);
    let snapshots: PathBuf = root.join("snapshots");
    let suites = [
        ("demo", demo_entries()),
        ("odd:suite, #1", awkward_entries()),
    ];
    for (suite, entries) in &suites {
        snapshot::write_accepted(&snapshots, suite, &snapshot::render(suite, &entries[..1]))
            .expect("writes");
        snapshot::write_pending(&snapshots, suite, &snapshot::render(suite, entries))
            .expect("writes");
    }

    let listed = cargo_insta(root, &["pending-snapshots"]);
    for (suite, _) in &suites {
        assert!(
            listed.contains(&format!("snapshots/{suite}.snap")),
            "{listed}"
        );
    }
    cargo_insta(root, &["accept"]);
    for (suite, entries) in &suites {
        assert!(!snapshot::pending_path(&snapshots, suite).exists());
        let accepted =
            std::fs::read_to_string(snapshot::path(&snapshots, suite)).expect("accepted");
        assert_eq!(
            accepted,
            snapshot::render(suite, entries),
            "cargo insta rewrote {suite} differently"
        );
    }
}

/// An OpenAI-format server: garbage for the weather, no answer ever for the string (the
/// client times out), SQL for the rows.
fn serve_system_errors() -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let address = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for mut request in server.incoming_requests() {
            let mut body = String::new();
            let _ = request.as_reader().read_to_string(&mut body);
            let content = if body.contains("weather") {
                "I like sunny days."
            } else if body.contains("string") {
                // Held unanswered until the test process ends.
                std::thread::spawn(move || {
                    std::thread::sleep(std::time::Duration::from_secs(600));
                    drop(request);
                });
                continue;
            } else {
                "SELECT count(*) FROM t"
            };
            let chat = serde_json::json!({"choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": content}}]});
            let _ = request.respond(tiny_http::Response::from_string(chat.to_string()));
        }
    });
    address
}

fn gate(dir: &Path, record: &str) -> (String, String) {
    let output = sqlgate()
        .args(["test", "--record", record, "--junit", "junit.xml"])
        .current_dir(dir)
        .run();
    output.assert_code(100);
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    (output.stdout, junit)
}

/// The failure message and properties of a case in a JUnit report.
fn junit_case(junit: &str, name: &str) -> (String, BTreeMap<String, String>) {
    let doc = roxmltree::Document::parse(junit).unwrap();
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(name))
        .unwrap_or_else(|| panic!("no {name}: {junit}"));
    let message = case
        .descendants()
        .find(|n| n.has_tag_name("failure") || n.has_tag_name("error"))
        .and_then(|n| n.attribute("message"))
        .unwrap_or_default()
        .to_string();
    let properties = case
        .descendants()
        .filter(|n| n.has_tag_name("property"))
        .map(|p| {
            let value = p.attribute("value").unwrap().to_string();
            (p.attribute("name").unwrap().to_string(), value)
        })
        .collect();
    (message, properties)
}

/// Issue 24 item 3: garbage, a timeout and a missing recording were all `system_error |
/// <no answer>`, so a model rename showed as a 2-line diff. Snapshot lines and JUnit name the
/// kind; a snapshot written before kinds were is still read, and the diff shows the kinds.
#[test]
fn system_errors_are_named_by_kind_in_snapshots_and_junit() {
    let dir = tempfile::tempdir().unwrap();
    let base_url = serve_system_errors();
    std::fs::write(
        dir.path().join("schema.sql"),
        "CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (3), (1), (2);",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("suite.toml"),
        "name = \"tiny\"\ncases = \"cases.jsonl\"\ndb_dir = \"build\"\n[databases.numbers]\nscripts = [\"schema.sql\"]\n",
    )
    .unwrap();
    let cases = [
        ("c0", "What is the weather like?"),
        ("c1", "How long is a piece of string?"),
        ("c2", "How many rows are there?"),
    ]
    .map(|(id, question)| {
        serde_json::json!({"id": id, "db": "numbers", "question": question,
            "gold": "SELECT count(*) FROM t"})
        .to_string()
    });
    std::fs::write(dir.path().join("cases.jsonl"), cases.join("\n")).unwrap();
    std::fs::write(
        dir.path().join("sqlgate.toml"),
        format!(
            "[[suite]]\nbenchmark = \"suite.toml\"\n\n[[system]]\nname = \"model\"\n\
             type = \"openai\"\nbase_url = \"{base_url}\"\nmodel = \"m\"\ntimeout_secs = 1\n\
             throttle = {{ retries = 0 }}\n"
        ),
    )
    .unwrap();

    let (_, junit) = gate(dir.path(), "new");
    let pending = dir.path().join("snapshots/tiny.snap.new");
    let written = std::fs::read_to_string(&pending).unwrap();
    let line = |text: &str, id: &str| -> String {
        text.lines()
            .find(|l| l.starts_with(&format!("tiny::numbers::{id} ")))
            .unwrap_or_else(|| panic!("no {id}: {text}"))
            .to_string()
    };
    assert!(line(&written, "c0").starts_with("tiny::numbers::c0 | fail | system_error | "));
    assert!(line(&written, "c0").ends_with(" | <garbage>"), "{written}");
    assert!(line(&written, "c1").ends_with(" | <timeout>"), "{written}");
    let (message, properties) = junit_case(&junit, "numbers::c0");
    assert!(message.contains("garbage (ex = 0)"), "{message}");
    assert_eq!(properties["system_error_kind"], "garbage");
    let (message, properties) = junit_case(&junit, "numbers::c1");
    assert!(message.contains("no answer (timeout)"), "{message}");
    assert_eq!(properties["system_error_kind"], "timeout");

    // Accepted by a version that wrote `<no answer>` for both.
    let old = written
        .replace("<garbage>", "<no answer>")
        .replace("<timeout>", "<no answer>");
    std::fs::write(dir.path().join("snapshots/tiny.snap"), &old).unwrap();
    std::fs::remove_file(&pending).unwrap();
    // Replayed: the timeout was not recorded, the garbage was.
    let (text, junit) = gate(dir.path(), "none");
    let now = std::fs::read_to_string(&pending).unwrap();
    assert!(line(&now, "c0").ends_with(" | <garbage>"), "{now}");
    assert!(line(&now, "c1").ends_with(" | <not_recorded>"), "{now}");
    for (id, kind) in [("c0", "garbage"), ("c1", "not_recorded")] {
        assert!(
            text.contains(&format!("-{}", line(&old, id)))
                && text.contains(&format!("+{}", line(&now, id))),
            "the diff shows {id} become {kind}: {text}"
        );
    }
    // The garbage answer is a known failure of the old snapshot; a missing one never is.
    assert!(text.contains("tiny::numbers::c0 (known failure)"), "{text}");
    let (message, properties) = junit_case(&junit, "numbers::c1");
    assert!(message.contains("no answer (not_recorded)"), "{message}");
    assert_eq!(properties["system_error_kind"], "not_recorded");
    let entries = snapshot::read(&pending).unwrap().unwrap().entries;
    let kinds: Vec<Option<&str>> = entries.iter().map(|e| e.system_error.as_deref()).collect();
    assert_eq!(kinds, [Some("garbage"), Some("not_recorded"), None]);
}
