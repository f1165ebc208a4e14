//! The libtest-mimic front end (`cargo test --test text2sql`) runs through the gate's runner and
//! ending: run twice on unchanged inputs, the second run takes every case's verdict from the
//! cache, in one process for every test as in one process per test (nextest).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{binary_rebuilding, repo};

/// The `text2sql` harness binary, built by cargo if this run did not build it.
fn text2sql_binary() -> PathBuf {
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args([
            "test",
            "--no-run",
            "--test",
            "text2sql",
            "--message-format=json",
        ])
        .arg("--manifest-path")
        .arg(repo().join("Cargo.toml"));
    if !cfg!(debug_assertions) {
        cargo.arg("--release");
    }
    // The features this binary was built with: others would rebuild, and replace, the
    // `sqlgate` binary the other tests are running.
    if cfg!(feature = "duckdb") {
        cargo.args(["--features", "duckdb"]);
    }
    let output = {
        let _rebuilding = binary_rebuilding();
        cargo.output().unwrap()
    };
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["target"]["name"] == "text2sql")
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .expect("cargo names the text2sql test executable")
}

/// The demo suite gated in `dir`, with the accepted snapshot of the repository.
fn demo_gate(dir: &Path) {
    std::fs::create_dir_all(dir.join("snapshots")).unwrap();
    std::fs::copy(
        repo().join("snapshots/demo.snap"),
        dir.join("snapshots/demo.snap"),
    )
    .unwrap();
    let config = format!(
        "[[suite]]\nbenchmark = \"{}\"\nstructural = [\"etm\"]\ngate = {{ ex = \">= 0.6\" }}\n\n\
         [[system]]\nname = \"sample\"\ntype = \"replay\"\npredictions = \"{}\"\n",
        repo().join("benchmarks/demo/suite.toml").display(),
        repo()
            .join("benchmarks/demo/predictions/sample.jsonl")
            .display()
    );
    std::fs::write(dir.join("sqlgate.toml"), config).unwrap();
}

fn harness(binary: &Path, dir: &Path, args: &[&str]) -> Output {
    Command::new(binary)
        .args(args)
        .env("SQLGATE_CONFIG", dir.join("sqlgate.toml"))
        .env_remove("SQLGATE_PROFILE")
        .env_remove("SQLGATE_RECORD")
        .env_remove("SQLGATE_NO_CACHE")
        .env_remove("CI")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

/// `(reused, cases)` from the run's note `reused R of N case verdicts ...`.
fn reused(output: &Output) -> (usize, usize) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stderr
        .lines()
        .find(|line| line.starts_with("reused "))
        .unwrap_or_else(|| panic!("no reuse note in:\n{stderr}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    (words[1].parse().unwrap(), words[3].parse().unwrap())
}

/// The libtest verdict lines, `test NAME ... ok`, sorted.
fn verdicts(output: &Output) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.starts_with("test ") && line.contains(" ... "))
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

#[test]
fn a_second_harness_run_reuses_every_verdict() {
    let binary = text2sql_binary();
    let dir = tempfile::tempdir().unwrap();
    demo_gate(dir.path());
    let index = dir.path().join(".sqlgate/cache/verdicts");

    let first = harness(&binary, dir.path(), &[]);
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    let (reused_first, cases) = reused(&first);
    assert_eq!(reused_first, 0);
    assert!(cases > 10, "{cases}");
    assert!(
        std::fs::read_dir(&index).is_ok_and(|mut entries| entries.next().is_some()),
        "the first run keeps its verdicts in {}",
        index.display()
    );

    let second = harness(&binary, dir.path(), &[]);
    assert_eq!(second.status.code(), Some(0), "{second:?}");
    assert_eq!(reused(&second), (cases, cases));
    assert_eq!(verdicts(&second), verdicts(&first));
    assert_eq!(verdicts(&first).len(), cases + 1, "every case and the gate");
    // A whole run compares the snapshot: unchanged, so nothing is pending.
    assert!(!dir.path().join("snapshots/demo.snap.new").exists());

    // One test per process, as nextest runs them: the case's verdict is reused too.
    let alone = harness(&binary, dir.path(), &["--exact", "demo::bookshop::q02"]);
    assert_eq!(alone.status.code(), Some(0), "{alone:?}");
    assert_eq!(reused(&alone), (1, 1));
    assert_eq!(verdicts(&alone), ["test demo::bookshop::q02 ... ok"]);

    // Without the cache, everything is evaluated again.
    let uncached = Command::new(&binary)
        .env("SQLGATE_CONFIG", dir.path().join("sqlgate.toml"))
        .env("SQLGATE_NO_CACHE", "1")
        .env_remove("CI")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    assert_eq!(uncached.status.code(), Some(0), "{uncached:?}");
    assert!(
        !String::from_utf8_lossy(&uncached.stderr).contains("reused "),
        "{uncached:?}"
    );
    assert_eq!(verdicts(&uncached), verdicts(&first));
}
