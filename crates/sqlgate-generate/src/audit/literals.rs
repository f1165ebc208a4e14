//! `literal_absent`: a string the gold compares a column with (`=`, an IN list) that no value of
//! the column on the original database equals, while one equals it ignoring case (Spider's
//! `continent = "north america"` against `North America`): the gold's answer comes from a
//! spelling the data does not have, and a system that copies the data's spelling fails.

use sqlgate_eval::exec::Value;
use sqlparser::ast::{BinaryOperator, Expr, Ident, JoinConstraint, ObjectName, Select};

use super::scopes::{column, for_each_select, own_exprs, relations};
use crate::distill::values::literal_value;
use crate::mutate::{join_constraint, on_enough_stack};

/// At most this many comparisons of one gold are looked up (one query each).
const MOST: usize = 8;

/// A column compared with a string literal.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Compared {
    /// The tables the column may be of: the one its qualifier names, or every table of its
    /// SELECT's FROM when it has none (the first where the lookup runs is its).
    pub tables: Vec<ObjectName>,
    pub column: Ident,
    pub literal: String,
}

impl Compared {
    /// The lookup on `table`: the column's value that equals the literal ignoring case, an
    /// exact one first, and whether it equals it as the gold compares (`1` or `0`).
    pub fn lookup(&self, table: &ObjectName) -> String {
        let column = &self.column;
        let literal = quoted(&self.literal);
        format!(
            "SELECT {column}, CASE WHEN {column} = {literal} THEN 1 ELSE 0 END FROM {table} \
             WHERE lower({column}) = lower({literal}) ORDER BY 2 DESC LIMIT 1"
        )
    }

    /// `country.continent`.
    pub fn shown(&self, table: &ObjectName) -> String {
        format!("{table}.{}", self.column)
    }
}

/// The columns `sql` compares with a string that has letters (no other can differ in case),
/// the first [`MOST`] of them; none when it does not parse.
pub(super) fn comparisons(sql: &str) -> Vec<Compared> {
    on_enough_stack(sql, |query| {
        let mut found = Vec::new();
        for_each_select(&query, |select| compared_in(select, &mut found));
        Ok(found)
    })
    .unwrap_or_default()
}

fn compared_in(select: &Select, found: &mut Vec<Compared>) {
    let relations = relations(select);
    let ons = select
        .from
        .iter()
        .flat_map(|item| &item.joins)
        .filter_map(|join| match join_constraint(&join.join_operator) {
            Some(JoinConstraint::On(on)) => Some(on),
            _ => None,
        });
    let clauses = select.selection.iter().chain(&select.having).chain(ons);
    for clause in clauses {
        own_exprs(clause, |expr| {
            let pairs: Vec<(&Expr, &Expr)> = match expr {
                Expr::BinaryOp {
                    left,
                    op: BinaryOperator::Eq,
                    right,
                } => vec![(left, right), (right, left)],
                Expr::InList {
                    expr,
                    list,
                    negated: false,
                } => list.iter().map(|item| (expr.as_ref(), item)).collect(),
                _ => Vec::new(),
            };
            for (side, other) in pairs {
                // Spider writes strings as `"x"`, which SQLite reads so when no column has that name.
                let (Some((qualifier, name)), Some(Value::Text(literal))) =
                    (column(side), literal_value(other))
                else {
                    continue;
                };
                if literal.to_lowercase() == literal.to_uppercase() {
                    continue;
                }
                let tables = relations
                    .iter()
                    .filter(|r| qualifier.as_ref().is_none_or(|q| *q == r.key))
                    .map(|r| r.table.clone())
                    .collect::<Vec<_>>();
                let compared = Compared {
                    tables,
                    column: name.clone(),
                    literal,
                };
                if found.len() < MOST && !compared.tables.is_empty() && !found.contains(&compared) {
                    found.push(compared);
                }
            }
        });
    }
}

/// `text` as a single-quoted SQL string.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::comparisons;

    fn found(sql: &str) -> Vec<(String, String, String)> {
        comparisons(sql)
            .into_iter()
            .map(|c| {
                let tables: Vec<String> = c.tables.iter().map(|t| t.to_string()).collect();
                (tables.join("|"), c.column.to_string(), c.literal)
            })
            .collect()
    }

    fn row(tables: &str, column: &str, literal: &str) -> (String, String, String) {
        (tables.into(), column.into(), literal.into())
    }

    #[test]
    fn columns_compared_with_strings_are_found_with_their_tables() {
        assert_eq!(
            found(
                "select sum(population) from country where continent = \"north america\" \
                 and surfacearea > 3000"
            ),
            [row("country", "continent", "north america")]
        );
        assert_eq!(
            found(
                "SELECT T1.name FROM a AS T1 JOIN b AS T2 ON T1.id = T2.id \
                 WHERE T2.kind IN ('Big', 'small', '12') OR 'x' = name"
            ),
            [
                row("b", "kind", "Big"),
                row("b", "kind", "small"),
                row("a|b", "name", "x"),
            ]
        );
        // A subquery's column is looked up in the subquery's tables.
        assert_eq!(
            found("SELECT a FROM t WHERE id IN (SELECT id FROM u WHERE kind = 'k')"),
            [row("u", "kind", "k")]
        );
    }

    #[test]
    fn other_comparisons_are_not_looked_up() {
        for sql in [
            "SELECT a FROM t WHERE name LIKE 'x%'",
            "SELECT a FROM t WHERE name != 'x'",
            "SELECT a FROM t WHERE name NOT IN ('x')",
            "SELECT a FROM t WHERE code = '123'",
            "SELECT a FROM t WHERE outer_t.name = 'x'",
            "not sql at all",
        ] {
            assert_eq!(found(sql), [], "{sql}");
        }
    }
}
