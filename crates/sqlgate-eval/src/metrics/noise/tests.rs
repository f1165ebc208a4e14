//! The tests against hand-computed values, the McNemar equivalence, then seeded simulations of
//! equally good and of worse runs (issue 29's Done-when): false alarms and power.

use super::*;

fn count(passed: u32, samples: u32) -> PassCount {
    PassCount { passed, samples }
}

fn assert_close(actual: f64, expected: f64, tolerance: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{what}: {actual} is not within {tolerance} of {expected}"
    );
}

#[test]
fn fisher_matches_hypergeometric_tails_counted_by_hand() {
    // 5/5 against 0/5: 5 passes among 10 samples; the head drew none of them in 1 of the
    // C(10,5) = 252 equally likely draws.
    assert_close(
        pass_rate_drop_p(count(5, 5), count(0, 5)),
        1.0 / 252.0,
        1e-14,
        "5/5 0/5",
    );
    // 5/5 against 1/5: 6 passes; head has 0 (impossible, 4 fails only) or 1: C(6,1) C(4,4) = 6.
    assert_close(
        pass_rate_drop_p(count(5, 5), count(1, 5)),
        6.0 / 252.0,
        1e-14,
        "5/5 1/5",
    );
    // 4/5 against 1/5: 5 passes; 0: C(5,0) C(5,5) = 1, 1: C(5,1) C(5,4) = 25.
    assert_close(
        pass_rate_drop_p(count(4, 5), count(1, 5)),
        26.0 / 252.0,
        1e-14,
        "4/5 1/5",
    );
    // scipy.stats.fisher_exact([[10, 0], [5, 5]], alternative="greater") = 0.016254: 15 passes
    // in 20, head draws 10 with 5 fails left, so only x = 5: C(15,5) C(5,5) / C(20,10).
    let ten_five = pass_rate_drop_p(count(10, 10), count(5, 10));
    assert_close(ten_five, 3003.0 / 184_756.0, 1e-14, "10/10 5/10");
    assert_close(ten_five, 0.016254, 5e-7, "10/10 5/10 as scipy prints it");
    // fisher_exact([[8, 2], [3, 7]], alternative="greater") = 0.034889: x = 1, 2, 3 of 11 passes:
    // 11 + 55 * 9 + 165 * 36 = 6446 of C(20,10).
    let eight_three = pass_rate_drop_p(count(8, 10), count(3, 10));
    assert_close(eight_three, 6446.0 / 184_756.0, 1e-14, "8/10 3/10");
    assert_close(eight_three, 0.034889, 5e-7, "8/10 3/10 as scipy prints it");
    // Unequal sample counts: 3/3 against 1/4, 4 passes in 7, head draws 4 with 3 fails: x = 1
    // only: C(4,1) C(3,3) / C(7,4) = 4/35.
    assert_close(
        pass_rate_drop_p(count(3, 3), count(1, 4)),
        4.0 / 35.0,
        1e-14,
        "3/3 1/4",
    );
}

#[test]
fn fisher_is_one_unless_the_head_is_lower_and_survives_thousands_of_samples() {
    for (base, head) in [
        (count(3, 5), count(3, 5)),
        (count(3, 5), count(6, 10)),
        (count(1, 5), count(4, 5)),
        (count(0, 5), count(0, 5)),
        (count(5, 5), count(5, 5)),
        (count(4, 5), count(0, 0)),
        (count(0, 0), count(0, 5)),
    ] {
        assert_eq!(pass_rate_drop_p(base, head), 1.0, "{base:?} {head:?}");
    }
    // 1000/2000 against 999/2000: 1999 passes in 4000, the head draws half of the samples, so
    // its passes x and 1999 - x are equally likely and P(x <= 999) is exactly 1/2. The
    // coefficients (C(4000, 2000) is about 10^1202) exist only as logarithms.
    let half = pass_rate_drop_p(count(1000, 2000), count(999, 2000));
    assert_close(half, 0.5, 1e-9, "1000/2000 999/2000");
    // A large, clear drop is tiny but not zero or NaN.
    let tiny = pass_rate_drop_p(count(1500, 2000), count(1000, 2000));
    assert!(tiny > 0.0 && tiny < 1e-50, "1500/2000 1000/2000: {tiny}");
    // More passes than samples read as all passed.
    assert_eq!(
        pass_rate_drop_p(count(9, 5), count(0, 5)),
        pass_rate_drop_p(count(5, 5), count(0, 5))
    );
    assert_eq!(count(9, 5).rate(), 1.0);
    assert_eq!(count(0, 0).rate(), 0.0);
}

#[test]
fn mcnemar_matches_binomial_tails_counted_by_hand() {
    // scipy.stats.binomtest(10, 12, alternative="greater").pvalue = 0.019287:
    // (C(12,10) + C(12,11) + C(12,12)) / 2^12 = 79 / 4096.
    assert_close(
        mcnemar_worse_p(10, 2),
        79.0 / 4096.0,
        1e-14,
        "10 worse 2 better",
    );
    assert_close(mcnemar_worse_p(10, 2), 0.019287, 5e-7, "as scipy prints it");
    assert_close(mcnemar_worse_p(3, 0), 1.0 / 8.0, 1e-14, "3 worse 0 better");
    assert_close(mcnemar_worse_p(0, 3), 1.0, 1e-14, "0 worse 3 better");
    assert_close(mcnemar_worse_p(1, 1), 3.0 / 4.0, 1e-14, "1 worse 1 better");
    assert_eq!(mcnemar_worse_p(0, 0), 1.0);
    // 1500 against 1500: 1/2 plus half of P(exactly 1500), C(3000,1500) / 2^3000, which is
    // 1 / sqrt(pi 1500) (1 - 1/12000) to the series' next term.
    let central = (std::f64::consts::PI * 1500.0).sqrt().recip() * (1.0 - 1.0 / 12_000.0);
    assert_close(
        mcnemar_worse_p(1500, 1500),
        0.5 + central / 2.0,
        1e-9,
        "1500 1500",
    );
}

/// `worse` cases from pass to fail, `better` from fail to pass, and `same` unchanged (half of
/// them passing twice, half failing twice), one sample each.
fn single_sample_pairs(worse: u32, better: u32, same: u32) -> Vec<(PassCount, PassCount)> {
    let repeat =
        |n: u32, base: u32, head: u32| (0..n).map(move |_| (count(base, 1), count(head, 1)));
    repeat(worse, 1, 0)
        .chain(repeat(better, 0, 1))
        .chain(repeat(same / 2, 1, 1))
        .chain(repeat(same - same / 2, 0, 0))
        .collect()
}

#[test]
fn with_one_sample_per_case_the_permutation_test_is_exact_mcnemar() {
    // Every split of up to 20 changed cases (the exact path): equal to the binomial tail.
    for changed in 0..=EXACT_SIGN_FLIPS_UP_TO as u32 {
        for worse in 0..=changed {
            let pairs = single_sample_pairs(worse, changed - worse, 7);
            let p = regression_p(&pairs, 0);
            assert_close(
                p,
                mcnemar_worse_p(worse, changed - worse),
                1e-12,
                "exact path",
            );
        }
    }
    // Beyond 20 the flips are drawn: within 5 standard errors of the tail (plus the 1/(R+1)
    // of the estimate). 21 against 9 is about 0.021, 17 against 13 about 0.29.
    for (worse, better) in [(21, 9), (17, 13), (40, 10)] {
        let expected = mcnemar_worse_p(worse, better);
        let resamples = REGRESSION_RESAMPLES as f64;
        let tolerance = 5.0 * (expected * (1.0 - expected) / resamples).sqrt() + 1.0 / resamples;
        let p = regression_p(&single_sample_pairs(worse, better, 5), 3);
        assert_close(p, expected, tolerance, "drawn path");
    }
}

#[test]
fn partial_pass_rates_count_every_sign_assignment_ties_included() {
    // Rates of 5 samples: 3/5 -> 1/5 (-0.4), 4/5 -> 3/5 (-0.2), 2/5 -> 3/5 (+0.2), and one
    // unchanged case. The flips of (0.4, 0.2, 0.2) sum to 0.8, 0.4, 0.4, 0, 0, -0.4, -0.4,
    // -0.8: 3 of 8 are at most the observed -0.4, two of them equal to it after rounding
    // differently (0.6 - 0.8 and 0.2 - 0.6 are not the same double as -0.2 and -0.4).
    let pairs = [
        (count(3, 5), count(1, 5)),
        (count(4, 5), count(3, 5)),
        (count(2, 5), count(3, 5)),
        (count(2, 5), count(2, 5)),
    ];
    assert_eq!(regression_p(&pairs, 0), 3.0 / 8.0);
    // The head better by as much: the observed sum is +0.4, and 7 of 8 are at most it.
    let swapped: Vec<_> = pairs.iter().map(|(base, head)| (*head, *base)).collect();
    assert_eq!(regression_p(&swapped, 0), 7.0 / 8.0);
    // Nothing to compare, or nothing changed, or no sample on a side: 1.
    assert_eq!(regression_p(&[], 0), 1.0);
    assert_eq!(regression_p(&[(count(2, 5), count(2, 5))], 0), 1.0);
    assert_eq!(regression_p(&[(count(5, 5), count(0, 0))], 0), 1.0);
}

#[test]
fn drawn_p_values_depend_on_the_seed_only_and_are_never_zero() {
    // 30 cases of 5 samples, every one a full drop: no drawn flip is as low but the observed.
    let all_down = vec![(count(5, 5), count(0, 5)); 30];
    let floor = 1.0 / (REGRESSION_RESAMPLES + 1) as f64;
    assert_eq!(regression_p(&all_down, 1), floor);
    let mixed = single_sample_pairs(16, 9, 10);
    assert_eq!(regression_p(&mixed, 5), regression_p(&mixed, 5));
    assert_ne!(regression_p(&mixed, 5), regression_p(&mixed, 6));
    assert_eq!(regression_p_resampled(&mixed, 5, 0), 1.0);
}

#[test]
fn bonferroni_splits_alpha_over_the_cases() {
    assert!(case_drop_significant(0.001, 0.05, 39));
    assert!(case_drop_significant(0.05 / 39.0, 0.05, 39));
    assert!(!case_drop_significant(0.002, 0.05, 39));
    assert!(case_drop_significant(0.002, 0.05, 1));
    assert!(!case_drop_significant(0.0, 0.05, 0));
}

mod simulation;
