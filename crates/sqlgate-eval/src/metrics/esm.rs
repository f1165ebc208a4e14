//! Spider Exact Set Match (ESM): the `--etype match` verdict of the test-suite evaluator
//! (`taoyds/test-suite-sql-eval`, `evaluation.py`), as specified in `etm.md` §8.
//!
//! For one pair, both queries are parsed with the Spider parser ([`crate::spider`]); a
//! prediction that fails to parse becomes the empty query. Both are then [`rebuild`]-ed (values
//! and DISTINCT dropped, foreign keys mapped to one column per cluster) and compared component
//! by component ([`partial_scores`]) and by their FROM tables ([`exact_match`]).
//!
//! The reference's reach is kept, because verdicts depend on it:
//! - values are dropped in ON/WHERE/HAVING and, recursively, in their subqueries and compound
//!   parts, but not in FROM subqueries;
//! - DISTINCT and foreign keys are rebuilt in the query and its compound parts only: condition
//!   subqueries and FROM subqueries keep them as written;
//! - compound parts map foreign keys of the columns whose table is in the *outer* FROM;
//! - `group(no Having)` compares column names without their table;
//! - the `and/or` component reports its label and prediction totals swapped.

mod summary;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::error::InputError;
use crate::exec::Backend;
use crate::spider::{
    self, read_tables_json, ColUnit, Condition, Connector, Hardness, OrderDirection, ParseError,
    Schema, Sql, TableUnit, TablesJsonEntry, ValUnit, WhereOp,
};

pub use summary::{Averages, Level, LevelSummary, Summary};

/// Why a pair cannot be scored (the reference crashes in each case).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EsmError {
    /// The pair's database has no entry in `tables.json`.
    #[error("database `{0}` is not in tables.json")]
    UnknownDatabase(String),
    /// The database's schema could not be read.
    #[error(transparent)]
    Schema(#[from] InputError),
    /// The harness reports the hardness of such a pair as `unparsed`.
    #[error("the gold query does not parse: {0}")]
    GoldUnparsed(ParseError),
    /// A `foreign_keys` pair of `tables.json` names a column index past the last column.
    #[error("foreign key refers to missing column {0}")]
    MissingColumn(usize),
}

/// `build_foreign_key_map`: column id → the id of its foreign-key cluster's smallest column.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForeignKeyMap {
    canonical: HashMap<String, String>,
}

impl ForeignKeyMap {
    /// `columns[i]` is the id of column `i` (`__table.column__`, lowercased; `__all__` for `*`),
    /// `links` the `foreign_keys` pairs of column indices.
    ///
    /// As in the reference, a link joins the first cluster that holds either end, and clusters
    /// are never merged; a column in several clusters takes the last cluster's smallest column.
    pub fn new(columns: &[String], links: &[(usize, usize)]) -> Result<ForeignKeyMap, EsmError> {
        let mut clusters: Vec<BTreeSet<usize>> = Vec::new();
        for &(from, to) in links {
            if let Some(bad) = [from, to].into_iter().find(|&i| i >= columns.len()) {
                return Err(EsmError::MissingColumn(bad));
            }
            let found = clusters
                .iter()
                .position(|cluster| cluster.contains(&from) || cluster.contains(&to));
            let index = found.unwrap_or_else(|| {
                clusters.push(BTreeSet::new());
                clusters.len() - 1
            });
            clusters[index].extend([from, to]);
        }
        let mut canonical = HashMap::new();
        for cluster in &clusters {
            let Some(&smallest) = cluster.first() else {
                continue;
            };
            for &member in cluster {
                canonical.insert(columns[member].clone(), columns[smallest].clone());
            }
        }
        Ok(ForeignKeyMap { canonical })
    }

    /// The maps of every database of a Spider `tables.json`: db_id → map.
    pub fn from_tables_json(
        path: impl AsRef<Path>,
    ) -> Result<HashMap<String, ForeignKeyMap>, InputError> {
        let path = path.as_ref();
        let entries = read_tables_json(path)?;
        let mut maps = HashMap::with_capacity(entries.len());
        for (record, entry) in entries.into_iter().enumerate() {
            let at_record =
                |error: EsmError| InputError::file(path, error.to_string()).at_record(record);
            let map =
                ForeignKeyMap::new(&column_ids(&entry), &entry.foreign_keys).map_err(at_record)?;
            maps.insert(entry.db_id, map);
        }
        Ok(maps)
    }

    fn get(&self, col_id: &str) -> Option<&str> {
        self.canonical.get(col_id).map(String::as_str)
    }
}

/// The parser's id of every column, in `column_names_original` order (`read_tables_json`
/// checked that every table index exists).
fn column_ids(entry: &TablesJsonEntry) -> Vec<String> {
    let id = |(table, column): &(i64, String)| match usize::try_from(*table) {
        Ok(index) => format!(
            "__{}.{}__",
            entry.table_names_original[index].to_lowercase(),
            column.to_lowercase()
        ),
        Err(_) => "__all__".to_string(),
    };
    entry.column_names_original.iter().map(id).collect()
}

/// A query as the reference compares it: values, DISTINCT and foreign keys rebuilt.
#[derive(Debug, Clone, PartialEq)]
pub struct Rebuilt(Sql);

impl Rebuilt {
    /// The rebuilt query.
    pub fn sql(&self) -> &Sql {
        &self.0
    }
}

/// `rebuild_sql_val` then `rebuild_sql_col`, with the valid columns of `sql`'s own FROM tables.
pub fn rebuild(sql: &Sql, foreign_keys: &ForeignKeyMap) -> Rebuilt {
    let mut sql = sql.clone();
    drop_values(&mut sql);
    let columns = ColumnMap::new(&sql, foreign_keys);
    columns.rebuild_sql(&mut sql);
    Rebuilt(sql)
}

/// `rebuild_sql_val`: condition operands become absent, except subqueries, which are rebuilt
/// the same way. FROM subqueries are left as they are.
fn drop_values(sql: &mut Sql) {
    for condition in [&mut sql.from.conds, &mut sql.r#where, &mut sql.having] {
        for unit in &mut condition.units {
            for operand in [&mut unit.val1, &mut unit.val2] {
                *operand = match operand.take() {
                    Some(spider::Operand::Sql(mut subquery)) => {
                        drop_values(&mut subquery);
                        Some(spider::Operand::Sql(subquery))
                    }
                    _ => None,
                };
            }
        }
    }
    for part in [&mut sql.intersect, &mut sql.union, &mut sql.except]
        .into_iter()
        .flatten()
    {
        drop_values(part);
    }
}

/// `rebuild_sql_col`: the foreign-key map, restricted to the columns of the FROM tables
/// (`build_valid_col_units`), and DISTINCT cleared.
struct ColumnMap<'a> {
    foreign_keys: &'a ForeignKeyMap,
    /// `table_id[:-2]` of every FROM table, matched against `col_id[:col_id.index('.')]`.
    table_prefixes: Vec<String>,
}

impl<'a> ColumnMap<'a> {
    fn new(sql: &Sql, foreign_keys: &'a ForeignKeyMap) -> ColumnMap<'a> {
        let table_prefixes = sql
            .from
            .table_units
            .iter()
            .filter_map(|unit| match unit {
                TableUnit::Table(id) => id.strip_suffix("__").map(str::to_string),
                TableUnit::Sql(_) => None,
            })
            .collect();
        ColumnMap {
            foreign_keys,
            table_prefixes,
        }
    }

    /// The query and its compound parts; not condition or FROM subqueries.
    fn rebuild_sql(&self, sql: &mut Sql) {
        sql.select.distinct = false;
        for item in &mut sql.select.items {
            self.rebuild_val_unit(&mut item.val_unit);
        }
        for condition in [&mut sql.from.conds, &mut sql.r#where, &mut sql.having] {
            for unit in &mut condition.units {
                self.rebuild_val_unit(&mut unit.val_unit);
            }
        }
        for col_unit in &mut sql.group_by {
            self.rebuild_col_unit(col_unit);
        }
        if let Some(order) = &mut sql.order_by {
            for val_unit in &mut order.val_units {
                self.rebuild_val_unit(val_unit);
            }
        }
        for part in [&mut sql.intersect, &mut sql.union, &mut sql.except]
            .into_iter()
            .flatten()
        {
            self.rebuild_sql(part);
        }
    }

    fn rebuild_val_unit(&self, val_unit: &mut ValUnit) {
        self.rebuild_col_unit(&mut val_unit.left);
        if let Some(right) = &mut val_unit.right {
            self.rebuild_col_unit(right);
        }
    }

    fn rebuild_col_unit(&self, col_unit: &mut ColUnit) {
        if let Some(canonical) = self.canonical(&col_unit.col_id) {
            col_unit.col_id = canonical.to_string();
        }
        col_unit.distinct = false;
    }

    /// Parsed column ids are all schema ids, so a valid column is one of a FROM table.
    fn canonical(&self, col_id: &str) -> Option<&str> {
        let (prefix, _) = col_id.split_once('.')?;
        if !self.table_prefixes.iter().any(|table| table == prefix) {
            return None;
        }
        self.foreign_keys.get(col_id)
    }
}

/// One row of the reference's partial-matching tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Component {
    /// The SELECT items with their aggregates.
    Select,
    /// The SELECT items, aggregates ignored.
    SelectNoAgg,
    /// The WHERE conditions with their operators.
    Where,
    /// The WHERE conditions, operators ignored.
    WhereNoOp,
    /// The GROUP BY columns alone.
    GroupNoHaving,
    /// GROUP BY with HAVING.
    Group,
    /// ORDER BY with LIMIT.
    Order,
    /// The `and`/`or` connectors of WHERE.
    AndOr,
    /// INTERSECT, UNION, EXCEPT and nesting.
    Iuen,
    /// The set of SQL keywords used.
    Keywords,
}

impl Component {
    /// In the reference's print order.
    pub const ALL: [Component; 10] = [
        Component::Select,
        Component::SelectNoAgg,
        Component::Where,
        Component::WhereNoOp,
        Component::GroupNoHaving,
        Component::Group,
        Component::Order,
        Component::AndOr,
        Component::Iuen,
        Component::Keywords,
    ];

    /// The reference's name.
    pub fn name(self) -> &'static str {
        match self {
            Component::Select => "select",
            Component::SelectNoAgg => "select(no AGG)",
            Component::Where => "where",
            Component::WhereNoOp => "where(no OP)",
            Component::GroupNoHaving => "group(no Having)",
            Component::Group => "group",
            Component::Order => "order",
            Component::AndOr => "and/or",
            Component::Iuen => "IUEN",
            Component::Keywords => "keywords",
        }
    }
}

/// `get_scores`: accuracy, recall and F1 are all 1 when `matched`, else all 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ComponentScore {
    /// The prediction's units equal the gold's.
    pub matched: bool,
    /// Units of the component in the gold query.
    pub label_total: usize,
    /// Units of the component in the prediction.
    pub pred_total: usize,
}

impl ComponentScore {
    /// The component matches iff both sides have as many units and every prediction unit
    /// found its counterpart.
    fn new(count: usize, pred_total: usize, label_total: usize) -> ComponentScore {
        ComponentScore {
            matched: pred_total == label_total && count == pred_total,
            label_total,
            pred_total,
        }
    }
}

/// The reference's `eval_partial_match` result, one score per [`Component`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartialScores([ComponentScore; 10]);

impl PartialScores {
    /// The score of one component.
    pub fn get(&self, component: Component) -> ComponentScore {
        self.0[component as usize]
    }

    /// Every component with its score, in the reference's print order.
    pub fn iter(&self) -> impl Iterator<Item = (Component, ComponentScore)> + '_ {
        Component::ALL.into_iter().zip(self.0.iter().copied())
    }

    /// Whether every component matched (exact set match before the reference's extra checks).
    pub fn all_matched(&self) -> bool {
        self.0.iter().all(|score| score.matched)
    }
}

impl Serialize for PartialScores {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (component, score) in self.iter() {
            map.serialize_entry(component.name(), &score)?;
        }
        map.end()
    }
}

/// `eval_exact_match`: every component matches and the FROM tables are the same multiset.
pub fn exact_match(gold: &Rebuilt, pred: &Rebuilt) -> bool {
    verdict(&gold.0, &pred.0).0
}

/// The exact match and the partial scores of two rebuilt queries.
fn verdict(gold: &Sql, pred: &Sql) -> (bool, PartialScores) {
    let partial = partial_scores_of(gold, pred);
    (partial.all_matched() && same_tables(gold, pred), partial)
}

/// The reference compares sorted table-unit lists (and checks nothing when gold has none).
/// Sorting two unequal FROM subqueries raises there; here they compare as a multiset.
fn same_tables(gold: &Sql, pred: &Sql) -> bool {
    let (gold, pred) = (&gold.from.table_units, &pred.from.table_units);
    gold.is_empty() || (gold.len() == pred.len() && count_matches(pred, gold) == pred.len())
}

/// `eval_partial_match`.
pub fn partial_scores(gold: &Rebuilt, pred: &Rebuilt) -> PartialScores {
    partial_scores_of(&gold.0, &pred.0)
}

fn partial_scores_of(gold: &Sql, pred: &Sql) -> PartialScores {
    let (select, select_no_agg) = unit_scores(&gold.select.items, &pred.select.items, |item| {
        &item.val_unit
    });
    let (where_, where_no_op) = unit_scores(&gold.r#where.units, &pred.r#where.units, |unit| {
        &unit.val_unit
    });
    // in `Component` order
    PartialScores([
        select,
        select_no_agg,
        where_,
        where_no_op,
        group_columns(gold, pred),
        group_and_having(gold, pred),
        order(gold, pred),
        connectors(gold, pred),
        compounds(gold, pred),
        keywords(gold, pred),
    ])
}

/// `eval_sel` and `eval_where`: the units as multisets, then their `part`s as multisets.
fn unit_scores<U: PartialEq, P: PartialEq>(
    gold: &[U],
    pred: &[U],
    part: impl Fn(&U) -> &P,
) -> (ComponentScore, ComponentScore) {
    let whole = count_matches(pred, gold);
    let pred_parts: Vec<&P> = pred.iter().map(&part).collect();
    let gold_parts: Vec<&P> = gold.iter().map(&part).collect();
    let partial = count_matches(&pred_parts, &gold_parts);
    (
        ComponentScore::new(whole, pred.len(), gold.len()),
        ComponentScore::new(partial, pred.len(), gold.len()),
    )
}

/// How many `pred` units find an equal, not yet taken unit in `gold` (the reference's
/// `if unit in label: label.remove(unit)` loop).
fn count_matches<T: PartialEq>(pred: &[T], gold: &[T]) -> usize {
    let mut taken = vec![false; gold.len()];
    let mut count = 0;
    for unit in pred {
        let found = (0..gold.len()).find(|&i| !taken[i] && gold[i] == *unit);
        if let Some(i) = found {
            taken[i] = true;
            count += 1;
        }
    }
    count
}

/// `eval_group`: GROUP BY columns by name, the table dropped (`col_id.split('.')[1]`).
fn group_columns(gold: &Sql, pred: &Sql) -> ComponentScore {
    let names = |sql: &Sql| -> Vec<String> {
        let name = |id: &str| id.split('.').nth(1).unwrap_or(id).to_string();
        sql.group_by.iter().map(|unit| name(&unit.col_id)).collect()
    };
    let (gold_names, pred_names) = (names(gold), names(pred));
    let count = count_matches(&pred_names, &gold_names);
    ComponentScore::new(count, pred_names.len(), gold_names.len())
}

/// `eval_having`: both group, by the same column list in order, with the same HAVING.
fn group_and_having(gold: &Sql, pred: &Sql) -> ComponentScore {
    let ids = |sql: &Sql| -> Vec<String> {
        sql.group_by
            .iter()
            .map(|unit| unit.col_id.clone())
            .collect()
    };
    let (gold_total, pred_total) = (
        presence(!gold.group_by.is_empty()),
        presence(!pred.group_by.is_empty()),
    );
    let same =
        gold_total == 1 && pred_total == 1 && ids(gold) == ids(pred) && gold.having == pred.having;
    ComponentScore::new(presence(same), pred_total, gold_total)
}

/// `eval_order`: the same ORDER BY, and a LIMIT on both sides or on neither.
fn order(gold: &Sql, pred: &Sql) -> ComponentScore {
    let same = gold.order_by.is_some()
        && pred.order_by == gold.order_by
        && pred.limit.is_some() == gold.limit.is_some();
    ComponentScore::new(
        presence(same),
        presence(pred.order_by.is_some()),
        presence(gold.order_by.is_some()),
    )
}

/// `eval_and_or`: the sets of WHERE connectors. When they differ, the reference returns the
/// prediction's size as the label total and the gold's as the prediction total.
fn connectors(gold: &Sql, pred: &Sql) -> ComponentScore {
    let set =
        |sql: &Sql| -> BTreeSet<Connector> { sql.r#where.connectors.iter().copied().collect() };
    let (gold_set, pred_set) = (set(gold), set(pred));
    if gold_set == pred_set {
        return ComponentScore::new(1, 1, 1);
    }
    ComponentScore::new(0, gold_set.len(), pred_set.len())
}

/// `eval_IUEN`: each compound part present on either side; a pair of parts counts when it
/// exact-matches.
fn compounds(gold: &Sql, pred: &Sql) -> ComponentScore {
    let pairs = [
        (&gold.intersect, &pred.intersect),
        (&gold.except, &pred.except),
        (&gold.union, &pred.union),
    ];
    let (mut count, mut pred_total, mut gold_total) = (0, 0, 0);
    for (gold_part, pred_part) in pairs {
        gold_total += usize::from(gold_part.is_some());
        pred_total += usize::from(pred_part.is_some());
        if let (Some(gold_part), Some(pred_part)) = (gold_part, pred_part) {
            // the parts were rebuilt with their outer query
            count += usize::from(verdict(gold_part, pred_part).0);
        }
    }
    ComponentScore::new(count, pred_total, gold_total)
}

/// `eval_keywords`: the sets of [`keyword_set`].
fn keywords(gold: &Sql, pred: &Sql) -> ComponentScore {
    let (gold_set, pred_set) = (keyword_set(gold), keyword_set(pred));
    let count = pred_set.intersection(&gold_set).count();
    ComponentScore::new(count, pred_set.len(), gold_set.len())
}

/// `get_keywords`: the clauses present, the ORDER BY direction, and `or`, `not`, `in`, `like`
/// found in the ON, WHERE and HAVING conditions.
fn keyword_set(sql: &Sql) -> BTreeSet<&'static str> {
    let mut set = BTreeSet::new();
    let clauses = [
        ("where", !sql.r#where.is_empty()),
        ("group", !sql.group_by.is_empty()),
        ("having", !sql.having.is_empty()),
        ("order", sql.order_by.is_some()),
        ("limit", sql.limit.is_some()),
        ("except", sql.except.is_some()),
        ("union", sql.union.is_some()),
        ("intersect", sql.intersect.is_some()),
    ];
    set.extend(
        clauses
            .iter()
            .filter(|(_, present)| *present)
            .map(|(name, _)| *name),
    );
    if let Some(order) = &sql.order_by {
        set.insert(match order.direction {
            OrderDirection::Asc => "asc",
            OrderDirection::Desc => "desc",
        });
    }
    let conditions: [&Condition; 3] = [&sql.from.conds, &sql.r#where, &sql.having];
    let units = || conditions.iter().flat_map(|condition| &condition.units);
    let found = [
        (
            "or",
            conditions
                .iter()
                .any(|condition| condition.connectors.contains(&Connector::Or)),
        ),
        ("not", units().any(|unit| unit.not)),
        ("in", units().any(|unit| unit.op == WhereOp::In)),
        ("like", units().any(|unit| unit.op == WhereOp::Like)),
    ];
    set.extend(
        found
            .iter()
            .filter(|(_, present)| *present)
            .map(|(name, _)| *name),
    );
    set
}

fn presence(present: bool) -> usize {
    usize::from(present)
}

/// The verdict on one (gold, prediction) pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairScore {
    /// Exact set match.
    pub esm: bool,
    /// Of the gold query.
    pub hardness: Hardness,
    /// The partial-matching scores of the pair.
    pub partial: PartialScores,
    /// Why the prediction did not parse, when it did not (it was scored as the empty query).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pred_error: Option<String>,
}

/// Where the parser's schemas come from.
enum Schemas {
    Given(HashMap<String, Arc<Schema>>),
    /// The database folder (either layout of [`crate::files::database_file`]), read on first use.
    Sqlite {
        dir: PathBuf,
        /// The engine reading them (SQLite's catalog queries, as the reference's).
        backend: Arc<dyn Backend>,
        cache: Mutex<HashMap<String, Arc<Schema>>>,
    },
}

/// Scores pairs as the reference does, holding each database's schema and foreign-key map.
pub struct Evaluator {
    foreign_keys: HashMap<String, ForeignKeyMap>,
    schemas: Schemas,
}

impl Evaluator {
    /// An evaluator with `foreign_keys` and `schemas` for each database, by name.
    pub fn new(
        foreign_keys: HashMap<String, ForeignKeyMap>,
        schemas: HashMap<String, Schema>,
    ) -> Evaluator {
        let schemas = schemas
            .into_iter()
            .map(|(db, schema)| (db, Arc::new(schema)))
            .collect();
        Evaluator {
            foreign_keys,
            schemas: Schemas::Given(schemas),
        }
    }

    /// Schemas and foreign keys both from `tables.json` (no database files needed).
    pub fn from_tables_json(tables_json: impl AsRef<Path>) -> Result<Evaluator, InputError> {
        let tables_json = tables_json.as_ref();
        Ok(Evaluator::new(
            ForeignKeyMap::from_tables_json(tables_json)?,
            Schema::from_tables_json(tables_json)?,
        ))
    }

    /// The reference's setup: foreign keys from `tables.json`, the parser's schema read from
    /// the database file, `<db_dir>/<db>.sqlite` or `<db_dir>/<db>/<db>.sqlite` (once per
    /// database), through `backend`.
    pub fn with_database_dir(
        tables_json: impl AsRef<Path>,
        db_dir: impl Into<PathBuf>,
        backend: Arc<dyn Backend>,
    ) -> Result<Evaluator, InputError> {
        Ok(Evaluator {
            foreign_keys: ForeignKeyMap::from_tables_json(tables_json)?,
            schemas: Schemas::Sqlite {
                dir: db_dir.into(),
                backend,
                cache: Mutex::default(),
            },
        })
    }

    /// The foreign keys of `db_id`, as the reference rewrites columns along them.
    pub fn foreign_keys(&self, db_id: &str) -> Result<&ForeignKeyMap, EsmError> {
        self.foreign_keys
            .get(db_id)
            .ok_or_else(|| EsmError::UnknownDatabase(db_id.to_string()))
    }

    /// The schema of `db_id`, read once and then shared.
    pub fn schema(&self, db_id: &str) -> Result<Arc<Schema>, EsmError> {
        match &self.schemas {
            Schemas::Given(schemas) => schemas
                .get(db_id)
                .cloned()
                .ok_or_else(|| EsmError::UnknownDatabase(db_id.to_string())),
            Schemas::Sqlite {
                dir,
                backend,
                cache,
            } => {
                let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(schema) = cache.get(db_id) {
                    return Ok(schema.clone());
                }
                let path = crate::files::database_file(dir, db_id, "sqlite")
                    .map_err(|problem| InputError::file(dir, problem.to_string()))?;
                let schema = Arc::new(Schema::from_sqlite(&**backend, path)?);
                cache.insert(db_id.to_string(), schema.clone());
                Ok(schema)
            }
        }
    }

    /// Scores one pair end to end. `pred` is read as the reference reads a prediction line:
    /// trimmed, cut at the first tab, with ` value ` replaced by ` 1 `.
    pub fn score(&self, gold: &str, pred: &str, db_id: &str) -> Result<PairScore, EsmError> {
        let foreign_keys = self.foreign_keys(db_id)?;
        let schema = self.schema(db_id)?;
        let gold = spider::parse(gold.trim(), &schema).map_err(EsmError::GoldUnparsed)?;
        let hardness = spider::hardness(&gold);
        let (pred, pred_error) = match spider::parse(&prediction_text(pred), &schema) {
            Ok(tree) => (tree, None),
            Err(error) => (Sql::default(), Some(error.message)),
        };
        let (gold, pred) = (rebuild(&gold, foreign_keys), rebuild(&pred, foreign_keys));
        let (esm, partial) = verdict(&gold.0, &pred.0);
        Ok(PairScore {
            esm,
            hardness,
            partial,
            pred_error,
        })
    }
}

/// The reference's reading of a prediction line.
fn prediction_text(line: &str) -> String {
    let line = line.trim();
    let first_field = line.split('\t').next().unwrap_or(line);
    first_field.replace(" value ", " 1 ")
}
