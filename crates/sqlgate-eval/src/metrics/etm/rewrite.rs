//! What every rule is written with: the context a rule reads facts from and records into
//! ([`Cx`]: the trace, departures from the reference, a failure), the guard helpers, and the
//! walkers over the nodes below a SELECT.
//!
//! Rules work on whole trees the way the reference walks them: a rule sees every node below
//! the SELECT it runs on, subqueries included, and rewrites a node from its parent's field.
//! Whether that field is a single child or a list element matters for the reference (D12),
//! so the walker reports it.

use std::collections::BTreeSet;

use super::facts::Facts;
use super::tree::{Field, Key, Kind, Node};

/// A place where the harness departs from the reference: a guard that kept a rule from
/// firing, or a defect of the reference it does not share (`etm.md` §5.2, §7).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Departure {
    /// The rule, `100`-`108`, `1`-`26`, or `0` for the cleanup step.
    pub rule: u16,
    /// The defect of §7 (`D3`, `D12`, ...) or, for a guard with no defect number, `guard`.
    pub defect: &'static str,
    /// What happened there, for a person reading the verdict.
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleError {
    /// D16: rule 10 met a second matching SELECT item.
    SecondMinMax,
    /// Rule 106 would replace an alias inside its own expression forever.
    AliasRecursion,
}

/// Collects the operands of a chain of one connective (`kind`), left to right.
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
