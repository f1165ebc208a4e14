//! The paired percentile bootstrap: is a change in a mean over the same cases beyond what
//! resampling those cases gives?
//!
//! Each case contributes the difference of its value in the two runs (head minus base). A
//! resample draws as many cases as there are, with replacement, and takes the mean of their
//! differences; the 2.5th and 97.5th percentiles of the resampled means bound the 95% interval.
//! Pairing removes the spread between cases (an easy case is easy in both runs), so the interval
//! reflects only how the two runs disagree. Each resample draws from its own generator (wyrand,
//! by `fastrand`), seeded in turn by the seed's generator, so the intervals depend on the seed
//! alone, not on the thread count.

use rayon::prelude::*;
use serde::Serialize;

/// How intervals are resampled: the number of resamples and the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Bootstrap {
    /// Resamples per interval.
    pub resamples: usize,
    /// The seed of the resampling.
    pub seed: u64,
}

impl Default for Bootstrap {
    /// 2,000 resamples from seed 0: each end of the interval is then within about 2% of its
    /// width of where infinitely many resamples would put it (for a normal spread, one
    /// standard error of the 2.5th percentile of 2,000 draws), and a fixed seed gives the same
    /// report for the same inputs.
    fn default() -> Bootstrap {
        Bootstrap {
            resamples: 2000,
            seed: 0,
        }
    }
}

/// The 95% interval of a mean difference.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// The 2.5th percentile of the resampled means.
    pub low: f64,
    /// The 97.5th percentile of the resampled means.
    pub high: f64,
}

impl Interval {
    /// Whether the interval leaves out 0: the change is beyond the noise of resampling.
    pub fn excludes_zero(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }
}

impl Bootstrap {
    /// The 95% interval of the mean of each column of `differences`, a row per case and
    /// `columns` values per row (one per metric), all columns resampled with the same draws.
    /// `None` when there is no row (or no column).
    pub fn intervals(&self, differences: &[f64], columns: usize) -> Option<Vec<Interval>> {
        if columns == 0 || differences.is_empty() || self.resamples == 0 {
            return None;
        }
        let rows = differences.len() / columns;
        // Only the rows that differ move a resampled mean: they are kept together, in order.
        let moving: Vec<f64> = differences
            .chunks_exact(columns)
            .filter(|row| row.iter().any(|d| *d != 0.0))
            .flatten()
            .copied()
            .collect();
        let moving = Moving {
            values: &moving,
            columns,
            rows,
        };
        let mut seeds = fastrand::Rng::with_seed(self.seed);
        let seeds: Vec<u64> = (0..self.resamples).map(|_| seeds.u64(..)).collect();
        let means: Vec<Vec<f64>> = seeds
            .into_par_iter()
            .map_init(Vec::new, |counts, seed| {
                let sums = moving.resampled_sums(&mut fastrand::Rng::with_seed(seed), counts);
                sums.into_iter().map(|sum| sum / rows as f64).collect()
            })
            .collect();
        let intervals = (0..columns)
            .map(|column| {
                let mut column: Vec<f64> = means.iter().map(|m| m[column]).collect();
                column.sort_by(f64::total_cmp);
                let at = |q: f64| column[(q * (column.len() - 1) as f64).round() as usize];
                Interval {
                    low: at(0.025),
                    high: at(0.975),
                }
            })
            .collect();
        Some(intervals)
    }
}

/// Below this share of rows that differ, a resample draws only the draws landing on one of
/// them (a logarithm each); from it on, drawing every row and counting is quicker.
const DRAW_HITS_BELOW: f64 = 0.125;

/// The rows that differ, of all the rows a resample draws from.
struct Moving<'a> {
    /// Their values, a row after another.
    values: &'a [f64],
    /// Values per row.
    columns: usize,
    /// All the rows, moving or not.
    rows: usize,
}

impl Moving<'_> {
    fn len(&self) -> usize {
        self.values.len() / self.columns
    }

    fn row(&self, index: usize) -> &[f64] {
        &self.values[index * self.columns..(index + 1) * self.columns]
    }

    /// One resample's sum of each column: `rows` draws with replacement among all the rows,
    /// of which the moving ones add their values and the others add 0. `counts` is scratch
    /// space, reused between resamples.
    fn resampled_sums(&self, rng: &mut fastrand::Rng, counts: &mut Vec<u32>) -> Vec<f64> {
        let mut sums = vec![0.0; self.columns];
        let moving = self.len();
        let share = moving as f64 / self.rows as f64;
        if share >= DRAW_HITS_BELOW {
            // Every draw, counted per row (a small array, so the counting stays in cache);
            // the first `moving` indices stand for the moving rows.
            counts.clear();
            counts.resize(moving, 0);
            for _ in 0..self.rows {
                if let Some(count) = counts.get_mut(rng.usize(..self.rows)) {
                    *count += 1;
                }
            }
            for (index, &count) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
                for (sum, value) in sums.iter_mut().zip(self.row(index)) {
                    *sum += f64::from(count) * value;
                }
            }
        } else if moving > 0 {
            // Only the hits: each draw hits with chance `share`, so the misses before the
            // next hit are Geometric(share), drawn by inversion, and a hit is any moving row
            // alike.
            let log_miss = (-share).ln_1p();
            let mut drawn = 0;
            loop {
                let uniform = 1.0 - rng.f64();
                let misses = (uniform.ln() / log_miss).floor();
                if misses >= (self.rows - drawn) as f64 {
                    break;
                }
                drawn += misses as usize + 1;
                for (sum, value) in sums.iter_mut().zip(self.row(rng.usize(..moving))) {
                    *sum += value;
                }
            }
        }
        sums
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cases` paired 0/1 outcomes: each case has its own chance of being answered (spread
    /// over [0.1, 0.9], as benchmark questions differ in difficulty), and head's chance is
    /// base's plus `shift`. Base and head are drawn independently given the case, so about
    /// 40% of the cases differ: every draw of a resample is counted.
    fn paired_bernoulli(rng: &mut fastrand::Rng, cases: usize, shift: f64) -> Vec<f64> {
        (0..cases)
            .map(|_| {
                let p = 0.1 + 0.8 * rng.f64();
                let base = rng.f64() < p;
                let head = rng.f64() < p + shift;
                f64::from(u8::from(head)) - f64::from(u8::from(base))
            })
            .collect()
    }

    /// `cases` cases of which about 6% change, as between two versions of one system: each
    /// change a fix with chance `up`, else a regression. Few cases differ, so a resample
    /// draws only the draws that land on one.
    fn few_changes(rng: &mut fastrand::Rng, cases: usize, up: f64) -> Vec<f64> {
        (0..cases)
            .map(|_| match (rng.f64() < 0.06, rng.f64() < up) {
                (false, _) => 0.0,
                (true, true) => 1.0,
                (true, false) => -1.0,
            })
            .collect()
    }

    /// How many of `simulations` seeded data sets from `data` the interval flags beyond
    /// noise, and how many of those flag an increase. 500 resamples rather than the default
    /// 2,000: enough for the 2.5th and 97.5th percentiles, and quick in a debug build.
    fn count_flagged(
        simulations: usize,
        mut data: impl FnMut(&mut fastrand::Rng) -> Vec<f64>,
    ) -> (usize, usize) {
        let mut rng = fastrand::Rng::with_seed(7);
        let mut flagged = (0, 0);
        for simulation in 0..simulations {
            let differences = data(&mut rng);
            let bootstrap = Bootstrap {
                resamples: 500,
                seed: simulation as u64,
            };
            let interval = bootstrap.intervals(&differences, 1).unwrap()[0];
            if interval.excludes_zero() {
                flagged.0 += 1;
                flagged.1 += usize::from(interval.low > 0.0);
            }
        }
        flagged
    }

    #[test]
    fn without_a_real_difference_about_one_interval_in_twenty_excludes_zero() {
        // 1,000 data sets with no true difference: a 95% interval should leave out 0 in
        // about 50 of them (binomial sd 6.9). The band is [3%, 7.5%], 30 to 75: about 2.9 sd
        // below 50 and 3.6 above, a little wider above for the percentile bootstrap's known
        // slight undercoverage on small samples (and a little room below for the discreteness
        // of 0/1 outcomes, whose intervals often end exactly at 0). An interval too narrow by
        // a factor of 1.5 flags about 19%; one that never leaves out 0, none. Both ways of
        // drawing a resample: 100 cases of which many differ, 1,000 of which few do.
        let (many, _) = count_flagged(1000, |rng| paired_bernoulli(rng, 100, 0.0));
        assert!(
            (30..=75).contains(&many),
            "many differ: {many} of 1000 flagged"
        );
        let (few, _) = count_flagged(1000, |rng| few_changes(rng, 1000, 0.5));
        assert!(
            (30..=75).contains(&few),
            "few differ: {few} of 1000 flagged"
        );
    }

    #[test]
    fn a_real_difference_is_flagged_in_its_direction() {
        // Head answers 20 points more (or less) often over 200 cases: the paired standard
        // error is about 0.044, so the change is about 4.5 of them and the interval should
        // leave out 0 in nearly every data set (a normal approximation gives 99.7%). Among
        // 1,000 cases of which 6% change, 80% (or 20%) of the changes fixes: a change of
        // 0.036 with a standard error of 0.0077, about 4.7 of them.
        for (up, shift, fixes) in [(true, 0.2, 0.8), (false, -0.2, 0.2)] {
            let many = count_flagged(100, |rng| paired_bernoulli(rng, 200, shift));
            let few = count_flagged(100, |rng| few_changes(rng, 1000, fixes));
            for (flagged, upward) in [many, few] {
                assert!(flagged >= 95, "up {up}: {flagged} of 100 flagged");
                let expected = if up { flagged } else { 0 };
                assert_eq!(upward, expected, "up {up}: flags in its direction");
            }
        }
    }

    #[test]
    fn intervals_depend_on_the_seed_only() {
        let mut data = fastrand::Rng::with_seed(1);
        let differences = paired_bernoulli(&mut data, 300, 0.05);
        let bootstrap = Bootstrap::default();
        let first = bootstrap.intervals(&differences, 1).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert_eq!(
            pool.install(|| bootstrap.intervals(&differences, 1).unwrap()),
            first,
            "one thread or many"
        );
        let other = Bootstrap {
            seed: 1,
            ..bootstrap
        };
        assert_ne!(other.intervals(&differences, 1).unwrap(), first);
    }

    #[test]
    fn columns_are_resampled_together_and_nothing_gives_no_interval() {
        // The second column is the first doubled: the same draws double its percentiles.
        let rows: Vec<f64> = [1.0, 0.0, -1.0, 1.0, 1.0, 0.0]
            .iter()
            .flat_map(|d| [*d, 2.0 * d])
            .collect();
        let intervals = Bootstrap::default().intervals(&rows, 2).unwrap();
        assert_eq!(intervals[1].low, 2.0 * intervals[0].low);
        assert_eq!(intervals[1].high, 2.0 * intervals[0].high);
        // Every case unchanged: the interval is [0, 0], not beyond noise.
        let same = Bootstrap::default().intervals(&[0.0; 50], 1).unwrap()[0];
        assert_eq!(
            (same.low, same.high, same.excludes_zero()),
            (0.0, 0.0, false)
        );
        // Every case moved by 1: every resample's mean is 1.
        let all = Bootstrap::default().intervals(&[1.0; 50], 1).unwrap()[0];
        assert_eq!((all.low, all.high, all.excludes_zero()), (1.0, 1.0, true));
        assert_eq!(Bootstrap::default().intervals(&[], 1), None);
    }
}
