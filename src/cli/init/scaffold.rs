//! Writing the scaffold: every file or none. The files `sqlgate init` creates must not exist
//! (all are checked before anything is written), each is written atomically, and a write that
//! fails takes back the files and folders written before it. `.gitignore` is the one file that
//! may exist: it is extended, never rewritten, and written last.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sqlgate::Error;
use sqlgate_eval::error::{InputError, OutputError};
use sqlgate_eval::files::write_atomically;

/// What `.gitignore` gets: sqlgate's cache of query results and verdicts, beside
/// `sqlgate.toml`.
const IGNORED: &str = ".sqlgate/";

/// A file to write and its contents.
pub struct Planned {
    pub path: PathBuf,
    pub contents: String,
}

/// An error naming the first of `paths` that exists (a dangling link counts): nothing may be
/// written over it.
pub fn refuse_existing(paths: &[&Path]) -> Result<(), Error> {
    match paths.iter().find(|path| path.symlink_metadata().is_ok()) {
        Some(path) => Err(Error::Usage(format!(
            "{}: already exists; `sqlgate init` overwrites nothing, so nothing was written \
             (move it away to start over)",
            path.display()
        ))),
        None => Ok(()),
    }
}

/// `.gitignore` at `path` with [`IGNORED`] added, or `None` when it already ignores it.
pub fn ignore_cache(path: &Path) -> Result<Option<Planned>, InputError> {
    let existing = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(InputError::file(path, format!("cannot read: {error}"))),
    };
    let ignored = existing.lines().any(|line| {
        let pattern = line.trim();
        let pattern = pattern.strip_prefix('/').unwrap_or(pattern);
        pattern == IGNORED || pattern == IGNORED.trim_end_matches('/')
    });
    if ignored {
        return Ok(None);
    }
    let mut contents = existing;
    if !contents.is_empty() && !contents.ends_with('\n') {
        contents.push('\n');
    }
    contents += &format!("# sqlgate's cache of query results and verdicts\n{IGNORED}\n");
    Ok(Some(Planned {
        path: path.to_path_buf(),
        contents,
    }))
}

/// Writes the `new` files (none of which exists), then `gitignore`. If a write fails, the new
/// files already written and the folders made for them are removed again.
pub fn write_all(new: &[Planned], gitignore: Option<&Planned>) -> Result<(), OutputError> {
    let made_folders = missing_folders(new.iter().chain(gitignore).map(|p| p.path.as_path()));
    let mut written: Vec<&Path> = Vec::new();
    for planned in new.iter().chain(gitignore) {
        if let Err(error) = write_atomically(&planned.path, planned.contents.as_bytes()) {
            for path in written {
                let _ = fs::remove_file(path);
            }
            // Deepest first; a folder holding anything else stays.
            for folder in made_folders.iter().rev() {
                let _ = fs::remove_dir(folder);
            }
            return Err(error);
        }
        written.push(&planned.path);
    }
    Ok(())
}

/// The folders the files go in that do not exist yet, outermost first.
fn missing_folders<'a>(files: impl Iterator<Item = &'a Path>) -> Vec<PathBuf> {
    let mut missing: Vec<PathBuf> = Vec::new();
    for file in files {
        let ancestors: Vec<&Path> = file
            .ancestors()
            .skip(1)
            .filter(|folder| !folder.as_os_str().is_empty() && !folder.exists())
            .collect();
        for folder in ancestors.into_iter().rev() {
            if !missing.iter().any(|known| known == folder) {
                missing.push(folder.to_path_buf());
            }
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gitignore_after(existing: Option<&str>) -> Option<String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".gitignore");
        if let Some(text) = existing {
            fs::write(&path, text).unwrap();
        }
        ignore_cache(&path).unwrap().map(|planned| planned.contents)
    }

    #[test]
    fn the_cache_is_ignored_once() {
        let added = "# sqlgate's cache of query results and verdicts\n.sqlgate/\n";
        assert_eq!(gitignore_after(None).as_deref(), Some(added));
        assert_eq!(
            gitignore_after(Some("target")).as_deref(),
            Some(format!("target\n{added}").as_str())
        );
        for already in [".sqlgate/\n", "node_modules\n/.sqlgate\n", "  .sqlgate  \n"] {
            assert_eq!(gitignore_after(Some(already)), None, "{already:?}");
        }
        // A pattern that only looks alike does not count.
        assert!(gitignore_after(Some(".sqlgate/cache\n")).is_some());
    }

    #[test]
    fn a_failed_write_takes_back_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("sqlgate.toml");
        let workflow = dir.path().join("new/.github/workflows/sqlgate.yml");
        // A file where a folder should be: the second write fails.
        fs::create_dir(dir.path().join("new")).unwrap();
        fs::write(dir.path().join("new/.github"), "").unwrap();
        let planned = [
            Planned {
                path: config.clone(),
                contents: "x".into(),
            },
            Planned {
                path: workflow,
                contents: "y".into(),
            },
        ];
        let error = write_all(&planned, None).unwrap_err();
        assert!(error.path.ends_with("sqlgate.yml"), "{error}");
        assert!(!config.exists());

        // Folders made for the files go too, when empty.
        fs::remove_file(dir.path().join("new/.github")).unwrap();
        let made = dir.path().join("made/a");
        fs::create_dir_all(dir.path().join("made")).unwrap();
        fs::write(dir.path().join("made/blocker"), "").unwrap();
        let planned = [
            Planned {
                path: made.join("b/file"),
                contents: "x".into(),
            },
            Planned {
                path: dir.path().join("made/blocker/file"),
                contents: "y".into(),
            },
        ];
        write_all(&planned, None).unwrap_err();
        assert!(!made.exists());
        assert!(dir.path().join("made/blocker").is_file());
    }
}
