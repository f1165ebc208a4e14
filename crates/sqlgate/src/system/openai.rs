//! The `openai` system: one chat completion per question from an OpenAI-compatible API
//! (OpenAI, vLLM, Ollama, llama.cpp server), its reply cleaned into one SQL query.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;
use sha2::{Digest, Sha256};

use super::{Reply, Request, System, SystemError};
use crate::config::system::openai::{OpenAiConfig, PromptSource};
use sqlgate_eval::model_output::clean_sql;
use sqlgate_llm::{
    excerpt, ChatRequest, Client, ClientConfig, ConfigError, HeaderSource, LlmErrorKind, Message,
    ServerState,
};

/// A text-to-SQL system behind an OpenAI-compatible chat API.
#[derive(Debug, Clone)]
pub struct OpenAiSystem {
    client: Client,
    config: OpenAiConfig,
    template: Template,
    fingerprint: String,
}

impl OpenAiSystem {
    /// Reads and checks the prompt template; a relative prompt file is resolved against
    /// `base_dir` (the directory of the configuration file). No request is sent.
    pub fn new(config: OpenAiConfig, base_dir: &Path) -> Result<OpenAiSystem, ConfigError> {
        let client = Client::new(&ClientConfig {
            base_url: config.base_url.clone(),
            api_key_env: config.api_key_env.clone(),
            timeout: config.timeout_secs.duration(),
        })?
        .with_headers(&config.headers)?;
        if config.abstain_marker.trim().is_empty() {
            return Err(ConfigError("abstain_marker must not be empty".into()));
        }
        let template = Template::parse(read_prompt(&config.prompt, base_dir)?).map_err(|e| {
            match &config.prompt {
                PromptSource::File(path) => ConfigError(format!("{}: {e}", path.display())),
                PromptSource::Template(_) => e,
            }
        })?;
        let fingerprint = fingerprint(&config, &template.text);
        Ok(OpenAiSystem {
            client,
            config,
            template,
            fingerprint,
        })
    }

    /// The chat request sent for a question.
    pub fn chat_request(&self, request: &Request) -> ChatRequest {
        let mut messages = Vec::new();
        if let Some(system_prompt) = &self.config.system_prompt {
            messages.push(Message::system(system_prompt));
        }
        messages.push(Message::user(
            self.template.render(request, &self.config.abstain_marker),
        ));
        ChatRequest {
            model: self.config.model.clone(),
            messages,
            temperature: Some(self.config.temperature),
            // Each sample its own seed, so that a server honouring seeds samples each case
            // differently yet reproducibly.
            seed: Some(
                self.config
                    .seed
                    .wrapping_add(u64::from(request.sample.unwrap_or(0))),
            ),
            max_tokens: Some(self.config.max_tokens),
        }
    }
}

impl System for OpenAiSystem {
    fn fingerprint(&self) -> String {
        self.fingerprint.clone()
    }

    /// The model's text as it came: the cassette keeps it, and [`System::interpret`] reads it.
    fn answer(&self, request: &Request) -> Result<Reply, SystemError> {
        let reply = self.client.chat(&self.chat_request(request))?;
        Ok(Reply {
            truncated: reply.cut_short(),
            usage: reply.usage(),
            ..Reply::sql(reply.content)
        })
    }

    /// The server answers `GET /models`, accepts the key, and serves the model: listed there,
    /// or (a server listing other names, such as llama.cpp's file path) accepting one tiny
    /// request for it. A server without the listing is only required to answer.
    fn preflight(&self) -> Result<(), String> {
        let listed = match self.client.models() {
            Ok(listed) => listed,
            // The server is there (a dropped connection, a body cut short): the run's retries
            // deal with that.
            Err(error)
                if error.kind == LlmErrorKind::Transport
                    && error.retryable
                    && error.server != ServerState::Unreachable =>
            {
                return Ok(())
            }
            // Unreachable, no answer in time, a refused key.
            Err(error) => return Err(error.message),
        };
        let Some(listed) = listed else {
            return Ok(());
        };
        if listed.contains(&self.config.model) {
            return Ok(());
        }
        let tiny = ChatRequest {
            model: self.config.model.clone(),
            messages: vec![Message::user("Say OK.")],
            temperature: Some(0.0),
            seed: Some(self.config.seed),
            max_tokens: Some(1),
        };
        match self.client.chat(&tiny) {
            Err(error) if error.kind == LlmErrorKind::Http && !error.retryable => Err(format!(
                "model `{}` is not among those {} lists ({}), and a request for it was refused: {}",
                self.config.model,
                self.config.base_url,
                listed.join(", "),
                error.message
            )),
            Err(error) if error.server == ServerState::Unreachable => Err(error.message),
            _ => Ok(()),
        }
    }

    fn interpret(&self, reply: Reply) -> Result<Reply, SystemError> {
        let Some(content) = &reply.sql else {
            // Recorded by an older sqlgate, which applied the marker before recording.
            return Ok(reply);
        };
        let interpreted = interpret(content, &self.config.abstain_marker)?;
        Ok(Reply {
            truncated: reply.truncated,
            ..interpreted
        })
    }
}

fn read_prompt(source: &PromptSource, base_dir: &Path) -> Result<String, ConfigError> {
    match source {
        PromptSource::Template(text) => Ok(text.clone()),
        PromptSource::File(path) => {
            let path = base_dir.join(path);
            std::fs::read_to_string(&path).map_err(|e| {
                ConfigError(format!(
                    "cannot read the prompt file {}: {e}",
                    path.display()
                ))
            })
        }
    }
}

/// Hashes everything that shapes the answers, and nothing about where the model is served:
/// the same model behind another URL or key is the same system. Fields are length-prefixed so
/// that no two configurations hash alike by concatenation.
fn fingerprint(config: &OpenAiConfig, template_text: &str) -> String {
    let temperature = config.temperature.to_string();
    let seed = config.seed.to_string();
    let max_tokens = config.max_tokens.to_string();
    let mut fields = vec![
        ("type", Some("openai")),
        ("model", Some(config.model.as_str())),
        ("template", Some(template_text)),
        ("system_prompt", config.system_prompt.as_deref()),
        ("temperature", Some(temperature.as_str())),
        ("seed", Some(seed.as_str())),
        ("max_tokens", Some(max_tokens.as_str())),
        ("abstain_marker", Some(config.abstain_marker.as_str())),
    ];
    // Fixed headers may select what answers; headers read from the environment are
    // credentials. Without fixed headers the fingerprint is the one it was before headers.
    let fixed: BTreeMap<String, &str> = config
        .headers
        .iter()
        .filter_map(|(name, source)| match source {
            HeaderSource::Fixed(value) => Some((name.to_ascii_lowercase(), value.as_str())),
            HeaderSource::Env(_) => None,
        })
        .collect();
    for (name, value) in &fixed {
        fields.push(("header", Some(name.as_str())));
        fields.push(("value", Some(value)));
    }
    let mut hasher = Sha256::new();
    for (name, value) in fields {
        // An absent field hashes as its name alone, unlike one set to "".
        let parts = [Some(name), value];
        for part in parts.into_iter().flatten() {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
    }
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Turns the model's text into an answer: an abstention, a query, or Garbage. The marker
/// abstains when it stands as a word of its own outside the query: in
/// `SELECT COUNT(*) AS not_answerable_count` it is part of an identifier, and the reply is SQL.
fn interpret(content: &str, abstain_marker: &str) -> Result<Reply, SystemError> {
    let (text, had_reasoning) = strip_reasoning(content);
    let cleaned = clean_sql(text);
    let is_query = looks_like_query(&cleaned.sql);
    let marker_outside_query = if is_query {
        word_count(text, abstain_marker) > word_count(&cleaned.sql, abstain_marker)
    } else {
        word_count(text, abstain_marker) > 0
    };
    if marker_outside_query {
        return Ok(Reply {
            sql: None,
            cleaned: false,
            samples: Vec::new(),
            retrieved: Vec::new(),
            truncated: false,
            usage: None,
            script: None,
        });
    }
    if !is_query {
        return Err(SystemError::garbage(format!(
            "the reply holds no SQL query: {}",
            excerpt(content)
        )));
    }
    // The pipeline cleans the reply; cleaning here only tells a query from prose.
    Ok(Reply {
        cleaned: had_reasoning,
        ..Reply::sql(text)
    })
}

/// How often `word` occurs in `text` (ignoring case) not as part of a longer identifier.
fn word_count(text: &str, word: &str) -> usize {
    let text = text.to_lowercase();
    let word = word.to_lowercase();
    let is_identifier = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(&word)
        .filter(|(at, _)| {
            let before = text[..*at].chars().next_back();
            let after = text[at + word.len()..].chars().next();
            !before.is_some_and(is_identifier) && !after.is_some_and(is_identifier)
        })
        .count()
}

/// Drops a leading `<think>...</think>` block, which reasoning models served without a
/// reasoning parser put before their answer (its drafts are not the answer). A block left
/// open (cut by `max_tokens`) leaves no answer at all.
fn strip_reasoning(content: &str) -> (&str, bool) {
    let Some(thinking) = content.trim_start().strip_prefix("<think>") else {
        return (content, false);
    };
    match thinking.find("</think>") {
        Some(end) => (&thinking[end + "</think>".len()..], true),
        None => ("", true),
    }
}

/// Whether the text starts (after comments) like a query: SELECT, VALUES, a parenthesised
/// query or a common table expression. clean_sql keeps text in which it found no query as it
/// is, so prose, refusals and replies holding only DDL or DML end up failing here.
fn looks_like_query(text: &str) -> bool {
    static START: OnceLock<Regex> = OnceLock::new();
    START
        .get_or_init(|| {
            Regex::new(
                r#"(?is)^(?:\s+|--[^\n]*|/\*.*?\*/)*(?:\(|select\b|values\b|with\s+(?:recursive\s+)?[\w"`\[\]]+\s*(?:\([^)]*\)\s*)?as\s*(?:not\s+)?(?:materialized\s+)?\()"#,
            )
            .expect("the query-start pattern is a valid regex")
        })
        .is_match(text)
}

/// A prompt template split at its placeholders, checked once when the system is built.
#[derive(Debug, Clone)]
struct Template {
    /// The template as written, for the fingerprint.
    text: String,
    segments: Vec<Segment>,
}

#[derive(Debug, Clone)]
enum Segment {
    Text(String),
    Field(Field),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Question,
    Schema,
    Evidence,
    Db,
    AbstainMarker,
}

const FIELD_NAMES: &[(&str, Field)] = &[
    ("question", Field::Question),
    ("schema", Field::Schema),
    ("evidence", Field::Evidence),
    ("db", Field::Db),
    ("abstain_marker", Field::AbstainMarker),
];

impl Template {
    fn parse(text: String) -> Result<Template, ConfigError> {
        static TOKEN: OnceLock<Regex> = OnceLock::new();
        let token = TOKEN.get_or_init(|| {
            Regex::new(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
                .expect("the placeholder pattern is a valid regex")
        });
        let mut segments = Vec::new();
        let mut literal = String::new();
        let mut last = 0;
        for captures in token.captures_iter(&text) {
            let Some(whole) = captures.get(0) else {
                continue;
            };
            literal.push_str(&text[last..whole.start()]);
            last = whole.end();
            let Some(name) = captures.get(1) else {
                // `{{` or `}}`: one literal brace.
                literal.push_str(&whole.as_str()[..1]);
                continue;
            };
            let field = field_named(name.as_str())?;
            segments.push(Segment::Text(std::mem::take(&mut literal)));
            segments.push(Segment::Field(field));
        }
        literal.push_str(&text[last..]);
        segments.push(Segment::Text(literal));
        let asks_the_question = segments
            .iter()
            .any(|segment| matches!(segment, Segment::Field(Field::Question)));
        if !asks_the_question {
            return Err(ConfigError(
                "the prompt template has no {question} placeholder".into(),
            ));
        }
        Ok(Template { text, segments })
    }

    /// Values are inserted as they are and never scanned for placeholders themselves.
    fn render(&self, request: &Request, abstain_marker: &str) -> String {
        let mut prompt = String::new();
        for segment in &self.segments {
            prompt.push_str(match segment {
                Segment::Text(text) => text,
                Segment::Field(Field::Question) => &request.question,
                Segment::Field(Field::Schema) => &request.schema,
                Segment::Field(Field::Evidence) => request.evidence.as_deref().unwrap_or(""),
                Segment::Field(Field::Db) => &request.db,
                Segment::Field(Field::AbstainMarker) => abstain_marker,
            });
        }
        prompt
    }
}

fn field_named(name: &str) -> Result<Field, ConfigError> {
    FIELD_NAMES
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, field)| *field)
        .ok_or_else(|| {
            let known: Vec<String> = FIELD_NAMES.iter().map(|(n, _)| format!("{{{n}}}")).collect();
            ConfigError(format!(
                "unknown placeholder {{{name}}} in the prompt template (known: {}; write {{{{ and }}}} for literal braces)",
                known.join(", ")
            ))
        })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::SystemErrorKind;
    use super::*;
    use crate::config::system::openai::DEFAULT_PROMPT;

    fn request() -> Request {
        Request {
            id: "7".into(),
            db: "concert_singer".into(),
            db_path: PathBuf::from("concert_singer.sqlite"),
            question: "How many singers are there? Use {schema} literally.".into(),
            evidence: None,
            schema: "CREATE TABLE singer (id INT, name TEXT)".into(),
            sample: None,
        }
    }

    #[test]
    fn placeholders_are_filled_once_and_braces_escape() {
        let template = Template::parse(
            "Q: {question}\nS: {schema}\nE: [{evidence}] DB: {db} {{db}} {\"json\": 1} }} {abstain_marker}"
                .into(),
        )
        .unwrap();
        let prompt = template.render(&request(), "n/a");
        assert_eq!(
            prompt,
            "Q: How many singers are there? Use {schema} literally.\nS: CREATE TABLE singer (id INT, name TEXT)\nE: [] DB: concert_singer {db} {\"json\": 1} } n/a"
        );
    }

    #[test]
    fn unknown_placeholders_and_a_missing_question_are_config_errors() {
        let error = Template::parse("{question} {tables}".into()).unwrap_err();
        assert!(error.0.contains("{tables}"), "{error}");
        assert!(error.0.contains("{question}, {schema}"), "{error}");
        let error = Template::parse("Schema: {schema}".into()).unwrap_err();
        assert!(error.0.contains("no {question}"), "{error}");
        assert!(Template::parse(DEFAULT_PROMPT.into()).is_ok());
    }

    #[test]
    fn replies_are_cleaned_abstentions_and_garbage_told_apart() {
        let reply = interpret(
            "```sql\nSELECT count(*) FROM singer;\n```",
            "not_answerable",
        )
        .unwrap()
        .clean();
        assert_eq!(reply.sql.as_deref(), Some("SELECT count(*) FROM singer"));
        assert!(reply.cleaned);

        let reply = interpret("SELECT 1", "not_answerable").unwrap().clean();
        assert_eq!(reply.sql.as_deref(), Some("SELECT 1"));
        assert!(!reply.cleaned);

        let reply = interpret("Sorry, that is NOT_ANSWERABLE here.", "not_answerable").unwrap();
        assert_eq!(reply.sql, None);
        // Part of an identifier in the query: the reply is SQL.
        let counted = "```sql\nSELECT COUNT(*) AS not_answerable_count FROM t\n```";
        let reply = interpret(counted, "not_answerable").unwrap();
        assert_eq!(reply.sql.as_deref(), Some(counted));
        // Said outside the query, it abstains.
        let reply = interpret("NOT_ANSWERABLE\n\nSELECT 1", "not_answerable").unwrap();
        assert_eq!(reply.sql, None);

        // What SmolLM2-135M answered through llama.cpp: a fenced block of DDL and DML only.
        let ddl_only = "```sql\nCREATE TABLE singer (id INT);\nINSERT INTO singer VALUES (1);\n```";
        for no_sql in [
            "I cannot help with that.",
            "",
            "   ",
            "<think>SELECT 1",
            ddl_only,
        ] {
            let error = interpret(no_sql, "not_answerable").unwrap_err();
            assert_eq!(error.kind, SystemErrorKind::Garbage, "{no_sql:?}");
            assert!(!error.retryable);
        }
        let error = interpret("I cannot help with that.", "not_answerable").unwrap_err();
        assert!(
            error.message.contains("I cannot help with that."),
            "{}",
            error.message
        );
    }

    #[test]
    fn reasoning_blocks_are_dropped() {
        let raw = "<think>Maybe SELECT * FROM t? If unsure say not_answerable.</think>\n```sql\nSELECT name FROM singer\n```";
        let reply = interpret(raw, "not_answerable").unwrap();
        assert!(!reply.sql.as_deref().unwrap().contains("think"));
        let reply = reply.clean();
        assert_eq!(reply.sql.as_deref(), Some("SELECT name FROM singer"));
        assert!(reply.cleaned);
    }

    #[test]
    fn query_starts_are_recognised_after_comments() {
        assert!(looks_like_query("-- count\n/* all */ SELECT 1"));
        assert!(looks_like_query("(SELECT 1) UNION (SELECT 2)"));
        assert!(looks_like_query("with x as (select 1) select * from x"));
        assert!(looks_like_query(
            "WITH RECURSIVE c(n) AS (VALUES (1)) SELECT n FROM c"
        ));
        assert!(looks_like_query("VALUES (1, 2)"));
        assert!(!looks_like_query(
            "With this schema we cannot select prices"
        ));
        assert!(!looks_like_query("DELETE FROM t"));
        assert!(!looks_like_query("Selection is hard"));
        assert!(!looks_like_query("The answer is 42"));
        assert!(!looks_like_query("-- only a comment"));
    }
}
