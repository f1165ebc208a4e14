//! Helpers shared by unit tests, integration tests and benchmarks.

use std::path::PathBuf;

/// The shared data folder (`../shared/data` beside the repository, or `$SQLGATE_SHARED_DATA`),
/// or `None` when it is absent, in which case tests that need it skip.
pub fn shared_data() -> Option<PathBuf> {
    let dir = match std::env::var_os("SQLGATE_SHARED_DATA") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data"),
    };
    dir.is_dir().then_some(dir)
}
