//! Ties in a gold's ORDER BY. The key values come from the query itself: its outer LIMIT and
//! OFFSET removed, and each ORDER BY key that is not already a result column appended to the
//! outer SELECT ([`OrderProbe`]), so that rows can be compared on the keys. From them:
//! - the audit's `order_ties`: a LIMIT that cuts through rows tying on the keys (which of
//!   them are kept is the engine's choice), or tied rows that a mode compares in order;
//! - every answer the gold can give where it ties ([`OrderProbe::resolutions`]), and the
//!   tie-aware judging of a distilled suite: on a generated database where the gold's order
//!   is open, a prediction is correct when it matches one of those answers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use sqlparser::ast::{
    Expr, Ident, LimitClause, OrderByKind, Query, SelectItem, SetExpr, Statement, Value as SqlValue,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

use super::{CaseInput, Outcome, Verdict};
use crate::exec::value::py_str;
use crate::exec::{Driver, Execution, QueryRunner, ResultSet, Value};
use crate::sqltext;

/// The most answers a tied gold is compared with on one database: beyond it, `distill` does
/// not judge the gold there.
pub const MAX_RESOLUTIONS: usize = 64;

/// The most rows all the answers of one gold on one database hold together: each answer is a
/// copy of the gold's window, so a large window through a tie is not judged by its ties.
const MAX_RESOLVED_ROWS: usize = 100_000;

/// The probe of one query's order: the query without its LIMIT, its keys made visible.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderProbe {
    /// The outer query without LIMIT and OFFSET, the appended keys last.
    pub sql: String,
    keys: Vec<KeyColumn>,
    /// How many key columns were appended after the query's own.
    appended: usize,
    offset: usize,
    limit: Option<usize>,
    /// The ORDER BY clause as written, for the findings.
    order_by: String,
}

/// Where one ORDER BY key's value is in the probe's rows.
#[derive(Debug, Clone, PartialEq)]
enum KeyColumn {
    /// One of the query's own result columns, by position.
    Visible(usize),
    /// The `j`-th appended column.
    Appended(usize),
    /// A result column named so (a compound query's ORDER BY names its columns).
    Named(String),
}

impl OrderProbe {
    /// The probe of `sql`, or None when its outer query has no ORDER BY or its keys cannot be
    /// read (a DISTINCT query ordered by a column it does not return, a non-literal LIMIT).
    pub fn of(sql: &str) -> Option<OrderProbe> {
        let checked = sqltext::check(sql).ok()?;
        // The tree is cloned, printed and dropped recursively: on a stack deep enough for it.
        sqltext::run(checked.depth, || {
            let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
            match (statements.pop(), statements.is_empty()) {
                (Some(Statement::Query(query)), true) => probe(*query),
                _ => None,
            }
        })
        .ok()
        .flatten()
    }

    /// Whether the query has a LIMIT or OFFSET (only then can a cut fall between ties).
    pub fn has_cut(&self) -> bool {
        self.limit.is_some() || self.offset > 0
    }

    /// A LIMIT or OFFSET that falls inside a group of rows tying on every key whose other
    /// columns differ: the rows kept depend on the engine's order. `rows` is the probe's result.
    pub fn cut_through_ties(&self, rows: &ResultSet) -> Option<String> {
        let keyed = Keyed::new(self, rows)?;
        let cuts = [
            Some(self.offset),
            self.limit.map(|n| self.offset.saturating_add(n)),
        ];
        cuts.into_iter().flatten().find_map(|cut| {
            let tied = keyed.tie_group_across(cut)?;
            Some(format!(
                "`{}` with {} cuts between rows {} and {} of {} tying on the keys ({}), \
                 e.g. {}",
                self.order_by,
                self.cut_clause(),
                cut,
                cut + 1,
                rows.rows.len(),
                keyed.show_keys(tied.start),
                keyed.show_pair(tied.start, tied.end - 1)
            ))
        })
    }

    /// Two rows the query returns (within its LIMIT) that tie on every key and differ
    /// elsewhere: their order is the engine's.
    pub fn partial_order(&self, rows: &ResultSet) -> Option<String> {
        let keyed = Keyed::new(self, rows)?;
        let end = self.limit.map_or(rows.rows.len(), |n| {
            self.offset.saturating_add(n).min(rows.rows.len())
        });
        (self.offset.saturating_add(1)..end)
            .find(|&i| keyed.same_keys(i - 1, i) && !keyed.same_visible(i - 1, i))
            .map(|i| {
                format!(
                    "`{}` is not a total order and the mode compares rows in order: rows {} \
                     and {} tie on the keys ({}) but differ: {}",
                    self.order_by,
                    i,
                    i + 1,
                    keyed.show_keys(i),
                    keyed.show_pair(i - 1, i)
                )
            })
    }

    fn cut_clause(&self) -> String {
        match (self.limit, self.offset) {
            (Some(n), 0) => format!("LIMIT {n}"),
            (Some(n), offset) => format!("LIMIT {n} OFFSET {offset}"),
            (None, offset) => format!("OFFSET {offset}"),
        }
    }
}

/// Every answer a query can give on one database, from its probe's rows there.
impl OrderProbe {
    /// The results the query can return: the rows of its window (OFFSET, LIMIT) with each
    /// group of rows tying on every key taken in any order and, where a cut falls inside a
    /// group, any of the group's rows on the window's side. The engine's own choice comes
    /// first; results that are equal row for row are given once. None when the keys cannot be
    /// read, there are more than `max`, or several hold more than 100,000 rows together.
    pub fn resolutions(&self, result: &ResultSet, max: usize) -> Option<Vec<ResultSet>> {
        let keyed = Keyed::new(self, result)?;
        let n = result.rows.len();
        let start = self.offset.min(n);
        let end = self
            .limit
            .map_or(n, |limit| self.offset.saturating_add(limit).min(n));
        // Each segment of the window that lies in one tie group: its possible row sequences.
        let mut segments: Vec<Vec<Vec<&[Value]>>> = Vec::new();
        let mut at = start;
        while at < end {
            let mut first = at;
            while first > 0 && keyed.same_keys(first - 1, at) {
                first -= 1;
            }
            let mut past = at + 1;
            while past < n && keyed.same_keys(past, at) {
                past += 1;
            }
            let taken = past.min(end) - at;
            let group: Vec<&[Value]> = (first..past).map(|i| keyed.visible_row(i)).collect();
            let engine: Vec<&[Value]> = (at..at + taken).map(|i| keyed.visible_row(i)).collect();
            segments.push(arrangements(&group, engine, max)?);
            at += taken;
        }
        let total = segments.iter().try_fold(1usize, |total, choices| {
            total.checked_mul(choices.len()).filter(|&t| t <= max)
        })?;
        if total > 1 && total.saturating_mul(end - start) > MAX_RESOLVED_ROWS {
            return None;
        }
        let columns = result.columns[..keyed.visible].to_vec();
        Some(
            (0..total)
                .map(|mut index| {
                    let mut rows = Vec::with_capacity(end - start);
                    for choices in &segments {
                        let chosen = &choices[index % choices.len()];
                        index /= choices.len();
                        rows.extend(chosen.iter().map(|row| row.to_vec()));
                    }
                    ResultSet {
                        columns: columns.clone(),
                        rows,
                        lossy_text: result.lossy_text,
                    }
                })
                .collect(),
        )
    }
}

/// The distinct sequences of `engine.len()` rows drawn from `group` (each row at most once),
/// `engine` first; None when there are more than `max`.
fn arrangements<'v>(
    group: &[&'v [Value]],
    engine: Vec<&'v [Value]>,
    max: usize,
) -> Option<Vec<Vec<&'v [Value]>>> {
    // Equal rows are interchangeable: draw from the group's distinct rows, with their counts.
    let mut distinct: Vec<(&[Value], usize)> = Vec::new();
    for row in group {
        match distinct.iter().position(|(seen, _)| seen == row) {
            Some(i) => distinct[i].1 += 1,
            None if distinct.len() > max => return None,
            None => distinct.push((row, 1)),
        }
    }
    let mut found = vec![engine.clone()];
    let mut current = Vec::with_capacity(engine.len());
    let whole = engine.len();
    draw(&mut distinct, whole, &mut current, &mut found, &engine, max).then_some(found)
}

/// Depth-first: extends `current` to `whole` rows in every way, adding each sequence that is
/// not the engine's to `found`; false once `found` holds more than `max`.
fn draw<'v>(
    distinct: &mut [(&'v [Value], usize)],
    whole: usize,
    current: &mut Vec<&'v [Value]>,
    found: &mut Vec<Vec<&'v [Value]>>,
    engine: &[&'v [Value]],
    max: usize,
) -> bool {
    if current.len() == whole {
        if current.as_slice() != engine {
            found.push(current.clone());
        }
        return found.len() <= max;
    }
    for i in 0..distinct.len() {
        if distinct[i].1 == 0 {
            continue;
        }
        distinct[i].1 -= 1;
        current.push(distinct[i].0);
        let within = draw(distinct, whole, current, found, engine, max);
        current.pop();
        distinct[i].1 += 1;
        if !within {
            return false;
        }
    }
    true
}

/// Judges a case whose gold ties on some of its databases (`case.tied`): on the others as
/// `evaluate_on` does; on each tied one, correct when the prediction matches one of the
/// gold's answers there ([`OrderProbe::resolutions`]), each tried in turn by handing
/// `evaluate_on` a runner whose gold result is that answer. The outcome of a failure is the
/// one against the engine's own answer.
pub(super) fn evaluate(
    case: &CaseInput,
    runner: &dyn QueryRunner,
    evaluate_on: impl Fn(&CaseInput, &dyn QueryRunner) -> Outcome,
) -> Outcome {
    let several = case.db_files.len() > 1;
    let (tied, untied): (Vec<PathBuf>, Vec<PathBuf>) = case
        .db_files
        .iter()
        .cloned()
        .partition(|file| case.tied.contains(file));
    let mut correct = None;
    if !untied.is_empty() {
        let outcome = evaluate_on(
            &CaseInput {
                db_files: &untied,
                tied: &[],
                ..case.clone()
            },
            runner,
        );
        if outcome.verdict != Verdict::Correct {
            return outcome;
        }
        correct = Some(outcome);
    }
    for db in &tied {
        let one = CaseInput {
            db_files: std::slice::from_ref(db),
            tied: &[],
            ..case.clone()
        };
        let resolving = Resolving::new(runner);
        let mut engine_answer = None;
        loop {
            let outcome = evaluate_on(&one, &resolving);
            if outcome.verdict == Verdict::Correct {
                correct.get_or_insert(outcome);
                break;
            }
            let engine_answer = engine_answer.get_or_insert(outcome);
            if !resolving.next() {
                let outcome = engine_answer.clone();
                return if several {
                    outcome.failed_on(db)
                } else {
                    outcome
                };
            }
        }
    }
    correct.unwrap_or_else(|| Outcome::new(Verdict::Correct, 1.0))
}

/// Every answer of one gold on one database, the engine's first.
type Answers = Arc<Vec<Arc<ResultSet>>>;

/// A runner whose gold results are the `choice`-th answer of each gold where its order ties
/// (the engine's own when it has fewer); predictions run once, whatever the choice.
struct Resolving<'r> {
    inner: &'r dyn QueryRunner,
    choice: AtomicUsize,
    /// The most answers any gold had.
    most: AtomicUsize,
    answers: Mutex<HashMap<(PathBuf, String), Option<Answers>>>,
    preds: Mutex<HashMap<(PathBuf, String), Execution>>,
}

impl<'r> Resolving<'r> {
    fn new(inner: &'r dyn QueryRunner) -> Self {
        Resolving {
            inner,
            choice: AtomicUsize::new(0),
            most: AtomicUsize::new(1),
            answers: Mutex::default(),
            preds: Mutex::default(),
        }
    }

    /// Moves to the next answer; false when every gold's answers were tried.
    fn next(&self) -> bool {
        let next = self.choice.load(Ordering::Relaxed) + 1;
        self.choice.store(next, Ordering::Relaxed);
        next < self.most.load(Ordering::Relaxed)
    }
}

impl QueryRunner for Resolving<'_> {
    fn gold(&self, db: &Path, sql: &str) -> Execution {
        let key = (db.to_path_buf(), sql.to_string());
        let answers = self
            .answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .cloned();
        let answers = answers.unwrap_or_else(|| {
            let found = OrderProbe::of(sql).and_then(|probe| {
                let run = self.inner.gold(db, &probe.sql).result.ok()?;
                let answers = probe.resolutions(&run, MAX_RESOLUTIONS)?;
                Some(Arc::new(answers.into_iter().map(Arc::new).collect()))
            });
            self.answers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key, found.clone());
            found
        });
        let Some(answers) = answers else {
            return self.inner.gold(db, sql);
        };
        self.most.fetch_max(answers.len(), Ordering::Relaxed);
        let choice = self.choice.load(Ordering::Relaxed).min(answers.len() - 1);
        Execution {
            result: Ok(Arc::clone(&answers[choice])),
            elapsed: std::time::Duration::ZERO,
        }
    }

    fn pred(&self, db: &Path, sql: &str) -> Execution {
        let key = (db.to_path_buf(), sql.to_string());
        if let Some(done) = self
            .preds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return done.clone();
        }
        let execution = self.inner.pred(db, sql);
        self.preds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, execution.clone());
        execution
    }

    fn driver(&self) -> &'static dyn Driver {
        self.inner.driver()
    }
}

/// The probe's rows with their key columns located.
struct Keyed<'a> {
    rows: &'a [Vec<Value>],
    keys: Vec<usize>,
    visible: usize,
}

impl<'a> Keyed<'a> {
    fn new(probe: &OrderProbe, result: &'a ResultSet) -> Option<Keyed<'a>> {
        let width = result.columns.len();
        let visible = width.checked_sub(probe.appended)?;
        let keys = probe
            .keys
            .iter()
            .map(|key| match key {
                KeyColumn::Visible(i) => (*i < visible).then_some(*i),
                KeyColumn::Appended(j) => Some(visible + j),
                KeyColumn::Named(name) => result.columns[..visible]
                    .iter()
                    .position(|c| c.eq_ignore_ascii_case(name)),
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Keyed {
            rows: &result.rows,
            keys,
            visible,
        })
    }

    fn same_keys(&self, a: usize, b: usize) -> bool {
        self.keys
            .iter()
            .all(|&k| self.rows[a][k] == self.rows[b][k])
    }

    fn same_visible(&self, a: usize, b: usize) -> bool {
        self.visible_row(a) == self.visible_row(b)
    }

    fn visible_row(&self, row: usize) -> &'a [Value] {
        &self.rows[row][..self.visible]
    }

    /// The rows around the cut before row `cut` (0-based) that tie with the rows on both
    /// sides of it, when they are not all alike.
    fn tie_group_across(&self, cut: usize) -> Option<std::ops::Range<usize>> {
        if cut == 0 || cut >= self.rows.len() || !self.same_keys(cut - 1, cut) {
            return None;
        }
        let mut start = cut - 1;
        while start > 0 && self.same_keys(start - 1, cut) {
            start -= 1;
        }
        let mut end = cut + 1;
        while end < self.rows.len() && self.same_keys(end, cut) {
            end += 1;
        }
        let differing = (start..end).find(|&i| !self.same_visible(i, start))?;
        Some(start..differing.max(cut) + 1)
    }

    fn show_keys(&self, row: usize) -> String {
        let keys: Vec<String> = self
            .keys
            .iter()
            .map(|&k| py_str(&self.rows[row][k]).into_owned())
            .collect();
        keys.join(", ")
    }

    fn show_pair(&self, a: usize, b: usize) -> String {
        format!("{} / {}", self.show_row(a), self.show_row(b))
    }

    fn show_row(&self, row: usize) -> String {
        let cells: Vec<String> = self.rows[row][..self.visible]
            .iter()
            .map(|v| py_str(v).into_owned())
            .collect();
        format!("({})", cells.join(", "))
    }
}

fn probe(mut query: Query) -> Option<OrderProbe> {
    let order_by = query.order_by.take()?;
    let OrderByKind::Expressions(exprs) = &order_by.kind else {
        return None;
    };
    if exprs.is_empty() || query.fetch.is_some() {
        return None;
    }
    let (limit, offset) = match query.limit_clause.take() {
        None => (None, 0),
        Some(LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) if limit_by.is_empty() => (
            match limit {
                Some(expr) => Some(literal(&expr)?),
                None => None,
            },
            match offset {
                Some(offset) => literal(&offset.value)?,
                None => 0,
            },
        ),
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
            (Some(literal(&limit)?), literal(&offset)?)
        }
        Some(_) => return None,
    };
    let key_exprs: Vec<Expr> = exprs.iter().map(|e| e.expr.clone()).collect();
    let (keys, appended) = locate_keys(&mut query.body, &key_exprs)?;
    let order_text = order_by.to_string();
    query.order_by = Some(order_by);
    Some(OrderProbe {
        sql: query.to_string(),
        keys,
        appended,
        offset,
        limit,
        order_by: order_text,
    })
}

/// Where each key is in the probe's rows, and how many were appended to the outer SELECT.
fn locate_keys(body: &mut SetExpr, keys: &[Expr]) -> Option<(Vec<KeyColumn>, usize)> {
    match body {
        SetExpr::Select(select) => {
            let projection = &mut select.projection;
            let wildcard = projection.iter().any(|item| {
                matches!(
                    item,
                    SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
                )
            });
            let mut appended = Vec::new();
            let mut located = Vec::new();
            for key in keys {
                let column = if let Some(position) = literal(key) {
                    if wildcard || position == 0 || position > projection.len() {
                        return None;
                    }
                    KeyColumn::Visible(position - 1)
                } else if let Some(i) = projection
                    .iter()
                    .position(|item| !wildcard && returns(item, key))
                {
                    KeyColumn::Visible(i)
                } else if select.distinct.is_some() {
                    // Another column would change which rows are distinct.
                    return None;
                } else {
                    appended.push(key.clone());
                    KeyColumn::Appended(appended.len() - 1)
                };
                located.push(column);
            }
            let count = appended.len();
            for (j, expr) in appended.into_iter().enumerate() {
                projection.push(SelectItem::ExprWithAlias {
                    expr,
                    alias: Ident::new(format!("sqlgate_order_key_{j}")),
                });
            }
            Some((located, count))
        }
        SetExpr::SetOperation { .. } => {
            let located = keys
                .iter()
                .map(|key| match key {
                    Expr::Identifier(ident) => Some(KeyColumn::Named(ident.value.clone())),
                    _ => match literal(key)? {
                        0 => None,
                        position => Some(KeyColumn::Visible(position - 1)),
                    },
                })
                .collect::<Option<Vec<_>>>()?;
            Some((located, 0))
        }
        _ => None,
    }
}

/// Whether the SELECT item returns the ORDER BY key: the same expression, its alias, or the
/// column a bare name refers to.
fn returns(item: &SelectItem, key: &Expr) -> bool {
    let (expr, alias) = match item {
        SelectItem::UnnamedExpr(expr) => (expr, None),
        SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias)),
        _ => return false,
    };
    if expr == key {
        return true;
    }
    let Expr::Identifier(name) = key else {
        return false;
    };
    match (alias, expr) {
        (Some(alias), _) => alias.value.eq_ignore_ascii_case(&name.value),
        (None, Expr::CompoundIdentifier(parts)) => parts
            .last()
            .is_some_and(|last| last.value.eq_ignore_ascii_case(&name.value)),
        _ => false,
    }
}

/// A non-negative integer literal.
fn literal(expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Value(value) => match &value.value {
            SqlValue::Number(text, _) => text.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::testkit::{i, named, t, SqliteRunner, TestCase};
    use super::super::{Mode, Verdict};
    use super::{OrderProbe, MAX_RESOLUTIONS};
    use crate::exec::{ResultSet, Value};

    /// The answers of `sql` given its probe's rows `(name, score)`, as lists of names.
    fn answers(sql: &str, rows: &[(&str, i64)], max: usize) -> Option<Vec<Vec<String>>> {
        let probe = OrderProbe::of(sql).unwrap();
        let result = named(
            &["name", "sqlgate_order_key_0"],
            rows.iter().map(|(n, s)| vec![t(n), i(*s)]).collect(),
        );
        let found = probe.resolutions(&result, max)?;
        Some(found.iter().map(names).collect())
    }

    fn names(result: &ResultSet) -> Vec<String> {
        assert_eq!(result.columns, ["name"]);
        result
            .rows
            .iter()
            .map(|row| match &row[..] {
                [Value::Text(name)] => name.clone(),
                other => panic!("not a name: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_limit_through_a_tie_may_keep_any_tied_row_and_nothing_else() {
        let top = "SELECT name FROM t ORDER BY score DESC LIMIT 1";
        assert_eq!(
            answers(top, &[("a", 3), ("b", 3), ("c", 1)], 64).unwrap(),
            [["a"], ["b"]]
        );
        // Rows before the tie stay; the cut takes one of the tied rows.
        let two = "SELECT name FROM t ORDER BY score DESC LIMIT 2";
        assert_eq!(
            answers(two, &[("a", 3), ("b", 2), ("c", 2), ("d", 1)], 64).unwrap(),
            [["a", "b"], ["a", "c"]]
        );
        // No tie at the cut: one answer, whatever ties after it.
        assert_eq!(
            answers(two, &[("a", 3), ("b", 2), ("c", 1), ("d", 1)], 64).unwrap(),
            [["a", "b"]]
        );
        // The offset cut counts too.
        let offset = "SELECT name FROM t ORDER BY score DESC LIMIT 1 OFFSET 1";
        assert_eq!(
            answers(offset, &[("a", 3), ("b", 3), ("c", 1)], 64).unwrap(),
            [["b"], ["a"]]
        );
    }

    #[test]
    fn tied_rows_come_in_any_order_and_equal_rows_once() {
        let all = "SELECT name FROM t ORDER BY score";
        assert_eq!(
            answers(all, &[("a", 1), ("b", 1), ("c", 2)], 64).unwrap(),
            [["a", "b", "c"], ["b", "a", "c"]]
        );
        // Two equal rows are one answer, in either order.
        assert_eq!(
            answers(all, &[("a", 1), ("a", 1), ("c", 2)], 64).unwrap(),
            [["a", "a", "c"]]
        );
        // Three tied rows: 3! orders.
        assert_eq!(
            answers(all, &[("a", 1), ("b", 1), ("c", 1)], 64)
                .unwrap()
                .len(),
            6
        );
        assert_eq!(answers(all, &[("a", 1), ("b", 1), ("c", 1)], 5), None);
    }

    #[test]
    fn answers_holding_too_many_rows_together_are_refused() {
        // 60,000 rows before a two-way tie at the cut: two answers of 60,001 rows each.
        let names: Vec<String> = (0..60_002).map(|n| format!("n{n}")).collect();
        let mut rows: Vec<(&str, i64)> = names.iter().map(|n| (n.as_str(), 9)).collect();
        for (k, row) in rows.iter_mut().enumerate() {
            row.1 = if k < 60_000 { 100_000 - k as i64 } else { 1 };
        }
        let long = "SELECT name FROM t ORDER BY score DESC LIMIT 60001";
        assert_eq!(answers(long, &rows, 64), None);
        // Without the tie, the one answer is the gold's own result, however long.
        rows.pop();
        assert_eq!(answers(long, &rows, 64).unwrap().len(), 1);
    }

    #[test]
    fn limits_past_the_largest_number_do_not_overflow() {
        let huge = format!(
            "SELECT name FROM t ORDER BY score LIMIT {} OFFSET 2",
            usize::MAX
        );
        let probe = OrderProbe::of(&huge).unwrap();
        let result = named(
            &["name", "sqlgate_order_key_0"],
            vec![vec![t("a"), i(1)], vec![t("b"), i(1)], vec![t("c"), i(1)]],
        );
        assert!(probe.cut_through_ties(&result).is_some());
        assert_eq!(probe.partial_order(&result), None);
        // OFFSET 2 cuts through the three tied rows: any of them can come third.
        assert_eq!(probe.resolutions(&result, 64).unwrap().len(), 3);
    }

    #[test]
    fn more_answers_than_tried_are_refused() {
        let names: Vec<String> = (0..=MAX_RESOLUTIONS).map(|n| format!("n{n}")).collect();
        let rows: Vec<(&str, i64)> = names.iter().map(|n| (n.as_str(), 7)).collect();
        let top = "SELECT name FROM t ORDER BY score DESC LIMIT 1";
        assert_eq!(
            answers(top, &rows[..MAX_RESOLUTIONS], MAX_RESOLUTIONS)
                .unwrap()
                .len(),
            MAX_RESOLUTIONS
        );
        assert_eq!(answers(top, &rows, MAX_RESOLUTIONS), None);
    }

    fn database(dir: &Path, name: &str, rows: &str) -> PathBuf {
        let path = dir.join(name);
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(&format!(
                "CREATE TABLE t(name TEXT, score INTEGER); INSERT INTO t VALUES {rows};"
            ))
            .unwrap();
        path
    }

    #[test]
    fn on_a_tied_database_any_answer_the_ties_allow_is_right_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let original = database(dir.path(), "shop.sqlite", "('a', 3), ('b', 1)");
        let tied = database(dir.path(), "shop_1.sqlite", "('c', 5), ('d', 5), ('e', 1)");
        let mut case = TestCase::new("SELECT name FROM t ORDER BY score DESC LIMIT 1");
        case.db_files = vec![original, tied.clone()];
        let either = [
            "SELECT name FROM t ORDER BY score DESC, name LIMIT 1",
            "SELECT name FROM t ORDER BY score DESC, name DESC LIMIT 1",
        ];
        let wrong = [
            // Every top row: two rows where the gold gives one.
            "SELECT name FROM t WHERE score = (SELECT max(score) FROM t)",
            "SELECT name FROM t ORDER BY score DESC LIMIT 2",
            "SELECT name FROM t ORDER BY score LIMIT 1",
        ];
        for mode in [
            Mode::Testsuite,
            Mode::Bird,
            Mode::Spider2,
            Mode::Defog,
            Mode::DefogExact,
        ] {
            // Judged by the engine's one answer, one of the two tie-breaks fails.
            case.tied = Vec::new();
            let plain: Vec<Verdict> = either
                .iter()
                .map(|pred| case.run(mode, pred, &SqliteRunner).verdict)
                .collect();
            assert!(plain.contains(&Verdict::Incorrect), "{mode:?}: {plain:?}");
            case.tied = vec![tied.clone()];
            for pred in either {
                let outcome = case.run(mode, pred, &SqliteRunner);
                assert_eq!(outcome.verdict, Verdict::Correct, "{mode:?}: {pred}");
            }
            for pred in wrong {
                let outcome = case.run(mode, pred, &SqliteRunner);
                assert_eq!(outcome.verdict, Verdict::Incorrect, "{mode:?}: {pred}");
            }
            let outcome = case.run(mode, wrong[0], &SqliteRunner);
            assert_eq!(
                outcome.failed_on.as_deref(),
                Some("shop_1.sqlite"),
                "{mode:?}"
            );
        }
    }

    fn probe_sql(sql: &str) -> Option<String> {
        OrderProbe::of(sql).map(|probe| probe.sql)
    }

    #[test]
    fn only_the_outer_limit_goes_and_missing_keys_are_appended() {
        assert_eq!(
            probe_sql(
                "SELECT name FROM t WHERE s IN (SELECT s FROM t ORDER BY s LIMIT 1) \
                 ORDER BY s DESC LIMIT 3 OFFSET 1"
            )
            .as_deref(),
            Some(
                "SELECT name, s AS sqlgate_order_key_0 FROM t WHERE s IN (SELECT s FROM t \
                 ORDER BY s LIMIT 1) ORDER BY s DESC"
            )
        );
    }

    #[test]
    fn keys_the_query_returns_are_read_from_its_columns() {
        for sql in [
            "SELECT name, count(*) FROM t GROUP BY name ORDER BY count(*) DESC LIMIT 1",
            "SELECT name, count(*) AS n FROM t GROUP BY name ORDER BY n DESC LIMIT 1",
            "SELECT name, count(*) FROM t GROUP BY name ORDER BY 2 DESC LIMIT 1",
            "SELECT DISTINCT t.name FROM t ORDER BY name LIMIT 1",
        ] {
            let probe = OrderProbe::of(sql).unwrap_or_else(|| panic!("no probe: {sql}"));
            assert_eq!(probe.appended, 0, "{sql}");
            assert!(!probe.sql.contains("LIMIT"), "{}", probe.sql);
        }
    }

    #[test]
    fn unreadable_orders_give_no_probe() {
        for sql in [
            "SELECT name FROM t",
            "SELECT DISTINCT name FROM t ORDER BY s LIMIT 1",
            "SELECT * FROM t ORDER BY 2 LIMIT 1",
            "SELECT name FROM t ORDER BY s LIMIT (SELECT 1)",
            "SELECT a FROM t UNION SELECT b FROM u ORDER BY lower(a) LIMIT 1",
        ] {
            assert_eq!(OrderProbe::of(sql), None, "{sql}");
        }
    }
}
