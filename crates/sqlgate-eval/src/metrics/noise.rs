//! Telling a real drop from noise when each case is answered several times.
//!
//! A system that samples its answers passes a case in some share of its samples, and two runs
//! of the same system differ by chance. Two questions are asked of a baseline and a head run
//! over the same cases:
//! - did *this case* drop? A one-sided Fisher exact test on its passed and failed samples
//!   ([`pass_rate_drop_p`]), judged case by case with the family-wise error held by Bonferroni
//!   ([`case_drop_significant`]);
//! - is the head *as a whole* worse? A paired sign-flip permutation test on the per-case
//!   differences of pass rates ([`regression_p`]), which is the exact McNemar test when each
//!   case has one sample ([`mcnemar_worse_p`]).
//!
//! Probabilities are summed from terms computed in log space, so thousands of samples neither
//! overflow nor underflow the binomial coefficients. Why these tests, and how often they raise
//! a false alarm by simulation: `docs/noise.md`.

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

/// How many of a case's sampled answers were correct.
///
/// `passed` is at most `samples`; a count above it is read as every sample passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassCount {
    /// The samples answered correctly.
    pub passed: u32,
    /// The samples asked.
    pub samples: u32,
}

impl PassCount {
    /// The share of samples answered correctly; 0 when there was no sample (nothing passed).
    pub fn rate(self) -> f64 {
        let count = self.valid();
        if count.samples == 0 {
            return 0.0;
        }
        f64::from(count.passed) / f64::from(count.samples)
    }

    /// The count with `passed` bounded by `samples`, so no probability sees more passes than
    /// draws.
    fn valid(self) -> PassCount {
        PassCount {
            passed: self.passed.min(self.samples),
            samples: self.samples,
        }
    }
}

/// One-sided exact test (Fisher's exact test on the 2x2 table of passed/failed samples,
/// baseline vs head): the probability, under "both runs have the same pass rate", of the head
/// passing this few or fewer given the margins. 1.0 when the head's rate is not lower.
///
/// Given the margins (all samples, all passes), the head's passes follow the hypergeometric
/// law whatever the common pass rate is, so the test is exact for any number of samples and
/// needs no estimate of that rate. A run without samples carries no evidence: 1.0.
pub fn pass_rate_drop_p(base: PassCount, head: PassCount) -> f64 {
    let (base, head) = (base.valid(), head.valid());
    // head.passed / head.samples >= base.passed / base.samples, cross-multiplied to stay exact.
    if u64::from(head.passed) * u64::from(base.samples)
        >= u64::from(base.passed) * u64::from(head.samples)
    {
        return 1.0;
    }
    let samples = u64::from(base.samples) + u64::from(head.samples);
    let passed = u64::from(base.passed) + u64::from(head.passed);
    let drawn = u64::from(head.samples);
    let ln_all_draws = ln_choose(samples, drawn);
    // The head cannot pass fewer than its samples minus every failure of both runs.
    let fewest = drawn.saturating_sub(samples - passed);
    let p: f64 = (fewest..=u64::from(head.passed))
        .map(|x| {
            (ln_choose(passed, x) + ln_choose(samples - passed, drawn - x) - ln_all_draws).exp()
        })
        .sum();
    p.min(1.0)
}

/// Which cases dropped significantly, with the family-wise error over the `pairs.len()` cases
/// held at `alpha` by Bonferroni (each case at alpha/m), so an unchanged system flags any case
/// in at most alpha of runs. (Bonferroni and not Holm: the gate judges cases one by one as they
/// finish, knowing only m.)
///
/// `p` is the case's [`pass_rate_drop_p`], `cases` is m. No case is flagged among none.
pub fn case_drop_significant(p: f64, alpha: f64, cases: usize) -> bool {
    cases > 0 && p <= alpha / cases as f64
}

/// The one-sided exact McNemar test on discordant pairs: of the `worse + better` cases whose
/// verdict changed, `worse` went from pass to fail. Under "head and baseline are equally good"
/// each change is worse or better with even odds, so the p-value is the chance of at least
/// `worse` heads in `worse + better` fair coin flips. 1.0 when no verdict changed.
pub fn mcnemar_worse_p(worse: u32, better: u32) -> f64 {
    let changed = u64::from(worse) + u64::from(better);
    let ln_every_outcome = changed as f64 * std::f64::consts::LN_2;
    let p: f64 = (u64::from(worse)..=changed)
        .map(|k| (ln_choose(changed, k) - ln_every_outcome).exp())
        .sum();
    p.min(1.0)
}

/// The Monte Carlo sign flips [`regression_p`] draws beyond [`EXACT_SIGN_FLIPS_UP_TO`] non-zero
/// differences: the p-value's standard error is then at most 0.0022 near 0.05 (a binomial
/// share of 10,000), small beside the gate's usual thresholds.
pub const REGRESSION_RESAMPLES: usize = 10_000;

/// Up to this many non-zero differences [`regression_p`] counts every sign assignment (at most
/// 2^20, counted as two halves of 2^10 each); beyond it, it draws them.
pub const EXACT_SIGN_FLIPS_UP_TO: usize = 20;

/// Sums of rate differences closer than this are the same sum, told apart from rounding: pass
/// rates are fractions k/N, so distinct sums of them differ by at least 1/(N1 N2), far above
/// it for any realistic sample counts, while rounding moves a sum by about 1e-13.
const SAME_SUM: f64 = 1e-9;

/// The one-sided p-value that the head is worse than the baseline over paired cases: the
/// paired sign-flip permutation test on the per-case differences of pass rates (head - base).
/// Exact (every sign assignment of the non-zero differences) up to 20 non-zero differences,
/// else [`REGRESSION_RESAMPLES`] seeded Monte Carlo flips with the (b+1)/(R+1) estimate (valid,
/// slightly conservative). With one sample per case every difference is -1, 0 or 1 and the test
/// is the exact McNemar test on the discordant pairs ([`mcnemar_worse_p`]). 1.0 when there is no
/// pair or no non-zero difference.
///
/// The statistic is the sum of the differences. If the two runs are equally good, each case's
/// difference is as likely to come out negated (its two runs swapped), so every assignment of
/// signs is equally likely; the p-value is the share of them summing to at most the observed
/// sum. A case with no sample on either side carries no difference. With one sample each, the
/// w worse and b better cases sum to b - w, and a flip assignment sums to at most that exactly
/// when at least w of the w + b changes are negative: McNemar's binomial tail.
pub fn regression_p(pairs: &[(PassCount, PassCount)], seed: u64) -> f64 {
    regression_p_resampled(pairs, seed, REGRESSION_RESAMPLES)
}

/// [`regression_p`] with `resamples` Monte Carlo flips instead of [`REGRESSION_RESAMPLES`].
/// The (b+1)/(R+1) estimate is a valid p-value for any R (under the null it is below alpha in
/// at most alpha of runs), so fewer resamples only make the p-value coarser, never a false
/// alarm likelier; simulations of many runs use it to stay quick.
pub fn regression_p_resampled(
    pairs: &[(PassCount, PassCount)],
    seed: u64,
    resamples: usize,
) -> f64 {
    let differences: Vec<f64> = pairs
        .iter()
        .filter(|(base, head)| base.samples > 0 && head.samples > 0)
        .map(|(base, head)| head.rate() - base.rate())
        .filter(|difference| *difference != 0.0)
        .collect();
    if differences.is_empty() {
        return 1.0;
    }
    let at_most = differences.iter().sum::<f64>() + SAME_SUM;
    if differences.len() <= EXACT_SIGN_FLIPS_UP_TO {
        exact_share_at_most(&differences, at_most)
    } else {
        drawn_share_at_most(&differences, at_most, seed, resamples)
    }
}

/// The share of all sign assignments of `differences` whose sum is at most `at_most`, counted
/// by meeting in the middle: every signed sum of each half (2^(m/2) each), and for each sum of
/// the first half, how many of the sorted second half's keep the total at most `at_most`.
/// Each signed sum adds at most 10 terms, so rounding stays far below [`SAME_SUM`].
fn exact_share_at_most(differences: &[f64], at_most: f64) -> f64 {
    let (first, second) = differences.split_at(differences.len() / 2);
    let mut second = signed_sums(second);
    second.sort_by(f64::total_cmp);
    let count: usize = signed_sums(first)
        .iter()
        .map(|left| second.partition_point(|right| left + right <= at_most))
        .sum();
    count as f64 / (1u64 << differences.len()) as f64
}

/// The sums of `values` under every assignment of signs.
fn signed_sums(values: &[f64]) -> Vec<f64> {
    values.iter().fold(vec![0.0], |sums, value| {
        sums.iter()
            .flat_map(|sum| [sum + value, sum - value])
            .collect()
    })
}

/// The (b+1)/(R+1) estimate of the share of sign assignments summing to at most `at_most`,
/// from `resamples` seeded draws (b of them at most `at_most`): the observed assignment counts
/// as one more draw, which keeps the p-value valid however few the draws.
fn drawn_share_at_most(differences: &[f64], at_most: f64, seed: u64, resamples: usize) -> f64 {
    // Every signed sum of each run of 8 differences, so that a draw adds one of them per run,
    // picked by a random byte of sign bits, instead of flipping the differences one by one.
    let runs: Vec<Vec<f64>> = differences.chunks(8).map(signed_sums).collect();
    let mut rng = fastrand::Rng::with_seed(seed);
    let at_most_count = (0..resamples)
        .filter(|_| drawn_sum(&runs, &mut rng) <= at_most)
        .count();
    (at_most_count + 1) as f64 / (resamples + 1) as f64
}

/// One draw of a flipped sum: from each run's signed sums (2^k of them for k differences), the
/// one a random byte picks, 8 bytes to a random word.
fn drawn_sum(runs: &[Vec<f64>], rng: &mut fastrand::Rng) -> f64 {
    let mut bits = 0;
    let mut sum = 0.0;
    for (index, sums) in runs.iter().enumerate() {
        if index % 8 == 0 {
            bits = rng.u64(..);
        }
        sum += sums[bits as usize & (sums.len() - 1)];
        bits >>= 8;
    }
    sum
}

/// ln C(n, k), 0 choices (-inf) when k > n.
fn ln_choose(n: u64, k: u64) -> f64 {
    if k > n {
        return f64::NEG_INFINITY;
    }
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

/// ln n!: summed logs below 20, Stirling's series from there, whose first omitted term,
/// 1/(1188 n^9), is below 2e-15 at n = 20 (std has no stable ln-gamma).
fn ln_factorial(n: u64) -> f64 {
    if n < 20 {
        return (2..=n).map(|k| (k as f64).ln()).sum();
    }
    let n = n as f64;
    let inverse = 1.0 / n;
    let inverse_squared = inverse * inverse;
    let series = inverse
        * (1.0 / 12.0
            - inverse_squared
                * (1.0 / 360.0 - inverse_squared * (1.0 / 1260.0 - inverse_squared / 1680.0)));
    n * n.ln() - n + 0.5 * (std::f64::consts::TAU * n).ln() + series
}
