//! The rule engine (`etm.md` §5.3): the order the rules run in, and the fixpoint of the
//! SELECT rules. The rules themselves live in [`super::normalize`] (100-108 and the cleanup),
//! [`super::equivalences`] (SELECT rules 1-25) and [`super::sets`] (set operations and CTEs).

use super::rewrite::{Cx, RuleError};
use super::tree::{Field, Key, Kind, Node};
use super::{equivalences, normalize, sets};

/// Bound on fixpoint rounds; reaching it is reported as `etm_no_fixpoint`.
const MAX_ROUNDS: usize = 64;

type Rule = fn(&mut Node, &mut Cx) -> bool;

/// The order of §5.3 step 4.
const SELECT_RULES: [(u16, Rule); 32] = [
    (100, normalize::rule100),
    (101, normalize::rule101),
    (102, normalize::rule102),
    (103, normalize::rule103),
    (104, normalize::rule104),
    (105, normalize::rule105),
    (106, normalize::rule106),
    (107, normalize::rule107),
    (108, normalize::rule108),
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
    (0, normalize::cleanup),
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
