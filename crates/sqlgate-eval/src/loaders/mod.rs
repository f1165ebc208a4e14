//! Benchmarks: loaders turn files of every supported format into cases.
//!
//! `load` detects the gold file's format, parses it into [`Case`]s, checks that every case's
//! database exists (building native suites' databases first), and `load_predictions` aligns a
//! predictions file with those cases. The accepted formats are documented in `docs/formats.md`.

mod answer_document;
mod bird;
mod databases;
mod defog;
mod family;
mod hardness;
mod livesqlbench;
mod native;
mod predictions;
mod spider;
pub mod suite_folder;
mod trustsql;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{check_printable, InputError};
use crate::exec::{Backend, Open, Source, Storage};
use crate::metrics::ex::Mode;
use crate::metrics::state::StateTask;

pub use answer_document::{parse_answer_document, AnswerDocument, AnswerDocumentError};
pub use databases::build_clone_if_stale;
pub use family::load_family;
pub use predictions::{load_prediction_slots, load_predictions, Answer, PredFormat, Prediction};

/// Where a case or prediction came from, for error messages and JUnit `file`/`line`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SourceRef {
    /// The file the record was read from.
    pub file: PathBuf,
    /// 0-based record index in the file.
    pub record: usize,
    /// 1-based line of the record, where the format has lines.
    pub line: Option<usize>,
}

impl SourceRef {
    /// An error located at this record.
    pub fn error(&self, message: impl Into<String>) -> InputError {
        let error = InputError::file(&self.file, message).at_record(self.record);
        match self.line {
            Some(line) => error.at_line(line),
            None => error,
        }
    }
}

/// One benchmark question.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Case {
    /// Stable across runs and machines: the record's own id, else its 0-based index.
    pub id: String,
    /// The database the case runs on, by name.
    pub db: String,
    /// The database file itself, when the case runs on its own copy of `db` (a TQA clone with
    /// renamed tables and columns) rather than on the benchmark's database of that name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_file: Option<PathBuf>,
    /// A generated variant's cosine similarity to its seed's question, in [0, 1] (the paraphrase
    /// generator's similarity filter): the robustness metrics' CS-adjusted interval reads it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cs: Option<f64>,
    /// The natural-language question the system is asked.
    pub question: String,
    /// Extra knowledge given with the question (BIRD's `evidence`), when the benchmark has it.
    pub evidence: Option<String>,
    /// Acceptable gold queries (alternatives). Empty exactly when the case is infeasible.
    pub gold: Vec<String>,
    /// Whether the question can be answered on its database (TrustSQL's infeasible ones cannot).
    pub feasible: bool,
    /// Free tags: difficulty, hardness, category, source...
    pub tags: BTreeMap<String, String>,
    /// A state case's setup and checks: its gold and its answer are statements judged by the
    /// state they leave ([`crate::metrics::state`]); `None` for a query case.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<StateTask>,
    /// Where the case was read, for messages and reports.
    pub source: SourceRef,
}

/// A loaded benchmark: its cases and where their databases live.
#[derive(Debug, Clone)]
pub struct Benchmark {
    /// The benchmark's name, used in test names and reports.
    pub name: String,
    /// The cases, in file order.
    pub cases: Vec<Case>,
    /// Folder searched for `<db>.sqlite` and `<db>/<db>.sqlite`.
    pub db_dir: PathBuf,
    /// The gold file's format (it selects the default comparison mode).
    pub format: GoldFormat,
    /// Spider `tables.json`, when given or found beside the gold file.
    pub tables: Option<PathBuf>,
    /// Explicit join keys per database (native `[join_keys]`), e.g.
    /// `"orders.customer_id = customers.customer_id"`.
    pub join_keys: BTreeMap<String, Vec<String>>,
    /// The engine the databases are opened with: files in `db_dir` named `<db>.<extension>`,
    /// or a server's databases named by `db`.
    pub backend: Arc<dyn Backend>,
}

impl Benchmark {
    /// Whether the databases are on a server, named by `db`, not files in `db_dir`.
    pub fn on_server(&self) -> bool {
        self.backend.on_server()
    }

    /// The extension of the engine's database files (`sqlite`, `duckdb`).
    pub fn extension(&self) -> &'static str {
        match self.backend.driver().storage() {
            Storage::Files { extension, .. } => extension,
            Storage::Server => "",
        }
    }

    /// Whether an apology SELECT (`SELECT 'Sorry, ...' AS answer`,
    /// [`is_apology`](crate::model_output::is_apology)) abstains when nothing says otherwise:
    /// only in a suite that declares abstention, scored in `trustsql` mode or holding
    /// infeasible questions. The other references score such an answer as SQL.
    pub fn apology_abstains_by_default(&self, mode: Mode) -> bool {
        mode == Mode::Trustsql || self.cases.iter().any(|case| !case.feasible)
    }

    /// The database file(s) where a case's gold gives one answer: [`Benchmark::suite_files`],
    /// and with `every_file` those of a distilled suite on which the gold is not judged or
    /// ties left out ([`Benchmark::judged`]).
    pub fn db_files(&self, case: &Case, every_file: bool) -> Result<Vec<PathBuf>, InputError> {
        let files = self.suite_files(case, every_file)?;
        if !every_file {
            return Ok(files);
        }
        let judged = self.judged(case, files)?;
        Ok(judged
            .files
            .into_iter()
            .filter(|file| !judged.tied.contains(file))
            .collect())
    }

    /// The database file(s) of a case's database. With `every_file` (`testsuite` mode,
    /// `every_database`), the nested layout `<db_dir>/<db>/` yields every file of that folder
    /// whose name contains `.sqlite` (spec `evaluators.md` §2.3): the original `<db>.sqlite`
    /// first, then the others sorted by name; otherwise, and for the flat layout, the one file.
    /// On a server, the one database is the case's `db` name; with `every_file`, the
    /// databases of its distilled suite when `<db_dir>/<db>/databases.txt` lists them
    /// ([`suite_folder::server_suite`]). The same for every case of one database.
    pub fn suite_files(&self, case: &Case, every_file: bool) -> Result<Vec<PathBuf>, InputError> {
        if self.on_server() {
            let db = databases::server_database(case)?;
            return Ok(match every_file {
                true => suite_folder::server_suite(&self.db_dir, &case.db)?.unwrap_or(vec![db]),
                false => vec![db],
            });
        }
        databases::db_files(&self.db_dir, case, every_file, &*self.backend)
    }

    /// `files`, the case's [`Benchmark::suite_files`] with `every_file`, without the
    /// databases on which a distilled suite does not judge the case's gold, and those where
    /// the gold ties ([`suite_folder::judged`]).
    pub fn judged(
        &self,
        case: &Case,
        files: Vec<PathBuf>,
    ) -> Result<suite_folder::Judged, InputError> {
        suite_folder::judged(&self.db_dir, &case.db, &case.gold, files)
    }

    /// Whether the case's database on a server has a distilled suite
    /// (`<db_dir>/<db>/databases.txt`).
    pub fn has_server_suite(&self, case: &Case) -> bool {
        self.on_server()
            && std::fs::symlink_metadata(
                self.db_dir
                    .join(&case.db)
                    .join(suite_folder::SERVER_DATABASES),
            )
            .is_ok()
    }

    /// Whether a case's database is the original of a folder, `<db_dir>/<db>/<db>.sqlite`,
    /// which may hold other databases of the same schema beside it (a test-suite folder).
    pub fn in_folder(&self, case: &Case, file: &Path) -> bool {
        !self.on_server()
            && case.db_file.is_none()
            && file
                == self
                    .db_dir
                    .join(&case.db)
                    .join(format!("{}.{}", case.db, self.extension()))
    }

    /// Every case id is unique and printable (also after generated families were added).
    pub fn check_ids(&self) -> Result<(), InputError> {
        check_case_ids(&self.cases)
    }

    /// Refuses a benchmark holding state cases for a tool that reads query golds (the
    /// generators, the audit, distill): it names the first such case.
    pub fn refuse_state_cases(&self) -> Result<(), InputError> {
        match self.cases.iter().find(|case| case.state.is_some()) {
            Some(case) => Err(case.source.error(format!(
                "case `{}` is a state case: the generators, the audit and distill read query \
                 golds; give them a suite of query cases (docs/state.md)",
                case.id
            ))),
            None => Ok(()),
        }
    }

    /// Every case's database exists and opens: an empty file, a file that is not a database
    /// or a hot journal stops the run here instead of failing every case as a gold error; so
    /// does a database folder `sqlgate distill` has not finished writing.
    /// Server databases are checked by connecting to them (`scoring::check_server`).
    pub fn check_databases(&self) -> Result<(), InputError> {
        if self.on_server() {
            return Ok(());
        }
        suite_folder::refuse_unfinished(&self.db_dir)?;
        let mut checked = std::collections::HashSet::new();
        for case in &self.cases {
            if checked.insert(case.db.as_str()) {
                let file = databases::resolve(&self.db_dir, case, self.extension())?;
                self.backend
                    .open(&file, Open::for_source(Source::Gold))
                    .map_err(|e| {
                        case.source
                            .error(format!("case `{}`: {}", case.id, e.message))
                    })?;
            }
        }
        Ok(())
    }
}

/// How to load a gold file; every field but the engine defaults to detection.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Database folder (default: the gold file's folder; native: the manifest's `db_dir`).
    pub db_dir: Option<PathBuf>,
    /// Spider `tables.json` (default: `tables.json` beside the gold file, when present).
    pub tables: Option<PathBuf>,
    /// Skips format detection.
    pub format: Option<GoldFormat>,
    /// The engine the databases are opened with (loading checks that each opens).
    pub backend: Arc<dyn Backend>,
    /// Keeps LiveSQLBench's Python test cases to judge answers by them (an opt-in: they are the
    /// benchmark's code, run with the user's rights; docs/state.md).
    pub python_tests: bool,
}

impl LoadOptions {
    /// Detection of everything, databases opened with `backend`.
    pub fn on(backend: Arc<dyn Backend>) -> LoadOptions {
        LoadOptions {
            db_dir: None,
            tables: None,
            format: None,
            backend,
            python_tests: false,
        }
    }
}

/// The gold file formats (see `docs/formats.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GoldFormat {
    /// sqlgate's own suite: a TOML manifest and JSONL cases.
    Native,
    /// Defog sql-eval questions CSV (`query` holds `;`-separated alternatives).
    Defog,
    /// Defog sql-eval `idk.csv`: unanswerable questions with an apology SELECT.
    DefogIdk,
    /// Spider `gold.txt`: `SQL<TAB>db_id` lines, blank lines between interactions.
    Spider,
    /// BIRD `dev_gold.sql`: `SQL<TAB>db_id` lines.
    BirdSql,
    /// Spider `dev.json`: records with `query`, `db_id`, `question`.
    SpiderJson,
    /// BIRD `dev.json`: records with `question_id`, `SQL`, `evidence`, `difficulty`.
    BirdJson,
    /// TrustSQL data: records with `id`, `query` (`"null"` when infeasible), `type`, `note`.
    Trustsql,
    /// LiveSQLBench's JSON lines: `instance_id`, `selected_database`, `query`, `sol_sql`...
    Livesqlbench,
}

impl GoldFormat {
    /// Every format, in the order the documentation lists them.
    pub const ALL: [GoldFormat; 9] = [
        GoldFormat::Native,
        GoldFormat::Defog,
        GoldFormat::DefogIdk,
        GoldFormat::Spider,
        GoldFormat::BirdSql,
        GoldFormat::SpiderJson,
        GoldFormat::BirdJson,
        GoldFormat::Trustsql,
        GoldFormat::Livesqlbench,
    ];

    /// The comparison mode of the format's own evaluator.
    pub fn default_mode(self) -> Mode {
        match self {
            GoldFormat::Native | GoldFormat::Spider | GoldFormat::SpiderJson => Mode::Testsuite,
            GoldFormat::Defog | GoldFormat::DefogIdk => Mode::Defog,
            GoldFormat::BirdSql | GoldFormat::BirdJson | GoldFormat::Livesqlbench => Mode::Bird,
            GoldFormat::Trustsql => Mode::Trustsql,
        }
    }

    /// Detects the format from the extension and, for CSV and JSON, the content.
    fn detect(path: &Path, text: &str) -> Result<GoldFormat, InputError> {
        match extension(path).as_str() {
            "toml" => Ok(GoldFormat::Native),
            "csv" => Ok(defog::detect(text)),
            "txt" => Ok(GoldFormat::Spider),
            "sql" => Ok(GoldFormat::BirdSql),
            "json" => detect_json(path, text),
            "jsonl" if livesqlbench::detect(text) => Ok(GoldFormat::Livesqlbench),
            other => Err(InputError::file(
                path,
                format!(
                    "cannot tell the gold format from the extension `{other}` (expected .toml, \
                     .csv, .txt, .sql, .json, or .jsonl with LiveSQLBench's `instance_id` and \
                     `sol_sql`); pass the format explicitly"
                ),
            )),
        }
    }
}

/// What a gold file's loader yields.
struct Suite {
    name: String,
    cases: Vec<Case>,
    db_dir: PathBuf,
    join_keys: BTreeMap<String, Vec<String>>,
}

/// Loads a gold file into a benchmark and checks that every case's database exists.
pub fn load(path: &Path, opts: &LoadOptions) -> Result<Benchmark, InputError> {
    let backend = opts.backend.clone();
    let text = read_text(path)?;
    let format = match opts.format {
        Some(format) => format,
        None => GoldFormat::detect(path, &text)?,
    };
    let folder = parent_folder(path);
    let reference = |cases: Vec<Case>| Suite {
        name: file_stem(path),
        cases,
        db_dir: opts.db_dir.clone().unwrap_or_else(|| folder.clone()),
        join_keys: BTreeMap::new(),
    };
    let Suite {
        name,
        cases,
        db_dir,
        join_keys,
    } = match format {
        GoldFormat::Native => native::load(path, &text, opts.db_dir.as_deref(), &*backend)?,
        GoldFormat::Defog => reference(defog::load(path, &text, false)?),
        GoldFormat::DefogIdk => reference(defog::load(path, &text, true)?),
        GoldFormat::Spider | GoldFormat::BirdSql => {
            reference(spider::load_gold_lines(path, &text)?)
        }
        GoldFormat::SpiderJson => reference(spider::load_json(path, &text)?),
        GoldFormat::BirdJson => reference(bird::load(path, &text)?),
        GoldFormat::Trustsql => reference(trustsql::load(path, &text)?),
        GoldFormat::Livesqlbench => reference(livesqlbench::load(path, &text, opts.python_tests)?),
    };
    if cases.is_empty() {
        return Err(InputError::file(path, "the file holds no cases"));
    }
    check_case_ids(&cases)?;
    let mut bench = Benchmark {
        name,
        cases,
        db_dir,
        join_keys,
        format,
        tables: tables_file(&folder, opts.tables.as_deref())?,
        backend,
    };
    bench.check_databases()?;
    if matches!(format, GoldFormat::Spider | GoldFormat::SpiderJson) {
        hardness::tag(&mut bench)?;
    }
    Ok(bench)
}

/// A JSON gold file's format, decided from the first record's keys.
fn detect_json(path: &Path, text: &str) -> Result<GoldFormat, InputError> {
    let records = parse_json_records(path, text)?;
    let Some(first) = records.first() else {
        return Err(InputError::file(path, "the file holds no cases"));
    };
    let has = |key: &str| first.contains_key(key);
    if has("SQL") {
        Ok(GoldFormat::BirdJson)
    } else if has("query") && (has("type") || has("note")) {
        Ok(GoldFormat::Trustsql)
    } else if has("query") && has("db_id") {
        Ok(GoldFormat::SpiderJson)
    } else {
        let keys: Vec<&str> = first.keys().map(String::as_str).collect();
        Err(InputError::file(
            path,
            format!(
                "cannot tell the JSON gold format from the keys of record 0 ({}): expected \
                 `SQL` (BIRD), `query` with `type`/`note` (TrustSQL), or `query` with `db_id` \
                 (Spider)",
                keys.join(", ")
            ),
        )
        .at_record(0))
    }
}

/// Parses a JSON file holding a list of objects.
fn parse_json_records(
    path: &Path,
    text: &str,
) -> Result<Vec<serde_json::Map<String, serde_json::Value>>, InputError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| json_error(path, &e))?;
    let serde_json::Value::Array(items) = value else {
        return Err(InputError::file(path, "expected a JSON list of records"));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| match item {
            serde_json::Value::Object(map) => Ok(map),
            other => Err(InputError::file(
                path,
                format!("expected a JSON object, found {}", json_kind(&other)),
            )
            .at_record(index)),
        })
        .collect()
}

/// Deserializes one record of a JSON list into a format's record type.
fn json_record<T: serde::de::DeserializeOwned>(
    path: &Path,
    index: usize,
    record: serde_json::Map<String, serde_json::Value>,
) -> Result<T, InputError> {
    serde_json::from_value(serde_json::Value::Object(record))
        .map_err(|e| InputError::file(path, e.to_string()).at_record(index))
}

/// A JSON syntax error, located at its line.
fn json_error(path: &Path, error: &serde_json::Error) -> InputError {
    let problem = json_message(error);
    match error.line() {
        0 => InputError::file(path, problem),
        line => {
            InputError::file(path, format!("column {}: {problem}", error.column())).at_line(line)
        }
    }
}

/// serde_json's message without its trailing ` at line L column C`.
pub fn json_message(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(cut) if error.line() > 0 => text[..cut].to_string(),
        _ => text,
    }
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

/// A JSON id that may be written as a string or an integer, as a string.
fn json_id(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(id) => Some(id.clone()),
        serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// Two cases with one id would make predictions ambiguous; an id or database name with a
/// control character would print as lines of its own in every report.
fn check_case_ids(cases: &[Case]) -> Result<(), InputError> {
    let mut first_seen: HashMap<&str, &SourceRef> = HashMap::new();
    for case in cases {
        check_printable("case id", &case.id)
            .and_then(|()| check_printable("database name", &case.db))
            .map_err(|problem| case.source.error(problem.to_string()))?;
        if let Some(first) = first_seen.insert(&case.id, &case.source) {
            return Err(case.source.error(format!(
                "duplicate id `{}` (first used by {})",
                case.id,
                describe_record(first)
            )));
        }
    }
    Ok(())
}

/// "record 3 (line 5)" or "record 3".
fn describe_record(source: &SourceRef) -> String {
    match source.line {
        Some(line) => format!("record {} (line {line})", source.record),
        None => format!("record {}", source.record),
    }
}

/// The `tables.json` to use: the given one (which must exist) or one beside the gold file.
fn tables_file(folder: &Path, given: Option<&Path>) -> Result<Option<PathBuf>, InputError> {
    match given {
        Some(path) if path.is_file() => Ok(Some(path.to_path_buf())),
        Some(path) => Err(InputError::file(path, "tables file not found")),
        None => {
            let beside = folder.join("tables.json");
            Ok(beside.is_file().then_some(beside))
        }
    }
}

/// Reads a UTF-8 text file (a leading byte-order mark is dropped).
fn read_text(path: &Path) -> Result<String, InputError> {
    let bytes =
        std::fs::read(path).map_err(|e| InputError::file(path, format!("cannot read: {e}")))?;
    match String::from_utf8(bytes) {
        Ok(text) => Ok(match text.strip_prefix('\u{feff}') {
            Some(rest) => rest.to_string(),
            None => text,
        }),
        Err(e) => {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
            Err(InputError::file(path, "not valid UTF-8").at_line(line))
        }
    }
}

fn extension(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The folder holding a file (`.` for a bare file name).
fn parent_folder(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests;
