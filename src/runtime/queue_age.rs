//! How long each worker's run queue has held a batch. An idle worker leaves a queue whose
//! batch came less than [`STEAL_GRACE`] ago to its owner, and keeps looking instead of
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
//! So only batches start a queue's clock: what a poll woke or spawned, published at its
//! end, a process its own poll re-queued, and a batch moved from the injector. A batch
//! starts it when it reaches an empty queue or one whose clock is stopped; behind a
//! batch whose clock runs, it waits with that batch. Anything else leaves the clock as
//! it is: what a socket's or a timer's waker, a spawn or a drop queues between polls (no
//! poll made it, and nothing ties it to one channel), and the half of a queue a thief
//! took (it waited out its grace on the victim), both of which stop the clock of an
//! empty queue they reach. So a server's wakes are ripe at once, unless they land
//! behind a fresh batch (then they wait with it), and a batch that lands behind them
//! starts the clock for all. Held back, a server's wakes cost it its tail
//! (docs/performance.md, "Only a poll's batch waits out the steal grace").
//!
//! The ages are hints: a thief that reads a stale one steals a little early or late,
//! never loses a process. Under loom they are off (every queue is ripe): the models
//! check what is stolen, not when.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::tuning::STEAL_GRACE;

/// A stopped clock: the queue is empty, or holds no batch (module docs). Ripe.
const STOPPED: u64 = 0;

/// When each worker's queue's clock started (a batch reached it while it was stopped),
/// in nanoseconds since the runtime started, or [`STOPPED`]. Std's atomics, not the
/// facade's: hints outside every model.
pub(crate) struct QueueAges {
    start: Instant,
    started_at: Box<[CachePadded<AtomicU64>]>,
}

impl QueueAges {
    pub(crate) fn new(workers: usize) -> QueueAges {
        QueueAges {
            start: Instant::now(),
            started_at: (0..workers).map(|_| CachePadded::default()).collect(),
        }
    }

    /// Now, in the ages' unit (never [`STOPPED`]).
    pub(crate) fn now(&self) -> u64 {
        let nanos = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        nanos.max(STOPPED + 1)
    }

    /// A batch is about to reach worker `worker`'s queue, which is empty or whose clock
    /// is stopped: its clock starts now.
    pub(crate) fn start_clock(&self, worker: usize) {
        if cfg!(loom) {
            return;
        }
        // Relaxed: a hint (module docs).
        self.started_at[worker].store(self.now(), Ordering::Relaxed);
    }

    /// Worker `worker`'s queue is empty, or is about to hold, on an empty queue, work
    /// that is no batch: a thief may take what it holds at once.
    pub(crate) fn stop_clock(&self, worker: usize) {
        let started_at = &self.started_at[worker];
        // Read first: most calls find it stopped, and a store, even of the same value,
        // would take the line from the thieves that read it. Relaxed: a hint.
        if started_at.load(Ordering::Relaxed) != STOPPED {
            started_at.store(STOPPED, Ordering::Relaxed);
        }
    }

    /// True if worker `worker`'s queue's clock is stopped. Only the worker itself asks,
    /// and only it starts or stops the clock, so the answer holds until it acts.
    pub(crate) fn clock_stopped(&self, worker: usize) -> bool {
        // Relaxed: a hint, written by this thread.
        self.started_at[worker].load(Ordering::Relaxed) == STOPPED
    }

    /// True if a thief may take from worker `worker`'s queue at `now` (from
    /// [`now`](Self::now)): its clock has run for the grace, or is stopped.
    pub(crate) fn is_ripe(&self, worker: usize, now: u64) -> bool {
        self.ripens_in(worker, now) == Duration::ZERO
    }

    /// How long after `now` a thief may take from worker `worker`'s queue (zero: it may
    /// already).
    pub(crate) fn ripens_in(&self, worker: usize, now: u64) -> Duration {
        // Relaxed: a hint.
        let started_at = self.started_at[worker].load(Ordering::Relaxed);
        ripens_in(started_at, now)
    }
}

/// How long after `now` a queue whose clock started at `started_at` may be stolen from.
fn ripens_in(started_at: u64, now: u64) -> Duration {
    if started_at == STOPPED {
        return Duration::ZERO;
    }
    let age = Duration::from_nanos(now.saturating_sub(started_at));
    STEAL_GRACE.saturating_sub(age)
}

/// A queue whose clock started at `started_at` may be stolen from at `now`.
#[cfg(all(test, not(loom)))]
fn ripe(started_at: u64, now: u64) -> bool {
    ripens_in(started_at, now) == Duration::ZERO
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_queue_is_ripe_once_the_grace_has_passed() {
        let grace = STEAL_GRACE.as_nanos() as u64;
        let started_at = 1_000;
        assert!(!ripe(started_at, started_at));
        assert!(!ripe(started_at, started_at + grace - 1));
        assert!(ripe(started_at, started_at + grace));
        // A clock read before the start (another thread's) is not ripe either.
        assert!(!ripe(started_at, started_at - 1));
        // A stopped clock: ripe.
        assert!(ripe(STOPPED, 1));
    }

    #[test]
    fn a_fresh_queue_ripens_when_the_grace_ends() {
        let grace = STEAL_GRACE.as_nanos() as u64;
        let started_at = 1_000;
        assert_eq!(ripens_in(started_at, started_at), STEAL_GRACE);
        assert_eq!(
            ripens_in(started_at, started_at + 10),
            STEAL_GRACE - Duration::from_nanos(10)
        );
        assert_eq!(ripens_in(started_at, started_at + grace), Duration::ZERO);
        assert_eq!(
            ripens_in(started_at, started_at + 2 * grace),
            Duration::ZERO
        );
        assert_eq!(ripens_in(STOPPED, 5), Duration::ZERO);
    }

    #[test]
    fn starting_and_stopping_the_clock_set_the_age() {
        // Times are passed in, not read from the clock: the test must hold however slowly
        // it runs (valgrind, sanitizers).
        let grace = STEAL_GRACE.as_nanos() as u64;
        let ages = QueueAges::new(2);
        assert!(ages.is_ripe(0, ages.now()), "empty");
        assert!(ages.clock_stopped(0));
        ages.start_clock(0);
        assert!(!ages.clock_stopped(0));
        let at = ages.started_at[0].load(Ordering::Relaxed);
        assert!(at != STOPPED && at <= ages.now(), "stamped with the clock");
        assert!(!ages.is_ripe(0, at), "just started");
        assert!(ages.is_ripe(0, at + grace), "started a grace ago");
        assert!(ages.is_ripe(1, at), "the other queue");
        ages.stop_clock(0);
        assert!(ages.clock_stopped(0));
        assert!(ages.is_ripe(0, at), "stopped");
    }
}
