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

/// `<db>-wal` or `<db>-journal`, beside the database.
pub fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// What a commit changes in a SQLite database or its `-wal` file: size, modification time,
/// and the header's change counter (database) or salts (WAL, new at each restart). The
/// modification time alone is too coarse: two commits within a clock tick share it. Equal
/// stamps at two moments mean the file was not written between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    db: Option<FileStamp>,
    wal: Option<FileStamp>,
}

type FileStamp = (u64, std::time::SystemTime, [u8; 8]);

/// Where the change counter (and page count) sit in a database header.
const DB_COUNTER_AT: u64 = 24;
/// Where the two salts sit in a WAL header.
const WAL_SALTS_AT: u64 = 16;

impl Stamp {
    pub fn of(db: &Path) -> Stamp {
        Stamp {
            db: file_stamp(db, DB_COUNTER_AT),
            wal: file_stamp(&sidecar(db, "-wal"), WAL_SALTS_AT),
        }
    }
}

/// Size, modification time and the 8 header bytes at `at` (zeros when the file is shorter).
fn file_stamp(path: &Path, at: u64) -> Option<FileStamp> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = fs::File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    let mut header = [0u8; 8];
    if meta.len() >= at + 8 {
        file.seek(SeekFrom::Start(at)).ok()?;
        file.read_exact(&mut header).ok()?;
    }
    Some((meta.len(), meta.modified().ok()?, header))
}
