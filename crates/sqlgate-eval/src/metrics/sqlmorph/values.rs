//! SQLite's `ORDER BY` collation, for the deterministic tie-breaks of row matching. Python
//! equality, hash keys and `str()` come from `crate::exec::value`.

use std::cmp::Ordering;

use crate::exec::Value;

/// SQLite `ORDER BY` collation: NULL < numbers (by exact value) < text (binary) < blob.
pub(super) fn sqlite_cmp(a: &Value, b: &Value) -> Ordering {
    fn class(v: &Value) -> u8 {
        match v {
            Value::Null => 0,
            Value::Int(_) | Value::Real(_) => 1,
            Value::Text(_) => 2,
            Value::Blob(_) => 3,
        }
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Real(x), Value::Real(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (Value::Int(x), Value::Real(y)) => cmp_int_real(*x, *y),
        (Value::Real(x), Value::Int(y)) => cmp_int_real(*y, *x).reverse(),
        (Value::Text(x), Value::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Blob(x), Value::Blob(y)) => x.cmp(y),
        _ => class(a).cmp(&class(b)),
    }
}

/// Exact comparison of an integer with a float (no rounding of the integer to f64).
fn cmp_int_real(i: i64, f: f64) -> Ordering {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() {
        return Ordering::Equal;
    }
    if f >= TWO_POW_63 {
        return Ordering::Less;
    }
    if f < -TWO_POW_63 {
        return Ordering::Greater;
    }
    // |f| < 2^63, so its integral part converts exactly.
    match i.cmp(&(f.trunc() as i64)) {
        Ordering::Equal => 0.0_f64.partial_cmp(&f.fract()).unwrap_or(Ordering::Equal),
        other => other,
    }
}

/// Lexicographic SQLite order of two value sequences.
pub(super) fn sqlite_cmp_rows<'a>(
    a: impl Iterator<Item = &'a Value>,
    b: impl Iterator<Item = &'a Value>,
) -> Ordering {
    let mut b = b;
    for x in a {
        match b.next() {
            None => return Ordering::Greater,
            Some(y) => match sqlite_cmp(x, y) {
                Ordering::Equal => {}
                other => return other,
            },
        }
    }
    if b.next().is_some() {
        Ordering::Less
    } else {
        Ordering::Equal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_order_of_kinds_and_numbers() {
        let t = |s: &str| Value::Text(s.into());
        assert_eq!(sqlite_cmp(&Value::Null, &Value::Int(-5)), Ordering::Less);
        assert_eq!(sqlite_cmp(&Value::Int(99), &t("")), Ordering::Less);
        assert_eq!(sqlite_cmp(&t("z"), &Value::Blob(vec![])), Ordering::Less);
        assert_eq!(
            sqlite_cmp(&Value::Int(2), &Value::Real(1.5)),
            Ordering::Greater
        );
        assert_eq!(
            sqlite_cmp(&Value::Int(-2), &Value::Real(-1.5)),
            Ordering::Less
        );
        assert_eq!(
            sqlite_cmp(&Value::Int(1), &Value::Real(1.0)),
            Ordering::Equal
        );
        assert_eq!(sqlite_cmp(&t("B"), &t("a")), Ordering::Less);
        assert_eq!(
            sqlite_cmp(&Value::Int(i64::MAX), &Value::Real(9.3e18)),
            Ordering::Less
        );
    }
}
