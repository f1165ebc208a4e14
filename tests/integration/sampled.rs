//! Sampled answers: a system asked each question several times is judged on its pass rates,
//! and a regression is a drop beyond noise. The system here answers each case's gold with
//! probability p, drawn per (seed, case, sample), so two seeds are two equally good runs.

use std::path::PathBuf;

use crate::support::{demo, sqlgate, Run};

/// A `command` system in `sh`: the request's `id` and `sample`, hashed with `$SEED`, decide
/// whether it answers the case's right answer (from `answers.tsv`) or a wrong one.
const COIN: &str = r#"request=$(cat)
id=$(printf '%s' "$request" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
sample=$(printf '%s' "$request" | sed -n 's/.*"sample":\([0-9]*\).*/\1/p')
draw=$(printf '%s' "$SEED/$id/$sample" | cksum | cut -d' ' -f1)
if [ $((draw % 1000)) -lt "$P_MILLI" ]; then
  grep "^$id	" "$ANSWERS" | cut -f2
else
  printf '{"sql": "SELECT 0"}'
fi
"#;

struct Sampled {
    dir: tempfile::TempDir,
}

impl Sampled {
    /// A gate over the demo, answered by the coin system with `samples` samples.
    fn new(samples: u32) -> Sampled {
        let dir = tempfile::tempdir().unwrap();
        let sampled = Sampled { dir };
        std::fs::write(sampled.path("coin.sh"), COIN).unwrap();
        std::fs::write(sampled.path("answers.tsv"), right_answers()).unwrap();
        sampled.configure(samples, 1, 800, "");
        sampled
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    /// Writes `sqlgate.toml`: the coin system drawing with `seed` and probability
    /// `p_milli`/1000; `extra` goes into the suite.
    fn configure(&self, samples: u32, seed: u32, p_milli: u32, extra: &str) {
        let config = format!(
            r#"[[suite]]
benchmark = "{benchmark}"
gate = {{ regression_p = ">= 0.05" }}
{extra}

[[system]]
name = "coin"
type = "command"
command = ["sh", "{coin}"]
samples = {samples}
env = {{ SEED = "{seed}", P_MILLI = "{p_milli}", ANSWERS = "{answers}" }}
"#,
            benchmark = demo("suite.toml").display(),
            coin = self.path("coin.sh").display(),
            answers = self.path("answers.tsv").display(),
        );
        std::fs::write(self.path("sqlgate.toml"), config).unwrap();
    }

    fn sqlgate(&self, args: &[&str]) -> Run {
        sqlgate().current_dir(self.dir.path()).args(args).run()
    }

    fn snapshot(&self, file: &str) -> String {
        std::fs::read_to_string(self.path(&format!("snapshots/{file}"))).unwrap()
    }
}

/// `id<TAB>answer document` for every demo case: its gold, or an abstention when it is
/// infeasible.
fn right_answers() -> String {
    let cases = std::fs::read_to_string(demo("cases.jsonl")).unwrap();
    cases
        .lines()
        .map(|line| {
            let case: serde_json::Value = serde_json::from_str(line).unwrap();
            // A case with alternatives is answered with its first.
            let answer = match case.get("gold") {
                Some(serde_json::Value::Array(golds)) => serde_json::json!({ "sql": golds[0] }),
                Some(gold) => serde_json::json!({ "sql": gold }),
                None => serde_json::json!({ "abstain": true }),
            };
            format!("{}\t{answer}\n", case["id"].as_str().unwrap())
        })
        .collect()
}

/// A replay file holds sampled abstentions (`{"abstain": true}` in `samples`): replayed with
/// `samples = 3`, every right answer passes every sample, the infeasible cases too.
#[test]
fn a_replay_file_replays_abstaining_samples() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = right_answers()
        .lines()
        .map(|line| {
            let (id, answer) = line.split_once('\t').unwrap();
            let mut answer: serde_json::Value = serde_json::from_str(answer).unwrap();
            let sample = match answer.get("sql") {
                Some(sql) => sql.clone(),
                None => serde_json::json!({ "abstain": true }),
            };
            answer["id"] = id.into();
            answer["samples"] = serde_json::json!([sample.clone(), sample]);
            format!("{answer}\n")
        })
        .collect();
    assert!(lines.contains(r#""samples":[{"abstain":true},{"abstain":true}]"#));
    std::fs::write(dir.path().join("answers.jsonl"), lines).unwrap();
    let config = format!(
        "[[suite]]\nbenchmark = \"{}\"\n\n[[system]]\nname = \"replayed\"\ntype = \"replay\"\n\
         predictions = \"answers.jsonl\"\nsamples = 3\n",
        demo("suite.toml").display()
    );
    std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
    let run = sqlgate()
        .current_dir(dir.path())
        .args(["test", "--accept"])
        .run();
    run.assert_success();
    let snapshot = std::fs::read_to_string(dir.path().join("snapshots/demo.snap")).unwrap();
    let lines = case_lines(&snapshot);
    assert_eq!(lines.len(), 39, "{snapshot}");
    for line in &lines {
        assert!(
            line.contains(" | pass | ")
                && line.contains(" | pass_rate=1 | ")
                && line.contains(" | samples=3 | "),
            "{line}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("demo::bookshop::q35 | pass | abstained")),
        "{snapshot}"
    );
}

fn case_lines(snapshot: &str) -> Vec<&str> {
    snapshot
        .lines()
        .skip_while(|line| *line != "---")
        .skip(1)
        .skip_while(|line| *line != "---")
        .skip(1)
        .collect()
}

#[test]
fn an_equally_good_run_passes_and_a_worse_one_fails_beyond_noise() {
    let gate = Sampled::new(5);
    gate.sqlgate(&["test", "--accept"]).assert_success();
    let accepted = gate.snapshot("demo.snap");
    let lines = case_lines(&accepted);
    assert_eq!(lines.len(), 39, "{accepted}");
    for line in &lines {
        assert!(line.contains(" | pass_rate="), "{line}");
        assert!(line.contains(" samples=5 "), "{line}");
    }
    assert!(
        lines.iter().any(|line| line.contains("pass_rate=0.8")),
        "{accepted}"
    );
    assert!(!accepted.contains("system_error"), "{accepted}");

    // Another seed, the same p: asked again (the seed is in the fingerprint), and within noise.
    gate.configure(5, 2, 800, "");
    let same = gate.sqlgate(&["test", "--junit", "junit.xml"]);
    same.assert_success();
    assert!(same.text().contains("ΔEX = "), "{}", same.text());
    assert!(same.text().contains("flaky"), "{}", same.text());
    let junit = std::fs::read_to_string(gate.path("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"<property name="pass_rate" value="#),
        "{junit}"
    );
    assert!(junit.contains(r#"<property name="samples" value="5"/>"#));

    // p = 0.3: the suite's drop is beyond noise; the gate fails (tests failed, not bad input).
    gate.configure(5, 3, 300, "");
    let worse = gate.sqlgate(&["test", "--junit", "worse.xml"]);
    worse.assert_code(100);
    // The p-value with its magnitude, the same in the gate line and JUnit: never `0`.
    let shown = worse
        .text()
        .lines()
        .find_map(|line| line.split_once("demo::gate::regression_p  "))
        .and_then(|(_, rest)| rest.split(',').next())
        .unwrap_or_else(|| panic!("{}", worse.text()))
        .to_string();
    let p: f64 = shown.parse().unwrap();
    assert!(p > 0.0 && p < 0.05, "{shown}");
    let junit = std::fs::read_to_string(gate.path("worse.xml")).unwrap();
    assert!(
        junit.contains(&format!(r#"name="regression_p" value="{shown}""#)),
        "{shown}: {junit}"
    );
    assert!(
        worse.text().contains("demo::gate::regression_p"),
        "{}",
        worse.text()
    );
    // docs/sampling.md shows this run's summary line (wrapped).
    let doc = std::fs::read_to_string(crate::support::repo().join("docs/sampling.md")).unwrap();
    let shown: Vec<&str> = doc
        .lines()
        .skip_while(|line| !line.starts_with("The summary prints, for a sampled suite"))
        .skip_while(|line| !line.starts_with("```"))
        .skip(1)
        .take_while(|line| !line.starts_with("```"))
        .collect();
    let flat = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat(&worse.text()).contains(&flat(&shown.join(" "))),
        "docs/sampling.md shows\n{}\nthe run printed\n{}",
        shown.join("\n"),
        worse.text()
    );
    let pending = gate.snapshot("demo.snap.new");
    assert!(case_lines(&pending)
        .iter()
        .all(|line| line.contains(" | pass_rate=")));
}

#[test]
fn the_cassette_keeps_every_sample_and_replays_them() {
    let gate = Sampled::new(3);
    gate.sqlgate(&["test", "--accept"]).assert_success();
    let cassette = std::fs::read_to_string(gate.path("snapshots/predictions/coin.jsonl")).unwrap();
    assert_eq!(cassette.lines().count(), 39 * 3);
    assert!(cassette.contains(r#""case":"q01#2""#), "{cassette}");
    // Replayed from the cassette alone (record mode none): the system is asked nothing, and
    // the verdicts are the same, so nothing differs from the accepted snapshot.
    let replayed = gate.sqlgate(&["test", "--record", "none"]);
    replayed.assert_success();
    assert!(!replayed.text().contains("asked "), "{}", replayed.text());
    assert!(
        !replayed.text().contains("snapshot differs"),
        "{}",
        replayed.text()
    );
}

#[test]
fn a_run_record_merges_to_the_same_verdicts() {
    let gate = Sampled::new(3);
    gate.sqlgate(&["test", "--accept"]).assert_success();
    gate.configure(3, 4, 500, "");
    let run = gate.sqlgate(&["test", "--record-out", "run.json", "--junit", "run.xml"]);
    let merged = gate.sqlgate(&["merge", "run.json", "--junit", "merged.xml"]);
    assert_eq!(
        run.code(),
        merged.code(),
        "{}\n{}",
        run.text(),
        merged.text()
    );
    let properties = |file: &str| -> Vec<String> {
        std::fs::read_to_string(gate.path(file))
            .unwrap()
            .lines()
            .filter(|line| line.contains("<property") || line.contains("<testcase"))
            .map(|line| strip_times(line.trim()))
            .collect()
    };
    assert_eq!(properties("run.xml"), properties("merged.xml"));
}

/// A JUnit line without its `time` attribute (the only thing a merge changes).
fn strip_times(line: &str) -> String {
    match line.find(" time=\"") {
        Some(start) => {
            let end = line[start + 7..].find('"').unwrap() + start + 8;
            format!("{}{}", &line[..start], &line[end..])
        }
        None => line.to_string(),
    }
}

#[test]
fn pass_rules_and_bad_settings() {
    let gate = Sampled::new(5);
    gate.configure(5, 1, 800, r#"pass_rule = "most""#);
    let bad = gate.sqlgate(&["test"]);
    bad.assert_code(2);
    assert!(bad.text().contains("pass_rule"), "{}", bad.text());
    // Out of [1, 1000] (docs/sampling.md): refused at load, naming the file, line and key,
    // before any request is built (100,000,000 samples took 24 GB and were killed).
    for samples in [0, 1001, 100_000_000] {
        gate.configure(samples, 1, 800, "");
        let refused = gate.sqlgate(&["test"]);
        refused.assert_code(2);
        let text = refused.text();
        let expected = format!(
            "`samples = {samples}`: how many times each question is asked must be between 1 and 1000"
        );
        assert!(text.contains(&expected), "{text}");
        assert!(text.contains("sqlgate.toml:"), "{text}");
    }
    // `all`: a case with any wrong sample fails; p = 0.8 over 5 samples leaves few all-correct.
    gate.configure(5, 1, 800, r#"pass_rule = "all""#);
    let all = gate.sqlgate(&["test", "--junit", "all.xml"]);
    assert_eq!(all.code(), Some(100), "{}", all.text());
    let junit = std::fs::read_to_string(gate.path("all.xml")).unwrap();
    assert!(junit.contains("flaky"), "{junit}");
}

/// An accepted snapshot is read as strictly as a run record (issue 38): `pass_rate=0` on lines
/// that passed made a clearly worse system pass `regression_p` (p = 1, exit 0). `sqlgate test`
/// and `sqlgate diff` refuse such a line, naming the file and line (exit 2).
#[test]
fn a_snapshot_line_out_of_range_or_contradicting_itself_is_refused() {
    let gate = Sampled::new(5);
    gate.sqlgate(&["test", "--accept"]).assert_success();
    let accepted = gate.snapshot("demo.snap");
    let snap = gate.path("snapshots/demo.snap");
    // The first case line is line 5, after the front matter; it passed at p = 0.8.
    let first = case_lines(&accepted)[0];
    assert!(first.contains(" | pass | correct | ex=1 | "), "{first}");
    let rate = first
        .split(" | ")
        .find(|field| field.starts_with("pass_rate="))
        .unwrap();
    let zeroed: String = accepted
        .lines()
        .map(
            |line| match line.split(" | ").find(|f| f.starts_with("pass_rate=")) {
                Some(rate) => format!("{}\n", line.replace(rate, "pass_rate=0")),
                None => format!("{line}\n"),
            },
        )
        .collect();
    std::fs::write(&snap, zeroed).unwrap();
    gate.configure(5, 3, 300, "");
    let worse = gate.sqlgate(&["test"]);
    worse.assert_code(2);
    assert!(
        worse.stderr.contains("demo.snap: line 5: ")
            && worse.stderr.contains("no sample was correct"),
        "{}",
        worse.stderr
    );

    for (from, to) in [
        (rate.to_string(), "pass_rate=NaN".to_string()),
        (rate.to_string(), "pass_rate=1.5".to_string()),
        (rate.to_string(), "pass_rate=abc".to_string()),
        ("samples=5".to_string(), "samples=-1".to_string()),
        ("ex=1".to_string(), "ex=7".to_string()),
        ("pass | correct".to_string(), "fail | banana".to_string()),
    ] {
        std::fs::write(&snap, accepted.replacen(&from, &to, 1)).unwrap();
        let diff = gate.sqlgate(&["diff", "snapshots/demo.snap", "snapshots/demo.snap"]);
        diff.assert_code(2);
        assert!(
            diff.stderr.contains("demo.snap: line 5: "),
            "{to}: {}",
            diff.stderr
        );
        gate.sqlgate(&["test"]).assert_code(2);
    }
}

/// A sampled run record whose samples are not the configured count, or do not give its
/// verdict, is refused by `merge`, naming the record and the case (issue 38).
#[test]
fn merge_refuses_samples_that_contradict_the_case_or_the_configuration() {
    let gate = Sampled::new(5);
    gate.sqlgate(&["test", "--record-out", "run.json"]);
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(gate.path("run.json")).unwrap()).unwrap();
    let cases = record["suites"][0]["cases"].as_array().unwrap();
    let correct = cases
        .iter()
        .position(|case| case["verdict"] == "correct")
        .unwrap();
    let test = cases[correct]["test"].as_str().unwrap().to_string();
    let sample = cases[correct]["samples"][0].clone();
    let with_samples = |samples: Option<Vec<serde_json::Value>>| {
        let mut edited = record.clone();
        let case = &mut edited["suites"][0]["cases"][correct];
        match samples {
            Some(samples) => case["samples"] = samples.into(),
            None => {
                case.as_object_mut().unwrap().remove("samples");
            }
        }
        std::fs::write(gate.path("edited.json"), edited.to_string()).unwrap();
        gate.sqlgate(&["merge", "edited.json"])
    };
    let wrong = serde_json::json!({"verdict": "incorrect"});
    for samples in [
        Some(vec![sample.clone(); 9]),
        Some(vec![sample.clone(); 2]),
        Some(Vec::new()),
        None,
        Some(vec![wrong; 5]),
    ] {
        let merged = with_samples(samples.clone());
        merged.assert_code(2);
        assert!(
            merged.stderr.contains("edited.json")
                && merged.stderr.contains(&format!("case `{test}`")),
            "{samples:?}: {}",
            merged.stderr
        );
    }
    // The record as written merges.
    let merged = with_samples(Some(vec![sample; 5]));
    assert_ne!(merged.code(), Some(2), "{}", merged.stderr);
}
