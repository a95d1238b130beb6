//! Which workers are searching for work or asleep, and the event they sleep on.
//!
//! The rule (DESIGN.md): new work wakes one parked worker only when no worker is already
//! searching, so a burst of spawns wakes one thread, not all of them. No wake is lost:
//!
//! - whoever makes work visible calls [`Idle::notify_work`], which fences and then reads
//!   the searching and sleeping counts;
//! - a worker stops searching or goes to sleep by first changing those counts, then
//!   fencing, then looking at every queue once more.
//!
//! With a `SeqCst` fence on both sides, either the worker's last look sees the new work,
//! or the notifier sees the worker still searching (it will look again) or registered as
//! a sleeper (it gets the notification). [`IdleEvent`] keeps a notification sent to a
//! listener that has not started waiting yet, and wakes nobody new while an earlier
//! notification is still unconsumed.
//!
//! **Watchers.** A batch a worker puts on its own queue (a poll's, the injector's) is
//! *fresh*: thieves leave it to its owner for a grace (`queue_age.rs`), so a worker
//! woken for it could only wait. At most one parked worker at a time is a *watcher*: it
//! sleeps with a timeout and looks at the queues again when it ends, so fresh work is
//! noticed without a wake-up ([`Idle::notify_fresh`] wakes nobody while a watcher
//! sleeps). A worker becomes a watcher only after the fence of its last look, and stops
//! being one (decrementing the count) before the fence of its next look. So a notifier
//! that read the count as one, and skipped its wake-up, fenced before that next look,
//! which therefore sees its work.

use crate::loom::sync::atomic::{AtomicUsize, Ordering, fence};
use crate::runtime::idle_event::IdleEvent;

pub(crate) struct Idle {
    /// Workers looking for work to steal.
    searching: AtomicUsize,
    /// Workers registered to sleep (between `prepare_park` and `finish_park`).
    sleepers: AtomicUsize,
    /// Sleepers that will look at the queues again when their timeout ends (0 or 1;
    /// module docs).
    watchers: AtomicUsize,
    /// What sleeping workers wait on.
    event: IdleEvent,
    workers: usize,
}

impl Idle {
    pub(crate) fn new(workers: usize) -> Idle {
        Idle {
            searching: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            watchers: AtomicUsize::new(0),
            event: IdleEvent::new(workers),
            workers,
        }
    }

    /// New work is in a queue: wake one sleeper unless some worker is already searching.
    pub(crate) fn notify_work(&self) {
        self.notify_one(false);
    }

    /// A batch, or work behind one, is in the caller's own queue, where thieves leave it
    /// for a grace: as [`notify_work`](Self::notify_work), but wakes nobody while a
    /// watcher sleeps (it will look when its timeout ends, by when the work can be
    /// stolen).
    #[inline]
    pub(crate) fn notify_fresh(&self) {
        self.notify_one(true);
    }

    /// Wakes one sleeper unless some worker is searching, or (`fresh`) a watcher sleeps.
    #[inline]
    fn notify_one(&self, fresh: bool) {
        // SeqCst: orders the caller's push before the loads below, against the fence in
        // a worker's last look, and the one a watcher passes after it stops watching
        // (module docs).
        fence(Ordering::SeqCst);
        // Relaxed: the fence above orders these loads.
        if self.searching.load(Ordering::Relaxed) == 0
            && !(fresh && self.watchers.load(Ordering::Relaxed) > 0)
            && self.sleepers.load(Ordering::Relaxed) > 0
        {
            self.event.notify_one();
        }
    }

    /// Makes the caller, a registered sleeper past its last look, the watcher, unless
    /// there is one already. If true, it must sleep with a timeout and call
    /// [`stop_watching`](Self::stop_watching) when it wakes, before it looks again.
    #[must_use]
    pub(crate) fn try_watch(&self) -> bool {
        // SeqCst: part of the handshake in the module docs (a notifier that reads 1 skips
        // its wake-up).
        self.watchers
            .compare_exchange(0, 1, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    }

    /// The watcher woke up: from now on fresh work wakes a sleeper again.
    pub(crate) fn stop_watching(&self) {
        // SeqCst: part of the handshake in the module docs.
        self.watchers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Wakes every sleeper (shutdown).
    pub(crate) fn notify_all(&self) {
        self.event.notify_all();
    }

    /// Counts the caller as searching, unless half the workers already are (more
    /// thieves than that only fight over the same queues).
    pub(crate) fn try_start_searching(&self) -> bool {
        // Relaxed: a stale count only lets one thief too many search, or one too few.
        let searching = self.searching.load(Ordering::Relaxed);
        if 2 * searching >= self.workers.max(2) {
            return false;
        }
        // SeqCst: part of the handshake in the module docs.
        self.searching.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// The caller stops searching; true if it was the last searcher, in which case work
    /// that arrived meanwhile woke nobody, and the caller must pass the word on (if it
    /// found work) or look once more (if it goes to sleep).
    #[must_use]
    pub(crate) fn stop_searching(&self) -> bool {
        // SeqCst: part of the handshake in the module docs.
        self.searching.fetch_sub(1, Ordering::SeqCst) == 1
    }

    /// Counts the caller as a sleeper. It must then listen on [`event`](Self::event)
    /// (which allocates nothing), call [`registered`](Self::registered), look at every
    /// queue once more, and either wait on the listener or call `finish_park`.
    pub(crate) fn begin_park(&self) {
        // SeqCst: part of the handshake in the module docs.
        self.sleepers.fetch_add(1, Ordering::SeqCst);
    }

    /// What sleeping workers wait on.
    pub(crate) fn event(&self) -> &IdleEvent {
        &self.event
    }

    /// The caller's listener is registered: it stops searching (if it was) and fences
    /// before its last look at the queues. True if it was the last searcher: work that
    /// its last look finds may have woken nobody, and the caller must pass the word on.
    #[must_use]
    pub(crate) fn registered(&self, was_searching: bool) -> bool {
        let was_last = was_searching && self.stop_searching();
        // SeqCst: the caller's last look at the queues comes after this fence.
        fence(Ordering::SeqCst);
        was_last
    }

    /// True if every worker is asleep (or on its way) and none is searching.
    pub(crate) fn all_asleep(&self) -> bool {
        // SeqCst: read in the same total order as the workers' changes, by deadlock
        // detection (which re-checks that nothing ran after it looked).
        self.searching.load(Ordering::SeqCst) == 0
            && self.sleepers.load(Ordering::SeqCst) == self.workers
    }

    /// The caller is awake again (or never slept).
    pub(crate) fn finish_park(&self) {
        // SeqCst: part of the handshake in the module docs.
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}
