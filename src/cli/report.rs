//! `sqlgate report`: the HTML report of a run from its run records (a whole run's, or its
//! shards'), as `sqlgate test --html` writes it; nothing else is written.

use std::path::PathBuf;

use clap::Args;

use sqlgate::config::RecordMode;
use sqlgate::gate::record::{self, RunRecord};
use sqlgate::gate::run;
use sqlgate::gate::session::Session;
use sqlgate::report::html::{self, EarlierRun, ReportInput, RunFacts};
use sqlgate::runner::ending::summaries;
use sqlgate::Error;
use sqlgate_eval::error::InputError;

#[derive(Args)]
pub struct ReportArgs {
    /// The run's records (`--record-out`): a whole run's, or every shard's.
    #[arg(required = true, value_name = "RECORD")]
    records: Vec<PathBuf>,
    /// The configuration the run ran: its questions, gold SQL and tags come from it.
    #[arg(long, default_value = "sqlgate.toml")]
    config: PathBuf,
    /// Write the HTML report here.
    #[arg(long, value_name = "FILE", required = true)]
    html: PathBuf,
    /// Earlier whole runs' records, oldest first: the gates' history.
    #[arg(long, value_name = "RECORD", num_args = 1..)]
    history: Vec<PathBuf>,
}

pub fn run(args: ReportArgs) -> Result<(), Error> {
    let records = args
        .records
        .iter()
        .map(|path| Ok((path.clone(), RunRecord::read(path)?)))
        .collect::<Result<Vec<_>, InputError>>()?;
    let history = args
        .history
        .iter()
        .map(|path| EarlierRun::read(path))
        .collect::<Result<Vec<_>, _>>()?;
    let inputs = records[0].1.inputs.clone();
    // Nothing is asked of the system, and nothing is recorded: this only reads.
    let session = Session::open(&args.config, &inputs.profile, Some(RecordMode::None), None)?;
    let mut merged = record::merge(
        &records,
        &session.suites,
        &session.inputs(None)?,
        &args.config,
    )?;
    merged.answers.clear();
    let all = session.tests();
    let tests: Vec<_> = all.iter().filter(|t| !t.ignored).cloned().collect();
    let mut report = session.merged_report(merged, &tests, session.baseline(false))?;
    report.results.extend(
        all.iter()
            .filter(|t| t.ignored)
            .map(|t| run::ignored(&session.suites[t.suite].name, t)),
    );
    run::sort_in_plan_order(&mut report.results, &all);
    let summaries = summaries(&session.suites, &report);
    let facts = RunFacts {
        system: inputs.system.clone(),
        fingerprints: session
            .suites
            .iter()
            .map(|suite| suite.name.clone())
            .zip(inputs.fingerprints.iter().cloned())
            .collect(),
        profile: inputs.profile.clone(),
        commit: records.iter().find_map(|(_, r)| r.commit.clone()),
        ended: records.iter().filter_map(|(_, r)| r.ended).max(),
        sqlgate: inputs.sqlgate.clone(),
        origin: format!(
            "sqlgate report from {} run record{}",
            records.len(),
            if records.len() == 1 { "" } else { "s" }
        ),
    };
    html::write(
        &args.html,
        &ReportInput {
            suites: &session.suites,
            report: &report,
            summaries: &summaries,
            run: &facts,
            history: &history,
        },
    )?;
    eprintln!("wrote {}", args.html.display());
    Ok(())
}
