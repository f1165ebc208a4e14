//! Helpers shared by unit tests, integration tests and benchmarks.

use std::path::PathBuf;

/// The repository's root folder (the workspace's), where the demo, `sqlgate.toml` and the docs
/// are, whichever crate's test asks.
pub fn repo_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The shared data folder (`../shared/data` beside the repository, or `$SQLGATE_SHARED_DATA`).
/// When it is absent or empty (how `.ci/run` hides it: `SQLGATE_SHARED_DATA=$(mktemp -d)`)
/// the caller skips, counted by [`skip`], unless [`REQUIRE_SHARED_DATA`] is set, in which
/// case this panics.
pub fn shared_data() -> Option<PathBuf> {
    let dir = match std::env::var_os("SQLGATE_SHARED_DATA") {
        Some(dir) => PathBuf::from(dir),
        None => repo_root().join("../shared/data"),
    };
    if std::fs::read_dir(&dir).is_ok_and(|mut entries| entries.next().is_some()) {
        return Some(dir);
    }
    skip::without_shared_data(&format!(
        "{} (set SQLGATE_SHARED_DATA to another copy)",
        dir.display()
    ));
    None
}

pub mod mariadb;
pub mod postgres;
mod process_dir;
mod server;
pub mod skip;

pub use process_dir::removed_at_exit;
pub use skip::REQUIRE_SHARED_DATA;
