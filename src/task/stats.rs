//! Per-process figures for the console (feature `console`): how often the process was
//! polled, and how often a wake during its own poll sent it straight back to the queue.
//! They live after the registry links (`header.rs`'s `Prefix`), outside the header's
//! cache line, and exist only with the feature, so a build without it pays nothing.
//!
//! Only the process's poller writes them (the `Running` owner, one thread at a time), so
//! an increment is a plain load and store; the console reads them from its own thread.

use crate::loom::sync::atomic::{AtomicU64, Ordering};

/// What the console shows of a process beyond its header.
#[derive(Debug, Default)]
pub(crate) struct ProcessStats {
    polls: AtomicU64,
    requeues: AtomicU64,
}

impl ProcessStats {
    /// One more poll. Called by the `Running` owner only.
    #[inline(always)]
    pub(crate) fn note_poll(&self) {
        bump(&self.polls);
    }

    /// A poll that ended `Pending` was woken while it ran and goes straight back to the
    /// queue. Called by the `Running` owner only.
    #[inline]
    pub(crate) fn note_requeue(&self) {
        bump(&self.requeues);
    }

    /// Polls so far.
    pub(crate) fn polls(&self) -> u64 {
        // Relaxed: a figure for a dump, never used to order anything.
        self.polls.load(Ordering::Relaxed)
    }

    /// Polls that ended woken already, so far.
    pub(crate) fn requeues(&self) -> u64 {
        // Relaxed: as in `polls`.
        self.requeues.load(Ordering::Relaxed)
    }
}

/// Adds one to a counter with a single writer.
#[inline(always)]
fn bump(counter: &AtomicU64) {
    // Relaxed load and store, not an atomic add: only the poller writes, and the console
    // needs only some recent value.
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}
