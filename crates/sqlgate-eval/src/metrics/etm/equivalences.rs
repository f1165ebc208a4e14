//! Equivalence rules 1-25 of `etm.md` §5.2 that rewrite a SELECT (3, 5, 21 and 26 work on
//! set operations and CTEs: [`super::sets`]). Each rule first checks the reference's
//! conditions, then the harness's guard through [`Cx::allowed`], which records a departure
//! when the guard alone stops the rule (and lets it fire under `--etm-compat`).

use super::rewrite::{any_below, check, everywhere, flatten, rewrite_below, Cx, RuleError, Slot};
use super::tree::{Key, Kind, Node};
use crate::exec::value::py_float_repr;

fn has_joins(select: &Node) -> bool {
    select.has_joins()
}

fn has_outer_join(select: &Node) -> bool {
    select.list(Key::Joins).iter().any(|j| j.has(Key::Side))
}

/// The table of a SELECT with one table and no joins.
fn single_table(select: &Node) -> Option<String> {
    if has_joins(select) {
        return None;
    }
    let from = select.node(Key::From)?.node(Key::This)?;
    from.table_name().map(str::to_string)
}

fn owned_column(node: &Node) -> Option<(String, String)> {
    node.qualified_column()
        .map(|(t, c)| (t.to_string(), c.to_string()))
}

fn where_condition(select: &Node) -> Option<&Node> {
    select.node(Key::Where)?.node(Key::This)
}

fn is_min_max(node: &Node) -> bool {
    matches!(node.kind, Kind::Min | Kind::Max)
}

/// Rule 1: `WHERE c = (SELECT MAX(c) FROM t)` → `ORDER BY c DESC LIMIT 1`.
pub fn rule1(tree: &mut Node, cx: &mut Cx) -> bool {
    if tree.has(Key::Order) || tree.has(Key::Limit) || !tree.has(Key::Where) {
        return false;
    }
    let whole_where = where_condition(tree).cloned();
    let outer_table = single_table(tree);
    let mut order: Option<(Node, bool)> = None;
    let Some(condition) = tree.node_mut(Key::Where) else {
        return false;
    };
    let changed = rewrite_below(
        condition,
        &mut |node, slot| {
            let Some((column, aggregate, subquery)) = min_max_equality(node) else {
                return false;
            };
            let Some((table, name)) = owned_column(column) else {
                return false;
            };
            if !cx.is_unique(1, &table, &name) || !cx.reaches(1, slot) {
                return false;
            }
            let is_min = aggregate.kind == Kind::Min;
            let guard = check(
                Some(&*node) == whole_where.as_ref()
                    && outer_table.as_deref() == Some(table.as_str())
                    && single_table(subquery).as_deref() == Some(table.as_str())
                    && !subquery.has(Key::Where)
                    && !subquery.has(Key::Group)
                    && !subquery.has(Key::Having),
                "D4",
                "the MIN/MAX equality is not the whole WHERE of the same single table",
            )
            .and(check(
                !is_min || cx.facts.is_non_null(&table, &name),
                "guard",
                "MIN over a nullable column (NULL sorts first)",
            ));
            if !cx.allowed(1, guard) {
                return false;
            }
            order = Some((column.clone(), !is_min));
            *node = Node::true_condition();
            true
        },
        &everywhere,
    );
    if let Some((column, desc)) = order {
        let ordered = Node::unary(Kind::Ordered, column).with(Key::Desc, desc);
        tree.set(
            Key::Order,
            Node::new(Kind::Order).with(Key::Expressions, vec![ordered]),
        );
        tree.set(
            Key::Limit,
            Node::new(Kind::Limit).with(Key::Expression, Node::literal("1.0", false)),
        );
    }
    changed
}

/// `c = (SELECT MIN/MAX(c) FROM t)` in either order: (c, the aggregate, the subquery).
fn min_max_equality(node: &Node) -> Option<(&Node, &Node, &Node)> {
    if node.kind != Kind::Eq {
        return None;
    }
    let (left, right) = node.operands()?;
    let (column, subquery) = if right.kind == Kind::Subquery {
        (left, right)
    } else if left.kind == Kind::Subquery {
        (right, left)
    } else {
        return None;
    };
    let select = subquery.node(Key::This)?;
    if select.kind != Kind::Select || !select.has(Key::From) || has_joins(select) {
        return None;
    }
    let [aggregate] = select.list(Key::Expressions) else {
        return None;
    };
    if !is_min_max(aggregate) || aggregate.node(Key::This) != Some(column) {
        return None;
    }
    column.qualified_column()?;
    Some((column, aggregate, select))
}

/// Rule 2: DISTINCT over a unique column, and `COUNT(DISTINCT c)` → `COUNT(c)`.
pub fn rule2(tree: &mut Node, cx: &mut Cx) -> bool {
    let joins = has_joins(tree);
    let guard = check(!tree.has(Key::Group), "guard", "DISTINCT with GROUP BY");
    let mut changed = false;
    if tree.has(Key::Distinct) && !joins {
        let unique_item = tree
            .list(Key::Expressions)
            .iter()
            .filter_map(owned_column)
            .any(|(table, column)| cx.is_unique(2, &table, &column));
        if unique_item && cx.allowed(2, guard) {
            tree.remove(Key::Distinct);
            changed = true;
        }
    }
    changed
        | rewrite_below(
            tree,
            &mut |node, _| {
                if node.kind != Kind::Distinct || joins {
                    return false;
                }
                let [column] = node.list(Key::Expressions) else {
                    return false;
                };
                let Some((table, name)) = owned_column(column) else {
                    return false;
                };
                if !cx.is_unique(2, &table, &name) || !cx.allowed(2, guard) {
                    return false;
                }
                *node = column.clone();
                true
            },
            &everywhere,
        )
}

/// Rule 4: `GROUP BY c1, c2, ...` → `GROUP BY c1` for a unique c1.
pub fn rule4(tree: &mut Node, cx: &mut Cx) -> bool {
    if tree.has(Key::Order) {
        return false;
    }
    let Some(group) = tree.node(Key::Group) else {
        return false;
    };
    let items = group.list(Key::Expressions).to_vec();
    let Some(position) = items.iter().position(|item| {
        owned_column(item).is_some_and(|(table, column)| cx.is_unique(4, &table, &column))
    }) else {
        return false;
    };
    if items.len() == 1 {
        return false;
    }
    let guard = check(!has_joins(tree), "D5", "GROUP BY reduced over a join");
    if !cx.allowed(4, guard) {
        return false;
    }
    let kept = vec![items[position].clone()];
    if let Some(group) = tree.node_mut(Key::Group) {
        group.set(Key::Expressions, kept);
    }
    true
}

/// Rule 6: `COUNT(c)` → `COUNT(*)` for a NOT NULL c.
pub fn rule6(tree: &mut Node, cx: &mut Cx) -> bool {
    let guard = check(
        !has_outer_join(tree),
        "guard",
        "an outer join can null-extend the counted column",
    );
    rewrite_below(
        tree,
        &mut |node, _| {
            if node.kind != Kind::Count || !node.list(Key::Expressions).is_empty() {
                return false;
            }
            let Some((table, column)) = node.node(Key::This).and_then(owned_column) else {
                return false;
            };
            if !cx.is_non_null(6, &table, &column) || !cx.allowed(6, guard) {
                return false;
            }
            *node = Node::unary(Kind::Count, Node::new(Kind::Star));
            true
        },
        &everywhere,
    )
}

/// `Not(Is(c, NULL))` → c.
fn is_not_null_test(node: &Node) -> Option<&Node> {
    if node.kind != Kind::Not {
        return None;
    }
    let is = node.node(Key::This)?;
    if is.kind != Kind::Is || is.node(Key::Expression)?.kind != Kind::Null {
        return None;
    }
    let column = is.node(Key::This)?;
    (column.kind == Kind::Column).then_some(column)
}

/// Rule 7: drop `c IS NOT NULL` for a NOT NULL c.
pub fn rule7(tree: &mut Node, cx: &mut Cx) -> bool {
    let Some(condition) = tree.node_mut(Key::Where) else {
        return false;
    };
    // The positions under the AND chain of the WHERE, where dropping the test is sound.
    let conjuncts: Vec<Node> = {
        let mut out = Vec::new();
        if let Some(top) = condition.node(Key::This) {
            flatten(top.clone(), Kind::And, &mut out);
        }
        out
    };
    rewrite_below(
        condition,
        &mut |node, slot| {
            let Some((table, column)) = is_not_null_test(node).and_then(owned_column) else {
                return false;
            };
            if !cx.is_non_null(7, &table, &column) || !cx.reaches(7, slot) {
                return false;
            }
            let guard = check(
                conjuncts.contains(node),
                "D3",
                "IS NOT NULL under OR or NOT",
            );
            if !cx.allowed(7, guard) {
                return false;
            }
            *node = Node::true_condition();
            true
        },
        &|node| node.kind != Kind::Subquery,
    )
}

/// Rule 8: `CAST(SUM(c) AS FLOAT) / COUNT(*)` → `AVG(c)` for a NOT NULL c.
pub fn rule8(tree: &mut Node, cx: &mut Cx) -> bool {
    rewrite_below(
        tree,
        &mut |node, _| {
            let Some(column) = sum_over_count(node) else {
                return false;
            };
            let Some((table, name)) = owned_column(column) else {
                return false;
            };
            if !cx.is_non_null(8, &table, &name) {
                return false;
            }
            *node = Node::unary(Kind::Avg, column.clone());
            true
        },
        &everywhere,
    )
}

fn sum_over_count(node: &Node) -> Option<&Node> {
    if node.kind != Kind::Div {
        return None;
    }
    let (cast, count) = node.operands()?;
    let float_type = cast
        .node(Key::To)
        .and_then(|t| t.text(Key::This))
        .is_some_and(|t| t.eq_ignore_ascii_case("float") || t.eq_ignore_ascii_case("real"));
    let sum = cast.node(Key::This)?;
    let counts_rows =
        count.kind == Kind::Count && count.node(Key::This).is_some_and(|s| s.kind == Kind::Star);
    if cast.kind != Kind::Cast || !float_type || sum.kind != Kind::Sum || !counts_rows {
        return None;
    }
    let column = sum.node(Key::This)?;
    (column.kind == Kind::Column).then_some(column)
}

/// Rule 9: `COUNT(CASE WHEN d THEN 1 END)` → `SUM(CASE WHEN d THEN 1 ELSE 0 END)`.
pub fn rule9(tree: &mut Node, cx: &mut Cx) -> bool {
    rewrite_below(
        tree,
        &mut |node, _| {
            if node.kind != Kind::Count {
                return false;
            }
            let Some(case) = node.node(Key::This).filter(|c| c.kind == Kind::Case) else {
                return false;
            };
            if case
                .node(Key::Default)
                .is_some_and(|d| d.kind != Kind::Null)
            {
                return false;
            }
            let [branch] = case.list(Key::Ifs) else {
                return false;
            };
            let (Some(condition), Some(then)) = (branch.node(Key::This), branch.node(Key::True))
            else {
                return false;
            };
            let counts_rows = match then.kind {
                Kind::Literal => then.text(Key::This) == Some("1.0"),
                Kind::Column => owned_column(then)
                    .is_some_and(|(table, column)| cx.is_non_null(9, &table, &column)),
                _ => false,
            };
            if !counts_rows {
                return false;
            }
            let branch = Node::unary(Kind::If, condition.clone())
                .with(Key::True, Node::literal("1.0", false));
            let case = Node::new(Kind::Case)
                .with(Key::Ifs, vec![branch])
                .with(Key::Default, Node::literal("0", false));
            *node = Node::unary(Kind::Sum, case);
            true
        },
        &everywhere,
    )
}

/// Rule 10: `SELECT c ... ORDER BY c DESC LIMIT 1` → `SELECT MAX(c) ...`.
pub fn rule10(tree: &mut Node, cx: &mut Cx) -> bool {
    if !tree.has(Key::From) {
        return false;
    }
    let Some([ordered]) = tree.node(Key::Order).map(|o| o.list(Key::Expressions)) else {
        return false;
    };
    let limit_one = tree
        .node(Key::Limit)
        .and_then(|l| l.node(Key::Expression))
        .and_then(|e| e.text(Key::This))
        == Some("1.0");
    let Some(key) = ordered.node(Key::This).cloned() else {
        return false;
    };
    let desc = ordered.flag(Key::Desc);
    let matches = tree
        .list(Key::Expressions)
        .iter()
        .filter(|item| **item == key)
        .count();
    if !limit_one || matches == 0 {
        return false;
    }
    let tables_have_rows = tree.relations().iter().all(|item| {
        item.table_name()
            .and_then(|name| cx.facts.table(name))
            .is_some_and(|t| t.has_rows)
    });
    let key_non_null =
        owned_column(&key).is_some_and(|(table, column)| cx.facts.is_non_null(&table, &column));
    let guard = check(
        !tree.has(Key::Group) && !tree.has(Key::Having) && !tree.has(Key::Distinct),
        "D6",
        "MIN/MAX for ORDER BY LIMIT 1 with GROUP BY, HAVING or DISTINCT",
    )
    .and(check(tables_have_rows, "D6", "the table may be empty"))
    .and(check(
        desc || key_non_null,
        "guard",
        "MIN over a nullable column (NULL sorts first)",
    ));
    if !cx.allowed(10, guard) {
        return false;
    }
    if matches > 1 && cx.compat {
        // D16: the reference removes ORDER BY and LIMIT once per matching item and fails.
        cx.error = Some(RuleError::SecondMinMax);
        return false;
    }
    let aggregate = if desc { Kind::Max } else { Kind::Min };
    for item in tree.list_mut(Key::Expressions).into_iter().flatten() {
        if *item == key {
            *item = Node::unary(aggregate, item.clone());
        }
    }
    tree.remove(Key::Order);
    tree.remove(Key::Limit);
    true
}

/// Rule 11: `SELECT *` / `SELECT t.*` → the columns in schema order.
pub fn rule11(tree: &mut Node, cx: &mut Cx) -> bool {
    let tables: Vec<Node> = tree
        .relations()
        .iter()
        .filter_map(|item| item.node(Key::This).cloned())
        .collect();
    let mut changed = false;
    let mut expanded = Vec::new();
    for item in tree.list(Key::Expressions) {
        let is_star =
            item.kind == Kind::Column && item.node(Key::This).is_some_and(|t| t.kind == Kind::Star);
        if !is_star {
            expanded.push(item.clone());
            continue;
        }
        let sources: Vec<&Node> = match item.node(Key::Table) {
            Some(table) => vec![table],
            None => tables.iter().collect(),
        };
        let mut columns = Vec::new();
        for source in &sources {
            let Some(facts) = source
                .text(Key::This)
                .filter(|_| source.kind == Kind::Identifier)
                .and_then(|name| cx.facts.table(name))
            else {
                columns.clear();
                break;
            };
            for column in &facts.columns {
                columns.push(
                    Node::new(Kind::Column)
                        .with(Key::This, Node::ident(column, false))
                        .with(Key::Table, (*source).clone()),
                );
            }
        }
        if columns.is_empty() {
            expanded.push(item.clone());
        } else {
            expanded.extend(columns);
            changed = true;
        }
    }
    if changed {
        tree.set(Key::Expressions, expanded);
    }
    changed
}

/// Python's `float(text)`: what the reference's rule 12 accepts (D11).
fn python_float(text: &str) -> Option<f64> {
    let trimmed = text.trim();
    let (sign, body) = match trimmed.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, trimmed.strip_prefix('+').unwrap_or(trimmed)),
    };
    match body.to_ascii_lowercase().as_str() {
        "nan" => return Some(f64::NAN),
        "inf" | "infinity" => return Some(sign * f64::INFINITY),
        _ => {}
    }
    let bytes = body.as_bytes();
    let underscores_ok = bytes.iter().enumerate().all(|(i, b)| {
        *b != b'_'
            || (i > 0
                && bytes[i - 1].is_ascii_digit()
                && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
    });
    if !underscores_ok || !is_decimal(&body.replace('_', "")) {
        return None;
    }
    body.replace('_', "").parse::<f64>().ok().map(|v| sign * v)
}

/// `[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?`
fn is_decimal(text: &str) -> bool {
    let text = text.strip_prefix(['+', '-']).unwrap_or(text);
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some((whole, fraction)) => {
            (digits(whole) && (fraction.is_empty() || digits(fraction)))
                || (whole.is_empty() && digits(fraction))
        }
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

/// Rule 12: numbers, quoted or not, in one canonical float form.
pub fn rule12(tree: &mut Node, cx: &mut Cx) -> bool {
    rewrite_below(
        tree,
        &mut |node, slot| {
            if node.kind != Kind::Literal {
                return false;
            }
            let Some(text) = node.text(Key::This) else {
                return false;
            };
            if text.is_empty() || text.starts_with('0') {
                return false;
            }
            let Some(value) = python_float(text) else {
                return false;
            };
            let canonical = py_float_repr(value);
            if canonical == text && !node.flag(Key::IsString) {
                return false;
            }
            if !cx.reaches(12, slot) {
                return false;
            }
            let numeric = is_decimal(text);
            if !cx.allowed(12, check(numeric, "D11", "not a number literal")) {
                return false;
            }
            *node = Node::literal(&canonical, false);
            true
        },
        &everywhere,
    )
}

/// Rule 13: `FROM t2 WHERE c2 IN (SELECT c1 FROM t1 WHERE d)` → `FROM t2 JOIN t1 ON ... WHERE d`.
pub fn rule13(tree: &mut Node, cx: &mut Cx) -> bool {
    let Some(outer_table) = single_table(tree) else {
        return false;
    };
    let Some(condition) = where_condition(tree) else {
        return false;
    };
    let (equality, outer_column, subquery) = match condition.kind {
        Kind::In => (false, condition.node(Key::This), condition.node(Key::Query)),
        // Rule 105 may have sorted the subquery first.
        Kind::Eq => match (condition.node(Key::This), condition.node(Key::Expression)) {
            (Some(left), right) if left.kind == Kind::Subquery => (true, right, Some(left)),
            (left, right) => (true, left, right),
        },
        _ => return false,
    };
    let (Some(outer_column), Some(subquery)) = (outer_column, subquery) else {
        return false;
    };
    let Some(select) = subquery
        .node(Key::This)
        .filter(|_| subquery.kind == Kind::Subquery)
    else {
        return false;
    };
    let (Some((_, outer_name)), [inner_column]) =
        (owned_column(outer_column), select.list(Key::Expressions))
    else {
        return false;
    };
    let Some(inner_table_node) = select.node(Key::From).and_then(|f| f.node(Key::This)) else {
        return false;
    };
    let (Some(inner_table), Some((_, inner_name))) =
        (inner_table_node.table_name(), owned_column(inner_column))
    else {
        return false;
    };
    let Some(inner_facts) = cx.facts.table(inner_table) else {
        return false;
    };
    let Some(outer_facts) = cx.facts.table(&outer_table) else {
        return false;
    };
    if !inner_facts.primary_keys.contains(&inner_name)
        || outer_facts.foreign_keys.get(&outer_name) != Some(&format!("{inner_table}.{inner_name}"))
    {
        return false;
    }
    let inner_where = where_condition(select).cloned();
    let new_where = match (&inner_where, equality) {
        (Some(condition), true) => {
            let unique_equality = condition.kind == Kind::Eq
                && condition
                    .node(Key::This)
                    .and_then(owned_column)
                    .is_some_and(|(table, column)| cx.is_unique(13, &table, &column));
            if !unique_equality {
                return false;
            }
            condition.clone()
        }
        (Some(condition), false) => condition.clone(),
        (None, true) => return false,
        (None, false) => Node::true_condition(),
    };
    let guard = check(
        !has_joins(select)
            && !select.has(Key::Group)
            && !select.has(Key::Having)
            && !select.has(Key::Order)
            && !select.has(Key::Limit),
        "guard",
        "the subquery has joins, GROUP BY, HAVING, ORDER BY or LIMIT",
    );
    if !cx.allowed(13, guard) {
        return false;
    }
    let on = Node::binary(
        Kind::Eq,
        Node::column(inner_table, &inner_name),
        Node::column(&outer_table, &outer_name),
    );
    let join = Node::unary(Kind::Join, inner_table_node.clone()).with(Key::On, on);
    if let Some(where_clause) = tree.node_mut(Key::Where) {
        where_clause.set(Key::This, new_where);
    }
    tree.set(Key::Joins, vec![join]);
    true
}

/// The equalities of an ON condition: itself, or the `=` leaves of its AND chain.
fn on_equalities(on: &Node) -> Vec<Node> {
    if on.kind != Kind::And {
        return vec![on.clone()];
    }
    let mut leaves = Vec::new();
    flatten(on.clone(), Kind::And, &mut leaves);
    leaves.retain(|leaf| leaf.kind == Kind::Eq);
    leaves
}

/// Whether `node` uses a column of `table` other than `column` (not looking into subqueries).
fn uses_other_column(node: &Node, table: &str, column: &str) -> bool {
    any_below(node, &mut |n| {
        n.kind == Kind::Column
            && n.ident_text(Key::Table) == Some(table)
            && n.ident_text(Key::This) != Some(column)
    })
}

/// Rule 14: drop a join to a primary-key table whose other columns are unused.
pub fn rule14(tree: &mut Node, cx: &mut Cx) -> bool {
    if !tree.has(Key::From) || !has_joins(tree) || has_outer_join(tree) {
        return false;
    }
    let mut equalities: Vec<Node> = Vec::new();
    for join in tree.list(Key::Joins) {
        if let Some(on) = join.node(Key::On) {
            if on.kind == Kind::And {
                equalities = on_equalities(on);
            } else {
                equalities.push(on.clone());
            }
        }
    }
    for equality in equalities.clone() {
        let Some((left, right)) = equality.operands() else {
            continue;
        };
        let (Some(left), Some(right)) = (owned_column(left), owned_column(right)) else {
            continue;
        };
        let Some((primary, foreign)) = key_pair(cx, &left, &right) else {
            continue;
        };
        let without_subqueries = strip_subqueries(tree);
        if uses_other_column(&without_subqueries, &primary.0, &primary.1) {
            continue;
        }
        let guard = check(
            cx.facts.is_non_null(&foreign.0, &foreign.1),
            "D7",
            "the foreign key is nullable: the join drops rows",
        );
        if !cx.allowed(14, guard) {
            continue;
        }
        let mut tables: Vec<Node> = tree.relations().into_iter().cloned().collect();
        let Some(position) = tables
            .iter()
            .position(|t| t.table_name() == Some(primary.0.as_str()) && !t.has(Key::Alias))
        else {
            continue;
        };
        tables.remove(position);
        equalities.retain(|e| *e != equality);
        rebuild_joins(tree, tables, &equalities);
        if cx.compat && !tree.has(Key::Joins) {
            tree.set(Key::JoinsKept, true);
        }

        let replacement = Node::column(&foreign.0, &foreign.1);
        rewrite_below(
            tree,
            &mut |node, _| {
                if node.qualified_column() == Some((primary.0.as_str(), primary.1.as_str())) {
                    *node = replacement.clone();
                    return true;
                }
                false
            },
            &everywhere,
        );
        return true;
    }
    false
}

/// `(primary (table, column), foreign (table, column))` when one side is the single-column
/// primary key the other side's foreign key references.
fn key_pair(
    cx: &Cx,
    a: &(String, String),
    b: &(String, String),
) -> Option<((String, String), (String, String))> {
    for (primary, foreign) in [(a, b), (b, a)] {
        let primary_facts = cx.facts.table(&primary.0)?;
        let foreign_facts = cx.facts.table(&foreign.0)?;
        let references = foreign_facts.foreign_keys.get(&foreign.1)
            == Some(&format!("{}.{}", primary.0, primary.1));
        if primary_facts.primary_keys.contains(&primary.1) && references {
            if primary_facts.primary_keys.len() > 1 {
                return None;
            }
            return Some((primary.clone(), foreign.clone()));
        }
    }
    None
}

/// The tree with every SELECT below the top replaced by a placeholder: rule 14 does not look
/// into subqueries.
fn strip_subqueries(tree: &Node) -> Node {
    let mut copy = tree.clone();
    rewrite_below(
        &mut copy,
        &mut |node, _| {
            if node.kind == Kind::Select {
                *node = Node::new(Kind::Null);
                return true;
            }
            false
        },
        &everywhere,
    );
    copy
}

fn rebuild_joins(tree: &mut Node, tables: Vec<Node>, equalities: &[Node]) {
    let mut tables = tables.into_iter();
    let Some(first) = tables.next() else {
        return;
    };
    tree.set(Key::From, Node::unary(Kind::From, first));
    let mut on = Some(
        Node::chain(Kind::And, equalities.iter().cloned()).unwrap_or_else(Node::true_condition),
    );
    let joins: Vec<Node> = tables
        .map(|table| Node::unary(Kind::Join, table).with_opt(Key::On, on.take()))
        .collect();
    tree.set(Key::Joins, joins);
}

fn substring_of(node: &Node) -> Option<(&Node, &Node, &Node)> {
    if node.kind != Kind::Substring {
        return None;
    }
    Some((
        node.node(Key::This)?,
        node.node(Key::Start)?,
        node.node(Key::Length)?,
    ))
}

fn literal_number(node: &Node) -> Option<f64> {
    node.text(Key::This)?.parse().ok()
}

fn literal_text(node: &Node) -> Option<String> {
    let text = node.text(Key::This)?;
    Some(text.strip_suffix(".0").unwrap_or(text).to_string())
}

/// Rule 15: `SUBSTR(c,1,a) = 'x' AND SUBSTR(c,a+1,n) op 'y'` → `c op 'xy'`.
pub fn rule15(tree: &mut Node, cx: &mut Cx) -> bool {
    rewrite_below(
        tree,
        &mut |node, slot| {
            if node.kind != Kind::And {
                return false;
            }
            let mut leaves = Vec::new();
            flatten(node.clone(), Kind::And, &mut leaves);
            let Some((eq_at, merged)) = substring_merges(&leaves) else {
                return false;
            };
            if !cx.reaches(15, slot) {
                return false;
            }
            // Every comparison on the rest of the string takes the prefix (`BETWEEN` has become
            // two); then the prefix equality goes.
            for (cmp_at, comparison) in merged {
                leaves[cmp_at] = comparison;
            }
            leaves.remove(eq_at);
            if let Some(chain) = Node::chain(Kind::And, leaves) {
                *node = chain;
            }
            true
        },
        &everywhere,
    )
}

/// The first prefix equality `SUBSTR(c, 1, a) = 'x'` of the AND chain that some comparison
/// `SUBSTR(c, a + 1, _) op 'y'` continues, with each such comparison rewritten `c op 'xy'`.
fn substring_merges(leaves: &[Node]) -> Option<(usize, Vec<(usize, Node)>)> {
    let split = |leaf: &Node| -> Option<(Kind, (Node, f64, f64), Node)> {
        let (left, right) = leaf.operands()?;
        let (substring, literal) = if left.kind == Kind::Substring {
            (left, right)
        } else {
            (right, left)
        };
        let (column, start, length) = substring_of(substring)?;
        Some((
            leaf.kind,
            (
                column.clone(),
                literal_number(start)?,
                literal_number(length)?,
            ),
            literal.clone(),
        ))
    };
    for (eq_at, eq) in leaves.iter().enumerate() {
        let Some((Kind::Eq, (column, 1.0, length), prefix)) = split(eq) else {
            continue;
        };
        let mut merged = Vec::new();
        for (cmp_at, cmp) in leaves.iter().enumerate() {
            let Some((kind, (other, start, _), rest)) = split(cmp) else {
                continue;
            };
            if !matches!(kind, Kind::Gt | Kind::Gte | Kind::Lt | Kind::Lte)
                || other != column
                || 1.0 + length != start
            {
                continue;
            }
            let Some(text) = literal_text(&prefix)
                .zip(literal_text(&rest))
                .map(|(x, y)| format!("{x}{y}"))
            else {
                continue;
            };
            merged.push((
                cmp_at,
                Node::binary(kind, column.clone(), Node::literal(&text, true)),
            ));
        }
        if !merged.is_empty() {
            return Some((eq_at, merged));
        }
    }
    None
}

/// Rule 16: `c LIKE 'x%'` → `SUBSTR(c, 1, len(x)) = 'x'`.
pub fn rule16(tree: &mut Node, cx: &mut Cx) -> bool {
    rewrite_below(
        tree,
        &mut |node, slot| {
            if node.kind != Kind::Like || node.has(Key::Escape) {
                return false;
            }
            let Some((column, pattern)) = node.operands() else {
                return false;
            };
            let Some(text) = pattern
                .text(Key::This)
                .filter(|_| pattern.kind == Kind::Literal)
            else {
                return false;
            };
            let Some(prefix) = text.strip_suffix('%').filter(|p| !p.contains('%')) else {
                return false;
            };
            if !cx.reaches(16, slot) {
                return false;
            }
            let plain = !prefix.contains('_')
                && !prefix.chars().any(|c| c.is_lowercase() || c.is_uppercase());
            if !cx.allowed(
                16,
                check(
                    plain,
                    "D8",
                    "LIKE is case-insensitive and `_` matches any character",
                ),
            ) {
                return false;
            }
            let length = prefix.chars().count();
            let substring = Node::unary(Kind::Substring, column.clone())
                .with(Key::Start, Node::literal("1.0", true))
                .with(Key::Length, Node::literal(&format!("{length}.0"), true));
            *node = Node::binary(Kind::Eq, substring, Node::literal(prefix, true));
            true
        },
        &everywhere,
    )
}

/// Rule 17: `ORDER BY JULIANDAY(c)` → `ORDER BY c` for a date column.
pub fn rule17(tree: &mut Node, cx: &mut Cx) -> bool {
    let Some(order) = tree.node(Key::Order) else {
        return false;
    };
    let [ordered] = order.list(Key::Expressions) else {
        return false;
    };
    let Some(call) = ordered.node(Key::This) else {
        return false;
    };
    if call.kind != Kind::Anonymous || call.text(Key::This) != Some("julianday") {
        return false;
    }
    let Some(column) = call.list(Key::Expressions).first().cloned() else {
        return false;
    };
    let is_date = owned_column(&column).is_some_and(|(table, name)| {
        cx.facts
            .table(&table)
            .is_some_and(|t| t.iso_dates.contains(&name))
    });
    if !cx.allowed(
        17,
        check(is_date, "guard", "JULIANDAY of a column that is not a date"),
    ) {
        return false;
    }
    let Some(ordered) = tree
        .node_mut(Key::Order)
        .and_then(|o| o.list_mut(Key::Expressions)?.first_mut())
    else {
        return false;
    };
    ordered.set(Key::This, column);
    true
}

/// The longest IN list rule 18 expands.
const MAX_IN_EXPANSION: usize = 1000;

/// Rule 18: `c IN (a, b)` → `c = a OR c = b`; `NOT IN` → AND of `<>`.
pub fn rule18(tree: &mut Node, cx: &mut Cx) -> bool {
    rewrite_below(
        tree,
        &mut |node, slot| {
            let (negated, in_node) = match node.kind {
                Kind::Not => match node.node(Key::This) {
                    Some(inner) if inner.kind == Kind::In => (true, inner),
                    _ => return false,
                },
                Kind::In => (false, &*node),
                _ => return false,
            };
            let items = in_node.list(Key::Expressions);
            let Some(subject) = in_node.node(Key::This) else {
                return false;
            };
            if items.is_empty() || in_node.has(Key::Query) || !cx.reaches(18, slot) {
                return false;
            }
            // A resource bound, not an equivalence condition: the chain's depth is the list's
            // length, and SQLite itself refuses expressions deeper than 1000.
            if items.len() > MAX_IN_EXPANSION {
                cx.depart(18, "bound", "an IN list too long to expand");
                return false;
            }
            let (test, connector) = if negated {
                (Kind::Neq, Kind::And)
            } else {
                (Kind::Eq, Kind::Or)
            };
            let tests = items
                .iter()
                .map(|item| Node::binary(test, subject.clone(), item.clone()))
                .collect::<Vec<_>>();
            match Node::chain(connector, tests) {
                Some(chain) => {
                    *node = chain;
                    true
                }
                None => false,
            }
        },
        &everywhere,
    )
}

/// Rule 19: inside an inner join on `a = b`, references to b become a (the ON keeps both).
pub fn rule19(tree: &mut Node, cx: &mut Cx) -> bool {
    let ons: Vec<Node> = tree
        .list(Key::Joins)
        .iter()
        .filter(|j| !j.has(Key::Side))
        .filter_map(|j| j.node(Key::On).cloned())
        .filter(|on| matches!(on.kind, Kind::Eq | Kind::And))
        .collect();
    let mut changed = false;
    for on in ons {
        let equalities = on_equalities(&on);
        for equality in &equalities {
            let Some((left, right)) = equality.operands() else {
                continue;
            };
            derive_facts(cx, left, right);
            let (from, to) = (right.clone(), left.clone());
            if from.kind != Kind::Column {
                continue;
            }
            changed |= replace_outside(tree, &from, &to, &equalities);
        }
    }
    changed
}

/// D2: the reference copies UNIQUE and NOT NULL across a join equality; the harness only
/// remembers the copies so that it can tell when a rule fired on one of them.
fn derive_facts(cx: &mut Cx, left: &Node, right: &Node) {
    let (Some(a), Some(b)) = (owned_column(left), owned_column(right)) else {
        return;
    };
    for (x, y) in [(&a, &b), (&b, &a)] {
        let x_unique = cx.facts.is_unique(&x.0, &x.1) || cx.derived.unique.contains(x);
        if x_unique && cx.facts.table(&y.0).is_some() {
            cx.derived.unique.insert(y.clone());
        }
        let x_non_null = cx.facts.is_non_null(&x.0, &x.1) || cx.derived.non_null.contains(x);
        if x_non_null && cx.facts.table(&y.0).is_some() {
            cx.derived.non_null.insert(y.clone());
        }
    }
}

/// Replaces `from` by `to` everywhere but in the join equalities themselves and in
/// subqueries.
fn replace_outside(node: &mut Node, from: &Node, to: &Node, equalities: &[Node]) -> bool {
    let protected = equalities.contains(node);
    let mut changed = false;
    for (_, field) in node.fields_mut() {
        match field {
            super::tree::Field::Node(child) => {
                if child.kind == Kind::Select {
                    continue;
                }
                if !protected && **child == *from {
                    **child = to.clone();
                    changed = true;
                }
                changed |= replace_outside(child, from, to, equalities);
            }
            super::tree::Field::List(items) => {
                for item in items.iter_mut() {
                    if *item == *from {
                        *item = to.clone();
                        changed = true;
                    }
                    changed |= replace_outside(item, from, to, equalities);
                }
            }
            _ => {}
        }
    }
    changed
}

/// Rule 20: `WHERE t.c IN (SELECT t.c FROM t WHERE d)` → `WHERE d`.
pub fn rule20(tree: &mut Node, cx: &mut Cx) -> bool {
    let outer_table = single_table(tree);
    // Positions reached from the WHERE through AND and OR only: under NOT, a NULL condition
    // and a false IN differ.
    let positive: Vec<Node> = where_condition(tree)
        .map(|top| {
            let mut out = Vec::new();
            flatten_connectives(top, &mut out);
            out
        })
        .unwrap_or_default();
    let Some(condition) = tree.node_mut(Key::Where) else {
        return false;
    };
    rewrite_below(
        condition,
        &mut |node, slot| {
            if node.kind != Kind::In || slot == Slot::Element {
                return false;
            }
            let (Some(column), Some(subquery)) = (node.node(Key::This), node.node(Key::Query))
            else {
                return false;
            };
            let Some(select) = subquery.node(Key::This).filter(|s| s.kind == Kind::Select) else {
                return false;
            };
            let [selected] = select.list(Key::Expressions) else {
                return false;
            };
            let same_table = select
                .node(Key::From)
                .and_then(|f| f.node(Key::This))
                .and_then(|t| t.node(Key::This))
                == column.node(Key::Table);
            let Some(inner_where) = where_condition(select) else {
                return false;
            };
            if selected != column || !same_table {
                return false;
            }
            let sound = owned_column(column).is_some_and(|(table, name)| {
                outer_table.as_deref() == Some(table.as_str())
                    && cx.facts.is_non_null(&table, &name)
                    && cx.facts.is_unique(&table, &name)
            });
            let guard = check(
                sound,
                "guard",
                "the outer query is not the single table, or the column is not UNIQUE and NOT NULL",
            )
            .and(check(
                positive.contains(node),
                "guard",
                "the IN is under NOT, where a NULL condition differs from a false IN",
            ));
            if !cx.allowed(20, guard) {
                return false;
            }
            *node = inner_where.clone();
            true
        },
        &|node| node.kind != Kind::Subquery,
    )
}

/// The operands of the AND/OR connectives from `node` down, and `node` itself.
fn flatten_connectives(node: &Node, out: &mut Vec<Node>) {
    out.push(node.clone());
    if matches!(node.kind, Kind::And | Kind::Or) {
        for key in [Key::This, Key::Expression] {
            if let Some(child) = node.node(key) {
                flatten_connectives(child, out);
            }
        }
    }
}

/// Rule 22: `c BETWEEN x AND y` → `c >= x AND c <= y`.
pub fn rule22(tree: &mut Node, cx: &mut Cx) -> bool {
    rewrite_below(
        tree,
        &mut |node, slot| {
            if node.kind != Kind::Between || !cx.reaches(22, slot) {
                return false;
            }
            let (Some(subject), Some(low), Some(high)) = (
                node.node(Key::This),
                node.node(Key::Low),
                node.node(Key::High),
            ) else {
                return false;
            };
            *node = Node::binary(
                Kind::And,
                Node::binary(Kind::Gte, subject.clone(), low.clone()),
                Node::binary(Kind::Lte, subject.clone(), high.clone()),
            );
            true
        },
        &everywhere,
    )
}

/// Rule 23: `NOT (a op b)` → `a op' b`.
pub fn rule23(tree: &mut Node, cx: &mut Cx) -> bool {
    rewrite_below(
        tree,
        &mut |node, slot| {
            if node.kind != Kind::Not {
                return false;
            }
            let Some(inner) = node.node(Key::This) else {
                return false;
            };
            let flipped = match inner.kind {
                Kind::Eq => Kind::Neq,
                Kind::Neq => Kind::Eq,
                Kind::Gt => Kind::Lte,
                Kind::Gte => Kind::Lt,
                Kind::Lt => Kind::Gte,
                Kind::Lte => Kind::Gt,
                _ => return false,
            };
            let Some((left, right)) = inner.operands() else {
                return false;
            };
            if !cx.reaches(23, slot) {
                return false;
            }
            *node = Node::binary(flipped, left.clone(), right.clone());
            true
        },
        &everywhere,
    )
}

/// Rule 24: `IIF(d, x, y)` → `CASE WHEN d THEN x ELSE y END`.
pub fn rule24(tree: &mut Node, cx: &mut Cx) -> bool {
    rewrite_below(
        tree,
        &mut |node, slot| {
            if node.kind != Kind::If || !node.has(Key::False) {
                return false;
            }
            let (Some(condition), Some(yes), Some(no)) = (
                node.node(Key::This),
                node.node(Key::True),
                node.node(Key::False),
            ) else {
                return false;
            };
            if !cx.reaches(24, slot) {
                return false;
            }
            let branch = Node::unary(Kind::If, condition.clone()).with(Key::True, yes.clone());
            *node = Node::new(Kind::Case)
                .with(Key::Ifs, vec![branch])
                .with(Key::Default, no.clone());
            true
        },
        &everywhere,
    )
}

/// Rule 25: `t1 LEFT JOIN t2 ON t1.c1 = t2.c2 WHERE t2.x IS NULL` →
/// `t1 WHERE t1.c1 NOT IN (SELECT t2.c2 FROM t2)`.
pub fn rule25(tree: &mut Node, cx: &mut Cx) -> bool {
    let [join] = tree.list(Key::Joins) else {
        return false;
    };
    if join.text(Key::Side) != Some("left") {
        return false;
    }
    let Some(condition) = where_condition(tree) else {
        return false;
    };
    let is_null_test = condition.kind == Kind::Is
        && condition
            .node(Key::Expression)
            .is_some_and(|e| e.kind == Kind::Null);
    let (Some(tested), Some(on)) = (condition.node(Key::This), join.node(Key::On)) else {
        return false;
    };
    if !is_null_test || on.kind != Kind::Eq {
        return false;
    }
    let Some(from_table) = tree
        .node(Key::From)
        .and_then(|f| f.node(Key::This))
        .and_then(|t| t.table_name())
    else {
        return false;
    };
    let (Some(tested), Some((v1, v2))) = (owned_column(tested), on.operands()) else {
        return false;
    };
    let (Some(a), Some(b)) = (owned_column(v1), owned_column(v2)) else {
        return false;
    };
    let (outer, inner, inner_node, outer_node) = if a.0 == from_table && b.0 == tested.0 {
        (a, b, v2, v1)
    } else if a.0 != from_table && a.0 == tested.0 {
        (b, a, v1, v2)
    } else {
        return false;
    };
    let sound = (tested == inner || cx.facts.is_non_null(&tested.0, &tested.1))
        && cx.facts.is_non_null(&inner.0, &inner.1)
        && cx.facts.is_non_null(&outer.0, &outer.1);
    if !cx.allowed(25, check(sound, "D9", "a nullable column in the anti-join")) {
        return false;
    }
    let subquery = Node::new(Kind::Select)
        .with(Key::Expressions, vec![inner_node.clone()])
        .with(Key::From, Node::unary(Kind::From, Node::table(&tested.0)));
    let not_in = Node::unary(
        Kind::Not,
        Node::unary(Kind::In, outer_node.clone())
            .with(Key::Query, Node::unary(Kind::Subquery, subquery)),
    );
    tree.set(Key::Where, Node::unary(Kind::Where, not_in));
    tree.remove(Key::Joins);
    true
}
