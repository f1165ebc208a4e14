//! `sqlgate merge`: gates a run from the run records of its shards, as `sqlgate test` would
//! have gated it in one piece.

use std::path::PathBuf;

use clap::Args;

use crate::console::terminal::ColorChoice;
use sqlgate::gate::record::{self, RunRecord};
use sqlgate::gate::run::{self, Event};
use sqlgate::gate::session::Session;
use sqlgate::runner::{Ending, Outputs, Reporter as _};
use sqlgate::Error;
use sqlgate_eval::error::InputError;

use super::test::{HtmlArgs, MessageFormat, Reporter};

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
    #[command(flatten)]
    html: HtmlArgs,
    /// Write the merged run's record here: every case and the gates' outcome, for a later
    /// report's gate history (JSON).
    #[arg(long, value_name = "FILE")]
    record_out: Option<PathBuf>,
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
    let merged = record::merge(
        &shards,
        &session.suites,
        &session.inputs(None)?,
        &args.config,
    )?;
    let all = session.tests();
    let tests: Vec<_> = all.iter().filter(|t| !t.ignored).cloned().collect();
    let mut reporter = Reporter::new(args.message_format, &session, args.color);
    reporter.event(Event::Started { total: tests.len() });
    let mut report = session.merged_report(merged, &tests, session.baseline(args.accept))?;
    for result in &report.results {
        reporter.event(Event::Finished(result));
    }
    report.results.extend(
        all.iter()
            .filter(|t| t.ignored)
            .map(|t| run::ignored(&session.suites[t.suite].name, t)),
    );
    run::sort_in_plan_order(&mut report.results, &all);
    let ending = Ending {
        whole: true,
        accept: args.accept,
        partition: None,
        store: None,
        filtered_out: 0,
        notes: vec![format!(
            "merged {} run records: {} cases",
            shards.len(),
            report.work.cases
        )],
    };
    let outputs = Outputs {
        junit: args.junit,
        profile_junit: true,
        record_out: args.record_out,
        github: Some(reporter.command_stream()),
        html: args
            .html
            .output(format!("sqlgate merge of {} run records", shards.len())),
    };
    ending.conclude(&session, &report, &outputs, &mut reporter)
}
