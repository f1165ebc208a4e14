//! The `replay` system: answers from a predictions file, in any format the loaders accept.

use std::collections::HashMap;
use std::path::Path;

use super::{Reply, Request, System, SystemError, SystemErrorKind};
use sqlgate_eval::error::InputError;
use sqlgate_eval::loaders::{load_prediction_slots, Benchmark, PredFormat};
use sqlgate_eval::store::Hasher;

/// Replays the predictions of a file, aligned with a benchmark's cases.
pub struct ReplaySystem {
    replies: HashMap<String, Reply>,
    fingerprint: String,
}

impl ReplaySystem {
    /// Loads the predictions (`format` detected when `None`) for `bench`'s cases.
    pub fn load(
        path: &Path,
        format: Option<PredFormat>,
        bench: &Benchmark,
    ) -> Result<ReplaySystem, InputError> {
        let contents =
            std::fs::read(path).map_err(|e| InputError::file(path, format!("cannot read: {e}")))?;
        // A case the file does not answer fails as not recorded when it is asked for.
        let predictions = load_prediction_slots(path, format, bench)?;
        let replies = bench
            .cases
            .iter()
            .zip(predictions)
            .filter_map(|(case, prediction)| Some((case, prediction?)))
            .map(|(case, prediction)| (case.id.clone(), Reply::from_prediction(prediction)))
            .collect();
        let mut hash = Hasher::new();
        hash.field("replay").field(contents);
        Ok(ReplaySystem {
            replies,
            fingerprint: format!("replay:{}", hash.hex()),
        })
    }
}

impl System for ReplaySystem {
    fn fingerprint(&self) -> String {
        self.fingerprint.clone()
    }

    /// The case's answer; sample k > 0 of a sampled run is the file's k-th further sample
    /// (JSONL `samples`), so a file written with N - 1 further samples replays N samples.
    fn answer(&self, request: &Request) -> Result<Reply, SystemError> {
        let not_there = |what: String| {
            SystemError::new(
                SystemErrorKind::NotRecorded,
                format!(
                    "the predictions file has no {what} for case `{}`",
                    request.id
                ),
            )
        };
        let reply = self
            .replies
            .get(&request.id)
            .ok_or_else(|| not_there("answer".to_string()))?;
        match request.sample.filter(|&k| k > 0) {
            None => Ok(reply.clone()),
            Some(k) => reply
                .samples
                .get(k as usize - 1)
                .map(|sample| match sample {
                    Some(sql) => Reply {
                        cleaned: false,
                        ..Reply::sql(sql.clone())
                    },
                    None => Reply::abstain(),
                })
                .ok_or_else(|| {
                    not_there(format!(
                        "sample {k} (its `samples` list holds {})",
                        reply.samples.len()
                    ))
                }),
        }
    }
}
