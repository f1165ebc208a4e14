//! Every exit code of the table in docs/commands.md, from the real binary: what `sqlgate::Error::exit_code`
//! decides is what a CI job sees. The system under test being unreachable (69 under `test`) is
//! covered in `gate_openai.rs` (`a_closed_port_fails_the_run_at_once_with_the_cause`,
//! `a_server_killed_mid_run_stops_being_asked_and_the_rerun_asks_the_rest`).

use std::net::TcpListener;
use std::path::{Path, PathBuf};

use crate::support::{repo, sqlgate, Run};

/// The demo gate in a temporary folder: a replayed system with its own predictions copy and
/// its own accepted snapshot.
struct Gate {
    dir: tempfile::TempDir,
}

impl Gate {
    fn new() -> Gate {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(
            repo().join("benchmarks/demo/predictions/sample.jsonl"),
            dir.path().join("sample.jsonl"),
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("snapshots")).unwrap();
        std::fs::copy(
            repo().join("snapshots/demo.snap"),
            dir.path().join("snapshots/demo.snap"),
        )
        .unwrap();
        let config = format!(
            "[[suite]]\nbenchmark = \"{}\"\nstructural = [\"etm\"]\ngate = {{ ex = \">= 0.6\" }}\n\n\
             [[system]]\nname = \"sample\"\ntype = \"replay\"\npredictions = \"sample.jsonl\"\n",
            repo().join("benchmarks/demo/suite.toml").display()
        );
        std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
        Gate { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn test(&self, args: &[&str]) -> Run {
        self.test_with_env(args, &[])
    }

    fn test_with_env(&self, args: &[&str], env: &[(&str, &Path)]) -> Run {
        let mut command = sqlgate();
        command.arg("test").args(args).current_dir(self.dir.path());
        for (name, value) in env {
            command.env(name, value);
        }
        command.run()
    }

    /// Makes the demo's `q02` prediction wrong: one failing test.
    fn break_q02(&self) {
        let path = self.path("sample.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<String> = text
            .lines()
            .map(|line| {
                let record: serde_json::Value = serde_json::from_str(line).unwrap();
                if record["id"] == "q02" {
                    serde_json::json!({"id": "q02", "sql": "SELECT first_name FROM customers"})
                        .to_string()
                } else {
                    line.to_string()
                }
            })
            .collect();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    }

    /// The files of a folder of the gate, temporary ones included.
    fn files_in(&self, folder: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(folder))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

#[test]
fn a_passing_run_exits_0() {
    let gate = Gate::new();
    let output = gate.test(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", output.text());
}

#[test]
fn a_failing_test_exits_100() {
    let gate = Gate::new();
    gate.break_q02();
    let output = gate.test(&[]);
    assert_eq!(output.status.code(), Some(100), "{}", output.text());
    assert!(
        output
            .stderr
            .clone()
            .contains("test run failed: 1 test failed"),
        "{}",
        output.text()
    );
}

#[test]
fn a_typo_in_sqlgate_toml_exits_2_at_its_file_line_and_column() {
    let gate = Gate::new();
    let config = gate.path("sqlgate.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("structural =", "structurel =")).unwrap();
    let output = gate.test(&[]);
    let message = output.stderr.clone();
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(
        message.contains("sqlgate.toml:3:1: unknown field `structurel`"),
        "{message}"
    );
}

#[test]
fn a_filter_that_selects_no_test_exits_4() {
    let gate = Gate::new();
    let output = gate.test(&["no-such-test"]);
    assert_eq!(output.status.code(), Some(4), "{}", output.text());
    assert!(output.stderr.clone().contains("no tests to run"));
}

/// A generator whose `--llm-url` cannot be reached stops with the server's failure: the server
/// is down (69), the input was fine (not 2).
#[test]
fn an_unreachable_llm_during_generate_exits_69() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("jqe.jsonl");
    let output = sqlgate()
        .args(["generate", "jqe", "--llm-model", "toy", "--llm-url"])
        .arg(format!("http://127.0.0.1:{port}/v1"))
        .arg("--gold")
        .arg(repo().join("benchmarks/demo/suite.toml"))
        .arg("--out")
        .arg(&out)
        .run();
    let message = output.stderr.clone();
    assert_eq!(output.status.code(), Some(69), "{message}");
    assert!(message.contains("--llm-url"), "{message}");
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
    assert!(!out.exists(), "nothing is written");
}

/// `--junit /dev/full`: every write fails with "no space left", as on a full disk. The run
/// passed; its report is missing, and the exit code says so.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_while_writing_the_junit_exits_73_naming_the_path() {
    let gate = Gate::new();
    let output = gate.test(&["--junit", "/dev/full"]);
    let message = output.stderr.clone();
    assert_eq!(output.status.code(), Some(73), "{message}");
    assert!(message.contains("cannot write /dev/full"), "{message}");
    assert!(message.contains("No space left on device"), "{message}");
}

/// A pending snapshot that cannot be written (a link to a full device): exit 73, naming the
/// path, and nothing half-written beside it.
#[cfg(target_os = "linux")]
#[test]
fn a_snapshot_that_cannot_be_written_exits_73_and_leaves_nothing_behind() {
    let gate = Gate::new();
    gate.break_q02();
    let pending = gate.path("snapshots/demo.snap.new");
    std::os::unix::fs::symlink("/dev/full", &pending).unwrap();
    let before = gate.files_in("snapshots");
    let output = gate.test(&[]);
    let message = output.stderr.clone();
    assert_eq!(output.status.code(), Some(73), "{message}");
    assert!(
        message.contains("cannot write snapshots/demo.snap.new: No space left"),
        "{message}"
    );
    assert_eq!(
        gate.files_in("snapshots"),
        before,
        "no temporary file is left"
    );
    assert!(pending.is_symlink());
}

/// The run record of `--record-out` on a full disk, and in a folder that cannot be created
/// (a file stands where it should be): both exit 73 and leave nothing behind.
#[cfg(target_os = "linux")]
#[test]
fn a_run_record_that_cannot_be_written_exits_73() {
    let gate = Gate::new();
    let output = gate.test(&["--record-out", "/dev/full"]);
    let message = output.stderr.clone();
    assert_eq!(output.status.code(), Some(73), "{message}");
    assert!(message.contains("cannot write /dev/full"), "{message}");

    std::fs::write(gate.path("blocker"), "a file, not a folder").unwrap();
    let before = gate.files_in(".");
    let output = gate.test(&["--record-out", "blocker/run.json"]);
    let message = output.stderr.clone();
    assert_eq!(output.status.code(), Some(73), "{message}");
    assert!(
        message.contains("cannot write blocker/run.json"),
        "{message}"
    );
    assert_eq!(gate.files_in("."), before);
}

/// `$GITHUB_STEP_SUMMARY` on a full disk.
#[cfg(target_os = "linux")]
#[test]
fn a_github_step_summary_that_cannot_be_written_exits_73() {
    let gate = Gate::new();
    let output = gate.test_with_env(&[], &[("GITHUB_STEP_SUMMARY", Path::new("/dev/full"))]);
    let message = output.stderr.clone();
    assert_eq!(output.status.code(), Some(73), "{message}");
    assert!(message.contains("cannot write /dev/full"), "{message}");
}

/// A generator's output folder that cannot be created: 73, not the 2 of a bad benchmark.
#[test]
fn a_generator_output_that_cannot_be_written_exits_73() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, "a file, not a folder").unwrap();
    let out = blocker.join("errors");
    let output = sqlgate()
        .args(["generate", "errors", "--gold"])
        .arg(repo().join("benchmarks/demo/suite.toml"))
        .arg("--out")
        .arg(&out)
        .run();
    let message = output.stderr.clone();
    assert_eq!(output.status.code(), Some(73), "{message}");
    assert!(
        message.contains(&format!("cannot write {}", out.display())),
        "{message}"
    );
}
