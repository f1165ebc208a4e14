//! Rules on set operations (21, 3, 5) and on CTEs (26), `etm.md` §5.2-§5.3.

use super::rewrite::{any_below, check, rewrite_below, Cx};
use super::tree::{Key, Kind, Node};

/// `(table, column)` of the single SELECT item, when it is a qualified column.
fn single_column(select: &Node) -> Option<(String, String)> {
    let [item] = select.list(Key::Expressions) else {
        return None;
    };
    item.qualified_column()
        .map(|(t, c)| (t.to_string(), c.to_string()))
}

fn is_plain_select(select: &Node) -> bool {
    select.kind == Kind::Select && select.list(Key::Joins).is_empty()
}

/// Rule 21: `q UNION q` and `q INTERSECT q` → q, when q has no duplicate rows.
pub fn rule21(tree: Node, cx: &mut Cx) -> Node {
    if !matches!(tree.kind, Kind::Union | Kind::Intersect) {
        return tree;
    }
    let (Some(left), Some(right)) = (tree.node(Key::This), tree.node(Key::Expression)) else {
        return tree;
    };
    if left != right {
        return tree;
    }
    let distinct_rows = left.kind == Kind::Select
        && (left.has(Key::Distinct)
            || (is_plain_select(left)
                && left.list(Key::Expressions).iter().any(|item| {
                    item.qualified_column()
                        .is_some_and(|(t, c)| cx.facts.is_unique(t, c))
                })));
    let guard = check(
        distinct_rows && tree.flag(Key::Distinct) && !tree.has(Key::Order) && !tree.has(Key::Limit),
        "D10",
        "the query may return duplicate rows, which the set operation removes",
    );
    if !cx.allowed(21, guard) {
        return tree;
    }
    cx.trace.fired.insert(21);
    left.clone()
}

/// Rule 3: `q WHERE a INTERSECT/UNION q WHERE b` → `q WHERE a AND/OR b` for a unique column.
pub fn rule3(tree: Node, cx: &mut Cx) -> Node {
    if !matches!(tree.kind, Kind::Union | Kind::Intersect) {
        return tree;
    }
    let (Some(left), Some(right)) = (tree.node(Key::This), tree.node(Key::Expression)) else {
        return tree;
    };
    if left.kind != Kind::Select || right.kind != Kind::Select {
        return tree;
    }
    let Some((table, column)) = single_column(left) else {
        return tree;
    };
    if left.list(Key::Expressions) != right.list(Key::Expressions)
        || !cx.is_unique(3, &table, &column)
        || left.node(Key::From) != right.node(Key::From)
    {
        return tree;
    }
    let (Some(a), Some(b)) = (
        left.node(Key::Where).and_then(|w| w.node(Key::This)),
        right.node(Key::Where).and_then(|w| w.node(Key::This)),
    ) else {
        return tree;
    };
    let guard = check(
        is_plain_select(left)
            && is_plain_select(right)
            && tree.flag(Key::Distinct)
            && !tree.has(Key::Order)
            && !tree.has(Key::Limit),
        "guard",
        "branches with joins, UNION ALL, or an ORDER BY/LIMIT on the set operation",
    );
    if !cx.allowed(3, guard) {
        return tree;
    }
    let connector = if tree.kind == Kind::Union {
        Kind::Or
    } else {
        Kind::And
    };
    let condition = Node::binary(connector, a.clone(), b.clone());
    let mut merged = left.clone();
    if tree.kind == Kind::Union && cx.compat {
        // D15: the reference stores the OR without its WHERE node.
        merged.set(Key::Where, condition);
    } else {
        if tree.kind == Kind::Union {
            cx.depart(3, "D15", "the OR of a UNION is kept inside a WHERE");
        }
        merged.set(Key::Where, Node::unary(Kind::Where, condition));
    }
    cx.trace.fired.insert(3);
    merged
}

/// Rule 5: `SELECT c FROM t ... EXCEPT q1` → `... WHERE c NOT IN (q1)`.
pub fn rule5(tree: Node, cx: &mut Cx) -> Node {
    if tree.kind != Kind::Except {
        return tree;
    }
    let (Some(outer), Some(inner)) = (tree.node(Key::This), tree.node(Key::Expression)) else {
        return tree;
    };
    if outer.kind != Kind::Select {
        return tree;
    }
    let Some((table, column)) = single_column(outer) else {
        return tree;
    };
    if !cx.is_unique(5, &table, &column) || !cx.is_non_null(5, &table, &column) {
        return tree;
    }
    let inner_non_null = inner.kind == Kind::Select
        && single_column(inner).is_some_and(|(t, c)| cx.facts.is_non_null(&t, &c));
    let guard = check(
        inner_non_null && !tree.has(Key::Order) && !tree.has(Key::Limit),
        "guard",
        "NOT IN over a subquery whose column may be NULL",
    );
    if !cx.allowed(5, guard) {
        return tree;
    }
    let Some(item) = outer.list(Key::Expressions).first().cloned() else {
        return tree;
    };
    let not_in = Node::unary(
        Kind::Not,
        Node::unary(Kind::In, item).with(Key::Query, Node::unary(Kind::Subquery, inner.clone())),
    );
    let mut merged = outer.clone();
    let condition = match merged.node(Key::Where).and_then(|w| w.node(Key::This)) {
        Some(existing) => Node::binary(Kind::And, not_in, existing.clone()),
        None => not_in,
    };
    merged.set(Key::Where, Node::unary(Kind::Where, condition));
    cx.trace.fired.insert(5);
    merged
}

/// Rule 26: inline the CTEs of the top query as derived tables and drop the CTE name as a
/// qualifier. Under `--etm-compat`, the reference's shape (D13): the CTE body replaces every
/// identifier spelled like the CTE.
pub fn rule26(tree: &mut Node, cx: &mut Cx) {
    let recursive = tree
        .node(Key::With)
        .is_some_and(|with| with.list(Key::Expressions).iter().any(reads_itself));
    if recursive && !cx.allowed(26, Err(("guard", "a recursive CTE is not inlined"))) {
        return;
    }
    let Some(with) = tree.take(Key::With) else {
        return;
    };
    cx.trace.fired.insert(26);
    for cte in with.list(Key::Expressions) {
        let (Some(body), Some(name)) = (
            cte.node(Key::This),
            cte.node(Key::Alias).and_then(|a| a.node(Key::This)),
        ) else {
            continue;
        };
        if cx.compat {
            let replacement = Node::unary(Kind::Subquery, body.clone());
            rewrite_below(
                tree,
                &mut |node, _| {
                    if node == name {
                        *node = replacement.clone();
                        return true;
                    }
                    false
                },
                // Like sqlglot's transform, not into the replacement: a body that mentions
                // the name (a recursive CTE, a column spelled like it) would recurse forever.
                &|node| node.kind != Kind::TableAlias && *node != replacement,
            );
            continue;
        }
        cx.depart(26, "D13", "a CTE is inlined as a derived table");
        inline_cte(tree, name, body);
    }
}

/// Whether a CTE's body reads the CTE itself (SQLite allows that without `RECURSIVE`):
/// inlining it would leave a reference to a table of the same name.
fn reads_itself(cte: &Node) -> bool {
    let (Some(body), Some(name)) = (
        cte.node(Key::This),
        cte.node(Key::Alias).and_then(|a| a.node(Key::This)),
    ) else {
        return false;
    };
    let name = spelling(name);
    any_below(body, &mut |node| {
        node.kind == Kind::Table && node.node(Key::This).and_then(spelling) == name
    })
}

/// An identifier's name as SQLite resolves it: case-insensitively, quoted or not.
fn spelling(ident: &Node) -> Option<String> {
    ident.text(Key::This).map(str::to_lowercase)
}

fn inline_cte(tree: &mut Node, name: &Node, body: &Node) {
    let name = spelling(name);
    let names_cte = |ident: Option<&Node>| ident.and_then(spelling) == name;
    rewrite_below(
        tree,
        &mut |node, _| {
            if node.kind == Kind::Table && names_cte(node.node(Key::This)) {
                let alias = node.node(Key::Alias).cloned();
                *node = Node::unary(Kind::Subquery, body.clone()).with_opt(Key::Alias, alias);
                return true;
            }
            if node.kind == Kind::Column && names_cte(node.node(Key::Table)) {
                node.remove(Key::Table);
                return true;
            }
            false
        },
        &|node| node.kind != Kind::Subquery,
    );
}
