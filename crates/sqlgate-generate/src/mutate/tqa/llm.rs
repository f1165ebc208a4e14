//! TQA's optional model calls, through the shared OpenAI-compatible client at temperature 0 with
//! seed 42, every answer cached and validated; an unusable answer falls back to the
//! deterministic rule, and a failed request stops the run instead (fail closed).
//! - Lowering identifiers (SQLMorph §V): the paper's few-shot prompt; one identifier, same
//!   initial, shorter, not a keyword.
//! - Rewriting a question or evidence under a rename map (SQLMorph §V): the paper's JSON prompt;
//!   every value kept.
//! - Hiding a linker table's mentions by back-translation through French or by contextual
//!   replacement (Riahi 2025 thesis, prompts B.2 and B.3): one line, every mention and segment
//!   gone, every value kept.

use std::cell::{Cell, RefCell};

use super::ident;
use super::linker::{Mention, Segment};
use crate::mutate::rewrite_check::{self, Refusal, Request};
use sqlgate_eval::error::{AskError, ServiceError};
use sqlgate_llm::cache::JsonlCache;
use sqlgate_llm::{ChatRequest, Client, Message};

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

/// The paper's few-shot prompt asking to lower `identifier` to N3.
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

/// The question of the NL prompt's example, and its rewrite: an answer that repeats either is
/// the prompt's example, not a rewrite.
const EXAMPLE_QUESTIONS: [&str; 2] = [
    "How many reviews does each restaurant have?",
    "How many rvws does each rest have?",
];

/// The paper's NL prompt (SQLMorph §V): a mapping block, the question and evidence, and a JSON
/// answer `{updated_question, updated_evidence}`; values are kept.
pub fn question_prompt(mapping: &str, question: &str, evidence: &str) -> String {
    let [example, rewritten] = EXAMPLE_QUESTIONS;
    format!(
        "Rewrite the question and evidence so that they use the new schema names. Replace only \
mentions of schema elements; keep every value, number and quoted text unchanged.\n\n\
Example:\nTable restaurant -> rest:\n  reviews -> rvws\nQuestion: {example}\n\
Evidence: \nAnswer: {{\"updated_question\": \"{rewritten}\", \"updated_evidence\": \"\"}}\n\n\
{mapping}\nQuestion: {question}\nEvidence: {evidence}\nAnswer as JSON only:"
    )
}

/// What a question rewrite is checked against: the seed's texts and gold, and whether the
/// deterministic rewrite changed the question (an unchanged answer is then no rewrite).
pub struct QuestionInput<'a> {
    /// The seed's question.
    pub question: &'a str,
    /// The seed's evidence (empty without one).
    pub evidence: &'a str,
    /// The seed's gold query.
    pub sql: &'a str,
    /// Whether the rename map changes the question.
    pub change_asked: bool,
    /// WordNet: a synonym then keeps a clause's mention.
    pub wordnet: Option<&'a super::wordnet::WordNet>,
}

/// The rewritten question and evidence of an answer, or why it is refused: JSON with a
/// non-empty question that passes the [`rewrite_check`] (not the prompt's example, changed when
/// the renames change it, every value, number and sentence kept, no repeated or dangling word);
/// the evidence keeps its values.
pub fn parse_question_answer(
    answer: &str,
    input: &QuestionInput<'_>,
) -> Result<(String, String), Refusal> {
    let unreadable = || Refusal {
        why: "no JSON answer with an updated_question",
        detail: String::new(),
    };
    let start = answer.find('{').ok_or_else(unreadable)?;
    let end = answer.rfind('}').ok_or_else(unreadable)?;
    let value: serde_json::Value = answer
        .get(start..=end)
        .and_then(|json| serde_json::from_str(json).ok())
        .ok_or_else(unreadable)?;
    let new_question = value
        .get("updated_question")
        .and_then(|v| v.as_str())
        .map(|q| q.trim().to_string())
        .filter(|q| !q.is_empty())
        .ok_or_else(unreadable)?;
    let new_evidence = value
        .get("updated_evidence")
        .and_then(|v| v.as_str())
        .unwrap_or(input.evidence)
        .trim()
        .to_string();
    let examples = EXAMPLE_QUESTIONS.map(String::from);
    let question_check = Request {
        original: input.question,
        sql: Some(input.sql),
        examples: &examples,
        change_asked: input.change_asked,
        wordnet: input.wordnet,
        ..Default::default()
    };
    let evidence_check = Request {
        original: input.evidence,
        ..Default::default()
    };
    if let Some(refusal) = rewrite_check::refusal(&new_question, &question_check)
        .or_else(|| rewrite_check::refusal(&new_evidence, &evidence_check))
    {
        return Err(refusal);
    }
    Ok((new_question, new_evidence))
}

/// How a model hides the linker table's mentions (thesis §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hiding {
    /// Translate to French, swap each mention for a French synonym, translate back (B.2).
    BackTranslation,
    /// Mask each mention and predict a replacement from its context (B.3).
    Contextual,
}

/// What a hiding prompt is about: one field (question or evidence) of one seed.
pub struct HidingInput<'a> {
    /// `question` or `evidence`.
    pub field: &'a str,
    /// The field's text.
    pub text: &'a str,
    /// The seed's database.
    pub db: &'a str,
    /// The seed's gold query.
    pub sql: &'a str,
    /// The linker table.
    pub table: &'a str,
    /// The linker table's segments and, for each, the mentions in this field.
    pub segments: &'a [Segment],
    /// The mentions in this field.
    pub mentions: &'a [Mention],
    /// For the evidence: the question as already rewritten.
    pub new_question: Option<&'a str>,
}

/// The hiding prompt, in the shape of the thesis's B.2/B.3: goal, numbered rules, inputs, and
/// the answer's form `New <field>: ...`.
pub fn hiding_prompt(hiding: Hiding, input: &HidingInput<'_>) -> String {
    let goal = match hiding {
        Hiding::BackTranslation => format!(
            "1. Translate the {field} to French.\n\
             2. In the French text, replace each matched token with a French synonym that keeps \
             the meaning and will not translate back to the same English word.\n\
             3. Translate the result back to English.",
            field = input.field
        ),
        Hiding::Contextual => format!(
            "1. Mask each matched token at its position (only that exact token, never a \
             phrase).\n\
             2. Like a masked language model (BERT, T5), predict from the surrounding words a \
             replacement that is grammatical, keeps the meaning, and is not the original.\n\
             3. Write the {field} with every masked token replaced.",
            field = input.field
        ),
    };
    let components: Vec<serde_json::Value> = input
        .segments
        .iter()
        .enumerate()
        .map(|(index, segment)| {
            let tokens: Vec<serde_json::Value> = input
                .mentions
                .iter()
                .filter(|m| m.segment == index)
                .map(|m| serde_json::json!({"token": m.token, "position": m.position}))
                .collect();
            serde_json::json!({"segment": segment.text, "is_abbreviation": segment.is_abbreviation,
                "matched_tokens": tokens})
        })
        .collect();
    let evidence_rule = if input.field == "evidence" {
        "\n- Do not change the values or column names that the SQL uses."
    } else {
        ""
    };
    let new_question = input
        .new_question
        .map(|q| format!("New Question: {q}\n"))
        .unwrap_or_default();
    let label = capitalized(input.field);
    format!(
        "You rewrite a {field} of a text-to-SQL benchmark so that its words no longer point to \
         the database table `{table}`.\n\n\
         Goal:\n{goal}\n\n\
         Rules:\n\
         - Never use a word that appears in a component's segment.\n\
         - Never reuse a matched token, or a word containing it.\n\
         - Keep the structure and the meaning, and every number and quoted value.{evidence_rule}\n\
         - No trivial changes (a plural, an added adjective).\n\
         - No French, no intermediate steps, no quotes or markdown: one line, no commentary.\n\n\
         Database: {db}\nSQL: {sql}\nTable: {table}\nComponents: {components}\n{new_question}\
         {label}: {text}\n\n\
         Answer as:\nNew {label}: ...",
        field = input.field,
        table = input.table,
        db = input.db,
        sql = input.sql,
        components = serde_json::Value::from(components),
        text = input.text,
    )
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The rewritten text of a hiding answer, or why it is unusable: the `New <field>:` line (or
/// a lone line), changed, of a sane length, with every mention and segment gone (the hiding
/// score is 1) and every value kept.
pub fn parse_hiding_answer(
    answer: &str,
    input: &HidingInput<'_>,
) -> Result<String, UnusableAnswer> {
    let prefix = format!("new {}:", input.field);
    let lines: Vec<&str> = answer
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = lines
        .iter()
        .find_map(|l| {
            let at = l.to_lowercase().find(&prefix)?;
            l.get(at + prefix.len()..)
        })
        .or(match lines.as_slice() {
            [only] => Some(*only),
            _ => None,
        })
        .ok_or_else(|| UnusableAnswer::NoLine(capitalized(input.field)))?;
    let text = line
        .trim()
        .trim_matches(|c| matches!(c, '"' | '`' | '*' | '\''))
        .trim()
        .to_string();
    let chars = text.chars().count();
    let source_chars = input.text.chars().count();
    if text.is_empty() {
        return Err(UnusableAnswer::Empty);
    }
    // The linker table's mentions are to go: a clause said only by them need not stay.
    let hidden: Vec<String> = input
        .mentions
        .iter()
        .map(|m| m.token.clone())
        .chain(input.segments.iter().map(|s| s.text.clone()))
        .collect();
    let check = Request {
        original: input.text,
        sql: Some(input.sql),
        change_asked: true,
        may_drop: &hidden,
        ..Default::default()
    };
    if let Some(refusal) = rewrite_check::refusal(&text, &check) {
        return Err(UnusableAnswer::Refused(refusal));
    }
    if chars > 3 * source_chars + 20 || 3 * chars < source_chars {
        return Err(UnusableAnswer::Length {
            chars,
            source_chars,
        });
    }
    if !super::linker::hidden(&text, input.mentions, input.segments) {
        return Err(UnusableAnswer::StillThere);
    }
    Ok(text)
}

/// Why the model's rewrite is not used ([`TqaLlm::rewrite_question`], [`TqaLlm::hide`]): the
/// caller keeps the deterministic rewrite and reports the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnusableAnswer {
    /// No answer: the request failed (kept for [`TqaLlm::take_failure`]).
    #[error("the request failed")]
    RequestFailed,
    /// No `New <Field>:` line, nor a lone line.
    #[error("no `New {0}:` line")]
    NoLine(String),
    /// The rewritten text is empty.
    #[error("empty")]
    Empty,
    /// The [`rewrite_check`] refuses it.
    #[error("{0}")]
    Refused(Refusal),
    /// Far longer or shorter than the text it rewrites.
    #[error("{chars} characters for a {source_chars}-character text")]
    Length {
        /// The rewrite's characters.
        chars: usize,
        /// The original text's characters.
        source_chars: usize,
    },
    /// A mention of the linker table, or a segment of its name, is left.
    #[error("a mention or a segment of the table is still there")]
    StillThere,
}

/// The chat model TQA asks to lower identifiers and rewrite texts, answers cached.
pub struct TqaLlm {
    /// The endpoint's client.
    pub client: Client,
    /// The chat model to ask.
    pub model: String,
    /// Answers by prompt, so that a rerun asks nothing.
    pub cache: JsonlCache<String>,
    /// Answers that were not usable (the deterministic rule was used instead).
    pub fallbacks: Cell<usize>,
    /// Requests sent (cache misses).
    pub requests: Cell<usize>,
    /// The first request that failed, or answer that could not be cached: the run stops on it.
    failure: RefCell<Option<AskError>>,
}

impl TqaLlm {
    /// A model with no request sent yet.
    pub fn new(client: Client, model: String, cache: JsonlCache<String>) -> TqaLlm {
        TqaLlm {
            client,
            model,
            cache,
            fallbacks: Cell::new(0),
            requests: Cell::new(0),
            failure: RefCell::new(None),
        }
    }

    /// The model's rewrite of the seed's question and evidence under `mapping`, validated
    /// ([`parse_question_answer`]); `Err` says why it is refused (the caller keeps the
    /// deterministic rewrite), or that the request failed (recorded in `errors`).
    pub fn rewrite_question(
        &self,
        mapping: &str,
        input: &QuestionInput<'_>,
    ) -> Result<(String, String), UnusableAnswer> {
        let prompt = question_prompt(mapping, input.question, input.evidence);
        let answer = self
            .ask(prompt, 256, input.question)
            .ok_or(UnusableAnswer::RequestFailed)?;
        parse_question_answer(&answer, input).map_err(|refusal| {
            self.fallbacks.set(self.fallbacks.get() + 1);
            UnusableAnswer::Refused(refusal)
        })
    }

    /// The model's rewrite of one field with the linker table's mentions hidden, validated
    /// ([`parse_hiding_answer`]); `Err` says why the answer is unusable (the caller keeps the
    /// deterministic rewrite), or that the request failed (recorded in `errors`).
    pub fn hide(&self, hiding: Hiding, input: &HidingInput<'_>) -> Result<String, UnusableAnswer> {
        let answer = self
            .ask(hiding_prompt(hiding, input), 256, input.text)
            .ok_or(UnusableAnswer::RequestFailed)?;
        parse_hiding_answer(&answer, input).inspect_err(|_| {
            self.fallbacks.set(self.fallbacks.get() + 1);
        })
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
                    self.fail(e.into());
                }
                Some(reply.content)
            }
            Err(e) => {
                self.fail(ServiceError(format!("{what}: {}", e.message)).into());
                None
            }
        }
    }

    fn fail(&self, error: AskError) {
        self.failure.borrow_mut().get_or_insert(error);
    }

    /// The first failure since the last call, if any: the caller stops on it.
    pub fn take_failure(&self) -> Option<AskError> {
        self.failure.borrow_mut().take()
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
        let q = "Which books cost 30 or more, titled 'Dune'? Show their price.";
        let input = QuestionInput {
            question: q,
            evidence: "",
            sql: "SELECT price FROM books WHERE cost >= 30 AND title = 'Dune'",
            change_asked: true,
            wordnet: None,
        };
        let answer = |question: &str| {
            format!("Sure: {{\"updated_question\": \"{question}\", \"updated_evidence\": \"\"}}")
        };
        let good = "Which bks cost 30 or more, titled 'Dune'? Show their prc.";
        assert_eq!(
            parse_question_answer(&answer(good), &input).map(|(q, _)| q),
            Ok(good.to_string())
        );
        let refused = [
            ("Which bks cost more? Show their prc.", "a value or number"),
            (
                "How many reviews does each restaurant have?",
                "the prompt's example",
            ),
            ("How many rvws does each rest have?", "the prompt's example"),
            (q, "unchanged"),
            (
                "Which books cost 30 or more, titled 'Dune'?",
                "a sentence of the original dropped",
            ),
        ];
        for (question, why) in refused {
            let refusal = parse_question_answer(&answer(question), &input).unwrap_err();
            assert!(
                refusal.to_string().starts_with(why),
                "{question}: {refusal}"
            );
        }
        let unchanged_allowed = QuestionInput {
            change_asked: false,
            ..input
        };
        assert!(parse_question_answer(&answer(q), &unchanged_allowed).is_ok());
        assert_eq!(
            parse_question_answer("no json here", &unchanged_allowed)
                .unwrap_err()
                .why,
            "no JSON answer with an updated_question"
        );
    }

    #[test]
    fn hiding_answers_must_hide_every_mention_and_keep_values() {
        let text = "How many order lines have a quantity above 3?";
        let segments = [
            Segment {
                text: "order".into(),
                lemma: "order".into(),
                is_abbreviation: false,
            },
            Segment {
                text: "items".into(),
                lemma: "item".into(),
                is_abbreviation: false,
            },
        ];
        let mentions = [Mention {
            token: "order".into(),
            lemma: "order".into(),
            position: 9,
            len: 5,
            segment: 0,
        }];
        let input = HidingInput {
            field: "question",
            text,
            db: "bookshop",
            sql: "SELECT count(*) FROM order_items WHERE quantity > 3",
            table: "order_items",
            segments: &segments,
            mentions: &mentions,
            new_question: None,
        };
        let prompt = hiding_prompt(Hiding::Contextual, &input);
        assert!(prompt.contains("masked language model"), "{prompt}");
        assert!(prompt.contains(r#""matched_tokens":[{"position":9,"token":"order"}]"#));
        assert!(prompt.ends_with("New Question: ..."), "{prompt}");

        let good = "Here you go:\nNew Question: How many purchase lines have a quantity above 3?";
        assert_eq!(
            parse_hiding_answer(good, &input).as_deref(),
            Ok("How many purchase lines have a quantity above 3?")
        );
        let lone = "\"How many purchase lines have a quantity above 3?\"";
        assert!(parse_hiding_answer(lone, &input).is_ok());
        let rejected = [
            (
                "New Question: How many order lines have a quantity above 3?",
                "unchanged",
            ),
            (
                "New Question: How many order rows have a quantity above 3?",
                "still there",
            ),
            (
                "New Question: How many purchase items have a quantity above 3?",
                "still there",
            ),
            (
                "New Question: How many purchase lines have a big quantity?",
                "lost",
            ),
            ("Sure!\nLet me think about it.", "no `New Question:` line"),
            ("New Question: ", "empty"),
        ];
        for (answer, why) in rejected {
            let error = parse_hiding_answer(answer, &input).unwrap_err().to_string();
            assert!(error.contains(why), "{answer}: {error}");
        }
    }
}
