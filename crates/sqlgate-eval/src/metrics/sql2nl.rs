//! Robustness metrics of the SQL2NL paraphrase study (Safarzadeh et al., "Evaluating NL2SQL
//! robustness with schema-aligned paraphrases"; NL2SQL360 for QVT): accuracy drop with its
//! CS-adjusted interval, the unbiased Pass@K estimator, breakdowns of accuracy by join count and
//! clause with bootstrap intervals, the normalised schema error rate NER, and query variance
//! testing. Pure functions of per-unit outcomes and parsed SQL: the caller parses (with the
//! bounded parser for untrusted SQL) and executes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::ControlFlow;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sqlparser::ast::{
    Expr, GroupByExpr, ObjectName, Query, Select, SelectItem, SelectItemQualifiedWildcardKind,
    SetExpr, Statement, TableFactor, Visit, Visitor,
};

/// Original against paraphrased accuracy (paper §2.3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccuracyDrop {
    /// Accuracy on the original questions.
    pub a_orig: f64,
    /// Accuracy on their paraphrases.
    pub a_para: f64,
    /// `A_orig - A_para`, in percentage points; positive means the paraphrases did worse.
    pub drop_points: f64,
    /// The mean similarity of the scored paraphrases.
    pub mean_cs: f64,
    /// `[A_para * CS, A_para * (2 - CS)]`, the true paraphrased accuracy's interval.
    pub interval: (f64, f64),
}

/// `original`: one correctness per original question; `paraphrased`: (correct, CS) per
/// (gold, paraphrase) unit. `None` when either side is empty.
pub fn accuracy_drop(original: &[bool], paraphrased: &[(bool, f64)]) -> Option<AccuracyDrop> {
    if original.is_empty() || paraphrased.is_empty() {
        return None;
    }
    let a_orig = share(original.iter().copied());
    let a_para = share(paraphrased.iter().map(|(correct, _)| *correct));
    let mean_cs = paraphrased.iter().map(|(_, cs)| cs).sum::<f64>() / paraphrased.len() as f64;
    Some(AccuracyDrop {
        a_orig,
        a_para,
        drop_points: 100.0 * (a_orig - a_para),
        mean_cs,
        interval: (a_para * mean_cs, a_para * (2.0 - mean_cs)),
    })
}

/// The share of `true` outcomes; 0 when there are none.
pub fn share(outcomes: impl Iterator<Item = bool>) -> f64 {
    let (mut hits, mut total) = (0usize, 0usize);
    for outcome in outcomes {
        hits += usize::from(outcome);
        total += 1;
    }
    if total == 0 {
        0.0
    } else {
        hits as f64 / total as f64
    }
}

/// The unbiased pass@k of one problem with `n` samples of which `c` are correct:
/// `1 - C(n-c, k) / C(n, k)`, as the product `1 - prod_{i=n-c+1}^{n} (1 - k/i)` (no factorials,
/// no overflow). `None` when `k` is 0 or above `n`, or `c` above `n`.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    let miss_all: f64 = (n - c + 1..=n).map(|i| 1.0 - k as f64 / i as f64).product();
    Some(1.0 - miss_all)
}

/// The mean pass@k over problems `(n, c)`; `None` when there is none or one has fewer than k
/// samples (an estimate over fewer would be a different number under the same name).
pub fn mean_pass_at_k(problems: &[(u64, u64)], k: u64) -> Option<f64> {
    if problems.is_empty() {
        return None;
    }
    let total: Option<f64> = problems.iter().map(|&(n, c)| pass_at_k(n, c, k)).sum();
    total.map(|sum| sum / problems.len() as f64)
}

/// An accuracy with its percentile-bootstrap 95% half-width (paper §4.2, B = 1000).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Units the accuracy is over.
    pub n: usize,
    /// The accuracy over all units.
    pub accuracy: f64,
    /// `(q97.5 - q2.5) / 2` of the resampled accuracies.
    pub half_width: f64,
}

/// B, the bootstrap's resample count (paper §4.2).
pub const BOOTSTRAP_RESAMPLES: usize = 1000;

/// Resamples the units with replacement. `clusters` groups units that must be drawn together
/// (a gold with all its paraphrases: `--cluster-bootstrap`); each unit alone otherwise.
pub fn bootstrap(units: &[bool], clusters: Option<&[usize]>, seed: u64) -> Estimate {
    let groups: Vec<Vec<bool>> = match clusters {
        Some(ids) => {
            let mut by_id: BTreeMap<usize, Vec<bool>> = BTreeMap::new();
            for (unit, id) in units.iter().zip(ids) {
                by_id.entry(*id).or_default().push(*unit);
            }
            by_id.into_values().collect()
        }
        None => units.iter().map(|unit| vec![*unit]).collect(),
    };
    let accuracy = share(units.iter().copied());
    if groups.is_empty() {
        return Estimate {
            n: 0,
            accuracy,
            half_width: 0.0,
        };
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut resampled: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            let (mut hits, mut total) = (0usize, 0usize);
            for _ in 0..groups.len() {
                let group = &groups[rng.random_range(0..groups.len())];
                hits += group.iter().filter(|unit| **unit).count();
                total += group.len();
            }
            hits as f64 / total.max(1) as f64
        })
        .collect();
    resampled.sort_by(f64::total_cmp);
    let quantile = |q: f64| resampled[((q * (resampled.len() - 1) as f64).round()) as usize];
    Estimate {
        n: units.len(),
        accuracy,
        half_width: (quantile(0.975) - quantile(0.025)) / 2.0,
    }
}

/// The features of a gold query the breakdowns split on (paper §4.2-4.3), anywhere in the query,
/// subqueries included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueryShape {
    /// Explicit `JOIN`s (any kind); a comma in FROM is not one.
    pub joins: usize,
    /// A GROUP BY anywhere.
    pub group_by: bool,
    /// An ORDER BY anywhere.
    pub order_by: bool,
    /// A HAVING anywhere.
    pub having: bool,
    /// A subquery anywhere (FROM, WHERE, HAVING, SELECT, a CTE) or a set operation.
    pub nested: bool,
}

/// The shape of `statement`, for the breakdown of accuracy by query shape.
pub fn query_shape(statement: &Statement) -> QueryShape {
    struct Shape(QueryShape, usize);
    impl Visitor for Shape {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            self.1 += 1;
            self.0.order_by |= query.order_by.is_some();
            self.0.nested |= query.with.is_some();
            for select in selects(&query.body) {
                self.0.joins += select
                    .from
                    .iter()
                    .map(|from| from.joins.len())
                    .sum::<usize>();
                self.0.group_by |= match &select.group_by {
                    GroupByExpr::All(_) => true,
                    GroupByExpr::Expressions(exprs, _) => !exprs.is_empty(),
                };
                self.0.having |= select.having.is_some();
            }
            self.0.nested |= !matches!(*query.body, SetExpr::Select(_));
            ControlFlow::Continue(())
        }
    }
    let mut shape = Shape(QueryShape::default(), 0);
    let _ = statement.visit(&mut shape);
    shape.0.nested |= shape.1 > 1;
    shape.0
}

/// The SELECT blocks of a query body, through set operations and parentheses (not into
/// subqueries, which are queries of their own).
fn selects(body: &SetExpr) -> Vec<&Select> {
    match body {
        SetExpr::Select(select) => vec![select],
        SetExpr::SetOperation { left, right, .. } => {
            let mut found = selects(left);
            found.extend(selects(right));
            found
        }
        SetExpr::Query(query) => selects(&query.body),
        _ => Vec::new(),
    }
}

/// The base tables and `table.column`s a query mentions (paper §4.4), lowercased: aliases
/// resolved, `*` expanded to the columns of the FROM tables, from every clause and subquery.
/// A column that no table in scope has is `?.column`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemaElements {
    /// Base tables, lowercased.
    pub tables: BTreeSet<String>,
    /// `table.column`s, lowercased.
    pub columns: BTreeSet<String>,
}

/// `schema`: each table's columns, lowercased.
pub fn schema_elements(
    statement: &Statement,
    schema: &HashMap<String, Vec<String>>,
) -> SchemaElements {
    struct Collect<'a> {
        schema: &'a HashMap<String, Vec<String>>,
        ctes: BTreeSet<String>,
        /// Per enclosing query: reference name -> base table, and its select-list aliases.
        scopes: Vec<(HashMap<String, String>, BTreeSet<String>)>,
        found: SchemaElements,
    }
    impl Collect<'_> {
        fn column(&mut self, table: Option<&str>, column: &str) {
            let resolved = match table {
                Some(reference) => self
                    .scopes
                    .iter()
                    .rev()
                    .find_map(|(names, _)| names.get(reference).cloned()),
                None => self.scopes.iter().rev().find_map(|(names, _)| {
                    let mut owners: Vec<&String> = names
                        .values()
                        .filter(|t| {
                            self.schema
                                .get(*t)
                                .is_some_and(|c| c.iter().any(|c| c == column))
                        })
                        .collect();
                    owners.sort();
                    owners.first().map(|t| (*t).clone())
                }),
            };
            let is_alias = table.is_none()
                && self
                    .scopes
                    .last()
                    .is_some_and(|(_, aliases)| aliases.contains(column));
            match resolved {
                Some(table) => {
                    self.found.columns.insert(format!("{table}.{column}"));
                }
                None if is_alias => {}
                None => {
                    self.found.columns.insert(format!("?.{column}"));
                }
            }
        }
    }
    impl Visitor for Collect<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            if let Some(with) = &query.with {
                self.ctes.extend(
                    with.cte_tables
                        .iter()
                        .map(|cte| cte.alias.name.value.to_lowercase()),
                );
            }
            let mut names = HashMap::new();
            let mut aliases = BTreeSet::new();
            let mut stars = Vec::new();
            for select in selects(&query.body) {
                for from in &select.from {
                    let factors = std::iter::once(&from.relation)
                        .chain(from.joins.iter().map(|join| &join.relation));
                    for factor in factors {
                        if let TableFactor::Table { name, alias, .. } = factor {
                            let table = last_part(name);
                            if self.ctes.contains(&table) {
                                continue;
                            }
                            let reference = alias
                                .as_ref()
                                .map_or_else(|| table.clone(), |a| a.name.value.to_lowercase());
                            names.insert(reference, table);
                        }
                    }
                }
                for item in &select.projection {
                    match item {
                        SelectItem::ExprWithAlias { alias, .. } => {
                            aliases.insert(alias.value.to_lowercase());
                        }
                        SelectItem::Wildcard(_) => stars.push(None),
                        SelectItem::QualifiedWildcard(
                            SelectItemQualifiedWildcardKind::ObjectName(name),
                            _,
                        ) => stars.push(Some(last_part(name))),
                        _ => {}
                    }
                }
            }
            for star in stars {
                let tables: Vec<String> = match star {
                    Some(reference) => names.get(&reference).cloned().into_iter().collect(),
                    None => names.values().cloned().collect(),
                };
                for table in tables {
                    for column in self.schema.get(&table).into_iter().flatten() {
                        self.found.columns.insert(format!("{table}.{column}"));
                    }
                }
            }
            self.scopes.push((names, aliases));
            ControlFlow::Continue(())
        }

        fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
            self.scopes.pop();
            ControlFlow::Continue(())
        }

        fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
            let table = last_part(relation);
            if !self.ctes.contains(&table) {
                self.found.tables.insert(table);
            }
            ControlFlow::Continue(())
        }

        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            match expr {
                Expr::Identifier(ident) => self.column(None, &ident.value.to_lowercase()),
                Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                    let table = parts[parts.len() - 2].value.to_lowercase();
                    let column = parts[parts.len() - 1].value.to_lowercase();
                    self.column(Some(&table), &column);
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let mut collect = Collect {
        schema,
        ctes: BTreeSet::new(),
        scopes: Vec::new(),
        found: SchemaElements::default(),
    };
    let _ = statement.visit(&mut collect);
    collect.found
}

fn last_part(name: &ObjectName) -> String {
    name.0
        .last()
        .and_then(|part| part.as_ident())
        .map(|ident| ident.value.to_lowercase())
        .unwrap_or_default()
}

/// The four schema error types of one prediction against its gold (paper §4.4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SchemaErrors {
    /// Gold columns the prediction does not mention.
    pub missing_columns: usize,
    /// Columns the prediction mentions and the gold does not.
    pub extra_columns: usize,
    /// Gold tables the prediction does not mention.
    pub missing_tables: usize,
    /// Tables the prediction mentions and the gold does not.
    pub extra_tables: usize,
}

/// Counts the four error types of `predicted` against `gold`.
pub fn schema_errors(gold: &SchemaElements, predicted: &SchemaElements) -> SchemaErrors {
    SchemaErrors {
        missing_columns: gold.columns.difference(&predicted.columns).count(),
        extra_columns: predicted.columns.difference(&gold.columns).count(),
        missing_tables: gold.tables.difference(&predicted.tables).count(),
        extra_tables: predicted.tables.difference(&gold.tables).count(),
    }
}

/// ε of `NER = E_false / (E_true + ε)`; the paper only calls it "a small constant".
pub const NER_EPSILON: f64 = 1e-6;

/// NER per error type, in the order missing columns, extra columns, missing tables, extra
/// tables: the share of wrong predictions (EX = 0) with at least one error of the type over
/// the share of right ones (EX = 1), plus ε. `None` when either group is empty.
pub fn normalised_schema_error_rate(predictions: &[(bool, SchemaErrors)]) -> Option<[f64; 4]> {
    let rate = |correct: bool| -> Option<[f64; 4]> {
        let group: Vec<&SchemaErrors> = predictions
            .iter()
            .filter(|(ex, _)| *ex == correct)
            .map(|(_, errors)| errors)
            .collect();
        if group.is_empty() {
            return None;
        }
        let with = |count: fn(&SchemaErrors) -> usize| {
            group.iter().filter(|errors| count(errors) > 0).count() as f64 / group.len() as f64
        };
        Some([
            with(|e| e.missing_columns),
            with(|e| e.extra_columns),
            with(|e| e.missing_tables),
            with(|e| e.extra_tables),
        ])
    };
    let (wrong, right) = (rate(false)?, rate(true)?);
    Some(std::array::from_fn(|i| wrong[i] / (right[i] + NER_EPSILON)))
}

/// Query variance testing (NL2SQL360): per gold, the share of its paraphrases answered
/// correctly; then their mean and (population) standard deviation across golds.
#[derive(Debug, Clone, PartialEq)]
pub struct Qvt {
    /// Share of each gold's paraphrases answered correctly, by gold id.
    pub per_gold: BTreeMap<String, f64>,
    /// Mean of the shares.
    pub mean: f64,
    /// Population standard deviation of the shares.
    pub std_dev: f64,
}

/// `units`: (gold id, correct) per paraphrase. `None` when there is none.
pub fn query_variance(units: &[(String, bool)]) -> Option<Qvt> {
    let mut by_gold: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (gold, correct) in units {
        let entry = by_gold.entry(gold.clone()).or_default();
        entry.0 += usize::from(*correct);
        entry.1 += 1;
    }
    if by_gold.is_empty() {
        return None;
    }
    let per_gold: BTreeMap<String, f64> = by_gold
        .into_iter()
        .map(|(gold, (hits, total))| (gold, hits as f64 / total as f64))
        .collect();
    let n = per_gold.len() as f64;
    let mean = per_gold.values().sum::<f64>() / n;
    let variance = per_gold.values().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    Some(Qvt {
        per_gold,
        mean,
        std_dev: variance.sqrt(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::SQLiteDialect;
    use sqlparser::parser::Parser;

    fn parse(sql: &str) -> Statement {
        Parser::parse_sql(&SQLiteDialect {}, sql).unwrap().remove(0)
    }

    #[test]
    fn pass_at_k_matches_the_spec_vectors() {
        let table = [
            (
                10,
                3,
                [Some(0.3), Some(0.533333), Some(0.916667), Some(1.0)],
            ),
            (10, 1, [Some(0.1), Some(0.2), Some(0.5), Some(1.0)]),
            (10, 0, [Some(0.0), Some(0.0), Some(0.0), Some(0.0)]),
            (10, 10, [Some(1.0), Some(1.0), Some(1.0), Some(1.0)]),
            (5, 2, [Some(0.4), Some(0.7), Some(1.0), None]),
        ];
        for (n, c, expected) in table {
            for (k, want) in [1, 2, 5, 10].into_iter().zip(expected) {
                let got = pass_at_k(n, c, k);
                match (got, want) {
                    (Some(got), Some(want)) => {
                        assert!(
                            (got - want).abs() < 5e-7,
                            "n={n} c={c} k={k}: {got} vs {want}"
                        )
                    }
                    (got, want) => assert_eq!(got, want, "n={n} c={c} k={k}"),
                }
            }
        }
        // Large n does not overflow, and agrees with exact binomials computed in u128.
        let exact = |n: u128, c: u128, k: u128| {
            let choose = |n: u128, k: u128| (0..k).fold(1u128, |acc, i| acc * (n - i) / (i + 1));
            1.0 - choose(n - c, k) as f64 / choose(n, k) as f64
        };
        for (n, c, k) in [(60, 7, 5), (40, 20, 10), (100, 1, 3)] {
            let got = pass_at_k(n, c, k).unwrap();
            assert!((got - exact(n as u128, c as u128, k as u128)).abs() < 1e-12);
        }
        assert!(pass_at_k(1000, 500, 10).unwrap() > 0.999);
        assert_eq!(mean_pass_at_k(&[(10, 3), (10, 1)], 1), Some(0.2));
        assert_eq!(mean_pass_at_k(&[(10, 3), (5, 2)], 10), None);
        assert_eq!(mean_pass_at_k(&[], 1), None);
    }

    #[test]
    fn accuracy_drop_and_its_interval() {
        let original = [true, true, true, false];
        let paraphrased = [(true, 0.8), (false, 0.6), (true, 1.0), (false, 0.6)];
        let drop = accuracy_drop(&original, &paraphrased).unwrap();
        assert_eq!(drop.a_orig, 0.75);
        assert_eq!(drop.a_para, 0.5);
        assert!((drop.drop_points - 25.0).abs() < 1e-9);
        assert!((drop.mean_cs - 0.75).abs() < 1e-9);
        assert!((drop.interval.0 - 0.375).abs() < 1e-9 && (drop.interval.1 - 0.625).abs() < 1e-9);
        assert_eq!(accuracy_drop(&[], &paraphrased), None);
    }

    #[test]
    fn bootstrap_is_deterministic_for_a_seed_and_near_the_binomial_width() {
        // The spec's sanity check: 84.31% over 612 queries, binomial half-width ~2.9 points.
        let units: Vec<bool> = (0..612).map(|i| i < 516).collect();
        let first = bootstrap(&units, None, 0);
        assert_eq!(first, bootstrap(&units, None, 0));
        assert_ne!(first.half_width, bootstrap(&units, None, 1).half_width);
        assert!((first.accuracy - 0.8431).abs() < 1e-3);
        assert!(
            (0.024..0.034).contains(&first.half_width),
            "{}",
            first.half_width
        );
        // Clusters drawn whole widen the interval when their units agree.
        let clusters: Vec<usize> = (0..612).map(|i| i / 6).collect();
        let clustered = bootstrap(&units, Some(&clusters), 0);
        assert!(clustered.half_width > first.half_width);
        assert_eq!(bootstrap(&[], None, 0).n, 0);
    }

    #[test]
    fn query_shapes_are_read_from_the_whole_query() {
        let plain = query_shape(&parse("SELECT a FROM t, u WHERE t.x = u.x"));
        assert_eq!(plain, QueryShape::default());
        let shape = query_shape(&parse(
            "SELECT t.a, count(*) FROM t JOIN u ON t.x = u.x LEFT JOIN v ON v.y = u.y \
             WHERE t.b IN (SELECT b FROM w JOIN z ON w.k = z.k) GROUP BY t.a HAVING count(*) > 1 \
             ORDER BY 2",
        ));
        assert_eq!(
            shape,
            QueryShape {
                joins: 3,
                group_by: true,
                order_by: true,
                having: true,
                nested: true
            }
        );
        assert!(query_shape(&parse("SELECT a FROM t UNION SELECT a FROM u")).nested);
    }

    fn schema() -> HashMap<String, Vec<String>> {
        HashMap::from([
            (
                "singer".to_string(),
                vec!["id".to_string(), "name".to_string(), "age".to_string()],
            ),
            (
                "concert".to_string(),
                vec!["id".to_string(), "singer_id".to_string()],
            ),
        ])
    }

    #[test]
    fn schema_elements_resolve_aliases_and_expand_stars() {
        let elements = schema_elements(
            &parse(
                "SELECT s.name, count(*) AS n FROM singer AS s JOIN concert c ON c.singer_id = s.id \
                 WHERE age > (SELECT avg(age) FROM singer) GROUP BY s.name ORDER BY n",
            ),
            &schema(),
        );
        assert_eq!(
            elements.tables,
            BTreeSet::from(["concert".to_string(), "singer".to_string()])
        );
        assert_eq!(
            elements.columns,
            [
                "concert.singer_id",
                "singer.age",
                "singer.id",
                "singer.name"
            ]
            .into_iter()
            .map(String::from)
            .collect()
        );
        let star = schema_elements(&parse("SELECT * FROM concert"), &schema());
        assert_eq!(star.columns.len(), 2);
        let unknown = schema_elements(&parse("SELECT nope FROM concert"), &schema());
        assert!(unknown.columns.contains("?.nope"));
        let cte = schema_elements(
            &parse("WITH x AS (SELECT id FROM singer) SELECT id FROM x"),
            &schema(),
        );
        assert_eq!(cte.tables, BTreeSet::from(["singer".to_string()]));
    }

    #[test]
    fn ner_compares_wrong_and_right_predictions() {
        let gold = schema_elements(&parse("SELECT name FROM singer"), &schema());
        let wrong = schema_elements(
            &parse("SELECT name, age FROM singer JOIN concert"),
            &schema(),
        );
        let errors = schema_errors(&gold, &wrong);
        assert_eq!(
            errors,
            SchemaErrors {
                missing_columns: 0,
                extra_columns: 1,
                missing_tables: 0,
                extra_tables: 1
            }
        );
        let none = SchemaErrors::default();
        let one_extra = SchemaErrors {
            extra_columns: 1,
            ..none
        };
        // Half the wrong predictions have an extra column, a quarter of the right ones do.
        let predictions = [
            (false, one_extra),
            (false, none),
            (true, one_extra),
            (true, none),
            (true, none),
            (true, none),
        ];
        let ner = normalised_schema_error_rate(&predictions).unwrap();
        assert!((ner[1] - 0.5 / (0.25 + NER_EPSILON)).abs() < 1e-9);
        assert_eq!(ner[0], 0.0);
        assert_eq!(normalised_schema_error_rate(&predictions[..2]), None);
    }

    #[test]
    fn qvt_spreads_per_gold_shares() {
        let units: Vec<(String, bool)> = [("a", true), ("a", false), ("b", true), ("b", true)]
            .into_iter()
            .map(|(g, c)| (g.to_string(), c))
            .collect();
        let qvt = query_variance(&units).unwrap();
        assert_eq!(qvt.per_gold["a"], 0.5);
        assert_eq!(qvt.mean, 0.75);
        assert!((qvt.std_dev - 0.25).abs() < 1e-12);
        assert_eq!(query_variance(&[]), None);
    }
}
