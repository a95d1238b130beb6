//! A waiting operation's entry in a channel's wait list, and the list itself.
//!
//! Entries live inside the pinned future that waits (or, for `poll_recv` and the
//! `Stream` impl, in a node boxed once per `Receiver`). They are linked, unlinked and
//! their values moved only under the lock of their channel; a future's `Drop` unlinks its
//! entry under that lock before the memory goes, so no claimer can touch freed memory.

use std::marker::PhantomPinned;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

use crate::loom::cell::UnsafeCell;
use crate::wait::claim::Claim;

/// One waiting send, recv or close-watch on one channel.
pub(crate) struct Waiter<T> {
    /// The choice this entry is an arm of, and its arm number there: set by the owner
    /// before linking, read by claimers under the lock.
    choice: UnsafeCell<Option<(NonNull<Claim>, usize)>>,
    /// A send's value until taken; a recv's value once delivered.
    slot: UnsafeCell<Option<T>>,
    /// Where the value is instead of `slot`: the one value a `send_any` arm offers on
    /// all its channels. Whoever claims the arm's flag owns it, as with `slot`.
    shared_slot: Option<NonNull<UnsafeCell<Option<T>>>>,
    /// The neighbours in its wait list, `None` at either end and while unlinked (so an
    /// entry is linked exactly when it has a `prev` or is its list's head: no flag
    /// of its own, which keeps the entry, built afresh by every choice, small).
    prev: UnsafeCell<Option<NonNull<Waiter<T>>>>,
    next: UnsafeCell<Option<NonNull<Waiter<T>>>>,
    _pinned: PhantomPinned,
}

// SAFETY: the entry is reached from other threads only under its channel's lock, and
// the values it carries are `T: Send`.
unsafe impl<T: Send> Send for Waiter<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Waiter<T> {}

impl<T> Waiter<T> {
    /// An unlinked entry, holding `value` (a send's) if any.
    pub(crate) fn new(value: Option<T>) -> Waiter<T> {
        Waiter {
            choice: UnsafeCell::new(None),
            slot: UnsafeCell::new(value),
            shared_slot: None,
            prev: UnsafeCell::new(None),
            next: UnsafeCell::new(None),
            _pinned: PhantomPinned,
        }
    }

    /// An unlinked send entry whose value lives at `slot`, shared with other entries of
    /// the same choice (so at most one of them can take it: the one whose claim wins).
    ///
    /// # Safety
    /// `slot` outlives the entry, and is only accessed as the entry's own slot would be.
    pub(crate) unsafe fn with_shared_slot(slot: NonNull<UnsafeCell<Option<T>>>) -> Waiter<T> {
        Waiter {
            shared_slot: Some(slot),
            ..Waiter::new(None)
        }
    }

    /// Makes the entry arm `arm` of the choice whose flag is `claim`.
    ///
    /// # Safety
    /// The caller owns the unlinked entry, and `claim` outlives its next linking.
    #[inline]
    pub(crate) unsafe fn set_choice(&self, claim: NonNull<Claim>, arm: usize) {
        // SAFETY: unlinked, so only the owner touches it.
        self.choice
            .with_mut(|choice| unsafe { *choice = Some((claim, arm)) });
    }

    /// True from [`set_choice`](Self::set_choice) until
    /// [`clear_choice`](Self::clear_choice): while this is false, the entry is not
    /// linked. For the owner.
    #[inline]
    pub(crate) fn is_chosen(&self) -> bool {
        // SAFETY: written only by the owner (the caller), read by claimers: no write
        // races this read.
        self.choice.with(|choice| unsafe { (*choice).is_some() })
    }

    /// The owner knows the entry unlinked (it unlinked it, or its claim fired it).
    ///
    /// # Safety
    /// The caller owns the entry, which is unlinked, and no claimer is still reading it
    /// (the caller holds the lock it was unlinked under, or saw its claim fired).
    #[inline]
    pub(crate) unsafe fn clear_choice(&self) {
        // SAFETY: per the caller.
        self.choice.with_mut(|choice| unsafe { *choice = None });
    }

    #[inline]
    fn choice(&self) -> (NonNull<Claim>, usize) {
        // SAFETY: read by claimers under the lock while linked, or by the owner; written
        // only by the owner while unlinked.
        self.choice
            .with(|choice| unsafe { *choice })
            .expect("csp: a channel entry was linked without a choice")
    }

    #[inline]
    pub(crate) fn claim(&self) -> &Claim {
        // SAFETY: the flag outlives the entry's linking (`set_choice`'s contract).
        unsafe { self.choice().0.as_ref() }
    }

    #[inline]
    pub(crate) fn arm(&self) -> usize {
        self.choice().1
    }

    /// The value slot (its own, or the one it shares with the other entries of a
    /// `send_any` arm).
    ///
    /// # Safety
    /// The access must be exclusive: the caller holds the channel lock and has won the
    /// entry's claim (or is completing it, `BUSY`), or links or unlinks the entry under
    /// every lock of its choice; otherwise it is the owner, with the claim not
    /// `WAITING`. (For a shared slot, one channel's lock alone excludes no claimer on
    /// another channel: the claim does.)
    #[inline]
    pub(crate) unsafe fn with_slot<R>(&self, f: impl FnOnce(&mut Option<T>) -> R) -> R {
        // SAFETY: `shared_slot` outlives the entry (`with_shared_slot`).
        let slot = match self.shared_slot {
            Some(shared) => unsafe { shared.as_ref() },
            None => &self.slot,
        };
        // SAFETY: exclusive per the caller's contract.
        slot.with_mut(|slot| f(unsafe { &mut *slot }))
    }
}

/// A [`Waiter`] built in place the first time its operation registers. Most operations
/// complete at once and never wait, and an `alt!` builds one operation per arm on every
/// pass: building the entry only for those that wait saves its stores (and the copy
/// of them into the process's state) everywhere else.
pub(crate) struct LazyWaiter<T> {
    /// Whether `entry` holds a built entry: set once, by the owner, in
    /// [`get_or_build`](Self::get_or_build); read only by the owner.
    built: UnsafeCell<bool>,
    /// The entry once `built`; uninitialised before.
    entry: UnsafeCell<MaybeUninit<Waiter<T>>>,
}

impl<T> LazyWaiter<T> {
    #[inline]
    pub(crate) fn new() -> LazyWaiter<T> {
        LazyWaiter {
            built: UnsafeCell::new(false),
            entry: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// The entry, built (empty and unlinked) if it was not yet.
    ///
    /// # Safety
    /// Only the operation's owner calls this, with the entry unlinked (so no claimer is
    /// using it).
    #[inline]
    pub(crate) unsafe fn get_or_build(&self) -> NonNull<Waiter<T>> {
        // SAFETY: per the caller.
        if let Some(entry) = unsafe { self.get() } {
            return entry;
        }
        // Written in place, not built aside and moved into an `Option`: that move copied
        // the unwritten bytes of the entry's empty `slot` with a load wider than the
        // stores beside them, which stalled on them (some 10% of a ring hop's time).
        // SAFETY: per the caller, nobody else reaches the flag or the entry now.
        let entry = self
            .entry
            .with_mut(|entry| NonNull::from(unsafe { (*entry).write(Waiter::new(None)) }));
        self.built.with_mut(|built| unsafe { *built = true });
        entry
    }

    /// True if the entry was built and belongs to a choice ([`Waiter::is_chosen`]).
    /// For the owner.
    #[inline]
    pub(crate) fn is_chosen(&self) -> bool {
        // SAFETY: the owner's shared look at its own entry, whose choice claimers only
        // read.
        unsafe { self.get() }.is_some_and(|entry| unsafe { entry.as_ref() }.is_chosen())
    }

    /// The entry, if it was ever built (only a built one can be linked or fired).
    ///
    /// # Safety
    /// Only the operation's owner calls this.
    #[inline]
    pub(crate) unsafe fn get(&self) -> Option<NonNull<Waiter<T>>> {
        // SAFETY: the flag is the owner's, and the caller is the owner.
        if !self.built.with(|built| unsafe { *built }) {
            return None;
        }
        // SAFETY: built; a shared look by the owner, the only one who builds the entry;
        // claimers reach only its fields, which are cells of their own.
        Some(
            self.entry
                .with(|entry| NonNull::from(unsafe { (*entry).assume_init_ref() })),
        )
    }
}

impl<T> Drop for LazyWaiter<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: nobody else reaches the entry (an operation unlinks its
        // entry before its fields drop); a built entry is initialised.
        unsafe {
            if let Some(entry) = self.get() {
                entry.as_ptr().drop_in_place();
            }
        }
    }
}

/// A FIFO of entries.
pub(crate) struct WaitList<T> {
    head: Option<NonNull<Waiter<T>>>,
    tail: Option<NonNull<Waiter<T>>>,
}

// SAFETY: the list is only touched under its channel's lock.
unsafe impl<T: Send> Send for WaitList<T> {}

impl<T> Default for WaitList<T> {
    fn default() -> Self {
        WaitList {
            head: None,
            tail: None,
        }
    }
}

impl<T> WaitList<T> {
    /// Appends an entry.
    ///
    /// # Safety
    /// The caller holds the channel lock; `waiter` is pinned, not linked, and stays
    /// alive until unlinked.
    #[inline]
    pub(crate) unsafe fn push_back(&mut self, waiter: NonNull<Waiter<T>>) {
        // SAFETY: under the lock; the entry is ours to link.
        unsafe {
            debug_assert!(!self.contains(waiter));
            let w = waiter.as_ref();
            w.prev.with_mut(|p| *p = self.tail);
            w.next.with_mut(|n| *n = None);
            match self.tail {
                Some(tail) => tail.as_ref().next.with_mut(|n| *n = Some(waiter)),
                None => self.head = Some(waiter),
            }
        }
        self.tail = Some(waiter);
    }

    /// Unlinks an entry if it is linked in this list.
    ///
    /// # Safety
    /// The caller holds the channel lock, and `waiter` is alive and, if linked, in this
    /// list.
    #[inline]
    pub(crate) unsafe fn remove(&mut self, waiter: NonNull<Waiter<T>>) {
        // SAFETY: under the lock; linked entries are alive.
        unsafe {
            if !self.contains(waiter) {
                return;
            }
            let w = waiter.as_ref();
            let prev = w.prev.with(|p| *p);
            let next = w.next.with(|n| *n);
            match prev {
                Some(p) => p.as_ref().next.with_mut(|n| *n = next),
                None => self.head = next,
            }
            match next {
                Some(n) => n.as_ref().prev.with_mut(|p| *p = prev),
                None => self.tail = prev,
            }
            w.prev.with_mut(|p| *p = None);
            w.next.with_mut(|n| *n = None);
        }
    }

    /// Whether `waiter` is linked here.
    ///
    /// # Safety
    /// The caller holds the channel lock, and `waiter` is alive and, if linked, in this
    /// list.
    #[inline]
    unsafe fn contains(&self, waiter: NonNull<Waiter<T>>) -> bool {
        // SAFETY: under the lock; the entry is alive. An entry with a `prev` is linked
        // (an unlinked one has none); one without is linked only as the head.
        self.head == Some(waiter) || unsafe { waiter.as_ref().prev.with(|p| (*p).is_some()) }
    }

    /// The first entry, if any.
    #[inline]
    pub(crate) fn front(&self) -> Option<NonNull<Waiter<T>>> {
        self.head
    }

    /// Calls `f` with every linked entry, front to back.
    ///
    /// # Safety
    /// The caller holds the channel lock.
    pub(crate) unsafe fn for_each(&self, mut f: impl FnMut(&Waiter<T>)) {
        let mut next = self.head;
        while let Some(entry) = next {
            // SAFETY: under the lock; linked entries are alive.
            unsafe {
                f(entry.as_ref());
                next = self.next(entry);
            }
        }
    }

    /// The entry after `waiter`.
    ///
    /// # Safety
    /// The caller holds the channel lock and `waiter` is linked in this list.
    #[inline]
    pub(crate) unsafe fn next(&self, waiter: NonNull<Waiter<T>>) -> Option<NonNull<Waiter<T>>> {
        // SAFETY: under the lock; linked entries are alive.
        unsafe { waiter.as_ref().next.with(|n| *n) }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::LazyWaiter;

    /// A value whose drops are counted.
    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_lazy_entry_is_built_once_on_first_use() {
        let lazy = LazyWaiter::<u64>::new();
        // SAFETY: this test owns the entry, which is never linked.
        unsafe {
            assert!(lazy.get().is_none(), "built before it was asked for");
            assert!(!lazy.is_chosen());
            let built = lazy.get_or_build();
            assert_eq!(lazy.get(), Some(built));
            assert_eq!(lazy.get_or_build(), built, "built a second time");
            assert!(built.as_ref().with_slot(|slot| slot.is_none()));
            assert!(!lazy.is_chosen(), "a fresh entry belongs to no choice");
        }
    }

    #[test]
    fn a_built_entry_drops_the_value_in_its_slot_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let never_built = LazyWaiter::<Counted>::new();
        drop(never_built);
        let lazy = LazyWaiter::<Counted>::new();
        // SAFETY: this test owns the entry, which is never linked.
        unsafe {
            let entry = lazy.get_or_build();
            entry
                .as_ref()
                .with_slot(|slot| *slot = Some(Counted(drops.clone())));
        }
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        drop(lazy);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }
}
