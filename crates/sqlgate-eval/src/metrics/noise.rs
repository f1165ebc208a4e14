//! PLACEHOLDER (replaced by the noise branch): the agreed API only.

use serde::{Deserialize, Serialize};

/// How many of a case's sampled answers were correct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassCount {
    /// Correct samples.
    pub passed: u32,
    /// Samples.
    pub samples: u32,
}

impl PassCount {
    /// The share correct.
    pub fn rate(self) -> f64 {
        f64::from(self.passed) / f64::from(self.samples.max(1))
    }
}

fn ln_choose(n: u32, k: u32) -> f64 {
    (1..=k)
        .map(|i| (f64::from(n - k + i) / f64::from(i)).ln())
        .sum()
}

/// One-sided Fisher.
pub fn pass_rate_drop_p(base: PassCount, head: PassCount) -> f64 {
    if head.rate() >= base.rate() {
        return 1.0;
    }
    let successes = base.passed + head.passed;
    let total = base.samples + head.samples;
    let denominator = ln_choose(total, head.samples);
    (0..=head.passed)
        .filter(|&x| x <= successes && head.samples - x <= total - successes)
        .map(|x| {
            (ln_choose(successes, x) + ln_choose(total - successes, head.samples - x) - denominator)
                .exp()
        })
        .sum::<f64>()
        .min(1.0)
}

/// Bonferroni.
pub fn case_drop_significant(p: f64, alpha: f64, cases: usize) -> bool {
    p <= alpha / cases.max(1) as f64
}

/// Sign flip, exact.
pub fn regression_p(pairs: &[(PassCount, PassCount)], _seed: u64) -> f64 {
    let differences: Vec<f64> = pairs
        .iter()
        .map(|(base, head)| head.rate() - base.rate())
        .filter(|d| *d != 0.0)
        .collect();
    if differences.is_empty() || differences.len() > 20 {
        return 1.0;
    }
    let observed: f64 = differences.iter().sum();
    let total = 1u64 << differences.len();
    let as_low = (0..total)
        .filter(|signs| {
            let sum: f64 = differences
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    if signs >> i & 1 == 1 {
                        -d.abs()
                    } else {
                        d.abs()
                    }
                })
                .sum();
            sum <= observed + 1e-12
        })
        .count();
    as_low as f64 / total as f64
}
