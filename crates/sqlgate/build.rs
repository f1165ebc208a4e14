//! Fingerprints the code that computes what the cache keeps (this crate's, the evaluation
//! core's, the shared base's and the engine crates' sources, and `Cargo.lock`'s dependency versions, SQLite's
//! among them), so that a cached result or verdict is reused only by the code that computed it:
//! the package version alone stays the same across every commit of a development branch.

use std::fs;
use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    // In the workspace; a published package has neither (its dependencies' versions are fixed
    // by its own, so the version is fingerprint enough there).
    let mut inputs = vec![
        manifest.join("src"),
        manifest.join("../sqlgate-base/src"),
        manifest.join("../sqlgate-eval/src"),
        manifest.join("../../Cargo.lock"),
    ];
    // The engine interface, each engine (its sandbox decodes the values results hold) and
    // their registry.
    let mut engines: Vec<PathBuf> = fs::read_dir(manifest.join(".."))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("sqlgate-engine")
        })
        .map(|entry| entry.path().join("src"))
        .collect();
    engines.sort();
    inputs.extend(engines);
    let mut hasher = DefaultHasher::new();
    for input in &inputs {
        println!("cargo:rerun-if-changed={}", input.display());
        hash_tree(input, input, &mut hasher);
    }
    println!("cargo:rustc-env=SQLGATE_CODE_HASH={:016x}", hasher.finish());
}

/// Hashes every file under `path` (or `path` itself), in name order, with its path below `root`.
fn hash_tree(root: &Path, path: &Path, hasher: &mut DefaultHasher) {
    if path.is_dir() {
        let Ok(entries) = fs::read_dir(path) else {
            return;
        };
        let mut children: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        children.sort();
        for child in children {
            hash_tree(root, &child, hasher);
        }
    } else if let Ok(content) = fs::read(path) {
        let relative = path.strip_prefix(root).unwrap_or(path);
        hasher.write(relative.to_string_lossy().as_bytes());
        hasher.write(&content);
    }
}
