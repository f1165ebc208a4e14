//! The join query graph G_Q of a query (spec §1.2): base tables of the outer FROM as nodes
//! (aliases resolved, a self-join collapses to one node), one edge per joined table pair with
//! all its column equalities. Equalities come from `JOIN … ON` (inner or outer; `USING` is not
//! read) and from the WHERE conjuncts
//! (implicit joins); an edge is kept only when G_S has an edge between the two tables.
//! Tables inside subqueries (scalar, IN, EXISTS) are out of scope: the graph describes the outer
//! query block only. A derived table or a set operation in the outer query is unsupported.

use std::collections::BTreeMap;

use sqlparser::ast::{BinaryOperator, Expr, JoinConstraint, Query, Select, SetExpr, TableFactor};

use super::graph::{ColRef, JoinLabel, SchemaGraph};
use crate::mutate::conjuncts;
use crate::mutate::sites::constraint;

/// One table reference of the FROM clause: the schema table index and the name it is
/// referenced by in the query (its alias, or its name as written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The schema table index.
    pub table: usize,
    /// The name the query refers to it by.
    pub reference: String,
    /// Whether `reference` is an alias.
    pub aliased: bool,
}

/// G_Q: `nodes` are schema table indices in order of first appearance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jqg {
    /// Schema table indices, in order of first appearance.
    pub nodes: Vec<usize>,
    /// The FROM clause's table references.
    pub bindings: Vec<Binding>,
    /// The joins the query makes, keyed like [`SchemaGraph::edges`].
    pub edges: BTreeMap<(usize, usize), Vec<JoinLabel>>,
}

/// Why a query has no join graph.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JqgError {
    /// A set operation or a query without a SELECT body.
    #[error("the query is a set operation or has no SELECT body")]
    NotASelect,
    /// A derived table or table function in FROM.
    #[error("the FROM clause has a derived table or table function")]
    UnsupportedFrom,
    /// A table the database does not have.
    #[error("table `{0}` is not in the database")]
    UnknownTable(String),
    /// No FROM clause.
    #[error("the query has no FROM clause")]
    NoTables,
}

impl Jqg {
    /// The outer SELECT of `query`, or an error when the body is not a plain SELECT.
    pub fn select(query: &Query) -> Result<&Select, JqgError> {
        match query.body.as_ref() {
            SetExpr::Select(select) => Ok(select),
            _ => Err(JqgError::NotASelect),
        }
    }

    /// The join graph of `query` over `schema`.
    pub fn of(query: &Query, schema: &SchemaGraph) -> Result<Jqg, JqgError> {
        let select = Jqg::select(query)?;
        let mut graph = Jqg {
            nodes: Vec::new(),
            bindings: Vec::new(),
            edges: BTreeMap::new(),
        };
        let mut conditions = Vec::new();
        for from in &select.from {
            graph.bind(&from.relation, schema)?;
            for join in &from.joins {
                graph.bind(&join.relation, schema)?;
                if let Some(JoinConstraint::On(on)) = constraint(&join.join_operator) {
                    conditions.push(on);
                }
            }
        }
        if graph.nodes.is_empty() {
            return Err(JqgError::NoTables);
        }
        conditions.extend(select.selection.as_ref());
        for condition in conditions {
            for (left, right) in equalities(condition) {
                graph.add_condition(left, right, schema);
            }
        }
        Ok(graph)
    }

    fn bind(&mut self, factor: &TableFactor, schema: &SchemaGraph) -> Result<(), JqgError> {
        let TableFactor::Table {
            name, alias, args, ..
        } = factor
        else {
            return Err(JqgError::UnsupportedFrom);
        };
        if args.is_some() {
            return Err(JqgError::UnsupportedFrom);
        }
        let written = name.to_string();
        let bare = name
            .0
            .last()
            .and_then(|part| part.as_ident())
            .map_or(written.clone(), |ident| ident.value.clone());
        let table = schema
            .index(&bare)
            .ok_or_else(|| JqgError::UnknownTable(written.clone()))?;
        if !self.nodes.contains(&table) {
            self.nodes.push(table);
        }
        self.bindings.push(Binding {
            table,
            reference: alias.as_ref().map_or(bare, |a| a.name.value.clone()),
            aliased: alias.is_some(),
        });
        Ok(())
    }

    /// The schema table a column reference belongs to: by qualifier, or, unqualified, the one
    /// query table that has the column.
    fn resolve(&self, parts: &[String], schema: &SchemaGraph) -> Option<ColRef> {
        let (table, column) = match parts {
            [qualifier, column] => {
                let binding = self
                    .bindings
                    .iter()
                    .find(|b| b.reference.eq_ignore_ascii_case(qualifier))?;
                (binding.table, column)
            }
            [column] => {
                let mut owners = self.nodes.iter().filter(|&&t| schema.has_column(t, column));
                match (owners.next(), owners.next()) {
                    (Some(&t), None) => (t, column),
                    _ => return None,
                }
            }
            _ => return None,
        };
        schema
            .has_column(table, column)
            .then(|| ColRef::new(&schema.tables[table], column))
    }

    fn add_condition(&mut self, left: Vec<String>, right: Vec<String>, schema: &SchemaGraph) {
        let (Some(left), Some(right)) = (self.resolve(&left, schema), self.resolve(&right, schema))
        else {
            return;
        };
        let (Some(a), Some(b)) = (schema.index(&left.table), schema.index(&right.table)) else {
            return;
        };
        if a == b || schema.labels(a, b).is_empty() {
            return;
        }
        let label = JoinLabel {
            left,
            right,
            inferred: false,
        };
        let labels = self.edges.entry((a.min(b), a.max(b))).or_default();
        if !labels.contains(&label) {
            labels.push(label);
        }
    }

    /// All column equalities of the query's join edges (C_Q of spec §2.3).
    pub fn conditions(&self) -> impl Iterator<Item = &JoinLabel> {
        self.edges.values().flatten()
    }

    /// The first name the query references table `t` by.
    pub fn reference(&self, t: usize) -> Option<&Binding> {
        self.bindings.iter().find(|b| b.table == t)
    }
}

/// Column = column equalities among the top-level AND conjuncts of `expr`.
fn equalities(expr: &Expr) -> Vec<(Vec<String>, Vec<String>)> {
    conjuncts(expr)
        .into_iter()
        .filter_map(|conjunct| match conjunct {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } => Some((column_parts(left)?, column_parts(right)?)),
            _ => None,
        })
        .collect()
}

fn column_parts(expr: &Expr) -> Option<Vec<String>> {
    match expr {
        Expr::Identifier(ident) => Some(vec![ident.value.clone()]),
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            Some(parts.iter().map(|p| p.value.clone()).collect())
        }
        _ => None,
    }
}
