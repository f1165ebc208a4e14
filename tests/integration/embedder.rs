//! The in-process sentence embedder (`--embedder`, the cargo feature `embedder`) as the
//! paraphrase filter uses it: its calibration on Defog (docs/paraphrase.md's table for the
//! model), and `generate paraphrase --embedder` on the shared Defog and Spider dev golds.

use std::path::Path;

use sqlgate_embedder::SentenceModel;
use sqlgate_generate::mutate::para::{calibration, MODEL_MIN_CS};
use sqlgate_test_support::{minilm, repo_root, shared_data};

use crate::support::sqlgate;

/// Defog's (first gold, question) pairs.
fn defog(data: &Path) -> Vec<(String, String)> {
    let mut reader = csv::Reader::from_path(data.join("defog/questions.csv")).unwrap();
    reader
        .records()
        .map(|row| {
            let row = row.unwrap();
            let gold = row[3]
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            (gold, row[4].to_string())
        })
        .collect()
}

/// Percentile `p` (0..=100) of sorted `values`.
fn percentile(values: &[f64], p: usize) -> f64 {
    values[(values.len() - 1) * p / 100]
}

#[test]
fn on_defog_the_model_keeps_the_faithful_and_drops_the_wrong() {
    let (Some(dir), Some(data)) = (minilm(), shared_data()) else {
        return;
    };
    let model = SentenceModel::open(&dir).unwrap();
    let kinds = calibration::calibrate(&model, &defog(&data)).unwrap();
    // docs/paraphrase.md's table, row for row.
    let doc = std::fs::read_to_string(repo_root().join("docs/paraphrase.md")).unwrap();
    let missing: Vec<String> = kinds
        .iter()
        .map(|kind| kind.row(&[0.5, MODEL_MIN_CS, 0.6, 0.7]))
        .inspect(|row| println!("{row}"))
        .filter(|row| !doc.contains(row))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/paraphrase.md lacks the rows\n{}",
        missing.join("\n")
    );
    // The faithful kept, and each wrong kind kept at most 5% of the time.
    let shares: Vec<f64> = kinds.iter().map(|k| k.kept(MODEL_MIN_CS, true)).collect();
    assert!(shares[0] >= 0.94, "{shares:?}");
    assert!(shares[1..].iter().all(|kept| *kept <= 0.05), "{shares:?}");
}

/// `generate paraphrase --embedder` with default flags on the shared Defog and Spider dev
/// golds: the coverage line of each set is docs/paraphrase.md's, and at least 97% of the golds
/// keep three distinct paraphrases.
#[test]
fn default_flags_with_the_model_keep_three_paraphrases_for_97_percent_of_the_shared_golds() {
    let (Some(model), Some(data)) = (minilm(), shared_data()) else {
        return;
    };
    let doc = std::fs::read_to_string(repo_root().join("docs/paraphrase.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("para.jsonl");
    let sets = [
        (
            "Defog (135, against the questions)",
            vec![data.join("defog/questions.csv")],
        ),
        (
            "Spider dev (1,034, against the gold's reading)",
            vec![
                data.join("spider-dev/gold.txt"),
                data.join("spider-dev/schema-db"),
            ],
        ),
    ];
    for (name, files) in sets {
        let mut command = sqlgate();
        command
            .args(["generate", "paraphrase", "--gold"])
            .arg(&files[0])
            .arg("--out")
            .arg(&out)
            .arg("--embedder")
            .arg(&model);
        if let Some(db_dir) = files.get(1) {
            command.arg("--db-dir").arg(db_dir);
        }
        let run = command.run();
        run.assert_success();
        let line = run
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("golds with at least 3 kept paraphrases: "))
            .unwrap_or_else(|| panic!("{name}: no coverage line in\n{}", run.stdout));
        // "133/135 (98.5%); mean cs 0.741"
        let (three, rest) = line.split_once('/').unwrap();
        let golds: usize = rest.split_once(' ').unwrap().0.parse().unwrap();
        let three: usize = three.parse().unwrap();
        assert!(three * 100 >= golds * 97, "{name}: {line}");
        let kept: Vec<f64> = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["cs"]
                    .as_f64()
                    .unwrap()
            })
            .collect();
        let mut sorted = kept.clone();
        sorted.sort_by(f64::total_cmp);
        let share = line.split_once(" (").unwrap().1.split_once(')').unwrap().0;
        let mean = line.rsplit_once("mean cs ").unwrap().1;
        let row = format!(
            "| {name} | {} ({share}) | {} | {mean} | {:.3} | {:.3}-{:.3} |",
            thousands(three),
            thousands(kept.len()),
            percentile(&sorted, 50),
            percentile(&sorted, 25),
            percentile(&sorted, 75),
        );
        println!("{row}");
        assert!(
            doc.contains(&row),
            "docs/paraphrase.md lacks the row\n{row}"
        );
    }
}

/// `n` with a comma between thousands, as the docs write counts.
fn thousands(n: usize) -> String {
    match n {
        0..=999 => n.to_string(),
        _ => format!("{},{:03}", n / 1000, n % 1000),
    }
}

/// A model folder is someone else's files: each missing or broken one is refused with exit 2,
/// naming the file and the problem, before any case is scored.
#[test]
fn a_broken_model_folder_is_refused_naming_its_file() {
    let Some(model) = minilm() else { return };
    let dir = tempfile::tempdir().unwrap();
    let copy = |name: &str| {
        let at = dir.path().join(name);
        std::fs::create_dir_all(at.join("1_Pooling")).unwrap();
        for file in [
            "config.json",
            "tokenizer.json",
            "model.safetensors",
            "modules.json",
            "sentence_bert_config.json",
            "1_Pooling/config.json",
        ] {
            std::fs::copy(model.join(file), at.join(file)).unwrap();
        }
        at
    };
    let cases: [(&str, &str, &[u8], &str); 6] = [
        ("no-weights", "model.safetensors", b"", "cannot read it"),
        (
            "truncated",
            "model.safetensors",
            b"\x08\x00\x00\x00\x00\x00\x00\x00{}",
            "does not load",
        ),
        (
            "bad-config",
            "config.json",
            b"{\"hidden_size\": ",
            "does not parse",
        ),
        (
            "max-pooling",
            "1_Pooling/config.json",
            b"{\"pooling_mode_max_tokens\": true}",
            "pools otherwise",
        ),
        (
            "bad-tokenizer",
            "tokenizer.json",
            b"[1, 2]",
            "does not load",
        ),
        (
            "endless",
            "config.json",
            b"/dev/zero",
            "is not a regular file",
        ),
    ];
    for (name, file, bytes, problem) in cases {
        let folder = copy(name);
        if bytes.is_empty() {
            std::fs::remove_file(folder.join(file)).unwrap();
        } else if bytes.starts_with(b"/dev/") {
            std::fs::remove_file(folder.join(file)).unwrap();
            std::os::unix::fs::symlink(std::str::from_utf8(bytes).unwrap(), folder.join(file))
                .unwrap();
        } else {
            std::fs::write(folder.join(file), bytes).unwrap();
        }
        sqlgate()
            .args(["score", "--gold"])
            .arg(crate::support::demo("suite.toml"))
            .arg("--pred")
            .arg(crate::support::demo("predictions/sample.jsonl"))
            .args(["--metrics", "SC-EC-IE", "--embedder"])
            .arg(&folder)
            .run()
            .assert_bad_input(&[file, problem]);
    }
}

/// SC column matching with the model, through `score --embedder` and a suite's `embedder`:
/// both run and name the same F1 (the gate's JUnit property is the score's summary), and a
/// suite naming both `embedder` and `embeddings` is refused.
#[test]
fn sc_matching_with_the_model_gives_one_number_through_score_and_the_gate() {
    let Some(model) = minilm() else { return };
    let scored = sqlgate()
        .args(["score", "--gold"])
        .arg(crate::support::demo("suite.toml"))
        .arg("--pred")
        .arg(crate::support::demo("predictions/sample.jsonl"))
        .args(["--metrics", "SC-EC-IE", "--format", "json", "--embedder"])
        .arg(&model)
        .run();
    scored.assert_success();
    let f1 = scored.json()["summary"]["fine"]["SC-EC-IE"]["f1"]
        .as_f64()
        .expect("an F1 with the model");

    let gate = |settings: &str| {
        let dir = crate::support::demo_workspace();
        let config = format!(
            "[[suite]]\nbenchmark = {:?}\nregime = \"SC-EC-IE\"\n{settings}\n\n\
             [[system]]\nname = \"sample\"\ntype = \"replay\"\npredictions = \"sample.jsonl\"\n",
            repo_root()
                .join("benchmarks/demo/suite.toml")
                .display()
                .to_string()
        );
        std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
        let run = sqlgate()
            .args(["test", "--no-fail-fast", "--junit", "junit.xml"])
            .current_dir(dir.path())
            .run();
        (dir, run)
    };
    let model_setting = format!("embedder = {{ model = {:?} }}", model.display().to_string());
    let (dir, run) = gate(&model_setting);
    assert!(
        matches!(run.code(), Some(0 | 100)),
        "{}{}",
        run.stdout,
        run.stderr
    );
    let xml = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let gated: f64 = doc
        .descendants()
        .find(|n| n.has_tag_name("property") && n.attribute("name") == Some("f1"))
        .and_then(|n| n.attribute("value")?.parse().ok())
        .expect("the gate's F1");
    assert!((gated - f1).abs() < 1e-3, "gate {gated}, score {f1}");

    let both = format!(
        "{model_setting}\nembeddings = {{ base_url = \"http://127.0.0.1:9/v1\", model = \"m\" }}"
    );
    let (_dir, run) = gate(&both);
    run.assert_code(2);
    assert!(
        run.stderr.contains("both `embedder` and `embeddings`"),
        "{}",
        run.stderr
    );
}

/// A clause's mention said by a word of close meaning (SQLMorph's 0.7) keeps a chat model's
/// paraphrase with the model, where without it (and without WordNet) the paraphrase is refused;
/// the word pairs the threshold is documented on fall on the documented sides.
#[test]
fn the_model_keeps_a_mention_said_by_a_synonym() {
    use sqlgate_eval::metrics::sqlmorph::{cosine, Embedder};
    use sqlgate_generate::mutate::clause_mentions::{SYNONYM_MIN_CS, SYNONYM_PAIRS};
    use sqlgate_generate::mutate::para::llm::parse_reply;
    let Some(dir) = minilm() else { return };
    let model = SentenceModel::open(&dir).unwrap();
    let mut accepted = 0;
    for (a, b, synonyms) in SYNONYM_PAIRS {
        let v = model.embed(&[a.to_string(), b.to_string()]).unwrap();
        let cs = cosine(&v[0], &v[1]);
        println!("{a} / {b}: {cs:.3}");
        if *synonyms {
            accepted += usize::from(cs > SYNONYM_MIN_CS);
        } else {
            assert!(cs <= SYNONYM_MIN_CS, "{a} / {b}: {cs}");
        }
    }
    assert!(accepted >= 4, "{accepted}");
    let sql = "SELECT title FROM films ORDER BY price";
    let original = "List the films ordered by price.";
    let reply = "1. Show the films sorted by their cost.\n2. Show the films sorted by their genre.";
    let with = parse_reply(reply, sql, original, &[], 10, None, Some(&model));
    assert_eq!(with.questions, ["Show the films sorted by their cost."]);
    assert_eq!(with.rejected[0].0, "a clause's mention lost");
    let without = parse_reply(reply, sql, original, &[], 10, None, None);
    assert!(without.questions.is_empty(), "{without:?}");
}
