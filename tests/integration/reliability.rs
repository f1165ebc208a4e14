//! TrustSQL RS(c): regions and scores on hand-built cases (spec `trustsql.md` A.1-A.3), and
//! `sqlgate score --infeasible/--penalty` on the demo and on Defog.

use std::collections::BTreeMap;

use sqlgate_eval::metrics::ex::Verdict;
use sqlgate_eval::metrics::reliability::{self, CaseFacts, Penalty, Region, Regions};

use crate::support::{repo, shared_data, sqlgate};

fn case(_id: usize, feasible: bool, verdict: Verdict, ex: f64) -> CaseFacts {
    CaseFacts {
        feasible,
        abstained: verdict == Verdict::Abstained,
        correct: ex == 1.0,
        tags: BTreeMap::new(),
    }
}

fn correct(id: usize) -> CaseFacts {
    case(id, true, Verdict::Correct, 1.0)
}
fn abstained(id: usize, feasible: bool) -> CaseFacts {
    case(id, feasible, Verdict::Abstained, 0.0)
}
fn wrong(id: usize) -> CaseFacts {
    case(id, true, Verdict::Incorrect, 0.0)
}
fn answered_infeasible(id: usize) -> CaseFacts {
    case(id, false, Verdict::Incorrect, 0.0)
}

fn close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() < 1e-9,
        "expected {expected}, got {actual}"
    );
}

#[test]
fn each_case_falls_in_its_region() {
    assert_eq!(Region::of(&correct(0)), Region::I);
    assert_eq!(Region::of(&abstained(0, true)), Region::II);
    assert_eq!(Region::of(&wrong(0)), Region::III);
    assert_eq!(
        Region::of(&case(0, true, Verdict::PredError, 0.0)),
        Region::III
    );
    assert_eq!(
        Region::of(&case(0, true, Verdict::GoldTimeout, 0.0)),
        Region::III
    );
    assert_eq!(Region::of(&answered_infeasible(0)), Region::IV);
    assert_eq!(
        Region::of(&case(0, false, Verdict::SystemError, 0.0)),
        Region::IV
    );
    assert_eq!(Region::of(&abstained(0, false)), Region::V);
}

/// The spec's worked example: scores [1, 1, 1, 0, -1 | 1, 1, -1], N = 8.
#[test]
fn worked_example_reproduces_the_spec_table() {
    let scores = vec![
        correct(0),
        correct(1),
        correct(2),
        abstained(3, true),
        wrong(4),
        abstained(5, false),
        abstained(6, false),
        answered_infeasible(7),
    ];
    let result = reliability::reliability(&scores, &Penalty::DEFAULTS);
    assert_eq!(result.n, 8);
    assert_eq!(
        result.regions,
        Regions {
            i: 3,
            ii: 1,
            iii: 1,
            iv: 1,
            v: 2
        }
    );
    close(result.rs["0"], 62.5);
    close(result.rs["10"], -187.5);
    close(result.rs["N"], -137.5);
    // The feasible and infeasible columns of the table, as categories.
    close(result.categories["feasible"].rs["0"], 60.0);
    close(result.categories["feasible"].rs["10"], -140.0);
    close(result.categories["feasible"].rs["N"], -100.0);
    close(result.categories["infeasible"].rs["0"], 200.0 / 3.0);
    close(result.categories["infeasible"].rs["10"], -800.0 / 3.0);
    close(result.categories["infeasible"].rs["N"], -200.0);
    assert_eq!(result.categories["feasible"].positive, 3);
    assert_eq!(result.categories["feasible"].negative, 1);
    assert_eq!(result.categories["infeasible"].count, 3);
}

/// The spec's second vector: 50 correct, 40 abstained, 10 wrong; RS(100) = RS(N) = -950.
#[test]
fn second_vector_scores_minus_950_at_n() {
    let mut scores: Vec<CaseFacts> = (0..50).map(correct).collect();
    scores.extend((50..90).map(|i| abstained(i, true)));
    scores.extend((90..100).map(wrong));
    let result = reliability::reliability(&scores, &[Penalty::N, Penalty::Value(100.0)]);
    close(result.rs["N"], -950.0);
    close(result.rs["100"], -950.0);
    // c = 0 on feasible-only data is plain execution accuracy.
    let lenient = reliability::reliability(&scores, &[Penalty::Value(0.0)]);
    close(lenient.rs["0"], 50.0);
}

/// ABSTAIN-ALL scores the infeasible share, whatever c.
#[test]
fn abstaining_on_everything_scores_the_infeasible_share_for_every_c() {
    let mut scores: Vec<CaseFacts> = (0..3).map(|i| abstained(i, true)).collect();
    scores.extend((3..8).map(|i| abstained(i, false)));
    let penalties = reliability::penalties_with_defaults(&[
        Penalty::Value(1.0),
        Penalty::Value(1000.0),
        Penalty::Value(0.5),
    ]);
    let result = reliability::reliability(&scores, &penalties);
    let keys: Vec<&str> = result.rs.keys().map(String::as_str).collect();
    assert_eq!(keys, ["0", "0.5", "1", "10", "1000", "N"]);
    for value in result.rs.values() {
        close(*value, 62.5);
    }
}

#[test]
fn one_error_with_everything_else_right_is_negative_at_n() {
    let mut scores: Vec<CaseFacts> = (0..9).map(correct).collect();
    scores.push(answered_infeasible(9));
    let result = reliability::reliability(&scores, &Penalty::DEFAULTS);
    close(result.rs["0"], 90.0);
    close(result.rs["10"], -10.0);
    close(result.rs["N"], -10.0);
}

#[test]
fn trustsql_categories_are_type_and_note() {
    let mut seen = correct(0);
    seen.tags = BTreeMap::from([
        ("type".to_string(), "seen-sql".to_string()),
        ("note".to_string(), "easy".to_string()),
        ("category".to_string(), "ignored".to_string()),
    ]);
    let mut defog = abstained(1, false);
    defog.tags = BTreeMap::from([("category".to_string(), "cat_a".to_string())]);
    assert_eq!(reliability::category_key(&seen), "seen-sql:easy");
    assert_eq!(reliability::category_key(&defog), "cat_a");
    assert_eq!(reliability::category_key(&wrong(2)), "feasible");
}

fn score(args: &[&str]) -> (bool, String, String) {
    let output = sqlgate().arg("score").args(args).run();
    (
        output.status.success(),
        output.stdout.clone(),
        output.stderr,
    )
}

/// The demo's sample answers 26 of 34 feasible questions correctly, the rest wrongly (no
/// abstention), and answers one of its five infeasible questions.
#[test]
fn score_reports_rs_on_the_demo() {
    let gold = repo().join("benchmarks/demo/suite.toml");
    let pred = repo().join("benchmarks/demo/predictions/sample.jsonl");
    let (ok, stdout, stderr) = score(&[
        "--gold",
        gold.to_str().unwrap(),
        "--pred",
        pred.to_str().unwrap(),
        "--format",
        "json",
        "--penalty",
        "1000",
    ]);
    assert!(ok, "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let summary = &json["summary"];
    assert_eq!(
        summary["regions"],
        serde_json::json!({"I": 26, "II": 0, "III": 8, "IV": 1, "V": 4})
    );
    let rs = |c: &str| summary["rs"][c].as_f64().unwrap();
    let n = 39.0;
    close(rs("0"), 100.0 * 30.0 / n);
    close(rs("10"), 100.0 * (30.0 - 90.0) / n);
    close(rs("N"), 100.0 * (30.0 - 9.0 * n) / n);
    close(rs("1000"), 100.0 * (30.0 - 9000.0) / n);
}

/// Runs `sqlgate test --profile <profile>` on the demo with the sample's answers and an
/// `rs >= 0` gate; returns the exit code and stdout.
fn demo_gate(profile: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo().join("benchmarks/demo/predictions/sample.jsonl"),
        dir.path().join("sample.jsonl"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("snapshots")).unwrap();
    std::fs::copy(
        repo().join("snapshots/demo.snap"),
        dir.path().join("snapshots/demo.snap"),
    )
    .unwrap();
    let config = format!(
        r#"
[[suite]]
benchmark = "{}"
gate = {{ rs = ">= 0" }}

[[system]]
name = "sample"
type = "replay"
predictions = "sample.jsonl"

[profile.hospital]
penalty = 1000

[profile.dashboard]
penalty = 0
"#,
        repo().join("benchmarks/demo/suite.toml").display()
    );
    std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
    let output = sqlgate()
        .args(["test", "--profile", profile])
        .current_dir(dir.path())
        .run();
    (output.status.code(), output.stdout)
}

/// The sample answers one infeasible question and gets 8 feasible ones wrong: 30 of 39
/// cases score +1, 9 score -c.
#[test]
fn the_rs_gate_uses_the_profile_penalty() {
    let (code, stdout) = demo_gate("hospital");
    assert_eq!(code, Some(100), "{stdout}");
    let expected = 100.0 * (30.0 - 9.0 * 1000.0) / 39.0;
    assert!(
        stdout.contains(&format!("rs = {expected} does not meet >= 0")),
        "{stdout}"
    );
    let (code, stdout) = demo_gate("dashboard");
    assert_eq!(code, Some(0), "{stdout}");
}

/// Defog's questions plus `idk.csv` as infeasible cases. Feasible case i: abstained when
/// i % 3 == 0, answered with a failing query when i % 3 == 1, with its gold otherwise.
/// Infeasible case j: answered when j % 2 == 0, else the apology SELECT of `idk.csv`
/// (an abstention by default), except the last one, which abstains explicitly.
#[test]
fn score_reports_rs_on_defog_with_idk_as_infeasible() {
    let Some(data) = shared_data() else {
        return;
    };
    let gold = data.join("defog/questions.csv");
    let idk = data.join("defog/idk.csv");
    let feasible = sqlgate_eval::loaders::load(
        &gold,
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .unwrap();
    let infeasible = sqlgate_eval::loaders::load(
        &idk,
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .unwrap();
    let mut lines = Vec::new();
    let (mut i, mut ii, mut iii, mut iv, mut v) = (0, 0, 0, 0, 0);
    for (index, case) in feasible.cases.iter().enumerate() {
        let line = match index % 3 {
            0 => {
                ii += 1;
                serde_json::json!({"id": case.id, "abstain": true})
            }
            1 => {
                iii += 1;
                serde_json::json!({"id": case.id, "sql": "SELECT no_such_column FROM nowhere"})
            }
            _ => {
                i += 1;
                serde_json::json!({"id": case.id, "sql": case.gold[0]})
            }
        };
        lines.push(line.to_string());
    }
    let last = infeasible.cases.len() - 1;
    for (index, case) in infeasible.cases.iter().enumerate() {
        let id = format!("idk:{}", case.id);
        let line = if index == last {
            v += 1;
            serde_json::json!({"id": id, "abstain": true})
        } else if index % 2 == 0 {
            iv += 1;
            serde_json::json!({"id": id, "sql": "SELECT COUNT(*) FROM author"})
        } else {
            v += 1;
            serde_json::json!({"id": id, "sql": case.tags["apology_sql"]})
        };
        lines.push(line.to_string());
    }
    let dir = tempfile::tempdir().unwrap();
    let pred = dir.path().join("pred.jsonl");
    std::fs::write(&pred, lines.join("\n")).unwrap();
    let args = [
        "--gold",
        gold.to_str().unwrap(),
        "--infeasible",
        idk.to_str().unwrap(),
        "--pred",
        pred.to_str().unwrap(),
        "--penalty",
        "2.5",
    ];
    let (ok, stdout, stderr) = score(&args);
    assert!(ok, "{stderr}");

    let n = (i + ii + iii + iv + v) as f64;
    assert_eq!(
        n as usize,
        feasible.cases.len() + infeasible.cases.len(),
        "every case falls in one region"
    );
    let rs = |c: f64| 100.0 * ((i + v) as f64 - c * (iii + iv) as f64) / n;
    let expected = format!(
        "RS(0) {:.1}, RS(10) {:.1}, RS(N) {:.1}, RS(2.5) {:.1} (N = {n})",
        rs(0.0),
        rs(10.0),
        rs(n),
        rs(2.5)
    );
    assert!(stdout.contains(&expected), "{expected}\n{stdout}");
    let regions = format!("regions: I {i}, II {ii}, III {iii}, IV {iv}, V {v}");
    assert!(stdout.contains(&regions), "{regions}\n{stdout}");

    // With the recognizer off, the apologies are answers to infeasible questions.
    let mut strict = args.to_vec();
    strict.extend(["--apology-abstains", "false"]);
    let (ok, stdout, stderr) = score(&strict);
    assert!(ok, "{stderr}");
    let regions = format!("regions: I {i}, II {ii}, III {iii}, IV {}, V 1", iv + v - 1);
    assert!(stdout.contains(&regions), "{regions}\n{stdout}");
}
