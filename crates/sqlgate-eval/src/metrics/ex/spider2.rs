//! Mode `spider2`: Spider 2.0-Lite `evaluate.py` `compare_pandas_table` (spec §5), with both
//! results passed through the CSV round trip and pandas type inference of §5.3.

use crate::exec::value::{py_bytes_repr, py_float_repr, py_isclose, Value};
use crate::exec::ResultSet;

use super::{
    any_alternative, blame, usable, CaseInput, Decoding, Outcome, QueryRunner, Side, Verdict,
};

pub(super) fn evaluate(case: &CaseInput, pred_sql: &str, runner: &dyn QueryRunner) -> Outcome {
    let db = &case.db_files[0];
    let ignore_order = case.ignore_order.unwrap_or(true);
    let pred = usable(Side::Pred, &runner.pred(db, pred_sql), Decoding::Strict)
        .map(|rs| comparable_vectors(&csv_table(&rs), ignore_order));
    any_alternative(case.gold, |gold| {
        let pred = match &pred {
            Ok(pred) => pred,
            Err(failure) => {
                let blamed = blame(failure.clone(), &runner.gold(db, gold), Decoding::Strict);
                return Outcome::failed(blamed, 0.0);
            }
        };
        let gold = match usable(Side::Gold, &runner.gold(db, gold), Decoding::Strict) {
            Ok(rs) => comparable_vectors(&csv_table(&rs), ignore_order),
            Err(failure) => return Outcome::failed(failure, 0.0),
        };
        // Spec §5.2 without `condition_cols`: every gold column equals some pred column.
        if gold
            .iter()
            .all(|g| pred.iter().any(|p| vectors_match(g, p)))
        {
            Outcome::new(Verdict::Correct, 1.0)
        } else {
            Outcome::new(Verdict::Incorrect, 0.0)
        }
    })
}

/// A value as pandas gives it back after `to_csv` / `read_csv` and `.values.tolist()`.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    NaN,
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dtype {
    Int,
    Float,
    Bool,
    Object,
}

#[derive(Debug, Clone)]
struct Column {
    dtype: Dtype,
    cells: Vec<Cell>,
}

/// Fields pandas reads as NaN by default (§5.3 step 1).
const NA_FIELDS: [&str; 19] = [
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
];

/// The text pandas writes for a value (§5.3 "Writing").
fn csv_field(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Int(i) => i.to_string(),
        Value::Real(f) => py_float_repr(*f),
        Value::Text(s) => s.clone(),
        Value::Blob(b) => py_bytes_repr(b),
    }
}

/// The columns of a result after the CSV round trip.
fn csv_table(rs: &ResultSet) -> Vec<Column> {
    (0..rs.columns.len())
        .map(|j| {
            let fields: Vec<String> = rs
                .rows
                .iter()
                .map(|r| r.get(j).map(csv_field).unwrap_or_default())
                .collect();
            read_column(&fields)
        })
        .collect()
}

/// pandas `read_csv` type inference for one column (§5.3 "Reading").
fn read_column(fields: &[String]) -> Column {
    let is_na = |f: &str| NA_FIELDS.contains(&f);
    let present: Vec<&str> = fields
        .iter()
        .map(String::as_str)
        .filter(|f| !is_na(f))
        .collect();
    let has_na = present.len() < fields.len();
    let convert = |dtype: Dtype, parse: &dyn Fn(&str) -> Cell| Column {
        dtype,
        cells: fields
            .iter()
            .map(|f| if is_na(f) { Cell::NaN } else { parse(f) })
            .collect(),
    };
    if present.iter().all(|f| parse_int(f).is_some()) {
        if has_na {
            // An integer column with missing values becomes float64.
            convert(Dtype::Float, &|f| {
                Cell::Float(parse_int(f).unwrap_or(0) as f64)
            })
        } else {
            convert(Dtype::Int, &|f| Cell::Int(parse_int(f).unwrap_or(0)))
        }
    } else if present.iter().all(|f| parse_float(f).is_some()) {
        convert(Dtype::Float, &|f| {
            Cell::Float(parse_float(f).unwrap_or(f64::NAN))
        })
    } else if present.iter().all(|f| parse_bool(f).is_some()) {
        let dtype = if has_na { Dtype::Object } else { Dtype::Bool };
        convert(dtype, &|f| Cell::Bool(parse_bool(f).unwrap_or(false)))
    } else {
        convert(Dtype::Object, &|f| Cell::Str(f.to_string()))
    }
}

/// pandas' C parser skips surrounding ASCII spaces around numbers.
fn numeric_text(field: &str) -> &str {
    field.trim_matches(|c: char| c.is_ascii_whitespace())
}

fn parse_int(field: &str) -> Option<i64> {
    let text = numeric_text(field);
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.strip_prefix('+').unwrap_or(text).parse().ok()
}

fn parse_float(field: &str) -> Option<f64> {
    let text = numeric_text(field);
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let special = ["inf", "infinity"]
        .iter()
        .any(|s| unsigned.eq_ignore_ascii_case(s));
    let decimal = !unsigned.is_empty()
        && unsigned
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    if special || decimal {
        text.parse().ok()
    } else {
        None
    }
}

fn parse_bool(field: &str) -> Option<bool> {
    match field {
        "True" | "TRUE" | "true" => Some(true),
        "False" | "FALSE" | "false" => Some(false),
        _ => None,
    }
}

/// `frame.transpose().values.tolist()`: numpy's common dtype turns ints into floats when
/// every column is numeric and one is float; otherwise values keep their own type.
fn column_vectors(table: &[Column]) -> Vec<Vec<Cell>> {
    let numeric = table
        .iter()
        .all(|c| matches!(c.dtype, Dtype::Int | Dtype::Float));
    let promote = numeric && table.iter().any(|c| c.dtype == Dtype::Float);
    table
        .iter()
        .map(|c| {
            c.cells
                .iter()
                .map(|cell| match cell {
                    Cell::Int(i) if promote => Cell::Float(*i as f64),
                    other => other.clone(),
                })
                .collect()
        })
        .collect()
}

/// The column vectors `compare_pandas_table` compares, each sorted on its own when order
/// is ignored (sorting once per vector gives the same result as once per pair).
fn comparable_vectors(table: &[Column], ignore_order: bool) -> Vec<Vec<Cell>> {
    let mut vectors = column_vectors(table);
    if ignore_order {
        vectors.iter_mut().for_each(sort_vector);
    }
    vectors
}

/// Python `str()` of a cell.
fn cell_str(cell: &Cell) -> String {
    match cell {
        Cell::NaN => "nan".to_string(),
        Cell::Int(i) => i.to_string(),
        Cell::Float(f) => py_float_repr(*f),
        Cell::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        Cell::Str(s) => s.clone(),
    }
}

fn as_number(cell: &Cell) -> Option<f64> {
    match cell {
        Cell::NaN => Some(f64::NAN),
        Cell::Int(i) => Some(*i as f64),
        Cell::Float(f) => Some(*f),
        Cell::Bool(b) => Some(f64::from(u8::from(*b))),
        Cell::Str(_) => None,
    }
}

/// `sorted(v, key=lambda x: (x is None, str(x), isinstance(x, (int, float))))`; never None.
fn sort_vector(vector: &mut Vec<Cell>) {
    let mut keyed: Vec<(String, bool, Cell)> = vector
        .drain(..)
        .map(|c| (cell_str(&c), as_number(&c).is_some(), c))
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    vector.extend(keyed.into_iter().map(|(_, _, c)| c));
}

fn vectors_match(a: &[Cell], b: &[Cell]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| cells_match(x, y))
}

fn cells_match(a: &Cell, b: &Cell) -> bool {
    if *a == Cell::NaN && *b == Cell::NaN {
        return true;
    }
    match (as_number(a), as_number(b)) {
        (Some(x), Some(y)) => py_isclose(x, y, 1e-9, 1e-2),
        _ => matches!((a, b), (Cell::Str(x), Cell::Str(y)) if x == y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(values: &[&str]) -> Vec<String> {
        values.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn read_csv_inference() {
        let ints = read_column(&fields(&["1", "-2", "007"]));
        assert_eq!(ints.dtype, Dtype::Int);
        assert_eq!(ints.cells[2], Cell::Int(7));
        let with_na = read_column(&fields(&["1", "", "NA"]));
        assert_eq!(with_na.dtype, Dtype::Float);
        assert_eq!(with_na.cells[0], Cell::Float(1.0));
        assert_eq!(with_na.cells[1], Cell::NaN);
        let floats = read_column(&fields(&["1", "0.5", "1e-05", "inf"]));
        assert_eq!(floats.dtype, Dtype::Float);
        let bools = read_column(&fields(&["True", "false"]));
        assert_eq!(bools.dtype, Dtype::Bool);
        let bools_na = read_column(&fields(&["TRUE", "None"]));
        assert_eq!(bools_na.dtype, Dtype::Object);
        let text = read_column(&fields(&["1", "a", "null"]));
        assert_eq!(text.dtype, Dtype::Object);
        assert_eq!(text.cells[0], Cell::Str("1".into()));
        assert_eq!(text.cells[2], Cell::NaN);
        assert_eq!(read_column(&fields(&["", ""])).dtype, Dtype::Float);
        assert_eq!(read_column(&fields(&["nan", "1e5x"])).dtype, Dtype::Object);
    }

    #[test]
    fn tolerance_and_types() {
        assert!(cells_match(&Cell::Float(0.333), &Cell::Float(0.334)));
        assert!(!cells_match(&Cell::Float(0.333), &Cell::Float(0.345)));
        assert!(cells_match(&Cell::Bool(true), &Cell::Int(1)));
        assert!(!cells_match(&Cell::NaN, &Cell::Int(0)));
        assert!(!cells_match(&Cell::NaN, &Cell::Str("x".into())));
        assert!(!cells_match(&Cell::Str("1".into()), &Cell::Int(1)));
        assert!(py_isclose(f64::INFINITY, f64::INFINITY, 1e-9, 1e-2));
    }

    #[test]
    fn interleaving_turns_ints_into_floats_for_sorting() {
        // Beside a float column, an int column is read back as floats: 10^16 prints "1e+16".
        let table = vec![
            Column {
                dtype: Dtype::Int,
                cells: vec![Cell::Int(10_000_000_000_000_000), Cell::Int(2)],
            },
            Column {
                dtype: Dtype::Float,
                cells: vec![Cell::Float(0.5), Cell::Float(1.5)],
            },
        ];
        let vectors = column_vectors(&table);
        assert_eq!(cell_str(&vectors[0][0]), "1e+16");
        let mut v = vectors[0].clone();
        sort_vector(&mut v);
        assert_eq!(v[0], Cell::Float(1e16));
    }
}
