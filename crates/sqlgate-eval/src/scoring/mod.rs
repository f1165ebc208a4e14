//! The one per-case pipeline: `sqlgate score` and the gate both score a case with
//! [`score_case`] and aggregate with the functions of [`summary`], so the same predictions get
//! the same per-case values and means from both.
//!
//! A metric that cannot be computed for a case (ESM on a gold query its parser rejects, an
//! embeddings server that is down) scores 0 for that case and adds a `<metric>_error`
//! diagnostic with the reason; means count the case as 0 (the gate fails closed) and every
//! output counts the errors. Bad input (a database that does not resolve, one missing from
//! `tables.json`) is refused before anything is scored ([`Scoring::databases`]).

mod case;
mod case_facts;
pub mod family;
mod metric;
pub mod summary;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::error::InputError;
use crate::exec::Backend;
use crate::loaders::Benchmark;
use crate::metrics::case_metric::CaseMetric;
use crate::metrics::efficiency::measure::{self as efficiency, Efficiency};
use crate::metrics::ex::{Diagnostic, Mode, ModeOptions, Verdict};
use crate::metrics::reliability::{CaseFacts, Region};
use crate::metrics::sqlmorph::{self, Embedder, Regime};
use crate::metrics::{esm, etm};
use crate::spider::Hardness;

pub use case::{score_all, score_case, Response};
pub use case_facts::{Robustness, SchemaCache};
pub use family::{FamilyMetricError, FamilySummary, REPORTED_K};
pub use metric::{Metric, MetricNameError};
pub use summary::{summarize, EfficiencyMeans, HardnessMeans, SoftF1Means, Summary, Tally};

/// How cases are scored: built by `sqlgate score` from its flags and by the gate from a
/// `[[suite]]`. Its serialization is everything in it that changes a score (verdict reuse keys
/// on it), so a field added here is in the key unless it is marked as a cache.
#[derive(Serialize)]
pub struct Scoring {
    /// The EX mode: which reference evaluator's comparison to reproduce.
    pub mode: Mode,
    /// The mode's switches (DISTINCT kept, BIRD's pair budget, TrustSQL's raw input).
    pub mode_options: ModeOptions,
    /// EX runs every case on every database of its folder (`<db_dir>/<db>/*.sqlite`), in any
    /// mode; `testsuite` always does. Written only when set, so that turning it on is a new
    /// reuse key and leaving it off keeps the old ones.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub every_database: bool,
    /// SQLMorph regimes of the fine-grained EXP/EXR/F1; empty: not computed.
    pub regimes: Vec<Regime>,
    /// Fine-grained metrics as the SQLMorph reference implementation computes them.
    pub sqlmorph_compat: bool,
    /// Embeds column descriptors for SC matching; `None`: the offline n-gram embedder.
    #[serde(serialize_with = "embedder_model")]
    pub embedder: Option<Arc<dyn Embedder + Send>>,
    /// Spider exact set match, when asked for. Its foreign keys come from `tables.json`, whose
    /// content the reuse key holds.
    #[serde(serialize_with = "is_some")]
    pub esm: Option<Arc<esm::Evaluator>>,
    /// Enhanced Tree Matching, when asked for.
    pub etm: Option<Arc<etm::Evaluator>>,
    /// The most candidate cell pairs partial-cell matching materialises before it goes level
    /// by level (and, past that, truncates with a `partial_match_truncated` diagnostic).
    pub pc_max_pairs: u64,
    /// Collect the per-case facts of the family metrics ([`Robustness`]): set when the
    /// benchmark holds generated families.
    pub robustness: bool,
    /// BIRD mini-dev Soft-F1 of every feasible case. Written only when set, so that turning it
    /// on is a new reuse key and leaving it off keeps the old ones.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub soft_f1: bool,
    /// BIRD's VES and R-VES, timed, and their deterministic steps variant, when asked for.
    /// Written only when set, so that the reuse keys of suites without it stay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<efficiency::Settings>,
    /// The registered per-case metrics every feasible case is scored on
    /// ([`crate::metrics::case_metric`]). Written only when some are, so that the reuse keys of
    /// suites without them stay.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub case_metrics: Vec<CaseMetric>,
    /// Each database's tables and columns, read once, for the schema error rate.
    #[serde(skip)]
    pub schemas: SchemaCache,
}

fn embedder_model<S: serde::Serializer>(
    embedder: &Option<Arc<dyn Embedder + Send>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(embedder.iter().map(|e| e.model_id()))
}

fn is_some<T, S: serde::Serializer>(value: &Option<T>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_bool(value.is_some())
}

impl Scoring {
    /// EX alone, under `mode` with its default options.
    pub fn new(mode: Mode) -> Scoring {
        Scoring {
            mode,
            mode_options: ModeOptions::default(),
            every_database: false,
            regimes: Vec::new(),
            sqlmorph_compat: false,
            embedder: None,
            esm: None,
            etm: None,
            pc_max_pairs: sqlmorph::Options::default().pc_max_pairs,
            robustness: false,
            soft_f1: false,
            efficiency: None,
            case_metrics: Vec::new(),
            schemas: SchemaCache::default(),
        }
    }

    fn sqlmorph_options(&self) -> sqlmorph::Options<'_> {
        let defaults = sqlmorph::Options::default();
        sqlmorph::Options {
            sqlmorph_compat: self.sqlmorph_compat,
            embedder: self
                .embedder
                .as_deref()
                .map_or(defaults.embedder, |e| e as &dyn Embedder),
            pc_max_pairs: self.pc_max_pairs,
            ..defaults
        }
    }

    /// Every case's database files, resolved once, before anything is scored; with ESM, every
    /// database of a feasible case must be in `tables.json`.
    pub fn databases(&self, bench: &Benchmark) -> Result<Vec<CaseDatabases>, InputError> {
        let folders = self.every_database_files();
        // Many cases share a database: each is looked up on disk once (a distilled suite's
        // databases left out for a gold are then taken away case by case).
        let mut resolved: HashMap<(&str, Option<&Path>), CaseDatabases> = HashMap::new();
        bench
            .cases
            .iter()
            .map(|case| {
                if let (Some(evaluator), true) = (&self.esm, case.feasible) {
                    if evaluator.foreign_keys(&case.db).is_err() {
                        let tables = bench.tables.clone().unwrap_or_default();
                        return Err(case.source.error(format!(
                            "case `{}`: database `{}` is not in {} (needed by ESM)",
                            case.id,
                            case.db,
                            tables.display()
                        )));
                    }
                }
                let key = (case.db.as_str(), case.db_file.as_deref());
                let suite = match resolved.get(&key) {
                    Some(databases) => databases.clone(),
                    None => {
                        let databases = CaseDatabases {
                            main: bench.suite_files(case, false)?.remove(0),
                            evaluated: bench.suite_files(case, folders)?,
                            tied: Vec::new(),
                        };
                        resolved.insert(key, databases.clone());
                        databases
                    }
                };
                Ok(match folders {
                    true => {
                        let judged = bench.judged(case, suite.evaluated)?;
                        CaseDatabases {
                            main: suite.main,
                            evaluated: judged.files,
                            tied: judged.tied,
                        }
                    }
                    false => suite,
                })
            })
            .collect()
    }

    /// Whether EX runs on every database of a case's folder.
    pub fn every_database_files(&self) -> bool {
        self.every_database || self.mode == Mode::Testsuite
    }

    /// Why `every_database` cannot apply to the benchmark, naming the first case concerned:
    /// its databases are on a server, or a case's database is not in a folder of its own
    /// (`<db_dir>/<db>/<db>.sqlite`), so there is nothing beside it to run on.
    pub fn every_database_problem(
        &self,
        bench: &Benchmark,
        databases: &[CaseDatabases],
    ) -> Option<String> {
        if !self.every_database {
            return None;
        }
        if bench.on_server() {
            let case = bench
                .cases
                .iter()
                .find(|case| !bench.has_server_suite(case))?;
            return Some(format!(
                "every_database runs each case on the databases of its distilled suite, which \
                 a server engine lists in `<db_dir>/<db>/databases.txt` (`sqlgate distill` \
                 writes it), and case `{}` has none",
                case.id
            ));
        }
        let (case, files) = bench
            .cases
            .iter()
            .zip(databases)
            .find(|(case, files)| !bench.in_folder(case, &files.main))?;
        Some(format!(
            "every_database needs each database in a folder of its own with its variants \
             (`<db_dir>/<db>/<db>.sqlite`, `<db_dir>/<db>/<db>_1.sqlite`...), but case `{}` \
             runs on {}",
            case.id,
            files.main.display()
        ))
    }
}

/// Connects to every database of a benchmark on a server, failing (at the first case naming
/// it) on one that cannot be reached, before anything is scored; returns warnings about what
/// the role could do beyond reading. Nothing to check on database files.
pub fn check_server(bench: &Benchmark, backend: &dyn Backend) -> Result<Vec<String>, InputError> {
    if !backend.on_server() {
        return Ok(Vec::new());
    }
    let mut warnings = Vec::new();
    let mut checked = std::collections::BTreeSet::new();
    for case in &bench.cases {
        if checked.insert(case.db.as_str()) {
            let found = backend
                .check_reader(Path::new(&case.db))
                .map_err(|message| case.source.error(format!("case `{}`: {message}", case.id)))?;
            warnings.extend(found);
        }
    }
    Ok(warnings)
}

/// Warnings for databases on which execution accuracy says nothing: ones without a row in any
/// table (schema-only copies), where every query returns an empty result, so a wrong query
/// "matches" its gold as often as a right one. A case that also runs on the other databases of
/// its folder (a distilled suite beside a schema-only original) is judged by those too.
pub fn empty_database_warnings(backend: &dyn Backend, databases: &[CaseDatabases]) -> Vec<String> {
    let mut cases_by_db: BTreeMap<&Path, (usize, &[PathBuf])> = BTreeMap::new();
    for case in databases {
        cases_by_db
            .entry(&case.main)
            .or_insert((0, &case.evaluated))
            .0 += 1;
    }
    let without_rows =
        |db: &Path| matches!(crate::exec::schema::holds_rows(backend, db), Ok(false));
    cases_by_db
        .into_iter()
        // A database that cannot be read fails its cases' executions, which say why.
        .filter(|(db, (_, evaluated))| {
            without_rows(db) && evaluated.iter().all(|f| without_rows(f))
        })
        .map(|(db, (cases, evaluated))| {
            let which = if evaluated.len() > 1 {
                format!(
                    "{} and the {} other databases of its folder have",
                    db.display(),
                    evaluated.len() - 1
                )
            } else {
                format!("{} has", db.display())
            };
            format!(
                "{which} no rows in any table, so EX there compares empty results and cannot \
                 tell a right query from a wrong one (cases on it: {cases})"
            )
        })
        .collect()
}

/// A case's database files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseDatabases {
    /// The database itself (fine-grained metrics and ETM read it).
    pub main: PathBuf,
    /// The files EX runs on: in `testsuite` mode and with `every_database`, every database
    /// of its folder, the original first.
    pub evaluated: Vec<PathBuf>,
    /// Those of `evaluated` where the gold's ORDER BY ties: compared with every answer the
    /// ties allow ([`crate::metrics::ex::CaseInput::tied`]).
    pub tied: Vec<PathBuf>,
}

/// EXP, EXR and F1 under one SQLMorph regime (spec `sqlmorph-metrics.md` §5), each in [0, 1].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct FineScores {
    /// Execution precision.
    pub exp: f64,
    /// Execution recall.
    pub exr: f64,
    /// Harmonic mean of the two.
    pub f1: f64,
}

impl From<sqlmorph::Scores> for FineScores {
    fn from(scores: sqlmorph::Scores) -> Self {
        FineScores {
            exp: scores.exp,
            exr: scores.exr,
            f1: scores.f1,
        }
    }
}

/// The outcome of one case.
#[derive(Debug, Clone, Serialize)]
pub struct CaseScore {
    /// The case's id.
    pub id: String,
    /// The database it ran on.
    pub db: String,
    /// The case's tags, as loaded.
    pub tags: BTreeMap<String, String>,
    /// Infeasible cases are listed but take no part in execution accuracy.
    pub feasible: bool,
    /// The EX verdict class.
    pub verdict: Verdict,
    /// The reference evaluator's score for this case (0 or 1).
    #[serde(serialize_with = "whole_as_integer")]
    pub ex: f64,
    /// Defog's exact-match flag, in the defog modes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact: Option<bool>,
    /// `"<class>: <message>"` when an execution failed.
    pub error: Option<String>,
    /// When the case ran on several databases and is not correct: the file name of the first
    /// one where it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_on: Option<String>,
    /// Notes on the case, among them `<metric>_error` for a metric that scored 0 because it
    /// could not be computed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
    /// The predicted SQL as executed (after fence and prose stripping); `None` when abstained.
    pub sql: Option<String>,
    /// Markdown fences or prose were stripped from the prediction.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cleaned: bool,
    /// SQLMorph EXP/EXR/F1 by regime name (`EC-EC-IE`), best over gold alternatives, for every
    /// feasible case when asked for (0/0/0 without an answer); empty otherwise.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fine: BTreeMap<String, FineScores>,
    /// Spider exact set match (0 or 1) of a feasible case, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub esm: Option<u8>,
    /// The reference's component scores behind `esm`, for its tables.
    #[serde(skip)]
    pub esm_detail: Option<esm::PairScore>,
    /// Enhanced Tree Matching (0 or 1) of a feasible case, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etm: Option<u8>,
    /// Why: rules fired per side, departures from the reference, first differing subtree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etm_detail: Option<etm::Verdict>,
    /// BIRD mini-dev Soft-F1 (0..1) of a feasible case, when asked for: best over the gold
    /// alternatives on the case's own database, 0 without an answer or when a query fails.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soft_f1: Option<f64>,
    /// The gold's Spider hardness, with the structural metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hardness: Option<Hardness>,
    /// A generated variant's similarity to its seed's question (the family file's `cs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cs: Option<f64>,
    /// What the family metrics read, when the scoring collects it.
    #[serde(skip)]
    pub robustness: Option<Robustness>,
    /// VES and R-VES of a feasible case, timed and by steps, when asked for (0 unless EX is 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<Efficiency>,
    /// The value of each registered per-case metric the scoring asks for, of a feasible case
    /// (0 without an answer, or when it cannot be computed: `<metric>_error`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<CaseMetric, f64>,
}

impl CaseScore {
    /// The facts TrustSQL's reliability regions are classified from.
    pub fn facts(&self) -> CaseFacts {
        CaseFacts {
            feasible: self.feasible,
            abstained: self.verdict == Verdict::Abstained,
            correct: self.ex == 1.0,
            tags: self.tags.clone(),
        }
    }

    /// The TrustSQL region the case falls in.
    pub fn region(&self) -> Region {
        Region::of(&self.facts())
    }

    /// Correct means EX = 1 (the family metrics score feasible cases only).
    pub fn correct(&self) -> bool {
        self.ex == 1.0
    }

    /// The generated family the case belongs to (its `family` tag).
    pub fn family(&self) -> Option<&str> {
        self.tags.get("family").map(String::as_str)
    }

    /// The id of the benchmark case a generated case came from (its `seed` tag).
    pub fn seed(&self) -> Option<&str> {
        self.tags.get("seed").map(String::as_str)
    }

    /// The metrics that could not be computed for this case, each with the reason.
    pub fn metric_errors(&self) -> impl Iterator<Item = (ComputedMetric, &str)> + '_ {
        self.diagnostics.iter().filter_map(|d| {
            ComputedMetric::all()
                .find(|metric| metric.error_code() == d.code)
                .map(|metric| (metric, d.message.as_str()))
        })
    }
}

/// A metric beside EX that may fail to be computed for a case; it then scores 0 with the
/// diagnostic `<name>_error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ComputedMetric {
    /// SQLMorph EXP, EXR and F1 (computed together).
    Sqlmorph,
    /// Spider exact set match.
    Esm,
    /// Enhanced Tree Matching.
    Etm,
    /// A registered per-case metric.
    Case(CaseMetric),
}

impl ComputedMetric {
    /// Every computed metric, in report order.
    pub fn all() -> impl Iterator<Item = ComputedMetric> {
        [
            ComputedMetric::Sqlmorph,
            ComputedMetric::Esm,
            ComputedMetric::Etm,
        ]
        .into_iter()
        .chain(CaseMetric::all().map(ComputedMetric::Case))
    }

    /// The metric's name in records and reports.
    pub fn name(self) -> &'static str {
        match self {
            ComputedMetric::Sqlmorph => "sqlmorph",
            ComputedMetric::Esm => "esm",
            ComputedMetric::Etm => "etm",
            ComputedMetric::Case(metric) => metric.name(),
        }
    }

    /// The note code a case gets when this metric could not be computed for it.
    pub fn error_code(self) -> &'static str {
        match self {
            ComputedMetric::Sqlmorph => "sqlmorph_error",
            ComputedMetric::Esm => "esm_error",
            ComputedMetric::Etm => "etm_error",
            ComputedMetric::Case(metric) => metric.error_code(),
        }
    }

    /// The diagnostic saying why the metric scored 0.
    pub fn error(self, reason: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code: self.error_code(),
            message: reason.into(),
        }
    }
}

impl Serialize for ComputedMetric {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// Writes `1` rather than `1.0` for whole scores, as the JSON contract promises `0|1`.
fn whole_as_integer<S: serde::Serializer>(score: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if score.fract() == 0.0 && score.abs() < 1e15 {
        serializer.serialize_i64(*score as i64)
    } else {
        serializer.serialize_f64(*score)
    }
}
