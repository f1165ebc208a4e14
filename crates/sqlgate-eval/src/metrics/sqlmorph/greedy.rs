//! Greedy partial row matching (spec §4.2 phase 2, §4.3, §7) without the cubic rescan.
//!
//! The specified greedy repeatedly takes the remaining (gold, prediction) pair with the highest
//! similarity, ties to the smallest (gold position, prediction position), and removes both rows.
//! A pair's similarity never changes when other rows are removed, so this is the same as
//! accepting pairs in the order (−sim, gold, pred) whenever both rows are still free (§7).
//!
//! Instead of materialising every pair, each gold row keeps only its current best partner,
//! found through an inverted index `token → prediction rows` (pairs with nothing in common are
//! never looked at). A max-heap on (best sim, −gold) pops the globally first pair; if its
//! prediction row was taken meanwhile, the gold row's best partner is recomputed among the free
//! rows and pushed back. Popping (s, g, p) with p free is correct because every heap entry is an
//! upper bound of its row's current best, so no free pair precedes (s, g, p).
//!
//! Cost: `O(W + n log n)` time and `O(n·k)` memory for n rows of k tokens, where the work
//! `W` counts posting-list entries visited: the first evaluation of every gold row visits
//! `T = Σ_token gold_count(token) · pred_count(token)` entries (the number of equal cells over
//! all pairs), and a re-evaluation visits that row's lists again, from which taken rows are
//! compacted away (a list untouched since the last take is read without checks). Postings
//! live in one flat array, one segment per token. Memory does not grow with `T`.
//! Low-cardinality columns make `T` quadratic (a constant column alone gives
//! `T = |G|·|P|`); the work cap turns that into an explicit truncation instead of an
//! unbounded run. `T` is known before any matching, so such inputs fail fast.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Rows as lists of `(token, multiplicity)`, stored contiguously. A token stands for one
/// comparable unit: a (column, value) under EC/SC, a value under NC.
#[derive(Debug, Default)]
pub(super) struct TokenRows {
    starts: Vec<usize>,
    items: Vec<(u32, u32)>,
}

impl TokenRows {
    pub(super) fn push_row(&mut self, items: impl IntoIterator<Item = (u32, u32)>) {
        self.starts.push(self.items.len());
        self.items.extend(items);
    }

    pub(super) fn len(&self) -> usize {
        self.starts.len()
    }

    pub(super) fn row(&self, i: usize) -> &[(u32, u32)] {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.items.len());
        &self.items[self.starts[i]..end]
    }

    /// The number of units in row `i` (the sum of multiplicities).
    fn size(&self, i: usize) -> u64 {
        self.row(i).iter().map(|&(_, m)| u64::from(m)).sum()
    }
}

/// How the overlap of two rows becomes a similarity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Similarity {
    /// The overlap itself: all rows of a side have the same size, so `overlap / |c∩|` and
    /// `overlap / max(|V(p)|, |V(g)|)` order pairs like the overlap does.
    Overlap,
    /// `|A ∩ B| / |A ∪ B|` (the reference's NC matching).
    Jaccard,
}

/// An accepted pair of positions and the number of units they share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pair {
    pub(super) gold: usize,
    pub(super) pred: usize,
    pub(super) overlap: u32,
}

/// The work cap was reached; no pairs are returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Truncated;

/// A similarity as an exact fraction, so ties are ties (and agree with Python's float
/// comparisons, which are exact for such small fractions).
#[derive(Debug, Clone, Copy)]
struct Score {
    numerator: u64,
    denominator: u64,
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        let left = u128::from(self.numerator) * u128::from(other.denominator);
        let right = u128::from(other.numerator) * u128::from(self.denominator);
        left.cmp(&right)
    }
}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Score {}

/// The best free partner of a gold row.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    score: Score,
    pred: u32,
    overlap: u32,
}

/// Matches rows greedily; returns the accepted pairs in acceptance order.
pub(super) fn greedy_match(
    gold: &TokenRows,
    pred: &TokenRows,
    similarity: Similarity,
    max_work: u64,
) -> Result<Vec<Pair>, Truncated> {
    let mut matcher = Matcher::new(gold, pred, similarity);
    if matcher.initial_work() > max_work {
        return Err(Truncated);
    }
    let mut heap = BinaryHeap::new();
    for g in 0..gold.len() {
        if let Some(c) = matcher.best_partner(g) {
            heap.push((c.score, Reverse(g), c.pred, c.overlap));
        }
    }
    let mut pairs = Vec::new();
    while let Some((_, Reverse(g), p, overlap)) = heap.pop() {
        if matcher.used[p as usize] {
            if let Some(c) = matcher.best_partner(g) {
                heap.push((c.score, Reverse(g), c.pred, c.overlap));
            }
            if matcher.work > max_work {
                return Err(Truncated);
            }
            continue;
        }
        matcher.used[p as usize] = true;
        matcher.taken += 1;
        pairs.push(Pair {
            gold: g,
            pred: p as usize,
            overlap,
        });
    }
    Ok(pairs)
}

struct Matcher<'a> {
    gold: &'a TokenRows,
    pred_sizes: Vec<u64>,
    similarity: Similarity,
    postings: Postings,
    used: Vec<bool>,
    /// How many prediction rows are taken so far.
    taken: u64,
    overlap: Vec<u32>,
    touched: Vec<u32>,
    work: u64,
}

impl<'a> Matcher<'a> {
    fn new(gold: &'a TokenRows, pred: &TokenRows, similarity: Similarity) -> Self {
        Matcher {
            gold,
            pred_sizes: (0..pred.len()).map(|p| pred.size(p)).collect(),
            similarity,
            postings: Postings::new(pred),
            used: vec![false; pred.len()],
            taken: 0,
            overlap: vec![0; pred.len()],
            touched: Vec::new(),
            work: 0,
        }
    }

    /// The posting entries the first evaluation of every gold row visits (`T`).
    fn initial_work(&self) -> u64 {
        (0..self.gold.len())
            .flat_map(|g| self.gold.row(g))
            .map(|&(t, _)| self.postings.segment(t).len() as u64)
            .sum()
    }

    /// The free prediction row most similar to gold row `g` (smallest position on ties), if
    /// any shares something with it.
    fn best_partner(&mut self, g: usize) -> Option<Candidate> {
        let Matcher {
            postings,
            used,
            taken,
            overlap,
            touched,
            work,
            ..
        } = self;
        let mut count = |p: u32, shared: u32| {
            if overlap[p as usize] == 0 {
                touched.push(p);
            }
            overlap[p as usize] += shared;
        };
        for &(token, gold_multiplicity) in self.gold.row(g) {
            // A token no prediction row holds has no segment.
            let Some(clean_at) = postings.clean_at.get(token as usize) else {
                continue;
            };
            let clean = clean_at == taken;
            let list = postings.segment_mut(token);
            *work += list.len() as u64;
            if clean {
                for &(p, pred_multiplicity) in list.iter() {
                    count(p, gold_multiplicity.min(pred_multiplicity));
                }
                continue;
            }
            // Compact the segment in place, keeping free rows in order.
            let mut kept = 0;
            for i in 0..list.len() {
                let (p, pred_multiplicity) = list[i];
                if !used[p as usize] {
                    count(p, gold_multiplicity.min(pred_multiplicity));
                    list[kept] = (p, pred_multiplicity);
                    kept += 1;
                }
            }
            postings.live[token as usize] = kept as u32;
            postings.clean_at[token as usize] = *taken;
        }
        let gold_size = self.gold.size(g);
        let mut best: Option<Candidate> = None;
        for p in self.touched.drain(..) {
            let shared = std::mem::take(&mut self.overlap[p as usize]);
            let score = match self.similarity {
                Similarity::Overlap => Score {
                    numerator: u64::from(shared),
                    denominator: 1,
                },
                Similarity::Jaccard => Score {
                    numerator: u64::from(shared),
                    denominator: gold_size + self.pred_sizes[p as usize] - u64::from(shared),
                },
            };
            let better = best.is_none_or(|b| score > b.score || (score == b.score && p < b.pred));
            if better {
                best = Some(Candidate {
                    score,
                    pred: p,
                    overlap: shared,
                });
            }
        }
        best
    }
}

/// token → (prediction position, multiplicity) of the free rows holding it, ascending
/// positions. One flat array with a segment per token: lookups touch two cache lines instead
/// of a separate allocation per list.
struct Postings {
    entries: Vec<(u32, u32)>,
    start: Vec<usize>,
    /// Entries still in use at the front of each segment.
    live: Vec<u32>,
    /// `taken` when each segment was last compacted: a segment with `clean_at == taken`
    /// holds only free rows and is read without checks.
    clean_at: Vec<u64>,
}

impl Postings {
    fn new(pred: &TokenRows) -> Self {
        let tokens = pred.items.iter().map(|&(t, _)| t as usize + 1).max();
        let mut live = vec![0u32; tokens.unwrap_or(0)];
        for &(token, _) in &pred.items {
            live[token as usize] += 1;
        }
        let mut start = Vec::with_capacity(live.len() + 1);
        start.push(0);
        for &count in &live {
            start.push(start[start.len() - 1] + count as usize);
        }
        let mut cursor = start.clone();
        let mut entries = vec![(0, 0); pred.items.len()];
        for p in 0..pred.len() {
            for &(token, multiplicity) in pred.row(p) {
                entries[cursor[token as usize]] = (p as u32, multiplicity);
                cursor[token as usize] += 1;
            }
        }
        Postings {
            entries,
            clean_at: vec![0; live.len()],
            start,
            live,
        }
    }

    fn segment(&self, token: u32) -> &[(u32, u32)] {
        let t = token as usize;
        match self.live.get(t) {
            Some(&live) => &self.entries[self.start[t]..self.start[t] + live as usize],
            None => &[],
        }
    }

    fn segment_mut(&mut self, token: u32) -> &mut [(u32, u32)] {
        let t = token as usize;
        match self.live.get(t) {
            Some(&live) => &mut self.entries[self.start[t]..self.start[t] + live as usize],
            None => &mut [],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(data: &[&[u32]]) -> TokenRows {
        let mut rows = TokenRows::default();
        for row in data {
            rows.push_row(row.iter().map(|&t| (t, 1)));
        }
        rows
    }

    #[test]
    fn highest_similarity_first_then_smallest_positions() {
        // Gold 0 shares one token with pred 0 and two with pred 1; gold 1 shares two with pred 1.
        let gold = rows(&[&[1, 2, 3], &[4, 2, 3]]);
        let pred = rows(&[&[1, 9, 8], &[7, 2, 3]]);
        let pairs = greedy_match(&gold, &pred, Similarity::Overlap, u64::MAX).unwrap();
        let got: Vec<_> = pairs.iter().map(|p| (p.gold, p.pred, p.overlap)).collect();
        // Gold 1 then shares nothing with the free pred 0, so it stays unmatched.
        assert_eq!(got, vec![(0, 1, 2)]);
    }

    #[test]
    fn greedy_order_can_cost_cells_and_is_kept() {
        // Both gold rows prefer pred 0 (score 2); gold 0 wins the tie, gold 1 falls back to
        // pred 1 with score 1. An optimal matching would not change this greedy result.
        let gold = rows(&[&[1, 2], &[1, 2]]);
        let pred = rows(&[&[1, 2, 5], &[1, 7, 8]]);
        let pairs = greedy_match(&gold, &pred, Similarity::Overlap, u64::MAX).unwrap();
        let got: Vec<_> = pairs.iter().map(|p| (p.gold, p.pred, p.overlap)).collect();
        assert_eq!(got, vec![(0, 0, 2), (1, 1, 1)]);
    }

    #[test]
    fn jaccard_prefers_tighter_overlap() {
        // Pred 0 shares 2 of a 5-token union (0.4); pred 1 shares 1 of a 2-token union (0.5).
        let gold = rows(&[&[1, 2]]);
        let pred = rows(&[&[1, 2, 3, 4, 5], &[1]]);
        let pairs = greedy_match(&gold, &pred, Similarity::Jaccard, u64::MAX).unwrap();
        assert_eq!(
            pairs,
            vec![Pair {
                gold: 0,
                pred: 1,
                overlap: 1
            }]
        );
    }

    #[test]
    fn work_cap_truncates() {
        // First pass: 3 gold rows × a 3-entry list = 9. Gold 1 and 2 then re-evaluate after
        // their best partner is taken: +3, then +2 on the compacted list, 14 in all.
        let gold = rows(&[&[1], &[1], &[1]]);
        let pred = rows(&[&[1], &[1], &[1]]);
        let run = |cap| greedy_match(&gold, &pred, Similarity::Overlap, cap).map(|p| p.len());
        assert_eq!(run(8), Err(Truncated));
        assert_eq!(run(13), Err(Truncated));
        assert_eq!(run(14), Ok(3));
    }
}
