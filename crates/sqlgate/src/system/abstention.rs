//! When an answer is an abstention although the system did not say `{"abstain": true}`
//! (TrustSQL, appendix A.5-A.6): an apology SELECT, a reply matching a pattern, or samples
//! that do not agree enough (SQLPROMPT's voting).

use regex::Regex;

use super::Reply;
use crate::config::{AbstentionConfig, AbstentionError};
use sqlgate_eval::loaders::Benchmark;
use sqlgate_eval::metrics::ex::Mode;
use sqlgate_eval::model_output::{clean_sql, is_apology};

/// The rules of an [`AbstentionConfig`], checked.
pub struct Abstention {
    /// Unset: decided per suite ([`Benchmark::apology_abstains_by_default`]).
    apology: Option<bool>,
    pattern: Option<Regex>,
    vote: Option<f64>,
}

impl Abstention {
    /// Checks `config`; an invalid `pattern` is refused here.
    pub fn new(config: &AbstentionConfig) -> Result<Abstention, AbstentionError> {
        Ok(Abstention {
            apology: config.apology,
            pattern: config.checked_pattern()?,
            vote: config.vote,
        })
    }

    /// Whether replies' samples are voted on.
    pub fn votes(&self) -> bool {
        self.vote.is_some()
    }

    /// Whether an apology SELECT abstains in a suite of `bench` scored in `mode`.
    pub fn apology_abstains(&self, bench: &Benchmark, mode: Mode) -> bool {
        self.apology
            .unwrap_or_else(|| bench.apology_abstains_by_default(mode))
    }

    /// The reply, turned into an abstention when a rule says so (`apology`: what
    /// [`Abstention::apology_abstains`] says for its suite).
    pub fn apply(&self, mut reply: Reply, apology: bool) -> Reply {
        if let (Some(ratio), false) = (self.vote, reply.samples.is_empty()) {
            reply.sql = vote(&reply.samples, ratio);
        }
        let abstains = reply.sql.as_deref().is_some_and(|sql| {
            (apology && is_apology(sql)) || self.pattern.as_ref().is_some_and(|p| p.is_match(sql))
        });
        if abstains {
            reply.sql = None;
        }
        reply
    }
}

/// TrustSQL's vote (A.6): samples are cleaned and non-SELECTs count as abstentions, as abstaining
/// samples do; the
/// distinct answers are visited in code-point order and the first held by at least
/// `floor(n x ratio)` samples wins; none, or a winning abstention, abstains. The winning string
/// itself is returned (the reference's index defect is not reproduced).
pub fn vote(samples: &[Option<String>], ratio: f64) -> Option<String> {
    let answers: Vec<Option<String>> = samples
        .iter()
        .map(|sample| {
            let sql = clean_sql(sample.as_deref()?).sql;
            sql.trim_start()
                .to_lowercase()
                .starts_with("select")
                .then_some(sql)
        })
        .collect();
    let threshold = ((answers.len() as f64) * ratio).floor() as usize;
    let mut distinct: Vec<&Option<String>> = answers.iter().collect();
    distinct.sort();
    distinct.dedup();
    // `None` sorts first, like the reference's `"null"` among SQL strings starting with `S`.
    distinct
        .into_iter()
        .find(|answer| answers.iter().filter(|a| a == answer).count() >= threshold.max(1))
        .cloned()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(sql: &str, samples: &[&str]) -> Reply {
        Reply {
            sql: Some(sql.to_string()),
            cleaned: false,
            samples: samples.iter().map(|s| Some(s.to_string())).collect(),
            retrieved: Vec::new(),
            truncated: false,
            usage: None,
            script: None,
        }
    }

    #[test]
    fn unanimous_samples_are_kept_and_disagreement_abstains() {
        let same = [
            "SELECT a FROM t",
            "SELECT a FROM t",
            "```sql\nSELECT a FROM t\n```",
        ];
        assert_eq!(
            vote(&same.map(|s| Some(s.to_string())), 1.0).as_deref(),
            Some("SELECT a FROM t")
        );
        let split = ["SELECT a FROM t", "SELECT b FROM t", "SELECT a FROM t"];
        assert_eq!(vote(&split.map(|s| Some(s.to_string())), 1.0), None);
        assert_eq!(
            vote(&split.map(|s| Some(s.to_string())), 0.6).as_deref(),
            Some("SELECT a FROM t")
        );
        let refusing = ["I cannot answer", "I cannot answer", "SELECT a FROM t"];
        // floor(3 x 0.6) = 1 sample suffices, and abstentions come first in code-point order.
        assert_eq!(vote(&refusing.map(|s| Some(s.to_string())), 0.6), None);
    }

    #[test]
    fn apologies_patterns_and_votes_become_abstentions() {
        let rules = Abstention::new(&AbstentionConfig {
            apology: Some(true),
            pattern: Some("(?i)not_answerable".to_string()),
            vote: Some(1.0),
        })
        .unwrap();
        assert_eq!(
            rules
                .apply(reply("SELECT 'Sorry, no data.' AS answer", &[]), true)
                .sql,
            None
        );
        assert_eq!(
            rules.apply(reply("SELECT 'NOT_ANSWERABLE'", &[]), true).sql,
            None
        );
        assert_eq!(
            rules
                .apply(
                    reply("SELECT a FROM t", &["SELECT a FROM t", "SELECT b FROM t"]),
                    true
                )
                .sql,
            None
        );
        let kept = rules.apply(
            reply("SELECT a FROM t", &["SELECT a FROM t", "SELECT a FROM t"]),
            true,
        );
        assert_eq!(kept.sql.as_deref(), Some("SELECT a FROM t"));
        let lenient = Abstention::new(&AbstentionConfig {
            apology: Some(false),
            ..AbstentionConfig::default()
        })
        .unwrap();
        assert!(lenient
            .apply(reply("SELECT 'Sorry' AS answer", &[]), false)
            .sql
            .is_some());
        assert!(Abstention::new(&AbstentionConfig {
            vote: Some(0.0),
            ..AbstentionConfig::default()
        })
        .is_err());
        assert!(Abstention::new(&AbstentionConfig {
            pattern: Some("(".into()),
            ..AbstentionConfig::default()
        })
        .is_err());
    }
}
