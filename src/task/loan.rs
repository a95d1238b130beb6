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
//! wakes the owner), so the poller holds none of its own: the registry's reference keeps
//! the process alive until the poller has completed it or put it to sleep. Shutdown,
//! which takes the registry's references, leaves the reference of a process being polled
//! to its poller (`REGISTRY_LEFT`, state.rs), so that holds until the poller is done.

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
