//! The optional LLM rewrite of an expansion's question (thesis §3.4): the deterministic template
//! question is handed to a chat model with the original question and both queries, at
//! temperature 0 with a fixed seed, through the same throttle and retries as systems, and the
//! reply is cached so a rerun asks nothing. A reply that is not a new question (an echo of the
//! original, meta text such as "The original question was:", SQL) is rejected and the template
//! question kept. The prompt is a file users can change; [`DEFAULT_PROMPT`] is used without one.

use sqlgate_eval::error::{AskError, ServiceError};
use sqlgate_llm::cache::JsonlCache;
use sqlgate_llm::throttle::Throttle;
use sqlgate_llm::{ChatRequest, Client, Message};

use super::Expansion;
use crate::mutate::rewrite_check::{self, Request};

/// Placeholders: `{question}`, `{sql}` (the original's), `{expanded_sql}`, `{table}` (added),
/// `{template}` (the deterministic rewrite).
pub const DEFAULT_PROMPT: &str = "\
You rewrite questions for a text-to-SQL benchmark.
The original question was answered by the original SQL. A table was joined to the SQL, which
changes its meaning. Rewrite the question so that it asks exactly what the expanded SQL answers,
naturally, in one sentence, mentioning the added table in plain words.

Original question: {question}
Original SQL: {sql}
Expanded SQL: {expanded_sql}
Added table: {table}
Literal rewrite: {template}

Answer with the rewritten question only.";

/// Rewrites expansion questions with a chat model, its replies cached.
pub struct Rewriter {
    /// The endpoint's client.
    pub client: Client,
    /// The chat model to ask.
    pub model: String,
    /// The prompt template ([`DEFAULT_PROMPT`]'s placeholders).
    pub prompt: String,
    /// The model's raw replies, by prompt.
    pub cache: JsonlCache<String>,
    /// Bounds concurrency and retries transient failures.
    pub throttle: Throttle,
}

/// What became of one expansion's rewrite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rewrite {
    /// The model's question, kept.
    Accepted(String),
    /// The reply was not a usable question: why, and the reply's first line.
    Rejected {
        /// Why the reply was refused.
        why: String,
        /// The reply's first line.
        reply: String,
    },
}

impl Rewriter {
    /// The rewrite of `expansion`'s question, whose seed asked `question` with `sql`. `Err` is
    /// an endpoint that still fails after the throttle's retries, or a cache that cannot be
    /// written.
    pub fn rewrite(
        &self,
        expansion: &Expansion,
        question: &str,
        sql: &str,
    ) -> Result<Rewrite, AskError> {
        let prompt = self
            .prompt
            .replace("{question}", question)
            .replace("{sql}", sql)
            .replace("{expanded_sql}", &expansion.sql)
            .replace("{table}", &expansion.added_table)
            .replace("{template}", &expansion.question);
        let key = JsonlCache::<String>::key(&[&self.model, &prompt]);
        let reply = match self.cache.get(&key) {
            Some(cached) => cached,
            None => {
                let request = ChatRequest {
                    model: self.model.clone(),
                    messages: vec![Message::user(prompt)],
                    temperature: Some(0.0),
                    seed: Some(0),
                    max_tokens: Some(256),
                };
                let reply = self
                    .throttle
                    .call(|| self.client.chat(&request).map_err(Into::into))
                    .map_err(|e| ServiceError(e.message))?;
                self.cache.put(vec![(key, reply.content.clone())])?;
                reply.content
            }
        };
        let check = Request {
            original: question,
            sql: Some(sql),
            examples: &rewrite_check::template_examples(&self.prompt),
            change_asked: true,
            mentions: &join_mentions(expansion),
            ..Default::default()
        };
        Ok(judge_reply(&reply, &check, &expansion.question))
    }
}

/// What a rewrite must say of the added join: the added table, and the column of it each
/// condition joins on (`orders.book_id = books.id`: `orders` and `book_id`).
fn join_mentions(expansion: &Expansion) -> Vec<String> {
    let table = &expansion.added_table;
    let columns = expansion.conditions.iter().filter_map(|condition| {
        condition.split('=').find_map(|side| {
            let (owner, column) = side.trim().rsplit_once('.')?;
            owner
                .trim_matches('"')
                .eq_ignore_ascii_case(table)
                .then(|| column.to_string())
        })
    });
    std::iter::once(table.clone()).chain(columns).collect()
}

/// Accepts the reply's question unless it is no rewrite at all: a code block, meta text, SQL,
/// the literal rewrite again, or what the [`rewrite_check`] refuses (the original question, the
/// prompt's example, a lost value or sentence, no mention of the added table, a repeated or
/// dangling word).
fn judge_reply(reply: &str, check: &Request<'_>, template: &str) -> Rewrite {
    if reply.trim_start().starts_with("```") {
        return Rewrite::Rejected {
            why: "it is a code block, not a question".into(),
            reply: reply.lines().next().unwrap_or_default().to_string(),
        };
    }
    let Some(line) = first_sentence_line(reply) else {
        return Rewrite::Rejected {
            why: "empty".into(),
            reply: String::new(),
        };
    };
    let lower = line.to_lowercase();
    let why = if same_words(&line, check.original) {
        Some("it repeats the original question".to_string())
    } else if same_words(&line, template) {
        Some("it repeats the literal rewrite".to_string())
    } else if [
        "the original",
        "original question",
        "original sql",
        "expanded sql",
        "here is",
        "sure",
    ]
    .iter()
    .any(|meta| lower.starts_with(meta))
    {
        Some("it talks about the task instead of asking".to_string())
    } else if ["select ", "with "]
        .iter()
        .any(|sql| lower.starts_with(sql))
    {
        Some("it is SQL, not a question".to_string())
    } else {
        rewrite_check::refusal(&line, check).map(|refusal| refusal.to_string())
    };
    match why {
        Some(why) => Rewrite::Rejected { why, reply: line },
        None => Rewrite::Accepted(line),
    }
}

/// Equal up to case, punctuation and spacing.
fn same_words(a: &str, b: &str) -> bool {
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    words(a) == words(b)
}

/// The first non-empty line, without surrounding quotes or a `Question:` / `Rewritten
/// question:` label.
fn first_sentence_line(reply: &str) -> Option<String> {
    let line = reply.lines().map(str::trim).find(|l| !l.is_empty())?;
    let lower = line.to_lowercase();
    let label = ["rewritten question:", "question:"]
        .iter()
        .find(|label| lower.starts_with(*label))
        .map_or(0, |label| label.len());
    let line = line[label..].trim();
    let line = line
        .trim_matches(|c| c == '"' || c == '\'' || c == '`')
        .trim();
    (!line.is_empty()).then(|| line.to_string())
}

#[cfg(test)]
mod tests {
    use super::{first_sentence_line, judge_reply, Request, Rewrite};
    use crate::mutate::rewrite_check::template_examples;

    #[test]
    fn replies_that_are_no_rewrite_are_rejected() {
        let question = "Which books are poetry? List them by title.";
        let template = "Which books are poetry? List them by title, considering only books that have a related orders (where orders.book_id = books.id)?";
        let examples = template_examples("Example: Which authors wrote the most books?");
        let check = Request {
            original: question,
            sql: Some("SELECT title FROM books WHERE genre = 'poetry'"),
            examples: &examples,
            change_asked: true,
            mentions: &["orders".to_string()],
            ..Default::default()
        };
        let rejected = |reply: &str| match judge_reply(reply, &check, template) {
            Rewrite::Rejected { why, .. } => why,
            Rewrite::Accepted(text) => panic!("accepted: {text}"),
        };
        assert_eq!(
            rejected("which books are POETRY? list them by title"),
            "it repeats the original question"
        );
        assert_eq!(rejected(template), "it repeats the literal rewrite");
        assert!(rejected("The original question was: Which books are poetry?").contains("task"));
        assert!(rejected("Sure! Here is the rewritten question:").contains("task"));
        assert!(rejected("```sql\nSELECT 1\n```").contains("code block"));
        assert!(rejected("SELECT title FROM books").contains("SQL"));
        assert_eq!(rejected("   "), "empty");
        assert!(rejected("Which authors wrote the most books?").starts_with("the prompt's example"));
        assert!(
            rejected("Which books are poetry?").starts_with("a sentence of the original dropped")
        );
        assert!(
            rejected("Which verse books have been sold? List them by title.")
                .starts_with("a value or number")
        );
        assert!(
            rejected("Which poetry books were bought? List them by title.")
                .starts_with("a required mention lost: orders")
        );
        assert!(
            rejected("Which poetry books have been ordered? List them by by title.")
                .starts_with("a repeated word")
        );
        assert_eq!(
            judge_reply(
                "Which poetry books have been ordered? List them by title.",
                &check,
                template
            ),
            Rewrite::Accepted("Which poetry books have been ordered? List them by title.".into())
        );
    }

    #[test]
    fn the_question_is_taken_from_a_chatty_reply() {
        assert_eq!(
            first_sentence_line("\n  \"Which books sold?\"\nThanks").as_deref(),
            Some("Which books sold?")
        );
        assert_eq!(
            first_sentence_line("Question: Which authors?").as_deref(),
            Some("Which authors?")
        );
        assert_eq!(
            first_sentence_line("Rewritten question: Which authors?").as_deref(),
            Some("Which authors?")
        );
        assert_eq!(first_sentence_line("  \n"), None);
    }
}
