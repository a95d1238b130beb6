//! The poll's reference, lent once.
//!
//! A worker polls a process on the reference of the run queue entry it popped, and a
//! poll that returns `Pending` commonly ends with two changes to the reference count:
//! the wait it registered takes a reference to its own process (a channel entry's
//! owner, the waker in a `JoinHandle`'s slot), and the transition to sleep releases the
//! entry's. The poll offers the entry's reference instead: the first internal reference
//! it takes to its own process ([`take_reference`]) takes that one over, and the
//! transition after the poll releases nothing (`State::transition_to_idle` with
//! [`PollRef::Lent`]). That is one atomic increment fewer for every wait, and the
//! decrement was already part of the transition's compare-and-swap.
//!
//! While the reference is lent, its holder may release it from any thread (a claimer
//! wakes the owner), so the poller holds none of that kind: the registry's reference,
//! which nobody but the poller may release while the process runs (I2 below), keeps the
//! process alive until the poller has completed it or put it to sleep.
//!
//! # Who holds which reference
//!
//! A process has one reference per holder: the run queue entry, or the handoff slot, that
//! a worker runs it from (*E* below); its registry entry (*R*); its `JoinHandle`; and each
//! waker and internal wait. A worker touches a process only while a reference keeps it
//! alive that nobody can release under it. Two invariants make that so on every path:
//!
//! - **I1.** *E* is released only by its holder: the worker, until the poll lends it; then
//!   the wait that took it over, from any thread.
//! - **I2.** Until a process is complete, *R* is released only by whoever completes it.
//!   The registry gives *R* up only by unlinking the process: a completer unlinks it
//!   itself (`Scheduler::release`, under its shard's lock) before it publishes
//!   completion, and the shutdown walker (`Registry::close_and_shutdown_all`) makes the
//!   process's shutdown transition under the same lock as the unlink. A `Sleeping` or
//!   `Queued` process becomes the walker's to cancel and complete; a `Running` one keeps
//!   *R* for its poller (`REGISTRY_LEFT`, state.rs). So a completer either unlinked the
//!   process itself or finds *R* left to it when it publishes completion, and releases
//!   *R* only after its last touch of the process. (Were the walker's transition made
//!   after its unlock, it could find the process completed by a poller that relied on
//!   *R*, and free it under that poller.)
//!
//! | step | *E* is held by | the process is kept alive for the worker by |
//! |---|---|---|
//! | popped from a queue, `Queued` → `Running` (`harness.rs`, `run`) | the worker | *E* |
//! | woken into the handoff slot, `Sleeping` → `Running` (`RawTask::hand_off_by_val`) | the slot: the waker's reference, given up | *E* |
//! | polled, the offer open | the worker | *E* |
//! | polled, an internal reference taken ([`take_reference`]) | the wait ([`PollRef::Lent`]) | *R* (I2) |
//! | `Pending` → `Slept` | released in the transition, or the wait | nothing: the worker lets go |
//! | `Pending` → `Requeue` | the new queue entry: *E*, or one the transition added while *R* kept the process | the entry, once handed over |
//! | `Pending` → `Cancel`, or `Ready` (`cancel`, `complete`) | the worker, or the wait | *E* if held, else *R*; *R* is the completer's from when it leaves the registry or finds `REGISTRY_LEFT`, released with *E* after its last touch |
//! | resting: `Pending`, the transition put off (`Resting`) | the worker, or the wait | *E* if held, else *R* (I2), as during the poll |
//! | resting, woken by this worker's next poll (`Resting::woken`) | the slot, if the poll held it (the waker's reference is released, never the last); if lent, its wait still, and the slot takes the waker's reference (*E* itself when that wait is the waker) | the slot's reference |
//! | resting, woken by a waker that keeps its reference (`Resting::woken_by_ref`) | the slot: *E*, or one added while *R* kept the process | *E* |
//! | resting, put to sleep (`Resting::sleep`; then `Unslept`, finished by `Local::finish_unslept` through the vtable's `not_slept`, for a re-queue or a cancellation) | as after a poll | as after a poll |
//! | the handoff slot left unpolled (`Handed::into_queued`) | the queue entry | *E* |
//! | drained at a worker's exit (`Local::drain`: its slots, its held-back entries, its queue) or from the injector at shutdown (`Shared::drain_injector`, on whichever thread finds it), each through `Notified::discard` | the queue entry: run if `REGISTRY_LEFT` (the thread is then the poller shutdown left *R* to, and completes the process), else released | *E*, then *R* if run |
//! | shutdown walker, the process `Sleeping` or `Queued` | a queue entry if any, which finds it `Running` under the walker or complete: stale either way | *R*, the walker's: released after it cancels and completes the process |
//! | a spawn refused at shutdown (`Shared::reject`), never linked | the new entry, dropped | *R*, the spawner's: released after it cancels and completes the process |
//! | shutdown walker, the process `Running` (polled, resting, or in a handoff slot) | the worker, or the wait | *R*, passed to the worker with `REGISTRY_LEFT` under the lock that unlinked it |
//!
//! A future a worker drops in any of these steps (a cancellation) is dropped with the
//! thread marked as polling, as in a poll (`runtime/worker.rs`): its `Drop` is user code
//! on a worker. One dropped by the shutdown walker, a refused spawn or the injector's
//! drain runs on the thread that shuts the runtime down or spawned, which is not a
//! worker.

use std::cell::Cell;
use std::ptr::{self, NonNull};

use crate::task::header::Header;
use crate::task::raw::RawTask;

#[cfg(not(loom))]
std::thread_local! {
    /// The header of the process whose poll on this thread offers its reference, or
    /// null: none is offered, or the offer was taken.
    static OFFERED: Cell<*const Header> = const { Cell::new(ptr::null()) };
}

// loom's `thread_local!` has no `const` form.
#[cfg(loom)]
crate::loom::thread_local! {
    static OFFERED: Cell<*const Header> = Cell::new(ptr::null());
}

/// What became of the reference a poll was made on.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PollRef {
    /// The poller still holds it.
    Held,
    /// The poll took an internal reference to its own process, which took this one over.
    Lent,
}

/// An offer of the reference of the poll in progress on this thread; made before the
/// poll, settled after it.
pub(crate) struct Offer {
    header: *const Header,
    /// The offer of an enclosing poll on this thread, if any, restored by `settle`.
    outer: *const Header,
}

impl Offer {
    /// Offers the reference of the poll about to run of the process at `header`.
    #[inline]
    pub(crate) fn new(header: NonNull<Header>) -> Offer {
        let header = header.as_ptr().cast_const();
        let outer = OFFERED
            .try_with(|offered| offered.replace(header))
            .unwrap_or(ptr::null());
        Offer { header, outer }
    }

    /// Withdraws the offer once the poll has returned: says whether it was taken.
    #[inline]
    pub(crate) fn settle(self) -> PollRef {
        let left = OFFERED
            .try_with(|offered| offered.replace(self.outer))
            .unwrap_or(self.header);
        if left == self.header {
            PollRef::Held
        } else {
            PollRef::Lent
        }
    }
}

/// A new reference to `raw`, for an internal holder (not a `Waker` held outside csp):
/// the reference the poll of `raw` on this thread offers, if it is still on offer, else
/// one more.
#[inline]
pub(crate) fn take_reference(raw: RawTask) -> RawTask {
    let header = raw.as_ptr().as_ptr().cast_const();
    let taken = OFFERED
        .try_with(|offered| {
            let on_offer = offered.get() == header;
            if on_offer {
                offered.set(ptr::null());
            }
            on_offer
        })
        .unwrap_or(false);
    if !taken {
        raw.ref_inc();
    }
    raw
}
