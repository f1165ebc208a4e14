//! `sqlgate merge`: gates a run from the run records of its shards, as `sqlgate test` would
//! have gated it in one piece.

use std::path::PathBuf;

use clap::Args;

use crate::report::terminal::ColorChoice;
use sqlgate::gate::record::{self, RunRecord};
use sqlgate::gate::run::Event;
use sqlgate::gate::session::Session;
use sqlgate::Error;
use sqlgate_eval::error::InputError;

use super::test::{conclude, MessageFormat, Outputs, Reporter};

#[derive(Args)]
pub struct MergeArgs {
    /// The shards' run records (`sqlgate test --partition K/N --record-out FILE`).
    #[arg(required = true, value_name = "RECORD")]
    records: Vec<PathBuf>,
    /// The configuration the shards ran (the profile is the shards').
    #[arg(long, default_value = "sqlgate.toml")]
    config: PathBuf,
    /// Write JUnit XML here.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Accept the run's outcomes as the new snapshots.
    #[arg(long)]
    accept: bool,
    /// `human` lines, or `libtest-json` events on stdout, as `sqlgate test`.
    #[arg(long, value_enum, default_value = "human")]
    message_format: MessageFormat,
    /// Color the output: `auto` (a terminal without `NO_COLOR`), `always` or `never`.
    #[arg(long, value_enum, default_value = "auto")]
    color: ColorChoice,
}

pub fn run(args: MergeArgs) -> Result<(), Error> {
    let shards = args
        .records
        .iter()
        .map(|path| Ok((path.clone(), RunRecord::read(path)?)))
        .collect::<Result<Vec<_>, InputError>>()?;
    let profile = shards[0].1.inputs.profile.clone();
    // Nothing is asked of the system: the shards did that.
    let session = Session::open(
        &args.config,
        &profile,
        Some(sqlgate::config::RecordMode::None),
        None,
    )?;
    let merged = record::merge(&shards, &session.suites, &session.inputs()?, &args.config)?;
    let tests: Vec<_> = session.tests().into_iter().filter(|t| !t.ignored).collect();
    let mut reporter = Reporter::new(args.message_format, &session, args.color);
    reporter.event(Event::Started { total: tests.len() });
    let mut report = session.merged_report(merged, &tests)?;
    for result in &report.results {
        reporter.event(Event::Finished(result));
    }
    let all = session.tests();
    report.results.extend(
        all.iter()
            .filter(|t| t.ignored)
            .map(|t| sqlgate::gate::run::ignored(&session.suites[t.suite].name, t)),
    );
    sqlgate::gate::run::sort_in_plan_order(&mut report.results, &all);
    let outputs = Outputs {
        whole: true,
        accept: args.accept,
        junit: args.junit,
        message_format: args.message_format,
        filtered_out: 0,
    };
    let notes = vec![format!(
        "merged {} run records: {} cases",
        shards.len(),
        report.work.cases
    )];
    conclude(&session, &report, &outputs, &mut reporter, notes)
}
