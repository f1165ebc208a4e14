//! LiveSQLBench's Python test cases, run when a suite opts in (`python_tests`): each is a
//! function `test_case(pred_sqls, sol_sqls, db_name, conn)` that passes when it raises nothing,
//! run with LiveSQLBench's helpers (`ex_base`, `execute_queries`...) on a copy of the case's
//! SQLite database after its setup and the statements judged ([`HARNESS`], a `python3`
//! subprocess per script).
//!
//! The gold's statements run through the tests first: a gold that fails its own tests is a
//! `gold_error`. Then the answer's: it is correct when every test passes, `incorrect` naming the
//! first that fails, a `pred_error` when one of its statements fails.
//!
//! The answer's statements pass the same statement guard as on a scratch copy ([`super::script`])
//! before Python sees them. The test cases themselves are the benchmark's code, run with the
//! user's rights (which is why running them is an opt-in): the subprocess gets an empty
//! environment (no API key reaches it), a private folder that is removed afterwards, the
//! database opened read-only to be copied, no ATTACH, the suite's bounds on time and rows.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::script::{self, Statement};
use super::{failed, WithoutError};
use crate::exec::{Limits, QueryRunner, Storage};
use crate::metrics::ex::{CaseInput, Diagnostic, Outcome, Verdict};

/// The Python program that runs one script and the test cases on a copy of the database.
pub const HARNESS: &str = include_str!("livesqlbench_tests.py");

/// The diagnostic code of the first test case an answer fails.
pub const TEST_CASE_FAILED: &str = "test_case_failed";

/// The most of its output read from the subprocess.
const MAX_OUTPUT: u64 = 1 << 20;
/// Time for Python to start and copy the database, on top of the suite's bound per statement
/// and test.
const STARTUP: Duration = Duration::from_secs(30);

/// How one script fared.
#[derive(Debug, PartialEq)]
enum Run {
    Passed,
    /// A test case raised: its 1-based number and the exception's last line.
    Failed {
        test: usize,
        message: String,
    },
    /// A statement of the script failed.
    Error {
        message: String,
        timeout: bool,
    },
    /// A setup statement failed.
    SetupError {
        message: String,
    },
    /// Python could not run the tests (missing, killed at the deadline, garbled output).
    Unavailable {
        message: String,
        timeout: bool,
    },
}

#[derive(Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    test: usize,
    #[serde(default)]
    timeout: bool,
}

/// Judges `pred` by the case's test cases, after checking that its gold passes them.
pub(super) fn judge(
    case: &CaseInput,
    db: &Path,
    setup: &[Statement],
    pred: &[Statement],
    tests: &[String],
    runner: &dyn QueryRunner,
) -> Outcome {
    let limits = runner.outside_limits();
    if !matches!(
        runner.driver().storage(),
        Storage::Files {
            extension: "sqlite",
            ..
        }
    ) {
        return failed(
            Verdict::GoldError,
            format!(
                "Python test cases run on SQLite files, not on engine `{}`",
                runner.driver().name()
            ),
        );
    }
    let Some(gold) = case.gold.first() else {
        return failed(Verdict::GoldError, "the case has no gold".to_string());
    };
    let gold = match script::split(gold) {
        Ok(statements) => statements,
        Err(error) => return failed(Verdict::GoldError, error.to_string()),
    };
    let run = |statements: &[Statement]| {
        run_tests(
            db,
            case.db,
            setup,
            (statements, &gold),
            tests,
            (&limits, STARTUP),
        )
    };
    match run(&gold) {
        Run::Passed => {}
        Run::Failed { test, message } => {
            return failed(
                Verdict::GoldError,
                format!("the gold fails its own test case {test}: {message}"),
            )
        }
        Run::Error { message, timeout } | Run::Unavailable { message, timeout } => {
            let verdict = if timeout {
                Verdict::GoldTimeout
            } else {
                Verdict::GoldError
            };
            return failed(verdict, message);
        }
        Run::SetupError { message } => return failed(Verdict::GoldError, message),
    }
    match run(pred) {
        Run::Passed => Outcome {
            score: 1.0,
            ..failed(Verdict::Correct, String::new())
        }
        .without_error(),
        Run::Failed { test, message } => {
            let mut outcome = failed(Verdict::Incorrect, String::new()).without_error();
            outcome.diagnostics.push(Diagnostic {
                code: TEST_CASE_FAILED,
                message: format!("test case {test} of {}: {message}", tests.len()),
            });
            outcome
        }
        Run::Error { message, timeout } => {
            let verdict = if timeout {
                Verdict::PredTimeout
            } else {
                Verdict::PredError
            };
            failed(verdict, message)
        }
        // The gold's run passed the same setup: what failed now is the machine's.
        Run::SetupError { message } | Run::Unavailable { message, .. } => {
            failed(Verdict::GoldError, message)
        }
    }
}

/// Runs `statements` (and the solution beside them, as the tests see it) through the tests.
fn run_tests(
    db: &Path,
    db_name: &str,
    setup: &[Statement],
    (statements, solution): (&[Statement], &[Statement]),
    tests: &[String],
    (limits, startup): (&Limits, Duration),
) -> Run {
    let unavailable = |message: String| Run::Unavailable {
        message,
        timeout: false,
    };
    let folder = match tempfile::Builder::new().prefix("sqlgate-python-").tempdir() {
        Ok(folder) => folder,
        Err(e) => return unavailable(format!("cannot make a folder for the test cases: {e}")),
    };
    // Python runs in its own folder: a relative path would be read from there.
    let db = match std::path::absolute(db) {
        Ok(db) => db,
        Err(e) => return unavailable(format!("cannot find {}: {e}", db.display())),
    };
    let texts = |list: &[Statement]| list.iter().map(|s| s.text.clone()).collect::<Vec<_>>();
    let task = serde_json::json!({
        "database": db,
        "folder": folder.path(),
        "db_name": db_name,
        "setup": texts(setup),
        "statements": texts(statements),
        "solution": texts(solution),
        "tests": tests,
        "timeout": limits.timeout.map(|t| t.as_secs_f64()),
        "max_rows": limits.max_rows,
    });
    // Every statement and test case within the suite's bound, after Python's start.
    let steps = (setup.len() + statements.len() + tests.len()) as u32;
    let deadline = limits
        .timeout
        .map(|t| Instant::now() + startup + t.saturating_mul(steps.max(1)));
    let child = Command::new("python3")
        .args(["-I", "-c", HARNESS])
        .current_dir(folder.path())
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => {
            return unavailable(format!(
                "cannot run python3 for the case's Python test cases: {e}"
            ))
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A harness that died early closes its input; its exit says why.
        let _ = stdin.write_all(task.to_string().as_bytes());
    }
    let stdout = bounded_reader(child.stdout.take());
    let stderr = bounded_reader(child.stderr.take());
    let finished = wait(&mut child, deadline);
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    match finished {
        Some(true) => {}
        Some(false) => {
            let said = String::from_utf8_lossy(&stderr);
            let last = said.lines().last().unwrap_or("no message");
            return unavailable(format!("the Python test cases' runner failed: {last}"));
        }
        None => {
            return Run::Unavailable {
                message: "the Python test cases ran past their time bound".to_string(),
                timeout: true,
            }
        }
    }
    let answer: Answer = match serde_json::from_slice(&stdout) {
        Ok(answer) => answer,
        Err(e) => {
            return unavailable(format!(
                "the Python test cases' runner wrote no verdict: {e}"
            ))
        }
    };
    match answer.status.as_str() {
        "passed" => Run::Passed,
        "failed" => Run::Failed {
            test: answer.test,
            message: answer.message,
        },
        "error" => Run::Error {
            message: answer.message,
            timeout: answer.timeout,
        },
        "setup_error" => Run::SetupError {
            message: answer.message,
        },
        other => unavailable(format!(
            "the Python test cases' runner wrote an unknown status `{other}`"
        )),
    }
}

/// Reads at most [`MAX_OUTPUT`] bytes of `pipe` on a thread of its own (so a full pipe never
/// stalls the child), and discards the rest.
fn bounded_reader(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.by_ref().take(MAX_OUTPUT).read_to_end(&mut bytes);
            let _ = std::io::copy(&mut pipe, &mut std::io::sink());
        }
        bytes
    })
}

/// Whether the child exited successfully, or `None` when it was killed at `deadline`.
fn wait(child: &mut Child, deadline: Option<Instant>) -> Option<bool> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status.success()),
            Ok(None) => {}
            Err(_) => return Some(false),
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statements(sql: &str) -> Vec<Statement> {
        script::split(sql).unwrap()
    }

    fn have_python() -> bool {
        Command::new("python3")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// `<dir>/t.sqlite` with table `t(x)` holding 1, 2, 3.
    fn database(dir: &Path) -> std::path::PathBuf {
        let db = dir.join("t.sqlite");
        let made = Command::new("python3")
            .args([
                "-c",
                "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); \
                 c.executescript('CREATE TABLE t(x); INSERT INTO t VALUES (1), (2), (3);')",
            ])
            .arg(&db)
            .status()
            .unwrap();
        assert!(made.success());
        db
    }

    fn run(db: &Path, sql: &str, tests: &[&str], timeout: Option<Duration>) -> Run {
        let limits = Limits {
            timeout,
            ..Limits::default()
        };
        let tests: Vec<String> = tests.iter().map(|t| t.to_string()).collect();
        let solution = statements("DELETE FROM t WHERE x = 1");
        run_tests(
            db,
            "t",
            &[],
            (&statements(sql), &solution),
            &tests,
            (&limits, Duration::ZERO),
        )
    }

    const COUNT_IS_TWO: &str = "def test_case(pred_sqls, sol_sqls, db_name, conn):\n    \
        rows, _ = perform_query_on_sqlite_databases('SELECT count(*) FROM t', db_name, conn)\n    \
        assert rows[0][0] == 2, f'{rows[0][0]} rows'";

    #[test]
    fn a_test_case_passes_or_fails_by_what_it_asserts_on_the_state() {
        if !have_python() {
            eprintln!("skipped: no python3");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let db = database(dir.path());
        let before = std::fs::read(&db).unwrap();
        assert_eq!(
            run(&db, "DELETE FROM t WHERE x = 3", &[COUNT_IS_TWO], None),
            Run::Passed
        );
        assert_eq!(
            run(&db, "DELETE FROM t WHERE x > 1", &[COUNT_IS_TWO], None),
            Run::Failed {
                test: 1,
                message: "AssertionError: 1 rows".into()
            }
        );
        // LiveSQLBench's helpers are in scope: the answer's query against the solution's.
        let ex_base = "def test_case(pred_sqls, sol_sqls, db_name, conn):\n    \
            assert ex_base(['SELECT x FROM t ORDER BY x'], ['SELECT x FROM t WHERE x > 0'], db_name, conn) == 1";
        assert_eq!(run(&db, "SELECT 1", &[ex_base], None), Run::Passed);
        let Run::Error { message, .. } = run(&db, "DELETE FROM missing", &[COUNT_IS_TWO], None)
        else {
            panic!("a failing statement is an error");
        };
        assert!(message.contains("statement 1: no such table"), "{message}");
        // A test that is not a function named test_case fails, saying so.
        let Run::Failed { message, .. } = run(&db, "SELECT 1", &["x = 1"], None) else {
            panic!("no test_case");
        };
        assert!(message.contains("NameError"), "{message}");
        // One that exits has not passed.
        let exits = "def test_case(pred_sqls, sol_sqls, db_name, conn):\n    raise SystemExit(0)";
        let Run::Failed { message, .. } = run(&db, "SELECT 1", &[exits], None) else {
            panic!("exiting is failing");
        };
        assert!(message.contains("SystemExit"), "{message}");
        assert_eq!(std::fs::read(&db).unwrap(), before);
    }

    #[test]
    fn attach_is_denied_and_the_environment_is_empty() {
        if !have_python() {
            eprintln!("skipped: no python3");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let db = database(dir.path());
        let attach = "def test_case(pred_sqls, sol_sqls, db_name, conn):\n    \
            conn.execute(\"ATTACH DATABASE 'stolen.sqlite' AS s\")";
        let Run::Failed { message, .. } = run(&db, "SELECT 1", &[attach], None) else {
            panic!("ATTACH is denied");
        };
        assert!(message.contains("not authorized"), "{message}");
        // The test process's own variables (PATH, HOME...) do not reach it (Python sets
        // LC_CTYPE itself when it finds no locale, PEP 538).
        let environment = "def test_case(pred_sqls, sol_sqls, db_name, conn):\n    \
            import os\n    assert set(os.environ) <= {'LC_CTYPE'}, sorted(os.environ)";
        assert_eq!(run(&db, "SELECT 1", &[environment], None), Run::Passed);
    }

    #[test]
    fn a_test_past_its_time_bound_is_killed() {
        if !have_python() {
            eprintln!("skipped: no python3");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let db = database(dir.path());
        let forever = "def test_case(pred_sqls, sol_sqls, db_name, conn):\n    \
            import time\n    time.sleep(3600)";
        let started = Instant::now();
        let Run::Unavailable { timeout, .. } = run(
            &db,
            "SELECT 1",
            &[forever],
            Some(Duration::from_millis(100)),
        ) else {
            panic!("killed");
        };
        assert!(timeout);
        assert!(started.elapsed() < Duration::from_secs(60));
    }
}
