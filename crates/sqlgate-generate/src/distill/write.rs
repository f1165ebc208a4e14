//! The test-suite folder of one database: `OUT/<db>/<db>.sqlite` (the original's bytes) and
//! `OUT/<db>/<db>_<k>.sqlite` (the kept databases), each written to a temporary file and
//! renamed, so a failure leaves no half-written database; files `<db>_<k>.sqlite` of an earlier
//! run beyond this one's count are removed, since `score --mode testsuite` reads every file.

use std::fs;
use std::path::{Path, PathBuf};

use sqlgate_eval::error::OutputError;
use sqlgate_eval::files::write_atomically;

/// Writes the folder `out/<db>/` from the original `original` and the kept files `kept`; returns
/// the paths written.
pub fn suite_folder(
    out: &Path,
    db: &str,
    original: &Path,
    kept: &[PathBuf],
) -> Result<Vec<PathBuf>, OutputError> {
    let folder = out.join(db);
    fs::create_dir_all(&folder).map_err(|e| OutputError::new(&folder, e))?;
    let mut written = Vec::new();
    let copy = |from: &Path, to: PathBuf| -> Result<PathBuf, OutputError> {
        let bytes = fs::read(from).map_err(|e| OutputError::new(from, e))?;
        write_atomically(&to, &bytes)?;
        Ok(to)
    };
    written.push(copy(original, folder.join(format!("{db}.sqlite")))?);
    for (k, file) in kept.iter().enumerate() {
        written.push(copy(file, folder.join(format!("{db}_{}.sqlite", k + 1)))?);
    }
    let entries = fs::read_dir(&folder).map_err(|e| OutputError::new(&folder, e))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if is_numbered(&path, db) && !written.contains(&path) {
            fs::remove_file(&path).map_err(|e| OutputError::new(&path, e))?;
        }
    }
    Ok(written)
}

/// `<db>_<digits>.sqlite`: a file this command writes.
fn is_numbered(path: &Path, db: &str) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| {
            n.strip_prefix(db)?
                .strip_prefix('_')?
                .strip_suffix(".sqlite")
        })
        .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_holds_the_original_and_the_kept_files_and_no_stale_ones() {
        let dir = tempfile::tempdir().unwrap();
        let original = dir.path().join("orig");
        fs::write(&original, b"original").unwrap();
        let kept: Vec<PathBuf> = (0..3)
            .map(|i| {
                let p = dir.path().join(format!("cand{i}"));
                fs::write(&p, format!("cand{i}")).unwrap();
                p
            })
            .collect();
        let out = dir.path().join("out");
        suite_folder(&out, "db", &original, &kept).unwrap();
        fs::write(out.join("db/notes.txt"), b"mine").unwrap();
        suite_folder(&out, "db", &original, &kept[..1]).unwrap();
        let mut names: Vec<String> = fs::read_dir(out.join("db"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["db.sqlite", "db_1.sqlite", "notes.txt"]);
        assert_eq!(fs::read(out.join("db/db_1.sqlite")).unwrap(), b"cand0");
        assert_eq!(fs::read(out.join("db/db.sqlite")).unwrap(), b"original");
    }
}
