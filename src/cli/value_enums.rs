//! The command line's names for the library's enums. The library crates do not depend on clap,
//! so each enum a flag takes is mirrored here with its help text and converted on use.

use clap::ValueEnum;

use sqlgate::config::RecordMode;
use sqlgate_eval::loaders::{GoldFormat, PredFormat};
use sqlgate_eval::metrics::ex::Mode;

/// `--mode`: which public evaluator's semantics to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// taoyds/test-suite-sql-eval (Spider): DISTINCT stripped, bag semantics, column permutations.
    Testsuite,
    /// BIRD: set of positional rows.
    Bird,
    /// BIRD with every row's values sorted (PR #162 variant; never for leaderboard parity).
    BirdRowsorted,
    /// Spider 2.0-Lite: column vectors with tolerance, extra columns allowed.
    Spider2,
    /// Defog sql-eval headline flag `correct` (exact or subset match).
    Defog,
    /// Defog sql-eval `exact_match` flag.
    DefogExact,
    /// TrustSQL per-sample correctness (family from the dataset).
    Trustsql,
}

impl From<ModeArg> for Mode {
    fn from(arg: ModeArg) -> Mode {
        match arg {
            ModeArg::Testsuite => Mode::Testsuite,
            ModeArg::Bird => Mode::Bird,
            ModeArg::BirdRowsorted => Mode::BirdRowsorted,
            ModeArg::Spider2 => Mode::Spider2,
            ModeArg::Defog => Mode::Defog,
            ModeArg::DefogExact => Mode::DefogExact,
            ModeArg::Trustsql => Mode::Trustsql,
        }
    }
}

/// `--gold-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GoldFormatArg {
    /// sqlgate's own suite: a TOML manifest and JSONL cases.
    Native,
    /// Defog sql-eval questions CSV (`query` holds `;`-separated alternatives).
    Defog,
    /// Defog sql-eval `idk.csv`: unanswerable questions with an apology SELECT.
    DefogIdk,
    /// Spider `gold.txt`: `SQL<TAB>db_id` lines, blank lines between interactions.
    Spider,
    /// BIRD `dev_gold.sql`: `SQL<TAB>db_id` lines.
    BirdSql,
    /// Spider `dev.json`: records with `query`, `db_id`, `question`.
    SpiderJson,
    /// BIRD `dev.json`: records with `question_id`, `SQL`, `evidence`, `difficulty`.
    BirdJson,
    /// TrustSQL data: records with `id`, `query` (`"null"` when infeasible), `type`, `note`.
    Trustsql,
    /// LiveSQLBench's JSON lines: `instance_id`, `selected_database`, `query`, `sol_sql`...
    Livesqlbench,
}

impl From<GoldFormatArg> for GoldFormat {
    fn from(arg: GoldFormatArg) -> GoldFormat {
        match arg {
            GoldFormatArg::Native => GoldFormat::Native,
            GoldFormatArg::Defog => GoldFormat::Defog,
            GoldFormatArg::DefogIdk => GoldFormat::DefogIdk,
            GoldFormatArg::Spider => GoldFormat::Spider,
            GoldFormatArg::BirdSql => GoldFormat::BirdSql,
            GoldFormatArg::SpiderJson => GoldFormat::SpiderJson,
            GoldFormatArg::BirdJson => GoldFormat::BirdJson,
            GoldFormatArg::Trustsql => GoldFormat::Trustsql,
            GoldFormatArg::Livesqlbench => GoldFormat::Livesqlbench,
        }
    }
}

/// `--pred-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PredFormatArg {
    /// One object per line: `{"id": ..., "sql": "..."}` or `{"id": ..., "abstain": true}`.
    Jsonl,
    /// Spider `pred.txt`: one SQL per line, aligned with the gold by position.
    Spider,
    /// BIRD `predict_dev.json`: values in file order, `SQL\t----- bird -----\tdb_id`.
    Bird,
    /// TrustSQL: `{id: "SQL" | "null"}`; a missing id abstains.
    Trustsql,
}

impl From<PredFormatArg> for PredFormat {
    fn from(arg: PredFormatArg) -> PredFormat {
        match arg {
            PredFormatArg::Jsonl => PredFormat::Jsonl,
            PredFormatArg::Spider => PredFormat::Spider,
            PredFormatArg::Bird => PredFormat::Bird,
            PredFormatArg::Trustsql => PredFormat::Trustsql,
        }
    }
}

/// `--record`: when the system is called instead of replaying the cassette.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RecordArg {
    /// Replay only: a case missing from the cassette fails as not recorded (CI).
    None,
    /// Call the system for cases missing from the cassette, and record the answers.
    New,
    /// Call the system for every case, and record the answers over the old ones.
    All,
}

impl From<RecordArg> for RecordMode {
    fn from(arg: RecordArg) -> RecordMode {
        match arg {
            RecordArg::None => RecordMode::None,
            RecordArg::New => RecordMode::New,
            RecordArg::All => RecordMode::All,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each mirror has the library's names, so a flag and `sqlgate.toml` spell a value alike.
    #[test]
    fn names_match_the_library() {
        for arg in ModeArg::value_variants() {
            let name = arg.to_possible_value().unwrap();
            assert_eq!(name.get_name(), Mode::from(*arg).name());
        }
        for arg in RecordArg::value_variants() {
            let name = arg.to_possible_value().unwrap();
            assert_eq!(name.get_name(), RecordMode::from(*arg).name());
        }
        let serde_name = |value: String| value.trim_matches('"').to_string();
        for arg in GoldFormatArg::value_variants() {
            let name = arg.to_possible_value().unwrap();
            let format = GoldFormat::from(*arg);
            assert_eq!(
                name.get_name(),
                serde_name(serde_json::to_string(&format).unwrap())
            );
        }
        for arg in PredFormatArg::value_variants() {
            let name = arg.to_possible_value().unwrap();
            let format = PredFormat::from(*arg);
            assert_eq!(
                name.get_name(),
                serde_name(serde_json::to_string(&format).unwrap())
            );
        }
        assert_eq!(ModeArg::value_variants().len(), Mode::ALL.len());
        assert_eq!(GoldFormatArg::value_variants().len(), GoldFormat::ALL.len());
    }
}
