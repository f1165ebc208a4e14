//! File utilities shared by every layer that writes: outputs are written whole or not at all.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::InputError;

/// Distinguishes the temporary files of concurrent writes within one process.
static WRITE_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// Writes a file so readers see the old content or the new, never a part: a temporary file in
/// the same folder, synced, then renamed over `path`. Creates the parent folder.
///
/// Only a regular file (or an absent path) is replaced. A symbolic link is followed and its
/// target replaced, so the link stays. Anything else (`/dev/stdout`, a FIFO, `/dev/null`) is
/// written in place: renaming over it would replace the device node or pipe itself.
pub fn write_atomically(path: &Path, content: &[u8]) -> Result<(), InputError> {
    let fail = |error: io::Error| InputError::file(path, format!("cannot write: {error}"));
    if fs::metadata(path).is_ok_and(|meta| !meta.is_file()) {
        return write_in_place(path, content).map_err(fail);
    }
    let target = link_target(path).map_err(fail)?;
    let file_name = target
        .file_name()
        .ok_or_else(|| InputError::file(path, "not a file path"))?;
    let parent = target.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent {
        fs::create_dir_all(parent).map_err(fail)?;
    }
    let temp = target.with_file_name(format!(
        ".{}.{}-{}.tmp",
        file_name.to_string_lossy(),
        std::process::id(),
        WRITE_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = fs::File::create(&temp).and_then(|mut file| {
        file.write_all(content)?;
        file.sync_all()
    });
    match written.and_then(|()| fs::rename(&temp, &target)) {
        Ok(()) => Ok(()),
        Err(error) => {
            let _ = fs::remove_file(&temp);
            Err(fail(error))
        }
    }
}

/// True for the name of a temporary file of [`write_atomically`] (`.<name>.<pid>-<n>.tmp`): a
/// write in progress, or one a killed run left behind.
pub fn is_temporary(file_name: &str) -> bool {
    file_name.starts_with('.') && file_name.ends_with(".tmp")
}

/// A device, FIFO or other special file takes the bytes as they come (there is nothing to
/// replace atomically); a short write such as `/dev/full`'s is an error.
fn write_in_place(path: &Path, content: &[u8]) -> io::Result<()> {
    fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all(content)
}

/// The file a write to `path` lands in: `path` itself, or the end of its chain of symbolic
/// links (which may not exist yet), each relative to the link's own folder.
fn link_target(path: &Path) -> io::Result<PathBuf> {
    // Linux's limit on links followed in one path lookup (MAXSYMLINKS).
    const MAX_LINKS: usize = 40;
    let mut target = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if !fs::symlink_metadata(&target).is_ok_and(|meta| meta.file_type().is_symlink()) {
            return Ok(target);
        }
        let link = fs::read_link(&target)?;
        target = target.parent().unwrap_or(Path::new("")).join(link);
    }
    Err(io::Error::other("too many levels of symbolic links"))
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

#[cfg(all(test, unix))]
mod tests {
    use std::io::Read;
    use std::os::unix::fs::{symlink, FileTypeExt, OpenOptionsExt};

    use super::*;

    #[test]
    fn a_link_to_a_regular_file_keeps_the_link_and_replaces_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("reports").join("junit.xml");
        fs::create_dir(target.parent().unwrap()).unwrap();
        fs::write(&target, "old").unwrap();
        let link = dir.path().join("junit.xml");
        symlink("reports/junit.xml", &link).unwrap();
        write_atomically(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
        // A dangling link: its target is created.
        let dangling = dir.path().join("dangling.xml");
        symlink(dir.path().join("absent.xml"), &dangling).unwrap();
        write_atomically(&dangling, b"made").unwrap();
        assert!(fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            fs::read_to_string(dir.path().join("absent.xml")).unwrap(),
            "made"
        );
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| is_temporary(n)), "{names:?}");
    }

    #[test]
    fn a_fifo_is_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("junit.fifo");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        // Opened first and without blocking, so the write finds a reader and nothing waits.
        let mut reader = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        write_atomically(&fifo, b"<testsuites/>").unwrap();
        let mut received = Vec::new();
        reader.read_to_end(&mut received).unwrap();
        assert_eq!(received, b"<testsuites/>");
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[test]
    fn a_link_to_a_device_writes_the_device_and_reports_its_errors() {
        let dir = tempfile::tempdir().unwrap();
        let null = dir.path().join("null");
        symlink("/dev/null", &null).unwrap();
        write_atomically(&null, b"discarded").unwrap();
        assert!(fs::symlink_metadata(&null)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        // /dev/full refuses every write with ENOSPC: reported, naming the path written.
        let full = dir.path().join("full");
        symlink("/dev/full", &full).unwrap();
        let error = write_atomically(&full, b"lost").unwrap_err();
        assert_eq!(error.file, full);
        assert!(error.message.contains("cannot write"), "{error}");
        assert!(fs::symlink_metadata(&full)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
