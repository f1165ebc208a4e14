//! Cell matching after EC or SC column matching (§4.1, §4.2).

use rustc_hash::FxHashMap;
use std::cmp::Ordering;

use super::greedy::TokenRows;
use super::levels::partial_match;
use super::values::sqlite_cmp_rows;
use super::{cell, Tally};
use crate::exec::value::HashKey as Key;
use crate::exec::ResultSet;

/// Matched cells of two results projected onto `pairs` (`c∩`). Cell totals are left to the
/// caller. `partial` adds the greedy phase 2; `compat` lays out leftover rows in
/// first-occurrence order and sums partial credit as floats, as the reference does.
pub(super) fn projected_matches(
    gold: &ResultSet,
    pred: &ResultSet,
    pairs: &[(usize, usize)],
    partial: bool,
    compat: bool,
    max_work: u64,
) -> Tally {
    let width = pairs.len();
    let mut interner = Interner::default();
    let gold_tokens = intern_projection(gold, pairs, |p| p.0, &mut interner);
    let pred_tokens = intern_projection(pred, pairs, |p| p.1, &mut interner);
    let gold_rows: Vec<&[u32]> = chunks(&gold_tokens, width, gold.rows.len());
    let pred_rows: Vec<&[u32]> = chunks(&pred_tokens, width, pred.rows.len());

    let groups = group_rows(&gold_rows, &pred_rows);
    let matched_rows: usize = groups.iter().map(|g| g.gold.min(g.pred)).sum();
    let exact_cells = (matched_rows * width) as f64;
    if !partial {
        return Tally {
            matched: exact_cells,
            truncated: false,
        };
    }

    // Phase 2 on the leftover copies of each distinct projected row.
    let gold_order = leftovers(&groups, Side::Gold, compat, |a, b| {
        sqlite_cmp_rows(
            pairs.iter().map(|p| cell(&gold.rows[a], p.0)),
            pairs.iter().map(|p| cell(&gold.rows[b], p.0)),
        )
    });
    let pred_order = leftovers(&groups, Side::Pred, compat, |a, b| {
        sqlite_cmp_rows(
            pairs.iter().map(|p| cell(&pred.rows[a], p.1)),
            pairs.iter().map(|p| cell(&pred.rows[b], p.1)),
        )
    });
    let to_token_rows = |order: &[usize], rows: &[&[u32]]| {
        let mut token_rows = TokenRows::default();
        for &row in order {
            token_rows.push_row(rows[row].iter().map(|&t| (t, 1)));
        }
        token_rows
    };
    let matched = partial_match(
        &to_token_rows(&gold_order, &gold_rows),
        &to_token_rows(&pred_order, &pred_rows),
        width,
        max_work,
    );
    let Ok(matched) = matched else {
        return Tally {
            matched: exact_cells,
            truncated: true,
        };
    };
    let partial_cells = if compat {
        // The reference adds `sim · |c∩|` with `sim = equal / |c∩|` as floats.
        let w = width as f64;
        matched
            .iter()
            .fold(0.0, |sum, p| sum + f64::from(p.overlap) / w * w)
    } else {
        matched.iter().map(|p| f64::from(p.overlap)).sum()
    };
    Tally {
        matched: exact_cells + partial_cells,
        truncated: false,
    }
}

/// Token ids for (position in `c∩`, value), shared by both sides.
#[derive(Default)]
struct Interner<'a> {
    /// One map per position: small keys, and the position is implied.
    positions: Vec<FxHashMap<Key<'a>, u32>>,
    next: u32,
}

/// Every projected cell as a token, row after row.
fn intern_projection<'a>(
    result: &'a ResultSet,
    pairs: &[(usize, usize)],
    side: fn(&(usize, usize)) -> usize,
    interner: &mut Interner<'a>,
) -> Vec<u32> {
    interner
        .positions
        .resize_with(pairs.len(), FxHashMap::default);
    let mut tokens = Vec::with_capacity(result.rows.len() * pairs.len());
    for row in &result.rows {
        for (pair, map) in pairs.iter().zip(&mut interner.positions) {
            let next = &mut interner.next;
            let token = *map
                .entry(cell(row, side(pair)).hash_key())
                .or_insert_with(|| {
                    *next += 1;
                    *next - 1
                });
            tokens.push(token);
        }
    }
    tokens
}

fn chunks(tokens: &[u32], width: usize, rows: usize) -> Vec<&[u32]> {
    (0..rows)
        .map(|r| &tokens[r * width..(r + 1) * width])
        .collect()
}

/// One distinct projected row: its multiplicity and first position on each side.
#[derive(Debug, Clone, Copy, Default)]
struct Group {
    gold: usize,
    pred: usize,
    gold_first: usize,
    pred_first: usize,
}

#[derive(Debug, Clone, Copy)]
enum Side {
    Gold,
    Pred,
}

fn group_rows(gold: &[&[u32]], pred: &[&[u32]]) -> Vec<Group> {
    let mut index: FxHashMap<&[u32], usize> = FxHashMap::default();
    let mut groups: Vec<Group> = Vec::new();
    for (side, rows) in [(Side::Gold, gold), (Side::Pred, pred)] {
        for (position, row) in rows.iter().enumerate() {
            let slot = *index.entry(row).or_insert_with(|| {
                groups.push(Group::default());
                groups.len() - 1
            });
            let group = &mut groups[slot];
            let (count, first) = match side {
                Side::Gold => (&mut group.gold, &mut group.gold_first),
                Side::Pred => (&mut group.pred, &mut group.pred_first),
            };
            if *count == 0 {
                *first = position;
            }
            *count += 1;
        }
    }
    groups
}

/// The unmatched copies on one side, as row indices (a representative repeated per copy):
/// sorted by value (paper) or by first occurrence (compat).
fn leftovers(
    groups: &[Group],
    side: Side,
    compat: bool,
    value_order: impl Fn(usize, usize) -> Ordering,
) -> Vec<usize> {
    let mut distinct: Vec<(usize, usize)> = groups
        .iter()
        .filter_map(|g| {
            let (mine, theirs, first) = match side {
                Side::Gold => (g.gold, g.pred, g.gold_first),
                Side::Pred => (g.pred, g.gold, g.pred_first),
            };
            (mine > theirs).then(|| (first, mine - theirs))
        })
        .collect();
    if compat {
        distinct.sort_unstable_by_key(|&(first, _)| first);
    } else {
        distinct.sort_by(|a, b| value_order(a.0, b.0));
    }
    distinct
        .into_iter()
        .flat_map(|(row, copies)| std::iter::repeat_n(row, copies))
        .collect()
}
