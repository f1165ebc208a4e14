//! The 15 operator names, their registry order and their conflict sets (spec §9.2, §9.3).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One single-error mutation operator. Serialized, parsed and displayed by its spec name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    /// Drops one SELECT item.
    ProjectionDrop,
    /// Deletes one atom of the WHERE condition.
    WherePredicateDelete,
    /// Removes the WHERE clause.
    WhereRemove,
    /// Flips one WHERE comparison (`=` ↔ `!=`, `>` ↔ `<`, `>=` ↔ `<=`).
    WhereConditionFlip,
    /// `<` → `<=`, `>` → `>=` in WHERE (the spec's name is inverted: boundary rows are added).
    WhereStrengthen,
    /// `<=` → `<`, `>=` → `>` in WHERE (the spec's name is inverted: boundary rows are removed).
    WhereWeaken,
    /// Drops one join's ON condition.
    JoinBreak,
    /// Swaps one aggregate (`MIN` ↔ `MAX`, `SUM` ↔ `AVG`, `COUNT` → `SUM`).
    AggregationSwap,
    /// Adds a `*` (of the first FROM table) to the SELECT list.
    AddStarWildcard,
    /// Flips one HAVING comparison.
    HavingConditionFlip,
    /// Removes the HAVING clause.
    HavingRemove,
    /// Turns one inner (or comma) join into a LEFT JOIN.
    JoinTypeToLeft,
    /// Raises the LIMIT from n to 2n + r, r in 1..=5.
    LimitIncrease,
    /// Halves the LIMIT.
    LimitDecrease,
    /// Removes the outer SELECT's DISTINCT.
    DistinctToggle,
}

impl Operator {
    /// Every operator in registry order, which is also the generation order.
    pub const ALL: [Operator; 15] = [
        Operator::ProjectionDrop,
        Operator::WherePredicateDelete,
        Operator::WhereRemove,
        Operator::WhereConditionFlip,
        Operator::WhereStrengthen,
        Operator::WhereWeaken,
        Operator::JoinBreak,
        Operator::AggregationSwap,
        Operator::AddStarWildcard,
        Operator::HavingConditionFlip,
        Operator::HavingRemove,
        Operator::JoinTypeToLeft,
        Operator::LimitIncrease,
        Operator::LimitDecrease,
        Operator::DistinctToggle,
    ];

    /// The spec's name (`projection_drop`, ...), as files and reports write it.
    pub fn name(self) -> &'static str {
        match self {
            Operator::ProjectionDrop => "projection_drop",
            Operator::WherePredicateDelete => "where_predicate_delete",
            Operator::WhereRemove => "where_remove",
            Operator::WhereConditionFlip => "where_condition_flip",
            Operator::WhereStrengthen => "where_strengthen",
            Operator::WhereWeaken => "where_weaken",
            Operator::JoinBreak => "join_break",
            Operator::AggregationSwap => "aggregation_swap",
            Operator::AddStarWildcard => "add_star_wildcard",
            Operator::HavingConditionFlip => "having_condition_flip",
            Operator::HavingRemove => "having_remove",
            Operator::JoinTypeToLeft => "join_type_to_left",
            Operator::LimitIncrease => "limit_increase",
            Operator::LimitDecrease => "limit_decrease",
            Operator::DistinctToggle => "distinct_toggle",
        }
    }

    /// Whether the two operators may not appear in the same chain: every operator conflicts
    /// with itself, the three comparison rewrites are pairwise exclusive, and so are the two
    /// LIMIT rewrites.
    pub fn conflicts_with(self, other: Operator) -> bool {
        self == other || matches!((self.group(), other.group()), (Some(a), Some(b)) if a == b)
    }

    fn group(self) -> Option<ConflictGroup> {
        match self {
            Operator::WhereConditionFlip | Operator::WhereStrengthen | Operator::WhereWeaken => {
                Some(ConflictGroup::WhereComparison)
            }
            Operator::LimitIncrease | Operator::LimitDecrease => Some(ConflictGroup::Limit),
            _ => None,
        }
    }
}

#[derive(PartialEq, Eq)]
enum ConflictGroup {
    WhereComparison,
    Limit,
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An operator name that is not one of the 15.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mutation operator `{0}`")]
pub struct UnknownOperator(pub String);

impl FromStr for Operator {
    type Err = UnknownOperator;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Operator::ALL
            .into_iter()
            .find(|op| op.name() == name)
            .ok_or_else(|| UnknownOperator(name.to_string()))
    }
}
