//! What the golds ask of the data, beyond single values: the numbers their aggregates are
//! compared with and their `LIMIT`s (a database needs groups of exactly that many rows, and
//! tables larger than the limit, to tell `> 10` from `>= 10` or `LIMIT 3` from `LIMIT 4`), and
//! *witnesses*: per `SELECT`, the literal predicates its rows must satisfy together (an
//! airport code with its city, a country with its language), table instance by table
//! instance, and the column equalities that join those instances.

use std::collections::{BTreeSet, HashMap};

use sqlgate_eval::exec::Value;
use sqlparser::ast::{
    BinaryOperator, Expr, JoinConstraint, JoinOperator, LimitClause, Query, Select, SelectItem,
    SetExpr, SetOperator, TableFactor, Visit, Visitor,
};
use std::ops::ControlFlow;

use super::values::literal_value;
use crate::mutate::{conjuncts, parse_query};
use sqlgate_eval::exec::schema::Schema;

/// Largest group or table a hint asks for (runs stay fast).
pub const MAX_ROWS: usize = 64;

/// One table occurrence of a witness `SELECT` and the values its rows must hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    /// Index of the table in the schema.
    pub table: usize,
    /// (column index, value) pairs every witness row of this instance holds.
    pub fixed: Vec<(usize, Value)>,
}

/// Rows that satisfy one `SELECT`'s conjunctive literal predicates at once.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Witness {
    /// The table occurrences (aliases), each with its fixed values.
    pub instances: Vec<Instance>,
    /// Joined columns: ((instance, column), (instance, column)) must hold equal values.
    pub links: Vec<((usize, usize), (usize, usize))>,
}

/// What all golds of a database ask of the data.
#[derive(Debug, Clone, Default)]
pub struct Hints {
    /// Numbers aggregates are compared with and LIMITs, each once, ascending, at most
    /// [`MAX_ROWS`] - 1.
    pub thresholds: Vec<usize>,
    /// Per gold, the witnesses of its `SELECT`s (none when it does not parse).
    pub witnesses: Vec<Vec<Witness>>,
}

impl Hints {
    /// The hints of `golds` (first alternatives) against `schema`.
    pub fn gather<'a>(golds: impl IntoIterator<Item = &'a str>, schema: &Schema) -> Hints {
        let mut thresholds = BTreeSet::new();
        let mut witnesses = Vec::new();
        for gold in golds {
            let Ok(query) = parse_query(gold) else {
                witnesses.push(Vec::new());
                continue;
            };
            let mut numbers = Numbers::default();
            let _ = query.visit(&mut numbers);
            thresholds.extend(numbers.0.into_iter().filter(|n| (1..MAX_ROWS).contains(n)));
            let mut found = Vec::new();
            query_witnesses(&query, schema, &mut found);
            witnesses.push(found);
        }
        Hints {
            thresholds: thresholds.into_iter().collect(),
            witnesses,
        }
    }
}

/// Integers compared with an aggregate call, and LIMITs.
#[derive(Default)]
struct Numbers(Vec<usize>);

impl Visitor for Numbers {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if let Some(LimitClause::LimitOffset {
            limit: Some(limit), ..
        }) = &query.limit_clause
        {
            self.0.extend(integer(limit));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if let Expr::BinaryOp { left, op, right } = expr {
            if is_comparison(op) {
                for (call, number) in [(left, right), (right, left)] {
                    if matches!(**call, Expr::Function(_)) {
                        self.0.extend(integer(number));
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }
}

fn integer(expr: &Expr) -> Option<usize> {
    match literal_value(expr)? {
        Value::Int(n) => usize::try_from(n).ok(),
        _ => None,
    }
}

fn is_comparison(op: &BinaryOperator) -> bool {
    use BinaryOperator::*;
    matches!(op, Eq | NotEq | Gt | GtEq | Lt | LtEq)
}

fn query_witnesses(query: &Query, schema: &Schema, found: &mut Vec<Witness>) {
    if let Some(with) = &query.with {
        for cte in &with.cte_tables {
            query_witnesses(&cte.query, schema, found);
        }
    }
    set_witnesses(&query.body, schema, found);
}

fn set_witnesses(body: &SetExpr, schema: &Schema, found: &mut Vec<Witness>) {
    match body {
        SetExpr::Select(select) => select_witness(select, schema, found),
        SetExpr::Query(query) => query_witnesses(query, schema, found),
        SetExpr::SetOperation {
            op: SetOperator::Intersect,
            left,
            right,
            ..
        } => match (&**left, &**right) {
            (SetExpr::Select(left), SetExpr::Select(right)) => {
                intersect_witness(left, right, schema, found)
            }
            _ => {
                set_witnesses(left, schema, found);
                set_witnesses(right, schema, found);
            }
        },
        SetExpr::SetOperation { left, right, .. } => {
            set_witnesses(left, schema, found);
            set_witnesses(right, schema, found);
        }
        _ => {}
    }
}

/// The witness of one `SELECT` (when it fixes or joins anything), then those of the
/// subqueries its conditions hold positively (`IN (SELECT ...)`, `EXISTS`, scalar).
fn select_witness(select: &Select, schema: &Schema, found: &mut Vec<Witness>) {
    let (witness, _) = select_parts(select, schema, found);
    if witness.instances.iter().any(|i| !i.fixed.is_empty()) || !witness.links.is_empty() {
        found.push(witness);
    }
}

/// The witness of `left INTERSECT right`: both sides' rows, with each returned column of the
/// right side joined to the same column of the left (a country with English *and* French
/// official: two language rows under countries of one name).
fn intersect_witness(left: &Select, right: &Select, schema: &Schema, found: &mut Vec<Witness>) {
    let (mut witness, left_returns) = select_parts(left, schema, found);
    let (other, right_returns) = select_parts(right, schema, found);
    let shift = witness.instances.len();
    let moved = |(at, column): (usize, usize)| (at + shift, column);
    witness.instances.extend(other.instances);
    witness
        .links
        .extend(other.links.into_iter().map(|(a, b)| (moved(a), moved(b))));
    for (l, r) in left_returns.into_iter().zip(right_returns) {
        if let (Some(l), Some(r)) = (l, r) {
            witness.links.push((l, moved(r)));
        }
    }
    if !witness.links.is_empty() {
        found.push(witness);
    }
}

/// The witness of one `SELECT` (maybe trivial) and the (instance, column) each of its returned
/// columns reads, where it reads one; the witnesses of its subqueries go to `found`.
fn select_parts(
    select: &Select,
    schema: &Schema,
    found: &mut Vec<Witness>,
) -> (Witness, Vec<Option<(usize, usize)>>) {
    let mut scope = Scope::default();
    let mut conditions: Vec<&Expr> = Vec::new();
    for from in &select.from {
        scope.add(&from.relation, schema, found);
        for join in &from.joins {
            scope.add(&join.relation, schema, found);
            if let JoinOperator::Join(JoinConstraint::On(on))
            | JoinOperator::Inner(JoinConstraint::On(on)) = &join.join_operator
            {
                conditions.extend(conjuncts(on));
            }
        }
    }
    if let Some(selection) = &select.selection {
        conditions.extend(conjuncts(selection));
    }
    let mut witness = Witness {
        instances: scope.instances.clone(),
        links: Vec::new(),
    };
    for condition in conditions {
        scope.apply(condition, schema, &mut witness, found);
    }
    let returns = select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => {
                scope.resolve(expr, schema)
            }
            _ => None,
        })
        .collect();
    (witness, returns)
}

/// The table occurrences of one `SELECT`, by alias (lowercased).
#[derive(Default)]
struct Scope {
    instances: Vec<Instance>,
    names: HashMap<String, usize>,
}

impl Scope {
    fn add(&mut self, factor: &TableFactor, schema: &Schema, found: &mut Vec<Witness>) {
        match factor {
            TableFactor::Table { name, alias, .. } => {
                let table_name = name.to_string().trim_matches('"').to_lowercase();
                let Some(table) = schema
                    .tables
                    .iter()
                    .position(|t| t.name.eq_ignore_ascii_case(&table_name))
                else {
                    return;
                };
                let at = self.instances.len();
                self.instances.push(Instance {
                    table,
                    fixed: Vec::new(),
                });
                let alias = alias.as_ref().map(|a| a.name.value.to_lowercase());
                self.names.insert(alias.unwrap_or(table_name), at);
            }
            TableFactor::Derived { subquery, .. } => query_witnesses(subquery, schema, found),
            _ => {}
        }
    }

    /// The (instance, column) a column reference names here: by alias, or the only
    /// instance whose table has a column of that name.
    fn resolve(&self, expr: &Expr, schema: &Schema) -> Option<(usize, usize)> {
        let column_of = |at: usize, column: &str| {
            schema.tables[self.instances[at].table]
                .columns
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(column))
        };
        match expr {
            // Spider writes "x" for text: it names a column only when one has that name.
            Expr::Identifier(ident) => {
                let mut owners = (0..self.instances.len())
                    .filter_map(|at| column_of(at, &ident.value).map(|c| (at, c)));
                let first = owners.next()?;
                owners.next().is_none().then_some(first)
            }
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                let at = *self.names.get(&parts[0].value.to_lowercase())?;
                Some((at, column_of(at, &parts[1].value)?))
            }
            Expr::Nested(inner) => self.resolve(inner, schema),
            _ => None,
        }
    }

    fn apply(
        &self,
        condition: &Expr,
        schema: &Schema,
        witness: &mut Witness,
        found: &mut Vec<Witness>,
    ) {
        let mut fix = |column: Option<(usize, usize)>, value: Option<Value>| {
            if let (Some((at, column)), Some(value)) = (column, value) {
                witness.instances[at].fixed.push((column, value));
            }
        };
        match condition {
            Expr::BinaryOp { left, op, right } if is_comparison(op) => {
                let (l, r) = (self.resolve(left, schema), self.resolve(right, schema));
                match (l, r, op) {
                    (Some(a), Some(b), BinaryOperator::Eq) => witness.links.push((a, b)),
                    (Some(_), None, _) => fix(l, satisfying(op, literal_value(right))),
                    (None, Some(_), _) => fix(r, satisfying(&flipped(op), literal_value(left))),
                    _ => {}
                }
                for side in [left, right] {
                    if let Expr::Subquery(query) = &**side {
                        query_witnesses(query, schema, found);
                    }
                }
            }
            Expr::Like {
                negated: false,
                expr,
                pattern,
                ..
            }
            | Expr::ILike {
                negated: false,
                expr,
                pattern,
                ..
            } => {
                let value = match literal_value(pattern) {
                    Some(Value::Text(p)) => Some(Value::Text(p.replace('%', "").replace('_', "x"))),
                    _ => None,
                };
                fix(self.resolve(expr, schema), value);
            }
            Expr::InList {
                expr,
                list,
                negated: false,
            } => fix(
                self.resolve(expr, schema),
                list.first().and_then(literal_value),
            ),
            Expr::Between {
                expr,
                negated: false,
                low,
                ..
            } => fix(self.resolve(expr, schema), literal_value(low)),
            Expr::Nested(inner) => self.apply(inner, schema, witness, found),
            // One row that holds the first alternative holds them all.
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Or,
                ..
            } => {
                for condition in conjuncts(left) {
                    self.apply(condition, schema, witness, found);
                }
            }
            // Negated too: rows the subquery returns are what `NOT IN` and `NOT EXISTS` leave
            // out, and what tells them from `IN` and `EXISTS`.
            Expr::InSubquery { subquery, .. } | Expr::Exists { subquery, .. } => {
                query_witnesses(subquery, schema, found)
            }
            _ => {}
        }
    }
}

/// `a op b` read as `b op' a`.
fn flipped(op: &BinaryOperator) -> BinaryOperator {
    use BinaryOperator::*;
    match op {
        Gt => Lt,
        GtEq => LtEq,
        Lt => Gt,
        LtEq => GtEq,
        other => other.clone(),
    }
}

/// A value `v` with `v op bound` true (none for `!=` or a bound of no usable kind).
fn satisfying(op: &BinaryOperator, bound: Option<Value>) -> Option<Value> {
    use BinaryOperator::*;
    let bound = bound?;
    match (op, bound) {
        (Eq | GtEq | LtEq, v) => Some(v),
        (Gt, Value::Int(n)) => Some(Value::Int(n + 1)),
        (Lt, Value::Int(n)) => Some(Value::Int(n - 1)),
        (Gt, Value::Real(x)) => Some(Value::Real(x + 0.5)),
        (Lt, Value::Real(x)) => Some(Value::Real(x - 0.5)),
        (Gt, Value::Text(t)) => Some(Value::Text(format!("{t}z"))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlgate_eval::exec::schema::{Column, ForeignKey, Table};

    fn schema() -> Schema {
        let column = |name: &str, decl_type: &str| Column {
            name: name.into(),
            decl_type: decl_type.into(),
            primary_key: name == "id",
            not_null: false,
        };
        Schema {
            tables: vec![
                Table {
                    name: "airports".into(),
                    columns: vec![column("code", "text"), column("city", "text")],
                },
                Table {
                    name: "flights".into(),
                    columns: vec![
                        column("id", "integer"),
                        column("source", "text"),
                        column("dest", "text"),
                        column("price", "integer"),
                    ],
                },
            ],
            foreign_keys: Vec::<ForeignKey>::new(),
        }
    }

    #[test]
    fn thresholds_come_from_aggregate_comparisons_and_limits() {
        let hints = Hints::gather(
            [
                "SELECT source FROM flights GROUP BY source HAVING count(*) > 10",
                "SELECT id FROM flights ORDER BY price LIMIT 3",
                "SELECT id FROM flights WHERE price > 500 LIMIT 100",
            ],
            &schema(),
        );
        assert_eq!(hints.thresholds, [3, 10]);
    }

    #[test]
    fn witnesses_fix_each_alias_and_link_joined_columns() {
        let hints = Hints::gather(
            [
                "SELECT count(*) FROM flights AS T1 JOIN airports AS T2 ON T1.dest = T2.code \
                 WHERE T2.city = \"Aberdeen\" AND price > 100 AND T1.source LIKE 'A%'",
            ],
            &schema(),
        );
        let [witness] = hints.witnesses[0].as_slice() else {
            panic!("{:?}", hints.witnesses)
        };
        assert_eq!(
            witness.instances[0].fixed,
            [(3, Value::Int(101)), (1, Value::Text("A".into()))]
        );
        assert_eq!(
            witness.instances[1].fixed,
            [(1, Value::Text("Aberdeen".into()))]
        );
        assert_eq!(witness.links, [((0, 2), (1, 0))]);
    }

    #[test]
    fn an_intersection_joins_what_both_sides_return() {
        let hints = Hints::gather(
            [
                "SELECT T1.city FROM airports AS T1 JOIN flights AS T2 ON T1.code = T2.source \
                 WHERE T2.price = 10 INTERSECT SELECT T1.city FROM airports AS T1 JOIN flights \
                 AS T2 ON T1.code = T2.source WHERE T2.price = 20",
            ],
            &schema(),
        );
        let [witness] = hints.witnesses[0].as_slice() else {
            panic!("{:?}", hints.witnesses)
        };
        assert_eq!(witness.instances.len(), 4);
        assert_eq!(witness.instances[1].fixed, [(3, Value::Int(10))]);
        assert_eq!(witness.instances[3].fixed, [(3, Value::Int(20))]);
        // Each side's join, and the two cities.
        assert_eq!(
            witness.links,
            [((0, 0), (1, 1)), ((2, 0), (3, 1)), ((0, 1), (2, 1))]
        );
    }

    #[test]
    fn a_disjunction_is_witnessed_by_its_first_side_and_negated_subqueries_by_their_rows() {
        let hints = Hints::gather(
            [
                "SELECT id FROM flights WHERE (source = 'ABZ' OR dest = 'XYZ') AND price > 5 \
                 AND dest NOT IN (SELECT code FROM airports WHERE city = 'Oslo')",
            ],
            &schema(),
        );
        let fixed: Vec<&[(usize, Value)]> = hints.witnesses[0]
            .iter()
            .flat_map(|w| w.instances.iter().map(|i| i.fixed.as_slice()))
            .collect();
        assert!(
            fixed.contains(&[(1, Value::Text("ABZ".into())), (3, Value::Int(6))].as_slice()),
            "{fixed:?}"
        );
        assert!(
            fixed.contains(&[(1, Value::Text("Oslo".into()))].as_slice()),
            "{fixed:?}"
        );
    }
}
