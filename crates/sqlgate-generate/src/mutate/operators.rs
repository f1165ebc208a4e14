//! The 15 operators (spec §9.2). Each one offers a number of variants (its candidate sites, or
//! the values of its random draw) and applies the chosen one; zero variants means "not
//! applicable". The mutation RNG only ever chooses a variant uniformly.

use sqlparser::ast::{
    BinaryOperator, Distinct, Expr, LimitClause, ObjectName, ObjectNamePart, Query, Select,
    SelectItem, SelectItemQualifiedWildcardKind, TableFactor, Value, WildcardAdditionalOptions,
};

use super::outer::outer;
use super::sites::{self, Rule, Scope};
use super::Operator;

/// How many variants `op` offers on `query`; 0 when it is not applicable. The query is only
/// borrowed mutably because the site walk uses the mutable visitor; it is left unchanged.
pub(super) fn variant_count(op: Operator, query: &mut Query) -> usize {
    if let Some((rule, scope)) = site_rule(op) {
        return sites::count(rule, scope, query);
    }
    let Some(outer) = outer(query) else {
        return 0;
    };
    let select = &*outer.select;
    let limit = outer
        .limit
        .and_then(|clause| limit_literal(clause.as_ref()?));
    match op {
        Operator::ProjectionDrop => at_least_two(select.projection.len()),
        Operator::WherePredicateDelete => {
            at_least_two(select.selection.as_ref().map_or(0, count_atoms))
        }
        Operator::AddStarWildcard => usize::from(
            !select
                .projection
                .iter()
                .any(|item| matches!(item, SelectItem::Wildcard(_))),
        ),
        Operator::DistinctToggle => usize::from(select.distinct == Some(Distinct::Distinct)),
        Operator::WhereRemove => usize::from(select.selection.is_some()),
        Operator::HavingRemove => usize::from(select.having.is_some()),
        Operator::LimitIncrease => match limit.and_then(|old| increased(old, MAX_LIMIT_STEP)) {
            Some(_) => MAX_LIMIT_STEP as usize,
            None => 0,
        },
        Operator::LimitDecrease => usize::from(limit.is_some_and(|old| halved(old) != old)),
        // The site operators were counted above.
        _ => 0,
    }
}

fn at_least_two(count: usize) -> usize {
    if count >= 2 {
        count
    } else {
        0
    }
}

/// Applies variant `choice` (< `variant_count`) of `op`.
pub(super) fn apply(op: Operator, query: &mut Query, choice: usize) {
    if let Some((rule, scope)) = site_rule(op) {
        return sites::rewrite(rule, scope, query, choice);
    }
    let Some(outer) = outer(query) else {
        return;
    };
    let select = outer.select;
    match op {
        Operator::ProjectionDrop if choice < select.projection.len() => {
            select.projection.remove(choice);
        }
        Operator::WherePredicateDelete => delete_predicate(select, choice),
        Operator::AddStarWildcard => select.projection.push(star_for(select)),
        Operator::DistinctToggle => select.distinct = None,
        Operator::WhereRemove => select.selection = None,
        Operator::HavingRemove => select.having = None,
        Operator::LimitIncrease => {
            rewrite_limit(outer.limit, |old| increased(old, choice as u64 + 1))
        }
        Operator::LimitDecrease => rewrite_limit(outer.limit, |old| Some(halved(old))),
        // The site operators were applied above.
        _ => {}
    }
}

/// `limit_increase` adds r uniform in {1, …, 5}: one variant per value of r.
const MAX_LIMIT_STEP: u64 = 5;

/// The operators that choose among sites of a subtree.
fn site_rule(op: Operator) -> Option<(Rule, Scope)> {
    Some(match op {
        Operator::WhereConditionFlip => (Rule::Comparison(flip), Scope::OuterWhere),
        Operator::WhereStrengthen => (Rule::Comparison(strengthen), Scope::OuterWhere),
        Operator::WhereWeaken => (Rule::Comparison(weaken), Scope::OuterWhere),
        Operator::HavingConditionFlip => (Rule::Comparison(flip), Scope::OuterHaving),
        Operator::AggregationSwap => (Rule::Aggregate, Scope::OuterSelectAndHaving),
        Operator::JoinBreak => (Rule::JoinWithOn, Scope::Statement),
        Operator::JoinTypeToLeft => (Rule::NonLeftJoin, Scope::Statement),
        _ => return None,
    })
}

/// `=` ↔ `!=`, `>` ↔ `<`, `>=` ↔ `<=`; the operands stay in place.
fn flip(op: &BinaryOperator) -> Option<BinaryOperator> {
    Some(match op {
        BinaryOperator::Eq => BinaryOperator::NotEq,
        BinaryOperator::NotEq => BinaryOperator::Eq,
        BinaryOperator::Gt => BinaryOperator::Lt,
        BinaryOperator::Lt => BinaryOperator::Gt,
        BinaryOperator::GtEq => BinaryOperator::LtEq,
        BinaryOperator::LtEq => BinaryOperator::GtEq,
        _ => return None,
    })
}

/// `<` → `<=`, `>` → `>=` (the spec's name is inverted: boundary rows are added).
fn strengthen(op: &BinaryOperator) -> Option<BinaryOperator> {
    match op {
        BinaryOperator::Lt => Some(BinaryOperator::LtEq),
        BinaryOperator::Gt => Some(BinaryOperator::GtEq),
        _ => None,
    }
}

/// `<=` → `<`, `>=` → `>` (the spec's name is inverted: boundary rows are removed).
fn weaken(op: &BinaryOperator) -> Option<BinaryOperator> {
    match op {
        BinaryOperator::LtEq => Some(BinaryOperator::Lt),
        BinaryOperator::GtEq => Some(BinaryOperator::Gt),
        _ => None,
    }
}

fn is_and_or(op: &BinaryOperator) -> bool {
    matches!(op, BinaryOperator::And | BinaryOperator::Or)
}

/// Atoms of a condition flattened through AND and OR; a parenthesised group is one atom.
fn count_atoms(expr: &Expr) -> usize {
    match expr {
        Expr::BinaryOp { left, op, right } if is_and_or(op) => {
            count_atoms(left) + count_atoms(right)
        }
        _ => 1,
    }
}

fn flatten_atoms(expr: Expr, atoms: &mut Vec<Expr>) {
    match expr {
        Expr::BinaryOp { left, op, right } if is_and_or(&op) => {
            flatten_atoms(*left, atoms);
            flatten_atoms(*right, atoms);
        }
        atom => atoms.push(atom),
    }
}

/// Removes atom `choice` and joins the others into a left-deep AND chain (OR structure is lost).
fn delete_predicate(select: &mut Select, choice: usize) {
    let Some(condition) = select.selection.take() else {
        return;
    };
    let mut atoms = Vec::new();
    flatten_atoms(condition, &mut atoms);
    if choice < atoms.len() {
        atoms.remove(choice);
    }
    select.selection = atoms.into_iter().reduce(|chain, atom| Expr::BinaryOp {
        left: Box::new(chain),
        op: BinaryOperator::And,
        right: Box::new(atom),
    });
}

/// `a.*` for the first FROM table's alias, else `t.*` for its name, else a bare `*`.
fn star_for(select: &Select) -> SelectItem {
    let options = WildcardAdditionalOptions::default();
    let qualifier = select.from.first().and_then(|first| match &first.relation {
        TableFactor::Table {
            alias: Some(alias), ..
        }
        | TableFactor::Derived {
            alias: Some(alias), ..
        }
        | TableFactor::NestedJoin {
            alias: Some(alias), ..
        } => Some(ObjectName(vec![ObjectNamePart::Identifier(
            alias.name.clone(),
        )])),
        TableFactor::Table { name, .. } => Some(name.clone()),
        _ => None,
    });
    match qualifier {
        Some(name) => SelectItem::QualifiedWildcard(
            SelectItemQualifiedWildcardKind::ObjectName(name),
            options,
        ),
        None => SelectItem::Wildcard(options),
    }
}

/// `2·old + step`, unless it overflows.
fn increased(old: u64, step: u64) -> Option<u64> {
    old.checked_mul(2)?.checked_add(step)
}

fn halved(old: u64) -> u64 {
    (old / 2).max(1)
}

/// The row count of a LIMIT, when it is an integer literal (in `LIMIT n [OFFSET m]` or in
/// SQLite's `LIMIT m, n`).
fn limit_literal(limit: &LimitClause) -> Option<u64> {
    match limit_count(limit)? {
        Expr::Value(literal) => match &literal.value {
            Value::Number(digits, false) => digits.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

fn limit_count(limit: &LimitClause) -> Option<&Expr> {
    match limit {
        LimitClause::LimitOffset { limit, .. } => limit.as_ref(),
        LimitClause::OffsetCommaLimit { limit, .. } => Some(limit),
    }
}

fn rewrite_limit(limit: Option<&mut Option<LimitClause>>, new_count: impl Fn(u64) -> Option<u64>) {
    let Some(clause) = limit.and_then(Option::as_mut) else {
        return;
    };
    let Some(new) = limit_literal(clause).and_then(new_count) else {
        return;
    };
    let count = match clause {
        LimitClause::LimitOffset { limit, .. } => limit.as_mut(),
        LimitClause::OffsetCommaLimit { limit, .. } => Some(limit),
    };
    if let Some(Expr::Value(literal)) = count {
        literal.value = Value::Number(new.to_string(), false);
    }
}
