//! `sqlgate distill`: for every database of a benchmark, a small set of generated databases
//! with its schema that tells each gold apart from as many of its neighbours (single-error
//! mutants and near misses) as any generated database can, written as test-suite folders that
//! `score --mode testsuite` reads (Zhong et al., "Semantic Evaluation for Text-to-SQL with
//! Distilled Test Suites", 2020, for any schema on any engine that creates databases: SQLite
//! and DuckDB files, PostgreSQL and MySQL servers).
//!
//! One module a step: [`facts`] reads the schema, [`sample`] draws rows of a large original,
//! [`values`] the value pools, [`fill`] builds candidates, [`neighbours`] lists what each gold
//! must be told apart from, [`trial`] runs them on a candidate, [`select`] keeps the best few,
//! [`write`](mod@write) writes the folder and [`server`] keeps a server engine's databases.
//! Golds, neighbours and candidates are tried on every core; the output does not depend on
//! how many.

pub mod facts;
pub mod fill;
pub mod hints;
pub mod neighbours;
pub mod sample;
pub mod select;
pub mod server;
pub mod trial;
pub mod values;
pub mod write;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::Serialize;
use sqlgate_eval::error::{InputError, OutputError};
use sqlgate_eval::exec::{Backend, ExecError, Feature, Open, Source, Storage, Unsupported};
use sqlgate_eval::loaders::suite_folder::GoldSkip;
use sqlgate_eval::loaders::{Benchmark, Case};

use facts::Facts;
use sample::Sample;
use trial::{try_database, GoldEntry, Trial, Tried};
use values::{Literals, Pools};
pub use write::Provenance;
use write::Staging;

/// How much to generate and keep.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Databases kept per schema by the greedy choice (more may be added so every gold
    /// returns rows somewhere).
    pub per_db: usize,
    /// The run seed: the same seed writes the same bytes.
    pub seed: u64,
    /// Candidate databases generated per schema, at most [`MAX_CANDIDATES`].
    pub candidates: usize,
}

/// The most candidates a run generates per schema (`--candidates`): every neighbour runs on
/// each, so more would run for days, and a count near the integers' end would wrap.
pub const MAX_CANDIDATES: u32 = 100_000;

impl Default for Options {
    fn default() -> Self {
        Options {
            per_db: 20,
            seed: crate::mutate::DEFAULT_SEED,
            candidates: 200,
        }
    }
}

/// Why distilling stopped.
#[derive(Debug, thiserror::Error)]
pub enum DistillError {
    /// A benchmark or database that cannot be used.
    #[error(transparent)]
    Input(#[from] InputError),
    /// An output that cannot be written.
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// What one operator's neighbours did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct OperatorCounts {
    /// Neighbours made by the operator.
    pub mutants: usize,
    /// Of those, the ones execution on the original alone accepts.
    pub accepted_by_original: usize,
    /// Of those accepted or judged on the sample, the ones a kept database rejects.
    pub rejected_by_suite: usize,
    /// Neighbours not run on the original, a large one, because they or their gold ran past
    /// the bound there: judged on a sample of it instead (see [`SampleReport`]); counted
    /// neither as accepted nor as rejected by the original.
    #[serde(skip_serializing_if = "is_zero")]
    pub judged_on_sample: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What was judged on a sample of a large original ([`sample`]).
#[derive(Debug, Clone, Default, Serialize)]
pub struct SampleReport {
    /// Rows the sample holds, all tables together.
    pub rows: usize,
    /// Tables whose rows were drawn (the others were copied whole); their value pools come
    /// from the sample.
    pub tables_drawn: Vec<String>,
    /// Neighbours judged on the sample, not on the original.
    pub neighbours: usize,
    /// Golds past the neighbour bound on the original: all their neighbours were judged on
    /// the sample.
    pub golds: Vec<String>,
    /// Whether the greedy choice kept the sample (as one of the suite's databases).
    pub kept: bool,
}

/// A neighbour the original accepts and the suite rejects, with the database that rejects it.
#[derive(Debug, Clone, Serialize)]
pub struct Rejection {
    /// The case id.
    pub case: String,
    /// The operator that made the neighbour.
    pub operator: &'static str,
    /// The gold (first alternative).
    pub gold: String,
    /// The neighbour.
    pub mutant: String,
    /// The first kept database (a file name, or a server database's name) on which the two
    /// differ.
    pub database: String,
}

/// What distilling one database did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DatabaseReport {
    /// The database's name.
    pub db: String,
    /// Golds of the database.
    pub golds: usize,
    /// Golds that fail on the original (their neighbours are not counted).
    pub broken_golds: Vec<String>,
    /// Neighbours of the golds that run.
    pub neighbours: usize,
    /// Neighbours the original alone tells apart.
    pub killed_by_original: usize,
    /// Neighbours the written suite (original and kept databases) tells apart.
    pub killed_by_suite: usize,
    /// Neighbours no database (original or candidate) tells apart: likely equivalent.
    pub survivors: usize,
    /// Candidates generated.
    pub candidates: usize,
    /// (kept database, gold) pairs where the gold is not judged (its ORDER BY leaves the order
    /// of its rows open there, an equivalent rewrite is told apart there, or it fails there),
    /// as `<db>/gold-skips.json` lists them.
    pub gold_skips: usize,
    /// Equivalent rewrites the original itself tells apart from their gold (gold id, rewrite):
    /// ties that the gold's ORDER BY ... LIMIT cuts through on the original.
    pub rewrites_rejected_by_original: Vec<String>,
    /// Databases kept beside the original.
    pub kept: usize,
    /// Golds that run on the original and return no row holding a value other than NULL and
    /// 0 on the original nor on any kept database that judges them: the suite accepts every
    /// answer that is as empty.
    pub empty_on_suite: Vec<String>,
    /// Primary keys of a schema-only original read as truncated composite keys, so not
    /// enforced as unique (`table.column`; see [`Facts`]).
    pub relaxed_keys: Vec<String>,
    /// Counts per operator, by name.
    pub operators: BTreeMap<&'static str, OperatorCounts>,
    /// The neighbours the suite adds to what the original rejects.
    pub rejections: Vec<Rejection>,
    /// What was judged on a sample, when the original has a table past
    /// [`sample::SAMPLE_ROWS`] rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<SampleReport>,
    /// Wall time, in seconds.
    pub seconds: f64,
}

/// Answers systems gave, per case id (a system's past wrong answers, other systems'
/// predictions): each becomes one more neighbour of its case's gold, named
/// [`PREDICTION_OPERATOR`], so the suite also tells apart the errors systems really make.
pub type KnownAnswers = BTreeMap<String, Vec<String>>;

/// The operator name of a neighbour taken from [`KnownAnswers`].
pub const PREDICTION_OPERATOR: &str = "prediction";

/// The step of a database's distilling, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Reading the original: its schema, value pools and (when large) its sample.
    Reading,
    /// Trying each gold and its neighbours on the original (`done`/`total`: golds).
    Original,
    /// Building and trying the candidates (`done`/`total`: candidates).
    Candidates,
    /// Writing the kept databases.
    Writing,
}

/// Where distilling is, reported as it goes.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// The database being distilled.
    pub db: &'a str,
    /// Its number (from 1) among `databases`.
    pub database: usize,
    /// Databases to distill.
    pub databases: usize,
    /// What is being done.
    pub step: Step,
    /// Golds or candidates done, of `total`.
    pub done: usize,
    /// Golds or candidates the step has.
    pub total: usize,
    /// Time since the step began.
    pub elapsed: Duration,
}

/// Reports progress; called from any thread.
pub type OnProgress<'a> = &'a (dyn Fn(&Progress<'_>) + Sync);

/// Counts a step's work done and reports each unit of it.
struct Meter<'a> {
    on_progress: OnProgress<'a>,
    db: &'a str,
    database: usize,
    databases: usize,
}

impl Meter<'_> {
    /// Reports `step` begun, a step not counted in units.
    fn begin(&self, step: Step) {
        let _begun = self.step(step, 0);
    }

    /// Reports `step` begun, and returns what reports each unit of it done.
    fn step(&self, step: Step, total: usize) -> impl Fn() + Sync + '_ {
        let start = Instant::now();
        let done = AtomicUsize::new(0);
        let report = move |done: usize| {
            (self.on_progress)(&Progress {
                db: self.db,
                database: self.database,
                databases: self.databases,
                step,
                done,
                total,
                elapsed: start.elapsed(),
            })
        };
        report(0);
        move || report(done.fetch_add(1, Ordering::Relaxed) + 1)
    }
}
/// Why distill cannot run on engine `driver` (it cannot create databases), checked before
/// anything connects.
pub fn check_engine(driver: &dyn sqlgate_eval::exec::Driver) -> Result<(), Unsupported> {
    if driver.supports(Feature::Create) {
        Ok(())
    } else {
        Err(driver.unsupported(Feature::Create))
    }
}

/// Distills every database the benchmark's golds use into `out/<db>/`, databases in name order,
/// with a manifest naming `provenance` (see [`write`](mod@write): `out` is replaced whole, and
/// only when distill wrote it). On a file engine the generated databases are files of its
/// kind beside a copy of the original; on a server engine they are databases on the server,
/// listed in `out/<db>/databases.txt` ([`server`]).
pub fn distill(
    bench: &Benchmark,
    out: &Path,
    options: &Options,
    answers: &KnownAnswers,
    provenance: &Provenance,
    on_progress: OnProgress<'_>,
) -> Result<Vec<DatabaseReport>, DistillError> {
    let backend = &*bench.backend;
    check_engine(backend.driver())
        .map_err(|problem| InputError::file(&bench.db_dir, problem.to_string()))?;
    let mut by_db: BTreeMap<&str, Vec<&Case>> = BTreeMap::new();
    for case in bench.cases.iter().filter(|c| !c.gold.is_empty()) {
        by_db.entry(case.db.as_str()).or_default().push(case);
    }
    if by_db.is_empty() {
        return Err(InputError::file(&bench.db_dir, "no case has a gold query to distill").into());
    }
    let originals = by_db
        .values()
        .map(|cases| {
            let mut files = bench.db_files(cases[0], false)?;
            Ok(files.remove(0))
        })
        .collect::<Result<Vec<PathBuf>, InputError>>()?;
    let layout = match backend.driver().storage() {
        Storage::Files { extension, .. } => Layout::Files(extension),
        Storage::Server => Layout::Server,
    };
    // On a server the inputs are databases, which no folder holds.
    let files = match layout {
        Layout::Files(_) => Some((bench.db_dir.as_path(), originals.as_slice())),
        Layout::Server => None,
    };
    let mut staging = Staging::begin(out, files, layout.extension())?;
    let mut provenance = provenance.clone();
    for case in &bench.cases {
        if !provenance.inputs.contains(&case.source.file) {
            provenance.inputs.push(case.source.file.clone());
        }
    }
    let created = server::Created::new(backend);
    let run = server::Names::run_id();
    let databases = by_db.len();
    let reports = by_db
        .into_iter()
        .zip(&originals)
        .enumerate()
        .map(|(i, ((db, cases), original))| {
            let target = Target {
                layout,
                staging: &mut staging,
                created: &created,
                names: server::Names::new(db, &run),
            };
            let meter = Meter {
                on_progress,
                db,
                database: i + 1,
                databases,
            };
            distill_database(
                backend, db, &cases, original, target, options, answers, &meter,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let replaced = staging.commit(&provenance)?;
    created.keep();
    // The suite replaced on the server: its generated databases, now listed nowhere. (A
    // server suite replaced by a run on a file engine names databases of a server this run
    // does not reach: they stay.)
    let on_server = matches!(layout, Layout::Server);
    for name in replaced
        .iter()
        .filter(|n| on_server && server::Names::is_generated(n))
    {
        backend.remove(Path::new(name)).map_err(|e| {
            OutputError::new(
                name,
                std::io::Error::other(format!(
                    "the new suite is in place, but a database of the one it replaced could \
                     not be dropped: {}",
                    e.message
                )),
            )
        })?;
    }
    Ok(reports)
}

/// Where a run's generated databases go.
#[derive(Debug, Clone, Copy)]
enum Layout {
    /// Files with this extension in the suite folder.
    Files(&'static str),
    /// Databases on the server, listed in the suite folder.
    Server,
}

impl Layout {
    /// The extension of the files the suite folder holds beside its manifest.
    fn extension(self) -> &'static str {
        match self {
            Layout::Files(extension) => extension,
            // `databases.txt`.
            Layout::Server => "txt",
        }
    }
}

/// Where one database's suite is written.
struct Target<'s, 'b> {
    layout: Layout,
    staging: &'s mut Staging,
    created: &'s server::Created<'b>,
    /// The names of its databases on a server.
    names: server::Names,
}

#[allow(clippy::too_many_arguments)]
fn distill_database(
    backend: &dyn Backend,
    db: &str,
    cases: &[&Case],
    original: &Path,
    target: Target<'_, '_>,
    options: &Options,
    answers: &KnownAnswers,
    meter: &Meter<'_>,
) -> Result<DatabaseReport, DistillError> {
    let start = Instant::now();
    meter.begin(Step::Reading);
    let unreadable =
        |e: ExecError| InputError::file(original, format!("cannot read its schema: {}", e.message));
    let facts = Facts::read(backend, original).map_err(unreadable)?;
    // Known answers' literals join the golds': a value only a wrong answer mentions is often
    // the one that tells it apart.
    let known = cases
        .iter()
        .flat_map(|c| answers.get(&c.id).into_iter().flatten());
    let literals = Literals::gather(
        cases
            .iter()
            .flat_map(|c| c.gold.iter())
            .chain(known)
            .map(String::as_str),
        cases.iter().map(|c| c.question.as_str()),
    );
    let hints = hints::Hints::gather(cases.iter().map(|c| c.gold[0].as_str()), &facts.schema);
    let mut conn = backend
        .open(original, Open::for_source(Source::Gold))
        .map_err(unreadable)?;
    let driver = backend.driver();
    let sample = match Sample::needed(&mut *conn, driver, &facts).map_err(unreadable)? {
        true => Some(
            Sample::draw(&mut *conn, driver, &facts, &hints, options.seed, db)
                .map_err(unreadable)?,
        ),
        false => None,
    };
    let pools = Pools::build(
        &mut *conn,
        driver,
        &facts,
        &literals,
        sample.as_ref(),
        options.seed,
        db,
    )
    .map_err(unreadable)?;
    drop(conn);

    let mut golds: Vec<GoldEntry> = cases
        .par_iter()
        .map(|case| {
            GoldEntry::new(
                case.id.clone(),
                case.gold.clone(),
                with_answers(
                    neighbours::neighbours(&case.gold[0], &facts.schema),
                    &case.gold,
                    answers.get(&case.id).map_or(&[], Vec::as_slice),
                ),
                neighbours::rewrites(&case.gold[0]),
            )
        })
        .collect();
    let tried = match sample {
        Some(_) => Tried::LargeOriginal,
        None => Tried::Original,
    };
    let on_original = try_database(
        backend,
        original,
        tried,
        &golds,
        &meter.step(Step::Original, golds.len()),
    );
    let mut report = DatabaseReport {
        db: db.to_string(),
        golds: golds.len(),
        candidates: options.candidates,
        relaxed_keys: facts.relaxed_keys.clone(),
        ..Default::default()
    };
    report.rewrites_rejected_by_original = on_original
        .rejected_rewrites
        .iter()
        .map(|(id, name)| format!("{id} ({name})"))
        .collect();
    for (entry, runs) in golds.iter_mut().zip(&on_original.gold_runs) {
        if !runs {
            report.broken_golds.push(entry.id.clone());
            entry.neighbours.clear();
        }
    }

    // The sample, when there is one, is the last candidate.
    let candidates = options.candidates + usize::from(sample.is_some());
    let build = |i: usize, path: &Path| {
        match &sample {
            Some(sample) if i == options.candidates => sample.write(backend, &facts, path),
            _ => fill::candidate(backend, &facts, &pools, &hints, options.seed, db, i, path),
        }
        .map_err(|e| {
            InputError::file(
                original,
                format!("cannot build a database with its schema: {}", e.message),
            )
        })
    };
    let names = &target.names;
    let dropped = |name: &Path, e: ExecError| {
        OutputError::new(
            name,
            std::io::Error::other(format!("cannot drop the scratch database: {}", e.message)),
        )
    };
    let tried_one = meter.step(Step::Candidates, candidates);
    let silent = || {};
    let (paths, trials): (Vec<PathBuf>, Vec<Trial>) = match target.layout {
        Layout::Files(extension) => {
            let scratch = target.staging.scratch()?;
            let paths: Vec<PathBuf> = (0..candidates)
                .map(|i| scratch.join(format!("candidate_{i}.{extension}")))
                .collect();
            paths
                .par_iter()
                .enumerate()
                .try_for_each(|(i, path)| build(i, path))?;
            let trials = paths
                .par_iter()
                .map(|p| {
                    let trial = try_database(backend, p, Tried::Candidate, &golds, &silent);
                    tried_one();
                    trial
                })
                .collect();
            (paths, trials)
        }
        // One scratch database at a time per thread: built, tried, dropped.
        Layout::Server => {
            let trials = (0..candidates)
                .into_par_iter()
                .map(|i| {
                    let name = names.candidate(i);
                    build(i, &name)?;
                    target.created.add(&name);
                    let trial = try_database(backend, &name, Tried::Candidate, &golds, &silent);
                    tried_one();
                    target
                        .created
                        .remove(&name)
                        .map_err(|e| dropped(&name, e))?;
                    Ok(trial)
                })
                .collect::<Result<Vec<Trial>, DistillError>>()?;
            (Vec::new(), trials)
        }
    };

    let mut trials = trials;
    for trial in &mut trials {
        trial.judge_only_where_determined(&on_original);
    }
    let flat = |t: &Trial| t.kills.iter().flatten().copied().collect::<Vec<bool>>();
    let covered = flat(&on_original);
    let kills: Vec<Vec<bool>> = trials.iter().map(flat).collect();
    let informative: Vec<Vec<bool>> = trials.iter().map(|t| t.informative.clone()).collect();
    let chosen = select::greedy(
        &kills,
        &covered,
        options.per_db,
        &informative,
        &on_original.informative,
    );
    report.kept = chosen.len();
    meter.begin(Step::Writing);
    let kept_names: Vec<String> = match target.layout {
        Layout::Files(extension) => {
            let kept: Vec<PathBuf> = chosen.iter().map(|&c| paths[c].clone()).collect();
            target.staging.add_suite(db, original, &kept)?;
            (0..kept.len())
                .map(|k| write::kept_name(db, k, extension))
                .collect()
        }
        Layout::Server => {
            let mut kept = Vec::new();
            for (k, &c) in chosen.iter().enumerate() {
                let name = names.kept(k);
                build(c, &name)?;
                target.created.add(&name);
                // Built again from its seed: it must be the database that was tried.
                let mut again = try_database(backend, &name, Tried::Candidate, &golds, &silent);
                again.judge_only_where_determined(&on_original);
                if again.kills != trials[c].kills || again.undetermined != trials[c].undetermined {
                    return Err(OutputError::new(
                        &name,
                        std::io::Error::other(format!(
                            "built again from its seed, candidate {c} of `{db}` no longer tells \
                             apart what it did: the server did not build the same database twice"
                        )),
                    )
                    .into());
                }
                kept.push(name.to_string_lossy().into_owned());
            }
            target.staging.add_server_suite(db, &kept)?;
            kept
        }
    };
    let mut skips: Vec<GoldSkip> = chosen
        .iter()
        .zip(&kept_names)
        .flat_map(|(&c, database)| {
            golds
                .iter()
                .zip(&trials[c].undetermined)
                .filter_map(|(entry, why)| {
                    Some(GoldSkip {
                        gold: entry.gold.clone(),
                        database: database.clone(),
                        why: (*why)?,
                    })
                })
        })
        .collect();
    // Cases sharing a gold share its entries.
    let mut listed = HashSet::new();
    skips.retain(|skip| listed.insert((skip.gold.clone(), skip.database.clone())));
    report.gold_skips = skips.len();
    target.staging.add_gold_skips(db, &skips)?;

    for (g, entry) in golds.iter().enumerate() {
        let informative =
            on_original.informative[g] || chosen.iter().any(|&c| trials[c].informative[g]);
        if !informative && on_original.gold_runs[g] {
            report.empty_on_suite.push(entry.id.clone());
        }
    }
    count(
        &kept_names,
        &mut report,
        &golds,
        &on_original,
        &trials,
        &chosen,
    );
    if let Some(sample) = &sample {
        report.sample = Some(SampleReport {
            rows: sample.len(),
            tables_drawn: facts
                .schema
                .tables
                .iter()
                .enumerate()
                .filter(|(t, _)| sample.drawn(*t))
                .map(|(_, table)| table.name.clone())
                .collect(),
            neighbours: on_original
                .left_to_sample
                .iter()
                .flatten()
                .filter(|&&l| l)
                .count(),
            golds: golds
                .iter()
                .zip(&on_original.left_to_sample)
                .filter(|(_, left)| !left.is_empty() && left.iter().all(|&l| l))
                .map(|(entry, _)| entry.id.clone())
                .collect(),
            kept: chosen.contains(&options.candidates),
        });
    }
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}

/// `found` and then each answer that is neither a gold alternative nor already a neighbour
/// (compared as written, trimmed).
fn with_answers(
    mut found: Vec<neighbours::Neighbour>,
    gold: &[String],
    answers: &[String],
) -> Vec<neighbours::Neighbour> {
    let mut seen: std::collections::HashSet<String> = gold
        .iter()
        .chain(found.iter().map(|n| &n.sql))
        .map(|sql| sql.trim().to_string())
        .collect();
    for answer in answers {
        if !answer.trim().is_empty() && seen.insert(answer.trim().to_string()) {
            found.push(neighbours::Neighbour {
                operator: PREDICTION_OPERATOR,
                sql: answer.trim().to_string(),
            });
        }
    }
    found
}

/// Fills the report's neighbour counts from the trials.
fn count(
    kept_names: &[String],
    report: &mut DatabaseReport,
    golds: &[GoldEntry],
    on_original: &Trial,
    trials: &[Trial],
    chosen: &[usize],
) {
    for (g, entry) in golds.iter().enumerate() {
        for (n, neighbour) in entry.neighbours.iter().enumerate() {
            let by_original = on_original.kills[g][n];
            let on_sample = on_original.left_to_sample[g][n];
            let killer = chosen.iter().position(|&c| trials[c].kills[g][n]);
            let by_any = by_original || trials.iter().any(|t| t.kills[g][n]);
            report.neighbours += 1;
            report.killed_by_original += usize::from(by_original);
            report.killed_by_suite += usize::from(by_original || killer.is_some());
            report.survivors += usize::from(!by_any);
            let counts = report.operators.entry(neighbour.operator).or_default();
            counts.mutants += 1;
            if !by_original {
                match on_sample {
                    true => counts.judged_on_sample += 1,
                    false => counts.accepted_by_original += 1,
                }
                if let Some(k) = killer {
                    counts.rejected_by_suite += 1;
                    report.rejections.push(Rejection {
                        case: entry.id.clone(),
                        operator: neighbour.operator,
                        gold: entry.gold[0].clone(),
                        mutant: neighbour.sql.clone(),
                        database: kept_names[k].clone(),
                    });
                }
            }
        }
    }
}
