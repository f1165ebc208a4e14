//! Prediction files aligned with gold cases.

use super::*;
use crate::loaders::{load_predictions, Answer, PredFormat, Prediction};

/// A benchmark of cases `c0`, `c1`, `c2` (native ids) on database `d`.
fn native_bench(dir: &Path) -> Benchmark {
    make_db(dir, "d.sqlite");
    let manifest = write(dir, "s.toml", "name = \"s\"\ncases = \"c.jsonl\"\n");
    let cases: String = (0..3)
        .map(|i| format!("{{\"id\": \"c{i}\", \"db\": \"d\", \"question\": \"Q\", \"gold\": \"SELECT {i}\"}}\n"))
        .collect();
    write(dir, "c.jsonl", &cases);
    load_default(&manifest).unwrap()
}

/// A Spider-lines benchmark from gold text on database `d`.
fn lines_bench(dir: &Path, name: &str, gold: &str) -> Benchmark {
    make_db(dir, "d.sqlite");
    make_db(dir, "e.sqlite");
    load_default(&write(dir, name, gold)).unwrap()
}

fn sql(prediction: &Prediction) -> &str {
    match &prediction.answer {
        Answer::Sql(sql) => sql,
        Answer::Abstain => panic!("expected SQL, got an abstention"),
    }
}

#[test]
fn jsonl_predictions_are_aligned_by_id_and_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let bench = native_bench(dir.path());
    let text = "{\"id\": \"c2\", \"sql\": \"Here you go:\\n```sql\\nSELECT 2;\\n```\"}\n\n{\"id\": \"c0\", \"sql\": \"SELECT 0;\"}\n{\"id\": \"c1\", \"abstain\": true}\n";
    let path = write(dir.path(), "pred.jsonl", text);
    let predictions = load_predictions(&path, None, &bench).unwrap();
    assert_eq!(predictions.len(), 3);
    assert_eq!(sql(&predictions[0]), "SELECT 0");
    assert!(!predictions[0].cleaned);
    assert_eq!(predictions[0].source.line, Some(3));
    assert_eq!(predictions[1].answer, Answer::Abstain);
    assert_eq!(sql(&predictions[2]), "SELECT 2");
    assert!(predictions[2].cleaned);
    assert_eq!(
        (predictions[2].source.record, predictions[2].source.line),
        (0, Some(1))
    );
}

#[test]
fn jsonl_errors_name_line_and_id() {
    let dir = tempfile::tempdir().unwrap();
    let bench = native_bench(dir.path());
    let c0 = r#"{"id": "c0", "sql": "SELECT 0"}"#;
    let c1 = r#"{"id": "c1", "sql": "SELECT 1"}"#;
    let c2 = r#"{"id": "c2", "sql": "SELECT 2"}"#;
    let bad_lines = [
        (r#"{"id": "c9", "sql": "SELECT 9"}"#, "unknown id `c9`"),
        (
            r#"{"id": "c0", "sql": "SELECT 0"}"#,
            "duplicate prediction for id `c0` (first at record 0 (line 1))",
        ),
        (r#"{"id": "c2", "sql": "SELECT 2""#, "column"),
        (
            r#"{"id": "c2", "query": "SELECT 2"}"#,
            "unknown field `query`",
        ),
        (r#"{"id": "c2"}"#, "needs `sql`"),
        (r#"{"id": "c2", "sql": null}"#, "needs `sql`"),
        (
            r#"{"id": "c2", "sql": "SELECT 2", "abstain": true}"#,
            "both",
        ),
        (r#"{"id": ["c2"], "sql": "SELECT 2"}"#, "`id` must be"),
    ];
    for (bad, fragment) in bad_lines {
        let path = write(
            dir.path(),
            "pred.jsonl",
            &format!("{c0}\n{c1}\n{bad}\n{c2}\n"),
        );
        expect_error(
            load_predictions(&path, None, &bench),
            &path,
            Some(2),
            Some(3),
            &[fragment],
        );
    }
    let path = write(dir.path(), "pred.jsonl", &format!("{c1}\n"));
    expect_error(
        load_predictions(&path, None, &bench),
        &path,
        None,
        None,
        &["2 case(s) have no prediction", "`c0`", "`c2`"],
    );
}

#[test]
fn jsonl_integer_ids_match_index_ids() {
    let dir = tempfile::tempdir().unwrap();
    let bench = lines_bench(dir.path(), "gold.txt", "SELECT 1\td\nSELECT 2\td\n");
    let path = write(
        dir.path(),
        "pred.jsonl",
        "{\"id\": 1, \"sql\": \"SELECT 2\"}\n{\"id\": \"0\", \"sql\": \"SELECT 1\"}\n",
    );
    let predictions = load_predictions(&path, None, &bench).unwrap();
    assert_eq!(sql(&predictions[0]), "SELECT 1");
    assert_eq!(sql(&predictions[1]), "SELECT 2");
}

#[test]
fn jsonl_saved_as_json_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let bench = lines_bench(dir.path(), "gold.txt", "SELECT 1\td\nSELECT 2\td\n");
    let path = write(
        dir.path(),
        "pred.json",
        "{\"id\": 0, \"sql\": \"SELECT 1\"}\n{\"id\": 1, \"abstain\": true}\n",
    );
    let predictions = load_predictions(&path, None, &bench).unwrap();
    assert_eq!(predictions[1].answer, Answer::Abstain);
}

#[test]
fn spider_pred_lines_take_field_zero_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    let bench = lines_bench(dir.path(), "gold.txt", "SELECT 1\td\nSELECT 2\td\n");
    let path = write(
        dir.path(),
        "pred.txt",
        "  select 1 ;\td\n```sql SELECT 2```\n",
    );
    let predictions = load_predictions(&path, None, &bench).unwrap();
    assert_eq!(sql(&predictions[0]), "select 1 ;");
    // Reference formats are scored as written: no cleanup.
    assert_eq!(sql(&predictions[1]), "```sql SELECT 2```");
    assert!(!predictions[1].cleaned);
    assert_eq!(predictions[1].source.line, Some(2));
}

#[test]
fn spider_pred_count_mismatch_names_both_counts() {
    let dir = tempfile::tempdir().unwrap();
    let bench = lines_bench(
        dir.path(),
        "gold.txt",
        "SELECT 1\td\nSELECT 2\td\nSELECT 3\td\n",
    );
    let path = write(dir.path(), "pred.txt", "SELECT 1\nSELECT 2\n");
    expect_error(
        load_predictions(&path, None, &bench),
        &path,
        None,
        None,
        &["2 prediction line(s) for 3 gold case(s)"],
    );
}

#[test]
fn spider_pred_blank_lines_must_match_the_gold() {
    let dir = tempfile::tempdir().unwrap();
    let bench = lines_bench(
        dir.path(),
        "gold.txt",
        "SELECT 1\td\nSELECT 2\td\n\nSELECT 3\te\n",
    );
    let aligned = write(dir.path(), "ok.txt", "SELECT 1\nSELECT 2\n\nSELECT 3\n");
    let predictions = load_predictions(&aligned, None, &bench).unwrap();
    assert_eq!(sql(&predictions[2]), "SELECT 3");
    let shifted = write(
        dir.path(),
        "shifted.txt",
        "SELECT 1\n\nSELECT 2\nSELECT 3\n",
    );
    expect_error(
        load_predictions(&shifted, None, &bench),
        &shifted,
        Some(1),
        Some(3),
        &[
            "turn 0 of interaction 1",
            "turn 1 of interaction 0",
            "placeholder",
        ],
    );
    // A blank line in the predictions of a single-interaction gold is caught too.
    let plain = lines_bench(dir.path(), "plain.txt", "SELECT 1\td\nSELECT 2\td\n");
    let blank = write(dir.path(), "blank.txt", "SELECT 1\n\nSELECT 2\n");
    expect_error(
        load_predictions(&blank, None, &plain),
        &blank,
        Some(1),
        Some(3),
        &["blank lines"],
    );
}

#[test]
fn bird_predictions_follow_file_order_not_keys() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path(), "d.sqlite");
    make_db(dir.path(), "e.sqlite");
    let bench = load_default(&write(
        dir.path(),
        "dev.json",
        r#"[{"question_id": 0, "db_id": "d", "question": "Q", "SQL": "SELECT 0"},
            {"question_id": 1, "db_id": "d", "question": "Q", "SQL": "SELECT 1"},
            {"question_id": 2, "db_id": "d", "question": "Q", "SQL": "SELECT 2"},
            {"question_id": 3, "db_id": "d", "question": "Q", "SQL": "SELECT 3"}]"#,
    ))
    .unwrap();
    let text = r#"{"1": "SELECT 'first'\t----- bird -----\td",
                   "0": "SELECT 'second'\t----- bird -----\te",
                   "2": "SELECT 'third'",
                   "3": 7}"#;
    let path = write(dir.path(), "predict_dev.json", text);
    let predictions = load_predictions(&path, None, &bench).unwrap();
    assert_eq!(sql(&predictions[0]), "SELECT 'first'");
    assert!(predictions[0].notes.is_empty());
    assert_eq!(sql(&predictions[1]), "SELECT 'second'");
    assert_eq!(predictions[1].notes["db_id_mismatch"], "e");
    assert_eq!(sql(&predictions[2]), "SELECT 'third'");
    assert!(predictions[2].notes.contains_key("bird_separator_missing"));
    assert_eq!(sql(&predictions[3]), " ");
    assert_eq!(predictions[3].notes["non_string"], "a number");
    let short = write(
        dir.path(),
        "short.json",
        r#"{"0": "SELECT 1\t----- bird -----\td"}"#,
    );
    expect_error(
        load_predictions(&short, Some(PredFormat::Bird), &bench),
        &short,
        None,
        None,
        &["1 prediction(s) for 4 gold case(s)"],
    );
    let broken = write(dir.path(), "broken.json", "{\"0\": \"SELECT 1\",\n\"1\": }");
    expect_error(
        load_predictions(&broken, None, &bench),
        &broken,
        None,
        Some(2),
        &[],
    );
}

#[test]
fn bird_separator_is_detected_for_other_gold_formats() {
    let dir = tempfile::tempdir().unwrap();
    let bench = lines_bench(dir.path(), "gold.txt", "SELECT 1\td\n");
    let path = write(
        dir.path(),
        "p.json",
        r#"{"x": "SELECT 1\t----- bird -----\td"}"#,
    );
    let predictions = load_predictions(&path, None, &bench).unwrap();
    assert_eq!(sql(&predictions[0]), "SELECT 1");
}

/// A TrustSQL benchmark with ids `t1`, `t2`, `t3`.
fn trustsql_bench(dir: &Path) -> Benchmark {
    make_db(dir, "atis.sqlite");
    let records: Vec<String> = (1..=3)
        .map(|i| format!(r#"{{"id": "t{i}", "db_id": "atis", "question": "Q", "query": "SELECT {i}", "type": "seen-sql", "note": "easy"}}"#))
        .collect();
    load_default(&write(
        dir,
        "test.json",
        &format!("[{}]", records.join(",")),
    ))
    .unwrap()
}

#[test]
fn trustsql_null_string_and_missing_ids_abstain() {
    let dir = tempfile::tempdir().unwrap();
    let bench = trustsql_bench(dir.path());
    let path = write(dir.path(), "pred.json", r#"{"t3": "NULL", "t1": "null"}"#);
    let predictions = load_predictions(&path, None, &bench).unwrap();
    assert_eq!(predictions[0].answer, Answer::Abstain);
    assert!(predictions[0].notes.is_empty());
    assert_eq!(predictions[1].answer, Answer::Abstain);
    assert!(predictions[1].notes.contains_key("missing_prediction"));
    // The marker is exact and case-sensitive.
    assert_eq!(sql(&predictions[2]), "NULL");
}

#[test]
fn trustsql_json_null_and_lists() {
    let dir = tempfile::tempdir().unwrap();
    let bench = trustsql_bench(dir.path());
    let path = write(
        dir.path(),
        "pred.json",
        r#"{"t1": null, "t2": ["SELECT 2"], "t3": ["null"]}"#,
    );
    let predictions = load_predictions(&path, Some(PredFormat::Trustsql), &bench).unwrap();
    assert_eq!(sql(&predictions[0]), "");
    assert!(predictions[0].notes.contains_key("json_null"));
    assert_eq!(sql(&predictions[1]), "SELECT 2");
    assert_eq!(predictions[2].answer, Answer::Abstain);
    let voting = write(
        dir.path(),
        "voting.json",
        r#"{"t1": ["SELECT 1", "SELECT 2"]}"#,
    );
    expect_error(
        load_predictions(&voting, None, &bench),
        &voting,
        Some(0),
        None,
        &["`t1`", "2 candidates"],
    );
}

#[test]
fn trustsql_unknown_and_duplicate_ids_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bench = trustsql_bench(dir.path());
    let unknown = write(
        dir.path(),
        "u.json",
        r#"{"t1": "SELECT 1", "t7": "SELECT 7"}"#,
    );
    expect_error(
        load_predictions(&unknown, None, &bench),
        &unknown,
        Some(1),
        None,
        &["unknown id `t7`"],
    );
    let duplicate = write(
        dir.path(),
        "d.json",
        r#"{"t1": "SELECT 1", "t2": "null", "t1": "null"}"#,
    );
    expect_error(
        load_predictions(&duplicate, None, &bench),
        &duplicate,
        Some(2),
        None,
        &["duplicate prediction for id `t1` (first at record 0)"],
    );
    let list = write(dir.path(), "l.json", r#"["SELECT 1"]"#);
    expect_error(
        load_predictions(&list, None, &bench),
        &list,
        None,
        Some(1),
        &["JSON object"],
    );
}

#[test]
fn unknown_prediction_extension_needs_a_format() {
    let dir = tempfile::tempdir().unwrap();
    let bench = lines_bench(dir.path(), "gold.txt", "SELECT 1\td\n");
    let path = write(dir.path(), "pred.out", "SELECT 1\n");
    expect_error(
        load_predictions(&path, None, &bench),
        &path,
        None,
        None,
        &["`out`"],
    );
    let predictions = load_predictions(&path, Some(PredFormat::Spider), &bench).unwrap();
    assert_eq!(sql(&predictions[0]), "SELECT 1");
}

#[test]
fn of_many_bad_records_the_first_in_the_file_is_reported() {
    // Records are parsed in parallel: the error must still be the first in file order.
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path(), "d.sqlite");
    let manifest = write(dir.path(), "s.toml", "name = \"s\"\ncases = \"c.jsonl\"\n");
    let case = |i: usize| {
        format!("{{\"id\": \"c{i}\", \"db\": \"d\", \"question\": \"Q\", \"gold\": \"SELECT 1\"}}")
    };
    let mut cases: Vec<String> = (0..4000).map(case).collect();
    cases[3999] = "{broken".into();
    cases[2500] =
        "{\"id\": \"\", \"db\": \"d\", \"question\": \"Q\", \"gold\": \"SELECT 1\"}".into();
    write(dir.path(), "c.jsonl", &cases.join("\n"));
    let error = load_default(&manifest).unwrap_err();
    assert_eq!(error.line, Some(2501), "{error}");

    cases[2500] = case(2500);
    cases[3999] = case(3999);
    write(dir.path(), "c.jsonl", &cases.join("\n"));
    let bench = load_default(&manifest).unwrap();
    let mut predictions: Vec<String> = (0..4000)
        .map(|i| format!("{{\"id\": \"c{i}\", \"sql\": \"SELECT 1\"}}"))
        .collect();
    predictions[3000] = "[1, 2]".into();
    predictions[1200] = "{\"id\": \"c7\", \"sql\": \"SELECT 1\"}".into();
    let path = write(dir.path(), "pred.jsonl", &predictions.join("\n"));
    let error = load_predictions(&path, None, &bench).unwrap_err();
    assert_eq!(error.line, Some(1201), "{error}");
    assert!(error.message.contains("duplicate"), "{error}");
}

/// A prediction for `<seed>::<family>::<mutant>` of a family the run does not load is refused
/// naming the family and its count; an id that only looks like one (an empty family, an
/// unknown seed) is an unknown id.
#[test]
fn predictions_of_families_not_loaded_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let bench = native_bench(dir.path());
    let answers =
        "{\"id\": \"c0\", \"sql\": \"SELECT 0\"}\n{\"id\": \"c1\", \"sql\": \"SELECT 1\"}\n\
                   {\"id\": \"c2\", \"sql\": \"SELECT 2\"}\n";
    let with = |extra: &str| {
        let path = write(dir.path(), "pred.jsonl", &format!("{answers}{extra}"));
        load_predictions(&path, None, &bench)
            .unwrap_err()
            .to_string()
    };
    let error = with(
        "{\"id\": \"c0::para::p1\", \"sql\": \"SELECT 0\"}\n{\"id\": \"c1::para::p1\", \"sql\": \"SELECT 1\"}\n",
    );
    assert!(
        error.contains("line 4") && error.contains("`para` (2)"),
        "{error}"
    );
    let error = with("{\"id\": \"c0::::p1\", \"sql\": \"SELECT 0\"}\n");
    assert!(error.contains("unknown id `c0::::p1`"), "{error}");
    let error = with("{\"id\": \"zz::para::p1\", \"sql\": \"SELECT 0\"}\n");
    assert!(error.contains("unknown id `zz::para::p1`"), "{error}");
}
