//! Scratch copies lent to state cases: each is reset and kept for the next case on the same
//! database, so a run copies a database once per worker, not once per case.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sqlgate_engine::{Backend, ExecError, Scratch};

/// The idle scratch copies of a run, by database.
#[derive(Default)]
pub struct ScratchPool {
    idle: Mutex<HashMap<PathBuf, Vec<Box<dyn Scratch>>>>,
}

impl ScratchPool {
    /// An idle copy of `db`, else a new one from `backend`.
    pub fn lease(&self, backend: &dyn Backend, db: &Path) -> Result<ScratchLease<'_>, ExecError> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get_mut(db)
            .and_then(Vec::pop);
        let scratch = match idle {
            Some(scratch) => scratch,
            None => backend.scratch(db)?,
        };
        Ok(ScratchLease {
            scratch: Some(scratch),
            home: Some((self, db.to_path_buf())),
        })
    }
}

/// A scratch copy in use; when dropped it is reset and goes back to its pool, or, when the
/// reset fails, is dropped with its changes.
pub struct ScratchLease<'a> {
    scratch: Option<Box<dyn Scratch>>,
    home: Option<(&'a ScratchPool, PathBuf)>,
}

impl ScratchLease<'_> {
    /// A copy that belongs to no pool: dropped after use.
    pub fn owned(scratch: Box<dyn Scratch>) -> ScratchLease<'static> {
        ScratchLease {
            scratch: Some(scratch),
            home: None,
        }
    }
}

impl Deref for ScratchLease<'_> {
    type Target = dyn Scratch;

    fn deref(&self) -> &(dyn Scratch + 'static) {
        self.scratch
            .as_deref()
            .expect("a lease holds its copy until dropped")
    }
}

impl DerefMut for ScratchLease<'_> {
    fn deref_mut(&mut self) -> &mut (dyn Scratch + 'static) {
        self.scratch
            .as_deref_mut()
            .expect("a lease holds its copy until dropped")
    }
}

impl Drop for ScratchLease<'_> {
    fn drop(&mut self) {
        let (Some(mut scratch), Some((pool, db))) = (self.scratch.take(), self.home.take()) else {
            return;
        };
        if scratch.reset().is_ok() {
            pool.idle
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .entry(db)
                .or_default()
                .push(scratch);
        }
    }
}
