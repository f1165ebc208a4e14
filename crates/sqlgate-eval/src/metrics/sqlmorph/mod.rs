//! SQLMorph's fine-grained execution metrics: execution precision (EXP), execution recall
//! (EXR) and their F1 (spec `sqlmorph-metrics.md` §1–8; paper §VI-B).
//!
//! [`fine_grained`] compares a gold and a predicted result under one [`Regime`]:
//!
//! 1. **EX shortcut** (§2): equal row multisets (compat: row sets) give EX = 1 and 1/1/1.
//! 2. **Column matching** (§3): EC pairs equal names, SC pairs embedded column descriptors
//!    ([`Embedder`]; the offline [`NgramEmbedder`] by default) with a Hungarian assignment,
//!    NC compares rows through their values only.
//! 3. **Cell matching** (§4): EC counts equal projected rows (hash multiset, linear); PC adds
//!    greedy partial credit for the leftover rows.
//! 4. **Totals** (§5): `EXP = matched / PCells`, `EXR = matched / GCells`, PE or IE extras,
//!    with the spec's edge cases for empty results.
//!
//! **Complexity.** Hashing and projecting is `O(n·k)` for n rows of k matched columns. The
//! PC greedy (module `greedy`) is `O(W + n log n)` time and `O(n·k)` memory, where `W` is
//! about `T = Σ_(column, value) gold_count · pred_count`, the number of equal cells over all
//! row pairs (pairs sharing nothing are never visited). It gives exactly the result of the
//! spec's cubic greedy. When that work would exceed [`Options::pc_max_pairs`] (e.g. a column
//! with one value over 100,000 rows makes `T` = 10^10), the same greedy runs level by level
//! (module `levels`: pairs of overlap k−1 first, found by hashing row projections, whatever
//! the values). Only when that too exceeds the cap (many columns) is partial credit dropped:
//! PC falls back to the exact-cell count (a lower bound) and the scores carry
//! [`Note::PartialMatchTruncated`], shown per case and counted in the summary. SC matching is
//! cubic in the number of columns only.
//!
//! `sqlmorph_compat` reproduces the reference implementation's deviations (§6): set-based EX,
//! NC as per-row string sets with Jaccard pairing, first-occurrence row order in PC, float
//! partial credit, SC without type classes and with its projection misalignment, EC
//! duplicate names mapped to their last occurrence.

mod case;
mod cells;
mod columns;
mod embed;
mod greedy;
mod levels;
mod nc;
mod regime;
mod values;

#[cfg(test)]
mod tests;

use std::hash::{Hash, Hasher};
use std::sync::LazyLock;

use rustc_hash::{FxHashMap, FxHashSet, FxHasher};

pub use case::case_scores;
pub use embed::{cosine, Embedder, NgramEmbedder};
pub use regime::{CellMatching, ColumnMatching, Extras, ParseRegimeError, Regime};

use crate::exec::value::HashKey as Key;
use crate::exec::{ExecError, Execution, ResultSet, Value};

/// The three metrics (and EX, always reported alongside), each in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Scores {
    /// True only when the EX shortcut applied (§2).
    pub ex: bool,
    /// Execution precision: matched cells over predicted cells.
    pub exp: f64,
    /// Execution recall: matched cells over gold cells.
    pub exr: f64,
    /// Harmonic mean of EXP and EXR.
    pub f1: f64,
    /// Why the scores are what they are, when that is not a plain comparison.
    pub note: Option<Note>,
}

impl Scores {
    /// The scores of a case with no answer to compare (abstained, failed, infeasible).
    pub const NONE: Scores = Scores {
        ex: false,
        exp: 0.0,
        exr: 0.0,
        f1: 0.0,
        note: None,
    };

    fn exact_match() -> Self {
        Scores {
            ex: true,
            exp: 1.0,
            exr: 1.0,
            f1: 1.0,
            note: None,
        }
    }

    /// All zero: an execution error, an empty `c∩`, or the reference's NC failure.
    fn zero(note: Option<Note>) -> Self {
        Scores {
            ex: false,
            exp: 0.0,
            exr: 0.0,
            f1: 0.0,
            note,
        }
    }

    fn from_precision_recall(exp: f64, exr: f64) -> Self {
        let f1 = if exp + exr > 0.0 {
            2.0 * exp * exr / (exp + exr)
        } else {
            0.0
        };
        Scores {
            ex: false,
            exp,
            exr,
            f1,
            note: None,
        }
    }
}

/// A condition that decided or qualified the scores; never hides a different number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Note {
    /// The gold query failed (error, timeout...): all metrics 0.
    GoldError,
    /// The predicted query failed: all metrics 0.
    PredError,
    /// A gold TEXT value was not valid UTF-8 (strict decoding, §1): all metrics 0.
    GoldDecodeError,
    /// A predicted TEXT value was not valid UTF-8: all metrics 0.
    PredDecodeError,
    /// Compat NC: two identical gold rows claimed the same prediction row and the reference
    /// fails; scored as an error (§4.3).
    SqlmorphNcDuplicateClaim,
    /// PC exceeded `pc_max_pairs`; partial credit was dropped (scores are the EC-cell ones).
    PartialMatchTruncated,
}

impl Note {
    /// The diagnostic code, e.g. `partial_match_truncated`.
    pub fn code(self) -> &'static str {
        match self {
            Note::GoldError => "gold_error",
            Note::PredError => "pred_error",
            Note::GoldDecodeError => "gold_decode_error",
            Note::PredDecodeError => "pred_decode_error",
            Note::SqlmorphNcDuplicateClaim => "sqlmorph_nc_duplicate_claim",
            Note::PartialMatchTruncated => "partial_match_truncated",
        }
    }
}

/// Settings shared by every regime.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// Reproduce the reference implementation instead of the paper definitions (§6).
    pub sqlmorph_compat: bool,
    /// SC keeps assigned pairs with similarity strictly above this (paper: 0.7).
    pub sc_threshold: f64,
    /// Embeds SC column descriptors.
    pub embedder: &'a dyn Embedder,
    /// Work cap of PC partial matching, in candidate cells visited (spec `--pc-max-pairs`).
    pub pc_max_pairs: u64,
}

static DEFAULT_EMBEDDER: LazyLock<NgramEmbedder> = LazyLock::new(NgramEmbedder::default);

impl Default for Options<'static> {
    /// Paper definitions, threshold 0.7, the offline n-gram embedder, a 5·10^7 cap.
    fn default() -> Self {
        Options {
            sqlmorph_compat: false,
            sc_threshold: 0.7,
            embedder: &*DEFAULT_EMBEDDER,
            pc_max_pairs: 50_000_000,
        }
    }
}

/// Why the metrics could not be computed at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricError {
    /// IE asked for under NC, where the paper defines no such regime.
    #[error("regime {0} is not defined: the paper has no IE under NC (use NC-EC or NC-PC, or the compat mode)")]
    IgnoreExtrasUnderNc(Regime),
    /// The embedding model for SC could not embed the column descriptors.
    #[error("embedding model `{model}` failed: {message}")]
    Embedding {
        /// The model asked.
        model: String,
        /// What went wrong, from the endpoint or the client.
        message: String,
    },
}

/// EXP / EXR / F1 of a prediction against the gold under `regime`.
///
/// Fails only when the regime is undefined (IE under NC outside compat) or SC embedding fails.
pub fn fine_grained(
    gold: &ResultSet,
    pred: &ResultSet,
    regime: Regime,
    opts: &Options,
) -> Result<Scores, MetricError> {
    let no_column = regime.columns == ColumnMatching::NoColumn;
    if no_column && regime.extras == Extras::Ignore && !opts.sqlmorph_compat {
        return Err(MetricError::IgnoreExtrasUnderNc(regime));
    }
    // Strict decoding (§1): undecodable text is an execution error of that query.
    if gold.lossy_text {
        return Ok(Scores::zero(Some(Note::GoldDecodeError)));
    }
    if pred.lossy_text {
        return Ok(Scores::zero(Some(Note::PredDecodeError)));
    }
    if ex_shortcut(gold, pred, opts.sqlmorph_compat) {
        return Ok(Scores::exact_match());
    }
    let partial = regime.cells == CellMatching::Partial;
    if no_column {
        return Ok(no_column_scores(gold, pred, regime, partial, opts));
    }
    let pairs = match regime.columns {
        ColumnMatching::Semantic => columns::semantic_pairs(gold, pred, opts)?,
        _ => columns::exact_pairs(&gold.columns, &pred.columns, opts.sqlmorph_compat),
    };
    if pairs.is_empty() {
        return Ok(Scores::zero(None));
    }
    let tally = cells::projected_matches(
        gold,
        pred,
        &pairs,
        partial,
        opts.sqlmorph_compat,
        opts.pc_max_pairs,
    );
    let pred_width = match regime.extras {
        Extras::Penalize => pred.columns.len(),
        Extras::Ignore => pairs.len(),
    };
    let gold_cells = (gold.rows.len() * gold.columns.len()) as f64;
    let pred_cells = (pred.rows.len() * pred_width) as f64;
    Ok(totals(tally, gold_cells, pred_cells))
}

/// [`fine_grained`] on executions: a failed execution on either side scores 0 (§1). The
/// caller's verdict tells timeouts from errors.
pub fn fine_grained_executions(
    gold: &Execution,
    pred: &Execution,
    regime: Regime,
    opts: &Options,
) -> Result<Scores, MetricError> {
    match (&gold.result, &pred.result) {
        (Err(ExecError { .. }), _) => Ok(Scores::zero(Some(Note::GoldError))),
        (_, Err(_)) => Ok(Scores::zero(Some(Note::PredError))),
        (Ok(g), Ok(p)) => fine_grained(g, p, regime, opts),
    }
}

/// Matched cells of a regime, before dividing by the totals.
#[derive(Debug, Clone, Copy)]
struct Tally {
    matched: f64,
    truncated: bool,
}

fn no_column_scores(
    gold: &ResultSet,
    pred: &ResultSet,
    regime: Regime,
    partial: bool,
    opts: &Options,
) -> Scores {
    if !opts.sqlmorph_compat {
        let tally = nc::paper_matches(gold, pred, partial, opts.pc_max_pairs);
        let gold_cells = (gold.rows.len() * gold.columns.len()) as f64;
        let pred_cells = (pred.rows.len() * pred.columns.len()) as f64;
        return totals(tally, gold_cells, pred_cells);
    }
    match nc::compat_matches(gold, pred, partial, opts.pc_max_pairs) {
        nc::CompatOutcome::DuplicateClaim => Scores::zero(Some(Note::SqlmorphNcDuplicateClaim)),
        nc::CompatOutcome::Scored {
            tally,
            gold_cells,
            pred_cells,
            overlaps,
        } => {
            let pred_cells = match regime.extras {
                Extras::Penalize => pred_cells,
                Extras::Ignore => overlaps,
            };
            totals(tally, gold_cells, pred_cells)
        }
    }
}

/// §5: the metrics and the empty-result edge cases.
fn totals(tally: Tally, gold_cells: f64, pred_cells: f64) -> Scores {
    let mut scores = match (gold_cells == 0.0, pred_cells == 0.0) {
        (true, true) => Scores::from_precision_recall(1.0, 1.0),
        (true, false) => Scores::from_precision_recall(0.0, 1.0),
        (false, true) => Scores::from_precision_recall(1.0, 0.0),
        (false, false) => {
            Scores::from_precision_recall(tally.matched / pred_cells, tally.matched / gold_cells)
        }
    };
    if tally.truncated {
        scores.note = Some(Note::PartialMatchTruncated);
    }
    scores
}

/// §2: equal row multisets over full positional tuples (compat: equal row sets).
fn ex_shortcut(gold: &ResultSet, pred: &ResultSet, compat: bool) -> bool {
    if !compat && gold.rows.len() != pred.rows.len() {
        return false;
    }
    // Cheap rejection first: equal results have equal (sorted) row hashes.
    let hashes = |result: &ResultSet| {
        let mut hashes: Vec<u64> = result.rows.iter().map(|row| row_hash(row)).collect();
        hashes.sort_unstable();
        if compat {
            hashes.dedup();
        }
        hashes
    };
    if hashes(gold) != hashes(pred) {
        return false;
    }
    if compat {
        return row_set(gold) == row_set(pred);
    }
    let mut balance: FxHashMap<Vec<Key>, i64> = FxHashMap::default();
    for row in &gold.rows {
        *balance.entry(row_key(row)).or_default() += 1;
    }
    for row in &pred.rows {
        *balance.entry(row_key(row)).or_default() -= 1;
    }
    balance.values().all(|&count| count == 0)
}

fn row_hash(row: &[Value]) -> u64 {
    let mut hasher = FxHasher::default();
    for value in row {
        (value).hash_key().hash(&mut hasher);
    }
    hasher.finish()
}

fn row_set(result: &ResultSet) -> FxHashSet<Vec<Key<'_>>> {
    result.rows.iter().map(|row| row_key(row)).collect()
}

fn row_key(row: &[Value]) -> Vec<Key<'_>> {
    row.iter().map(Value::hash_key).collect()
}

/// A row's cell, NULL when a malformed row is too short.
fn cell(row: &[Value], column: usize) -> &Value {
    const NULL: &Value = &Value::Null;
    row.get(column).unwrap_or(NULL)
}
