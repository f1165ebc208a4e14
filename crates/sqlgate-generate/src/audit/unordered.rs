//! `order_unspecified`: a gold whose outer query has no ORDER BY under a mode that compares its
//! rows in order. test-suite-sql-eval compares in order whenever "order by" is in the gold's
//! text, so an ORDER BY inside a subquery (`WHERE x = (SELECT ... ORDER BY ... LIMIT 1)`)
//! makes the comparison ordered while the order of the rows returned is the engine's.

use std::ops::ControlFlow;

use sqlparser::ast::{Query, SetExpr, Visit, Visitor};

use crate::mutate::on_enough_stack;

/// A gold whose outer query has no ORDER BY.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unordered {
    /// The first ORDER BY of a subquery, as written (with its LIMIT), when there is one.
    pub inner: Option<String>,
}

impl Unordered {
    /// What `sql` orders, when its outer query has no ORDER BY; None when it has one, or `sql`
    /// does not parse.
    pub fn of(sql: &str) -> Option<Unordered> {
        on_enough_stack(sql, |query| {
            Ok((!outer_ordered(&query)).then(|| Unordered {
                inner: first_order_by(&query),
            }))
        })
        .ok()
        .flatten()
    }

    /// The finding's words for the ORDER BY the query has.
    pub fn describe(&self) -> String {
        match &self.inner {
            Some(order_by) => format!("its only ORDER BY is a subquery's (`{order_by}`)"),
            None => "it has no ORDER BY".to_string(),
        }
    }
}

/// Whether the outer query (or the parenthesised query it is) has an ORDER BY.
fn outer_ordered(query: &Query) -> bool {
    query.order_by.is_some()
        || match query.body.as_ref() {
            SetExpr::Query(inner) => outer_ordered(inner),
            _ => false,
        }
}

/// The first ORDER BY anywhere in `query`, with the LIMIT that goes with it.
fn first_order_by(query: &Query) -> Option<String> {
    struct First;
    impl Visitor for First {
        type Break = String;
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<String> {
            match &query.order_by {
                Some(order_by) => ControlFlow::Break(match &query.limit_clause {
                    Some(limit) => format!("{order_by}{limit}"),
                    None => order_by.to_string(),
                }),
                None => ControlFlow::Continue(()),
            }
        }
    }
    match query.visit(&mut First) {
        ControlFlow::Break(order_by) => Some(order_by),
        ControlFlow::Continue(()) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::Unordered;

    #[test]
    fn an_order_by_only_in_a_subquery_leaves_the_outer_order_unspecified() {
        let found =
            Unordered::of("SELECT name FROM (SELECT name, age FROM t ORDER BY age DESC LIMIT 3)")
                .expect("unordered");
        assert_eq!(found.inner.as_deref(), Some("ORDER BY age DESC LIMIT 3"));
        let found = Unordered::of(
            "SELECT T1.name FROM Dogs AS T1 WHERE T1.breed_code = (SELECT breed_code FROM \
             Dogs GROUP BY breed_code ORDER BY count(*) ASC LIMIT 1)",
        )
        .expect("unordered");
        assert_eq!(
            found.describe(),
            "its only ORDER BY is a subquery's (`ORDER BY count(*) ASC LIMIT 1`)"
        );
        assert_eq!(
            Unordered::of("SELECT name FROM t"),
            Some(Unordered { inner: None })
        );
    }

    #[test]
    fn an_outer_order_by_is_an_order() {
        for sql in [
            "SELECT name FROM (SELECT name, age FROM t ORDER BY age LIMIT 3) ORDER BY name",
            "SELECT a FROM t UNION SELECT b FROM u ORDER BY 1",
            "(SELECT a FROM t ORDER BY a)",
            "not sql at all",
        ] {
            assert_eq!(Unordered::of(sql), None, "{sql}");
        }
    }
}
