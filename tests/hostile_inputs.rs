//! Flags and files a hostile or careless user passes: a clear error and exit 2, or a quiet
//! exit, never a panic.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn sqlgate() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sqlgate"));
    command.env_remove("CI");
    command
}

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benchmarks/demo")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn assert_bad_input(output: &Output, words: &[&str]) {
    let message = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    for word in words {
        assert!(message.contains(word), "expected `{word}`: {message}");
    }
    assert!(!message.contains("panicked"), "{message}");
}

fn score_demo(extra: &[&str]) -> Output {
    sqlgate()
        .arg("score")
        .arg("--gold")
        .arg(demo().join("suite.toml"))
        .arg("--pred")
        .arg(demo().join("predictions/gold.jsonl"))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn huge_timeouts_are_refused() {
    for timeout in ["1e19", "1e30", "inf", "0", "-1", "NaN"] {
        let flag = format!("--timeout={timeout}");
        assert_bad_input(&score_demo(&[&flag]), &["--timeout", timeout]);
    }
    assert!(score_demo(&["--timeout", "86400"]).status.success());
}

#[test]
fn a_huge_suite_timeout_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("sqlgate.toml"),
        format!(
            "[[suite]]\nbenchmark = \"{}\"\ntimeout = 1e30\n",
            demo().join("suite.toml").display()
        ),
    )
    .unwrap();
    let output = sqlgate()
        .args(["test", "--list"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_bad_input(&output, &["sqlgate.toml", "timeout", "86400"]);
}

/// Runs `args` with a stdout pipe whose reader is gone before anything is written.
fn with_closed_stdout(args: &[&str]) -> Output {
    let mut child = sqlgate()
        .args(args)
        .current_dir(demo().parent().unwrap().parent().unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_closed_stdout_ends_the_run_quietly() {
    let gold = demo().join("suite.toml");
    let pred = demo().join("predictions/gold.jsonl");
    for args in [
        vec![
            "score",
            "--gold",
            gold.to_str().unwrap(),
            "--pred",
            pred.to_str().unwrap(),
        ],
        vec!["test", "--list"],
    ] {
        let output = with_closed_stdout(&args);
        let message = stderr(&output);
        assert!(!message.contains("panicked"), "{args:?}: {message}");
        assert_ne!(output.status.code(), Some(101), "{args:?}: {message}");
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(output.status.signal(), Some(libc::SIGPIPE), "{args:?}");
        }
    }
}
