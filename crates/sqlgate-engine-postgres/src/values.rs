//! PostgreSQL cells as [`Value`]s: what `pd.read_sql_query` over psycopg2 holds, the frame
//! Defog sql-eval compares on PostgreSQL, mapped onto the SQLite value model (the table is in
//! docs/postgres.md).
//!
//! - integers (`int2`, `int4`, `int8`, `oid`) are `Int`;
//! - `float8` is `Real`; `float4` is the float of its shortest decimal text, as psycopg2 reads
//!   the text `1.1` and not the widened single `1.100000023841858`;
//! - `numeric` is `Real`, the float nearest to the exact decimal: psycopg2 returns a `Decimal`
//!   and `read_sql_query`'s default `coerce_float=True` makes it a float;
//! - `bool` is `Int` 1/0 (numpy compares `True == 1`; SQLite has no booleans either);
//! - text types (and `json`, `jsonb`, `uuid`) are `Text`, `bytea` is `Blob`;
//! - dates, times, timestamps and intervals are `Text` in Python's `str()` of the object
//!   psycopg2 returns (`2020-01-05`, `2020-01-05 10:00:00.5` as `...10:00:00.500000`,
//!   `1 day, 2:00:00`): equal values give equal texts, and within one type the texts sort as
//!   the values do (intervals excepted, whose text sorts as text);
//! - `void` is `Null`, as psycopg2's None;
//! - any other type (arrays, geometry, ranges...) is refused: the query fails with a message
//!   telling to cast the column, rather than being compared on a guess.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Timelike, Utc};
use postgres::types::{FromSql, Kind, Type};

use sqlgate_engine::Value;

/// A cell as the server sent it (binary format); `None` is NULL.
pub(super) struct Raw<'a>(pub Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

type DecodeResult = Result<Value, Box<dyn std::error::Error + Sync + Send>>;

/// Whether a column of type `ty` can be read; `None` names no problem.
pub(super) fn unsupported(ty: &Type) -> Option<String> {
    let known = matches!(
        *ty,
        Type::BOOL
            | Type::INT2
            | Type::INT4
            | Type::INT8
            | Type::OID
            | Type::FLOAT4
            | Type::FLOAT8
            | Type::NUMERIC
            | Type::TEXT
            | Type::VARCHAR
            | Type::BPCHAR
            | Type::NAME
            | Type::CHAR
            | Type::UNKNOWN
            | Type::JSON
            | Type::JSONB
            | Type::UUID
            | Type::BYTEA
            | Type::DATE
            | Type::TIME
            | Type::TIMESTAMP
            | Type::TIMESTAMPTZ
            | Type::INTERVAL
            | Type::VOID
    ) || matches!(ty.kind(), Kind::Enum(_));
    (!known).then(|| {
        format!(
            "sqlgate does not read values of type `{}`; cast the column (e.g. `::text`)",
            ty.name()
        )
    })
}

/// The value of one cell of a column of type `ty` (checked by [`unsupported`]).
pub(super) fn decode(ty: &Type, raw: Option<&[u8]>) -> DecodeResult {
    // psycopg2 reads `void` (what `pg_sleep` returns) as None.
    let Some(raw) = raw.filter(|_| *ty != Type::VOID) else {
        return Ok(Value::Null);
    };
    if let Kind::Enum(_) = ty.kind() {
        return text(raw);
    }
    Ok(match *ty {
        Type::BOOL => Value::Int(i64::from(bool::from_sql(ty, raw)?)),
        Type::INT2 => Value::Int(i64::from(i16::from_sql(ty, raw)?)),
        Type::INT4 => Value::Int(i64::from(i32::from_sql(ty, raw)?)),
        Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
        Type::OID => Value::Int(i64::from(u32::from_sql(ty, raw)?)),
        Type::FLOAT4 => Value::Real(f32::from_sql(ty, raw)?.to_string().parse()?),
        Type::FLOAT8 => Value::Real(f64::from_sql(ty, raw)?),
        Type::NUMERIC => Value::Real(numeric(raw)?),
        Type::JSONB => match raw.split_first() {
            Some((1, json)) => text(json)?,
            _ => return Err("unknown jsonb format version".into()),
        },
        Type::UUID => Value::Text(uuid(raw)?),
        Type::BYTEA => Value::Blob(raw.to_vec()),
        Type::DATE => Value::Text(NaiveDate::from_sql(ty, raw)?.to_string()),
        Type::TIME => Value::Text(py_time(NaiveTime::from_sql(ty, raw)?)),
        Type::TIMESTAMP => Value::Text(py_datetime(NaiveDateTime::from_sql(ty, raw)?)),
        Type::TIMESTAMPTZ => {
            let at = DateTime::<Utc>::from_sql(ty, raw)?.naive_utc();
            Value::Text(format!("{}+00:00", py_datetime(at)))
        }
        Type::INTERVAL => Value::Text(interval(raw)?),
        _ => text(raw)?,
    })
}

fn text(raw: &[u8]) -> DecodeResult {
    Ok(Value::Text(std::str::from_utf8(raw)?.to_string()))
}

/// The float nearest to a binary `numeric` (sign, base-10000 digits and their weight);
/// `NaN` and the infinities as floats.
fn numeric(raw: &[u8]) -> Result<f64, Box<dyn std::error::Error + Sync + Send>> {
    let word = |i: usize| -> Result<u16, String> {
        raw.get(2 * i..2 * i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "truncated numeric".to_string())
    };
    let ndigits = usize::from(word(0)?);
    let weight = i64::from(word(1)? as i16);
    let sign = word(2)?;
    match sign {
        0xC000 => return Ok(f64::NAN),
        0xD000 => return Ok(f64::INFINITY),
        0xF000 => return Ok(f64::NEG_INFINITY),
        _ => {}
    }
    // 0.<digits> x 10^(4 (weight + 1)): Rust's parser rounds the decimal text correctly.
    let mut text = String::from(if sign == 0x4000 { "-0." } else { "0." });
    for i in 0..ndigits {
        text.push_str(&format!("{:04}", word(4 + i)?));
    }
    if ndigits == 0 {
        text.push('0');
    }
    text.push_str(&format!("e{}", 4 * (weight + 1)));
    Ok(text.parse()?)
}

fn uuid(raw: &[u8]) -> Result<String, String> {
    if raw.len() != 16 {
        return Err("a uuid is 16 bytes".into());
    }
    let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    ))
}

/// Python `str(datetime.time)`: microseconds only when there are some.
fn py_time(time: NaiveTime) -> String {
    let micros = time.nanosecond() / 1000;
    let whole = time.format("%H:%M:%S").to_string();
    if micros == 0 {
        whole
    } else {
        format!("{whole}.{micros:06}")
    }
}

/// Python `str(datetime.datetime)` of a naive timestamp.
fn py_datetime(at: NaiveDateTime) -> String {
    format!("{} {}", at.date(), py_time(at.time()))
}

/// Python `str(timedelta)` of the interval psycopg2 builds: a month counts 30 days.
fn interval(raw: &[u8]) -> Result<String, String> {
    let bytes: [u8; 16] = raw.try_into().map_err(|_| "an interval is 16 bytes")?;
    let micros = i64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"));
    let days = i32::from_be_bytes(bytes[8..12].try_into().expect("4 bytes"));
    let months = i32::from_be_bytes(bytes[12..].try_into().expect("4 bytes"));
    const DAY: i128 = 86_400_000_000;
    let total = (i128::from(months) * 30 + i128::from(days)) * DAY + i128::from(micros);
    // Python keeps the days signed and the time of day positive: -1 day, 23:00:00.
    let days = total.div_euclid(DAY);
    let rest = total.rem_euclid(DAY);
    let (secs, micros) = (rest / 1_000_000, rest % 1_000_000);
    let clock = format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    let clock = if micros == 0 {
        clock
    } else {
        format!("{clock}.{micros:06}")
    };
    Ok(match days {
        0 => clock,
        1 | -1 => format!("{days} day, {clock}"),
        _ => format!("{days} days, {clock}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric_bytes(weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut out = Vec::new();
        for word in [digits.len() as u16, weight as u16, sign, dscale]
            .into_iter()
            .chain(digits.iter().copied())
        {
            out.extend_from_slice(&word.to_be_bytes());
        }
        out
    }

    #[test]
    fn numerics_become_the_nearest_float() {
        // 12345.678 = 1|2345|6780 with weight 1.
        let value = numeric(&numeric_bytes(1, 0, 3, &[1, 2345, 6780])).unwrap();
        assert_eq!(value, 12345.678);
        // -0.0001 = 1 with weight -1.
        assert_eq!(
            numeric(&numeric_bytes(-1, 0x4000, 4, &[1])).unwrap(),
            -0.0001
        );
        assert_eq!(numeric(&numeric_bytes(0, 0, 0, &[])).unwrap(), 0.0);
        // 2.5000000000000000 (AVG of integers) is 2.5.
        let avg = numeric(&numeric_bytes(0, 0, 16, &[2, 5000])).unwrap();
        assert_eq!(avg, 2.5);
        assert!(numeric(&numeric_bytes(0, 0xC000, 0, &[])).unwrap().is_nan());
        assert!(numeric(&[0, 1]).is_err());
    }

    #[test]
    fn intervals_print_like_python_timedelta() {
        let bytes = |micros: i64, days: i32, months: i32| {
            let mut out = micros.to_be_bytes().to_vec();
            out.extend_from_slice(&days.to_be_bytes());
            out.extend_from_slice(&months.to_be_bytes());
            out
        };
        assert_eq!(
            interval(&bytes(7_200_000_000, 1, 0)).unwrap(),
            "1 day, 2:00:00"
        );
        assert_eq!(interval(&bytes(0, 0, 1)).unwrap(), "30 days, 0:00:00");
        assert_eq!(
            interval(&bytes(-3_600_000_000, 0, 0)).unwrap(),
            "-1 day, 23:00:00"
        );
        assert_eq!(interval(&bytes(1_500_000, 0, 0)).unwrap(), "0:00:01.500000");
    }

    #[test]
    fn times_print_like_python() {
        let at = NaiveDate::from_ymd_opt(2020, 1, 5)
            .unwrap()
            .and_hms_micro_opt(10, 0, 0, 500_000)
            .unwrap();
        assert_eq!(py_datetime(at), "2020-01-05 10:00:00.500000");
        assert_eq!(
            py_time(NaiveTime::from_hms_opt(9, 5, 0).unwrap()),
            "09:05:00"
        );
        assert_eq!(
            uuid(&[0xab; 16]).unwrap(),
            "abababab-abab-abab-abab-abababababab"
        );
    }
}
