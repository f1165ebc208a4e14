//! Column matching: EC by name (§3.1), SC by embedded descriptors (§3.2).
//!
//! Both return `c∩` as (gold column, prediction column) pairs in projection order.

use std::collections::HashMap;

use pathfinding::kuhn_munkres::kuhn_munkres;
use pathfinding::matrix::Matrix;

use super::embed::cosine;
use super::{cell, MetricError, Options};
use crate::exec::value::{py_float_repr, py_str, HashKey as Key};
use crate::exec::{ResultSet, Value};

/// EC: equal names. Paper: the k-th occurrence of a name in gold pairs with its k-th
/// occurrence in the prediction. Compat: a name stands for its last occurrence on each side.
/// Ordered by name (byte order), then occurrence.
pub(super) fn exact_pairs(gold: &[String], pred: &[String], compat: bool) -> Vec<(usize, usize)> {
    let mut pairs: Vec<(usize, usize)> = if compat {
        let last = |names: &[String]| -> HashMap<String, usize> {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i))
                .collect()
        };
        let pred_last = last(pred);
        last(gold)
            .into_iter()
            .filter_map(|(name, g)| pred_last.get(&name).map(|&p| (g, p)))
            .collect()
    } else {
        let mut pred_occurrences: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, name) in pred.iter().enumerate() {
            pred_occurrences.entry(name).or_default().push(i);
        }
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut pairs = Vec::new();
        for (g, name) in gold.iter().enumerate() {
            let k = seen.entry(name).or_default();
            if let Some(&p) = pred_occurrences.get(name.as_str()).and_then(|o| o.get(*k)) {
                pairs.push((g, p));
            }
            *k += 1;
        }
        pairs
    };
    // Gold indices of one name ascend with their occurrence, so they break name ties.
    pairs.sort_by(|a, b| {
        gold[a.0]
            .as_bytes()
            .cmp(gold[b.0].as_bytes())
            .then(a.0.cmp(&b.0))
    });
    pairs
}

/// SC: a maximum-weight assignment of column descriptors, keeping pairs with similarity above
/// the threshold. Paper: type-compatible pairs only, ordered by gold column. Compat: no type
/// restriction, and the reference's misalignment: gold's matched columns in gold order are
/// zipped with the prediction's matched columns in prediction order (§6 item 4).
pub(super) fn semantic_pairs(
    gold: &ResultSet,
    pred: &ResultSet,
    opts: &Options,
) -> Result<Vec<(usize, usize)>, MetricError> {
    let (gold_cols, pred_cols) = (gold.columns.len(), pred.columns.len());
    if gold_cols == 0 || pred_cols == 0 {
        return Ok(Vec::new());
    }
    let texts: Vec<String> = (0..gold_cols)
        .map(|c| descriptor(gold, c))
        .chain((0..pred_cols).map(|c| descriptor(pred, c)))
        .collect();
    let embedding_error = |message: String| MetricError::Embedding {
        model: opts.embedder.model_id().to_string(),
        message,
    };
    let vectors = opts
        .embedder
        .embed(&texts)
        .map_err(|e| embedding_error(e.to_string()))?;
    if vectors.len() != texts.len() {
        return Err(embedding_error(format!(
            "{} vectors for {} texts",
            vectors.len(),
            texts.len()
        )));
    }
    let (gold_vectors, pred_vectors) = vectors.split_at(gold_cols);
    let gold_types: Vec<u8> = (0..gold_cols).map(|c| type_classes(gold, c)).collect();
    let pred_types: Vec<u8> = (0..pred_cols).map(|c| type_classes(pred, c)).collect();
    let candidate = |g: usize, p: usize| {
        let compatible = opts.sqlmorph_compat || types_compatible(gold_types[g], pred_types[p]);
        compatible.then(|| cosine(&gold_vectors[g], &pred_vectors[p]))
    };
    let sims: Vec<Vec<Option<f64>>> = (0..gold_cols)
        .map(|g| (0..pred_cols).map(|p| candidate(g, p)).collect())
        .collect();
    let mut pairs: Vec<(usize, usize)> = assign(&sims)
        .into_iter()
        .filter(|&(g, p)| sims[g][p].is_some_and(|s| s > opts.sc_threshold))
        .collect();
    pairs.sort_unstable();
    if opts.sqlmorph_compat {
        let mut pred_matched: Vec<usize> = pairs.iter().map(|&(_, p)| p).collect();
        pred_matched.sort_unstable();
        pairs = pairs.iter().map(|&(g, _)| g).zip(pred_matched).collect();
    }
    Ok(pairs)
}

/// Similarities are scaled to integers for the assignment; `None` (type-incompatible) gets a
/// penalty larger than any sum of similarities, so an incompatible pair is used only when a
/// column has no other partner left (and is then dropped by the caller).
fn assign(sims: &[Vec<Option<f64>>]) -> Vec<(usize, usize)> {
    const SCALE: f64 = 1e9;
    let (gold_cols, pred_cols) = (sims.len(), sims[0].len());
    let penalty = -(2 * (gold_cols.min(pred_cols) as i64 + 1)) * SCALE as i64;
    let weight = |g: usize, p: usize| match sims[g][p] {
        Some(s) if s.is_finite() => (s.clamp(-1.0, 1.0) * SCALE).round() as i64,
        Some(_) => 0,
        None => penalty,
    };
    // The assignment needs no more rows than columns: put the smaller side in the rows.
    if gold_cols <= pred_cols {
        let weights = Matrix::from_fn(gold_cols, pred_cols, |(g, p)| weight(g, p));
        let (_, columns) = kuhn_munkres(&weights);
        columns.into_iter().enumerate().collect()
    } else {
        let weights = Matrix::from_fn(pred_cols, gold_cols, |(p, g)| weight(g, p));
        let (_, columns) = kuhn_munkres(&weights);
        columns
            .into_iter()
            .enumerate()
            .map(|(p, g)| (g, p))
            .collect()
    }
}

/// `"Column name: {name}. Data type: {dtype}. Sample values: v1, v2, ..."` (§3.2 item 1).
/// The sample part is omitted when the column has no non-NULL value, as the reference does.
pub(super) fn descriptor(result: &ResultSet, column: usize) -> String {
    let name = &result.columns[column];
    let values: Vec<&Value> = result.rows.iter().map(|r| cell(r, column)).collect();
    let dtype = pandas_dtype(&values);
    let mut text = format!("Column name: {name}. Data type: {dtype}. ");
    let samples = top_values(&values, dtype == "float64");
    if !samples.is_empty() {
        text.push_str("Sample values: ");
        text.push_str(&samples.join(", "));
    }
    text
}

/// The dtype pandas infers for a column built from `sqlite3` rows: `int64` for integers only,
/// `float64` for numbers with a float or a NULL among them, `object` otherwise (text, blobs,
/// mixtures, all-NULL or no rows).
fn pandas_dtype(values: &[&Value]) -> &'static str {
    let numeric = |v: &&&Value| matches!(v, Value::Int(_) | Value::Real(_) | Value::Null);
    let all_null = values.iter().all(|v| matches!(v, Value::Null));
    if all_null || !values.iter().all(|v| numeric(&v)) {
        "object"
    } else if values.iter().all(|v| matches!(v, Value::Int(_))) {
        "int64"
    } else {
        "float64"
    }
}

/// Up to 10 most frequent non-NULL values, ties in first-appearance order, as Python `str`;
/// a `float64` column prints its integers as floats (`1.0`), as pandas stores them.
fn top_values(values: &[&Value], as_float: bool) -> Vec<String> {
    let mut index: HashMap<Key, usize> = HashMap::new();
    let mut counted: Vec<(&Value, usize)> = Vec::new();
    for value in values.iter().filter(|v| !matches!(v, Value::Null)) {
        let slot = *index.entry((value).hash_key()).or_insert_with(|| {
            counted.push((value, 0));
            counted.len() - 1
        });
        counted[slot].1 += 1;
    }
    // Stable sort keeps first-appearance order among equal counts.
    counted.sort_by_key(|&(_, count)| std::cmp::Reverse(count));
    counted
        .into_iter()
        .take(10)
        .map(|(value, _)| match value {
            Value::Int(i) if as_float => py_float_repr(*i as f64),
            _ => py_str(value).into_owned(),
        })
        .collect()
}

const NUMERIC: u8 = 1;
const TEXT: u8 = 2;
const BLOB: u8 = 4;

/// The type classes present among a column's non-NULL values (0: all NULL).
fn type_classes(result: &ResultSet, column: usize) -> u8 {
    result
        .rows
        .iter()
        .map(|r| match cell(r, column) {
            Value::Null => 0,
            Value::Int(_) | Value::Real(_) => NUMERIC,
            Value::Text(_) => TEXT,
            Value::Blob(_) => BLOB,
        })
        .fold(0, |acc, class| acc | class)
}

/// [R] All-NULL columns go with anything; mixed columns go with any column sharing a class.
fn types_compatible(a: u8, b: u8) -> bool {
    a == 0 || b == 0 || a & b != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn result(columns: &[&str], rows: Vec<Vec<Value>>) -> ResultSet {
        ResultSet {
            columns: names(columns),
            rows,
            lossy_text: false,
        }
    }

    #[test]
    fn exact_pairs_sorted_by_name_with_duplicates() {
        let gold = names(&["b", "a", "b", "COUNT(*)"]);
        let pred = names(&["b", "x", "b", "a", "b", "count(*)"]);
        // Paper: k-th occurrence with k-th occurrence; byte order puts upper case first.
        assert_eq!(
            exact_pairs(&gold, &pred, false),
            vec![(1, 3), (0, 0), (2, 2)]
        );
        // Compat: one pair per name, last occurrences.
        assert_eq!(exact_pairs(&gold, &pred, true), vec![(1, 3), (2, 4)]);
    }

    #[test]
    fn descriptors_follow_pandas() {
        let rs = result(
            &["n", "f", "t", "z"],
            vec![
                vec![
                    Value::Int(2),
                    Value::Int(1),
                    Value::Text("b".into()),
                    Value::Null,
                ],
                vec![
                    Value::Int(1),
                    Value::Null,
                    Value::Text("a".into()),
                    Value::Null,
                ],
                vec![
                    Value::Int(1),
                    Value::Real(2.5),
                    Value::Text("b".into()),
                    Value::Null,
                ],
            ],
        );
        assert_eq!(
            descriptor(&rs, 0),
            "Column name: n. Data type: int64. Sample values: 1, 2"
        );
        assert_eq!(
            descriptor(&rs, 1),
            "Column name: f. Data type: float64. Sample values: 1.0, 2.5"
        );
        assert_eq!(
            descriptor(&rs, 2),
            "Column name: t. Data type: object. Sample values: b, a"
        );
        assert_eq!(descriptor(&rs, 3), "Column name: z. Data type: object. ");
        let empty = result(&["id"], vec![]);
        assert_eq!(
            descriptor(&empty, 0),
            "Column name: id. Data type: object. "
        );
    }

    #[test]
    fn top_values_keep_ten_in_first_appearance_order() {
        let rows: Vec<Vec<Value>> = (0..12).map(|i| vec![Value::Int(11 - i)]).collect();
        let rs = result(&["v"], rows);
        assert_eq!(
            descriptor(&rs, 0),
            "Column name: v. Data type: int64. Sample values: 11, 10, 9, 8, 7, 6, 5, 4, 3, 2"
        );
    }

    #[test]
    fn type_classes_and_compatibility() {
        let rs = result(
            &["i", "t", "null", "mixed"],
            vec![
                vec![
                    Value::Int(1),
                    Value::Text("x".into()),
                    Value::Null,
                    Value::Real(1.5),
                ],
                vec![
                    Value::Real(2.0),
                    Value::Text("y".into()),
                    Value::Null,
                    Value::Blob(vec![1]),
                ],
            ],
        );
        let classes: Vec<u8> = (0..4).map(|c| type_classes(&rs, c)).collect();
        assert_eq!(classes, vec![NUMERIC, TEXT, 0, NUMERIC | BLOB]);
        assert!(!types_compatible(NUMERIC, TEXT));
        assert!(types_compatible(0, TEXT));
        assert!(types_compatible(NUMERIC | BLOB, NUMERIC));
    }

    #[test]
    fn assignment_maximises_total_similarity() {
        // Greedy on the best cell (0.9 at g0-p0) would force g1-p1 (0.1): total 1.0. The
        // optimum is g0-p1 + g1-p0 = 0.8 + 0.85.
        let sims = vec![vec![Some(0.9), Some(0.8)], vec![Some(0.85), Some(0.1)]];
        let mut pairs = assign(&sims);
        pairs.sort_unstable();
        assert_eq!(pairs, vec![(0, 1), (1, 0)]);
        // Rectangular both ways; incompatible cells are avoided when possible.
        let wide = vec![vec![None, Some(0.2), Some(0.3)]];
        assert_eq!(assign(&wide), vec![(0, 2)]);
        let tall = vec![vec![Some(0.1)], vec![None], vec![Some(0.5)]];
        assert_eq!(assign(&tall), vec![(2, 0)]);
    }
}
