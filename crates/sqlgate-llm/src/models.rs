//! `GET {base}/models`: which models a server serves, checked before a run asks it anything.

use reqwest::StatusCode;
use serde_json::Value;

use super::{errors, Client, LlmError};

impl Client {
    /// The ids of the models the server lists; `None` when it does not list them (an error
    /// status, or something else than OpenAI's `{"data": [{"id": ...}]}`). A key the server
    /// refuses (401, 403) is an error.
    pub fn models(&self) -> Result<Option<Vec<String>>, LlmError> {
        let url = format!("{}/models", self.base_url);
        let response = self
            .authorized(self.http.get(&url))?
            .send()
            .map_err(|e| errors::transport(&e, &url, self.timeout))?;
        let status = response.status();
        let body = super::read_body(response, &url, self.timeout)?;
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(errors::http_status(status, None, &body, &url));
        }
        if !status.is_success() {
            return Ok(None);
        }
        let listing: Option<Value> = serde_json::from_slice(&body).ok();
        Ok(listing.and_then(|listing| {
            let data = listing.get("data")?.as_array()?;
            data.iter()
                .map(|model| Some(model.get("id")?.as_str()?.to_string()))
                .collect()
        }))
    }
}
