//! What a finished run writes for machines and reviewers: JUnit XML, GitHub Actions outputs,
//! the families' tables, the HTML report. The `sqlgate` command and the `harness!` front end share them.

pub mod family_text;
pub mod github;
pub mod html;
pub mod junit;

/// `1 test`, `2 tests`: a count with its noun (regular plurals only).
pub fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_read_as_english() {
        assert_eq!(super::plural(0, "test"), "0 tests");
        assert_eq!(super::plural(1, "test"), "1 test");
        assert_eq!(super::plural(2, "known failure"), "2 known failures");
    }
}
