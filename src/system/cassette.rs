//! The prediction cassette: a system's recorded answers, replayed in CI without calling it.
//!
//! A JSON Lines file, one record per line (`{"key": ..., "case": ..., "reply": {...}}`, or
//! `"error"` instead of `"reply"` for a recorded failure), sorted by key, with no timestamps,
//! so it diffs well under version control. The key hashes the system's fingerprint and the
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

use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Reply, Request, SystemError};
use crate::error::InputError;

/// The key of a case's answer: the system's fingerprint with the case's content hash.
pub fn record_key(fingerprint: &str, request: &Request) -> String {
    let mut hash = Hasher::new();
    hash.field(fingerprint).field(case_hash(request));
    hash.hex()
}

/// Hashes what a system is asked about a case: id, database, question, evidence and schema
/// (not the database's path, which differs between machines).
pub fn case_hash(request: &Request) -> String {
    let mut hash = Hasher::new();
    hash.field(&request.id)
        .field(&request.db)
        .field(&request.question)
        .optional(request.evidence.as_deref())
        .field(&request.schema);
    hash.hex()
}

/// SHA-256 over length-prefixed fields, so no two field lists hash alike by concatenation.
pub(crate) struct Hasher(Sha256);

impl Hasher {
    pub(crate) fn new() -> Hasher {
        Hasher(Sha256::new())
    }

    pub(crate) fn field(&mut self, value: impl AsRef<[u8]>) -> &mut Hasher {
        let bytes = value.as_ref();
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }

    pub(crate) fn optional(&mut self, value: Option<&str>) -> &mut Hasher {
        match value {
            Some(value) => self.field([1]).field(value),
            None => self.field([0]),
        }
    }

    pub(crate) fn hex(&self) -> String {
        self.0
            .clone()
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// One recorded answer: a reply, or a failure that asking again would not cure.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    key: String,
    /// The case id, for people reading the file.
    case: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reply: Option<Reply>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<SystemError>,
}

impl Record {
    fn answer(&self) -> Result<Result<Reply, SystemError>, String> {
        match (&self.reply, &self.error) {
            (Some(reply), None) => Ok(Ok(reply.clone())),
            (None, Some(error)) if error.kind.is_transient() => Err(format!(
                "a {:?} error is transient and never recorded",
                error.kind
            )),
            (None, Some(error)) => Ok(Err(error.clone())),
            _ => Err("a record needs exactly one of `reply` and `error`".into()),
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
    records: BTreeMap<String, Record>,
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
        };
        if let Some(text) = read_if_exists(path)? {
            let text = String::from_utf8(text)
                .map_err(|_| InputError::file(path, "the cassette is not valid UTF-8"))?;
            for (index, line) in text.lines().enumerate() {
                let record = parse_record(line).map_err(|problem| {
                    InputError::file(path, format!("bad cassette record: {problem}"))
                        .at_line(index + 1)
                })?;
                if let Some(record) = record {
                    state.records.insert(record.key.clone(), record);
                }
            }
        }
        if let Some(journal) = read_if_exists(&journal_path)? {
            state.dirty = true;
            state.replay_journal(&journal_path, &journal);
        }
        Ok(Cassette {
            path: path.to_path_buf(),
            journal_path,
            state: Mutex::new(state),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The recorded answer under `key`.
    pub fn get(&self, key: &str) -> Option<Result<Reply, SystemError>> {
        let mut state = self.lock();
        state.used.insert(key.to_string());
        state
            .records
            .get(key)
            .and_then(|record| record.answer().ok())
    }

    pub fn len(&self) -> usize {
        self.lock().records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records an answer and journals it at once. Transient failures are not recorded (the
    /// next recording run asks again). A journal that cannot be written is reported in
    /// [`Cassette::warnings`]; the answer is still kept for [`Cassette::finish`].
    pub fn record(&self, key: &str, case: &str, answer: &Result<Reply, SystemError>) {
        let (reply, error) = match answer {
            Ok(reply) => (Some(reply.clone()), None),
            Err(error) if error.kind.is_transient() => return,
            Err(error) => (None, Some(error.clone())),
        };
        let record = Record {
            key: key.to_string(),
            case: case.to_string(),
            reply,
            error,
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
        state.records.insert(record.key.clone(), record);
        state.dirty = true;
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
    pub fn finish(&self, prune: bool) -> Result<usize, InputError> {
        let mut state = self.lock();
        let stale = |state: &State, key: &String| prune && !state.used.contains(key);
        if !state.dirty && !state.records.keys().any(|key| stale(&state, key)) {
            return Ok(0);
        }
        let write_error =
            |e: std::io::Error| InputError::file(&self.path, format!("cannot write: {e}"));
        let folder = match self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(folder) => folder,
            None => Path::new("."),
        };
        std::fs::create_dir_all(folder).map_err(write_error)?;
        let lock_error = |e: std::io::Error| {
            InputError::file(&self.journal_path, format!("cannot lock the journal: {e}"))
        };
        // Held until `journal_lock` is dropped.
        let _journal_lock = lock_journal(&self.journal_path).map_err(lock_error)?;
        let mut merged = Cassette::open(&self.path)?.into_records();
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
                return Err(InputError::file(
                    &self.journal_path,
                    format!("cannot remove the merged journal: {e}"),
                ))
            }
            _ => {}
        }
        state.records = merged;
        state.torn_journal_at = None;
        state.dirty = false;
        Ok(pruned)
    }

    fn into_records(self) -> BTreeMap<String, Record> {
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
    /// Adds the journal's complete, valid lines; a torn last line (no newline: the writer was
    /// interrupted) and unreadable lines are discarded with a warning.
    fn replay_journal(&mut self, journal_path: &Path, journal: &[u8]) {
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
        for (index, line) in journal[..complete].split(|&byte| byte == b'\n').enumerate() {
            let parsed = std::str::from_utf8(line)
                .map_err(|_| "not valid UTF-8".to_string())
                .and_then(parse_record);
            match parsed {
                Ok(Some(record)) => {
                    self.records.insert(record.key.clone(), record);
                }
                Ok(None) => {}
                Err(problem) => self.warnings.push(format!(
                    "{}: line {}: discarded ({problem})",
                    journal_path.display(),
                    index + 1
                )),
            }
        }
    }

    /// Appends one record to the journal in a single write of a complete line.
    fn journal_line(&mut self, journal_path: &Path, record: &Record) -> std::io::Result<()> {
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

/// A record as one line of JSON, newline included.
fn to_line(record: &Record) -> String {
    // Strings and plain structs always serialize.
    let mut line = serde_json::to_string(record).unwrap_or_default();
    line.push('\n');
    line
}

/// A record from a line; `None` for a blank line.
fn parse_record(line: &str) -> Result<Option<Record>, String> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let record: Record = serde_json::from_str(line).map_err(|e| e.to_string())?;
    match record.answer() {
        Ok(_) => Ok(Some(record)),
        Err(problem) => Err(problem),
    }
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
