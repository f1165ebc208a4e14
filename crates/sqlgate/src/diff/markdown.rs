//! A diff as a pull-request comment: a headline, the regressions first (the first few with the
//! question, gold SQL and error a run record has), the fixes, the metric table, then the other
//! changes.
//!
//! A comment is for reading, so each list shows its first [`ROWS`] cases (the JSON has them
//! all), and it stays within [`LIMIT`] characters whatever the cases hold: GitHub refuses a
//! comment over 65,536, and the rest is room for a caller's own lines around it. The lists are
//! filled in order of importance (metrics, regressions, fixes, new, removed, changed answers),
//! each cut where its rows or the room end, with a line saying how many it leaves out.

use std::fmt::Write as _;

use sqlgate_eval::metrics::ex::Verdict;

use super::text::metric_row;
use super::{Change, Diff, Listed, Side};

/// The most characters a comment takes.
pub const LIMIT: usize = 60_000;

/// Room kept for each list's heading and the line saying what it leaves out, so the comment
/// stays within [`LIMIT`] whatever is left out.
const HEADING_ROOM: usize = 300;

/// The lists a comment may hold: metrics, regressions, fixes, new, removed, changed.
const LISTS: usize = 6;

/// The most cases a list shows.
pub const ROWS: usize = 50;

/// The most regressions shown with their detail.
const DETAILS: usize = 10;

/// The longest detail block shown per case, in characters.
const DETAIL_CHARS: usize = 1_500;

/// The longest answer shown in a table cell, in characters.
const CELL_CHARS: usize = 300;

/// The diff as GitHub-flavoured markdown of at most [`LIMIT`] characters.
pub fn render(diff: &Diff) -> String {
    let top = format!(
        "### sqlgate diff: {}\n\nbase {} → head {}: {} cases in both.\n\n",
        diff.headline,
        side(&diff.base),
        side(&diff.head),
        diff.summary.compared
    );
    let notes: String = if diff.notes.is_empty() {
        String::new()
    } else {
        let items: String = diff.notes.iter().map(|n| format!("- {n}\n")).collect();
        format!("#### Notes\n\n{items}")
    };
    let mut room = LIMIT.saturating_sub(chars(&top) + chars(&notes) + LISTS * HEADING_ROOM);
    let metrics = metrics(diff, &mut room);
    let regressions = changes("Regressions", &diff.regressions, DETAILS, &mut room);
    let fixes = changes("Fixes", &diff.fixes, 0, &mut room);
    let new = listed("New cases", &diff.new, &mut room);
    let removed = listed("Removed cases", &diff.removed, &mut room);
    let changed = changes(
        "Changed answers (same pass/fail)",
        &diff.changed,
        0,
        &mut room,
    );
    [
        top,
        regressions,
        fixes,
        metrics,
        new,
        removed,
        changed,
        notes,
    ]
    .concat()
}

/// `` `base.json` (run record, 39 cases) ``.
fn side(side: &Side) -> String {
    let shard = side
        .partition
        .as_ref()
        .map_or_else(String::new, |p| format!(", shard {}", code(p)));
    format!(
        "{} ({}, {} cases{shard})",
        code(&side.path),
        side.kind.label(),
        side.cases
    )
}

/// A table section: its heading, then the table's head and as many of the first [`ROWS`] rows
/// (each with a block shown after the table) as `room` holds, then what it left out. The heading and that line
/// take the [`HEADING_ROOM`] kept for them; the rest comes out of `room`.
fn section(
    heading: &str,
    table_head: &str,
    total: usize,
    rows: impl Iterator<Item = (String, String)>,
    room: &mut usize,
) -> String {
    let (mut table, mut blocks, mut shown) = (String::new(), String::new(), 0);
    let mut left = room.saturating_sub(chars(table_head));
    for (row, block) in rows.take(ROWS) {
        let size = chars(&row) + chars(&block);
        if size > left || chars(table_head) > *room {
            break;
        }
        left -= size;
        table.push_str(&row);
        blocks.push_str(&block);
        shown += 1;
    }
    let mut text = format!("#### {heading}\n\n");
    if shown > 0 {
        let _ = write!(text, "{table_head}{table}\n{blocks}");
        *room = left;
    }
    if shown < total {
        let _ = writeln!(
            text,
            "_{} of {total} not shown here: `sqlgate diff --format json` lists them all._\n",
            total - shown
        );
    }
    text
}

fn metrics(diff: &Diff, room: &mut usize) -> String {
    let rows: Vec<[String; 7]> = diff
        .suites
        .iter()
        .flat_map(|s| s.metrics.iter().map(|m| metric_row(&s.name, m)))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let total = rows.len();
    let rows = rows.into_iter().map(|mut row| {
        if row[6] == "beyond noise" {
            row[6] = "**beyond noise**".to_string();
        }
        row[0] = code(&row[0]);
        let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        (format!("| {} |\n", cells.join(" | ")), String::new())
    });
    let head = format!(
        "Means over each suite's feasible cases (the values its gates compare; run records \
         and snapshots hold no thresholds). Δ and its 95% interval: a paired bootstrap over \
         the feasible cases in both ({} resamples, seed {}).\n\n\
         | suite | metric | base | head | Δ | 95% interval | |\n\
         |---|---|---:|---:|---:|---|---|\n",
        diff.bootstrap.resamples, diff.bootstrap.seed
    );
    section("Metrics", &head, total, rows, room)
}

/// The changes as a table, the first `details` of them with their detail after it.
fn changes(title: &str, changes: &[Change], details: usize, room: &mut usize) -> String {
    if changes.is_empty() {
        return String::new();
    }
    let rows = changes.iter().enumerate().map(|(index, change)| {
        let row = format!(
            "| {} | {} | {} |\n",
            cell(&code(&change.test)),
            cell(&answer_cell(change.base.verdict, &change.base.answer)),
            cell(&answer_cell(change.head.verdict, &change.head.answer)),
        );
        let block = if index < details {
            detail_block(change)
        } else {
            String::new()
        };
        (row, block)
    });
    section(
        &format!("{title} ({})", changes.len()),
        "| test | base | head |\n|---|---|---|\n",
        changes.len(),
        rows,
        room,
    )
}

fn listed(title: &str, cases: &[Listed], room: &mut usize) -> String {
    if cases.is_empty() {
        return String::new();
    }
    let rows = cases.iter().map(|case| {
        let row = format!(
            "| {} | {} |\n",
            cell(&code(&case.test)),
            cell(&answer_cell(case.case.verdict, &case.case.answer)),
        );
        (row, String::new())
    });
    section(
        &format!("{title} ({})", cases.len()),
        "| test | outcome |\n|---|---|\n",
        cases.len(),
        rows,
        room,
    )
}

/// `incorrect: SELECT ...` with the SQL as code, cut at [`CELL_CHARS`].
fn answer_cell(verdict: Verdict, answer: &str) -> String {
    format!("{}: {}", verdict.as_str(), code(&cut(answer, CELL_CHARS)))
}

/// Head's detail of a regression (question, gold, predicted SQL, error), collapsed, when a
/// run record has it.
fn detail_block(change: &Change) -> String {
    let Some(detail) = &change.head.detail else {
        return String::new();
    };
    let detail = cut(detail, DETAIL_CHARS);
    let fence = "`".repeat(longest_backtick_run(&detail).max(2) + 1);
    format!(
        "<details><summary><code>{}</code>: why it fails in head</summary>\n\n\
         {fence}text\n{detail}\n{fence}\n\n</details>\n\n",
        html(&change.test)
    )
}

/// Inline code holding `text` as it is, whatever backticks it contains.
fn code(text: &str) -> String {
    let fence = "`".repeat(longest_backtick_run(text) + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// A table cell: a pipe escaped (GitHub reads `\|` as a pipe even inside code), one line.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// `text` cut to `limit` characters, saying so.
fn cut(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((end, _)) => format!("{} … (cut)", &text[..end]),
        None => text.to_string(),
    }
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_hold_any_backticks() {
        assert_eq!(code("a::b"), "`a::b`");
        assert_eq!(code("x`y"), "``x`y``");
        assert_eq!(code("`q`"), "`` `q` ``");
        assert_eq!(cell("a | b\nc"), "a \\| b c");
    }

    #[test]
    fn cut_text_keeps_whole_characters() {
        assert_eq!(cut("héllo", 2), "hé … (cut)");
        assert_eq!(cut("hé", 2), "hé");
    }
}
