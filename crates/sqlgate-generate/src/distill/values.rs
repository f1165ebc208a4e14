//! Value pools: for every column, the values a generated row draws from. From the original's
//! own data when it has rows (a sample of its distinct values, its minimum and maximum); from
//! the declared type, the golds' literals and the questions' quoted words when it has none; in
//! both cases boundary values (0, a negative, the empty string). Pools are small on purpose, so
//! rows share values: duplicates and ties are what separate `COUNT` from `COUNT(DISTINCT)`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ops::ControlFlow;

use rand::seq::SliceRandom;
use rand::{Rng, RngExt};
use rusqlite::types::Value;
use rusqlite::Connection;
use sqlparser::ast::{BinaryOperator, Expr, Visit, Visitor};

use super::facts::Facts;
use crate::mutate::{labelled_stream, parse_query};

/// How many of a column's distinct values a pool keeps.
const SAMPLED_VALUES: usize = 12;

/// The storage class a declared type asks for (SQLite's affinity rules, plus dates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// INT in the type.
    Integer,
    /// REAL, FLOA, DOUB, NUMERIC, DECIMAL.
    Real,
    /// DATE or TIME in the type: ISO text.
    Date,
    /// CHAR, CLOB, TEXT, or anything else.
    Text,
}

impl Kind {
    /// The kind of a declared type.
    pub fn of(decl_type: &str) -> Kind {
        let t = decl_type.to_ascii_uppercase();
        if t.contains("INT") {
            Kind::Integer
        } else if t.contains("DATE") || t.contains("TIME") {
            Kind::Date
        } else if ["REAL", "FLOA", "DOUB", "NUMERIC", "DECIMAL", "NUMBER"]
            .iter()
            .any(|k| t.contains(k))
        {
            Kind::Real
        } else {
            Kind::Text
        }
    }

    /// Values of this kind when nothing else says which: few, so rows share them.
    fn synthetic(self) -> Vec<Value> {
        match self {
            Kind::Integer => (-1..=5).map(Value::Integer).collect(),
            Kind::Real => [-1.5, 0.0, 0.5, 1.0, 2.5, 10.0]
                .into_iter()
                .map(Value::Real)
                .collect(),
            Kind::Date => [
                "2000-01-01",
                "2010-06-15",
                "2010-06-15 12:00:00",
                "2020-12-31",
            ]
            .into_iter()
            .map(|d| Value::Text(d.into()))
            .collect(),
            Kind::Text => ["a", "b", "B", "ab"]
                .into_iter()
                .map(|t| Value::Text(t.into()))
                .collect(),
        }
    }

    /// Boundary values added to every pool of this kind.
    fn boundaries(self) -> Vec<Value> {
        match self {
            Kind::Integer => vec![Value::Integer(0), Value::Integer(-1)],
            Kind::Real => vec![Value::Real(0.0), Value::Real(-1.0)],
            Kind::Date | Kind::Text => vec![Value::Text(String::new())],
        }
    }
}

/// Literals the golds compare with each column name (lowercased), and quoted words of the
/// questions.
#[derive(Debug, Clone, Default)]
pub struct Literals {
    by_column: BTreeMap<String, Vec<Value>>,
    words: Vec<Value>,
}

impl Literals {
    /// The literals of `golds` (those that do not parse give none) and the quoted words of
    /// `questions`.
    pub fn gather<'a>(
        golds: impl IntoIterator<Item = &'a str>,
        questions: impl IntoIterator<Item = &'a str>,
    ) -> Literals {
        let mut literals = Literals::default();
        for gold in golds {
            if let Ok(query) = parse_query(gold) {
                let _ = query.visit(&mut literals);
            }
        }
        for question in questions {
            literals.words.extend(quoted_words(question));
        }
        literals
    }

    /// The literals compared with a column named `column`.
    fn of(&self, column: &str) -> &[Value] {
        self.by_column
            .get(&column.to_lowercase())
            .map_or(&[], Vec::as_slice)
    }

    fn note(&mut self, column: &Expr, literal: &Expr, op: Option<&BinaryOperator>) {
        let Some(name) = column_name(column) else {
            return;
        };
        let Some(value) = literal_value(literal) else {
            return;
        };
        let values = self.by_column.entry(name).or_default();
        // Comparisons also get the values just beside the bound, so each side of it has rows.
        if let (Value::Integer(n), Some(op)) = (&value, op) {
            if !matches!(op, BinaryOperator::Eq | BinaryOperator::NotEq) {
                values.extend([Value::Integer(n - 1), Value::Integer(n + 1)]);
            }
        }
        if let Value::Text(text) = &value {
            // A case variant tells `=` from LIKE.
            values.push(Value::Text(text.to_uppercase()));
        }
        values.push(value);
    }

    fn note_pattern(&mut self, column: &Expr, pattern: &Expr) {
        let (Some(name), Some(Value::Text(pattern))) =
            (column_name(column), literal_value(pattern))
        else {
            return;
        };
        let core: String = pattern
            .chars()
            .filter(|c| !matches!(c, '%' | '_'))
            .collect();
        self.by_column
            .entry(name)
            .or_default()
            .extend([Value::Text(core.clone()), Value::Text(format!("x{core} y"))]);
    }
}

impl Visitor for Literals {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        match expr {
            Expr::BinaryOp { left, op, right } => {
                self.note(left, right, Some(op));
                self.note(right, left, Some(op));
            }
            Expr::Like { expr, pattern, .. } | Expr::ILike { expr, pattern, .. } => {
                self.note_pattern(expr, pattern)
            }
            Expr::InList { expr, list, .. } => {
                for item in list {
                    self.note(expr, item, None);
                }
            }
            Expr::Between {
                expr, low, high, ..
            } => {
                self.note(expr, low, None);
                self.note(expr, high, None);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// The column an expression names, lowercased (`t.col` and `col` both give `col`).
fn column_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Identifier(ident) => Some(ident.value.to_lowercase()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.to_lowercase()),
        Expr::Nested(inner) => column_name(inner),
        _ => None,
    }
}

/// A literal's value (`'x'`, `3`, `-2.5`).
pub(super) fn literal_value(expr: &Expr) -> Option<Value> {
    use sqlparser::ast::Value as Ast;
    match expr {
        Expr::Value(v) => match &v.value {
            Ast::Number(n, _) => number(n),
            Ast::SingleQuotedString(s) | Ast::DoubleQuotedString(s) => Some(Value::Text(s.clone())),
            _ => None,
        },
        Expr::UnaryOp {
            op: sqlparser::ast::UnaryOperator::Minus,
            expr,
        } => match literal_value(expr)? {
            Value::Integer(n) => Some(Value::Integer(-n)),
            Value::Real(x) => Some(Value::Real(-x)),
            _ => None,
        },
        Expr::Nested(inner) => literal_value(inner),
        // Spider writes text as "x", which SQLite reads as a string when no column has that
        // name (and the parser as a quoted identifier).
        Expr::Identifier(ident) if ident.quote_style == Some('"') => {
            Some(Value::Text(ident.value.clone()))
        }
        _ => None,
    }
}

fn number(text: &str) -> Option<Value> {
    text.parse::<i64>()
        .map(Value::Integer)
        .ok()
        .or_else(|| text.parse::<f64>().ok().map(Value::Real))
}

/// Words and numbers a question quotes (`"Paris"`, `'2'`).
fn quoted_words(question: &str) -> Vec<Value> {
    let mut words = Vec::new();
    for quote in ['"', '\''] {
        let parts: Vec<&str> = question.split(quote).collect();
        for inside in parts.iter().skip(1).step_by(2).take(parts.len() / 2) {
            if !inside.is_empty() && inside.len() <= 60 {
                words.push(number(inside).unwrap_or_else(|| Value::Text(inside.to_string())));
            }
        }
    }
    words
}

/// Each column's pool, by lowercased `table.column`.
#[derive(Debug, Clone, Default)]
pub struct Pools {
    by_column: BTreeMap<String, Vec<Value>>,
}

impl Pools {
    /// The pools of every column of the database `conn` (the original), seeded by `seed` and
    /// the database's name.
    pub fn build(
        conn: &Connection,
        facts: &Facts,
        literals: &Literals,
        seed: u64,
        db: &str,
    ) -> Result<Pools, rusqlite::Error> {
        let mut by_column = BTreeMap::new();
        for table in &facts.schema.tables {
            for column in &table.columns {
                let key = format!("{}.{}", table.name, column.name).to_lowercase();
                let kind = Kind::of(&column.decl_type);
                let mut pool = if facts.holds_rows {
                    sampled(conn, &table.name, &column.name, seed, db, &key)?
                } else {
                    let mut pool = kind.synthetic();
                    if kind == Kind::Text {
                        pool.extend(literals.words.iter().cloned());
                    }
                    pool
                };
                pool.extend(kind.boundaries());
                pool.extend(literals.of(&column.name).iter().cloned());
                by_column.insert(key, pool);
            }
        }
        // A literal compared with a child's key is a value its parent's key must hold (an
        // airport code compared through the flights that reference it), and the reverse.
        for key in &facts.schema.foreign_keys {
            let (from, to) = (key.from.key(), key.to.key());
            let shared: Vec<Value> = [&key.from.column, &key.to.column]
                .into_iter()
                .flat_map(|c| literals.of(c).iter().cloned())
                .collect();
            for side in [from, to] {
                if let Some(pool) = by_column.get_mut(&side) {
                    pool.extend(shared.iter().cloned());
                }
            }
        }
        let by_column = by_column
            .into_iter()
            .map(|(key, pool)| (key, distinct(pool)))
            .collect();
        Ok(Pools { by_column })
    }

    /// These pools with every column outside `unique` narrowed to one or two of its values
    /// (drawn from `rng`): rows then share names and amounts, so two ids with the same name,
    /// and groups of several rows, are common.
    pub fn narrowed(&self, unique: &HashSet<String>, most: usize, rng: &mut impl Rng) -> Pools {
        let by_column = self
            .by_column
            .iter()
            .map(|(key, pool)| {
                let mut pool = pool.clone();
                if !unique.contains(key) && pool.len() > 1 {
                    pool.shuffle(rng);
                    pool.truncate(rng.random_range(1..=most));
                }
                (key.clone(), pool)
            })
            .collect();
        Pools { by_column }
    }

    /// The pool of `table.column` (empty for a column the schema does not have).
    pub fn of(&self, table: &str, column: &str) -> &[Value] {
        self.by_column
            .get(&format!("{table}.{column}").to_lowercase())
            .map_or(&[], Vec::as_slice)
    }
}

/// A seeded sample of a column's distinct non-NULL values, with its minimum and maximum.
fn sampled(
    conn: &Connection,
    table: &str,
    column: &str,
    seed: u64,
    db: &str,
    key: &str,
) -> Result<Vec<Value>, rusqlite::Error> {
    let (t, c) = (quoted(table), quoted(column));
    let mut values: Vec<Value> = conn
        .prepare(&format!(
            "SELECT DISTINCT {c} FROM {t} WHERE {c} IS NOT NULL ORDER BY {c} LIMIT 5000"
        ))?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    let extremes: Vec<Value> = conn
        .prepare(&format!(
            "SELECT min({c}), max({c}) FROM {t} WHERE {c} IS NOT NULL"
        ))?
        .query_row([], |row| Ok(vec![row.get(0)?, row.get(1)?]))?;
    let mut rng = labelled_stream(seed, db, &["pool", key]);
    values.shuffle(&mut rng);
    values.truncate(SAMPLED_VALUES);
    values.extend(extremes.into_iter().filter(|v| *v != Value::Null));
    Ok(values)
}

/// The values in first-seen order, each once.
fn distinct(values: Vec<Value>) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    values
        .into_iter()
        .filter(|v| seen.insert(format!("{v:?}")))
        .collect()
}

/// A double-quoted SQLite identifier.
pub(super) fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_of_comparisons_patterns_and_lists_reach_their_columns() {
        let literals = Literals::gather(
            [
                "SELECT name FROM t WHERE t.age > 30 AND city = 'Paris' AND title LIKE '%war%' \
                 AND code IN ('A', 'B') AND country = \"Spain\"",
            ],
            ["How many singers are from \"France\"?"],
        );
        assert_eq!(
            literals.of("age"),
            [Value::Integer(29), Value::Integer(31), Value::Integer(30)]
        );
        assert!(literals.of("city").contains(&Value::Text("Paris".into())));
        assert!(literals.of("city").contains(&Value::Text("PARIS".into())));
        assert!(literals.of("title").contains(&Value::Text("war".into())));
        assert!(literals.of("code").contains(&Value::Text("B".into())));
        assert!(literals
            .of("country")
            .contains(&Value::Text("Spain".into())));
        assert_eq!(literals.words, [Value::Text("France".into())]);
    }

    fn shop() -> (tempfile::TempDir, Facts, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shop.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE item (id INTEGER PRIMARY KEY, price REAL, label TEXT);
             INSERT INTO item VALUES (1, 9.5, 'x'), (2, 20.0, 'y'), (3, 9.5, NULL);",
        )
        .unwrap();
        let facts = Facts::read(&path).unwrap();
        (dir, facts, conn)
    }

    #[test]
    fn pools_hold_the_originals_values_and_boundaries_each_once() {
        let (_dir, facts, conn) = shop();
        let pools = Pools::build(&conn, &facts, &Literals::default(), 1, "shop").unwrap();
        let price = pools.of("item", "price");
        for v in [9.5, 20.0, 0.0, -1.0] {
            assert_eq!(price.iter().filter(|p| **p == Value::Real(v)).count(), 1);
        }
        let label = pools.of("ITEM", "label");
        assert!(label.contains(&Value::Text("x".into())));
        assert!(label.contains(&Value::Text(String::new())));
        assert!(
            !label.contains(&Value::Null),
            "NULLs are the filler's choice"
        );
    }

    #[test]
    fn schema_only_pools_come_from_types_and_literals() {
        let (_dir, mut facts, conn) = shop();
        facts.holds_rows = false;
        let literals = Literals::gather(["SELECT 1 FROM item WHERE label = 'zz'"], ["\"Rome\""]);
        let pools = Pools::build(&conn, &facts, &literals, 1, "shop").unwrap();
        assert!(pools
            .of("item", "label")
            .contains(&Value::Text("zz".into())));
        assert!(pools
            .of("item", "label")
            .contains(&Value::Text("Rome".into())));
        assert!(!pools.of("item", "price").contains(&Value::Real(9.5)));
        assert!(pools.of("item", "id").contains(&Value::Integer(3)));
    }
}
