//! `POST {base}/embeddings`.

use serde_json::{json, Value};

use super::LlmError;
use super::{excerpt, garbage, Client};

impl Client {
    /// One vector per input, in the order of the inputs (no request for no inputs). A 200 response that does not hold
    /// exactly one numeric vector per input is a [`Garbage`](crate::LlmErrorKind::Garbage)
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
        parse_embeddings(&raw, inputs.len()).ok_or_else(|| {
            garbage(format!(
                "the embeddings response does not hold {} numeric vectors under `data`: {}",
                inputs.len(),
                excerpt(&raw.to_string())
            ))
        })
    }
}

/// `data[i].embedding`, placed by `data[i].index` when given (the API does not promise order).
///
/// A server without pooling (llama.cpp's, `python -m llama_cpp.server` for a chat model) sends
/// one vector per token instead; those are mean-pooled here, which is what `llama-server
/// --pooling mean` would have sent.
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
        let embedding = item.get("embedding")?.as_array()?;
        let vector = match embedding.first() {
            Some(Value::Array(_)) => mean_pooled(embedding)?,
            _ => numbers(embedding)?,
        };
        let slot = vectors.get_mut(index)?;
        if slot.replace(vector).is_some() {
            return None;
        }
    }
    vectors.into_iter().collect()
}

fn numbers(values: &[Value]) -> Option<Vec<f32>> {
    values
        .iter()
        .map(|x| x.as_f64().map(|x| x as f32))
        .collect()
}

/// The mean of per-token vectors of one length.
fn mean_pooled(tokens: &[Value]) -> Option<Vec<f32>> {
    let rows = tokens
        .iter()
        .map(|row| numbers(row.as_array()?))
        .collect::<Option<Vec<Vec<f32>>>>()?;
    let width = rows.first()?.len();
    if rows.iter().any(|row| row.len() != width) {
        return None;
    }
    let mut mean = vec![0f32; width];
    for row in &rows {
        for (sum, x) in mean.iter_mut().zip(row) {
            *sum += x;
        }
    }
    let count = rows.len() as f32;
    Some(mean.into_iter().map(|sum| sum / count).collect())
}
