//! Stage V, mode A "extended SQL" (spec §2.6): the seed's tree with `INNER JOIN <table> [AS
//! <alias>] ON <new.col = anchor.col> AND …` appended after its last join. Unqualified columns
//! of the outer query are qualified first and a bare `*` becomes `t.*` per original table, so
//! the added table neither creates ambiguity nor changes the output columns.

use std::ops::ControlFlow;

use regex::Regex;
use sqlparser::ast::{
    BinaryOperator, Expr, Ident, Join, JoinConstraint, JoinOperator, ObjectName, Query, SelectItem,
    SetExpr, TableAlias, TableFactor, VisitMut, VisitorMut,
};
use sqlparser::keywords::ALL_KEYWORDS;

use super::expand::Jcc;
use super::graph::SchemaGraph;
use super::query::Jqg;

/// The expanded query tree, and the name the added table is referenced by.
pub fn synthesize(
    query: &Query,
    jqg: &Jqg,
    schema: &SchemaGraph,
    jcc: &Jcc,
) -> Option<(Query, String)> {
    let mut expanded = query.clone();
    qualify_columns(&mut expanded, jqg, schema);
    let SetExpr::Select(select) = expanded.body.as_mut() else {
        return None;
    };
    expand_wildcard(&mut select.projection, jqg);
    let table = &schema.tables[jcc.candidate];
    let alias = new_alias(jqg, table);
    let reference = alias.clone().unwrap_or_else(|| table.clone());
    let mut on: Option<Expr> = None;
    for (anchor, label) in &jcc.labels {
        let anchor_ref = &jqg.reference(*anchor)?.reference;
        let equality = Expr::BinaryOp {
            left: Box::new(column(&reference, &label.left.column)),
            op: BinaryOperator::Eq,
            right: Box::new(column(anchor_ref, &label.right.column)),
        };
        on = Some(match on {
            None => equality,
            Some(before) => Expr::BinaryOp {
                left: Box::new(before),
                op: BinaryOperator::And,
                right: Box::new(equality),
            },
        });
    }
    let join = Join {
        relation: TableFactor::Table {
            name: ObjectName::from(vec![ident(table)]),
            alias: alias.map(|a| TableAlias {
                explicit: true,
                at: None,
                name: ident(&a),
                columns: Vec::new(),
            }),
            args: None,
            with_hints: Vec::new(),
            version: None,
            with_ordinality: false,
            partitions: Vec::new(),
            json_path: None,
            sample: None,
            index_hints: Vec::new(),
        },
        global: false,
        join_operator: JoinOperator::Inner(JoinConstraint::On(on?)),
    };
    select.from.last_mut()?.joins.push(join);
    Some((expanded, reference))
}

/// An identifier, quoted when it is not a plain word or is a keyword (`order`).
fn ident(name: &str) -> Ident {
    let plain = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && !ALL_KEYWORDS.contains(&name.to_uppercase().as_str());
    if plain {
        Ident::new(name)
    } else {
        Ident::with_quote('"', name)
    }
}

fn column(qualifier: &str, name: &str) -> Expr {
    Expr::CompoundIdentifier(vec![ident(qualifier), ident(name)])
}

/// No alias when the query uses none (the bare name, as in the thesis examples) unless the name
/// is taken; otherwise the original's `<prefix><n>` style continued, or `t<n>`, made unique.
fn new_alias(jqg: &Jqg, table: &str) -> Option<String> {
    let taken = |name: &str| {
        jqg.bindings
            .iter()
            .any(|b| b.reference.eq_ignore_ascii_case(name))
    };
    if !jqg.bindings.iter().any(|b| b.aliased) && !taken(table) {
        return None;
    }
    let numbered = Regex::new(r"^([A-Za-z_]+?)(\d+)$").ok()?;
    let prefix = jqg
        .bindings
        .iter()
        .find_map(|b| numbered.captures(&b.reference).map(|c| c[1].to_string()))
        .unwrap_or_else(|| "t".to_string());
    (jqg.bindings.len() + 1..)
        .map(|n| format!("{prefix}{n}"))
        .find(|name| !taken(name))
}

/// `*` → `t.*` for every table reference of the original FROM.
fn expand_wildcard(projection: &mut Vec<SelectItem>, jqg: &Jqg) {
    let mut expanded = Vec::new();
    for item in projection.drain(..) {
        if let SelectItem::Wildcard(_) = item {
            for binding in &jqg.bindings {
                expanded.push(SelectItem::QualifiedWildcard(
                    sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(ObjectName::from(
                        vec![ident(&binding.reference)],
                    )),
                    Default::default(),
                ));
            }
        } else {
            expanded.push(item);
        }
    }
    *projection = expanded;
}

/// Qualifies unqualified column names of the outer query (not of its subqueries) that belong to
/// exactly one of its tables.
fn qualify_columns(query: &mut Query, jqg: &Jqg, schema: &SchemaGraph) {
    // An output alias (`ORDER BY copies`) names no table column, even when a column shares it.
    let aliases = match query.body.as_ref() {
        SetExpr::Select(select) => select
            .projection
            .iter()
            .filter_map(|item| match item {
                SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.to_lowercase()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut visitor = Qualifier {
        jqg,
        schema,
        aliases,
        depth: 0,
    };
    let _ = query.visit(&mut visitor);
}

struct Qualifier<'a> {
    jqg: &'a Jqg,
    schema: &'a SchemaGraph,
    aliases: Vec<String>,
    depth: usize,
}

impl VisitorMut for Qualifier<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if self.depth != 1 {
            return ControlFlow::Continue(());
        }
        if let Expr::Identifier(name) = expr {
            if self.aliases.contains(&name.value.to_lowercase()) {
                return ControlFlow::Continue(());
            }
            let mut owners = self
                .jqg
                .bindings
                .iter()
                .filter(|b| self.schema.has_column(b.table, &name.value));
            if let (Some(owner), None) = (owners.next(), owners.next()) {
                *expr = Expr::CompoundIdentifier(vec![ident(&owner.reference), name.clone()]);
            }
        }
        ControlFlow::Continue(())
    }
}
