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

/// The paper's NL prompt (SQLMorph §V): a mapping block, the question and evidence, and a JSON
/// answer `{updated_question, updated_evidence}`; values are kept.
pub fn question_prompt(mapping: &str, question: &str, evidence: &str) -> String {
    format!(
        "Rewrite the question and evidence so that they use the new schema names. Replace only \
mentions of schema elements; keep every value, number and quoted text unchanged.\n\n\
Example:\nTable restaurant -> rest:\n  reviews -> rvws\nQuestion: How many reviews does each restaurant have?\n\
Evidence: \nAnswer: {{\"updated_question\": \"How many rvws does each rest have?\", \"updated_evidence\": \"\"}}\n\n\
{mapping}\nQuestion: {question}\nEvidence: {evidence}\nAnswer as JSON only:"
    )
}

/// The rewritten question and evidence of an answer, when it is JSON with a non-empty
/// question and keeps every quoted value and number of the original.
pub fn parse_question_answer(
    answer: &str,
    question: &str,
    evidence: &str,
) -> Option<(String, String)> {
    let start = answer.find('{')?;
    let end = answer.rfind('}')?;
    let value: serde_json::Value = serde_json::from_str(answer.get(start..=end)?).ok()?;
    let new_question = value.get("updated_question")?.as_str()?.trim().to_string();
    let new_evidence = value
        .get("updated_evidence")
        .and_then(|v| v.as_str())
        .unwrap_or(evidence)
        .trim()
        .to_string();
    let kept = |old: &str, new: &str| {
        super::text::tokenize(old)
            .iter()
            .filter(|t| t.quoted || t.text.chars().all(|c| c.is_ascii_digit()))
            .all(|t| new.contains(&t.text))
    };
    (!new_question.is_empty() && kept(question, &new_question) && kept(evidence, &new_evidence))
        .then_some((new_question, new_evidence))
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

    /// The model's rewrite of `question` and `evidence` under `mapping`, validated; `None`
    /// (the caller keeps the deterministic rewrite) when unusable or when the request failed
    /// (recorded in `errors`).
    pub fn rewrite_question(
        &self,
        mapping: &str,
        question: &str,
        evidence: &str,
    ) -> Option<(String, String)> {
        let prompt = question_prompt(mapping, question, evidence);
        let answer = self.ask(prompt, 256, question)?;
        let parsed = parse_question_answer(&answer, question, evidence);
        if parsed.is_none() {
            self.fallbacks.set(self.fallbacks.get() + 1);
        }
        parsed
    }

    /// The cached or fresh answer to `prompt`; `None` after a failed request.
    fn ask(&self, prompt: String, max_tokens: u32, what: &str) -> Option<String> {
        let key = JsonlCache::<String>::key(&[&self.model, &prompt]);
        if let Some(cached) = self.cache.get(&key) {
            return Some(cached);
        }
        self.requests.set(self.requests.get() + 1);
        let request = ChatRequest {
            model: self.model.clone(),
            messages: vec![Message::user(prompt)],
            temperature: Some(0.0),
            seed: Some(42),
            max_tokens: Some(max_tokens),
        };
        match self.client.chat(&request) {
            Ok(reply) => {
                if let Err(e) = self.cache.put(vec![(key, reply.content.clone())]) {
                    self.errors.borrow_mut().push(e);
                }
                Some(reply.content)
            }
            Err(e) => {
                self.errors
                    .borrow_mut()
                    .push(format!("{what}: {}", e.message));
                None
            }
        }
    }

    /// The N3 form of `identifier`: the model's validated answer, else the deterministic rule.
    pub fn lower(&self, identifier: &str) -> String {
        let Some(answer) = self.ask(prompt(identifier), 24, identifier) else {
            return ident::lower(identifier);
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
        let q = "Which books cost 30 or more, titled 'Dune'?";
        let good = "Sure: {\"updated_question\": \"Which bks cost 30 or more, titled 'Dune'?\", \"updated_evidence\": \"\"}";
        assert_eq!(
            parse_question_answer(good, q, "")
                .map(|(q, _)| q)
                .as_deref(),
            Some("Which bks cost 30 or more, titled 'Dune'?")
        );
        let lost_value = "{\"updated_question\": \"Which bks cost more?\"}";
        assert_eq!(parse_question_answer(lost_value, q, ""), None);
        assert_eq!(parse_question_answer("no json here", q, ""), None);
    }
}
