//! Temporary folders shared by the tests of one process.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

/// The folders to remove when the process exits.
static FOLDERS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A new temporary folder that the process's tests share (a fixture built once, kept in a
/// static) and that is removed when the process exits: a `TempDir` held by a static is never
/// dropped, and each run of the test binary left its folder behind.
pub fn removed_at_exit() -> &'static Path {
    static REGISTER: Once = Once::new();
    extern "C" fn remove_all() {
        let folders = FOLDERS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for folder in folders.iter() {
            let _ = std::fs::remove_dir_all(folder);
        }
    }
    // SAFETY: registers a plain function that only removes the folders listed above.
    REGISTER.call_once(|| unsafe {
        libc::atexit(remove_all);
    });
    let folder = tempfile::tempdir()
        .expect("a temporary folder for the test process")
        .keep();
    FOLDERS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push(folder.clone());
    Box::leak(folder.into_boxed_path())
}
