//! Value pools: for every column, the values a generated row draws from. From the original's
//! own data when it has rows (a sample of its distinct values, its minimum and maximum); from
//! the declared type, the golds' literals and the questions' quoted words when it has none; in
//! both cases boundary values (0, a negative, the empty string). Pools are small on purpose, so
//! rows share values: duplicates and ties are what separate `COUNT` from `COUNT(DISTINCT)`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ops::ControlFlow;

use rand::seq::SliceRandom;
use rand::{Rng, RngExt};
use sqlgate_eval::exec::{Connection, Driver, ExecError, Limits, Value};
use sqlparser::ast::{BinaryOperator, Expr, Visit, Visitor};

use super::facts::Facts;
use super::fill::sql_order;
use super::sample::Sample;
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
            Kind::Integer => (-1..=5).map(Value::Int).collect(),
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
            // Numbers spelled as text too: schema-only copies declare numbers TEXT (Spider's
            // `Dogs.age`), and an average over them must not be 0 everywhere.
            Kind::Text => ["a", "b", "B", "ab", "3", "12.5"]
                .into_iter()
                .map(|t| Value::Text(t.into()))
                .collect(),
        }
    }

    /// Boundary values added to every pool of this kind.
    fn boundaries(self) -> Vec<Value> {
        match self {
            Kind::Integer => vec![Value::Int(0), Value::Int(-1)],
            Kind::Real => vec![Value::Real(0.0), Value::Real(-1.0)],
            Kind::Date | Kind::Text => vec![Value::Text(String::new())],
        }
    }
}

/// How a column of a declared type holds the values given to it: SQLite's affinity rules, which
/// the other file engines' writers follow in the types they give columns. The filler keeps the
/// rows it wrote as the database holds them (a joined column copies the stored value: `-1.0`
/// given to an integer column is `-1`, and a text column given `-1.0` would hold `'-1.0'`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Affinity {
    /// INT in the type.
    Integer,
    /// CHAR, CLOB or TEXT.
    Text,
    /// BLOB, or no type: values kept as given.
    Blob,
    /// REAL, FLOA or DOUB.
    Real,
    /// Anything else (NUMERIC, DECIMAL, DATE, BOOLEAN).
    Numeric,
}

impl Affinity {
    /// The affinity of a declared type (SQLite's rules, in their order).
    pub fn of(decl_type: &str) -> Affinity {
        let t = decl_type.to_ascii_uppercase();
        let has = |parts: &[&str]| parts.iter().any(|p| t.contains(p));
        if has(&["INT"]) {
            Affinity::Integer
        } else if has(&["CHAR", "CLOB", "TEXT"]) {
            Affinity::Text
        } else if has(&["BLOB"]) || t.trim().is_empty() {
            Affinity::Blob
        } else if has(&["REAL", "FLOA", "DOUB"]) {
            Affinity::Real
        } else {
            Affinity::Numeric
        }
    }

    /// `value` as a column of this affinity holds it.
    pub fn hold(self, value: Value) -> Value {
        match (self, value) {
            (Affinity::Text, Value::Int(n)) => Value::Text(n.to_string()),
            // SQLite writes 15 significant digits; the values distill draws have fewer.
            (Affinity::Text, Value::Real(x)) => Value::Text(format!("{x:?}")),
            (Affinity::Real, Value::Int(n)) => Value::Real(n as f64),
            (Affinity::Real, Value::Text(text)) => match numeric_text(&text) {
                Some(number) => Value::Real(number.as_f64().unwrap_or_default()),
                None => Value::Text(text),
            },
            (Affinity::Integer | Affinity::Numeric, Value::Real(x)) => integral(x),
            (Affinity::Integer | Affinity::Numeric, Value::Text(text)) => {
                match numeric_text(&text) {
                    Some(Value::Real(x)) => integral(x),
                    Some(number) => number,
                    None => Value::Text(text),
                }
            }
            (_, value) => value,
        }
    }
}

/// The number a text spells (surrounding spaces allowed, no hexadecimal, no `inf`).
fn numeric_text(text: &str) -> Option<Value> {
    let t = text.trim_matches(|c: char| c.is_ascii_whitespace());
    let plain = t.bytes().any(|b| b.is_ascii_digit())
        && t.bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
    plain.then(|| number(t)).flatten()
}

/// A real that is an integer as an integer.
fn integral(x: f64) -> Value {
    // 2^63 is the first float past the i64 range.
    if x.fract() == 0.0 && x.abs() < 9_223_372_036_854_775_808.0 {
        Value::Int(x as i64)
    } else {
        Value::Real(x)
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
        if let (Value::Int(n), Some(op)) = (&value, op) {
            if !matches!(op, BinaryOperator::Eq | BinaryOperator::NotEq) {
                values.extend([Value::Int(n - 1), Value::Int(n + 1)]);
            }
        }
        if let Value::Text(text) = &value {
            // Near misses: other cases (tell `=` from LIKE, `'france'` from `'France'`) and
            // other spellings of a truth value (`'Yes'` from `'T'`).
            values.extend(case_variants(text).into_iter().map(Value::Text));
            values.extend(
                truth_spellings(text)
                    .iter()
                    .map(|t| Value::Text(t.to_string())),
            );
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

/// The column an expression names, lowercased (`t.col` and `col` both give `col`), also
/// through an aggregate of it: `avg(LifeExpectancy) > 72` needs values on both sides of 72.
fn column_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Identifier(ident) => Some(ident.value.to_lowercase()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.to_lowercase()),
        Expr::Nested(inner) => column_name(inner),
        Expr::Function(call) => {
            let name = call.name.to_string().to_ascii_lowercase();
            if !["avg", "sum", "min", "max"].contains(&name.as_str()) {
                return None;
            }
            let sqlparser::ast::FunctionArguments::List(list) = &call.args else {
                return None;
            };
            match list.args.as_slice() {
                [sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(
                    arg,
                ))] => column_name(arg),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `text` in upper case, lower case and with only its first letter upper, where they differ
/// from it.
fn case_variants(text: &str) -> Vec<String> {
    let mut title: String = text.chars().take(1).flat_map(char::to_uppercase).collect();
    title.extend(text.chars().skip(1).flat_map(char::to_lowercase));
    let mut variants = vec![text.to_uppercase(), text.to_lowercase(), title];
    variants.sort();
    variants.dedup();
    variants.retain(|v| v != text);
    variants
}

/// The other spellings of the truth value `text` spells (`Yes`, `T`, `true`, `1`...), or none.
fn truth_spellings(text: &str) -> &'static [&'static str] {
    const TRUE: &[&str] = &["Yes", "Y", "T", "true", "1"];
    const FALSE: &[&str] = &["No", "N", "F", "false", "0"];
    let is = |spellings: &[&str]| spellings.iter().any(|s| s.eq_ignore_ascii_case(text));
    if is(TRUE) {
        TRUE
    } else if is(FALSE) {
        FALSE
    } else {
        &[]
    }
}

/// A literal's value (`'x'`, `3`, `-2.5`).
pub(crate) fn literal_value(expr: &Expr) -> Option<Value> {
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
            Value::Int(n) => Some(Value::Int(-n)),
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
        .map(Value::Int)
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
    /// The pools of every column of the database `conn` (the original, on `driver`'s engine),
    /// seeded by `seed` and the database's name. The columns of a table `sample` was drawn
    /// from take their values from the sample, not from a scan of the original.
    pub fn build(
        conn: &mut dyn Connection,
        driver: &dyn Driver,
        facts: &Facts,
        literals: &Literals,
        sample: Option<&Sample>,
        seed: u64,
        db: &str,
    ) -> Result<Pools, ExecError> {
        let mut by_column = BTreeMap::new();
        for (ti, table) in facts.schema.tables.iter().enumerate() {
            let drawn = sample.filter(|sample| sample.drawn(ti));
            for (ci, column) in table.columns.iter().enumerate() {
                let key = format!("{}.{}", table.name, column.name).to_lowercase();
                let kind = Kind::of(&column.decl_type);
                let mut pool = if let Some(sample) = drawn {
                    let mut values: Vec<Value> = sample
                        .column(ti, ci)
                        .filter(|v| **v != Value::Null)
                        .cloned()
                        .collect();
                    values.sort_by(sql_order);
                    values.dedup();
                    let extremes = [values.first(), values.last()]
                        .into_iter()
                        .flatten()
                        .cloned()
                        .collect();
                    picked(values, extremes, seed, db, &key)
                } else if facts.holds_rows {
                    let (t, c) = (driver.quote(&table.name), driver.quote(&column.name));
                    sampled(conn, &t, &c, seed, db, &key)?
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

/// A seeded sample of the distinct non-NULL values of the quoted column `c` of the quoted
/// table `t`, with its minimum and maximum. Ordering is asked of the engine, not MIN and MAX,
/// which not every type has (PostgreSQL's `boolean`); a type without an order either (`json`)
/// gives a sample of its first values, without extremes.
fn sampled(
    conn: &mut dyn Connection,
    t: &str,
    c: &str,
    seed: u64,
    db: &str,
    key: &str,
) -> Result<Vec<Value>, ExecError> {
    let limits = Limits::default();
    let mut column = |sql: String| -> Result<Vec<Value>, ExecError> {
        let set = conn.execute(&sql, &limits).result?;
        Ok(set
            .rows
            .iter()
            .filter_map(|row| row.first().cloned())
            .collect())
    };
    let non_null = format!("FROM {t} WHERE {c} IS NOT NULL");
    let ordered = column(format!(
        "SELECT DISTINCT {c} {non_null} ORDER BY {c} LIMIT 5000"
    ))
    .and_then(|values| {
        let last = column(format!("SELECT {c} {non_null} ORDER BY {c} DESC LIMIT 1"))?;
        Ok((values, last))
    });
    let (values, extremes) = match ordered {
        Ok((values, last)) => {
            let extremes: Vec<Value> = values.first().cloned().into_iter().chain(last).collect();
            (values, extremes)
        }
        Err(_) => (
            column(format!("SELECT {c} {non_null} LIMIT 5000"))?,
            Vec::new(),
        ),
    };
    Ok(picked(values, extremes, seed, db, key))
}

/// A seeded draw of [`SAMPLED_VALUES`] of `values`, then `extremes`.
fn picked(
    mut values: Vec<Value>,
    extremes: Vec<Value>,
    seed: u64,
    db: &str,
    key: &str,
) -> Vec<Value> {
    let mut rng = labelled_stream(seed, db, &["pool", key]);
    values.shuffle(&mut rng);
    values.truncate(SAMPLED_VALUES);
    values.extend(extremes);
    values
}

/// The values in first-seen order, each once.
fn distinct(values: Vec<Value>) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    values
        .into_iter()
        .filter(|v| seen.insert(format!("{v:?}")))
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
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
            [Value::Int(29), Value::Int(31), Value::Int(30)]
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

    #[test]
    fn near_misses_of_literals_and_bounds_of_aggregates_reach_their_columns() {
        let literals = Literals::gather(
            [
                "SELECT g FROM country WHERE continent = 'north america' AND official = 'T' \
                 GROUP BY g HAVING avg(LifeExpectancy) > 72 AND count(*) > 2",
            ],
            [],
        );
        let text = |t: &str| Value::Text(t.into());
        for variant in ["north america", "North america", "NORTH AMERICA"] {
            assert!(
                literals.of("continent").contains(&text(variant)),
                "{variant}"
            );
        }
        for spelling in ["T", "Yes", "true", "1"] {
            assert!(
                literals.of("official").contains(&text(spelling)),
                "{spelling}"
            );
        }
        assert!(!literals.of("official").contains(&text("No")));
        assert_eq!(
            literals.of("lifeexpectancy"),
            [Value::Int(71), Value::Int(73), Value::Int(72)]
        );
    }

    /// The pools of the SQLite file `path`, read through the engine.
    pub(in crate::distill) fn pools_of(
        path: &std::path::Path,
        facts: &Facts,
        literals: &Literals,
        seed: u64,
        db: &str,
    ) -> Pools {
        let backend = sqlgate_engine_sqlite::files();
        let open = sqlgate_eval::exec::Open::for_source(sqlgate_eval::exec::Source::Gold);
        let mut conn = backend.open(path, open).unwrap();
        Pools::build(
            &mut *conn,
            backend.driver(),
            facts,
            literals,
            None,
            seed,
            db,
        )
        .unwrap()
    }

    fn shop() -> (tempfile::TempDir, Facts, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shop.sqlite");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE item (id INTEGER PRIMARY KEY, price REAL, label TEXT);
             INSERT INTO item VALUES (1, 9.5, 'x'), (2, 20.0, 'y'), (3, 9.5, NULL);",
        )
        .unwrap();
        let facts = Facts::read(&*sqlgate_engine_sqlite::files(), &path).unwrap();
        (dir, facts, path)
    }

    #[test]
    fn pools_hold_the_originals_values_and_boundaries_each_once() {
        let (_dir, facts, path) = shop();
        let pools = pools_of(&path, &facts, &Literals::default(), 1, "shop");
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
        let (_dir, mut facts, path) = shop();
        facts.holds_rows = false;
        let literals = Literals::gather(["SELECT 1 FROM item WHERE label = 'zz'"], ["\"Rome\""]);
        let pools = pools_of(&path, &facts, &literals, 1, "shop");
        assert!(pools
            .of("item", "label")
            .contains(&Value::Text("zz".into())));
        assert!(pools
            .of("item", "label")
            .contains(&Value::Text("Rome".into())));
        assert!(!pools.of("item", "price").contains(&Value::Real(9.5)));
        assert!(pools.of("item", "id").contains(&Value::Int(3)));
    }

    #[test]
    fn values_are_kept_as_a_column_of_their_declared_type_holds_them() {
        let int = Affinity::of("INTEGER");
        assert_eq!(int.hold(Value::Real(-1.0)), Value::Int(-1));
        assert!(matches!(int.hold(Value::Text(" 7 ".into())), Value::Int(7)));
        assert!(matches!(int.hold(Value::Real(2.5)), Value::Real(_)));
        assert!(matches!(
            int.hold(Value::Text("inf".into())),
            Value::Text(_)
        ));
        let text = Affinity::of("varchar(20)");
        assert!(matches!(text.hold(Value::Real(-1.0)), Value::Text(t) if t == "-1.0"));
        assert!(matches!(text.hold(Value::Int(3)), Value::Text(t) if t == "3"));
        let real = Affinity::of("DOUBLE");
        assert!(matches!(real.hold(Value::Int(3)), Value::Real(x) if x == 3.0));
        assert!(matches!(
            Affinity::of("DATE").hold(Value::Text("2000-01-01".into())),
            Value::Text(_)
        ));
        assert!(matches!(
            Affinity::of("").hold(Value::Real(1.0)),
            Value::Real(_)
        ));
    }
}
