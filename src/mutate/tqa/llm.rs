//! The optional LLM lowering of identifiers (SQLMorph §V): the paper's few-shot prompt through
//! the shared OpenAI-compatible client at temperature 0 with seed 42, every answer cached, and
//! validated (one identifier, same initial, shorter, not a keyword); anything else falls back to
//! the deterministic rule. A failed request stops the run instead (fail closed).

use std::cell::{Cell, RefCell};

use super::ident;
use crate::llm::cache::JsonlCache;
use crate::llm::{ChatRequest, Client, Message};

const INSTRUCTION: &str =
    "Abbreviate the database schema identifier to make it significantly shorter:";

/// The paper's few-shot pairs (N1 → N3, then N2 → N3).
const EXAMPLES: [(&str, &str); 10] = [
    ("Protocol_Name", "P_Nm"),
    ("WaterTemperature", "WtTp"),
    ("Vehicle_Identification_Number", "VIN"),
    ("NationalAeronauticalSpaceAgency", "NASA"),
    ("Banking_Table", "B_Tbl"),
    ("AirBagLocCurtain", "AbgLocCtn"),
    ("WaterTemp", "WtTp"),
    ("Veh_ID_Num", "VIN"),
    ("Natnl_Aero_Space_Agncy", "NASA"),
    ("Bnk_Tbl", "B_Tbl"),
];

pub fn prompt(identifier: &str) -> String {
    let mut text = String::new();
    for (from, to) in EXAMPLES {
        text.push_str(&format!("{INSTRUCTION}\n{from} -> {to}\n\n"));
    }
    text.push_str(&format!("{INSTRUCTION}\n{identifier} ->"));
    text
}

/// The abbreviation in a model's answer, when it is a usable one for `identifier`.
pub fn parse_answer(answer: &str, identifier: &str) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line.rsplit("->").next().unwrap_or(line);
    let name = line
        .trim()
        .trim_matches(|c| matches!(c, '`' | '"' | '\'' | '.'));
    let same_initial = name
        .chars()
        .next()?
        .eq_ignore_ascii_case(&identifier.chars().next()?);
    (same_initial && name.len() < identifier.len() && !ident::is_reserved(name))
        .then(|| name.to_string())
}

pub struct LlmLowering {
    pub client: Client,
    pub model: String,
    pub cache: JsonlCache<String>,
    /// Answers that were not usable (the deterministic rule was used instead).
    pub fallbacks: Cell<usize>,
    pub requests: Cell<usize>,
    /// Requests that failed: the run stops on them.
    pub errors: RefCell<Vec<String>>,
}

impl LlmLowering {
    pub fn new(client: Client, model: String, cache: JsonlCache<String>) -> LlmLowering {
        LlmLowering {
            client,
            model,
            cache,
            fallbacks: Cell::new(0),
            requests: Cell::new(0),
            errors: RefCell::new(Vec::new()),
        }
    }

    /// The N3 form of `identifier`: the model's validated answer, else the deterministic rule.
    pub fn lower(&self, identifier: &str) -> String {
        let prompt = prompt(identifier);
        let key = JsonlCache::<String>::key(&[&self.model, &prompt]);
        let answer = match self.cache.get(&key) {
            Some(cached) => cached,
            None => {
                self.requests.set(self.requests.get() + 1);
                let request = ChatRequest {
                    model: self.model.clone(),
                    messages: vec![Message::user(prompt)],
                    temperature: Some(0.0),
                    seed: Some(42),
                    max_tokens: Some(24),
                };
                match self.client.chat(&request) {
                    Ok(reply) => {
                        if let Err(e) = self.cache.put(vec![(key, reply.content.clone())]) {
                            self.errors.borrow_mut().push(e);
                        }
                        reply.content
                    }
                    Err(e) => {
                        self.errors
                            .borrow_mut()
                            .push(format!("{identifier}: {}", e.message));
                        return ident::lower(identifier);
                    }
                }
            }
        };
        parse_answer(&answer, identifier).unwrap_or_else(|| {
            self.fallbacks.set(self.fallbacks.get() + 1);
            ident::lower(identifier)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_validated() {
        assert_eq!(
            parse_answer("Person -> Prsn\nmore", "person").as_deref(),
            Some("Prsn")
        );
        assert_eq!(parse_answer("`P_ID`", "person_id").as_deref(), Some("P_ID"));
        assert_eq!(parse_answer("Sure! Here it is: nm", "name"), None);
        assert_eq!(parse_answer("title", "title"), None);
        assert_eq!(parse_answer("Ord", "order_no"), Some("Ord".into()));
        assert_eq!(parse_answer("or", "order_no"), None);
        assert!(prompt("atom").ends_with("shorter:\natom ->"));
    }
}
