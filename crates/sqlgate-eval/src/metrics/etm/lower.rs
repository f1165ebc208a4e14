//! Lowering sqlparser's AST into the ETM tree ([`super::tree`]), with the shapes sqlglot gives
//! the same constructs: `x IS NOT NULL` is `Not(Is(x, Null))`, `NOT IN` wraps an `In`, a table
//! is `Table(this: Identifier, alias: TableAlias)`, a derived table a `Subquery` with an alias,
//! ORDER BY and LIMIT belong to the SELECT (or to the set operation), comma joins are plain
//! joins, and `COUNT(DISTINCT x)` is `Count(Distinct(x))`. Whatever no rule looks into is kept
//! as its SQL text (`Raw`).

use sqlparser::ast::{
    self, BinaryOperator, Distinct, DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, GroupByExpr, JoinConstraint, JoinOperator, LimitClause, ObjectName,
    ObjectNamePart, OrderByKind, OrderBySort, Query, SelectItem, SelectItemQualifiedWildcardKind,
    SetExpr, SetOperator, SetQuantifier, TableFactor, UnaryOperator, Value,
};

use super::tree::{Field, Key, Kind, Node};

pub fn query(query: &Query) -> Node {
    let mut node = set_expr(&query.body);
    if let Some(with) = &query.with {
        let ctes = with
            .cte_tables
            .iter()
            .map(|cte| {
                Node::new(Kind::Cte)
                    .with(Key::This, self::query(&cte.query))
                    .with(
                        Key::Alias,
                        Node::new(Kind::TableAlias).with(Key::This, ident(&cte.alias.name)),
                    )
            })
            .collect::<Vec<_>>();
        node.set(
            Key::With,
            Node::new(Kind::With).with(Key::Expressions, ctes),
        );
    }
    if let Some(order_by) = &query.order_by {
        if let OrderByKind::Expressions(items) = &order_by.kind {
            let ordered = items
                .iter()
                .map(|item| {
                    let desc = matches!(item.options.sort, Some(OrderBySort::Desc));
                    Node::unary(Kind::Ordered, expr(&item.expr)).with(Key::Desc, desc)
                })
                .collect::<Vec<_>>();
            node.set(
                Key::Order,
                Node::new(Kind::Order).with(Key::Expressions, ordered),
            );
        }
    }
    let (limit, offset) = match &query.limit_clause {
        Some(LimitClause::LimitOffset { limit, offset, .. }) => {
            (limit.as_ref(), offset.as_ref().map(|o| &o.value))
        }
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit), Some(offset)),
        None => (None, None),
    };
    if let Some(limit) = limit {
        node.set(
            Key::Limit,
            Node::new(Kind::Limit).with(Key::Expression, expr(limit)),
        );
    }
    if let Some(offset) = offset {
        node.set(
            Key::Offset,
            Node::new(Kind::Offset).with(Key::Expression, expr(offset)),
        );
    }
    node
}

fn set_expr(body: &SetExpr) -> Node {
    match body {
        SetExpr::Select(select) => self::select(select),
        SetExpr::Query(inner) => Node::unary(Kind::Subquery, query(inner)),
        SetExpr::SetOperation {
            op,
            set_quantifier,
            left,
            right,
        } => {
            let kind = match op {
                SetOperator::Union => Kind::Union,
                SetOperator::Intersect => Kind::Intersect,
                SetOperator::Except | SetOperator::Minus => Kind::Except,
            };
            let all = matches!(
                set_quantifier,
                SetQuantifier::All | SetQuantifier::AllByName
            );
            Node::binary(kind, set_expr(left), set_expr(right)).with(Key::Distinct, !all)
        }
        other => raw(other),
    }
}

fn select(select: &ast::Select) -> Node {
    let mut node = Node::new(Kind::Select);
    if matches!(select.distinct, Some(Distinct::Distinct)) {
        node.set(Key::Distinct, Node::new(Kind::Distinct));
    }
    let items = select
        .projection
        .iter()
        .map(select_item)
        .collect::<Vec<_>>();
    node.set(Key::Expressions, items);
    let mut joins = Vec::new();
    for (index, item) in select.from.iter().enumerate() {
        let relation = table_factor(&item.relation);
        if index == 0 {
            node.set(Key::From, Node::unary(Kind::From, relation));
        } else {
            joins.push(Node::unary(Kind::Join, relation));
        }
        joins.extend(item.joins.iter().map(join));
    }
    node.set(Key::Joins, joins);
    if let Some(selection) = &select.selection {
        node.set(Key::Where, Node::unary(Kind::Where, expr(selection)));
    }
    if let GroupByExpr::Expressions(exprs, _) = &select.group_by {
        let items = exprs.iter().map(expr).collect::<Vec<_>>();
        if !items.is_empty() {
            node.set(
                Key::Group,
                Node::new(Kind::Group).with(Key::Expressions, items),
            );
        }
    }
    if let Some(having) = &select.having {
        node.set(Key::Having, Node::unary(Kind::Having, expr(having)));
    }
    node
}

fn select_item(item: &SelectItem) -> Node {
    match item {
        SelectItem::UnnamedExpr(e) => expr(e),
        SelectItem::ExprWithAlias { expr: e, alias } => {
            Node::unary(Kind::Alias, expr(e)).with(Key::Alias, ident(alias))
        }
        SelectItem::Wildcard(_) => Node::new(Kind::Star),
        SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
            qualified(name, Node::new(Kind::Star))
        }
        other => raw(other),
    }
}

/// `a.b.c` → `Column(this: c, table: b, db: a)`; the last part is `this`.
fn qualified(name: &ObjectName, this: Node) -> Node {
    let parts: Vec<Node> = name
        .0
        .iter()
        .map(|part| match part {
            ObjectNamePart::Identifier(id) => ident(id),
            other => raw(other),
        })
        .collect();
    let mut column = Node::new(Kind::Column).with(Key::This, this);
    if let Some(table) = parts.last() {
        column.set(Key::Table, table.clone());
    }
    column
}

fn table_factor(factor: &TableFactor) -> Node {
    match factor {
        TableFactor::Table { name, alias, .. } if name.0.len() == 1 => {
            let ObjectNamePart::Identifier(id) = &name.0[0] else {
                return raw(factor);
            };
            Node::unary(Kind::Table, ident(id))
                .with_opt(Key::Alias, alias.as_ref().map(table_alias))
        }
        TableFactor::Derived {
            subquery, alias, ..
        } => Node::unary(Kind::Subquery, query(subquery))
            .with_opt(Key::Alias, alias.as_ref().map(table_alias)),
        other => raw(other),
    }
}

fn table_alias(alias: &ast::TableAlias) -> Node {
    Node::unary(Kind::TableAlias, ident(&alias.name))
}

fn join(join: &ast::Join) -> Node {
    let (side, kind, constraint) = match &join.join_operator {
        JoinOperator::Join(c) => (None, None, c),
        JoinOperator::Inner(c) => (None, Some("INNER"), c),
        JoinOperator::Left(c) => (Some("LEFT"), None, c),
        JoinOperator::LeftOuter(c) => (Some("LEFT"), Some("OUTER"), c),
        JoinOperator::Right(c) => (Some("RIGHT"), None, c),
        JoinOperator::RightOuter(c) => (Some("RIGHT"), Some("OUTER"), c),
        JoinOperator::FullOuter(c) => (Some("FULL"), Some("OUTER"), c),
        JoinOperator::CrossJoin(c) => (None, Some("CROSS"), c),
        _ => return Node::unary(Kind::Join, raw(join)),
    };
    let mut node = Node::unary(Kind::Join, table_factor(&join.relation));
    if let Some(side) = side {
        node.set(Key::Side, side);
    }
    if let Some(kind) = kind {
        node.set(Key::JoinKind, kind);
    }
    match constraint {
        JoinConstraint::On(on) => node.set(Key::On, expr(on)),
        JoinConstraint::Using(names) => {
            let columns = names
                .iter()
                .map(|name| qualified(name, Node::new(Kind::Star)))
                .map(|column| column.node(Key::Table).cloned().unwrap_or(column))
                .collect::<Vec<_>>();
            node.set(Key::Using, columns);
        }
        JoinConstraint::Natural => node.set(Key::Method, "NATURAL"),
        JoinConstraint::None => {}
    }
    node
}

fn ident(id: &ast::Ident) -> Node {
    Node::ident(&id.value, id.quote_style.is_some())
}

fn raw(value: &impl std::fmt::Display) -> Node {
    Node::new(Kind::Raw).with(Key::This, Field::Text(value.to_string()))
}

fn negated(node: Node, negated: bool) -> Node {
    if negated {
        Node::unary(Kind::Not, node)
    } else {
        node
    }
}

pub fn expr(e: &Expr) -> Node {
    match e {
        Expr::Identifier(id) => Node::unary(Kind::Column, ident(id)),
        Expr::CompoundIdentifier(parts) => match parts.as_slice() {
            [table, column] => {
                Node::unary(Kind::Column, ident(column)).with(Key::Table, ident(table))
            }
            _ => raw(e),
        },
        Expr::Value(value) => literal(&value.value).unwrap_or_else(|| raw(e)),
        Expr::Nested(inner) => Node::unary(Kind::Paren, expr(inner)),
        Expr::BinaryOp { left, op, right } => binary(op, expr(left), expr(right)),
        Expr::UnaryOp { op, expr: inner } => match op {
            UnaryOperator::Not => Node::unary(Kind::Not, expr(inner)),
            UnaryOperator::Minus => Node::unary(Kind::Neg, expr(inner)),
            UnaryOperator::Plus => expr(inner),
            _ => raw(e),
        },
        Expr::IsNull(inner) => is_null(inner),
        Expr::IsNotNull(inner) => Node::unary(Kind::Not, is_null(inner)),
        Expr::InList {
            expr: inner,
            list,
            negated: not,
        } => negated(
            Node::unary(Kind::In, expr(inner))
                .with(Key::Expressions, list.iter().map(expr).collect::<Vec<_>>()),
            *not,
        ),
        Expr::InSubquery {
            expr: inner,
            subquery,
            negated: not,
        } => negated(
            Node::unary(Kind::In, expr(inner))
                .with(Key::Query, Node::unary(Kind::Subquery, query(subquery))),
            *not,
        ),
        Expr::Between {
            expr: inner,
            negated: not,
            low,
            high,
        } => negated(
            Node::unary(Kind::Between, expr(inner))
                .with(Key::Low, expr(low))
                .with(Key::High, expr(high)),
            *not,
        ),
        Expr::Like {
            negated: not,
            any: false,
            expr: inner,
            pattern,
            escape_char,
        }
        | Expr::ILike {
            negated: not,
            any: false,
            expr: inner,
            pattern,
            escape_char,
        } => {
            let kind = if matches!(e, Expr::ILike { .. }) {
                Kind::ILike
            } else {
                Kind::Like
            };
            negated(like(kind, inner, pattern, escape_char.as_deref()), *not)
        }
        Expr::Cast {
            expr: inner,
            data_type,
            format: None,
            ..
        } => Node::unary(Kind::Cast, expr(inner)).with(
            Key::To,
            Node::new(Kind::DataType).with(Key::This, Field::Text(type_name(data_type))),
        ),
        Expr::Substring {
            expr: inner,
            substring_from,
            substring_for,
            ..
        } => Node::unary(Kind::Substring, expr(inner))
            .with_opt(Key::Start, substring_from.as_deref().map(expr))
            .with_opt(Key::Length, substring_for.as_deref().map(expr)),
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            let branches = conditions
                .iter()
                .map(|when| {
                    Node::unary(Kind::If, expr(&when.condition)).with(Key::True, expr(&when.result))
                })
                .collect::<Vec<_>>();
            Node::new(Kind::Case)
                .with_opt(Key::This, operand.as_deref().map(expr))
                .with(Key::Ifs, branches)
                .with_opt(Key::Default, else_result.as_deref().map(expr))
        }
        Expr::Exists {
            subquery,
            negated: not,
        } => negated(Node::unary(Kind::Exists, query(subquery)), *not),
        Expr::Subquery(inner) => Node::unary(Kind::Subquery, query(inner)),
        Expr::Function(function) => self::function(function).unwrap_or_else(|| raw(e)),
        _ => raw(e),
    }
}

fn is_null(inner: &Expr) -> Node {
    Node::binary(Kind::Is, expr(inner), Node::new(Kind::Null))
}

fn like(kind: Kind, inner: &Expr, pattern: &Expr, escape: Option<&Expr>) -> Node {
    Node::binary(kind, expr(inner), expr(pattern)).with_opt(Key::Escape, escape.map(expr))
}

fn literal(value: &Value) -> Option<Node> {
    Some(match value {
        Value::Number(text, _) => Node::literal(text, false),
        Value::SingleQuotedString(text) => Node::literal(text, true),
        Value::Null => Node::new(Kind::Null),
        Value::Boolean(flag) => Node::new(Kind::Boolean).with(Key::This, *flag),
        _ => return None,
    })
}

fn binary(op: &BinaryOperator, left: Node, right: Node) -> Node {
    let kind = match op {
        BinaryOperator::Eq => Kind::Eq,
        BinaryOperator::NotEq => Kind::Neq,
        BinaryOperator::Gt => Kind::Gt,
        BinaryOperator::GtEq => Kind::Gte,
        BinaryOperator::Lt => Kind::Lt,
        BinaryOperator::LtEq => Kind::Lte,
        BinaryOperator::And => Kind::And,
        BinaryOperator::Or => Kind::Or,
        BinaryOperator::Plus => Kind::Add,
        BinaryOperator::Minus => Kind::Sub,
        BinaryOperator::Multiply => Kind::Mul,
        BinaryOperator::Divide => Kind::Div,
        BinaryOperator::Modulo => Kind::Mod,
        BinaryOperator::StringConcat => Kind::Concat,
        other => {
            return Node::binary(Kind::Binary, left, right)
                .with(Key::Op, Field::Text(other.to_string()));
        }
    };
    Node::binary(kind, left, right)
}

/// Aggregates, `IIF`, `SUBSTR` and `JULIANDAY`-like calls. `None` for call shapes no rule
/// needs to see into (named arguments, clauses inside the parentheses, ...).
fn function(function: &ast::Function) -> Option<Node> {
    let [ObjectNamePart::Identifier(name)] = function.name.0.as_slice() else {
        return None;
    };
    if function.filter.is_some() || function.over.is_some() || !function.within_group.is_empty() {
        return None;
    }
    let list = match &function.args {
        FunctionArguments::List(list) if list.clauses.is_empty() => list,
        FunctionArguments::None => {
            return Some(Node::new(Kind::Anonymous).with(Key::This, name.value.as_str()))
        }
        _ => return None,
    };
    let mut args = Vec::with_capacity(list.args.len());
    for arg in &list.args {
        match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => args.push(expr(e)),
            FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => args.push(Node::new(Kind::Star)),
            _ => return None,
        }
    }
    let distinct = matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct));
    let lower = name.value.to_lowercase();
    let aggregate = match lower.as_str() {
        "count" => Some(Kind::Count),
        "sum" => Some(Kind::Sum),
        "avg" => Some(Kind::Avg),
        "min" => Some(Kind::Min),
        "max" => Some(Kind::Max),
        _ => None,
    };
    if let Some(kind) = aggregate {
        if args.is_empty() {
            return None;
        }
        let rest = args.split_off(1);
        let first = args.pop()?;
        let this = if distinct {
            Node::new(Kind::Distinct).with(Key::Expressions, vec![first])
        } else {
            first
        };
        return Some(Node::unary(kind, this).with(Key::Expressions, rest));
    }
    if distinct {
        return None;
    }
    match (lower.as_str(), args.len()) {
        ("iif", 3) => {
            let mut args = args.into_iter();
            let (this, yes, no) = (args.next()?, args.next()?, args.next()?);
            Some(
                Node::unary(Kind::If, this)
                    .with(Key::True, yes)
                    .with(Key::False, no),
            )
        }
        ("substr" | "substring", 2 | 3) => {
            let mut args = args.into_iter();
            Some(
                Node::unary(Kind::Substring, args.next()?)
                    .with_opt(Key::Start, args.next())
                    .with_opt(Key::Length, args.next()),
            )
        }
        _ => Some(
            Node::new(Kind::Anonymous)
                .with(Key::This, name.value.as_str())
                .with(Key::Expressions, args),
        ),
    }
}

/// A CAST's type as sqlglot names it: its tokenizer reads synonyms as one type (`REAL` is
/// `FLOAT`, `INTEGER` is `INT`, `NUMERIC` is `DECIMAL`), and for SQLite each pair has the same
/// affinity. Parameters (`DECIMAL(10, 2)`) are kept.
fn type_name(data_type: &sqlparser::ast::DataType) -> String {
    let text = data_type.to_string().to_uppercase();
    let (name, parameters) = text.split_at(text.find('(').unwrap_or(text.len()));
    let canonical = match name.trim() {
        "REAL" | "FLOAT4" => "FLOAT",
        "INTEGER" | "INT4" => "INT",
        "NUMERIC" => "DECIMAL",
        "DOUBLE PRECISION" | "FLOAT8" => "DOUBLE",
        "INT8" => "BIGINT",
        "BOOL" => "BOOLEAN",
        other => other,
    };
    format!("{canonical}{parameters}")
}
