//! `[[suite]]`: a benchmark under the gate.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use sqlgate_engines::EngineKind;
use sqlgate_eval::loaders::GoldFormat;
use sqlgate_eval::metrics::case_metric::CaseMetric;
use sqlgate_eval::metrics::ex::Mode;
use sqlgate_eval::metrics::sqlmorph::Regime;

/// One `[[suite]]`: a benchmark, how its cases are scored, and what is computed beside EX.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteConfig {
    /// The first component of test names (default: the native suite's own name, else the
    /// benchmark file's stem).
    pub name: Option<String>,
    /// Any gold file the loaders read (`suite.toml`, `questions.csv`, `gold.txt`, `dev.json`...).
    pub benchmark: PathBuf,
    /// The databases' folder, as `score --db-dir` (default: the benchmark format's own).
    pub db_dir: Option<PathBuf>,
    /// A Spider `tables.json`, for ESM and schema-only databases.
    pub tables: Option<PathBuf>,
    /// The gold file's format, when its name does not say (as `score --format`).
    pub format: Option<GoldFormat>,
    /// Where the databases are: `sqlite` files (default), `duckdb` files, or a `postgres` or
    /// `mysql` server (the engines this build has).
    #[serde(default)]
    pub engine: EngineKind,
    /// PostgreSQL: the connection URL template, `{db}` standing for each case's database
    /// (`postgres://sqlgate_reader@127.0.0.1:5432/{db}`), without a password.
    pub dsn: Option<String>,
    /// PostgreSQL: the environment variable holding the password.
    pub password_env: Option<String>,
    /// PostgreSQL: the connection URL template of a role that may write, for state cases:
    /// their statements run in transactions that are always rolled back (docs/state.md).
    pub scratch_dsn: Option<String>,
    /// LiveSQLBench: judge each task that has Python test cases by them, run with `python3`
    /// (the benchmark's own code, run with the user's rights; docs/state.md).
    #[serde(default)]
    pub python_tests: bool,
    /// Comparison mode (default: the benchmark format's own evaluator).
    pub mode: Option<Mode>,
    /// Per-query time bound in seconds (default 30).
    pub timeout: Option<super::Seconds>,
    /// Rows a query may return before it fails as too large.
    pub max_rows: Option<usize>,
    /// Test-suite mode: keep DISTINCT in both queries (`--keep_distinct`).
    #[serde(default)]
    pub keep_distinct: bool,
    /// Run every case on every database of its folder (`<db_dir>/<db>/<db>.sqlite` and the
    /// `<db>_<k>.sqlite` beside it, as `sqlgate distill` writes), in any mode: a case is
    /// correct only where it is correct on all of them. Always so in `testsuite` mode.
    #[serde(default)]
    pub every_database: bool,
    /// SQLMorph regime (`EC-PC-PE`...) whose EXP, EXR and F1 each case reports, for gates
    /// such as `f1 = ">= 0.8"` and for snapshots (default: none, EX only).
    pub regime: Option<Regime>,
    /// Structural metrics each case reports, for gates such as `etm = ">= 0.7"` and for
    /// snapshots: `esm` (Spider exact set match; needs `tables`) and `etm` (Enhanced Tree
    /// Matching).
    #[serde(default)]
    pub structural: Vec<Structural>,
    /// Every case reports BIRD mini-dev Soft-F1 (`evaluation_f1.py`), for gates such as
    /// `soft_f1 = ">= 0.6"` and for snapshots.
    #[serde(default)]
    pub soft_f1: bool,
    /// Registered per-case metrics each case reports, for snapshots, records and reports
    /// (`metrics = ["row_count"]`); a gate on one (`row_count = ">= 0.9"`) computes it
    /// without being listed here.
    #[serde(default)]
    pub metrics: Vec<CaseMetric>,
    /// Efficiency measurements of each correct answer against its gold, for gates such as
    /// `rves_steps = ">= 100"`: `time` (BIRD's VES and R-VES from timed executions; they
    /// depend on the machine) and `steps` (`ves_steps`, `rves_steps`: SQLite VM steps or
    /// PostgreSQL's planner cost, the same on any machine). Default: none.
    #[serde(default)]
    pub efficiency: Vec<EfficiencyMeasure>,
    /// Timed executions of each query per correct case, with `efficiency = ["time"]`
    /// (default: BIRD's 100).
    pub efficiency_iterations: Option<std::num::NonZeroU32>,
    /// Embeddings for SC column matching from an OpenAI-compatible endpoint, cached in
    /// `<snapshots>/embeddings/<model>.jsonl` (default: the offline n-gram embedder).
    pub embeddings: Option<EmbeddingsConfig>,
    /// A sentence-transformers model run in process for SC column matching (a build with the
    /// `embedder` feature): `embedder = { model = "models/all-MiniLM-L6-v2" }`.
    pub embedder: Option<EmbedderConfig>,
    /// Generated mutant families run as cases of this suite: family name → the generator's
    /// JSONL output (`families = { jqe = "benchmarks/demo/jqe.jsonl" }`).
    #[serde(default)]
    pub families: BTreeMap<String, PathBuf>,
    /// Thresholds of this suite, overriding the top-level `[gate]`.
    #[serde(default)]
    pub gate: super::Gates,
    /// Thresholds per family of `families`, on the family's metrics against its seeds:
    /// `family_gate = { tqa-ll = { drop = "<= 10" }, para = { "pass@5" = ">= 0.8" } }`.
    #[serde(default)]
    pub family_gate: super::FamilyGates,
    /// A gate over a metric that could not be computed for some cases (an embeddings server
    /// that is down) gates on its number instead of failing; the warning still shows.
    #[serde(default)]
    pub allow_metric_errors: bool,
    /// When the system samples (`samples = N`): which share of a case's samples must be
    /// correct for it to pass (`majority`, `all`, `any` or `">= 0.6"`; default `majority`).
    #[serde(default)]
    pub pass_rule: super::PassRule,
    /// When the system samples: the level of the tests telling a drop in a case's pass rate
    /// (against the accepted snapshot) from noise (default 0.05).
    #[serde(default)]
    pub alpha: super::Alpha,
    /// `sqlgate test` audits the suite's gold first and says how many findings it has
    /// (`sqlgate audit`); findings never change the verdict.
    #[serde(default)]
    pub audit: bool,
}

/// A structural metric a suite can compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Structural {
    /// Spider exact set match.
    Esm,
    /// Enhanced Tree Matching.
    Etm,
}

/// An efficiency measurement a suite can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EfficiencyMeasure {
    /// Repeated timed executions: `ves`, `rves`.
    Time,
    /// One deterministic cost per query: `ves_steps`, `rves_steps`.
    Steps,
}

/// `embedder = { model = "DIR" }`: the folder of a sentence-transformers model, relative to
/// `sqlgate.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedderConfig {
    /// The model's folder (`config.json`, `tokenizer.json`, `model.safetensors`,
    /// `1_Pooling/config.json`).
    pub model: std::path::PathBuf,
}

/// `embeddings = { base_url = "...", model = "...", api_key_env = "..." }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingsConfig {
    /// The API root with its version segment, e.g. `http://127.0.0.1:8765/v1`.
    pub base_url: String,
    /// The embedding model to ask.
    pub model: String,
    /// The NAME of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// Seconds one request may take, answer included.
    #[serde(default = "default_embeddings_timeout")]
    pub timeout_secs: super::Seconds,
    /// Retries, backoff and rate limit of the requests, as a system's `throttle`.
    #[serde(default)]
    pub throttle: super::ThrottleConfig,
}

fn default_embeddings_timeout() -> super::Seconds {
    super::Seconds::new(60.0).expect("a minute is a valid time bound")
}
