//! A timer's entry in the wheel: an intrusive list node that lives inside the pinned
//! `Sleep` (or inside the shared state of an `after`/`tick` channel), so arming a timer
//! allocates nothing.
//!
//! Every field but `fired` and `shard` is read and written only under the lock of the
//! wheel the entry is (or will be) linked into; `fired` is also read lock-free by the
//! owner, and `shard` (which wheel that is) is the owner's, read to find the lock.

use std::marker::PhantomPinned;
use std::ptr::NonNull;

use std::sync::Arc;
use std::time::Instant;

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use crate::runtime::timer::Timers;
use crate::wait::claim::Owner;

/// A timer that feeds a channel (`after`, `tick`: `time/channel.rs`), as the runtime's
/// timer driver sees it. Held in std's `Arc`, whose trait objects loom's cannot make;
/// these channels are in no loom model.
pub(crate) trait FedChannel: Send + Sync {
    /// The timer's entry, living inside it.
    fn entry(&self) -> NonNull<Entry>;

    /// The deadline came (at `now`): feed the channel, and re-arm a periodic timer in
    /// `timers`.
    fn fire(self: Arc<Self>, timers: &Timers, now: Instant);

    /// The runtime shuts down: close the channel.
    fn close(&self);

    /// True once the channel is closed (nobody listens).
    fn is_closed(&self) -> bool;
}

/// What an entry does when it expires.
pub(crate) enum Action {
    /// Nothing to do (not armed yet, or already fired).
    None,
    /// Wake a waiting `Sleep`'s owner.
    Wake(Owner),
    /// Feed an `after`/`tick` channel. The entry lives inside this very timer: while
    /// linked, the wheel keeps it alive through this reference.
    Channel(Arc<dyn FedChannel>),
}

/// Where an entry is linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Position {
    Unlinked,
    /// In the wheel's slot `level * SLOTS + slot`.
    Slot(u16),
    /// In the list of entries taken from an expired slot, not yet sorted out.
    Pending,
}

pub(crate) struct Entry {
    /// The deadline, in ticks of the wheel's clock.
    deadline: UnsafeCell<u64>,
    prev: UnsafeCell<Option<NonNull<Entry>>>,
    next: UnsafeCell<Option<NonNull<Entry>>>,
    position: UnsafeCell<Position>,
    action: UnsafeCell<Action>,
    /// Set (under the wheel lock) when the entry expires; read lock-free by its owner.
    fired: AtomicBool,
    /// The shard (`timers.rs`) whose wheel the entry was last armed in: written by the
    /// thread that arms it, read by the ones that disarm, re-arm or re-poll it, which
    /// the entry's owner orders after the arm (one process, or a channel's timer armed
    /// before it is shared).
    shard: AtomicUsize,
    _pinned: PhantomPinned,
}

// SAFETY: the cells are accessed only under the wheel lock (module docs); `Action` is
// Send (an owner, or an `Arc` of a Send + Sync timer).
unsafe impl Send for Entry {}
// SAFETY: as above.
unsafe impl Sync for Entry {}

impl Entry {
    #[inline]
    pub(crate) fn new() -> Entry {
        Entry {
            deadline: UnsafeCell::new(0),
            prev: UnsafeCell::new(None),
            next: UnsafeCell::new(None),
            position: UnsafeCell::new(Position::Unlinked),
            action: UnsafeCell::new(Action::None),
            fired: AtomicBool::new(false),
            shard: AtomicUsize::new(0),
            _pinned: PhantomPinned,
        }
    }

    /// True once the entry expired (until it is armed again).
    pub(crate) fn has_fired(&self) -> bool {
        // Acquire: pairs with the Release in `set_fired`.
        self.fired.load(Ordering::Acquire)
    }

    /// Marks the entry expired (by the wheel's driver) or not (when re-armed).
    ///
    /// # Safety
    /// The wheel lock is held.
    pub(crate) unsafe fn set_fired(&self, fired: bool) {
        // Release: the owner that sees `true` also sees the unlinking.
        self.fired.store(fired, Ordering::Release);
    }

    /// The shard the entry was last armed in (0 if never).
    pub(crate) fn shard(&self) -> usize {
        // Relaxed: ordered by the entry's owner (field docs).
        self.shard.load(Ordering::Relaxed)
    }

    /// Records the shard the entry is being armed in.
    ///
    /// # Safety
    /// The entry is unlinked, and no other thread reads its shard until the owner
    /// orders it after this call (field docs).
    pub(crate) unsafe fn set_shard(&self, shard: usize) {
        // Relaxed: as in `shard`.
        self.shard.store(shard, Ordering::Relaxed);
    }

    /// # Safety
    /// The wheel lock is held.
    pub(crate) unsafe fn deadline(&self) -> u64 {
        // SAFETY: per the caller.
        self.deadline.with(|d| unsafe { *d })
    }

    /// # Safety
    /// The wheel lock is held and the entry is unlinked.
    pub(crate) unsafe fn set_deadline(&self, deadline: u64) {
        // SAFETY: per the caller.
        self.deadline.with_mut(|d| unsafe { *d = deadline })
    }

    /// # Safety
    /// The wheel lock is held.
    pub(crate) unsafe fn position(&self) -> Position {
        // SAFETY: per the caller.
        self.position.with(|p| unsafe { *p })
    }

    /// # Safety
    /// The wheel lock is held.
    pub(crate) unsafe fn set_position(&self, position: Position) {
        // SAFETY: per the caller.
        self.position.with_mut(|p| unsafe { *p = position })
    }

    /// Replaces the action, returning the old one (to drop after unlocking).
    ///
    /// # Safety
    /// The wheel lock is held.
    pub(crate) unsafe fn replace_action(&self, action: Action) -> Action {
        // SAFETY: per the caller.
        self.action
            .with_mut(|a| unsafe { std::mem::replace(&mut *a, action) })
    }

    /// True if the action wakes the owner behind `waker` already.
    ///
    /// # Safety
    /// The wheel lock is held.
    pub(crate) unsafe fn wakes(&self, waker: &std::task::Waker) -> bool {
        // SAFETY: per the caller.
        self.action.with(|a| match unsafe { &*a } {
            Action::Wake(owner) => owner.will_wake(waker),
            _ => false,
        })
    }

    /// # Safety
    /// The wheel lock is held.
    pub(crate) unsafe fn prev(&self) -> Option<NonNull<Entry>> {
        // SAFETY: per the caller.
        self.prev.with(|p| unsafe { *p })
    }

    /// # Safety
    /// The wheel lock is held.
    pub(crate) unsafe fn next(&self) -> Option<NonNull<Entry>> {
        // SAFETY: per the caller.
        self.next.with(|p| unsafe { *p })
    }

    /// # Safety
    /// The wheel lock is held.
    pub(crate) unsafe fn set_prev(&self, prev: Option<NonNull<Entry>>) {
        // SAFETY: per the caller.
        self.prev.with_mut(|p| unsafe { *p = prev })
    }

    /// # Safety
    /// The wheel lock is held.
    pub(crate) unsafe fn set_next(&self, next: Option<NonNull<Entry>>) {
        // SAFETY: per the caller.
        self.next.with_mut(|p| unsafe { *p = next })
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("fired", &self.has_fired())
            .finish_non_exhaustive()
    }
}
