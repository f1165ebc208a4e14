//! `--embedder DIR`: the in-process sentence model (crates/sqlgate-embedder), in a build with
//! the cargo feature `embedder`; without it the flag is refused, saying how to get it.

use std::path::Path;

use sqlgate::Error;
use sqlgate_eval::metrics::sqlmorph::Embedder;

/// The sentence-transformers model in `dir`; a folder it cannot use is an input error naming
/// the file at fault.
#[cfg(feature = "embedder")]
pub fn open(dir: &Path) -> Result<Box<dyn Embedder + Send>, Error> {
    sqlgate_embedder::SentenceModel::open(dir)
        .map(|model| Box::new(model) as Box<dyn Embedder + Send>)
        .map_err(|e| sqlgate_eval::error::InputError::file(&e.file, e.problem).into())
}

/// Refused: this build has no in-process model.
#[cfg(not(feature = "embedder"))]
pub fn open(dir: &Path) -> Result<Box<dyn Embedder + Send>, Error> {
    Err(Error::Usage(format!(
        "--embedder {}: this sqlgate was built without the in-process sentence model; \
         build it with `--features embedder` (the release binaries have it)",
        dir.display()
    )))
}
