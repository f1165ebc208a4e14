//! Test-suite folders (`<db_dir>/<db>/`, every file whose name contains `.<ext>`, the
//! engine's extension, run as a database) are checked when they are listed, before any case
//! runs: each file must open as a database, and a folder `sqlgate distill` wrote must hold
//! exactly the files its manifest lists, with their hashes; a server engine's suite is the
//! list `<db>/databases.txt`, read only when the manifest vouches for it. The manifest's format lives here, beside the reader that trusts it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::error::{is_plain_name, InputError};
use crate::exec::{Backend, Open, Source, Storage};
use crate::files::Stamp;
use crate::store::{bytes_sha256, file_sha256};

/// In a suite `sqlgate distill` wrote on a server engine, `<db>/databases.txt` names the
/// suite's databases on the server, one per line, the original `<db>` first.
pub const SERVER_DATABASES: &str = "databases.txt";

/// A server suite's list is a few short lines: anything larger is not one.
const MAX_SERVER_LIST_BYTES: u64 = 1 << 20;

/// The manifest `sqlgate distill` writes last into the folder given as `--out` (its
/// `--db-dir` for `score`, `test` and `audit`).
pub const MANIFEST: &str = "sqlgate-distill.json";

/// Present while `sqlgate distill` writes a folder: a folder holding it is unfinished (a killed
/// or failed run) and is never read as a suite.
pub const UNFINISHED: &str = ".sqlgate-distill-unfinished";

/// `written_by` of every manifest.
const WRITTEN_BY: &str = "sqlgate distill";

/// A manifest is a few lines per database: anything larger is not one.
const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// What a distilled folder holds and how it was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always `sqlgate distill`.
    pub written_by: String,
    /// The version of sqlgate that wrote the folder.
    pub sqlgate_version: String,
    /// The command line, as given.
    pub command: Vec<String>,
    /// The files the run read (gold, predictions, original databases) with their SHA-256.
    pub inputs: Vec<HashedFile>,
    /// Every file written, as `<db>/<file>`, with its SHA-256 (64 lowercase hex digits).
    pub files: BTreeMap<String, String>,
}

/// A file and its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HashedFile {
    /// As given on the command line or resolved by the loader.
    pub path: String,
    /// 64 lowercase hex digits.
    pub sha256: String,
}

impl Manifest {
    /// A manifest of `sqlgate distill` at this version.
    pub fn new(
        sqlgate_version: &str,
        command: Vec<String>,
        inputs: Vec<HashedFile>,
        files: BTreeMap<String, String>,
    ) -> Manifest {
        Manifest {
            written_by: WRITTEN_BY.to_string(),
            sqlgate_version: sqlgate_version.to_string(),
            command,
            inputs,
            files,
        }
    }

    /// The manifest of folder `dir`; `None` when it has none; an error naming the manifest when
    /// it is not one `sqlgate distill` writes.
    pub fn read(dir: &Path) -> Result<Option<Manifest>, InputError> {
        let path = dir.join(MANIFEST);
        let bad = |problem: String| InputError::file(&path, problem);
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(bad(format!("cannot read the manifest: {e}"))),
        };
        let mut text = String::new();
        file.take(MAX_MANIFEST_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|e| bad(format!("cannot read the manifest: {e}")))?;
        if text.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(bad(format!(
                "the manifest is larger than {MAX_MANIFEST_BYTES} bytes"
            )));
        }
        let manifest: Manifest = serde_json::from_str(&text)
            .map_err(|e| bad(format!("not a manifest of `sqlgate distill`: {e}")))?;
        if manifest.written_by != WRITTEN_BY {
            return Err(bad(format!(
                "not a manifest of `sqlgate distill`: written_by is `{}`",
                manifest.written_by
            )));
        }
        for (name, hash) in &manifest.files {
            if split_entry(name).is_none() {
                return Err(bad(format!(
                    "lists `{name}`, which is not `<database>/<file>`"
                )));
            }
            let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
            if hash.len() != 64 || !hash.bytes().all(hex) {
                return Err(bad(format!(
                    "the hash of `{name}` is not 64 lowercase hex digits"
                )));
            }
        }
        Ok(Some(manifest))
    }

    /// The first file of database folder `db` of `dir` listed here that is missing or whose
    /// content is not the one listed, with the problem.
    fn mismatch(&self, dir: &Path, db: &str) -> Option<InputError> {
        self.files
            .iter()
            .filter(|(name, _)| split_entry(name).is_some_and(|(d, _)| d == db))
            .find_map(|(name, listed)| {
                let path = dir.join(name);
                match file_sha256(&path) {
                    Ok(found) if &found == listed => None,
                    Ok(_) => Some(InputError::file(
                        &path,
                        format!(
                            "its content is not what `sqlgate distill` wrote (SHA-256 differs \
                             from {}): the folder was changed or only partly written",
                            dir.join(MANIFEST).display()
                        ),
                    )),
                    Err(e) => Some(InputError::file(
                        &path,
                        format!(
                            "listed in {} but cannot be read ({e}): the folder is incomplete",
                            dir.join(MANIFEST).display()
                        ),
                    )),
                }
            })
    }
}

/// `<db>/<file>`, both plain names.
pub fn split_entry(name: &str) -> Option<(&str, &str)> {
    let (db, file) = name.split_once('/')?;
    (is_plain_name(db) && is_plain_name(file)).then_some((db, file))
}

/// Folders already checked in this process, with the stamps of their files and manifest: each
/// is hashed and opened once per run however many cases read it.
static CHECKED: LazyLock<Mutex<HashSet<Fingerprint>>> = LazyLock::new(Mutex::default);

#[derive(PartialEq, Eq, Hash)]
struct Fingerprint {
    files: Vec<(PathBuf, Stamp)>,
    manifest: Stamp,
}

/// Refuses a database folder `sqlgate distill` has not finished writing (a killed or failed
/// run's staging folder): it is never read, whatever the mode.
pub(super) fn refuse_unfinished(db_dir: &Path) -> Result<(), InputError> {
    let marker = db_dir.join(UNFINISHED);
    if std::fs::symlink_metadata(&marker).is_ok() {
        return Err(InputError::file(
            db_dir,
            format!(
                "`sqlgate distill` did not finish writing this folder ({} is still there): it \
                 is not a test suite; run distill again",
                marker.display()
            ),
        ));
    }
    Ok(())
}

/// The databases of the suite of `db` that `sqlgate distill` wrote on a server engine, as
/// `db_dir/<db>/databases.txt` lists them (original first); `None` when there is no such list.
/// A list is read only when the manifest of a finished `db_dir` vouches for it, each line a
/// plain name, the first `db`: anything else is an error naming the file.
pub fn server_suite(db_dir: &Path, db: &str) -> Result<Option<Vec<PathBuf>>, InputError> {
    let list = db_dir.join(db).join(SERVER_DATABASES);
    if std::fs::symlink_metadata(&list).is_err() {
        return Ok(None);
    }
    refuse_unfinished(db_dir)?;
    let manifest = Manifest::read(db_dir)?;
    match &manifest {
        Some(manifest)
            if manifest
                .files
                .contains_key(&format!("{db}/{SERVER_DATABASES}")) =>
        {
            if let Some(error) = manifest.mismatch(db_dir, db) {
                return Err(error);
            }
        }
        _ => {
            return Err(InputError::file(
                &list,
                format!(
                    "not listed in {}: `sqlgate distill` did not write it, and the test-suite \
                     mode would run every case on the databases it names",
                    db_dir.join(MANIFEST).display()
                ),
            ))
        }
    }
    let mut text = String::new();
    std::fs::File::open(&list)
        .and_then(|file| {
            file.take(MAX_SERVER_LIST_BYTES + 1)
                .read_to_string(&mut text)
        })
        .map_err(|e| InputError::file(&list, format!("cannot read it: {e}")))?;
    if text.len() as u64 > MAX_SERVER_LIST_BYTES {
        return Err(InputError::file(
            &list,
            format!("the list is larger than {MAX_SERVER_LIST_BYTES} bytes"),
        ));
    }
    let names: Vec<&str> = text.lines().collect();
    if let Some((line, name)) = names
        .iter()
        .enumerate()
        .find(|(_, name)| !is_plain_name(name))
    {
        return Err(InputError::file(
            &list,
            format!("`{}` is not a database name", name.escape_debug()),
        )
        .at_line(line + 1));
    }
    if names.first() != Some(&db) {
        return Err(InputError::file(
            &list,
            format!("the first database must be the original, `{db}`"),
        )
        .at_line(1));
    }
    Ok(Some(names.into_iter().map(PathBuf::from).collect()))
}

/// In a suite `sqlgate distill` wrote, `<db>/gold-skips.json` names the golds whose own answer
/// on some of its generated databases is not one result: where their ORDER BY ties they are
/// judged against each answer the ties allow (`tied`); where those are too many, an
/// equivalent rewrite fails, or they fail, they are not judged there (a correct answer could
/// fail). Written only when there is such a gold.
pub const GOLD_SKIPS: &str = "gold-skips.json";

/// A gold skip list holds a few entries per gold and database: anything larger is not one.
const MAX_GOLD_SKIPS_BYTES: u64 = 64 << 20;

/// One gold judged on one database of its suite otherwise than by its one result there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoldSkip {
    /// The gold's alternatives, as the benchmark gives them.
    pub gold: Vec<String>,
    /// The database (a file name of the folder, or a server database's name).
    pub database: String,
    /// Why its answer there is not one result.
    pub why: SkipReason,
}

/// Why a gold's answer on a database is not one result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Its ORDER BY leaves the order of its rows open (a LIMIT cutting through tied keys, or
    /// tied rows compared in order): it is judged there against every answer the ties allow
    /// (`metrics::ex::ties`), the only reason that keeps the database for the gold.
    Tied,
    /// Its ORDER BY leaves the order open in more ways than are tried: not judged there.
    OrderOpen,
    /// An equivalent rewrite of it scores 0 there (only an open order can do that).
    RewriteRejected,
    /// It fails there (an error, or its bound of work) while it runs on the original.
    GoldFails,
}

/// Gold skip lists already read in this process, by file and stamp: golds (alternatives) to
/// the databases listed for them, with why.
type SkipsByGold = HashMap<Vec<String>, HashMap<String, SkipReason>>;
/// A skip list's path with its stamp and its manifest's.
type SkipsKey = (PathBuf, Stamp, Stamp);
static SKIPS: LazyLock<Mutex<HashMap<SkipsKey, Arc<SkipsByGold>>>> = LazyLock::new(Mutex::default);

/// The databases a case runs on in a distilled suite, as its gold skip list says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// The suite's databases, the original first, without those where the gold is not judged.
    pub files: Vec<PathBuf>,
    /// Those of `files` where the gold's ORDER BY ties ([`SkipReason::Tied`]).
    pub tied: Vec<PathBuf>,
}

/// `files`, the databases of the suite of `db` in `db_dir` (the original first), without those
/// on which `gold` is not judged and with those where it ties, as `<db>/gold-skips.json` says.
/// The list is read only when the manifest of `db_dir` lists it with its hash; each of its
/// databases must be one of the suite's generated ones (never the original).
pub fn judged(
    db_dir: &Path,
    db: &str,
    gold: &[String],
    files: Vec<PathBuf>,
) -> Result<Judged, InputError> {
    let path = db_dir.join(db).join(GOLD_SKIPS);
    let all = |files| Judged {
        files,
        tied: Vec::new(),
    };
    if files.len() < 2 || std::fs::symlink_metadata(&path).is_err() {
        return Ok(all(files));
    }
    let skips = read_skips(db_dir, db, &path, &files)?;
    let Some(listed) = skips.get(gold) else {
        return Ok(all(files));
    };
    let why = |file: &PathBuf| {
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        listed.get(name.as_ref()).copied()
    };
    let mut judged = all(Vec::new());
    for (i, file) in files.into_iter().enumerate() {
        match (i, why(&file)) {
            (0, _) | (_, None) => judged.files.push(file),
            (_, Some(SkipReason::Tied)) => {
                judged.tied.push(file.clone());
                judged.files.push(file);
            }
            (_, Some(_)) => {}
        }
    }
    Ok(judged)
}

/// The skip list at `path` (of the suite of `db` holding `files`), checked against the
/// manifest.
fn read_skips(
    db_dir: &Path,
    db: &str,
    path: &Path,
    files: &[PathBuf],
) -> Result<Arc<SkipsByGold>, InputError> {
    let key = (
        path.to_path_buf(),
        Stamp::of(path),
        Stamp::of(&db_dir.join(MANIFEST)),
    );
    let cache = || SKIPS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(skips) = cache().get(&key) {
        return Ok(Arc::clone(skips));
    }
    let bad = |problem: String| InputError::file(path, problem);
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_GOLD_SKIPS_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| bad(format!("cannot read it: {e}")))?;
    if bytes.len() as u64 > MAX_GOLD_SKIPS_BYTES {
        return Err(bad(format!(
            "the list is larger than {MAX_GOLD_SKIPS_BYTES} bytes"
        )));
    }
    refuse_unfinished(db_dir)?;
    let listed = Manifest::read(db_dir)?
        .and_then(|manifest| manifest.files.get(&format!("{db}/{GOLD_SKIPS}")).cloned());
    match listed {
        Some(hash) if hash == bytes_sha256(&bytes) => {}
        Some(_) => {
            return Err(bad(format!(
                "its content is not what `sqlgate distill` wrote (SHA-256 differs from {})",
                db_dir.join(MANIFEST).display()
            )))
        }
        None => {
            return Err(bad(format!(
                "not listed in {}: `sqlgate distill` did not write it, and it would leave \
                 databases of the suite out of some cases",
                db_dir.join(MANIFEST).display()
            )))
        }
    }
    let entries: Vec<GoldSkip> = serde_json::from_slice(&bytes)
        .map_err(|e| bad(format!("not a gold skip list of `sqlgate distill`: {e}")))?;
    let generated: HashSet<String> = files
        .iter()
        .skip(1)
        .map(|file| {
            file.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let mut skips = SkipsByGold::new();
    for entry in entries {
        if !generated.contains(&entry.database) {
            return Err(bad(format!(
                "names `{}`, which is not a generated database of the suite",
                entry.database.escape_debug()
            )));
        }
        skips
            .entry(entry.gold)
            .or_default()
            .insert(entry.database, entry.why);
    }
    let skips = Arc::new(skips);
    cache().insert(key, Arc::clone(&skips));
    Ok(skips)
}

/// Checks the files `files` listed in the test-suite folder `<db_dir>/<db>/`: none is a `-wal`,
/// `-shm` or `-journal` side file; with a manifest in `db_dir`, they are exactly the files it
/// lists for `db`, with its hashes; each opens as a database whose schema reads (header, open,
/// `sqlite_schema`; not a full integrity check).
pub(super) fn check(
    db_dir: &Path,
    db: &str,
    files: &[PathBuf],
    backend: &dyn Backend,
) -> Result<(), InputError> {
    let fingerprint = Fingerprint {
        files: files.iter().map(|f| (f.clone(), Stamp::of(f))).collect(),
        manifest: Stamp::of(&db_dir.join(MANIFEST)),
    };
    let checked = || CHECKED.lock().unwrap_or_else(PoisonError::into_inner);
    if checked().contains(&fingerprint) {
        return Ok(());
    }
    // Side files first: opening a database whose `-wal` is there would create its `-shm`.
    for file in files {
        refuse_side_file(file, backend)?;
    }
    if let Some(manifest) = Manifest::read(db_dir)? {
        if let Some(extra) = files.iter().find(|file| {
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            !manifest.files.contains_key(&format!("{db}/{name}"))
        }) {
            return Err(InputError::file(
                extra,
                format!(
                    "not listed in {}: `sqlgate distill` did not write it, and the test-suite \
                     mode would run every case on it",
                    db_dir.join(MANIFEST).display()
                ),
            ));
        }
        if let Some(error) = manifest.mismatch(db_dir, db) {
            return Err(error);
        }
    }
    for file in files {
        check_database(file, backend)?;
    }
    checked().insert(fingerprint);
    Ok(())
}

/// The engine's file extension and the suffixes of the files beside a database that are part
/// of it: the engine's sidecars (SQLite's `-wal`, DuckDB's `.wal`) and SQLite's `-shm` and
/// `-journal`.
fn file_kind(backend: &dyn Backend) -> (&'static str, Vec<&'static str>) {
    let mut sides = vec!["-wal", "-shm", "-journal"];
    match backend.driver().storage() {
        Storage::Files {
            extension,
            sidecars,
        } => {
            for sidecar in sidecars {
                if !sides.contains(sidecar) {
                    sides.push(sidecar);
                }
            }
            (extension, sides)
        }
        Storage::Server => ("", sides),
    }
}

/// A side file (a write-ahead log, a journal) is part of a database, not one.
fn refuse_side_file(file: &Path, backend: &dyn Backend) -> Result<(), InputError> {
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    let (extension, sides) = file_kind(backend);
    if let Some(suffix) = sides.iter().find(|suffix| name.ends_with(*suffix)) {
        let database = &name[..name.len() - suffix.len()];
        let kind = match *suffix {
            "-shm" => "shared-memory index",
            "-journal" => "rollback journal",
            _ => "write-ahead log",
        };
        return Err(InputError::file(
            file,
            format!(
                "the {kind} of `{database}`, left by a writer that did not close it (killed?): \
                 a test-suite folder runs every file whose name contains `.{extension}` as a \
                 database; open `{database}` once with its engine (which folds it in) or remove \
                 it"
            ),
        ));
    }
    Ok(())
}

/// One file of a test-suite folder opens as a database and its schema reads.
fn check_database(file: &Path, backend: &dyn Backend) -> Result<(), InputError> {
    let (extension, _) = file_kind(backend);
    backend
        .open(file, Open::for_source(Source::Gold))
        .map(drop)
        .map_err(|e| {
            let prefix = format!("cannot open database {}: ", file.display());
            let reason = e.message.strip_prefix(&prefix).unwrap_or(&e.message);
            InputError::file(
                file,
                format!(
                    "a test-suite folder runs every file whose name contains `.{extension}` as \
                     a database, and this one cannot be read as one: {reason}"
                ),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `<dir>/shop/` with two databases and a manifest listing both.
    fn distilled(dir: &Path) -> Vec<PathBuf> {
        let files: Vec<PathBuf> = ["shop.sqlite", "shop_1.sqlite"]
            .iter()
            .map(|name| {
                let path = dir.join("shop").join(name);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                rusqlite::Connection::open(&path)
                    .unwrap()
                    .execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
                    .unwrap();
                path
            })
            .collect();
        let listed = files
            .iter()
            .map(|f| {
                let name = f.file_name().unwrap().to_string_lossy();
                (format!("shop/{name}"), file_sha256(f).unwrap())
            })
            .collect();
        let manifest = Manifest::new("0", Vec::new(), Vec::new(), listed);
        std::fs::write(
            dir.join(MANIFEST),
            serde_json::to_string(&manifest).unwrap(),
        )
        .unwrap();
        files
    }

    #[test]
    fn a_checked_folder_is_checked_again_once_a_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let files = distilled(dir.path());
        check(dir.path(), "shop", &files, &*sqlgate_engine_sqlite::files()).unwrap();
        check(dir.path(), "shop", &files, &*sqlgate_engine_sqlite::files()).unwrap();
        // Same size, one byte past the header changed: the modification time moves.
        let mut bytes = std::fs::read(&files[1]).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&files[1], bytes).unwrap();
        let error =
            check(dir.path(), "shop", &files, &*sqlgate_engine_sqlite::files()).unwrap_err();
        assert_eq!(error.file, files[1], "{error}");
        assert!(error.message.contains("SHA-256 differs"), "{error}");
    }

    #[test]
    fn a_manifest_naming_a_path_outside_its_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        distilled(dir.path());
        let text = std::fs::read_to_string(dir.path().join(MANIFEST)).unwrap();
        std::fs::write(
            dir.path().join(MANIFEST),
            text.replace("shop/shop_1.sqlite", "../shop_1.sqlite"),
        )
        .unwrap();
        let error = Manifest::read(dir.path()).unwrap_err();
        assert!(error.message.contains("not `<database>/<file>`"), "{error}");
    }

    /// `<dir>/shop/databases.txt` holding `text`, listed in a manifest when `vouched`.
    fn server_list(dir: &Path, text: &str, vouched: bool) {
        let list = dir.join("shop").join(SERVER_DATABASES);
        std::fs::create_dir_all(list.parent().unwrap()).unwrap();
        std::fs::write(&list, text).unwrap();
        if vouched {
            let listed = [(
                "shop/databases.txt".to_string(),
                file_sha256(&list).unwrap(),
            )];
            let manifest = Manifest::new("0", Vec::new(), Vec::new(), listed.into());
            std::fs::write(
                dir.join(MANIFEST),
                serde_json::to_string(&manifest).unwrap(),
            )
            .unwrap();
        }
    }

    #[test]
    fn a_server_suite_is_read_only_when_its_manifest_vouches_for_it() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(server_suite(dir.path(), "shop").unwrap(), None);
        server_list(dir.path(), "shop\nshop__d0123abcd_1\n", true);
        assert_eq!(
            server_suite(dir.path(), "shop").unwrap(),
            Some(vec![
                PathBuf::from("shop"),
                PathBuf::from("shop__d0123abcd_1")
            ])
        );
        // Changed after distill wrote it.
        let list = dir.path().join("shop").join(SERVER_DATABASES);
        std::fs::write(&list, "shop\nother\n").unwrap();
        let error = server_suite(dir.path(), "shop").unwrap_err();
        assert!(error.message.contains("SHA-256 differs"), "{error}");
        // Not in any manifest.
        let dir = tempfile::tempdir().unwrap();
        server_list(dir.path(), "shop\n", false);
        let error = server_suite(dir.path(), "shop").unwrap_err();
        assert!(error.message.contains("not listed in"), "{error}");
        // Larger than any list distill writes: refused, not read in part.
        let dir = tempfile::tempdir().unwrap();
        let long = format!("shop\n{}", "x\n".repeat(MAX_SERVER_LIST_BYTES as usize));
        server_list(dir.path(), &long, true);
        let error = server_suite(dir.path(), "shop").unwrap_err();
        assert!(error.message.contains("larger than"), "{error}");
        // Vouched for, but not a list of database names, or not starting with the original.
        for (text, line, problem) in [
            ("shop\n../etc\n", 2, "not a database name"),
            ("shop\nx\u{202e}y\n", 2, "not a database name"),
            ("other\nshop\n", 1, "must be the original"),
            ("", 1, "must be the original"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            server_list(dir.path(), text, true);
            let error = server_suite(dir.path(), "shop").unwrap_err();
            assert!(error.message.contains(problem), "{text:?}: {error}");
            assert_eq!(error.line, Some(line), "{text:?}: {error}");
        }
    }

    /// A skip list the manifest vouches for (a forged manifest can) is still read with care:
    /// truncated JSON, or a database that is the original or not of the suite, is refused.
    #[test]
    fn a_vouched_gold_skip_list_is_refused_when_broken_or_naming_the_original() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("shop");
        std::fs::create_dir_all(&folder).unwrap();
        let files: Vec<PathBuf> = ["shop.sqlite", "shop_1.sqlite"]
            .iter()
            .map(|name| folder.join(name))
            .collect();
        let gold = vec!["SELECT 1".to_string()];
        let judged_with = |text: &str| {
            let list = folder.join(GOLD_SKIPS);
            std::fs::write(&list, text).unwrap();
            let listed = [(format!("shop/{GOLD_SKIPS}"), file_sha256(&list).unwrap())];
            let manifest = Manifest::new("0", Vec::new(), Vec::new(), listed.into());
            std::fs::write(
                dir.path().join(MANIFEST),
                serde_json::to_string(&manifest).unwrap(),
            )
            .unwrap();
            judged(dir.path(), "shop", &gold, files.clone()).map_err(|e| e.to_string())
        };
        let listed = |database: &str, why: &str| {
            format!(r#"[{{"gold": ["SELECT 1"], "database": "{database}", "why": "{why}"}}]"#)
        };
        let entry = |database: &str| listed(database, "order_open");
        let skipped = judged_with(&entry("shop_1.sqlite")).unwrap();
        assert_eq!((skipped.files, skipped.tied), (files[..1].to_vec(), vec![]));
        // A tied gold keeps the database, judged by its ties.
        let tied = judged_with(&listed("shop_1.sqlite", "tied")).unwrap();
        assert_eq!(
            (tied.files, tied.tied),
            (files.clone(), files[1..].to_vec())
        );
        for (text, problem) in [
            (entry("shop.sqlite"), "not a generated database"),
            (entry("../shop_1.sqlite"), "not a generated database"),
            (
                entry("shop_1.sqlite")[..30].to_string(),
                "not a gold skip list",
            ),
            (String::new(), "not a gold skip list"),
        ] {
            let error = judged_with(&text).unwrap_err();
            assert!(
                error.contains(problem) && error.contains(GOLD_SKIPS),
                "{error}"
            );
        }
    }
}
