//! Outside programs some tests compare with or need: Python reference scripts and WordNet.
//! A missing one is a visible skip (a failure under `SQLGATE_REQUIRE_TOOLS`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sqlgate_test_support::skip::without_tool;

/// Whether `python3` can import `module`; `install` says how to get it when not.
pub fn python_with(module: &str, install: &str) -> bool {
    let probe = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output();
    let found = probe.is_ok_and(|o| o.status.success());
    if !found {
        without_tool(&format!("python3 with {module} ({install})"));
    }
    found
}

/// The standard output of `python3 -c script args...` fed `input`; the test fails with the
/// script's standard error when it fails.
pub fn run_python(script: &str, args: &[&Path], input: &[u8]) -> Vec<u8> {
    let mut child = Command::new("python3")
        .args(["-c", script])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("writes");
    let output = child.wait_with_output().expect("python3 runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// Whether WordNet 3.0 is where the generators look for it (`$SQLGATE_WORDNET`, else
/// /usr/share/wordnet).
pub fn wordnet_installed() -> bool {
    let dir = std::env::var_os("SQLGATE_WORDNET")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/share/wordnet"));
    let found = dir.join("index.noun").is_file();
    if !found {
        without_tool("WordNet 3.0 (apt-get install wordnet-base)");
    }
    found
}
