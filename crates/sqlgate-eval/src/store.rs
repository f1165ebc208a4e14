//! The on-disk cache that lets a run skip work an earlier run finished: query results and case
//! verdicts, each a file named by the hash of everything it depends on.
//!
//! Every entry starts with a header line naming the sqlgate version that wrote it; an entry of
//! another version (or one that cannot be read) is a miss, never an error. The folder is bounded:
//! [`Store::evict`] removes the least recently used entries (a hit refreshes an entry's
//! modification time) until the total fits. Entries are written atomically, so runs sharing a
//! folder never read half an entry; the temporary files of writes count towards the bound, and
//! eviction removes those that killed runs left (an hour old).

use std::collections::HashMap;
use std::collections::HashSet;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::error::OutputError;
use crate::files::{sidecar, write_atomically, Stamp};
use crate::secrets;

/// The sqlgate version that writes entries, part of every key and header.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The default bound on the cache folder.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// A size-bounded folder of cache entries, shared by the threads of a run.
pub struct Store {
    dir: PathBuf,
    version: String,
    max_bytes: u64,
    /// Content hashes of the files read this run (databases), each computed once. Read by
    /// every case of a rerun: a lookup takes the lock shared and allocates nothing.
    file_hashes: RwLock<HashMap<PathBuf, Arc<OnceLock<Option<Hashed>>>>>,
    /// The first entry that could not be written, and how many could not.
    write_failures: Mutex<(usize, Option<String>)>,
    /// Entries not kept because they were too large for the bound.
    too_large: AtomicUsize,
    hits: AtomicUsize,
    writes: AtomicUsize,
    /// Entry paths this process wrote: a later hit on one is work shared within the run, not
    /// work an earlier run left.
    written: Mutex<HashSet<PathBuf>>,
}

impl Store {
    /// A cache in `dir` (created on the first write), bounded to `max_bytes`, whose entries are
    /// valid for `version` only (the gate's `CODE_VERSION`: [`VERSION`] and a fingerprint of
    /// the code that computes entries).
    pub fn open(dir: &Path, max_bytes: u64, version: &str) -> Store {
        Store {
            dir: dir.to_path_buf(),
            version: version.to_string(),
            max_bytes,
            file_hashes: RwLock::new(HashMap::new()),
            write_failures: Mutex::new((0, None)),
            too_large: AtomicUsize::new(0),
            hits: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
            written: Mutex::new(HashSet::new()),
        }
    }

    /// The folder the entries live in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A key hasher already holding the version and the kind of entry.
    pub fn hasher(&self, kind: &str) -> Hasher {
        let mut hasher = Hasher::new();
        hasher.field(&self.version).field(kind);
        hasher
    }

    /// The entry under `key` of `kind`, when one written by this version is there.
    pub fn get(&self, kind: &str, key: &str) -> Option<Vec<u8>> {
        let path = self.entry_path(kind, key);
        let mut content = Vec::new();
        fs::File::open(&path)
            .and_then(|mut file| file.read_to_end(&mut content))
            .ok()?;
        let header = self.header();
        let body = content.strip_prefix(header.as_bytes())?.to_vec();
        // Least recently used goes first: a hit makes the entry recent again.
        if let Ok(file) = fs::File::options().write(true).open(&path) {
            let _ = file.set_modified(SystemTime::now());
        }
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(body)
    }

    /// Stores an entry. A cache that cannot be written slows later runs but never fails this
    /// one: the problem is counted for [`Store::notes`]. An entry larger than a sixteenth of the
    /// bound is not kept: it would push many others out. Nor is one holding a known secret
    /// ([`crate::secrets`]): redacted, it would not be what a fresh run computes.
    pub fn put(&self, kind: &str, key: &str, body: &[u8]) {
        if secrets::holds_secret(body) {
            return;
        }
        if body.len() as u64 > self.max_bytes / 16 {
            self.too_large.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.writes.fetch_add(1, Ordering::Relaxed);
        let mut content = self.header().into_bytes();
        content.extend_from_slice(body);
        let path = self.entry_path(kind, key);
        match write_atomically(&path, &content) {
            Ok(()) => {
                self.written
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(path);
            }
            Err(error) => {
                let mut failures = self
                    .write_failures
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                failures.0 += 1;
                failures.1.get_or_insert_with(|| error.to_string());
            }
        }
    }

    /// Whether this process wrote the entry under `key` of `kind`.
    pub fn written_by_this_run(&self, kind: &str, key: &str) -> bool {
        let path = self.entry_path(kind, key);
        self.written
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&path)
    }

    /// The SHA-256 of a file's content and of its `-wal` file when there is one (a database
    /// in WAL mode keeps recent commits there), computed once per run; `None` when unreadable
    /// or written to while it was read.
    pub fn file_hash(&self, path: &Path) -> Option<String> {
        self.hashed(path, |hashed| hashed.hex.clone())
    }

    /// The file's [`Stamp`] while [`Store::file_hash`] read it: whoever reads the file later
    /// and finds another stamp reads other content than the hash names.
    pub fn file_stamp(&self, path: &Path) -> Option<Stamp> {
        self.hashed(path, |hashed| hashed.stamp)
    }

    fn hashed<T>(&self, path: &Path, read: impl FnOnce(&Hashed) -> T) -> Option<T> {
        let known = self
            .file_hashes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(path)
            .cloned();
        let cell = known.unwrap_or_else(|| {
            let mut hashes = self.file_hashes.write().unwrap_or_else(|p| p.into_inner());
            Arc::clone(hashes.entry(path.to_path_buf()).or_default())
        });
        cell.get_or_init(|| Hashed::of(path)).as_ref().map(read)
    }

    /// How many entries were read from the cache so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::Relaxed)
    }

    /// Problems that did not stop the run (entries that could not be written or were too
    /// large to keep).
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let failures = self
            .write_failures
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(first) = &failures.1 {
            notes.push(format!(
                "{} cache entries could not be written (the next run recomputes them): {first}",
                failures.0
            ));
        }
        let too_large = self.too_large.load(Ordering::Relaxed);
        if too_large > 0 {
            notes.push(format!(
                "{too_large} cache entries were larger than a sixteenth of the cache's {} MiB \
                 and not kept (a suite's verdicts are one entry): raise --cache-size to keep them",
                self.max_bytes >> 20
            ));
        }
        notes
    }

    /// Removes the temporary files that killed runs left, then the least recently used entries
    /// until the folder holds at most its bound (writes in progress count, but stay). Returns
    /// how many files were removed. Only a store that was written to can have grown: one that
    /// was only read skips listing the folder.
    pub fn evict(&self) -> Result<usize, OutputError> {
        if self.writes.load(Ordering::Relaxed) == 0 {
            return Ok(0);
        }
        let mut files = Vec::new();
        collect_files(&self.dir, &mut files).map_err(|e| OutputError::new(&self.dir, e))?;
        let mut total: u64 = files.iter().map(|file| file.size).sum();
        let now = SystemTime::now();
        let (temporary, mut entries): (Vec<CacheFile>, Vec<CacheFile>) =
            files.into_iter().partition(|file| file.temporary);
        let mut removed = 0;
        for file in temporary {
            let age = now.duration_since(file.modified).unwrap_or_default();
            if age > ABANDONED_AFTER {
                let _ = fs::remove_file(&file.path);
                total -= file.size;
                removed += 1;
            }
        }
        entries.sort_by_key(|file| file.modified);
        for file in entries {
            if total <= self.max_bytes {
                break;
            }
            // Another run may have removed it already; its bytes are gone either way.
            let _ = fs::remove_file(&file.path);
            total -= file.size;
            removed += 1;
        }
        Ok(removed)
    }

    fn header(&self) -> String {
        format!("sqlgate-cache {}\n", self.version)
    }

    /// `<dir>/<kind>/<first two hex digits>/<key>`: small folders even with many entries.
    fn entry_path(&self, kind: &str, key: &str) -> PathBuf {
        self.dir.join(kind).join(&key[..2.min(key.len())]).join(key)
    }
}

/// A temporary file this old was left by a writer that is gone (a run killed mid-write): writing
/// an entry takes milliseconds. Its age decides, not its writer's pid: runs sharing the folder
/// may be on other machines or in other containers (a CI cache restored elsewhere, a network
/// folder), where the pid names another process or none, and pids are reused.
const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(60 * 60);

/// A file of the cache folder: an entry, or a temporary file of a write.
struct CacheFile {
    path: PathBuf,
    size: u64,
    modified: SystemTime,
    temporary: bool,
}

/// Every file under `dir` that a store writes (a missing folder is empty).
fn collect_files(dir: &Path, out: &mut Vec<CacheFile>) -> io::Result<()> {
    let listing = match fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    for entry in listing {
        let entry = entry?;
        let meta = entry.metadata()?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let temporary = crate::files::is_temporary(&name);
        if meta.is_dir() {
            collect_files(&entry.path(), out)?;
        } else if temporary || !name.starts_with('.') {
            out.push(CacheFile {
                path: entry.path(),
                size: meta.len(),
                modified: meta.modified()?,
                temporary,
            });
        }
    }
    Ok(())
}

/// The file beside a database whose content [`Store::file_hash`] covers with the database's:
/// results of an engine whose databases have another such file are not cached.
pub const DATABASE_SIDECAR: &str = "-wal";

/// The SHA-256 of a database file's content and of its `-wal` file, as [`Store::file_hash`]
/// computes it, without a store; `None` when unreadable or written to while read.
pub fn database_hash(path: &Path) -> Option<String> {
    Hashed::of(path).map(|hashed| hashed.hex)
}

/// A file's content hash and its stamp while it was hashed.
struct Hashed {
    hex: String,
    stamp: Stamp,
}

impl Hashed {
    /// `None` when the file cannot be read, or changes while it is read.
    fn of(path: &Path) -> Option<Hashed> {
        let stamp = Stamp::of(path);
        let mut hasher = Hasher::new();
        hasher.field(hash_file(path).ok()?);
        match hash_file(&sidecar(path, DATABASE_SIDECAR)) {
            Ok(wal) => hasher.field([1]).field(wal),
            Err(error) if error.kind() == io::ErrorKind::NotFound => hasher.field([0]),
            Err(_) => return None,
        };
        (Stamp::of(path) == stamp).then(|| Hashed {
            hex: hasher.hex(),
            stamp,
        })
    }
}

/// The SHA-256 of a file's content as 64 lowercase hex digits, as `sha256sum` prints it.
pub fn file_sha256(path: &Path) -> io::Result<String> {
    hash_file(path).map(|digest| hex(&digest))
}

/// The SHA-256 of `bytes` as 64 lowercase hex digits.
pub fn bytes_sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The SHA-256 of a file's content.
fn hash_file(path: &Path) -> io::Result<[u8; 32]> {
    let mut file = fs::File::open(path)?;
    let mut hasher = Sha256::new();
    io::copy(&mut file, &mut hasher)?;
    Ok(hasher.finalize().into())
}

/// SHA-256 over length-prefixed fields, so no two field lists hash alike by concatenation.
pub struct Hasher(Sha256);

impl Hasher {
    /// A hasher with no field yet.
    pub fn new() -> Hasher {
        Hasher(Sha256::new())
    }

    /// Adds `value` as one field, prefixed with its length.
    pub fn field(&mut self, value: impl AsRef<[u8]>) -> &mut Hasher {
        let bytes = value.as_ref();
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }

    /// Adds an optional text field; `None` and `Some("")` hash differently.
    pub fn optional(&mut self, value: Option<&str>) -> &mut Hasher {
        match value {
            Some(value) => self.field([1]).field(value),
            None => self.field([0]),
        }
    }

    /// The digest so far, as 64 lowercase hex digits.
    pub fn hex(&self) -> String {
        hex(&self.0.clone().finalize())
    }
}

/// Lowercase hex digits of `bytes`.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(2 * bytes.len());
    for &byte in bytes {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    hex
}

impl Default for Hasher {
    fn default() -> Self {
        Hasher::new()
    }
}

#[cfg(test)]
mod tests {
    use super::Store;

    #[test]
    fn entries_of_another_version_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let old = Store::open(dir.path(), 1 << 20, "0.0.1");
        old.put("results", "abcdef", b"old body");
        assert_eq!(
            old.get("results", "abcdef").as_deref(),
            Some(&b"old body"[..])
        );
        let new = Store::open(dir.path(), 1 << 20, "0.0.2");
        assert_eq!(new.get("results", "abcdef"), None);
        assert_eq!(new.hits(), 0);
    }

    #[test]
    fn an_entry_holding_a_known_secret_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20, "1");
        crate::secrets::register(b"store-secret-2718");
        store.put("results", "abcdef", br#"[["store-secret-2718"]]"#);
        assert_eq!(store.get("results", "abcdef"), None);
        store.put("results", "abcdef", br#"[["***"]]"#);
        assert!(store.get("results", "abcdef").is_some());
    }

    #[test]
    fn eviction_removes_the_least_recently_used_first() {
        let dir = tempfile::tempdir().unwrap();
        // Entries of 116 bytes (a 16-byte header): 13 fit in 1600 bytes, 14 do not.
        let store = Store::open(dir.path(), 1600, "1");
        let body = vec![b'x'; 100];
        let keys: Vec<String> = (0..14).map(|i| format!("k{i:02}")).collect();
        for key in &keys {
            store.put("results", key, &body);
            std::thread::sleep(std::time::Duration::from_millis(15));
        }
        // Reading the oldest makes it the most recent: the second one goes instead.
        assert!(store.get("results", &keys[0]).is_some());
        assert_eq!(store.evict().unwrap(), 1);
        assert!(store.get("results", &keys[0]).is_some());
        assert!(store.get("results", &keys[1]).is_none());
        assert!(keys[2..]
            .iter()
            .all(|key| store.get("results", key).is_some()));
    }

    #[test]
    fn eviction_counts_temporary_files_and_removes_abandoned_ones() {
        let dir = tempfile::tempdir().unwrap();
        // 13 entries of 116 bytes (1508) fit in 1600 bytes.
        let store = Store::open(dir.path(), 1600, "1");
        let keys: Vec<String> = (0..13).map(|i| format!("k{i:02}")).collect();
        for key in &keys {
            store.put("results", key, &[b'x'; 100]);
        }
        // Beside them, a write in progress and one that a run killed two hours ago left.
        let folder = dir.path().join("results").join("k0");
        let in_progress = folder.join(".k99.4242-0.tmp");
        std::fs::write(&in_progress, [b'x'; 200]).unwrap();
        let abandoned = folder.join(".k98.4243-0.tmp");
        std::fs::write(&abandoned, [b'x'; 200]).unwrap();
        let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        std::fs::File::options()
            .write(true)
            .open(&abandoned)
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
        // The abandoned file goes; the one in progress stays, and its 200 bytes push one entry out.
        assert_eq!(store.evict().unwrap(), 2);
        assert!(!abandoned.exists() && in_progress.exists());
        let kept = keys
            .iter()
            .filter(|key| store.get("results", key).is_some())
            .count();
        assert_eq!(kept, 12);
    }

    #[test]
    fn an_entry_too_large_for_the_bound_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1600, "1");
        store.put("results", "big", &[b'x'; 101]);
        assert!(store.get("results", "big").is_none());
        let notes = store.notes();
        assert!(
            notes.len() == 1 && notes[0].starts_with("1 cache entries were larger"),
            "{notes:?}"
        );
        store.put("results", "small", &[b'x'; 100]);
        assert!(store.get("results", "small").is_some());
    }

    #[test]
    fn a_changed_file_hashes_differently() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        std::fs::write(&path, b"one").unwrap();
        let first = Store::open(dir.path(), 1 << 20, "1").file_hash(&path);
        std::fs::write(&path, b"two").unwrap();
        let second = Store::open(dir.path(), 1 << 20, "1").file_hash(&path);
        assert!(first.is_some() && second.is_some());
        assert_ne!(first, second);
        std::fs::write(format!("{}-wal", path.display()), b"wal").unwrap();
        let with_wal = Store::open(dir.path(), 1 << 20, "1").file_hash(&path);
        assert_ne!(second, with_wal);
    }
}
