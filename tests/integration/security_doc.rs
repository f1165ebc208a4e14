//! docs/security.md cannot drift: every test it cites as holding a promise exists, and every
//! promise cites one (its links are checked with every doc's: `doc_links`).

use std::path::Path;

use crate::support::repo;
use regex::Regex;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
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
