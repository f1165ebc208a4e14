//! A `System` implemented outside the crate, run through `sqlgate::harness!` under `cargo test`.
//!
//! It answers like a chatty model: every gold query comes wrapped in prose and a markdown fence,
//! and infeasible questions are declined. Each case passes only if the pipeline cleans the reply
//! before scoring it, and the gates (EX and ETM of 1) only if every case does.

use std::collections::HashMap;
use std::path::Path;

use sqlgate::{Reply, Request, System, SystemError};
use sqlgate_eval::loaders::{self, LoadOptions};

/// Answers the demo's questions with their gold SQL, as a model would format it.
struct ChattyOracle {
    gold: HashMap<String, Option<String>>,
}

impl ChattyOracle {
    fn new() -> ChattyOracle {
        let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("benchmarks/demo/suite.toml");
        let demo = loaders::load(&suite, &LoadOptions::on(sqlgate_engine_sqlite::files()))
            .expect("the demo loads");
        let gold = demo
            .cases
            .into_iter()
            .map(|case| {
                let answer = case.feasible.then(|| case.gold[0].clone());
                (case.question, answer)
            })
            .collect();
        ChattyOracle { gold }
    }
}

impl System for ChattyOracle {
    fn fingerprint(&self) -> String {
        "chatty-oracle-v1".to_string()
    }

    fn answer(&self, request: &Request) -> Result<Reply, SystemError> {
        match self.gold.get(&request.question) {
            Some(Some(sql)) => Ok(Reply::sql(format!(
                "Sure! Here is the query for `{}`:\n\n```sql\n{sql};\n```\n\nIt reads the {} database.",
                request.id, request.db
            ))),
            Some(None) => Ok(Reply::abstain()),
            None => Err(SystemError::garbage(format!(
                "no such question: {}",
                request.question
            ))),
        }
    }
}

sqlgate::harness!("tests/custom_system/sqlgate.toml", ChattyOracle::new());
