//! Spider hardness (`Evaluator.eval_hardness` of the reference `evaluation.py`), as specified in
//! `evaluators.md` §2.5, counting quirks included.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::ast::{AggOp, ColUnit, Condition, Connector, Sql, WhereOp};

/// Spider's difficulty level of a gold query, from the count of its components.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Hardness {
    /// At most one component (WHERE, GROUP BY, ORDER BY, LIMIT, JOIN, OR, LIKE) and nothing else.
    Easy,
    /// A couple of components or of other constructs (several aggregates, columns or conditions),
    /// no nesting.
    Medium,
    /// More of them, or one nested query or set operation in an otherwise easy query.
    Hard,
    /// Everything beyond `hard`.
    Extra,
}

impl fmt::Display for Hardness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Hardness::Easy => "easy",
            Hardness::Medium => "medium",
            Hardness::Hard => "hard",
            Hardness::Extra => "extra",
        })
    }
}

impl std::str::FromStr for Hardness {
    type Err = UnknownHardness;

    /// The level as written in tags and reports: `easy`, `medium`, `hard` or `extra`.
    fn from_str(text: &str) -> Result<Hardness, UnknownHardness> {
        match text {
            "easy" => Ok(Hardness::Easy),
            "medium" => Ok(Hardness::Medium),
            "hard" => Ok(Hardness::Hard),
            "extra" => Ok(Hardness::Extra),
            _ => Err(UnknownHardness(text.to_string())),
        }
    }
}

/// A text that names no [`Hardness`] level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hardness `{0}`")]
pub struct UnknownHardness(pub String);

/// The three counts the classification reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Components {
    comp1: usize,
    comp2: usize,
    others: usize,
}

/// The hardness of a parsed (gold) query.
pub fn hardness(sql: &Sql) -> Hardness {
    let Components {
        comp1,
        comp2,
        others,
    } = components(sql);
    if comp1 <= 1 && others == 0 && comp2 == 0 {
        Hardness::Easy
    } else if (others <= 2 && comp1 <= 1 && comp2 == 0) || (comp1 <= 2 && others < 2 && comp2 == 0)
    {
        Hardness::Medium
    } else if (others > 2 && comp1 <= 2 && comp2 == 0)
        || (2 < comp1 && comp1 <= 3 && others <= 2 && comp2 == 0)
        || (comp1 <= 1 && others == 0 && comp2 <= 1)
    {
        Hardness::Hard
    } else {
        Hardness::Extra
    }
}

fn components(sql: &Sql) -> Components {
    Components {
        comp1: count_component1(sql),
        comp2: count_component2(sql),
        others: count_others(sql),
    }
}

/// The conditions the reference scans for `or`, LIKE and subqueries: ON, WHERE, HAVING.
fn conditions(sql: &Sql) -> [&Condition; 3] {
    [&sql.from.conds, &sql.r#where, &sql.having]
}

fn count_component1(sql: &Sql) -> usize {
    let clauses = [
        !sql.r#where.is_empty(),
        !sql.group_by.is_empty(),
        sql.order_by.is_some(),
        sql.limit.is_some(),
    ];
    let joins = sql.from.table_units.len().saturating_sub(1);
    let ors: usize = conditions(sql)
        .iter()
        .map(|c| c.connectors.iter().filter(|&&k| k == Connector::Or).count())
        .sum();
    let likes: usize = conditions(sql)
        .iter()
        .map(|c| c.units.iter().filter(|u| u.op == WhereOp::Like).count())
        .sum();
    clauses.iter().filter(|&&present| present).count() + joins + ors + likes
}

/// Nested queries: each condition unit counts once per subquery operand, plus each compound part.
fn count_component2(sql: &Sql) -> usize {
    let in_conditions: usize = conditions(sql)
        .iter()
        .flat_map(|c| &c.units)
        .map(|unit| unit.subqueries().count())
        .sum();
    in_conditions + sql.compounds().count()
}

fn count_others(sql: &Sql) -> usize {
    let flags = [
        aggregate_count(sql) > 1,
        sql.select.items.len() > 1,
        sql.r#where.list_len() > 1,
        sql.group_by.len() > 1,
    ];
    flags.iter().filter(|&&set| set).count()
}

/// The reference's `agg_count`. It applies `has_agg` (element 0 ≠ 0) to WHERE units, whose
/// element 0 is the `not` flag, and to every HAVING list item, where element 0 of a connector
/// string is a non-zero character: so WHERE counts its `not`s and HAVING its `not`s plus its
/// connectors, never their aggregates.
fn aggregate_count(sql: &Sql) -> usize {
    let has_agg = |unit: &&ColUnit| unit.agg != AggOp::None;
    let select = sql
        .select
        .items
        .iter()
        .filter(|item| item.agg != AggOp::None)
        .count();
    let where_nots = sql.r#where.units.iter().filter(|u| u.not).count();
    let group = sql.group_by.iter().filter(has_agg).count();
    let order = sql.order_by.as_ref().map_or(0, |order| {
        order
            .val_units
            .iter()
            .flat_map(|v| v.col_units())
            .filter(has_agg)
            .count()
    });
    let having_nots = sql.having.units.iter().filter(|u| u.not).count();
    select + where_nots + group + order + having_nots + sql.having.connectors.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spider::{parse, Schema};

    fn fixture_schema() -> Schema {
        Schema::new([
            (
                "singer",
                vec!["singer_id", "name", "country", "age", "is_male"],
            ),
            (
                "stadium",
                vec!["stadium_id", "name", "location", "capacity"],
            ),
            (
                "concert",
                vec!["concert_id", "concert_name", "stadium_id", "year"],
            ),
            ("singer_in_concert", vec!["concert_id", "singer_id"]),
        ])
    }

    /// `evaluators.md` §2.5: (gold SQL, (comp1, comp2, others), hardness).
    const VECTORS: [(&str, (usize, usize, usize), Hardness); 17] = [
        ("SELECT count(*) FROM singer", (0, 0, 0), Hardness::Easy),
        (
            "SELECT name, country, age FROM singer ORDER BY age DESC",
            (1, 0, 1),
            Hardness::Medium,
        ),
        (
            "SELECT avg(age), min(age), max(age) FROM singer WHERE country = 'France'",
            (1, 0, 2),
            Hardness::Medium,
        ),
        (
            "SELECT country, count(*) FROM singer GROUP BY country",
            (1, 0, 1),
            Hardness::Medium,
        ),
        (
            "SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id",
            (1, 0, 0),
            Hardness::Easy,
        ),
        (
            "SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)",
            (1, 1, 0),
            Hardness::Hard,
        ),
        (
            "SELECT name FROM singer WHERE country = 'France' INTERSECT SELECT name FROM singer WHERE age > 30",
            (1, 1, 0),
            Hardness::Hard,
        ),
        (
            "SELECT name FROM stadium ORDER BY capacity DESC LIMIT 1",
            (2, 0, 0),
            Hardness::Medium,
        ),
        (
            "SELECT name FROM singer WHERE name LIKE '%a%' OR country = 'USA'",
            (3, 0, 1),
            Hardness::Hard,
        ),
        (
            "SELECT country FROM singer GROUP BY country HAVING count(*) > 1 AND avg(age) > 30",
            (1, 0, 0),
            Hardness::Easy,
        ),
        (
            "SELECT country FROM singer GROUP BY country HAVING count(*) > 1 AND avg(age) > 30 OR max(age) > 40",
            (2, 0, 1),
            Hardness::Medium,
        ),
        (
            "SELECT name FROM singer WHERE country NOT LIKE 'F%' AND age > 20",
            (2, 0, 1),
            Hardness::Medium,
        ),
        (
            "SELECT T1.name, count(*) FROM stadium AS T1 JOIN concert AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T1.stadium_id ORDER BY count(*) DESC LIMIT 1",
            (4, 0, 2),
            Hardness::Extra,
        ),
        (
            "SELECT T3.name FROM singer_in_concert AS T1 JOIN concert AS T2 ON T1.concert_id = T2.concert_id JOIN stadium AS T3 ON T2.stadium_id = T3.stadium_id WHERE T2.year = '2014'",
            (3, 0, 0),
            Hardness::Hard,
        ),
        (
            "SELECT name FROM singer WHERE singer_id NOT IN (SELECT singer_id FROM singer_in_concert)",
            (1, 1, 0),
            Hardness::Hard,
        ),
        (
            "SELECT name FROM singer WHERE age = (SELECT max(age) FROM singer) UNION SELECT name FROM stadium",
            (1, 2, 0),
            Hardness::Extra,
        ),
        ("SELECT count(*), avg(age) FROM singer", (0, 0, 2), Hardness::Medium),
    ];

    #[test]
    fn spec_vectors() {
        let schema = fixture_schema();
        for (sql, (comp1, comp2, others), expected) in VECTORS {
            let tree = parse(sql, &schema).unwrap_or_else(|e| panic!("{sql}: {e}"));
            let expected_components = Components {
                comp1,
                comp2,
                others,
            };
            assert_eq!(components(&tree), expected_components, "{sql}");
            assert_eq!(hardness(&tree), expected, "{sql}");
        }
    }

    #[test]
    fn spec_vectors_with_a_sqlite_schema() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("concert_singer.sqlite");
        let conn = rusqlite::Connection::open(&db).expect("create db");
        conn.execute_batch(
            "CREATE TABLE singer (Singer_ID INTEGER PRIMARY KEY, Name TEXT, Country TEXT, Age INT, Is_Male TEXT);
             CREATE TABLE stadium (Stadium_ID INTEGER PRIMARY KEY, Name TEXT, Location TEXT, Capacity INT);
             CREATE TABLE concert (concert_ID INTEGER PRIMARY KEY, concert_Name TEXT,
                                   Stadium_ID INT REFERENCES stadium(Stadium_ID), Year TEXT);
             CREATE TABLE singer_in_concert (concert_ID INT, Singer_ID INT);",
        )
        .expect("create tables");
        drop(conn);
        let schema = Schema::from_sqlite(&*sqlgate_engine_sqlite::files(), &db).expect("schema");
        assert_eq!(schema, fixture_schema());
        for (sql, _, expected) in VECTORS {
            assert_eq!(crate::spider::classify(sql, &schema), Ok(expected), "{sql}");
        }
    }

    #[test]
    fn where_not_counts_as_an_aggregate() {
        // two NOTs in WHERE make agg_count 2 although nothing is aggregated
        let schema = fixture_schema();
        let sql = "SELECT name FROM singer WHERE singer_id NOT IN (SELECT singer_id FROM singer_in_concert) \
                   AND age NOT IN (SELECT age FROM singer)";
        let tree = parse(sql, &schema).expect("parses");
        assert_eq!(aggregate_count(&tree), 2);
    }

    #[test]
    fn having_aggregates_are_not_counted() {
        let schema = fixture_schema();
        let tree = parse(
            "SELECT country FROM singer GROUP BY country HAVING max(age) > 1",
            &schema,
        )
        .expect("parses");
        assert_eq!(aggregate_count(&tree), 0);
    }

    #[test]
    fn display_and_serde_are_lowercase() {
        assert_eq!(Hardness::Extra.to_string(), "extra");
        assert_eq!(
            serde_json::to_string(&Hardness::Medium).ok().as_deref(),
            Some("\"medium\"")
        );
        let parsed: Hardness = serde_json::from_str("\"hard\"").expect("deserializes");
        assert_eq!(parsed, Hardness::Hard);
    }
}
