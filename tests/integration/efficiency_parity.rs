//! VES and R-VES against the reference formulas: the per-case time ratios, rewards and the
//! suite means sqlgate computes from given times are bit for bit those of a Python restatement
//! of `evaluation_ves.py` (DAMO-ConvAI's VES, bird-bench/mini_dev's R-VES), which computes its
//! statistics with numpy as the reference does.

use crate::support::{python_with, run_python};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use sqlgate_eval::metrics::efficiency::{
    mean_and_std, mean_score, reward, time_ratio, without_outliers,
};

/// The reference's formulas, restated: `clean_abnormal` and the mean of `iterated_execute_sql`
/// (a ZeroDivisionError, caught by `execute_model`, scores 0), mini_dev's reward tiers and
/// `compute_ves`. Floats travel as their 64 bits. The mean of the kept ratios is summed left
/// to right, which is what `sum` did before Python 3.12 (3.12 compensates float sums).
const REFERENCE: &str = r#"
import json, math, struct, sys
import numpy as np

def f(bits): return struct.unpack('<d', struct.pack('<Q', bits))[0]
def bits(x): return struct.unpack('<Q', struct.pack('<d', float(x)))[0]

def clean_abnormal(input):
    input = np.asarray(input)
    processed_list = []
    mean = np.mean(input, axis=0)
    std = np.std(input, axis=0)
    for x in input:
        if x < mean + 3 * std and x > mean - 3 * std:
            processed_list.append(x)
    return processed_list

def time_ratio(times):
    try:
        diff_list = [gold / pred for gold, pred in times]
        processed = clean_abnormal(diff_list)
        total = 0
        for x in processed:
            total = total + x
        return float(total / len(processed))
    except ZeroDivisionError:
        return 0

def reward(time_ratio):
    if time_ratio == 0: return 0
    elif time_ratio >= 2: return 1.25
    elif time_ratio >= 1 and time_ratio < 2: return 1
    elif time_ratio >= 0.5 and time_ratio < 1: return 0.75
    elif time_ratio >= 0.25 and time_ratio < 0.5: return 0.5
    else: return 0.25

def compute_ves(values):
    total = 0
    for value in values:
        total += math.sqrt(value) * 100
    return total / len(values)

cases = json.load(sys.stdin)
ratios = [time_ratio([(f(g), f(p)) for g, p in case]) for case in cases]
rewards = [reward(r) for r in ratios]
# The statistics the bounds are drawn from, where every prediction took some time.
stats = [[bits(np.mean(d)), bits(np.std(d))] if all(f(p) != 0 for _, p in case) else None
         for case in cases for d in [[f(g) / f(p) if f(p) else 0 for g, p in case]]]
print(json.dumps({"ratios": [bits(r) for r in ratios], "rewards": [bits(r) for r in rewards],
                  "ves": bits(compute_ves(ratios)), "rves": bits(compute_ves(rewards)),
                  "stats": stats}))
"#;

/// Times as a timer gives them: a few milliseconds with jitter, now and then a stall (an
/// outlier), some cases with a constant ratio (σ = 0) or a prediction timed at 0, and
/// iteration counts on both sides of numpy's blocks of 8 and 128.
fn cases(rng: &mut ChaCha8Rng) -> Vec<Vec<(f64, f64)>> {
    let mut cases = Vec::new();
    for case in 0..300 {
        let iterations = match case % 6 {
            0 => rng.random_range(1..8),
            1 => rng.random_range(8..=128),
            2 => rng.random_range(129..400),
            _ => 100,
        };
        let (gold_ms, pred_ms) = (rng.random_range(0.05..20.0), rng.random_range(0.05..20.0));
        let mut times: Vec<(f64, f64)> = (0..iterations)
            .map(|_| {
                let jitter = |rng: &mut ChaCha8Rng, ms: f64| {
                    let stall = if rng.random_range(0..40) == 0 {
                        30.0
                    } else {
                        1.0
                    };
                    ms * rng.random_range(0.8..1.25) * stall / 1000.0
                };
                (jitter(rng, gold_ms), jitter(rng, pred_ms))
            })
            .collect();
        match case % 25 {
            3 => times.iter_mut().for_each(|t| *t = (0.002, 0.001)),
            7 => times[iterations / 2].1 = 0.0,
            11 => times.iter_mut().for_each(|t| t.0 = 0.0),
            _ => {}
        }
        cases.push(times);
    }
    cases
}

#[test]
fn ratios_rewards_and_means_match_the_reference_bit_for_bit() {
    if !python_with("numpy", "pip install numpy") {
        return;
    }
    let cases = cases(&mut ChaCha8Rng::seed_from_u64(29));
    let input: Vec<Vec<[u64; 2]>> = cases
        .iter()
        .map(|times| {
            times
                .iter()
                .map(|&(g, p)| [g.to_bits(), p.to_bits()])
                .collect()
        })
        .collect();
    let output = run_python(REFERENCE, &[], json!(input).to_string().as_bytes());
    let reference: serde_json::Value = serde_json::from_slice(&output).expect("JSON");
    let float = |value: &serde_json::Value| f64::from_bits(value.as_u64().expect("bits"));
    let ratios: Vec<f64> = cases.iter().map(|times| time_ratio(times)).collect();
    let mut zeros = 0;
    let mut cleaned = 0;
    for (case, times) in cases.iter().enumerate() {
        let Some(stats) = reference["stats"][case].as_array() else {
            continue;
        };
        let divided: Vec<f64> = times.iter().map(|(gold, pred)| gold / pred).collect();
        let (mean, std) = mean_and_std(&divided);
        assert_eq!(
            mean.to_bits(),
            float(&stats[0]).to_bits(),
            "case {case}: np.mean"
        );
        assert_eq!(
            std.to_bits(),
            float(&stats[1]).to_bits(),
            "case {case}: np.std"
        );
        cleaned += usize::from(without_outliers(&divided).len() < divided.len());
    }
    for (case, ratio) in ratios.iter().enumerate() {
        let expected = float(&reference["ratios"][case]);
        assert_eq!(
            ratio.to_bits(),
            expected.to_bits(),
            "case {case}: {ratio} vs {expected}"
        );
        assert_eq!(
            reward(*ratio),
            float(&reference["rewards"][case]),
            "case {case}"
        );
        zeros += usize::from(*ratio == 0.0);
    }
    // The edge cases are there: σ = 0, a prediction at 0, a gold at 0; and outliers.
    assert!(zeros >= 3 * 12, "{zeros}");
    assert!(cleaned >= 50, "{cleaned}");
    let rewards = ratios.iter().map(|&r| reward(r));
    assert_eq!(mean_score(ratios.iter().copied()), float(&reference["ves"]));
    assert_eq!(mean_score(rewards), float(&reference["rves"]));
}
