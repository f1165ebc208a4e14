//! The normalisation rules 100-108 (`etm.md` §5.1) and the cleanup of trivially true
//! conditions; the engine runs them first in every round.

use super::rewrite::{everywhere, flatten, rewrite_below, Cx, RuleError, Slot};
use super::tree::{Field, Key, Kind, Node};

/// Rule 100: lowercase every text field but literal values.
pub(super) fn rule100(tree: &mut Node, _: &mut Cx) -> bool {
    fn lower(node: &mut Node) -> bool {
        if matches!(node.kind, Kind::Literal | Kind::Raw) {
            return false;
        }
        let mut changed = false;
        for (_, field) in node.fields_mut() {
            if let Field::Text(text) = field {
                if text.chars().any(char::is_uppercase) {
                    *text = text.to_lowercase();
                    changed = true;
                }
            }
        }
        changed
    }
    let changed = lower(tree);
    changed | rewrite_below(tree, &mut |node, _| lower(node), &everywhere)
}

/// Rule 101: qualify unqualified columns (and a bare `*` with a single table). A bare `*`
/// becomes a `Column` of a star, as in the reference, so that rule 11 sees it.
pub(super) fn rule101(tree: &mut Node, cx: &mut Cx) -> bool {
    let Some(from) = tree.node(Key::From).and_then(|f| f.node(Key::This)) else {
        return false;
    };
    let single_table = match (!tree.has_joins(), from.kind) {
        (true, Kind::Subquery) => None,
        (true, _) => from.ident_text(Key::This).map(str::to_string),
        (false, _) => None,
    };
    let derived_only = single_table.is_none() && !tree.has_joins();
    let joined: Vec<String> = tree
        .relations()
        .iter()
        .filter(|item| item.kind != Kind::Subquery)
        .filter_map(|item| item.ident_text(Key::This).map(str::to_string))
        .collect();
    let facts = cx.facts;
    let table_for = |column: &str| -> Option<String> {
        if derived_only {
            return None;
        }
        if let Some(table) = &single_table {
            return Some(table.clone());
        }
        let mut found = None;
        for table in &joined {
            if facts.table(table)?.columns.iter().any(|c| c == column) {
                if found.is_some() {
                    return None;
                }
                found = Some(table.clone());
            }
        }
        found
    };
    let mut qualify = |node: &mut Node, slot: Slot, keeps_star: bool| -> bool {
        let mut changed = false;
        if node.kind == Kind::Star {
            if slot == Slot::Single && keeps_star {
                return false;
            }
            *node = Node::unary(Kind::Column, Node::new(Kind::Star));
            changed = true;
        }
        if node.kind != Kind::Column || node.has(Key::Table) {
            return changed;
        }
        let table = match node.node(Key::This) {
            Some(this) if this.kind == Kind::Star => single_table.clone(),
            _ => node.ident_text(Key::This).and_then(table_for),
        };
        if let Some(table) = table {
            node.set(Key::Table, Node::ident(&table, false));
            changed = true;
        }
        changed
    };
    qualify_below(tree, &mut qualify)
}

/// The walk of rule 101: a single `*` child of a `Column` or `Count` stays as it is.
fn qualify_below(node: &mut Node, qualify: &mut dyn FnMut(&mut Node, Slot, bool) -> bool) -> bool {
    let keeps_star = matches!(node.kind, Kind::Column | Kind::Count);
    let mut changed = false;
    for (_, field) in node.fields_mut() {
        match field {
            Field::Node(child) => {
                changed |= qualify(child, Slot::Single, keeps_star);
                changed |= qualify_below(child, qualify);
            }
            Field::List(items) => {
                for item in items.iter_mut() {
                    changed |= qualify(item, Slot::Element, keeps_star);
                    changed |= qualify_below(item, qualify);
                }
            }
            _ => {}
        }
    }
    changed
}

/// Sorts `items` by the rules' key; says whether the order changed.
fn sort_nodes(items: &mut [Node]) -> bool {
    let mut keyed: Vec<((Kind, String), Node)> = items
        .iter_mut()
        .map(|item| {
            (
                item.sort_key(),
                std::mem::replace(item, Node::new(Kind::Null)),
            )
        })
        .collect();
    let sorted = keyed.windows(2).all(|pair| pair[0].0 <= pair[1].0);
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    for (slot, (_, node)) in items.iter_mut().zip(keyed) {
        *slot = node;
    }
    !sorted
}

/// Rule 102: sort the SELECT items.
pub(super) fn rule102(tree: &mut Node, _: &mut Cx) -> bool {
    tree.list_mut(Key::Expressions)
        .is_some_and(|items| sort_nodes(items))
}

/// Rule 103: replace table aliases by the table (a derived table's alias by its query).
pub(super) fn rule103(tree: &mut Node, _: &mut Cx) -> bool {
    let mut aliases: Vec<(Node, Node)> = Vec::new();
    let mut strip = |item: &mut Node| {
        if let Some(alias) = item.take(Key::Alias) {
            if let (Some(alias_id), Some(target)) = (alias.node(Key::This), item.node(Key::This)) {
                aliases.push((alias_id.clone(), target.clone()));
            }
        }
    };
    if let Some(from) = tree.node_mut(Key::From).and_then(|f| f.node_mut(Key::This)) {
        strip(from);
    }
    for join in tree.list_mut(Key::Joins).into_iter().flatten() {
        if let Some(item) = join.node_mut(Key::This) {
            strip(item);
        }
    }
    let changed = !aliases.is_empty();
    for (alias_id, target) in aliases {
        rewrite_below(
            tree,
            &mut |node, slot| {
                if slot == Slot::Single && node.kind == Kind::Identifier && *node == alias_id {
                    *node = target.clone();
                    return true;
                }
                false
            },
            &|node| node.kind != Kind::TableAlias,
        );
    }
    changed
}

/// Rule 104: for inner joins, sort the tables and put all ON conditions on the first join.
pub(super) fn rule104(tree: &mut Node, _: &mut Cx) -> bool {
    let joins = tree.list(Key::Joins);
    if joins.is_empty() || !tree.has(Key::From) || joins.iter().any(|j| j.has(Key::Side)) {
        return false;
    }
    let before = tree.clone();
    let mut tables: Vec<Node> = Vec::new();
    if let Some(from) = tree.node(Key::From).and_then(|f| f.node(Key::This)) {
        tables.push(from.clone());
    }
    let mut ons = Vec::new();
    for join in tree.list(Key::Joins) {
        if let Some(table) = join.node(Key::This) {
            tables.push(table.clone());
        }
        if let Some(on) = join.node(Key::On) {
            ons.push(on.clone());
        }
    }
    sort_nodes(&mut tables);
    sort_nodes(&mut ons);
    let mut tables = tables.into_iter();
    let Some(first) = tables.next() else {
        return false;
    };
    tree.set(Key::From, Node::unary(Kind::From, first));
    let mut on = Node::chain(Kind::And, ons);
    let joins: Vec<Node> = tables
        .map(|table| Node::unary(Kind::Join, table).with_opt(Key::On, on.take()))
        .collect();
    tree.set(Key::Joins, joins);
    *tree != before
}

/// Rule 105: flatten, sort and rebuild left-deep the operands of `=`, AND and OR. Each whole
/// chain is handled once (its operands first), so a long chain costs n log n, not n².
pub(super) fn rule105(tree: &mut Node, _: &mut Cx) -> bool {
    fn canonical(node: &mut Node) -> bool {
        if !matches!(node.kind, Kind::Eq | Kind::And | Kind::Or) {
            return canonical_below(node);
        }
        let kind = node.kind;
        let mut changed = !is_left_deep(node);
        let mut operands = Vec::new();
        flatten(
            std::mem::replace(node, Node::new(Kind::Null)),
            kind,
            &mut operands,
        );
        for operand in &mut operands {
            changed |= canonical(operand);
        }
        changed |= sort_nodes(&mut operands);
        *node = Node::chain(kind, operands).unwrap_or_else(|| Node::new(Kind::Null));
        changed
    }
    fn canonical_below(node: &mut Node) -> bool {
        let mut changed = false;
        for (_, field) in node.fields_mut() {
            match field {
                Field::Node(child) => changed |= canonical(child),
                Field::List(items) => {
                    for item in items.iter_mut() {
                        changed |= canonical(item);
                    }
                }
                _ => {}
            }
        }
        changed
    }
    canonical(tree)
}

/// Whether a chain of one connective nests only on the left, as [`Node::chain`] builds it.
fn is_left_deep(chain: &Node) -> bool {
    let mut node = chain;
    loop {
        if node
            .node(Key::Expression)
            .is_some_and(|right| right.kind == chain.kind)
        {
            return false;
        }
        match node.node(Key::This) {
            Some(left) if left.kind == chain.kind => node = left,
            _ => return true,
        }
    }
}

/// Rule 106: remove expression aliases, replacing references to them by the expression.
pub(super) fn rule106(tree: &mut Node, cx: &mut Cx) -> bool {
    let mut aliases: Vec<(Node, Node)> = Vec::new();
    collect_aliases(tree, &mut aliases);
    let changed = !aliases.is_empty();
    for (alias_id, expr) in aliases {
        // The reference goes on into each expression it put in; when that expression holds the
        // alias's identifier again (`age AS age`, `name AS singer FROM singer` once qualified),
        // it replaces it forever and fails the pair on Python's recursion limit. The harness
        // drops such an alias and leaves the names alone: they name the column or table.
        let loops = mentions(tree, &alias_id) && mentions(&expr, &alias_id);
        if loops {
            if cx.compat {
                cx.error = Some(RuleError::AliasRecursion);
                return false;
            }
            cx.depart(
                106,
                "alias-loop",
                "an alias spelled like a name in its own expression",
            );
        }
        replace_alias(tree, &alias_id, &expr, !loops);
    }
    changed
}

fn collect_aliases(node: &Node, out: &mut Vec<(Node, Node)>) {
    for (_, field) in node.fields() {
        let children: &[Node] = match field {
            Field::Node(child) => std::slice::from_ref(child.as_ref()),
            Field::List(items) => items,
            _ => &[],
        };
        for child in children {
            if child.kind == Kind::Alias {
                if let (Some(id), Some(expr)) = (child.node(Key::Alias), child.node(Key::This)) {
                    out.push((id.clone(), expr.clone()));
                }
            }
            collect_aliases(child, out);
        }
    }
}

/// Unwraps list-element aliases of `expr` and, with `references`, turns identifiers equal to
/// the alias into `expr`; like the reference, it does not look inside alias nodes (nor inside
/// the expressions it put in: see [`rule106`]).
fn replace_alias(node: &mut Node, alias_id: &Node, expr: &Node, references: bool) {
    for (_, field) in node.fields_mut() {
        match field {
            Field::Node(child) => {
                if child.kind == Kind::Alias {
                    continue;
                }
                if references && child.kind == Kind::Identifier && **child == *alias_id {
                    **child = expr.clone();
                } else {
                    replace_alias(child, alias_id, expr, references);
                }
            }
            Field::List(items) => {
                for item in items.iter_mut() {
                    if item.kind == Kind::Alias {
                        if item.node(Key::This) == Some(expr) {
                            *item = expr.clone();
                        }
                    } else {
                        replace_alias(item, alias_id, expr, references);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Whether `node` holds `id` as a single child outside alias nodes: where the reference's
/// replacement would replace it.
fn mentions(node: &Node, id: &Node) -> bool {
    node.fields().iter().any(|(_, field)| match field {
        Field::Node(child) => {
            child.kind != Kind::Alias
                && ((child.kind == Kind::Identifier && **child == *id) || mentions(child, id))
        }
        Field::List(items) => items
            .iter()
            .any(|item| item.kind != Kind::Alias && mentions(item, id)),
        _ => false,
    })
}

/// Rule 107: remove parentheses.
pub(super) fn rule107(tree: &mut Node, _: &mut Cx) -> bool {
    fn unwrap(node: &mut Node) -> bool {
        let mut changed = false;
        while node.kind == Kind::Paren {
            match node.take(Key::This) {
                Some(inner) => *node = inner,
                None => break,
            }
            changed = true;
        }
        changed
    }
    let changed = unwrap(tree);
    changed | rewrite_below(tree, &mut |node, _| unwrap(node), &everywhere)
}

/// Rule 108: unquote identifiers.
pub(super) fn rule108(tree: &mut Node, cx: &mut Cx) -> bool {
    rewrite_below(
        tree,
        &mut |node, slot| {
            if node.kind != Kind::Identifier || !node.flag(Key::Quoted) || !cx.reaches(108, slot) {
                return false;
            }
            node.set(Key::Quoted, false);
            true
        },
        &everywhere,
    )
}

// --- cleanup ------------------------------------------------------------------------------

fn is_true(node: &Node, compat: bool) -> bool {
    if node.kind != Kind::Eq {
        return false;
    }
    match node.operands() {
        Some((left, right)) => left == right && (compat || left.kind == Kind::Literal),
        None => false,
    }
}

/// Removes the `1.0 = 1.0` the rules leave behind: `X AND TRUE` is X, `X OR TRUE` is TRUE
/// (the reference makes it X: D3), a WHERE that is only TRUE goes. A column equal to itself
/// is not TRUE (it is NULL for NULL), though the reference takes it as TRUE (D3).
pub(super) fn cleanup(tree: &mut Node, cx: &mut Cx) -> bool {
    let compat = cx.compat;
    let mut or_departure = false;
    let mut self_equal = false;
    let changed = rewrite_below(
        tree,
        &mut |node, slot| {
            if node.kind == Kind::Select && drop_true_where(node, compat, &mut self_equal) {
                return true;
            }
            if !matches!(node.kind, Kind::And | Kind::Or) || slot == Slot::Element {
                return false;
            }
            let Some((left, right)) = node.operands() else {
                return false;
            };
            let keep = if is_true(left, compat) {
                Key::Expression
            } else if is_true(right, compat) {
                Key::This
            } else {
                self_equal |= is_true(left, true) || is_true(right, true);
                return false;
            };
            if node.kind == Kind::Or && !compat {
                or_departure = true;
                *node = Node::true_condition();
            } else if let Some(kept) = node.take(keep) {
                *node = kept;
            }
            true
        },
        &everywhere,
    );
    let changed = changed | drop_true_where(tree, compat, &mut self_equal);
    if or_departure {
        cx.depart(0, "D3", "X OR TRUE is TRUE, not X");
    }
    if self_equal {
        cx.depart(0, "D3", "a column equal to itself is not TRUE");
    }
    changed
}

/// Removes a WHERE that is only TRUE; notes one that is TRUE only for the reference.
fn drop_true_where(select: &mut Node, compat: bool, self_equal: &mut bool) -> bool {
    let condition = select.node(Key::Where).and_then(|w| w.node(Key::This));
    let is_trivial = condition.is_some_and(|condition| is_true(condition, compat));
    *self_equal |= !is_trivial && condition.is_some_and(|condition| is_true(condition, true));
    if is_trivial {
        select.remove(Key::Where);
    }
    is_trivial
}
