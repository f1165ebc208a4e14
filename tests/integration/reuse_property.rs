//! The property behind the cache, verdict reuse and the run records' fingerprints: whatever
//! happened before (predictions edited, a database touched or edited, a run killed mid-way, a
//! reply field changed, the configuration changed), a run that reuses earlier work writes the
//! same JUnit and the same pending snapshot as a run that computes everything (`--no-cache`),
//! byte for byte once times are removed.
//!
//! Each sequence is seeded; `SQLGATE_FUZZ_CASES` sets how many run (default 4).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::support::{sqlgate, Sqlgate};

/// Seed cases: (id, question, gold). Each has one paraphrase in family `para`.
const CASES: &[(&str, &str, &str)] = &[
    ("a", "most expensive?", "SELECT max(price) FROM items"),
    ("b", "how many?", "SELECT count(*) FROM items"),
    (
        "c",
        "names of cheap items?",
        "SELECT name FROM items WHERE price < 6",
    ),
    (
        "d",
        "total by kind?",
        "SELECT kind, sum(price) FROM items GROUP BY kind",
    ),
];

/// Answers a case may be given: right on some contents, wrong, broken.
const ANSWERS: &[&str] = &[
    "SELECT 7",
    "SELECT 3",
    "SELECT max(price) FROM items",
    "SELECT count(*) FROM items",
    "SELECT name FROM items WHERE price < 6",
    "SELECT name FROM items WHERE price <= 6",
    "SELECT kind, sum(price) FROM items GROUP BY kind",
    "SELECT kind, count(*) FROM items GROUP BY kind",
    "SELECT nope FROM items",
    "```sql\nSELECT max(price) FROM items\n```",
];

const RETRIEVED: &[&[&str]] = &[&[], &["items"], &["items.price"], &["nothing_here"]];

struct Bench {
    dir: tempfile::TempDir,
    /// Per test case (seeds, then paraphrases): its answer and retrieved elements.
    answers: Vec<(String, usize, usize)>,
    threshold: f64,
    etm: bool,
}

impl Bench {
    fn new() -> Bench {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("db")).unwrap();
        let bench = Bench {
            dir,
            answers: CASES
                .iter()
                .map(|(id, _, _)| (id.to_string(), 0, 0))
                .chain(
                    CASES
                        .iter()
                        .map(|(id, _, _)| (format!("{id}::para::p1"), 0, 0)),
                )
                .collect(),
            threshold: 0.5,
            etm: false,
        };
        bench.sql(
            "CREATE TABLE items(name TEXT, kind TEXT, price INTEGER);
             INSERT INTO items VALUES ('pen', 'office', 5), ('ink', 'office', 7), ('cup', 'home', 3);",
        );
        let line = |id: &str, question: &str, gold: &str, seed: Option<&str>| {
            let mut record =
                serde_json::json!({"id": id, "db": "shop", "question": question, "gold": gold});
            if let Some(seed) = seed {
                record["seed_id"] = seed.into();
                record["sql"] = gold.into();
                record.as_object_mut().unwrap().remove("gold");
            }
            record.to_string() + "\n"
        };
        let cases: String = CASES
            .iter()
            .map(|(id, q, g)| line(id, q, g, None))
            .collect();
        let para: String = CASES
            .iter()
            .map(|(id, q, g)| {
                line(
                    &format!("{id}::para::p1"),
                    &format!("tell me: {q}"),
                    g,
                    Some(id),
                )
            })
            .collect();
        bench.write("cases.jsonl", &cases);
        bench.write("para.jsonl", &para);
        bench.write(
            "suite.toml",
            "name = \"shop\"\ncases = \"cases.jsonl\"\ndb_dir = \"db\"\n",
        );
        bench.write_config();
        bench.write_answers();
        bench
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, content: &str) {
        std::fs::write(self.path(name), content).unwrap();
    }

    fn sql(&self, sql: &str) {
        let conn = rusqlite::Connection::open(self.path("db/shop.sqlite")).unwrap();
        conn.execute_batch(sql).unwrap();
    }

    fn write_config(&self) {
        let structural = if self.etm {
            "structural = [\"etm\"]\n"
        } else {
            ""
        };
        self.write(
            "sqlgate.toml",
            &format!(
                "[[suite]]\nbenchmark = \"suite.toml\"\n{structural}\
                 gate = {{ ex = \">= {}\" }}\n\
                 families = {{ para = \"para.jsonl\" }}\n\
                 family_gate = {{ para = {{ recall = \">= 0.5\" }} }}\n\n\
                 [[system]]\nname = \"s\"\ntype = \"replay\"\npredictions = \"predictions.jsonl\"\n",
                self.threshold
            ),
        );
    }

    fn write_answers(&self) {
        let lines: String = self
            .answers
            .iter()
            .map(|(id, answer, retrieved)| {
                let mut record = serde_json::json!({"id": id, "sql": ANSWERS[*answer]});
                if !RETRIEVED[*retrieved].is_empty() {
                    record["retrieved"] = RETRIEVED[*retrieved].into();
                }
                record.to_string() + "\n"
            })
            .collect();
        self.write("predictions.jsonl", &lines);
    }

    fn command(&self, args: &[&str]) -> Sqlgate {
        let mut command = sqlgate();
        command.args(args).current_dir(self.dir.path());
        command
    }

    /// A run's exit code, JUnit without times, and pending snapshot (removed after reading,
    /// so the next run compares against the same accepted one).
    fn run(&self, extra: &[&str]) -> (Option<i32>, String, Option<String>) {
        let mut args = vec!["test", "--junit", "junit.xml"];
        args.extend_from_slice(extra);
        let output = self.command(&args).run();
        let code = output.status.code();
        assert!(
            code == Some(0) || code == Some(100),
            "{code:?}: {}",
            output.text()
        );
        let pending = self.path("snapshots/shop.snap.new");
        let snapshot = std::fs::read_to_string(&pending).ok();
        let _ = std::fs::remove_file(&pending);
        (code, junit_without_times(&self.path("junit.xml")), snapshot)
    }

    /// Starts a run and kills it after `millis`.
    fn kill_a_run(&self, millis: u64) {
        let mut child = self
            .command(&["test"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        std::thread::sleep(Duration::from_millis(millis));
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_file(self.path("snapshots/shop.snap.new"));
    }

    /// One random change; returns what it did, for the failure message.
    fn change(&mut self, rng: &mut ChaCha8Rng) -> String {
        match rng.random_range(0..7) {
            0 => {
                let case = rng.random_range(0..self.answers.len());
                self.answers[case].1 = rng.random_range(0..ANSWERS.len());
                self.write_answers();
                format!(
                    "answer of {} set to {:?}",
                    self.answers[case].0, ANSWERS[self.answers[case].1]
                )
            }
            1 => {
                let case = rng.random_range(0..self.answers.len());
                self.answers[case].2 = rng.random_range(0..RETRIEVED.len());
                self.write_answers();
                format!(
                    "retrieved of {} set to {:?}",
                    self.answers[case].0, RETRIEVED[self.answers[case].2]
                )
            }
            2 => {
                let file = std::fs::File::options()
                    .write(true)
                    .open(self.path("db/shop.sqlite"))
                    .unwrap();
                let when =
                    std::time::SystemTime::now() + Duration::from_secs(rng.random_range(1..100));
                file.set_modified(when).unwrap();
                "database touched".to_string()
            }
            3 => {
                let price = rng.random_range(1..10);
                let name = ["pen", "ink", "cup"][rng.random_range(0..3)];
                self.sql(&format!(
                    "UPDATE items SET price = {price} WHERE name = '{name}'"
                ));
                format!("database edited: {name} costs {price}")
            }
            4 => {
                let millis = rng.random_range(0..400);
                self.kill_a_run(millis);
                format!("a run killed after {millis} ms")
            }
            5 => {
                self.threshold = [0.25, 0.5, 0.75][rng.random_range(0..3)];
                self.etm = rng.random_bool(0.5);
                self.write_config();
                format!("config: ex >= {}, etm {}", self.threshold, self.etm)
            }
            _ => {
                self.run(&["--accept"]);
                "accepted a run".to_string()
            }
        }
    }
}

fn junit_without_times(path: &Path) -> String {
    let xml = std::fs::read_to_string(path).unwrap();
    let times = regex::Regex::new(r#"(time|timestamp)="[^"]*""#).unwrap();
    times.replace_all(&xml, "$1=\"\"").into_owned()
}

#[test]
fn a_run_reusing_earlier_work_writes_what_a_fresh_run_writes() {
    let sequences: u64 = std::env::var("SQLGATE_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4);
    for seed in 0..sequences {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut bench = Bench::new();
        let mut history = Vec::new();
        bench.run(&["--accept"]);
        for _ in 0..8 {
            history.push(bench.change(&mut rng));
            let cached = bench.run(&[]);
            let fresh = bench.run(&["--no-cache"]);
            assert!(
                cached == fresh,
                "seed {seed}, after: {history:#?}\ncached: {cached:#?}\nfresh: {fresh:#?}"
            );
        }
    }
}
