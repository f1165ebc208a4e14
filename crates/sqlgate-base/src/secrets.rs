//! The credentials sqlgate knows (values it read from its environment for a system or a model
//! server), and their redaction: every known secret is replaced by [`MASK`] where text enters
//! from a system or a server, and again by every writer of text, so that no output holds one.
//!
//! The registry is process-wide: whoever reads a credential registers it
//! ([`register_env`]), and every writer redacts with what is known then ([`redact`]). A
//! value is matched as it is, JSON-escaped (a server echoing it in a JSON body) and
//! percent-encoded (echoed in a URL).

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::RwLock;

use aho_corasick::{AhoCorasick, MatchKind};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// What a secret is replaced by.
pub const MASK: &str = "***";

/// Values shorter than this (in bytes) are not redacted: replacing a short value (`1`, `gpt`,
/// `small`) would mangle every text that happens to contain it, and a credential is far longer.
pub const MIN_SECRET_BYTES: usize = 8;

/// Everything but RFC 3986's unreserved characters, as URL encoders escape them.
const URL_ESCAPED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The forms of the known secrets, and a matcher for them.
struct Known {
    forms: BTreeSet<Vec<u8>>,
    matcher: Option<AhoCorasick>,
}

static KNOWN: RwLock<Known> = RwLock::new(Known {
    forms: BTreeSet::new(),
    matcher: None,
});

/// Registers the value of the environment variable `variable`, when it is set: it is
/// redacted from everything written from now on.
pub fn register_env(variable: &str) {
    if let Some(value) = std::env::var_os(variable) {
        register(value.as_encoded_bytes());
    }
}

/// Registers a secret value (surrounding whitespace, which a credential never holds, apart).
/// A value shorter than [`MIN_SECRET_BYTES`] is ignored.
pub fn register(value: &[u8]) {
    let value = value.trim_ascii();
    if value.len() < MIN_SECRET_BYTES {
        return;
    }
    let mut forms = vec![value.to_vec()];
    if let Ok(text) = std::str::from_utf8(value) {
        let json = serde_json::to_string(text).unwrap_or_default();
        if let Some(quoted) = json.strip_prefix('"').and_then(|j| j.strip_suffix('"')) {
            forms.push(quoted.as_bytes().to_vec());
        }
        forms.push(
            utf8_percent_encode(text, URL_ESCAPED)
                .to_string()
                .into_bytes(),
        );
    }
    let mut known = KNOWN.write().unwrap_or_else(|p| p.into_inner());
    let before = known.forms.len();
    known.forms.extend(forms);
    if known.forms.len() != before {
        // Building fails only past limits (4 GiB of patterns) that the values of a few
        // environment variables cannot reach.
        known.matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&known.forms)
            .ok();
    }
}

/// `text` with every known secret replaced by [`MASK`].
pub fn redact(text: &str) -> Cow<'_, str> {
    match redact_bytes(text.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        // A form that is not UTF-8 may match inside a character: the rest is kept readable.
        Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
    }
}

/// `bytes` with every known secret replaced by [`MASK`].
pub fn redact_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    let known = KNOWN.read().unwrap_or_else(|p| p.into_inner());
    match &known.matcher {
        Some(matcher) if matcher.is_match(bytes) => {
            let masks = vec![MASK.as_bytes(); known.forms.len()];
            Cow::Owned(matcher.replace_all_bytes(bytes, &masks))
        }
        _ => Cow::Borrowed(bytes),
    }
}

/// Replaces every known secret in `text` by [`MASK`], in place.
pub fn redact_in_place(text: &mut String) {
    if let Cow::Owned(redacted) = redact(text) {
        *text = redacted;
    }
}

/// Whether `bytes` hold a known secret.
pub fn holds_secret(bytes: &[u8]) -> bool {
    let known = KNOWN.read().unwrap_or_else(|p| p.into_inner());
    known
        .matcher
        .as_ref()
        .is_some_and(|matcher| matcher.is_match(bytes))
}

/// Every string of a JSON document with the known secrets redacted: an escape such as
/// `\u0073` decodes to the secret's own characters, which the raw text did not show.
pub fn redact_json(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) => redact_in_place(text),
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact_json),
        serde_json::Value::Object(fields) => fields.values_mut().for_each(redact_json),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_masked_raw_json_escaped_and_percent_encoded() {
        register(b"  unit-secret/\"quoted\"+1 \n");
        let text = r#"Bearer unit-secret/"quoted"+1, {"key": "unit-secret/\"quoted\"+1"}, ?k=unit-secret%2F%22quoted%22%2B1"#;
        assert_eq!(
            redact(text),
            r#"Bearer ***, {"key": "***"}, ?k=***"#.to_string()
        );
        assert!(holds_secret(text.as_bytes()));
        assert!(!holds_secret(b"unit-secret/"));
        let mut json: serde_json::Value =
            serde_json::from_str(r#"{"a": ["\u0075nit-secret/\"quoted\"+1"]}"#).unwrap();
        redact_json(&mut json);
        assert_eq!(json, serde_json::json!({"a": ["***"]}));
    }

    #[test]
    fn values_shorter_than_the_minimum_are_not_secrets() {
        register(b"seven-7");
        register(b" eight-b8 ");
        register(b"        ");
        assert_eq!(redact("seven-7, eight-b8"), "seven-7, ***");
        assert!(matches!(redact("nothing known"), Cow::Borrowed(_)));
    }
}
