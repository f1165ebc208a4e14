//! Measuring a correct answer's efficiency against its gold, through the runner's
//! [`QueryRunner::probe`]: never from a result cache, always within the runner's limits.
//!
//! - **Timed** (BIRD's VES and R-VES): `iterations` times, the prediction then the gold, each
//!   on a fresh connection; the whole loop within BIRD's budget, `meta_time_out × iterations`
//!   (the pair budget, spec `evaluators.md` 0.5). A failure or a budget that runs out scores
//!   the case 0, as in the reference.
//! - **Steps** (deterministic): one cost of each query ([`Probe::Cost`]), within one pair
//!   budget.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{cost_ratio, time_ratio, Ratio};
use crate::exec::{ExecError, Probe, QueryRunner};
use crate::metrics::ex::Diagnostic;

/// BIRD's number of timed iterations.
pub const BIRD_ITERATIONS: u32 = 100;

/// Which efficiency measurements a scoring takes (part of the scoring's reuse key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Settings {
    /// Time repeated executions: VES and R-VES, which depend on the machine.
    pub timed: bool,
    /// Count a deterministic cost: `ves_steps` and `rves_steps`.
    pub steps: bool,
    /// Timed iterations per case (BIRD: 100).
    pub iterations: u32,
}

/// One case's efficiency: each measurement asked for, 0 when the case is not correct.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Efficiency {
    /// From the cleaned mean time ratio of repeated executions (BIRD's `R`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timed: Option<Ratio>,
    /// From the ratio of one deterministic cost of each query.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Ratio>,
}

/// The code of the note a correct case gets when a measurement failed and scored 0.
pub const FAILED_CODE: &str = "efficiency_failed";

/// Measures a case whose EX is `correct`: `gold` and `pred` on `db`; `budget` is the pair
/// budget (`None`: unbounded but for the runner's limits). The notes say which measurement
/// failed and why.
pub fn measure(
    settings: &Settings,
    budget: Option<Duration>,
    (db, gold, pred): (&Path, &str, &str),
    correct: bool,
    runner: &dyn QueryRunner,
) -> (Efficiency, Vec<Diagnostic>) {
    let mut notes = Vec::new();
    let mut ratio = |what: &str, measured: Result<f64, ExecError>| {
        let ratio = measured.unwrap_or_else(|error| {
            notes.push(Diagnostic {
                code: FAILED_CODE,
                message: format!(
                    "{what}: {} (scored 0, as the reference scores a failure)",
                    error.message
                ),
            });
            0.0
        });
        Some(Ratio::of(ratio))
    };
    let zero = Some(Ratio::of(0.0));
    let efficiency = Efficiency {
        timed: match (settings.timed, correct) {
            (false, _) => None,
            (true, false) => zero,
            (true, true) => {
                let deadline = budget
                    .and_then(|b| b.checked_mul(settings.iterations))
                    .and_then(|b| Instant::now().checked_add(b));
                let times = timed(settings.iterations, (db, gold, pred), deadline, runner);
                ratio("timed", times.map(|times| time_ratio(&times)))
            }
        },
        steps: match (settings.steps, correct) {
            (false, _) => None,
            (true, false) => zero,
            (true, true) => {
                let deadline = budget.and_then(|b| Instant::now().checked_add(b));
                let cost = |sql| runner.probe(db, sql, Probe::Cost, deadline);
                let costs = cost(pred).and_then(|pred| Ok((cost(gold)?, pred)));
                ratio("steps", costs.map(|(gold, pred)| cost_ratio(gold, pred)))
            }
        },
    };
    (efficiency, notes)
}

/// Each iteration's `(t_gold, t_pred)`, the prediction timed first as in the reference.
fn timed(
    iterations: u32,
    (db, gold, pred): (&Path, &str, &str),
    deadline: Option<Instant>,
    runner: &dyn QueryRunner,
) -> Result<Vec<(f64, f64)>, ExecError> {
    let time = |sql| runner.probe(db, sql, Probe::Time, deadline);
    (0..iterations)
        .map(|_| {
            let pred = time(pred)?;
            Ok((time(gold)?, pred))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::{Engine, Limits};

    /// A database of 2,000 numbers; its path.
    fn numbers(dir: &Path) -> std::path::PathBuf {
        let db = dir.join("n.sqlite");
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch(
                "CREATE TABLE n(x INTEGER); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL \
                 SELECT i + 1 FROM c WHERE i < 2000) INSERT INTO n SELECT i FROM c;",
            )
            .unwrap();
        db
    }

    const GOLD: &str = "SELECT max(x) FROM n";
    /// The same answer, the long way: every row against every row of a quarter of the table.
    const SLOW: &str = "SELECT max(a.x) FROM n AS a, n AS b WHERE b.x <= 200";

    fn settings(timed: bool, steps: bool) -> Settings {
        Settings {
            timed,
            steps,
            iterations: 5,
        }
    }

    #[test]
    fn counted_steps_give_identical_numbers_run_after_run() {
        let dir = tempfile::tempdir().unwrap();
        let db = numbers(dir.path());
        let measure_once = |pred| {
            let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
            let budget = Some(Duration::from_secs(30));
            measure(
                &settings(false, true),
                budget,
                (&db, GOLD, pred),
                true,
                &engine,
            )
        };
        let (same, notes) = measure_once(GOLD);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(same.steps, Some(Ratio::of(1.0)));
        assert_eq!(same.timed, None);
        let (slow, _) = measure_once(SLOW);
        let ratio = slow.steps.unwrap().ratio;
        assert!(ratio > 0.0 && ratio < 0.01, "{ratio}");
        for _ in 0..5 {
            assert_eq!(measure_once(SLOW).0, slow);
        }
    }

    #[test]
    fn a_wrong_answer_scores_zero_without_running() {
        let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
        let (efficiency, notes) = measure(
            &settings(true, true),
            None,
            (Path::new("/nonexistent.sqlite"), GOLD, "SELECT 1"),
            false,
            &engine,
        );
        let zero = Some(Ratio::of(0.0));
        assert_eq!((efficiency.timed, efficiency.steps), (zero, zero));
        assert!(notes.is_empty());
    }

    #[test]
    fn timed_iterations_give_the_cleaned_mean_ratio() {
        let dir = tempfile::tempdir().unwrap();
        let db = numbers(dir.path());
        let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
        let (efficiency, notes) = measure(
            &settings(true, false),
            Some(Duration::from_secs(30)),
            (&db, GOLD, SLOW),
            true,
            &engine,
        );
        assert!(notes.is_empty(), "{notes:?}");
        let timed = efficiency.timed.unwrap();
        // The slow prediction takes far longer than the gold, on any machine.
        assert!(timed.ratio > 0.0 && timed.ratio < 0.25, "{timed:?}");
        assert_eq!(timed.rves, 50.0);
    }

    #[test]
    fn a_hostile_prediction_is_bounded_by_the_limits_and_scores_zero() {
        let dir = tempfile::tempdir().unwrap();
        let db = numbers(dir.path());
        // Correct, and endless: four million rows per row of the table.
        let endless = "SELECT max(a.x) FROM n AS a, n AS b, n AS c, n AS d";
        let limits = Limits {
            timeout: Some(Duration::from_millis(200)),
            ..Limits::default()
        };
        let engine = Engine::new(limits, sqlgate_engine_sqlite::files());
        let started = std::time::Instant::now();
        let (efficiency, notes) = measure(
            &Settings {
                iterations: 100,
                ..settings(true, true)
            },
            limits.timeout,
            (&db, GOLD, endless),
            true,
            &engine,
        );
        // The first timed execution hits the bound and ends the loop (as the reference's
        // exception does); steps stop at the bound too.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(efficiency.timed, Some(Ratio::of(0.0)));
        assert_eq!(efficiency.steps, Some(Ratio::of(0.0)));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes
            .iter()
            .all(|n| n.code == FAILED_CODE && n.message.contains("time bound")));
    }
}
