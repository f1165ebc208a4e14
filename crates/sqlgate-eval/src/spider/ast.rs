//! The structure `get_sql` produces, as typed Rust values.
//!
//! Column ids are the reference's canonical strings: `__table.column__`, `__all__` for `*`, and
//! `__table__` for a table unit. A condition keeps the reference's list shape (units joined by
//! `and`/`or`), split into units and connectors.

use serde::Serialize;

/// An aggregate (`AGG_OPS`); `None` also comes from a literal `none` token, as in the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AggOp {
    /// No aggregate.
    #[default]
    None,
    /// `max(...)`.
    Max,
    /// `min(...)`.
    Min,
    /// `count(...)`.
    Count,
    /// `sum(...)`.
    Sum,
    /// `avg(...)`.
    Avg,
}

impl AggOp {
    pub(crate) fn from_token(token: &str) -> Option<AggOp> {
        Some(match token {
            "none" => AggOp::None,
            "max" => AggOp::Max,
            "min" => AggOp::Min,
            "count" => AggOp::Count,
            "sum" => AggOp::Sum,
            "avg" => AggOp::Avg,
            _ => return None,
        })
    }
}

/// An arithmetic operator between two column units (`UNIT_OPS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitOp {
    /// A single column unit, no arithmetic.
    #[default]
    None,
    /// `-`.
    Minus,
    /// `+`.
    Plus,
    /// `*`.
    Times,
    /// `/`.
    Divide,
}

impl UnitOp {
    pub(crate) fn from_token(token: &str) -> Option<UnitOp> {
        Some(match token {
            "none" => UnitOp::None,
            "-" => UnitOp::Minus,
            "+" => UnitOp::Plus,
            "*" => UnitOp::Times,
            "/" => UnitOp::Divide,
            _ => return None,
        })
    }
}

/// A condition operator (`WHERE_OPS`). `Not` is an operator of its own there (`a not not b`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WhereOp {
    /// `not` written as an operator.
    Not,
    /// `between ... and ...`.
    Between,
    /// `=`.
    #[serde(rename = "=")]
    Eq,
    /// `>`.
    #[serde(rename = ">")]
    Gt,
    /// `<`.
    #[serde(rename = "<")]
    Lt,
    /// `>=`.
    #[serde(rename = ">=")]
    Ge,
    /// `<=`.
    #[serde(rename = "<=")]
    Le,
    /// `!=`.
    #[serde(rename = "!=")]
    Ne,
    /// `in` (a subquery or a list).
    In,
    /// `like`.
    Like,
    /// `is` (`is null`, `is not null`).
    Is,
    /// `exists (subquery)`.
    Exists,
}

impl WhereOp {
    pub(crate) fn from_token(token: &str) -> Option<WhereOp> {
        Some(match token {
            "not" => WhereOp::Not,
            "between" => WhereOp::Between,
            "=" => WhereOp::Eq,
            ">" => WhereOp::Gt,
            "<" => WhereOp::Lt,
            ">=" => WhereOp::Ge,
            "<=" => WhereOp::Le,
            "!=" => WhereOp::Ne,
            "in" => WhereOp::In,
            "like" => WhereOp::Like,
            "is" => WhereOp::Is,
            "exists" => WhereOp::Exists,
            _ => return None,
        })
    }
}

/// `and` / `or` between condition units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Connector {
    /// Both sides must hold.
    And,
    /// Either side may hold.
    Or,
}

impl Connector {
    pub(crate) fn from_token(token: &str) -> Option<Connector> {
        match token {
            "and" => Some(Connector::And),
            "or" => Some(Connector::Or),
            _ => None,
        }
    }
}

/// `(agg_id, col_id, isDistinct)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ColUnit {
    /// The aggregate around the column.
    pub agg: AggOp,
    /// `__table.column__` or `__all__`.
    pub col_id: String,
    /// Written with `distinct` inside the aggregate.
    pub distinct: bool,
}

/// `(unit_op, col_unit1, col_unit2)`; `right` is set iff an operator token was read (which may
/// be the literal `none`, so `op == None` with a `right` side is possible).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ValUnit {
    /// The operator joining `left` and `right`.
    pub op: UnitOp,
    /// The first (often only) column unit.
    pub left: ColUnit,
    /// The second column unit, when an operator was read.
    pub right: Option<ColUnit>,
}

impl ValUnit {
    /// The column units, left then right.
    pub fn col_units(&self) -> impl Iterator<Item = &ColUnit> {
        std::iter::once(&self.left).chain(self.right.as_ref())
    }
}

/// A condition operand (`val1`/`val2`): a number, a quoted string (quotes kept, as the
/// reference stores it, with `'` turned into `"`), a column unit or a subquery.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Operand {
    /// A numeric literal.
    Number(f64),
    /// A quoted string, quotes kept.
    Text(String),
    /// A column unit compared to.
    Column(ColUnit),
    /// A subquery.
    Sql(Box<Sql>),
}

impl Operand {
    /// The subquery, when the operand is one.
    pub fn as_sql(&self) -> Option<&Sql> {
        match self {
            Operand::Sql(sql) => Some(sql),
            _ => None,
        }
    }
}

/// `(not_op, op_id, val_unit, val1, val2)`. The parser always sets `val1`; `val2` only for
/// BETWEEN. Both are options so that exact set match can drop values in place.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CondUnit {
    /// Negated (`not in`, `not like`, ...).
    pub not: bool,
    /// The comparison.
    pub op: WhereOp,
    /// The left-hand side.
    pub val_unit: ValUnit,
    /// The right-hand side (BETWEEN's lower bound).
    pub val1: Option<Operand>,
    /// BETWEEN's upper bound.
    pub val2: Option<Operand>,
}

impl CondUnit {
    /// The subqueries among the operands (`val1` first).
    pub fn subqueries(&self) -> impl Iterator<Item = &Sql> {
        [&self.val1, &self.val2]
            .into_iter()
            .filter_map(|operand| operand.as_ref().and_then(Operand::as_sql))
    }
}

/// The reference's `[cond_unit, 'and'|'or', cond_unit, ...]`.
///
/// `connectors[i]` follows `units[i]`. There is one connector fewer than units, or as many when
/// the query ends right after `and`/`or` (the reference keeps that trailing connector).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Condition {
    /// The condition units, in written order.
    pub units: Vec<CondUnit>,
    /// The `and`/`or` after each unit.
    pub connectors: Vec<Connector>,
}

impl Condition {
    /// Whether the clause is absent (no unit and no stray connector).
    pub fn is_empty(&self) -> bool {
        self.units.is_empty() && self.connectors.is_empty()
    }

    /// The length of the reference's interleaved list (units plus connectors).
    pub fn list_len(&self) -> usize {
        self.units.len() + self.connectors.len()
    }
}

/// `select = (isDistinct, [(agg_id, val_unit), ...])`.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Select {
    /// `select distinct`.
    pub distinct: bool,
    /// The selected items, in written order.
    pub items: Vec<SelectItem>,
}

/// `(agg_id, val_unit)`: one selected expression.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelectItem {
    /// The aggregate around the whole expression.
    pub agg: AggOp,
    /// The expression.
    pub val_unit: ValUnit,
}

/// `('table_unit', '__table__')` or `('sql', subquery)`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TableUnit {
    /// A table, as `__table__`.
    Table(String),
    /// A subquery in FROM.
    Sql(Box<Sql>),
}

/// `from = {table_units, conds}`; `conds` holds every JOIN ... ON condition, joined by `and`.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct FromClause {
    /// The tables and subqueries joined.
    pub table_units: Vec<TableUnit>,
    /// The join conditions.
    pub conds: Condition,
}

/// The direction of an ORDER BY.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OrderDirection {
    /// Ascending (also when no direction is written).
    #[default]
    Asc,
    /// Descending.
    Desc,
}

/// `orderBy = (asc|desc, [val_unit, ...])`. The direction is the last one written: the
/// reference keeps a single direction for the whole list. Present (and counted) even when the
/// list is empty.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize)]
pub struct OrderBy {
    /// The direction written last.
    pub direction: OrderDirection,
    /// The sort keys, in written order.
    pub val_units: Vec<ValUnit>,
}

/// One query: the `sql` dict of `process_sql.py`. `Sql::default()` is the empty query the
/// reference substitutes for an unparseable prediction.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Sql {
    /// The SELECT list.
    pub select: Select,
    /// The FROM clause, joins included.
    pub from: FromClause,
    /// The WHERE condition (empty when absent).
    pub r#where: Condition,
    /// The GROUP BY columns.
    #[serde(rename = "groupBy")]
    pub group_by: Vec<ColUnit>,
    /// The HAVING condition (empty when absent).
    pub having: Condition,
    /// The ORDER BY clause, when written.
    #[serde(rename = "orderBy")]
    pub order_by: Option<OrderBy>,
    /// Only presence matters to the evaluator; values beyond `i64` saturate.
    pub limit: Option<i64>,
    /// The query after `intersect`.
    pub intersect: Option<Box<Sql>>,
    /// The query after `union`.
    pub union: Option<Box<Sql>>,
    /// The query after `except`.
    pub except: Option<Box<Sql>>,
}

impl Sql {
    /// The three compound parts, in the order `intersect`, `union`, `except`.
    pub fn compounds(&self) -> impl Iterator<Item = &Sql> {
        [&self.intersect, &self.union, &self.except]
            .into_iter()
            .filter_map(|part| part.as_deref())
    }
}
