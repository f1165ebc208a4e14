//! The prediction cassette: a system's recorded answers, replayed in CI without calling it.
//!
//! A JSON Lines file, one record per line (`{"key": ..., "case": ..., "reply": {...},
//! "latency_ms": 1234}`, or `"error"` instead of `"reply"` for a recorded failure), sorted by
//! key, with no timestamps, so it diffs well under version control. `latency_ms` (how long the
//! system took) and the reply's `usage` (the tokens its server counted) are replayed with the
//! answer, so a replay computes the recording run's latency and token numbers; lines written
//! before sqlgate recorded them have neither. The key hashes the system's fingerprint and the
//! case's content: a new prompt or an edited question is asked again.
//!
//! New answers go to a journal beside the file (`<file>.journal`), one complete line per write,
//! as they arrive; opening reads it back, so an interrupted run loses nothing it was told.
//! [`Cassette::finish`] merges the journal into the sorted file (written to a temporary file,
//! then renamed over it) and removes the journal.
//!
//! Runs recording into one cassette at once merge: `finish` holds an exclusive lock on the
//! journal while it re-reads the file and the journal from disk and adds its own answers, so
//! every run's answers end up in the file whichever finishes last.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use super::{Reply, Request, SystemError};
use sqlgate_eval::error::{InputError, OutputError};
use sqlgate_eval::loaders::json_message;
use sqlgate_eval::secrets;
use sqlgate_eval::store::Hasher;

/// The key of a case's answer: the system's fingerprint with the case's content hash.
pub fn record_key(fingerprint: &str, request: &Request) -> String {
    let mut hash = Hasher::new();
    hash.field(fingerprint).field(case_hash(request));
    hash.hex()
}

/// Hashes what a system is asked about a case: id, database, question, evidence, schema and,
/// past the first, which sample (not the database's path, which differs between machines).
/// Sample 0 hashes as an unsampled request, so turning `samples` on keeps the answers already
/// recorded as each case's first sample.
pub fn case_hash(request: &Request) -> String {
    let mut hash = Hasher::new();
    hash.field(&request.id)
        .field(&request.db)
        .field(&request.question)
        .optional(request.evidence.as_deref())
        .field(&request.schema);
    if let Some(k) = request.sample.filter(|&k| k > 0) {
        hash.field(k.to_le_bytes());
    }
    hash.hex()
}

/// One recorded answer: a reply, or a failure that asking again would not cure. Read strictly
/// (as one line of the cassette file, every field named): a record that does not say exactly
/// what the system answered is refused.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "RecordLine", try_from = "RecordLine")]
pub struct RecordedAnswer {
    key: String,
    /// The case id, for people reading the file.
    case: String,
    answer: Result<Reply, SystemError>,
    latency_ms: Option<u64>,
}

impl RecordedAnswer {
    /// The recorded reply, or the failure.
    pub fn answer(&self) -> &Result<Reply, SystemError> {
        &self.answer
    }

    /// How long the system took to give it, in milliseconds (`None` in lines written before
    /// sqlgate recorded it).
    pub fn latency_ms(&self) -> Option<u64> {
        self.latency_ms
    }

    /// The key the answer is recorded under (system fingerprint and case content).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The case id, for people reading the file.
    pub fn case(&self) -> &str {
        &self.case
    }
}

/// A record as written: exactly one of `reply` and `error`, and no other field.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordLine {
    key: String,
    case: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reply: Option<Reply>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<SystemError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latency_ms: Option<u64>,
}

/// Why a cassette line is no record: `serde` reports it at the line.
#[derive(Debug, thiserror::Error)]
enum RecordLineError {
    /// A transient failure (a timeout, a dropped connection) is asked again, never recorded.
    #[error("a {0:?} error is transient and never recorded")]
    Transient(super::SystemErrorKind),
    /// Both a reply and an error, or neither.
    #[error("a record needs exactly one of `reply` and `error`")]
    NotOne,
}

impl TryFrom<RecordLine> for RecordedAnswer {
    type Error = RecordLineError;

    fn try_from(line: RecordLine) -> Result<RecordedAnswer, RecordLineError> {
        let answer = match (line.reply, line.error) {
            (Some(reply), None) => Ok(reply),
            (None, Some(error)) if error.kind.is_transient() => {
                return Err(RecordLineError::Transient(error.kind))
            }
            (None, Some(error)) => Err(error),
            _ => return Err(RecordLineError::NotOne),
        };
        Ok(RecordedAnswer {
            key: line.key,
            case: line.case,
            answer,
            latency_ms: line.latency_ms,
        })
    }
}

impl From<RecordedAnswer> for RecordLine {
    fn from(record: RecordedAnswer) -> RecordLine {
        let (reply, error) = match record.answer {
            Ok(reply) => (Some(reply), None),
            Err(error) => (None, Some(error)),
        };
        RecordLine {
            key: record.key,
            case: record.case,
            reply,
            error,
            latency_ms: record.latency_ms,
        }
    }
}

/// Recorded answers, shared by the threads answering cases.
pub struct Cassette {
    path: PathBuf,
    journal_path: PathBuf,
    state: Mutex<State>,
}

struct State {
    records: BTreeMap<String, RecordedAnswer>,
    /// Opened on the first new answer.
    journal: Option<File>,
    /// The length of the journal's complete lines, when a torn line follows them.
    torn_journal_at: Option<u64>,
    /// The file must be rewritten: new answers, or a journal left by an interrupted run.
    dirty: bool,
    journal_failed: bool,
    warnings: Vec<String>,
    /// Keys looked up or recorded by this run: what a pruning [`Cassette::finish`] keeps.
    used: HashSet<String>,
    /// The keys this process recorded, for a shard's run record.
    recorded: BTreeSet<String>,
}

impl Cassette {
    /// Opens a cassette (a missing file is an empty cassette) and the journal beside it.
    pub fn open(path: &Path) -> Result<Cassette, InputError> {
        let journal_path = with_suffix(path, ".journal");
        let mut state = State {
            records: BTreeMap::new(),
            journal: None,
            torn_journal_at: None,
            dirty: false,
            journal_failed: false,
            warnings: Vec::new(),
            used: HashSet::new(),
            recorded: BTreeSet::new(),
        };
        if let Some(text) = read_if_exists(path)? {
            state.read_file(path, &text)?;
        }
        if let Some(journal) = read_if_exists(&journal_path)? {
            state.dirty = true;
            state.replay_journal(&journal_path, &journal)?;
        }
        Ok(Cassette {
            path: path.to_path_buf(),
            journal_path,
            state: Mutex::new(state),
        })
    }

    /// The cassette's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The recorded answer under `key`.
    pub fn get(&self, key: &str) -> Option<RecordedAnswer> {
        let mut state = self.lock();
        state.used.insert(key.to_string());
        state.records.get(key).cloned()
    }

    /// Answers recorded.
    pub fn len(&self) -> usize {
        self.lock().records.len()
    }

    /// Whether no answer is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records an answer, with how long the system took to give it, and journals it at once.
    /// Transient failures are not recorded (the next recording run asks again). A journal that
    /// cannot be written is reported in [`Cassette::warnings`]; the answer is still kept for
    /// [`Cassette::finish`].
    pub fn record(
        &self,
        key: &str,
        case: &str,
        answer: &Result<Reply, SystemError>,
        latency_ms: Option<u64>,
    ) {
        if answer
            .as_ref()
            .is_err_and(|error| error.kind.is_transient())
        {
            return;
        }
        let record = RecordedAnswer {
            key: key.to_string(),
            case: case.to_string(),
            answer: answer.clone(),
            latency_ms,
        };
        let mut state = self.lock();
        state.used.insert(key.to_string());
        if let Err(problem) = state.journal_line(&self.journal_path, &record) {
            if !std::mem::replace(&mut state.journal_failed, true) {
                state.warnings.push(format!(
                    "{}: cannot journal answers ({problem}); an interrupted run will ask again",
                    self.journal_path.display()
                ));
            }
        }
        state.recorded.insert(record.key.clone());
        state.records.insert(record.key.clone(), record);
        state.dirty = true;
    }

    /// The answers this process recorded, one per key: a shard on one machine hands them to
    /// the merge on another ([`Cassette::add_recorded`]).
    pub fn recorded(&self) -> Vec<RecordedAnswer> {
        let state = self.lock();
        state
            .recorded
            .iter()
            .filter_map(|key| state.records.get(key).cloned())
            .collect()
    }

    /// Marks an answer as used by this run without reading it: a merge's cases were answered
    /// on the shards, and a pruning [`Cassette::finish`] must keep their answers.
    pub fn keep(&self, key: &str) {
        self.lock().used.insert(key.to_string());
    }

    /// Records the answers other processes recorded ([`Cassette::recorded`]), each with the
    /// run record it came from, in order. Two shards may answer one key (suites sharing a
    /// case): the later answer replaces the earlier, and a warning says so.
    pub fn add_recorded(&self, records: &[(&Path, &RecordedAnswer)]) {
        let mut seen = HashSet::new();
        let mut repeated = 0;
        let mut first_repeat = None;
        for &(file, record) in records {
            if !seen.insert(record.key.as_str()) {
                repeated += 1;
                first_repeat.get_or_insert((file, record.case.as_str()));
            }
            self.record(&record.key, &record.case, &record.answer, record.latency_ms);
        }
        if let Some((file, case)) = first_repeat {
            self.lock().warnings.push(format!(
                "{}: {repeated} answer(s) of the shards' run records answer a key another shard \
                 answered too (suites sharing a case); the last one given to `merge` is kept, \
                 first in the answer of case `{case}`",
                file.display()
            ));
        }
    }

    /// Problems met that did not stop the run: torn or unreadable journal lines discarded, a
    /// journal that could not be written.
    pub fn warnings(&self) -> Vec<String> {
        self.lock().warnings.clone()
    }

    /// Writes the cassette sorted by key (to a temporary file renamed over it) and removes the
    /// journal. Does nothing when nothing was recorded since the file was written. What other
    /// runs wrote to the file or the journal meanwhile is kept (this run's answers win a tie).
    ///
    /// With `prune` (after a run that asked for every case), answers this run did not use are
    /// dropped: they belong to questions or system settings that no longer exist. Returns how
    /// many were.
    pub fn finish(&self, prune: bool) -> Result<usize, OutputError> {
        let mut state = self.lock();
        let stale = |state: &State, key: &String| prune && !state.used.contains(key);
        if !state.dirty && !state.records.keys().any(|key| stale(&state, key)) {
            return Ok(0);
        }
        let write_error = |e: std::io::Error| OutputError::new(&self.path, e);
        let folder = match self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(folder) => folder,
            None => Path::new("."),
        };
        std::fs::create_dir_all(folder).map_err(write_error)?;
        // Held until `journal_lock` is dropped.
        let _journal_lock = lock_journal(&self.journal_path)
            .map_err(|e| OutputError::new(&self.journal_path, e))?;
        // What other runs wrote meanwhile; unreadable now, it cannot be merged into.
        let mut merged = Cassette::open(&self.path)
            .map_err(|e| write_error(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?
            .into_records();
        merged.extend(
            state
                .records
                .iter()
                .map(|(key, record)| (key.clone(), record.clone())),
        );
        let before = merged.len();
        merged.retain(|key, _| !stale(&state, key));
        let pruned = before - merged.len();
        let mut text = String::new();
        for record in merged.values() {
            text.push_str(&to_line(record));
        }
        // A unique name: two runs finishing at once never share a temporary file.
        let temporary = with_suffix(
            &self.path,
            &format!(
                ".{}-{}.tmp",
                std::process::id(),
                TEMPORARY_COUNTER.fetch_add(1, Ordering::Relaxed)
            ),
        );
        let written = write_synced(&temporary, text.as_bytes())
            .and_then(|()| std::fs::rename(&temporary, &self.path));
        if let Err(error) = written {
            // Best effort: the write already failed.
            let _ = std::fs::remove_file(&temporary);
            return Err(write_error(error));
        }
        state.journal = None;
        match std::fs::remove_file(&self.journal_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(OutputError::new(&self.journal_path, e))
            }
            _ => {}
        }
        state.records = merged;
        state.torn_journal_at = None;
        state.dirty = false;
        Ok(pruned)
    }

    fn into_records(self) -> BTreeMap<String, RecordedAnswer> {
        self.state
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .records
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked; the records are still whole.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl State {
    /// Reads the sorted file. Every line is a valid record and no key repeats: sqlgate writes
    /// one line per key, so a second line for a key was not written by it (a merge conflict
    /// resolved by keeping both sides?) and nothing says which answer is the system's.
    fn read_file(&mut self, path: &Path, text: &[u8]) -> Result<(), InputError> {
        let text = std::str::from_utf8(text)
            .map_err(|_| InputError::file(path, "the cassette is not valid UTF-8"))?;
        let mut first_line = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            let at = |problem: String| InputError::file(path, problem).at_line(index + 1);
            let record = parse_record(line).map_err(|e| at(bad_record(&e)))?;
            let Some(record) = record else {
                continue;
            };
            if let Some(first) = first_line.insert(record.key.clone(), index + 1) {
                return Err(at(format!(
                    "the key of case `{}` is on line {first} too: a cassette holds one answer per \
                     key; keep the right line and delete the other",
                    record.case
                )));
            }
            self.records.insert(record.key.clone(), record);
        }
        Ok(())
    }

    /// Adds the journal's complete lines over the file's answers. A later line for a key
    /// replaces the earlier answer, which is how the journal works (`--record all` asks again,
    /// runs recording at once each append theirs); a warning counts the replacements. A torn
    /// last line (no newline: the writer was interrupted) and lines that are not JSON (a write
    /// cut short and glued to the next) are discarded with a warning; a JSON line that is not
    /// a valid record was not written by sqlgate, and is an error at its line.
    fn replay_journal(&mut self, journal_path: &Path, journal: &[u8]) -> Result<(), InputError> {
        let complete = journal
            .iter()
            .rposition(|&byte| byte == b'\n')
            .map_or(0, |newline| newline + 1);
        if complete < journal.len() {
            self.torn_journal_at = Some(complete as u64);
            self.warnings.push(format!(
                "{}: discarded a torn last line ({} bytes) left by an interrupted run",
                journal_path.display(),
                journal.len() - complete
            ));
        }
        let mut replaced = 0;
        let mut first_replacing = None;
        for (index, line) in journal[..complete].split(|&byte| byte == b'\n').enumerate() {
            let discard = |problem: &str| {
                format!(
                    "{}: line {}: discarded ({problem})",
                    journal_path.display(),
                    index + 1
                )
            };
            let Ok(line) = std::str::from_utf8(line) else {
                self.warnings.push(discard("not valid UTF-8"));
                continue;
            };
            let record = match parse_record(line) {
                Ok(Some(record)) => record,
                Ok(None) => continue,
                Err(e) if e.classify() == serde_json::error::Category::Data => {
                    return Err(InputError::file(journal_path, bad_record(&e)).at_line(index + 1))
                }
                Err(e) => {
                    self.warnings.push(discard(&e.to_string()));
                    continue;
                }
            };
            if self.records.insert(record.key.clone(), record).is_some() {
                replaced += 1;
                first_replacing.get_or_insert(index + 1);
            }
        }
        if let Some(line) = first_replacing {
            self.warnings.push(format!(
                "{}: line {line}: the first of {replaced} journal line(s) answering a key that \
                 was already answered (recorded again with `--record all`, or by runs \
                 recording at once); the latest answer is kept",
                journal_path.display()
            ));
        }
        Ok(())
    }

    /// Appends one record to the journal in a single write of a complete line.
    fn journal_line(
        &mut self,
        journal_path: &Path,
        record: &RecordedAnswer,
    ) -> std::io::Result<()> {
        let journal = match &mut self.journal {
            Some(journal) => journal,
            None => self.journal.insert(open_journal(journal_path)?),
        };
        if let Some(complete) = self.torn_journal_at.take() {
            // Appending after a torn line would glue the new record onto it.
            journal.set_len(complete)?;
        }
        journal.write_all(to_line(record).as_bytes())?;
        journal.flush()
    }
}

/// Locks the journal, waiting while another run finishes. A finishing run removes the journal,
/// so a lock won on a file no longer at `path` locks nothing others see: take it again on the
/// file that is there now.
fn lock_journal(path: &Path) -> std::io::Result<File> {
    loop {
        let journal = open_journal(path)?;
        journal.lock()?;
        if is_still_at(&journal, path) {
            return Ok(journal);
        }
    }
}

#[cfg(unix)]
fn is_still_at(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(held), Ok(there)) => held.dev() == there.dev() && held.ino() == there.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn is_still_at(_file: &File, path: &Path) -> bool {
    path.exists()
}

fn open_journal(path: &Path) -> std::io::Result<File> {
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder)?;
    }
    OpenOptions::new().create(true).append(true).open(path)
}

/// A record as one line of JSON, newline included, without known secrets (answers are
/// redacted as they come; this keeps any other way in from reaching a committed file).
fn to_line(record: &RecordedAnswer) -> String {
    // Strings and plain structs always serialize.
    let mut line = serde_json::to_string(record).unwrap_or_default();
    secrets::redact_in_place(&mut line);
    line.push('\n');
    line
}

/// A record from a line; `None` for a blank line.
fn parse_record(line: &str) -> Result<Option<RecordedAnswer>, serde_json::Error> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(line).map(Some)
}

/// Why a line is not a cassette record, at its column (the line is the error's).
fn bad_record(error: &serde_json::Error) -> String {
    format!(
        "column {}: bad cassette record: {}",
        error.column(),
        json_message(error)
    )
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Tells apart the temporary files of cassettes finishing at once in one process.
static TEMPORARY_COUNTER: AtomicUsize = AtomicUsize::new(0);

fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>, InputError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(InputError::file(path, format!("cannot read: {e}"))),
    }
}

/// `path` with `suffix` appended to its file name (`a.jsonl` → `a.jsonl.journal`).
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}
