//! Scratch copies: where a state case's statements run (DML, DDL, several statements), on a
//! private copy of its database that no one else reads and whose changes are never kept.

use std::collections::BTreeSet;

use crate::{ExecError, Execution, Limits};

/// A private, writable copy of one database, opened by [`crate::Backend::scratch`]. The
/// sandbox's guards stay (no ATTACH, no file access, no extension loading, the time and memory
/// bounds); what it adds is writing to the copy's own tables, indexes, views and triggers.
/// [`Scratch::reset`] undoes every change, so one copy serves many cases.
pub trait Scratch: Send {
    /// Runs one statement that may change the copy, within `limits`; returns how many rows
    /// it inserted, updated or deleted.
    fn apply(&mut self, sql: &str, limits: &Limits) -> Result<u64, ExecError>;

    /// Runs one query on the copy as it is now, within `limits`.
    fn query(&mut self, sql: &str, limits: &Limits) -> Execution;

    /// The tables and views that the statements applied since the last reset, or the last
    /// call, may have changed (rows or schema), by name: a state case compares these between
    /// two copies. An error means they cannot be known, and the state cannot be judged.
    fn take_touched(&mut self) -> Result<BTreeSet<String>, ExecError>;

    /// Undoes every change since the copy was opened or last reset. An error means the copy
    /// can no longer be trusted to be the original's content, and is dropped.
    fn reset(&mut self) -> Result<(), ExecError>;
}
