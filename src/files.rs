//! File utilities shared by every layer that writes: outputs are written whole or not at all.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::InputError;

/// Writes a file so readers see the old content or the new, never a part: a temporary file in
/// the same folder, synced, then renamed over `path`. Creates the parent folder.
pub fn write_atomically(path: &Path, content: &[u8]) -> Result<(), InputError> {
    let fail = |error: io::Error| InputError::file(path, format!("cannot write: {error}"));
    let file_name = path
        .file_name()
        .ok_or_else(|| InputError::file(path, "not a file path"))?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent {
        fs::create_dir_all(parent).map_err(fail)?;
    }
    let temp = path.with_file_name(format!(
        ".{}.{}.tmp",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let written = fs::File::create(&temp).and_then(|mut file| {
        file.write_all(content)?;
        file.sync_all()
    });
    match written.and_then(|()| fs::rename(&temp, path)) {
        Ok(()) => Ok(()),
        Err(error) => {
            let _ = fs::remove_file(&temp);
            Err(fail(error))
        }
    }
}

/// A database's file in a database folder: `<db_dir>/<db>.sqlite` (flat), else
/// `<db_dir>/<db>/<db>.sqlite` (Spider's nested layout). Every reader of databases resolves them
/// here, so the layouts are supported alike everywhere. The error names both paths tried.
pub fn database_file(db_dir: &Path, db: &str) -> Result<PathBuf, String> {
    let flat = db_dir.join(format!("{db}.sqlite"));
    let nested = db_dir.join(db).join(format!("{db}.sqlite"));
    if flat.is_file() {
        Ok(flat)
    } else if nested.is_file() {
        Ok(nested)
    } else {
        Err(format!(
            "neither {} nor {} exists",
            flat.display(),
            nested.display()
        ))
    }
}
