//! Calls whose value changes from one execution to the next: chance (`random()`) and the clock
//! (`date('now')`, `CURRENT_TIMESTAMP`), found in the parsed query, not in its text (a column
//! or a string named `now` is no call).

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Value,
};

use crate::mutate::on_enough_stack;

/// Functions whose every call is a new random draw.
const RANDOM: &[&str] = &["random", "randomblob"];
/// The clock, whatever the arguments.
const CLOCK: &[&str] = &["current_date", "current_time", "current_timestamp"];
/// Date functions that read the clock when given `'now'`, or no time value at all.
const DATE_FUNCTIONS: &[&str] = &["date", "time", "datetime", "julianday", "unixepoch"];

/// The first call in `sql` that makes its result change between executions, as written
/// (e.g. `random()`), or None; SQL that does not parse has none found.
pub(super) fn first_volatile_call(sql: &str) -> Option<String> {
    let found = on_enough_stack(sql, |query| {
        let flow = visit_expressions(&query, |expr| match expr {
            Expr::Function(function) if is_volatile(function) => {
                ControlFlow::Break(function.to_string())
            }
            Expr::Identifier(ident)
                if ident.quote_style.is_none()
                    && CLOCK.contains(&ident.value.to_lowercase().as_str()) =>
            {
                ControlFlow::Break(ident.value.clone())
            }
            _ => ControlFlow::Continue(()),
        });
        Ok(match flow {
            ControlFlow::Break(call) => Some(call),
            ControlFlow::Continue(()) => None,
        })
    });
    found.ok().flatten()
}

/// Whether the call reads chance or the clock. Names are matched as printed, so a quoted
/// name (`"random"()`) is not: the audit's second execution catches what such a call changes.
fn is_volatile(function: &Function) -> bool {
    let name = function.name.to_string().to_lowercase();
    let args = plain_args(&function.args);
    if RANDOM.contains(&name.as_str()) || CLOCK.contains(&name.as_str()) {
        return true;
    }
    let time_value = match name.as_str() {
        // strftime(format, time-value, ...)
        "strftime" => args.get(1),
        _ if DATE_FUNCTIONS.contains(&name.as_str()) => args.first(),
        _ => return false,
    };
    match time_value {
        None => true,
        Some(Expr::Value(value)) => {
            matches!(&value.value, Value::SingleQuotedString(s) if s.eq_ignore_ascii_case("now"))
        }
        Some(_) => false,
    }
}

/// The argument expressions of a call (none for `CURRENT_DATE` written without parentheses).
fn plain_args(args: &FunctionArguments) -> Vec<&Expr> {
    let FunctionArguments::List(list) = args else {
        return Vec::new();
    };
    list.args
        .iter()
        .filter_map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Some(expr),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::first_volatile_call;

    #[test]
    fn finds_chance_and_clock_calls() {
        for (sql, call) in [
            ("SELECT random()", "random()"),
            ("SELECT a FROM t ORDER BY RANDOM() LIMIT 1", "RANDOM()"),
            ("SELECT hex(randomblob(4))", "randomblob(4)"),
            ("SELECT * FROM t WHERE d < date('now')", "date('now')"),
            (
                "SELECT * FROM t WHERE d < DATETIME('NOW', '-1 day')",
                "DATETIME('NOW', '-1 day')",
            ),
            ("SELECT strftime('%Y', 'now')", "strftime('%Y', 'now')"),
            ("SELECT date()", "date()"),
            ("SELECT * FROM t WHERE d < CURRENT_DATE", "CURRENT_DATE"),
            ("SELECT current_timestamp", "current_timestamp"),
        ] {
            assert_eq!(first_volatile_call(sql).as_deref(), Some(call), "{sql}");
        }
    }

    #[test]
    fn fixed_dates_and_names_are_not_calls() {
        for sql in [
            "SELECT date('2020-01-01')",
            "SELECT strftime('%Y', d) FROM t",
            "SELECT now FROM t WHERE note = 'now'",
            "SELECT \"current_date\" FROM t",
            "SELECT julianday(d) - julianday('2020-01-01') FROM t",
            "not sql at all",
        ] {
            assert_eq!(first_volatile_call(sql), None, "{sql}");
        }
    }
}
