//! The memory budget bounds the whole process (issue 23 item 6): `--max-memory` caps what the
//! queries running at once hold, SQLite's heap and the results being read, the allocator's
//! overhead included. A prediction past it fails as out of memory; the run goes on.
//! Linux only: the peak is the child's `ru_maxrss`, in KiB there.
#![cfg(target_os = "linux")]

use std::io::Read;
use std::path::Path;
use std::process::Stdio;

use crate::support::{demo, sqlgate};

/// What the process holds besides the queries' budget: the program and its loaded inputs
/// (docs/reliability.md#memory).
const FIXED_OVERHEAD_MIB: u64 = 64;

const GOLD: &str = "SELECT count(*), max(label) FROM t";
/// Correct, and executed apart from the gold.
const ORDINARY: &str = "SELECT max(label), count(*) FROM t";

/// A folder with `db/big.sqlite`: `t` of 2,500 rows, 6.25 million joined to itself.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("db")).unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("db/big.sqlite")).unwrap();
    conn.execute_batch(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, label TEXT);
         WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 2500)
         INSERT INTO t SELECT n, 'label ' || n FROM s;",
    )
    .unwrap();
    dir
}

/// A suite of one case per prediction, every gold the same.
fn write_suite(dir: &Path, predictions: &[(&str, &str)]) {
    let mut cases = String::new();
    let mut answers = String::new();
    for (id, sql) in predictions {
        let case = serde_json::json!({"id": id, "db": "big", "question": id, "gold": GOLD});
        cases.push_str(&format!("{case}\n"));
        answers.push_str(&format!("{}\n", serde_json::json!({"id": id, "sql": sql})));
    }
    std::fs::write(dir.join("cases.jsonl"), cases).unwrap();
    std::fs::write(dir.join("predictions.jsonl"), answers).unwrap();
    std::fs::write(
        dir.join("suite.toml"),
        "name = \"memory\"\ncases = \"cases.jsonl\"\ndb_dir = \"db\"\n",
    )
    .unwrap();
}

struct Scored {
    /// Each case's verdict and error, by id.
    cases: Vec<(String, String, String)>,
    peak_rss_mib: u64,
}

/// `sqlgate score --max-memory <mib>` on `threads` worker threads, and the child's peak RSS.
fn score(dir: &Path, threads: usize, max_memory_mib: u64) -> Scored {
    // Reaped by `wait_measuring`, which reads its peak memory as it does.
    #[allow(clippy::zombie_processes)]
    let mut child = sqlgate()
        .current_dir(dir)
        .env("RAYON_NUM_THREADS", threads.to_string())
        .args([
            "score",
            "--gold",
            "suite.toml",
            "--pred",
            "predictions.jsonl",
        ])
        .args(["--format", "json", "--timeout", "600", "--max-memory"])
        .arg(max_memory_mib.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let (status, peak_rss_mib) = wait_measuring(child.id());
    println!("peak RSS {peak_rss_mib} MiB on {threads} thread(s)");
    let stderr = stderr.join().unwrap();
    assert_eq!(status, 0, "sqlgate score failed: {stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let text = |value: &serde_json::Value| value.as_str().unwrap_or_default().to_string();
    let cases = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| {
            (
                text(&case["id"]),
                text(&case["verdict"]),
                text(&case["error"]),
            )
        })
        .collect();
    Scored {
        cases,
        peak_rss_mib,
    }
}

/// Reaps the child `pid`: its exit status and its peak resident memory (VmHWM) in MiB.
fn wait_measuring(pid: u32) -> (i32, u64) {
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is valid; wait4 fills it for the child it reaps.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pointers are to live locals; `pid` is our unreaped child.
    let reaped = unsafe { libc::wait4(pid as i32, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid as i32, "wait4 failed");
    assert!(libc::WIFEXITED(status), "the child was killed: {status}");
    // Linux reports the peak in KiB.
    (libc::WEXITSTATUS(status), usage.ru_maxrss as u64 >> 10)
}

fn case<'a>(scored: &'a Scored, id: &str) -> (&'a str, &'a str) {
    let (_, verdict, error) = scored.cases.iter().find(|(case, ..)| case == id).unwrap();
    (verdict, error)
}

#[test]
fn a_prediction_past_the_budget_fails_out_of_memory_and_the_run_goes_on() {
    let dir = workspace();
    write_suite(
        dir.path(),
        &[
            // Sorts 6.25 million rows in memory: far past the 96 MiB that queries may hold.
            ("sort", "SELECT x.id FROM t x, t y ORDER BY random()"),
            // A result of about 300 bytes a row: within --max-bytes (256 MiB) up to 880,000
            // rows, past the budget at about 330,000.
            (
                "result",
                "SELECT x.label, y.label, x.id, y.id, printf('%100d', x.id) FROM t x, t y",
            ),
            ("ordinary", ORDINARY),
        ],
    );
    // One thread: the ordinary query runs when nothing else holds memory.
    let scored = score(dir.path(), 1, 256);
    let (verdict, error) = case(&scored, "sort");
    assert_eq!(verdict, "pred_error");
    assert!(
        error
            .contains("out of memory: SQLite's heap and the results being read reached the 96 MiB")
            && error.contains("256 MiB memory budget (--max-memory)"),
        "{error}"
    );
    let (verdict, error) = case(&scored, "result");
    assert_eq!(verdict, "pred_error");
    assert!(
        error.contains("out of memory: this result (") && error.contains("(--max-memory)"),
        "{error}"
    );
    assert_eq!(case(&scored, "ordinary"), ("correct", ""));
    assert!(
        scored.peak_rss_mib <= 256 + FIXED_OVERHEAD_MIB,
        "peak RSS {} MiB",
        scored.peak_rss_mib
    );
}

#[test]
fn concurrent_runaway_sorts_stay_within_the_budget() {
    let dir = workspace();
    // Rows of a few bytes cost the allocator the most beyond what SQLite counts.
    write_suite(
        dir.path(),
        &[
            ("sort1", "SELECT x.id FROM t x, t y ORDER BY random()"),
            ("sort2", "SELECT y.id FROM t x, t y ORDER BY random()"),
            ("sort3", "SELECT x.id FROM t x, t y ORDER BY random() + 1"),
            ("sort4", "SELECT y.id FROM t x, t y ORDER BY random() + 1"),
        ],
    );
    let scored = score(dir.path(), 4, 256);
    for id in ["sort1", "sort2", "sort3", "sort4"] {
        let (verdict, error) = case(&scored, id);
        assert_eq!(verdict, "pred_error", "{id}");
        assert!(error.contains("out of memory"), "{id}: {error}");
    }
    assert!(
        scored.peak_rss_mib <= 256 + FIXED_OVERHEAD_MIB,
        "peak RSS {} MiB",
        scored.peak_rss_mib
    );
}

#[test]
fn the_gate_takes_its_budget_from_the_configuration_or_the_flag() {
    let dir = workspace();
    write_suite(
        dir.path(),
        &[("sort", "SELECT x.id FROM t x, t y ORDER BY random()")],
    );
    // A time bound far past the default 30 s: on a busy machine the sort must still reach
    // the memory budget before its time is up.
    std::fs::write(
        dir.path().join("sqlgate.toml"),
        "max_memory = 256\n\n[[suite]]\nbenchmark = \"suite.toml\"\ntimeout = 600\n\n\
         [[system]]\nname = \"replay\"\ntype = \"replay\"\npredictions = \"predictions.jsonl\"\n",
    )
    .unwrap();
    for (flag, says) in [
        (
            None,
            "the 96 MiB that queries may hold together under the 256 MiB memory budget",
        ),
        (
            Some("--max-memory=512"),
            "the 192 MiB that queries may hold together under the 512 MiB memory budget",
        ),
    ] {
        let output = sqlgate()
            .current_dir(dir.path())
            .args(["test", "--no-cache", "--color", "never"])
            .args(flag)
            .run();
        let stdout = &output.stdout;
        assert_eq!(output.status.code(), Some(100), "{stdout}");
        assert!(stdout.contains(says), "{flag:?}: {stdout}");
    }
}

#[test]
fn an_out_of_memory_failure_is_never_reused() {
    // The budget is shared with whatever runs beside a query: its failure is of the moment.
    let dir = workspace();
    write_suite(
        dir.path(),
        &[
            ("sort", "SELECT x.id FROM t x, t y ORDER BY random()"),
            ("ordinary", ORDINARY),
        ],
    );
    // A time bound far past the default 30 s: on a busy machine the sort must still reach
    // the memory budget before its time is up.
    std::fs::write(
        dir.path().join("sqlgate.toml"),
        "max_memory = 256\n\n[[suite]]\nbenchmark = \"suite.toml\"\ntimeout = 600\n\n\
         [[system]]\nname = \"replay\"\ntype = \"replay\"\npredictions = \"predictions.jsonl\"\n",
    )
    .unwrap();
    let run = || {
        let output = sqlgate()
            .current_dir(dir.path())
            .args(["test", "--color", "never"])
            .run();
        output.assert_code(100);
        assert!(output.stdout.contains("out of memory"), "{}", output.stdout);
        output.stdout
    };
    let first = run();
    assert!(first.contains("reused 0 of 2 case verdicts"), "{first}");
    let second = run();
    assert!(second.contains("reused 1 of 2 case verdicts"), "{second}");
}

/// `audit` runs golds under the budget `--max-memory` gives, as `score` runs predictions.
#[test]
fn audit_runs_its_golds_within_the_max_memory_budget() {
    let dir = workspace();
    let case = serde_json::json!({"id": "sort", "db": "big", "question": "?",
                                  "gold": "SELECT x.id FROM t x, t y ORDER BY random()"});
    std::fs::write(dir.path().join("cases.jsonl"), format!("{case}\n")).unwrap();
    std::fs::write(
        dir.path().join("suite.toml"),
        "name = \"memory\"\ncases = \"cases.jsonl\"\ndb_dir = \"db\"\n",
    )
    .unwrap();
    let output = sqlgate()
        .current_dir(dir.path())
        .args(["audit", "--gold", "suite.toml", "--format", "json"])
        // The budget, not the default 30 s bound, must stop the sort on a loaded machine.
        .args(["--max-memory", "64", "--timeout", "600"])
        .run();
    output.assert_success();
    let findings = output.json()["findings"].as_array().unwrap().clone();
    let error = findings
        .iter()
        .find(|f| f["kind"] == "error")
        .unwrap_or_else(|| panic!("{findings:?}"));
    let detail = error["detail"].as_str().unwrap();
    assert!(
        detail.contains("out of memory") && detail.contains("64 MiB memory budget (--max-memory)"),
        "{detail}"
    );
}

#[test]
fn a_budget_that_is_not_a_whole_number_of_mib_in_range_is_refused() {
    for (budget, says) in [
        ("0", "between 64 and 16777216 MiB, not 0"),
        ("63", "between 64 and 16777216 MiB, not 63"),
        ("4G", "`4G` is not a whole number of MiB"),
        ("", "`` is not a whole number of MiB"),
    ] {
        for command in ["score", "test", "audit", "distill"] {
            let mut sqlgate = sqlgate();
            sqlgate.arg(command).arg(format!("--max-memory={budget}"));
            match command {
                "score" => {
                    sqlgate
                        .args(["--pred", "predictions/gold.jsonl", "--gold"])
                        .arg(demo("suite.toml"));
                }
                "audit" => {
                    sqlgate.arg("--gold").arg(demo("suite.toml"));
                }
                "distill" => {
                    sqlgate
                        .args(["--out", "/nonexistent/distilled", "--gold"])
                        .arg(demo("suite.toml"));
                }
                _ => {}
            }
            let output = sqlgate.current_dir(demo("")).run();
            let stderr = &output.stderr;
            assert_eq!(
                output.status.code(),
                Some(2),
                "{command} {budget}: {stderr}"
            );
            assert!(stderr.contains(says), "{command} {budget}: {stderr}");
        }
    }
}

#[test]
fn max_memory_in_the_configuration_is_checked_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sqlgate.toml");
    let benchmark = demo("suite.toml");
    for (value, says) in [
        ("32", "between 64 and 16777216 MiB, not 32"),
        ("\"4G\"", "invalid type: string \"4G\", expected u64"),
    ] {
        std::fs::write(
            &config,
            format!(
                "max_memory = {value}\n\n[[suite]]\nbenchmark = {benchmark:?}\n\n\
                 [[system]]\nname = \"s\"\ntype = \"replay\"\npredictions = {:?}\n",
                demo("predictions/gold.jsonl")
            ),
        )
        .unwrap();
        let output = sqlgate()
            .args(["test", "--no-cache", "--config"])
            .arg(&config)
            .run();
        let stderr = &output.stderr;
        assert_eq!(output.status.code(), Some(2), "{value}: {stderr}");
        assert!(
            stderr.contains(says) && stderr.contains("sqlgate.toml:1:"),
            "{value}: {stderr}"
        );
    }
}
