//! The rule engine (`etm.md` §5.3) and the normalisation rules 100-108 (§5.1) with the
//! cleanup of trivially true conditions.
//!
//! Rules work on whole trees the way the reference walks them: a rule sees every node below
//! the SELECT it runs on, subqueries included, and rewrites a node from its parent's field.
//! Whether that field is a single child or a list element matters for the reference (D12),
//! so the walker reports it.

use std::collections::BTreeSet;

use super::equivalences;
use super::facts::Facts;
use super::sets;
use super::tree::{Field, Key, Kind, Node};

/// Bound on fixpoint rounds; reaching it is reported as `etm_no_fixpoint`.
pub const MAX_ROUNDS: usize = 64;

/// A place where the harness departs from the reference: a guard that kept a rule from
/// firing, or a defect of the reference it does not share (`etm.md` §5.2, §7).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Departure {
    /// The rule, `100`-`108`, `1`-`26`, or `0` for the cleanup step.
    pub rule: u16,
    /// The defect of §7 (`D3`, `D12`, ...) or, for a guard with no defect number, `guard`.
    pub defect: &'static str,
    pub reason: &'static str,
}

#[derive(Debug, Default, Clone)]
pub struct Trace {
    /// Rules that rewrote the tree (`0` = cleanup).
    pub fired: BTreeSet<u16>,
    pub departures: BTreeSet<Departure>,
    pub no_fixpoint: bool,
}

/// A guard's outcome: `Err((defect, reason))` when the harness's extra condition fails.
pub type Guard = Result<(), (&'static str, &'static str)>;

pub fn check(ok: bool, defect: &'static str, reason: &'static str) -> Guard {
    if ok {
        Ok(())
    } else {
        Err((defect, reason))
    }
}

pub struct Cx<'a> {
    pub facts: &'a Facts,
    /// Behave like the reference (`--etm-compat`): no guards, the traversal quirks kept.
    pub compat: bool,
    pub trace: Trace,
    /// Facts the reference derives from join equalities (D2), shared by gold and prediction.
    pub derived: DerivedFacts,
    /// Set by a rule that fails the pair, as the reference's exception would.
    pub error: Option<RuleError>,
}

/// D2: UNIQUE and NOT NULL facts rule 19 copies across join equalities in the reference.
#[derive(Debug, Default, Clone)]
pub struct DerivedFacts {
    pub unique: BTreeSet<(String, String)>,
    pub non_null: BTreeSet<(String, String)>,
}

impl Cx<'_> {
    /// Whether a rule whose reference conditions hold may fire: `guard` is `Err((defect,
    /// reason))` when the harness's extra condition fails. Under `compat` the guard is ignored.
    pub fn allowed(&mut self, rule: u16, guard: Guard) -> bool {
        match guard {
            Ok(()) => true,
            Err(_) if self.compat => true,
            Err((defect, reason)) => {
                self.depart(rule, defect, reason);
                false
            }
        }
    }

    pub fn is_unique(&mut self, rule: u16, table: &str, column: &str) -> bool {
        if self.facts.is_unique(table, column) {
            return true;
        }
        let key = (table.to_string(), column.to_string());
        self.derived.unique.contains(&key)
            && self.allowed(rule, Err(("D2", "uniqueness derived from a join")))
    }

    pub fn is_non_null(&mut self, rule: u16, table: &str, column: &str) -> bool {
        if self.facts.is_non_null(table, column) {
            return true;
        }
        let key = (table.to_string(), column.to_string());
        self.derived.non_null.contains(&key)
            && self.allowed(rule, Err(("D2", "NOT NULL derived from a join")))
    }

    pub fn depart(&mut self, rule: u16, defect: &'static str, reason: &'static str) {
        self.trace.departures.insert(Departure {
            rule,
            defect,
            reason,
        });
    }

    /// D12: the reference rewrites some nodes only when they are a single child, never a list
    /// element. The harness rewrites both, and notes where that made a difference.
    pub fn reaches(&mut self, rule: u16, slot: Slot) -> bool {
        if slot == Slot::Single {
            return true;
        }
        if self.compat {
            return false;
        }
        self.depart(rule, "D12", "rewrote a list element the reference skips");
        true
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Single,
    Element,
}

/// Visits the nodes below `node` in pre-order; `visit` may rewrite a node in place and says
/// whether it did. The walk then goes into the (rewritten) node when `descend` allows.
pub fn rewrite_below(
    node: &mut Node,
    visit: &mut dyn FnMut(&mut Node, Slot) -> bool,
    descend: &dyn Fn(&Node) -> bool,
) -> bool {
    let mut changed = false;
    for (_, field) in node.fields_mut() {
        match field {
            Field::Node(child) => {
                changed |= visit(child, Slot::Single);
                if descend(child) {
                    changed |= rewrite_below(child, visit, descend);
                }
            }
            Field::List(items) => {
                for item in items.iter_mut() {
                    changed |= visit(item, Slot::Element);
                    if descend(item) {
                        changed |= rewrite_below(item, visit, descend);
                    }
                }
            }
            Field::Text(_) | Field::Flag(_) => {}
        }
    }
    changed
}

pub fn everywhere(_: &Node) -> bool {
    true
}

/// Visits every node below `node`, read-only.
pub fn any_below(node: &Node, test: &mut dyn FnMut(&Node) -> bool) -> bool {
    node.fields().iter().any(|(_, field)| match field {
        Field::Node(child) => test(child) || any_below(child, test),
        Field::List(items) => items.iter().any(|item| test(item) || any_below(item, test)),
        _ => false,
    })
}

type Rule = fn(&mut Node, &mut Cx) -> bool;

/// The order of §5.3 step 4.
const SELECT_RULES: [(u16, Rule); 32] = [
    (100, rule100),
    (101, rule101),
    (102, rule102),
    (103, rule103),
    (104, rule104),
    (105, rule105),
    (106, rule106),
    (107, rule107),
    (108, rule108),
    (1, equivalences::rule1),
    (2, equivalences::rule2),
    (4, equivalences::rule4),
    (6, equivalences::rule6),
    (7, equivalences::rule7),
    (8, equivalences::rule8),
    (9, equivalences::rule9),
    (10, equivalences::rule10),
    (11, equivalences::rule11),
    (12, equivalences::rule12),
    (13, equivalences::rule13),
    (14, equivalences::rule14),
    (15, equivalences::rule15),
    (16, equivalences::rule16),
    (17, equivalences::rule17),
    (18, equivalences::rule18),
    (19, equivalences::rule19),
    (20, equivalences::rule20),
    (22, equivalences::rule22),
    (23, equivalences::rule23),
    (24, equivalences::rule24),
    (25, equivalences::rule25),
    (0, cleanup),
];

/// `applyRules`: CTEs first, then every nested SELECT, then the set-operation rules, then
/// the SELECT rules to a fixpoint.
pub fn apply_rules(mut tree: Node, cx: &mut Cx) -> Result<Node, RuleError> {
    if tree.has(Key::With) {
        sets::rule26(&mut tree, cx);
    }
    normalise_nested(&mut tree, cx)?;
    if tree.is_set_operation() {
        tree = sets::rule21(tree, cx);
        tree = sets::rule3(tree, cx);
        tree = sets::rule5(tree, cx);
    }
    if tree.kind == Kind::Select {
        fixpoint(&mut tree, cx)?;
    }
    Ok(tree)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleError {
    /// D16: rule 10 met a second matching SELECT item.
    SecondMinMax,
    /// Rule 106 would replace an alias inside its own expression forever.
    AliasRecursion,
}

fn normalise_nested(node: &mut Node, cx: &mut Cx) -> Result<(), RuleError> {
    for (_, field) in node.fields_mut() {
        match field {
            Field::Node(child) => normalise_child(child, cx)?,
            Field::List(items) => {
                for item in items.iter_mut() {
                    normalise_child(item, cx)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn normalise_child(child: &mut Node, cx: &mut Cx) -> Result<(), RuleError> {
    if child.kind == Kind::Select {
        let taken = std::mem::replace(child, Node::new(Kind::Null));
        *child = apply_rules(taken, cx)?;
        Ok(())
    } else {
        normalise_nested(child, cx)
    }
}

fn fixpoint(tree: &mut Node, cx: &mut Cx) -> Result<(), RuleError> {
    for _ in 0..MAX_ROUNDS {
        let mut changed = false;
        for (number, rule) in SELECT_RULES {
            if rule(tree, cx) {
                cx.trace.fired.insert(number);
                changed = true;
            }
            if let Some(error) = cx.error.take() {
                return Err(error);
            }
        }
        if !changed {
            return Ok(());
        }
    }
    cx.trace.no_fixpoint = true;
    Ok(())
}

// --- 100-108 --------------------------------------------------------------------------------

/// Rule 100: lowercase every text field but literal values.
fn rule100(tree: &mut Node, _: &mut Cx) -> bool {
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
fn rule101(tree: &mut Node, cx: &mut Cx) -> bool {
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
pub fn sort_nodes(items: &mut [Node]) -> bool {
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
fn rule102(tree: &mut Node, _: &mut Cx) -> bool {
    tree.list_mut(Key::Expressions)
        .is_some_and(|items| sort_nodes(items))
}

/// Rule 103: replace table aliases by the table (a derived table's alias by its query).
fn rule103(tree: &mut Node, _: &mut Cx) -> bool {
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
fn rule104(tree: &mut Node, _: &mut Cx) -> bool {
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
fn rule105(tree: &mut Node, _: &mut Cx) -> bool {
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

pub fn flatten(node: Node, kind: Kind, out: &mut Vec<Node>) {
    if node.kind != kind {
        out.push(node);
        return;
    }
    let mut node = node;
    for key in [Key::This, Key::Expression] {
        if let Some(child) = node.take(key) {
            flatten(child, kind, out);
        }
    }
}

/// Rule 106: remove expression aliases, replacing references to them by the expression.
fn rule106(tree: &mut Node, cx: &mut Cx) -> bool {
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
fn rule107(tree: &mut Node, _: &mut Cx) -> bool {
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
fn rule108(tree: &mut Node, cx: &mut Cx) -> bool {
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
fn cleanup(tree: &mut Node, cx: &mut Cx) -> bool {
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
