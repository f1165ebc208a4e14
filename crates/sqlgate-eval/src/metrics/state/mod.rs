//! State cases: the answer is one or more statements (DML, DDL) judged by the state they leave
//! on a scratch copy of the case's database, against the state the gold statements leave on
//! the same database (the way LiveSQLBench's management tasks, BIRD-Interact and Spider 2.0's
//! dbt tasks are judged).
//!
//! Both scripts run after the case's `setup`, each on a scratch copy reset in between
//! ([`crate::exec::Scratch`]). The states are then compared:
//! - by the case's `checks`, queries run on both states and compared under the suite's mode
//!   (as a query case's gold and prediction are);
//! - without checks, by every table or view that either script touched: present or absent,
//!   its columns (name, declared type, NOT NULL, primary key) and its indexes (unique or not,
//!   columns in order, whatever their names), and its rows as multisets (a number compared to
//!   12 significant digits, so `price * 1.1` and `price + price * 0.1` agree).
//!
//! A statement an answer may not run is refused before anything runs ([`script`]); the copy's
//! sandbox keeps the rest out (ATTACH, files, extensions), and the rows one script changes are
//! capped at the suite's `max_rows` (a `DROP TABLE` counts the rows it drops).

pub mod python;
pub mod script;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::exec::{
    Driver, ExecError, ExecErrorKind, Execution, Limits, QueryRunner, ResultSet, Scratch, Value,
};
use crate::metrics::ex::{self, CaseInput, Diagnostic, Mode, ModeOptions, Outcome, Verdict};
use script::{Action, Statement};

/// What a state case adds to a query case: statements run before each script, and the
/// queries that compare the two states.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateTask {
    /// Statements run on the scratch copy before the gold's and before the answer's
    /// (LiveSQLBench's `preprocess_sql`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<String>,
    /// Queries whose results must be equal on both states; empty: the touched tables and
    /// views are compared whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// LiveSQLBench's Python test cases, kept when the suite opts in to running them
    /// ([`python`]): they, not the states, then judge the answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<String>,
}

/// The diagnostic code of a state that differs from the gold's, naming where.
pub const STATE_DIFFERS: &str = "state_differs";

/// The diagnostic code of the digest of the state an answer leaves (what it compares: the
/// checks' results, or the touched objects), 16 hex digits: a snapshot line shows it, so a
/// changed effect shows in the diff even when the answer's text is the same.
pub const STATE_DIGEST: &str = "state";

/// Judges the answer `pred` of a state case against each of its gold scripts: correct when the
/// state it leaves equals one gold's.
pub fn evaluate(
    mode: Mode,
    opts: &ModeOptions,
    case: &CaseInput,
    task: &StateTask,
    pred: &str,
    runner: &dyn QueryRunner,
) -> Outcome {
    let Some(db) = case.db_files.first() else {
        return failed(
            Verdict::GoldError,
            format!("no database file for `{}`", case.db),
        );
    };
    let pred = match script::split(pred) {
        Ok(statements) => statements,
        Err(error) => return failed(Verdict::PredError, error.to_string()),
    };
    let setup = match task
        .setup
        .iter()
        .map(|s| script::split(s))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(setup) => setup.concat(),
        Err(error) => return failed(Verdict::GoldError, format!("setup: {error}")),
    };
    if !task.tests.is_empty() {
        return python::judge(case, db, &setup, &pred, &task.tests, runner);
    }
    let mut first_difference = None;
    let mut digest = None;
    for gold in case.gold {
        let gold = match script::split(gold) {
            Ok(statements) => statements,
            Err(error) => return failed(Verdict::GoldError, error.to_string()),
        };
        let judged = judge(db, &setup, &gold, &pred, task, (mode, opts), runner);
        let (difference, answer_digest) = match judged {
            Ok(judged) => judged,
            Err(failure) => return failure,
        };
        digest.get_or_insert(answer_digest);
        match difference {
            None => {
                first_difference = None;
                break;
            }
            Some(difference) => {
                first_difference.get_or_insert(difference);
            }
        }
    }
    let mut outcome = match first_difference {
        None => Outcome {
            score: 1.0,
            ..failed(Verdict::Correct, String::new())
        },
        Some(difference) => {
            let mut outcome = failed(Verdict::Incorrect, String::new());
            outcome.diagnostics.push(Diagnostic {
                code: STATE_DIFFERS,
                message: difference,
            });
            outcome
        }
    }
    .without_error();
    if let Some(digest) = digest {
        outcome.diagnostics.push(Diagnostic {
            code: STATE_DIGEST,
            message: digest,
        });
    }
    outcome
}

trait WithoutError {
    fn without_error(self) -> Self;
}

impl WithoutError for Outcome {
    fn without_error(mut self) -> Self {
        self.error = None;
        self
    }
}

fn failed(verdict: Verdict, message: String) -> Outcome {
    Outcome {
        verdict,
        score: 0.0,
        exact: None,
        error: Some(format!("{}: {message}", verdict.as_str())),
        diagnostics: Vec::new(),
        failed_on: None,
    }
}

/// Where an answer's state differs from its gold's (the first gold alternative), for a
/// reviewer: the first table or view that differs, with the rows each state holds that the
/// other does not; or the first check whose results differ, with both results whole.
#[derive(Debug, Clone, PartialEq)]
pub struct StateDifference {
    /// What differs: `table orders`, `view v`, `check 2`.
    pub object: String,
    /// The gold's side: column names and rows.
    pub gold: (Vec<String>, Vec<Vec<Value>>),
    /// The answer's side.
    pub answer: (Vec<String>, Vec<Vec<Value>>),
}

/// The first difference between the state `pred` leaves and the gold's, found by running both
/// scripts again (each on a reset scratch copy); `None` when the states are equal or a script
/// fails.
pub fn difference(
    case: &CaseInput,
    task: &StateTask,
    pred: &str,
    runner: &dyn QueryRunner,
) -> Option<StateDifference> {
    let db = case.db_files.first()?;
    let pred = script::split(pred).ok()?;
    let gold = script::split(case.gold.first()?).ok()?;
    let setup = task
        .setup
        .iter()
        .map(|s| script::split(s))
        .collect::<Result<Vec<_>, _>>()
        .ok()?
        .concat();
    let gold_seen = state(db, &setup, &gold, task, &BTreeSet::new(), runner).ok()?;
    let pred_seen = state(db, &setup, &pred, task, &gold_seen.touched, runner).ok()?;
    if !task.checks.is_empty() {
        return gold_seen
            .checks
            .iter()
            .zip(&pred_seen.checks)
            .enumerate()
            .find_map(|(number, (gold, pred))| {
                let (Ok(gold), Ok(pred)) = (&gold.result, &pred.result) else {
                    return None;
                };
                let (gold_only, pred_only) = multiset_difference(&gold.rows, &pred.rows);
                (!gold_only.is_empty() || !pred_only.is_empty()).then(|| StateDifference {
                    object: format!("check {}", number + 1),
                    gold: (gold.columns.clone(), gold.rows.clone()),
                    answer: (pred.columns.clone(), pred.rows.clone()),
                })
            });
    }
    let gold_seen = match pred_seen.touched.is_subset(&gold_seen.touched) {
        true => gold_seen,
        false => {
            let all = &gold_seen.touched | &pred_seen.touched;
            state(db, &setup, &gold, task, &all, runner).ok()?
        }
    };
    let side = |object: &Object| match object {
        Object::Absent => (Vec::new(), Vec::new()),
        Object::Present { rows, .. } => (rows.columns.clone(), rows.rows.clone()),
    };
    pred_seen.objects.iter().find_map(|(name, pred_object)| {
        let gold_object = gold_seen.objects.get(name).unwrap_or(&Object::Absent);
        compare_objects(name, gold_object, pred_object)?;
        let kind = match (gold_object, pred_object) {
            (Object::Present { kind, .. }, _) | (_, Object::Present { kind, .. }) => *kind,
            _ => "table",
        };
        let (gold_columns, gold_rows) = side(gold_object);
        let (pred_columns, pred_rows) = side(pred_object);
        let (gold_only, pred_only) = multiset_difference(&gold_rows, &pred_rows);
        Some(StateDifference {
            object: format!("{kind} {name}"),
            gold: (gold_columns, gold_only),
            answer: (pred_columns, pred_only),
        })
    })
}

/// The rows `a` holds more often than `b`, and those `b` holds more often than `a` (compared
/// as [`ex_value`] shows them).
fn multiset_difference(a: &[Vec<Value>], b: &[Vec<Value>]) -> (Vec<Vec<Value>>, Vec<Vec<Value>>) {
    let key = |row: &Vec<Value>| row.iter().map(ex_value).collect::<Vec<String>>();
    let mut counts: BTreeMap<Vec<String>, i64> = BTreeMap::new();
    for row in a {
        *counts.entry(key(row)).or_default() += 1;
    }
    for row in b {
        *counts.entry(key(row)).or_default() -= 1;
    }
    let mut only = |rows: &[Vec<Value>], sign: i64| {
        rows.iter()
            .filter(|row| match counts.get_mut(&key(row)) {
                Some(count) if *count * sign > 0 => {
                    *count -= sign;
                    true
                }
                _ => false,
            })
            .cloned()
            .collect::<Vec<_>>()
    };
    let a_only = only(a, 1);
    let b_only = only(b, -1);
    (a_only, b_only)
}

/// Which script a failure is of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Gold,
    Pred,
}

impl Side {
    fn failure(self, error: &ExecError) -> Outcome {
        let verdict = match (self, error.kind) {
            (Side::Gold, ExecErrorKind::Timeout) => Verdict::GoldTimeout,
            (Side::Gold, _) => Verdict::GoldError,
            (Side::Pred, ExecErrorKind::Timeout) => Verdict::PredTimeout,
            (Side::Pred, _) => Verdict::PredError,
        };
        failed(verdict, error.message.clone())
    }
}

/// `None` when the two scripts leave equal states, else where they differ first; and the
/// digest of the answer's state.
fn judge(
    db: &Path,
    setup: &[Statement],
    gold: &[Statement],
    pred: &[Statement],
    task: &StateTask,
    mode: (Mode, &ModeOptions),
    runner: &dyn QueryRunner,
) -> Result<(Option<String>, String), Outcome> {
    let gold_state = |objects: &BTreeSet<String>| {
        state(db, setup, gold, task, objects, runner).map_err(|e| Side::Gold.failure(&e))
    };
    let mut gold_seen = gold_state(&BTreeSet::new())?;
    let pred_seen = state(db, setup, pred, task, &gold_seen.touched, runner)
        .map_err(|e| Side::Pred.failure(&e))?;
    let digest = pred_seen.digest();
    if !task.checks.is_empty() {
        let difference = compare_checks(db, task, &gold_seen, &pred_seen, mode, runner);
        return Ok((difference, digest));
    }
    // The answer touched what the gold did not: read those in the gold's state too.
    if !pred_seen.touched.is_subset(&gold_seen.touched) {
        let all = &gold_seen.touched | &pred_seen.touched;
        gold_seen = gold_state(&all)?;
    }
    for (name, pred_object) in &pred_seen.objects {
        let gold_object = gold_seen.objects.get(name).unwrap_or(&Object::Absent);
        if let Some(difference) = compare_objects(name, gold_object, pred_object) {
            return Ok((Some(difference), digest));
        }
    }
    Ok((None, digest))
}

/// What one script left: the objects it (or another script) touched, and the checks' results.
struct Seen {
    touched: BTreeSet<String>,
    objects: BTreeMap<String, Object>,
    checks: Vec<Execution>,
}

impl Seen {
    /// 16 hex digits of SHA-256 over what the state is compared on: each check's rows (or
    /// error), else each object this script touched: its kind, columns, indexes and sorted rows.
    fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        let mut line = |text: &str| {
            hash.update(text.as_bytes());
            hash.update([0]);
        };
        for check in &self.checks {
            match &check.result {
                Ok(rows) => {
                    let mut keys: Vec<String> = rows.rows.iter().map(|r| row_text(r)).collect();
                    keys.sort();
                    keys.iter().for_each(|key| line(key));
                }
                Err(error) => line(&format!("error {:?}", error.kind)),
            }
            line("--");
        }
        // Without checks, the touched objects are what is compared.
        for name in self.touched.iter().filter(|_| self.checks.is_empty()) {
            line(name);
            match self.objects.get(name) {
                None | Some(Object::Absent) => line("absent"),
                Some(Object::Present {
                    kind,
                    columns,
                    indexes,
                    rows,
                }) => {
                    line(kind);
                    columns.iter().chain(indexes).for_each(|text| line(text));
                    let mut keys: Vec<String> = rows.rows.iter().map(|r| row_text(r)).collect();
                    keys.sort();
                    keys.iter().for_each(|key| line(key));
                }
            }
        }
        hash.finalize()[..8]
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// Runs `setup` then `statements` on a scratch copy of `db`, and reads the state: the checks'
/// results, else every object this script touched and those in `also`.
fn state(
    db: &Path,
    setup: &[Statement],
    statements: &[Statement],
    task: &StateTask,
    also: &BTreeSet<String>,
    runner: &dyn QueryRunner,
) -> Result<Seen, ExecError> {
    let (mut scratch, limits) = runner.scratch(db)?;
    apply(&mut *scratch, setup, &limits, "setup")?;
    // What the setup touched is the same on both sides.
    scratch.take_touched()?;
    apply(&mut *scratch, statements, &limits, "statement")?;
    let touched = scratch.take_touched()?;
    if !task.checks.is_empty() {
        let checks = task
            .checks
            .iter()
            .map(|check| scratch.query(check, &limits))
            .collect();
        return Ok(Seen {
            touched,
            objects: BTreeMap::new(),
            checks,
        });
    }
    let names: BTreeSet<String> = &touched | also;
    let objects = describe(&mut *scratch, runner.driver(), &names, &limits)?;
    Ok(Seen {
        touched,
        objects,
        checks: Vec::new(),
    })
}

/// Runs each statement, counting the rows changed against `limits.max_rows`.
fn apply(
    scratch: &mut dyn Scratch,
    statements: &[Statement],
    limits: &Limits,
    what: &str,
) -> Result<(), ExecError> {
    let mut changed: u64 = 0;
    let cap = limits.max_rows as u64;
    let over_cap = || ExecError {
        kind: ExecErrorKind::TooLarge,
        message: format!("the statements change more than {cap} rows"),
    };
    for (number, statement) in statements.iter().enumerate() {
        let at = |error: ExecError| ExecError {
            message: format!("{what} {}: {}", number + 1, error.message),
            ..error
        };
        // A dropped table's rows count, and the drop is refused before it runs.
        if let Action::DropTable(table) = &statement.action {
            let count = scratch
                .query(&format!("SELECT count(*) FROM {table}"), limits)
                .result;
            if let Ok(rows) = count {
                if let Some(Value::Int(n)) = rows.rows.first().and_then(|r| r.first()) {
                    changed = changed.saturating_add((*n).max(0) as u64);
                }
            }
            if changed > cap {
                return Err(at(over_cap()));
            }
        }
        changed = changed.saturating_add(scratch.apply(&statement.text, limits).map_err(at)?);
        if changed > cap {
            return Err(at(over_cap()));
        }
    }
    Ok(())
}

/// A table or view as a state holds it.
#[derive(Debug)]
enum Object {
    Absent,
    Present {
        /// `table` or `view`.
        kind: &'static str,
        /// Each column: name, declared type, NOT NULL, primary key.
        columns: Vec<String>,
        /// Each index: `unique (a, b)` or `(a)`, sorted.
        indexes: Vec<String>,
        rows: Arc<ResultSet>,
    },
}

/// Each of `names` in the copy's current state.
fn describe(
    scratch: &mut dyn Scratch,
    driver: &dyn Driver,
    names: &BTreeSet<String>,
    limits: &Limits,
) -> Result<BTreeMap<String, Object>, ExecError> {
    let catalog = driver.catalog(&mut |sql: &str| {
        scratch
            .query(sql, limits)
            .result
            .map(|set| set.rows.clone())
    })?;
    let mut indexes: HashMap<String, Vec<String>> = HashMap::new();
    if let Some(query) = driver.index_query() {
        for row in &scratch.query(query, limits).result?.rows {
            let text = |i: usize| match row.get(i) {
                Some(Value::Text(text)) => text.clone(),
                Some(other) => ex_value(other),
                None => String::new(),
            };
            let unique = matches!(row.get(1), Some(Value::Int(1)));
            let shown = format!("{}({})", if unique { "unique " } else { "" }, text(2));
            indexes
                .entry(text(0).to_lowercase())
                .or_default()
                .push(shown);
        }
    }
    let mut objects = BTreeMap::new();
    for name in names {
        let table = catalog
            .tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(name));
        let rows = scratch.query(&format!("SELECT * FROM {}", driver.quote(name)), limits);
        let object = match (table, rows.result) {
            (Some(table), Ok(rows)) => {
                let mut table_indexes = indexes.remove(&name.to_lowercase()).unwrap_or_default();
                table_indexes.sort();
                Object::Present {
                    kind: "table",
                    columns: table
                        .columns
                        .iter()
                        .map(|c| {
                            let mut column = format!("{} {}", c.name, c.decl_type.to_uppercase());
                            if c.not_null {
                                column.push_str(" NOT NULL");
                            }
                            if c.primary_key {
                                column.push_str(" PRIMARY KEY");
                            }
                            column.trim().to_string()
                        })
                        .collect(),
                    indexes: table_indexes,
                    rows,
                }
            }
            (None, Ok(rows)) => Object::Present {
                kind: "view",
                columns: rows.columns.clone(),
                indexes: Vec::new(),
                rows,
            },
            (_, Err(error))
                if matches!(error.kind, ExecErrorKind::Prepare | ExecErrorKind::Runtime) =>
            {
                Object::Absent
            }
            (_, Err(error)) => return Err(error),
        };
        objects.insert(name.clone(), object);
    }
    Ok(objects)
}

/// A value as shown in a message, and as compared: a number to 12 significant digits.
fn ex_value(value: &Value) -> String {
    match value {
        Value::Null => "NULL".into(),
        Value::Text(text) => format!("'{}'", text.replace('\'', "''")),
        other => match other.as_f64() {
            Some(number) if number.fract() == 0.0 && number.abs() < 1e15 => {
                format!("{}", number as i64)
            }
            Some(number) => format!("{number:.11e}"),
            None => format!("{other:?}"),
        },
    }
}

fn row_text(row: &[Value]) -> String {
    format!(
        "({})",
        row.iter().map(ex_value).collect::<Vec<_>>().join(", ")
    )
}

/// Where the gold's object and the answer's differ first, if they do.
fn compare_objects(name: &str, gold: &Object, pred: &Object) -> Option<String> {
    match (gold, pred) {
        (Object::Absent, Object::Absent) => None,
        (Object::Absent, Object::Present { kind, .. }) => Some(format!(
            "`{name}`: the answer leaves a {kind} that the gold does not"
        )),
        (Object::Present { kind, .. }, Object::Absent) => Some(format!(
            "`{name}`: the gold leaves a {kind} that the answer does not"
        )),
        (
            Object::Present {
                kind: gold_kind,
                columns: gold_columns,
                indexes: gold_indexes,
                rows: gold_rows,
            },
            Object::Present {
                kind,
                columns,
                indexes,
                rows,
            },
        ) => {
            if gold_kind != kind {
                return Some(format!(
                    "`{name}`: the gold leaves a {gold_kind}, the answer a {kind}"
                ));
            }
            if gold_columns != columns {
                return Some(format!(
                    "{kind} `{name}`: the gold leaves the columns [{}], the answer [{}]",
                    gold_columns.join(", "),
                    columns.join(", ")
                ));
            }
            if gold_indexes != indexes {
                return Some(format!(
                    "table `{name}`: the gold leaves the indexes [{}], the answer [{}]",
                    gold_indexes.join(", "),
                    indexes.join(", ")
                ));
            }
            compare_rows(kind, name, &gold_rows.rows, &rows.rows)
        }
    }
}

/// The first row one multiset holds more often than the other, named.
fn compare_rows(
    kind: &str,
    name: &str,
    gold: &[Vec<Value>],
    pred: &[Vec<Value>],
) -> Option<String> {
    let mut counts: BTreeMap<Vec<String>, (i64, &[Value])> = BTreeMap::new();
    for row in gold {
        let entry = counts
            .entry(row.iter().map(ex_value).collect())
            .or_insert((0, row));
        entry.0 += 1;
    }
    for row in pred {
        let entry = counts
            .entry(row.iter().map(ex_value).collect())
            .or_insert((0, row));
        entry.0 -= 1;
    }
    let (count, row) = counts.values().find(|(count, _)| *count != 0)?;
    let (who, other) = if *count < 0 {
        ("answer", "gold")
    } else {
        ("gold", "answer")
    };
    Some(format!(
        "{kind} `{name}`: the {who} leaves the row {} that the {other} does not ({} rows against {})",
        row_text(row),
        pred.len(),
        gold.len(),
    ))
}

/// Each check's results compared under the suite's mode, through a runner that hands out the
/// results read on each state.
fn compare_checks(
    db: &Path,
    task: &StateTask,
    gold: &Seen,
    pred: &Seen,
    (mode, opts): (Mode, &ModeOptions),
    runner: &dyn QueryRunner,
) -> Option<String> {
    for (number, check) in task.checks.iter().enumerate() {
        let recorded = Recorded {
            sql: check,
            gold: gold.checks[number].clone(),
            pred: pred.checks[number].clone(),
            driver: runner.driver(),
        };
        let gold_sql = [check.clone()];
        let files = [db.to_path_buf()];
        let input = CaseInput {
            gold: &gold_sql,
            question: "",
            category: None,
            db: "",
            db_files: &files,
            tied: &[],
            ignore_order: None,
        };
        let outcome = ex::evaluate(mode, opts, &input, check, &recorded);
        if outcome.verdict != Verdict::Correct {
            let why = outcome
                .error
                .unwrap_or_else(|| "the results differ".to_string());
            return Some(format!("check {} (`{}`): {why}", number + 1, check.trim()));
        }
    }
    None
}

/// The results of one check on the gold's state and on the answer's.
struct Recorded<'a> {
    sql: &'a str,
    gold: Execution,
    pred: Execution,
    driver: &'static dyn Driver,
}

impl Recorded<'_> {
    fn hand_out(&self, sql: &str, execution: &Execution) -> Execution {
        if sql == self.sql {
            return execution.clone();
        }
        Execution {
            result: Err(ExecError {
                kind: ExecErrorKind::Unavailable,
                message: "this mode runs a query besides the check, which a state case cannot"
                    .into(),
            }),
            elapsed: std::time::Duration::ZERO,
        }
    }
}

impl QueryRunner for Recorded<'_> {
    fn gold(&self, _db: &Path, sql: &str) -> Execution {
        self.hand_out(sql, &self.gold)
    }

    fn pred(&self, _db: &Path, sql: &str) -> Execution {
        self.hand_out(sql, &self.pred)
    }

    fn driver(&self) -> &'static dyn Driver {
        self.driver
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(values: &[Value]) -> Vec<Value> {
        values.to_vec()
    }

    #[test]
    fn rows_compare_as_multisets_and_the_first_difference_is_named() {
        let gold = [
            row(&[Value::Int(1), Value::Text("a".into())]),
            row(&[Value::Int(2), Value::Text("b".into())]),
        ];
        let reordered = [gold[1].clone(), gold[0].clone()];
        assert_eq!(compare_rows("table", "t", &gold, &reordered), None);
        let extra = [gold[0].clone(), gold[1].clone(), gold[1].clone()];
        let said = compare_rows("table", "t", &gold, &extra).unwrap();
        assert!(
            said.starts_with(
                "table `t`: the answer leaves the row (2, 'b') that the gold does not"
            ),
            "{said}"
        );
        let said = compare_rows("table", "t", &gold, &gold[..1]).unwrap();
        assert!(said.contains("the gold leaves the row (2, 'b')"), "{said}");
    }

    #[test]
    fn the_rows_each_side_holds_more_often_are_set_apart() {
        let a = [
            row(&[Value::Int(1)]),
            row(&[Value::Int(2)]),
            row(&[Value::Int(2)]),
        ];
        let b = [
            row(&[Value::Int(2)]),
            row(&[Value::Int(3)]),
            row(&[Value::Real(1.0)]),
        ];
        let (a_only, b_only) = multiset_difference(&a, &b);
        assert_eq!(a_only, [row(&[Value::Int(2)])]);
        assert_eq!(b_only, [row(&[Value::Int(3)])]);
        assert_eq!(multiset_difference(&a, &a), (Vec::new(), Vec::new()));
    }

    #[test]
    fn numbers_agree_to_twelve_significant_digits_and_an_integral_real_is_its_integer() {
        let price = 12.5_f64;
        let gold = [row(&[Value::Real(price * 1.1)])];
        let same = [row(&[Value::Real(price + price * 0.1)])];
        assert_ne!(price * 1.1, price + price * 0.1);
        assert_eq!(compare_rows("table", "t", &gold, &same), None);
        assert_eq!(
            compare_rows(
                "table",
                "t",
                &[row(&[Value::Int(3)])],
                &[row(&[Value::Real(3.0)])]
            ),
            None
        );
        assert!(compare_rows("table", "t", &gold, &[row(&[Value::Real(13.76)])]).is_some());
    }

    #[test]
    fn schemas_differ_by_presence_kind_columns_and_indexes() {
        let rows = Arc::new(ResultSet {
            columns: vec!["a".into()],
            rows: Vec::new(),
            lossy_text: false,
        });
        let table = |columns: &[&str], indexes: &[&str]| Object::Present {
            kind: "table",
            columns: columns.iter().map(|c| c.to_string()).collect(),
            indexes: indexes.iter().map(|c| c.to_string()).collect(),
            rows: rows.clone(),
        };
        let base = table(&["a INTEGER"], &["(a)"]);
        assert_eq!(
            compare_objects("t", &base, &table(&["a INTEGER"], &["(a)"])),
            None
        );
        let said = compare_objects("t", &base, &table(&["a TEXT"], &["(a)"])).unwrap();
        assert!(said.contains("[a INTEGER], the answer [a TEXT]"), "{said}");
        let said = compare_objects("t", &base, &table(&["a INTEGER"], &[])).unwrap();
        assert!(said.contains("indexes [(a)], the answer []"), "{said}");
        let said = compare_objects("t", &base, &Object::Absent).unwrap();
        assert!(
            said.contains("the gold leaves a table that the answer does not"),
            "{said}"
        );
    }
}
