//! Skipping a check whose data or tool this machine lacks, without passing silently.
//!
//! Where the missing thing is expected (the variable [`REQUIRE_SHARED_DATA`] or
//! [`REQUIRE_TOOLS`] set, as `.ci/run` sets them), the test fails instead. Elsewhere the skip
//! is written straight to the process's stderr (libtest hides what a passing test prints with
//! `eprintln!`), and when the test binary exits one line counts every skip of the run.

use std::io::Write;
use std::sync::{Mutex, Once};

/// Set (to anything but `0`) where `../shared/data` is expected, as `.ci/run` does on the
/// project's CI machine: a missing folder then fails the tests that need it.
pub const REQUIRE_SHARED_DATA: &str = "SQLGATE_REQUIRE_SHARED_DATA";

/// Set (to anything but `0`) where every tool the checks use is installed, as `.ci/run` does
/// under CI after installing them (xmllint, junitparser, actionlint, cargo-insta, WordNet,
/// PostgreSQL, MariaDB, Chromium): a missing one then fails the tests that need it.
pub const REQUIRE_TOOLS: &str = "SQLGATE_REQUIRE_TOOLS";

/// How many checks this process skipped, and what they lacked, in the order first met.
static SKIPPED: Mutex<(usize, Vec<String>)> = Mutex::new((0, Vec::new()));
static SUMMARY_AT_EXIT: Once = Once::new();

/// The calling test lacks the shared data at `what`: fails under [`REQUIRE_SHARED_DATA`],
/// else says so and counts the skip.
pub fn without_shared_data(what: &str) {
    skip(REQUIRE_SHARED_DATA, what);
}

/// The calling test lacks `tool` (how to install it in brackets): fails under
/// [`REQUIRE_TOOLS`], else says so and counts the skip.
pub fn without_tool(tool: &str) {
    skip(REQUIRE_TOOLS, tool);
}

fn skip(variable: &str, what: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    assert!(
        !is_set(variable),
        "{test}: {what} is missing and {variable} is set"
    );
    let _ = writeln!(std::io::stderr(), "skipped: {test} needs {what}");
    let mut skipped = SKIPPED.lock().unwrap_or_else(|p| p.into_inner());
    skipped.0 += 1;
    if !skipped.1.iter().any(|m| m == what) {
        skipped.1.push(what.to_string());
    }
    drop(skipped);
    SUMMARY_AT_EXIT.call_once(|| {
        #[cfg(unix)]
        // SAFETY: registers a function without arguments that C's `exit` calls once; it only
        // reads a static and writes to stderr.
        unsafe {
            libc::atexit(print_summary);
        }
    });
}

/// Runs as the test binary exits, after libtest's own summary.
#[cfg(unix)]
extern "C" fn print_summary() {
    let skipped = SKIPPED.lock().unwrap_or_else(|p| p.into_inner());
    let (skips, missing) = &*skipped;
    let skips = *skips;
    let _ = writeln!(
        std::io::stderr(),
        "note: {skips} check{} skipped, lacking: {}. `CI=true bash .ci/run` installs them \
         and fails instead of skipping",
        if skips == 1 { " was" } else { "s were" },
        missing.join("; ")
    );
}

/// Whether `variable` is set to something other than empty or `0`.
fn is_set(variable: &str) -> bool {
    std::env::var_os(variable).is_some_and(|v| !v.is_empty() && v != "0")
}
