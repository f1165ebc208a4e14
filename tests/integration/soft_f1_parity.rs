//! Soft-F1 parity with BIRD mini-dev's `evaluation_f1.py` on the real Defog databases: every
//! (prediction, gold) pair scored by `sqlgate score --soft-f1` equals, within 1e-9, the value
//! of a Python restatement of the reference algorithm that executes the same SQL on the same
//! file through Python's own `sqlite3` (so its value types and equality are the reference's).
//!
//! The predictions are the gold alternatives against each other, sqlgate's single-error
//! mutants of the gold, and hand-made changes of its result (fewer rows, an extra column,
//! rows reordered), so that the values spread over (0, 1), not only 0 and 1.

use std::path::Path;

use crate::support::{python_with, run_python, shared_data, sqlgate};

/// The reference algorithm (mini-dev `evaluation/evaluation_f1.py`) restated: both queries on
/// one connection, prediction first; any exception scores 0. Reads `[[db, pred, gold], ...]`
/// from the file named by argv[1]; prints one `repr` per item.
const REFERENCE: &str = r#"
import json, sqlite3, sys

def row_scores(pred_row, gold_row):
    width = len(gold_row)
    found = sum(1 for v in pred_row if v in gold_row)
    missed = sum(1 for v in gold_row if v not in pred_row)
    return found / width, (len(pred_row) - found) / width, missed / width

def soft_f1(pred, gold):
    if not pred and not gold:
        return 1.0
    pred = list(dict.fromkeys(pred))
    gold = list(dict.fromkeys(gold))
    tps, fps, fns = [], [], []
    for i, gold_row in enumerate(gold):
        if i < len(pred):
            tp, fp, fn = row_scores(pred[i], gold_row)
            fps.append(fp)
        else:
            tp, fn = 0, 1
        tps.append(tp)
        fns.append(fn)
    for _ in range(len(pred) - len(gold)):
        tps.append(0)
        fps.append(1)
        fns.append(0)
    tp, fp, fn = sum(tps), sum(fps), sum(fns)
    precision = tp / (tp + fp) if tp + fp > 0 else 0
    recall = tp / (tp + fn) if tp + fn > 0 else 0
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0

for db, pred_sql, gold_sql in json.load(open(sys.argv[1])):
    try:
        conn = sqlite3.connect("file:" + db + "?mode=ro", uri=True)
        try:
            cursor = conn.cursor()
            pred = cursor.execute(pred_sql).fetchall()
            gold = cursor.execute(gold_sql).fetchall()
        finally:
            conn.close()
        value = soft_f1(pred, gold)
    except Exception:
        value = 0
    print(repr(float(value)))
"#;

/// One scored pair: the database's name, the prediction and the gold.
struct Item {
    db: String,
    pred: String,
    gold: String,
}

/// The predictions of one case, each against one of its gold alternatives.
fn items_of(db: &str, golds: &[String]) -> Vec<Item> {
    let one_line = |sql: &str| sql.split_whitespace().collect::<Vec<_>>().join(" ");
    let golds: Vec<String> = golds.iter().map(|g| one_line(g)).collect();
    let first = &golds[0];
    let mut preds: Vec<String> = golds.clone();
    let mutants = sqlgate_generate::mutate::every_variant(first, 1).unwrap_or_default();
    preds.extend(mutants.into_iter().map(|(_, sql)| one_line(&sql)));
    preds.push(format!("SELECT * FROM ({first}) LIMIT 2"));
    preds.push(format!("SELECT *, 'extra' FROM ({first})"));
    preds.push(format!("SELECT * FROM ({first}) ORDER BY 1 DESC"));
    let item = |pred: &str, gold: &str| Item {
        db: db.to_string(),
        pred: pred.to_string(),
        gold: gold.to_string(),
    };
    let mut items: Vec<Item> = preds.iter().map(|pred| item(pred, first)).collect();
    // The first gold as the prediction against each other alternative.
    items.extend(golds[1..].iter().map(|gold| item(first, gold)));
    items
}

fn python_values(items: &[Item], defog: &Path, dir: &Path) -> Vec<f64> {
    let triples: Vec<[String; 3]> = items
        .iter()
        .map(|item| {
            let db = defog.join(format!("{}.sqlite", item.db));
            [
                db.display().to_string(),
                item.pred.clone(),
                item.gold.clone(),
            ]
        })
        .collect();
    let path = dir.join("items.json");
    std::fs::write(&path, serde_json::to_string(&triples).unwrap()).unwrap();
    String::from_utf8(run_python(REFERENCE, &[&path], b""))
        .unwrap()
        .lines()
        .map(|line| line.parse().expect("a float"))
        .collect()
}

fn sqlgate_values(items: &[Item], defog: &Path, dir: &Path) -> Vec<f64> {
    let gold: String = items
        .iter()
        .map(|item| format!("{}\t{}\n", item.gold, item.db))
        .collect();
    let pred: String = items
        .iter()
        .map(|item| format!("{}\n", item.pred))
        .collect();
    let (gold_path, pred_path) = (dir.join("gold.sql"), dir.join("pred.txt"));
    std::fs::write(&gold_path, gold).unwrap();
    std::fs::write(&pred_path, pred).unwrap();
    let output = sqlgate()
        .args(["score", "--gold", gold_path.to_str().unwrap()])
        .args(["--pred", pred_path.to_str().unwrap()])
        .args(["--db-dir", defog.to_str().unwrap()])
        .args(["--mode", "bird", "--soft-f1", "--format", "json"])
        .run();
    output.assert_success();
    let report = output.json();
    let cases = report["cases"].as_array().unwrap();
    // Read from the text: serde_json's default float parser can be one ulp off, which would hide
    // whether the values sqlgate prints are the reference's to the last bit.
    let per_case = regex::Regex::new(r#""soft_f1": (-?[0-9][0-9.eE+-]*)"#).unwrap();
    let values: Vec<f64> = per_case
        .captures_iter(&output.stdout)
        .map(|found| found[1].parse().expect("a float"))
        .collect();
    assert_eq!(values.len(), cases.len(), "every case has soft_f1");
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let reported = report["summary"]["soft_f1"]["all"].as_f64().unwrap();
    assert!((reported - mean).abs() < 1e-12, "{reported} != {mean}");
    values
}

#[test]
fn soft_f1_matches_the_reference_on_defog() {
    let Some(data) = shared_data() else { return };
    let defog = data.join("defog");
    if !python_with("sqlite3", "its standard module") {
        return;
    }
    let bench = sqlgate_eval::loaders::load(
        &defog.join("questions.csv"),
        &sqlgate_eval::loaders::LoadOptions::on(sqlgate_engine_sqlite::files()),
    )
    .expect("questions.csv loads");
    let items: Vec<Item> = bench
        .cases
        .iter()
        .flat_map(|case| items_of(&case.db, &case.gold))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let expected = python_values(&items, &defog, dir.path());
    let actual = sqlgate_values(&items, &defog, dir.path());
    assert_eq!(expected.len(), items.len());
    assert_eq!(actual.len(), items.len());
    let mismatches: Vec<String> = items
        .iter()
        .zip(expected.iter().zip(&actual))
        .filter(|(_, (e, a))| (*e - *a).abs() > 1e-9)
        .map(|(item, (e, a))| {
            format!(
                "{}: reference {e}, sqlgate {a}\n  pred: {}\n  gold: {}",
                item.db, item.pred, item.gold
            )
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} of {} items differ:\n{}",
        mismatches.len(),
        items.len(),
        mismatches.join("\n")
    );
    // The comparison must cover graded values, not only the 0/1 of EX.
    let zeros = expected.iter().filter(|&&v| v == 0.0).count();
    let ones = expected.iter().filter(|&&v| v == 1.0).count();
    let between = expected.len() - zeros - ones;
    let distinct: std::collections::BTreeSet<u64> = expected.iter().map(|v| v.to_bits()).collect();
    let identical = expected.iter().zip(&actual).filter(|(e, a)| e == a).count();
    eprintln!(
        "soft_f1 parity: {} items, {zeros} at 0, {ones} at 1, {between} between ({} distinct \
         values); {identical} bit-identical",
        items.len(),
        distinct.len()
    );
    assert!(between * 5 >= items.len(), "{between} of {}", items.len());
    assert!(zeros > 0 && ones > 0);
}
