//! The registry of per-case metrics: each is one module that owns its definition and its
//! computation, and one line of `REGISTRY`. Every consumer iterates the registry: scoring
//! (`score`, the gate), the suite means and gates (`gate = { <name> = ">= 0.9" }`), run
//! records, snapshots, JUnit properties, `sqlgate diff`, the HTML report, `score`'s text and
//! JSON, and the table of docs/metrics.md, which a test checks against the registry.
//!
//! A registered metric scores a feasible case from its gold query (alternatives), its database
//! and the predicted SQL, as a value in [0, 1]; a suite's value is the mean over its feasible
//! cases (an abstention or a missing answer scores 0). When it cannot be computed (the gold
//! does not run), the case scores 0 and gets the diagnostic `<name>_error`, which the gate
//! counts and fails closed on.

mod row_count;
mod sql_match;

use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

use crate::exec::QueryRunner;

/// Every registered metric, in report order. Adding a metric is a module and a line here.
const REGISTRY: &[&Definition] = &[&row_count::METRIC, &sql_match::METRIC];

/// What a registered metric is: its names, its one-line definition and how a case is scored.
pub struct Definition {
    /// Its name in `sqlgate.toml` (`metrics`, `gate`), JSON, records and snapshots: lower-case
    /// letters, digits and `_`.
    pub name: &'static str,
    /// The diagnostic a case gets when the metric cannot be computed for it: `<name>_error`.
    pub error_code: &'static str,
    /// One sentence saying what a case's value is, for the docs table and `--help`.
    pub definition: &'static str,
    /// Scores a feasible case that has an answer, in [0, 1].
    pub score: fn(&CaseContext<'_>) -> Result<f64, MetricError>,
}

/// What a registered metric reads to score a case.
#[derive(Clone, Copy)]
pub struct CaseContext<'a> {
    /// The gold query and its alternatives (a case is as good as its best match).
    pub gold: &'a [String],
    /// The case's own database.
    pub database: &'a Path,
    /// The predicted SQL, as executed.
    pub sql: &'a str,
    /// Runs queries, sharing the executions EX already asked for.
    pub runner: &'a dyn QueryRunner,
}

/// Why a metric has no value for a case: the case scores 0 and says so.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MetricError(pub String);

/// A registered metric, by its place in the registry.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CaseMetric(usize);

impl CaseMetric {
    /// Every registered metric, in report order.
    pub fn all() -> impl Iterator<Item = CaseMetric> {
        (0..REGISTRY.len()).map(CaseMetric)
    }

    /// The metric of that name, if one is registered.
    pub fn named(name: &str) -> Option<CaseMetric> {
        CaseMetric::all().find(|metric| metric.name() == name)
    }

    fn definition_of(self) -> &'static Definition {
        REGISTRY[self.0]
    }

    /// Its name in configuration and outputs.
    pub fn name(self) -> &'static str {
        self.definition_of().name
    }

    /// What a case's value is, in one sentence.
    pub fn definition(self) -> &'static str {
        self.definition_of().definition
    }

    /// The diagnostic code of a case it could not be computed for.
    pub fn error_code(self) -> &'static str {
        self.definition_of().error_code
    }

    /// A case's value: 0 without an answer (`sql` is `None`), else the metric's score.
    pub fn score(
        self,
        gold: &[String],
        database: &Path,
        sql: Option<&str>,
        runner: &dyn QueryRunner,
    ) -> Result<f64, MetricError> {
        let Some(sql) = sql else {
            return Ok(0.0);
        };
        let context = CaseContext {
            gold,
            database,
            sql,
            runner,
        };
        let value = (self.definition_of().score)(&context)?;
        if (0.0..=1.0).contains(&value) {
            Ok(value)
        } else {
            Err(MetricError(format!(
                "{} gave {value}, outside [0, 1]",
                self.name()
            )))
        }
    }
}

impl fmt::Debug for CaseMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for CaseMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for CaseMetric {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for CaseMetric {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        CaseMetric::named(&name).ok_or_else(|| {
            de::Error::custom(format!(
                "unknown per-case metric `{name}` (registered: {})",
                CaseMetric::all()
                    .map(CaseMetric::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_registered_metric_is_named_once_with_its_error_code() {
        let mut names = HashSet::new();
        for metric in CaseMetric::all() {
            let name = metric.name();
            assert!(names.insert(name), "`{name}` is registered twice");
            assert!(
                !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "`{name}`"
            );
            assert_eq!(metric.error_code(), format!("{name}_error"));
            assert!(metric.definition().ends_with('.'), "{name}");
            assert_eq!(CaseMetric::named(name), Some(metric));
            let json = serde_json::to_string(&metric).unwrap();
            assert_eq!(serde_json::from_str::<CaseMetric>(&json).unwrap(), metric);
        }
        assert!(CaseMetric::named("nope").is_none());
        assert!(serde_json::from_str::<CaseMetric>("\"nope\"")
            .unwrap_err()
            .to_string()
            .contains("unknown per-case metric `nope`"));
    }

    #[test]
    fn no_answer_scores_zero_without_running_anything() {
        let runner = crate::metrics::ex::testkit::FakeRunner::new();
        for metric in CaseMetric::all() {
            let gold = ["SELECT 1".to_string()];
            assert_eq!(metric.score(&gold, Path::new("x"), None, &runner), Ok(0.0));
        }
    }
}
