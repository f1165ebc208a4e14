//! BIRD's efficiency scores (spec `evaluators.md` 3.3-3.4), as pure functions of measurements,
//! and their measurement ([`measure`]).
//!
//! - **VES** (`AlibabaResearch/DAMO-ConvAI:bird/llm/src/evaluation_ves.py`): per case, the mean
//!   `R` of the time ratios `t_gold / t_pred` of repeated executions, after outlier cleaning;
//!   the suite's score is the mean of `100 * sqrt(R)`.
//! - **R-VES** (`bird-bench/mini_dev:evaluation/evaluation_ves.py`): the same `R` mapped to a
//!   reward tier ([`reward`]); the score is the mean of `100 * sqrt(reward)`.
//! - **The steps variant** (sqlgate's): the same two formulas on the ratio of one deterministic
//!   cost of each query instead of times: SQLite virtual-machine steps, or PostgreSQL's planner
//!   estimate. It gives the same number on any machine.
//!
//! The reference computes its statistics with numpy; [`time_ratio`] reproduces them bit for bit
//! (numpy's pairwise summation, the population standard deviation, strict bounds), and the
//! sums of [`mean_score`] run in case order as the reference's loop does.

pub mod measure;

/// The reward tiers of R-VES, highest first: a ratio of at least the bound earns the reward.
const REWARD_TIERS: [(f64, f64); 4] = [(2.0, 1.25), (1.0, 1.0), (0.5, 0.75), (0.25, 0.5)];
/// The reward of a positive ratio below every tier.
const LOWEST_REWARD: f64 = 0.25;

/// BIRD's per-case time ratio `R` from each iteration's `(t_gold, t_pred)` in seconds: the
/// ratios `t_gold / t_pred`, those within three population standard deviations of their
/// mean (strictly) kept, and their mean. Where the reference raises (a prediction timed at 0,
/// nothing kept, as when every ratio is equal so that the deviation is 0) and scores the case
/// 0, so does this.
pub fn time_ratio(times: &[(f64, f64)]) -> f64 {
    if times.iter().any(|&(_, pred)| pred == 0.0) {
        return 0.0;
    }
    let ratios: Vec<f64> = times.iter().map(|&(gold, pred)| gold / pred).collect();
    let kept = without_outliers(&ratios);
    if kept.is_empty() {
        return 0.0;
    }
    // Python's `sum` of floats, before 3.12: left to right from 0.
    kept.iter().fold(0.0, |sum, x| sum + x) / kept.len() as f64
}

/// The ratios `x` with `mean - 3σ < x < mean + 3σ`, σ the population deviation, as
/// `clean_abnormal` computes them with `np.mean` and `np.std`.
pub fn without_outliers(ratios: &[f64]) -> Vec<f64> {
    let (mean, std) = mean_and_std(ratios);
    ratios
        .iter()
        .copied()
        .filter(|&x| x < mean + 3.0 * std && x > mean - 3.0 * std)
        .collect()
}

/// `np.mean` and `np.std` (the population deviation) of the values: NaN for none.
pub fn mean_and_std(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = pairwise_sum(values) / n;
    let squares: Vec<f64> = values.iter().map(|x| (x - mean) * (x - mean)).collect();
    (mean, (pairwise_sum(&squares) / n).sqrt())
}

/// numpy's sum of a contiguous float64 array: below 8 values left to right; up to 128 in
/// eight interleaved partial sums, combined pairwise, then the rest; beyond, the two halves
/// (the first a multiple of 8 long) summed apart.
fn pairwise_sum(values: &[f64]) -> f64 {
    const UNROLL: usize = 8;
    const BLOCK: usize = 128;
    let n = values.len();
    if n < UNROLL {
        values.iter().fold(0.0, |sum, x| sum + x)
    } else if n <= BLOCK {
        let mut partial = [0.0; UNROLL];
        partial.copy_from_slice(&values[..UNROLL]);
        let whole = n - n % UNROLL;
        for chunk in values[UNROLL..whole].chunks_exact(UNROLL) {
            for (sum, x) in partial.iter_mut().zip(chunk) {
                *sum += x;
            }
        }
        let p = partial;
        let combined = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
        values[whole..].iter().fold(combined, |sum, x| sum + x)
    } else {
        let half = n / 2;
        let half = half - half % UNROLL;
        pairwise_sum(&values[..half]) + pairwise_sum(&values[half..])
    }
}

/// The ratio of one deterministic cost of each query (the steps variant): `gold / pred`, 0
/// when the prediction's cost is 0 (as the reference scores a prediction timed at 0).
pub fn cost_ratio(gold: f64, pred: f64) -> f64 {
    if pred == 0.0 {
        0.0
    } else {
        gold / pred
    }
}

/// R-VES's reward for a ratio: 0 for 0 (wrong, failed, timed out), then 0.25, 0.5, 0.75, 1
/// and 1.25 from the bounds 0.25, 0.5, 1 and 2 up.
pub fn reward(ratio: f64) -> f64 {
    if ratio == 0.0 {
        return 0.0;
    }
    REWARD_TIERS
        .iter()
        .find(|(bound, _)| ratio >= *bound)
        .map_or(LOWEST_REWARD, |&(_, reward)| reward)
}

/// One case's contribution, `100 * sqrt(value)`: its VES from a ratio, its R-VES from a reward.
pub fn case_score(value: f64) -> f64 {
    value.sqrt() * 100.0
}

/// The suite's score from each case's ratio (VES) or reward (R-VES): the mean of
/// [`case_score`], summed in case order; 0 without cases.
pub fn mean_score(values: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(sum, n), v| (sum + case_score(v), n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

/// One case's efficiency from one ratio: the ratio, and its VES and R-VES terms.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ratio {
    /// `R`: BIRD's cleaned mean time ratio, or the steps variant's cost ratio; 0 when the
    /// case is not correct or could not be measured.
    pub ratio: f64,
    /// `100 * sqrt(R)`.
    pub ves: f64,
    /// `100 * sqrt(reward(R))`.
    pub rves: f64,
}

impl Ratio {
    /// The scores of ratio `ratio`.
    pub fn of(ratio: f64) -> Ratio {
        Ratio {
            ratio,
            ves: case_score(ratio),
            rves: case_score(reward(ratio)),
        }
    }
}

#[cfg(test)]
mod tests;
