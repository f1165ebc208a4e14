//! Hand-derived vectors of the formulas; parity with the reference's numpy statistics is in
//! `tests/integration/efficiency_parity.rs`.

use super::*;

/// Times whose ratios `t_gold / t_pred` are `ratios` (each prediction timed at 1 s).
fn times(ratios: &[f64]) -> Vec<(f64, f64)> {
    ratios.iter().map(|&r| (r, 1.0)).collect()
}

#[test]
fn equal_ratios_leave_nothing_after_cleaning_and_score_zero() {
    // σ = 0: no ratio is strictly inside (mean, mean), the reference divides by zero.
    assert_eq!(time_ratio(&times(&[2.0; 100])), 0.0);
    assert_eq!(time_ratio(&[(0.3, 0.1), (0.3, 0.1)]), 0.0);
    assert!(without_outliers(&[2.0; 5]).is_empty());
}

#[test]
fn a_prediction_timed_at_zero_scores_zero() {
    assert_eq!(time_ratio(&[(1.0, 1.0), (2.0, 0.0), (3.0, 1.0)]), 0.0);
    // Nothing timed at all (no iteration) is nothing kept.
    assert_eq!(time_ratio(&[]), 0.0);
}

#[test]
fn ratios_within_three_deviations_are_averaged() {
    // 1, 2, 3: mean 2, σ = sqrt(2/3) ≈ 0.816; every ratio is inside (−0.449, 4.449).
    assert_eq!(time_ratio(&times(&[1.0, 2.0, 3.0])), 2.0);
    // 1, 2: mean 1.5, σ 0.5, bounds (0, 3).
    assert_eq!(time_ratio(&times(&[1.0, 2.0])), 1.5);
    // Halved times keep the ratio.
    assert_eq!(
        time_ratio(&[(0.5, 0.25), (1.0, 0.5), (3.0, 1.0)]),
        7.0 / 3.0
    );
}

#[test]
fn an_outlier_beyond_three_deviations_is_dropped() {
    // Nineteen 1s and one 100: mean 5.95, σ ≈ 21.58, upper bound ≈ 70.7: the 100 goes.
    let mut ratios = vec![1.0; 19];
    ratios.push(100.0);
    assert_eq!(without_outliers(&ratios), vec![1.0; 19]);
    assert_eq!(time_ratio(&times(&ratios)), 1.0);
    // Ten 1s and the 100: mean 10, σ ≈ 28.46, upper bound ≈ 95.4.
    let mut few = vec![1.0; 10];
    few.push(100.0);
    assert_eq!(without_outliers(&few).len(), 10);
    // Fewer than ten values cannot hold one: |x - mean| <= sqrt(n - 1)·σ.
    assert_eq!(without_outliers(&[1.0, 1.0, 1000.0]).len(), 3);
}

#[test]
fn sums_follow_numpy_pairwise_order() {
    // Eight values go through eight partial sums: (1e16 + 1) + (1 + 1) + ((1 + 1) + (1 + 1)),
    // where 1e16 + 1 rounds to 1e16 (ties to even) but 1e16 + 2 and + 4 are exact.
    let values = [1e16, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
    assert_eq!(pairwise_sum(&values), 1e16 + 6.0);
    // Seven are summed left to right: each + 1 rounds away.
    assert_eq!(pairwise_sum(&values[..7]), 1e16);
    // Past 128 the halves are summed apart: 1e16 alone in the first half of 136 (64 values),
    // the 72 ones of the second half exactly.
    let mut long = vec![0.0; 136];
    long[0] = 1e16;
    long[64..].fill(1.0);
    assert_eq!(pairwise_sum(&long), 1e16 + 72.0);
}

#[test]
fn rewards_follow_the_tiers_at_their_bounds() {
    let cases = [
        (0.0, 0.0),
        (1e-9, 0.25),
        (0.2499, 0.25),
        (0.25, 0.5),
        (0.4999, 0.5),
        (0.5, 0.75),
        (0.9999, 0.75),
        (1.0, 1.0),
        (1.9999, 1.0),
        (2.0, 1.25),
        (50.0, 1.25),
    ];
    for (ratio, expected) in cases {
        assert_eq!(reward(ratio), expected, "R = {ratio}");
    }
}

#[test]
fn scores_are_means_of_a_hundred_square_roots() {
    assert_eq!(mean_score([1.0, 0.0, 4.0]), 100.0);
    assert_eq!(mean_score([]), 0.0);
    let ratio = Ratio::of(2.0);
    assert_eq!(ratio.ves, 2f64.sqrt() * 100.0);
    assert_eq!(ratio.rves, 1.25f64.sqrt() * 100.0);
    assert_eq!(
        Ratio::of(0.0),
        Ratio {
            ratio: 0.0,
            ves: 0.0,
            rves: 0.0
        }
    );
    // The steps variant: a prediction twice as costly as the gold.
    let half = Ratio::of(cost_ratio(100.0, 200.0));
    assert_eq!((half.ratio, half.rves), (0.5, 0.75f64.sqrt() * 100.0));
    assert_eq!(cost_ratio(100.0, 0.0), 0.0);
}
