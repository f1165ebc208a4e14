//! Enhanced Tree Matching (ETM, `etm.md` §2-§7): two queries match when their trees are equal
//! after normalisation rules 100-108 and equivalence rules 1-26 reach a fixpoint.
//!
//! For one pair: both strings are preprocessed (§3.1), both must be planned by the run's
//! engine through its query runner (`EXPLAIN QUERY PLAN` on SQLite, `EXPLAIN` on PostgreSQL),
//! both are parsed with sqlparser (SQLite dialect) and lowered to the ETM tree (`tree`),
//! normalised independently with the database's schema facts (`facts`), and
//! compared. Every verdict explains itself: the rules that fired on each side, where the
//! harness departed from the reference (a guard or a defect it does not share), the
//! normalised queries, and for a mismatch the first differing subtree.
//!
//! `compat` (`--etm-compat`) turns the guards off and keeps the reference's traversal quirks.

mod engine;
mod equivalences;
mod facts;
mod lower;
mod normalize;
mod rewrite;
#[cfg(test)]
mod rule_tests;
mod sets;
#[cfg(test)]
mod tests;
mod tree;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use regex::Regex;
use serde::Serialize;
use sqlparser::ast::Statement;
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

use crate::exec::{Feature, QueryRunner};
use crate::sqltext;

pub use facts::Facts;
pub use rewrite::Departure;
use rewrite::{Cx, DerivedFacts, RuleError, Trace};
use tree::{Field, Node};

/// How a pair was decided, as the reference data names it (`etm_status`) plus the harness's
/// own failure kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The normalised trees are equal.
    Match,
    /// The normalised trees differ.
    Nomatch,
    /// The gold query cannot be planned on the database (`EXPLAIN QUERY PLAN`, `EXPLAIN`).
    InvalidGold,
    /// The prediction cannot be planned on the database (`EXPLAIN QUERY PLAN`, `EXPLAIN`).
    InvalidPred,
    /// The gold query does not parse, or is too long or deep to parse.
    GoldUnparsed,
    /// The prediction does not parse, or is too long or deep to parse.
    PredUnparsed,
    /// The fixpoint bound was reached (`etm_no_fixpoint`).
    NoFixpoint,
    /// A rule failed the pair, as an exception does in the reference (`etm_internal_error`).
    InternalError,
}

/// What one side went through.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Side {
    /// Rules that rewrote the tree, ascending (`0` is the cleanup).
    pub rules_fired: Vec<u16>,
    /// Where the harness departed from the reference on this side.
    pub departures: Vec<Departure>,
    /// The normalised query, rendered for reading.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub normalised: Option<String>,
}

/// The first place where the normalised trees differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// Field names from the root, e.g. `where.this.expression`.
    pub path: String,
    /// The gold side's subtree there, rendered as SQL.
    pub gold: String,
    /// The prediction's subtree there, rendered as SQL.
    pub pred: String,
}

/// The ETM outcome of one pair, with what explains it.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// Whether the pair matches (status `match`).
    pub etm: bool,
    /// How the pair was decided.
    pub status: Status,
    /// What normalisation did to the gold query.
    pub gold: Side,
    /// What normalisation did to the prediction.
    pub pred: Side,
    /// For a mismatch, the first differing subtree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difference: Option<Difference>,
    /// The planner's or parser's message for invalid and unparsed pairs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Verdict {
    fn failed(status: Status, message: String) -> Verdict {
        Verdict {
            etm: false,
            status,
            gold: Side::default(),
            pred: Side::default(),
            difference: None,
            message: Some(message),
        }
    }

    /// Whether the harness departed from the reference on this pair.
    pub fn departed(&self) -> bool {
        !self.gold.departures.is_empty() || !self.pred.departures.is_empty()
    }

    /// One line for a failure message.
    pub fn explain(&self) -> String {
        let mut text = match (&self.difference, &self.message) {
            (Some(d), _) => format!(
                "ETM: trees differ at {}: gold `{}`, predicted `{}`",
                d.path, d.gold, d.pred
            ),
            (None, Some(message)) => format!("ETM: {:?}: {message}", self.status),
            (None, None) => format!("ETM: {:?}", self.status),
        };
        for (side, data) in [("gold", &self.gold), ("predicted", &self.pred)] {
            if !data.rules_fired.is_empty() {
                let rules: Vec<String> = data.rules_fired.iter().map(u16::to_string).collect();
                text.push_str(&format!("; rules on {side}: {}", rules.join(",")));
            }
        }
        text
    }
}

/// The database of a pair cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the database {}: {message}", path.display())]
pub struct EtmError {
    /// The database: a file, or a server database's name.
    pub path: PathBuf,
    /// The engine's message.
    pub message: String,
}

/// Scores pairs. Each database's schema facts are read once; queries are planned through the
/// run's query runner, on its engine. One evaluator serves the databases of one engine.
#[derive(serde::Serialize)]
pub struct Evaluator {
    compat: bool,
    #[serde(skip)]
    facts: Mutex<HashMap<PathBuf, Arc<Facts>>>,
}

impl Evaluator {
    /// An evaluator; `compat` behaves like the reference (`--etm-compat`: no guards).
    pub fn new(compat: bool) -> Evaluator {
        Evaluator {
            compat,
            facts: Mutex::new(HashMap::new()),
        }
    }

    fn facts(&self, runner: &dyn QueryRunner, db: &Path) -> Result<Arc<Facts>, EtmError> {
        if let Some(found) = self.cached_facts().get(db) {
            return Ok(Arc::clone(found));
        }
        // Read without the lock: other threads go on scoring pairs on other databases.
        let facts = Arc::new(Facts::read(runner, db).map_err(|error| EtmError {
            path: db.to_path_buf(),
            message: error.message,
        })?);
        self.cached_facts()
            .insert(db.to_path_buf(), Arc::clone(&facts));
        Ok(facts)
    }

    fn cached_facts(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Arc<Facts>>> {
        self.facts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// ETM of one pair on the database `db`, its queries run by `runner`.
    /// A query too long or too deep to parse safely ([`sqltext::check`]) is unparsed, before
    /// anything else reads it.
    pub fn score(
        &self,
        gold: &str,
        pred: &str,
        db: &Path,
        runner: &dyn QueryRunner,
    ) -> Result<Verdict, EtmError> {
        let depth = match checked_depth(gold, pred) {
            Ok(depth) => depth,
            Err((status, message)) => return Ok(Verdict::failed(status, message)),
        };
        let facts = self.facts(runner, db)?;
        let gold = preprocess(gold, &facts);
        let pred = preprocess(pred, &facts);
        let driver = runner.driver();
        let (Some(explain_gold), Some(explain_pred)) =
            (driver.explain(&gold), driver.explain(&pred))
        else {
            return Err(EtmError {
                path: db.to_path_buf(),
                message: driver.unsupported(Feature::Explain).to_string(),
            });
        };
        if let Err(error) = runner.gold(db, &explain_gold).result {
            return Ok(Verdict::failed(Status::InvalidGold, error.message));
        }
        if let Err(error) = runner.pred(db, &explain_pred).result {
            return Ok(Verdict::failed(Status::InvalidPred, error.message));
        }
        Ok(
            sqltext::run(depth, || compare(&gold, &pred, &facts, self.compat))
                .unwrap_or_else(|error| Verdict::failed(Status::InternalError, error.to_string())),
        )
    }
}

/// Step 1: backticks become double quotes; a double-quoted word that names no table or
/// column of this database becomes a string literal; `datetime()` means now.
///
/// The reference replaces each such `"word"` everywhere in the text, one word after the other:
/// quadratic in a long query. When no quoted stretch the scan skipped (`"a" b "c"` skips
/// `" b "`) holds one of those words and none holds `'`, that replaces exactly the quoted words
/// the scan found, so one pass does it; otherwise the reference's loop runs.
pub fn preprocess(sql: &str, facts: &Facts) -> String {
    static QUOTED: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r#""([^"]+)""#).expect("valid pattern"));
    static DATETIME: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"(?i)\bdatetime\(\)").expect("valid pattern"));
    let text = sql.replace('`', "\"");
    let literal = |word: &str| !facts.knows_name(&word.to_lowercase());
    let words: HashSet<&str> = QUOTED
        .captures_iter(&text)
        .filter_map(|c| c.get(1).map(|m| m.as_str()))
        .filter(|word| literal(word))
        .collect();
    let one_pass = !words.iter().any(|word| word.contains('\''))
        && skipped_stretches(&text, &QUOTED).all(|stretch| !words.contains(stretch));
    let text = if one_pass {
        QUOTED
            .replace_all(&text, |c: &regex::Captures| match literal(&c[1]) {
                true => format!("'{}'", &c[1]),
                false => c[0].to_string(),
            })
            .into_owned()
    } else {
        let mut order: Vec<&str> = QUOTED
            .captures_iter(&text)
            .filter_map(|c| c.get(1).map(|m| m.as_str()))
            .filter(|word| words.contains(word))
            .collect();
        let mut seen = HashSet::new();
        order.retain(|word| seen.insert(*word));
        let mut out = text.clone();
        for word in order {
            out = out.replace(&format!("\"{word}\""), &format!("'{word}'"));
        }
        out
    };
    DATETIME.replace_all(&text, "datetime('now')").into_owned()
}

/// The text between consecutive double quotes that the scan for `"word"` did not take as a
/// quoted word.
fn skipped_stretches<'a>(text: &'a str, quoted: &Regex) -> impl Iterator<Item = &'a str> {
    let taken: HashSet<usize> = quoted.find_iter(text).map(|m| m.start()).collect();
    let quotes: Vec<usize> = text.match_indices('"').map(|(at, _)| at).collect();
    quotes
        .windows(2)
        .filter(move |pair| !taken.contains(&pair[0]))
        .map(move |pair| &text[pair[0] + 1..pair[1]])
        .collect::<Vec<_>>()
        .into_iter()
}

/// The deeper of the two queries' depths, or why [`sqltext::check`] refuses one.
/// Preprocessing changes no depth: it rewrites only quoted words and `datetime()`.
fn checked_depth(gold: &str, pred: &str) -> Result<usize, (Status, String)> {
    let gold = sqltext::check(gold).map_err(|error| (Status::GoldUnparsed, error.to_string()))?;
    let pred = sqltext::check(pred).map_err(|error| (Status::PredUnparsed, error.to_string()))?;
    Ok(gold.depth.max(pred.depth))
}

/// Steps 3-5 on preprocessed, valid queries.
pub fn compare(gold: &str, pred: &str, facts: &Facts, compat: bool) -> Verdict {
    let gold_tree = match parse(gold) {
        Ok(tree) => tree,
        Err(message) => return Verdict::failed(Status::GoldUnparsed, message),
    };
    let pred_tree = match parse(pred) {
        Ok(tree) => tree,
        Err(message) => return Verdict::failed(Status::PredUnparsed, message),
    };
    let mut cx = Cx {
        facts,
        compat,
        trace: Trace::default(),
        derived: DerivedFacts::default(),
        error: None,
    };
    // Gold first: under compat, facts it derives (D2) apply to the prediction too.
    let gold_result = engine::apply_rules(gold_tree, &mut cx);
    let gold_trace = std::mem::take(&mut cx.trace);
    let pred_result = engine::apply_rules(pred_tree, &mut cx);
    let pred_trace = std::mem::take(&mut cx.trace);
    let side = |trace: &Trace, tree: Option<&Node>| Side {
        rules_fired: trace.fired.iter().copied().collect(),
        departures: trace.departures.iter().cloned().collect(),
        normalised: tree.map(Node::to_sql),
    };
    let (gold_tree, pred_tree) = match (gold_result, pred_result) {
        (Ok(gold), Ok(pred)) => (gold, pred),
        (Err(error), _) | (_, Err(error)) => {
            let message = match error {
                RuleError::SecondMinMax => "rule 10 met a second matching item (D16)",
                RuleError::AliasRecursion => {
                    "rule 106 would replace an alias inside its own expression forever"
                }
            };
            let mut verdict = Verdict::failed(Status::InternalError, message.to_string());
            verdict.gold = side(&gold_trace, None);
            verdict.pred = side(&pred_trace, None);
            return verdict;
        }
    };
    let no_fixpoint = gold_trace.no_fixpoint || pred_trace.no_fixpoint;
    let equal = gold_tree == pred_tree && !no_fixpoint;
    Verdict {
        etm: equal,
        status: match (no_fixpoint, equal) {
            (true, _) => Status::NoFixpoint,
            (false, true) => Status::Match,
            (false, false) => Status::Nomatch,
        },
        difference: (!equal && !no_fixpoint)
            .then(|| first_difference(&gold_tree, &pred_tree, String::new())),
        gold: side(&gold_trace, Some(&gold_tree)),
        pred: side(&pred_trace, Some(&pred_tree)),
        message: no_fixpoint.then(|| "no fixpoint within the round bound".to_string()),
    }
}

/// One statement, a query.
fn parse(sql: &str) -> Result<Node, String> {
    let statements = Parser::parse_sql(&SQLiteDialect {}, sql).map_err(|e| e.to_string())?;
    match statements.as_slice() {
        [Statement::Query(query)] => Ok(lower::query(query)),
        [_] => Err("not a query".to_string()),
        _ => Err(format!("{} statements, expected one", statements.len())),
    }
}

fn key_name(key: tree::Key) -> String {
    format!("{key:?}").to_lowercase()
}

/// The first differing subtree, walking both trees field by field.
fn first_difference(gold: &Node, pred: &Node, path: String) -> Difference {
    let here = |path: &str, gold: String, pred: String| Difference {
        path: if path.is_empty() {
            "query".to_string()
        } else {
            path.to_string()
        },
        gold,
        pred,
    };
    if gold.kind != pred.kind {
        return here(&path, gold.to_sql(), pred.to_sql());
    }
    let mut keys: Vec<tree::Key> = gold
        .fields()
        .iter()
        .chain(pred.fields())
        .map(|(key, _)| *key)
        .collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let (a, b) = (gold.get(key), pred.get(key));
        if a == b {
            continue;
        }
        let child_path = if path.is_empty() {
            key_name(key)
        } else {
            format!("{path}.{}", key_name(key))
        };
        return match (a, b) {
            (Some(Field::Node(a)), Some(Field::Node(b))) => first_difference(a, b, child_path),
            (Some(Field::List(a)), Some(Field::List(b))) if a.len() == b.len() => {
                match a.iter().zip(b).enumerate().find(|(_, (x, y))| x != y) {
                    Some((index, (x, y))) => {
                        first_difference(x, y, format!("{child_path}[{index}]"))
                    }
                    None => here(&child_path, gold.to_sql(), pred.to_sql()),
                }
            }
            _ => here(&child_path, render_field(a), render_field(b)),
        };
    }
    here(&path, gold.to_sql(), pred.to_sql())
}

fn render_field(field: Option<&Field>) -> String {
    match field {
        None => "(none)".to_string(),
        Some(Field::Node(node)) => node.to_sql(),
        Some(Field::List(items)) => items
            .iter()
            .map(Node::to_sql)
            .collect::<Vec<_>>()
            .join(", "),
        Some(Field::Text(text)) => text.clone(),
        Some(Field::Flag(flag)) => flag.to_string(),
    }
}
