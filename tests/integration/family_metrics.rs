//! Generated families against their seeds, through the CLI: `sqlgate score --family` reports a
//! family's A_orig, drop, CS interval, Pass@K, QVT and retrieval rates, and `family_gate`
//! thresholds pass, fail with the value, or fail closed when the metric cannot be computed.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::{repo, sqlgate, Run};

const Q01: &str = "SELECT title FROM books WHERE genre = 'Poetry'";
const Q02: &str = "SELECT first_name, last_name FROM customers WHERE email IS NULL";

/// A folder with a paraphrase-like family of the demo (three variants of q01, two of them
/// answered right; three of q02, one right) and predictions answering every seed right.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut family = String::new();
    let mut predictions = String::new();
    let cases = std::fs::read_to_string(repo().join("benchmarks/demo/cases.jsonl")).unwrap();
    for line in cases.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let answer = match case["gold"].as_str() {
            Some(gold) => json!({"id": case["id"], "sql": gold}),
            None => json!({"id": case["id"], "abstain": true}),
        };
        predictions.push_str(&format!("{answer}\n"));
    }
    let variants = [
        (
            "q01",
            Q01,
            "1",
            0.9,
            true,
            vec!["books", "books.title", "authors"],
        ),
        (
            "q01",
            Q01,
            "2",
            0.8,
            true,
            vec!["books", "books.title", "authors"],
        ),
        (
            "q01",
            Q01,
            "3",
            0.7,
            false,
            vec!["books", "books.title", "authors"],
        ),
        ("q02", Q02, "1", 0.9, true, vec!["customers", "email"]),
        ("q02", Q02, "2", 0.6, false, vec!["customers", "email"]),
        ("q02", Q02, "3", 0.6, false, vec!["customers", "email"]),
    ];
    for (seed, gold, id, cs, right, retrieved) in variants {
        let mutant = json!({"id": id, "seed_id": seed, "db": "bookshop", "sql": gold,
            "question": format!("variant {id} of {seed}"), "cs": cs, "method": "offline"});
        family.push_str(&format!("{mutant}\n"));
        let sql = if right { gold } else { "SELECT 0" };
        let answer = json!({"id": format!("{seed}::para::{id}"), "sql": sql,
            "samples": [gold, "SELECT 0"], "retrieved": retrieved});
        predictions.push_str(&format!("{answer}\n"));
    }
    std::fs::write(dir.path().join("para.jsonl"), family).unwrap();
    std::fs::write(dir.path().join("empty.jsonl"), "").unwrap();
    std::fs::write(dir.path().join("predictions.jsonl"), predictions).unwrap();
    dir
}

fn close(value: &Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|v| (v - expected).abs() < 1e-9)
}

#[test]
fn score_reports_a_family_against_its_seeds() {
    let dir = workspace();
    let gold = repo().join("benchmarks/demo/suite.toml");
    let args = [
        "score",
        "--gold",
        gold.to_str().unwrap(),
        "--pred",
        "predictions.jsonl",
        "--family",
        "para=para.jsonl",
    ];
    let output = sqlgate()
        .current_dir(dir.path())
        .args([&args[..], &["--format", "json"]].concat())
        .run();
    output.assert_success();
    let report: Value = serde_json::from_str(&output.stdout).unwrap();
    let para = &report["summary"]["families"]["para"];
    assert_eq!(
        (para["n"].as_u64(), para["seeds"].as_u64()),
        (Some(6), Some(2))
    );
    assert!(
        close(&para["a_orig"], 1.0) && close(&para["ex"], 0.5),
        "{para}"
    );
    assert!(close(&para["drop"], 50.0), "{para}");
    assert_eq!(para["lost"], 3);
    // Mean CS 0.75: [0.5 * 0.75, 0.5 * 1.25].
    assert!(close(&para["cs_interval"]["low"], 0.375));
    assert!(close(&para["cs_interval"]["high"], 0.625));
    // SQL2NL Pass@K per seed (n = 3; c = 2 and 1): Pass@2 = (1 + 2/3) / 2.
    assert!(close(&para["pass_at_k"]["1"], 0.5));
    assert!(close(&para["pass_at_k"]["2"], (1.0 + 2.0 / 3.0) / 2.0));
    assert!(para["pass_at_k"].get("5").is_none());
    // NL2SQL Pass@K over each reply's two samples, one of them right.
    assert!(close(&para["nl2sql_pass_at_k"]["1"], 0.5));
    assert!(close(&para["nl2sql_pass_at_k"]["2"], 1.0));
    assert!(close(&para["qvt"]["mean"], 0.5) && close(&para["qvt"]["min"], 1.0 / 3.0));
    // Retrieval against the gold's elements: q01 {books, title, genre}, q02 {customers,
    // first_name, last_name, email}.
    assert!(close(&para["retrieval"]["false_positive_rate"], 1.0 / 6.0));
    assert!(close(&para["retrieval"]["recall"], (2.0 + 1.5) / 6.0));
    let joins = para["breakdowns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["split"] == "joins")
        .unwrap();
    assert_eq!(
        (joins["bucket"].as_str(), joins["family"]["n"].as_u64()),
        (Some("0"), Some(6))
    );
    let variant = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|case| case["id"] == "q01::para::1")
        .unwrap();
    assert!(close(&variant["cs"], 0.9));
    assert_eq!(variant["tags"]["seed"], "q01");

    let text = sqlgate().current_dir(dir.path()).args(args).run().stdout;
    assert!(text.contains("families against their seeds"), "{text}");
    assert!(
        text.contains("SQL2NL Pass@K (at least 3 variant(s) per seed): @1 0.500, @2 0.833"),
        "{text}"
    );
    assert!(text.contains("[0.375, 0.625] (CS 0.75)"), "{text}");

    let bad = sqlgate()
        .current_dir(dir.path())
        .args([
            "score",
            "--gold",
            gold.to_str().unwrap(),
            "--pred",
            "predictions.jsonl",
            "--family",
            "para",
        ])
        .run();
    assert_eq!(bad.status.code(), Some(2));
    assert!(bad.stderr.contains("expected NAME=PATH"));
}

/// A predictions file answering four TQA families, scored with one of them loaded: refused
/// naming every family the run leaves out (and how many predictions each has), nothing
/// scored; with all four loaded it scores.
#[test]
fn predictions_for_families_not_loaded_are_refused_naming_each() {
    let tqa = repo().join("benchmarks/demo/tqa");
    let score = |families: &[&str]| {
        let mut command = sqlgate();
        command
            .arg("score")
            .arg("--gold")
            .arg(repo().join("benchmarks/demo/suite.toml"))
            .arg("--pred")
            .arg(tqa.join("predictions.jsonl"));
        for family in families {
            command.arg("--family").arg(format!(
                "{family}={}",
                tqa.join(format!("{family}.jsonl")).display()
            ));
        }
        command.run()
    };
    let subset = score(&["tqa-ll"]);
    subset.assert_bad_input(&[
        "predictions.jsonl",
        "families this run does not load: `tqa-lo` (34), `tqa-ol` (34), `tqa-oo` (34)",
        "--family NAME=FILE",
    ]);
    assert!(subset.stdout.is_empty(), "{}", subset.stdout);
    score(&["tqa-oo", "tqa-lo", "tqa-ol", "tqa-ll"]).assert_success();
}

fn gate(dir: &Path, family_gate: &str) -> (Run, String) {
    gate_with_profile(dir, family_gate, "", &[])
}

/// A gate run of the family with these family gates, the `[profile.strict]` table and flags.
fn gate_with_profile(
    dir: &Path,
    family_gate: &str,
    profile: &str,
    flags: &[&str],
) -> (Run, String) {
    let config = format!(
        "[[suite]]\nname = \"fam\"\nbenchmark = \"{}\"\nfamilies = {{ para = \"para.jsonl\", empty = \"empty.jsonl\" }}\nfamily_gate = {{ {family_gate} }}\n\n\
         [[system]]\nname = \"replayed\"\ntype = \"replay\"\npredictions = \"predictions.jsonl\"\n\n[profile.strict]\n{profile}\n",
        repo().join("benchmarks/demo/suite.toml").display()
    );
    std::fs::write(dir.join("sqlgate.toml"), config).unwrap();
    // The wrong variants become known failures: what is left to fail is the gates.
    sqlgate().current_dir(dir).args(["test", "--accept"]).run();
    let args = [
        &["test", "--no-fail-fast", "--junit", "junit.xml"][..],
        flags,
    ]
    .concat();
    let output = sqlgate().current_dir(dir).args(&args).run();
    let text = output.stdout.clone();
    (output, text)
}

#[test]
fn family_gates_pass_fail_and_fail_closed() {
    let dir = workspace();
    let (output, text) = gate(
        dir.path(),
        "para = { drop = \"<= 50\", \"pass@2\" = \">= 0.8\", qvt = \">= 0.5\", recall = \">= 0.5\" }",
    );
    assert_eq!(output.status.code(), Some(0), "{text}");
    for test in ["drop", "pass@2", "qvt", "recall"] {
        assert_eq!(
            status(&text, &format!("fam::gate::para::{test}")),
            "PASS",
            "{text}"
        );
    }
    assert!(text.contains("fam: families against their seeds"), "{text}");
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"<property name="seed_id" value="q01"/>"#),
        "{junit}"
    );
    assert!(
        junit.contains(r#"<property name="cs" value="0.9"/>"#),
        "{junit}"
    );
    assert!(
        junit.contains(r#"<property name="para::drop" value="50"/>"#),
        "{junit}"
    );

    let (output, text) = gate(
        dir.path(),
        "para = { drop = \"<= 10\", \"pass@5\" = \">= 0.1\", fpr = \"<= 0.5\" }, empty = { ex = 0.5 }",
    );
    assert_eq!(output.status.code(), Some(100), "{text}");
    assert!(
        text.contains("para::drop = 50 does not meet <= 10"),
        "{text}"
    );
    assert!(
        text.contains("para::pass@5 cannot be computed: a seed has 3 variant(s), fewer than K = 5"),
        "{text}"
    );
    assert!(
        text.contains("empty::ex cannot be computed: the family has no feasible cases"),
        "{text}"
    );
    assert_eq!(status(&text, "fam::gate::para::fpr"), "PASS", "{text}");
    for test in [
        "fam::gate::para::drop",
        "fam::gate::para::pass@5",
        "fam::gate::empty::ex",
    ] {
        assert_eq!(status(&text, test), "FAIL", "{text}");
    }
}

#[test]
fn a_profile_overrides_a_family_gate() {
    let dir = workspace();
    let suite_gate = "para = { drop = \"<= 50\", qvt = 0.5 }";
    let strict = "family_gate = { para = { drop = \"<= 10\" } }";
    let (output, text) = gate_with_profile(dir.path(), suite_gate, strict, &[]);
    assert_eq!(output.status.code(), Some(0), "{text}");
    let (output, text) =
        gate_with_profile(dir.path(), suite_gate, strict, &["--profile", "strict"]);
    assert_eq!(output.status.code(), Some(100), "{text}");
    assert!(
        text.contains("para::drop = 50 does not meet <= 10"),
        "{text}"
    );
    // The suite's other family gate still holds under the profile.
    assert_eq!(status(&text, "fam::gate::para::qvt"), "PASS", "{text}");
}

/// The first status word (`PASS`, `FAIL`) printed for the test named exactly `test`.
fn status<'a>(text: &'a str, test: &str) -> &'a str {
    text.lines()
        .find(|line| {
            // A gate's line goes on with its value and threshold.
            let tail = line.split_once(&format!("] {test}")).map(|(_, tail)| tail);
            tail.is_some_and(|tail| tail.is_empty() || tail.starts_with("  "))
        })
        .and_then(|line| line.split_whitespace().next())
        .unwrap_or("missing")
}
