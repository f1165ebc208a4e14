//! Helpers shared by unit tests, integration tests and benchmarks.

use std::io::Write;
use std::path::PathBuf;

/// The repository's root folder (the workspace's), where the demo, `sqlgate.toml` and the docs
/// are, whichever crate's test asks.
pub fn repo_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// Set (to anything but `0`) where `../shared/data` is expected, as `.ci/run` does on the
/// project's CI machine: a missing folder then fails the tests that need it.
pub const REQUIRE_SHARED_DATA: &str = "SQLGATE_REQUIRE_SHARED_DATA";

/// The shared data folder (`../shared/data` beside the repository, or `$SQLGATE_SHARED_DATA`).
/// When it is absent the caller skips and a `skipped:` line is printed, unless
/// [`REQUIRE_SHARED_DATA`] is set, in which case this panics.
pub fn shared_data() -> Option<PathBuf> {
    let dir = match std::env::var_os("SQLGATE_SHARED_DATA") {
        Some(dir) => PathBuf::from(dir),
        None => repo_root().join("../shared/data"),
    };
    if dir.is_dir() {
        return Some(dir);
    }
    let required = required();
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    assert!(
        !required,
        "{test}: the shared data folder {} is missing and {REQUIRE_SHARED_DATA} is set",
        dir.display()
    );
    // Straight to the process's stderr: libtest captures `eprintln!`, and a skip must show.
    let _ = writeln!(
        std::io::stderr(),
        "skipped: {test} needs {} (set SQLGATE_SHARED_DATA to another copy)",
        dir.display()
    );
    None
}

pub mod postgres;

/// Whether this run must have what a test needs ([`REQUIRE_SHARED_DATA`] set, as under CI).
fn required() -> bool {
    std::env::var_os(REQUIRE_SHARED_DATA).is_some_and(|v| !v.is_empty() && v != "0")
}
