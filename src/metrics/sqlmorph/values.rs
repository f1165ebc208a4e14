//! Python-like value semantics the metrics need (spec `evaluators.md` §0.1).
//!
//! Private stand-ins: `crate::exec::value` does not have `py_eq`, a hash key or `py_str` on this
//! branch yet. Once it does, these helpers should be replaced by it.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt::Write as _;

use crate::exec::Value;

/// A hashable key that is equal for two values exactly when Python says `a == b`: `1 == 1.0`,
/// `-0.0 == 0`, `None == None`, and kinds never mix otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Key<'a> {
    Null,
    Int(i64),
    Real(u64),
    Text(&'a str),
    Blob(&'a [u8]),
}

pub(super) fn key(value: &Value) -> Key<'_> {
    match value {
        Value::Null => Key::Null,
        Value::Int(i) => Key::Int(*i),
        Value::Real(f) => match integral(*f) {
            Some(i) => Key::Int(i),
            None => Key::Real(f.to_bits()),
        },
        Value::Text(s) => Key::Text(s),
        Value::Blob(b) => Key::Blob(b),
    }
}

/// `f` as an `i64` when it is integral and in range (so the conversion is exact).
fn integral(f: f64) -> Option<i64> {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    (f.fract() == 0.0 && (-TWO_POW_63..TWO_POW_63).contains(&f)).then_some(f as i64)
}

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

/// Python `str(v)` of the value `sqlite3` returns.
pub(super) fn py_str(value: &Value) -> Cow<'_, str> {
    match value {
        Value::Null => Cow::Borrowed("None"),
        Value::Int(i) => Cow::Owned(i.to_string()),
        Value::Real(f) => Cow::Owned(py_float_repr(*f)),
        Value::Text(s) => Cow::Borrowed(s),
        Value::Blob(b) => Cow::Owned(py_bytes_repr(b)),
    }
}

/// Python `repr(float)`: shortest round-trip digits; positional when the decimal exponent is in
/// `-4..16`, else `d.ddde±XX`.
pub(super) fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    // `{:e}` yields the shortest round-trip digits, e.g. "-1.25e-7" or "0e0".
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = sign.to_string();
    if (-4..16).contains(&exponent) {
        if exponent < 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat((-exponent - 1) as usize));
            out.push_str(&digits);
        } else {
            let int_len = exponent as usize + 1;
            let padded = format!("{digits:0<int_len$}");
            let (int_part, frac_part) = padded.split_at(int_len);
            out.push_str(int_part);
            out.push('.');
            out.push_str(if frac_part.is_empty() { "0" } else { frac_part });
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(out, "e{exp_sign}{:02}", exponent.unsigned_abs());
    }
    out
}

/// Python `repr(bytes)`, e.g. `b'ab\x00'`.
fn py_bytes_repr(bytes: &[u8]) -> String {
    // Python quotes with `"` only when the bytes contain `'` and no `"`.
    let quote = if bytes.contains(&b'\'') && !bytes.contains(&b'"') {
        b'"'
    } else {
        b'\''
    };
    let mut out = format!("b{}", quote as char);
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            _ if b == quote => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push(quote as char);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_python_equality() {
        assert_eq!(key(&Value::Int(1)), key(&Value::Real(1.0)));
        assert_eq!(key(&Value::Real(-0.0)), key(&Value::Int(0)));
        assert_ne!(key(&Value::Int(1)), key(&Value::Text("1".into())));
        assert_ne!(key(&Value::Real(1.5)), key(&Value::Int(1)));
        // 2^53 + 1 is not equal to the float 2^53 in Python.
        assert_ne!(
            key(&Value::Int(9_007_199_254_740_993)),
            key(&Value::Real(9_007_199_254_740_992.0))
        );
    }

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

    #[test]
    fn python_str_forms() {
        for (f, expected) in [
            (1.0, "1.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123.5, "123.5"),
            (1e16, "1e+16"),
            (1.2345678901234568e17, "1.2345678901234568e+17"),
            (-0.0, "-0.0"),
            (1e15, "1000000000000000.0"),
            (0.1, "0.1"),
        ] {
            assert_eq!(py_float_repr(f), expected, "{f}");
        }
        assert_eq!(py_str(&Value::Null), "None");
        assert_eq!(py_str(&Value::Blob(b"a'\x00".to_vec())), "b\"a'\\x00\"");
        assert_eq!(py_str(&Value::Int(-12)), "-12");
    }
}
