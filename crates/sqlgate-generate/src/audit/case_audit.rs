//! One case's audit: each gold alternative run on every database of its folder, then checked
//! for every kind of finding that is about one case.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sqlgate_eval::exec::value::py_str;
use sqlgate_eval::exec::{Engine, ExecErrorKind, Feature, QueryRunner, ResultSet, Value};
use sqlgate_eval::loaders::Case;
use sqlgate_eval::metrics::ex::Verdict;

use super::runs::{reversed_scan, Scorer};
use super::unordered::Unordered;
use super::{cartesian, literals, volatile, weak, Finding, Kind, Settings};
use sqlgate_eval::metrics::ex::ties::OrderProbe;

/// A gold alternative's result on one database.
struct Ran<'a> {
    file: &'a Path,
    rows: Arc<ResultSet>,
}

/// The findings about `case` on `files`, in the order found.
pub(super) fn audit_case(
    settings: &Settings,
    engine: &Engine,
    case: &Case,
    files: &[PathBuf],
) -> Vec<Finding> {
    let scorer = Scorer {
        settings,
        engine,
        case,
    };
    let mut findings = Vec::new();
    let mut add = |kind: Kind, alternative: usize, detail: String| {
        let prefix = if case.gold.len() > 1 {
            format!("alternative {}: ", alternative + 1)
        } else {
            String::new()
        };
        findings.push(Finding {
            id: case.id.clone(),
            db: case.db.clone(),
            kind,
            detail: format!("{prefix}{detail}"),
        });
    };
    let mut runs_everywhere = !files.is_empty();
    for (alternative, gold) in case.gold.iter().enumerate() {
        let gold = &settings.runnable(gold);
        let mut ran = Vec::new();
        let mut failed = Vec::new();
        for file in files {
            match engine.gold(file, gold).result {
                Ok(rows) => ran.push(Ran { file, rows }),
                Err(error) => failed.push((file, error)),
            }
        }
        runs_everywhere &= failed.is_empty();
        for kind in [Kind::Timeout, Kind::Error] {
            let first = failed
                .iter()
                .find(|(_, e)| (e.kind == ExecErrorKind::Timeout) == (kind == Kind::Timeout));
            if let Some((file, error)) = first {
                add(
                    kind,
                    alternative,
                    format!("on {}: {}", name(file), error.message),
                );
            }
        }
        if ran.is_empty() {
            continue;
        }
        if ran.iter().all(|r| r.rows.rows.is_empty()) {
            let detail = format!("no row on any of the {} database(s) it runs on", ran.len());
            add(Kind::Empty, alternative, detail);
        }
        if let Some(detail) = order_ties(&scorer, gold, &ran) {
            add(Kind::OrderTies, alternative, detail);
        }
        if let Some(detail) = order_unspecified(&scorer, gold, &ran) {
            add(Kind::OrderUnspecified, alternative, detail);
        }
        if let Some(detail) = nondeterminism(&scorer, gold, &ran) {
            add(Kind::Nondeterministic, alternative, detail);
        }
        if let Some(detail) = cartesian::first_cartesian(gold) {
            add(Kind::Cartesian, alternative, detail);
        }
        if let Some(detail) = literal_absent(&scorer, gold, &ran, files) {
            add(Kind::LiteralAbsent, alternative, detail);
        }
        if alternative > 0 {
            if let Some(detail) = disagreement(&scorer, gold, &ran) {
                add(Kind::AlternativesDisagree, alternative, detail);
            }
        }
    }
    if runs_everywhere {
        if let Some(detail) = weak::passing_mutants(&scorer, files) {
            findings.push(Finding {
                id: case.id.clone(),
                db: case.db.clone(),
                kind: Kind::Weak,
                detail,
            });
        }
    }
    findings
}

/// A LIMIT through ties, or tied rows the mode compares in order, on the first database
/// where either shows.
fn order_ties(scorer: &Scorer, gold: &str, ran: &[Ran]) -> Option<String> {
    let probe = OrderProbe::of(gold)?;
    ran.iter().find_map(|r| {
        let unlimited = scorer.engine.gold(r.file, &probe.sql).result.ok()?;
        let cut = probe
            .has_cut()
            .then(|| probe.cut_through_ties(&unlimited))
            .flatten();
        let found = cut.or_else(|| {
            scorer
                .order_matters(gold, r.file, &r.rows)
                .then(|| probe.partial_order(&unlimited))
                .flatten()
        });
        found.map(|detail| format!("on {}: {detail}", name(r.file)))
    })
}

/// Rows the mode compares in order that no outer ORDER BY orders, on the first database where
/// the gold returns more than one (a single row has no order).
fn order_unspecified(scorer: &Scorer, gold: &str, ran: &[Ran]) -> Option<String> {
    let unordered = Unordered::of(gold)?;
    let r = ran
        .iter()
        .find(|r| r.rows.rows.len() > 1 && scorer.order_matters(gold, r.file, &r.rows))?;
    Some(format!(
        "the mode compares rows in order, but {}: on {} its {} rows come in the engine's order",
        unordered.describe(),
        name(r.file),
        r.rows.rows.len()
    ))
}

/// Strings the gold compares columns with that the original database (the case's first) holds
/// only in another case: one lookup per column and string, on the original only.
fn literal_absent(scorer: &Scorer, gold: &str, ran: &[Ran], files: &[PathBuf]) -> Option<String> {
    let original = files.first()?;
    if !ran.iter().any(|r| r.file == original.as_path()) {
        return None;
    }
    let absent: Vec<String> = literals::comparisons(gold)
        .iter()
        .filter_map(|compared| {
            // The first table where the lookup runs has the column.
            let (table, rows) = compared.tables.iter().find_map(|table| {
                let rows = scorer.engine.gold(original, &compared.lookup(table)).result;
                Some((table, rows.ok()?))
            })?;
            let (value, exact) = match rows.rows.first()?.as_slice() {
                [value, exact] => (value, exact),
                _ => return None,
            };
            (*exact == Value::Int(0)).then(|| {
                format!(
                    "no value of {} equals '{}', but '{}' does ignoring case",
                    compared.shown(table),
                    compared.literal,
                    py_str(value)
                )
            })
        })
        .collect();
    (!absent.is_empty()).then(|| format!("on {}: {}", name(original), absent.join("; ")))
}

/// A call to chance or the clock, or rows the mode scores as different from the gold's own
/// when run again or with unordered scans reversed.
fn nondeterminism(scorer: &Scorer, gold: &str, ran: &[Ran]) -> Option<String> {
    if let Some(call) = volatile::first_volatile_call(gold) {
        return Some(format!(
            "calls {call}, whose value changes between executions"
        ));
    }
    let engine = scorer.engine;
    ran.iter().find_map(|r| {
        let again = scorer.verdict_under(gold, r.file, |db, sql| engine.execute(db, sql));
        if again == Verdict::Incorrect {
            return Some(format!(
                "on {}: a second execution returns rows the mode scores as different",
                name(r.file)
            ));
        }
        // An engine that cannot reverse its scans is not probed for it.
        if !engine.driver().supports(Feature::ReverseUnordered) {
            return None;
        }
        let reversed = scorer.verdict_under(gold, r.file, |db, sql| reversed_scan(engine, db, sql));
        (reversed == Verdict::Incorrect).then(|| {
            format!(
                "on {}: with PRAGMA reverse_unordered_selects = ON the mode scores the rows as \
                 different (the result depends on the order SQLite scans in)",
                name(r.file)
            )
        })
    })
}

/// Where the mode scores this alternative incorrect against the first one, and what each
/// returns there.
fn disagreement(scorer: &Scorer, gold: &str, ran: &[Ran]) -> Option<String> {
    let first = &scorer.case.gold[..1];
    ran.iter()
        .find(|r| scorer.verdict(first, r.file, gold) == Verdict::Incorrect)
        .map(|r| {
            let first = scorer.settings.runnable(&first[0]);
            let theirs = match &scorer.engine.gold(r.file, &first).result {
                Ok(rows) => shape(rows),
                Err(error) => error.message.clone(),
            };
            format!(
                "scored as a prediction against alternative 1, it is incorrect on {}: it \
                 returns {}, alternative 1 {theirs}",
                name(r.file),
                shape(&r.rows)
            )
        })
}

/// `3 rows of (name, aid)`.
fn shape(rows: &ResultSet) -> String {
    let count = match rows.rows.len() {
        1 => "1 row".to_string(),
        n => format!("{n} rows"),
    };
    format!("{count} of ({})", rows.columns.join(", "))
}

/// A database file's name, for findings.
fn name(file: &Path) -> String {
    file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
