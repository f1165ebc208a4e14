//! `order_ties`: a LIMIT that cuts through rows tying on the ORDER BY keys (which of them are
//! kept is the engine's choice), and, where the mode compares rows in order, an ORDER BY that
//! leaves tied rows in the engine's order.
//!
//! The key values come from the query itself: its outer LIMIT and OFFSET removed, and each
//! ORDER BY key that is not already a result column appended to the outer SELECT, so that row
//! `n` and row `n + 1` can be compared on the keys.

use sqlparser::ast::{
    Expr, Ident, LimitClause, OrderByKind, Query, SelectItem, SetExpr, Value as SqlValue,
};

use sqlgate_eval::exec::value::py_str;
use sqlgate_eval::exec::{ResultSet, Value};

use crate::mutate::on_enough_stack;

/// The probe of one query's order: the query without its LIMIT, its keys made visible.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OrderProbe {
    /// The outer query without LIMIT and OFFSET, the appended keys last.
    pub sql: String,
    keys: Vec<KeyColumn>,
    /// How many key columns were appended after the query's own.
    appended: usize,
    offset: usize,
    limit: Option<usize>,
    /// The ORDER BY clause as written, for the findings.
    order_by: String,
}

/// Where one ORDER BY key's value is in the probe's rows.
#[derive(Debug, Clone, PartialEq)]
enum KeyColumn {
    /// One of the query's own result columns, by position.
    Visible(usize),
    /// The `j`-th appended column.
    Appended(usize),
    /// A result column named so (a compound query's ORDER BY names its columns).
    Named(String),
}

impl OrderProbe {
    /// The probe of `sql`, or None when its outer query has no ORDER BY or its keys cannot be
    /// read (a DISTINCT query ordered by a column it does not return, a non-literal LIMIT).
    pub fn of(sql: &str) -> Option<OrderProbe> {
        on_enough_stack(sql, |query| Ok(probe(query)))
            .ok()
            .flatten()
    }

    /// Whether the query has a LIMIT or OFFSET (only then can a cut fall between ties).
    pub fn has_cut(&self) -> bool {
        self.limit.is_some() || self.offset > 0
    }

    /// A LIMIT or OFFSET that falls inside a group of rows tying on every key whose other
    /// columns differ: the rows kept depend on the engine's order. `rows` is the probe's result.
    pub fn cut_through_ties(&self, rows: &ResultSet) -> Option<String> {
        let keyed = Keyed::new(self, rows)?;
        let cuts = [Some(self.offset), self.limit.map(|n| self.offset + n)];
        cuts.into_iter().flatten().find_map(|cut| {
            let tied = keyed.tie_group_across(cut)?;
            Some(format!(
                "`{}` with {} cuts between rows {} and {} of {} tying on the keys ({}), \
                 e.g. {}",
                self.order_by,
                self.cut_clause(),
                cut,
                cut + 1,
                rows.rows.len(),
                keyed.show_keys(tied.start),
                keyed.show_pair(tied.start, tied.end - 1)
            ))
        })
    }

    /// Two rows the query returns (within its LIMIT) that tie on every key and differ
    /// elsewhere: their order is the engine's.
    pub fn partial_order(&self, rows: &ResultSet) -> Option<String> {
        let keyed = Keyed::new(self, rows)?;
        let end = self
            .limit
            .map_or(rows.rows.len(), |n| (self.offset + n).min(rows.rows.len()));
        (self.offset.saturating_add(1)..end)
            .find(|&i| keyed.same_keys(i - 1, i) && !keyed.same_visible(i - 1, i))
            .map(|i| {
                format!(
                    "`{}` is not a total order and the mode compares rows in order: rows {} \
                     and {} tie on the keys ({}) but differ: {}",
                    self.order_by,
                    i,
                    i + 1,
                    keyed.show_keys(i),
                    keyed.show_pair(i - 1, i)
                )
            })
    }

    fn cut_clause(&self) -> String {
        match (self.limit, self.offset) {
            (Some(n), 0) => format!("LIMIT {n}"),
            (Some(n), offset) => format!("LIMIT {n} OFFSET {offset}"),
            (None, offset) => format!("OFFSET {offset}"),
        }
    }
}

/// The probe's rows with their key columns located.
struct Keyed<'a> {
    rows: &'a [Vec<Value>],
    keys: Vec<usize>,
    visible: usize,
}

impl<'a> Keyed<'a> {
    fn new(probe: &OrderProbe, result: &'a ResultSet) -> Option<Keyed<'a>> {
        let width = result.columns.len();
        let visible = width.checked_sub(probe.appended)?;
        let keys = probe
            .keys
            .iter()
            .map(|key| match key {
                KeyColumn::Visible(i) => (*i < visible).then_some(*i),
                KeyColumn::Appended(j) => Some(visible + j),
                KeyColumn::Named(name) => result.columns[..visible]
                    .iter()
                    .position(|c| c.eq_ignore_ascii_case(name)),
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Keyed {
            rows: &result.rows,
            keys,
            visible,
        })
    }

    fn same_keys(&self, a: usize, b: usize) -> bool {
        self.keys
            .iter()
            .all(|&k| self.rows[a][k] == self.rows[b][k])
    }

    fn same_visible(&self, a: usize, b: usize) -> bool {
        self.rows[a][..self.visible] == self.rows[b][..self.visible]
    }

    /// The rows around the cut before row `cut` (0-based) that tie with the rows on both
    /// sides of it, when they are not all alike.
    fn tie_group_across(&self, cut: usize) -> Option<std::ops::Range<usize>> {
        if cut == 0 || cut >= self.rows.len() || !self.same_keys(cut - 1, cut) {
            return None;
        }
        let mut start = cut - 1;
        while start > 0 && self.same_keys(start - 1, cut) {
            start -= 1;
        }
        let mut end = cut + 1;
        while end < self.rows.len() && self.same_keys(end, cut) {
            end += 1;
        }
        let differing = (start..end).find(|&i| !self.same_visible(i, start))?;
        Some(start..differing.max(cut) + 1)
    }

    fn show_keys(&self, row: usize) -> String {
        let keys: Vec<String> = self
            .keys
            .iter()
            .map(|&k| py_str(&self.rows[row][k]).into_owned())
            .collect();
        keys.join(", ")
    }

    fn show_pair(&self, a: usize, b: usize) -> String {
        format!("{} / {}", self.show_row(a), self.show_row(b))
    }

    fn show_row(&self, row: usize) -> String {
        let cells: Vec<String> = self.rows[row][..self.visible]
            .iter()
            .map(|v| py_str(v).into_owned())
            .collect();
        format!("({})", cells.join(", "))
    }
}

fn probe(mut query: Query) -> Option<OrderProbe> {
    let order_by = query.order_by.take()?;
    let OrderByKind::Expressions(exprs) = &order_by.kind else {
        return None;
    };
    if exprs.is_empty() || query.fetch.is_some() {
        return None;
    }
    let (limit, offset) = match query.limit_clause.take() {
        None => (None, 0),
        Some(LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) if limit_by.is_empty() => (
            match limit {
                Some(expr) => Some(literal(&expr)?),
                None => None,
            },
            match offset {
                Some(offset) => literal(&offset.value)?,
                None => 0,
            },
        ),
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
            (Some(literal(&limit)?), literal(&offset)?)
        }
        Some(_) => return None,
    };
    let key_exprs: Vec<Expr> = exprs.iter().map(|e| e.expr.clone()).collect();
    let (keys, appended) = locate_keys(&mut query.body, &key_exprs)?;
    let order_text = order_by.to_string();
    query.order_by = Some(order_by);
    Some(OrderProbe {
        sql: query.to_string(),
        keys,
        appended,
        offset,
        limit,
        order_by: order_text,
    })
}

/// Where each key is in the probe's rows, and how many were appended to the outer SELECT.
fn locate_keys(body: &mut SetExpr, keys: &[Expr]) -> Option<(Vec<KeyColumn>, usize)> {
    match body {
        SetExpr::Select(select) => {
            let projection = &mut select.projection;
            let wildcard = projection.iter().any(|item| {
                matches!(
                    item,
                    SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
                )
            });
            let mut appended = Vec::new();
            let mut located = Vec::new();
            for key in keys {
                let column = if let Some(position) = literal(key) {
                    if wildcard || position == 0 || position > projection.len() {
                        return None;
                    }
                    KeyColumn::Visible(position - 1)
                } else if let Some(i) = projection
                    .iter()
                    .position(|item| !wildcard && returns(item, key))
                {
                    KeyColumn::Visible(i)
                } else if select.distinct.is_some() {
                    // Another column would change which rows are distinct.
                    return None;
                } else {
                    appended.push(key.clone());
                    KeyColumn::Appended(appended.len() - 1)
                };
                located.push(column);
            }
            let count = appended.len();
            for (j, expr) in appended.into_iter().enumerate() {
                projection.push(SelectItem::ExprWithAlias {
                    expr,
                    alias: Ident::new(format!("sqlgate_order_key_{j}")),
                });
            }
            Some((located, count))
        }
        SetExpr::SetOperation { .. } => {
            let located = keys
                .iter()
                .map(|key| match key {
                    Expr::Identifier(ident) => Some(KeyColumn::Named(ident.value.clone())),
                    _ => match literal(key)? {
                        0 => None,
                        position => Some(KeyColumn::Visible(position - 1)),
                    },
                })
                .collect::<Option<Vec<_>>>()?;
            Some((located, 0))
        }
        _ => None,
    }
}

/// Whether the SELECT item returns the ORDER BY key: the same expression, its alias, or the
/// column a bare name refers to.
fn returns(item: &SelectItem, key: &Expr) -> bool {
    let (expr, alias) = match item {
        SelectItem::UnnamedExpr(expr) => (expr, None),
        SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias)),
        _ => return false,
    };
    if expr == key {
        return true;
    }
    let Expr::Identifier(name) = key else {
        return false;
    };
    match (alias, expr) {
        (Some(alias), _) => alias.value.eq_ignore_ascii_case(&name.value),
        (None, Expr::CompoundIdentifier(parts)) => parts
            .last()
            .is_some_and(|last| last.value.eq_ignore_ascii_case(&name.value)),
        _ => false,
    }
}

/// A non-negative integer literal.
fn literal(expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Value(value) => match &value.value {
            SqlValue::Number(text, _) => text.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::OrderProbe;

    fn probe_sql(sql: &str) -> Option<String> {
        OrderProbe::of(sql).map(|probe| probe.sql)
    }

    #[test]
    fn only_the_outer_limit_goes_and_missing_keys_are_appended() {
        assert_eq!(
            probe_sql(
                "SELECT name FROM t WHERE s IN (SELECT s FROM t ORDER BY s LIMIT 1) \
                 ORDER BY s DESC LIMIT 3 OFFSET 1"
            )
            .as_deref(),
            Some(
                "SELECT name, s AS sqlgate_order_key_0 FROM t WHERE s IN (SELECT s FROM t \
                 ORDER BY s LIMIT 1) ORDER BY s DESC"
            )
        );
    }

    #[test]
    fn keys_the_query_returns_are_read_from_its_columns() {
        for sql in [
            "SELECT name, count(*) FROM t GROUP BY name ORDER BY count(*) DESC LIMIT 1",
            "SELECT name, count(*) AS n FROM t GROUP BY name ORDER BY n DESC LIMIT 1",
            "SELECT name, count(*) FROM t GROUP BY name ORDER BY 2 DESC LIMIT 1",
            "SELECT DISTINCT t.name FROM t ORDER BY name LIMIT 1",
        ] {
            let probe = OrderProbe::of(sql).unwrap_or_else(|| panic!("no probe: {sql}"));
            assert_eq!(probe.appended, 0, "{sql}");
            assert!(!probe.sql.contains("LIMIT"), "{}", probe.sql);
        }
    }

    #[test]
    fn unreadable_orders_give_no_probe() {
        for sql in [
            "SELECT name FROM t",
            "SELECT DISTINCT name FROM t ORDER BY s LIMIT 1",
            "SELECT * FROM t ORDER BY 2 LIMIT 1",
            "SELECT name FROM t ORDER BY s LIMIT (SELECT 1)",
            "SELECT a FROM t UNION SELECT b FROM u ORDER BY lower(a) LIMIT 1",
        ] {
            assert_eq!(OrderProbe::of(sql), None, "{sql}");
        }
    }
}
