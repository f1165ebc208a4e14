//! Engine drivers stay in their engine crates (`crates/sqlgate-engine-*`): production code
//! elsewhere names no `rusqlite`, `postgres`, `mysql` or `duckdb` item.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::support::repo;

const DRIVERS: [&str; 4] = ["rusqlite", "postgres", "mysql", "duckdb"];

/// Whether `line` names a driver crate's item (`rusqlite::Connection`, `use postgres::...`);
/// `sqlgate_engine_postgres::` is an engine crate, not the driver.
fn names_a_driver(line: &str) -> bool {
    DRIVERS.iter().any(|driver| {
        line.match_indices(&format!("{driver}::")).any(|(at, _)| {
            !line[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        }) || line.trim_start().starts_with(&format!("use {driver}"))
    })
}

/// The module declarations of `parent` marked `#[cfg(test)]` (on the line before, or the one
/// before that): test modules, whose files are test code.
fn test_modules(parent: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(parent).unwrap_or_default();
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut found = BTreeSet::new();
    for (at, line) in lines.iter().enumerate() {
        let declared = line
            .split_once("mod ")
            .filter(|(before, _)| before.is_empty() || before.starts_with("pub"))
            .and_then(|(_, rest)| rest.strip_suffix(';'));
        let marked = lines[at.saturating_sub(2)..at].contains(&"#[cfg(test)]");
        if let (Some(name), true) = (declared, marked) {
            found.insert(name.to_string());
        }
    }
    found
}

/// The file of the module that declares `file`'s module, and that module's name.
fn parent_module(file: &Path) -> Option<(Vec<PathBuf>, String)> {
    let dir = file.parent()?;
    let stem = file.file_stem()?.to_string_lossy().into_owned();
    // A crate's root is declared by no module.
    if stem == "lib" || stem == "main" {
        return None;
    }
    let (dir, name) = if stem == "mod" {
        (
            dir.parent()?,
            dir.file_name()?.to_string_lossy().into_owned(),
        )
    } else {
        (dir, stem)
    };
    let parents = ["mod.rs", "lib.rs", "main.rs"]
        .iter()
        .map(|parent| dir.join(parent))
        .chain(std::iter::once(dir.with_extension("rs")))
        .filter(|parent| parent.is_file() && parent != file)
        .collect();
    Some((parents, name))
}

/// Whether the file belongs to a test module (declared `#[cfg(test)] mod`, itself or an
/// enclosing module).
fn is_test_module(file: &Path) -> bool {
    let Some((parents, name)) = parent_module(file) else {
        return false;
    };
    parents
        .iter()
        .any(|parent| test_modules(parent).contains(&name) || is_test_module(parent))
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn no_driver_is_named_outside_the_engine_crates() {
    let root = repo();
    let mut roots = vec![root.join("src")];
    for entry in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("sqlgate-engine-") && name != "sqlgate-test-support" {
            roots.push(entry.path().join("src"));
        }
    }
    let mut files = Vec::new();
    for dir in roots {
        rust_files(&dir, &mut files);
    }
    let mut importing = BTreeSet::new();
    for file in files.iter().filter(|f| !is_test_module(f)) {
        let text = std::fs::read_to_string(file).unwrap();
        // A file's own tests sit in a `#[cfg(test)]` module at its end.
        let production = text.split("\n#[cfg(test)]").next().unwrap_or_default();
        if production.lines().any(names_a_driver) {
            let relative = file.strip_prefix(&root).unwrap();
            importing.insert(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    assert!(
        importing.is_empty(),
        "production files naming a driver crate outside the engine crates: {importing:?}"
    );
    assert!(
        files.len() > 100,
        "the scan read the sources ({})",
        files.len()
    );
}

#[test]
fn the_scan_tells_a_driver_from_an_engine_crate() {
    assert!(names_a_driver(
        "    let conn = rusqlite::Connection::open(&path)?;"
    ));
    assert!(names_a_driver("use postgres::{Client, NoTls};"));
    assert!(names_a_driver("x(duckdb::Connection::open_in_memory())"));
    assert!(!names_a_driver(
        "sqlgate_engine_postgres::Server::new(url, None)"
    ));
    assert!(!names_a_driver("let db = sqlgate_engine_sqlite::files();"));
    assert!(!names_a_driver("// a PostgreSQL server, `postgres` engine"));
    assert!(is_test_module(
        &repo().join("crates/sqlgate/src/gate/fixtures.rs")
    ));
    assert!(!is_test_module(
        &repo().join("crates/sqlgate/src/gate/answerer.rs")
    ));
}
