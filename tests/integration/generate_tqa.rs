//! `sqlgate generate tqa --method naturalness`: every O/L and L/L case's gold gives on its
//! renamed clone exactly the rows the original gold gives on the original database, string
//! literals are never renamed, reruns are byte-identical, and the committed demo families are
//! what the documented command generates. Needs WordNet (skips visibly without it).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{repo, shared_data, sqlgate, wordnet_installed};

fn generate(gold: &Path, out: &Path, extra: &[&str]) -> String {
    let output = sqlgate()
        .args(["generate", "tqa", "--method", "naturalness"])
        .args([
            "--gold",
            gold.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(extra)
        .run();
    output.assert_success();
    output.stdout
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn rows(db: &Path, sql: &str) -> Vec<Vec<String>> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut statement = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let n = statement.column_count();
    statement
        .query_map([], |row| {
            (0..n)
                .map(|i| {
                    row.get::<_, rusqlite::types::Value>(i)
                        .map(|v| format!("{v:?}"))
                })
                .collect()
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A record's gold alternatives: `sql` is one query or a list of them.
fn golds(record: &Value) -> Vec<&str> {
    match &record["sql"] {
        Value::Array(all) => all.iter().map(|g| g.as_str().unwrap()).collect(),
        one => vec![one.as_str().unwrap()],
    }
}

/// Every gold alternative of every L-schema record returns on its clone the rows of the same
/// O/O alternative on `original(db)`.
fn check_clones(out: &Path, original: impl Fn(&str) -> PathBuf) -> usize {
    let control = records(&out.join("tqa-oo.jsonl"));
    let mut checked = 0;
    for family in ["tqa-ol", "tqa-ll"] {
        let renamed = records(&out.join(format!("{family}.jsonl")));
        assert_eq!(renamed.len(), control.len());
        for (o, l) in control.iter().zip(&renamed) {
            assert_eq!(o["seed_id"], l["seed_id"]);
            let db = o["db"].as_str().unwrap();
            let script = Path::new(l["db_script"].as_str().unwrap());
            let clone = out
                .join("build")
                .join(script.with_extension("sqlite").file_name().unwrap());
            assert_eq!(golds(o).len(), golds(l).len());
            for (gold, renamed) in golds(o).into_iter().zip(golds(l)) {
                assert_eq!(
                    rows(&original(db), gold),
                    rows(&clone, renamed),
                    "{renamed}"
                );
                checked += 1;
            }
        }
    }
    checked
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_committed_demo_families_are_what_the_generator_writes() {
    if !wordnet_installed() {
        return;
    }
    let root = repo();
    let tmp = tempfile::tempdir().unwrap();
    let sample = root.join("benchmarks/demo/predictions/sample.jsonl");
    let stdout = generate(
        &root.join("benchmarks/demo/suite.toml"),
        tmp.path(),
        &["--predictions", sample.to_str().unwrap()],
    );
    assert!(stdout.contains("kept 34 of 34 gold queries"), "{stdout}");
    let committed = root.join("benchmarks/demo/tqa");
    for (name, bytes) in files(tmp.path()) {
        assert_eq!(
            std::fs::read(committed.join(&name)).ok().as_deref(),
            Some(bytes.as_slice()),
            "benchmarks/demo/tqa/{name} is stale: regenerate it (docs/tqa.md)"
        );
    }
    let db = root.join("benchmarks/demo/build/bookshop.sqlite");
    if db.is_file() {
        // 34 cases with 38 gold alternatives, in two renamed-schema settings.
        assert_eq!(check_clones(tmp.path(), |_| db.clone()), 76);
    }
}

#[test]
fn defog_clones_keep_every_gold_result_and_reruns_are_identical() {
    if !wordnet_installed() {
        return;
    }
    let Some(data) = shared_data() else {
        return;
    };
    let gold = data.join("defog/questions.csv");
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let stdout = generate(&gold, a.path(), &[]);
    for db in ["academic", "advising", "atis", "geography", "restaurants"] {
        assert!(
            stdout.contains(&format!("{db}: identifiers N1 ")),
            "{stdout}"
        );
    }
    assert!(stdout.contains("dropped"), "{stdout}");
    generate(&gold, b.path(), &[]);
    assert_eq!(files(a.path()), files(b.path()));
    let checked = check_clones(a.path(), |db| data.join(format!("defog/{db}.sqlite")));
    assert!(checked > 200, "{checked}");
}

/// A small native suite: its manifest, cases and one database built from a script.
fn suite(dir: &Path, schema_and_data: &str, cases: &[Value]) -> PathBuf {
    std::fs::write(dir.join("db.sql"), schema_and_data).unwrap();
    let lines: Vec<String> = cases.iter().map(Value::to_string).collect();
    std::fs::write(dir.join("cases.jsonl"), lines.join("\n")).unwrap();
    let db = cases[0]["db"].as_str().unwrap();
    std::fs::write(
        dir.join("suite.toml"),
        format!("name = \"t\"\ncases = \"cases.jsonl\"\ndb_dir = \"build\"\n[databases.{db}]\nscripts = [\"db.sql\"]\n"),
    )
    .unwrap();
    dir.join("suite.toml")
}

#[test]
fn string_literals_that_spell_identifiers_are_never_renamed() {
    if !wordnet_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let gold = suite(
        dir.path(),
        "CREATE TABLE person (person_id INTEGER PRIMARY KEY, name TEXT, title TEXT);\n\
         INSERT INTO person VALUES (1, 'name', 'title'), (2, 'Ada', 'person');",
        &[
            serde_json::json!({"id": "q1", "db": "staff", "question": "Which person is called 'name'?",
            "gold": "SELECT person_id, \"title\" FROM person WHERE name = 'name' OR title = \"title\" OR title = 'person'"}),
        ],
    );
    let out = dir.path().join("out");
    generate(&gold, &out, &[]);
    let ll = &records(&out.join("tqa-ll.jsonl"))[0];
    assert_eq!(
        ll["sql"],
        "SELECT p_id, \"ttl\" FROM prsn WHERE nm = 'name' OR ttl = \"ttl\" OR ttl = 'person'"
    );
    assert_eq!(ll["question"], "Which prsn is called 'name'?");
    check_clones(&out, |_| dir.path().join("build/staff.sqlite"));
}

/// SQLMorph §V's example, toxicology question 245: atom → atm, element → elmt (the paper's
/// model wrote `Elmt`), bond_id → b_id, and the question rewritten as in the paper.
#[test]
fn toxicology_question_245_is_lowered_as_in_the_paper() {
    if !wordnet_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let gold = suite(
        dir.path(),
        "CREATE TABLE molecule (molecule_id TEXT PRIMARY KEY, label TEXT);\n\
         CREATE TABLE atom (atom_id TEXT PRIMARY KEY, molecule_id TEXT REFERENCES molecule, element TEXT);\n\
         CREATE TABLE bond (bond_id TEXT PRIMARY KEY, molecule_id TEXT REFERENCES molecule, bond_type TEXT);\n\
         CREATE TABLE connected (atom_id TEXT REFERENCES atom, atom_id2 TEXT REFERENCES atom, bond_id TEXT REFERENCES bond, PRIMARY KEY (atom_id, atom_id2));\n\
         INSERT INTO molecule VALUES ('TR1', '+');\n\
         INSERT INTO atom VALUES ('TR1_1', 'TR1', 'i'), ('TR1_2', 'TR1', 'c'), ('TR1_3', 'TR1', 'i');\n\
         INSERT INTO bond VALUES ('TR1_1_2', 'TR1', '-'), ('TR1_2_3', 'TR1', '=');\n\
         INSERT INTO connected VALUES ('TR1_1', 'TR1_2', 'TR1_1_2'), ('TR1_3', 'TR1_2', 'TR1_2_3'), ('TR1_2', 'TR1_3', 'TR1_2_3');",
        &[serde_json::json!({"id": "245", "db": "toxicology",
            "question": "What is the average number of bonds the atoms with the element iodine have?",
            "gold": "SELECT CAST(COUNT(T2.bond_id) AS REAL) / COUNT(T1.atom_id) FROM atom AS T1 INNER JOIN connected AS T2 ON T1.atom_id = T2.atom_id WHERE T1.element = 'i'"})],
    );
    let out = dir.path().join("out");
    generate(&gold, &out, &[]);
    let script = std::fs::read_to_string(out.join("toxicology.tqa.sql")).unwrap();
    for rename in [
        "ALTER TABLE \"atom\" RENAME TO \"atm\"",
        "RENAME COLUMN \"element\" TO \"elmt\"",
        "RENAME COLUMN \"bond_id\" TO \"b_id\"",
        "ALTER TABLE \"bond\" RENAME TO \"bnd\"",
    ] {
        assert!(script.contains(rename), "{rename}\n{script}");
    }
    let ll = &records(&out.join("tqa-ll.jsonl"))[0];
    assert_eq!(
        ll["question"],
        "What is the average number of bnds the atms with the elmt iodine have?"
    );
    assert_eq!(
        records(&out.join("tqa-lo.jsonl"))[0]["sql"],
        records(&out.join("tqa-oo.jsonl"))[0]["sql"]
    );
    assert_eq!(
        check_clones(&out, |_| dir.path().join("build/toxicology.sqlite")),
        2
    );
}

/// `--method linker` on the demo: the SQL never changes, every recorded mention sits at its
/// offset in the seed's text, the replacement is spliced there, and reruns are identical.
#[test]
fn linker_elimination_on_the_demo_replaces_recorded_mentions_only() {
    if !wordnet_installed() {
        return;
    }
    let root = repo();
    let gold = root.join("benchmarks/demo/suite.toml");
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let run = |out: &Path| {
        let output = sqlgate()
            .args(["generate", "tqa", "--method", "linker", "--gold"])
            .args([gold.to_str().unwrap(), "--out", out.to_str().unwrap()])
            .run();
        output.assert_success();
        output.stdout
    };
    let stdout = run(a.path());
    assert_hiding_as_documented(&stdout, "On the demo: ");
    run(b.path());
    assert_eq!(files(a.path()), files(b.path()));
    let seeds: std::collections::HashMap<String, Value> =
        std::fs::read_to_string(root.join("benchmarks/demo/cases.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|v| (v["id"].as_str().unwrap().to_string(), v))
            .collect();
    // The committed demo family is what the documented command writes.
    let committed = root.join("benchmarks/demo/tqa-linker/tqa-sr.jsonl");
    assert_eq!(
        std::fs::read(&committed).unwrap(),
        std::fs::read(a.path().join("tqa-sr.jsonl")).unwrap(),
        "benchmarks/demo/tqa-linker/tqa-sr.jsonl is stale: regenerate it (docs/tqa.md)"
    );
    let augmented = records(&a.path().join("tqa-sr.jsonl"));
    assert!(!augmented.is_empty());
    for record in &augmented {
        let seed = &seeds[record["seed_id"].as_str().unwrap()];
        assert_eq!(record["sql"], seed["gold"]);
        let original: Vec<char> = seed["question"].as_str().unwrap().chars().collect();
        let mut rebuilt = original.clone();
        let mut replaced: Vec<&Value> = record["replaced"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["field"] == "question")
            .collect();
        replaced.sort_by_key(|r| std::cmp::Reverse(r["position"].as_u64().unwrap()));
        for r in replaced {
            let (at, len) = (
                r["position"].as_u64().unwrap() as usize,
                r["len"].as_u64().unwrap() as usize,
            );
            let token: String = original[at..at + len].iter().collect();
            assert_eq!(token, r["token"].as_str().unwrap());
            if let Some(word) = r["replacement"].as_str() {
                assert!(!word.to_lowercase().contains(&token.to_lowercase()));
                rebuilt.splice(at..at + len, word.chars());
            }
        }
        assert_eq!(
            rebuilt.iter().collect::<String>(),
            record["question"].as_str().unwrap()
        );
    }
}

/// LLM lowering against a fake OpenAI-compatible server: usable answers are taken, garbage
/// falls back to the deterministic rule, and a second run asks nothing (the cache answers).
#[test]
fn llm_lowering_is_validated_cached_and_falls_back() {
    use crate::llm_support::{Canned, TestServer};
    if !wordnet_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let gold = suite(
        dir.path(),
        "CREATE TABLE person (person_id INTEGER PRIMARY KEY, name TEXT, title TEXT);\n\
         INSERT INTO person VALUES (1, 'Ada', 'Dr');",
        &[
            serde_json::json!({"id": "q1", "db": "staff", "question": "Give each person's name.",
            "gold": "SELECT name FROM person"}),
        ],
    );
    let out = dir.path().join("out");
    // Tables first, then the distinct column names in order: person, name, person_id, title.
    let server = TestServer::start(vec![
        Canned::chat("Person -> Prsn"),
        Canned::chat("Sure! Here is a shorter name for it."),
        Canned::chat("`P_ID`"),
        Canned::chat("DROP TABLE person;"),
    ]);
    let llm = ["--llm-url", &server.base_url, "--llm-model", "tiny"];
    let stdout = generate(&gold, &out, &llm);
    assert_eq!(server.finish().len(), 4);
    assert!(stdout.contains("4 requests"), "{stdout}");
    assert!(stdout.contains("2 unusable answers"), "{stdout}");
    let script = std::fs::read_to_string(out.join("staff.tqa.sql")).unwrap();
    for rename in [
        "RENAME TO \"Prsn\"",
        "\"person_id\" TO \"P_ID\"",
        "\"name\" TO \"nm\"",
        "\"title\" TO \"ttl\"",
    ] {
        assert!(script.contains(rename), "{rename}\n{script}");
    }
    // No server at all now: every answer comes from the cache.
    let idle = TestServer::start(vec![]);
    let llm = ["--llm-url", &idle.base_url, "--llm-model", "tiny"];
    let again = generate(&gold, &out, &llm);
    assert!(again.contains("0 requests"), "{again}");
    assert_eq!(
        std::fs::read_to_string(out.join("staff.tqa.sql")).unwrap(),
        script
    );
    assert!(idle.finish().is_empty());
}

/// `--llm-questions`: a JSON answer that keeps the values replaces the deterministic rewrite.
#[test]
fn llm_question_rewrites_are_taken_when_they_keep_the_values() {
    use crate::llm_support::{Canned, TestServer};
    if !wordnet_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let gold = suite(
        dir.path(),
        "CREATE TABLE person (person_id INTEGER PRIMARY KEY, name TEXT);\n\
         INSERT INTO person VALUES (1, 'Ada');",
        &[
            serde_json::json!({"id": "q1", "db": "staff", "question": "Is 'Ada' a person?",
            "gold": "SELECT person_id FROM person WHERE name = 'Ada'"}),
        ],
    );
    let out = dir.path().join("out");
    // Three lowering answers (garbage: the rule is used), then the question's rewrite.
    let server = TestServer::start(vec![
        Canned::chat("no idea"),
        Canned::chat("no idea"),
        Canned::chat("no idea"),
        Canned::chat(
            "{\"updated_question\": \"Is 'Ada' a prsn entry?\", \"updated_evidence\": \"\"}",
        ),
    ]);
    let args = [
        "--llm-url",
        &server.base_url,
        "--llm-model",
        "tiny",
        "--llm-questions",
    ];
    generate(&gold, &out, &args);
    assert_eq!(server.finish().len(), 4);
    let ll = &records(&out.join("tqa-ll.jsonl"))[0];
    assert_eq!(ll["question"], "Is 'Ada' a prsn entry?");
    assert_eq!(ll["sql"], "SELECT p_id FROM prsn WHERE nm = 'Ada'");
}

/// `--method linker --strategy back-translation`: an answer that hides the linker table's
/// mention and keeps the value replaces the synonym rewrite; one that leaves the mention keeps
/// the synonym rewrite and says why; a second run asks nothing (the cache answers).
#[test]
fn model_hiding_is_validated_cached_and_falls_back_to_synonyms() {
    use crate::llm_support::{Canned, TestServer};
    if !wordnet_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let three_tables =
        "SELECT s.name FROM student AS s JOIN enrollment AS e ON s.id = e.student_id \
                        JOIN course AS c ON c.id = e.course_id WHERE c.title = ";
    let gold = suite(
        dir.path(),
        "CREATE TABLE student (id INTEGER PRIMARY KEY, name TEXT);\n\
         CREATE TABLE course (id INTEGER PRIMARY KEY, title TEXT);\n\
         CREATE TABLE enrollment (student_id INTEGER REFERENCES student(id), \
         course_id INTEGER REFERENCES course(id));\n\
         INSERT INTO student VALUES (1, 'Ada'); INSERT INTO course VALUES (1, 'Math');\n\
         INSERT INTO enrollment VALUES (1, 1);",
        &[
            serde_json::json!({"id": "q1", "db": "school", "question":
                "Which students have an enrollment in the course 'Math'?",
                "gold": format!("{three_tables}'Math'")}),
            serde_json::json!({"id": "q2", "db": "school", "question":
                "List the students with an enrollment in 'Art'.",
                "gold": format!("{three_tables}'Art'")}),
        ],
    );
    let out = dir.path().join("out");
    let server = TestServer::start(vec![
        Canned::chat("Sure!\nNew Question: Which students are registered in the course 'Math'?"),
        Canned::chat("New Question: Show the students with an enrollment in 'Art'."),
    ]);
    let run = |base_url: &str| {
        let output = sqlgate()
            .args(["generate", "tqa", "--method", "linker", "--strategy"])
            .args(["back-translation", "--gold", gold.to_str().unwrap()])
            .args(["--out", out.to_str().unwrap()])
            .args(["--llm-url", base_url, "--llm-model", "tiny"])
            .run();
        output.assert_success();
        output.stdout
    };
    let stdout = run(&server.base_url);
    let prompts = server.finish();
    assert_eq!(prompts.len(), 2, "{stdout}");
    assert!(
        prompts[0].body.contains("French") && prompts[0].body.contains("enrollment"),
        "{}",
        prompts[0].body
    );
    assert!(stdout.contains("2 requests"), "{stdout}");
    assert!(stdout.contains("1 unusable answers"), "{stdout}");
    let family = std::fs::read_to_string(out.join("tqa-bt.jsonl")).unwrap();
    let records: Vec<Value> = family
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records[0]["id"], "bt");
    assert_eq!(
        records[0]["question"],
        "Which students are registered in the course 'Math'?"
    );
    assert!(records[0].get("fallback").is_none());
    assert_eq!(records[1]["hidden"]["question"], true, "{family}");
    assert!(
        !records[1]["question"]
            .as_str()
            .unwrap()
            .contains("enrollment"),
        "{family}"
    );
    assert!(
        records[1]["fallback"]["question"]
            .as_str()
            .unwrap()
            .contains("still there"),
        "{family}"
    );

    let idle = TestServer::start(vec![]);
    let again = run(&idle.base_url);
    assert!(again.contains("0 requests"), "{again}");
    assert!(idle.finish().is_empty());
    assert_eq!(
        std::fs::read_to_string(out.join("tqa-bt.jsonl")).unwrap(),
        family
    );
}

/// TQA renames SQLite files: a suite whose databases are not files here (Defog's PostgreSQL
/// questions, beside their dumps) is refused saying so and how to get files, nothing written.
#[test]
fn a_suite_without_sqlite_files_is_refused_saying_tqa_reads_files() {
    if !wordnet_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let gold = dir.path().join("questions_postgres.csv");
    std::fs::write(
        &gold,
        "question,query,db_name,query_category\r\nHow many authors?,SELECT count(*) FROM author,academic,count\r\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    sqlgate()
        .args(["generate", "tqa", "--method", "naturalness", "--gold"])
        .arg(&gold)
        .arg("--out")
        .arg(&out)
        .run()
        .assert_bad_input(&[
            "questions_postgres.csv: record 0 (line 2)",
            "unknown database `academic`",
            "reads each database as a SQLite file",
            "sqlgate copy --to-engine sqlite",
        ]);
    assert!(!out.exists());
}

/// docs/tqa.md states the linker method's counts on the demo and on Defog as `<set>: N seeds
/// augmented ... question hiding a/b, evidence c/d`: the run's own.
fn assert_hiding_as_documented(stdout: &str, set: &str) {
    let count = |prefix: &str| -> String {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_default();
        line.split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string()
    };
    let augmented = count("augmented ");
    let fraction = |what: &str| -> String {
        let line = stdout
            .lines()
            .find(|l| l.starts_with("hiding score:"))
            .unwrap_or_default();
        let after = line.split_once(what).map_or("", |(_, rest)| rest);
        let inside = after.split_once('(').and_then(|(_, r)| r.split_once(')'));
        inside.map_or(String::new(), |(fraction, _)| fraction.to_string())
    };
    let doc = std::fs::read_to_string(repo().join("docs/tqa.md")).unwrap();
    let doc = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let (question, evidence) = (fraction("question "), fraction("evidence "));
    assert!(!augmented.is_empty() && !question.is_empty(), "{stdout}");
    assert!(
        doc.contains(&format!("{set}{augmented} seeds augmented"))
            && doc.contains(&format!("question hiding {question}, evidence {evidence}")),
        "docs/tqa.md: {set}{augmented} seeds augmented, question hiding {question}, evidence \
         {evidence}?\n{stdout}"
    );
}

/// `--method linker` on Defog's questions: the counts docs/tqa.md states.
#[test]
fn linker_elimination_on_defog_hides_as_documented() {
    let (Some(data), true) = (shared_data(), wordnet_installed()) else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let output = sqlgate()
        .args(["generate", "tqa", "--method", "linker", "--gold"])
        .arg(data.join("defog/questions.csv"))
        .arg("--out")
        .arg(out.path())
        .run();
    output.assert_success();
    assert_hiding_as_documented(&output.stdout, "On Defog: ");
}
