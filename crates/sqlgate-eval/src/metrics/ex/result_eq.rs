//! Test-suite `result_eq(R1 = gold, R2 = pred, order_matters)` (spec §2.4), shared by the
//! `testsuite` mode and the TrustSQL `spider` family.
//!
//! The reference enumerates column permutations; here candidate columns come from per-column
//! signatures and a backtracking search prunes on partial row multisets, so the verdict is
//! the same ("some permutation makes the results equal") without trying k! permutations.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use crate::exec::value::{py_str, py_type_name, HashKey, Value};

type Row = Vec<Value>;

pub(super) fn result_eq(gold: &[Row], pred: &[Row], order_matters: bool) -> bool {
    if gold.is_empty() && pred.is_empty() {
        return true;
    }
    if gold.len() != pred.len() {
        return false;
    }
    let width = gold[0].len();
    // SQL rows of one result all have the same width; anything else cannot be equal.
    let consistent = |rows: &[Row]| rows.iter().all(|r| r.len() == width);
    if !consistent(gold) || !consistent(pred) {
        return false;
    }
    if !quick_check(gold, pred, order_matters) {
        return false;
    }
    if width == 1 {
        return rows_equal(gold, pred, order_matters);
    }
    if order_matters {
        ordered_permutation_exists(gold, pred)
    } else {
        Search::new(gold, pred).run()
    }
}

/// The reference's `quick_rej`: every row's values sorted by `str(v) + str(type(v))`, then the
/// lists compared position by position (ordered) or as sets. Not type-neutral (spec §2.4 step 4).
fn quick_check(gold: &[Row], pred: &[Row], order_matters: bool) -> bool {
    let gold_rows: Vec<Vec<&Value>> = gold.iter().map(|r| unorder(r)).collect();
    let pred_rows: Vec<Vec<&Value>> = pred.iter().map(|r| unorder(r)).collect();
    if order_matters {
        gold_rows == pred_rows
    } else {
        let gold_set: HashSet<&Vec<&Value>> = gold_rows.iter().collect();
        let pred_set: HashSet<&Vec<&Value>> = pred_rows.iter().collect();
        gold_set == pred_set
    }
}

/// `tuple(sorted(row, key=lambda x: str(x) + str(type(x))))`; Python's sort is stable.
fn unorder(row: &[Value]) -> Vec<&Value> {
    if row.len() < 2 {
        return row.iter().collect();
    }
    let keys: Vec<_> = row.iter().map(|v| (py_str(v), py_type_name(v))).collect();
    let mut order: Vec<usize> = (0..row.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |i: usize| keys[i].0.bytes().chain(keys[i].1.bytes());
        key(a).cmp(key(b))
    });
    order.into_iter().map(|i| &row[i]).collect()
}

/// Row lists equal position by position (ordered) or as multisets.
fn rows_equal(gold: &[Row], pred: &[Row], order_matters: bool) -> bool {
    if order_matters {
        gold == pred
    } else {
        multiset(gold.iter().map(|r| r.iter().collect::<Vec<_>>()))
            == multiset(pred.iter().map(|r| r.iter().collect::<Vec<_>>()))
    }
}

fn multiset<T: Hash + Eq>(items: impl Iterator<Item = T>) -> HashMap<T, usize> {
    let mut counts = HashMap::new();
    for item in items {
        *counts.entry(item).or_insert(0) += 1;
    }
    counts
}

fn column<'a>(rows: &'a [Row], j: usize) -> impl Iterator<Item = &'a Value> + 'a {
    rows.iter().map(move |r| &r[j])
}

/// With order mattering, a permutation works iff every gold column equals a distinct pred
/// column as a sequence; column equality is an equivalence, so the counts per class decide.
fn ordered_permutation_exists(gold: &[Row], pred: &[Row]) -> bool {
    let width = gold[0].len();
    let mut counts: HashMap<Vec<&Value>, i64> = HashMap::new();
    for j in 0..width {
        *counts.entry(column(gold, j).collect()).or_insert(0) += 1;
        *counts.entry(column(pred, j).collect()).or_insert(0) -= 1;
    }
    counts.values().all(|&c| c == 0)
}

fn hash_of(value: &impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// Backtracking search for a column permutation under bag semantics.
struct Search<'a> {
    gold: &'a [Row],
    pred: &'a [Row],
    /// `candidates[i]`: pred columns with the same value multiset as gold column `i`.
    candidates: Vec<Vec<usize>>,
    /// Pred columns that are identical sequences share a class; trying one per class suffices.
    pred_class: Vec<usize>,
    gold_cell_hash: Vec<Vec<u64>>,
    pred_cell_hash: Vec<Vec<u64>>,
}

impl<'a> Search<'a> {
    fn new(gold: &'a [Row], pred: &'a [Row]) -> Self {
        let width = gold[0].len();
        let sorted_column = |rows: &'a [Row], j: usize| {
            let mut keys: Vec<HashKey<'a>> = column(rows, j).map(Value::hash_key).collect();
            keys.sort_unstable();
            keys
        };
        let gold_bags: Vec<_> = (0..width).map(|j| sorted_column(gold, j)).collect();
        let pred_bags: Vec<_> = (0..width).map(|j| sorted_column(pred, j)).collect();
        let candidates = gold_bags
            .iter()
            .map(|g| (0..width).filter(|&j| pred_bags[j] == *g).collect())
            .collect();

        let mut classes: HashMap<Vec<HashKey>, usize> = HashMap::new();
        let pred_class = (0..width)
            .map(|j| {
                let next = classes.len();
                *classes
                    .entry(column(pred, j).map(Value::hash_key).collect())
                    .or_insert(next)
            })
            .collect();
        let cell_hashes = |rows: &[Row]| -> Vec<Vec<u64>> {
            rows.iter()
                .map(|r| r.iter().map(hash_of).collect())
                .collect()
        };
        Search {
            gold,
            pred,
            candidates,
            pred_class,
            gold_cell_hash: cell_hashes(gold),
            pred_cell_hash: cell_hashes(pred),
        }
    }

    fn run(&self) -> bool {
        if self.candidates.iter().any(Vec::is_empty) {
            return false;
        }
        // Most constrained gold columns first.
        let mut order: Vec<usize> = (0..self.candidates.len()).collect();
        order.sort_by_key(|&i| self.candidates[i].len());
        let rows = self.gold.len();
        let mut assignment = vec![usize::MAX; order.len()];
        let mut used = vec![false; order.len()];
        self.extend(
            &order,
            0,
            &mut assignment,
            &mut used,
            &vec![0; rows],
            &vec![0; rows],
        )
    }

    /// Assigns gold column `order[depth]`, keeping the partial row hashes of both sides.
    fn extend(
        &self,
        order: &[usize],
        depth: usize,
        assignment: &mut [usize],
        used: &mut [bool],
        gold_hashes: &[u64],
        pred_hashes: &[u64],
    ) -> bool {
        let Some(&i) = order.get(depth) else {
            return self.verify(assignment);
        };
        let mut tried_classes = HashSet::new();
        for &j in &self.candidates[i] {
            if used[j] || !tried_classes.insert(self.pred_class[j]) {
                continue;
            }
            let gold_next = combine(gold_hashes, &self.gold_cell_hash, i);
            let pred_next = combine(pred_hashes, &self.pred_cell_hash, j);
            if !same_multiset(&gold_next, &pred_next) {
                continue;
            }
            assignment[i] = j;
            used[j] = true;
            if self.extend(order, depth + 1, assignment, used, &gold_next, &pred_next) {
                return true;
            }
            used[j] = false;
        }
        false
    }

    /// Exact bag equality of the gold rows and the permuted pred rows.
    fn verify(&self, assignment: &[usize]) -> bool {
        let permuted = |r: &'a Row| assignment.iter().map(|&j| &r[j]).collect::<Vec<_>>();
        multiset(self.gold.iter().map(|r| r.iter().collect::<Vec<_>>()))
            == multiset(self.pred.iter().map(permuted))
    }
}

/// Extends each row's running hash with its cell in column `j`.
fn combine(hashes: &[u64], cells: &[Vec<u64>], j: usize) -> Vec<u64> {
    hashes
        .iter()
        .zip(cells)
        .map(|(h, row)| (h.rotate_left(7) ^ row[j]).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect()
}

fn same_multiset(a: &[u64], b: &[u64]) -> bool {
    let sorted = |v: &[u64]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v
    };
    sorted(a) == sorted(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int_rows(rows: &[&[i64]]) -> Vec<Row> {
        rows.iter()
            .map(|r| r.iter().map(|&v| Value::Int(v)).collect())
            .collect()
    }

    /// The reference algorithm: every permutation, bag or list equality.
    fn brute_force(gold: &[Row], pred: &[Row], order_matters: bool) -> bool {
        fn permutations(k: usize) -> Vec<Vec<usize>> {
            if k == 0 {
                return vec![vec![]];
            }
            let mut out = Vec::new();
            for p in permutations(k - 1) {
                for pos in 0..=p.len() {
                    let mut q = p.clone();
                    q.insert(pos, k - 1);
                    out.push(q);
                }
            }
            out
        }
        permutations(gold[0].len()).iter().any(|perm| {
            let permuted: Vec<Row> = pred
                .iter()
                .map(|r| perm.iter().map(|&j| r[j].clone()).collect())
                .collect();
            rows_equal(gold, &permuted, order_matters)
        })
    }

    #[test]
    fn column_permutations_are_found() {
        let gold = int_rows(&[&[1, 2, 3, 4], &[5, 6, 7, 8]]);
        let pred = int_rows(&[&[4, 3, 2, 1], &[8, 7, 6, 5]]);
        assert!(result_eq(&gold, &pred, false));
        assert!(result_eq(&gold, &pred, true));
        let swapped_rows = int_rows(&[&[8, 7, 6, 5], &[4, 3, 2, 1]]);
        assert!(result_eq(&gold, &swapped_rows, false));
        assert!(!result_eq(&gold, &swapped_rows, true));
    }

    #[test]
    fn equal_column_multisets_are_not_enough() {
        // Same unordered rows and column multisets, but no permutation keeps rows together.
        let gold = int_rows(&[&[2, 1, 3], &[3, 3, 1], &[2, 1, 3]]);
        let pred = int_rows(&[&[3, 1, 3], &[3, 1, 2], &[1, 3, 2]]);
        assert!(quick_check(&gold, &pred, false));
        assert_eq!(
            result_eq(&gold, &pred, false),
            brute_force(&gold, &pred, false)
        );
        assert!(!result_eq(&gold, &pred, false));
    }

    #[test]
    fn agrees_with_brute_force_on_small_tables() {
        // Deterministic pseudo-random small tables over a tiny alphabet, many collisions.
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..3000 {
            let rows = (next() % 4) as usize + 1;
            let width = (next() % 5) as usize + 1;
            let gold: Vec<Row> = (0..rows)
                .map(|_| {
                    (0..width)
                        .map(|_| Value::Int((next() % 2) as i64))
                        .collect()
                })
                .collect();
            let mut pred = gold.clone();
            if next() % 2 == 0 {
                pred.reverse();
            }
            let perm_seed = next() as usize;
            for r in &mut pred {
                r.rotate_left(perm_seed % width);
                if next() % 5 == 0 {
                    r[0] = Value::Int((next() % 2) as i64);
                }
            }
            for order_matters in [false, true] {
                // With one value type, the quick reject never decides alone.
                let expected = brute_force(&gold, &pred, order_matters);
                assert_eq!(
                    result_eq(&gold, &pred, order_matters),
                    expected,
                    "{gold:?} vs {pred:?} ordered={order_matters}"
                );
            }
        }
    }

    #[test]
    fn quick_reject_is_type_sensitive() {
        // Spec §2.4 step 4: gold (1, 1.5) sorts to (1.5, 1), pred (1.0, 1.5) to (1.0, 1.5).
        let gold = vec![vec![Value::Int(1), Value::Real(1.5)]];
        let pred = vec![vec![Value::Real(1.0), Value::Real(1.5)]];
        assert!(!result_eq(&gold, &pred, false));
        assert!(rows_equal(&gold, &pred, false));
    }

    #[test]
    fn wide_tables_with_identical_columns_are_fast() {
        // 12 identical columns: k! = 479001600 permutations for a blind search.
        let gold: Vec<Row> = (0..200).map(|i| vec![Value::Int(i); 12]).collect();
        let mut pred = gold.clone();
        pred.reverse();
        assert!(result_eq(&gold, &pred, false));
        pred[0][3] = Value::Int(-1);
        assert!(!result_eq(&gold, &pred, false));
    }

    #[test]
    fn empty_results_ignore_width() {
        assert!(result_eq(&[], &[], true));
        assert!(!result_eq(&int_rows(&[&[1]]), &[], false));
        assert!(!result_eq(&int_rows(&[&[1]]), &int_rows(&[&[1, 1]]), false));
    }
}
