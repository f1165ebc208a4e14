//! Sites of the operators that pick among many nodes of a subtree: comparisons, aggregate
//! calls and joins. A first walk numbers the sites in pre-order and notes their depth; sorting
//! that list stably by depth gives breadth-first document order (spec §9.4), in which the
//! choice is made; a second walk rewrites the chosen site.

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, Ident, Join, JoinConstraint, JoinOperator, ObjectNamePart, Query, Select,
    TableFactor, TableWithJoins, VisitMut, VisitorMut,
};

use super::outer::outer;

/// What a site is and how it is rewritten.
#[derive(Clone, Copy)]
pub(super) enum Rule {
    /// A binary comparison whose operator the function maps to a replacement.
    Comparison(fn(&BinaryOperator) -> Option<BinaryOperator>),
    /// A call of COUNT, SUM, MAX, MIN or AVG.
    Aggregate,
    /// A join with an ON condition.
    JoinWithOn,
    /// A join that is not LEFT, including a comma between FROM items.
    NonLeftJoin,
}

/// The part of the statement an operator searches.
#[derive(Clone, Copy)]
pub(super) enum Scope {
    OuterWhere,
    OuterHaving,
    OuterSelectAndHaving,
    Statement,
}

/// How many sites `rule` finds in `scope`.
pub(super) fn count(rule: Rule, scope: Scope, query: &mut Query) -> usize {
    let mut walker = Walker::new(rule, None);
    let _ = walk(scope, query, &mut walker);
    walker.depths.len()
}

/// Rewrites site `choice` (in breadth-first order, `choice < count(..)`).
pub(super) fn rewrite(rule: Rule, scope: Scope, query: &mut Query, choice: usize) {
    let mut numbering = Walker::new(rule, None);
    let _ = walk(scope, query, &mut numbering);
    let mut breadth_first: Vec<usize> = (0..numbering.depths.len()).collect();
    breadth_first.sort_by_key(|&site| numbering.depths[site]);
    if let Some(&target) = breadth_first.get(choice) {
        let _ = walk(scope, query, &mut Walker::new(rule, Some(target)));
    }
}

fn walk(scope: Scope, query: &mut Query, walker: &mut Walker) -> ControlFlow<()> {
    if let Scope::Statement = scope {
        return query.visit(walker);
    }
    let Some(outer) = outer(query) else {
        return ControlFlow::Continue(());
    };
    let select = outer.select;
    match scope {
        Scope::OuterWhere => select.selection.visit(walker),
        Scope::OuterHaving => select.having.visit(walker),
        Scope::OuterSelectAndHaving => {
            for item in &mut select.projection {
                item.visit(walker)?;
            }
            select.having.visit(walker)
        }
        Scope::Statement => ControlFlow::Continue(()),
    }
}

struct Walker {
    rule: Rule,
    /// Nesting depth of the node being visited (queries, SELECTs, FROM items, expressions).
    depth: usize,
    /// Depth of every site seen so far, in pre-order.
    depths: Vec<usize>,
    /// The pre-order number of the site to rewrite, on a rewriting walk.
    target: Option<usize>,
}

impl Walker {
    fn new(rule: Rule, target: Option<usize>) -> Self {
        Walker {
            rule,
            depth: 0,
            depths: Vec::new(),
            target,
        }
    }

    /// Records one site at the current depth; true when it is the one to rewrite.
    fn record_site(&mut self) -> bool {
        self.depths.push(self.depth);
        self.target == Some(self.depths.len() - 1)
    }

    fn enter(&mut self) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn leave(&mut self) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    /// Rewrites `expr` when it is the target site.
    fn visit_expr_site(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let is_site = match self.rule {
            Rule::Comparison(replacement) => {
                matches!(expr, Expr::BinaryOp { op, .. } if replacement(op).is_some())
            }
            Rule::Aggregate => aggregate_name(expr).is_some(),
            Rule::JoinWithOn | Rule::NonLeftJoin => false,
        };
        if !(is_site && self.record_site()) {
            return ControlFlow::Continue(());
        }
        match (self.rule, expr) {
            (Rule::Comparison(replacement), Expr::BinaryOp { op, .. }) => {
                if let Some(new_op) = replacement(op) {
                    *op = new_op;
                }
            }
            (Rule::Aggregate, expr) => swap_aggregate(expr),
            _ => {}
        }
        ControlFlow::Break(())
    }

    /// Numbers the join sites of one FROM list in document order and returns the target, if
    /// it is among them. `commas` says whether the items are separated by commas (a SELECT's
    /// FROM list) rather than being the single item of a parenthesised join.
    fn find_join_target(&mut self, from: &[TableWithJoins], commas: bool) -> Option<JoinSite> {
        for (item, table) in from.iter().enumerate() {
            let comma_is_site = commas && item > 0 && matches!(self.rule, Rule::NonLeftJoin);
            if comma_is_site && self.record_site() {
                return Some(JoinSite::Comma(item));
            }
            for (index, join) in table.joins.iter().enumerate() {
                if self.matches_join(&join.join_operator) && self.record_site() {
                    return Some(JoinSite::Join(item, index));
                }
            }
        }
        None
    }

    fn matches_join(&self, operator: &JoinOperator) -> bool {
        match self.rule {
            Rule::JoinWithOn => matches!(constraint(operator), Some(JoinConstraint::On(_))),
            Rule::NonLeftJoin => to_left(operator).is_some(),
            Rule::Comparison(_) | Rule::Aggregate => false,
        }
    }

    fn rewrite_join(&self, operator: &mut JoinOperator) {
        match self.rule {
            Rule::JoinWithOn => {
                if let Some(on) = constraint_mut(operator) {
                    *on = JoinConstraint::None;
                }
            }
            Rule::NonLeftJoin => {
                if let Some(left) = to_left(operator) {
                    *operator = left;
                }
            }
            Rule::Comparison(_) | Rule::Aggregate => {}
        }
    }
}

/// A join site: the comma before FROM item `.0`, or join `.1` of FROM item `.0`.
enum JoinSite {
    Comma(usize),
    Join(usize, usize),
}

impl VisitorMut for Walker {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.enter()
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.leave()
    }

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        self.enter()?;
        match self.find_join_target(&select.from, true) {
            Some(JoinSite::Comma(item)) => comma_to_left_join(&mut select.from, item),
            Some(JoinSite::Join(item, index)) => {
                self.rewrite_join(&mut select.from[item].joins[index].join_operator)
            }
            None => return ControlFlow::Continue(()),
        }
        ControlFlow::Break(())
    }

    fn post_visit_select(&mut self, _select: &mut Select) -> ControlFlow<()> {
        self.leave()
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        self.enter()?;
        let TableFactor::NestedJoin {
            table_with_joins, ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        let nested = std::slice::from_mut(&mut **table_with_joins);
        match self.find_join_target(nested, false) {
            Some(JoinSite::Join(_, index)) => {
                self.rewrite_join(&mut nested[0].joins[index].join_operator)
            }
            _ => return ControlFlow::Continue(()),
        }
        ControlFlow::Break(())
    }

    fn post_visit_table_factor(&mut self, _factor: &mut TableFactor) -> ControlFlow<()> {
        self.leave()
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        self.visit_expr_site(expr)?;
        self.enter()
    }

    fn post_visit_expr(&mut self, _expr: &mut Expr) -> ControlFlow<()> {
        self.leave()
    }
}

/// COUNT, SUM, MAX, MIN or AVG, when `expr` calls one of them (by a one-part name).
fn aggregate_name(expr: &Expr) -> Option<&'static str> {
    let Expr::Function(function) = expr else {
        return None;
    };
    let [ObjectNamePart::Identifier(name)] = function.name.0.as_slice() else {
        return None;
    };
    ["COUNT", "SUM", "MAX", "MIN", "AVG"]
        .into_iter()
        .find(|aggregate| name.value.eq_ignore_ascii_case(aggregate))
}

/// AVG → SUM, SUM → AVG, MIN → MAX, MAX → MIN, COUNT → SUM; the arguments stay.
fn swap_aggregate(expr: &mut Expr) {
    let swapped = match aggregate_name(expr) {
        Some("AVG") | Some("COUNT") => "SUM",
        Some("SUM") => "AVG",
        Some("MIN") => "MAX",
        Some("MAX") => "MIN",
        _ => return,
    };
    if let Expr::Function(function) = expr {
        function.name.0 = vec![ObjectNamePart::Identifier(Ident::new(swapped))];
    }
}

/// The LEFT JOIN that replaces a join which is not LEFT; None for LEFT joins and for the
/// dialect-specific kinds SQLite does not have.
fn to_left(operator: &JoinOperator) -> Option<JoinOperator> {
    match operator {
        JoinOperator::Join(c)
        | JoinOperator::Inner(c)
        | JoinOperator::CrossJoin(c)
        | JoinOperator::Right(c)
        | JoinOperator::RightOuter(c)
        | JoinOperator::FullOuter(c) => Some(JoinOperator::Left(c.clone())),
        _ => None,
    }
}

/// The constraint of an inner or outer join (`ON`, `USING`, natural or none).
pub(crate) fn constraint(operator: &JoinOperator) -> Option<&JoinConstraint> {
    match operator {
        JoinOperator::Join(c)
        | JoinOperator::Inner(c)
        | JoinOperator::Left(c)
        | JoinOperator::LeftOuter(c)
        | JoinOperator::Right(c)
        | JoinOperator::RightOuter(c)
        | JoinOperator::FullOuter(c)
        | JoinOperator::CrossJoin(c) => Some(c),
        _ => None,
    }
}

fn constraint_mut(operator: &mut JoinOperator) -> Option<&mut JoinConstraint> {
    match operator {
        JoinOperator::Join(c)
        | JoinOperator::Inner(c)
        | JoinOperator::Left(c)
        | JoinOperator::LeftOuter(c)
        | JoinOperator::Right(c)
        | JoinOperator::RightOuter(c)
        | JoinOperator::FullOuter(c)
        | JoinOperator::CrossJoin(c) => Some(c),
        _ => None,
    }
}

/// `FROM a, b` → `FROM a LEFT JOIN b` (no ON): item `item` and its own joins move to the end
/// of the previous item's join chain.
fn comma_to_left_join(from: &mut Vec<TableWithJoins>, item: usize) {
    let moved = from.remove(item);
    let previous = &mut from[item - 1].joins;
    previous.push(Join {
        relation: moved.relation,
        global: false,
        join_operator: JoinOperator::Left(JoinConstraint::None),
    });
    previous.extend(moved.joins);
}
