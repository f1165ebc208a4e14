//! DuckDB cells as [`Value`]s, with the PostgreSQL engine's conventions (the table is in
//! docs/duckdb.md):
//!
//! - integers of every width are `Int`; a `HUGEINT`, `UBIGINT` or `UHUGEINT` beyond the 64-bit
//!   range is `Real`, the nearest float, as SQLite stores an integer literal too large for it;
//! - `DOUBLE` is `Real`; `FLOAT` is the float of its shortest decimal text (`1.1`, not
//!   `1.100000023841858`); `DECIMAL` is `Real`, the float nearest to the exact decimal;
//! - `BOOLEAN` is `Int` 1/0;
//! - `VARCHAR` (and `UUID`, enums) are `Text`, `BLOB` (and `GEOMETRY` as WKB) is `Blob`;
//! - dates, times and timestamps are `Text` in Python's `str()` of the value (`2020-01-05`,
//!   `10:00:00.500000`, `2020-01-05 10:00:00`; a `TIMESTAMPTZ` in UTC with `+00:00`), intervals
//!   Python's `str(timedelta)` with a month of 30 days (`1 day, 2:00:00`), as the PostgreSQL
//!   engine reads them;
//! - lists, arrays, structs and maps are `Text` in DuckDB's notation (`[1, 2]`,
//!   `{'a': 1, 'b': x}`, `{k=v}`), their elements written by the same rules;
//! - any other type (unions, `BIGNUM`...) is refused: the query fails telling to cast it.

use duckdb::arrow::datatypes::{DataType, IntervalUnit, TimeUnit as ArrowUnit};
use duckdb::types::{TimeUnit, Value as Duck, ValueRef};
use sqlgate_engine::Value;

/// Whether values of the Arrow type `ty` (how DuckDB hands a column over) can be read. A column
/// of NULL's own type is all NULL, read without this; nested in a list, it cannot be read.
pub(crate) fn readable(ty: &DataType) -> bool {
    match ty {
        DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Float32
        | DataType::Float64
        | DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::FixedSizeBinary(_)
        | DataType::Date32
        | DataType::Time64(ArrowUnit::Microsecond)
        | DataType::Timestamp(..)
        | DataType::Interval(IntervalUnit::MonthDayNano) => true,
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            readable(item.data_type())
        }
        DataType::Struct(fields) => fields.iter().all(|f| readable(f.data_type())),
        DataType::Map(entries, _) => readable(entries.data_type()),
        DataType::Dictionary(key, value) => {
            matches!(**key, DataType::UInt8 | DataType::UInt16 | DataType::UInt32)
                && matches!(**value, DataType::Utf8)
        }
        _ => false,
    }
}

/// The value of one cell (of a [`readable`] column; `zoned` for a `TIMESTAMPTZ`), and the heap
/// bytes it holds besides its `Value`.
pub(crate) fn decode(cell: ValueRef<'_>, zoned: bool) -> (Value, usize) {
    let value = match cell {
        ValueRef::Null => Value::Null,
        ValueRef::Boolean(b) => Value::Int(i64::from(b)),
        ValueRef::TinyInt(i) => Value::Int(i64::from(i)),
        ValueRef::SmallInt(i) => Value::Int(i64::from(i)),
        ValueRef::Int(i) => Value::Int(i64::from(i)),
        ValueRef::BigInt(i) => Value::Int(i),
        ValueRef::UTinyInt(i) => Value::Int(i64::from(i)),
        ValueRef::USmallInt(i) => Value::Int(i64::from(i)),
        ValueRef::UInt(i) => Value::Int(i64::from(i)),
        ValueRef::UBigInt(i) => wide(i128::from(i)),
        ValueRef::HugeInt(i) => wide(i),
        ValueRef::UHugeInt(i) => match i128::try_from(i) {
            Ok(i) => wide(i),
            Err(_) => Value::Real(i as f64),
        },
        ValueRef::Float(f) => Value::Real(single(f)),
        ValueRef::Double(f) => Value::Real(f),
        ValueRef::Decimal(d) => Value::Real(decimal(d.value(), d.scale())),
        ValueRef::Text(bytes) => Value::Text(String::from_utf8_lossy(bytes).into_owned()),
        ValueRef::Blob(bytes) | ValueRef::Geometry(bytes) => Value::Blob(bytes.to_vec()),
        ValueRef::Date32(days) => Value::Text(date(i64::from(days))),
        ValueRef::Time64(unit, t) => Value::Text(time(micros(unit, t).rem_euclid(DAY))),
        ValueRef::Timestamp(unit, t) => {
            let text = timestamp(micros(unit, t));
            Value::Text(if zoned { format!("{text}+00:00") } else { text })
        }
        ValueRef::Interval {
            months,
            days,
            nanos,
        } => Value::Text(interval(months, days, nanos)),
        other => Value::Text(text(&other.to_owned())),
    };
    let heap = match &value {
        Value::Text(text) => text.len(),
        Value::Blob(bytes) => bytes.len(),
        _ => 0,
    };
    (value, heap)
}

/// An integer wider than 64 bits: `Int` when it fits, else the nearest float.
fn wide(i: i128) -> Value {
    i64::try_from(i).map_or(Value::Real(i as f64), Value::Int)
}

/// The double of a single's shortest decimal text.
fn single(f: f32) -> f64 {
    f.to_string().parse().unwrap_or(f64::from(f))
}

/// The float nearest to `value × 10^-scale` (Rust's parser rounds the decimal text correctly).
fn decimal(value: i128, scale: u8) -> f64 {
    format!("{value}e-{scale}").parse().unwrap_or(value as f64)
}

const DAY: i128 = 86_400_000_000;

/// Microseconds of a time or timestamp in `unit`.
fn micros(unit: TimeUnit, t: i64) -> i128 {
    let t = i128::from(t);
    match unit {
        TimeUnit::Second => t * 1_000_000,
        TimeUnit::Millisecond => t * 1_000,
        TimeUnit::Microsecond => t,
        TimeUnit::Nanosecond => t.div_euclid(1_000),
    }
}

/// The ISO date `days` after 1970-01-01 (proleptic Gregorian; H. Hinnant's `civil_from_days`).
fn date(days: i64) -> String {
    let z = i128::from(days) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i128::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Python `str(datetime.time)` of `micros` after midnight: microseconds only when some.
fn time(micros: i128) -> String {
    let secs = micros / 1_000_000;
    let clock = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    match micros % 1_000_000 {
        0 => clock,
        fraction => format!("{clock}.{fraction:06}"),
    }
}

/// Python `str(datetime.datetime)` of a naive timestamp, `micros` after the epoch.
fn timestamp(micros: i128) -> String {
    let days = micros.div_euclid(DAY);
    let day = i64::try_from(days).unwrap_or(i64::MAX);
    format!("{} {}", date(day), time(micros.rem_euclid(DAY)))
}

/// Python `str(timedelta)` of an interval, a month counting 30 days (as psycopg2 reads one).
fn interval(months: i32, days: i32, nanos: i64) -> String {
    let total = (i128::from(months) * 30 + i128::from(days)) * DAY + i128::from(nanos) / 1_000;
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
    match days {
        0 => clock,
        1 | -1 => format!("{days} day, {clock}"),
        _ => format!("{days} days, {clock}"),
    }
}

/// The text of a nested value, in DuckDB's notation; its elements by [`decode`]'s rules.
fn text(value: &Duck) -> String {
    let list = |items: &[Duck]| {
        let items: Vec<String> = items.iter().map(element).collect();
        format!("[{}]", items.join(", "))
    };
    match value {
        Duck::List(items) | Duck::Array(items) => list(items),
        Duck::Struct(fields) => {
            let fields: Vec<String> = fields
                .iter()
                .map(|(name, value)| format!("'{name}': {}", element(value)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        Duck::Map(entries) => {
            let entries: Vec<String> = entries
                .iter()
                .map(|(key, value)| format!("{}={}", element(key), element(value)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        Duck::Enum(text) | Duck::Text(text) => text.clone(),
        Duck::Union(inner) => element(inner),
        other => element(other),
    }
}

/// One element of a nested value: NULL as `NULL`, others as their top-level text.
fn element(value: &Duck) -> String {
    match value {
        Duck::List(_) | Duck::Array(_) | Duck::Struct(_) | Duck::Map(_) | Duck::Union(_) => {
            text(value)
        }
        Duck::Enum(text) | Duck::Text(text) => text.clone(),
        other => match decode(ValueRef::from(other), false).0 {
            Value::Null => "NULL".to_string(),
            Value::Int(i) => i.to_string(),
            Value::Real(f) => sqlgate_engine::value::py_float_repr(f),
            Value::Text(text) => text,
            Value::Blob(bytes) => sqlgate_engine::value::py_bytes_repr(&bytes),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_times_print_like_python() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(18_266), "2020-01-05");
        assert_eq!(date(-1), "1969-12-31");
        assert_eq!(date(11_016), "2000-02-29");
        assert_eq!(time(36_000_500_000), "10:00:00.500000");
        assert_eq!(time(32_700_000_000), "09:05:00");
        assert_eq!(
            timestamp(18_266 * DAY + 36_000_000_000),
            "2020-01-05 10:00:00"
        );
        assert_eq!(timestamp(-1), "1969-12-31 23:59:59.999999");
    }

    #[test]
    fn intervals_print_like_python_timedelta() {
        assert_eq!(interval(0, 1, 7_200_000_000_000), "1 day, 2:00:00");
        assert_eq!(interval(1, 0, 0), "30 days, 0:00:00");
        assert_eq!(interval(0, 0, -3_600_000_000_000), "-1 day, 23:00:00");
        assert_eq!(interval(0, 0, 1_500_000_000), "0:00:01.500000");
    }

    #[test]
    fn numbers_follow_the_postgresql_engine() {
        assert_eq!(decimal(12_345_678, 3), 12345.678);
        assert_eq!(decimal(-1, 4), -0.0001);
        assert_eq!(single(1.1), 1.1);
        assert!(matches!(wide(i128::from(i64::MAX)), Value::Int(i64::MAX)));
        assert!(matches!(wide(i128::from(i64::MAX) + 1), Value::Real(f) if f == 2f64.powi(63)));
    }
}
