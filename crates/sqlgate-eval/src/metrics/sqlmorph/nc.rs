//! Row matching without column matching (NC, §4.3): rows compare through their values only.

use rustc_hash::FxHashMap as HashMap;

use super::greedy::{greedy_match, Similarity, TokenRows};
use super::values::sqlite_cmp_rows;
use super::Tally;
use crate::exec::value::{py_str, HashKey as Key};
use crate::exec::ResultSet;

/// Paper NC: each row is the multiset `V(r)` of its values under Python equality. Exact phase:
/// equal multisets, paired one-to-one in sorted row order; partial phase: greedy on the
/// multiset intersection (`sim = |V(p) ∩ V(g)| / max(|V(p)|, |V(g)|)`).
pub(super) fn paper_matches(
    gold: &ResultSet,
    pred: &ResultSet,
    partial: bool,
    max_work: u64,
) -> Tally {
    let mut interner: HashMap<Key, u32> = HashMap::default();
    let gold_sets = value_multisets(gold, &mut interner);
    let pred_sets = value_multisets(pred, &mut interner);

    // Class of each row: its value multiset. In each class, the first min(gold, pred) rows of
    // each side in sorted order match.
    let mut class_ids: HashMap<&[(u32, u32)], usize> = HashMap::default();
    let class_of = [
        classes(&gold_sets, &mut class_ids),
        classes(&pred_sets, &mut class_ids),
    ];
    let mut counts = vec![[0usize; 2]; class_ids.len()];
    for (side, classes) in class_of.iter().enumerate() {
        for &class in classes {
            counts[class][side] += 1;
        }
    }
    let mut quota: Vec<[usize; 2]> = counts.iter().map(|c| [c[0].min(c[1]); 2]).collect();
    let mut remaining: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
    let mut exact_cells = 0usize;
    for (side, result) in [gold, pred].into_iter().enumerate() {
        for row in sorted_rows(result) {
            let left = &mut quota[class_of[side][row]][side];
            if *left > 0 {
                *left -= 1;
                if side == 0 {
                    exact_cells += result.rows[row].len();
                }
            } else {
                remaining[side].push(row);
            }
        }
    }
    let exact_cells = exact_cells as f64;
    if !partial {
        return Tally {
            matched: exact_cells,
            truncated: false,
        };
    }
    let token_rows = |order: &[usize], sets: &[Vec<(u32, u32)>]| {
        let mut rows = TokenRows::default();
        for &row in order {
            rows.push_row(sets[row].iter().copied());
        }
        rows
    };
    match greedy_match(
        &token_rows(&remaining[0], &gold_sets),
        &token_rows(&remaining[1], &pred_sets),
        Similarity::Overlap,
        max_work,
    ) {
        Ok(pairs) => Tally {
            matched: exact_cells + pairs.iter().map(|p| f64::from(p.overlap)).sum::<f64>(),
            truncated: false,
        },
        Err(_) => Tally {
            matched: exact_cells,
            truncated: true,
        },
    }
}

/// The class id of each row's multiset.
fn classes<'a>(
    sets: &'a [Vec<(u32, u32)>],
    ids: &mut HashMap<&'a [(u32, u32)], usize>,
) -> Vec<usize> {
    sets.iter()
        .map(|set| {
            let next = ids.len();
            *ids.entry(set.as_slice()).or_insert(next)
        })
        .collect()
}

/// Row indices in SQLite `ORDER BY` order of the full rows (stable).
fn sorted_rows(result: &ResultSet) -> Vec<usize> {
    let mut order: Vec<usize> = (0..result.rows.len()).collect();
    order.sort_by(|&a, &b| sqlite_cmp_rows(result.rows[a].iter(), result.rows[b].iter()));
    order
}

/// Each row as sorted `(value token, multiplicity)` pairs.
fn value_multisets<'a>(
    result: &'a ResultSet,
    interner: &mut HashMap<Key<'a>, u32>,
) -> Vec<Vec<(u32, u32)>> {
    result
        .rows
        .iter()
        .map(|row| {
            let mut tokens: Vec<u32> = row
                .iter()
                .map(|v| {
                    let next = interner.len() as u32;
                    *interner.entry((v).hash_key()).or_insert(next)
                })
                .collect();
            tokens.sort_unstable();
            let mut set: Vec<(u32, u32)> = Vec::new();
            for t in tokens {
                match set.last_mut() {
                    Some((last, count)) if *last == t => *count += 1,
                    _ => set.push((t, 1)),
                }
            }
            set
        })
        .collect()
}

/// What the reference's NC computes (§4.3 compat), or its duplicate-claim failure.
pub(super) enum CompatOutcome {
    Scored {
        tally: Tally,
        gold_cells: f64,
        /// PE: every predicted token.
        pred_cells: f64,
        /// IE: the tokens shared by matched pairs.
        overlaps: f64,
    },
    DuplicateClaim,
}

/// Compat NC: rows are sets of `str(value)`; the exact phase lets each gold row (in order)
/// claim the first prediction row with an equal set, used or not; the partial phase is
/// greedy Jaccard in original order. Cell totals are the set sizes.
pub(super) fn compat_matches(
    gold: &ResultSet,
    pred: &ResultSet,
    partial: bool,
    max_work: u64,
) -> CompatOutcome {
    let mut interner: HashMap<String, u32> = HashMap::default();
    let gold_sets = string_sets(gold, &mut interner);
    let pred_sets = string_sets(pred, &mut interner);
    let size = |sets: &[Vec<u32>]| sets.iter().map(Vec::len).sum::<usize>() as f64;

    let mut first_pred: HashMap<&[u32], usize> = HashMap::default();
    for (p, set) in pred_sets.iter().enumerate() {
        first_pred.entry(set.as_slice()).or_insert(p);
    }
    let mut claimed_by: HashMap<usize, usize> = HashMap::default();
    let mut pred_claimed = vec![false; pred_sets.len()];
    let mut remaining_gold = Vec::new();
    let mut overlaps = Vec::new();
    for (g, set) in gold_sets.iter().enumerate() {
        match first_pred.get(set.as_slice()) {
            Some(&p) => {
                // A second claim makes the reference remove the same row twice and fail.
                if claimed_by.insert(p, g).is_some() {
                    return CompatOutcome::DuplicateClaim;
                }
                pred_claimed[p] = true;
                overlaps.push(set.len());
            }
            None => remaining_gold.push(g),
        }
    }
    let remaining_pred: Vec<usize> = (0..pred_sets.len()).filter(|&p| !pred_claimed[p]).collect();
    let mut truncated = false;
    if partial {
        let token_rows = |order: &[usize], sets: &[Vec<u32>]| {
            let mut rows = TokenRows::default();
            for &row in order {
                rows.push_row(sets[row].iter().map(|&t| (t, 1)));
            }
            rows
        };
        match greedy_match(
            &token_rows(&remaining_gold, &gold_sets),
            &token_rows(&remaining_pred, &pred_sets),
            Similarity::Jaccard,
            max_work,
        ) {
            Ok(pairs) => overlaps.extend(pairs.iter().map(|p| p.overlap as usize)),
            Err(_) => truncated = true,
        }
    }
    let matched = overlaps.iter().sum::<usize>() as f64;
    CompatOutcome::Scored {
        tally: Tally { matched, truncated },
        gold_cells: size(&gold_sets),
        pred_cells: size(&pred_sets),
        overlaps: matched,
    }
}

/// Each row as the sorted set of its values' Python `str` tokens.
fn string_sets(result: &ResultSet, interner: &mut HashMap<String, u32>) -> Vec<Vec<u32>> {
    result
        .rows
        .iter()
        .map(|row| {
            let mut set: Vec<u32> = row
                .iter()
                .map(|v| {
                    let text = py_str(v);
                    match interner.get(text.as_ref()) {
                        Some(&t) => t,
                        None => {
                            let t = interner.len() as u32;
                            interner.insert(text.into_owned(), t);
                            t
                        }
                    }
                })
                .collect();
            set.sort_unstable();
            set.dedup();
            set
        })
        .collect()
}
