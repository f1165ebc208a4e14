//! Modes `defog` and `defog-exact`: defog-ai/sql-eval `compare_query_results`,
//! `compare_df`, `subset_df` and `normalize_table` (spec §6), on a model of the pandas frames
//! `pd.read_sql_query` builds.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use crate::exec::value::{py_eq, py_isclose, HashKey, Value};
use crate::exec::ResultSet;

use super::{
    blame, usable, CaseInput, Decoding, Failure, FailureKind, Outcome, QueryRunner, Side, Verdict,
};

/// Which of Defog's two flags is the score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flag {
    /// `correct`: exact or subset match (the headline number).
    Correct,
    /// `exact_match`.
    Exact,
}

/// A `{a,b,...}` group with more options than this is refused: it expands to 2^n queries.
const MAX_COLUMN_OPTIONS: usize = 16;

pub(super) fn evaluate(
    case: &CaseInput,
    pred_sql: &str,
    runner: &dyn QueryRunner,
    flag: Flag,
) -> Outcome {
    let full_gold = case.gold.join(";");
    let context = Context {
        category: case.category.unwrap_or(""),
        question: case.question,
        full_gold: &full_gold,
        pred_sql,
    };
    match compare(case, &context, runner) {
        Ok(flags) => {
            let hit = match flag {
                Flag::Correct => flags.correct,
                Flag::Exact => flags.exact,
            };
            let verdict = if hit {
                Verdict::Correct
            } else {
                Verdict::Incorrect
            };
            let outcome = Outcome {
                exact: Some(flags.exact),
                ..Outcome::new(verdict, f64::from(u8::from(hit)))
            };
            if flags.broadcast {
                outcome.with_diagnostic(
                    "defog_broadcast_match",
                    "the exact match comes from numpy broadcasting results of different shapes",
                )
            } else {
                outcome
            }
        }
        Err(failure) => Outcome {
            exact: Some(false),
            ..Outcome::failed(failure, 0.0)
        },
    }
}

struct Context<'a> {
    category: &'a str,
    question: &'a str,
    full_gold: &'a str,
    pred_sql: &'a str,
}

struct Flags {
    exact: bool,
    correct: bool,
    broadcast: bool,
}

/// Spec §6.1: any exception, including a failed sort, makes the whole item an error.
fn compare(
    case: &CaseInput,
    context: &Context,
    runner: &dyn QueryRunner,
) -> Result<Flags, Failure> {
    let db = &case.db_files[0];
    let gen = match usable(
        Side::Pred,
        &runner.pred(db, context.pred_sql),
        Decoding::Strict,
    ) {
        Ok(rs) => Frame::from_result(&rs),
        Err(mut failure) => {
            // The reference stops at a failed prediction; the golds still run to see whose
            // failure it is.
            for query in expand_alternatives(case.gold)? {
                failure = blame(failure, &runner.gold(db, &query), Decoding::Strict);
                if failure.verdict.is_gold_failure() {
                    break;
                }
            }
            return Err(failure);
        }
    };
    let mut correct = false;
    for query in expand_alternatives(case.gold)? {
        let gold = Frame::from_result(&*usable(
            Side::Gold,
            &runner.gold(db, &query),
            Decoding::Strict,
        )?);
        if let Some(broadcast) = exact(&gold, &gen, context)? {
            return Ok(Flags {
                exact: true,
                correct: true,
                broadcast,
            });
        }
        correct |= subset(&gold, &gen, context)?;
    }
    Ok(Flags {
        exact: false,
        correct,
        broadcast: false,
    })
}

/// `get_all_minimal_queries` applied to the already `;`-split gold pieces (spec §1.3).
fn expand_alternatives(pieces: &[String]) -> Result<Vec<String>, Failure> {
    let mut queries = Vec::new();
    for piece in pieces {
        queries.extend(expand_column_set(piece.trim())?);
    }
    Ok(queries)
}

/// `query` with its first `{a,b,...}` column set taken whole: the widest of its expansions, a
/// query any engine can run (the audit's cross-engine check runs it).
pub fn widest_expansion(query: &str) -> String {
    expand_column_set(query)
        .ok()
        .and_then(|mut queries| queries.pop())
        .unwrap_or_else(|| query.to_string())
}

/// Expands the first `{a,b,...}` group into every non-empty combination of its options.
pub(super) fn expand_column_set(query: &str) -> Result<Vec<String>, Failure> {
    if query.is_empty() {
        return Ok(Vec::new());
    }
    let Some(start) = query.find('{') else {
        return Ok(vec![query.to_string()]);
    };
    let Some(end) = query[start + 1..].find('}').map(|e| start + 1 + e) else {
        return Ok(vec![query.to_string()]);
    };
    let options: Vec<&str> = query[start + 1..end].split(',').collect();
    if options.len() > MAX_COLUMN_OPTIONS {
        let message = format!(
            "a column set with {} options would expand to 2^{} queries (at most {MAX_COLUMN_OPTIONS} supported)",
            options.len(),
            options.len()
        );
        return Err(Failure::of(Side::Gold, FailureKind::Error, message));
    }
    let (left, right) = (&query[..start], &query[end + 1..]);
    let mut queries = Vec::new();
    for size in 1..=options.len() {
        for combination in combinations(options.len(), size) {
            let columns: Vec<&str> = combination.iter().map(|&i| options[i]).collect();
            let columns = columns.join(", ");
            // The reference tests `right.find("GROUP BY {}")` for truth: a match at 0 is falsy.
            let right = if right.find("GROUP BY {}") == Some(0) {
                right.to_string()
            } else {
                right.replace("GROUP BY {}", &format!("GROUP BY {columns}"))
            };
            queries.push(format!("{left}{columns}{right}"));
        }
    }
    Ok(queries)
}

/// `itertools.combinations(range(n), size)`, in lexicographic order.
fn combinations(n: usize, size: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut current: Vec<usize> = (0..size).collect();
    loop {
        out.push(current.clone());
        let Some(i) = (0..size).rev().find(|&i| current[i] != i + n - size) else {
            return out;
        };
        current[i] += 1;
        for k in i + 1..size {
            current[k] = current[k - 1] + 1;
        }
    }
}

/// numpy dtype of a column as `pd.read_sql_query` infers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dtype {
    Int,
    /// NULLs are NaN (`Value::Real(NaN)`), integers are floats.
    Float,
    /// Python objects; NULLs are `None` (`Value::Null`).
    Object,
}

#[derive(Debug, Clone)]
struct Column {
    name: String,
    dtype: Dtype,
    values: Vec<Value>,
}

#[derive(Debug, Clone)]
struct Frame {
    columns: Vec<Column>,
    rows: usize,
}

fn is_na(v: &Value) -> bool {
    matches!(v, Value::Null) || matches!(v, Value::Real(f) if f.is_nan())
}

/// Hash key under which pandas' factorisation treats all missing values alike.
fn na_key(v: &Value) -> HashKey<'_> {
    if is_na(v) {
        HashKey::Null
    } else {
        v.hash_key()
    }
}

impl Column {
    fn from_values(name: &str, values: Vec<Value>) -> Column {
        let all_int = !values.is_empty() && values.iter().all(|v| matches!(v, Value::Int(_)));
        let numeric_or_null = values.iter().all(|v| v.is_numeric() || is_na(v));
        let any_number = values.iter().any(Value::is_numeric);
        let (dtype, values) = if all_int {
            (Dtype::Int, values)
        } else if numeric_or_null && any_number {
            let floats = values
                .iter()
                .map(|v| Value::Real(v.as_f64().unwrap_or(f64::NAN)))
                .collect();
            (Dtype::Float, floats)
        } else {
            (Dtype::Object, values)
        };
        Column {
            name: name.to_string(),
            dtype,
            values,
        }
    }
}

impl Frame {
    fn from_result(rs: &ResultSet) -> Frame {
        let columns = rs
            .columns
            .iter()
            .enumerate()
            .map(|(j, name)| {
                let values = rs
                    .rows
                    .iter()
                    .map(|r| r.get(j).cloned().unwrap_or(Value::Null))
                    .collect();
                Column::from_values(name, values)
            })
            .collect();
        Frame {
            columns,
            rows: rs.rows.len(),
        }
    }

    fn shape(&self) -> (usize, usize) {
        (self.rows, self.columns.len())
    }

    /// The cells of `frame.values`: numpy's common dtype makes ints floats when every column
    /// is numeric and one is float. Also says whether that array is numeric.
    fn values(&self) -> (Vec<Vec<Value>>, bool) {
        let numeric = self.columns.iter().all(|c| c.dtype != Dtype::Object);
        let promote = numeric && self.columns.iter().any(|c| c.dtype == Dtype::Float);
        let columns = self
            .columns
            .iter()
            .map(|c| {
                c.values
                    .iter()
                    .map(|v| match v {
                        Value::Int(i) if promote => Value::Real(*i as f64),
                        other => other.clone(),
                    })
                    .collect()
            })
            .collect();
        (columns, numeric)
    }

    fn select_rows(&self, rows: &[usize]) -> Frame {
        let columns = self
            .columns
            .iter()
            .map(|c| Column {
                values: rows.iter().map(|&r| c.values[r].clone()).collect(),
                ..c.clone()
            })
            .collect();
        Frame {
            columns,
            rows: rows.len(),
        }
    }

    fn select_columns(&self, columns: &[usize]) -> Frame {
        Frame {
            columns: columns.iter().map(|&j| self.columns[j].clone()).collect(),
            rows: self.rows,
        }
    }

    /// `drop_duplicates()`: keeps each row's first occurrence; missing values are equal.
    fn drop_duplicates(&self) -> Frame {
        let mut seen = HashSet::new();
        let keep: Vec<usize> = (0..self.rows)
            .filter(|&r| {
                seen.insert(
                    self.columns
                        .iter()
                        .map(|c| na_key(&c.values[r]))
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        self.select_rows(&keep)
    }

    /// `sort_values(by=keys, ascending)`: stable, missing values last in both directions.
    fn sort_rows(&self, keys: &[usize], ascending: bool) -> Result<Frame, String> {
        for &k in keys {
            check_sortable(&self.columns[k].values)?;
        }
        let mut order: Vec<usize> = (0..self.rows).collect();
        order.sort_by(|&a, &b| {
            keys.iter()
                .map(|&k| {
                    let values = &self.columns[k].values;
                    compare_na_last(&values[a], &values[b], ascending)
                })
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        });
        Ok(self.select_rows(&order))
    }

    /// `fillna(-99999)`.
    fn fill_na(&self) -> Frame {
        let mut frame = self.clone();
        for column in &mut frame.columns {
            let filler = match column.dtype {
                Dtype::Object => Value::Int(-99999),
                _ => Value::Real(-99999.0),
            };
            for v in column.values.iter_mut().filter(|v| is_na(v)) {
                *v = filler.clone();
            }
        }
        frame
    }
}

/// Python's `<` raises TypeError between numbers, strings and bytes.
fn check_sortable(values: &[Value]) -> Result<(), String> {
    let mut first: Option<&'static str> = None;
    for v in values.iter().filter(|v| !is_na(v)) {
        let class = match v {
            Value::Text(_) => "str",
            Value::Blob(_) => "bytes",
            _ => "int",
        };
        match first {
            None => first = Some(class),
            Some(f) if f != class => {
                return Err(format!(
                    "TypeError: '<' not supported between instances of '{class}' and '{f}'"
                ))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn compare_na_last(a: &Value, b: &Value, ascending: bool) -> Ordering {
    match (is_na(a), is_na(b)) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) if ascending => compare_values(a, b),
        (false, false) => compare_values(b, a),
    }
}

/// Python ordering of two comparable, non-missing values.
fn compare_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Real(x), Value::Real(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (Value::Int(x), Value::Real(y)) => compare_int_float(*x, *y),
        (Value::Real(x), Value::Int(y)) => compare_int_float(*y, *x).reverse(),
        (Value::Text(x), Value::Text(y)) => x.cmp(y),
        (Value::Blob(x), Value::Blob(y)) => x.cmp(y),
        _ => Ordering::Equal,
    }
}

/// Exact comparison of an integer with a float, as Python does it.
fn compare_int_float(i: i64, f: f64) -> Ordering {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if f >= LIMIT {
        return Ordering::Less;
    }
    if f < -LIMIT {
        return Ordering::Greater;
    }
    let whole = f.trunc() as i128;
    (i as i128)
        .cmp(&whole)
        .then_with(|| 0.0.partial_cmp(&f.fract()).unwrap_or(Ordering::Equal))
}

/// `normalize_table(frame, category, question, sql)` (spec §6.2).
fn normalize(frame: &Frame, context: &Context, sql: Option<&str>) -> Result<Frame, String> {
    static ORDER_WORDS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)\b(order|sort|arrange)\b").expect("valid pattern"));
    let deduplicated = frame.drop_duplicates();
    let mut by_name: Vec<usize> = (0..deduplicated.columns.len()).collect();
    by_name.sort_by(|&a, &b| {
        deduplicated.columns[a]
            .name
            .cmp(&deduplicated.columns[b].name)
    });
    let sorted = deduplicated.select_columns(&by_name);

    let has_order_by =
        context.category == "order_by" || ORDER_WORDS.is_match(&context.question.to_lowercase());
    if !has_order_by {
        let all: Vec<usize> = (0..sorted.columns.len()).collect();
        return sorted.sort_rows(&all, true);
    }
    let Some((key_names, ascending)) = sql.and_then(order_by_key) else {
        return Ok(sorted);
    };
    let named = |j: &usize| key_names.iter().any(|k| *k == sorted.columns[*j].name);
    let others: Vec<usize> = (0..sorted.columns.len()).filter(|j| !named(j)).collect();
    // Duplicate column names are handled by position (pandas would need them unique).
    let keys: Vec<usize> = key_names
        .iter()
        .flat_map(|k| {
            let columns = &sorted.columns;
            (0..columns.len()).filter(move |&j| columns[j].name == *k)
        })
        .collect();
    let by: Vec<usize> = keys.iter().chain(&others).copied().collect();
    let rows_sorted = sorted.sort_rows(&by, ascending)?;
    let reordered: Vec<usize> = others.iter().chain(&keys).copied().collect();
    Ok(rows_sorted.select_columns(&reordered))
}

/// The key columns and direction `normalize_table` reads from an SQL text (spec §6.2 step 4),
/// or `None` when the text has no `ORDER BY`.
fn order_by_key(sql: &str) -> Option<(Vec<String>, bool)> {
    let start = find_ignore_ascii_case(sql, "ORDER BY", 0)?;
    let clause = &sql[start..];
    let tokens: Vec<&str> = first_key_capture(clause)
        .map(|c| {
            c.split_whitespace()
                .map(|t| t.rsplit('.').next().unwrap_or(t))
                .collect()
        })
        .unwrap_or_default();
    let has = |word: &str| tokens.iter().any(|t| t.to_uppercase() == word);
    let ascending = !has("DESC") && has("ASC");
    let dropped = ["desc", "asc", "nulls", "last", "first", "limit"];
    let keys = tokens
        .iter()
        .map(|t| t.trim().replace([',', '('], ""))
        .filter(|t| !dropped.contains(&t.to_lowercase().as_str()))
        .collect();
    Some((keys, ascending))
}

/// First match of `(?<=ORDER BY)(.*?)(?=;|,|\)|$)` (IGNORECASE): lazy, stops before `;`, `,`,
/// `)`, the end or a final newline, and cannot cross another newline.
fn first_key_capture(clause: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(at) = find_ignore_ascii_case(clause, "ORDER BY", from) {
        if let Some(capture) = capture_after(&clause[at + "ORDER BY".len()..]) {
            return Some(capture);
        }
        from = at + 1;
    }
    None
}

fn capture_after(rest: &str) -> Option<&str> {
    for (i, c) in rest.char_indices() {
        match c {
            ';' | ',' | ')' => return Some(&rest[..i]),
            '\n' if i + 1 == rest.len() => return Some(&rest[..i]),
            '\n' => return None,
            _ => {}
        }
    }
    Some(rest)
}

fn find_ignore_ascii_case(haystack: &str, needle: &str, from: usize) -> Option<usize> {
    let (hay, pat) = (haystack.as_bytes(), needle.as_bytes());
    (from..=hay.len().checked_sub(pat.len())?)
        .find(|&i| hay[i..i + pat.len()].eq_ignore_ascii_case(pat))
}

/// numpy `==` of two cells of `.values` arrays: numeric arrays compare as numbers (ints
/// as floats beside a float), object arrays with Python `==` (None equals None).
fn numpy_eq(a: &Value, b: &Value, numeric: bool) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        _ if numeric => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        },
        _ => py_eq(a, b),
    }
}

/// `(Gold.values == Gen.values).all()` with numpy broadcasting; `None` when it raises or is
/// not all true, else whether the shapes differed (a broadcast match).
fn broadcast_equal(gold: &Frame, gen: &Frame) -> Option<bool> {
    let ((gr, gk), (pr, pk)) = (gold.shape(), gen.shape());
    let dim = |x: usize, y: usize| match (x, y) {
        _ if x == y => Some(x),
        (1, _) => Some(y),
        (_, 1) => Some(x),
        _ => None,
    };
    let (rows, cols) = (dim(gr, pr)?, dim(gk, pk)?);
    let (gold_values, gold_numeric) = gold.values();
    let (gen_values, gen_numeric) = gen.values();
    let numeric = gold_numeric && gen_numeric;
    let pick = |len: usize, i: usize| if len == 1 { 0 } else { i };
    let all_equal = (0..rows).all(|r| {
        (0..cols).all(|c| {
            let g = &gold_values[pick(gk, c)][pick(gr, r)];
            let p = &gen_values[pick(pk, c)][pick(pr, r)];
            numpy_eq(g, p, numeric)
        })
    });
    all_equal.then_some((gr, gk) != (pr, pk))
}

/// `compare_df` (spec §6.3): `Some(broadcast)` when exactly equal.
fn exact(gold: &Frame, gen: &Frame, context: &Context) -> Result<Option<bool>, Failure> {
    if let Some(broadcast) = broadcast_equal(gold, gen) {
        return Ok(Some(broadcast));
    }
    let gold =
        normalize(gold, context, Some(context.full_gold)).map_err(sort_failure(Side::Gold))?;
    let gen = normalize(gen, context, Some(context.pred_sql)).map_err(sort_failure(Side::Pred))?;
    if gold.shape() != gen.shape() {
        return Ok(None);
    }
    Ok(broadcast_equal(&gold.fill_na(), &gen.fill_na()).map(|_| false))
}

fn sort_failure(side: Side) -> impl Fn(String) -> Failure {
    move |message| Failure::of(side, FailureKind::Error, message)
}

/// `subset_df` (spec §6.4): the "correct" flag.
fn subset(gold: &Frame, gen: &Frame, context: &Context) -> Result<bool, Failure> {
    if gold.rows == 0 || gold.columns.is_empty() {
        return Ok(false);
    }
    let mut used = vec![false; gen.columns.len()];
    let mut sorted_gen: Vec<Option<Column>> = vec![None; gen.columns.len()];
    let mut matched = Vec::new();
    for gold_column in &gold.columns {
        let Some(j) = matching_column(gold_column, gen, &used, &mut sorted_gen)? else {
            return Ok(false);
        };
        used[j] = true;
        matched.push(Column {
            name: gold_column.name.clone(),
            ..gen.columns[j].clone()
        });
    }
    let gold = normalize(gold, context, None).map_err(sort_failure(Side::Gold))?;
    let matched = Frame {
        columns: matched,
        rows: gen.rows,
    };
    let gen = normalize(&matched, context, None).map_err(sort_failure(Side::Pred))?;
    Ok(frames_equal(&gold, &gen))
}

/// The first unused prediction column equal to `gold_column` once both are sorted.
fn matching_column(
    gold_column: &Column,
    gen: &Frame,
    used: &[bool],
    sorted_gen: &mut [Option<Column>],
) -> Result<Option<usize>, Failure> {
    if used.iter().all(|&u| u) {
        return Ok(None);
    }
    let gold_sorted = sorted_series(gold_column).map_err(sort_failure(Side::Gold))?;
    for j in (0..gen.columns.len()).filter(|&j| !used[j]) {
        if sorted_gen[j].is_none() {
            sorted_gen[j] = Some(sorted_series(&gen.columns[j]).map_err(sort_failure(Side::Pred))?);
        }
        if sorted_gen[j]
            .as_ref()
            .is_some_and(|g| series_equal(&gold_sorted, g))
        {
            return Ok(Some(j));
        }
    }
    Ok(None)
}

/// `series.sort_values().reset_index(drop=True)`.
fn sorted_series(column: &Column) -> Result<Column, String> {
    let frame = Frame {
        columns: vec![column.clone()],
        rows: column.values.len(),
    };
    let sorted = frame.sort_rows(&[0], true)?;
    Ok(sorted
        .columns
        .into_iter()
        .next()
        .unwrap_or_else(|| column.clone()))
}

/// `assert_frame_equal(check_dtype=False)`: shape, column names, then every column.
fn frames_equal(a: &Frame, b: &Frame) -> bool {
    a.shape() == b.shape()
        && a.columns
            .iter()
            .zip(&b.columns)
            .all(|(x, y)| x.name == y.name && series_equal(x, y))
}

/// `assert_series_equal(check_dtype=False, check_names=False)`: exact when either side is an
/// integer column, else `rtol = 1e-5`, `atol = 1e-8`.
fn series_equal(a: &Column, b: &Column) -> bool {
    if a.values.len() != b.values.len() {
        return false;
    }
    let pairs = || a.values.iter().zip(&b.values);
    if a.dtype == Dtype::Int || b.dtype == Dtype::Int {
        let numeric = a.dtype != Dtype::Object && b.dtype != Dtype::Object;
        pairs().all(|(x, y)| exactly_equal(x, y, numeric))
    } else {
        pairs().all(|(x, y)| almost_equal(x, y))
    }
}

/// `array_equivalent(strict_nan=True)` element rule.
fn exactly_equal(a: &Value, b: &Value, numeric: bool) -> bool {
    let nan = |v: &Value| matches!(v, Value::Real(f) if f.is_nan());
    match (a, b) {
        _ if nan(a) || nan(b) => nan(a) && nan(b),
        (Value::Null, Value::Null) => true,
        _ => numpy_eq(a, b, numeric),
    }
}

/// pandas `_testing.assert_almost_equal` element rule.
fn almost_equal(a: &Value, b: &Value) -> bool {
    if matches!(a, Value::Text(_)) || matches!(b, Value::Text(_)) {
        return py_eq(a, b);
    }
    match (is_na(a), is_na(b)) {
        (true, true) => return true,
        (true, false) | (false, true) => return false,
        _ => {}
    }
    if py_eq(a, b) {
        return true;
    }
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => py_isclose(x, y, 1e-5, 1e-8),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_sets_expand_like_the_spec_example() {
        let expanded = expand_column_set("SELECT {u.id,u.name} FROM u GROUP BY {}").unwrap();
        assert_eq!(
            expanded,
            [
                "SELECT u.id FROM u GROUP BY u.id",
                "SELECT u.name FROM u GROUP BY u.name",
                "SELECT u.id, u.name FROM u GROUP BY u.id, u.name",
            ]
        );
    }

    #[test]
    fn column_set_quirks() {
        // Options are not trimmed; only the first group expands.
        assert_eq!(
            expand_column_set("SELECT {a, b} FROM t").unwrap(),
            ["SELECT a FROM t", "SELECT  b FROM t", "SELECT a,  b FROM t"]
        );
        assert_eq!(
            expand_column_set("SELECT {a} FROM {t}").unwrap(),
            ["SELECT a FROM {t}"]
        );
        // `right.find("GROUP BY {}")` at index 0 is falsy in Python: no replacement.
        assert_eq!(
            expand_column_set("SELECT {a}GROUP BY {}").unwrap(),
            ["SELECT aGROUP BY {}"]
        );
        assert_eq!(
            expand_column_set("SELECT '}' {x").unwrap(),
            ["SELECT '}' {x"]
        );
        assert!(expand_column_set("").unwrap().is_empty());
        let many = format!("SELECT {{{}}} FROM t", vec!["c"; 17].join(","));
        assert!(expand_column_set(&many).is_err());
        assert_eq!(combinations(4, 2).len(), 6);
        assert_eq!(combinations(3, 3), [[0, 1, 2]]);
    }

    #[test]
    fn order_by_key_extraction() {
        assert_eq!(order_by_key("SELECT a FROM t"), None);
        assert_eq!(
            order_by_key("SELECT a FROM t ORDER BY t.a"),
            Some((vec!["a".into()], false))
        );
        assert_eq!(
            order_by_key("... order by a ASC"),
            Some((vec!["a".into()], true))
        );
        assert_eq!(
            order_by_key("... ORDER BY a ASC, b DESC"),
            Some((vec!["a".into()], true))
        );
        assert_eq!(
            order_by_key("... ORDER BY a DESC NULLS LAST LIMIT 5;"),
            Some((vec!["a".into(), "5".into()], false))
        );
        // The key stops at `)`; `(` is stripped, leaving a name that matches no column.
        assert_eq!(
            order_by_key("... ORDER BY COUNT(*) DESC"),
            Some((vec!["COUNT*".into()], false))
        );
        // The capture cannot cross a newline, but may stop before a final one.
        assert_eq!(order_by_key("ORDER BY a\nLIMIT 1"), Some((vec![], false)));
        assert_eq!(
            order_by_key("ORDER BY a\n"),
            Some((vec!["a".into()], false))
        );
        assert_eq!(
            order_by_key("ORDER BY a\n ORDER BY b"),
            Some((vec!["b".into()], false))
        );
        assert_eq!(order_by_key("ORDER  BY a"), None);
    }

    #[test]
    fn python_int_float_ordering() {
        assert_eq!(compare_int_float(1, 1.5), Ordering::Less);
        assert_eq!(compare_int_float(2, 1.5), Ordering::Greater);
        assert_eq!(compare_int_float(-1, -1.5), Ordering::Greater);
        assert_eq!(compare_int_float(3, 3.0), Ordering::Equal);
        assert_eq!(
            compare_int_float(9_007_199_254_740_993, 9_007_199_254_740_992.0),
            Ordering::Greater
        );
        assert_eq!(compare_int_float(i64::MAX, 1e300), Ordering::Less);
    }

    #[test]
    fn read_sql_query_dtypes() {
        let col = |values: Vec<Value>| Column::from_values("c", values).dtype;
        assert_eq!(col(vec![Value::Int(1), Value::Int(2)]), Dtype::Int);
        assert_eq!(col(vec![Value::Int(1), Value::Null]), Dtype::Float);
        assert_eq!(col(vec![Value::Int(1), Value::Real(0.5)]), Dtype::Float);
        assert_eq!(col(vec![Value::Null, Value::Null]), Dtype::Object);
        assert_eq!(
            col(vec![Value::Int(1), Value::Text("a".into())]),
            Dtype::Object
        );
        assert_eq!(col(vec![]), Dtype::Object);
    }
}
