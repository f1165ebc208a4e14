//! Every relative link of the README, ARCHITECTURE.md, CONTRIBUTING.md and docs/*.md reaches a
//! file, and a link to a heading reaches a heading that file has: a renamed section or file
//! fails here, not in a reader's browser. Every document is reachable from the index.

use std::path::{Path, PathBuf};

use regex::Regex;

use crate::support::repo;

/// GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// `text` without its fenced code blocks, where brackets and `#` lines are code, not Markdown.
fn prose(text: &str) -> String {
    let mut in_code = false;
    let mut kept = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_link_of_the_docs_reaches_a_file_and_a_heading() {
    let root = repo();
    let mut docs: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]
        .iter()
        .map(|name| root.join(name))
        .collect();
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            docs.push(path);
        }
    }
    let link = Regex::new(r"\]\(([^)\s#]*)(?:#([^)\s]+))?\)").unwrap();
    let heading = Regex::new(r"(?m)^#+ (.+)$").unwrap();
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in &docs {
        for found in link.captures_iter(&prose(&read(doc))) {
            let target = &found[1];
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let path = match target {
                "" => doc.clone(),
                _ => doc.parent().unwrap().join(target),
            };
            let shown = format!(
                "{}: {}",
                doc.strip_prefix(&root).unwrap().display(),
                &found[0]
            );
            checked += 1;
            if !path.exists() {
                broken.push(format!("{shown}: no such file"));
            } else if let Some(wanted) = found.get(2) {
                let headings = prose(&read(&path));
                if !heading
                    .captures_iter(&headings)
                    .any(|h| anchor(&h[1]) == wanted.as_str())
                {
                    broken.push(format!("{shown}: no such heading"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked >= 100, "only {checked} links checked");
}

#[test]
fn the_index_links_every_document_and_the_readme_links_the_index() {
    let root = repo();
    let index = read(&root.join("docs/README.md"));
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") && name != "README.md" && !index.contains(&format!("]({name}")) {
            missing.push(name);
        }
    }
    for top in ["ARCHITECTURE.md", "CONTRIBUTING.md"] {
        if !index.contains(&format!("](../{top})")) {
            missing.push(top.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "docs/README.md does not link: {missing:?}"
    );
    let readme = read(&root.join("README.md"));
    assert!(
        readme.contains("](docs/README.md)"),
        "the README links the index"
    );
    // A newcomer's path, not a reference manual (docs/commands.md is that).
    let lines = readme.lines().count();
    assert!(lines <= 150, "the README has {lines} lines");
}
