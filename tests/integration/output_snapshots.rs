//! sqlgate's own outputs, whole, against committed insta snapshots (`snapshots/` beside this
//! file): the terminal report of `sqlgate test`, its JUnit XML, the GitHub step summary and the
//! libtest-json events, on the demo with one case answered wrong so that every failure section
//! shows; `sqlgate diff` of that run against the accepted one in each format; `score`'s text
//! and JSON; `audit`'s text and JSON; the text a reader of the HTML report sees; every
//! command's `--help`; the messages of bad inputs. What differs from run to run is redacted first: durations, the order in which cases
//! running in parallel finish, the repository's and the temporary folder's paths.
//!
//! After an intended change of an output: `cargo insta review` (or `INSTA_UPDATE=always cargo
//! test --test integration output_snapshots`), then commit the `.snap` files. Under `CI=true` a
//! mismatch fails and nothing is written.

use std::path::Path;

use regex::Regex;

use crate::support::{demo, demo_workspace, replace_prediction, repo, sqlgate};

/// The demo gate in a temporary folder, with q02 answered `SELECT 1` (a regression against the
/// accepted snapshot).
fn failing_demo() -> tempfile::TempDir {
    let dir = demo_workspace();
    let config = format!(
        "[[suite]]\nbenchmark = \"{}\"\nstructural = [\"etm\"]\ngate = {{ ex = \">= 0.6\" }}\n\n\
         [[system]]\nname = \"sample\"\ntype = \"replay\"\npredictions = \"sample.jsonl\"\n",
        demo("suite.toml").display()
    );
    std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
    replace_prediction(&dir.path().join("sample.jsonl"), "q02", "SELECT 1");
    dir
}

/// `text` with the paths that differ between machines and runs replaced by `[repo]`/`[tmp]`.
fn without_paths(text: &str, dir: &Path) -> String {
    text.replace(&dir.display().to_string(), "[tmp]")
        .replace(&repo().display().to_string(), "[repo]")
}

/// Durations written `[   0.208s]` become `[duration]`.
fn without_durations(text: &str) -> String {
    let duration = Regex::new(r"\[\s*\d+\.\d+s\]").unwrap();
    duration.replace_all(text, "[duration]").into_owned()
}

/// The terminal report with its run-to-run differences taken out: the per-test lines (in the
/// order the cases happened to finish) sorted, and the names under `slowest:` (which cases
/// were slowest is timing) replaced by `[test]`.
fn stable_terminal(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut finished: Vec<&str> = Vec::new();
    let mut in_slowest = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("PASS [") || trimmed.starts_with("FAIL [") {
            if out.iter().any(|l| l == "------------") {
                out.push(line.to_string());
            } else {
                finished.push(line);
            }
            continue;
        }
        if line == "------------" {
            finished.sort_by_key(|l| l.split_once("] ").map(|(_, name)| name));
            out.extend(finished.drain(..).map(str::to_string));
        }
        if in_slowest && line.starts_with("  [") {
            let (time, _name) = line.rsplit_once(' ').unwrap();
            out.push(format!("{time} [test]"));
            continue;
        }
        in_slowest = line == "slowest:";
        out.push(line.to_string());
    }
    out.join("\n") + "\n"
}

#[test]
fn terminal_report_junit_and_step_summary() {
    let dir = failing_demo();
    let summary = dir.path().join("summary.md");
    let run = sqlgate()
        .args(["test", "--junit", "junit.xml"])
        .current_dir(dir.path())
        .env("GITHUB_STEP_SUMMARY", &summary)
        .run();
    run.assert_code(100);
    assert_eq!(
        run.stderr, "error: test run failed: 1 test failed\n",
        "the report goes to stdout, the reason for the exit code to stderr"
    );
    let terminal = stable_terminal(&without_durations(&without_paths(&run.stdout, dir.path())));
    insta::assert_snapshot!("terminal", terminal);

    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    let times = Regex::new(r#"\b(time|timestamp)="[^"]*""#).unwrap();
    let junit = without_paths(&times.replace_all(&junit, "$1=\"[time]\""), dir.path());
    insta::assert_snapshot!("junit", junit);

    let summary = without_paths(&std::fs::read_to_string(&summary).unwrap(), dir.path());
    insta::assert_snapshot!("step_summary", summary);
}

#[test]
fn libtest_json_events() {
    let dir = failing_demo();
    let run = sqlgate()
        .args(["test", "--message-format", "libtest-json"])
        .current_dir(dir.path())
        .run();
    run.assert_code(100);
    let exec_time = Regex::new(r#""exec_time":[0-9.e-]+"#).unwrap();
    let mut events: Vec<(String, bool, String)> = run
        .stdout
        .lines()
        .map(|line| {
            let event: serde_json::Value =
                serde_json::from_str(line).expect("every stdout line is a JSON event");
            let name = event["name"].as_str().unwrap_or_default().to_string();
            let redacted = exec_time.replace(line, r#""exec_time":"[time]""#);
            (name, event["event"] != "started", redacted.into_owned())
        })
        .collect();
    // The suite's `started` comes first and its result last; the tests' events in between
    // come in the order the cases happened to run, so they are sorted by test name.
    let last = events.len() - 1;
    events[1..last].sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let events: String = events
        .iter()
        .map(|(_, _, line)| format!("{line}\n"))
        .collect();
    insta::assert_snapshot!("libtest_json", without_paths(&events, dir.path()));
}

/// The subcommands a `--help` lists under `Commands:` (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn help_of_every_command() {
    let mut pages = Vec::new();
    let mut pending = vec![Vec::<String>::new()];
    while let Some(path) = pending.pop() {
        let run = sqlgate().args(&path).arg("--help").run();
        run.assert_success();
        for sub in subcommands(&run.stdout).into_iter().rev() {
            let mut deeper = path.clone();
            deeper.push(sub);
            pending.push(deeper);
        }
        let command: Vec<&str> = std::iter::once("sqlgate")
            .chain(path.iter().map(String::as_str))
            .collect();
        pages.push(format!("=== {} --help\n{}", command.join(" "), run.stdout));
    }
    assert!(pages.len() >= 15, "{} help pages", pages.len());
    insta::assert_snapshot!("help", pages.join("\n"));
}

#[test]
fn score_text_and_json() {
    let score = |format: &str| {
        let run = sqlgate()
            .args([
                "score",
                "--gold",
                "suite.toml",
                "--pred",
                "predictions/sample.jsonl",
            ])
            .args(["--format", format])
            .current_dir(demo(""))
            .run();
        run.assert_success();
        without_paths(&run.stdout, &demo(""))
    };
    insta::assert_snapshot!("score_text", score("text"));
    insta::assert_snapshot!("score_json", score("json"));
}

#[test]
fn diff_of_a_regression_in_every_format() {
    let dir = failing_demo();
    sqlgate()
        .args(["test", "--accept"])
        .current_dir(dir.path())
        .run()
        .assert_code(0);
    for format in ["text", "markdown", "json"] {
        let run = sqlgate()
            .arg("diff")
            .arg(repo().join("snapshots/demo.snap"))
            .arg(dir.path().join("snapshots/demo.snap"))
            .args(["--format", format])
            .run();
        run.assert_success();
        let name = format!("diff_{format}");
        insta::assert_snapshot!(name, without_paths(&run.stdout, dir.path()));
    }
}

#[test]
fn messages_of_bad_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write(
        "bad.jsonl",
        "{\"id\": \"q01\", \"sql\": \"SELECT 1\"}\nnot json\n",
    );
    write("sqlgate.toml", "[[suite]]\nbenchmark = 3\n");
    write(
        "unknown.toml",
        "[[suite]]\nbenchmark = \"b.jsonl\"\ncolour = \"red\"\n",
    );
    let gold = demo("suite.toml");
    let gold = gold.to_str().unwrap();
    let cases: [(&str, Vec<&str>); 5] = [
        (
            "a gold file that is not there",
            vec!["score", "--gold", "missing.csv", "--pred", "bad.jsonl"],
        ),
        (
            "a predictions line that is not JSON",
            vec!["score", "--gold", gold, "--pred", "bad.jsonl"],
        ),
        ("a value of the wrong type in sqlgate.toml", vec!["test"]),
        (
            "an unknown key in sqlgate.toml",
            vec!["test", "--config", "unknown.toml"],
        ),
        (
            "an unknown mode",
            vec![
                "score",
                "--gold",
                gold,
                "--pred",
                "bad.jsonl",
                "--mode",
                "loose",
            ],
        ),
    ];
    let mut messages = String::new();
    for (what, args) in cases {
        let run = sqlgate().args(&args).current_dir(dir.path()).run();
        assert_eq!(run.code(), Some(2), "{what}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{what}: {}", run.stdout);
        messages.push_str(&format!("=== {what}\n{}", run.stderr));
    }
    insta::assert_snapshot!("bad_inputs", without_paths(&messages, dir.path()));
}

#[test]
fn audit_of_the_demo_in_text_and_json() {
    let audit = |format: &str| {
        let run = sqlgate()
            .args(["audit", "--gold", "suite.toml", "--format", format])
            .current_dir(demo(""))
            .run();
        run.assert_success();
        without_paths(&run.stdout, &demo(""))
    };
    insta::assert_snapshot!("audit_text", audit("text"));
    insta::assert_snapshot!("audit_json", audit("json"));
}

/// What a reader of the HTML report sees: the page's text without its markup, scripts and
/// styles, a line per block, with the run's date and durations redacted.
fn visible_text(html: &str) -> String {
    let hidden = Regex::new(r"(?s)<(script|style)\b.*?</(script|style)>").unwrap();
    let block = Regex::new(
        r"(?i)</?(p|div|h[1-6]|li|tr|table|section|details|summary|pre|br|text|title)\b[^>]*>",
    )
    .unwrap();
    let tag = Regex::new(r"<[^>]*>").unwrap();
    let text = hidden.replace_all(html, "");
    let text = block.replace_all(&text, "\n");
    let text = tag.replace_all(&text, " ");
    let date = Regex::new(r"\w{3}, \d{1,2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT").unwrap();
    let seconds = Regex::new(r"\b\d+(\.\d+)?\s?(ms|s)\b").unwrap();
    let entity = Regex::new(r"&#(x[0-9a-fA-F]+|[0-9]+);").unwrap();
    let text = entity.replace_all(&text, |found: &regex::Captures| {
        let code = &found[1];
        let number = match code.strip_prefix('x') {
            Some(hex) => u32::from_str_radix(hex, 16),
            None => code.parse(),
        };
        number
            .ok()
            .and_then(char::from_u32)
            .map_or_else(|| found[0].to_string(), String::from)
    });
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let text = date.replace_all(&text, "[date]");
    let text = seconds.replace_all(&text, "[duration]");
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn html_report_text() {
    let dir = failing_demo();
    let run = sqlgate()
        .args(["test", "--html", "report.html"])
        // The page names the commit a GitHub workflow runs on.
        .env_remove("GITHUB_SHA")
        .env_remove("GITHUB_WORKSPACE")
        .current_dir(dir.path())
        .run();
    run.assert_code(100);
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    insta::assert_snapshot!("html_text", without_paths(&visible_text(&html), dir.path()));
}
