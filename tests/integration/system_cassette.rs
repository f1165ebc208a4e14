//! The cassette (recorded answers, journal, deterministic file) and the record modes, with a
//! real `command` system that logs every case it is asked.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sqlgate::config::system::CommandConfig;
use sqlgate::config::Seconds;
use sqlgate::config::{RecordMode, ThrottleConfig};
use sqlgate::system::answer::answer_all;
use sqlgate::system::cassette::{record_key, Cassette};
use sqlgate::system::command::CommandSystem;
use sqlgate::system::{Reply, Request, SystemError, SystemErrorKind};
use sqlgate_llm::throttle::Throttle;

fn request(id: &str) -> Request {
    Request::question(id, "shop", "dbs/shop.sqlite", format!("Question {id}?"))
        .with_schema("CREATE TABLE book (id INTEGER);")
}

fn requests(ids: &[&str]) -> Vec<Request> {
    ids.iter().map(|id| request(id)).collect()
}

/// Answers `SELECT 1 AS <id>`; ids starting with `bad` get garbage and `slow` ones time out.
/// Every case asked is appended to `calls.log`.
const SCRIPT: &str = r#"id=$(sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
echo "$id" >> "$CALL_LOG"
case "$id" in
  bad*) echo "I think the answer is 42" ;;
  slow*) sleep 5 ;;
  *) echo "{\"sql\": \"SELECT 1 AS $id\"}" ;;
esac
"#;

struct Fixture {
    dir: tempfile::TempDir,
    system: CommandSystem,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("system.sh");
        std::fs::write(&script, SCRIPT).unwrap();
        let config = CommandConfig {
            command: vec!["sh".into(), script.display().to_string()],
            timeout_secs: Seconds::new(1.0).unwrap(),
            env: BTreeMap::from([(
                "CALL_LOG".to_string(),
                dir.path().join("calls.log").display().to_string(),
            )]),
            ..CommandConfig::default()
        };
        let system = CommandSystem::new(&config).unwrap();
        Fixture { dir, system }
    }

    fn cassette_path(&self) -> PathBuf {
        self.dir.path().join("predictions/system.jsonl")
    }

    fn open(&self) -> Cassette {
        Cassette::open(&self.cassette_path()).unwrap()
    }

    /// The cases asked so far, sorted, and the log emptied.
    fn take_calls(&self) -> Vec<String> {
        let log = self.dir.path().join("calls.log");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        let mut calls: Vec<String> = text.lines().map(str::to_string).collect();
        calls.sort();
        calls
    }

    fn run(
        &self,
        cassette: &Cassette,
        mode: RecordMode,
        requests: &[Request],
    ) -> Vec<Result<Reply, SystemError>> {
        let throttle = Throttle::new(ThrottleConfig {
            concurrency: 3,
            retries: 0,
            ..ThrottleConfig::default()
        });
        answer_all(
            &self.system,
            requests,
            cassette,
            mode,
            &throttle,
            &|_, _| {},
        )
        .into_iter()
        .map(|answered| answered.reply)
        .collect()
    }
}

fn sql(answer: &Result<Reply, SystemError>) -> Option<&str> {
    answer.as_ref().ok().and_then(|reply| reply.sql.as_deref())
}

fn kind(answer: &Result<Reply, SystemError>) -> Option<SystemErrorKind> {
    answer.as_ref().err().map(|error| error.kind)
}

#[test]
fn record_none_answers_from_the_cassette_only() {
    let fixture = Fixture::new();
    let cassette = fixture.open();
    let answers = fixture.run(&cassette, RecordMode::None, &requests(&["q1", "q2"]));
    assert!(answers
        .iter()
        .all(|answer| kind(answer) == Some(SystemErrorKind::NotRecorded)));
    assert!(fixture.take_calls().is_empty(), "the system was called");

    fixture.run(&cassette, RecordMode::New, &requests(&["q1"]));
    cassette.finish(false).unwrap();
    assert_eq!(fixture.take_calls(), ["q1"]);

    let cassette = fixture.open();
    let answers = fixture.run(&cassette, RecordMode::None, &requests(&["q1", "q2"]));
    assert_eq!(sql(&answers[0]), Some("SELECT 1 AS q1"));
    assert_eq!(kind(&answers[1]), Some(SystemErrorKind::NotRecorded));
    assert!(fixture.take_calls().is_empty(), "the system was called");
}

#[test]
fn record_new_asks_only_for_misses_and_all_asks_again() {
    let fixture = Fixture::new();
    let cassette = fixture.open();
    let ids = ["q1", "q2", "q3", "q4", "q5"];
    let first = fixture.run(&cassette, RecordMode::New, &requests(&ids));
    assert_eq!(fixture.take_calls(), ids);
    for (answer, id) in first.iter().zip(ids) {
        assert_eq!(sql(answer), Some(format!("SELECT 1 AS {id}").as_str()));
    }

    let again = fixture.run(&cassette, RecordMode::New, &requests(&ids));
    assert!(fixture.take_calls().is_empty());
    assert_eq!(again, first);

    let mut edited = requests(&ids);
    edited[2].question = "An edited question?".into();
    fixture.run(&cassette, RecordMode::New, &edited);
    assert_eq!(fixture.take_calls(), ["q3"]);

    fixture.run(&cassette, RecordMode::All, &requests(&ids));
    assert_eq!(fixture.take_calls(), ids);
}

#[test]
fn garbage_is_recorded_but_timeouts_are_asked_again() {
    let fixture = Fixture::new();
    let cassette = fixture.open();
    let cases = requests(&["bad1", "slow1", "q1"]);
    let answers = fixture.run(&cassette, RecordMode::New, &cases);
    assert_eq!(kind(&answers[0]), Some(SystemErrorKind::Garbage));
    assert_eq!(kind(&answers[1]), Some(SystemErrorKind::Timeout));
    cassette.finish(false).unwrap();
    assert_eq!(fixture.take_calls(), ["bad1", "q1", "slow1"]);

    let cassette = fixture.open();
    assert_eq!(cassette.len(), 2);
    let answers = fixture.run(&cassette, RecordMode::New, &cases);
    assert_eq!(fixture.take_calls(), ["slow1"]);
    assert_eq!(kind(&answers[0]), Some(SystemErrorKind::Garbage));
    assert_eq!(sql(&answers[2]), Some("SELECT 1 AS q1"));
}

#[test]
fn progress_is_reported_once_per_request() {
    let fixture = Fixture::new();
    let cassette = fixture.open();
    let cases = requests(&["q1", "q2", "q3", "q4"]);
    fixture.run(&cassette, RecordMode::New, &cases[..2]);
    let seen = Mutex::new(Vec::new());
    let throttle = Throttle::new(ThrottleConfig::default());
    answer_all(
        &fixture.system,
        &cases,
        &cassette,
        RecordMode::New,
        &throttle,
        &|index, answered| seen.lock().unwrap().push((index, answered.elapsed)),
    );
    let mut seen = seen.into_inner().unwrap();
    seen.sort();
    let indices: Vec<usize> = seen.iter().map(|(index, _)| *index).collect();
    assert_eq!(indices, [0, 1, 2, 3]);
    // Answers from the cassette took no time; the system's took what the call took.
    assert_eq!(seen[0].1, std::time::Duration::ZERO);
    assert_eq!(seen[1].1, std::time::Duration::ZERO);
    assert!(seen[2].1 > std::time::Duration::ZERO && seen[3].1 > std::time::Duration::ZERO);
}

fn reply(sql: &str) -> Result<Reply, SystemError> {
    Ok(Reply::sql(sql))
}

fn failure(kind: SystemErrorKind) -> Result<Reply, SystemError> {
    Err(SystemError::new(kind, format!("{kind:?} happened")))
}

/// Some answers under the keys of system "sys".
fn answers() -> Vec<(String, String, Result<Reply, SystemError>)> {
    // Every field set, `cleaned` included (only the pipeline sets it, so it is read from JSON).
    let abstain = Ok(serde_json::from_str::<Reply>(
        r#"{"sql": null, "cleaned": true, "samples": ["SELECT 2"], "retrieved": ["book"], "truncated": true}"#,
    )
    .unwrap());
    [
        ("a", reply("SELECT 1")),
        ("b", abstain),
        ("c", failure(SystemErrorKind::Garbage)),
        ("d", failure(SystemErrorKind::Exit)),
        ("e", reply("SELECT \"x\"\nFROM t")),
    ]
    .into_iter()
    .map(|(id, answer)| (record_key("sys", &request(id)), id.to_string(), answer))
    .collect()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_file_is_sorted_and_the_same_whatever_the_order_of_answers() {
    let dir = tempfile::tempdir().unwrap();
    let forward = dir.path().join("forward.jsonl");
    let backward = dir.path().join("backward.jsonl");
    let cassette = Cassette::open(&forward).unwrap();
    for (key, case, answer) in answers() {
        cassette.record(&key, &case, &answer, None);
    }
    cassette.finish(false).unwrap();
    let cassette = Cassette::open(&backward).unwrap();
    for (key, case, answer) in answers().into_iter().rev() {
        cassette.record(&key, &case, &answer, None);
    }
    cassette.finish(false).unwrap();

    assert_eq!(
        std::fs::read(&forward).unwrap(),
        std::fs::read(&backward).unwrap()
    );
    let written = lines(&forward);
    assert_eq!(written.len(), 5);
    let keys: Vec<String> = written
        .iter()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["key"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert!(!dir.path().join("forward.jsonl.journal").exists());
}

#[test]
fn answers_survive_a_round_trip_but_transient_failures_are_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/system.jsonl");
    let cassette = Cassette::open(&path).unwrap();
    assert!(cassette.is_empty());
    // Every other answer with its latency, as a recording run keeps it.
    let latency = |at: usize| at.is_multiple_of(2).then_some(1000 + at as u64);
    for (at, (key, case, answer)) in answers().into_iter().enumerate() {
        cassette.record(&key, &case, &answer, latency(at));
    }
    let timeout_key = record_key("sys", &request("f"));
    cassette.record(
        &timeout_key,
        "f",
        &failure(SystemErrorKind::Timeout),
        Some(5),
    );
    cassette.finish(false).unwrap();
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains(r#""latency_ms":1000"#));

    let reopened = Cassette::open(&path).unwrap();
    assert_eq!(reopened.len(), 5);
    for (at, (key, _, answer)) in answers().into_iter().enumerate() {
        let recorded = reopened.get(&key).unwrap();
        assert_eq!(recorded.answer(), &answer);
        assert_eq!(recorded.latency_ms(), latency(at));
    }
    assert!(reopened.get(&timeout_key).is_none());
    assert!(reopened.warnings().is_empty());

    let before = std::fs::read(&path).unwrap();
    reopened.finish(false).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_torn_journal_line_is_discarded_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("system.jsonl");
    let journal = dir.path().join("system.jsonl.journal");
    let all = answers();
    {
        let cassette = Cassette::open(&path).unwrap();
        for (key, case, answer) in &all[..3] {
            cassette.record(key, case, answer, None);
        }
        // Interrupted: never finished, so the answers are only in the journal.
    }
    assert!(!path.exists());
    let mut text = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(text.lines().count(), 3);
    // A run killed while writing its fourth line.
    text.push_str(r#"{"key": "0123", "case": "d", "rep"#);
    std::fs::write(&journal, &text).unwrap();

    let cassette = Cassette::open(&path).unwrap();
    let warnings = cassette.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("torn"), "{}", warnings[0]);
    assert_eq!(cassette.len(), 3);
    for (key, _, answer) in &all[..3] {
        assert_eq!(cassette.get(key).as_ref().map(|r| r.answer()), Some(answer));
    }

    let (key, case, answer) = &all[3];
    cassette.record(key, case, answer, None);
    let journaled = std::fs::read_to_string(&journal).unwrap();
    assert!(journaled.ends_with('\n'));
    assert_eq!(journaled.lines().count(), 4);
    for line in journaled.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }

    cassette.finish(false).unwrap();
    assert!(!journal.exists());
    assert_eq!(lines(&path).len(), 4);
}

#[test]
fn an_unreadable_journal_line_is_discarded_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("system.jsonl");
    let (key, case, answer) = answers().remove(0);
    let cassette = Cassette::open(&path).unwrap();
    cassette.record(&key, &case, &answer, None);
    let journal = dir.path().join("system.jsonl.journal");
    let mut text = std::fs::read_to_string(&journal).unwrap();
    text.insert_str(0, "{not json}\n");
    std::fs::write(&journal, text).unwrap();

    let cassette = Cassette::open(&path).unwrap();
    assert_eq!(cassette.get(&key).map(|r| r.answer().clone()), Some(answer));
    let warnings = cassette.warnings();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("line 1"), "{}", warnings[0]);
}

#[test]
fn a_damaged_cassette_is_an_input_error_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("system.jsonl");
    let (key, case, answer) = answers().remove(0);
    let cassette = Cassette::open(&path).unwrap();
    cassette.record(&key, &case, &answer, None);
    cassette.finish(false).unwrap();
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("<<<<<<< HEAD\n");
    std::fs::write(&path, text).unwrap();

    let error = Cassette::open(&path).err().unwrap();
    assert_eq!(error.file, path);
    assert_eq!(error.line, Some(2));

    let both = format!(
        r#"{{"key": "k", "case": "c", "reply": {{"sql": "SELECT 1"}}, "error": {{"kind": "garbage", "message": "m"}}}}{}"#,
        "\n"
    );
    std::fs::write(&path, both).unwrap();
    assert_eq!(Cassette::open(&path).err().unwrap().line, Some(1));
}

#[test]
fn the_key_covers_the_case_content_and_the_fingerprint() {
    let base = request("q1");
    let key = record_key("sys", &base);
    let mut same = base.clone();
    same.db_path = PathBuf::from("/elsewhere/shop.sqlite");
    assert_eq!(
        record_key("sys", &same),
        key,
        "the path differs between machines"
    );

    let edits: [fn(&mut Request); 5] = [
        |r| r.id = "q2".into(),
        |r| r.db = "other".into(),
        |r| r.question.push('!'),
        |r| r.evidence = Some(String::new()),
        |r| r.schema.push_str("CREATE TABLE x (a);"),
    ];
    for edit in edits {
        let mut edited = base.clone();
        edit(&mut edited);
        assert_ne!(record_key("sys", &edited), key, "{edited:?}");
    }
    assert_ne!(record_key("sys2", &base), key);
}

#[test]
fn concurrent_recorders_merge_their_answers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.jsonl");
    let answer = |sql: &str| Ok(Reply::sql(sql));
    // Two runs open the cassette before either finishes, as runs in one folder do.
    let first = Cassette::open(&path).unwrap();
    let second = Cassette::open(&path).unwrap();
    first.record("k1", "q1", &answer("SELECT 1"), None);
    second.record("k2", "q2", &answer("SELECT 2"), None);
    first.finish(false).unwrap();
    second.finish(false).unwrap();
    let merged = Cassette::open(&path).unwrap();
    assert_eq!(merged.len(), 2, "an answer was lost");
    assert!(!dir.path().join("shared.jsonl.journal").exists());

    // Many finishing at once: unique temporary names, every answer kept.
    let cassettes: Vec<Cassette> = (0..8).map(|_| Cassette::open(&path).unwrap()).collect();
    std::thread::scope(|scope| {
        for (index, cassette) in cassettes.iter().enumerate() {
            scope.spawn(move || {
                let key = format!("t{index}");
                cassette.record(&key, &key, &answer("SELECT 3"), None);
                cassette.finish(false).unwrap();
            });
        }
    });
    assert_eq!(Cassette::open(&path).unwrap().len(), 10);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["shared.jsonl"], "temporary files left behind");
}

#[test]
fn pruning_keeps_only_the_answers_a_run_used() {
    let fixture = Fixture::new();
    let cassette = fixture.open();
    fixture.run(&cassette, RecordMode::New, &requests(&["q1", "q2", "q3"]));
    assert_eq!(cassette.finish(false).unwrap(), 0);
    fixture.take_calls();

    // The next run no longer has q3 (an edited question gets a new key): it is stale.
    let cassette = fixture.open();
    fixture.run(&cassette, RecordMode::None, &requests(&["q1", "q2"]));
    assert_eq!(cassette.finish(true).unwrap(), 1);
    let cassette = fixture.open();
    assert_eq!(cassette.len(), 2);
    let answers = fixture.run(&cassette, RecordMode::None, &requests(&["q1", "q2", "q3"]));
    assert_eq!(sql(&answers[1]), Some("SELECT 1 AS q2"));
    assert_eq!(kind(&answers[2]), Some(SystemErrorKind::NotRecorded));
    // Without pruning nothing is dropped, and a pruning run that used everything writes nothing.
    assert_eq!(cassette.finish(false).unwrap(), 0);
    assert!(fixture.take_calls().is_empty());
}

/// A cassette holding `lines`, each followed by a newline.
fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(
        path,
        lines
            .iter()
            .map(|line| format!("{line}\n"))
            .collect::<String>(),
    )
    .unwrap();
}

fn line(key: &str, reply: &str) -> String {
    format!(r#"{{"key": "{key}", "case": "q1", "reply": {reply}}}"#)
}

#[test]
fn a_reply_that_does_not_say_what_the_system_answered_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("system.jsonl");
    let good = line("k1", r#"{"sql": "SELECT 1"}"#);
    let refused = [
        (r#"{"sqI": "SELECT 1"}"#, "sqI"),
        (r#"{"sql": "SELECT 1", "abstain": true}"#, "abstain"),
        (r#"{}"#, "sql"),
        (r#"{"sql": "SELECT 1", "sql": "SELECT 2"}"#, "sql"),
    ];
    for (reply, named) in refused {
        write_lines(&path, &[good.clone(), line("k2", reply)]);
        let error = Cassette::open(&path).err().expect(reply);
        assert_eq!((&error.file, error.line), (&path, Some(2)), "{reply}");
        assert!(error.message.contains(named), "{reply}: {error}");
    }
    let unknown_error =
        r#"{"key": "k2", "case": "q2", "error": {"kind": "garbage", "message": "m", "why": 1}}"#;
    write_lines(&path, &[good.clone(), unknown_error.to_string()]);
    assert_eq!(Cassette::open(&path).err().unwrap().line, Some(2));

    // An explicit `null` is an abstention, as every sqlgate has written it.
    write_lines(&path, &[good, line("k2", r#"{"sql": null}"#)]);
    let cassette = Cassette::open(&path).unwrap();
    assert_eq!(
        cassette.get("k2").map(|r| r.answer().clone()),
        Some(Ok(Reply::abstain()))
    );
}

#[test]
fn latency_and_usage_are_read_back_and_lines_without_them_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("system.jsonl");
    let old = line("k1", r#"{"sql": "SELECT 1"}"#);
    let new = r#"{"key": "k2", "case": "q2", "reply": {"sql": "SELECT 2", "usage": {"prompt_tokens": 812, "completion_tokens": 41}}, "latency_ms": 1234}"#;
    let failed = r#"{"key": "k3", "case": "q3", "error": {"kind": "garbage", "message": "m"}, "latency_ms": 7}"#;
    write_lines(&path, &[old, new.to_string(), failed.to_string()]);
    let cassette = Cassette::open(&path).unwrap();
    let old = cassette.get("k1").unwrap();
    assert_eq!(old.latency_ms(), None);
    assert_eq!(old.answer().as_ref().unwrap().usage, None);
    let new = cassette.get("k2").unwrap();
    assert_eq!(new.latency_ms(), Some(1234));
    let usage = new.answer().as_ref().unwrap().usage.unwrap();
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (812, 41));
    assert_eq!(cassette.get("k3").unwrap().latency_ms(), Some(7));

    // Read strictly: usage has both counts and nothing else, latency is whole milliseconds.
    for (bad, named) in [
        (
            r#""reply": {"sql": "SELECT 2", "usage": {"prompt_tokens": 812}}"#,
            "completion_tokens",
        ),
        (
            r#""reply": {"sql": "SELECT 2", "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}"#,
            "total_tokens",
        ),
        (r#""reply": {"sql": "SELECT 2"}, "latency_ms": 1.5"#, "1.5"),
        (r#""reply": {"sql": "SELECT 2"}, "latency_ms": -1"#, "-1"),
    ] {
        write_lines(&path, &[format!(r#"{{"key": "k2", "case": "q2", {bad}}}"#)]);
        let error = Cassette::open(&path).err().expect(bad);
        assert_eq!(error.line, Some(1), "{bad}");
        assert!(error.message.contains(named), "{bad}: {error}");
    }
}

#[test]
fn a_key_on_two_lines_of_the_cassette_is_refused_at_the_second() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("system.jsonl");
    write_lines(
        &path,
        &[
            line("k1", r#"{"sql": "SELECT 1"}"#),
            line("k2", r#"{"sql": "SELECT 2"}"#),
            line("k1", r#"{"sql": "SELECT 3"}"#),
        ],
    );
    let error = Cassette::open(&path).err().unwrap();
    assert_eq!(error.line, Some(3));
    assert!(error.message.contains("line 1 too"), "{error}");
}

#[test]
fn journal_lines_replace_earlier_answers_and_a_warning_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("system.jsonl");
    let journal = dir.path().join("system.jsonl.journal");
    write_lines(&path, &[line("k1", r#"{"sql": "SELECT 1"}"#)]);
    // Recorded again (`--record all`), and twice by runs recording at once.
    write_lines(
        &journal,
        &[
            line("k2", r#"{"sql": "SELECT 2"}"#),
            line("k1", r#"{"sql": "SELECT 10"}"#),
            line("k2", r#"{"sql": "SELECT 20"}"#),
        ],
    );
    let cassette = Cassette::open(&path).unwrap();
    assert_eq!(sql(cassette.get("k1").unwrap().answer()), Some("SELECT 10"));
    assert_eq!(sql(cassette.get("k2").unwrap().answer()), Some("SELECT 20"));
    let warnings = cassette.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("system.jsonl.journal: line 2: the first of 2 journal line(s)"),
        "{}",
        warnings[0]
    );

    // Folded into the file, nothing repeats any more.
    cassette.finish(false).unwrap();
    let cassette = Cassette::open(&path).unwrap();
    assert!(cassette.warnings().is_empty());
    assert_eq!(sql(cassette.get("k1").unwrap().answer()), Some("SELECT 10"));
}

#[test]
fn a_journal_line_that_is_json_but_not_a_record_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("system.jsonl");
    let journal = dir.path().join("system.jsonl.journal");
    write_lines(
        &journal,
        &[
            line("k1", r#"{"sql": "SELECT 1"}"#),
            line("k2", r#"{"sqI": "SELECT 2"}"#),
        ],
    );
    let error = Cassette::open(&path).err().unwrap();
    assert_eq!((&error.file, error.line), (&journal, Some(2)));
    assert!(error.message.contains("sqI"), "{error}");
}

#[test]
fn answers_two_shards_recorded_for_one_key_keep_the_last_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let shard = |sql: &str| {
        let cassette = Cassette::open(&dir.path().join(format!("{sql}.jsonl"))).unwrap();
        cassette.record("k1", "q1", &reply(sql), None);
        // Recorded twice in one run (two suites sharing the case): listed once.
        cassette.record("k1", "q1", &reply(sql), None);
        cassette.record(&format!("only-{sql}"), "q2", &reply(sql), None);
        cassette.recorded()
    };
    let (first, second) = (shard("SELECT 1"), shard("SELECT 2"));
    assert_eq!(first.len(), 2);
    let (first_file, second_file) = (Path::new("shard-1.json"), Path::new("shard-2.json"));
    let answers: Vec<(&Path, _)> = first
        .iter()
        .map(|answer| (first_file, answer))
        .chain(second.iter().map(|answer| (second_file, answer)))
        .collect();

    let merged = Cassette::open(&dir.path().join("merged.jsonl")).unwrap();
    merged.add_recorded(&answers);
    assert_eq!(merged.len(), 3);
    assert_eq!(sql(merged.get("k1").unwrap().answer()), Some("SELECT 2"));
    let warnings = merged.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("shard-2.json: 1 answer(s)") && warnings[0].contains("`q1`"),
        "{}",
        warnings[0]
    );
}
