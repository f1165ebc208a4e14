//! The GitHub workflow `sqlgate init` writes: sqlgate's composite action on every pull request
//! and push to `main`, its JUnit report uploaded whatever the outcome.

/// sqlgate's composite action as a workflow names it: its repository (where the docs are
/// too) and the release line.
pub const ACTION: &str = "sqlgate/sqlgate@v0";

/// Where the action writes the JUnit report, relative to the repository's root, and where the
/// upload step reads it.
const JUNIT: &str = "target/sqlgate/junit.xml";

/// sqlgate's repository on GitHub (`owner/name`), from [`ACTION`].
pub fn repository() -> &'static str {
    ACTION
        .split_once('@')
        .map_or(ACTION, |(repository, _)| repository)
}

/// The workflow, running the `profile` of `sqlgate.toml`. The action installs sqlgate itself,
/// so the job needs no toolchain.
pub fn render(profile: &str) -> String {
    format!(
        "\
# The text-to-SQL gate (written by `sqlgate init`): every case and threshold of sqlgate.toml
# as a named test, under the profile `{profile}`. A pull request fails when an answer that was
# correct in the accepted snapshots (snapshots/) is now wrong, or when a threshold is not met.
# Under CI nothing is asked of the system: its recorded answers in snapshots/ are replayed.
name: sqlgate
on:
  pull_request:
  push:
    branches: [main]
  workflow_dispatch:
permissions:
  contents: read
concurrency:
  group: sqlgate-${{{{ github.ref }}}}
  cancel-in-progress: true
jobs:
  gate:
    name: text-to-SQL gate
    runs-on: ubuntu-latest
    timeout-minutes: 30
    steps:
      - uses: actions/checkout@v5
      - name: Run the gate
        uses: {ACTION}
        with:
          profile: {profile}
          junit: {JUNIT}
      # The report matters most when the gate failed, hence always().
      - name: Upload the JUnit report
        if: always()
        uses: actions/upload-artifact@v6
        with:
          name: sqlgate-junit
          path: {JUNIT}
          if-no-files-found: warn
"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_repository_is_the_action_without_its_version() {
        assert_eq!(super::repository(), "sqlgate/sqlgate");
    }

    #[test]
    fn the_workflow_runs_the_action_and_no_toolchain() {
        let workflow = super::render("ci");
        assert!(
            workflow.contains("uses: sqlgate/sqlgate@v0\n"),
            "{workflow}"
        );
        assert!(workflow.contains("profile: ci\n"), "{workflow}");
        assert!(workflow.contains("group: sqlgate-${{ github.ref }}\n"));
        assert!(!workflow.contains("rust"), "{workflow}");
    }
}
