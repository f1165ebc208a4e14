//! `[cases."<test name>"]`: settings of one test.

use serde::Deserialize;

/// `[cases."<test name>"]`: what one test is allowed or required to do.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseConfig {
    /// The case must be correct, even if the accepted snapshot records it as failing.
    #[serde(default)]
    pub must_pass: bool,
    /// Listed but not run, like `#[ignore]`; `--ignored` runs it.
    #[serde(default)]
    pub ignore: bool,
}
