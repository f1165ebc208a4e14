//! File utilities shared by every layer that writes: outputs are written whole or not at all.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::OutputError;

/// Distinguishes the temporary files of concurrent writes within one process.
static WRITE_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// Writes a file so readers see the old content or the new, never a part: a temporary file in
/// the same folder, synced, then renamed over `path`. Creates the parent folder.
///
/// Only a regular file (or an absent path) is replaced. A symbolic link is followed and its
/// target replaced, so the link stays. One of this process's descriptors (`/dev/stdout`,
/// `/proc/self/fd/N`, often a shell's `> out.txt`) is written through the descriptor, after
/// what was written there. Anything else (a FIFO, `/dev/null`) is written in place: renaming
/// over it would replace the device node or pipe itself. Text goes through [`write_text`].
pub fn write_atomically(path: &Path, content: &[u8]) -> Result<(), OutputError> {
    let fail = |error: io::Error| OutputError::new(path, error);
    let target = match destination(path).map_err(fail)? {
        Destination::File(target) => target,
        Destination::Descriptor(fd) => return write_to_descriptor(fd, content).map_err(fail),
        Destination::InPlace => return write_in_place(path, content).map_err(fail),
    };
    let file_name = target
        .file_name()
        .ok_or_else(|| fail(io::Error::other("not a file path")))?;
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

/// Writes text as [`write_atomically`] does, with every known secret redacted
/// ([`crate::secrets`]): reports, snapshots and records go through it, so that none can hold a
/// credential whatever text reached it.
pub fn write_text(path: &Path, text: &str) -> Result<(), OutputError> {
    write_atomically(path, crate::secrets::redact(text).as_bytes())
}

/// True for the name of a temporary file of [`write_atomically`] (`.<name>.<pid>-<n>.tmp`): a
/// write in progress, or one a killed run left behind.
pub fn is_temporary(file_name: &str) -> bool {
    file_name.starts_with('.') && file_name.ends_with(".tmp")
}

/// Where a write to a path lands.
enum Destination {
    /// A regular file or an absent path (the end of the path's symbolic links): replaced.
    File(PathBuf),
    /// One of this process's open descriptors.
    Descriptor(i32),
    /// A device, FIFO or other special file.
    InPlace,
}

/// Follows `path`'s chain of symbolic links (each relative to the link's own folder) to where
/// a write lands; links in `/dev` and `/proc` name devices and descriptors, not files.
fn destination(path: &Path) -> io::Result<Destination> {
    // Linux's limit on links followed in one path lookup (MAXSYMLINKS).
    const MAX_LINKS: usize = 40;
    let mut target = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if let Some(fd) = descriptor(&target) {
            return Ok(Destination::Descriptor(fd));
        }
        let meta = fs::symlink_metadata(&target);
        if target.starts_with("/dev") || target.starts_with("/proc") {
            return Ok(Destination::InPlace);
        }
        match meta {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&target)?;
                target = target.parent().unwrap_or(Path::new("")).join(link);
            }
            Ok(meta) if !meta.is_file() => return Ok(Destination::InPlace),
            _ => return Ok(Destination::File(target)),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// The descriptor of this process a path names: `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`,
/// `/proc/self/fd/N`, `/proc/<this pid>/fd/N`.
fn descriptor(path: &Path) -> Option<i32> {
    let path = path.to_str()?;
    match path {
        "/dev/stdout" => return Some(1),
        "/dev/stderr" => return Some(2),
        _ => {}
    }
    let pid = std::process::id().to_string();
    let number = path.strip_prefix("/dev/fd/").or_else(|| {
        let rest = path.strip_prefix("/proc/")?;
        let (owner, number) = rest.split_once("/fd/")?;
        (owner == "self" || owner == pid).then_some(number)
    })?;
    number.parse().ok()
}

/// Writes through a duplicate of descriptor `fd`, which shares its offset: the bytes land
/// after what this process wrote there (its standard streams are flushed first).
#[cfg(unix)]
fn write_to_descriptor(fd: i32, content: &[u8]) -> io::Result<()> {
    use std::os::fd::FromRawFd;
    io::stdout().flush()?;
    io::stderr().flush()?;
    // SAFETY: dup(2) takes any integer; a valid result is a new descriptor this File owns.
    let duplicate = unsafe { libc::dup(fd) };
    if duplicate < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `duplicate` is open and owned by nothing else.
    let mut file = unsafe { fs::File::from_raw_fd(duplicate) };
    file.write_all(content)
}

#[cfg(not(unix))]
fn write_to_descriptor(_fd: i32, _content: &[u8]) -> io::Result<()> {
    Err(io::Error::other("descriptors are written only on Unix"))
}

/// A device, FIFO or other special file takes the bytes as they come (there is nothing to
/// replace atomically); a short write such as `/dev/full`'s is an error.
fn write_in_place(path: &Path, content: &[u8]) -> io::Result<()> {
    fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all(content)
}

/// A database's file in a database folder: `<db_dir>/<db>.sqlite` (flat) or
/// `<db_dir>/<db>/<db>.sqlite` (Spider's nested layout). Every reader of databases resolves them
/// here, so the layouts are supported alike everywhere. Both present is refused: a flat file
/// left beside a test-suite folder would otherwise be read instead of it, silently.
pub fn database_file(db_dir: &Path, db: &str, extension: &str) -> Result<PathBuf, NoDatabaseFile> {
    let flat = db_dir.join(format!("{db}.{extension}"));
    let nested = db_dir.join(db).join(format!("{db}.{extension}"));
    match (flat.is_file(), nested.is_file()) {
        (true, false) => Ok(flat),
        (false, true) => Ok(nested),
        (false, false) => Err(NoDatabaseFile::Missing { flat, nested }),
        (true, true) => Err(NoDatabaseFile::Ambiguous { flat, nested }),
    }
}

/// No single file of a database in the two layouts ([`database_file`]): both paths tried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoDatabaseFile {
    /// Neither `<db_dir>/<db>.<extension>` nor `<db_dir>/<db>/<db>.<extension>`.
    #[error("neither {} nor {} exists", .flat.display(), .nested.display())]
    Missing {
        /// `<db_dir>/<db>.<extension>`.
        flat: PathBuf,
        /// `<db_dir>/<db>/<db>.<extension>`.
        nested: PathBuf,
    },
    /// Both.
    #[error(
        "both {} and {} exist, so which one is the database is ambiguous: move one away",
        .flat.display(),
        .nested.display()
    )]
    Ambiguous {
        /// `<db_dir>/<db>.<extension>`.
        flat: PathBuf,
        /// `<db_dir>/<db>/<db>.<extension>`.
        nested: PathBuf,
    },
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// The stamp of `db` and of its `-wal` file now (a missing file stamps as absent).
    pub fn of(db: &Path) -> Stamp {
        Stamp::with_sidecar(db, "-wal")
    }

    /// The stamp of `db` and of the file beside it named with `suffix` (an engine's log of
    /// changes not yet in the file: SQLite's `-wal`, DuckDB's `.wal`).
    pub fn with_sidecar(db: &Path, suffix: &str) -> Stamp {
        Stamp {
            db: file_stamp(db, DB_COUNTER_AT),
            wal: file_stamp(&sidecar(db, suffix), WAL_SALTS_AT),
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

#[cfg(test)]
mod layout_tests {
    use super::*;

    #[test]
    fn a_missing_database_names_both_layouts() {
        let dir = Path::new("dbs");
        let error = database_file(dir, "shop", "sqlite").unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "neither {} nor {} exists",
                dir.join("shop.sqlite").display(),
                dir.join("shop").join("shop.sqlite").display()
            )
        );
    }

    #[test]
    fn either_layout_is_found_and_both_at_once_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let flat = dir.path().join("shop.sqlite");
        let nested = dir.path().join("shop").join("shop.sqlite");
        std::fs::create_dir(dir.path().join("shop")).unwrap();
        std::fs::write(&nested, b"").unwrap();
        assert_eq!(
            database_file(dir.path(), "shop", "sqlite"),
            Ok(nested.clone())
        );
        std::fs::write(&flat, b"").unwrap();
        let error = database_file(dir.path(), "shop", "sqlite").unwrap_err();
        assert_eq!(
            error,
            NoDatabaseFile::Ambiguous {
                flat: flat.clone(),
                nested: nested.clone()
            }
        );
        assert!(error.to_string().contains("ambiguous"), "{error}");
        std::fs::remove_file(&nested).unwrap();
        assert_eq!(database_file(dir.path(), "shop", "sqlite"), Ok(flat));
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::Read;
    use std::os::unix::fs::{symlink, FileTypeExt, OpenOptionsExt};

    use super::*;

    #[test]
    fn text_is_written_without_known_secrets() {
        let dir = tempfile::tempdir().unwrap();
        crate::secrets::register(b"files-secret-1618");
        let path = dir.path().join("report.xml");
        write_text(&path, "<error>token files-secret-1618 refused</error>").unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "<error>token *** refused</error>"
        );
    }

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
    fn a_link_to_an_open_descriptor_appends_to_its_file_without_replacing_it() {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::MetadataExt;
        // `--junit /dev/stdout > out.txt`: the descriptor's file keeps what was written before
        // and is the same file after.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.txt");
        let mut stdout = fs::File::create(&out).unwrap();
        stdout.write_all(b"summary\n").unwrap();
        let inode = fs::metadata(&out).unwrap().ino();
        let link = dir.path().join("junit.xml");
        symlink(format!("/proc/self/fd/{}", stdout.as_raw_fd()), &link).unwrap();
        write_atomically(&link, b"<testsuites/>").unwrap();
        stdout.write_all(b"\nmore\n").unwrap();
        assert_eq!(fs::metadata(&out).unwrap().ino(), inode);
        assert_eq!(
            fs::read_to_string(&out).unwrap(),
            "summary\n<testsuites/>\nmore\n"
        );
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
        assert_eq!(error.path, full);
        assert_eq!(error.source.raw_os_error(), Some(libc::ENOSPC), "{error}");
        assert!(fs::symlink_metadata(&full)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
