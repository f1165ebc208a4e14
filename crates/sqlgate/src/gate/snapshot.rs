//! Accepted outcomes per suite, as files in insta's `.snap` format, so a change in a system's
//! answers shows up as a reviewable diff and the usual insta workflow applies.
//!
//! `snapshots/<suite>.snap` is YAML front matter then one line per case test, sorted by name:
//!
//! ```text
//! ---
//! source: sqlgate test
//! expression: suite demo
//! ---
//! demo::bookshop::q01 | pass | correct | ex=1 | SELECT title FROM books WHERE genre = 'Poetry'
//! demo::bookshop::q02 | fail | pred_error | ex=0 | SELECT nme FROM customers
//! demo::bookshop::q03 | pass | abstained | ex=0 | abstain
//! ```
//!
//! Fields are separated by ` | `. In every field but the SQL, `\` and `|` are written `\\` and
//! `\|` (and line breaks `\n`, `\r`); metric keys and values also write spaces as `\s` and `=`
//! as `\=`, so each metric is one `key=value` word. The SQL is the rest of the line, on one line (see [`normalize_sql`]):
//! `abstain` when the system abstained, `""` when it answered an empty string, and for a
//! `system_error` the kind of error in angle brackets (`<garbage>`, `<timeout>`,
//! `<not_recorded>`...: [`crate::system::SystemErrorKind::as_str`]), so a model rename that
//! turns garbage into missing recordings shows in the diff. Lines written before the kind was
//! (`<no answer>`) are still read, and written back as they were.
//!
//! A run that differs is written as `<suite>.snap.new` beside the accepted file, exactly as
//! insta writes pending snapshots, so `cargo insta review` / `cargo insta accept` find and
//! accept it (they look for `*.snap.new` files and rewrite them as `.snap`); [`accept`] does the
//! same without cargo-insta. Nothing here looks at `CI`: callers skip [`write_pending`] under CI,
//! where a pending file would be lost with the machine.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use similar::TextDiff;

use serde::de::IntoDeserializer as _;
use serde::Deserialize as _;
use sqlgate_eval::error::{check_printable, InputError, OutputError};
use sqlgate_eval::files::write_text;
use sqlgate_eval::metrics::case_metric::CaseMetric;
use sqlgate_eval::metrics::ex::Verdict;
use sqlgate_eval::sqltext::{closing_quote, opening_quote};

use super::judge::format_metric;

/// One case test's outcome as snapshotted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotEntry {
    /// The test name, `<suite>::<db>::<case-id>`.
    pub name: String,
    /// Whether the case was correct (not whether the gate let it pass).
    pub passed: bool,
    /// The verdict class: `correct`, `incorrect`, `pred_error`...
    pub verdict: Verdict,
    /// Metric values as written, e.g. `ex` -> `1`.
    pub metrics: BTreeMap<String, String>,
    /// The predicted SQL; `None` when the system abstained or gave no usable answer.
    pub sql: Option<String>,
    /// A `system_error` case's kind of error (`garbage`, `timeout`, `not_recorded`...); `None`
    /// otherwise, and in lines written before kinds were (`<no answer>`).
    pub system_error: Option<String>,
}

/// How the current run differs from the accepted snapshot; every list holds test names, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapshotDiff {
    /// Passed in the accepted snapshot, fails now.
    pub regressions: Vec<String>,
    /// Failed in the accepted snapshot, passes now.
    pub improvements: Vec<String>,
    /// Same pass/fail, different predicted SQL.
    pub sql_changed: Vec<String>,
    /// Same pass/fail and SQL, but a different verdict class or metric value.
    pub other_changed: Vec<String>,
    /// Not in the accepted snapshot.
    pub added: Vec<String>,
    /// In the accepted snapshot, not in this run.
    pub removed: Vec<String>,
}

impl SnapshotDiff {
    /// True when the rendered snapshot would not change.
    pub fn is_empty(&self) -> bool {
        self.regressions.is_empty()
            && self.improvements.is_empty()
            && self.sql_changed.is_empty()
            && self.other_changed.is_empty()
            && self.added.is_empty()
            && self.removed.is_empty()
    }
}

const SOURCE: &str = "sqlgate test";
const FIELD_SEPARATOR: &str = " | ";
const ABSTAIN: &str = "abstain";
const NO_ANSWER: &str = "<no answer>";
const EMPTY_SQL: &str = "\"\"";

/// `<dir>/<suite>.snap`, the accepted snapshot.
pub fn path(dir: &Path, suite: &str) -> PathBuf {
    dir.join(format!("{suite}.snap"))
}

/// `<dir>/<suite>.snap.new`, the pending snapshot.
pub fn pending_path(dir: &Path, suite: &str) -> PathBuf {
    dir.join(format!("{suite}.snap.new"))
}

/// The whole snapshot file: front matter and one line per entry, sorted by name.
pub fn render(suite: &str, entries: &[SnapshotEntry]) -> String {
    with_front_matter(suite, &body(entries))
}

/// The whole snapshot file of an already rendered [`body`].
pub fn with_front_matter(suite: &str, body: &str) -> String {
    format!(
        "---\nsource: {}\nexpression: {}\n---\n{body}",
        yaml_string(SOURCE),
        yaml_string(&format!("suite {suite}")),
    )
}

/// The body alone: one line per entry, sorted by name, each ending in a newline.
pub fn body(entries: &[SnapshotEntry]) -> String {
    let mut sorted: Vec<&SnapshotEntry> = entries.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    sorted
        .par_iter()
        .map(|entry| render_line(entry) + "\n")
        .collect()
}

fn render_line(entry: &SnapshotEntry) -> String {
    let mut fields = vec![
        escape(&entry.name, false),
        if entry.passed { "pass" } else { "fail" }.to_string(),
        entry.verdict.as_str().to_string(),
    ];
    // `ex` first: it is the metric every reader looks for.
    let ex = entry.metrics.get_key_value("ex");
    let others = entry.metrics.iter().filter(|(key, _)| *key != "ex");
    for (key, value) in ex.into_iter().chain(others) {
        fields.push(format!("{}={}", escape(key, true), escape(value, true)));
    }
    fields.push(answer_text(entry));
    fields.join(FIELD_SEPARATOR)
}

/// How an answer is written in a snapshot line: the normalized SQL, `abstain`, `""`, or the
/// kind of error in angle brackets.
pub fn answer_text(entry: &SnapshotEntry) -> String {
    match entry.sql.as_deref().map(normalize_sql) {
        None => match &entry.system_error {
            Some(kind) => format!("<{kind}>"),
            None if entry.verdict == Verdict::SystemError => NO_ANSWER.to_string(),
            None => ABSTAIN.to_string(),
        },
        Some(sql) if sql.is_empty() => EMPTY_SQL.to_string(),
        Some(sql) => sql,
    }
}

/// SQL on one line: runs of white space outside quotes become one space, line breaks and tabs
/// inside quotes are written `\n`, `\r`, `\t` (other characters in quotes are kept, so a changed
/// literal still shows), and trailing semicolons are dropped. For review, not for execution.
pub fn normalize_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    let mut pending_space = false;
    for c in sql.chars() {
        match quote {
            Some(open) => {
                match c {
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    _ => out.push(c),
                }
                if c == closing_quote(open) {
                    quote = None;
                }
            }
            None if c.is_whitespace() => pending_space = !out.is_empty(),
            None => {
                if pending_space {
                    out.push(' ');
                    pending_space = false;
                }
                quote = opening_quote(c);
                out.push(c);
            }
        }
    }
    let trimmed = out
        .trim_end()
        .trim_end_matches(|c: char| c == ';' || c.is_whitespace());
    trimmed.to_string()
}

/// Escapes a field other than the SQL; `word` also escapes spaces and `=` (metric keys, values).
fn escape(text: &str, word: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '|' => out.push_str("\\|"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            ' ' if word => out.push_str("\\s"),
            '=' if word => out.push_str("\\="),
            _ => out.push(c),
        }
    }
    out
}

fn unescape(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('|') => out.push('|'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('s') => out.push(' '),
            Some('=') => out.push('='),
            Some(other) => {
                return Err(format!(
                    "unknown escape `\\{}` in `{}`",
                    other.escape_debug(),
                    text.escape_debug()
                ))
            }
            None => return Err(format!("`{}` ends in a lone `\\`", text.escape_debug())),
        }
    }
    Ok(out)
}

/// Double-quotes a YAML value exactly when insta's emitter would, so `cargo insta accept`
/// rewrites our pending files byte for byte.
fn yaml_string(value: &str) -> String {
    const RESERVED: [&str; 22] = [
        "yes", "Yes", "YES", "no", "No", "NO", "True", "TRUE", "true", "False", "FALSE", "false",
        "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL", "~",
    ];
    let needs_quotes = value.is_empty()
        || value.starts_with(' ')
        || value.ends_with(' ')
        || value.starts_with(['&', '*', '?', '|', '-', '<', '>', '=', '!', '%', '@', '.'])
        || value.starts_with("0x")
        || value.contains([':', '{', '}', '[', ']', ',', '#', '`', '"', '\'', '\\'])
        || value.contains(|c: char| {
            matches!(c, '\0'..='\x06' | '\t' | '\n' | '\r' | '\x0e'..='\x1a' | '\x1c'..='\x1f')
        })
        || RESERVED.contains(&value)
        || value.parse::<i64>().is_ok()
        || value.parse::<f64>().is_ok();
    if !needs_quotes {
        return value.to_string();
    }
    let mut quoted = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\x08' => quoted.push_str("\\b"),
            '\t' => quoted.push_str("\\t"),
            '\n' => quoted.push_str("\\n"),
            '\x0c' => quoted.push_str("\\f"),
            '\r' => quoted.push_str("\\r"),
            c if c < ' ' || c == '\x7f' => quoted.push_str(&format!("\\u{:04x}", c as u32)),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// An accepted snapshot file: its text as written, and its entries.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Accepted {
    /// The file's text, as written.
    pub text: String,
    /// Its entries, one per case.
    pub entries: Vec<SnapshotEntry>,
}

/// Reads an accepted (or pending) snapshot; `Ok(None)` when the file does not exist.
pub fn read(path: &Path) -> Result<Option<Accepted>, InputError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(Accepted {
            entries: parse(path, &text)?,
            text,
        })),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(InputError::file(
            path,
            format!("cannot read the snapshot: {error}"),
        )),
    }
}

/// Parses a snapshot file's text; `path` names it in errors.
pub fn parse(path: &Path, text: &str) -> Result<Vec<SnapshotEntry>, InputError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line));
    let error = |line: usize, message: String| InputError::file(path, message).at_line(line);
    match lines.next() {
        Some((_, first)) if first.trim_end() == "---" => {}
        _ => {
            return Err(error(
                1,
                "a snapshot starts with a `---` front matter line".into(),
            ))
        }
    }
    let mut closed = false;
    for (number, line) in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        if !line.trim().is_empty() && !line.contains(':') {
            return Err(error(
                number,
                format!(
                    "front matter line is not `key: value`: `{}`",
                    line.escape_debug()
                ),
            ));
        }
    }
    if !closed {
        return Err(InputError::file(
            path,
            "the front matter has no closing `---` line",
        ));
    }
    let mut entries = Vec::new();
    let mut seen = BTreeSet::new();
    for (number, line) in lines.filter(|(_, line)| !line.trim().is_empty()) {
        let entry = parse_line(line)
            .and_then(|entry| check_entry(&entry).map(|()| entry))
            .map_err(|message| error(number, message))?;
        if !seen.insert(entry.name.clone()) {
            return Err(error(
                number,
                format!("test `{}` appears twice", entry.name),
            ));
        }
        entries.push(entry);
    }
    Ok(entries)
}

fn parse_line(line: &str) -> Result<SnapshotEntry, String> {
    let expected = "expected `<test> | pass|fail | <verdict> | <metric>=<value>... | <sql>`";
    let (name, rest) = split_field(line);
    let (status, rest) = split_field(rest.ok_or(expected)?);
    let (verdict, rest) = split_field(rest.ok_or(expected)?);
    let mut rest = rest.ok_or(expected)?;
    let passed = match status {
        "pass" => true,
        "fail" => false,
        other => {
            return Err(format!(
                "status must be `pass` or `fail`, not `{}`",
                other.escape_debug()
            ))
        }
    };
    let mut metrics = BTreeMap::new();
    while let (field, Some(after)) = split_field(rest) {
        let Some((key, value)) = metric(field) else {
            break;
        };
        let key = unescape(key)?;
        if metrics.insert(key.clone(), unescape(value)?).is_some() {
            return Err(format!("metric `{key}` appears twice"));
        }
        rest = after;
    }
    let verdict = unescape(verdict)?;
    let verdict = Verdict::deserialize(verdict.as_str().into_deserializer()).map_err(
        |_: serde::de::value::Error| format!("unknown verdict `{}`", verdict.escape_debug()),
    )?;
    let system_error = (verdict == Verdict::SystemError)
        .then(|| error_kind(rest))
        .flatten();
    let sql = match rest {
        ABSTAIN | NO_ANSWER => None,
        EMPTY_SQL => Some(String::new()),
        _ if system_error.is_some() => None,
        sql => Some(sql.to_string()),
    };
    Ok(SnapshotEntry {
        name: unescape(name)?,
        passed,
        verdict,
        metrics,
        sql,
        system_error,
    })
}

/// A line's fields agree with each other and lie in their ranges, as a run writes them (the
/// checks [`super::record::CaseRecord::contradiction`] makes on a run record): a line that
/// does not was edited or corrupted, and which of its fields to believe cannot be told. An
/// accepted `pass` with `pass_rate=0` would otherwise make any later pass rate look like no drop.
fn check_entry(entry: &SnapshotEntry) -> Result<(), String> {
    check_printable("test name", &entry.name).map_err(|e| e.to_string())?;
    let verdict = entry.verdict;
    for (key, value) in &entry.metrics {
        check_metric(key, value)
            .map_err(|range| format!("{}={}: {range}", key.escape_debug(), value.escape_debug()))?;
    }
    let ex = entry.metrics.get("ex").ok_or("the line has no `ex=`")?;
    if (verdict == Verdict::Correct) != (ex == "1") {
        return Err(format!(
            "verdict `{}` contradicts ex={ex}",
            verdict.as_str()
        ));
    }
    // The verdict is that of the answer shown, whose correctness is the case's (a correct
    // infeasible case abstained).
    let shown_correct = matches!(verdict, Verdict::Correct | Verdict::Abstained);
    if entry.passed && !shown_correct || !entry.passed && verdict == Verdict::Correct {
        return Err(format!(
            "status `{}` contradicts verdict `{}`",
            if entry.passed { "pass" } else { "fail" },
            verdict.as_str()
        ));
    }
    let samples = entry.metrics.get("samples");
    let rate = entry.metrics.get("pass_rate");
    match (samples, rate) {
        (None, None) => Ok(()),
        (Some(samples), Some(rate)) => check_pass_rate(entry.passed, samples, rate),
        _ => Err("`pass_rate` and `samples` come together".to_string()),
    }
}

/// A metric's value in its range; metrics this version does not know are kept as written.
fn check_metric(key: &str, value: &str) -> Result<(), &'static str> {
    let number = || value.parse::<f64>().ok().filter(|v| v.is_finite());
    let holds = match key {
        "ex" | "esm" | "etm" => value == "0" || value == "1",
        _ if key.ends_with("_error") => value == "1",
        "pass_rate" | "soft_f1" | "exp" | "exr" | "f1" => {
            number().is_some_and(|v| (0.0..=1.0).contains(&v))
        }
        _ if CaseMetric::named(key).is_some() => number().is_some_and(|v| (0.0..=1.0).contains(&v)),
        "samples" => value.parse::<u32>().is_ok_and(|n| n >= 2),
        "ves" | "rves" | "ves_steps" | "rves_steps" => number().is_some_and(|v| v >= 0.0),
        _ => true,
    };
    match key {
        _ if holds => Ok(()),
        "ex" | "esm" | "etm" => Err("must be 0 or 1"),
        _ if key.ends_with("_error") => Err("must be 1"),
        "samples" => Err("must be a whole number of at least 2"),
        "ves" | "rves" | "ves_steps" | "rves_steps" => Err("must be a number of at least 0"),
        _ => Err("must be a number from 0 to 1"),
    }
}

/// A sampled case's pass rate is some count of its samples, as written with 4 decimals; a case
/// passes with at least one correct sample and fails with at least one wrong one, whatever the
/// pass rule.
fn check_pass_rate(passed: bool, samples: &str, rate: &str) -> Result<(), String> {
    let n: u32 = samples.parse().map_err(|_| "samples: not a count")?;
    let count = (0..=n).find(|&k| format_metric(f64::from(k) / f64::from(n)) == rate);
    match count {
        None => Err(format!(
            "pass_rate={rate} is no count of correct samples out of samples={n}"
        )),
        Some(0) if passed => Err(format!(
            "status `pass` contradicts pass_rate={rate}: no sample was correct"
        )),
        Some(k) if k == n && !passed => Err(format!(
            "status `fail` contradicts pass_rate={rate}: every sample was correct"
        )),
        Some(_) => Ok(()),
    }
}

/// The kind in a `<kind>` answer field (`<garbage>`, `<timeout>`...).
fn error_kind(field: &str) -> Option<String> {
    let kind = field.strip_prefix('<')?.strip_suffix('>')?;
    let is_name = !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    is_name.then(|| kind.to_string())
}

/// Splits off the first field at the first unescaped ` | ` (compared as bytes: an escape may
/// precede a multi-byte character, and the separator is ASCII, so slices stay on boundaries).
fn split_field(text: &str) -> (&str, Option<&str>) {
    let bytes = text.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'\\' {
            index += 2;
        } else if bytes[index..].starts_with(FIELD_SEPARATOR.as_bytes()) {
            return (&text[..index], Some(&text[index + FIELD_SEPARATOR.len()..]));
        } else {
            index += 1;
        }
    }
    (text, None)
}

/// A metric field is one `key=value` word with a non-empty key, split at the unescaped `=`.
/// A word has no space (its own are escaped `\s`); other white space, which [`escape`] keeps,
/// does not end it.
fn metric(field: &str) -> Option<(&str, &str)> {
    if field.contains(' ') {
        return None;
    }
    let bytes = field.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'\\' => index += 2,
            b'=' if index > 0 => return Some((&field[..index], &field[index + 1..])),
            b'=' => return None,
            _ => index += 1,
        }
    }
    None
}

/// Compares the accepted snapshot with the current run, by test name.
pub fn compare(accepted: &[SnapshotEntry], current: &[SnapshotEntry]) -> SnapshotDiff {
    let before: BTreeMap<&str, &SnapshotEntry> =
        accepted.iter().map(|e| (e.name.as_str(), e)).collect();
    let now: BTreeMap<&str, &SnapshotEntry> =
        current.iter().map(|e| (e.name.as_str(), e)).collect();
    let mut diff = SnapshotDiff::default();
    for (name, entry) in &now {
        let Some(old) = before.get(name) else {
            diff.added.push(name.to_string());
            continue;
        };
        let list = match (old.passed, entry.passed) {
            (true, false) => &mut diff.regressions,
            (false, true) => &mut diff.improvements,
            _ if answer_text(old) != answer_text(entry) => &mut diff.sql_changed,
            _ if old.verdict != entry.verdict || old.metrics != entry.metrics => {
                &mut diff.other_changed
            }
            _ => continue,
        };
        list.push(name.to_string());
    }
    diff.removed = before
        .keys()
        .filter(|name| !now.contains_key(*name))
        .map(|name| name.to_string())
        .collect();
    diff
}

/// A unified diff (one line of context) of two snapshot bodies; empty when they are equal.
pub fn unified_diff(accepted: &str, current: &str) -> String {
    if accepted == current {
        return String::new();
    }
    TextDiff::from_lines(accepted, current)
        .unified_diff()
        .context_radius(1)
        .header("accepted", "current")
        .to_string()
}

/// Writes `<dir>/<suite>.snap.new` for review. Callers skip this under CI.
pub fn write_pending(dir: &Path, suite: &str, content: &str) -> Result<PathBuf, OutputError> {
    let path = pending_path(dir, suite);
    check_suite_name(&path, suite)?;
    write_text(&path, content)?;
    Ok(path)
}

/// Writes `<dir>/<suite>.snap` directly (`--accept`), removing any pending file it supersedes.
pub fn write_accepted(dir: &Path, suite: &str, content: &str) -> Result<PathBuf, OutputError> {
    let path = path(dir, suite);
    check_suite_name(&path, suite)?;
    write_text(&path, content)?;
    remove_if_present(&pending_path(dir, suite))?;
    Ok(path)
}

/// Accepts the pending snapshot of `suite` by renaming it over the accepted one, as
/// `cargo insta accept` does. Returns false when nothing is pending.
pub fn accept(dir: &Path, suite: &str) -> Result<bool, OutputError> {
    let pending = pending_path(dir, suite);
    check_suite_name(&pending, suite)?;
    if !pending.is_file() {
        return Ok(false);
    }
    let accepted = path(dir, suite);
    fs::rename(&pending, &accepted).map_err(|error| OutputError::new(&accepted, error))?;
    Ok(true)
}

fn check_suite_name(path: &Path, suite: &str) -> Result<(), OutputError> {
    let valid = !suite.is_empty() && !suite.starts_with('.') && !suite.contains(['/', '\\']);
    if valid {
        Ok(())
    } else {
        let problem = format!("suite name `{suite}` cannot name a snapshot file");
        Err(OutputError::new(
            path,
            io::Error::new(io::ErrorKind::InvalidInput, problem),
        ))
    }
}

fn remove_if_present(path: &Path) -> Result<(), OutputError> {
    match fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(OutputError::new(path, error)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_verdict(name: &str) -> Verdict {
        Verdict::deserialize(name.into_deserializer())
            .unwrap_or_else(|_: serde::de::value::Error| panic!("{name}"))
    }

    #[test]
    fn sql_is_folded_outside_quotes_only() {
        let sql = "SELECT name\n  FROM t\tWHERE note = 'a  b\nc' ;\n";
        assert_eq!(
            normalize_sql(sql),
            "SELECT name FROM t WHERE note = 'a  b\\nc'"
        );
        assert_eq!(normalize_sql("  ;; "), "");
        assert_eq!(
            normalize_sql("SELECT [my  col] FROM t"),
            "SELECT [my  col] FROM t"
        );
    }

    #[test]
    fn deep_and_huge_sql_is_folded_without_parsing() {
        // Issue 11 item 1: snapshot lines are folded character by character, so a prediction
        // too deep for any parser is written as it is.
        let deep = format!("SELECT 1{};", "\n+ 1".repeat(140_000));
        let folded = normalize_sql(&deep);
        assert_eq!(folded.len(), "SELECT 1".len() + 140_000 * " + 1".len());
        assert!(folded.starts_with("SELECT 1 + 1 + 1"));
        let unclosed = format!("SELECT '{}", "(\n".repeat(100_000));
        assert_eq!(normalize_sql(&unclosed).len(), unclosed.len() + 100_000);
    }

    #[test]
    fn yaml_values_are_quoted_like_insta() {
        assert_eq!(yaml_string("sqlgate test"), "sqlgate test");
        assert_eq!(yaml_string("suite demo"), "suite demo");
        assert_eq!(yaml_string("suite a:b"), "\"suite a:b\"");
        assert_eq!(yaml_string("true"), "\"true\"");
        assert_eq!(yaml_string("12"), "\"12\"");
        assert_eq!(yaml_string("-x"), "\"-x\"");
        assert_eq!(yaml_string("a\"b"), "\"a\\\"b\"");
    }

    #[test]
    fn fields_split_at_unescaped_separators() {
        assert_eq!(split_field("a\\| | b"), ("a\\|", Some("b")));
        assert_eq!(split_field("a\\\\ | b"), ("a\\\\", Some("b")));
        assert_eq!(split_field("a || b"), ("a || b", None));
        assert_eq!(unescape("x\\sy\\|z\\\\"), Ok("x y|z\\".to_string()));
        assert!(unescape("bad\\q").is_err());
        assert!(unescape("bad\\").is_err());
    }

    #[test]
    fn no_answer_and_abstention_read_apart_and_back() {
        let entry = |name: &str, verdict: &str, kind: Option<&str>| SnapshotEntry {
            name: format!("s::db::{name}"),
            passed: false,
            verdict: parse_verdict(verdict),
            metrics: BTreeMap::from([("ex".to_string(), "0".to_string())]),
            sql: None,
            system_error: kind.map(str::to_string),
        };
        let entries = vec![
            entry("abstained", "abstained", None),
            entry("garbage", "system_error", Some("garbage")),
            entry("not_recorded", "system_error", Some("not_recorded")),
            entry("timeout", "system_error", Some("timeout")),
            // A kind this version does not know is written and read the same way.
            entry("unavailable", "system_error", Some("unavailable")),
        ];
        let text = render("s", &entries);
        for line in [
            "s::db::abstained | fail | abstained | ex=0 | abstain\n",
            "s::db::garbage | fail | system_error | ex=0 | <garbage>\n",
            "s::db::not_recorded | fail | system_error | ex=0 | <not_recorded>\n",
            "s::db::timeout | fail | system_error | ex=0 | <timeout>\n",
            "s::db::unavailable | fail | system_error | ex=0 | <unavailable>\n",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
        assert_eq!(parse(Path::new("s.snap"), &text).unwrap(), entries);
    }

    #[test]
    fn lines_without_the_kind_of_error_are_still_read() {
        // Written before the kind was: `<no answer>` for every system error.
        let old = "---\nsource: sqlgate test\nexpression: suite s\n---\n\
                   s::db::q1 | fail | system_error | ex=0 | <no answer>\n\
                   s::db::q2 | fail | pred_error | ex=0 | <timeout>\n";
        let entries = parse(Path::new("s.snap"), old).unwrap();
        assert_eq!(entries[0].sql, None);
        assert_eq!(entries[0].system_error, None);
        // Only a system error's answer field is a kind; elsewhere it is SQL, however odd.
        assert_eq!(entries[1].sql.as_deref(), Some("<timeout>"));
        assert_eq!(entries[1].system_error, None);
        assert_eq!(render("s", &entries), old);
        // The same case now with its kind: a changed answer, shown in the diff.
        let mut now = entries.clone();
        now[0].system_error = Some("not_recorded".to_string());
        assert_eq!(compare(&entries, &now).sql_changed, ["s::db::q1"]);
    }

    #[test]
    fn lines_without_the_failing_database_are_still_read() {
        // Written before `every_database`: no `failed_on` word.
        let old = "---\nsource: sqlgate test\nexpression: suite s\n---\n\
                   s::db::q1 | fail | incorrect | ex=0 | region=III | SELECT 1\n";
        let entries = parse(Path::new("s.snap"), old).unwrap();
        assert_eq!(entries[0].metrics.get("failed_on"), None);
        let now_line = "---\nsource: sqlgate test\nexpression: suite s\n---\n\
                        s::db::q1 | fail | incorrect | ex=0 | failed_on=db_2.sqlite | region=III | SELECT 1\n";
        let now = parse(Path::new("s.snap"), now_line).unwrap();
        assert_eq!(
            now[0].metrics.get("failed_on").map(String::as_str),
            Some("db_2.sqlite")
        );
        assert_eq!(render("s", &now), now_line);
        // Failing on a named database is a change to review, not a regression.
        let diff = compare(&entries, &now);
        assert_eq!(diff.other_changed, ["s::db::q1"]);
        assert!(diff.regressions.is_empty());
    }

    #[test]
    fn metric_values_with_white_space_other_than_spaces_read_back() {
        let entry = SnapshotEntry {
            name: "s::db::q1".to_string(),
            passed: true,
            verdict: Verdict::Correct,
            metrics: BTreeMap::from([
                ("ex".to_string(), "1".to_string()),
                ("note".to_string(), "a\u{a0}b\tc d".to_string()),
            ]),
            sql: Some("SELECT 1".to_string()),
            system_error: None,
        };
        let text = render("s", std::slice::from_ref(&entry));
        assert_eq!(parse(Path::new("s.snap"), &text).unwrap(), [entry]);
    }

    /// Snapshot lines are checked as run records are (issue 38): each of these was read and
    /// believed, and `pass_rate=0` on a line that passed made any later pass rate look like no
    /// drop, so a clearly worse system passed `regression_p`.
    #[test]
    fn a_line_out_of_range_or_contradicting_itself_is_refused() {
        let snap = |line: &str| {
            let text = format!("---\nsource: sqlgate test\nexpression: suite s\n---\n{line}\n");
            parse(Path::new("s.snap"), &text).map_err(|error| error.to_string())
        };
        let sampled = "s::db::q | pass | correct | ex=1 | pass_rate=0.8 | samples=5 | SELECT 1";
        assert!(snap(sampled).is_ok());
        for (line, problem) in [
            (
                "s::db::q | pass | correct | ex=1 | pass_rate=0 | samples=5 | SELECT 1",
                "no sample was correct",
            ),
            (
                "s::db::q | fail | incorrect | ex=0 | pass_rate=1 | samples=5 | SELECT 1",
                "every sample was correct",
            ),
            (
                "s::db::q | pass | correct | ex=1 | pass_rate=NaN | samples=5 | SELECT 1",
                "pass_rate=NaN: must be a number from 0 to 1",
            ),
            (
                "s::db::q | pass | correct | ex=1 | pass_rate=1.5 | samples=5 | SELECT 1",
                "pass_rate=1.5: must be",
            ),
            (
                "s::db::q | pass | correct | ex=1 | pass_rate=abc | samples=5 | SELECT 1",
                "pass_rate=abc: must be",
            ),
            (
                "s::db::q | pass | correct | ex=1 | pass_rate=0.5 | samples=5 | SELECT 1",
                "no count of correct samples",
            ),
            (
                "s::db::q | pass | correct | ex=1 | pass_rate=0.8 | samples=-1 | SELECT 1",
                "samples=-1: must be a whole number",
            ),
            (
                "s::db::q | pass | correct | ex=1 | pass_rate=0.8 | SELECT 1",
                "come together",
            ),
            (
                "s::db::q | pass | correct | ex=7 | SELECT 1",
                "ex=7: must be 0 or 1",
            ),
            (
                "s::db::q | fail | banana | ex=0 | SELECT 1",
                "unknown verdict `banana`",
            ),
            (
                "s::db::q | fail | correct | ex=1 | SELECT 1",
                "status `fail` contradicts verdict `correct`",
            ),
            (
                "s::db::q | pass | incorrect | ex=0 | SELECT 1",
                "status `pass` contradicts verdict `incorrect`",
            ),
            (
                "s::db::q | pass | correct | ex=0 | SELECT 1",
                "verdict `correct` contradicts ex=0",
            ),
            ("s::db::q | pass | correct | SELECT 1", "no `ex=`"),
            (
                "s::db::q | pass | correct | ex=1 | soft_f1=2 | SELECT 1",
                "soft_f1=2: must be",
            ),
            (
                "s::db::c\\n::warning::x | pass | correct | ex=1 | SELECT 1",
                "control character U+000A",
            ),
            (
                "s::db::q\0 | pass | correct | ex=1 | SELECT 1",
                "control character U+0000",
            ),
        ] {
            let error = snap(line).expect_err(line);
            assert!(
                error.contains("s.snap: line 5: ") && error.contains(problem),
                "{line}: {error}"
            );
        }
    }

    mod properties {
        use std::path::Path;

        use proptest::collection::btree_map;
        use proptest::prelude::*;

        use super::super::*;

        /// What a case answered, as a snapshot line can say it.
        fn answer() -> impl Strategy<Value = (String, Option<String>, Option<String>)> {
            let verdict = prop::sample::select(vec![
                "correct",
                "incorrect",
                "pred_error",
                "gold_error",
                "abstained",
            ])
            .prop_map(str::to_string);
            prop_oneof![
                // Real SQL starts with a keyword, so the field before a ` | ` inside it is
                // never mistaken for a metric.
                (verdict.clone(), "[a-zA-Z0-9 '=|*,()\\\\\n\t;]{0,40}").prop_map(|(v, tail)| (
                    v,
                    Some(normalize_sql(&format!("SELECT {tail}"))),
                    None
                )),
                verdict.prop_map(|v| (v, None, None)),
                "[a-z_]{1,12}".prop_map(|kind| ("system_error".to_string(), None, Some(kind))),
            ]
        }

        /// A line as a run writes it: a printable name, a status and `ex` that agree with the
        /// verdict, and metrics of names no check reads (they start with `m`).
        fn entry() -> impl Strategy<Value = SnapshotEntry> {
            let metrics = btree_map("m[a-z0-9@ =\\\\|]{0,5}", "[a-z0-9. =\\\\|]{0,6}", 0..4);
            let name = any::<String>().prop_map(|name| {
                name.chars()
                    .filter(|c| sqlgate_eval::error::unprintable_char(&c.to_string()).is_none())
                    .collect::<String>()
            });
            (name, any::<bool>(), metrics, answer()).prop_map(
                |(name, passed, mut metrics, (verdict, sql, system_error))| {
                    let correct = verdict == "correct";
                    metrics.insert("ex".to_string(), u8::from(correct).to_string());
                    SnapshotEntry {
                        name,
                        passed: correct || passed && verdict == "abstained",
                        verdict: super::tests::parse_verdict(&verdict),
                        metrics,
                        sql,
                        system_error,
                    }
                },
            )
        }

        proptest! {
            #[test]
            fn an_escaped_field_unescapes_to_itself(text in any::<String>(), word in any::<bool>()) {
                prop_assert_eq!(unescape(&escape(&text, word)), Ok(text));
            }

            #[test]
            fn an_escaped_word_is_one_field_and_one_metric_part(text in any::<String>()) {
                let escaped = escape(&text, true);
                prop_assert_eq!(split_field(&escaped), (escaped.as_str(), None));
                prop_assert!(!escaped.contains([' ', '\n', '\r']));
                let pair = format!("k={escaped}");
                prop_assert_eq!(metric(&pair), Some(("k", escaped.as_str())));
            }

            #[test]
            fn a_rendered_entry_parses_back_to_itself(entry in entry()) {
                let text = render("suite", std::slice::from_ref(&entry));
                let parsed = parse(Path::new("suite.snap"), &text);
                prop_assert_eq!(parsed.map_err(|e| e.to_string()), Ok(vec![entry]));
            }
        }
    }
}
