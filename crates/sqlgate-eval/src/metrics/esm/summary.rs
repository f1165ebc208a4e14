//! The reference's per-hardness aggregation of exact match and partial scores, and its
//! printed tables (`evaluate` and `print_scores` with `--etype match`, single-turn data).

use std::fmt;

use serde::Serialize;

use super::{Component, PairScore};
use crate::spider::Hardness;

/// A column of the reference's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Gold queries of hardness `easy`.
    Easy,
    /// Gold queries of hardness `medium`.
    Medium,
    /// Gold queries of hardness `hard`.
    Hard,
    /// Gold queries of hardness `extra`.
    Extra,
    /// Every pair.
    All,
}

impl Level {
    /// In the reference's column order.
    pub const ALL: [Level; 5] = [
        Level::Easy,
        Level::Medium,
        Level::Hard,
        Level::Extra,
        Level::All,
    ];

    /// The column's heading in the reference's tables.
    pub fn name(self) -> &'static str {
        match self {
            Level::Easy => "easy",
            Level::Medium => "medium",
            Level::Hard => "hard",
            Level::Extra => "extra",
            Level::All => "all",
        }
    }

    fn of(hardness: Hardness) -> Level {
        match hardness {
            Hardness::Easy => Level::Easy,
            Hardness::Medium => Level::Medium,
            Hardness::Hard => Level::Hard,
            Hardness::Extra => Level::Extra,
        }
    }
}

/// Sums over the pairs of one level.
#[derive(Debug, Clone, Copy, Default)]
struct LevelTotals {
    count: usize,
    exact: usize,
    partial: [ComponentTotals; 10],
}

/// Accuracy is summed over pairs whose prediction has units, recall over pairs whose gold has.
#[derive(Debug, Clone, Copy, Default)]
struct ComponentTotals {
    acc: usize,
    acc_count: usize,
    rec: usize,
    rec_count: usize,
}

/// Accumulates pair scores; [`Summary::level`] gives the numbers the reference prints.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    levels: [LevelTotals; 5],
}

/// Partial-matching averages of one component at one level.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Averages {
    /// Mean accuracy over pairs whose prediction has units of the component.
    pub acc: f64,
    /// Mean recall over pairs whose gold query has units of the component.
    pub rec: f64,
    /// F1 of the two means.
    pub f1: f64,
}

/// The numbers the reference prints for one level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelSummary {
    /// Pairs at this level.
    pub count: usize,
    /// The exact-match fraction (0 for an empty level).
    pub exact: f64,
    /// In [`Component::ALL`] order.
    pub partial: [Averages; 10],
}

impl Summary {
    /// Counts one scored pair at its level and under `all`.
    pub fn add(&mut self, score: &PairScore) {
        for level in [Level::of(score.hardness), Level::All] {
            let totals = &mut self.levels[level as usize];
            totals.count += 1;
            totals.exact += usize::from(score.esm);
            for (sums, (_, component)) in totals.partial.iter_mut().zip(score.partial.iter()) {
                if component.pred_total > 0 {
                    sums.acc += usize::from(component.matched);
                    sums.acc_count += 1;
                }
                if component.label_total > 0 {
                    sums.rec += usize::from(component.matched);
                    sums.rec_count += 1;
                }
            }
        }
    }

    /// The reference skips empty levels, leaving every number 0 there. Elsewhere, a component
    /// with both averages 0 gets F1 = 1 (a reference quirk).
    pub fn level(&self, level: Level) -> LevelSummary {
        let totals = &self.levels[level as usize];
        let mut partial = [Averages::default(); 10];
        if totals.count > 0 {
            for (averages, sums) in partial.iter_mut().zip(&totals.partial) {
                *averages = component_averages(sums);
            }
        }
        LevelSummary {
            count: totals.count,
            exact: ratio(totals.exact, totals.count),
            partial,
        }
    }
}

fn component_averages(sums: &ComponentTotals) -> Averages {
    let acc = ratio(sums.acc, sums.acc_count);
    let rec = ratio(sums.rec, sums.rec_count);
    let f1 = if acc == 0.0 && rec == 0.0 {
        1.0
    } else {
        2.0 * acc * rec / (acc + rec)
    };
    Averages { acc, rec, f1 }
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The reference's `print_scores` output for `--etype match` on single-turn data.
impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let levels = Level::ALL.map(|level| self.level(level));
        let names = Level::ALL.map(|level| format!("{:20}", level.name()));
        write_row(f, "", names)?;
        write_row(
            f,
            "count",
            levels.each_ref().map(|l| format!("{:<20}", l.count)),
        )?;
        writeln!(f, "\n{EXACT_TITLE}")?;
        write_row(f, "exact match", levels.each_ref().map(|l| number(l.exact)))?;
        write_partial_table(f, &format!("\n{ACCURACY_TITLE}"), &levels, |a| a.acc)?;
        write_partial_table(f, RECALL_TITLE, &levels, |a| a.rec)?;
        write_partial_table(f, F1_TITLE, &levels, |a| a.f1)
    }
}

const EXACT_TITLE: &str = "====================== EXACT MATCHING ACCURACY =====================";
const ACCURACY_TITLE: &str = "---------------------PARTIAL MATCHING ACCURACY----------------------";
const RECALL_TITLE: &str = "---------------------- PARTIAL MATCHING RECALL ----------------------";
const F1_TITLE: &str = "---------------------- PARTIAL MATCHING F1 --------------------------";

/// `print_formated_s`: the row name in 20 columns, then the cells.
fn write_row(f: &mut fmt::Formatter<'_>, name: &str, cells: [String; 5]) -> fmt::Result {
    writeln!(f, "{name:20} {}", cells.join(" "))
}

fn write_partial_table(
    f: &mut fmt::Formatter<'_>,
    title: &str,
    levels: &[LevelSummary; 5],
    value: impl Fn(&Averages) -> f64,
) -> fmt::Result {
    writeln!(f, "{title}")?;
    for (index, component) in Component::ALL.iter().enumerate() {
        let cells = levels.each_ref().map(|l| number(value(&l.partial[index])));
        write_row(f, component.name(), cells)?;
    }
    Ok(())
}

/// Python's `'{:<20.3f}'`.
fn number(value: f64) -> String {
    format!("{value:<20.3}")
}
