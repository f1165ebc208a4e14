//! The optional LLM rewrite of an expansion's question (spec §2.7): the deterministic template
//! question is handed to a chat model with the original question and both queries, at
//! temperature 0 with a fixed seed, and the answer is cached so a rerun asks nothing. The prompt
//! is a file users can change; [`DEFAULT_PROMPT`] is used without one.

use crate::llm::cache::JsonlCache;
use crate::llm::{ChatRequest, Client, Message};

use super::Expansion;

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

pub struct Rewriter {
    pub client: Client,
    pub model: String,
    pub prompt: String,
    pub cache: JsonlCache<String>,
}

impl Rewriter {
    /// The rewritten question of `expansion`, whose seed asked `question` with `sql`.
    pub fn rewrite(
        &self,
        expansion: &Expansion,
        question: &str,
        sql: &str,
    ) -> Result<String, String> {
        let prompt = self
            .prompt
            .replace("{question}", question)
            .replace("{sql}", sql)
            .replace("{expanded_sql}", &expansion.sql)
            .replace("{table}", &expansion.added_table)
            .replace("{template}", &expansion.question);
        let key = JsonlCache::<String>::key(&[&self.model, &prompt]);
        if let Some(cached) = self.cache.get(&key) {
            return Ok(cached);
        }
        let request = ChatRequest {
            model: self.model.clone(),
            messages: vec![Message::user(prompt)],
            temperature: Some(0.0),
            seed: Some(0),
            max_tokens: Some(256),
        };
        let reply = self.client.chat(&request).map_err(|e| e.message)?;
        let text = first_sentence_line(&reply.content)
            .ok_or_else(|| format!("the model gave no question: {:?}", reply.content))?;
        self.cache.put(vec![(key, text.clone())])?;
        Ok(text)
    }
}

/// The first non-empty line, without surrounding quotes or a `Question:` label.
fn first_sentence_line(reply: &str) -> Option<String> {
    let line = reply.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line.strip_prefix("Question:").unwrap_or(line).trim();
    let line = line
        .trim_matches(|c| c == '"' || c == '\'' || c == '`')
        .trim();
    (!line.is_empty()).then(|| line.to_string())
}

#[cfg(test)]
mod tests {
    use super::first_sentence_line;

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
        assert_eq!(first_sentence_line("  \n"), None);
    }
}
