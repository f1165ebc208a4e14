//! Database resolution (`<db_dir>/<db>.sqlite`, then `<db_dir>/<db>/<db>.sqlite`), the
//! test-suite folder rule, and building native suites' databases from SQL scripts.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

use super::Case;
use crate::error::{is_plain_name, InputError};
use crate::exec::{Backend, ExecError, Storage, Writer};

/// The database file of a case, or an error naming the case and both paths tried.
pub(super) fn resolve(db_dir: &Path, case: &Case, extension: &str) -> Result<PathBuf, InputError> {
    check_name(case)?;
    if let Some(file) = &case.db_file {
        return if file.is_file() {
            Ok(file.clone())
        } else {
            Err(case.source.error(format!(
                "case `{}`: its database {} does not exist",
                case.id,
                file.display()
            )))
        };
    }
    crate::files::database_file(db_dir, &case.db, extension).map_err(|problem| {
        let what = match problem {
            crate::files::NoDatabaseFile::Missing { .. } => "unknown database",
            crate::files::NoDatabaseFile::Ambiguous { .. } => "database",
        };
        case.source.error(format!(
            "case `{}`: {what} `{}`: {problem}",
            case.id, case.db
        ))
    })
}

/// The server database of a case: its name, as a one-component path.
pub(super) fn server_database(case: &Case) -> Result<PathBuf, InputError> {
    check_name(case)?;
    if case.db_file.is_some() {
        return Err(case.source.error(format!(
            "case `{}` runs on its own database file, which a server engine cannot read",
            case.id
        )));
    }
    Ok(PathBuf::from(&case.db))
}

/// The files a case runs on; with `every_file` and the nested layout, every file of the
/// database's folder whose name contains `.sqlite`: the original `<db>.sqlite` first, then the
/// others sorted by name for determinism; the folder checked (`suite_folder::check`).
pub(super) fn db_files(
    db_dir: &Path,
    case: &Case,
    every_file: bool,
    backend: &dyn Backend,
) -> Result<Vec<PathBuf>, InputError> {
    let extension = match backend.driver().storage() {
        Storage::Files { extension, .. } => extension,
        Storage::Server => "",
    };
    let file = resolve(db_dir, case, extension)?;
    if !every_file
        || case.db_file.is_some()
        || file == db_dir.join(format!("{}.{extension}", case.db))
    {
        // A flat folder holds every database side by side: only the case's own file counts.
        return Ok(vec![file]);
    }
    let folder = db_dir.join(&case.db);
    let entries = std::fs::read_dir(&folder)
        .map_err(|e| InputError::file(&folder, format!("cannot list the folder: {e}")))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| InputError::file(&folder, format!("cannot list the folder: {e}")))?;
        let path = entry.path();
        if !entry
            .file_name()
            .to_string_lossy()
            .contains(&format!(".{extension}"))
        {
            continue;
        }
        // Through links, as SQLite opens it. A subfolder is skipped; anything else that is no
        // regular file (a FIFO that would block the run, a device, a dangling link) is refused
        // rather than silently left out.
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => {}
            Ok(meta) if meta.is_file() => files.push(path),
            Ok(_) => {
                return Err(InputError::file(
                    &path,
                    "is not a regular file (a FIFO, socket or device), so not a database of \
                     the test-suite folder",
                ))
            }
            Err(e) => return Err(InputError::file(&path, format!("cannot be read: {e}"))),
        }
    }
    // `.` sorts before `_`, but a name such as `<db>-extra.sqlite` would sort before the original.
    files.sort_by(|a, b| (a != &file, a).cmp(&(b != &file, b)));
    super::suite_folder::check(db_dir, &case.db, &files, backend)?;
    Ok(files)
}

/// A database name must not reach outside the database folder.
fn check_name(case: &Case) -> Result<(), InputError> {
    let db = case.db.as_str();
    if is_plain_name(db) {
        Ok(())
    } else {
        Err(case.source.error(format!(
            "case `{}`: database name `{}` is not a plain name",
            case.id,
            db.escape_debug()
        )))
    }
}

/// A database a native suite builds from its own SQL scripts.
#[derive(Debug, Clone)]
pub(super) struct DatabaseBuild {
    pub name: String,
    pub scripts: Vec<BuildScript>,
}

#[derive(Debug, Clone)]
pub(super) struct BuildScript {
    /// As written in the manifest (part of the stamp, so that renaming a script rebuilds).
    pub written: String,
    /// Resolved against the manifest's folder.
    pub path: PathBuf,
}

/// Distinguishes the temporary files of concurrent builds within one process.
static BUILD_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// Builds `<db_dir>/<name>.<extension>` with `backend` unless its stamp shows the same scripts
/// built it. The scripts run into a temporary file that is renamed into place only on success.
pub(super) fn build_if_stale(
    db_dir: &Path,
    build: &DatabaseBuild,
    backend: &dyn Backend,
) -> Result<(), InputError> {
    let Storage::Files { extension, .. } = backend.driver().storage() else {
        return Err(InputError::file(
            db_dir,
            format!(
                "database `{}` is built from scripts into a file, and engine `{}` keeps its \
                 databases on a server",
                build.name,
                backend.driver().name()
            ),
        ));
    };
    let contents = build
        .scripts
        .iter()
        .map(|script| super::read_text(&script.path))
        .collect::<Result<Vec<_>, _>>()?;
    let hash = scripts_hash(&build.scripts, &contents);
    let target = db_dir.join(format!("{}.{extension}", build.name));
    let stamp = db_dir.join(format!("{}.stamp", build.name));
    let stamp_matches = std::fs::read_to_string(&stamp).is_ok_and(|old| old.trim() == hash);
    if target.is_file() && stamp_matches {
        return Ok(());
    }
    std::fs::create_dir_all(db_dir)
        .map_err(|e| InputError::file(db_dir, format!("cannot create the folder: {e}")))?;
    let temp = db_dir.join(format!(
        ".{}.{}-{}.building",
        build.name,
        std::process::id(),
        BUILD_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let built = backend
        .create(&temp)
        .map_err(|e| cannot_create(&temp, &build.name, e))
        .and_then(|writer| run_scripts(&temp, writer, build, &contents))
        .and_then(|()| {
            std::fs::rename(&temp, &target).map_err(|e| {
                InputError::file(&target, format!("cannot move the built database: {e}"))
            })
        });
    if let Err(error) = built {
        // Best effort: the build already failed, and a leftover temp file is harmless.
        let _ = std::fs::remove_file(&temp);
        return Err(error);
    }
    std::fs::write(&stamp, format!("{hash}\n"))
        .map_err(|e| InputError::file(&stamp, format!("cannot write the build stamp: {e}")))
}

/// SHA-256 over every script's name and contents, length-prefixed so that no two script
/// lists share a hash by concatenation.
fn scripts_hash(scripts: &[BuildScript], contents: &[String]) -> String {
    let mut hasher = Sha256::new();
    for (script, text) in scripts.iter().zip(contents) {
        for part in [script.written.as_bytes(), text.as_bytes()] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
    }
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Builds `target`, a copy of `original` changed by the SQL `script` (a TQA clone renamed by its
/// `ALTER TABLE` statements), unless its stamp shows the same original and script built it.
/// The original counts by its path and content (with its `-wal` file, as the cache hashes it):
/// an edit that keeps its size and modification time still rebuilds. Like `build_if_stale`, the copy is changed in a temporary file renamed
/// into place on success.
pub fn build_clone_if_stale(
    original: &Path,
    script: &Path,
    target: &Path,
    backend: &dyn Backend,
) -> Result<(), InputError> {
    let text = super::read_text(script)?;
    let content = crate::store::database_hash(original)
        .ok_or_else(|| InputError::file(original, "cannot read the database"))?;
    let origin = crate::store::Hasher::new()
        .field(original.as_os_str().as_encoded_bytes())
        .field(content)
        .hex();
    let build = DatabaseBuild {
        name: target
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
        scripts: vec![BuildScript {
            written: origin,
            path: script.to_path_buf(),
        }],
    };
    let hash = scripts_hash(&build.scripts, std::slice::from_ref(&text));
    let mut stamp = target.as_os_str().to_owned();
    stamp.push(".stamp");
    let stamp = PathBuf::from(stamp);
    let stamp_matches = std::fs::read_to_string(&stamp).is_ok_and(|old| old.trim() == hash);
    if target.is_file() && stamp_matches {
        return Ok(());
    }
    let folder = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder)
        .map_err(|e| InputError::file(folder, format!("cannot create the folder: {e}")))?;
    let temp = folder.join(format!(
        ".{}.{}-{}.building",
        build.name,
        std::process::id(),
        BUILD_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let built = std::fs::copy(original, &temp)
        .map_err(|e| InputError::file(original, format!("cannot copy the database: {e}")))
        .and_then(|_| {
            let writer = backend
                .reopen(&temp)
                .map_err(|e| cannot_create(&temp, &build.name, e))?;
            run_scripts(&temp, writer, &build, std::slice::from_ref(&text))
        })
        .and_then(|()| {
            std::fs::rename(&temp, target).map_err(|e| {
                InputError::file(target, format!("cannot move the built database: {e}"))
            })
        });
    if let Err(error) = built {
        // Best effort: the build already failed, and a leftover temp file is harmless.
        let _ = std::fs::remove_file(&temp);
        return Err(error);
    }
    std::fs::write(&stamp, format!("{hash}\n"))
        .map_err(|e| InputError::file(&stamp, format!("cannot write the build stamp: {e}")))
}

/// Runs the build's scripts in `writer`, which writes `temp`; a failure names the script and
/// the line of its statement.
fn run_scripts(
    temp: &Path,
    mut writer: Box<dyn Writer>,
    build: &DatabaseBuild,
    contents: &[String],
) -> Result<(), InputError> {
    for (script, text) in build.scripts.iter().zip(contents) {
        writer.execute_script(text).map_err(|failed| {
            let error = InputError::file(
                &script.path,
                format!("building database `{}`: {}", build.name, failed.message),
            );
            match failed.line {
                Some(line) => error.at_line(line),
                None => error,
            }
        })?;
    }
    writer.finish().map_err(|e| {
        InputError::file(
            temp,
            format!("cannot create database `{}`: {}", build.name, e.message),
        )
    })
}

/// The error of a database that could not be created or opened for the build.
fn cannot_create(temp: &Path, name: &str, error: ExecError) -> InputError {
    InputError::file(
        temp,
        format!("cannot create database `{name}`: {}", error.message),
    )
}
