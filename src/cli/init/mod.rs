//! `sqlgate init`: a gate over a team's own benchmark, from nothing to a committed baseline.
//! Writes a commented `sqlgate.toml` (the suite, the system under test, the CI profile's
//! starting threshold), `.github/workflows/sqlgate.yml` running it on every pull request, and
//! `.sqlgate/` in `.gitignore`, all in the current folder; then prints the steps to the first
//! accepted snapshot.

mod config_file;
mod measure;
mod scaffold;
mod workflow;

use std::path::{Path, PathBuf};

use clap::Args;

use config_file::{StartingGate, SuiteEntry, SystemEntry};
use measure::Measured;
use scaffold::Planned;
use sqlgate::config::Config;
use sqlgate::gate::setup;
use sqlgate::report::plural;
use sqlgate::Error;
use sqlgate_eval::error::{check_printable, is_plain_name};
use sqlgate_eval::loaders::{self, LoadOptions};

#[derive(Args)]
pub struct InitArgs {
    /// The benchmark to gate: any gold file `sqlgate score` reads (its format is detected).
    #[arg(long, value_name = "FILE")]
    benchmark: PathBuf,
    /// Folder holding `<db>.sqlite` or `<db>/<db>.sqlite` (default: beside the benchmark).
    #[arg(long, value_name = "DIR")]
    db_dir: Option<PathBuf>,
    /// Predictions answering the cases (any format `sqlgate score --pred` reads): the system
    /// under test replays them, and the CI threshold starts at what they score.
    #[arg(long, value_name = "FILE")]
    predictions: Option<PathBuf>,
}

const CONFIG_FILE: &str = "sqlgate.toml";
const WORKFLOW_FILE: &str = ".github/workflows/sqlgate.yml";
const GITIGNORE: &str = ".gitignore";
/// The profile the workflow runs, holding the thresholds.
const CI_PROFILE: &str = "ci";

pub fn run(args: InitArgs) -> Result<(), Error> {
    let (config_path, workflow_path) = (Path::new(CONFIG_FILE), Path::new(WORKFLOW_FILE));
    scaffold::refuse_existing(&[config_path, workflow_path])?;
    let here = std::env::current_dir()
        .map_err(|e| Error::Usage(format!("cannot read the current folder: {e}")))?;
    let options = LoadOptions {
        db_dir: args.db_dir.clone(),
        ..LoadOptions::on(sqlgate_engine_sqlite::files())
    };
    let bench = loaders::load(&args.benchmark, &options)?;
    refuse_unprintable(&args, &here, &bench.name)?;
    let suite = SuiteEntry {
        name: bench.name.clone(),
        benchmark: as_written(&args.benchmark, &here),
        db_dir: args.db_dir.as_deref().map(|dir| as_written(dir, &here)),
        format: bench.format,
        mode: bench.format.default_mode(),
        cases: bench.cases.len(),
    };
    println!(
        "benchmark: {} (format {}, detected; {}; databases in {})",
        suite.benchmark,
        config_file::format_name(suite.format),
        plural(suite.cases, "case"),
        bench.db_dir.display()
    );
    let (system, gate, measured) = match &args.predictions {
        None => (SystemEntry::Templates, StartingGate::Unmeasured, None),
        Some(path) => {
            let (system, gate, measured) = replay(path, &here, &suite)?;
            (system, gate, Some(measured))
        }
    };
    let config = render(&suite, &system, &gate);
    generated(check_loads(&config))?;
    let new = [
        Planned {
            path: config_path.to_path_buf(),
            contents: config,
        },
        Planned {
            path: workflow_path.to_path_buf(),
            contents: workflow::render(CI_PROFILE),
        },
    ];
    let gitignore = scaffold::ignore_cache(Path::new(GITIGNORE))?;
    scaffold::write_all(&new, gitignore.as_ref())?;
    println!(
        "wrote {CONFIG_FILE}: suite `{}`, {}",
        suite.name,
        describe(&system, &gate)
    );
    println!(
        "wrote {WORKFLOW_FILE}: the gate (profile {CI_PROFILE}) on every pull request, through {}",
        workflow::ACTION
    );
    if gitignore.is_some() {
        println!("added .sqlgate/ to {GITIGNORE}: the cache of query results and verdicts");
    }
    warn_outside_repository_root(&here);
    println!("\n{}", next_steps(&args, &here, &suite, measured.as_ref()));
    Ok(())
}

/// The system replaying `predictions`, measured: its starting threshold and what the first run
/// will show.
fn replay(
    predictions: &Path,
    here: &Path,
    suite: &SuiteEntry,
) -> Result<(SystemEntry, StartingGate, Measured), Error> {
    let written = as_written(predictions, here);
    let system = SystemEntry::Replay {
        name: system_name(predictions),
        predictions: written.clone(),
    };
    let text = render(suite, &system, &StartingGate::Unmeasured);
    let measured = generated(
        Config::parse(Path::new(CONFIG_FILE), text)
            .map_err(Error::from)
            .and_then(measure::measure),
    )?;
    report_measure(&written, &measured);
    let gate = match measured.ex {
        Some(ex) => StartingGate::Measured {
            ex,
            cases: measured.feasible,
        },
        None => StartingGate::Unmeasured,
    };
    Ok((system, gate, measured))
}

fn render(suite: &SuiteEntry, system: &SystemEntry, gate: &StartingGate) -> String {
    config_file::render(suite, system, gate, CI_PROFILE, workflow::repository())
}

/// Loads `text` as `sqlgate test --profile ci` does: the configuration, the profile and the
/// suite with its thresholds (the system was built when the predictions were measured).
fn check_loads(text: &str) -> Result<(), Error> {
    let config = Config::parse(Path::new(CONFIG_FILE), text.to_string())?;
    let profile = config.profile(CI_PROFILE)?;
    setup::suites(&config, &profile)?;
    Ok(())
}

/// The paths init writes and prints, and the suite's name (the benchmark's file name, which
/// the comments and the next steps show), must not hold a control character: a line break
/// would start a line of its own in `sqlgate.toml`'s comments and in a CI log.
fn refuse_unprintable(args: &InitArgs, here: &Path, suite: &str) -> Result<(), Error> {
    let paths = [
        ("--benchmark", Some(&args.benchmark)),
        ("--db-dir", args.db_dir.as_ref()),
        ("--predictions", args.predictions.as_ref()),
    ];
    for (option, path) in paths {
        if let Some(path) = path {
            check_printable(&format!("the path of {option}"), &as_written(path, here))
                .map_err(|e| Error::Usage(e.to_string()))?;
        }
    }
    check_printable("the suite name (the benchmark's file name)", suite)
        .map_err(|e| Error::Usage(e.to_string()))
}

/// A mistake in the configuration init generated names a line of a file not written yet.
fn generated<T>(result: Result<T, Error>) -> Result<T, Error> {
    result.map_err(|error| match error {
        Error::Config(error) => Error::Usage(format!(
            "the {CONFIG_FILE} that `sqlgate init` would write does not load, so nothing was \
             written: {error}"
        )),
        other => other,
    })
}

/// `path` as `sqlgate.toml` in the current folder `here` names it: relative paths as given,
/// absolute ones inside `here` relative to it.
fn as_written(path: &Path, here: &Path) -> String {
    path.strip_prefix(here)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// The replay system is named after its file (`predictions.jsonl`: `predictions`).
fn system_name(predictions: &Path) -> String {
    predictions
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .filter(|stem| is_plain_name(stem))
        .unwrap_or_else(|| "replay".to_string())
}

fn report_measure(predictions: &str, measured: &Measured) {
    let answered = measured.cases - measured.unanswered;
    let score = match measured.ex {
        Some(ex) => format!(
            "ex = {} over {}",
            sqlgate::gate::judge::format_metric(ex),
            plural(measured.feasible, "feasible case")
        ),
        None => "no feasible case, so no ex to gate".to_string(),
    };
    println!(
        "predictions: {predictions} answers {answered} of {}: {score}",
        plural(measured.cases, "case")
    );
    if measured.unanswered > 0 {
        eprintln!(
            "warning: {predictions} has no answer for {}: a case without an answer fails every \
             run (not_recorded), accepted or not, so the gate passes only once every case is \
             answered",
            plural(measured.unanswered, "case")
        );
    }
    for warning in &measured.warnings {
        eprintln!("warning: {warning}");
    }
}

/// What the configuration's system and threshold are, in a few words.
fn describe(system: &SystemEntry, gate: &StartingGate) -> String {
    let system = match system {
        SystemEntry::Replay { name, .. } => format!("system `{name}` (replay)"),
        SystemEntry::Templates => "no system yet (commented templates)".to_string(),
    };
    let gate = match gate {
        StartingGate::Measured { ex, .. } => format!(
            "ex >= {}",
            sqlgate::gate::judge::format_metric(config_file::starting_threshold(*ex))
        ),
        StartingGate::Unmeasured => "none yet (commented)".to_string(),
    };
    format!("{system}, [profile.{CI_PROFILE}] threshold {gate}")
}

/// GitHub runs only the workflows at the root of a repository.
fn warn_outside_repository_root(here: &Path) {
    let root = here.ancestors().find(|folder| folder.join(".git").exists());
    if let Some(root) = root.filter(|root| *root != here) {
        let folder = here.strip_prefix(root).unwrap_or(here);
        eprintln!(
            "warning: this folder is inside the repository at {}: GitHub runs only the \
             workflows of {}; move {WORKFLOW_FILE} there and give the action \
             `working-directory: {}`",
            root.display(),
            root.join(".github/workflows").display(),
            folder.display()
        );
    }
}

/// The steps from here to a baseline committed and gated in CI.
fn next_steps(
    args: &InitArgs,
    here: &Path,
    suite: &SuiteEntry,
    measured: Option<&Measured>,
) -> String {
    const NOTHING_KNOWN: &str = "A wrong answer is a known failure only once a snapshot \
                                 accepts it, and none is accepted yet.";
    let mut steps = vec!["Next steps:".to_string()];
    let first_run = match measured {
        Some(measured) if measured.failing == 0 => {
            "The first run passes: every answer is correct.".to_string()
        }
        Some(measured) => format!(
            "The first run fails every wrong answer ({} here: exit 100). {NOTHING_KNOWN}",
            plural(measured.failing, "case")
        ),
        None => {
            steps.push(format!(
                "  Configure the system under test: uncomment a [[system]] of {CONFIG_FILE} \
                 and fill it in (until then `sqlgate test` stops, saying so)."
            ));
            format!(
                "The first run asks the system every question, recording its answers in \
                 snapshots/predictions/, and fails every wrong answer (exit 100). {NOTHING_KNOWN}"
            )
        }
    };
    let mut committed = vec![
        CONFIG_FILE.to_string(),
        "snapshots/".to_string(),
        WORKFLOW_FILE.to_string(),
        GITIGNORE.to_string(),
    ];
    let inputs = [
        Some(&args.benchmark),
        args.db_dir.as_ref(),
        args.predictions.as_ref(),
    ];
    // A file outside this folder is outside the repository CI checks out.
    let (inside, outside): (Vec<String>, Vec<String>) = inputs
        .into_iter()
        .flatten()
        .map(|path| as_written(path, here))
        .partition(|path| {
            let path = Path::new(path);
            path.is_relative()
                && !path
                    .components()
                    .any(|part| part == std::path::Component::ParentDir)
        });
    committed.extend(inside);
    let mut in_git = "CI reads what the gate reads: the benchmark, its databases and the \
                      recorded answers must be in git."
        .to_string();
    if !outside.is_empty() {
        in_git += &format!(
            " Not in this folder, so not in CI's checkout until copied in (or fetched in the \
             workflow before the gate) with its path in {CONFIG_FILE} changed: {}.",
            outside.join(", ")
        );
    }
    let explained = |command: String, why: &str| format!("  {command}\n{}", indented(why));
    steps.extend([
        explained("sqlgate test".into(), &first_run),
        explained(
            "sqlgate test --accept".into(),
            &format!(
                "Accepts the outcomes into snapshots/{}.snap: wrong answers become known \
                 failures, and from then on only a regression fails{}.",
                suite.name,
                match measured {
                    Some(measured) if measured.unanswered > 0 => {
                        " (cases without an answer still fail, exit 100)"
                    }
                    _ => "",
                }
            ),
        ),
        explained(
            format!("CI=true sqlgate test --profile {CI_PROFILE}"),
            "What the workflow runs: the recorded answers replayed, the thresholds checked.",
        ),
        format!("  git add {}", shell_words(&committed)),
        "  git commit -m \"Gate the text-to-SQL system with sqlgate\"".to_string(),
        explained("git push".into(), &in_git),
    ]);
    steps.join("\n")
}

/// `words` as one shell line reads them: each quoted when it needs to be (a file name with a
/// space, a quote or a `$`). The words hold no control character ([`refuse_unprintable`]).
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|word| {
            shlex::try_quote(word).map_or_else(|_| word.clone(), |quoted| quoted.into_owned())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` wrapped at word boundaries into lines of at most 90 characters, each indented by 6.
fn indented(text: &str) -> String {
    const WIDTH: usize = 90;
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && 6 + line.len() + 1 + word.len() > WIDTH {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
        .iter()
        .map(|line| format!("      {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}
