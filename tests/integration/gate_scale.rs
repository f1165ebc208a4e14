//! Scaling out and never redoing finished work, end to end on the demo: shards merged into the
//! same JUnit and snapshot as one run, merge refusing shards that are not one run, and
//! unchanged cases reusing their verdicts.

use std::path::{Path, PathBuf};

use crate::support::{demo_workspace, replace_prediction, repo, sqlgate, Run};

/// The demo gate in a temporary folder, with its own predictions and snapshots.
struct Gate {
    dir: tempfile::TempDir,
}

impl Gate {
    fn new() -> Gate {
        let gate = Gate {
            dir: demo_workspace(),
        };
        gate.write_config(">= 0.6");
        gate
    }

    fn write_config(&self, threshold: &str) {
        self.write_config_with(
            threshold,
            "name = \"sample\"\ntype = \"replay\"\npredictions = \"sample.jsonl\"",
        );
    }

    fn write_config_with(&self, threshold: &str, system: &str) {
        let config = format!(
            r#"
[[suite]]
benchmark = "{}"
structural = ["etm"]
gate = {{ ex = "{threshold}" }}

[[system]]
{system}
"#,
            repo().join("benchmarks/demo/suite.toml").display()
        );
        std::fs::write(self.path("sqlgate.toml"), config).unwrap();
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn sqlgate(&self, args: &[&str]) -> Run {
        sqlgate().args(args).current_dir(self.dir.path()).run()
    }

    fn replace_prediction(&self, id: &str, sql: &str) {
        replace_prediction(&self.path("sample.jsonl"), id, sql);
    }
}

/// JUnit without its times, which differ from run to run.
fn junit_without_times(path: &Path) -> String {
    let xml = std::fs::read_to_string(path).unwrap();
    let times = regex::Regex::new(r#"(time|timestamp)="[^"]*""#).unwrap();
    times.replace_all(&xml, "$1=\"\"").into_owned()
}

#[test]
fn shards_merged_gate_like_one_run() {
    // A wrong answer, so the merged run must fail the case and change the snapshot.
    let whole = Gate::new();
    let sharded = Gate::new();
    for gate in [&whole, &sharded] {
        gate.replace_prediction("q02", "SELECT 42");
    }
    let one_run = whole.sqlgate(&["test", "--no-cache", "--junit", "one.xml"]);
    one_run.assert_code(100);

    for shard in 1..=3 {
        let partition = format!("hash:{shard}/3");
        let record = format!("shard-{shard}.json");
        let output = sharded.sqlgate(&["test", "--partition", &partition, "--record-out", &record]);
        assert!(output.text().contains("no gate"), "{}", output.text());
        assert!(sharded.path(&record).is_file());
    }
    let shards = ["shard-1.json", "shard-2.json", "shard-3.json"];
    let merge = |extra: &[&str]| sharded.sqlgate(&[&["merge"], &shards[..], extra].concat());
    let merged = merge(&["--junit", "merged.xml"]);
    merged.assert_code(100);
    assert!(merged.text().contains("demo::bookshop::q02"));
    assert_eq!(
        junit_without_times(&whole.path("one.xml")),
        junit_without_times(&sharded.path("merged.xml"))
    );

    // Accepting judges against what is accepted: the wrong answer is a known failure in both.
    whole
        .sqlgate(&["test", "--accept", "--no-cache", "--junit", "one.xml"])
        .assert_code(0);
    merge(&["--accept", "--junit", "merged.xml"]).assert_code(0);
    assert_eq!(
        junit_without_times(&whole.path("one.xml")),
        junit_without_times(&sharded.path("merged.xml"))
    );
    let snapshot = |gate: &Gate| std::fs::read(gate.path("snapshots/demo.snap")).unwrap();
    assert_eq!(snapshot(&whole), snapshot(&sharded));
}

#[test]
fn merge_refuses_shards_that_are_not_one_whole_run() {
    let gate = Gate::new();
    for shard in 1..=2 {
        let partition = format!("count:{shard}/2");
        let record = format!("shard-{shard}.json");
        gate.sqlgate(&["test", "--partition", &partition, "--record-out", &record]);
    }
    let refused = |args: &[&str], why: &str| {
        let mut all = vec!["merge"];
        all.extend_from_slice(args);
        let output = gate.sqlgate(&all);
        output.assert_code(2);
        assert!(output.text().contains(why), "{why}: {}", output.text());
    };
    refused(&["shard-1.json"], "in no shard");
    refused(&["shard-1.json", "shard-1.json"], "is also in");
    std::fs::write(gate.path("garbage.json"), "{\"cases\": 1}").unwrap();
    refused(
        &["shard-1.json", "garbage.json"],
        "not a sqlgate run record",
    );
    // A shard of another run: the configuration changed after it ran.
    gate.write_config(">= 0.5");
    gate.sqlgate(&[
        "test",
        "--partition",
        "count:2/2",
        "--record-out",
        "other.json",
    ]);
    refused(&["shard-1.json", "other.json"], "belongs to another run");
    let merged = gate.sqlgate(&["merge", "other.json", "shard-1.json"]);
    merged.assert_code(2);
}

#[test]
fn unchanged_cases_reuse_their_verdicts_and_a_changed_one_is_evaluated() {
    let gate = Gate::new();
    let first = gate.sqlgate(&["test", "--junit", "first.xml"]);
    assert!(first.text().contains("reused 0 of "), "{}", first.text());
    let second = gate.sqlgate(&["test", "--junit", "second.xml"]);
    let cases = regex::Regex::new(r"reused (\d+) of (\d+) case verdicts")
        .unwrap()
        .captures(&second.text())
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .unwrap();
    assert_eq!(cases.0, cases.1, "{}", second.text());
    assert!(second.text().contains("0 executed"), "{}", second.text());
    assert_eq!(
        junit_without_times(&gate.path("first.xml")),
        junit_without_times(&gate.path("second.xml"))
    );

    gate.replace_prediction("q02", "SELECT 42");
    let third = gate.sqlgate(&["test"]);
    let expected = format!(
        "reused {} of {}",
        cases.1.parse::<usize>().unwrap() - 1,
        cases.1
    );
    assert!(third.text().contains(&expected), "{}", third.text());
    third.assert_code(100);

    let uncached = gate.sqlgate(&["test", "--no-cache"]);
    assert!(!uncached.text().contains("reused"), "{}", uncached.text());
    assert_eq!(uncached.status.code(), Some(100));
}

/// `(reused, cases)` of a run's summary line.
fn reused(output: &Run) -> (usize, usize) {
    let found = regex::Regex::new(r"reused (\d+) of (\d+) case verdicts?")
        .unwrap()
        .captures(&output.text())
        .map(|c| (c[1].parse().unwrap(), c[2].parse().unwrap()));
    found.unwrap_or_else(|| panic!("no reuse line: {}", output.text()))
}

#[test]
fn a_partial_run_keeps_the_verdicts_of_the_cases_it_did_not_evaluate() {
    let gate = Gate::new();
    let (_, cases) = reused(&gate.sqlgate(&["test"]));
    // A shard, then a filtered run that evaluates one changed case: each updates only its
    // own cases' verdicts.
    let shard = gate.sqlgate(&["test", "--partition", "hash:1/3"]);
    assert_eq!(reused(&shard).0, reused(&shard).1, "{}", shard.text());
    gate.replace_prediction("q02", "SELECT 42");
    let filtered = gate.sqlgate(&["test", "--exact", "demo::bookshop::q02"]);
    assert_eq!(reused(&filtered), (0, 1), "{}", filtered.text());
    let whole = gate.sqlgate(&["test"]);
    assert_eq!(reused(&whole), (cases, cases), "{}", whole.text());
}

#[test]
fn answers_recorded_by_shards_on_other_machines_reach_the_cassette_through_merge() {
    let gate = Gate::new();
    gate.write_config_with(
        ">= 0",
        r#"name = "agent"
type = "command"
command = ["python3", "-c", "import sys; sys.stdin.read(); print('{\"sql\": \"SELECT 1\"}')"]"#,
    );
    let cassette = gate.path("snapshots/predictions/agent.jsonl");
    for shard in 1..=2 {
        let partition = format!("count:{shard}/2");
        let record = format!("shard-{shard}.json");
        let output = gate.sqlgate(&[
            "test",
            "--record",
            "new",
            "--partition",
            &partition,
            "--record-out",
            &record,
        ]);
        assert!(cassette.is_file(), "{}", output.text());
        // Each shard on a machine of its own: its cassette stays there.
        std::fs::remove_file(&cassette).unwrap();
    }
    // Accepting prunes the cassette of answers no case used: the shards' cases used them all.
    let merged = gate.sqlgate(&["merge", "shard-1.json", "shard-2.json", "--accept"]);
    assert!(merged.status.code() != Some(2), "{}", merged.text());
    let cases = gate
        .sqlgate(&["test", "--list"])
        .stdout
        .lines()
        .filter(|name| !name.contains("::gate::"))
        .count();
    let recorded = std::fs::read_to_string(&cassette).unwrap().lines().count();
    assert_eq!(recorded, cases);
    // Replaying the merged cassette asks the system nothing.
    let replayed = gate.sqlgate(&["test", "--record", "none"]);
    assert!(
        !replayed.text().contains("not in the cassette"),
        "{}",
        replayed.text()
    );
}

/// A suite of its own in a temporary folder: a database `shop` that tests may edit, cases
/// `a` and `b`, and a replayed predictions file.
struct Shop {
    dir: tempfile::TempDir,
}

impl Shop {
    fn new() -> Shop {
        let dir = tempfile::tempdir().unwrap();
        let shop = Shop { dir };
        std::fs::create_dir_all(shop.path("db")).unwrap();
        shop.sql("CREATE TABLE items(price INTEGER); INSERT INTO items VALUES (5), (7);");
        shop.write(
            "cases.jsonl",
            "{\"id\": \"a\", \"db\": \"shop\", \"question\": \"max?\", \"gold\": \"SELECT max(price) FROM items\"}\n\
             {\"id\": \"b\", \"db\": \"shop\", \"question\": \"n?\", \"gold\": \"SELECT count(*) FROM items\"}\n",
        );
        // `a` is right only while 7 is the largest price.
        shop.write(
            "predictions.jsonl",
            "{\"id\": \"a\", \"sql\": \"SELECT 7\"}\n{\"id\": \"b\", \"sql\": \"SELECT 2\"}\n",
        );
        shop.write(
            "suite.toml",
            "name = \"shop\"\ncases = \"cases.jsonl\"\ndb_dir = \"db\"\n",
        );
        shop.write(
            "sqlgate.toml",
            "[[suite]]\nbenchmark = \"suite.toml\"\n\n[[system]]\nname = \"s\"\ntype = \"replay\"\npredictions = \"predictions.jsonl\"\n",
        );
        shop
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, content: &str) {
        std::fs::write(self.path(name), content).unwrap();
    }

    /// Runs SQL on the shop's database (a change to its content).
    fn sql(&self, sql: &str) {
        let conn = rusqlite::Connection::open(self.path("db/shop.sqlite")).unwrap();
        conn.execute_batch(sql).unwrap();
    }

    /// `sqlgate ARGS` under CI; its exit code and output.
    fn sqlgate(&self, args: &[&str]) -> (Option<i32>, String) {
        let output = sqlgate()
            .args(args)
            .current_dir(self.dir.path())
            .env("CI", "true")
            .run();
        (output.status.code(), output.text())
    }
}

#[test]
fn a_changed_database_invalidates_its_cases_verdicts_and_gold_results() {
    let shop = Shop::new();
    let run = || shop.sqlgate(&["test", "--junit", "junit.xml"]);
    assert_eq!(run().0, Some(0));
    let (code, again) = run();
    assert_eq!(code, Some(0));
    assert!(again.contains("reused 2 of 2 case verdicts"), "{again}");
    assert!(again.contains("0 executed"), "{again}");

    shop.sql("INSERT INTO items VALUES (9);");
    let (code, changed) = run();
    assert!(changed.contains("reused 0 of 2 case verdicts"), "{changed}");
    assert!(
        changed.contains("0 results from an earlier run's cache"),
        "{changed}"
    );
    assert_eq!(code, Some(100), "{changed}");
    let junit = std::fs::read_to_string(shop.path("junit.xml")).unwrap();
    assert!(junit.contains("<failure"), "{junit}");

    // A case added before the others does not move their verdicts out of reach.
    let cases = std::fs::read_to_string(shop.path("cases.jsonl")).unwrap();
    shop.write(
        "cases.jsonl",
        &("{\"id\": \"c\", \"db\": \"shop\", \"question\": \"min?\", \"gold\": \"SELECT min(price) FROM items\"}\n"
            .to_string()
            + &cases),
    );
    let (_, added) = run();
    assert!(added.contains("reused 2 of 3 case verdicts"), "{added}");
}

#[test]
fn merge_refuses_shards_that_read_different_contents_of_a_database() {
    let shop = Shop::new();
    let shard = |k: usize| {
        let (partition, record) = (format!("count:{k}/2"), format!("shard-{k}.json"));
        let (code, output) =
            shop.sqlgate(&["test", "--partition", &partition, "--record-out", &record]);
        assert_ne!(code, Some(2), "{output}");
    };
    shard(1);
    // A row edited between the shards: shard 2 reads another database than shard 1 did.
    shop.sql("UPDATE items SET price = 9 WHERE price = 5;");
    shard(2);
    let (code, output) = shop.sqlgate(&["merge", "shard-1.json", "shard-2.json"]);
    assert_eq!(code, Some(2), "{output}");
    assert!(
        output.contains("shard-2.json")
            && output
                .contains("database db/shop.sqlite differs between this shard and shard-1.json"),
        "{output}"
    );

    // Both shards on one state (where `a` is wrong), then the database changed before the
    // merge.
    shard(1);
    let (code, output) = shop.sqlgate(&["merge", "shard-1.json", "shard-2.json"]);
    assert_eq!(code, Some(100), "{output}");
    shop.sql("UPDATE items SET price = 7 WHERE price = 9;");
    let (code, output) = shop.sqlgate(&["merge", "shard-1.json", "shard-2.json"]);
    assert_eq!(code, Some(2), "{output}");
    assert!(output.contains("is not as this shard read it"), "{output}");
}

#[test]
fn merge_refuses_a_record_whose_fields_contradict_each_other() {
    let shop = Shop::new();
    for k in 1..=2 {
        let (partition, record) = (format!("count:{k}/2"), format!("shard-{k}.json"));
        shop.sqlgate(&["test", "--partition", &partition, "--record-out", &record]);
    }
    let (code, output) = shop.sqlgate(&["merge", "shard-1.json", "shard-2.json"]);
    assert_eq!(code, Some(0), "{output}");
    // An edit calls case `b` (shard 2, correct) incorrect, leaving its ex = 1.
    let path = shop.path("shard-2.json");
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let case = &mut record["suites"][0]["cases"][0];
    assert_eq!(
        (&case["verdict"], &case["ex"]),
        (&"correct".into(), &1.0.into())
    );
    case["verdict"] = "incorrect".into();
    std::fs::write(&path, record.to_string()).unwrap();
    let (code, output) = shop.sqlgate(&["merge", "shard-1.json", "shard-2.json"]);
    assert_eq!(code, Some(2), "{output}");
    assert!(
        output.contains("shard-2.json")
            && output.contains("verdict `incorrect` contradicts ex = 1"),
        "{output}"
    );
}
