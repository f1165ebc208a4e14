//! Distill on a server engine (PostgreSQL, MySQL): each candidate is a scratch database on the
//! server, created, tried and dropped in turn, so a run holds a few at a time whatever
//! `--candidates` says; the kept ones are built again from their seed under the suite's names
//! (a candidate is a function of the seed and its index), tried again to check they are the
//! databases that were chosen, and listed in `<out>/<db>/databases.txt`.
//!
//! Names carry the run's id, so a new suite is built beside the one it replaces, which is
//! dropped only once the new folder is in place. Every database a run creates is dropped when
//! the run fails; a run killed outright (`kill -9`) leaves its scratch databases,
//! `<db>__c<run>_<i>`, which no suite lists.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use sqlgate_eval::exec::{Backend, ExecError};

/// Bytes of a database's name kept in the names of its generated databases: with the run's
/// id, the index and a server writer's staging suffix, within MySQL's 64 characters and
/// PostgreSQL's 63 bytes.
const PREFIX_BYTES: usize = 24;

/// The names of one run's databases on the server.
#[derive(Debug, Clone)]
pub struct Names {
    prefix: String,
    run: String,
}

impl Names {
    /// An id for one run: 8 hex digits of the time and the process.
    pub fn run_id() -> String {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let run = (nanos as u64 ^ (u64::from(std::process::id()) << 32)) & 0xffff_ffff;
        format!("{run:08x}")
    }

    /// Names for the databases generated from `db` in the run `run` ([`Names::run_id`]): `db`
    /// cut to the letters, digits and `_` a server writer accepts.
    pub fn new(db: &str, run: &str) -> Names {
        let mut prefix: String = db
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(PREFIX_BYTES)
            .collect();
        if prefix.is_empty() {
            prefix.push_str("db");
        }
        Names {
            prefix,
            run: run.to_string(),
        }
    }

    /// The scratch database of candidate `index`.
    pub fn candidate(&self, index: usize) -> PathBuf {
        PathBuf::from(format!("{}__c{}_{index}", self.prefix, self.run))
    }

    /// The `k`-th kept database (from 0).
    pub fn kept(&self, k: usize) -> PathBuf {
        PathBuf::from(format!("{}__d{}_{}", self.prefix, self.run, k + 1))
    }

    /// Whether `name` is one a run of distill gives a database generated from some database
    /// (`<prefix>__c<run>_<i>` or `<prefix>__d<run>_<k>`): the only names distill ever drops.
    pub fn is_generated(name: &str) -> bool {
        let Some((_, tail)) = name.rsplit_once("__") else {
            return false;
        };
        let Some((run, index)) = tail.get(1..).and_then(|t| t.split_once('_')) else {
            return false;
        };
        (tail.starts_with('c') || tail.starts_with('d'))
            && run.len() == 8
            && run.bytes().all(|b| b.is_ascii_hexdigit())
            && !index.is_empty()
            && index.bytes().all(|b| b.is_ascii_digit())
    }
}

/// The databases a run created on the server and has not dropped: dropped when this guard is
/// dropped, unless [`Created::keep`] said the run committed them.
pub struct Created<'a> {
    backend: &'a dyn Backend,
    names: Mutex<Vec<PathBuf>>,
}

impl<'a> Created<'a> {
    /// Nothing created yet.
    pub fn new(backend: &'a dyn Backend) -> Created<'a> {
        Created {
            backend,
            names: Mutex::default(),
        }
    }

    /// Records `name` as created, once its build finished: a build that fails drops what it
    /// made itself (the writer's staging database), and a name the server already held (the
    /// writer refuses to create it) is never this run's to drop.
    pub fn add(&self, name: &Path) {
        self.lock().push(name.to_path_buf());
    }

    /// Drops `name` now.
    pub fn remove(&self, name: &Path) -> Result<(), ExecError> {
        self.backend.remove(name)?;
        self.lock().retain(|n| n != name);
        Ok(())
    }

    /// The run committed: what remains is the suite's and stays.
    pub fn keep(self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PathBuf>> {
        self.names.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Created<'_> {
    /// Best effort: the run already failed and says why.
    fn drop(&mut self) {
        for name in self.lock().drain(..) {
            let _ = self.backend.remove(&name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_are_told_from_any_other() {
        let names = Names::new("car_dealership", &Names::run_id());
        for name in [names.candidate(0), names.candidate(199), names.kept(0)] {
            let name = name.to_string_lossy().into_owned();
            assert!(Names::is_generated(&name), "{name}");
            assert!(name.len() + sqlgate_eval::exec::STAGING_SUFFIX.len() <= 63);
        }
        for other in [
            "car_dealership",
            "car_dealership_1",
            "shop__d_1",
            "shop__dxyz12345_1",
            "shop__e0123abcd_1",
            "shop__d0123abcd_",
            "shop__d0123abcd_1x",
        ] {
            assert!(!Names::is_generated(other), "{other}");
        }
        let long = Names::new(&"é".repeat(40), "0123abcd");
        assert_eq!(long.prefix, "db");
        let long = Names::new(&"x".repeat(100), "0123abcd");
        assert_eq!(long.prefix.len(), PREFIX_BYTES);
    }
}
