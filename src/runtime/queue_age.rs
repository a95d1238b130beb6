//! How long each worker's run queue has held work. An idle worker leaves a queue that
//! filled less than [`STEAL_GRACE`] ago to its owner, and keeps looking instead of
//! parking (`worker.rs`, step 6).
//!
//! The processes a poll woke or spawned reach its worker's queue together when the poll
//! ends. Stolen at once, a batch that refills one channel is split across two cores
//! whose halves then meet on that channel's lock, and each message costs a round of
//! cache misses: 16 senders refilling one `bounded(128)` channel ran at 0.7 of tokio's
//! time on two workers, against 0.25 on one. Left to their owner, such batches finish in
//! microseconds; a queue whose work outlasts the grace (a long poll, a steady stream of
//! spawns) is stolen from as before, the grace later.
//!
//! So only such batches start the clock: what a poll woke or spawned, published at its
//! end, a process its own poll re-queued, and a batch moved from the injector. Work that
//! reaches a queue any other way is ripe at once: what a socket's or a timer's waker, a
//! spawn or a drop wakes between polls (no poll made it, and nothing ties it to one
//! channel), and the half of a queue a thief took (it waited out its grace on the
//! victim). Held back, such work cost a server its tail: with wrk on the same two cores,
//! a searcher that found a driver's wakes fresh yielded its thread while they ripened
//! (0.06 to 0.15 `sched_yield` a request at 50 connections), and a yield, or the owner
//! being preempted meanwhile, can keep them waiting for milliseconds. Ripe at once, p99
//! fell from 3.1 to 2.3 ms (docs/performance.md, "Only a poll's batch waits out the
//! steal grace").
//!
//! The ages are hints: a thief that reads a stale one steals a little early or late,
//! never loses a process. Under loom they are off (every queue is ripe): the models
//! check what is stolen, not when.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::tuning::STEAL_GRACE;

/// The age of an empty queue (or of one whose age is not known).
const EMPTY: u64 = 0;

/// When each worker's queue last went from empty to holding work, in nanoseconds since
/// the runtime started. Std's atomics, not the facade's: hints outside every model.
pub(crate) struct QueueAges {
    start: Instant,
    filled_at: Box<[CachePadded<AtomicU64>]>,
}

impl QueueAges {
    pub(crate) fn new(workers: usize) -> QueueAges {
        QueueAges {
            start: Instant::now(),
            filled_at: (0..workers).map(|_| CachePadded::default()).collect(),
        }
    }

    /// Now, in the ages' unit (never [`EMPTY`]).
    pub(crate) fn now(&self) -> u64 {
        let nanos = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        nanos.max(EMPTY + 1)
    }

    /// Worker `worker`'s queue, empty until now, is about to hold work.
    pub(crate) fn filled(&self, worker: usize) {
        if cfg!(loom) {
            return;
        }
        // Relaxed: a hint (module docs).
        self.filled_at[worker].store(self.now(), Ordering::Relaxed);
    }

    /// Worker `worker`'s queue is empty.
    pub(crate) fn emptied(&self, worker: usize) {
        // Relaxed: a hint.
        self.filled_at[worker].store(EMPTY, Ordering::Relaxed);
    }

    /// True if a thief may take from worker `worker`'s queue at `now` (from
    /// [`now`](Self::now)): it has held work for the grace, or its age is unknown.
    pub(crate) fn is_ripe(&self, worker: usize, now: u64) -> bool {
        self.ripens_in(worker, now) == Duration::ZERO
    }

    /// How long after `now` a thief may take from worker `worker`'s queue (zero: it may
    /// already).
    pub(crate) fn ripens_in(&self, worker: usize, now: u64) -> Duration {
        // Relaxed: a hint.
        let filled_at = self.filled_at[worker].load(Ordering::Relaxed);
        ripens_in(filled_at, now)
    }
}

/// How long after `now` a queue filled at `filled_at` may be stolen from.
fn ripens_in(filled_at: u64, now: u64) -> Duration {
    if filled_at == EMPTY {
        return Duration::ZERO;
    }
    let age = Duration::from_nanos(now.saturating_sub(filled_at));
    STEAL_GRACE.saturating_sub(age)
}

/// A queue filled at `filled_at` may be stolen from at `now`.
#[cfg(all(test, not(loom)))]
fn ripe(filled_at: u64, now: u64) -> bool {
    ripens_in(filled_at, now) == Duration::ZERO
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_queue_is_ripe_once_the_grace_has_passed() {
        let grace = STEAL_GRACE.as_nanos() as u64;
        let filled_at = 1_000;
        assert!(!ripe(filled_at, filled_at));
        assert!(!ripe(filled_at, filled_at + grace - 1));
        assert!(ripe(filled_at, filled_at + grace));
        // A clock read before the fill (another thread's) is not ripe either.
        assert!(!ripe(filled_at, filled_at - 1));
        // Unknown age: ripe.
        assert!(ripe(EMPTY, 1));
    }

    #[test]
    fn a_fresh_queue_ripens_when_the_grace_ends() {
        let grace = STEAL_GRACE.as_nanos() as u64;
        let filled_at = 1_000;
        assert_eq!(ripens_in(filled_at, filled_at), STEAL_GRACE);
        assert_eq!(
            ripens_in(filled_at, filled_at + 10),
            STEAL_GRACE - Duration::from_nanos(10)
        );
        assert_eq!(ripens_in(filled_at, filled_at + grace), Duration::ZERO);
        assert_eq!(ripens_in(filled_at, filled_at + 2 * grace), Duration::ZERO);
        assert_eq!(ripens_in(EMPTY, 5), Duration::ZERO);
    }

    #[test]
    fn filling_and_emptying_set_the_age() {
        // Times are passed in, not read from the clock: the test must hold however slowly
        // it runs (valgrind, sanitizers).
        let grace = STEAL_GRACE.as_nanos() as u64;
        let ages = QueueAges::new(2);
        assert!(ages.is_ripe(0, ages.now()), "empty");
        ages.filled(0);
        let at = ages.filled_at[0].load(Ordering::Relaxed);
        assert!(at != EMPTY && at <= ages.now(), "stamped with the clock");
        assert!(!ages.is_ripe(0, at), "just filled");
        assert!(ages.is_ripe(0, at + grace), "filled a grace ago");
        assert!(ages.is_ripe(1, at), "the other queue");
        ages.emptied(0);
        assert!(ages.is_ripe(0, at), "emptied");
    }
}
