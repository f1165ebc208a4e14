//! Issue 29's Done-when, simulated: over 1,000 seeded pairs of equally good runs of the demo's
//! 39 cases, how often the suite test (`regression_p < alpha`) and the per-case test (any case
//! flagged) raise a false alarm; and over 1,000 pairs whose head is 10 points worse on every
//! case, how often the suite test catches it. `cargo test -p sqlgate-eval noise -- --nocapture`
//! prints the measured rates (docs/noise.md quotes them).

use super::*;

/// The demo's suite size.
const CASES: usize = 39;
const ALPHA: f64 = 0.05;
const SIMULATIONS: u64 = 1000;

/// How hard a simulated suite's cases are: each case's true pass probability, drawn once per
/// simulation and shared by both runs.
#[derive(Debug, Clone, Copy)]
enum Spread {
    /// Uniform over [0.1, 0.95]: cases of every difficulty alike.
    Uniform,
    /// As a fair text-to-SQL system meets a benchmark: 60% of the cases almost always right
    /// (uniform over [0.85, 1]), the rest anywhere in [0.05, 0.85]. Cases right every time
    /// never differ, which leaves fewer cases to the paired test.
    MostlyEasy,
}

impl Spread {
    fn rates(self, rng: &mut fastrand::Rng) -> Vec<f64> {
        let between = |rng: &mut fastrand::Rng, low: f64, high: f64| low + (high - low) * rng.f64();
        (0..CASES)
            .map(|_| match self {
                Spread::Uniform => between(rng, 0.1, 0.95),
                Spread::MostlyEasy if rng.f64() < 0.6 => between(rng, 0.85, 1.0),
                Spread::MostlyEasy => between(rng, 0.05, 0.85),
            })
            .collect()
    }
}

/// One run: each case asked `samples` times, passing each with its probability.
fn run(rng: &mut fastrand::Rng, rates: &[f64], samples: u32) -> Vec<PassCount> {
    rates
        .iter()
        .map(|rate| {
            count(
                (0..samples).filter(|_| rng.f64() < *rate).count() as u32,
                samples,
            )
        })
        .collect()
}

/// Of `SIMULATIONS` seeded pairs of runs, the shares in which each test raised an alarm.
#[derive(Debug)]
struct Alarms {
    /// The suite test failed the gate: `regression_p < alpha`.
    suite: f64,
    /// The exact McNemar test on majority verdicts (more than half the samples passed) was
    /// below alpha: the other test issue 29 names, for comparison.
    suite_majority: f64,
    /// Some case was flagged, each tested at alpha/m (Bonferroni).
    any_case: f64,
    /// Some case was flagged, each tested at alpha: without the correction.
    any_case_uncorrected: f64,
}

/// Seeded baseline and head runs of `samples` samples per case, the head's probabilities
/// lowered by `drop` (clamped at 0), and how often each test calls the head worse.
fn simulate(spread: Spread, samples: u32, drop: f64) -> Alarms {
    let mut counts = [0usize; 4];
    for simulation in 0..SIMULATIONS {
        let mut rng = fastrand::Rng::with_seed(simulation);
        let rates = spread.rates(&mut rng);
        let lowered: Vec<f64> = rates.iter().map(|rate| (rate - drop).max(0.0)).collect();
        let base = run(&mut rng, &rates, samples);
        let head = run(&mut rng, &lowered, samples);
        let pairs: Vec<_> = base.into_iter().zip(head).collect();
        let majority = |count: PassCount| count.passed * 2 > count.samples;
        let changed = |from: bool| {
            pairs
                .iter()
                .filter(|(base, head)| majority(*base) == from && majority(*head) != from)
                .count() as u32
        };
        let case_ps: Vec<f64> = pairs
            .iter()
            .map(|(base, head)| pass_rate_drop_p(*base, *head))
            .collect();
        let flagged = [
            regression_p_resampled(&pairs, simulation, SIMULATION_RESAMPLES) < ALPHA,
            mcnemar_worse_p(changed(true), changed(false)) < ALPHA,
            case_ps
                .iter()
                .any(|p| case_drop_significant(*p, ALPHA, CASES)),
            case_ps.iter().any(|p| case_drop_significant(*p, ALPHA, 1)),
        ];
        for (count, flagged) in counts.iter_mut().zip(flagged) {
            *count += usize::from(flagged);
        }
    }
    let share = |count: usize| count as f64 / SIMULATIONS as f64;
    let alarms = Alarms {
        suite: share(counts[0]),
        suite_majority: share(counts[1]),
        any_case: share(counts[2]),
        any_case_uncorrected: share(counts[3]),
    };
    eprintln!("{spread:?}, {CASES} cases, {samples} samples, drop {drop}: {alarms:?}");
    alarms
}

/// Drawn sign flips per suite test in the simulations, a tenth of [`REGRESSION_RESAMPLES`] to
/// keep 8,000 suite tests quick in a debug build. It cannot make a false alarm likelier: the
/// (b+1)/(R+1) estimate is a valid p-value for any R, and up to 20 changed cases (every
/// one-sample simulation but a few) the exact path does not draw at all. It only coarsens the
/// p-value, which costs a little power: the powers below are a floor for the default.
/// The drawn path with the default count is checked against McNemar's exact tail in
/// `with_one_sample_per_case_the_permutation_test_is_exact_mcnemar`.
const SIMULATION_RESAMPLES: usize = 999;

#[test]
fn equally_good_runs_fail_the_gate_in_at_most_alpha_of_runs() {
    for spread in [Spread::Uniform, Spread::MostlyEasy] {
        for samples in [5, 1, 20] {
            let alarms = simulate(spread, samples, 0.0);
            assert!(alarms.suite <= ALPHA, "{spread:?} {samples}: {alarms:?}");
            assert!(
                alarms.suite_majority <= ALPHA,
                "{spread:?} {samples}: {alarms:?}"
            );
            assert!(alarms.any_case <= ALPHA, "{spread:?} {samples}: {alarms:?}");
            if samples == 20 {
                // Where cases can be flagged at all, testing each at alpha would flag some case
                // in far more than alpha of the runs: the correction is needed.
                assert!(
                    alarms.any_case_uncorrected > 2.0 * ALPHA,
                    "{spread:?}: {alarms:?}"
                );
            }
        }
    }
}

#[test]
fn at_the_demos_size_a_case_needs_six_samples_to_be_flagged_at_all() {
    // The strongest evidence N samples give, all passed against none, is 1 / C(2N, N); with 39
    // cases it must reach 0.05 / 39 = 0.00128: C(10, 5) = 252 falls short, C(12, 6) = 924 not.
    let fewest = (1..=20)
        .find(|&n| {
            let p = pass_rate_drop_p(count(n, n), count(0, n));
            case_drop_significant(p, ALPHA, CASES)
        })
        .unwrap();
    assert_eq!(fewest, 6);
}

#[test]
fn a_ten_point_drop_is_caught_at_the_demos_size() {
    // Every case's probability 0.10 lower. With uniform spread the sum of the 39 differences
    // then has mean -3.9 and, as E[p(1-p)] = 0.189, a standard deviation of about
    // sqrt(39 * 2 * 0.189 / N): 1.72 with 5 samples, 3.84 with 1. The normal approximation puts
    // the power of a one-sided 5% test at about 0.73 and 0.26; discreteness and the coarser
    // p-values lower it a little. The bounds (0.5 and 0.1, at least twice alpha) fail only if
    // the test loses most of what the pass rates tell it.
    for (samples, at_least) in [(5, 0.5), (1, 0.1)] {
        for spread in [Spread::Uniform, Spread::MostlyEasy] {
            let alarms = simulate(spread, samples, 0.10);
            if samples == 1 {
                // One sample: the same test as McNemar's, run by run.
                assert_eq!(
                    alarms.suite, alarms.suite_majority,
                    "{spread:?}: {alarms:?}"
                );
            } else {
                // Several: a case going from 5/5 to 3/5 keeps its majority verdict, and only
                // the pass rates see it.
                assert!(
                    alarms.suite > alarms.suite_majority,
                    "{spread:?}: {alarms:?}"
                );
            }
            if let Spread::Uniform = spread {
                assert!(alarms.suite >= at_least, "{samples} samples: {alarms:?}");
            }
        }
    }
    // Per case, with 20 samples (reported only: a 10-point drop is far below what 20 samples
    // can tell apart at alpha / 39).
    simulate(Spread::Uniform, 20, 0.10);
}
