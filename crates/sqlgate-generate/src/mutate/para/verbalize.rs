//! The offline SQL2NL verbalizer: a gold query's sqlparser tree read back as an English question.
//!
//! Every clause has a few equivalent wordings (templates); a seeded RNG picks one per clause,
//! so different streams give different, equally faithful questions. Identifiers become words
//! (`order_items` → "order items"), joins are named by their tables, filters keep their values,
//! correlated subqueries read as "related" rows. A construct without a wording is reported as
//! [`Unsupported`] with its name, never guessed.

use rand::{Rng, RngExt};
use sqlparser::ast::{
    BinaryOperator, Distinct, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments,
    GroupByExpr, Ident, JoinConstraint, JoinOperator, LimitClause, ObjectName, OrderByKind,
    OrderBySort, Query, Select, SelectItem, SetExpr, SetOperator, TableFactor, UnaryOperator,
    Value,
};

use super::names::SchemaNames;
use super::words::{dictionary_words, plural, singular};
use crate::mutate::conjuncts;
use crate::mutate::tqa::wordnet::WordNet;

/// A construct the verbalizer has no wording for, by name ("CASE expression", "function substr").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

type Phrase = Result<String, Unsupported>;

fn unsupported<T>(construct: impl Into<String>) -> Result<T, Unsupported> {
    Err(Unsupported(construct.into()))
}

/// One question for `query`, its wording drawn with `rng`; with `wordnet`, identifiers that
/// run words together are split into them; `names` are the database's own names for its
/// tables and columns and its foreign keys (empty when the schema is unknown).
pub fn question(
    query: &Query,
    rng: &mut impl Rng,
    wordnet: Option<&WordNet>,
    names: &SchemaNames,
) -> Phrase {
    let mut speaker = Speaker {
        rng,
        wordnet,
        names,
        scopes: Vec::new(),
    };
    let text = speaker.question(query)?;
    Ok(tidy(&text))
}

/// Collapses doubled spaces and puts the first letter in upper case.
fn tidy(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = text
        .replace(" ,", ",")
        .replace(" ?", "?")
        .replace(" .", ".");
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => text,
    }
}

/// The tables of one SELECT: `(alias or name, table name)`, the projection's aliases, and the
/// table whose rows `COUNT(*)` counts.
struct Scope {
    tables: Vec<(String, String)>,
    /// The columns of derived tables in FROM, as the subquery says them: (alias, column,
    /// phrase), so `t.cnt` reads "number of writes".
    derived: Vec<(String, String, String)>,
    aliases: Vec<(String, Expr)>,
    projection: Vec<Expr>,
}

impl Scope {
    fn table_of(&self, qualifier: &str) -> Option<&str> {
        self.tables
            .iter()
            .find(|(alias, _)| alias.eq_ignore_ascii_case(qualifier))
            .map(|(_, table)| table.as_str())
    }
}

/// What kind of result a projection item is, for choosing a question form.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    Aggregate,
    /// `COUNT(*)` alone: "how many".
    CountRows,
}

struct Item {
    text: String,
    kind: Kind,
}

/// A SELECT read into phrases.
struct Frame {
    items: Vec<Item>,
    /// "books", "publishers and their books".
    subject: String,
    /// Relative clauses after the subject ("whose price is above 30").
    conditions: String,
    group: String,
    having: String,
    order: String,
    distinct: bool,
    /// Whether the subject names several tables.
    joined: bool,
}

struct Speaker<'r, 'w, R> {
    rng: &'r mut R,
    wordnet: Option<&'w WordNet>,
    names: &'w SchemaNames,
    scopes: Vec<Scope>,
}

impl<R: Rng> Speaker<'_, '_, R> {
    /// An identifier as words, split into dictionary words when WordNet is at hand.
    fn words(&self, identifier: &str) -> String {
        dictionary_words(identifier, self.wordnet)
    }

    /// A table as words, singular: its schema name when it has one ("country language").
    fn table_name(&self, table: &str) -> String {
        match self.names.table(table) {
            Some(name) => name.to_string(),
            None => self.words(table),
        }
    }

    /// A column of `table` as words: its schema name when it has one (`aid` → "author ID").
    fn column_name(&self, table: &str, column: &str) -> String {
        match self.names.column(table, column) {
            Some(name) => name.to_string(),
            None => self.words(column),
        }
    }

    fn pick<'t>(&mut self, options: &[&'t str]) -> &'t str {
        options[self.rng.random_range(0..options.len())]
    }

    // ---- whole questions ----

    fn question(&mut self, query: &Query) -> Phrase {
        if let SetExpr::SetOperation {
            left, op, right, ..
        } = query.body.as_ref()
        {
            let (left, right) = (self.set_side(left)?, self.set_side(right)?);
            let combined = self.combine(&left, *op, &right)?;
            let order = self.order_of_set(query)?;
            let form = self.pick(&["List {x}{o}.", "What are {x}{o}?", "Show {x}{o}."]);
            return Ok(form.replace("{x}", &combined).replace("{o}", &order));
        }
        let frame = self.frame(query)?;
        Ok(self.render_question(&frame))
    }

    fn render_question(&mut self, f: &Frame) -> String {
        let rest = format!("{}{}{}{}", f.conditions, f.group, f.having, f.order);
        let count_only = f.items.len() == 1 && f.items[0].kind == Kind::CountRows;
        let aggregates_only = f.items.iter().all(|i| i.kind != Kind::Plain);
        let plain_only = f.items.iter().all(|i| i.kind == Kind::Plain);
        let items = self.item_list(f);
        // "number of books" already names the rows of one table: "of books" would repeat them.
        let single_table = !f.joined;
        let counts_rows = f.items.iter().any(|i| i.kind == Kind::CountRows);
        let all_name_it = f.items.iter().all(|i| i.text.contains(&f.subject));
        let of_subject = if (counts_rows || all_name_it) && single_table {
            String::new()
        } else {
            let preposition = self.pick(&["of", "for", "of all"]);
            format!(" {preposition} {}", f.subject)
        };
        if count_only && f.group.is_empty() && !f.distinct {
            let form = self.pick(&[
                "How many {s} are there{r}?",
                "What is the number of {s}{r}?",
                "Count the {s}{r}.",
                "Can you tell me how many {s} there are{r}?",
                "How many {s} do we have{r}?",
                "What is the total count of {s}{r}?",
                "How many {s} exist{r}?",
            ]);
            return form.replace("{s}", &f.subject).replace("{r}", &rest);
        }
        if aggregates_only && f.group.is_empty() {
            let form = self.pick(&[
                "What is the {p}{o}{r}?",
                "Find the {p}{o}{r}.",
                "Calculate the {p}{o}{r}.",
                "Tell me the {p}{o}{r}.",
                "Could you compute the {p}{o}{r}?",
            ]);
            return form
                .replace("{p}", &items)
                .replace("{o}", &of_subject)
                .replace("{r}", &rest);
        }
        if !f.group.is_empty() {
            let form = self.pick(&[
                "List the {p}{o}{r}.",
                "What are the {p}{o}{r}?",
                "Show the {p}{o}{r}.",
                "Give me the {p}{o}{r}.",
                "I would like to see the {p}{o}{r}.",
            ]);
            return form
                .replace("{p}", &items)
                .replace("{o}", &of_subject)
                .replace("{r}", &rest);
        }
        let mut forms = vec![
            "List the {p}{o}{r}.",
            "What are the {p}{o}{r}?",
            "Show the {p}{o}{r}.",
            "Give me the {p}{o}{r}.",
            "Can you list the {p}{o}{r}?",
            "Find the {p}{o}{r}.",
        ];
        if plain_only && !f.distinct && f.order.is_empty() {
            forms.push("Consider the {s}{r}: what are their {p}?");
            forms.push("For the {s}{r}, what are their {p}?");
        }
        let form = self.pick(&forms);
        form.replace("{p}", &items)
            .replace("{o}", &of_subject)
            .replace("{s}", &f.subject)
            .replace("{r}", &rest)
    }

    /// "title, price and pages", with DISTINCT said in one of its ways.
    fn item_list(&mut self, f: &Frame) -> String {
        let list = join_and(f.items.iter().map(|i| i.text.clone()).collect());
        if !f.distinct {
            return list;
        }
        match self.pick(&["distinct", "different", "unique", "once"]) {
            "once" => format!("{list} (each listed once)"),
            word => format!("{word} {list}"),
        }
    }

    fn set_side(&mut self, side: &SetExpr) -> Phrase {
        match side {
            SetExpr::Select(_) | SetExpr::Query(_) => {
                let query = Query {
                    with: None,
                    body: Box::new(side.clone()),
                    order_by: None,
                    limit_clause: None,
                    fetch: None,
                    locks: Vec::new(),
                    for_clause: None,
                    settings: None,
                    format_clause: None,
                    pipe_operators: Vec::new(),
                };
                Ok(format!("the {}", self.query_np(&query)?))
            }
            SetExpr::SetOperation {
                left, op, right, ..
            } => {
                let (left, right) = (self.set_side(left)?, self.set_side(right)?);
                self.combine(&left, *op, &right)
            }
            _ => unsupported("set operation over VALUES"),
        }
    }

    fn combine(&mut self, left: &str, op: SetOperator, right: &str) -> Phrase {
        let form = match op {
            SetOperator::Union => self.pick(&[
                "{l}, together with {r}",
                "{l} as well as {r}",
                "both {l} and {r}",
            ]),
            SetOperator::Intersect => self.pick(&[
                "{l} that are also among {r}",
                "what {l} and {r} have in common",
            ]),
            SetOperator::Except | SetOperator::Minus => {
                self.pick(&["{l}, except {r}", "{l} that are not among {r}"])
            }
        };
        Ok(form.replace("{l}", left).replace("{r}", right))
    }

    /// ORDER BY and LIMIT of a set operation's result.
    fn order_of_set(&mut self, query: &Query) -> Phrase {
        self.scopes.push(Scope {
            tables: Vec::new(),
            derived: Vec::new(),
            aliases: Vec::new(),
            projection: Vec::new(),
        });
        let order = self.order(query);
        self.scopes.pop();
        order
    }

    // ---- a SELECT ----

    /// The SELECT of `query` (with the query's ORDER BY and LIMIT) in phrases.
    fn frame(&mut self, query: &Query) -> Result<Frame, Unsupported> {
        if query.with.is_some() {
            return unsupported("WITH clause");
        }
        let select = match query.body.as_ref() {
            SetExpr::Select(select) => select,
            SetExpr::Query(inner) if query.order_by.is_none() && query.limit_clause.is_none() => {
                return self.frame(inner)
            }
            SetExpr::SetOperation { .. } => return unsupported("set operation in a subquery"),
            _ => return unsupported("query body other than SELECT"),
        };
        let (scope, joined) = self.scope_of(select)?;
        self.scopes.push(scope);
        let frame = self.select_frame(select, query, &joined);
        self.scopes.pop();
        frame
    }

    fn select_frame(
        &mut self,
        select: &Select,
        query: &Query,
        joined: &[Joined],
    ) -> Result<Frame, Unsupported> {
        let mut items = Vec::new();
        for item in &select.projection {
            items.push(self.item(item)?);
        }
        let subject = self.subject(joined)?;
        let conditions = match &select.selection {
            Some(condition) => {
                let phrase = self.condition(condition)?;
                if phrase.is_empty() {
                    phrase
                } else {
                    format!(" {phrase}")
                }
            }
            None => String::new(),
        };
        let group = self.group(select)?;
        let having = match &select.having {
            Some(condition) => {
                let phrase = self.condition(condition)?;
                let lead = self.pick(&[
                    ", keeping only those",
                    ", only for groups",
                    ", limited to the ones",
                ]);
                format!("{lead} {phrase}")
            }
            None => String::new(),
        };
        let order = self.order(query)?;
        Ok(Frame {
            items,
            subject,
            conditions,
            group,
            having,
            order,
            distinct: matches!(select.distinct, Some(Distinct::Distinct)),
            joined: joined.len() > 1,
        })
    }

    /// The scope of a SELECT's FROM, and its tables in order as (words, left-joined, the join
    /// condition's restrictions beyond matching keys).
    fn scope_of(&mut self, select: &Select) -> Result<(Scope, Vec<Joined>), Unsupported> {
        let mut tables = Vec::new();
        let mut derived = Vec::new();
        let mut joined = Vec::new();
        for from in &select.from {
            let mut relations = vec![(&from.relation, false, Vec::new())];
            for join in &from.joins {
                let (left, constraint) = match &join.join_operator {
                    JoinOperator::Join(c) | JoinOperator::Inner(c) => (false, Some(c)),
                    JoinOperator::CrossJoin(_) => (false, None),
                    JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (true, Some(c)),
                    _ => return unsupported("RIGHT, FULL or other outer join"),
                };
                let restrictions = match constraint {
                    Some(JoinConstraint::On(on)) => restrictions(on),
                    _ => Vec::new(),
                };
                relations.push((&join.relation, left, restrictions));
            }
            for (relation, left, restrictions) in relations {
                let (name, alias) = match relation {
                    TableFactor::Table { name, alias, .. } => (name, alias),
                    TableFactor::Derived {
                        subquery, alias, ..
                    } => {
                        let key = alias.as_ref().map_or("", |a| a.name.value.as_str());
                        for (column, phrase) in self.derived_columns(subquery)? {
                            derived.push((key.to_string(), column, phrase));
                        }
                        // No table name: `COUNT(*)` over it counts "rows".
                        tables.push((key.to_string(), String::new()));
                        let rows = self.query_np(subquery)?;
                        joined.push(Joined {
                            words: format!("rows of ({rows})"),
                            table: None,
                            left,
                            restrictions,
                        });
                        continue;
                    }
                    _ => return unsupported("table function or other FROM item"),
                };
                let table = last_ident(name).ok_or_else(|| Unsupported("table name".into()))?;
                let key = alias
                    .as_ref()
                    .map_or(table.clone(), |a| a.name.value.clone());
                tables.push((key, table.clone()));
                joined.push(Joined {
                    words: plural(&self.table_name(&table)),
                    table: Some(table.clone()),
                    left,
                    restrictions,
                });
            }
        }
        let aliases = select
            .projection
            .iter()
            .filter_map(|item| match item {
                SelectItem::ExprWithAlias { expr, alias } => {
                    Some((alias.value.clone(), expr.clone()))
                }
                _ => None,
            })
            .collect();
        let projection = select
            .projection
            .iter()
            .filter_map(|item| match item {
                SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => {
                    Some(expr.clone())
                }
                _ => None,
            })
            .collect();
        Ok((
            Scope {
                tables,
                derived,
                aliases,
                projection,
            },
            joined,
        ))
    }

    /// The output columns of a derived table's SELECT by name, each as its subquery says it.
    fn derived_columns(&mut self, subquery: &Query) -> Result<Vec<(String, String)>, Unsupported> {
        let SetExpr::Select(select) = subquery.body.as_ref() else {
            return unsupported("derived table over a set operation");
        };
        let (scope, _) = self.scope_of(select)?;
        self.scopes.push(scope);
        let mut columns = Vec::new();
        for item in &select.projection {
            let named = match item {
                SelectItem::ExprWithAlias { expr, alias } => Some((alias.value.clone(), expr)),
                SelectItem::UnnamedExpr(expr) => match expr {
                    Expr::Identifier(ident) => Some((ident.value.clone(), expr)),
                    Expr::CompoundIdentifier(parts) => {
                        parts.last().map(|ident| (ident.value.clone(), expr))
                    }
                    _ => None,
                },
                _ => None,
            };
            if let Some((name, expr)) = named {
                match self.np(expr) {
                    Ok(phrase) => columns.push((name, phrase)),
                    Err(error) => {
                        self.scopes.pop();
                        return Err(error);
                    }
                }
            }
        }
        self.scopes.pop();
        Ok(columns)
    }

    /// "books", "publishers and their books", "order items joined with orders and books".
    /// A join's restrictions follow its table: "any matching flights whose connections is 0".
    /// Tables a foreign key links read as a relationship ("publications and their
    /// conferences"), and a bridge table as the link it is: `paper JOIN writes JOIN author` is
    /// "papers and their authors", `paper JOIN writes` too.
    fn subject(&mut self, joined: &[Joined]) -> Phrase {
        let entries = self.in_speaking_order(joined);
        let Some((first, rest)) = entries.split_first() else {
            return Ok("rows".to_string());
        };
        if rest.is_empty() {
            return Ok(first.words.clone());
        }
        let tables: Vec<&str> = joined.iter().filter_map(|j| j.table.as_deref()).collect();
        let mut others = Vec::new();
        let mut named = vec![first.words.clone()];
        for join in rest {
            let table = match self.through_bridge(join, &tables) {
                Through::Said => continue,
                // Two bridges may lead to the same table: it is said once.
                Through::As(other) if named.contains(&other) => continue,
                Through::As(other) => other,
                Through::Itself => join.words.clone(),
            };
            named.push(table.clone());
            let mut said = Vec::new();
            for restriction in &join.restrictions {
                said.push(self.condition(restriction)?);
            }
            let table = if join.left {
                format!("any matching {table}")
            } else {
                table
            };
            others.push(match said.is_empty() {
                true => table,
                false => format!("{table} {}", join_and(said)),
            });
        }
        if others.is_empty() {
            return Ok(first.words.clone());
        }
        let others = join_and(others);
        let related = rest.iter().enumerate().all(|(i, join)| {
            join.table.as_deref().is_some_and(|table| {
                entries[..=i]
                    .iter()
                    .filter_map(|earlier| earlier.table.as_deref())
                    .any(|earlier| self.names.linked(earlier, table))
            })
        });
        let form = if related {
            self.pick(&[
                "{a} and their {b}",
                "{a} with their {b}",
                "{a} together with their {b}",
                "{a} matched to their {b}",
            ])
        } else {
            self.pick(&[
                "{a} and their {b}",
                "{a} joined with {b}",
                "{a} together with their {b}",
                "{a} matched to their {b}",
            ])
        };
        Ok(form.replace("{a}", &first.words).replace("{b}", &others))
    }

    /// The joined tables in the order they are said: a bridge table in first place gives its
    /// place to the first of its two tables that is joined (`writes JOIN author JOIN
    /// publication` → "authors and their publications", `singer_in_concert JOIN concert` →
    /// "concerts and their singers").
    fn in_speaking_order<'j>(&self, joined: &'j [Joined]) -> Vec<&'j Joined> {
        let mut entries: Vec<&Joined> = joined.iter().collect();
        let Some(first) = joined.first() else {
            return entries;
        };
        let Some((a, b)) = first.table.as_deref().and_then(|t| self.names.bridge(t)) else {
            return entries;
        };
        let plain = |t: &str| {
            joined[1..].iter().position(|j| {
                !j.left
                    && j.restrictions.is_empty()
                    && j.table
                        .as_deref()
                        .is_some_and(|x| x.eq_ignore_ascii_case(t))
            })
        };
        let lead = match (plain(a), plain(b)) {
            (Some(a), Some(b)) => a.min(b),
            (Some(one), None) | (None, Some(one)) => one,
            (None, None) => return entries,
        };
        // The bridge now follows its lead, read as the table it leads to.
        let lead = entries.remove(lead + 1);
        entries.insert(0, lead);
        entries
    }

    /// How a joined bridge table reads: said by the two tables it links when both are joined,
    /// as the table it leads to when only one is; anything else reads as itself (a LEFT join
    /// or a restriction keeps the table named).
    fn through_bridge(&self, join: &Joined, tables: &[&str]) -> Through {
        let Some((a, b)) = join.table.as_deref().and_then(|t| self.names.bridge(t)) else {
            return Through::Itself;
        };
        if join.left || !join.restrictions.is_empty() {
            return Through::Itself;
        }
        let present = |t: &str| tables.iter().any(|x| x.eq_ignore_ascii_case(t));
        match (present(a), present(b)) {
            (true, true) => Through::Said,
            (true, false) => Through::As(plural(&self.table_name(b))),
            (false, true) => Through::As(plural(&self.table_name(a))),
            (false, false) => Through::Itself,
        }
    }

    fn item(&mut self, item: &SelectItem) -> Result<Item, Unsupported> {
        let text_kind = |speaker: &mut Self, expr: &Expr| -> Result<Item, Unsupported> {
            Ok(Item {
                text: speaker.np(expr)?,
                kind: kind_of(expr),
            })
        };
        match item {
            SelectItem::UnnamedExpr(expr) => text_kind(self, expr),
            SelectItem::ExprWithAlias { expr, alias }
                if matches!(strip(expr), Expr::Case { .. }) && count_condition(expr).is_none() =>
            {
                Ok(Item {
                    text: self.case(strip(expr), &self.words(&alias.value))?,
                    kind: kind_of(expr),
                })
            }
            SelectItem::ExprWithAlias { expr, .. } => text_kind(self, expr),
            SelectItem::Wildcard(_) => Ok(Item {
                text: self
                    .pick(&["details", "information", "columns"])
                    .to_string(),
                kind: Kind::Plain,
            }),
            SelectItem::QualifiedWildcard(kind, _) => {
                let table = match kind {
                    sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(name) => {
                        last_ident(name).unwrap_or_default()
                    }
                    _ => return unsupported("wildcard of an expression"),
                };
                let table = self
                    .table_words(&table)
                    .unwrap_or_else(|| self.table_name(&table));
                Ok(Item {
                    text: format!("{} details", singular(&table)),
                    kind: Kind::Plain,
                })
            }
            _ => unsupported("SELECT item with several aliases"),
        }
    }

    fn group(&mut self, select: &Select) -> Phrase {
        let exprs = match &select.group_by {
            GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => exprs,
            GroupByExpr::Expressions(..) => return unsupported("GROUP BY modifiers"),
            GroupByExpr::All(_) => return unsupported("GROUP BY ALL"),
        };
        if exprs.is_empty() {
            return Ok(String::new());
        }
        let mut keys = Vec::new();
        for expr in exprs {
            let expr = self.resolve(expr);
            let key = match self.row_entity(&expr) {
                Some(entity) => entity,
                None => self.np(&expr)?,
            };
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let form = self.pick(&[
            ", for each {g}",
            ", per {g}",
            ", grouped by {g}",
            ", broken down by {g}",
        ]);
        Ok(form.replace("{g}", &join_and(keys)))
    }

    /// A positional reference (`GROUP BY 1`) or a SELECT alias as the expression it names.
    fn resolve(&self, expr: &Expr) -> Expr {
        let Some(scope) = self.scopes.last() else {
            return expr.clone();
        };
        match expr {
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) => n
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| scope.projection.get(i.checked_sub(1)?))
                    .cloned()
                    .unwrap_or_else(|| expr.clone()),
                _ => expr.clone(),
            },
            Expr::Identifier(ident) => scope
                .aliases
                .iter()
                .find(|(alias, _)| alias.eq_ignore_ascii_case(&ident.value))
                .filter(|_| scope.tables.len() != 1 || !self.is_column_name(&ident.value))
                .map_or_else(|| expr.clone(), |(_, e)| e.clone()),
            _ => expr.clone(),
        }
    }

    /// Whether a bare name could be a column rather than an alias (the alias of an expression
    /// over that very column, `SELECT x AS x`, reads the same either way).
    fn is_column_name(&self, name: &str) -> bool {
        self.scopes.last().is_some_and(|scope| {
            scope.projection.iter().any(|expr| match expr {
                Expr::Identifier(i) => i.value.eq_ignore_ascii_case(name),
                Expr::CompoundIdentifier(parts) => parts
                    .last()
                    .is_some_and(|i| i.value.eq_ignore_ascii_case(name)),
                _ => false,
            })
        })
    }

    /// ORDER BY and LIMIT/OFFSET as a trailing clause.
    fn order(&mut self, query: &Query) -> Phrase {
        let mut keys = Vec::new();
        if let Some(order_by) = &query.order_by {
            let OrderByKind::Expressions(exprs) = &order_by.kind else {
                return unsupported("ORDER BY ALL");
            };
            for key in exprs {
                let expr = self.resolve(&key.expr);
                let desc = matches!(key.options.sort, Some(OrderBySort::Desc));
                keys.push((self.np(&expr)?, desc));
            }
        }
        let (limit, offset) = match &query.limit_clause {
            None => (None, None),
            Some(LimitClause::LimitOffset { limit, offset, .. }) => (
                limit.as_ref().map(|e| self.number(e)).transpose()?,
                offset.as_ref().map(|o| self.number(&o.value)).transpose()?,
            ),
            Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
                (Some(self.number(limit)?), Some(self.number(offset)?))
            }
        };
        if keys.is_empty() {
            return Ok(match (limit, offset.clone()) {
                (Some(n), _) => {
                    let form = self.pick(&[
                        ", showing only {n} results",
                        ", limited to {n} rows",
                        ", just {n} of them",
                    ]);
                    let skip =
                        offset.map_or(String::new(), |m| format!(" after skipping the first {m}"));
                    format!("{}{skip}", form.replace("{n}", &n))
                }
                (None, Some(m)) => format!(", skipping the first {m}"),
                (None, None) => String::new(),
            });
        }
        let (first, first_desc) = keys[0].clone();
        let mut ties = Vec::new();
        for (key, desc) in &keys[1..] {
            let direction = self.direction(*desc);
            ties.push(format!("the {key} {direction}"));
        }
        let Some(n) = limit else {
            let direction = self.direction(first_desc);
            let lead = self.pick(&[
                ", sorted by",
                ", ordered by",
                ", with the results ordered by",
            ]);
            let then = if ties.is_empty() {
                String::new()
            } else {
                format!(", then by {}", join_and(ties))
            };
            let skip = offset.map_or(String::new(), |m| format!(", skipping the first {m}"));
            return Ok(format!("{lead} the {first} {direction}{then}{skip}"));
        };
        let ties = if ties.is_empty() {
            String::new()
        } else {
            format!(" (ties broken by {})", join_and(ties))
        };
        let superlative = if first_desc {
            self.pick(&["highest", "largest", "greatest"])
        } else {
            self.pick(&["lowest", "smallest"])
        };
        let (rank, skip) = match offset.as_deref() {
            None | Some("0") => (superlative.to_string(), String::new()),
            Some(m) => match m.parse::<u64>().ok().and_then(|m| ordinal(m + 1)) {
                Some(ordinal) if n == "1" => (format!("{ordinal}-{superlative}"), String::new()),
                _ => (
                    superlative.to_string(),
                    format!(", after skipping the first {m}"),
                ),
            },
        };
        let direction = self.direction(first_desc);
        let form = if n == "1" && skip.is_empty() {
            self.pick(&[
                ", only the one with the {rank} {key}",
                ", just the single result with the {rank} {key}",
                ", keeping only the first one when sorted by the {key} {dir}",
            ])
        } else {
            self.pick(&[
                ", only the {n} with the {rank} {key}",
                ", the top {n} when sorted by the {key} {dir}",
                ", limited to the {n} with the {rank} {key}",
            ])
        };
        let form = if rank.contains('-') {
            ", only the one with the {rank} {key}"
        } else {
            form
        };
        Ok(format!(
            "{}{ties}{skip}",
            form.replace("{n}", &n)
                .replace("{rank}", &rank)
                .replace("{key}", &first)
                .replace("{dir}", direction)
        ))
    }

    fn direction(&mut self, desc: bool) -> &'static str {
        if desc {
            self.pick(&[
                "in descending order",
                "from highest to lowest",
                "highest first",
            ])
        } else {
            self.pick(&[
                "in ascending order",
                "from lowest to highest",
                "lowest first",
            ])
        }
    }

    /// A LIMIT/OFFSET count, which must be a literal number.
    fn number(&self, expr: &Expr) -> Phrase {
        match expr {
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) => Ok(n.clone()),
                _ => unsupported("LIMIT that is not a number"),
            },
            _ => unsupported("computed LIMIT or OFFSET"),
        }
    }

    // ---- noun phrases ----

    /// A subquery as a noun phrase: "average price of books", "author IDs of authors whose ...".
    fn query_np(&mut self, query: &Query) -> Phrase {
        if let SetExpr::SetOperation {
            left, op, right, ..
        } = query.body.as_ref()
        {
            let (left, right) = (self.set_side(left)?, self.set_side(right)?);
            return self.combine(&left, *op, &right);
        }
        let mut f = self.frame(query)?;
        // A subquery's column is a list of values: "the book IDs of order items".
        for item in f.items.iter_mut().filter(|i| i.kind == Kind::Plain) {
            item.text = plural(&item.text);
        }
        let items = self.item_list(&f);
        let of = if f.items.iter().all(|i| i.kind == Kind::CountRows) {
            String::new()
        } else {
            format!(" of {}", f.subject)
        };
        Ok(format!(
            "{items}{of}{}{}{}{}",
            f.conditions, f.group, f.having, f.order
        ))
    }

    /// An expression as a noun phrase without article: "price", "average price", "2023".
    fn np(&mut self, expr: &Expr) -> Phrase {
        match expr {
            Expr::Identifier(ident) => {
                let resolved = self.resolve(expr);
                if &resolved != expr {
                    return self.np(&resolved);
                }
                Ok(self.column(None, ident))
            }
            Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [qualifier, column] => Ok(self.column(Some(qualifier), column)),
                [.., column] => Ok(self.column(None, column)),
                [] => unsupported("empty identifier"),
            },
            Expr::Value(value) => Ok(literal(&value.value)),
            Expr::Nested(inner) => self.np(inner),
            Expr::Cast { expr, .. } => self.np(expr),
            Expr::Function(function) => self.function(function),
            Expr::BinaryOp { left, op, right } => self.arithmetic(left, op, right),
            Expr::UnaryOp {
                op: UnaryOperator::Minus,
                expr,
            } => Ok(format!("negative {}", self.np(expr)?)),
            Expr::Subquery(query) => self.query_np(query),
            Expr::Case { .. } => match count_condition(expr) {
                Some(condition) => self.rows_where(condition),
                None => self.case(expr, "value"),
            },
            other => unsupported(expr_kind(other)),
        }
    }

    /// `CASE [x] WHEN c THEN r ... [ELSE e] END` named by `head`: "category ("high" for those
    /// whose price is above 30, "low" otherwise)".
    fn case(&mut self, expr: &Expr, head: &str) -> Phrase {
        let Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } = expr
        else {
            return unsupported(expr_kind(expr));
        };
        let mut branches = Vec::new();
        for when in conditions {
            let condition = match operand {
                Some(x) => self.comparison(x, &BinaryOperator::Eq, &when.condition)?,
                None => self.condition(&when.condition)?,
            };
            let result = self.operand(&when.result)?;
            branches.push(format!("{result} for those {condition}"));
        }
        let otherwise = match else_result {
            Some(e) => self.operand(e)?,
            None => "nothing".to_string(),
        };
        let lead = self.pick(&["otherwise", "for all others", "for the rest"]);
        branches.push(format!("{otherwise} {lead}"));
        Ok(format!("{head} ({})", branches.join("; ")))
    }

    /// An operand of a comparison: a value as it is, anything else with "the".
    fn operand(&mut self, expr: &Expr) -> Phrase {
        match strip(expr) {
            Expr::Value(value) => Ok(literal(&value.value)),
            Expr::UnaryOp {
                op: UnaryOperator::Minus,
                expr: inner,
            } if matches!(strip(inner), Expr::Value(_)) => Ok(format!("-{}", self.np(inner)?)),
            Expr::Function(f) if function_name(f) == "date" && is_now(f) => self.np(expr),
            Expr::Identifier(name) if self.is_quoted_string(name) => self.np(expr),
            other => Ok(format!("the {}", self.np(other)?)),
        }
    }

    /// A column as words, with its table's name when the SELECT has several tables or the
    /// column belongs to an outer query ("store name", "order status").
    fn column(&mut self, qualifier: Option<&Ident>, column: &Ident) -> String {
        if let Some(phrase) = self.derived_column(qualifier, column) {
            return phrase;
        }
        let innermost = self.scopes.len().saturating_sub(1);
        let Some(qualifier) = qualifier else {
            if self.is_quoted_string(column) {
                return format!("\"{}\"", column.value);
            }
            // Unqualified: the innermost table that has the column names it, without its table.
            return match self.unqualified_owner(&column.value) {
                Some(table) => self.column_name(&table, &column.value),
                None => self.words(&column.value),
            };
        };
        let found = self
            .scopes
            .iter()
            .enumerate()
            .rev()
            .find_map(|(depth, scope)| {
                Some((depth, scope.table_of(&qualifier.value)?.to_string()))
            });
        let Some((depth, table)) = found else {
            return self.words(&column.value);
        };
        let name = self.column_name(&table, &column.value);
        let several = self
            .scopes
            .get(depth)
            .is_some_and(|scope| scope.tables.len() > 1);
        // A bridge's key already says the table it leads to ("author ID" of writes); another
        // table's keeps its owner, so "store city ID" and "customer city ID" stay apart.
        let bridge_key =
            self.names.bridge(&table).is_some() && self.names.is_foreign_key(&table, &column.value);
        if (depth == innermost && !several) || bridge_key {
            return name;
        }
        let owner = singular(&self.table_name(&table));
        let first_word = owner.split(' ').next().unwrap_or_default();
        if name.starts_with(first_word) || name.starts_with(&owner) {
            name
        } else {
            format!("{owner} {name}")
        }
    }

    /// The table of an unqualified column in the innermost SELECT: its only table, or the first
    /// whose schema has the column.
    /// SQLite reads a double-quoted name that is no column as a string (Spider writes
    /// `WHERE dest_airport = "ATO"`): so does the verbalizer, when it knows every joined
    /// table's columns and none has this one.
    fn is_quoted_string(&self, name: &Ident) -> bool {
        if name.quote_style != Some('"') {
            return false;
        }
        let aliased = self.scopes.iter().any(|scope| {
            scope
                .aliases
                .iter()
                .any(|(alias, _)| alias.eq_ignore_ascii_case(&name.value))
        });
        let mut tables = self.scopes.iter().flat_map(|scope| &scope.tables);
        !aliased
            && tables.all(|(_, table)| self.names.has_column(table, &name.value) == Some(false))
    }

    fn unqualified_owner(&self, column: &str) -> Option<String> {
        let scope = self.scopes.last()?;
        if let [(_, table)] = scope.tables.as_slice() {
            return Some(table.clone());
        }
        let tables: Vec<&str> = scope.tables.iter().map(|(_, t)| t.as_str()).collect();
        self.names.owner(&tables, column).map(str::to_string)
    }

    /// A derived table's column as its subquery says it: qualified by the derived table's
    /// alias, or unqualified in the innermost scope.
    fn derived_column(&self, qualifier: Option<&Ident>, column: &Ident) -> Option<String> {
        let scopes: Vec<&Scope> = match qualifier {
            Some(_) => self.scopes.iter().rev().collect(),
            None => self.scopes.last().into_iter().collect(),
        };
        scopes.into_iter().find_map(|scope| {
            scope
                .derived
                .iter()
                .find(|(alias, name, _)| {
                    name.eq_ignore_ascii_case(&column.value)
                        && qualifier.is_none_or(|q| alias.eq_ignore_ascii_case(&q.value))
                })
                .map(|(_, _, phrase)| phrase.clone())
        })
    }

    /// The words of a table named by alias or name in the current scopes.
    fn table_words(&self, qualifier: &str) -> Option<String> {
        self.scopes
            .iter()
            .rev()
            .find_map(|scope| scope.table_of(qualifier))
            .map(|t| plural(&self.table_name(t)))
    }

    /// A table's key column stands for its rows: `GROUP BY p.publisher_id` → "publisher",
    /// `COUNT(publication.pid)` → "publication".
    fn row_entity(&self, expr: &Expr) -> Option<String> {
        let (table, column) = match strip(expr) {
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => (
                self.scopes.last()?.table_of(&parts[0].value)?.to_string(),
                parts[1].value.clone(),
            ),
            Expr::Identifier(ident) => {
                let scope = self.scopes.last()?;
                match scope.tables.as_slice() {
                    [(_, table)] => (table.clone(), ident.value.clone()),
                    _ => return None,
                }
            }
            _ => return None,
        };
        let owner = singular(&self.table_name(&table));
        let column_words = self.column_name(&table, &column);
        let key = column_words == "ID"
            || column_words == format!("{owner} ID")
            || (column_words.len() <= 4
                && column.to_lowercase().ends_with("id")
                && !column_words.contains(' ')
                && owner.starts_with(&column.to_lowercase()[..1]));
        key.then_some(owner)
    }

    fn function(&mut self, function: &Function) -> Phrase {
        if function.over.is_some() {
            return unsupported("window function");
        }
        if let Some(filter) = &function.filter {
            let unfiltered = Function {
                filter: None,
                ..function.clone()
            };
            let value = self.function(&unfiltered)?;
            let rows = self.counted_rows();
            let condition = self.condition(filter)?;
            return Ok(format!("{value} over {rows} {condition}"));
        }
        let name = function_name(function);
        let (args, star, distinct) = arguments(function)?;
        let arg = |i: usize| args.get(i).copied();
        match (name.as_str(), arg(0)) {
            ("count", None) if star || args.is_empty() => {
                let rows = self.counted_rows();
                Ok(format!("number of {rows}"))
            }
            ("count", Some(expr)) => {
                if let Some(condition) = count_condition(expr) {
                    return self.rows_where(condition);
                }
                if let Some((condition, value)) = case_when(expr) {
                    let what = match self.row_entity(value) {
                        Some(entity) => plural(&entity),
                        None => plural(&self.np(value)?),
                    };
                    let distinct = if distinct { "distinct " } else { "" };
                    let condition = self.condition(condition)?;
                    return Ok(format!("number of {distinct}{what} {condition}"));
                }
                let what = match self.row_entity(expr) {
                    Some(entity) => plural(&entity),
                    None => plural(&self.np(expr)?),
                };
                if distinct {
                    let word = self.pick(&["distinct", "different", "unique"]);
                    Ok(format!("number of {word} {what}"))
                } else {
                    Ok(format!("number of {what}"))
                }
            }
            ("sum" | "total", Some(expr)) => {
                if is_condition(strip(expr)) {
                    return self.rows_where(strip(expr));
                }
                if let Some(condition) = count_condition(expr) {
                    return self.rows_where(condition);
                }
                if let Some((condition, value)) = case_when(expr) {
                    let x = self.np(value)?;
                    let rows = self.counted_rows();
                    let condition = self.condition(condition)?;
                    return Ok(format!("total {x} over {rows} {condition}"));
                }
                let x = self.np(expr)?;
                let form = self.pick(&["total {x}", "sum of the {x}", "combined {x}"]);
                Ok(form.replace("{x}", &x))
            }
            ("avg", Some(expr)) => {
                let x = self.np(expr)?;
                Ok(format!("{} {x}", self.pick(&["average", "mean"])))
            }
            ("min", Some(expr)) if args.len() == 1 => {
                let x = self.np(expr)?;
                Ok(format!(
                    "{} {x}",
                    self.pick(&["lowest", "minimum", "smallest"])
                ))
            }
            ("max", Some(expr)) if args.len() == 1 => {
                let x = self.np(expr)?;
                Ok(format!(
                    "{} {x}",
                    self.pick(&["highest", "maximum", "largest"])
                ))
            }
            ("round", Some(expr)) => {
                let x = self.np(expr)?;
                let places = match arg(1) {
                    None => "a whole number".to_string(),
                    Some(places) => match self.number(places)?.as_str() {
                        "0" => "a whole number".to_string(),
                        "1" => "one decimal place".to_string(),
                        "2" => self
                            .pick(&["two decimal places", "the cent", "2 decimals"])
                            .to_string(),
                        n => format!("{n} decimal places"),
                    },
                };
                let form = self.pick(&["{x} rounded to {d}", "{x} (rounded to {d})"]);
                Ok(form.replace("{x}", &x).replace("{d}", &places))
            }
            ("nullif" | "lower" | "upper" | "trim" | "cast", Some(expr)) => self.np(expr),
            ("coalesce" | "ifnull", Some(expr)) if args.len() == 2 => {
                let x = self.np(expr)?;
                let fallback = self.operand(args[1])?;
                Ok(format!("{x} (or {fallback} when it is missing)"))
            }
            ("abs", Some(expr)) => Ok(format!("absolute {}", self.np(expr)?)),
            ("length", Some(expr)) => Ok(format!("length of the {}", self.np(expr)?)),
            ("group_concat", Some(expr)) => Ok(format!("list of {}", plural(&self.np(expr)?))),
            ("strftime", Some(format)) if args.len() == 2 => {
                let part = match strip(format) {
                    Expr::Value(v) => match &v.value {
                        Value::SingleQuotedString(f) => date_part(f),
                        _ => None,
                    },
                    _ => None,
                };
                let Some(part) = part else {
                    return unsupported("strftime format");
                };
                let of = self.np(args[1])?;
                Ok(format!("{part} of the {of}"))
            }
            ("date" | "datetime", Some(_)) if is_now(function) => {
                let shift = args[1..]
                    .iter()
                    .map(|a| match strip(a) {
                        Expr::Value(v) => match &v.value {
                            Value::SingleQuotedString(s) => Ok(s.clone()),
                            _ => unsupported("date modifier"),
                        },
                        _ => unsupported("date modifier"),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                relative_date(&shift)
            }
            ("date" | "datetime" | "julianday", Some(expr)) if args.len() == 1 => self.np(expr),
            ("date" | "datetime", Some(expr))
                if args.len() == 2
                    && string_literal(args[1])
                        .is_some_and(|m| m.eq_ignore_ascii_case("unixepoch")) =>
            {
                self.np(expr)
            }
            _ => unsupported(format!("function {name}")),
        }
    }

    /// What `COUNT(*)` counts in the current SELECT: the rows of the one joined table no
    /// other joined table references (`orders JOIN customers` counts orders), a bridge's rows
    /// as those of the table it leads to (`singer_in_concert JOIN concert` counts singers);
    /// without foreign keys to tell, the last joined table (the "many" side of a typical join).
    fn counted_rows(&self) -> String {
        let Some(scope) = self.scopes.last() else {
            return "rows".to_string();
        };
        let tables: Vec<&str> = scope
            .tables
            .iter()
            .map(|(_, table)| table.as_str())
            .filter(|table| !table.is_empty())
            .collect();
        let unreferenced: Vec<&str> = tables
            .iter()
            .copied()
            .filter(|table| {
                !tables.iter().any(|other| {
                    !other.eq_ignore_ascii_case(table) && self.names.references(other, table)
                })
            })
            .collect();
        let counted = match unreferenced[..] {
            [table] => self.bridged_rows(table, &tables),
            _ => tables.last().map(|table| table.to_string()),
        };
        match counted {
            Some(table) => plural(&self.table_name(&table)),
            None => "rows".to_string(),
        }
    }

    /// The table a bridge's rows stand for among the joined `tables`: the one it leads to
    /// that is not joined, else the last joined of its two; any other table stands for itself.
    fn bridged_rows(&self, table: &str, tables: &[&str]) -> Option<String> {
        let Some((a, b)) = self.names.bridge(table) else {
            return Some(table.to_string());
        };
        let position = |t: &str| tables.iter().position(|x| x.eq_ignore_ascii_case(t));
        let led = match (position(a), position(b)) {
            (Some(_), None) => b,
            (None, Some(_)) => a,
            (Some(pa), Some(pb)) if pa > pb => a,
            (Some(_), Some(_)) => b,
            (None, None) => table,
        };
        Some(led.to_string())
    }

    /// `SUM(cond)`, `SUM(CASE WHEN cond THEN 1 ELSE 0 END)`: "number of orders whose status is ...".
    fn rows_where(&mut self, condition: &Expr) -> Phrase {
        let rows = self.counted_rows();
        let condition = self.condition(condition)?;
        Ok(format!("number of {rows} {condition}"))
    }

    fn arithmetic(&mut self, left: &Expr, op: &BinaryOperator, right: &Expr) -> Phrase {
        if *op == BinaryOperator::Divide {
            if let Some(part) = times_hundred(left) {
                let (part, whole) = (self.np(part)?, self.np(right)?);
                let form = self.pick(&[
                    "percentage of {a} over the {b}",
                    "{a} as a percentage of the {b}",
                ]);
                return Ok(form.replace("{a}", &part).replace("{b}", &whole));
            }
        }
        if *op == BinaryOperator::Multiply {
            for (hundred, other) in [(left, right), (right, left)] {
                if is_hundred(hundred) {
                    if let Expr::BinaryOp {
                        left: a,
                        op: BinaryOperator::Divide,
                        right: b,
                    } = strip(other)
                    {
                        let (part, whole) = (self.np(a)?, self.np(b)?);
                        return Ok(format!("percentage of {part} over the {whole}"));
                    }
                }
            }
        }
        if *op == BinaryOperator::Minus {
            if let (Expr::Function(a), Expr::Function(b)) = (strip(left), strip(right)) {
                if function_name(a) == "julianday" && function_name(b) == "julianday" {
                    let (later, earlier) = (self.np(left)?, self.np(right)?);
                    return Ok(format!("number of days from the {earlier} to the {later}"));
                }
            }
        }
        let (a, b) = (self.np(left)?, self.operand(right)?);
        let form = match op {
            BinaryOperator::Divide => self.pick(&["ratio of {a} to {b}", "{a} divided by {b}"]),
            BinaryOperator::Multiply => self.pick(&["{a} times {b}", "{a} multiplied by {b}"]),
            BinaryOperator::Plus => self.pick(&["{a} plus {b}", "sum of {a} and {b}"]),
            BinaryOperator::Minus => self.pick(&["{a} minus {b}", "difference of {a} and {b}"]),
            BinaryOperator::Modulo => "remainder of {a} divided by {b}",
            BinaryOperator::StringConcat => "{a} followed by {b}",
            other => return unsupported(format!("operator {other} in a value")),
        };
        Ok(form.replace("{a}", &a).replace("{b}", &b))
    }

    // ---- conditions ----

    /// A WHERE/HAVING condition as relative clauses ("whose price is above 30"); empty for a
    /// correlated subquery's join to its outer query, which "related" already says.
    fn condition(&mut self, expr: &Expr) -> Phrase {
        match expr {
            Expr::Nested(inner) => self.condition(inner),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => {
                let (a, b) = (self.condition(left)?, self.condition(right)?);
                Ok(match (a.is_empty(), b.is_empty()) {
                    (true, _) => b,
                    (_, true) => a,
                    _ => format!("{a} and {b}"),
                })
            }
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Or,
                right,
            } => {
                let (a, b) = (self.condition(left)?, self.condition(right)?);
                let form = self.pick(&["{a} or {b}", "either {a} or {b}"]);
                Ok(form.replace("{a}", &a).replace("{b}", &b))
            }
            Expr::BinaryOp { left, op, right } => self.comparison(left, op, right),
            Expr::IsNull(x) => {
                let x = self.np(x)?;
                let form = self.pick(&[
                    "whose {x} is missing",
                    "where the {x} is not recorded",
                    "with no {x}",
                    "whose {x} is empty",
                ]);
                Ok(form.replace("{x}", &x))
            }
            Expr::IsNotNull(x) => {
                let x = self.np(x)?;
                let form = self.pick(&[
                    "whose {x} is known",
                    "that have a {x}",
                    "where the {x} is recorded",
                    "whose {x} is not missing",
                ]);
                Ok(form.replace("{x}", &x))
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let x = self.np(expr)?;
                let values = list
                    .iter()
                    .map(|v| self.operand(v))
                    .collect::<Result<Vec<_>, _>>()?;
                let form = if *negated {
                    self.pick(&["whose {x} is not {or}", "whose {x} is none of {and}"])
                } else {
                    self.pick(&[
                        "whose {x} is {or}",
                        "whose {x} is one of {and}",
                        "with {x} {or}",
                    ])
                };
                Ok(form
                    .replace("{x}", &x)
                    .replace("{or}", &join_with(values.clone(), "or"))
                    .replace("{and}", &join_and(values)))
            }
            Expr::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                let x = self.np(expr)?;
                let among = self.query_np(subquery)?;
                let form = if *negated {
                    self.pick(&[
                        "whose {x} is not among the {s}",
                        "whose {x} does not appear in the {s}",
                    ])
                } else {
                    self.pick(&["whose {x} is among the {s}", "whose {x} appears in the {s}"])
                };
                Ok(form.replace("{x}", &x).replace("{s}", &among))
            }
            Expr::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let x = self.np(expr)?;
                let (low, high) = (self.operand(low)?, self.operand(high)?);
                let form = if *negated {
                    self.pick(&[
                        "whose {x} is not between {l} and {h}",
                        "whose {x} is outside the range {l} to {h}",
                    ])
                } else {
                    self.pick(&[
                        "whose {x} is between {l} and {h}",
                        "with {x} from {l} to {h}",
                        "whose {x} lies between {l} and {h}",
                    ])
                };
                Ok(form
                    .replace("{x}", &x)
                    .replace("{l}", &low)
                    .replace("{h}", &high))
            }
            Expr::Like {
                negated,
                expr,
                pattern,
                any: false,
                ..
            }
            | Expr::ILike {
                negated,
                expr,
                pattern,
                any: false,
                ..
            } => self.like(expr, pattern, *negated),
            Expr::Exists { subquery, negated } => self.exists(subquery, *negated),
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr,
            } => self.negated(expr),
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                let x = self.np(expr)?;
                Ok(format!("whose {x} is true"))
            }
            other => unsupported(format!("condition {}", expr_kind(other))),
        }
    }

    /// `NOT c`, said as the opposite of `c` where it has one.
    fn negated(&mut self, expr: &Expr) -> Phrase {
        match expr {
            Expr::Nested(inner) => self.negated(inner),
            Expr::IsNull(x) => self.condition(&Expr::IsNotNull(x.clone())),
            Expr::IsNotNull(x) => self.condition(&Expr::IsNull(x.clone())),
            Expr::Like {
                negated,
                expr,
                pattern,
                any: false,
                ..
            }
            | Expr::ILike {
                negated,
                expr,
                pattern,
                any: false,
                ..
            } => self.like(expr, pattern, !negated),
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                let x = self.np(expr)?;
                Ok(format!("whose {x} is false"))
            }
            other => {
                let inner = self.condition(other)?;
                Ok(format!("excluding those {inner}"))
            }
        }
    }

    fn comparison(&mut self, left: &Expr, op: &BinaryOperator, right: &Expr) -> Phrase {
        if *op == BinaryOperator::Eq && self.is_correlation(left, right) {
            return Ok(String::new());
        }
        // `30 < price` reads as `price > 30`.
        let (left, op, right) = match (strip(left), flipped(op)) {
            (Expr::Value(_), Some(flipped)) if !matches!(strip(right), Expr::Value(_)) => {
                (right, flipped, left)
            }
            _ => (left, op.clone(), right),
        };
        let verb = match op {
            BinaryOperator::Eq => self.pick(&["is", "equals", "is equal to"]),
            BinaryOperator::NotEq => self.pick(&["is not", "is different from", "is other than"]),
            BinaryOperator::Gt => {
                self.pick(&["is greater than", "is more than", "is above", "exceeds"])
            }
            BinaryOperator::GtEq => self.pick(&[
                "is at least",
                "is greater than or equal to",
                "is no less than",
            ]),
            BinaryOperator::Lt => self.pick(&["is less than", "is below", "is under"]),
            BinaryOperator::LtEq => {
                self.pick(&["is at most", "is less than or equal to", "is no more than"])
            }
            other => return unsupported(format!("operator {other} in a condition")),
        };
        let (x, value) = (self.np(left)?, self.operand(right)?);
        let form = self.pick(&["whose {x} {v} {y}", "where the {x} {v} {y}"]);
        Ok(form
            .replace("{x}", &x)
            .replace("{v}", verb)
            .replace("{y}", &value))
    }

    /// `inner.col = outer.col` in a correlated subquery: the link "related" stands for.
    fn is_correlation(&self, left: &Expr, right: &Expr) -> bool {
        if self.scopes.len() < 2 {
            return false;
        }
        let depth_of = |expr: &Expr| -> Option<usize> {
            let Expr::CompoundIdentifier(parts) = strip(expr) else {
                return None;
            };
            let qualifier = &parts.first()?.value;
            self.scopes
                .iter()
                .rposition(|scope| scope.table_of(qualifier).is_some())
        };
        let innermost = self.scopes.len() - 1;
        match (depth_of(left), depth_of(right)) {
            (Some(a), Some(b)) => (a == innermost) != (b == innermost),
            _ => false,
        }
    }

    fn like(&mut self, expr: &Expr, pattern: &Expr, negated: bool) -> Phrase {
        let x = self.np(expr)?;
        let Some(pattern) = string_literal(pattern) else {
            return unsupported("LIKE with a computed pattern");
        };
        let inner = pattern.trim_matches('%');
        let plain = !inner.contains(['%', '_']);
        // (affirmative, negated) verbs.
        let (verbs, text): (&[(&str, &str)], &str) =
            match (pattern.starts_with('%'), pattern.ends_with('%'), plain) {
                (true, true, true) if !inner.is_empty() => (
                    &[
                        ("contains", "does not contain"),
                        ("includes", "does not include"),
                    ],
                    inner,
                ),
                (false, true, true) => (
                    &[
                        ("starts with", "does not start with"),
                        ("begins with", "does not begin with"),
                    ],
                    inner,
                ),
                (true, false, true) => (&[("ends with", "does not end with")], inner),
                (false, false, true) => {
                    (&[("is (ignoring case)", "is not (ignoring case)")], inner)
                }
                _ => (
                    &[("matches the pattern", "does not match the pattern")],
                    pattern.as_str(),
                ),
            };
        let (yes, no) = verbs[self.rng.random_range(0..verbs.len())];
        let verb = if negated { no } else { yes };
        let form = self.pick(&["whose {x} {v} \"{t}\"", "where the {x} {v} \"{t}\""]);
        Ok(form
            .replace("{x}", &x)
            .replace("{v}", verb)
            .replace("{t}", text))
    }

    fn exists(&mut self, subquery: &Query, negated: bool) -> Phrase {
        let SetExpr::Select(select) = subquery.body.as_ref() else {
            return unsupported("EXISTS over a set operation");
        };
        if !matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty())
            || select.having.is_some()
            || subquery.limit_clause.is_some()
        {
            return unsupported("EXISTS with grouping or a limit");
        }
        let (scope, joined) = self.scope_of(select)?;
        self.scopes.push(scope);
        let conditions = match &select.selection {
            Some(condition) => self.condition(condition),
            None => Ok(String::new()),
        };
        let subject = self.subject(&joined);
        self.scopes.pop();
        let (conditions, subject) = (conditions?, subject?);
        let one = singular(&subject);
        let form = if negated {
            self.pick(&[
                "that have no related {s}{c}",
                "for which there is no {s}{c}",
                "without any {s}{c}",
            ])
        } else {
            self.pick(&[
                "that have at least one related {s}{c}",
                "for which there is a related {s}{c}",
                "with some {s}{c}",
            ])
        };
        let conditions = if conditions.is_empty() {
            conditions
        } else {
            format!(" {conditions}")
        };
        Ok(form.replace("{s}", &one).replace("{c}", &conditions))
    }
}

// ---- helpers over the tree ----

/// A joined table: in words, by name (none for a derived table), whether it is LEFT joined,
/// and what its ON condition restricts beyond matching keys.
struct Joined {
    words: String,
    table: Option<String>,
    left: bool,
    restrictions: Vec<Expr>,
}

/// How a joined table reads in the subject ([`Speaker::through_bridge`]).
enum Through {
    /// As its own name.
    Itself,
    /// As another table's rows ("authors" for `writes` joined to papers).
    As(String),
    /// Already said by the relationship of the tables around it.
    Said,
}

/// The atoms of a join's ON condition (split at AND) other than `a.x = b.y` key matches.
fn restrictions(on: &Expr) -> Vec<Expr> {
    let key_match = |conjunct: &&Expr| {
        matches!(conjunct, Expr::BinaryOp { left, op: BinaryOperator::Eq, right }
            if is_column(left) && is_column(right))
    };
    conjuncts(on)
        .into_iter()
        .filter(|conjunct| !key_match(conjunct))
        .cloned()
        .collect()
}

fn is_column(expr: &Expr) -> bool {
    matches!(
        strip(expr),
        Expr::Identifier(_) | Expr::CompoundIdentifier(_)
    )
}

fn last_ident(name: &ObjectName) -> Option<String> {
    name.0
        .last()
        .and_then(|part| part.as_ident())
        .map(|ident| ident.value.clone())
}

fn function_name(function: &Function) -> String {
    last_ident(&function.name)
        .unwrap_or_default()
        .to_lowercase()
}

/// The plain arguments, whether the argument is `*`, and whether DISTINCT was given.
fn arguments(function: &Function) -> Result<(Vec<&Expr>, bool, bool), Unsupported> {
    match &function.args {
        FunctionArguments::None => Ok((Vec::new(), false, false)),
        FunctionArguments::Subquery(_) => unsupported("function over a subquery"),
        FunctionArguments::List(list) => {
            if !list.clauses.is_empty() {
                return unsupported("clause inside a function's arguments");
            }
            let mut args = Vec::new();
            let mut star = false;
            for arg in &list.args {
                match arg {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => args.push(expr),
                    FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => star = true,
                    _ => return unsupported("named or qualified-wildcard function argument"),
                }
            }
            let distinct = matches!(
                list.duplicate_treatment,
                Some(sqlparser::ast::DuplicateTreatment::Distinct)
            );
            Ok((args, star, distinct))
        }
    }
}

/// `date('now', ...)`.
fn is_now(function: &Function) -> bool {
    arguments(function)
        .ok()
        .and_then(|(args, _, _)| args.first().and_then(|a| string_literal(a)))
        .is_some_and(|s| s.eq_ignore_ascii_case("now"))
}

/// "today", "the date 10 years ago".
fn relative_date(modifiers: &[String]) -> Phrase {
    if modifiers.is_empty() {
        return Ok("today".to_string());
    }
    let mut parts = Vec::new();
    for modifier in modifiers {
        let mut pieces = modifier.split_whitespace();
        let (Some(amount), Some(unit), None) = (pieces.next(), pieces.next(), pieces.next()) else {
            return unsupported("date modifier");
        };
        match amount.strip_prefix('-') {
            Some(back) => parts.push(format!("{back} {unit} ago")),
            None => parts.push(format!(
                "{} {unit} from now",
                amount.trim_start_matches('+')
            )),
        }
    }
    Ok(format!("the date {}", parts.join(" and ")))
}

fn date_part(format: &str) -> Option<&'static str> {
    Some(match format {
        "%Y" => "year",
        "%m" => "month",
        "%d" => "day",
        "%Y-%m" => "year and month",
        "%Y-%m-%d" => "date",
        "%H:%M" => "time (hours and minutes)",
        "%s" => "Unix time in seconds",
        "%H" => "hour",
        "%W" => "week",
        "%w" => "weekday",
        _ => return None,
    })
}

fn ordinal(n: u64) -> Option<&'static str> {
    Some(match n {
        2 => "second",
        3 => "third",
        4 => "fourth",
        5 => "fifth",
        _ => return None,
    })
}

/// Parentheses and casts do not change how a value reads.
fn strip(expr: &Expr) -> &Expr {
    match expr {
        Expr::Nested(inner) | Expr::Cast { expr: inner, .. } => strip(inner),
        Expr::Function(f) if matches!(function_name(f).as_str(), "lower" | "upper") => {
            match arguments(f) {
                Ok((args, false, _)) if args.len() == 1 => strip(args[0]),
                _ => expr,
            }
        }
        other => other,
    }
}

fn string_literal(expr: &Expr) -> Option<String> {
    match strip(expr) {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn literal(value: &Value) -> String {
    match value {
        Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => format!("\"{s}\""),
        Value::Number(n, _) => n.clone(),
        Value::Boolean(b) => b.to_string(),
        Value::Null => "null".to_string(),
        other => other.to_string(),
    }
}

fn is_hundred(expr: &Expr) -> bool {
    matches!(strip(expr), Expr::Value(v) if matches!(&v.value, Value::Number(n, _) if n.parse::<f64>() == Ok(100.0)))
}

/// `100 * x` or `x * 100`: the `x`.
fn times_hundred(expr: &Expr) -> Option<&Expr> {
    match strip(expr) {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Multiply,
            right,
        } => {
            if is_hundred(left) {
                Some(right)
            } else if is_hundred(right) {
                Some(left)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// `CASE WHEN c THEN x [ELSE 0 | ELSE NULL] END`: the `c` and `x` a SUM or COUNT of it adds up.
fn case_when(expr: &Expr) -> Option<(&Expr, &Expr)> {
    let Expr::Case {
        operand: None,
        conditions,
        else_result,
        ..
    } = strip(expr)
    else {
        return None;
    };
    let [when] = conditions.as_slice() else {
        return None;
    };
    let else_ok = match else_result.as_deref() {
        None => true,
        Some(e) => {
            is_number(e, "0") || matches!(strip(e), Expr::Value(v) if v.value == Value::Null)
        }
    };
    else_ok.then_some((&when.condition, &when.result))
}

fn is_number(expr: &Expr, n: &str) -> bool {
    matches!(strip(expr), Expr::Value(v) if matches!(&v.value, Value::Number(x, _) if x == n))
}

/// `CASE WHEN c THEN 1 ... END`: the `c` a SUM or COUNT of it counts.
fn count_condition(expr: &Expr) -> Option<&Expr> {
    case_when(expr)
        .filter(|(_, result)| is_number(result, "1"))
        .map(|(condition, _)| condition)
}

fn is_condition(expr: &Expr) -> bool {
    match expr {
        Expr::BinaryOp { op, .. } => matches!(
            op,
            BinaryOperator::Eq
                | BinaryOperator::NotEq
                | BinaryOperator::Gt
                | BinaryOperator::GtEq
                | BinaryOperator::Lt
                | BinaryOperator::LtEq
                | BinaryOperator::And
                | BinaryOperator::Or
        ),
        Expr::IsNull(_)
        | Expr::IsNotNull(_)
        | Expr::InList { .. }
        | Expr::Between { .. }
        | Expr::Like { .. }
        | Expr::ILike { .. } => true,
        _ => false,
    }
}

fn flipped(op: &BinaryOperator) -> Option<BinaryOperator> {
    Some(match op {
        BinaryOperator::Eq => BinaryOperator::Eq,
        BinaryOperator::NotEq => BinaryOperator::NotEq,
        BinaryOperator::Gt => BinaryOperator::Lt,
        BinaryOperator::GtEq => BinaryOperator::LtEq,
        BinaryOperator::Lt => BinaryOperator::Gt,
        BinaryOperator::LtEq => BinaryOperator::GtEq,
        _ => return None,
    })
}

/// Whether an item is an aggregate (then "how many"/"what is the total" forms fit).
fn kind_of(expr: &Expr) -> Kind {
    fn aggregate(expr: &Expr) -> bool {
        match expr {
            Expr::Function(f) => {
                matches!(
                    function_name(f).as_str(),
                    "count" | "sum" | "avg" | "min" | "max" | "total" | "group_concat"
                ) || arguments(f).is_ok_and(|(args, _, _)| args.iter().any(|a| aggregate(a)))
            }
            Expr::BinaryOp { left, right, .. } => aggregate(left) || aggregate(right),
            Expr::Nested(inner) | Expr::Cast { expr: inner, .. } => aggregate(inner),
            _ => false,
        }
    }
    match expr {
        Expr::Function(f)
            if function_name(f) == "count"
                && arguments(f).is_ok_and(|(args, star, _)| star || args.is_empty()) =>
        {
            Kind::CountRows
        }
        _ if aggregate(expr) => Kind::Aggregate,
        _ => Kind::Plain,
    }
}

/// The variant name of an expression, for the report of what cannot be said.
fn expr_kind(expr: &Expr) -> String {
    let debug = format!("{expr:?}");
    let name: String = debug
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    format!("expression {name}")
}

/// "a", "a and b", "a, b and c".
fn join_and(parts: Vec<String>) -> String {
    join_with(parts, "and")
}

fn join_with(mut parts: Vec<String>, word: &str) -> String {
    match parts.len() {
        0 => String::new(),
        1 => parts.remove(0),
        _ => {
            let last = parts.pop().unwrap_or_default();
            format!("{} {word} {last}", parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::mutate::para::descriptions::{Described, Descriptions};

    /// Every wording of `sql` (across 12 streams) contains each of `expected`.
    fn says(sql: &str, expected: &[&str]) {
        let query = crate::mutate::parse_query(sql).unwrap();
        for stream in 0..12 {
            let mut rng = ChaCha8Rng::seed_from_u64(stream);
            let text = question(&query, &mut rng, None, &SchemaNames::default()).unwrap();
            for part in expected {
                assert!(text.contains(part), "{sql}\n{text}\nlacks {part:?}");
            }
            assert!(text.ends_with(['?', '.']), "{text}");
            assert!(text.starts_with(char::is_uppercase), "{text}");
        }
    }

    #[test]
    fn filters_keep_their_values_and_joins_name_their_tables() {
        says(
            "SELECT b.title, p.name FROM books AS b JOIN publishers AS p ON p.publisher_id = b.publisher_id WHERE b.price BETWEEN 10 AND 20",
            &["book title", "publisher name", "books", "publishers", "10", "20"],
        );
        says(
            "SELECT first_name FROM customers WHERE loyalty_tier IN ('silver', 'gold') AND email IS NULL",
            &["first name", "loyalty tier", "\"silver\"", "\"gold\"", "email"],
        );
        says(
            "SELECT name FROM authors WHERE LOWER(name) LIKE '%ann%'",
            &["name", "\"ann\""],
        );
    }

    #[test]
    fn case_expressions_say_each_branch() {
        says(
            "SELECT name, CASE WHEN price > 30 THEN 'dear' WHEN price > 10 THEN 'fair' ELSE 'cheap' END AS price_band FROM books",
            &["price band", "\"dear\"", "30", "\"fair\"", "10", "\"cheap\""],
        );
        says(
            "SELECT CASE genre WHEN 'Poetry' THEN 1 END FROM books",
            &["\"Poetry\"", "1", "nothing"],
        );
    }

    #[test]
    fn derived_tables_read_as_the_rows_of_their_query() {
        says(
            "SELECT AVG(t.n) FROM (SELECT author_id, COUNT(*) AS n FROM writes GROUP BY author_id) AS t",
            &["number of writes", "author"],
        );
        says(
            "SELECT COUNT(*) FROM (SELECT DISTINCT genre FROM books WHERE price > 20)",
            &["genre", "20"],
        );
    }

    #[test]
    fn a_join_condition_beyond_the_keys_is_said_with_its_table() {
        says(
            "SELECT a.code, COUNT(f.id) FROM airport AS a LEFT JOIN flight AS f ON a.code = f.origin AND f.connections = 0 GROUP BY a.code",
            &["flights", "connections", " 0"],
        );
    }

    #[test]
    fn aggregates_grouping_and_ordering_are_said() {
        says(
            "SELECT COUNT(*) FROM orders WHERE status = 'completed'",
            &["orders", "\"completed\""],
        );
        says(
            "SELECT genre, AVG(price) FROM books GROUP BY genre HAVING COUNT(*) > 2 ORDER BY AVG(price) DESC LIMIT 3",
            &["genre", "price", "number of books", "2", "3"],
        );
        says(
            "SELECT title FROM books ORDER BY pages DESC LIMIT 1 OFFSET 1",
            &["title", "second-", "pages"],
        );
        says(
            "SELECT ROUND(100.0 * SUM(status = 'cancelled') / COUNT(*), 2) FROM orders",
            &["percentage", "\"cancelled\"", "number of orders"],
        );
    }

    #[test]
    fn nested_queries_and_set_operations_are_said() {
        says(
            "SELECT title FROM books WHERE book_id NOT IN (SELECT book_id FROM order_items)",
            &["title", "book ID", "order items"],
        );
        says(
            "SELECT s.name FROM stores AS s WHERE EXISTS (SELECT 1 FROM orders AS o WHERE o.store_id = s.store_id AND o.status = 'cancelled')",
            &["stores", "order", "\"cancelled\""],
        );
        says(
            "SELECT name FROM authors WHERE country = 'Canada' UNION SELECT name FROM publishers",
            &["authors", "publishers", "\"Canada\""],
        );
    }

    /// Every wording of `sql` under `names` (across 12 streams) contains each of `expected`
    /// and none of `absent`.
    fn says_with(names: &SchemaNames, sql: &str, expected: &[&str], absent: &[&str]) {
        let query = crate::mutate::parse_query(sql).unwrap();
        for stream in 0..12 {
            let mut rng = ChaCha8Rng::seed_from_u64(stream);
            let text = question(&query, &mut rng, None, names).unwrap();
            for part in expected {
                assert!(text.contains(part), "{sql}\n{text}\nlacks {part:?}");
            }
            for part in absent {
                assert!(!text.contains(part), "{sql}\n{text}\nsays {part:?}");
            }
        }
    }

    fn academic() -> SchemaNames {
        let schema = crate::mutate::para::names::tests::academic();
        SchemaNames::build(Some(&schema), &Descriptions::default(), None)
    }

    #[test]
    fn abbreviated_keys_read_as_their_table_id() {
        let names = academic();
        says_with(
            &names,
            "SELECT title FROM publication WHERE jid = 5",
            &["journal ID", "5"],
            &["jid"],
        );
        says_with(
            &names,
            "SELECT aid, oid FROM author",
            &["author ID", "organization ID"],
            &["aid", "oid"],
        );
        // Without a schema the identifier is all there is.
        says_with(
            &SchemaNames::default(),
            "SELECT title FROM publication WHERE jid = 5",
            &["jid"],
            &[],
        );
    }

    #[test]
    fn a_double_quoted_name_that_is_no_column_is_a_string() {
        let names = academic();
        says_with(
            &names,
            "SELECT \"title\" FROM publication WHERE title = \"Deep Learning\" AND \"jid\" > 2",
            &["title", "\"Deep Learning\"", "journal ID", "2"],
            &["\"title\"", "\"jid\"", "the \"Deep", "deep learning"],
        );
        // Without the columns to tell, it stays a name.
        says_with(
            &SchemaNames::default(),
            "SELECT title FROM publication WHERE title = \"Deep Learning\"",
            &["deep learning"],
            &[],
        );
    }

    #[test]
    fn a_bridge_table_reads_as_the_relationship_it_is() {
        let names = academic();
        says_with(
            &names,
            "SELECT p.title, a.name FROM publication AS p JOIN writes AS w ON p.pid = w.pid JOIN author AS a ON w.aid = a.aid",
            &["publications", "their authors", "author name"],
            &["writes", "joined with"],
        );
        says_with(
            &names,
            "SELECT p.title, w.aid FROM publication AS p JOIN writes AS w ON p.pid = w.pid",
            &["publications", "their authors", "author ID"],
            &["writes", "write"],
        );
        says_with(
            &names,
            "SELECT a.name FROM writes AS w JOIN author AS a ON w.aid = a.aid JOIN publication AS p ON w.pid = p.pid WHERE p.year = 2020",
            &["authors", "their publications", "2020"],
            &["writes", "joined with"],
        );
        // A bridge joined with one of its tables leads to the other, which its rows count.
        says_with(
            &names,
            "SELECT p.title, COUNT(*) FROM writes AS w JOIN publication AS p ON w.pid = p.pid GROUP BY p.title",
            &["publications", "their authors", "number of authors"],
            &["writes", "joined with"],
        );
        says_with(
            &names,
            "SELECT a.name, COUNT(*) FROM author AS a JOIN writes AS w ON w.aid = a.aid GROUP BY a.name",
            &["authors", "their publications", "number of publications"],
            &["writes"],
        );
        // A join's rows are those of the table nothing else joined references.
        says_with(
            &names,
            "SELECT j.name, COUNT(*) FROM journal AS j JOIN publication AS p ON p.jid = j.jid GROUP BY j.name",
            &["number of publications"],
            &["number of journals"],
        );
        // Tables a foreign key links read as owner and owned.
        says_with(
            &names,
            "SELECT j.name, COUNT(*) FROM publication AS p JOIN journal AS j ON p.jid = j.jid GROUP BY j.name",
            &["publications", "their journals"],
            &["joined with"],
        );
    }

    #[test]
    fn descriptions_name_abbreviated_columns() {
        let mut descriptions = Descriptions::default();
        descriptions.columns.insert(
            ("visit".into(), "msid".into()),
            Described::Sentence("ID of the medical staff member on duty".into()),
        );
        descriptions.columns.insert(
            ("visit".into(), "notes".into()),
            Described::Sentence("Free text written by the nurse".into()),
        );
        descriptions.columns.insert(
            ("student".into(), "stuid".into()),
            Described::Name("student id".into()),
        );
        let names = SchemaNames::build(None, &descriptions, None);
        says_with(
            &names,
            "SELECT notes FROM visit WHERE msid = 7",
            &["medical staff member ID", "notes", "7"],
            &["msid", "nurse"],
        );
        says_with(
            &names,
            "SELECT stuid FROM student",
            &["student ID"],
            &["stuid"],
        );
    }

    #[test]
    fn sqlite_column_comments_name_abbreviated_columns() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("clinic.sqlite");
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE visit (\n  vid INTEGER PRIMARY KEY,\n  nid INTEGER, -- Unique identifier for each nurse\n  day TEXT -- day of the visit\n);",
        )
        .unwrap();
        drop(conn);
        let schema = sqlgate_engine_sqlite::read_schema(&db).unwrap();
        let engine = sqlgate_eval::exec::Engine::new(
            sqlgate_eval::exec::Limits::default(),
            sqlgate_engine_sqlite::files(),
        );
        let comments = crate::mutate::para::descriptions::catalog_comments(&engine, &db).unwrap();
        let names = SchemaNames::build(Some(&schema), &comments, None);
        says_with(
            &names,
            "SELECT day FROM visit WHERE nid = 2",
            &["nurse ID", "day", "2"],
            &["nid", "visit of the"],
        );
    }

    #[test]
    fn constructs_without_a_wording_are_named() {
        let fails = |sql: &str| {
            let query = crate::mutate::parse_query(sql).unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(0);
            question(&query, &mut rng, None, &SchemaNames::default())
                .unwrap_err()
                .0
        };

        assert_eq!(fails("SELECT hex(name) FROM t"), "function hex");
        assert_eq!(
            fails("SELECT substr(name, 1, 2) FROM t"),
            "expression Substring"
        );

        assert_eq!(
            fails("SELECT RANK() OVER (ORDER BY a) FROM t"),
            "window function"
        );
    }
}
