//! MySQL cells as [`Value`]s, mapped onto the SQLite value model as the PostgreSQL engine maps
//! its own (the table is in docs/mysql.md). Cells arrive in the binary protocol of prepared
//! statements, typed:
//!
//! - integers (`TINYINT` to `BIGINT`, `YEAR`, booleans as `TINYINT(1)`) are `Int`; a `BIGINT
//!   UNSIGNED` past `i64::MAX` is `Real`, as SQLite stores an integer too large for 64 bits;
//! - `DOUBLE` is `Real`; `FLOAT` is the float of its shortest decimal text (`1.1`, not the
//!   widened single `1.100000023841858`); `DECIMAL` is `Real`, the float nearest to the decimal;
//! - text types (and `JSON`, `ENUM`, `SET`) are `Text`, invalid UTF-8 dropped and flagged
//!   ([`ResultSet::lossy_text`](sqlgate_engine::ResultSet)), as the SQLite sandbox does; binary
//!   strings and blobs (`BINARY`, `VARBINARY`, `BLOB`) are `Blob`;
//! - `BIT` is `Text` of its binary digits, as `BIN()` writes them (`b'101'` is `101`);
//! - `DATE`, `DATETIME`, `TIMESTAMP` and `TIME` are `Text` in ISO form (`2020-01-05`,
//!   `2020-01-05 10:00:00`, `10:00:00`, microseconds only when not zero, as Python's `str()`
//!   writes a datetime); a `TIME` past a day or negative keeps its hours (`-838:59:59`);
//! - any other type (geometry, vectors) is refused: the query fails with a message telling to
//!   convert the column, rather than being compared on a guess.

use mysql::consts::{ColumnFlags, ColumnType};
use mysql::Column;
use sqlgate_engine::Value;

/// MySQL's character set number of binary strings.
const BINARY: u16 = 63;

/// Whether a column can be read; `None` names no problem.
pub(crate) fn unsupported(column: &Column) -> Option<String> {
    use ColumnType::*;
    let known = !matches!(
        column.column_type(),
        MYSQL_TYPE_GEOMETRY | MYSQL_TYPE_VECTOR | MYSQL_TYPE_UNKNOWN | MYSQL_TYPE_TYPED_ARRAY
    );
    (!known).then(|| {
        format!(
            "sqlgate does not read values of type {:?} (column `{}`); convert the column \
             (e.g. ST_AsText, CAST(... AS CHAR))",
            column.column_type(),
            column.name_str()
        )
    })
}

/// The value of one cell, and the heap bytes it holds besides its `Value`.
pub(crate) fn decode(
    column: &Column,
    cell: mysql::Value,
    lossy: &mut bool,
) -> Result<(Value, usize), String> {
    use mysql::Value as My;
    Ok(match cell {
        My::NULL => (Value::Null, 0),
        My::Int(n) => (Value::Int(n), 0),
        My::UInt(n) => (
            i64::try_from(n).map_or(Value::Real(n as f64), Value::Int),
            0,
        ),
        My::Float(f) => (
            Value::Real(f.to_string().parse().map_err(|e| format!("{e}"))?),
            0,
        ),
        My::Double(f) => (Value::Real(f), 0),
        My::Date(year, month, day, hour, minute, second, micros) => {
            let date = format!("{year:04}-{month:02}-{day:02}");
            let text = match column.column_type() {
                ColumnType::MYSQL_TYPE_DATE | ColumnType::MYSQL_TYPE_NEWDATE => date,
                _ => format!("{date} {}", clock(u32::from(hour), minute, second, micros)),
            };
            let len = text.len();
            (Value::Text(text), len)
        }
        My::Time(negative, days, hours, minutes, seconds, micros) => {
            let sign = if negative { "-" } else { "" };
            let hours = days * 24 + u32::from(hours);
            let text = format!("{sign}{}", clock(hours, minutes, seconds, micros));
            let len = text.len();
            (Value::Text(text), len)
        }
        My::Bytes(bytes) => {
            let len = bytes.len();
            (bytes_value(column, bytes, lossy)?, len)
        }
    })
}

/// `hh:mm:ss`, and `.ffffff` when the microseconds are not zero.
fn clock(hours: u32, minutes: u8, seconds: u8, micros: u32) -> String {
    let mut text = format!("{hours:02}:{minutes:02}:{seconds:02}");
    if micros != 0 {
        text.push_str(&format!(".{micros:06}"));
    }
    text
}

fn bytes_value(column: &Column, bytes: Vec<u8>, lossy: &mut bool) -> Result<Value, String> {
    use ColumnType::*;
    Ok(match column.column_type() {
        MYSQL_TYPE_DECIMAL | MYSQL_TYPE_NEWDECIMAL => {
            let text = std::str::from_utf8(&bytes).map_err(|e| e.to_string())?;
            Value::Real(
                text.parse()
                    .map_err(|_| format!("`{text}` is not a decimal"))?,
            )
        }
        MYSQL_TYPE_BIT => {
            let bits: String = bytes.iter().map(|byte| format!("{byte:08b}")).collect();
            let digits = bits.trim_start_matches('0');
            Value::Text(if digits.is_empty() { "0" } else { digits }.to_string())
        }
        // The text protocol's integers, should a server send them as text.
        MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_LONG | MYSQL_TYPE_INT24
        | MYSQL_TYPE_LONGLONG | MYSQL_TYPE_YEAR => {
            let text = std::str::from_utf8(&bytes).map_err(|e| e.to_string())?;
            match text.parse::<i64>() {
                Ok(n) => Value::Int(n),
                Err(_) => Value::Real(
                    text.parse()
                        .map_err(|_| format!("`{text}` is not an integer"))?,
                ),
            }
        }
        _ if column.character_set() == BINARY
            && !column
                .flags()
                .intersects(ColumnFlags::ENUM_FLAG | ColumnFlags::SET_FLAG)
            && column.column_type() != MYSQL_TYPE_JSON =>
        {
            Value::Blob(bytes)
        }
        _ => Value::Text(match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(error) => {
                *lossy = true;
                error
                    .as_bytes()
                    .utf8_chunks()
                    .map(|chunk| chunk.valid())
                    .collect()
            }
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(ty: ColumnType, charset: u16) -> Column {
        Column::new(ty).with_character_set(charset)
    }

    fn decoded(ty: ColumnType, charset: u16, cell: mysql::Value) -> (Value, bool) {
        let mut lossy = false;
        let (value, _) = decode(&column(ty, charset), cell, &mut lossy).unwrap();
        (value, lossy)
    }

    #[test]
    fn cells_follow_the_sqlite_value_model() {
        use mysql::Value as My;
        use ColumnType::*;
        let utf8 = 45;
        let cases = [
            (MYSQL_TYPE_LONGLONG, My::Int(-3), Value::Int(-3)),
            (MYSQL_TYPE_LONGLONG, My::UInt(7), Value::Int(7)),
            (
                MYSQL_TYPE_LONGLONG,
                My::UInt(u64::MAX),
                Value::Real(u64::MAX as f64),
            ),
            (MYSQL_TYPE_FLOAT, My::Float(1.1), Value::Real(1.1)),
            (MYSQL_TYPE_DOUBLE, My::Double(0.25), Value::Real(0.25)),
            (
                MYSQL_TYPE_NEWDECIMAL,
                My::Bytes(b"-12.50".to_vec()),
                Value::Real(-12.5),
            ),
            (
                MYSQL_TYPE_DATE,
                My::Date(2020, 1, 5, 0, 0, 0, 0),
                Value::Text("2020-01-05".into()),
            ),
            (
                MYSQL_TYPE_DATETIME,
                My::Date(2020, 1, 5, 10, 0, 0, 0),
                Value::Text("2020-01-05 10:00:00".into()),
            ),
            (
                MYSQL_TYPE_TIMESTAMP,
                My::Date(2020, 1, 5, 10, 0, 0, 500_000),
                Value::Text("2020-01-05 10:00:00.500000".into()),
            ),
            (
                MYSQL_TYPE_TIME,
                My::Time(false, 0, 8, 0, 0, 0),
                Value::Text("08:00:00".into()),
            ),
            (
                MYSQL_TYPE_TIME,
                My::Time(true, 34, 22, 59, 59, 0),
                Value::Text("-838:59:59".into()),
            ),
            (
                MYSQL_TYPE_BIT,
                My::Bytes(vec![0, 5]),
                Value::Text("101".into()),
            ),
            (
                MYSQL_TYPE_VAR_STRING,
                My::Bytes(b"abc".to_vec()),
                Value::Text("abc".into()),
            ),
            (MYSQL_TYPE_VAR_STRING, My::NULL, Value::Null),
        ];
        for (ty, cell, expected) in cases {
            let (value, lossy) =
                decoded(ty, if ty == MYSQL_TYPE_BIT { BINARY } else { utf8 }, cell);
            assert!(
                sqlgate_engine::value::py_eq(&value, &expected)
                    && std::mem::discriminant(&value) == std::mem::discriminant(&expected),
                "{ty:?}: {value:?} is not {expected:?}"
            );
            assert!(!lossy);
        }
        let (blob, _) = decoded(MYSQL_TYPE_BLOB, BINARY, My::Bytes(vec![0, 255]));
        assert!(matches!(blob, Value::Blob(bytes) if bytes == [0, 255]));
        let (text, lossy) = decoded(MYSQL_TYPE_BLOB, utf8, My::Bytes(b"a\xffb".to_vec()));
        assert!(matches!(text, Value::Text(t) if t == "ab") && lossy);
        let geometry = column(MYSQL_TYPE_GEOMETRY, BINARY);
        assert!(unsupported(&geometry).unwrap().contains("ST_AsText"));
    }
}
