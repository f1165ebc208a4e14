//! ETM against the reference program's per-pair verdicts on Spider dev (`../shared/data`):
//! at least 99% agreement per system, and every disagreement explained by a departure of the
//! harness (a guard, or a reference defect it does not share) that `--etm-compat` undoes.

use std::path::Path;

use sqlgate::metrics::etm::Evaluator;

struct Pair {
    gold: String,
    db: String,
    pred: String,
    reference: bool,
}

fn pairs(data: &Path, system: &str) -> Vec<Pair> {
    let spider = data.join("spider-dev");
    let gold = std::fs::read_to_string(spider.join("gold.txt")).unwrap();
    let preds = std::fs::read_to_string(spider.join(format!("predictions/{system}.txt"))).unwrap();
    let reference =
        std::fs::read_to_string(spider.join(format!("reference/{system}.jsonl"))).unwrap();
    gold.lines()
        .zip(preds.lines())
        .zip(reference.lines())
        .map(|((gold, pred), reference)| {
            let (sql, db) = gold.split_once('\t').unwrap();
            let reference: serde_json::Value = serde_json::from_str(reference).unwrap();
            Pair {
                gold: sql.trim().to_string(),
                db: db.trim().to_string(),
                pred: pred.trim().to_string(),
                reference: reference["etm"] == 1,
            }
        })
        .collect()
}

#[test]
fn etm_agrees_with_the_reference_on_spider_dev_except_for_documented_departures() {
    let Some(data) = sqlgate::testing::shared_data() else {
        return;
    };
    let db_dir = data.join("spider-dev/schema-db");
    let harness = Evaluator::new(&db_dir, false);
    let compat = Evaluator::new(&db_dir, true);
    let mut report = Vec::new();
    let mut unexplained = Vec::new();
    for system in ["C3", "DIN", "RESDSQL", "RASAT+PICARD"] {
        let pairs = pairs(&data, system);
        assert_eq!(pairs.len(), 1034);
        let mut disagreements = 0;
        let mut compat_disagreements = 0;
        for (index, pair) in pairs.iter().enumerate() {
            let verdict = harness.score(&pair.gold, &pair.pred, &pair.db).unwrap();
            let compat_verdict = compat.score(&pair.gold, &pair.pred, &pair.db).unwrap();
            if compat_verdict.etm != pair.reference {
                compat_disagreements += 1;
                eprintln!("COMPAT {system} #{index} ref={}\n  gold {}\n  pred {}\n  {}\n  ng {:?}\n  np {:?}", pair.reference, pair.gold, pair.pred, compat_verdict.explain(), compat_verdict.gold.normalised, compat_verdict.pred.normalised);
            }
            if verdict.etm == pair.reference {
                continue;
            }
            disagreements += 1;
            let explained = verdict.departed() && compat_verdict.etm == pair.reference;
            for d in verdict.gold.departures.iter().chain(&verdict.pred.departures) {
                eprintln!("DEP {system} {index} rule {} {} {}", d.rule, d.defect, d.reason);
            }
            if !explained {
                unexplained.push(format!(
                    "{system} #{index} ref={} harness={} compat={}\n  gold {}\n  pred {}\n  {}\n  ng {:?}\n  np {:?}",
                    pair.reference,
                    verdict.etm,
                    compat_verdict.etm,
                    pair.gold,
                    pair.pred,
                    verdict.explain(),
                    verdict.gold.normalised,
                    verdict.pred.normalised,
                ));
            }
        }
        let agreement = 1.0 - disagreements as f64 / pairs.len() as f64;
        report.push(format!(
            "{system}: agreement {agreement:.4} ({disagreements} disagreements, compat {compat_disagreements})"
        ));
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        unexplained.is_empty(),
        "{} unexplained:\n{}\n{}",
        unexplained.len(),
        report.join("\n"),
        unexplained.join("\n")
    );
}
