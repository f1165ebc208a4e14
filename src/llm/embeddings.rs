//! `POST {base}/embeddings`.

use serde_json::{json, Value};

use super::LlmError;
use super::{excerpt, garbage, Client};

impl Client {
    /// One vector per input, in the order of the inputs (no request for no inputs). A 200 response that does not hold
    /// exactly one numeric vector per input is a [`Garbage`](LlmErrorKind::Garbage)
    /// error.
    pub fn embed<S: AsRef<str>>(
        &self,
        model: &str,
        inputs: &[S],
    ) -> Result<Vec<Vec<f32>>, LlmError> {
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        let inputs: Vec<&str> = inputs.iter().map(AsRef::as_ref).collect();
        let raw = self.post_json("embeddings", &json!({ "model": model, "input": inputs }))?;
        if is_per_token(&raw) {
            return Err(garbage(PER_TOKEN.to_string()));
        }
        parse_embeddings(&raw, inputs.len()).ok_or_else(|| {
            garbage(format!(
                "the embeddings response does not hold {} numeric vectors under `data`: {}",
                inputs.len(),
                excerpt(&raw.to_string())
            ))
        })
    }
}

/// What to do when a server sends token vectors: pooling them here would hide which pooling
/// the model was trained for, so the client asks for the server's own.
const PER_TOKEN: &str = "the embeddings response holds one vector per token, not one per input: \
the server does no pooling. Start it with a pooling type (llama.cpp's `llama-server --pooling mean`, \
or `python -m llama_cpp.server --pooling_type 1` for mean pooling)";

/// llama.cpp without pooling: `data[i].embedding` is a list of per-token vectors.
fn is_per_token(raw: &Value) -> bool {
    raw.pointer("/data/0/embedding/0")
        .is_some_and(Value::is_array)
}

/// `data[i].embedding`, placed by `data[i].index` when given (the API does not promise order).
fn parse_embeddings(raw: &Value, expected: usize) -> Option<Vec<Vec<f32>>> {
    let data = raw.get("data")?.as_array()?;
    if data.len() != expected {
        return None;
    }
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in data.iter().enumerate() {
        let index = match item.get("index") {
            Some(index) => usize::try_from(index.as_u64()?).ok()?,
            None => position,
        };
        let vector = item
            .get("embedding")?
            .as_array()?
            .iter()
            .map(|x| x.as_f64().map(|x| x as f32))
            .collect::<Option<Vec<f32>>>()?;
        let slot = vectors.get_mut(index)?;
        if slot.replace(vector).is_some() {
            return None;
        }
    }
    vectors.into_iter().collect()
}
