//! The repository's demo benchmark, and a scratch copy of what a gate over it writes to.

use std::path::{Path, PathBuf};

/// The root package's folder: the repository, with the demo, `snapshots/` and the docs.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, then docs/*.md in name order: the files whose commands and snippets are tested.
pub fn doc_files() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, repo().join("README.md"));
    docs
}

/// A scratch copy of this repository's own gate: its `sqlgate.toml`, `benchmarks/` and
/// `snapshots/` (the demo's built databases left out).
pub fn repository_gate_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy(
        &repo().join("sqlgate.toml"),
        &dir.path().join("sqlgate.toml"),
    );
    for folder in ["benchmarks", "snapshots"] {
        crate::support::copy_tree(&repo().join(folder), &dir.path().join(folder));
    }
    dir
}

/// `benchmarks/demo/<file>` (the folder itself for `""`).
pub fn demo(file: &str) -> PathBuf {
    repo().join("benchmarks/demo").join(file)
}

/// A temporary folder holding what a gate over the demo changes: the sample predictions as
/// `sample.jsonl` and the committed demo snapshot as `snapshots/demo.snap`. The caller writes
/// the `sqlgate.toml`.
pub fn demo_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy(
        &demo("predictions/sample.jsonl"),
        &dir.path().join("sample.jsonl"),
    );
    std::fs::create_dir_all(dir.path().join("snapshots")).unwrap();
    copy(
        &repo().join("snapshots/demo.snap"),
        &dir.path().join("snapshots/demo.snap"),
    );
    dir
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to)
        .unwrap_or_else(|error| panic!("copying {} to {}: {error}", from.display(), to.display()));
}

/// Rewrites the answer to case `id` in the predictions file `path` (JSON lines) as `sql`.
pub fn replace_prediction(path: &Path, id: &str, sql: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let replaced: Vec<String> = text
        .lines()
        .map(|line| {
            let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
            if record["id"] == id {
                record["sql"] = sql.into();
            }
            record.to_string()
        })
        .collect();
    std::fs::write(path, replaced.join("\n") + "\n").unwrap();
}
