//! `every_database`: a suite on a distilled folder (`db/shop/shop.sqlite` and two variants)
//! runs each case on every database. A prediction that matches its gold on the original but not
//! on a variant fails, in defog mode with the key and in testsuite mode without it; the FAIL
//! line, the JUnit failure, the snapshot line and `merge` name the variant; `score --every-database`
//! gives the same EX; an unchanged rerun reuses the verdicts and a regenerated variant is seen.

use std::path::PathBuf;

use crate::support::{sqlgate, Run};

const SCHEMA: &str = "CREATE TABLE items(name TEXT, price INTEGER);";

/// The gold of `cheap`, and a prediction that agrees with it on the original and on
/// `shop_1.sqlite` but not on `shop_2.sqlite`, which has a price between 5 and 10.
const GOLD: &str = "SELECT name FROM items WHERE price < 10";
const WRONG: &str = "SELECT name FROM items WHERE price <= 5 OR price > 35";

struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    /// The folder, a native suite of two cases on it and their recorded predictions; the
    /// `[[suite]]` takes `settings`.
    fn new(settings: &str) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace { dir };
        workspace.database("shop.sqlite", "('a', 5), ('b', 20)");
        workspace.database("shop_1.sqlite", "('c', 1), ('d', 30)");
        workspace.database("shop_2.sqlite", "('e', 7), ('f', 40)");
        workspace.write(
            "cases.jsonl",
            &format!(
                "{{\"id\": \"cheap\", \"db\": \"shop\", \"question\": \"Which items cost less than 10?\", \"gold\": \"{GOLD}\"}}\n\
                 {{\"id\": \"count\", \"db\": \"shop\", \"question\": \"How many items are there?\", \"gold\": \"SELECT count(*) FROM items\"}}\n"
            ),
        );
        workspace.write(
            "suite.toml",
            "name = \"shop\"\ncases = \"cases.jsonl\"\ndb_dir = \"db\"\n",
        );
        workspace.write(
            "predictions.jsonl",
            &format!(
                "{{\"id\": \"cheap\", \"sql\": \"{WRONG}\"}}\n\
                 {{\"id\": \"count\", \"sql\": \"SELECT count(name) FROM items\"}}\n"
            ),
        );
        workspace.write(
            "sqlgate.toml",
            &format!(
                "snapshots = \"snapshots\"\n\n[[suite]]\nbenchmark = \"suite.toml\"\n{settings}\n\n\
                 [[system]]\nname = \"replayed\"\ntype = \"replay\"\npredictions = \"predictions.jsonl\"\n"
            ),
        );
        workspace
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.path(name), text).unwrap();
    }

    /// `db/shop/<file>` holding `rows`, replacing any earlier file of that name.
    fn database(&self, file: &str, rows: &str) {
        let path = self.path("db/shop").join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&path);
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(&format!("{SCHEMA} INSERT INTO items VALUES {rows};"))
            .unwrap();
    }

    fn test(&self) -> Run {
        sqlgate()
            .args(["test", "--no-fail-fast", "--junit", "junit.xml"])
            .args(["--record-out", "record.json"])
            .current_dir(self.dir.path())
            .run()
    }

    /// `sqlgate score` of the same predictions, as JSON.
    fn score(&self, args: &[&str]) -> serde_json::Value {
        let gold = self.path("suite.toml");
        let pred = self.path("predictions.jsonl");
        let output = sqlgate()
            .args(["score", "--gold", gold.to_str().unwrap()])
            .args(["--pred", pred.to_str().unwrap(), "--format", "json"])
            .args(args)
            .run();
        output.assert_success();
        output.json()
    }

    /// The JUnit failure message of test `<suite>::shop::<id>`, and its `failed_on` property.
    fn junit_failure(&self, id: &str) -> (Option<String>, Option<String>) {
        let xml = std::fs::read_to_string(self.path("junit.xml")).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let case = doc
            .descendants()
            .find(|n| {
                n.has_tag_name("testcase") && n.attribute("name") == Some(&format!("shop::{id}"))
            })
            .unwrap_or_else(|| panic!("no test shop::{id} in {xml}"));
        let message = case
            .children()
            .find(|n| n.has_tag_name("failure"))
            .and_then(|n| n.attribute("message"))
            .map(str::to_string);
        let failed_on = case
            .descendants()
            .find(|n| n.has_tag_name("property") && n.attribute("name") == Some("failed_on"))
            .and_then(|n| n.attribute("value"))
            .map(str::to_string);
        (message, failed_on)
    }

    /// The suite's `ex` in the JUnit report.
    fn junit_ex(&self) -> String {
        let xml = std::fs::read_to_string(self.path("junit.xml")).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let suite = doc
            .descendants()
            .find(|n| n.has_tag_name("testsuite") && n.attribute("name") == Some("shop"))
            .unwrap();
        suite
            .children()
            .filter(|n| n.has_tag_name("properties"))
            .flat_map(|p| p.children())
            .find(|n| n.has_tag_name("property") && n.attribute("name") == Some("ex"))
            .and_then(|n| n.attribute("value"))
            .unwrap_or_else(|| panic!("no suite ex in {xml}"))
            .to_string()
    }

    /// The pending snapshot's line of test `shop::shop::<id>`.
    fn snapshot_line(&self, id: &str) -> String {
        let snapshot = std::fs::read_to_string(self.path("snapshots/shop.snap.new")).unwrap();
        let test = format!("shop::shop::{id} |");
        snapshot
            .lines()
            .find(|line| line.starts_with(&test))
            .unwrap_or_else(|| panic!("no line for {id} in {snapshot}"))
            .to_string()
    }
}

/// `(reused, cases)` from the run's note `reused R of N case verdicts`.
fn reused(run: &Run) -> (usize, usize) {
    let text = run.text();
    let found = regex::Regex::new(r"reused (\d+) of (\d+) case verdicts")
        .unwrap()
        .captures(&text)
        .unwrap_or_else(|| panic!("no reuse note in {text}"));
    (found[1].parse().unwrap(), found[2].parse().unwrap())
}

fn case<'a>(score: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    score["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|case| case["id"] == id)
        .unwrap()
}

/// The run fails `cheap` on `shop_2.sqlite` and names it everywhere a reviewer looks.
fn assert_fails_on_the_second_variant(workspace: &Workspace, run: &Run) {
    run.assert_code(100);
    let named = "incorrect on shop_2.sqlite (passes on the original)";
    assert!(run.stdout.contains(named), "{}", run.text());
    assert!(
        run.stdout
            .contains("database:  shop_2.sqlite (passes on the original)"),
        "{}",
        run.text()
    );
    let (message, failed_on) = workspace.junit_failure("cheap");
    assert!(message.unwrap().contains(named));
    assert_eq!(failed_on.as_deref(), Some("shop_2.sqlite"));
    assert_eq!(workspace.junit_failure("count"), (None, None));
    let line = workspace.snapshot_line("cheap");
    assert!(
        line.contains(" | fail | incorrect | ex=0 | failed_on=shop_2.sqlite | "),
        "{line}"
    );
    assert!(!workspace.snapshot_line("count").contains("failed_on"));
}

#[test]
fn defog_mode_on_every_database_fails_a_case_where_a_variant_tells() {
    let workspace = Workspace::new("mode = \"defog\"\nevery_database = true");
    let run = workspace.test();
    assert_fails_on_the_second_variant(&workspace, &run);
    // The run record keeps the database: `merge` reports the same.
    let merged = sqlgate()
        .args(["merge", "record.json", "--junit", "junit.xml"])
        .current_dir(workspace.dir.path())
        .run();
    assert_fails_on_the_second_variant(&workspace, &merged);

    let every = workspace.score(&["--mode", "defog", "--every-database"]);
    assert_eq!(every["summary"]["ex"], 0.5);
    assert_eq!(workspace.junit_ex(), "0.5");
    assert_eq!(case(&every, "cheap")["failed_on"], "shop_2.sqlite");
    // The original alone cannot tell the prediction from the gold.
    let original = workspace.score(&["--mode", "defog"]);
    assert_eq!(original["summary"]["ex"], 1.0);
    assert!(case(&original, "cheap").get("failed_on").is_none());
}

#[test]
fn testsuite_mode_runs_every_database_without_the_key() {
    let workspace = Workspace::new("mode = \"testsuite\"");
    let run = workspace.test();
    assert_fails_on_the_second_variant(&workspace, &run);
    let score = workspace.score(&["--mode", "testsuite"]);
    assert_eq!(score["summary"]["ex"], 0.5);
    assert_eq!(workspace.junit_ex(), "0.5");
    assert_eq!(case(&score, "cheap")["failed_on"], "shop_2.sqlite");
}

#[test]
fn a_rerun_reuses_verdicts_until_the_folder_changes() {
    let workspace = Workspace::new("mode = \"bird\"\nevery_database = true");
    assert_eq!(reused(&workspace.test()), (0, 2));
    let again = workspace.test();
    assert_eq!(reused(&again), (2, 2));
    // A reused verdict still names its database.
    assert_fails_on_the_second_variant(&workspace, &again);

    // A regenerated first variant where the prediction is wrong too: both cases run again.
    workspace.database("shop_1.sqlite", "('c', 8), ('d', 30)");
    let changed = workspace.test();
    assert_eq!(reused(&changed), (0, 2));
    assert!(
        changed.stdout.contains("incorrect on shop_1.sqlite"),
        "{}",
        changed.text()
    );

    // A new file in the folder is a new set of databases.
    assert_eq!(reused(&workspace.test()), (2, 2));
    workspace.database("shop_3.sqlite", "('g', 2)");
    assert_eq!(reused(&workspace.test()), (0, 2));
}

#[test]
fn every_database_needs_database_folders_and_files() {
    let workspace = Workspace::new("mode = \"defog\"\nevery_database = true");
    // The flat layout: the database beside the others, no folder of variants.
    let flat = workspace.path("db/shop.sqlite");
    std::fs::rename(workspace.path("db/shop/shop.sqlite"), &flat).unwrap();
    std::fs::remove_dir_all(workspace.path("db/shop")).unwrap();
    let run = workspace.test();
    run.assert_code(2);
    let text = run.text();
    assert!(text.contains("sqlgate.toml"), "{text}");
    assert!(
        text.contains("`shop`: every_database needs each database in a folder"),
        "{text}"
    );
    assert!(text.contains("runs on ./db/shop.sqlite"), "{text}");
    let gold = workspace.path("suite.toml");
    let pred = workspace.path("predictions.jsonl");
    let score = sqlgate()
        .args([
            "score",
            "--gold",
            gold.to_str().unwrap(),
            "--every-database",
        ])
        .args(["--pred", pred.to_str().unwrap()])
        .run();
    score.assert_code(2);
    assert!(
        score
            .text()
            .contains("--every-database: every_database needs"),
        "{}",
        score.text()
    );

    let on_server = Workspace::new(
        "every_database = true\nengine = \"postgres\"\ndsn = \"postgres://reader@127.0.0.1:9/{db}\"",
    );
    let run = on_server.test();
    run.assert_code(2);
    assert!(
        run.text()
            .contains("distilled suite, which a server engine lists in"),
        "{}",
        run.text()
    );
}

/// A database file one shard read and the next did not (added to the folder, then removed)
/// was never compared: the shard's verdicts on it merged as if it were a fresh run's (issue
/// 38). The union of the databases the shards read must be the folder's now.
#[test]
fn merge_refuses_a_database_only_one_shard_read() {
    let workspace = Workspace::new("mode = \"defog\"\nevery_database = true");
    let variant = workspace.path("db/shop/shop_2.sqlite");
    std::fs::remove_file(&variant).unwrap();
    let fresh = workspace.test();
    fresh.assert_success();

    let shard = |index: u32| {
        let record = format!("shard{index}.json");
        sqlgate()
            .args([
                "test",
                "--no-fail-fast",
                "--partition",
                &format!("count:{index}/2"),
            ])
            .args(["--record-out", &record])
            .current_dir(workspace.dir.path())
            .run();
        record
    };
    let merge = || {
        sqlgate()
            .args(["merge", "shard1.json", "shard2.json"])
            .current_dir(workspace.dir.path())
            .run()
    };
    // The variant that fails `cheap` is there for the first shard only.
    workspace.database("shop_2.sqlite", "('e', 7), ('f', 40)");
    shard(1);
    std::fs::remove_file(&variant).unwrap();
    shard(2);
    let merged = merge();
    merged.assert_code(2);
    assert!(
        merged
            .stderr
            .contains("shard1.json: this shard read database db/shop/shop_2.sqlite"),
        "{}",
        merged.stderr
    );
    // Shards run on one state of the folder merge to the fresh run's verdicts.
    shard(1);
    assert_eq!(merge().code(), fresh.code());
}
