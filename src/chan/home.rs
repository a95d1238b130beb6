//! Which runtime a channel belongs to, for deadlock detection (API.md): a channel is
//! *foreign* once one of its ends is created, cloned or used outside a process or
//! `block_on` future of the runtime that first used it (a plain thread, another
//! executor, another runtime, a blocking call), or after `mark_foreign()`. A process
//! blocked on a foreign channel never counts as deadlocked: something csp cannot see
//! may complete the wait.
//!
//! A channel that turns foreign after a runtime used it may have processes already
//! waiting on it, whose recorded waits do not say so. Such a late turn bumps its
//! runtime's *foreign epoch* (`wait/epoch.rs`), which every recorded wait carries: a wait
//! recorded before the bump is stale, and deadlock detection has its owner polled again
//! to record it afresh before it counts.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::runtime::context;

/// `Home`'s value for a foreign channel; any other value is a runtime id.
const FOREIGN: u64 = u64::MAX;

/// The runtime a channel belongs to, or foreign.
pub(crate) struct Home(AtomicU64);

impl Home {
    /// The home of a channel created here and now: the runtime whose process or
    /// `block_on` future is being polled, else foreign.
    pub(crate) fn here() -> Home {
        Home(AtomicU64::new(match context::polling_runtime() {
            0 => FOREIGN,
            runtime => runtime,
        }))
    }

    /// The home of a channel foreign from birth: nothing can have waited on it yet, so
    /// no epoch needs bumping.
    pub(crate) fn foreign() -> Home {
        Home(AtomicU64::new(FOREIGN))
    }

    /// An end of the channel is being used (or cloned) here.
    #[inline]
    pub(crate) fn note_use(&self) {
        // Relaxed: the value only ever changes to FOREIGN, once.
        let home = self.0.load(Ordering::Relaxed);
        // Equal only when used by a process (or `block_on` future) of its runtime, the
        // common case, one test inline; anything else is sorted out of line.
        if home != context::polling_word() {
            self.note_use_elsewhere(home);
        }
    }

    /// `note_use` when the channel is foreign already, or used outside its runtime.
    #[inline(never)]
    fn note_use_elsewhere(&self, home: u64) {
        if home != FOREIGN && home != context::polling_runtime() {
            self.mark();
        }
    }

    /// Makes the channel foreign for good.
    #[cold]
    pub(crate) fn mark(&self) {
        // Relaxed: the epoch bump below carries the ordering detection needs.
        let home = self.0.swap(FOREIGN, Ordering::Relaxed);
        if home != FOREIGN {
            crate::wait::epoch::bump(home);
        }
    }

    #[inline]
    pub(crate) fn is_foreign(&self) -> bool {
        // Relaxed: read when recording a wait; a later turn bumps the epoch.
        self.0.load(Ordering::Relaxed) == FOREIGN
    }
}

impl std::fmt::Debug for Home {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.load(Ordering::Relaxed) {
            FOREIGN => f.write_str("Home(foreign)"),
            runtime => write!(f, "Home(runtime {runtime})"),
        }
    }
}
