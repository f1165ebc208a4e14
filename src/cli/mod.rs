//! The `sqlgate` command line.

mod audit;
mod calibrate;
mod copy;
mod diff;
mod distill;
mod embedder;
mod generate;
mod generator_client;
mod init;
mod merge;
mod para;
mod report;
mod schema_db;
mod score;
mod test;
mod tqa;
mod value_enums;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use sqlgate::error::{Error, EXIT_OK};
use sqlgate_eval::error::InputError;
use std::sync::Arc;

use sqlgate_eval::exec::{Backend, Settings};
use sqlgate_eval::loaders::{self, Benchmark, GoldFormat, LoadOptions};
use sqlgate_eval::secrets;

#[derive(Parser)]
#[command(
    name = "sqlgate",
    version,
    about = "Gate text-to-SQL systems in CI: benchmarks as tests."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start gating your own benchmark: write `sqlgate.toml`, a GitHub workflow and
    /// `.gitignore`'s entry, then print the steps to a committed baseline.
    Init(init::InitArgs),
    /// Run every case, mutant and threshold of `sqlgate.toml` as a named test.
    Test(test::TestArgs),
    /// Gate a run from its shards' run records (`sqlgate test --partition ... --record-out`).
    Merge(merge::MergeArgs),
    /// Compare two run records (or snapshots): regressions, fixes, metric changes beyond noise.
    Diff(diff::DiffArgs),
    /// Write the HTML report of a run from its run records (`--record-out`).
    Report(report::ReportArgs),
    /// Score a predictions file against a gold set, offline, like the official evaluators.
    Score(score::ScoreArgs),
    /// Generate a family of mutant cases from a benchmark, written to disk.
    #[command(subcommand)]
    Generate(generate::GenerateCommand),
    /// Score single-error mutants of a gold set: how each SQLMorph metric reacts to each error.
    Calibrate(calibrate::CalibrateArgs),
    /// Audit a benchmark's gold queries: errors, timeouts, empty results, ties cut by LIMIT,
    /// rows compared in an order nothing sets, nondeterminism, cartesian products, strings in
    /// another case than the data's, disagreeing alternatives, errors the cases cannot see,
    /// duplicates.
    Audit(audit::AuditArgs),
    /// Build schema-only SQLite databases (no rows) from a Spider `tables.json`.
    SchemaDb(schema_db::SchemaDbArgs),
    /// Copy databases to another engine (SQLite files into DuckDB files, a PostgreSQL or
    /// MySQL server), to score one benchmark on several engines.
    Copy(copy::CopyArgs),
    /// Counterexample databases per schema that tell each gold from its near misses, written
    /// as test-suite folders for `score --mode testsuite` (see docs/distill.md).
    Distill(distill::DistillArgs),
}

pub fn main() -> ExitCode {
    exit_quietly_on_closed_stdout();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `--help` and `--version` print to stdout and succeed.
        Err(help) if !help.use_stderr() => {
            let _ = help.print();
            return ExitCode::from(EXIT_OK);
        }
        Err(error) => {
            // Clap prints its own message, with usage and suggestions.
            let _ = error.print();
            return ExitCode::from(Error::Usage(error.kind().to_string()).exit_code());
        }
    };
    let result = match cli.command {
        Command::Init(args) => init::run(args),
        Command::Test(args) => test::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Report(args) => report::run(args),
        Command::Score(args) => score::run(args),
        Command::Generate(command) => generate::run(command),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Audit(args) => audit::run(args),
        Command::SchemaDb(args) => schema_db::run(args),
        Command::Copy(args) => copy::run(args),
        Command::Distill(args) => distill::run(args),
    };
    match result {
        Ok(()) => ExitCode::from(EXIT_OK),
        Err(error) => {
            // An error may quote a file's text; no line of it may act on a GitHub job.
            let message =
                sqlgate::report::github::inert_lines(&secrets::redact(&error.to_string()));
            eprintln!("error: {message}");
            ExitCode::from(error.exit_code())
        }
    }
}

/// `sqlgate score | head` ends like `cat | head`: killed by SIGPIPE when the reader goes away,
/// instead of Rust's default of ignoring the signal and panicking in `println!`.
fn exit_quietly_on_closed_stdout() {
    #[cfg(unix)]
    // SAFETY: restores the default action of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The benchmark a command reads (generators, calibrate): any gold format `score` reads.
#[derive(Args)]
struct Source {
    /// The benchmark (any gold format `score` reads).
    #[arg(long)]
    gold: PathBuf,
    /// Folder holding `<db>.sqlite` or `<db>/<db>.sqlite` (default: beside the gold file).
    #[arg(long)]
    db_dir: Option<PathBuf>,
    /// Force the gold file's format instead of detecting it.
    #[arg(long, value_enum)]
    gold_format: Option<value_enums::GoldFormatArg>,
}

impl Source {
    /// Loads the benchmark with its databases as SQLite files (the generators' and the
    /// audit's engine). These tools read query golds: a state case is refused.
    fn load(&self) -> Result<Benchmark, InputError> {
        self.load_from(&sqlite_files()).map_err(on_sqlite_files)
    }

    /// Loads the benchmark as [`Source::load`] does, state cases kept (`generate errors`
    /// writes their DML mutants).
    fn load_with_state_cases(&self) -> Result<Benchmark, InputError> {
        self.read(&sqlite_files()).map_err(on_sqlite_files)
    }

    /// Loads the benchmark with its databases on `backend`, checking a server's databases.
    fn load_from(&self, backend: &Arc<dyn Backend>) -> Result<Benchmark, InputError> {
        let bench = self.read(backend)?;
        bench.refuse_state_cases()?;
        Ok(bench)
    }

    fn read(&self, backend: &Arc<dyn Backend>) -> Result<Benchmark, InputError> {
        let options = LoadOptions {
            db_dir: self.db_dir.clone(),
            tables: None,
            format: self.gold_format.map(GoldFormat::from),
            backend: backend.clone(),
            python_tests: false,
        };
        let bench = loaders::load(&self.gold, &options)?;
        warn_about_the_role(&bench, &**backend)?;
        Ok(bench)
    }
}

/// A database these commands did not find says that they read SQLite files: a suite whose
/// databases are on a server (Defog's PostgreSQL questions) has none until they are copied.
fn on_sqlite_files(mut error: InputError) -> InputError {
    if error.message.contains("unknown database") {
        error.message.push_str(
            " (this command reads each database as a SQLite file; `sqlgate copy --to-engine \
             sqlite` copies a server's databases to files)",
        );
    }
    error
}

/// Where the databases are: `--engine`, and for a server `--dsn` and `--password-env`.
#[derive(Args)]
struct ServerArgs {
    /// Where the databases are: `sqlite` files, `duckdb` files, or a `postgres` or `mysql`
    /// server (`--dsn`; see docs/postgres.md), of the engines this build has.
    #[arg(long, default_value = "sqlite")]
    engine: sqlgate_engines::EngineKind,
    /// A server's connection URL template, `{db}` standing for each case's database, without
    /// a password, e.g. `postgres://sqlgate_reader@127.0.0.1:5432/{db}`.
    #[arg(long)]
    dsn: Option<String>,
    /// The environment variable holding the server's password.
    #[arg(long)]
    password_env: Option<String>,
}

impl ServerArgs {
    /// The backend named, with `scratch_dsn` for state cases (`score`), or an error reported
    /// against `file` (the gold file).
    fn backend(
        &self,
        file: &Path,
        scratch_dsn: Option<&str>,
    ) -> Result<Arc<dyn Backend>, InputError> {
        let settings = Settings {
            dsn: self.dsn.as_deref(),
            password_env: self.password_env.as_deref(),
            scratch_dsn,
        };
        sqlgate_eval::exec::connect(self.engine.driver(), &settings)
            .map_err(|message| InputError::file(file, format!("--engine: {message}")))
    }
}

/// The SQLite engine, for the commands that read SQLite files only.
fn sqlite_files() -> Arc<dyn Backend> {
    sqlgate_engine_sqlite::files()
}

/// Connects to a server's databases before anything runs, warning about a role that could do
/// more than read.
fn warn_about_the_role(bench: &Benchmark, backend: &dyn Backend) -> Result<(), InputError> {
    for warning in sqlgate_eval::scoring::check_server(bench, backend)? {
        eprintln!("warning: {warning}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every option of every command says what it does in `--help`.
    #[test]
    fn every_argument_has_a_description() {
        fn undocumented(command: &clap::Command, path: &str, found: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                if !builtin && arg.get_help().is_none() && arg.get_long_help().is_none() {
                    found.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in command.get_subcommands() {
                undocumented(sub, &format!("{path} {}", sub.get_name()), found);
            }
        }
        let mut found = Vec::new();
        undocumented(&super::Cli::command(), "sqlgate", &mut found);
        assert!(
            found.is_empty(),
            "arguments without a description: {found:?}"
        );
    }
}
