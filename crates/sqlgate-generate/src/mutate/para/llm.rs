//! Paraphrases from a chat model (paper Appendix A): the gold SQL and the schema of its tables
//! go into the prompt, which asks for k numbered questions; the reply is cached by (model,
//! prompt, seed), so a rerun asks nothing. Replies are parsed leniently (numbered or bulleted
//! lists, prose around them, fewer or more than k items) and each item is judged: SQL, an echo
//! of the prompt, or an empty item is rejected with its reason.

use std::collections::HashSet;

use super::word_key;
use crate::mutate::rewrite_check::{self, Request};
use crate::mutate::tqa::wordnet::WordNet;
use sqlgate_eval::error::{AskError, ServiceError};
use sqlgate_eval::exec::schema::Schema;
use sqlgate_eval::metrics::sqlmorph::Embedder;
use sqlgate_llm::cache::JsonlCache;
use sqlgate_llm::throttle::Throttle;
use sqlgate_llm::{ChatRequest, Client, Message};

/// The paper's prompt template. Placeholders: `{num_queries}`, `{schema_definitions}`,
/// `{sql_query}`.
pub const DEFAULT_PROMPT: &str = "\
Given the following database schema and an SQL query, generate {num_queries} distinct natural language questions that describe the purpose and output of the SQL query.

{schema_definitions}

SQL Query:
{sql_query}

Instructions:

- Generate {num_queries} natural language questions that reflect the intent of the SQL query.
- Each question should vary in phrasing, structure, and wording, but all questions must remain logically equivalent.
- Do not include explanations, task descriptions, or any additional comments in the output.

Output Format:

1. <First question>
2. <Second question>
...
{num_queries}. <Nth question>.";

/// The placeholders a prompt file must use.
pub const PLACEHOLDERS: [&str; 3] = ["{num_queries}", "{schema_definitions}", "{sql_query}"];

/// Asks a chat model for paraphrases with the paper's prompt, its replies cached.
pub struct Paraphraser {
    /// The endpoint's client.
    pub client: Client,
    /// The chat model to ask.
    pub model: String,
    /// The prompt template, with every one of [`PLACEHOLDERS`].
    pub prompt: String,
    /// The request's `seed`, for servers that honour one.
    pub seed: u64,
    /// The model's raw replies, by (model, prompt, seed).
    pub cache: JsonlCache<String>,
    /// Bounds concurrency and retries transient failures.
    pub throttle: Throttle,
}

impl Paraphraser {
    /// The texts the prompt shows as examples: an item equal to one is refused.
    pub fn examples(&self) -> Vec<String> {
        rewrite_check::template_examples(&self.prompt)
    }

    /// The model's reply to the prompt for `sql` over `schema`, from the cache when asked
    /// before; `Err` is an endpoint that still fails after the throttle's retries, or a cache
    /// that cannot be written.
    pub fn ask(&self, schema: &str, sql: &str, k: usize) -> Result<String, AskError> {
        let prompt = self
            .prompt
            .replace("{num_queries}", &k.to_string())
            .replace("{schema_definitions}", schema)
            .replace("{sql_query}", sql);
        let seed = self.seed.to_string();
        let key = JsonlCache::<String>::key(&[&self.model, &prompt, &seed]);
        if let Some(cached) = self.cache.get(&key) {
            return Ok(cached);
        }
        let request = ChatRequest {
            model: self.model.clone(),
            messages: vec![Message::user(prompt)],
            temperature: Some(0.0),
            seed: Some(self.seed),
            // Ten questions of ~25 words each, with room for a chatty preamble.
            max_tokens: Some(1024),
        };
        let reply = self
            .throttle
            .call(|| self.client.chat(&request).map_err(Into::into))
            .map_err(|e| ServiceError(e.message))?;
        self.cache.put(vec![(key, reply.content.clone())])?;
        Ok(reply.content)
    }
}

/// `CREATE TABLE` statements of the tables `sql` names (the schema part of the prompt): only
/// those, so the prompt stays small enough for small models' contexts.
pub fn schema_definitions(schema: &Schema, sql: &str) -> String {
    let lower = sql.to_lowercase();
    let named = |table: &str| {
        let table = table.to_lowercase();
        lower.match_indices(&table).any(|(at, _)| {
            let before = lower[..at].chars().next_back();
            let after = lower[at + table.len()..].chars().next();
            let edge = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            edge(before) && edge(after)
        })
    };
    let mut out = Vec::new();
    for table in schema.tables.iter().filter(|t| named(&t.name)) {
        let mut lines: Vec<String> = table
            .columns
            .iter()
            .map(|c| {
                let key = if c.primary_key { " PRIMARY KEY" } else { "" };
                format!("  {} {}{key}", c.name, c.decl_type)
                    .trim_end()
                    .to_string()
            })
            .collect();
        for key in schema
            .foreign_keys
            .iter()
            .filter(|k| k.from.table == table.name)
        {
            lines.push(format!(
                "  FOREIGN KEY ({}) REFERENCES {}({})",
                key.from.column, key.to.table, key.to.column
            ));
        }
        out.push(format!(
            "CREATE TABLE {} (\n{}\n);",
            table.name,
            lines.join(",\n")
        ));
    }
    out.join("\n\n")
}

/// The questions of a reply and the items refused, with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The numbered questions read from the reply.
    pub questions: Vec<String>,
    /// Items refused: why, and the item.
    pub rejected: Vec<(&'static str, String)>,
}

/// The list items of `reply` (numbered `1.`/`1)`, or bulleted `-`/`*`/`•`), judged one by one;
/// prose around the list is ignored. A reply without any list item is read line by line, each
/// line that ends in `?` counting as an item. An item must pass the [`rewrite_check`] against
/// `original` and the prompt's `examples` (see [`rewrite_check::template_examples`]), a clause's
/// mention said by a WordNet synonym counting when `wordnet` is given, or by a word a sentence
/// `model` finds close in meaning. At most `k` questions are kept, in order, duplicates dropped.
pub fn parse_reply(
    reply: &str,
    sql: &str,
    original: &str,
    examples: &[String],
    k: usize,
    wordnet: Option<&WordNet>,
    model: Option<&dyn Embedder>,
) -> Parsed {
    let check = Request {
        original,
        sql: Some(sql),
        examples,
        change_asked: true,
        mentions: &[],
        wordnet,
        model,
        ..Default::default()
    };
    let mut items: Vec<String> = reply.lines().filter_map(list_item).collect();
    if items.is_empty() {
        items = reply
            .lines()
            .map(str::trim)
            .filter(|line| line.ends_with('?'))
            .map(str::to_string)
            .collect();
    }
    let mut parsed = Parsed::default();
    let mut seen = HashSet::new();
    for item in items {
        let item = clean(&item);
        let why =
            judge(&item, sql).or_else(|| rewrite_check::refusal(&item, &check).map(|r| r.why));
        match why {
            Some(why) => parsed.rejected.push((why, item)),
            None if !seen.insert(word_key(&item)) => {
                parsed.rejected.push(("a repeat of an earlier item", item))
            }
            None if parsed.questions.len() >= k => {
                parsed.rejected.push(("beyond the k asked for", item))
            }
            None => parsed.questions.push(item),
        }
    }
    parsed
}

/// The text of a numbered or bulleted line, else None.
fn list_item(line: &str) -> Option<String> {
    let line = line.trim();
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    let rest = if digits > 0 {
        line[digits..].strip_prefix(['.', ')', ':'])?
    } else {
        line.strip_prefix(['-', '*', '•'])?
    };
    // "-5 is the answer" or "2023" alone is no list item.
    rest.starts_with(char::is_whitespace)
        .then(|| rest.trim().to_string())
}

/// Without markdown emphasis, surrounding quotes, or a `Question:` label.
fn clean(item: &str) -> String {
    let item = item.trim().trim_matches(['*', '_']).trim();
    let lower = item.to_lowercase();
    let item = ["question:", "q:"]
        .iter()
        .find(|label| lower.starts_with(*label))
        .map_or(item, |label| item[label.len()..].trim());
    item.trim_matches(['"', '\'', '`', '“', '”'])
        .trim()
        .to_string()
}

/// Why an item is no paraphrase, or None when it is one.
fn judge(item: &str, sql: &str) -> Option<&'static str> {
    let lower = item.to_lowercase();
    if item.chars().filter(|c| c.is_alphabetic()).count() < 3 {
        return Some("empty");
    }
    if lower.starts_with("select ")
        || lower.starts_with("with ")
        || (lower.contains("select ") && lower.contains(" from "))
    {
        return Some("SQL, not a question");
    }
    if word_key(item) == word_key(sql) {
        return Some("an echo of the SQL");
    }
    let echoes = [
        "<first question>",
        "<second question>",
        "<nth question>",
        "natural language question",
        "generate ",
        "sql query",
        "the following",
        "here are",
        "here is",
        "logically equivalent",
    ];
    // At a word start: "Where is each store?" is no "here is".
    let starts_a_word = |echo: &str| {
        lower
            .match_indices(echo)
            .any(|(at, _)| !lower[..at].ends_with(char::is_alphanumeric))
    };
    if echoes.iter().any(|echo| starts_a_word(echo)) {
        return Some("an echo of the prompt");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SQL: &str = "SELECT title FROM books WHERE genre = 'Poetry'";

    #[test]
    fn numbered_and_bulleted_lists_inside_prose() {
        let reply = "Sure! Here are the questions:\n\n1. Which books are poetry?\n2) What are the titles of poetry books?\n- List poetry titles.\n* **Show me every poetry book.**\n\nI hope this helps.";
        let parsed = parse_reply(reply, SQL, "", &[], 10, None, None);
        assert_eq!(
            parsed.questions,
            vec![
                "Which books are poetry?",
                "What are the titles of poetry books?",
                "List poetry titles.",
                "Show me every poetry book."
            ]
        );
        assert!(parsed.rejected.is_empty(), "{:?}", parsed.rejected);
    }

    #[test]
    fn more_than_k_repeats_and_the_original_are_cut() {
        let reply = "1. Which books are poetry?\n2. which books are POETRY\n3. Name the poetry books.\n4. Poetry titles, please.\n5. Show poetry.";
        let parsed = parse_reply(reply, SQL, "Name the poetry books", &[], 2, None, None);
        assert_eq!(
            parsed.questions,
            vec!["Which books are poetry?", "Poetry titles, please."]
        );
        let reasons: Vec<&str> = parsed.rejected.iter().map(|(why, _)| *why).collect();
        assert_eq!(
            reasons,
            vec![
                "a repeat of an earlier item",
                "unchanged",
                "beyond the k asked for"
            ]
        );
    }

    #[test]
    fn garbage_items_are_rejected_with_reasons() {
        let reply = format!(
            "1. {SQL}\n2. SELECT title FROM books\n3. <First question>\n4. ?\n5. Generate 3 natural language questions.\n6. What poetry do we stock?"
        );
        let parsed = parse_reply(&reply, SQL, "", &[], 10, None, None);
        assert_eq!(parsed.questions, vec!["What poetry do we stock?"]);
        let reasons: Vec<&str> = parsed.rejected.iter().map(|(why, _)| *why).collect();
        assert_eq!(
            reasons,
            vec![
                "SQL, not a question",
                "SQL, not a question",
                "an echo of the prompt",
                "empty",
                "an echo of the prompt"
            ]
        );
    }

    #[test]
    fn items_that_are_no_rewrite_of_the_question_are_refused() {
        let original = "Which books are poetry? Show their titles.";
        let examples = rewrite_check::template_examples(
            "Example:\nQuestion: What are the poetry titles we sell?\n{sql_query}",
        );
        let reply = "1. What are the poetry titles we sell?\n2. Which books are poetry? Show their titles.\n3. Which books are poetry?\n4. Which books are verse? Show their titles.\n5. List the titles of the poetry books.";
        let parsed = parse_reply(reply, SQL, original, &examples, 10, None, None);
        assert_eq!(
            parsed.questions,
            vec!["List the titles of the poetry books."]
        );
        let reasons: Vec<&str> = parsed.rejected.iter().map(|(why, _)| *why).collect();
        assert_eq!(
            reasons,
            vec![
                "the prompt's example",
                "unchanged",
                "a sentence of the original dropped",
                "a value or number of the original lost"
            ]
        );
    }

    #[test]
    fn a_clause_said_by_a_synonym_is_kept_only_with_wordnet() {
        let Some(wordnet) = crate::mutate::tqa::wordnet::for_tests() else {
            return;
        };
        let sql = "SELECT title FROM books ORDER BY rating";
        let original = "List the books ordered by rating.";
        let reply = "1. Show the books sorted by their evaluation.\n2. Show the books.";
        let with = parse_reply(reply, sql, original, &[], 10, Some(wordnet), None);
        assert_eq!(
            with.questions,
            ["Show the books sorted by their evaluation."]
        );
        assert_eq!(with.rejected[0].0, "a clause's mention lost");
        let without = parse_reply(reply, sql, original, &[], 10, None, None);
        assert!(without.questions.is_empty(), "{without:?}");
    }

    #[test]
    fn a_reply_without_a_list_yields_its_question_lines() {
        let parsed = parse_reply("1. Where is each poetry book?", SQL, "", &[], 3, None, None);
        assert_eq!(parsed.questions, vec!["Where is each poetry book?"]);
        let parsed = parse_reply(
            "What poetry do we stock?\nThat is my answer.",
            SQL,
            "",
            &[],
            3,
            None,
            None,
        );
        assert_eq!(parsed.questions, vec!["What poetry do we stock?"]);
        assert_eq!(
            parse_reply("", SQL, "", &[], 3, None, None),
            Parsed::default()
        );
        assert_eq!(
            parse_reply("2023\n-5 degrees", SQL, "", &[], 3, None, None),
            Parsed::default()
        );
    }

    #[test]
    fn the_schema_part_names_only_the_tables_of_the_query() {
        use sqlgate_eval::exec::schema::{Column, Table};
        let column = |name: &str, key: bool| Column {
            name: name.into(),
            decl_type: "TEXT".into(),
            primary_key: key,
            not_null: false,
        };
        let schema = Schema {
            tables: vec![
                Table {
                    name: "books".into(),
                    columns: vec![column("book_id", true), column("title", false)],
                },
                Table {
                    name: "bookshops".into(),
                    columns: vec![column("id", true)],
                },
            ],
            foreign_keys: Vec::new(),
        };
        let text = schema_definitions(&schema, "SELECT title FROM Books");
        assert_eq!(
            text,
            "CREATE TABLE books (\n  book_id TEXT PRIMARY KEY,\n  title TEXT\n);"
        );
    }
}
