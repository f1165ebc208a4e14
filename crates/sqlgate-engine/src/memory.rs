//! The process's memory budget for executing SQL: `--max-memory`, `max_memory` in
//! `sqlgate.toml`, 4 GiB by default.
//!
//! SQLite's heap limit is the only bound that can stop a query mid-sort, but the process holds
//! more than SQLite counts (measured in docs/reliability.md#memory):
//! - SQLite counts what it asks for, not the allocator's chunk headers and rounding: an
//!   in-memory sort allocates each row apart, and rows of a few bytes take up to twice what
//!   SQLite counts;
//! - glibc gives each thread its own arena, and kept a sort's small rows, once freed, in its
//!   "fast bins" without merging them: that memory stayed with the thread, out of reach of a
//!   sort growing on another thread, and piled up;
//! - results are read into Rust values, outside SQLite's heap; a result of one-byte texts
//!   takes up to 2.7 times what `--max-bytes` counts (each text is a chunk of 32 bytes, and the
//!   row list doubles as it grows).
//!
//! So queries share one pool of 3/8 of the budget, SQLite's heap and the results being read
//! together: SQLite's hard heap limit (process-wide) is the pool less what results hold, and a
//! result grows only while SQLite's heap and the other results leave room. At twice what
//! SQLite counts, the pool takes 3/4 of the budget, and the rest absorbs memory freed but not
//! yet back with the system; a pool all of one-byte texts would take it all. Fast bins are
//! off, so what a thread frees merges at once and glibc gives the top of its arena back to the
//! system as it frees; after a query that freed much memory, the allocator also gives back what
//! lies free between live chunks. (One arena for every thread would do too, but costs 10% on
//! every core: they queue on its lock.)

use std::sync::{Mutex, OnceLock};

/// An engine's own heap inside this process (SQLite's allocator): the pool bounds it with a
/// hard limit, and counts what it holds. An engine whose memory lives elsewhere (a server) or
/// is bounded per connection (DuckDB's `memory_limit`) registers none.
pub trait Heap: Sync {
    /// The bytes the engine's heap holds now.
    fn used(&self) -> u64;
    /// The most the engine's heap may hold from now on (its allocations past it fail).
    fn set_limit(&self, bytes: u64);
    /// The bytes the heap held at most since the last call, and resets that peak.
    fn take_peak(&self) -> u64;
    /// How the engine's heap is named in an out-of-memory message (`SQLite's heap`).
    fn name(&self) -> &'static str;
}

/// The one in-process heap the pool bounds, registered by its engine before it opens anything.
static HEAP: OnceLock<&'static dyn Heap> = OnceLock::new();

/// Registers the engine heap the pool bounds (once per process; a second heap is refused: the
/// pool's arithmetic holds for one).
pub fn register_heap(heap: &'static dyn Heap) {
    if HEAP.set(heap).is_ok() {
        with_pool(|pool| pool.limit_heap());
    }
}

fn heap_used() -> u64 {
    HEAP.get().map_or(0, |heap| heap.used())
}

/// A memory budget, given in MiB (`--max-memory`, `max_memory`): 64 MiB to 16 TiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "u64")]
pub struct MaxMemory {
    bytes: u64,
}

impl MaxMemory {
    /// The smallest budget, in MiB: SQLite needs some heap to open a database at all.
    pub const MIN_MIB: u64 = 64;
    /// The largest budget, in MiB (16 TiB): far past any machine, and its pool fits the signed
    /// 64-bit limit SQLite takes.
    pub const MAX_MIB: u64 = 16 << 20;
}

impl Default for MaxMemory {
    fn default() -> Self {
        MaxMemory { bytes: 4 << 30 }
    }
}

impl TryFrom<u64> for MaxMemory {
    type Error = BudgetError;

    fn try_from(mib: u64) -> Result<Self, BudgetError> {
        if (MaxMemory::MIN_MIB..=MaxMemory::MAX_MIB).contains(&mib) {
            Ok(MaxMemory { bytes: mib << 20 })
        } else {
            Err(BudgetError::OutOfRange(mib))
        }
    }
}

impl std::str::FromStr for MaxMemory {
    type Err = BudgetError;

    fn from_str(text: &str) -> Result<Self, BudgetError> {
        let mib: u64 = text
            .parse()
            .map_err(|_| BudgetError::NotMib(text.to_string()))?;
        MaxMemory::try_from(mib)
    }
}

/// Why a memory budget (`--max-memory`, `max_memory`) is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    /// Not a whole number.
    #[error("`{0}` is not a whole number of MiB")]
    NotMib(String),
    /// Outside [`MaxMemory::MIN_MIB`]..=[`MaxMemory::MAX_MIB`].
    #[error(
        "the memory budget must be between {min} and {max} MiB, not {0}",
        min = MaxMemory::MIN_MIB,
        max = MaxMemory::MAX_MIB
    )]
    OutOfRange(u64),
}

impl std::fmt::Display for MaxMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.bytes >> 20)
    }
}

/// The pool that queries share, and what results being read hold of it.
struct Pool {
    budget: MaxMemory,
    /// Bytes queries may hold: SQLite's heap and the results being read.
    bytes: u64,
    /// Bytes the results being read hold.
    results: u64,
}

/// `None` until a budget is set or the first query needs one.
static POOL: Mutex<Option<Pool>> = Mutex::new(None);

/// Sets the process's budget for every query from now on, whichever thread runs it.
pub fn set_max_memory(budget: MaxMemory) {
    with_pool(|pool| {
        pool.budget = budget;
        pool.bytes = pool_bytes(budget);
        pool.limit_heap();
    });
}

/// The bytes queries may hold together under the current budget: an engine that bounds its
/// memory per connection (DuckDB's `memory_limit`) gives each connection a share of it.
pub fn pool_bytes_now() -> u64 {
    with_pool(|pool| pool.bytes)
}

/// The bytes queries may hold under `budget`.
fn pool_bytes(budget: MaxMemory) -> u64 {
    budget.bytes / 8 * 3
}

fn with_pool<T>(f: impl FnOnce(&mut Pool) -> T) -> T {
    let mut pool = POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let pool = pool.get_or_insert_with(|| {
        let budget = MaxMemory::default();
        let pool = Pool {
            budget,
            bytes: pool_bytes(budget),
            results: 0,
        };
        pool.limit_heap();
        merge_freed_memory_at_once();
        pool
    });
    f(pool)
}

impl Pool {
    fn limit_heap(&self) {
        if let Some(heap) = HEAP.get() {
            // 0 would lift SQLite's limit: at least one byte stays bounded.
            heap.set_limit(self.bytes.saturating_sub(self.results).max(1));
        }
    }

    fn describe(&self) -> PoolSize {
        PoolSize {
            bytes: self.bytes,
            budget: self.budget,
        }
    }
}

/// The share of the budget that queries hold together, as an out-of-memory message names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSize {
    /// The pool's bytes.
    pub bytes: u64,
    /// The budget it is a share of.
    pub budget: MaxMemory,
}

impl std::fmt::Display for PoolSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the {} MiB that queries may hold together under the {} MiB memory budget \
             (--max-memory)",
            self.bytes >> 20,
            self.budget
        )
    }
}

/// A result being read has no room left in the pool ([`ResultCharge::cover`]): the query
/// stops as out of memory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "out of memory: this result ({bytes} bytes so far), SQLite's heap and the other results \
     being read would take more than {pool}"
)]
pub struct OutOfMemory {
    /// The result's bytes so far.
    pub bytes: u64,
    /// The pool it would overflow.
    pub pool: PoolSize,
}

/// What a query that its engine stopped for want of memory is told.
pub fn out_of_memory() -> String {
    let heap = HEAP.get().map_or("the engine's heap", |heap| heap.name());
    with_pool(|pool| {
        format!(
            "out of memory: {heap} and the results being read reached {}, with this \
             query and any running beside it",
            pool.describe()
        )
    })
}

/// The part of the pool that one result being read holds, grown as the result grows and given
/// back when dropped.
#[derive(Default)]
pub struct ResultCharge {
    held: u64,
}

impl ResultCharge {
    /// Covers a result of `bytes` (counted as `--max-bytes` counts them), or says why the pool
    /// has no room for it. The charge grows by an eighth more than needed, so that a growing
    /// result takes few steps.
    #[inline]
    pub fn cover(&mut self, bytes: usize) -> Result<(), OutOfMemory> {
        let bytes = bytes as u64;
        if bytes <= self.held {
            return Ok(());
        }
        self.grow(bytes)
    }

    fn grow(&mut self, bytes: u64) -> Result<(), OutOfMemory> {
        let wanted = bytes + bytes / 8 + (64 << 10);
        with_pool(|pool| {
            let heap = heap_used();
            let others = pool.results - self.held;
            if heap + others + bytes > pool.bytes {
                return Err(OutOfMemory {
                    bytes,
                    pool: pool.describe(),
                });
            }
            pool.results = others + wanted;
            self.held = wanted;
            pool.limit_heap();
            Ok(())
        })
    }

    /// The bytes of the pool this charge holds.
    pub fn held(&self) -> u64 {
        self.held
    }
}

impl Drop for ResultCharge {
    fn drop(&mut self) {
        if self.held > 0 {
            with_pool(|pool| {
                pool.results -= self.held;
                pool.limit_heap();
            });
        }
    }
}

/// Called after each query, once its memory is freed, with the bytes of a result it read and
/// threw away. When much was freed (a runaway sort that failed, a result cut short), glibc gives
/// its free memory back to the system instead of keeping it for the rest of the run.
pub fn give_back_freed(discarded_result: u64) {
    let threshold = with_pool(|pool| pool.bytes / 16);
    let heap_freed = HEAP
        .get()
        .map_or(0, |heap| heap.take_peak().saturating_sub(heap.used()));
    if heap_freed >= threshold || discarded_result >= threshold {
        trim_allocator();
    }
}

/// Turns glibc's fast bins off: a small chunk freed (past the few each thread caches) then
/// merges with its free neighbours at once, and freeing a sort's rows hands the top of the
/// thread's arena back to the system instead of keeping the rows for that thread alone.
fn merge_freed_memory_at_once() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: sets one glibc malloc parameter, which it allows at any time; no pointers.
    unsafe {
        libc::mallopt(libc::M_MXFAST, 0);
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_allocator() {
    // SAFETY: asks glibc to return the free memory of every arena to the system; no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_allocator() {}

/// Runs one query with `limits`' deadline and a charge for the memory its result takes, and
/// times it; the memory of a result that failed is given back ([`give_back_freed`]). Every
/// engine's query goes through here.
pub fn measured(
    limits: &crate::Limits,
    query: impl FnOnce(
        Option<std::time::Instant>,
        &mut ResultCharge,
    ) -> Result<crate::ResultSet, crate::ExecError>,
) -> crate::Execution {
    let start = std::time::Instant::now();
    let deadline = limits.timeout.and_then(|t| start.checked_add(t));
    let mut charge = ResultCharge::default();
    let result = query(deadline, &mut charge);
    let discarded = if result.is_err() { charge.held() } else { 0 };
    drop(charge);
    give_back_freed(discarded);
    crate::Execution {
        result: result.map(std::sync::Arc::new),
        elapsed: start.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_whole_mib_within_the_range() {
        assert_eq!("64".parse::<MaxMemory>().unwrap().bytes, 64 << 20);
        assert_eq!("4096".parse(), Ok(MaxMemory::default()));
        for text in ["0", "63", "16777217", "18446744073709551615"] {
            let error = text.parse::<MaxMemory>().unwrap_err().to_string();
            assert!(error.contains("between 64 and 16777216 MiB"), "{error}");
        }
        for text in ["", "4G", "-1", "1.5", "4096 MiB"] {
            let error = text.parse::<MaxMemory>().unwrap_err().to_string();
            assert!(error.contains("not a whole number of MiB"), "{error}");
        }
        // The largest pool fits the signed limit SQLite takes.
        let largest = MaxMemory::try_from(MaxMemory::MAX_MIB).unwrap();
        assert!(pool_bytes(largest) < i64::MAX as u64);
    }

    #[test]
    fn a_result_without_room_names_its_size_the_pool_and_the_budget() {
        let budget = MaxMemory::try_from(256).unwrap();
        let error = OutOfMemory {
            bytes: 1000,
            pool: PoolSize {
                bytes: pool_bytes(budget),
                budget,
            },
        };
        assert_eq!(
            error.to_string(),
            "out of memory: this result (1000 bytes so far), SQLite's heap and the other results \
             being read would take more than the 96 MiB that queries may hold together under the \
             256 MiB memory budget (--max-memory)"
        );
    }
}
