//! `cartesian`: two tables of one FROM that no join condition links (`FROM a, b` without a
//! WHERE equality between them, `a JOIN b` without ON or USING): every row of one is paired
//! with every row of the other, which a question almost never asks for.

use sqlparser::ast::{BinaryOperator, Expr, JoinConstraint, Select};

use super::scopes::{column, for_each_select, own_exprs, relation, relations, Relation};
use crate::mutate::{join_constraint, on_enough_stack};

/// The first pair of tables some SELECT of `sql` joins without a condition, as a finding's
/// detail; None when every FROM is linked, or `sql` does not parse.
pub(super) fn first_cartesian(sql: &str) -> Option<String> {
    on_enough_stack(sql, |query| {
        let mut found = None;
        for_each_select(&query, |select| {
            if found.is_none() {
                found = unlinked(select);
            }
        });
        Ok(found)
    })
    .ok()
    .flatten()
}

/// Two tables of the SELECT's FROM in different linked groups. A WHERE equality between
/// columns of which one is unqualified could link any two tables: such a SELECT is left alone.
fn unlinked(select: &Select) -> Option<String> {
    let relations = relations(select);
    if relations.len() < 2 {
        return None;
    }
    let mut groups = Groups::new(&relations);
    let mut next = 0;
    for item in &select.from {
        let mut left = Vec::new();
        if relation(&item.relation).is_some() {
            left.push(next);
            next += 1;
        }
        for join in &item.joins {
            let Some(this) = relation(&join.relation).map(|_| next) else {
                continue;
            };
            next += 1;
            let linked_left = match join_constraint(&join.join_operator) {
                Some(JoinConstraint::None) => false,
                // An ON that equates columns links what it equates; any other ON (or a USING,
                // a NATURAL join) links the table to those before it.
                Some(JoinConstraint::On(on)) => groups.join_equalities(on).linked == 0,
                _ => true,
            };
            if linked_left {
                for &before in &left {
                    groups.join(this, before);
                }
            }
            left.push(this);
        }
    }
    if let Some(selection) = &select.selection {
        if groups.join_equalities(selection).uncertain {
            return None;
        }
    }
    let apart = (1..relations.len()).find(|&i| groups.root(i) != groups.root(0))?;
    Some(format!(
        "`{}` and `{}` are joined with no ON, USING or WHERE equality between them: every row \
         of one is paired with every row of the other",
        relations[0].shown, relations[apart].shown
    ))
}

/// What the equalities of one expression did.
struct Equalities {
    /// How many linked two tables.
    linked: usize,
    /// Whether one equates a column with an unqualified one, which could be any table's.
    uncertain: bool,
}

/// The tables of one FROM, grouped as its conditions link them.
struct Groups<'a> {
    relations: &'a [Relation],
    parent: Vec<usize>,
}

impl<'a> Groups<'a> {
    fn new(relations: &'a [Relation]) -> Groups<'a> {
        Groups {
            relations,
            parent: (0..relations.len()).collect(),
        }
    }

    fn root(&self, mut i: usize) -> usize {
        while self.parent[i] != i {
            i = self.parent[i];
        }
        i
    }

    fn join(&mut self, a: usize, b: usize) {
        let (a, b) = (self.root(a), self.root(b));
        self.parent[a] = b;
    }

    /// Links the tables each `x = y` of `expr` (outside subqueries) equates columns of.
    fn join_equalities(&mut self, expr: &Expr) -> Equalities {
        let mut pairs = Vec::new();
        let mut uncertain = false;
        own_exprs(expr, |e| {
            if let Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } = e
            {
                let (left, right) = (self.tables(left), self.tables(right));
                let any_column = |side: &Sides| side.unqualified || !side.known.is_empty();
                if any_column(&left) && any_column(&right) {
                    uncertain |= left.unqualified || right.unqualified;
                }
                for &a in &left.known {
                    pairs.extend(right.known.iter().filter(|&&b| b != a).map(|&b| (a, b)));
                }
            }
        });
        for &(a, b) in &pairs {
            self.join(a, b);
        }
        Equalities {
            linked: pairs.len(),
            uncertain,
        }
    }

    /// The tables whose columns one side of an equality reads.
    fn tables(&self, side: &Expr) -> Sides {
        let mut found = Sides::default();
        own_exprs(side, |e| match e {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => match column(e) {
                Some((None, _)) => found.unqualified = true,
                // A qualifier naming no table of this FROM is an outer query's.
                Some((Some(qualifier), _)) => {
                    if let Some(i) = self.relations.iter().position(|r| r.key == qualifier) {
                        found.known.push(i);
                    }
                }
                None => {}
            },
            _ => {}
        });
        found
    }
}

/// The columns one side of an equality reads.
#[derive(Default)]
struct Sides {
    /// Tables of the FROM, by index.
    known: Vec<usize>,
    /// Whether it reads an unqualified column.
    unqualified: bool,
}

#[cfg(test)]
mod tests {
    use super::first_cartesian;

    #[test]
    fn joins_without_a_condition_are_cartesian() {
        for (sql, pair) in [
            (
                "SELECT DISTINCT T1.first_name FROM Professionals AS T1 JOIN Treatments AS T2 \
                 WHERE cost_of_treatment < (SELECT avg(cost_of_treatment) FROM Treatments)",
                "`Professionals AS T1` and `Treatments AS T2`",
            ),
            ("SELECT * FROM a, b", "`a` and `b`"),
            ("SELECT * FROM a, b WHERE a.x = 1", "`a` and `b`"),
            ("SELECT * FROM a CROSS JOIN b", "`a` and `b`"),
            (
                "SELECT * FROM a JOIN b ON a.id = b.id, c WHERE c.v > 3",
                "`a` and `c`",
            ),
            (
                "SELECT name FROM t WHERE id IN (SELECT x.id FROM x, y)",
                "`x` and `y`",
            ),
        ] {
            let found = first_cartesian(sql).unwrap_or_else(|| panic!("none: {sql}"));
            assert!(found.starts_with(pair), "{sql}: {found}");
        }
    }

    #[test]
    fn linked_joins_are_not_cartesian() {
        for sql in [
            "SELECT * FROM a, b WHERE a.id = b.a_id",
            "SELECT * FROM a AS x, b AS y WHERE y.v > 1 AND x.id = y.a_id",
            "SELECT * FROM a JOIN b ON a.id = b.id",
            "SELECT * FROM a JOIN b USING (id)",
            "SELECT * FROM a NATURAL JOIN b",
            "SELECT * FROM a JOIN b JOIN c ON a.x = b.x AND b.y = c.y",
            // An unqualified column may be b's: left alone.
            "SELECT * FROM a, b WHERE a.id = b_id",
            // One table, a derived table, a subquery's own FROM.
            "SELECT * FROM a",
            "SELECT * FROM a, (SELECT max(v) AS m FROM b) AS s",
            "SELECT * FROM a WHERE a.v = (SELECT max(b.v) FROM b)",
            "not sql at all",
        ] {
            assert_eq!(first_cartesian(sql), None, "{sql}");
        }
    }
}
