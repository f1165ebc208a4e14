//! Systems under test: anything that turns a question into SQL, or abstains.
//!
//! A system is asked through [`System::answer`]; its answers are recorded in a cassette keyed by
//! the system's fingerprint and the case's content, so CI replays them without calling it.

pub mod abstention;
pub mod answer;
pub mod cassette;
pub mod command;
mod from_config;
pub mod http;
pub mod openai;
pub mod replay;

pub use from_config::{build, SetupError};

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sqlgate_eval::loaders::{Answer, AnswerDocument, Prediction, SourceRef};

pub use sqlgate_llm::{ServerState, SystemError, SystemErrorKind, Usage};

/// What a system is asked: the JSON document sent to `command` and `http` systems.
///
/// Fields may be added (a new one is optional in the JSON document), so build one with
/// [`Request::question`] and the `with_` methods.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct Request {
    /// The case's id, unique within its suite.
    pub id: String,
    /// The database's name.
    pub db: String,
    /// The database file (on a PostgreSQL server, the database's name), for systems that open it.
    pub db_path: PathBuf,
    /// The natural-language question.
    pub question: String,
    /// Extra knowledge given with the question (BIRD's `evidence`), when the benchmark has it.
    pub evidence: Option<String>,
    /// The database schema as `CREATE TABLE` statements.
    pub schema: String,
    /// Which of a case's sampled answers this is (0-based), when the system is asked each
    /// question `samples` times; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<u32>,
}

/// A system's answer. Read back (from a cassette or a run record) strictly: an unknown field is
/// an error, and `sql` must be there, as `null` for an abstention.
///
/// Fields may be added, so build one with [`Reply::sql`] or [`Reply::abstain`] and the `with_`
/// methods.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Reply {
    /// The SQL to execute; `None` when it abstained. Cleaned of markdown and prose by
    /// [`Reply::clean`] before it is scored.
    #[serde(deserialize_with = "present")]
    pub sql: Option<String>,
    /// Markdown fences or prose were stripped from the raw answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cleaned: bool,
    /// Further sampled answers, for voting and Pass@K; `None` is an abstention, as in `sql`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Option<String>>,
    /// What a retriever returned (tables, columns, examples), for diagnostics.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retrieved: Vec<String>,
    /// The reply was cut short by the system's token limit (a chat `finish_reason` of
    /// `length`): its SQL may be incomplete.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// The tokens the system's server counted for this answer, when it says. It is the
    /// answer's cost, not part of what is scored: the answerer moves it to the answer's
    /// [`AnswerCost`](answer::AnswerCost) before scoring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The answer cleaned as statements, every one kept, which a state case runs whole: set by
    /// [`Reply::clean`] from the raw answer, never stored.
    #[serde(skip)]
    pub script: Option<String>,
}

/// Reads an `Option` that must be present. serde reads a missing `Option` field as `None`, so
/// `{"sqI": "SELECT ..."}` would replay as an abstention; with `deserialize_with`, a missing
/// field is an error instead.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Option::deserialize(deserializer)
}

impl Reply {
    /// An answer as the system gave it: markdown fences and prose are stripped by the pipeline
    /// ([`Reply::clean`]), so a model's text can be passed on as it came.
    pub fn sql(text: impl Into<String>) -> Reply {
        Reply {
            sql: Some(text.into()),
            cleaned: false,
            samples: Vec::new(),
            retrieved: Vec::new(),
            truncated: false,
            usage: None,
            script: None,
        }
    }

    /// The reply an answer document gives (a system's output, a prediction file's line), its
    /// SQL not yet cleaned.
    pub fn from_document(document: AnswerDocument) -> Reply {
        let reply = match document.answer {
            Answer::Sql(sql) => Reply::sql(sql),
            Answer::Abstain => Reply::abstain(),
        };
        Reply {
            samples: document.samples.into_iter().map(Answer::into_sql).collect(),
            retrieved: document.retrieved,
            usage: document.usage,
            ..reply
        }
    }

    /// The reply a loaded prediction gives (already cleaned, as the loaders clean).
    pub fn from_prediction(prediction: Prediction) -> Reply {
        let reply = match prediction.answer {
            Answer::Sql(sql) => Reply::sql(sql),
            Answer::Abstain => Reply::abstain(),
        };
        Reply {
            cleaned: prediction.cleaned,
            script: prediction.script,
            samples: prediction
                .samples
                .into_iter()
                .map(Answer::into_sql)
                .collect(),
            retrieved: prediction.retrieved,
            usage: prediction.usage,
            ..reply
        }
    }

    /// The prediction a cleaned reply is scored as, for the case read from `source`.
    pub fn to_prediction(&self, source: SourceRef) -> Prediction {
        Prediction {
            answer: self.sql.clone().map_or(Answer::Abstain, Answer::Sql),
            cleaned: self.cleaned,
            source,
            notes: BTreeMap::new(),
            samples: self
                .samples
                .iter()
                .map(|sample| sample.clone().map_or(Answer::Abstain, Answer::Sql))
                .collect(),
            retrieved: self.retrieved.clone(),
            usage: self.usage,
            script: self.script.clone(),
        }
    }

    /// The system declines to answer.
    pub fn abstain() -> Reply {
        Reply {
            sql: None,
            ..Reply::sql("")
        }
    }

    /// Adds further sampled answers, for voting and Pass@K: `None` for a sample that abstained.
    pub fn with_samples(mut self, samples: Vec<Option<String>>) -> Reply {
        self.samples = samples;
        self
    }

    /// Adds what a retriever returned (tables, columns, examples): the schema-linking metrics
    /// score it against the gold query's.
    pub fn with_retrieved(mut self, retrieved: Vec<String>) -> Reply {
        self.retrieved = retrieved;
        self
    }

    /// Adds the tokens the system's server counted for this answer.
    pub fn with_usage(mut self, usage: Usage) -> Reply {
        self.usage = Some(usage);
        self
    }

    /// Marks the reply as cut short by the system's token limit, so that reports count the
    /// truncation whatever the reply is judged.
    pub fn mark_truncated(mut self) -> Reply {
        self.truncated = true;
        self
    }

    /// The reply with its SQL and samples cleaned of markdown fences and prose; `cleaned` says
    /// whether anything was stripped. Every reply goes through it before it is scored.
    pub fn clean(self) -> Reply {
        let cleaned = self
            .sql
            .as_deref()
            .map(sqlgate_eval::model_output::clean_sql);
        Reply {
            cleaned: self.cleaned || cleaned.as_ref().is_some_and(|c| c.cleaned),
            sql: cleaned.map(|c| c.sql),
            samples: self
                .samples
                .iter()
                .map(|sample| {
                    let sql = sample.as_deref()?;
                    Some(sqlgate_eval::model_output::clean_sql(sql).sql)
                })
                .collect(),
            retrieved: self.retrieved,
            truncated: self.truncated,
            usage: self.usage,
            script: self.script.or_else(|| {
                self.sql
                    .as_deref()
                    .map(sqlgate_eval::model_output::clean_script)
            }),
        }
    }
}

/// A text-to-SQL system. Implement it to plug your own system into `cargo test`.
pub trait System: Send + Sync {
    /// Identifies the system's behaviour: it changes when the model, prompt or parameters change,
    /// so recorded answers of an older configuration are not replayed.
    fn fingerprint(&self) -> String;

    /// Answers one case: a query (as the model wrote it), an abstention, or why there is none.
    fn answer(&self, request: &Request) -> Result<Reply, SystemError>;

    /// Checks, once before the first question of a run, that the system can be asked (its
    /// server is up and serves what it is configured to); the error names the cause, e.g.
    /// `connection refused at 127.0.0.1:8765`, and the system is then asked nothing. There is
    /// nothing to check by default.
    fn preflight(&self) -> Result<(), String> {
        Ok(())
    }

    /// Turns a reply as the system gave it (and as the cassette keeps it) into the answer to
    /// score: an abstention, a query, or garbage. It runs after the cassette, so recorded
    /// replies keep the system's own text and a changed rule applies to them on replay.
    fn interpret(&self, reply: Reply) -> Result<Reply, SystemError> {
        Ok(reply)
    }
}

impl Request {
    /// A request for a question of your own, e.g. in a unit test of your system: case `id` on
    /// database `db` (the file `db_path`), with no evidence and an empty schema until given.
    pub fn question(
        id: impl Into<String>,
        db: impl Into<String>,
        db_path: impl Into<PathBuf>,
        question: impl Into<String>,
    ) -> Request {
        Request {
            id: id.into(),
            db: db.into(),
            db_path: db_path.into(),
            question: question.into(),
            evidence: None,
            schema: String::new(),
            sample: None,
        }
    }

    /// Adds the evidence given with the question (BIRD's hints).
    pub fn with_evidence(mut self, evidence: impl Into<String>) -> Request {
        self.evidence = Some(evidence.into());
        self
    }

    /// Marks the request as asking for sample `k` (0-based) of the case's sampled answers.
    pub fn with_sample(mut self, k: u32) -> Request {
        self.sample = Some(k);
        self
    }

    /// The case id as the cassette shows it: `q01`, or `q01#3` for its sample 3 (sample 0 is
    /// the case's own answer, recorded under the case's key whether or not it is sampled).
    pub fn label(&self) -> String {
        match self.sample {
            Some(k) if k > 0 => format!("{}#{k}", self.id),
            _ => self.id.clone(),
        }
    }

    /// Adds the database's schema, as its `CREATE` statements
    /// ([`sqlgate_eval::exec::schema::schema_text`] reads them).
    pub fn with_schema(mut self, schema: impl Into<String>) -> Request {
        self.schema = schema.into();
        self
    }

    /// The request for a case whose database is the file `db_path`, with `schema` its DDL.
    pub fn new(case: &sqlgate_eval::loaders::Case, db_path: PathBuf, schema: String) -> Request {
        Request {
            id: case.id.clone(),
            db: case.db.clone(),
            db_path,
            question: case.question.clone(),
            evidence: case.evidence.clone(),
            schema,
            sample: None,
        }
    }
}
