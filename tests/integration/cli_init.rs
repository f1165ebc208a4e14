//! `sqlgate init`: from a team's benchmark to a committed baseline. The README's walk-through
//! ("Gate your own system") runs here as written, in a folder holding a SQLite database, a
//! Defog-style questions CSV and a predictions file with one wrong answer.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{binary_in_use, repo, sqlgate, Run};

/// The files `sqlgate init` writes.
const WRITTEN: [&str; 3] = [
    "sqlgate.toml",
    ".github/workflows/sqlgate.yml",
    ".gitignore",
];

/// A team's project before the gate: `db/shop.sqlite`, `questions.csv` (Defog's columns, three
/// questions) and `predictions.jsonl` answering all three, the second one wrongly.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("db")).unwrap();
    let db = rusqlite::Connection::open(dir.path().join("db/shop.sqlite")).unwrap();
    db.execute_batch(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT);
         INSERT INTO customers VALUES (1, 'Ada', 'Paris'), (2, 'Bob', 'Oslo'), (3, 'Cy', 'Paris');",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("questions.csv"),
        "db_name,query_category,query,question\n\
         shop,count,SELECT COUNT(*) FROM customers,How many customers are there?\n\
         shop,filter,SELECT name FROM customers WHERE city = 'Paris',Which customers live in Paris?\n\
         shop,group_by,\"SELECT city, COUNT(*) FROM customers GROUP BY city\",How many customers live in each city?\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("predictions.jsonl"),
        "{\"id\": \"0\", \"sql\": \"SELECT COUNT(*) FROM customers\"}\n\
         {\"id\": \"1\", \"sql\": \"SELECT name FROM customers WHERE city = 'Oslo'\"}\n\
         {\"id\": \"2\", \"sql\": \"SELECT city, COUNT(id) FROM customers GROUP BY city\"}\n",
    )
    .unwrap();
    dir
}

fn run_in(dir: &Path, args: &[&str]) -> Run {
    sqlgate().args(args).current_dir(dir).run()
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file))
        .unwrap_or_else(|error| panic!("reading {file}: {error}"))
}

/// The README's walk-through: the first fenced `sh` block of its "Gate your own system".
fn walkthrough() -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = readme
        .split("\n## Gate your own system\n")
        .nth(1)
        .expect("the README has a section \"Gate your own system\"");
    let section = section.split("\n## ").next().unwrap();
    let block = section
        .split("\n```sh\n")
        .nth(1)
        .expect("the section has an `sh` block");
    let block = block.split("\n```").next().unwrap();
    block.lines().map(str::to_string).collect()
}

/// The exit code a walk-through line's comment announces (`# exit 100: ...`), else 0.
fn announced_exit(line: &str) -> i32 {
    let comment = line.split_once(" #").map_or("", |(_, comment)| comment);
    let after = comment.split_once("exit ").map_or("", |(_, after)| after);
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or(0)
}

/// `git` in `dir`, with a fixed identity and none of the machine's own settings (a global
/// config asking to sign commits would stop the commit).
fn git(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command.current_dir(dir);
    isolated_git(&mut command);
    command
}

fn isolated_git(command: &mut Command) {
    command
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "sqlgate")
        .env("GIT_AUTHOR_EMAIL", "sqlgate@example.com")
        .env("GIT_COMMITTER_NAME", "sqlgate")
        .env("GIT_COMMITTER_EMAIL", "sqlgate@example.com");
}

fn git_available() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// A walk-through line run by `sh` as a reader would type it, with the `sqlgate` these tests
/// built first on the PATH and none of the CI variables of the machine running the tests.
fn shell(dir: &Path, line: &str) -> std::process::Output {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_sqlgate"));
    let path = format!(
        "{}:{}",
        binary.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("sh");
    command
        .args(["-c", line])
        .current_dir(dir)
        .env("PATH", path);
    for variable in ["CI", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"] {
        command.env_remove(variable);
    }
    isolated_git(&mut command);
    let _in_use = binary_in_use();
    command.output().expect("sh runs")
}

/// Every command of the README's block, in a fresh project: `sqlgate` lines exit as their
/// comments say; `git` lines run too, in a repository made for the test, except `git push`,
/// which needs a remote. The commit is then checked to hold the whole baseline: nothing is
/// left untracked, and a clone of it passes the CI gate. Without git, the `git` lines are
/// skipped (a note says so) and the files `git add` names are checked to exist.
#[test]
fn the_readme_walkthrough_reaches_a_committed_baseline() {
    let dir = project();
    let lines = walkthrough();
    let with_git = git_available();
    if with_git {
        assert!(git(dir.path())
            .args(["init", "-q"])
            .status()
            .unwrap()
            .success());
    } else {
        eprintln!("note: git is not installed; the walk-through's git lines are skipped");
    }
    let mut ran = Vec::new();
    for line in &lines {
        let command = line.split(" #").next().unwrap().trim();
        let words: Vec<&str> = command.split_whitespace().collect();
        let program = words
            .iter()
            .find(|word| !word.contains('='))
            .copied()
            .unwrap_or_default();
        match program {
            "sqlgate" => {}
            "git" if words.get(1) == Some(&"add") && !with_git => {
                for file in &words[2..] {
                    assert!(dir.path().join(file).exists(), "`{command}`: no {file}");
                }
                continue;
            }
            "git" if !with_git || words.get(1) == Some(&"push") => continue,
            "git" => {}
            _ => panic!("the walk-through runs only sqlgate and git: `{line}`"),
        }
        let output = shell(dir.path(), command);
        let expected = if program == "git" {
            0
        } else {
            announced_exit(line)
        };
        assert_eq!(
            output.status.code(),
            Some(expected),
            "`{line}`\n--- stdout\n{}\n--- stderr\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        ran.push(command.to_string());
    }
    // The scenario the section describes, whatever its wording.
    let first_test = ran.iter().position(|c| c == "sqlgate test");
    let accept = ran.iter().position(|c| c == "sqlgate test --accept");
    assert!(ran[0].starts_with("sqlgate init --benchmark questions.csv"));
    assert!(first_test.is_some() && first_test < accept, "{ran:?}");
    assert!(ran.contains(&"CI=true sqlgate test --profile ci".to_string()));
    assert!(dir.path().join(".github/workflows/sqlgate.yml").is_file());
    assert!(read(dir.path(), "snapshots/questions.snap").contains("questions::shop::1 | fail"));
    if !with_git {
        return;
    }
    assert!(ran.iter().any(|c| c.starts_with("git commit")), "{ran:?}");
    let status = git(dir.path())
        .args(["status", "--porcelain", "--untracked-files=all"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        "",
        "the commit leaves files out"
    );
    // What CI checks out: the commit alone, without the cache.
    let clone = tempfile::tempdir().unwrap();
    let cloned = git(clone.path())
        .args(["clone", "-q"])
        .arg(dir.path())
        .arg("work")
        .status()
        .unwrap();
    assert!(cloned.success());
    let work = clone.path().join("work");
    assert!(!work.join(".sqlgate").exists());
    sqlgate()
        .args(["test", "--profile", "ci"])
        .env("CI", "true")
        .current_dir(&work)
        .run()
        .assert_success();
}

#[test]
fn init_measures_the_predictions_and_says_what_the_first_run_will_show() {
    let dir = project();
    let run = run_in(
        dir.path(),
        &[
            "init",
            "--benchmark",
            "questions.csv",
            "--db-dir",
            "db",
            "--predictions",
            "predictions.jsonl",
        ],
    );
    run.assert_success();
    assert!(
        run.stdout
            .contains("benchmark: questions.csv (format defog, detected; 3 cases;"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "predictions: predictions.jsonl answers 3 of 3 cases: ex = 0.6667 over 3 feasible cases"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("The first run fails every wrong answer (1 case here: exit 100)"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(
        "git add sqlgate.toml snapshots/ .github/workflows/sqlgate.yml .gitignore questions.csv db predictions.jsonl"
    ));
    let config = read(dir.path(), "sqlgate.toml");
    for line in [
        "name = \"questions\"\n",
        "benchmark = \"questions.csv\"\n",
        "db_dir = \"db\"\n",
        "type = \"replay\"\n",
        "predictions = \"predictions.jsonl\"\n",
        "[profile.ci]\n",
        "ex = 0.6667 over 3 feasible cases",
        "\ngate = { ex = \">= 0.65\" }\n",
    ] {
        assert!(config.contains(line), "{line:?} not in\n{config}");
    }
    assert_eq!(
        read(dir.path(), ".gitignore").matches(".sqlgate/").count(),
        1
    );
    // The threshold is what the gate computes on these predictions, just below it: one more
    // wrong answer takes the gate under.
    sqlgate()
        .args(["test", "--profile", "ci", "questions::gate::"])
        .current_dir(dir.path())
        .run()
        .assert_success();
    crate::support::replace_prediction(&dir.path().join("predictions.jsonl"), "0", "SELECT 0");
    let worse = sqlgate()
        .args(["test", "--profile", "ci", "questions::gate::"])
        .current_dir(dir.path())
        .run();
    worse.assert_code(100);
    assert!(
        worse.text().contains("ex = 0.3333 does not meet >= 0.65"),
        "{}",
        worse.text()
    );
}

#[test]
fn an_existing_file_is_never_overwritten_and_nothing_is_written() {
    for existing in ["sqlgate.toml", ".github/workflows/sqlgate.yml"] {
        let dir = project();
        let path = dir.path().join(existing);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "# ours\n").unwrap();
        let run = run_in(
            dir.path(),
            &["init", "--benchmark", "questions.csv", "--db-dir", "db"],
        );
        run.assert_code(2);
        assert!(
            run.stderr.contains(&format!(
                "{existing}: already exists; `sqlgate init` overwrites"
            )),
            "{}",
            run.stderr
        );
        assert_eq!(read(dir.path(), existing), "# ours\n");
        for other in WRITTEN.iter().filter(|file| **file != existing) {
            assert!(!dir.path().join(other).exists(), "{other} was written");
        }
    }
}

#[test]
fn a_failed_write_takes_back_what_was_written() {
    let dir = project();
    // A file where the workflow's folder goes.
    std::fs::write(dir.path().join(".github"), "").unwrap();
    let run = run_in(
        dir.path(),
        &["init", "--benchmark", "questions.csv", "--db-dir", "db"],
    );
    run.assert_code(73);
    assert!(
        run.stderr
            .contains("cannot write .github/workflows/sqlgate.yml"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("sqlgate.toml").exists());
    assert!(!dir.path().join(".gitignore").exists());
}

#[test]
fn the_cache_is_added_to_an_existing_gitignore_once() {
    let dir = project();
    std::fs::write(dir.path().join(".gitignore"), "target\n*.log").unwrap();
    let args = ["init", "--benchmark", "questions.csv", "--db-dir", "db"];
    let first = run_in(dir.path(), &args);
    first.assert_success();
    assert!(first.stdout.contains("added .sqlgate/ to .gitignore"));
    let expected = "target\n*.log\n# sqlgate's cache of query results and verdicts\n.sqlgate/\n";
    assert_eq!(read(dir.path(), ".gitignore"), expected);
    std::fs::remove_file(dir.path().join("sqlgate.toml")).unwrap();
    std::fs::remove_file(dir.path().join(".github/workflows/sqlgate.yml")).unwrap();
    let second = run_in(dir.path(), &args);
    second.assert_success();
    assert!(
        !second.stdout.contains("added .sqlgate/"),
        "{}",
        second.stdout
    );
    assert_eq!(read(dir.path(), ".gitignore"), expected);
}

/// Spider's `dev.json` is told from its keys and its databases found in the nested layout;
/// paths given absolute are written relative to the folder; Spider's `pred.txt` replays.
#[test]
fn a_spider_benchmark_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("database/concert")).unwrap();
    let db =
        rusqlite::Connection::open(dir.path().join("database/concert/concert.sqlite")).unwrap();
    db.execute_batch(
        "CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);
         INSERT INTO singer VALUES (1, 'Ann', 30), (2, 'Bo', 41);",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("dev.json"),
        r#"[{"db_id": "concert", "query": "SELECT count(*) FROM singer", "question": "How many singers are there?"},
            {"db_id": "concert", "query": "SELECT name FROM singer WHERE age > 35", "question": "Who is older than 35?"}]"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("pred.txt"),
        "SELECT count(*) FROM singer\nSELECT name FROM singer WHERE age > 35\n",
    )
    .unwrap();
    let absolute = |file: &str| dir.path().join(file).display().to_string();
    let run = run_in(
        dir.path(),
        &[
            "init",
            "--benchmark",
            &absolute("dev.json"),
            "--db-dir",
            &absolute("database"),
            "--predictions",
            "pred.txt",
        ],
    );
    run.assert_success();
    assert!(
        run.stdout
            .contains("benchmark: dev.json (format spider-json, detected; 2 cases;"),
        "{}",
        run.stdout
    );
    assert!(run
        .stdout
        .contains("The first run passes: every answer is correct."));
    assert!(
        run.stdout
            .contains(".gitignore dev.json database pred.txt\n"),
        "{}",
        run.stdout
    );
    let config = read(dir.path(), "sqlgate.toml");
    for line in [
        "name = \"dev\"\n",
        "benchmark = \"dev.json\"\n",
        "db_dir = \"database\"\n",
        "Format `spider-json` (detected), scored as its own evaluator does (mode `testsuite`)",
        "\ngate = { ex = \">= 1\" }\n",
    ] {
        assert!(config.contains(line), "{line:?} not in\n{config}");
    }
    let test = run_in(dir.path(), &["test", "--profile", "ci"]);
    test.assert_success();
    assert!(test.stdout.contains("dev::concert::1"), "{}", test.stdout);
}

/// Without predictions the file holds commented systems: it loads, and `sqlgate test` stops
/// asking for a system.
#[test]
fn without_predictions_the_gate_asks_for_a_system() {
    let dir = project();
    let run = run_in(
        dir.path(),
        &["init", "--benchmark", "questions.csv", "--db-dir", "db"],
    );
    run.assert_success();
    assert!(
        run.stdout
            .contains("Configure the system under test: uncomment a [[system]] of sqlgate.toml"),
        "{}",
        run.stdout
    );
    let config = read(dir.path(), "sqlgate.toml");
    assert!(config.contains("# type = \"openai\"\n"), "{config}");
    assert!(config.contains("# type = \"command\"\n"), "{config}");
    assert!(
        config.contains("# gate = { ex = \">= 0.5\" }\n"),
        "{config}"
    );
    assert!(!config.contains("\n[[system]]"), "{config}");
    let test = run_in(dir.path(), &["test"]);
    test.assert_code(2);
    assert!(
        test.stderr
            .contains("sqlgate.toml: no [[system]]: nothing answers the questions; configure one"),
        "{}",
        test.stderr
    );
    // The workflow's run stops the same way.
    let ci = run_in(dir.path(), &["test", "--profile", "ci"]);
    ci.assert_code(2);
    assert!(ci.stderr.contains("configure one"), "{}", ci.stderr);
}

#[test]
fn a_bad_benchmark_or_predictions_file_is_named_and_nothing_is_written() {
    let dir = project();
    std::fs::write(
        dir.path().join("questions.csv"),
        "db_name,query\nshop,SELECT 1\n",
    )
    .unwrap();
    let run = run_in(
        dir.path(),
        &["init", "--benchmark", "questions.csv", "--db-dir", "db"],
    );
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("questions.csv: line 1: the header lacks column(s) query_category, question"),
        "{}",
        run.stderr
    );
    for file in WRITTEN {
        assert!(!dir.path().join(file).exists(), "{file} was written");
    }

    let dir = project();
    std::fs::write(
        dir.path().join("predictions.jsonl"),
        "{\"id\": \"0\", \"sq\n",
    )
    .unwrap();
    let run = run_in(
        dir.path(),
        &[
            "init",
            "--benchmark",
            "questions.csv",
            "--db-dir",
            "db",
            "--predictions",
            "predictions.jsonl",
        ],
    );
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("predictions.jsonl: record 0 (line 1): column 15:"),
        "{}",
        run.stderr
    );
    for file in WRITTEN {
        assert!(!dir.path().join(file).exists(), "{file} was written");
    }
}

/// A case the predictions do not answer fails every run, accepted or not: said at once.
#[test]
fn unanswered_cases_are_counted_and_warned_about() {
    let dir = project();
    let path = dir.path().join("predictions.jsonl");
    let text = read(dir.path(), "predictions.jsonl");
    std::fs::write(&path, text.lines().take(2).collect::<Vec<_>>().join("\n")).unwrap();
    let run = run_in(
        dir.path(),
        &[
            "init",
            "--benchmark",
            "questions.csv",
            "--db-dir",
            "db",
            "--predictions",
            "predictions.jsonl",
        ],
    );
    run.assert_success();
    assert!(
        run.stdout
            .contains("predictions.jsonl answers 2 of 3 cases: ex = 0.3333"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains(
            "warning: predictions.jsonl has no answer for 1 case: a case without an answer fails every run"
        ),
        "{}",
        run.stderr
    );
}

/// GitHub reads workflows only at a repository's root: `init` in a subfolder says so.
#[test]
fn a_subfolder_of_a_repository_is_told_where_workflows_go() {
    let repository = tempfile::tempdir().unwrap();
    std::fs::create_dir(repository.path().join(".git")).unwrap();
    let dir = project();
    let app = repository.path().join("app");
    std::fs::rename(dir.path(), &app).unwrap();
    let run = run_in(
        &app,
        &["init", "--benchmark", "questions.csv", "--db-dir", "db"],
    );
    run.assert_success();
    assert!(
        run.stderr
            .contains("warning: this folder is inside the repository at")
            && run
                .stderr
                .contains("give the action `working-directory: app`"),
        "{}",
        run.stderr
    );
}

/// A file name is data, never configuration (issue 38): one carrying TOML lines, written into a
/// comment of `sqlgate.toml`, added a `[[system]]` that `CI=true sqlgate test` ran. A name with
/// a line break is refused and nothing is written; one with quotes, `#`, `${{ }}`, backticks
/// and `$(...)` is written as a TOML string that reads back as itself, quoted in the `git add`
/// line, and nothing it holds runs.
#[test]
fn a_file_name_never_becomes_configuration_or_a_command() {
    let dir = project();
    let injected = "p\nsystem = \"x\"\n[[system]]\nname = \"x\"\ntype = \"command\"\n\
                    command = [\"sh\", \"-c\", \"touch PWNED\"]\n[profile.other]\n#.jsonl";
    let quoted = "p \"q\" # ${{ github.token }} `touch PWNED` $(touch PWNED) 'x'.jsonl";
    for name in [injected, quoted] {
        std::fs::copy(dir.path().join("predictions.jsonl"), dir.path().join(name)).unwrap();
    }
    let init = |predictions: &str| {
        let args = ["init", "--benchmark", "questions.csv", "--db-dir", "db"];
        run_in(
            dir.path(),
            &[&args[..], &["--predictions", predictions]].concat(),
        )
    };
    let gate = || {
        sqlgate()
            .args(["test", "--profile", "ci", "--record", "new"])
            .env("CI", "true")
            .current_dir(dir.path())
            .run()
    };

    let run = init(injected);
    run.assert_code(2);
    assert!(
        run.stderr.contains("control character U+000A"),
        "{}",
        run.stderr
    );
    for file in WRITTEN {
        assert!(!dir.path().join(file).exists(), "{file} was written");
    }
    gate();
    assert!(!dir.path().join("PWNED").exists());

    let run = init(quoted);
    run.assert_success();
    let config: toml::Table = read(dir.path(), "sqlgate.toml").parse().unwrap();
    let systems = config["system"].as_array().unwrap();
    assert_eq!(systems.len(), 1, "{config}");
    assert_eq!(systems[0]["type"].as_str(), Some("replay"));
    assert_eq!(systems[0]["predictions"].as_str(), Some(quoted));
    let profile = config["profile"].as_table().unwrap();
    assert_eq!(profile.keys().collect::<Vec<_>>(), ["ci"], "{config}");
    // The `git add` line, given to a shell, names each file as it is.
    let add = run
        .stdout
        .lines()
        .find_map(|line| line.trim().strip_prefix("git add "))
        .expect("a git add line");
    let words = shell(dir.path(), &format!("printf '%s\\n' {add}"));
    let words = String::from_utf8_lossy(&words.stdout).into_owned();
    assert_eq!(words.lines().last(), Some(quoted), "{add}");
    gate().assert_code(100);
    assert!(!dir.path().join("PWNED").exists());
}
