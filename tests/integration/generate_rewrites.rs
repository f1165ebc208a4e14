//! Model rewrites that are no rewrites (issue 30): a local OpenAI-compatible server answers
//! every rewrite request with the prompt's example, the original text, the original minus a
//! sentence, the original without what it says of a clause, or (paraphrases) the original with
//! its condition negated. No generator keeps any of them: TQA and JQE keep their deterministic
//! rewrite and say why per case, and the paraphrase family, left empty, is an error (exit 2)
//! saying why.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::llm_support::chat_completion;
use crate::support::{sqlgate, wordnet_installed};

/// The example question the prompt files below show; TQA's built-in prompt has its own.
const EXAMPLE: &str = "Which authors wrote the most books?";
const TQA_EXAMPLE: &str = "How many reviews does each restaurant have?";

#[derive(Clone, Copy, Debug)]
enum Answer {
    Example,
    Original,
    OriginalMinusASentence,
    /// The original with its condition negated: every value kept, the meaning reversed.
    Negated,
    /// The original without what it says of a clause: every value kept, the ordering or the
    /// compared column gone.
    ClauseLost,
}

/// `question` without its ORDER BY's or its compared column's mention.
fn clause_lost(question: &str) -> String {
    question
        .replace(
            "Show their names in alphabetical order of name.",
            "Show them.",
        )
        .replace("have a total above", "are above")
}

/// `question` with its condition negated.
fn negated(question: &str) -> String {
    question
        .replace("customers live", "customers do not live")
        .replace("orders have", "orders do not have")
}

const CASES: [(&str, &str); 2] = [
    (
        "Which customers live in 'Paris'? Show their names in alphabetical order of name.",
        "SELECT name FROM customer WHERE city = 'Paris' ORDER BY name",
    ),
    (
        "How many orders have a total above 10? Count each order once.",
        "SELECT count(*) FROM orders WHERE total > 10",
    ),
];

fn suite(dir: &Path) -> PathBuf {
    std::fs::write(
        dir.join("db.sql"),
        "CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, name TEXT, city TEXT);\n\
         CREATE TABLE orders (order_id INTEGER PRIMARY KEY, \
         customer_id INTEGER REFERENCES customer(customer_id), total INTEGER);\n\
         INSERT INTO customer VALUES (1, 'Ada', 'Paris'), (2, 'Bob', 'Rome');\n\
         INSERT INTO orders VALUES (1, 1, 20), (2, 1, 5), (3, 2, 30);",
    )
    .unwrap();
    let lines: Vec<String> = CASES
        .iter()
        .enumerate()
        .map(|(n, (question, sql))| {
            serde_json::json!({"id": format!("q{n}"), "db": "shop", "question": question, "gold": sql})
                .to_string()
        })
        .collect();
    std::fs::write(dir.join("cases.jsonl"), lines.join("\n")).unwrap();
    std::fs::write(
        dir.join("suite.toml"),
        "name = \"t\"\ncases = \"cases.jsonl\"\ndb_dir = \"build\"\n[databases.shop]\nscripts = [\"db.sql\"]\n",
    )
    .unwrap();
    dir.join("suite.toml")
}

/// The text after the last `label` in `prompt`, up to the end of its line.
fn after<'a>(prompt: &'a str, label: &str) -> &'a str {
    let start = prompt.rfind(label).unwrap() + label.len();
    prompt[start..].lines().next().unwrap().trim()
}

/// `text` without its last sentence.
fn minus_a_sentence(text: &str) -> String {
    let end = text.find(['?', '.']).unwrap();
    text[..=end].to_string()
}

/// The bad model's answer to one prompt.
fn reply(prompt: &str, answer: Answer) -> String {
    let pick = |original: &str, example: &str| match answer {
        Answer::Example => example.to_string(),
        Answer::Original => original.to_string(),
        Answer::OriginalMinusASentence => minus_a_sentence(original),
        Answer::Negated => negated(original),
        Answer::ClauseLost => clause_lost(original),
    };
    if prompt.contains("Abbreviate the database schema identifier") {
        "no idea".to_string()
    } else if prompt.contains("Answer as JSON only:") {
        let question = pick(after(prompt, "\nQuestion: "), TQA_EXAMPLE);
        serde_json::json!({"updated_question": question, "updated_evidence": ""}).to_string()
    } else if prompt.contains("Expanded SQL:") {
        let rewrite = pick(after(prompt, "Original question:"), EXAMPLE);
        match answer {
            // Saying the added table, so that only the clause is missing.
            Answer::ClauseLost => format!(
                "{rewrite} Only those with a related {}.",
                after(prompt, "Added table:")
            ),
            _ => rewrite,
        }
    } else {
        // Paraphrase: the prompt holds the gold SQL, not the question.
        let sql = after(prompt, "SQL Query:\n");
        let original = CASES.iter().find(|(_, gold)| *gold == sql).unwrap().0;
        format!("1. {}", pick(original, EXAMPLE))
    }
}

/// A server on 127.0.0.1 that answers every chat request as the bad model would.
fn bad_model(answer: Answer) -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
    // Serves until the test process ends: a bound on the wait between two requests made the
    // test depend on the machine's speed (a loaded CI run saw it refuse connections).
    std::thread::spawn(move || loop {
        let Ok(mut request) = server.recv() else {
            return;
        };
        let mut body = String::new();
        let _ = request.as_reader().read_to_string(&mut body);
        let body: Value = serde_json::from_str(&body).unwrap_or_default();
        let prompt = body["messages"][0]["content"].as_str().unwrap_or_default();
        let content = chat_completion(reply(prompt, answer).into()).to_string();
        let _ = request.respond(tiny_http::Response::from_string(content));
    });
    url
}

fn prompt_file(dir: &Path, name: &str, template: &str) -> PathBuf {
    let path = dir.join(name);
    let text = format!("{template}\n\nExample question: {EXAMPLE}\n");
    std::fs::write(&path, text).unwrap();
    path
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const ANSWERS: [(Answer, &str); 4] = [
    (Answer::Example, "the prompt's example"),
    (Answer::Original, "unchanged"),
    (
        Answer::OriginalMinusASentence,
        "a sentence of the original dropped",
    ),
    (Answer::ClauseLost, "a clause's mention lost"),
];

#[test]
fn tqa_keeps_no_bad_question_rewrite() {
    if !wordnet_installed() {
        return;
    }
    for (answer, why) in ANSWERS {
        let dir = tempfile::tempdir().unwrap();
        let gold = suite(dir.path());
        let out = dir.path().join("out");
        let url = bad_model(answer);
        let run = sqlgate()
            .args([
                "generate",
                "tqa",
                "--method",
                "naturalness",
                "--llm-questions",
            ])
            .args(["--llm-url", &url, "--llm-model", "bad"])
            .arg("--gold")
            .arg(&gold)
            .arg("--out")
            .arg(&out)
            .run();
        run.assert_success();
        assert!(
            run.stdout
                .contains("LLM question rewrites: 0 accepted, 2 refused"),
            "{answer:?}: {}",
            run.stdout
        );
        for record in lines(&out.join("tqa-lo.jsonl")) {
            let question = record["question"].as_str().unwrap();
            assert!(
                question != TQA_EXAMPLE && !CASES.iter().any(|(q, _)| *q == question),
                "{answer:?} kept: {question}"
            );
            let refused = record["llm_refused"].as_str().unwrap();
            assert!(refused.starts_with(why), "{answer:?}: {refused}");
        }
    }
}

#[test]
fn jqe_keeps_no_bad_question_rewrite() {
    for (answer, why) in ANSWERS {
        let dir = tempfile::tempdir().unwrap();
        let gold = suite(dir.path());
        let prompt = prompt_file(
            dir.path(),
            "jqe.txt",
            sqlgate_generate::mutate::jqe::rewrite::DEFAULT_PROMPT,
        );
        let out = dir.path().join("jqe.jsonl");
        let url = bad_model(answer);
        let run = sqlgate()
            .args(["generate", "jqe", "--llm-url", &url, "--llm-model", "bad"])
            .arg("--llm-prompt")
            .arg(&prompt)
            .arg("--gold")
            .arg(&gold)
            .arg("--out")
            .arg(&out)
            .run();
        run.assert_success();
        let expansions = lines(&out);
        assert!(!expansions.is_empty(), "{}", run.stdout);
        assert!(
            run.stdout.contains(&format!(
                "LLM rewrites: 0 accepted, {} refused",
                expansions.len()
            )),
            "{answer:?}: {}",
            run.stdout
        );
        for expansion in &expansions {
            let question = expansion["question"].as_str().unwrap();
            assert!(
                question.contains("considering only"),
                "{answer:?}: the model's {question:?} was kept"
            );
            let refused = expansion["llm_refused"].as_str().unwrap();
            // JQE says an unchanged or example reply its own way; a lost clause as the check does.
            if let Answer::ClauseLost = answer {
                assert!(refused.starts_with(why), "{refused}");
            }
        }
    }
}

#[test]
fn a_paraphrase_family_left_empty_exits_2_saying_why() {
    for (answer, why) in ANSWERS {
        let dir = tempfile::tempdir().unwrap();
        let gold = suite(dir.path());
        let prompt = prompt_file(
            dir.path(),
            "para.txt",
            sqlgate_generate::mutate::para::llm::DEFAULT_PROMPT,
        );
        let out = dir.path().join("para.jsonl");
        let url = bad_model(answer);
        let run = sqlgate()
            .args(["generate", "paraphrase", "-k", "3"])
            .args(["--llm-url", &url, "--model", "bad"])
            .arg("--prompt")
            .arg(&prompt)
            .arg("--gold")
            .arg(&gold)
            .arg("--out")
            .arg(&out)
            .run();
        run.assert_code(2);
        let expected = format!("paraphrase: 0 of 2 kept: 0 below --min-cs, 2 refused as {why}");
        assert!(run.stderr.contains(&expected), "{answer:?}: {}", run.stderr);
        assert!(!out.exists(), "no empty family is written");
    }
}

#[test]
fn a_chat_models_paraphrase_that_negates_the_condition_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let gold = suite(dir.path());
    let out = dir.path().join("para.jsonl");
    let url = bad_model(Answer::Negated);
    let run = sqlgate()
        .args(["generate", "paraphrase", "-k", "3", "--min-cs", "0"])
        .args(["--llm-url", &url, "--model", "bad"])
        .arg("--gold")
        .arg(&gold)
        .arg("--out")
        .arg(&out)
        .run();
    run.assert_code(2);
    let expected = "paraphrase: 0 of 2 kept: 0 below --min-cs, 2 disagreeing with the gold";
    assert!(run.stderr.contains(expected), "{}", run.stderr);
    assert!(!out.exists(), "no empty family is written");
}

/// A suite whose only database has one table: JQE has nothing to join, and no query links
/// three tables for the linker method.
fn one_table_suite(dir: &Path) -> PathBuf {
    std::fs::write(
        dir.join("db.sql"),
        "CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, name TEXT);\n\
         INSERT INTO customer VALUES (1, 'Ada');",
    )
    .unwrap();
    let case = serde_json::json!({"id": "q0", "db": "shop", "question": "Name every customer.",
        "gold": "SELECT name FROM customer"});
    std::fs::write(dir.join("cases.jsonl"), case.to_string()).unwrap();
    std::fs::write(
        dir.join("suite.toml"),
        "name = \"t\"\ncases = \"cases.jsonl\"\ndb_dir = \"build\"\n[databases.shop]\nscripts = [\"db.sql\"]\n",
    )
    .unwrap();
    dir.join("suite.toml")
}

#[test]
fn empty_jqe_and_linker_families_exit_2_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let gold = one_table_suite(dir.path());
    let out = dir.path().join("jqe.jsonl");
    let run = sqlgate()
        .args(["generate", "jqe", "--gold"])
        .arg(&gold)
        .arg("--out")
        .arg(&out)
        .run();
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("jqe: 0 expansions retained of 0 generated"),
        "{}",
        run.stderr
    );
    assert!(!out.exists());
    if !wordnet_installed() {
        return;
    }
    let out = dir.path().join("linker");
    let run = sqlgate()
        .args(["generate", "tqa", "--method", "linker", "--gold"])
        .arg(&gold)
        .arg("--out")
        .arg(&out)
        .run();
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("tqa linker: 0 seeds augmented: 1 with fewer than three tables"),
        "{}",
        run.stderr
    );
}
