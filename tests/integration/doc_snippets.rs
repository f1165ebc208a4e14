//! The TOML snippets of the README and docs/*.md work as written: each is valid TOML, and each
//! piece of a `sqlgate.toml` (a whole configuration, a `[[system]]`, a system's or a suite's
//! keys) passes the configuration's own checks once placed where it goes. docs/config.md's
//! reference block loads as a whole in a folder holding the demo, as a user pasting it sees.

use std::path::{Path, PathBuf};

use sqlgate::config::Config;

use crate::support::{repo, sqlgate};

/// (file, line of the opening fence, block) for every ```toml block of the README and docs.
fn toml_blocks() -> Vec<(PathBuf, usize, String)> {
    let mut blocks = Vec::new();
    for file in crate::support::doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut open: Option<(usize, String)> = None;
        for (n, line) in text.lines().enumerate() {
            let fence = line.trim_start();
            match &mut open {
                None if fence == "```toml" => open = Some((n + 1, String::new())),
                Some((start, block)) if fence.starts_with("```") => {
                    blocks.push((file.clone(), *start, std::mem::take(block)));
                    open = None;
                }
                Some((_, block)) => {
                    block.push_str(line);
                    block.push('\n');
                }
                None => {}
            }
        }
    }
    blocks
}

/// What a block is, by its keys: a piece of `sqlgate.toml`, or another file's TOML (a native
/// suite's manifest, Cargo.toml), which is only parsed.
fn configuration_of(block: &str) -> Option<Vec<String>> {
    let has = |line: &str| block.lines().any(|l| l.trim_start().starts_with(line));
    let suite = "[[suite]]\nbenchmark = \"benchmarks/demo/suite.toml\"\n";
    let families = "families = { tqa-ll = \"tqa-ll.jsonl\", para = \"para.jsonl\" }\n";
    let replay = "[[system]]\nname = \"doc\"\ntype = \"replay\"\npredictions = \"p.jsonl\"\n";
    if has("[[test]]") || has("cases =") || has("[join_keys]") {
        None
    } else if has("[[suite]]") {
        Some(vec![block.to_string()])
    } else if has("[[system]]") {
        Some(vec![format!("{suite}{block}")])
    } else if has("type =") {
        Some(vec![format!("{suite}[[system]]\nname = \"doc\"\n{block}")])
    } else if has("predictions =") {
        Some(vec![format!(
            "{suite}[[system]]\nname = \"doc\"\ntype = \"replay\"\n{block}"
        )])
    } else {
        // A system's keys or a suite's: either placement may take it.
        Some(vec![
            format!("{suite}{replay}{block}"),
            format!("{suite}{families}{block}"),
        ])
    }
}

#[test]
fn every_toml_snippet_of_the_docs_is_valid_where_it_goes() {
    let blocks = toml_blocks();
    assert!(blocks.len() >= 25, "{} blocks", blocks.len());
    let mut problems = Vec::new();
    let mut checked = 0;
    for (file, line, block) in &blocks {
        let place = format!("{}:{line}", file.display());
        if let Err(error) = toml::from_str::<toml::Value>(block) {
            problems.push(format!("{place}: not TOML: {error}"));
            continue;
        }
        let Some(placements) = configuration_of(block) else {
            continue;
        };
        // DuckDB is a cargo feature: its snippets are checked in the build that has it.
        if block.contains("engine = \"duckdb\"") && !cfg!(feature = "duckdb") {
            println!("{place}: needs the cargo feature `duckdb`, not checked");
            continue;
        }
        checked += 1;
        let tried = placements.len();
        let errors: Vec<String> = placements
            .into_iter()
            .filter_map(|text| {
                Config::parse(Path::new("sqlgate.toml"), text)
                    .err()
                    .map(|e| e.to_string())
            })
            .collect();
        if errors.len() == tried {
            problems.push(format!("{place}: {}", errors.join(" / ")));
        }
    }
    assert!(checked >= 20, "{checked} configuration snippets");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// docs/config.md's first block, every key of `sqlgate.toml`, pasted as it is beside the
/// demo: `sqlgate test --list` loads it and lists its tests.
#[test]
fn the_reference_configuration_loads_as_pasted() {
    let (_, _, reference) = toml_blocks()
        .into_iter()
        .find(|(file, _, _)| file.ends_with("docs/config.md"))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(repo().join("benchmarks"), dir.path().join("benchmarks")).unwrap();
    std::fs::write(dir.path().join("sqlgate.toml"), &reference).unwrap();
    let run = sqlgate()
        .args(["test", "--list"])
        .current_dir(dir.path())
        .run();
    run.assert_success();
    assert!(run.stdout.contains("demo::bookshop::q01"), "{}", run.stdout);
    assert!(
        run.stdout.contains("demo::gate::tqa-ll::drop"),
        "{}",
        run.stdout
    );
}

/// docs/commands.md's sample of `sqlgate test` on the repository's own configuration: the
/// counts and gate lines it shows are what the command prints (times aside).
#[test]
fn the_sample_run_of_the_commands_doc_is_what_the_gate_prints() {
    let doc = std::fs::read_to_string(repo().join("docs/commands.md")).unwrap();
    let sample: Vec<&str> = doc
        .lines()
        .skip_while(|line| !line.contains("Starting "))
        .take_while(|line| !line.starts_with("```"))
        .filter(|line| !line.trim().starts_with("...") && !line.contains("-----"))
        .collect();
    assert!(sample.len() >= 5, "{sample:?}");
    let run = sqlgate()
        .args(["test", "--no-cache", "--color", "never"])
        .current_dir(repo())
        .run();
    run.assert_success();
    let without_times = |line: &str| match (line.find('['), line.find(']')) {
        (Some(open), Some(close)) if open < close => {
            format!("{}{}", &line[..open], &line[close + 1..])
        }
        _ => line.to_string(),
    };
    let printed: Vec<String> = run.stdout.lines().map(without_times).collect();
    for line in sample {
        let wanted = without_times(line);
        assert!(
            printed.contains(&wanted),
            "docs/commands.md shows `{line}`; the run printed:\n{}",
            run.stdout
        );
    }
}

/// docs/tqa.md's table of the TQA families against their seeds is the one the gate prints for
/// the repository's `demo-tqa` suite.
#[test]
fn the_tqa_family_table_of_the_docs_is_what_the_gate_prints() {
    let doc = std::fs::read_to_string(repo().join("docs/tqa.md")).unwrap();
    let table: Vec<&str> = doc
        .lines()
        .skip_while(|line| !line.starts_with("demo-tqa: families against their seeds"))
        .take_while(|line| !line.starts_with("```"))
        .collect();
    assert_eq!(table.len(), 6, "{table:?}");
    let run = sqlgate()
        .args(["test", "demo-tqa", "--no-cache", "--color", "never"])
        .current_dir(repo())
        .run();
    run.assert_success();
    let printed: Vec<&str> = run.stdout.lines().collect();
    let at = printed.iter().position(|line| *line == table[0]);
    let shown = at.map(|at| &printed[at..(at + table.len()).min(printed.len())]);
    assert_eq!(shown, Some(&table[..]), "{}", run.stdout);
}

/// docs/gate-outputs.md: a snapshot line's metrics are `ex` first, the others in alphabetical
/// order of their keys, as the committed snapshots show.
#[test]
fn snapshot_metrics_come_in_the_documented_order() {
    let mut lines = 0;
    for entry in std::fs::read_dir(repo().join("snapshots")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "snap") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines().filter(|l| l.contains(" | ")) {
            let keys: Vec<&str> = line
                .split(" | ")
                .skip(3)
                .map_while(|field| field.split_once('=').map(|(key, _)| key))
                .filter(|key| !key.contains(' '))
                .collect();
            assert_eq!(keys.first(), Some(&"ex"), "{}: {line}", path.display());
            assert!(keys[1..].is_sorted(), "{}: {line}", path.display());
            lines += 1;
        }
    }
    assert!(lines >= 100, "{lines} snapshot lines");
}

/// Whether every key of `shown` is in `actual` with the same value, `"..."` keys and list items
/// standing for what the doc leaves out.
fn json_within(shown: &serde_json::Value, actual: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (shown, actual) {
        (Value::Object(shown), Value::Object(actual)) => shown
            .iter()
            .filter(|(key, _)| key.as_str() != "...")
            .all(|(key, value)| actual.get(key).is_some_and(|a| json_within(value, a))),
        (Value::Array(shown), Value::Array(actual)) => shown
            .iter()
            .filter(|item| item.as_str() != Some("..."))
            .zip(actual)
            .all(|(shown, actual)| json_within(shown, actual)),
        (shown, actual) => shown == actual,
    }
}

/// docs/commands.md's `score --format json` example is, key for key, what the command it names
/// prints.
#[test]
fn the_score_json_example_is_what_score_prints() {
    let doc = std::fs::read_to_string(repo().join("docs/commands.md")).unwrap();
    let block: String = doc
        .lines()
        .skip_while(|line| *line != "```json")
        .skip(1)
        .take_while(|line| !line.starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n");
    let shown: serde_json::Value = serde_json::from_str(&block).unwrap();
    let run = sqlgate()
        .args(["score", "--gold", "benchmarks/demo/suite.toml", "--pred"])
        .args([
            "benchmarks/demo/predictions/sample.jsonl",
            "--format",
            "json",
        ])
        .current_dir(repo())
        .run();
    run.assert_success();
    let actual: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(json_within(&shown, &actual), "{block}\n{}", run.stdout);
}

/// docs/reliability.md's text output of RS: each line it shows (the elided rows aside) is what
/// `score --penalty 1000` prints for the demo's sample answers.
#[test]
fn the_rs_output_of_the_reliability_doc_is_what_score_prints() {
    let doc = std::fs::read_to_string(repo().join("docs/reliability.md")).unwrap();
    let shown: Vec<&str> = doc
        .lines()
        .skip_while(|line| *line != "Text output:")
        .skip(3)
        .take_while(|line| !line.starts_with("```"))
        .filter(|line| !line.is_empty() && *line != "...")
        .collect();
    assert!(shown.len() >= 4, "{shown:?}");
    let run = sqlgate()
        .args([
            "score",
            "--gold",
            "suite.toml",
            "--pred",
            "predictions/sample.jsonl",
        ])
        .args(["--penalty", "1000"])
        .current_dir(crate::support::demo(""))
        .run();
    run.assert_success();
    for line in shown {
        assert!(
            run.stdout.lines().any(|printed| printed == line),
            "docs/reliability.md shows `{line}`; score printed:\n{}",
            run.stdout
        );
    }
}

/// docs/scale.md's reuse line: this repository's `sqlgate test` run again after one answer
/// changed, in a copy of its demo, says what the doc shows.
#[test]
fn the_reuse_line_of_the_scale_doc_is_what_a_second_run_prints() {
    let doc = std::fs::read_to_string(repo().join("docs/scale.md")).unwrap();
    let shown = doc
        .lines()
        .find(|line| line.starts_with("reused "))
        .expect("docs/scale.md shows a reuse line");
    let dir = crate::support::repository_gate_copy();
    let test = || sqlgate().arg("test").current_dir(dir.path()).run();
    test().assert_success();
    let answers = dir.path().join("benchmarks/demo/predictions/sample.jsonl");
    let text = std::fs::read_to_string(&answers).unwrap();
    let changed: Vec<String> = text
        .lines()
        .map(|line| {
            let mut answer: serde_json::Value = serde_json::from_str(line).unwrap();
            if answer["id"] == "q01" {
                let sql = answer["sql"].as_str().unwrap().trim_end_matches(';').trim();
                answer["sql"] = format!("{sql} LIMIT 100000").into();
            }
            answer.to_string()
        })
        .collect();
    assert_ne!(changed.join("\n"), text.trim_end());
    std::fs::write(&answers, changed.join("\n") + "\n").unwrap();
    let again = test();
    again.assert_success();
    assert!(
        again.text().lines().any(|line| line == shown),
        "docs/scale.md shows `{shown}`; the run printed:\n{}",
        again.text()
    );
}
