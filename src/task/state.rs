//! The process state word: one `AtomicUsize` that makes wakes from any thread race-free
//! without a lock.
//!
//! | bits   | name            | meaning                                                    |
//! |--------|-----------------|------------------------------------------------------------|
//! | 0..=1  | lifecycle       | `Sleeping` 00, `Queued` 01, `Running` 10, `Yielding` 11    |
//! | 2      | [`COMPLETE`]    | the future is gone; its output (or error) is stored         |
//! | 3      | [`CANCELLED`]   | abort or shutdown asked for the future to be dropped        |
//! | 4      | [`JOIN_INTEREST`] | a `JoinHandle` exists and will read the output           |
//! | 5      | [`JOIN_WAKER`]  | the join-waker slot holds the `JoinHandle`'s waker          |
//! | 6      | [`BLOCKING`]    | a `spawn_blocking` closure, not a process                   |
//! | 7      | [`REGISTRY_LEFT`] | shutdown left the registry's reference to the poller     |
//! | 8..=15 | foreign wakers  | `Waker` clones held outside csp (saturates at 255: sticky) |
//! | 16..   | reference count | one per `Waker`, queue entry, registry entry, `JoinHandle`  |
//!
//! What a wake does in each lifecycle state (DESIGN.md):
//!
//! | state     | meaning                            | a wake does                          |
//! |-----------|------------------------------------|--------------------------------------|
//! | Sleeping  | waiting for an event, in no queue  | Sleeping → Queued, push to a queue   |
//! | Queued    | in exactly one run queue           | nothing                              |
//! | Running   | a worker is inside `poll`, or holds it in its handoff slot to poll next, or in its resting slot after a `Pending` poll (`raw.rs`, `Resting`) | Running → Yielding (no push) |
//! | Yielding  | woken while Running                | nothing                              |
//!
//! A wake by a process polled on a worker of the same runtime hands the woken process to
//! that worker's handoff slot, where it runs next: it goes straight from `Sleeping` to
//! `Running` ([`State::transition_to_handed_by_val`]), and the worker polls it with no
//! further transition, one compare-and-swap fewer on every message between two
//! processes. One that leaves the slot unpolled goes back to `Queued`
//! ([`State::transition_handed_to_queued`]).
//!
//! After `poll` returns `Pending` the worker moves Running → Sleeping, or finds Yielding and
//! moves it to Queued and re-queues the process itself, so a wake during `poll` is never
//! lost. `Ready` ends in [`COMPLETE`] with the lifecycle bits back at `Sleeping`, so a run
//! queue entry left behind by a shutdown reads as stale and a later wake does nothing.
//!
//! Ownership that the bits grant:
//! - whoever moves the lifecycle to `Running` owns the future until it moves it away;
//! - once [`COMPLETE`] is seen (Acquire), the output belongs to the `JoinHandle` while
//!   [`JOIN_INTEREST`] was set at completion, and to the completer otherwise;
//! - the join-waker slot belongs to the `JoinHandle` while [`JOIN_WAKER`] is clear and the
//!   process is not complete; to the completer, read-only, while both are set;
//! - the registry's reference belongs to the registry while the process is linked there,
//!   then to whoever unlinked it; shutdown, which unlinks every process, hands it to the
//!   poller of one it finds `Running` ([`REGISTRY_LEFT`]), deciding so under the lock it
//!   unlinks the process under, which the poller takes before it completes the process
//!   (`runtime/registry.rs`). So a process is never freed while a worker polls or
//!   completes it, even with the poll's own reference lent (`loan.rs`, invariant I2).
//!
//! Every ordering below is `AcqRel` (or `Acquire` for plain loads) unless its comment says
//! why it may be weaker.

use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::task::ProcessState;
use crate::task::loan::PollRef;

/// Mask of the two lifecycle bits. Changed only by the transitions below.
const LIFECYCLE: usize = 0b11;
/// Lifecycle value: waiting for an event, in no run queue. Left by the poller after a
/// `Pending` poll, entered by a wake (to `Queued`).
const SLEEPING: usize = 0b00;
/// Lifecycle value: in exactly one run queue. Entered by a wake of a sleeping process or by
/// the poller re-queueing a yielding one; left when a worker starts polling.
const QUEUED: usize = 0b01;
/// Lifecycle value: a worker is inside `poll`. Entered by the worker that popped the
/// process; left by the same worker when `poll` returns.
const RUNNING: usize = 0b10;
/// Lifecycle value: woken while running. Entered by a wake during `poll`; left by the poller.
const YIELDING: usize = 0b11;

/// Set once, by the owner of the future, when the future is gone and its output (or the
/// cancellation or panic) is stored. Never cleared.
pub(crate) const COMPLETE: usize = 1 << 2;
/// Set by `JoinHandle::abort` or by runtime shutdown; never cleared. The owner of the
/// future drops it at the next opportunity.
pub(crate) const CANCELLED: usize = 1 << 3;
/// Set at spawn; cleared once, when the `JoinHandle` is dropped.
pub(crate) const JOIN_INTEREST: usize = 1 << 4;
/// Set by the `JoinHandle` after it stored a waker in the join-waker slot; cleared by the
/// `JoinHandle` (to replace the waker or on drop) only while the process is not complete.
pub(crate) const JOIN_WAKER: usize = 1 << 5;
/// Set at creation for `spawn_blocking` closures, never changed: such tasks are not
/// processes, so the registry dump leaves them out.
pub(crate) const BLOCKING: usize = 1 << 6;
/// Set once, with [`CANCELLED`], by a shutdown that unlinked the process from the
/// registry and found it `Running` (under the lock of that unlink): the registry's
/// reference is the poller's to release once it has completed the process. Never
/// cleared.
pub(crate) const REGISTRY_LEFT: usize = 1 << 7;

/// Shift of the count of `Waker` clones held outside csp (deadlock detection: a process
/// whose waker something else holds may be woken by it). Incremented by the waker
/// vtable's `clone`, decremented by its `drop` and `wake`; csp's own waits hold internal
/// references instead, which do not count. Once it reaches [`FOREIGN_MAX`] it stays
/// there (the process counts as foreign for good).
const FOREIGN_SHIFT: usize = 8;
/// One foreign waker clone.
const FOREIGN_ONE: usize = 1 << FOREIGN_SHIFT;
/// The saturated count.
const FOREIGN_MAX: usize = (1 << (REF_SHIFT - FOREIGN_SHIFT)) - 1;
/// Mask of the foreign waker count.
const FOREIGN_MASK: usize = FOREIGN_MAX << FOREIGN_SHIFT;

/// Shift of the reference count.
const REF_SHIFT: usize = 16;
/// One reference.
const REF_ONE: usize = 1 << REF_SHIFT;
/// Past this many references the count is taken as corrupt (as `Arc` does) and the
/// process aborts rather than risk a use after free.
const REF_MAX: usize = usize::MAX >> (REF_SHIFT + 1);

// The arithmetic of `transition_to_running` and `transition_to_idle`.
const _: () = {
    assert!(QUEUED ^ (QUEUED ^ RUNNING) == RUNNING);
    assert!(SLEEPING == 0 && YIELDING - RUNNING == QUEUED);
};

/// A copy of the state word at one instant.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot(usize);

impl Snapshot {
    fn lifecycle(self) -> usize {
        self.0 & LIFECYCLE
    }

    fn with_lifecycle(self, lifecycle: usize) -> Snapshot {
        Snapshot((self.0 & !LIFECYCLE) | lifecycle)
    }

    fn has(self, flag: usize) -> bool {
        self.0 & flag != 0
    }

    /// The future is gone and its output (or error) is stored.
    pub(crate) fn is_complete(self) -> bool {
        self.has(COMPLETE)
    }

    /// Abort or shutdown asked for the future to be dropped.
    pub(crate) fn is_cancelled(self) -> bool {
        self.has(CANCELLED)
    }

    /// A `JoinHandle` exists.
    pub(crate) fn has_join_interest(self) -> bool {
        self.has(JOIN_INTEREST)
    }

    /// The join-waker slot holds the `JoinHandle`'s waker.
    pub(crate) fn has_join_waker(self) -> bool {
        self.has(JOIN_WAKER)
    }

    /// This is a `spawn_blocking` closure rather than a process.
    pub(crate) fn is_blocking(self) -> bool {
        self.has(BLOCKING)
    }

    /// Shutdown left the registry's reference to the poller ([`REGISTRY_LEFT`]).
    pub(crate) fn registry_left(self) -> bool {
        self.has(REGISTRY_LEFT)
    }

    /// `Waker` clones held outside csp (saturated: [`FOREIGN_MAX`]).
    pub(crate) fn foreign_wakers(self) -> usize {
        (self.0 & FOREIGN_MASK) >> FOREIGN_SHIFT
    }

    /// One foreign waker fewer, unless the count is saturated.
    fn without_foreign_waker(self) -> Snapshot {
        let count = self.foreign_wakers();
        debug_assert!(count > 0, "{self:?}");
        if count == FOREIGN_MAX || count == 0 {
            self
        } else {
            Snapshot(self.0 - FOREIGN_ONE)
        }
    }

    /// The number of references.
    pub(crate) fn ref_count(self) -> usize {
        self.0 >> REF_SHIFT
    }

    /// The lifecycle as the public dump shows it.
    pub(crate) fn process_state(self) -> ProcessState {
        match self.lifecycle() {
            SLEEPING => ProcessState::Sleeping,
            QUEUED => ProcessState::Queued,
            RUNNING => ProcessState::Running,
            _ => ProcessState::Yielding,
        }
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("state", &self.process_state())
            .field("complete", &self.is_complete())
            .field("cancelled", &self.is_cancelled())
            .field("join_interest", &self.has_join_interest())
            .field("join_waker", &self.has_join_waker())
            .field("blocking", &self.is_blocking())
            .field("registry_left", &self.registry_left())
            .field("foreign_wakers", &self.foreign_wakers())
            .field("refs", &self.ref_count())
            .finish()
    }
}

/// What the worker that popped a process may do with it.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToRunning {
    /// Now `Running`: poll the future.
    Poll,
    /// Now `Running`, and cancelled: drop the future instead of polling it.
    Cancel,
    /// The entry was stale (a shutdown completed the process while it sat in the queue):
    /// drop the entry's reference and nothing else.
    Stale,
}

/// What the poller does after `poll` returned `Pending`.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToIdle {
    /// Now `Sleeping`; the run queue entry's reference was released in the same step
    /// (unless the poll lent it, `loan.rs`).
    Slept,
    /// Woken during `poll`: now `Queued`; the poller holds a reference for the new run
    /// queue entry (the old entry's, or, if the poll lent that, one the same step
    /// added). Re-queue it.
    Requeue,
    /// Cancelled during `poll`: still `Running`; drop the future now.
    Cancel,
}

/// What a wake through a borrowed waker (or an abort) requires of its caller.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notify {
    /// Moved Sleeping → Queued with one new reference: push a run queue entry.
    Submit,
    /// Nothing to schedule.
    DoNothing,
}

/// What a wake that consumes its waker's reference requires of its caller.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotifyByVal {
    /// Moved Sleeping → Queued (or → Running, for a hand-off): the waker's reference
    /// became the run queue entry's (or the handoff slot's).
    Submit,
    /// Nothing to schedule; the waker's reference was released.
    DoNothing,
    /// The waker's reference was released and was the last: free the process.
    Dealloc,
}

/// What runtime shutdown may do with one process it unlinked from the registry (under
/// that unlink's lock), or that a spawn refused at shutdown never linked.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shutdown {
    /// Was Sleeping or Queued: now `Running` and cancelled; the caller owns the future
    /// and must drop it and complete the process.
    Cancel,
    /// A worker is polling it; `CANCELLED` is set and that worker drops the future
    /// after the poll. [`REGISTRY_LEFT`] is set too: the registry's reference, which
    /// the caller took when it unlinked the process, now belongs to that worker.
    Running,
    /// Already complete: nothing to do.
    Done,
}

/// What dropping the `JoinHandle` leaves to it.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JoinDrop {
    /// The process had completed: the output is the handle's to drop.
    DropOutput,
    /// Detached before completion; if `owns_waker`, the slot's waker is the handle's to
    /// drop (the completer will never read it).
    Detached { owns_waker: bool },
}

/// The state word of one process.
pub(crate) struct State {
    word: AtomicUsize,
}

impl State {
    /// A new process: Queued (its first run queue entry is being made), with a
    /// `JoinHandle` and three references: the run queue entry, the registry entry and
    /// the `JoinHandle`.
    pub(crate) fn new_process() -> State {
        State {
            word: AtomicUsize::new(QUEUED | JOIN_INTEREST | (3 * REF_ONE)),
        }
    }

    /// A new `spawn_blocking` task: as [`State::new_process`], marked [`BLOCKING`].
    pub(crate) fn new_blocking() -> State {
        State {
            word: AtomicUsize::new(QUEUED | JOIN_INTEREST | BLOCKING | (3 * REF_ONE)),
        }
    }

    /// The current value.
    #[inline]
    pub(crate) fn load(&self) -> Snapshot {
        Snapshot(self.word.load(Ordering::Acquire))
    }

    /// Applies `f` until the compare-exchange sticks; `f` returns the new value and an
    /// outcome, or `None` to leave the word as it is.
    #[inline]
    fn update<T>(&self, mut f: impl FnMut(Snapshot) -> (Option<Snapshot>, T)) -> T {
        let mut current = self.load();
        loop {
            let (next, outcome) = f(current);
            let Some(next) = next else { return outcome };
            match self.word.compare_exchange_weak(
                current.0,
                next.0,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return outcome,
                Err(actual) => current = Snapshot(actual),
            }
        }
    }

    /// Queued → Running, by the worker holding the run queue entry.
    #[inline]
    pub(crate) fn transition_to_running(&self) -> ToRunning {
        self.update(|s| {
            if s.lifecycle() != QUEUED || s.is_complete() {
                return (None, ToRunning::Stale);
            }
            // Queued to Running, in one instruction: the lifecycle is known.
            let next = Snapshot(s.0 ^ (QUEUED ^ RUNNING));
            let outcome = if s.is_cancelled() {
                ToRunning::Cancel
            } else {
                ToRunning::Poll
            };
            (Some(next), outcome)
        })
    }

    /// Running → Sleeping, or Yielding → Queued, after a `Pending` poll made on the
    /// reference of a run queue entry, which `poll_ref` says the poll still holds or
    /// lent (`loan.rs`). Sleeping releases a held reference; a re-queue keeps it, or
    /// adds one for the new entry if it was lent.
    #[inline]
    pub(crate) fn transition_to_idle(&self, poll_ref: PollRef) -> ToIdle {
        // The reference count's change for each outcome: wrapping arithmetic makes the
        // release a subtraction folded into the same step.
        let (slept, requeued) = match poll_ref {
            PollRef::Held => (REF_ONE.wrapping_neg(), 0),
            PollRef::Lent => (0, REF_ONE),
        };
        self.update(|s| {
            debug_assert!(matches!(s.lifecycle(), RUNNING | YIELDING), "{s:?}");
            if s.is_cancelled() {
                return (None, ToIdle::Cancel);
            }
            // Running to Sleeping and Yielding to Queued both clear the running bit
            // (`RUNNING - SLEEPING == YIELDING - QUEUED`), so one subtraction does
            // either.
            let cleared = s.0 - RUNNING;
            if s.lifecycle() == YIELDING {
                return (
                    Some(Snapshot(cleared.wrapping_add(requeued))),
                    ToIdle::Requeue,
                );
            }
            // The registry still holds a reference (not cancelled, so shutdown has not
            // taken it), so a held one is never the last.
            debug_assert!(s.ref_count() >= 2 || poll_ref == PollRef::Lent, "{s:?}");
            (Some(Snapshot(cleared.wrapping_add(slept))), ToIdle::Slept)
        })
    }

    /// A process handed to a worker's slot by
    /// [`transition_to_handed_by_val`](Self::transition_to_handed_by_val) is about to be
    /// polled: it is `Running` already, so nothing changes; says whether to poll it, or
    /// to drop its future because an abort or shutdown cancelled it meanwhile.
    #[inline]
    pub(crate) fn handed_to_running(&self) -> ToRunning {
        let s = self.load();
        debug_assert!(matches!(s.lifecycle(), RUNNING | YIELDING), "{s:?}");
        debug_assert!(!s.is_complete(), "{s:?}");
        if s.is_cancelled() {
            ToRunning::Cancel
        } else {
            ToRunning::Poll
        }
    }

    /// A process handed to a worker's slot leaves it without being polled: Running (or
    /// Yielding, woken again meanwhile, which the poll to come covers) → Queued. The
    /// slot's reference becomes a run queue entry's. A cancelled process stays
    /// cancelled; the worker that runs the entry drops its future.
    #[inline]
    pub(crate) fn transition_handed_to_queued(&self) {
        self.update(|s| {
            debug_assert!(matches!(s.lifecycle(), RUNNING | YIELDING), "{s:?}");
            debug_assert!(!s.is_complete(), "{s:?}");
            (Some(s.with_lifecycle(QUEUED)), ())
        });
    }

    /// Running/Yielding → complete, by the owner of the future after storing the
    /// output. Returns the word as it was just before, so the caller knows whether a
    /// `JoinHandle` waits and whether its waker is stored.
    #[inline]
    pub(crate) fn transition_to_complete(&self) -> Snapshot {
        self.update(|s| {
            debug_assert!(matches!(s.lifecycle(), RUNNING | YIELDING), "{s:?}");
            debug_assert!(!s.is_complete(), "{s:?}");
            let next = Snapshot(s.with_lifecycle(SLEEPING).0 | COMPLETE);
            (Some(next), s)
        })
    }

    /// A wake through a borrowed waker.
    #[inline]
    pub(crate) fn transition_to_notified_by_ref(&self) -> Notify {
        self.update(|s| {
            if s.is_complete() {
                return (None, Notify::DoNothing);
            }
            match s.lifecycle() {
                SLEEPING => {
                    let next = Snapshot(s.with_lifecycle(QUEUED).0 + REF_ONE);
                    (Some(next), Notify::Submit)
                }
                RUNNING => (Some(s.with_lifecycle(YIELDING)), Notify::DoNothing),
                _ => (None, Notify::DoNothing),
            }
        })
    }

    /// A wake that consumes the waker's reference.
    #[inline]
    pub(crate) fn transition_to_notified_by_val(&self) -> NotifyByVal {
        self.notified_by_val(false)
    }

    /// As [`transition_to_notified_by_val`](Self::transition_to_notified_by_val), by a
    /// waker held outside csp: it stops counting in the same step, so deadlock detection
    /// never sees the process asleep with no foreign waker while the wake is under way.
    #[inline]
    pub(crate) fn transition_to_notified_by_foreign_val(&self) -> NotifyByVal {
        self.notified_by_val(true)
    }

    /// A wake that consumes the waker's reference, by a process polled on a worker of
    /// the same runtime, whose handoff slot takes the woken process: Sleeping → Running
    /// (module docs), the reference becoming the slot's. Otherwise as
    /// [`transition_to_notified_by_val`](Self::transition_to_notified_by_val).
    #[inline]
    pub(crate) fn transition_to_handed_by_val(&self) -> NotifyByVal {
        self.woken_by_val(false, RUNNING)
    }

    fn notified_by_val(&self, foreign: bool) -> NotifyByVal {
        self.woken_by_val(foreign, QUEUED)
    }

    /// A wake consuming a reference; a sleeping process moves to `woken`.
    #[inline]
    fn woken_by_val(&self, foreign: bool, woken: usize) -> NotifyByVal {
        self.update(|s| {
            let s = if foreign {
                s.without_foreign_waker()
            } else {
                s
            };
            if !s.is_complete() && s.lifecycle() == SLEEPING {
                // The waker's reference becomes the run queue entry's (or the slot's).
                return (Some(s.with_lifecycle(woken)), NotifyByVal::Submit);
            }
            let mut next = Snapshot(s.0 - REF_ONE);
            if !s.is_complete() && s.lifecycle() == RUNNING {
                next = next.with_lifecycle(YIELDING);
            }
            let outcome = if next.ref_count() == 0 {
                NotifyByVal::Dealloc
            } else {
                NotifyByVal::DoNothing
            };
            (Some(next), outcome)
        })
    }

    /// `JoinHandle::abort`: mark cancelled; a sleeping process is queued so that a worker
    /// drops its future.
    pub(crate) fn transition_to_aborted(&self) -> Notify {
        self.update(|s| {
            if s.is_complete() || s.is_cancelled() {
                return (None, Notify::DoNothing);
            }
            let cancelled = Snapshot(s.0 | CANCELLED);
            if s.lifecycle() == SLEEPING {
                let next = Snapshot(cancelled.with_lifecycle(QUEUED).0 + REF_ONE);
                (Some(next), Notify::Submit)
            } else {
                (Some(cancelled), Notify::DoNothing)
            }
        })
    }

    /// Runtime shutdown: take the future of an idle process, or leave a running one
    /// marked cancelled for its poller.
    pub(crate) fn transition_to_shutdown(&self) -> Shutdown {
        self.update(|s| {
            if s.is_complete() {
                return (None, Shutdown::Done);
            }
            let cancelled = Snapshot(s.0 | CANCELLED);
            match s.lifecycle() {
                SLEEPING | QUEUED => (Some(cancelled.with_lifecycle(RUNNING)), Shutdown::Cancel),
                _ => (
                    Some(Snapshot(cancelled.0 | REGISTRY_LEFT)),
                    Shutdown::Running,
                ),
            }
        })
    }

    /// Publishes the waker the `JoinHandle` just stored. Fails, leaving the slot with
    /// the handle, if the process completed meanwhile.
    #[inline]
    pub(crate) fn set_join_waker(&self) -> Result<(), Snapshot> {
        self.update(|s| {
            debug_assert!(s.has_join_interest() && !s.has_join_waker(), "{s:?}");
            if s.is_complete() {
                return (None, Err(s));
            }
            (Some(Snapshot(s.0 | JOIN_WAKER)), Ok(()))
        })
    }

    /// Takes the join-waker slot back so the `JoinHandle` can replace its waker. Fails
    /// if the process completed (the completer may be reading the slot).
    pub(crate) fn unset_join_waker(&self) -> Result<(), Snapshot> {
        self.update(|s| {
            debug_assert!(s.has_join_interest() && s.has_join_waker(), "{s:?}");
            if s.is_complete() {
                return (None, Err(s));
            }
            (Some(Snapshot(s.0 & !JOIN_WAKER)), Ok(()))
        })
    }

    /// The `JoinHandle` is dropped.
    #[inline]
    pub(crate) fn unset_join_interest(&self) -> JoinDrop {
        self.update(|s| {
            debug_assert!(s.has_join_interest(), "{s:?}");
            if s.is_complete() {
                return (Some(Snapshot(s.0 & !JOIN_INTEREST)), JoinDrop::DropOutput);
            }
            let next = Snapshot(s.0 & !(JOIN_INTEREST | JOIN_WAKER));
            (
                Some(next),
                JoinDrop::Detached {
                    owns_waker: s.has_join_waker(),
                },
            )
        })
    }

    /// Adds a reference on behalf of a holder of an existing one.
    #[inline]
    pub(crate) fn ref_inc(&self) {
        // Relaxed: a new reference is made from one the caller holds, so the process
        // cannot be freed meanwhile and nothing needs to be published (as `Arc::clone`).
        let prev = self.word.fetch_add(REF_ONE, Ordering::Relaxed);
        if Snapshot(prev).ref_count() > REF_MAX {
            std::process::abort();
        }
    }

    /// A `Waker` clone is made for code outside csp: one more reference, and one more
    /// foreign waker (unless the count is saturated).
    #[inline]
    pub(crate) fn foreign_waker_inc(&self) {
        // Relaxed: as `ref_inc`; the count is read only by deadlock detection, after the
        // whole runtime has been still for a grace period.
        let mut current = self.word.load(Ordering::Relaxed);
        loop {
            let snapshot = Snapshot(current);
            if snapshot.ref_count() > REF_MAX {
                std::process::abort();
            }
            let add = if snapshot.foreign_wakers() < FOREIGN_MAX {
                REF_ONE + FOREIGN_ONE
            } else {
                REF_ONE
            };
            match self.word.compare_exchange_weak(
                current,
                current + add,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }

    /// A `Waker` clone held outside csp is dropped: one foreign waker (unless saturated)
    /// and one reference fewer, in one step; true if that was the last reference, and the
    /// caller must free the process. AcqRel, as [`ref_sub`](Self::ref_sub).
    #[must_use]
    #[inline]
    pub(crate) fn foreign_waker_release(&self) -> bool {
        self.update(|s| {
            let next = Snapshot(s.without_foreign_waker().0 - REF_ONE);
            (Some(next), next.ref_count() == 0)
        })
    }

    /// Releases `n` references in one step; true if they were the last, and the caller
    /// must free the process. AcqRel: the release publishes this holder's last
    /// accesses, the acquire makes every other holder's visible to the one that frees.
    #[must_use]
    #[inline]
    pub(crate) fn ref_sub(&self, n: usize) -> bool {
        let prev = Snapshot(self.word.fetch_sub(n * REF_ONE, Ordering::AcqRel));
        debug_assert!(prev.ref_count() >= n, "{prev:?}");
        prev.ref_count() == n
    }
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.load().fmt(f)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn refs(state: &State) -> usize {
        state.load().ref_count()
    }

    #[test]
    fn foreign_wakers_count_saturate_and_stay_saturated() {
        let state = State::new_process();
        let start = refs(&state);
        state.foreign_waker_inc();
        state.foreign_waker_inc();
        assert_eq!(state.load().foreign_wakers(), 2);
        assert_eq!(refs(&state), start + 2);
        assert!(!state.foreign_waker_release());
        assert_eq!(state.load().foreign_wakers(), 1);
        for _ in 0..FOREIGN_MAX + 10 {
            state.foreign_waker_inc();
        }
        assert_eq!(state.load().foreign_wakers(), FOREIGN_MAX);
        assert_eq!(
            refs(&state),
            start + 1 + FOREIGN_MAX + 10,
            "references still count"
        );
        let _ = state.foreign_waker_release();
        assert_eq!(
            state.load().foreign_wakers(),
            FOREIGN_MAX,
            "sticky once saturated"
        );
        assert!(!state.load().is_complete() && !state.load().is_blocking());
    }

    #[test]
    fn a_new_process_is_queued_with_three_references() {
        let state = State::new_process();
        let s = state.load();
        assert_eq!(s.process_state(), ProcessState::Queued);
        assert!(s.has_join_interest() && !s.has_join_waker() && !s.is_complete());
        assert!(!s.is_blocking());
        assert_eq!(s.ref_count(), 3);
        assert!(State::new_blocking().load().is_blocking());
    }

    #[test]
    fn pending_poll_without_wake_sleeps_and_releases_the_entry() {
        let state = State::new_process();
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        assert_eq!(state.load().process_state(), ProcessState::Running);
        assert_eq!(state.transition_to_idle(PollRef::Held), ToIdle::Slept);
        assert_eq!(state.load().process_state(), ProcessState::Sleeping);
        assert_eq!(refs(&state), 2);
    }

    #[test]
    fn a_wake_while_running_is_kept_as_yielding_and_requeued() {
        let state = State::new_process();
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        assert_eq!(state.transition_to_notified_by_ref(), Notify::DoNothing);
        assert_eq!(state.load().process_state(), ProcessState::Yielding);
        // A second wake while yielding changes nothing.
        assert_eq!(state.transition_to_notified_by_ref(), Notify::DoNothing);
        assert_eq!(state.transition_to_idle(PollRef::Held), ToIdle::Requeue);
        assert_eq!(state.load().process_state(), ProcessState::Queued);
        assert_eq!(
            refs(&state),
            3,
            "the entry's reference is kept for the requeue"
        );
    }

    #[test]
    fn wake_of_a_sleeping_process_queues_it_once() {
        let state = State::new_process();
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        assert_eq!(state.transition_to_idle(PollRef::Held), ToIdle::Slept);
        assert_eq!(state.transition_to_notified_by_ref(), Notify::Submit);
        assert_eq!(refs(&state), 3);
        assert_eq!(state.transition_to_notified_by_ref(), Notify::DoNothing);
        assert_eq!(refs(&state), 3);
    }

    #[test]
    fn wake_by_val_hands_its_reference_to_the_queue_entry() {
        let state = State::new_process();
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        assert_eq!(state.transition_to_idle(PollRef::Held), ToIdle::Slept);
        state.ref_inc(); // a waker
        assert_eq!(refs(&state), 3);
        assert_eq!(state.transition_to_notified_by_val(), NotifyByVal::Submit);
        assert_eq!(refs(&state), 3);
        state.ref_inc(); // another waker, woken while queued: just released
        assert_eq!(
            state.transition_to_notified_by_val(),
            NotifyByVal::DoNothing
        );
        assert_eq!(refs(&state), 3);
    }

    #[test]
    fn wake_by_val_of_a_running_process_yields_and_releases() {
        let state = State::new_process();
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        state.ref_inc();
        assert_eq!(
            state.transition_to_notified_by_val(),
            NotifyByVal::DoNothing
        );
        assert_eq!(state.load().process_state(), ProcessState::Yielding);
        assert_eq!(refs(&state), 3);
    }

    #[test]
    fn completion_is_final_and_wakes_do_nothing_after_it() {
        let state = State::new_process();
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        let before = state.transition_to_complete();
        assert!(before.has_join_interest() && !before.is_complete());
        let s = state.load();
        assert!(s.is_complete());
        assert_eq!(s.process_state(), ProcessState::Sleeping);
        assert_eq!(state.transition_to_notified_by_ref(), Notify::DoNothing);
        assert_eq!(state.transition_to_aborted(), Notify::DoNothing);
        assert_eq!(state.transition_to_shutdown(), Shutdown::Done);
        state.ref_inc();
        assert_eq!(
            state.transition_to_notified_by_val(),
            NotifyByVal::DoNothing
        );
        assert_eq!(refs(&state), 3);
    }

    #[test]
    fn the_last_reference_asks_for_deallocation() {
        let state = State::new_process();
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        let _ = state.transition_to_complete();
        assert!(!state.ref_sub(1));
        assert!(!state.ref_sub(1));
        assert_eq!(refs(&state), 1);
        assert_eq!(state.transition_to_notified_by_val(), NotifyByVal::Dealloc);
    }

    #[test]
    fn abort_queues_a_sleeping_process_and_marks_a_running_one() {
        let state = State::new_process();
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        assert_eq!(state.transition_to_idle(PollRef::Held), ToIdle::Slept);
        assert_eq!(state.transition_to_aborted(), Notify::Submit);
        assert_eq!(
            state.transition_to_aborted(),
            Notify::DoNothing,
            "only once"
        );
        assert_eq!(state.transition_to_running(), ToRunning::Cancel);

        let running = State::new_process();
        assert_eq!(running.transition_to_running(), ToRunning::Poll);
        assert_eq!(running.transition_to_aborted(), Notify::DoNothing);
        assert_eq!(running.transition_to_idle(PollRef::Held), ToIdle::Cancel);
    }

    #[test]
    fn shutdown_takes_idle_processes_and_leaves_running_ones_to_their_poller() {
        let queued = State::new_process();
        assert_eq!(queued.transition_to_shutdown(), Shutdown::Cancel);
        let _ = queued.transition_to_complete();
        assert_eq!(queued.transition_to_running(), ToRunning::Stale);

        assert!(!queued.load().registry_left());

        let running = State::new_process();
        assert_eq!(running.transition_to_running(), ToRunning::Poll);
        assert_eq!(running.transition_to_shutdown(), Shutdown::Running);
        assert!(running.load().is_cancelled());
        assert_eq!(
            running.transition_to_idle(PollRef::Lent),
            ToIdle::Cancel,
            "the poller completes it"
        );
        assert!(
            running.transition_to_complete().registry_left(),
            "and learns there that the registry's reference is its own"
        );
    }

    #[test]
    fn a_lent_poll_reference_is_not_released_again() {
        let state = State::new_process();
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        assert_eq!(state.transition_to_idle(PollRef::Lent), ToIdle::Slept);
        assert_eq!(
            refs(&state),
            3,
            "the lent reference lives on with its new holder"
        );
    }

    #[test]
    fn a_lent_poll_reference_is_replaced_for_a_requeue() {
        let state = State::new_process();
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        // The lent reference's holder wakes the process during the poll, releasing it.
        assert_eq!(
            state.transition_to_notified_by_val(),
            NotifyByVal::DoNothing
        );
        assert_eq!(refs(&state), 2);
        assert_eq!(state.transition_to_idle(PollRef::Lent), ToIdle::Requeue);
        assert_eq!(state.load().process_state(), ProcessState::Queued);
        assert_eq!(refs(&state), 3, "one added for the new run queue entry");
    }

    #[test]
    fn foreign_wakers_leave_the_lower_bits_alone() {
        let state = State::new_process();
        for _ in 0..FOREIGN_MAX + 3 {
            state.foreign_waker_inc();
        }
        let s = state.load();
        assert!(!s.registry_left() && !s.is_blocking() && s.has_join_interest());
        assert_eq!(s.process_state(), ProcessState::Queued);
        assert_eq!(s.ref_count(), 3 + FOREIGN_MAX + 3);
    }

    #[test]
    fn join_waker_protocol() {
        let state = State::new_process();
        assert_eq!(state.set_join_waker(), Ok(()));
        assert_eq!(state.unset_join_waker(), Ok(()));
        assert_eq!(state.set_join_waker(), Ok(()));
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        let before = state.transition_to_complete();
        assert!(before.has_join_waker());
        assert!(state.unset_join_waker().is_err());
        assert_eq!(state.unset_join_interest(), JoinDrop::DropOutput);

        let detached = State::new_process();
        assert_eq!(detached.set_join_waker(), Ok(()));
        assert_eq!(
            detached.unset_join_interest(),
            JoinDrop::Detached { owns_waker: true }
        );
        assert!(!detached.load().has_join_waker());
    }
}
