//! A truncated partial-cell match is shown, per case and in the summary (issue 11 item 13):
//! never an exact-cell score passed off as the answer.

use std::collections::BTreeMap;
use std::path::PathBuf;

use sqlgate_eval::exec::{Engine, Limits};
use sqlgate_eval::loaders::{Answer, Case, Prediction, SourceRef};
use sqlgate_eval::metrics::ex::Mode;
use sqlgate_eval::scoring::{score_case, summarize, CaseDatabases, Response, Scoring};

#[test]
fn a_truncated_partial_match_is_a_diagnostic_and_counted_in_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE t (k INTEGER, v INTEGER);
         INSERT INTO t VALUES (0, 1), (0, 2), (0, 3);",
    )
    .unwrap();
    drop(conn);
    let source = SourceRef {
        file: PathBuf::from("cases.jsonl"),
        record: 0,
        line: Some(1),
    };
    let case = Case {
        id: "q1".to_string(),
        db: "t".to_string(),
        question: String::new(),
        evidence: None,
        gold: vec!["SELECT k, v FROM t".to_string()],
        feasible: true,
        tags: BTreeMap::new(),
        source: source.clone(),
        db_file: None,
        cs: None,
        state: None,
    };
    let prediction = Prediction {
        answer: Answer::Sql("SELECT k, v + 10 AS v FROM t".to_string()),
        cleaned: false,
        source,
        notes: BTreeMap::new(),
        samples: Vec::new(),
        retrieved: Vec::new(),
        usage: None,
        script: None,
    };
    let engine = Engine::new(Limits::default(), sqlgate_engine_sqlite::files());
    let databases = CaseDatabases {
        main: db.clone(),
        evaluated: vec![db],
        tied: Vec::new(),
    };
    let mut scoring = Scoring::new(Mode::Testsuite);
    scoring.regimes = vec!["EC-PC-IE".parse().unwrap(), "EC-EC-IE".parse().unwrap()];
    let mut scores = Vec::new();
    for cap in [4, 50_000_000] {
        scoring.pc_max_pairs = cap;
        let response = Response::Answer(&prediction);
        scores.push(score_case(&scoring, &case, &databases, response, &engine));
    }
    // Capped: the k column is shared by all 3 × 3 pairs; the case says so.
    let truncated = &scores[0];
    let notes: Vec<_> = truncated
        .diagnostics
        .iter()
        .filter(|d| d.code == "partial_match_truncated")
        .collect();
    assert_eq!(notes.len(), 1, "{:?}", truncated.diagnostics);
    assert!(
        notes[0].message.starts_with("EC-PC-IE: "),
        "{}",
        notes[0].message
    );
    assert_eq!(truncated.fine["EC-PC-IE"].exp, 0.0);
    // Uncapped: each gold row pairs with a prediction row on k: half the cells.
    assert!(scores[1].diagnostics.is_empty());
    assert_eq!(scores[1].fine["EC-PC-IE"].exp, 0.5);
    let summary = summarize(&scoring, &scores.iter().collect::<Vec<_>>(), &[]);
    assert_eq!(summary.partial_match_truncated, 1);
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["partial_match_truncated"], 1);
}
