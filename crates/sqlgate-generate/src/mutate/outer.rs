//! The outer query O (spec §9.1.2) and the LIMIT that belongs to it.

use std::collections::VecDeque;

use sqlparser::ast::{LimitClause, Query, Select, SetExpr};

/// O, with the LIMIT clause of the query that wraps it directly. A LIMIT written after a set
/// operation belongs to the whole compound, not to its first branch, so O has none then.
pub(super) struct Outer<'a> {
    pub select: &'a mut Select,
    pub limit: Option<&'a mut Option<LimitClause>>,
}

/// The first SELECT in breadth-first order of the set-operation tree: the root SELECT, else
/// the first branch found level by level through set operations and parenthesised queries.
/// CTE bodies and subqueries are never searched.
pub(super) fn outer(query: &mut Query) -> Option<Outer<'_>> {
    let mut queue = VecDeque::from([(&mut *query.body, Some(&mut query.limit_clause))]);
    while let Some((body, limit)) = queue.pop_front() {
        match body {
            SetExpr::Select(select) => return Some(Outer { select, limit }),
            SetExpr::Query(inner) => {
                queue.push_back((&mut *inner.body, Some(&mut inner.limit_clause)))
            }
            SetExpr::SetOperation { left, right, .. } => {
                queue.push_back((&mut **left, None));
                queue.push_back((&mut **right, None));
            }
            _ => {}
        }
    }
    None
}
