//! A recording run SIGKILLed part-way resumes without asking any answered case again.
//!
//! The recording runs in a child process: this test binary re-invoked to run only the ignored
//! `recorder` test, which does nothing without the directory it is handed.
#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sqlgate::config::system::CommandConfig;
use sqlgate::config::Seconds;
use sqlgate::config::{RecordMode, ThrottleConfig};
use sqlgate::system::answer::answer_all;
use sqlgate::system::cassette::Cassette;
use sqlgate::system::command::CommandSystem;
use sqlgate::system::Request;
use sqlgate_llm::throttle::Throttle;

const RECORDER_DIR: &str = "SQLGATE_TEST_RECORDER_DIR";
const CASES: usize = 12;
const CONCURRENCY: usize = 2;

/// Logs the case it is asked, then takes its time to answer.
const SCRIPT: &str = r#"id=$(sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
echo "$id" >> "$CALL_LOG"
sleep 0.3
echo "{\"sql\": \"SELECT 1 AS $id\"}"
"#;

fn requests() -> Vec<Request> {
    (0..CASES)
        .map(|index| {
            Request::question(
                format!("case{index:02}"),
                "shop",
                "shop.sqlite",
                format!("Question {index}?"),
            )
            .with_schema("CREATE TABLE t (a INTEGER);")
        })
        .collect()
}

fn cassette_path(dir: &Path) -> PathBuf {
    dir.join("cassette.jsonl")
}

fn journal_path(dir: &Path) -> PathBuf {
    dir.join("cassette.jsonl.journal")
}

/// Records every case (mode `new`) with the slow system, two calls at a time.
fn record(dir: &Path) {
    let config = CommandConfig {
        command: vec!["sh".into(), dir.join("system.sh").display().to_string()],
        timeout_secs: Seconds::new(30.0).unwrap(),
        env: BTreeMap::from([(
            "CALL_LOG".to_string(),
            dir.join("calls.log").display().to_string(),
        )]),
        ..CommandConfig::default()
    };
    let system = CommandSystem::new(&config).unwrap();
    let cassette = Cassette::open(&cassette_path(dir)).unwrap();
    let throttle = Throttle::new(ThrottleConfig {
        concurrency: CONCURRENCY,
        ..ThrottleConfig::default()
    });
    let answers = answer_all(
        &system,
        &requests(),
        &cassette,
        RecordMode::New,
        &throttle,
        &|_, _| {},
    );
    assert!(answers.iter().all(|a| a.reply.is_ok()), "{answers:?}");
    cassette.finish(false).unwrap();
}

#[test]
#[ignore = "the child process of recording_killed_part_way_resumes_without_asking_twice"]
fn recorder() {
    if let Some(dir) = std::env::var_os(RECORDER_DIR) {
        record(Path::new(&dir));
    }
}

/// The case ids of a JSON Lines file, checking that every line is complete.
fn recorded_cases(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'), "torn last line");
    text.lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            record["case"].as_str().unwrap().to_string()
        })
        .collect()
}

/// The cases the system was asked, in order, and the log emptied.
fn take_calls(dir: &Path) -> Vec<String> {
    let log = dir.join("calls.log");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    std::fs::remove_file(&log).unwrap();
    // A call killed before it got its request logs an empty line: it was never asked.
    text.lines()
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .collect()
}

fn distinct(calls: &[String]) -> BTreeSet<String> {
    let set: BTreeSet<String> = calls.iter().cloned().collect();
    assert_eq!(
        set.len(),
        calls.len(),
        "a case was asked twice in one run: {calls:?}"
    );
    set
}

fn journal_lines(dir: &Path) -> usize {
    std::fs::read_to_string(journal_path(dir))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

#[test]
fn recording_killed_part_way_resumes_without_asking_twice() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("system.sh"), SCRIPT).unwrap();

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "system_kill::recorder",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .env(RECORDER_DIR, dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while journal_lines(dir) < 3 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the recorder ended early"
        );
        assert!(Instant::now() < deadline, "the recorder journaled nothing");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the recorder finished before it was killed"
    );
    // Calls in flight had logged their case already; let their scripts die off.
    std::thread::sleep(Duration::from_secs(1));

    assert!(
        !cassette_path(dir).exists(),
        "the killed run could not finish"
    );
    let journaled: BTreeSet<String> = recorded_cases(&journal_path(dir)).into_iter().collect();
    assert!(
        journaled.len() >= 3 && journaled.len() < CASES,
        "{journaled:?}"
    );
    let first = distinct(&take_calls(dir));

    record(dir);
    let second = distinct(&take_calls(dir));

    let final_cases = recorded_cases(&cassette_path(dir));
    let expected: BTreeSet<String> = requests().into_iter().map(|r| r.id).collect();
    assert_eq!(final_cases.len(), CASES);
    assert_eq!(
        final_cases.iter().cloned().collect::<BTreeSet<_>>(),
        expected
    );
    assert!(!journal_path(dir).exists());

    assert!(journaled.is_subset(&first));
    assert!(
        second.is_disjoint(&journaled),
        "an answered case was asked again"
    );
    assert_eq!(&first | &second, expected);
    // Only calls in flight at the kill, never journaled, may have been asked in both runs.
    let in_flight: BTreeSet<String> = first.difference(&journaled).cloned().collect();
    assert!(in_flight.len() <= CONCURRENCY, "{in_flight:?}");
    let asked_twice: BTreeSet<String> = first.intersection(&second).cloned().collect();
    assert!(asked_twice.is_subset(&in_flight), "{asked_twice:?}");
}
