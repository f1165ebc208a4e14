//! One process-wide thread that interrupts statements past their deadline, for the engines
//! that run in this process (SQLite, DuckDB).
//!
//! SQLite's progress handler only runs while a statement steps; preparing a 200 MB IN list
//! never calls it. `sqlite3_interrupt` from another thread also stops the parser and the code
//! generator, so one bound covers preparing and stepping alike.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

/// Interrupts one connection's running statement; called from the watchdog's thread.
pub type Interrupt = Box<dyn Fn() + Send>;

/// Pending deadlines, earliest first; the counter keeps equal instants apart.
struct Pending {
    next_id: u64,
    deadlines: BTreeMap<(Instant, u64), Interrupt>,
    /// When the watchdog thread wakes by itself (`None`: only when notified). A deadline at or
    /// after it needs no notification: the thread looks at every deadline when it wakes. Most
    /// queries end long before their bound, so waking the thread for each one would cost every
    /// query a context switch.
    wakes_at: Option<Instant>,
}

struct Watchdog {
    pending: Mutex<Pending>,
    changed: Condvar,
}

/// While alive, the statement behind `interrupt` is interrupted once its deadline passes.
pub struct Armed {
    key: (Instant, u64),
}

/// Calls `interrupt` at `deadline` unless the returned guard is dropped first.
pub fn arm(deadline: Instant, interrupt: Interrupt) -> Armed {
    let watchdog = watchdog();
    let mut pending = watchdog.lock();
    let key = (deadline, pending.next_id);
    pending.next_id += 1;
    pending.deadlines.insert(key, interrupt);
    if pending.wakes_at.is_none_or(|wakes_at| deadline < wakes_at) {
        watchdog.changed.notify_one();
    }
    Armed { key }
}

impl Drop for Armed {
    fn drop(&mut self) {
        watchdog().lock().deadlines.remove(&self.key);
    }
}

impl Watchdog {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn run(&self) {
        let mut pending = self.lock();
        loop {
            let now = Instant::now();
            let wait = match pending.deadlines.first_key_value() {
                Some((&(deadline, _), _)) if deadline <= now => {
                    if let Some((_, interrupt)) = pending.deadlines.pop_first() {
                        interrupt();
                    }
                    continue;
                }
                Some((&(deadline, _), _)) => Some(deadline - now),
                None => None,
            };
            pending.wakes_at = wait.map(|wait| now + wait);
            pending = match wait {
                Some(wait) => {
                    self.changed
                        .wait_timeout(pending, wait)
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .0
                }
                None => self
                    .changed
                    .wait(pending)
                    .unwrap_or_else(|poisoned| poisoned.into_inner()),
            };
        }
    }
}

fn watchdog() -> &'static Watchdog {
    static WATCHDOG: OnceLock<&'static Watchdog> = OnceLock::new();
    WATCHDOG.get_or_init(|| {
        let watchdog: &'static Watchdog = Box::leak(Box::new(Watchdog {
            pending: Mutex::new(Pending {
                next_id: 0,
                deadlines: BTreeMap::new(),
                wakes_at: None,
            }),
            changed: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("sqlgate-sql-watchdog".into())
            .spawn(|| watchdog.run())
            .expect("cannot start the SQL watchdog thread");
        watchdog
    })
}
