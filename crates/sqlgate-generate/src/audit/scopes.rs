//! The SELECTs of a parsed query, the tables each one's FROM names, and the expressions that
//! belong to it rather than to a subquery: what the `cartesian` and `literal_absent` checks
//! read.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Ident, ObjectName, Query, Select, TableFactor, Visit, Visitor};

/// A table a SELECT's FROM names (derived tables and table functions are not).
#[derive(Debug, Clone)]
pub(super) struct Relation {
    /// The table's name as written.
    pub table: ObjectName,
    /// The name its columns are qualified with, lowercased: the alias, else the table's name.
    pub key: String,
    /// `t` or `t AS x`, for findings.
    pub shown: String,
}

/// Calls `each` on every SELECT of `query`: the outer ones, those of subqueries, CTEs and
/// derived tables.
pub(super) fn for_each_select(query: &Query, each: impl FnMut(&Select)) {
    struct Selects<F>(F);
    impl<F: FnMut(&Select)> Visitor for Selects<F> {
        type Break = ();
        fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
            (self.0)(select);
            ControlFlow::Continue(())
        }
    }
    let _ = query.visit(&mut Selects(each));
}

/// Calls `each` on `expr` and every expression inside it that is not inside a subquery (those
/// belong to the subquery's own SELECT).
pub(super) fn own_exprs(expr: &Expr, each: impl FnMut(&Expr)) {
    struct Own<F> {
        each: F,
        depth: usize,
    }
    impl<F: FnMut(&Expr)> Visitor for Own<F> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            if self.depth == 0 {
                (self.each)(expr);
            }
            ControlFlow::Continue(())
        }
    }
    let _ = expr.visit(&mut Own { each, depth: 0 });
}

/// The relation of a table factor that names a table.
pub(super) fn relation(factor: &TableFactor) -> Option<Relation> {
    let TableFactor::Table { name, alias, .. } = factor else {
        return None;
    };
    let last = name.0.last()?.as_ident()?;
    let key = alias
        .as_ref()
        .map_or(last, |a| &a.name)
        .value
        .to_lowercase();
    Some(Relation {
        table: name.clone(),
        key,
        shown: factor.to_string(),
    })
}

/// Every table the SELECT's FROM names, in order (joined ones included).
pub(super) fn relations(select: &Select) -> Vec<Relation> {
    select
        .from
        .iter()
        .flat_map(|item| {
            std::iter::once(&item.relation).chain(item.joins.iter().map(|join| &join.relation))
        })
        .filter_map(relation)
        .collect()
}

/// A column reference: its qualifier (lowercased; None when unqualified) and its name. A
/// double-quoted bare name is none: Spider writes strings so (`name = "Kyle"`), which SQLite
/// reads as a string when no column has that name.
pub(super) fn column(expr: &Expr) -> Option<(Option<String>, &Ident)> {
    match expr {
        Expr::Identifier(ident) if ident.quote_style != Some('"') => Some((None, ident)),
        Expr::CompoundIdentifier(parts) => match parts.as_slice() {
            [.., qualifier, name] => Some((Some(qualifier.value.to_lowercase()), name)),
            [name] => Some((None, name)),
            [] => None,
        },
        Expr::Nested(inner) => column(inner),
        _ => None,
    }
}
