//! `POST {base}/chat/completions`.

use serde::Serialize;
use serde_json::Value;

use super::LlmError;
use super::{excerpt, garbage, Client};

/// One chat message; `role` is `system`, `user` or `assistant`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message {
            role: "system".into(),
            content: content.into(),
        }
    }

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
    pub model: String,
    pub messages: Vec<Message>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

/// The first choice's text, and the whole response for diagnostics.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    pub content: String,
    pub raw: Value,
}

impl ChatReply {
    /// The model stopped at the request's `max_tokens` (`finish_reason: "length"`), so the
    /// text may end mid-answer.
    pub fn cut_short(&self) -> bool {
        finish_reason(&self.raw) == Some("length")
    }
}

fn finish_reason(raw: &Value) -> Option<&str> {
    raw.pointer("/choices/0/finish_reason")
        .and_then(Value::as_str)
}

impl Client {
    /// Asks for one completion. A 200 response without `choices[0].message.content` as text
    /// is a [`Garbage`](LlmErrorKind::Garbage) error, unless the model was cut short: a
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
