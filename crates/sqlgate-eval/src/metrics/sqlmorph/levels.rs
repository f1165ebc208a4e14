//! Greedy partial row matching of equal-width rows (EC and SC cell matching), level by level.
//!
//! The greedy of §4.2 takes pairs in the order (−overlap, gold position, prediction position)
//! whenever both rows are free, and a pair's overlap never changes. So it can take every pair
//! of overlap `width − 1` first, then `width − 2`, and so on down to 1, and at level `s` every
//! pair of two free rows overlaps in at most `s` positions (a pair overlapping more would have
//! been taken at its own level). At level `s`, gold rows in order each take the first free
//! prediction row agreeing with them on some `s` positions: found by hashing every free
//! prediction row's projection on each of the C(width, s) position subsets. The cost of a level
//! is about C(width, s) · rows · s, whatever the values: a column holding one value over
//! 100,000 rows, which makes the pair-materialising greedy ([`greedy_match`]) exceed its work
//! cap, costs nothing more here.
//!
//! [`partial_match`] runs [`greedy_match`] first (cheapest when values are diverse) and the
//! levels when it would exceed the cap; when a level would itself cost more than the cap (many
//! columns), the remaining rows go back to [`greedy_match`], which continues the same greedy
//! exactly. Only when that fails too is the match truncated.

use rustc_hash::FxHashMap;

use super::greedy::{greedy_match, Pair, Similarity, TokenRows, Truncated};

/// Matches rows of `width` tokens each (one per position, the same token only at the same
/// position on both sides) exactly as [`greedy_match`] with [`Similarity::Overlap`] would
/// without a work cap; [`Truncated`] when neither way fits in `max_work`.
pub(super) fn partial_match(
    gold: &TokenRows,
    pred: &TokenRows,
    width: usize,
    max_work: u64,
) -> Result<Vec<Pair>, Truncated> {
    greedy_match(gold, pred, Similarity::Overlap, max_work)
        .or_else(|Truncated| level_match(gold, pred, width, max_work))
}

/// The levels, then [`greedy_match`] on the rows left when a level costs more than `max_work`.
fn level_match(
    gold: &TokenRows,
    pred: &TokenRows,
    width: usize,
    max_work: u64,
) -> Result<Vec<Pair>, Truncated> {
    let mut gold_free: Vec<usize> = (0..gold.len()).collect();
    let mut pred_taken = vec![false; pred.len()];
    let mut pairs = Vec::new();
    for level in (1..width).rev() {
        let subsets = subsets(width, level);
        let rows = (gold_free.len() + pred.len()) as u64;
        let cost = (subsets.len() as u64)
            .saturating_mul(rows)
            .saturating_mul(level as u64);
        if cost > max_work {
            let rest = rest_greedy(gold, pred, &gold_free, &pred_taken, max_work)?;
            pairs.extend(rest);
            break;
        }
        let mut index = LevelIndex::new(pred, &pred_taken, &subsets);
        gold_free.retain(|&g| match index.first_free(gold.row(g), &pred_taken) {
            Some(p) => {
                pred_taken[p] = true;
                pairs.push(Pair {
                    gold: g,
                    pred: p,
                    overlap: level as u32,
                });
                false
            }
            None => true,
        });
        if gold_free.is_empty() {
            break;
        }
    }
    // Acceptance order: by level (already), then by gold position within a level.
    Ok(pairs)
}

/// The prediction rows with one projection, in position order, and the index of the first
/// that may still be free.
#[derive(Default)]
struct Bucket {
    rows: Vec<usize>,
    head: usize,
}

/// The free prediction rows of each position subset's projection.
struct LevelIndex<'a> {
    subsets: &'a [Vec<usize>],
    /// Per subset: projection → its rows.
    maps: Vec<FxHashMap<Vec<u32>, Bucket>>,
}

impl<'a> LevelIndex<'a> {
    fn new(pred: &TokenRows, taken: &[bool], subsets: &'a [Vec<usize>]) -> Self {
        let maps = subsets
            .iter()
            .map(|subset| {
                let mut map: FxHashMap<Vec<u32>, Bucket> = FxHashMap::default();
                for p in (0..pred.len()).filter(|&p| !taken[p]) {
                    map.entry(project(pred.row(p), subset))
                        .or_default()
                        .rows
                        .push(p);
                }
                map
            })
            .collect();
        LevelIndex { subsets, maps }
    }

    /// The first free prediction row sharing some subset's projection with `row`.
    fn first_free(&mut self, row: &[(u32, u32)], taken: &[bool]) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (subset, map) in self.subsets.iter().zip(&mut self.maps) {
            let Some(bucket) = map.get_mut(&project(row, subset)) else {
                continue;
            };
            // Taken rows are never freed: skipping them for good keeps this amortised linear.
            while bucket.rows.get(bucket.head).is_some_and(|&p| taken[p]) {
                bucket.head += 1;
            }
            if let Some(&p) = bucket.rows.get(bucket.head) {
                best = Some(best.map_or(p, |b| b.min(p)));
            }
        }
        best
    }
}

fn project(row: &[(u32, u32)], subset: &[usize]) -> Vec<u32> {
    subset
        .iter()
        .map(|&i| row.get(i).map_or(u32::MAX, |&(token, _)| token))
        .collect()
}

/// Every `size`-element subset of `0..width`, in lexicographic order.
fn subsets(width: usize, size: usize) -> Vec<Vec<usize>> {
    let mut all = Vec::new();
    let mut current: Vec<usize> = (0..size).collect();
    loop {
        all.push(current.clone());
        // The rightmost position that can still move right.
        let Some(i) = (0..size).rev().find(|&i| current[i] < width - size + i) else {
            return all;
        };
        current[i] += 1;
        for j in i + 1..size {
            current[j] = current[j - 1] + 1;
        }
    }
}

/// [`greedy_match`] over the rows still free, with positions mapped back.
fn rest_greedy(
    gold: &TokenRows,
    pred: &TokenRows,
    gold_free: &[usize],
    pred_taken: &[bool],
    max_work: u64,
) -> Result<Vec<Pair>, Truncated> {
    let pred_free: Vec<usize> = (0..pred.len()).filter(|&p| !pred_taken[p]).collect();
    let subset = |rows: &TokenRows, positions: &[usize]| {
        let mut out = TokenRows::default();
        for &r in positions {
            out.push_row(rows.row(r).iter().copied());
        }
        out
    };
    let pairs = greedy_match(
        &subset(gold, gold_free),
        &subset(pred, &pred_free),
        Similarity::Overlap,
        max_work,
    )?;
    Ok(pairs
        .into_iter()
        .map(|pair| Pair {
            gold: gold_free[pair.gold],
            pred: pred_free[pair.pred],
            overlap: pair.overlap,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(data: &[Vec<u32>]) -> TokenRows {
        let mut out = TokenRows::default();
        for row in data {
            // Tokens are per position, as the interner makes them.
            out.push_row(row.iter().enumerate().map(|(i, &v)| (v * 16 + i as u32, 1)));
        }
        out
    }

    #[test]
    fn subsets_are_all_combinations_in_order() {
        assert_eq!(subsets(3, 2), vec![vec![0, 1], vec![0, 2], vec![1, 2]]);
        assert_eq!(subsets(4, 1).len(), 4);
        assert_eq!(subsets(5, 3).len(), 10);
        assert_eq!(subsets(2, 2), vec![vec![0, 1]]);
    }

    /// A small reproducible stream.
    fn next(state: &mut u64) -> u32 {
        *state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (*state >> 33) as u32
    }

    #[test]
    fn levels_give_exactly_the_materialising_greedy() {
        let mut state = 7;
        for case in 0..400 {
            let width = 1 + case % 5;
            let domain = 1 + case as u32 % 4;
            let mut table = |n: usize| -> Vec<Vec<u32>> {
                (0..n)
                    .map(|_| (0..width).map(|_| next(&mut state) % domain).collect())
                    .collect()
            };
            let gold = table(case % 13);
            // Phase 1 has removed every prediction row equal to a gold row.
            let pred: Vec<Vec<u32>> = table((case * 7) % 11)
                .into_iter()
                .filter(|row| !gold.contains(row))
                .collect();
            let (gold, pred) = (rows(&gold), rows(&pred));
            let want = greedy_match(&gold, &pred, Similarity::Overlap, u64::MAX).unwrap();
            let got = level_match(&gold, &pred, width, u64::MAX).unwrap();
            let sorted = |mut pairs: Vec<Pair>| {
                pairs.sort_by_key(|p| (p.gold, p.pred));
                pairs
            };
            assert_eq!(sorted(got), sorted(want), "case {case}");
        }
    }

    #[test]
    fn an_expensive_level_falls_back_to_the_greedy() {
        let gold = rows(&[vec![1, 2, 3], vec![4, 5, 6]]);
        let pred = rows(&[vec![1, 2, 0], vec![4, 0, 0]]);
        let pairs = level_match(&gold, &pred, 3, 4).unwrap();
        let overlaps: Vec<u32> = pairs.iter().map(|p| p.overlap).collect();
        assert_eq!(overlaps, vec![2, 1]);
        assert_eq!(level_match(&gold, &pred, 3, 0), Err(Truncated));
    }
}
