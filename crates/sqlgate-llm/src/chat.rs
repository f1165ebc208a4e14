//! `POST {base}/chat/completions`.

use serde::Serialize;
use serde_json::Value;

pub use sqlgate_base::usage::Usage;

use super::LlmError;
use super::{excerpt, garbage, Client};

/// One chat message; `role` is `system`, `user` or `assistant`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    /// Who speaks: `system`, `user` or `assistant`.
    pub role: String,
    /// What is said.
    pub content: String,
}

impl Message {
    /// Instructions to the model.
    pub fn system(content: impl Into<String>) -> Message {
        Message {
            role: "system".into(),
            content: content.into(),
        }
    }

    /// The user's turn.
    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: "user".into(),
            content: content.into(),
        }
    }
}

/// A chat completion request, serialized as the OpenAI request body; unset options are left
/// out so that the server's defaults apply.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatRequest {
    /// The model to ask.
    pub model: String,
    /// The conversation so far, oldest first.
    pub messages: Vec<Message>,
    /// Sampling temperature; 0 for reproducible answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Sampling seed, for servers that honour one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Bound on the tokens of the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

/// The first choice's text, and the whole response for diagnostics.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    /// The first choice's message text.
    pub content: String,
    /// The whole response body.
    pub raw: Value,
}

impl ChatReply {
    /// The model stopped at the request's `max_tokens` (`finish_reason: "length"`), so the
    /// text may end mid-answer.
    pub fn cut_short(&self) -> bool {
        finish_reason(&self.raw) == Some("length")
    }
}

impl ChatReply {
    /// The tokens the server counted, when its response has `usage` with both counts as whole
    /// numbers (servers that do not count send none, which is not an error).
    pub fn usage(&self) -> Option<Usage> {
        let count = |name: &str| self.raw.pointer(&format!("/usage/{name}"))?.as_u64();
        Some(Usage {
            prompt_tokens: count("prompt_tokens")?,
            completion_tokens: count("completion_tokens")?,
        })
    }
}

fn finish_reason(raw: &Value) -> Option<&str> {
    raw.pointer("/choices/0/finish_reason")
        .and_then(Value::as_str)
}

impl Client {
    /// Asks for one completion. A 200 response without `choices[0].message.content` as text
    /// is a [`Garbage`](crate::LlmErrorKind::Garbage) error, unless the model was cut short: a
    /// reasoning model that spent its whole budget thinking sends no text, and that is an
    /// empty reply cut short (counted as such), not a broken response.
    pub fn chat(&self, request: &ChatRequest) -> Result<ChatReply, LlmError> {
        let raw = self.post_json("chat/completions", request)?;
        let content = match raw.pointer("/choices/0/message/content") {
            Some(Value::String(text)) => text.clone(),
            None | Some(Value::Null) if finish_reason(&raw) == Some("length") => String::new(),
            _ => {
                return Err(garbage(format!(
                    "the chat response has no choices[0].message.content text: {}",
                    excerpt(&raw.to_string())
                )))
            }
        };
        Ok(ChatReply { content, raw })
    }
}
