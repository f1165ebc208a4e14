//! End to end: a replayed answer is one the system would give now. Cassettes and run records
//! are read strictly, and a `command` program sees only the environment its fingerprint covers.
#![cfg(unix)]

use std::path::PathBuf;

use crate::support::{every_file, sqlgate, Run};

/// Answers right when `MODEL` starts with `good` or a `TOKEN` is set, wrong otherwise.
const SCRIPT: &str = r#"cat > /dev/null
case "$MODEL" in good*) right=1 ;; esac
[ -n "$TOKEN" ] && right=1
if [ -n "$right" ]; then echo '{"sql": "SELECT a FROM t"}'; else echo '{"sql": "SELECT b FROM t"}'; fi
"#;

/// A suite of cases asking for `a` on a database of one row, answered by `answer.sh`, in a
/// temporary folder.
struct Gate {
    dir: tempfile::TempDir,
}

impl Gate {
    /// One suite of two cases; `system` adds keys to the `command` system.
    fn new(system: &str) -> Gate {
        Gate::with(&["c1", "c2"], &["demo"], system)
    }

    /// Suites named `suites`, all of the same cases (so the same answers).
    fn with(cases: &[&str], suites: &[&str], system: &str) -> Gate {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write(
            "schema.sql",
            "CREATE TABLE t(a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'x');",
        );
        write(
            "suite.toml",
            "name = \"shop\"\ncases = \"cases.jsonl\"\ndb_dir = \"build\"\n[databases.shop]\nscripts = [\"schema.sql\"]\n",
        );
        let cases: String = cases
            .iter()
            .map(|id| {
                format!(
                    "{{\"id\": \"{id}\", \"db\": \"shop\", \"question\": \"Which a ({id})?\", \"gold\": \"SELECT a FROM t\"}}\n"
                )
            })
            .collect();
        write("cases.jsonl", &cases);
        write("answer.sh", SCRIPT);
        let suites: String = suites
            .iter()
            .map(|name| format!("[[suite]]\nname = \"{name}\"\nbenchmark = \"suite.toml\"\n\n"))
            .collect();
        write(
            "sqlgate.toml",
            &format!(
                "{suites}[[system]]\nname = \"agent\"\ntype = \"command\"\ncommand = [\"sh\", \"answer.sh\"]\n{system}\n"
            ),
        );
        Gate { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn cassette(&self) -> PathBuf {
        self.path("snapshots/predictions/agent.jsonl")
    }

    /// Runs sqlgate with `env` as the only variables of the test's choosing (`MODEL` and
    /// `TOKEN` removed otherwise).
    fn sqlgate(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = sqlgate();
        command.args(args).current_dir(self.dir.path());
        for name in ["MODEL", "TOKEN"] {
            command.env_remove(name);
        }
        for (name, value) in env {
            command.env(name, value);
        }
        command.run()
    }
}

const CI: (&str, &str) = ("CI", "true");

#[test]
fn an_undeclared_variable_never_reaches_the_program() {
    let gate = Gate::new("");
    let recorded = gate.sqlgate(&["test", "--record", "new"], &[("MODEL", "good")]);
    let replayed = gate.sqlgate(&["test"], &[CI, ("MODEL", "bad")]);
    let fresh = gate.sqlgate(&["test", "--record", "all"], &[("MODEL", "bad")]);
    // A replay gives the verdict that asking the system again gives.
    assert_eq!(
        replayed.status.code(),
        fresh.status.code(),
        "{}",
        replayed.text()
    );
    assert_eq!(
        recorded.status.code(),
        fresh.status.code(),
        "{}",
        recorded.text()
    );
    fresh.assert_code(100);
}

#[test]
fn a_passed_through_value_is_fingerprinted_and_written_nowhere() {
    let gate = Gate::new("env_passthrough = [\"MODEL\"]");
    let model = ("MODEL", "good-1f0c2e");
    let recorded = gate.sqlgate(&["test", "--record", "new"], &[model]);
    recorded.assert_code(0);
    let replayed = gate.sqlgate(&["test"], &[CI, model]);
    replayed.assert_code(0);

    let other = gate.sqlgate(&["test"], &[CI, ("MODEL", "good-other")]);
    other.assert_code(100);
    assert!(
        other.text().contains("2 answers are not in the cassette"),
        "{}",
        other.text()
    );
    let unset = gate.sqlgate(&["test"], &[CI]);
    unset.assert_code(100);

    for output in [&recorded, &replayed, &other] {
        assert!(!output.text().contains("1f0c2e"), "{}", output.text());
    }
    for (file, bytes) in every_file(gate.dir.path()) {
        let shown = String::from_utf8_lossy(&bytes);
        assert!(
            !shown.contains("1f0c2e"),
            "{} holds the value",
            file.display()
        );
    }
}

#[test]
fn a_secret_reaches_the_program_but_not_the_fingerprint() {
    let gate = Gate::new("env_secrets = [\"TOKEN\"]");
    let recorded = gate.sqlgate(&["test", "--record", "new"], &[("TOKEN", "t-1")]);
    recorded.assert_code(0);
    // A replay needs no key, and a new key invalidates nothing.
    for env in [&[CI][..], &[CI, ("TOKEN", "t-2")][..]] {
        let replayed = gate.sqlgate(&["test"], env);
        replayed.assert_code(0);
    }
}

#[test]
fn a_cassette_line_that_does_not_say_what_was_answered_stops_the_run_at_its_line() {
    let gate = Gate::new("env = { MODEL = \"good\" }");
    let recorded = gate.sqlgate(&["test", "--record", "new"], &[]);
    recorded.assert_code(0);
    let cassette = gate.cassette();
    let original = std::fs::read_to_string(&cassette).unwrap();
    let first_line = original.lines().next().unwrap().to_string();

    let misspelt = original.replacen("\"sql\"", "\"sqI\"", 1);
    std::fs::write(&cassette, misspelt).unwrap();
    let run = gate.sqlgate(&["test"], &[CI]);
    run.assert_code(2);
    let stderr = &run.stderr;
    assert!(
        stderr.contains("agent.jsonl: line 1:") && stderr.contains("sqI"),
        "{stderr}"
    );

    // A second line for a key: which answer is the system's?
    let repeated = first_line.replace("SELECT a FROM t", "SELECT b FROM t");
    std::fs::write(&cassette, format!("{original}{repeated}\n")).unwrap();
    let run = gate.sqlgate(&["test"], &[CI]);
    run.assert_code(2);
    let stderr = &run.stderr;
    assert!(
        stderr.contains("agent.jsonl: line 3:") && stderr.contains("line 1 too"),
        "{stderr}"
    );
}

#[test]
fn a_journal_line_that_answers_a_key_again_wins_and_is_said() {
    let gate = Gate::new("env = { MODEL = \"good\" }");
    let recorded = gate.sqlgate(&["test", "--record", "new"], &[]);
    recorded.assert_code(0);
    let cassette = gate.cassette();
    let first_line = std::fs::read_to_string(&cassette)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    // As `--record all` journals a new answer for a recorded key.
    let again = first_line.replace("SELECT a FROM t", "SELECT b FROM t");
    std::fs::write(
        gate.path("snapshots/predictions/agent.jsonl.journal"),
        again + "\n",
    )
    .unwrap();

    let run = gate.sqlgate(&["test"], &[CI]);
    let shown = run.text();
    assert_eq!(
        run.status.code(),
        Some(100),
        "the newer answer is used: {shown}"
    );
    assert!(
        shown.contains("agent.jsonl.journal: line 1: the first of 1 journal line(s)"),
        "{shown}"
    );
}

#[test]
fn run_records_answers_are_read_strictly_and_a_key_two_shards_answered_is_said() {
    // Two suites of the same case: each shard answers it for its own suite.
    let gate = Gate::with(&["c1"], &["first", "second"], "env = { MODEL = \"good\" }");
    for shard in 1..=2 {
        let partition = format!("count:{shard}/2");
        let record = format!("shard-{shard}.json");
        let output = gate.sqlgate(
            &[
                "test",
                "--record",
                "new",
                "--partition",
                &partition,
                "--record-out",
                &record,
            ],
            &[],
        );
        output.assert_code(0);
        // Each shard on a machine of its own: its cassette stays there.
        std::fs::remove_file(gate.cassette()).unwrap();
    }
    let merged = gate.sqlgate(&["merge", "shard-1.json", "shard-2.json"], &[]);
    merged.assert_code(0);
    assert!(
        merged.text().contains("shard-2.json: 1 answer(s)"),
        "{}",
        merged.text()
    );

    let path = gate.path("shard-2.json");
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    record["answers"][0]["reply"] = serde_json::json!({"sqI": "SELECT b FROM t"});
    std::fs::write(&path, serde_json::to_vec_pretty(&record).unwrap()).unwrap();
    let merged = gate.sqlgate(&["merge", "shard-1.json", "shard-2.json"], &[]);
    merged.assert_code(2);
    let stderr = &merged.stderr;
    assert!(
        stderr.contains("shard-2.json: line ") && stderr.contains("sqI"),
        "{stderr}"
    );

    // The same answer listed twice in one record was not written by sqlgate.
    let answer = record["answers"][0].clone();
    record["answers"] = serde_json::json!([answer, answer]);
    record["answers"][0]["reply"] = serde_json::json!({"sql": "SELECT a FROM t"});
    record["answers"][1]["reply"] = serde_json::json!({"sql": "SELECT b FROM t"});
    std::fs::write(&path, serde_json::to_vec_pretty(&record).unwrap()).unwrap();
    let merged = gate.sqlgate(&["merge", "shard-1.json", "shard-2.json"], &[]);
    merged.assert_code(2);
    let stderr = &merged.stderr;
    assert!(
        stderr.contains("shard-2.json: line ")
            && stderr.contains("repeats an earlier answer's key"),
        "{stderr}"
    );
}
