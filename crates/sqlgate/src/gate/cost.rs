//! What a suite's answers cost the system: latency percentiles over the answers, tokens per
//! case and per correct case. A number is computed from every answer or not at all: when some
//! answers have no latency or no token count recorded, it says how many instead of averaging
//! the others under the same name.

use sqlgate_eval::scoring::Metric;

use crate::system::answer::AnswerCost;

/// A suite's cost, gathered from each case's answers.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CostSummary {
    /// Answers the suite's cases got (a case asked N times has N).
    pub answers: usize,
    /// The recorded latencies, in milliseconds, ascending.
    pub latencies_ms: Vec<u64>,
    /// Answers whose server counted their tokens.
    pub with_usage: usize,
    /// Prompt and completion tokens over those answers; `None` when they add up to more than
    /// 64 bits hold (a server's garbage counts), so that no mean is made of a wrapped sum.
    pub tokens: Option<u64>,
    /// The suite's cases.
    pub cases: usize,
    /// Of those, the correct ones.
    pub correct: usize,
}

/// The cost of a suite whose cases got these answers (`(costs, correct)` per case).
pub fn summarize<'a>(cases: impl IntoIterator<Item = (&'a [AnswerCost], bool)>) -> CostSummary {
    let mut summary = CostSummary {
        tokens: Some(0),
        ..CostSummary::default()
    };
    for (costs, correct) in cases {
        summary.cases += 1;
        summary.correct += usize::from(correct);
        for cost in costs {
            summary.answers += 1;
            summary.latencies_ms.extend(cost.latency_ms);
            if let Some(usage) = cost.usage {
                summary.with_usage += 1;
                summary.tokens = summary
                    .tokens
                    .zip(usage.total())
                    .and_then(|(sum, tokens)| sum.checked_add(tokens));
            }
        }
    }
    summary.latencies_ms.sort_unstable();
    summary
}

impl CostSummary {
    /// The `p`-th percentile (0 < p <= 100) of the answers' latency in seconds, by nearest
    /// rank: the smallest recorded latency that at least p% of the answers do not exceed.
    pub fn latency_percentile(&self, p: u32) -> Result<f64, CostError> {
        self.lacking("latency", self.latencies_ms.len())?;
        let n = self.latencies_ms.len();
        let rank = (u64::from(p) * n as u64).div_ceil(100).max(1) as usize;
        Ok(self.latencies_ms[rank.min(n) - 1] as f64 / 1000.0)
    }

    /// The mean tokens (prompt and completion, over all its answers) per case.
    pub fn tokens_mean(&self) -> Result<f64, CostError> {
        Ok(self.total_tokens()? as f64 / self.cases as f64)
    }

    /// All the suite's tokens over its correct cases; undefined when none is correct.
    pub fn tokens_per_correct(&self) -> Result<f64, CostError> {
        let tokens = self.total_tokens()?;
        if self.correct == 0 {
            return Err(CostError::NoneCorrect(self.cases));
        }
        Ok(tokens as f64 / self.correct as f64)
    }

    /// The suite's tokens, when every answer has a count and they add up.
    fn total_tokens(&self) -> Result<u64, CostError> {
        self.lacking("token usage", self.with_usage)?;
        self.tokens.ok_or(CostError::TokensOverflow(self.answers))
    }

    /// A cost metric's value, or why it cannot be computed; `None` for other metrics. The
    /// reason is text, as the gate's verdict carries it beside the other metrics' reasons.
    pub(crate) fn metric(&self, metric: Metric) -> Option<Result<f64, String>> {
        let value = match metric {
            Metric::LatencyP50 => self.latency_percentile(50),
            Metric::LatencyP95 => self.latency_percentile(95),
            Metric::TokensMean => self.tokens_mean(),
            Metric::TokensPerCorrect => self.tokens_per_correct(),
            _ => return None,
        };
        Some(value.map_err(|why| why.to_string()))
    }

    /// The cost metrics that could be computed (latency in seconds).
    pub fn values(&self) -> Vec<(Metric, f64)> {
        [
            Metric::LatencyP50,
            Metric::LatencyP95,
            Metric::TokensMean,
            Metric::TokensPerCorrect,
        ]
        .into_iter()
        .filter_map(|metric| Some((metric, self.metric(metric)?.ok()?)))
        .collect()
    }

    /// One line for the run's summary, `None` when no answer has a latency or a token count
    /// (a predictions file, a cassette recorded before sqlgate kept them): `latency p50
    /// 0.84 s, p95 2.1 s over 40 answers; tokens 812.5 per case, 1625 per correct case`.
    pub fn describe(&self) -> Option<String> {
        if self.latencies_ms.is_empty() && self.with_usage == 0 {
            return None;
        }
        let latency = match (self.latency_percentile(50), self.latency_percentile(95)) {
            (Ok(p50), Ok(p95)) => format!(
                "latency p50 {} s, p95 {} s over {} answer(s)",
                seconds(p50),
                seconds(p95),
                self.answers
            ),
            (Err(why), _) | (_, Err(why)) => format!("latency: {why}"),
        };
        let tokens = match (self.tokens_mean(), self.tokens_per_correct()) {
            (Ok(mean), Ok(per_correct)) => format!(
                "tokens {} per case, {} per correct case",
                tokens(mean),
                tokens(per_correct)
            ),
            (Ok(mean), Err(why)) => format!("tokens {} per case ({why})", tokens(mean)),
            (Err(why), _) => format!("tokens: {why}"),
        };
        Some(format!("{latency}; {tokens}"))
    }

    /// `Err` saying how many answers lack `what` unless all `having` of them have it.
    fn lacking(&self, what: &'static str, having: usize) -> Result<(), CostError> {
        if self.answers == 0 {
            return Err(CostError::NoAnswers);
        }
        match self.answers - having {
            0 => Ok(()),
            missing if missing == self.answers => Err(CostError::NoneRecorded {
                what,
                answers: self.answers,
            }),
            missing => Err(CostError::SomeMissing {
                what,
                missing,
                answers: self.answers,
            }),
        }
    }
}

/// Why a cost metric is not computed: a number is made of every answer or of none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CostError {
    /// The suite has no answers at all.
    #[error("the suite has no answers")]
    NoAnswers,
    /// No answer has the measure (`latency`, `token usage`).
    #[error("no {what} recorded for any of the {answers} answer(s)")]
    NoneRecorded {
        /// The measure.
        what: &'static str,
        /// The suite's answers.
        answers: usize,
    },
    /// Some answers lack the measure.
    #[error("no {what} recorded for {missing} of the {answers} answer(s)")]
    SomeMissing {
        /// The measure.
        what: &'static str,
        /// Answers without it.
        missing: usize,
        /// The suite's answers.
        answers: usize,
    },
    /// The token counts add up past 64 bits: garbage from a server, never a mean.
    #[error(
        "the token counts of the {0} answer(s) add up to more than 2^64 - 1: a server sent \
         counts no model spends"
    )]
    TokensOverflow(usize),
    /// No case is correct, so there is nothing to divide by.
    #[error("none of the {0} case(s) is correct, so tokens per correct case is undefined")]
    NoneCorrect(usize),
}

/// Seconds to the millisecond they were recorded at: `0.84`, `12.5`.
fn seconds(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A token count or mean, to one decimal: `812.5`, `1625`.
fn tokens(value: f64) -> String {
    let text = format!("{value:.1}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::Usage;

    fn cost(latency_ms: Option<u64>, tokens: Option<(u64, u64)>) -> AnswerCost {
        AnswerCost {
            latency_ms,
            usage: tokens.map(|(prompt_tokens, completion_tokens)| Usage {
                prompt_tokens,
                completion_tokens,
            }),
        }
    }

    #[test]
    fn percentiles_are_nearest_rank_over_answers() {
        // Latencies 1..=20 ms, one answer per case, listed out of order.
        let costs: Vec<[AnswerCost; 1]> = (1..=20u64)
            .rev()
            .map(|ms| [cost(Some(ms), Some((ms, 1)))])
            .collect();
        let summary = summarize(costs.iter().map(|c| (c.as_slice(), true)));
        // p50 of 20: rank 10; p95: rank 19.
        assert_eq!(summary.latency_percentile(50), Ok(0.010));
        assert_eq!(summary.latency_percentile(95), Ok(0.019));
        assert_eq!(summary.latency_percentile(100), Ok(0.020));
        // One answer: every percentile is it.
        let one = [cost(Some(1234), None)];
        let single = summarize([(one.as_slice(), false)]);
        assert_eq!(single.latency_percentile(50), Ok(1.234));
        assert_eq!(single.latency_percentile(95), Ok(1.234));
    }

    #[test]
    fn tokens_are_per_case_and_per_correct_case() {
        // Two cases: one answered twice (samples), one once; one correct.
        let first = [cost(None, Some((100, 20))), cost(None, Some((100, 30)))];
        let second = [cost(None, Some((90, 10)))];
        let summary = summarize([(first.as_slice(), true), (second.as_slice(), false)]);
        assert_eq!(summary.answers, 3);
        assert_eq!(summary.tokens_mean(), Ok(175.0));
        assert_eq!(summary.tokens_per_correct(), Ok(350.0));
        assert_eq!(summary.metric(Metric::TokensMean), Some(Ok(175.0)));
        assert_eq!(summary.metric(Metric::Ex), None);
        let none_correct = summarize([(second.as_slice(), false)]);
        let why = none_correct.tokens_per_correct().unwrap_err().to_string();
        assert!(why.contains("none of the 1 case(s) is correct"), "{why}");
    }

    /// `prompt_tokens = 2^64 - 1` from a server wrapped to "tokens 1 per case", passing a
    /// `tokens_mean <= 100` gate: a sum past 64 bits is an error, never a number.
    #[test]
    fn token_counts_that_overflow_are_an_error_not_a_wrapped_mean() {
        let huge = [cost(None, Some((u64::MAX, 2)))];
        let summary = summarize([(huge.as_slice(), true)]);
        for value in [summary.tokens_mean(), summary.tokens_per_correct()] {
            let why = value.unwrap_err().to_string();
            assert_eq!(
                why,
                "the token counts of the 1 answer(s) add up to more than 2^64 - 1: a server \
                 sent counts no model spends"
            );
        }
        assert!(summary
            .values()
            .iter()
            .all(|(metric, _)| !metric.to_string().starts_with("tokens")));
        // Each count fits, their sum over cases does not.
        let half = [cost(None, Some((u64::MAX / 2 + 1, 0)))];
        let summary = summarize([(half.as_slice(), true), (half.as_slice(), true)]);
        assert!(summary.tokens_mean().is_err());
        assert!(summary
            .describe()
            .unwrap()
            .contains("tokens: the token counts"));
    }

    #[test]
    fn missing_latency_or_usage_is_counted_never_averaged_over() {
        let with = [cost(Some(10), Some((5, 5)))];
        let without = [cost(None, None)];
        let summary = summarize([(with.as_slice(), true), (without.as_slice(), true)]);
        let why = summary.latency_percentile(95).unwrap_err().to_string();
        assert_eq!(why, "no latency recorded for 1 of the 2 answer(s)");
        let why = summary.tokens_mean().unwrap_err().to_string();
        assert_eq!(why, "no token usage recorded for 1 of the 2 answer(s)");
        assert!(summary.values().is_empty());
        let line = summary.describe().unwrap();
        assert!(
            line.starts_with("latency: no latency recorded for 1 of"),
            "{line}"
        );

        // A predictions file: nothing recorded, nothing to describe, no metric of 0.
        let replayed = summarize([(without.as_slice(), true)]);
        assert_eq!(replayed.describe(), None);
        let why = replayed.latency_percentile(50).unwrap_err().to_string();
        assert_eq!(why, "no latency recorded for any of the 1 answer(s)");
    }

    #[test]
    fn summary_line_names_every_number() {
        let costs = [
            [cost(Some(800), Some((700, 100)))],
            [cost(Some(2100), Some((800, 25)))],
        ];
        let summary = summarize([(costs[0].as_slice(), true), (costs[1].as_slice(), false)]);
        assert_eq!(
            summary.describe().unwrap(),
            "latency p50 0.8 s, p95 2.1 s over 2 answer(s); tokens 812.5 per case, 1625 per \
             correct case"
        );
        let names: Vec<String> = summary
            .values()
            .into_iter()
            .map(|(metric, _)| metric.to_string())
            .collect();
        assert_eq!(
            names,
            [
                "latency_p50",
                "latency_p95",
                "tokens_mean",
                "tokens_per_correct"
            ]
        );
    }
}
