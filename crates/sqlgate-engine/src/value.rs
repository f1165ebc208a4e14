//! The value model shared by every evaluator (spec `evaluators.md` §0.1): SQLite storage
//! classes compared with Python `sqlite3` semantics.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

/// One cell of a query result.
///
/// Equality and hashing follow Python (`py_eq`): `Null == Null`, `Int` and `Real` compare by
/// exact mathematical value, other kinds never equal each other. `Real(NaN)` is never equal to
/// anything, as in Python; SQLite never returns NaN.
#[derive(Debug, Clone)]
pub enum Value {
    /// SQL `NULL` (Python `None`).
    Null,
    /// An INTEGER.
    Int(i64),
    /// A REAL (PostgreSQL floats and numerics read as one).
    Real(f64),
    /// A TEXT value, decoded as UTF-8.
    Text(String),
    /// A BLOB, byte for byte.
    Blob(Vec<u8>),
}

/// A key that is equal for two values exactly when they are `py_eq` (NaN aside): integral
/// reals become `Int`, `-0.0` becomes `Int(0)`, other reals keep their bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HashKey<'a> {
    /// Key of [`Value::Null`].
    Null,
    /// Key of an integer, or of a real with an integral value.
    Int(i64),
    /// Key of a non-integral real: its bits.
    Real(u64),
    /// Key of a text.
    Text(&'a str),
    /// Key of a blob.
    Blob(&'a [u8]),
}

impl Value {
    /// The hash key agreeing with `py_eq` (spec §0.1 "Hash key").
    pub fn hash_key(&self) -> HashKey<'_> {
        match self {
            Value::Null => HashKey::Null,
            Value::Int(i) => HashKey::Int(*i),
            Value::Real(f) => match exact_i64(*f) {
                Some(i) => HashKey::Int(i),
                None if f.is_nan() => HashKey::Real(f64::NAN.to_bits()),
                None => HashKey::Real(f.to_bits()),
            },
            Value::Text(s) => HashKey::Text(s),
            Value::Blob(b) => HashKey::Blob(b),
        }
    }

    /// True for `Int` and `Real`, the values Python compares numerically.
    pub fn is_numeric(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Real(_))
    }

    /// The value as a float, for `Int` and `Real`.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Real(f) => Some(*f),
            _ => None,
        }
    }
}

/// `f` as an `i64` when it is integral and exactly representable.
fn exact_i64(f: f64) -> Option<i64> {
    // 2^63 is the first float above the i64 range; -2^63 is exactly i64::MIN.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (f.fract() == 0.0 && (-LIMIT..LIMIT).contains(&f)).then_some(f as i64)
}

/// Python equality of two values as returned by `sqlite3` (spec §0.1).
pub fn py_eq(a: &Value, b: &Value) -> bool {
    let is_nan = |v: &Value| matches!(v, Value::Real(f) if f.is_nan());
    !is_nan(a) && !is_nan(b) && a.hash_key() == b.hash_key()
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        py_eq(self, other)
    }
}

// Reflexive for everything SQLite can return (it never returns NaN), which is what sets and
// multisets of results need.
impl Eq for Value {}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.hash_key().hash(state);
    }
}

/// Python `str(v)` of the value `sqlite3` returns (spec §0.1 "Python str()").
pub fn py_str(v: &Value) -> Cow<'_, str> {
    match v {
        Value::Null => Cow::Borrowed("None"),
        Value::Int(i) => Cow::Owned(i.to_string()),
        Value::Real(f) => Cow::Owned(py_float_repr(*f)),
        Value::Text(s) => Cow::Borrowed(s),
        Value::Blob(b) => Cow::Owned(py_bytes_repr(b)),
    }
}

/// Python `str(type(v))` of the value `sqlite3` returns.
pub fn py_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<class 'NoneType'>",
        Value::Int(_) => "<class 'int'>",
        Value::Real(_) => "<class 'float'>",
        Value::Text(_) => "<class 'str'>",
        Value::Blob(_) => "<class 'bytes'>",
    }
}

/// Python `repr(float)`: shortest round-trip digits, positional notation when the decimal
/// exponent `e` satisfies `-4 <= e < 16`, else `d.ddde±XX`.
pub fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits, e.g. "-1.2345e17" or "0e0".
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::from(sign);
    if (-4..16).contains(&exponent) {
        push_positional(&mut out, &digits, exponent);
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

/// Writes `0.d1d2... × 10^(exponent + 1)` positionally, with at least one fractional digit.
fn push_positional(out: &mut String, digits: &str, exponent: i32) {
    if exponent < 0 {
        out.push_str("0.");
        for _ in 0..(-exponent - 1) {
            out.push('0');
        }
        out.push_str(digits);
        return;
    }
    let int_len = exponent as usize + 1;
    if digits.len() <= int_len {
        out.push_str(digits);
        for _ in digits.len()..int_len {
            out.push('0');
        }
        out.push_str(".0");
    } else {
        out.push_str(&digits[..int_len]);
        out.push('.');
        out.push_str(&digits[int_len..]);
    }
}

/// Python `math.isclose(a, b, rel_tol, abs_tol)`.
pub fn py_isclose(a: f64, b: f64, rel_tol: f64, abs_tol: f64) -> bool {
    if a == b {
        return true;
    }
    if a.is_infinite() || b.is_infinite() {
        return false;
    }
    let diff = (b - a).abs();
    diff <= (rel_tol * b).abs() || diff <= (rel_tol * a).abs() || diff <= abs_tol
}

/// Python `repr(bytes)`, e.g. `b'ab\x00'`.
pub fn py_bytes_repr(bytes: &[u8]) -> String {
    // Python switches to double quotes when the bytes hold a single quote but no double quote.
    let quote = if bytes.contains(&b'\'') && !bytes.contains(&b'"') {
        b'"'
    } else {
        b'\''
    };
    let mut out = String::with_capacity(bytes.len() + 3);
    out.push('b');
    out.push(quote as char);
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

/// Python `float(s)` for a string: surrounding whitespace, an optional sign, digits with
/// single underscores between them, an exponent, `inf`/`infinity`/`nan` in any case.
/// Non-ASCII decimal digits, which Python also accepts, are not supported.
pub fn py_float_from_str(s: &str) -> Option<f64> {
    let trimmed = s.trim_matches(is_py_space);
    if trimmed.is_empty() || !trimmed.is_ascii() {
        return None;
    }
    let bytes = trimmed.as_bytes();
    let mut cleaned = String::with_capacity(trimmed.len());
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'_' {
            let between_digits = i > 0
                && bytes[i - 1].is_ascii_digit()
                && bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
            if !between_digits {
                return None;
            }
        } else {
            cleaned.push(b as char);
        }
    }
    cleaned.parse().ok()
}

/// Python's `str.isspace()` / `str.strip()` whitespace.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn text(s: &str) -> Value {
        Value::Text(s.to_string())
    }

    #[test]
    fn py_eq_follows_python() {
        assert!(py_eq(&Value::Null, &Value::Null));
        assert!(py_eq(&Value::Int(1), &Value::Real(1.0)));
        assert!(py_eq(&Value::Real(-0.0), &Value::Real(0.0)));
        assert!(py_eq(&Value::Real(-0.0), &Value::Int(0)));
        assert!(!py_eq(
            &Value::Int(9_007_199_254_740_993),
            &Value::Real(9_007_199_254_740_992.0)
        ));
        assert!(py_eq(
            &Value::Int(9_007_199_254_740_992),
            &Value::Real(9_007_199_254_740_992.0)
        ));
        assert!(py_eq(&Value::Int(i64::MIN), &Value::Real(-(2f64.powi(63)))));
        assert!(!py_eq(&Value::Int(i64::MAX), &Value::Real(2f64.powi(63))));
        assert!(!py_eq(&Value::Int(1), &Value::Real(1.5)));
        assert!(!py_eq(&text("1"), &Value::Int(1)));
        assert!(!py_eq(&text("a"), &Value::Blob(b"a".to_vec())));
        assert!(!py_eq(&text("a"), &text("A")));
        assert!(!py_eq(&text("a "), &text("a")));
        assert!(!py_eq(&Value::Null, &Value::Int(0)));
        assert!(!py_eq(&Value::Real(f64::NAN), &Value::Real(f64::NAN)));
    }

    #[test]
    fn hash_key_agrees_with_py_eq_in_sets() {
        let rows: HashSet<Vec<Value>> = [
            vec![Value::Int(1), Value::Null],
            vec![Value::Real(1.0), Value::Null],
            vec![Value::Real(-0.0), text("x")],
            vec![Value::Int(0), text("x")],
            vec![Value::Real(0.5), text("x")],
        ]
        .into_iter()
        .collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(Value::Real(3.0).hash_key(), HashKey::Int(3));
        assert_eq!(
            Value::Real(1e19).hash_key(),
            HashKey::Real(1e19f64.to_bits())
        );
    }

    #[test]
    fn float_repr_matches_python() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.0001, "0.0001"),
            (0.00015, "0.00015"),
            (123.5, "123.5"),
            (0.1, "0.1"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.0 / 3.0, "0.3333333333333333"),
            (1e15, "1000000000000000.0"),
            (9_999_999_999_999_998.0, "9999999999999998.0"),
            (1e16, "1e+16"),
            (1.5e-5, "1.5e-05"),
            (1e-5, "1e-05"),
            (1.2345678901234568e17, "1.2345678901234568e+17"),
            (-2.5e-7, "-2.5e-07"),
            (1e100, "1e+100"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (123456789.125, "123456789.125"),
        ];
        for &(f, expected) in cases {
            assert_eq!(py_float_repr(f), expected, "repr({f:e})");
        }
    }

    #[test]
    fn py_str_of_every_kind() {
        assert_eq!(py_str(&Value::Null), "None");
        assert_eq!(py_str(&Value::Int(-12)), "-12");
        assert_eq!(py_str(&Value::Real(2.0)), "2.0");
        assert_eq!(py_str(&text("héllo")), "héllo");
        assert_eq!(py_str(&Value::Blob(b"ab\x00".to_vec())), "b'ab\\x00'");
        assert_eq!(py_bytes_repr(b"it's"), "b\"it's\"");
        assert_eq!(py_bytes_repr(b"'\""), "b'\\'\"'");
        assert_eq!(py_bytes_repr(b"\\\t\n\r\xff"), "b'\\\\\\t\\n\\r\\xff'");
        assert_eq!(py_type_name(&Value::Real(1.0)), "<class 'float'>");
        assert_eq!(py_type_name(&Value::Null), "<class 'NoneType'>");
        assert_eq!(py_type_name(&Value::Blob(vec![])), "<class 'bytes'>");
    }

    #[test]
    fn float_from_str_follows_python() {
        assert_eq!(py_float_from_str(" 007 "), Some(7.0));
        assert_eq!(py_float_from_str("1_000.5"), Some(1000.5));
        assert_eq!(py_float_from_str("-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(py_float_from_str(".5e1"), Some(5.0));
        assert!(py_float_from_str("nan").is_some_and(f64::is_nan));
        for bad in ["", "abc", "1__0", "_1", "1_", "1e", ".", "0x10", "1,5"] {
            assert_eq!(py_float_from_str(bad), None, "{bad:?}");
        }
    }
}
