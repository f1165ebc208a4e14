//! SQLite's allocator as the heap the process's memory budget bounds
//! ([`sqlgate_engine::memory`]).

use std::sync::Once;

use sqlgate_engine::memory::{register_heap, Heap};

struct SqliteHeap;

impl Heap for SqliteHeap {
    fn used(&self) -> u64 {
        // SAFETY: reads SQLite's process-wide memory statistic; no pointers.
        unsafe { rusqlite::ffi::sqlite3_memory_used() }.max(0) as u64
    }

    fn set_limit(&self, bytes: u64) {
        // SAFETY: sets a process-wide SQLite setting; it takes no pointers. The pool is at most
        // 6 TiB, within i64.
        unsafe {
            rusqlite::ffi::sqlite3_hard_heap_limit64(bytes.min(i64::MAX as u64) as i64);
        }
    }

    fn take_peak(&self) -> u64 {
        // SAFETY: reads and resets the peak of SQLite's process-wide memory statistic.
        unsafe { rusqlite::ffi::sqlite3_memory_highwater(1) }.max(0) as u64
    }

    fn name(&self) -> &'static str {
        "SQLite's heap"
    }
}

/// Makes sure SQLite's heap is bounded before a database opens.
pub(crate) fn bound() {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| register_heap(&SqliteHeap));
}
