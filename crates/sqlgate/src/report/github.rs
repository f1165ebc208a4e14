//! GitHub Actions outputs: a markdown job summary for `$GITHUB_STEP_SUMMARY` and `::error`
//! workflow commands that annotate the failing cases' source records in the pull request.
//!
//! A test fails only when it is new bad news: a case that was correct in the accepted snapshot
//! (or is not in it yet, or must pass), or a gate whose threshold is not met; known failures
//! pass. So the failing tests listed here are the newly failing ones.

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::Path;

use similar::{ChangeTag, TextDiff};

use crate::gate::judge::format_metric;
use crate::gate::snapshot::normalize_sql;
use crate::gate::{MetricKey, SuiteSummary, TestResult, TestStatus};
use crate::report::junit::{by_suite, SuiteView};
use sqlgate_eval::error::OutputError;
use sqlgate_eval::secrets;
use sqlgate_eval::sqltext::{closing_quote, opening_quote};

/// GitHub refuses a step summary over 1 MiB.
pub const STEP_SUMMARY_LIMIT: usize = 1024 * 1024;

/// Annotations written by default: the worst few are read, more are noise (and GitHub shows
/// at most 10 error annotations per step).
pub const DEFAULT_ANNOTATIONS: usize = 5;

/// The markdown job summary: counts, a metrics table per suite, the gates, and each failing test
/// with its reason and a diff from the gold SQL to the predicted SQL. At most
/// [`STEP_SUMMARY_LIMIT`] bytes: failing tests that do not fit are counted in a closing note.
pub fn step_summary(results: &[TestResult], summaries: &[SuiteSummary]) -> String {
    let limit = STEP_SUMMARY_LIMIT;
    let mut out = headline(results);
    out.push_str(&suites_table(results, summaries));
    out.push_str(&cost_lines(summaries));
    out.push_str(&gates_table(summaries));
    out.push_str(&baseline_table(summaries));
    out.push_str(&families_table(summaries));
    let failing = failing_in_order(results);
    if failing.is_empty() {
        return clamp(out, limit);
    }
    out.push_str(&format!("\n### Failing tests ({})\n", failing.len()));
    // Room for the note saying how many were left out, whatever that number is.
    let reserve = truncation_note(failing.len()).len();
    for (shown, result) in failing.iter().enumerate() {
        let section = failing_section(result);
        if out.len() + section.len() + reserve > limit {
            out.push_str(&truncation_note(failing.len() - shown));
            break;
        }
        out.push_str(&section);
    }
    clamp(out, limit)
}

fn truncation_note(left_out: usize) -> String {
    format!(
        "\n> **{left_out} more failing tests are not shown:** GitHub limits a step summary to 1 MiB. \
         The JUnit report lists every test.\n"
    )
}

/// A last resort for absurdly many suites: cut at a character boundary, with a note.
fn clamp(mut text: String, limit: usize) -> String {
    const NOTE: &str = "\n\n> **Truncated:** GitHub limits a step summary to 1 MiB.\n";
    if text.len() <= limit {
        return text;
    }
    let mut cut = limit.saturating_sub(NOTE.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(NOTE);
    text
}

fn headline(results: &[TestResult]) -> String {
    let count = |status| results.iter().filter(|r| r.status == status).count();
    let (passed, failed, skipped) = (
        count(TestStatus::Passed),
        count(TestStatus::Failed),
        count(TestStatus::Skipped),
    );
    let mark = if failed == 0 { "✅" } else { "❌" };
    format!("## {mark} sqlgate: {passed} passed, {failed} failed, {skipped} skipped\n")
}

fn suites_table(results: &[TestResult], summaries: &[SuiteSummary]) -> String {
    // Family metrics (`<family>::<metric>`) have a table of their own.
    let mut metrics: Vec<&MetricKey> = summaries
        .iter()
        .flat_map(|s| s.metrics.keys())
        .filter(|key| matches!(key, MetricKey::Suite(_)))
        .collect();
    metrics.sort_unstable();
    metrics.dedup();

    let mut out = String::from("\n| suite | tests | passed | failed | skipped |");
    for metric in &metrics {
        let _ = write!(out, " {} |", cell(&metric.to_string()));
    }
    out.push_str("\n|---|--:|--:|--:|--:|");
    out.push_str(&"--:|".repeat(metrics.len()));
    out.push('\n');
    for SuiteView {
        name,
        tests,
        summary,
    } in by_suite(results, summaries)
    {
        let count = |status| tests.iter().filter(|r| r.status == status).count();
        let _ = write!(
            out,
            "| {} | {} | {} | {} | {} |",
            cell(name),
            tests.len(),
            count(TestStatus::Passed),
            count(TestStatus::Failed),
            count(TestStatus::Skipped)
        );
        for metric in &metrics {
            let value = summary.and_then(|s| s.metrics.get(*metric));
            let _ = write!(
                out,
                " {} |",
                value.map(|v| format_metric(*v)).unwrap_or_default()
            );
        }
        out.push('\n');
    }
    out
}

/// Each compared suite against its accepted snapshot: the change in EX with its interval, the
/// p-value that it is worse, and its flaky cases.
fn baseline_table(summaries: &[SuiteSummary]) -> String {
    let rows: Vec<String> = summaries
        .iter()
        .filter_map(|summary| {
            let against = summary.against_baseline?;
            let interval = against.interval.map_or_else(String::new, |i| {
                format!("[{}, {}]", format_metric(i.low), format_metric(i.high))
            });
            Some(format!(
                "| {} | {} | {} | {interval} | {} | {} |\n",
                cell(&summary.name),
                against.cases,
                format_metric(against.delta_ex),
                format_metric(against.p),
                summary.flaky
            ))
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "\n### Against the accepted snapshot\n\n| suite | cases | ΔEX | 95% interval | p (worse) \
         | flaky |\n|---|--:|--:|---|--:|--:|\n{}",
        rows.concat()
    )
}

/// What each suite's answers cost, when any answer recorded a latency or a token count.
fn cost_lines(summaries: &[SuiteSummary]) -> String {
    summaries
        .iter()
        .filter_map(|summary| {
            let cost = summary.cost.describe()?;
            Some(format!(
                "\n**Cost of {}:** {}\n",
                cell(&summary.name),
                cell(&cost)
            ))
        })
        .collect()
}

fn gates_table(summaries: &[SuiteSummary]) -> String {
    let rows: Vec<String> = summaries
        .iter()
        .flat_map(|summary| {
            summary
                .gates
                .iter()
                .map(move |(metric, threshold, status)| {
                    let value = summary.metrics.get(metric).map(|v| format_metric(*v));
                    format!(
                        "| {} | {} | {} | {} | {} |\n",
                        cell(&summary.name),
                        cell(&metric.to_string()),
                        cell(threshold),
                        value.unwrap_or_else(|| "n/a".to_string()),
                        match status {
                            TestStatus::Passed => "✅ passed",
                            TestStatus::Failed => "❌ failed",
                            TestStatus::Skipped => "⏭️ not evaluated (the run stopped early)",
                        }
                    )
                })
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "\n### Gates\n\n| suite | metric | threshold | value | result |\n|---|---|---|--:|---|\n{}",
        rows.concat()
    )
}

/// Each family against its seeds (SQLMorph Table VII's shape: ΔEX per setting).
fn families_table(summaries: &[SuiteSummary]) -> String {
    let optional = |value: Option<f64>, decimals: usize| {
        value.map_or_else(|| "n/a".to_string(), |v| format!("{v:.decimals$}"))
    };
    let rows: Vec<String> = summaries
        .iter()
        .flat_map(|summary| {
            summary.families.iter().map(move |(name, family)| {
                let pass_at_k: Vec<String> = family
                    .pass_at_k
                    .iter()
                    .map(|(k, v)| format!("@{k} {v:.3}"))
                    .collect();
                format!(
                    "| {} | {} | {} | {} | {} | {:.3} | {} | {} | {} | {} |\n",
                    cell(&summary.name),
                    cell(name),
                    cell(family.setting.as_deref().unwrap_or("")),
                    family.n,
                    optional(family.a_orig, 3),
                    family.ex,
                    optional(family.drop, 1),
                    family.cs_interval.map_or_else(
                        || "n/a".to_string(),
                        |i| format!("[{:.3}, {:.3}]", i.low, i.high)
                    ),
                    pass_at_k.join(", "),
                    optional(family.qvt.map(|q| q.mean), 3),
                )
            })
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "\n### Families against their seeds\n\n| suite | family | setting | n | A_orig | A_family | drop (points) | CS interval | SQL2NL Pass@K | QVT |\n|---|---|---|--:|--:|--:|--:|---|---|--:|\n{}",
        rows.concat()
    )
}

/// Failed tests, gates first (a missed threshold fails the whole suite), then cases in run order.
fn failing_in_order(results: &[TestResult]) -> Vec<&TestResult> {
    let failed = results.iter().filter(|r| r.status == TestStatus::Failed);
    let (gates, cases): (Vec<&TestResult>, Vec<&TestResult>) = failed.partition(|r| r.is_gate());
    gates.into_iter().chain(cases).collect()
}

fn failing_section(result: &TestResult) -> String {
    let mut out = format!("\n#### ❌ {}\n\n", code_span(&result.name));
    // One paragraph: a line break of a quoted error would start a heading, a list or a table.
    if let Some(message) = &result.message {
        let _ = writeln!(
            out,
            "{}\n",
            html_escape(&message.replace(['\n', '\r'], " "))
        );
    }
    if let Some(source) = &result.source {
        let location = match source.line {
            Some(line) => format!("{}:{line}", source.file.display()),
            None => format!("{} (record {})", source.file.display(), source.record),
        };
        let _ = writeln!(out, "Source: {}\n", code_span(&location));
    }
    if !result.gold_sql.is_empty() {
        out.push_str(&fenced(
            "diff",
            &sql_diff(&result.gold_sql, result.predicted_sql.as_deref()),
        ));
    }
    if let Some(detail) = &result.detail {
        out.push_str("\n<details><summary>Detail</summary>\n\n");
        out.push_str(&fenced("text", detail));
        out.push_str("\n</details>\n");
    }
    out
}

/// A line diff from the gold SQL closest to the prediction to the prediction, one clause per
/// line so a change shows as the clause that changed.
pub fn sql_diff(gold: &[String], predicted: Option<&str>) -> String {
    let predicted_text = predicted.map(clause_text).unwrap_or_default();
    // `rev`: on a tie, `max_by` keeps the last, and the first alternative is the canonical one.
    let closest = gold
        .iter()
        .rev()
        .map(|g| clause_text(g))
        .max_by(|a, b| similarity(a, &predicted_text).total_cmp(&similarity(b, &predicted_text)))
        .unwrap_or_default();
    let mut out = String::new();
    if gold.len() > 1 {
        let _ = writeln!(out, "# closest of {} gold alternatives", gold.len());
    }
    for change in TextDiff::from_lines(&closest, &predicted_text).iter_all_changes() {
        let sign = match change.tag() {
            ChangeTag::Equal => ' ',
            ChangeTag::Delete => '-',
            ChangeTag::Insert => '+',
        };
        let _ = writeln!(out, "{sign} {}", change.value().trim_end_matches('\n'));
    }
    if predicted.is_none() {
        out.push_str("+ (abstained)\n");
    }
    out
}

/// One clause per line, every line ending in a newline (so the last compares like the others).
fn clause_text(sql: &str) -> String {
    sql_clauses(sql)
        .iter()
        .map(|line| format!("{line}\n"))
        .collect()
}

fn similarity(a: &str, b: &str) -> f32 {
    TextDiff::from_lines(a, b).ratio()
}

const CLAUSE_STARTS: [&str; 12] = [
    "FROM",
    "WHERE",
    "GROUP",
    "HAVING",
    "ORDER",
    "LIMIT",
    "UNION",
    "INTERSECT",
    "EXCEPT",
    "JOIN",
    "ON",
    "SELECT",
];
const JOIN_MODIFIERS: [&str; 7] = [
    "LEFT", "RIGHT", "INNER", "OUTER", "CROSS", "FULL", "NATURAL",
];

/// Splits SQL into lines at clause keywords outside quotes (`LEFT JOIN` stays together).
fn sql_clauses(sql: &str) -> Vec<String> {
    let sql = normalize_sql(sql);
    let mut lines: Vec<Vec<&str>> = vec![Vec::new()];
    for word in words(&sql) {
        let keyword = word.to_ascii_uppercase();
        let starts_clause = CLAUSE_STARTS.contains(&keyword.as_str());
        let current = lines
            .last_mut()
            .filter(|line| !line.is_empty() && starts_clause);
        if let Some(current) = current {
            let mut next = Vec::new();
            if keyword == "JOIN" {
                while current
                    .last()
                    .is_some_and(|w| JOIN_MODIFIERS.contains(&w.to_ascii_uppercase().as_str()))
                {
                    next.insert(0, current.pop().unwrap_or_default());
                }
            }
            if current.is_empty() {
                lines.pop();
            }
            lines.push(next);
        }
        if let Some(line) = lines.last_mut() {
            line.push(word);
        }
    }
    lines
        .into_iter()
        .map(|line| line.join(" "))
        .filter(|l| !l.is_empty())
        .collect()
}

/// The words of normalized SQL: split at spaces outside quotes, so a quoted literal is one word.
fn words(sql: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut quote: Option<char> = None;
    let mut start = 0;
    for (index, c) in sql.char_indices() {
        quote = match quote {
            Some(open) if c == closing_quote(open) => None,
            Some(open) => Some(open),
            None if c == ' ' => {
                words.push(&sql[start..index]);
                start = index + 1;
                None
            }
            None => opening_quote(c),
        };
    }
    words.push(&sql[start..]);
    words.retain(|word| !word.is_empty());
    words
}

/// `::error` commands for at most `limit` failing tests (gates first, then cases in run order),
/// each pointing at the case's source record, and a `::notice` counting the rest. Paths inside
/// `workspace` (`$GITHUB_WORKSPACE`) are made relative to it, as GitHub expects.
pub fn annotations(results: &[TestResult], limit: usize, workspace: Option<&Path>) -> Vec<String> {
    let failing = failing_in_order(results);
    let mut lines: Vec<String> = failing
        .iter()
        .take(limit)
        .map(|result| error_annotation(result, workspace))
        .collect();
    if failing.len() > limit {
        lines.push(format!(
            "::notice title=sqlgate::{}",
            escape_data(&format!(
                "{} more failing tests are not annotated; see the job summary or the JUnit report.",
                failing.len() - limit
            ))
        ));
    }
    lines
}

fn error_annotation(result: &TestResult, workspace: Option<&Path>) -> String {
    let mut properties = Vec::new();
    if let Some(source) = &result.source {
        let file = workspace
            .and_then(|root| source.file.strip_prefix(root).ok())
            .unwrap_or(&source.file);
        let file = file.to_string_lossy().replace('\\', "/");
        properties.push(format!("file={}", escape_property(&file)));
        if let Some(line) = source.line {
            properties.push(format!("line={line}"));
        }
    }
    properties.push(format!("title={}", escape_property(&result.name)));
    let mut message = result
        .message
        .clone()
        .unwrap_or_else(|| "failed".to_string());
    if let Some(detail) = &result.detail {
        message = format!("{message}\n{detail}");
    }
    format!(
        "::error {}::{}",
        properties.join(","),
        escape_data(&message)
    )
}

/// `text` with a `\` before the `::` of every line GitHub Actions would run as a workflow
/// command (it ends a line at CR or LF and skips leading white space): for the lines of a
/// report that show a user's or a model's text (an answer's SQL, an error message), which must
/// never act on the job. sqlgate's own annotations ([`annotations`]) are printed apart.
pub fn inert_lines(text: &str) -> String {
    text.split_inclusive(['\n', '\r'])
        .map(|line| {
            let indent = line.len() - line.trim_start().len();
            if line[indent..].starts_with("::") {
                format!("{}\\{}", &line[..indent], &line[indent..])
            } else {
                line.to_string()
            }
        })
        .collect()
}

/// Escapes a workflow command's message, as GitHub's toolkit does.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a workflow command's property value: also `:` and `,`, which delimit properties.
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// Appends `markdown` to the step summary file (`$GITHUB_STEP_SUMMARY`), which GitHub renders
/// on the run's page once the step ends.
pub fn append_step_summary(path: &Path, markdown: &str) -> Result<(), OutputError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(secrets::redact(markdown).as_bytes()))
        .map_err(|error| OutputError::new(path, error))
}

/// A table cell: pipes escaped, on one line, HTML-escaped.
fn cell(text: &str) -> String {
    html_escape(&text.replace('|', "\\|").replace(['\n', '\r'], " "))
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Inline code that holds any text: a fence longer than its longest run of backticks.
fn code_span(text: &str) -> String {
    let fence = "`".repeat(longest_run(text, '`') + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!(
        "{fence}{pad}{}{pad}{fence}",
        text.replace(['\n', '\r'], " ")
    )
}

/// A fenced code block that holds any text.
fn fenced(language: &str, text: &str) -> String {
    let fence = "`".repeat(longest_run(text, '`').max(2) + 1);
    format!(
        "{fence}{language}\n{}\n{fence}\n",
        text.trim_end_matches('\n')
    )
}

fn longest_run(text: &str, c: char) -> usize {
    text.split(|x| x != c).map(str::len).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clauses_split_at_keywords_outside_quotes() {
        let sql = "SELECT a.x FROM a LEFT OUTER JOIN b ON a.id = b.id WHERE a.note = 'x FROM y' ORDER BY 1";
        assert_eq!(
            sql_clauses(sql),
            vec![
                "SELECT a.x",
                "FROM a",
                "LEFT OUTER JOIN b",
                "ON a.id = b.id",
                "WHERE a.note = 'x FROM y'",
                "ORDER BY 1"
            ]
        );
    }

    #[test]
    fn quoted_literals_are_one_word() {
        assert_eq!(words("a 'b c' [d e]  f"), vec!["a", "'b c'", "[d e]", "f"]);
    }

    #[test]
    fn a_failure_message_is_one_paragraph_of_escaped_text() {
        let mut failed = TestResult::new(
            "s::db::q",
            "s",
            crate::gate::TestKind::Case(0),
            TestStatus::Failed,
        );
        failed.message =
            Some("pred_error: near \"x\"\n# Fake heading\r| a | b |\n<img src=x>".into());
        let section = failing_section(&failed);
        assert!(
            section.contains("near \"x\" # Fake heading | a | b | &lt;img src=x&gt;\n"),
            "{section}"
        );
    }

    #[test]
    fn no_line_shown_is_a_workflow_command() {
        assert_eq!(
            inert_lines("a\n  ::warning::x\r::add-mask::y\n:: z ::\nb ::c"),
            "a\n  \\::warning::x\r\\::add-mask::y\n\\:: z ::\nb ::c"
        );
        assert_eq!(inert_lines("demo::q1 ok\n"), "demo::q1 ok\n");
    }

    #[test]
    fn code_fences_outgrow_the_text() {
        assert_eq!(code_span("a`b"), "``a`b``");
        assert_eq!(code_span("plain"), "`plain`");
        assert!(fenced("sql", "x ``` y").starts_with("````sql\n"));
    }
}
