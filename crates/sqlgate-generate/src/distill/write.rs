//! Where a distilled suite is written. `--out` must not overlap the inputs, and is replaced only
//! when it is new, empty, or a folder distill wrote (its manifest lists every file, hashes
//! matching). The whole folder is built in a staging folder beside `--out` (same file system;
//! the candidates' scratch files inside it), the manifest last, then renamed into place: a
//! reader sees the old suite or the new one, never a mixture. The staging folder carries a
//! marker, locked while the run lives, so a killed run's leftover is never read as a suite and
//! the next run removes it.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sqlgate_eval::error::{InputError, OutputError};
use sqlgate_eval::loaders::suite_folder::{
    split_entry, GoldSkip, HashedFile, Manifest, GOLD_SKIPS, MANIFEST, SERVER_DATABASES, UNFINISHED,
};
use sqlgate_eval::store::file_sha256;

use super::DistillError;

/// The scratch folder of the candidates, inside the staging folder.
const SCRATCH: &str = ".scratch";

/// How the run was asked for, recorded in the manifest.
#[derive(Debug, Clone)]
pub struct Provenance {
    /// The version of sqlgate.
    pub sqlgate_version: String,
    /// The command line.
    pub command: Vec<String>,
    /// Files read besides the original databases (gold, predictions).
    pub inputs: Vec<PathBuf>,
}

/// A suite being written: the staging folder, locked, and what was written into it.
pub struct Staging {
    /// `--out`, through its symbolic links.
    out: PathBuf,
    /// `.<out name>.distill-staging` beside `out`.
    dir: PathBuf,
    /// The marker's handle: its lock tells a live run from a killed one.
    _lock: fs::File,
    files: BTreeMap<String, String>,
    originals: Vec<HashedFile>,
    committed: bool,
    /// The engine's file extension (`sqlite`, `duckdb`).
    extension: &'static str,
}

/// The file name of the `k`-th kept database (from 0) of `db`: `<db>_<k+1>.<extension>`.
pub fn kept_name(db: &str, k: usize, extension: &str) -> String {
    format!("{db}_{}.{extension}", k + 1)
}

impl Staging {
    /// Checks `out` against the input files (`db_dir` and the original databases, when they
    /// are files) and what it holds, removes a killed run's leftovers beside it, and opens the
    /// staging folder for databases whose files end in `.<extension>`.
    pub fn begin(
        out: &Path,
        inputs: Option<(&Path, &[PathBuf])>,
        extension: &'static str,
    ) -> Result<Staging, DistillError> {
        let out = resolve(out)?;
        if let Some((db_dir, originals)) = inputs {
            refuse_overlap(&out, db_dir, originals)?;
        }
        if out.exists() && !is_empty_dir(&out) {
            if !out.is_dir() {
                return Err(refusal(&out, "exists and is not a folder").into());
            }
            written_by_distill(&out, extension)?;
        }
        let parent = out.parent().unwrap_or(Path::new("/"));
        fs::create_dir_all(parent).map_err(|e| OutputError::new(parent, e))?;
        let dir = beside(&out, "distill-staging");
        remove_leftover(&dir, extension)?;
        remove_leftover(&beside(&out, "distill-replaced"), extension)?;
        fs::create_dir(&dir).map_err(|e| OutputError::new(&dir, e))?;
        let marker = dir.join(UNFINISHED);
        let lock = fs::File::create(&marker).map_err(|e| OutputError::new(&marker, e))?;
        lock.try_lock().map_err(|e| {
            OutputError::new(&marker, io::Error::other(format!("cannot lock it: {e}")))
        })?;
        Ok(Staging {
            out,
            dir,
            _lock: lock,
            files: BTreeMap::new(),
            originals: Vec::new(),
            committed: false,
            extension,
        })
    }

    /// The engine's file extension.
    pub fn extension(&self) -> &'static str {
        self.extension
    }

    /// An empty scratch folder for one database's candidates.
    pub fn scratch(&self) -> Result<PathBuf, OutputError> {
        let scratch = self.dir.join(SCRATCH);
        if scratch.exists() {
            fs::remove_dir_all(&scratch).map_err(|e| OutputError::new(&scratch, e))?;
        }
        fs::create_dir(&scratch).map_err(|e| OutputError::new(&scratch, e))?;
        Ok(scratch)
    }

    /// Writes `<db>/<db>.<extension>` (a copy of `original`) and `<db>/<db>_<k>.<extension>`
    /// (the kept candidates, moved out of the scratch folder).
    pub fn add_suite(
        &mut self,
        db: &str,
        original: &Path,
        kept: &[PathBuf],
    ) -> Result<(), DistillError> {
        let folder = self.dir.join(db);
        fs::create_dir(&folder).map_err(|e| OutputError::new(&folder, e))?;
        let copy = folder.join(format!("{db}.{}", self.extension));
        fs::copy(original, &copy).map_err(|e| OutputError::new(&copy, e))?;
        let hash = file_sha256(&copy).map_err(|e| OutputError::new(&copy, e))?;
        self.originals.push(HashedFile {
            path: original.to_string_lossy().into_owned(),
            sha256: hash.clone(),
        });
        self.files
            .insert(format!("{db}/{db}.{}", self.extension), hash);
        for (k, candidate) in kept.iter().enumerate() {
            let name = kept_name(db, k, self.extension);
            let to = folder.join(&name);
            fs::rename(candidate, &to).map_err(|e| OutputError::new(&to, e))?;
            let hash = file_sha256(&to).map_err(|e| OutputError::new(&to, e))?;
            self.files.insert(format!("{db}/{name}"), hash);
        }
        Ok(())
    }

    /// Writes `<db>/databases.txt`: the server databases of the suite of `db`, the original
    /// first and then `kept`.
    pub fn add_server_suite(&mut self, db: &str, kept: &[String]) -> Result<(), DistillError> {
        let folder = self.dir.join(db);
        fs::create_dir(&folder).map_err(|e| OutputError::new(&folder, e))?;
        let list = folder.join(SERVER_DATABASES);
        let text: String = std::iter::once(db)
            .chain(kept.iter().map(String::as_str))
            .map(|name| format!("{name}\n"))
            .collect();
        fs::write(&list, text).map_err(|e| OutputError::new(&list, e))?;
        let hash = file_sha256(&list).map_err(|e| OutputError::new(&list, e))?;
        self.files.insert(format!("{db}/{SERVER_DATABASES}"), hash);
        Ok(())
    }

    /// Writes `<db>/gold-skips.json`, the golds not judged on some of the databases of the
    /// suite of `db`, when there are any (after the suite's databases).
    pub fn add_gold_skips(&mut self, db: &str, skips: &[GoldSkip]) -> Result<(), DistillError> {
        if skips.is_empty() {
            return Ok(());
        }
        let path = self.dir.join(db).join(GOLD_SKIPS);
        let text = serde_json::to_string_pretty(skips)
            .map_err(|e| OutputError::new(&path, io::Error::other(e)))?;
        fs::write(&path, text + "\n").map_err(|e| OutputError::new(&path, e))?;
        let hash = file_sha256(&path).map_err(|e| OutputError::new(&path, e))?;
        self.files.insert(format!("{db}/{GOLD_SKIPS}"), hash);
        Ok(())
    }

    /// Writes the manifest and puts the folder in place of `out`, removing the suite it
    /// replaces (checked again: only files distill wrote). Returns the server databases the
    /// replaced suite listed beside its originals, which no suite lists any more.
    pub fn commit(mut self, provenance: &Provenance) -> Result<Vec<String>, DistillError> {
        let scratch = self.dir.join(SCRATCH);
        if scratch.exists() {
            fs::remove_dir_all(&scratch).map_err(|e| OutputError::new(&scratch, e))?;
        }
        let mut inputs = Vec::new();
        for path in &provenance.inputs {
            let sha256 = file_sha256(path)
                .map_err(|e| InputError::file(path, format!("cannot read it: {e}")))?;
            inputs.push(HashedFile {
                path: path.to_string_lossy().into_owned(),
                sha256,
            });
        }
        inputs.append(&mut self.originals);
        let manifest = Manifest::new(
            &provenance.sqlgate_version,
            provenance.command.clone(),
            inputs,
            std::mem::take(&mut self.files),
        );
        let path = self.dir.join(MANIFEST);
        let text = serde_json::to_string_pretty(&manifest)
            .map_err(|e| OutputError::new(&path, io::Error::other(e)))?;
        fs::write(&path, text + "\n").map_err(|e| OutputError::new(&path, e))?;

        let replaced = beside(&self.out, "distill-replaced");
        let mut replaced_databases = Vec::new();
        let old = if self.out.exists() && !is_empty_dir(&self.out) {
            // Checked again: something may have been added while the run went on.
            let files = written_by_distill(&self.out, self.extension)?;
            replaced_databases = server_databases(&files)?;
            fs::rename(&self.out, &replaced).map_err(|e| OutputError::new(&self.out, e))?;
            let moved = |file: PathBuf| match file.strip_prefix(&self.out) {
                Ok(inside) => replaced.join(inside),
                Err(_) => file,
            };
            Some(files.into_iter().map(moved).collect::<Vec<_>>())
        } else {
            if self.out.exists() {
                fs::remove_dir(&self.out).map_err(|e| OutputError::new(&self.out, e))?;
            }
            None
        };
        if let Err(e) = fs::rename(&self.dir, &self.out) {
            if old.is_some() {
                // Best effort: put the old suite back; the error is reported either way.
                let _ = fs::rename(&replaced, &self.out);
            }
            return Err(OutputError::new(&self.out, e).into());
        }
        self.committed = true;
        let marker = self.out.join(UNFINISHED);
        fs::remove_file(&marker).map_err(|e| OutputError::new(&marker, e))?;
        if let Some(files) = old {
            remove_written(&replaced, &files)?;
        }
        Ok(replaced_databases)
    }
}

/// The generated databases the server lists among `files` name (every line but the first,
/// the original).
fn server_databases(files: &[PathBuf]) -> Result<Vec<String>, InputError> {
    let mut names = Vec::new();
    for list in files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n == SERVER_DATABASES))
    {
        let text = fs::read_to_string(list)
            .map_err(|e| InputError::file(list, format!("cannot read it: {e}")))?;
        names.extend(text.lines().skip(1).map(str::to_string));
    }
    Ok(names)
}

impl Drop for Staging {
    /// A failed run removes its own staging folder (best effort: a leftover is recognised and
    /// removed by the next run).
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// `out` through its symbolic links; when it does not exist, its nearest existing ancestor
/// through its links, joined with the rest (nothing is created before `out` is accepted).
fn resolve(out: &Path) -> Result<PathBuf, DistillError> {
    if fs::symlink_metadata(out).is_ok() {
        return fs::canonicalize(out)
            .map_err(|e| refusal(out, &format!("cannot be resolved: {e}")).into());
    }
    let absolute = std::path::absolute(out).map_err(|e| OutputError::new(out, e))?;
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    while fs::symlink_metadata(existing).is_err() {
        rest.push(
            existing
                .file_name()
                .ok_or_else(|| refusal(out, "does not name a folder"))?,
        );
        existing = existing
            .parent()
            .ok_or_else(|| refusal(out, "does not name a folder"))?;
    }
    let mut resolved = fs::canonicalize(existing)
        .map_err(|e| refusal(out, &format!("cannot be resolved: {e}")))?;
    resolved.extend(rest.iter().rev());
    Ok(resolved)
}

/// Refuses an `out` that is, holds or lies inside the database folder, or holds an original.
fn refuse_overlap(out: &Path, db_dir: &Path, originals: &[PathBuf]) -> Result<(), InputError> {
    let canonical = |path: &Path| fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let db_dir = canonical(db_dir);
    let relation = if out == db_dir {
        Some("is")
    } else if db_dir.starts_with(out) {
        Some("holds")
    } else if out.starts_with(&db_dir) {
        Some("lies inside")
    } else {
        None
    };
    if let Some(relation) = relation {
        return Err(refusal(
            out,
            &format!(
                "{relation} the database folder {}: distill never writes where its inputs are; \
                 choose an --out outside it",
                db_dir.display()
            ),
        ));
    }
    if let Some(inside) = originals
        .iter()
        .map(|p| canonical(p))
        .find(|p| p.starts_with(out))
    {
        return Err(refusal(
            out,
            &format!(
                "holds the database {}: distill never writes where its inputs are; choose \
                 another --out",
                inside.display()
            ),
        ));
    }
    Ok(())
}

/// `--out` refused: an input error naming it.
fn refusal(out: &Path, problem: &str) -> InputError {
    InputError::file(out, format!("--out {problem}"))
}

/// `.<name>.<what>` beside `out`.
fn beside(out: &Path, what: &str) -> PathBuf {
    let name = out.file_name().unwrap_or_default().to_string_lossy();
    out.with_file_name(format!(".{name}.{what}"))
}

fn is_empty_dir(path: &Path) -> bool {
    fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
}

/// Every file and folder of `dir`, deepest first, when distill wrote them all: the manifest,
/// the marker, the files the manifest lists (content unchanged) and, in an unfinished folder,
/// its scratch files and `<db>/*.<extension>`. Otherwise an error naming the first that it did
/// not write: such a folder is never replaced.
fn written_by_distill(dir: &Path, extension: &str) -> Result<Vec<PathBuf>, InputError> {
    let manifest = Manifest::read(dir)?;
    let unfinished = dir.join(UNFINISHED).is_file();
    if manifest.is_none() && !unfinished {
        return Err(InputError::file(
            dir,
            format!(
                "is not empty and holds no {MANIFEST}: distill did not write this folder, and \
                 replaces only a folder it wrote; choose a new or empty --out"
            ),
        ));
    }
    let listed = |entry: &str| manifest.as_ref().and_then(|m| m.files.get(entry));
    let foreign = |path: &Path| {
        InputError::file(
            path,
            format!(
                "distill did not write this file (it is not in {}): the folder {} is not \
                 replaced",
                dir.join(MANIFEST).display(),
                dir.display()
            ),
        )
    };
    let mut found = Vec::new();
    for entry in read_dir(dir)? {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| InputError::file(&path, e.to_string()))?;
        if kind.is_file() && (name == MANIFEST || name == UNFINISHED) {
            found.push(path);
        } else if kind.is_dir() && unfinished && name == SCRATCH {
            // Candidates of a killed run, in the folder distill made and marked.
            for file in read_dir(&path)? {
                let file_path = file.path();
                if !file.file_type().is_ok_and(|t| t.is_file()) {
                    return Err(foreign(&file_path));
                }
                found.push(file_path);
            }
            found.push(path);
        } else if kind.is_dir() {
            for file in read_dir(&path)? {
                let file_name = file.file_name().to_string_lossy().into_owned();
                let file_path = file.path();
                let entry_name = format!("{name}/{file_name}");
                if !file.file_type().is_ok_and(|t| t.is_file())
                    || split_entry(&entry_name).is_none()
                {
                    return Err(foreign(&file_path));
                }
                match listed(&entry_name) {
                    Some(hash) if file_sha256(&file_path).ok().as_ref() != Some(hash) => {
                        return Err(InputError::file(
                            &file_path,
                            format!(
                                "changed since distill wrote it (SHA-256 differs from {}): \
                                 the folder is not replaced",
                                dir.join(MANIFEST).display()
                            ),
                        ));
                    }
                    None if !(unfinished && file_name.ends_with(&format!(".{extension}"))) => {
                        return Err(foreign(&file_path));
                    }
                    _ => found.push(file_path),
                }
            }
            found.push(path);
        } else {
            return Err(foreign(&path));
        }
    }
    // The marker and the manifest last, so that a folder half removed is still recognised.
    found.sort_by_key(|p| {
        let name = p.file_name().unwrap_or_default();
        (name == MANIFEST, name == UNFINISHED)
    });
    Ok(found)
}

fn read_dir(dir: &Path) -> Result<Vec<fs::DirEntry>, InputError> {
    fs::read_dir(dir)
        .and_then(|entries| entries.collect())
        .map_err(|e| InputError::file(dir, format!("cannot list the folder: {e}")))
}

/// Removes a folder left beside `--out` by a killed run (a staging folder, or a replaced
/// suite), when distill wrote everything in it and no live run holds its marker.
fn remove_leftover(dir: &Path, extension: &str) -> Result<(), DistillError> {
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return Ok(());
    };
    if !meta.is_dir() {
        return Err(refusal(dir, "exists beside --out and is not a folder distill wrote").into());
    }
    if is_empty_dir(dir) {
        // A run killed before it marked its staging folder.
        return fs::remove_dir(dir).map_err(|e| OutputError::new(dir, e).into());
    }
    if let Ok(marker) = fs::File::open(dir.join(UNFINISHED)) {
        if marker.try_lock().is_err() {
            return Err(InputError::file(
                dir,
                "another `sqlgate distill` is writing this --out (its staging folder is locked)",
            )
            .into());
        }
    }
    let files = written_by_distill(dir, extension)?;
    remove_written(dir, &files)
}

/// Removes `files` (files and then their emptied folders, as [`written_by_distill`] lists them)
/// and `dir`, which must then be empty.
fn remove_written(dir: &Path, files: &[PathBuf]) -> Result<(), DistillError> {
    for path in files {
        let removed = if path.is_dir() {
            fs::remove_dir(path)
        } else {
            fs::remove_file(path)
        };
        removed.map_err(|e| OutputError::new(path, e))?;
    }
    fs::remove_dir(dir).map_err(|e| OutputError::new(dir, e))?;
    Ok(())
}
