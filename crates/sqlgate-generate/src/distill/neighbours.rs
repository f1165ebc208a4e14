//! A gold's neighbours: queries one error away that a counterexample database should tell
//! apart from it. Every variant of the 15 mutation operators (up to a cap each), plus near
//! misses they do not make: ORDER BY direction flipped, any aggregate for any other, `=` on a
//! text literal loosened to LIKE, a GROUP BY column swapped, `ORDER BY k LIMIT 1` as
//! `k = (SELECT max(k) ...)` (every tied row instead of one), NULLs left out of an ORDER BY key
//! under a LIMIT or of a `NOT IN` subquery, `EXCEPT` as `NOT IN` and `INTERSECT` as `IN`: the
//! last three are told apart only by a database that holds NULLs (or duplicates) where the
//! gold reads them. Also the gold's equivalent
//! rewrites (a CTE wrapper, tables re-aliased, AND operands swapped): a database that tells one
//! of those apart from the gold would fail correct answers, so `distill` never keeps it.

use std::collections::HashSet;
use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, Ident,
    JoinConstraint, JoinOperator, ObjectName, OrderByKind, OrderBySort, Query, Select, SelectItem,
    SetExpr, TableFactor, VisitMut, VisitorMut,
};

use sqlgate_eval::exec::schema::{Schema, Table};

use crate::mutate::{every_variant, parse_query};

/// Variants kept per operator and gold.
pub const VARIANT_CAP: usize = 12;

/// One query near a gold, and what made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    /// The mutation operator's name, or the near miss's.
    pub operator: &'static str,
    /// The neighbour's SQL.
    pub sql: String,
}

/// The near misses the 15 operators do not make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NearMiss {
    OrderDirectionFlip,
    AggregateSubstitute,
    EqualsToLike,
    /// A GROUP BY column replaced by another column the same `SELECT` returns or joins on:
    /// grouping by a name instead of an id (the groups differ where two ids share a name).
    GroupBySwap,
    /// `ORDER BY k DESC LIMIT 1` as `WHERE k = (SELECT max(k) ...)` (`HAVING` when `k` is an
    /// aggregate of the groups): every row tying for the top instead of one, and none whose
    /// `k` is NULL (which an ascending order puts first).
    LimitToExtreme,
    /// `ORDER BY k ... LIMIT n` with `k IS NOT NULL` added: told apart only where NULLs reach
    /// the cut (every `k` NULL under a descending order, any under an ascending one), which no
    /// database with ties alone shows.
    OrderKeyNotNull,
    /// `x NOT IN (SELECT c ...)` with `c IS NOT NULL` added: told apart only where the
    /// subquery returns a NULL, which makes every `NOT IN` unknown.
    NotInNotNull,
    /// `SELECT a ... EXCEPT SELECT b ...` as `SELECT a ... WHERE a NOT IN (SELECT b ...)`
    /// (`INTERSECT` as `IN`): duplicates kept and NULLs compared as unknown, the usual way an
    /// answer writes a set difference.
    SetOpToIn,
    /// `count(*)` as `count(t.c)` for a column `c` that may hold NULL of a table `t` the
    /// `SELECT` reads: told apart only where a counted row has `c` NULL.
    CountStarToColumn,
    /// A join added from a table the `SELECT` reads to the parent a nullable foreign key of it
    /// references: the rows whose key is NULL drop out, as they do from an answer that joins
    /// through a table it does not need.
    JoinToParent,
}

impl NearMiss {
    const ALL: [NearMiss; 10] = [
        NearMiss::OrderDirectionFlip,
        NearMiss::AggregateSubstitute,
        NearMiss::EqualsToLike,
        NearMiss::GroupBySwap,
        NearMiss::LimitToExtreme,
        NearMiss::OrderKeyNotNull,
        NearMiss::NotInNotNull,
        NearMiss::SetOpToIn,
        NearMiss::CountStarToColumn,
        NearMiss::JoinToParent,
    ];

    fn name(self) -> &'static str {
        match self {
            NearMiss::OrderDirectionFlip => "order_direction_flip",
            NearMiss::AggregateSubstitute => "aggregate_substitute",
            NearMiss::EqualsToLike => "equals_to_like",
            NearMiss::GroupBySwap => "group_by_swap",
            NearMiss::LimitToExtreme => "limit_to_extreme",
            NearMiss::OrderKeyNotNull => "order_key_not_null",
            NearMiss::NotInNotNull => "not_in_not_null",
            NearMiss::SetOpToIn => "set_op_to_in",
            NearMiss::CountStarToColumn => "count_star_to_column",
            NearMiss::JoinToParent => "join_to_parent",
        }
    }
}

const AGGREGATES: [&str; 5] = ["COUNT", "SUM", "AVG", "MIN", "MAX"];

/// The neighbours of `gold` over a database with `schema`, each SQL once (and never the gold
/// itself); none when the gold does not parse.
pub fn neighbours(gold: &str, schema: &Schema) -> Vec<Neighbour> {
    let mut found: Vec<Neighbour> = every_variant(gold, VARIANT_CAP)
        .unwrap_or_default()
        .into_iter()
        .map(|(op, sql)| Neighbour {
            operator: op.name(),
            sql,
        })
        .collect();
    if let Ok(query) = parse_query(gold) {
        for miss in NearMiss::ALL {
            for site in 0..VARIANT_CAP {
                let mut mutated = query.clone();
                let mut walker = Sites::new(miss, Some(site), schema);
                let _ = mutated.visit(&mut walker);
                if !walker.applied {
                    break;
                }
                found.push(Neighbour {
                    operator: miss.name(),
                    sql: mutated.to_string(),
                });
            }
        }
    }
    let printed = parse_query(gold).map(|q| q.to_string()).unwrap_or_default();
    let mut seen = HashSet::from([gold.trim().to_string(), printed]);
    found.retain(|n| seen.insert(n.sql.clone()) && parse_query(&n.sql).is_ok());
    found
}

/// Walks the sites of one near miss, rewriting the `target`-th.
struct Sites<'s> {
    miss: NearMiss,
    target: Option<usize>,
    schema: &'s Schema,
    seen: usize,
    applied: bool,
}

impl<'s> Sites<'s> {
    fn new(miss: NearMiss, target: Option<usize>, schema: &'s Schema) -> Sites<'s> {
        Sites {
            miss,
            target,
            schema,
            seen: 0,
            applied: false,
        }
    }

    /// Whether the next site is the one to rewrite.
    fn hit(&mut self) -> bool {
        let hit = self.target == Some(self.seen);
        self.seen += 1;
        self.applied |= hit;
        hit
    }
}

impl VisitorMut for Sites<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        match self.miss {
            NearMiss::GroupBySwap => self.swap_group_keys(&mut query.body),
            NearMiss::CountStarToColumn => self.count_columns(&mut query.body),
            NearMiss::JoinToParent => self.join_parents(&mut query.body),
            // Rewrites of the whole query: one site per query that has the shape.
            NearMiss::LimitToExtreme | NearMiss::SetOpToIn => {
                let rewritten = match self.miss {
                    NearMiss::LimitToExtreme => limit_to_extreme(query),
                    _ => set_op_to_in(query),
                };
                if let Some(rewritten) = rewritten {
                    if self.hit() {
                        *query = rewritten;
                    }
                }
            }
            NearMiss::OrderKeyNotNull => {
                for key in order_keys_of_a_limit(query) {
                    if self.hit() {
                        let SetExpr::Select(select) = query.body.as_mut() else {
                            break;
                        };
                        and_also(&mut select.selection, Expr::IsNotNull(Box::new(key)));
                    }
                }
            }
            NearMiss::OrderDirectionFlip => {
                if let Some(OrderByKind::Expressions(items)) =
                    query.order_by.as_mut().map(|o| &mut o.kind)
                {
                    for item in items {
                        if self.hit() {
                            item.options.sort = match item.options.sort {
                                Some(OrderBySort::Desc) => Some(OrderBySort::Asc),
                                _ => Some(OrderBySort::Desc),
                            };
                        }
                    }
                }
            }
            NearMiss::AggregateSubstitute | NearMiss::EqualsToLike | NearMiss::NotInNotNull => {}
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match self.miss {
            NearMiss::AggregateSubstitute => {
                if let Expr::Function(function) = expr {
                    let name = function.name.to_string().to_uppercase();
                    let star = matches!(&function.args, FunctionArguments::List(list)
                        if list.args.iter().any(|a| matches!(a, FunctionArg::Unnamed(FunctionArgExpr::Wildcard))));
                    if AGGREGATES.contains(&name.as_str()) && !star {
                        for other in AGGREGATES.iter().filter(|a| **a != name) {
                            if self.hit() {
                                function.name = ObjectName::from(vec![Ident::new(*other)]);
                            }
                        }
                    }
                }
            }
            NearMiss::EqualsToLike => {
                if let Some(like) = loosened(expr) {
                    if self.hit() {
                        *expr = like;
                    }
                }
            }
            NearMiss::NotInNotNull => {
                if let Expr::InSubquery {
                    negated: true,
                    subquery,
                    ..
                } = expr
                {
                    if let SetExpr::Select(select) = subquery.body.as_mut() {
                        if let [SelectItem::UnnamedExpr(column)
                        | SelectItem::ExprWithAlias { expr: column, .. }] =
                            select.projection.as_slice()
                        {
                            if is_column(column) && self.hit() {
                                let not_null = Expr::IsNotNull(Box::new(column.clone()));
                                and_also(&mut select.selection, not_null);
                            }
                        }
                    }
                }
            }
            NearMiss::OrderDirectionFlip
            | NearMiss::GroupBySwap
            | NearMiss::LimitToExtreme
            | NearMiss::OrderKeyNotNull
            | NearMiss::SetOpToIn
            | NearMiss::CountStarToColumn
            | NearMiss::JoinToParent => {}
        }
        ControlFlow::Continue(())
    }
}

impl<'s> Sites<'s> {
    /// The tables of the schema a `SELECT` reads, each with the name the query gives it (its
    /// alias, else its name as written).
    fn tables_read(&self, select: &Select) -> Vec<(Vec<Ident>, &'s Table)> {
        let mut found = Vec::new();
        for from in &select.from {
            let factors =
                std::iter::once(&from.relation).chain(from.joins.iter().map(|j| &j.relation));
            for factor in factors {
                let TableFactor::Table { name, alias, .. } = factor else {
                    continue;
                };
                let qualifier: Vec<Ident> = match alias {
                    Some(alias) => vec![alias.name.clone()],
                    None => name
                        .0
                        .iter()
                        .filter_map(|part| part.as_ident().cloned())
                        .collect(),
                };
                let table = name
                    .0
                    .last()
                    .and_then(|part| part.as_ident())
                    .and_then(|last| {
                        self.schema
                            .tables
                            .iter()
                            .find(|t| t.name.eq_ignore_ascii_case(&last.value))
                    });
                if let Some(table) = table {
                    found.push((qualifier, table));
                }
            }
        }
        found
    }

    /// Each nullable foreign key of a table a `SELECT` reads, joined to its parent under a new
    /// alias.
    fn join_parents(&mut self, body: &mut SetExpr) {
        let SetExpr::Select(select) = body else {
            return;
        };
        let mut joins = Vec::new();
        for (qualifier, table) in self.tables_read(select) {
            for key in &self.schema.foreign_keys {
                let nullable = table.columns.iter().any(|c| {
                    c.name.eq_ignore_ascii_case(&key.from.column) && !c.not_null && !c.primary_key
                });
                if !key.from.table.eq_ignore_ascii_case(&table.name) || !nullable {
                    continue;
                }
                let mut child = qualifier.clone();
                child.push(plain_or_quoted(&key.from.column));
                let sql = format!(
                    "SELECT 1 FROM t JOIN {} AS sqlgate_parent ON {} = sqlgate_parent.{}",
                    plain_or_quoted(&key.to.table),
                    Expr::CompoundIdentifier(child),
                    plain_or_quoted(&key.to.column)
                );
                let join = parse_query(&sql).ok().and_then(|q| match *q.body {
                    SetExpr::Select(mut s) => s.from.pop().and_then(|mut f| f.joins.pop()),
                    _ => None,
                });
                joins.extend(join);
            }
        }
        let Some(last) = select.from.last_mut() else {
            return;
        };
        for join in joins {
            if self.hit() {
                last.joins.push(join);
            }
        }
    }

    /// Each `count(*)` a `SELECT` returns, once for every column of its tables that may hold
    /// NULL (named through the table's alias).
    fn count_columns(&mut self, body: &mut SetExpr) {
        let SetExpr::Select(select) = body else {
            return;
        };
        let mut columns: Vec<Expr> = Vec::new();
        for (qualifier, table) in self.tables_read(select) {
            for column in table
                .columns
                .iter()
                .filter(|c| !c.not_null && !c.primary_key)
            {
                let mut parts = qualifier.clone();
                parts.push(plain_or_quoted(&column.name));
                columns.push(Expr::CompoundIdentifier(parts));
            }
        }
        for item in &mut select.projection {
            let (SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. }) = item
            else {
                continue;
            };
            let Expr::Function(function) = expr else {
                continue;
            };
            let FunctionArguments::List(list) = &mut function.args else {
                continue;
            };
            let star = function.name.to_string().eq_ignore_ascii_case("count")
                && matches!(
                    list.args.as_slice(),
                    [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)]
                );
            if !star {
                continue;
            }
            for column in &columns {
                if self.hit() {
                    list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(column.clone()))];
                }
            }
        }
    }

    /// Each `SELECT` of `body` (the sides of a set operation too; a subquery is a query of its
    /// own, visited in turn): each GROUP BY column, once for every other column its `SELECT`
    /// returns or compares in a join condition.
    fn swap_group_keys(&mut self, body: &mut SetExpr) {
        match body {
            SetExpr::SetOperation { left, right, .. } => {
                self.swap_group_keys(left);
                self.swap_group_keys(right);
            }
            SetExpr::Select(select) => {
                let others = grouping_alternatives(select);
                if let GroupByExpr::Expressions(keys, _) = &mut select.group_by {
                    for key in keys.iter_mut().filter(|k| is_column(k)) {
                        let printed = key.to_string().to_lowercase();
                        for other in &others {
                            if other.to_string().to_lowercase() != printed && self.hit() {
                                *key = other.clone();
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// `query`, a single `SELECT ... ORDER BY k LIMIT 1`, with the ORDER BY and LIMIT replaced by
/// `k = ` the extreme of `k` over the same rows (max for DESC, min else): in WHERE when `k` is
/// not an aggregate and nothing is grouped, in HAVING when `k` aggregates the groups.
fn limit_to_extreme(query: &Query) -> Option<Query> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let OrderByKind::Expressions(keys) = &query.order_by.as_ref()?.kind else {
        return None;
    };
    let [key] = keys.as_slice() else {
        return None;
    };
    let limit_one = matches!(
        &query.limit_clause,
        Some(sqlparser::ast::LimitClause::LimitOffset { limit: Some(limit), offset: None, limit_by })
            if limit_by.is_empty() && limit.to_string() == "1"
    );
    if !limit_one || query.with.is_some() || query.fetch.is_some() {
        return None;
    }
    let extreme = match key.options.sort {
        Some(OrderBySort::Desc) => "max",
        _ => "min",
    };
    let key = returned_expr(select, &key.expr);
    let aggregate = matches!(&key, Expr::Function(f)
        if AGGREGATES.contains(&f.name.to_string().to_uppercase().as_str()));
    let grouped = !matches!(&select.group_by, GroupByExpr::Expressions(keys, _) if keys.is_empty());
    let from: Vec<String> = select.from.iter().map(ToString::to_string).collect();
    let clause = |word: &str, expr: &Option<Expr>| {
        expr.as_ref()
            .map_or(String::new(), |e| format!(" {word} {e}"))
    };
    let rows = format!(
        "FROM {}{}",
        from.join(", "),
        clause("WHERE", &select.selection)
    );
    let bound = match (aggregate, grouped) {
        (false, false) => format!("SELECT {extreme}({key}) {rows}"),
        (true, true) => format!(
            "SELECT {extreme}(sqlgate_extreme) FROM (SELECT {key} AS sqlgate_extreme {rows} \
             {}{})",
            select.group_by,
            clause("HAVING", &select.having)
        ),
        _ => return None,
    };
    let bound = Expr::Subquery(Box::new(parse_query(&bound).ok()?));
    let condition = Expr::BinaryOp {
        left: Box::new(key),
        op: BinaryOperator::Eq,
        right: Box::new(bound),
    };
    let mut rewritten = query.clone();
    rewritten.order_by = None;
    rewritten.limit_clause = None;
    let SetExpr::Select(select) = rewritten.body.as_mut() else {
        return None;
    };
    let target = if grouped {
        &mut select.having
    } else {
        &mut select.selection
    };
    and_also(target, condition);
    Some(rewritten)
}

/// The ORDER BY keys of a single `SELECT ... LIMIT n` that are columns (as the SELECT returns
/// them).
fn order_keys_of_a_limit(query: &Query) -> Vec<Expr> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return Vec::new();
    };
    let Some(OrderByKind::Expressions(keys)) = query.order_by.as_ref().map(|o| &o.kind) else {
        return Vec::new();
    };
    if query.limit_clause.is_none() {
        return Vec::new();
    }
    keys.iter()
        .map(|key| returned_expr(select, &key.expr))
        .filter(is_column)
        .collect()
}

/// `SELECT e ... EXCEPT SELECT ...` as `SELECT e ... WHERE e NOT IN (SELECT ...)` (a tuple of
/// the returned expressions when there are several), `INTERSECT` as `IN`; `None` for any other
/// shape (a `*`, a grouped or `DISTINCT` left side, a set operation on the left).
fn set_op_to_in(query: &Query) -> Option<Query> {
    let SetExpr::SetOperation {
        op, left, right, ..
    } = query.body.as_ref()
    else {
        return None;
    };
    let negated = match op {
        sqlparser::ast::SetOperator::Except => true,
        sqlparser::ast::SetOperator::Intersect => false,
        _ => return None,
    };
    let SetExpr::Select(select) = left.as_ref() else {
        return None;
    };
    let grouped = !matches!(&select.group_by, GroupByExpr::Expressions(keys, _) if keys.is_empty());
    if grouped || select.having.is_some() || select.distinct.is_some() {
        return None;
    }
    let returned: Vec<String> = select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => {
                Some(expr.to_string())
            }
            _ => None,
        })
        .collect::<Option<_>>()?;
    let tested = match returned.as_slice() {
        [one] => one.clone(),
        many => format!("({})", many.join(", ")),
    };
    let not = if negated { "NOT " } else { "" };
    let condition = parse_query(&format!("SELECT 1 WHERE {tested} {not}IN ({right})")).ok()?;
    let SetExpr::Select(probe) = *condition.body else {
        return None;
    };
    let mut select = select.clone();
    and_also(&mut select.selection, probe.selection?);
    let mut rewritten = query.clone();
    *rewritten.body = SetExpr::Select(select);
    Some(rewritten)
}

/// `clause` with `condition` joined to it by AND (the old condition kept whole).
fn and_also(clause: &mut Option<Expr>, condition: Expr) {
    *clause = Some(match clause.take() {
        Some(old) => Expr::BinaryOp {
            left: Box::new(Expr::Nested(Box::new(old))),
            op: BinaryOperator::And,
            right: Box::new(condition),
        },
        None => condition,
    });
}

/// The expression an ORDER BY key stands for: a result column's when it names that column's
/// alias or position, else itself.
fn returned_expr(select: &Select, key: &Expr) -> Expr {
    let position = match key {
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::Number(n, _) => n.parse::<usize>().ok(),
            _ => None,
        },
        _ => None,
    };
    select
        .projection
        .iter()
        .enumerate()
        .find_map(|(i, item)| match item {
            SelectItem::ExprWithAlias { expr, alias }
                if matches!(key, Expr::Identifier(name) if name.value.eq_ignore_ascii_case(&alias.value)) =>
            {
                Some(expr.clone())
            }
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. }
                if position == Some(i + 1) =>
            {
                Some(expr.clone())
            }
            _ => None,
        })
        .unwrap_or_else(|| key.clone())
}

/// `name` as an identifier, quoted unless it is a plain word.
fn plain_or_quoted(name: &str) -> Ident {
    let plain = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        Ident::new(name)
    } else {
        Ident::with_quote('"', name)
    }
}

fn is_column(expr: &Expr) -> bool {
    matches!(expr, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
}

/// The columns a `SELECT` returns as they are, then those its joins compare, each once.
fn grouping_alternatives(select: &Select) -> Vec<Expr> {
    let mut found: Vec<Expr> = Vec::new();
    let mut add = |expr: &Expr| {
        if is_column(expr) && !found.contains(expr) {
            found.push(expr.clone());
        }
    };
    for item in &select.projection {
        if let SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } = item {
            add(expr);
        }
    }
    for from in &select.from {
        for join in &from.joins {
            if let JoinOperator::Join(JoinConstraint::On(on))
            | JoinOperator::Inner(JoinConstraint::On(on)) = &join.join_operator
            {
                for condition in crate::mutate::conjuncts(on) {
                    if let Expr::BinaryOp {
                        left,
                        op: BinaryOperator::Eq,
                        right,
                    } = condition
                    {
                        add(left);
                        add(right);
                    }
                }
            }
        }
    }
    found
}

/// `column = 'text'` (either side) as `column LIKE 'text'`.
fn loosened(expr: &Expr) -> Option<Expr> {
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    } = expr
    else {
        return None;
    };
    let (column, text) = if is_text_literal(right) {
        (left, right)
    } else if is_text_literal(left) {
        (right, left)
    } else {
        return None;
    };
    Some(Expr::Like {
        negated: false,
        any: false,
        expr: column.clone(),
        pattern: text.clone(),
        escape_char: None,
    })
}

fn is_text_literal(expr: &Expr) -> bool {
    matches!(expr, Expr::Value(v) if matches!(v.value, sqlparser::ast::Value::SingleQuotedString(_)))
}

/// Equivalent rewrites of `gold` (name, SQL) that differ from it in text.
pub fn rewrites(gold: &str) -> Vec<(&'static str, String)> {
    let Ok(query) = parse_query(gold) else {
        return Vec::new();
    };
    let body = gold.trim().trim_end_matches(';');
    let mut found = vec![(
        "cte_wrapper",
        format!("WITH distill_wrapped AS ({body}) SELECT * FROM distill_wrapped"),
    )];
    let mut swapped = query.clone();
    let _ = swapped.visit(&mut SwapAnd);
    found.push(("and_swapped", swapped.to_string()));
    let mut realiased = query.clone();
    let mut aliases = Realias::default();
    let _ = realiased.visit(&mut aliases);
    if !aliases.renamed.is_empty() {
        let _ = realiased.visit(&mut aliases);
        found.push(("tables_realiased", realiased.to_string()));
    }
    let printed = query.to_string();
    found.retain(|(_, sql)| *sql != printed && parse_query(sql).is_ok());
    found
}

struct SwapAnd;

impl VisitorMut for SwapAnd {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } = expr
        {
            std::mem::swap(left, right);
        }
        ControlFlow::Continue(())
    }
}

/// Renames every table alias `a` to `a_r` (first walk), then every `a.column` (second walk).
#[derive(Default)]
struct Realias {
    renamed: HashSet<String>,
}

impl VisitorMut for Realias {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table {
            alias: Some(alias), ..
        } = factor
        {
            let old = alias.name.value.to_lowercase();
            if !old.ends_with("_r") {
                alias.name = Ident::new(format!("{}_r", alias.name.value));
                self.renamed.insert(old);
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::CompoundIdentifier(parts) = expr {
            if parts.len() == 2 && self.renamed.contains(&parts[0].value.to_lowercase()) {
                parts[0] = Ident::new(format!("{}_r", parts[0].value));
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlgate_eval::exec::schema::{ColRef, Column, ForeignKey};

    /// `CAR_MAKERS(Id, Maker, FullName NOT NULL)` and `MODEL_LIST(ModelId, Maker, Model)`, keys
    /// first, `MODEL_LIST.Maker` referencing `CAR_MAKERS.Id`.
    fn schema() -> Schema {
        let column = |name: &str, primary_key: bool, not_null: bool| Column {
            name: name.to_string(),
            decl_type: "TEXT".to_string(),
            primary_key,
            not_null,
        };
        let table = |name: &str, columns: Vec<Column>| Table {
            name: name.to_string(),
            columns,
        };
        Schema {
            tables: vec![
                table(
                    "CAR_MAKERS",
                    vec![
                        column("Id", true, false),
                        column("Maker", false, false),
                        column("FullName", false, true),
                    ],
                ),
                table(
                    "MODEL_LIST",
                    vec![
                        column("ModelId", true, false),
                        column("Maker", false, false),
                        column("Model", false, false),
                    ],
                ),
            ],
            foreign_keys: vec![ForeignKey {
                from: ColRef::new("MODEL_LIST", "Maker"),
                to: ColRef::new("CAR_MAKERS", "Id"),
            }],
        }
    }

    fn of(gold: &str, operator: &str) -> Vec<String> {
        neighbours(gold, &schema())
            .into_iter()
            .filter(|n| n.operator == operator)
            .map(|n| n.sql)
            .collect()
    }

    #[test]
    fn a_group_by_column_is_swapped_for_the_columns_returned_and_joined() {
        let gold = "SELECT T2.Name FROM course_arrange AS T1 JOIN teacher AS T2 \
                    ON T1.Teacher_ID = T2.Teacher_ID GROUP BY T2.Name HAVING COUNT(*) >= 2";
        let swapped = of(gold, "group_by_swap");
        assert_eq!(
            swapped,
            [
                gold.replace("GROUP BY T2.Name", "GROUP BY T1.Teacher_ID"),
                gold.replace("GROUP BY T2.Name", "GROUP BY T2.Teacher_ID"),
            ]
        );
        assert!(of("SELECT count(*) FROM t GROUP BY 1", "group_by_swap").is_empty());
    }

    #[test]
    fn near_misses_flip_order_swap_aggregates_and_loosen_equality() {
        let gold = "SELECT name, count(*) FROM t WHERE city = 'Rome' GROUP BY name \
                    ORDER BY max(age) DESC, name";
        assert_eq!(of(gold, "order_direction_flip").len(), 2);
        assert!(of(gold, "order_direction_flip")[0].contains("max(age) ASC"));
        let swapped = of(gold, "aggregate_substitute");
        assert_eq!(swapped.len(), 4, "count(*) stays, max gets four others");
        assert!(swapped.iter().any(|s| s.contains("ORDER BY AVG(age)")));
        assert_eq!(
            of(gold, "equals_to_like"),
            [gold.replace("= 'Rome'", "LIKE 'Rome'")]
        );
        let all = neighbours(gold, &schema());
        assert!(all.iter().any(|n| n.operator == "where_remove"));
        let texts: HashSet<&str> = all.iter().map(|n| n.sql.as_str()).collect();
        assert_eq!(texts.len(), all.len(), "each neighbour once");
    }

    #[test]
    fn a_limit_one_becomes_the_extreme_in_where_or_having() {
        assert_eq!(
            of(
                "SELECT name FROM shop WHERE city = 'Rome' ORDER BY products DESC LIMIT 1",
                "limit_to_extreme"
            ),
            [
                "SELECT name FROM shop WHERE (city = 'Rome') AND products = \
              (SELECT max(products) FROM shop WHERE city = 'Rome')"
            ]
        );
        assert_eq!(
            of(
                "SELECT T1.name FROM a AS T1 JOIN b AS T2 ON T1.id = T2.a GROUP BY T1.id \
                 ORDER BY count(*) LIMIT 1",
                "limit_to_extreme"
            ),
            [
                "SELECT T1.name FROM a AS T1 JOIN b AS T2 ON T1.id = T2.a GROUP BY T1.id \
              HAVING count(*) = (SELECT min(sqlgate_extreme) FROM (SELECT count(*) AS \
              sqlgate_extreme FROM a AS T1 JOIN b AS T2 ON T1.id = T2.a GROUP BY T1.id))"
            ]
        );
        // An alias names its column; a subquery's LIMIT 1 is a site too.
        assert_eq!(
            of(
                "SELECT x FROM t WHERE y > (SELECT y FROM t AS u ORDER BY z DESC LIMIT 1)",
                "limit_to_extreme"
            ),
            ["SELECT x FROM t WHERE y > (SELECT y FROM t AS u WHERE z = \
              (SELECT max(z) FROM t AS u))"]
        );
        for gold in [
            "SELECT name FROM t ORDER BY a, b LIMIT 1",
            "SELECT name FROM t ORDER BY a LIMIT 2",
            "SELECT name FROM t ORDER BY a LIMIT 1 OFFSET 1",
            "SELECT count(*) FROM t ORDER BY count(*) LIMIT 1",
            "SELECT a FROM t UNION SELECT b FROM u ORDER BY 1 LIMIT 1",
        ] {
            assert!(of(gold, "limit_to_extreme").is_empty(), "{gold}");
        }
    }

    #[test]
    fn nulls_are_left_out_of_a_limits_order_key_and_a_not_in_subquery() {
        assert_eq!(
            of(
                "SELECT Money_Rank AS r FROM poker_player WHERE x > 1 ORDER BY Earnings DESC, \
                 r LIMIT 1",
                "order_key_not_null"
            ),
            [
                "SELECT Money_Rank AS r FROM poker_player WHERE (x > 1) AND Earnings IS NOT NULL \
                 ORDER BY Earnings DESC, r LIMIT 1",
                "SELECT Money_Rank AS r FROM poker_player WHERE (x > 1) AND Money_Rank IS NOT NULL \
                 ORDER BY Earnings DESC, r LIMIT 1",
            ]
        );
        // Without a LIMIT, or keyed by an aggregate, NULLs do not decide which rows come back.
        assert!(of("SELECT a FROM t ORDER BY a", "order_key_not_null").is_empty());
        assert!(of(
            "SELECT a FROM t GROUP BY a ORDER BY count(*) LIMIT 1",
            "order_key_not_null"
        )
        .is_empty());
        assert_eq!(
            of(
                "SELECT id FROM ch WHERE id NOT IN (SELECT channel FROM cartoon WHERE d = 'B') \
                 AND id IN (SELECT c FROM u)",
                "not_in_not_null"
            ),
            [
                "SELECT id FROM ch WHERE id NOT IN (SELECT channel FROM cartoon WHERE (d = 'B') \
              AND channel IS NOT NULL) AND id IN (SELECT c FROM u)"
            ]
        );
        assert!(of(
            "SELECT id FROM ch WHERE id NOT IN (SELECT max(c) FROM u)",
            "not_in_not_null"
        )
        .is_empty());
    }

    #[test]
    fn count_star_counts_each_column_that_may_hold_null() {
        let gold = "SELECT count(*) FROM CAR_MAKERS AS T1 JOIN MODEL_LIST AS T2 \
                    ON T1.Id = T2.Maker WHERE T1.FullName = 'AMC'";
        assert_eq!(
            of(gold, "count_star_to_column"),
            ["T1.Maker", "T2.Maker", "T2.Model"]
                .map(|c| gold.replace("count(*)", &format!("count({c})")))
        );
        assert_eq!(
            of("SELECT count(*) FROM model_list", "count_star_to_column"),
            ["model_list.Maker", "model_list.Model"]
                .map(|c| format!("SELECT count({c}) FROM model_list"))
        );
        assert!(of("SELECT count(*) FROM other", "count_star_to_column").is_empty());
        assert!(of(
            "SELECT count(Model) FROM model_list",
            "count_star_to_column"
        )
        .is_empty());
    }

    #[test]
    fn a_nullable_foreign_key_is_joined_to_its_parent() {
        assert_eq!(
            of(
                "SELECT count(*) FROM model_list AS T2 WHERE T2.Model = 'x'",
                "join_to_parent"
            ),
            [
                "SELECT count(*) FROM model_list AS T2 JOIN CAR_MAKERS AS sqlgate_parent \
              ON T2.Maker = sqlgate_parent.Id WHERE T2.Model = 'x'"
            ]
        );
        // In a subquery too; a table without foreign keys gets none.
        assert_eq!(
            of(
                "SELECT Id FROM car_makers WHERE Id IN (SELECT Maker FROM model_list)",
                "join_to_parent"
            ),
            [
                "SELECT Id FROM car_makers WHERE Id IN (SELECT Maker FROM model_list \
              JOIN CAR_MAKERS AS sqlgate_parent ON model_list.Maker = sqlgate_parent.Id)"
            ]
        );
    }

    #[test]
    fn except_becomes_not_in_and_intersect_in() {
        assert_eq!(
            of(
                "SELECT id FROM TV_Channel EXCEPT SELECT channel FROM cartoon WHERE \
                 directed_by = 'Ben Jones'",
                "set_op_to_in"
            ),
            [
                "SELECT id FROM TV_Channel WHERE id NOT IN (SELECT channel FROM cartoon WHERE \
              directed_by = 'Ben Jones')"
            ]
        );
        assert_eq!(
            of(
                "SELECT T1.c, T1.n FROM p AS T1 JOIN m AS T2 ON T1.id = T2.w WHERE T2.t = 'A' \
                 INTERSECT SELECT T1.c, T1.n FROM p AS T1 JOIN m AS T2 ON T1.id = T2.w \
                 WHERE T2.t = 'B'",
                "set_op_to_in"
            ),
            [
                "SELECT T1.c, T1.n FROM p AS T1 JOIN m AS T2 ON T1.id = T2.w WHERE (T2.t = 'A') \
              AND (T1.c, T1.n) IN (SELECT T1.c, T1.n FROM p AS T1 JOIN m AS T2 ON \
              T1.id = T2.w WHERE T2.t = 'B')"
            ]
        );
        for gold in [
            "SELECT a FROM t UNION SELECT b FROM u",
            "SELECT * FROM t EXCEPT SELECT * FROM u",
            "SELECT DISTINCT a FROM t EXCEPT SELECT b FROM u",
            "SELECT a FROM t GROUP BY a EXCEPT SELECT b FROM u",
        ] {
            assert!(of(gold, "set_op_to_in").is_empty(), "{gold}");
        }
    }

    #[test]
    fn rewrites_wrap_swap_and_realias() {
        let gold =
            "SELECT T1.a FROM t AS T1 JOIN u AS T2 ON T1.id = T2.id WHERE T1.x = 1 AND T2.y = 2";
        let rewrites = rewrites(gold);
        let named = |name: &str| rewrites.iter().find(|(n, _)| *n == name).unwrap().1.clone();
        assert!(named("cte_wrapper").starts_with("WITH distill_wrapped AS (SELECT T1.a"));
        assert!(named("and_swapped").ends_with("WHERE T2.y = 2 AND T1.x = 1"));
        assert_eq!(
            named("tables_realiased"),
            "SELECT T1_r.a FROM t AS T1_r JOIN u AS T2_r ON T1_r.id = T2_r.id \
             WHERE T1_r.x = 1 AND T2_r.y = 2"
        );
    }
}
