//! docs/security.md cannot drift: every test it cites as holding a promise exists, every promise
//! cites one, and every link it gives reaches a file and a heading.

use std::path::Path;

use crate::support::repo;
use regex::Regex;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn every_promise_cites_tests_that_exist() {
    let root = repo();
    let doc = read(&root.join("docs/security.md"));
    let citation = Regex::new(r"`([\w/.-]+\.rs)::(\w+)`").unwrap();
    let mut cited = 0;
    for section in doc.split("\n### ").skip(1) {
        let title = section.lines().next().unwrap_or_default();
        let tests: Vec<_> = citation.captures_iter(section).collect();
        assert!(!tests.is_empty(), "promise `{title}` cites no test");
        for test in tests {
            let source = read(&root.join(&test[1]));
            let definition = format!("fn {}(", &test[2]);
            assert!(
                source.contains(&definition),
                "docs/security.md cites {}::{}, which {} does not define",
                &test[1],
                &test[2],
                &test[1]
            );
            cited += 1;
        }
    }
    assert!(cited >= 30, "only {cited} tests cited");
}

#[test]
fn every_link_reaches_a_file_and_a_heading() {
    let root = repo();
    let doc = read(&root.join("docs/security.md"));
    let link = Regex::new(r"\]\(([^)#]+)(?:#([^)]+))?\)").unwrap();
    let heading = Regex::new(r"(?m)^#+ (.+)$").unwrap();
    let mut links = 0;
    for found in link.captures_iter(&doc) {
        let target = root.join("docs").join(&found[1]);
        let text = read(&target);
        if let Some(wanted) = found.get(2) {
            let anchors: Vec<String> = heading
                .captures_iter(&text)
                .map(|h| anchor(&h[1]))
                .collect();
            assert!(
                anchors.iter().any(|a| a == wanted.as_str()),
                "docs/security.md links to {}#{}, a heading that file does not have",
                &found[1],
                wanted.as_str()
            );
        }
        links += 1;
    }
    assert!(links >= 5, "only {links} links");
}
