//! The wakers of the tasks waiting in one direction of an I/O source, which the driver
//! takes and wakes from another thread: the latest in a slot with no lock, any other
//! task waiting in the same direction (two processes accepting on one listener, reading
//! one `&TcpStream`) in a list beside it.
//!
//! | state       | meaning                                                  |
//! |-------------|----------------------------------------------------------|
//! | `IDLE`      | nobody is in the slot: the waker there (if any) is settled |
//! | `STORING`   | a waiting task is putting its waker in                    |
//! | `TAKING`    | the driver is taking the waker out to wake it             |
//! | both        | the driver came while a waker was being stored: the storer wakes it |
//!
//! Whoever moves the state from `IDLE` to `STORING` or `TAKING` owns the cell until it
//! moves it back. A wake that finds a store under way only marks `TAKING`, and the storer,
//! finding the mark when it tries to go back to `IDLE`, takes its own waker out and wakes
//! it, with the others: a wake is never lost, and a waker is woken (and dropped) outside
//! the cell.
//!
//! A waker of another task that a store replaces goes to the list (`others`, under a
//! lock taken only when two tasks wait in one direction), and every wake wakes the whole
//! list too: each of those tasks tries again and waits again, so none misses an event.
//!
//! A waker is its owner's code: its clone, wake and drop may panic. None of them runs
//! while the cell is owned, so a panic never leaves the state stuck, and a wake reaches
//! every waker it is for whatever one of them does: a panic is resumed once all are
//! woken (or let go, if the thread is unwinding already: `task::panic::resume`).
//!
//! A waiting task stores its waker and then looks at the readiness word again; the driver
//! sets the readiness word and then wakes. Either the driver's take finds the waker, or
//! the task's store, ordered after the take, makes the task's second look see the
//! readiness (`scheduled_io.rs`).

use std::task::Waker;

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::Mutex;
use crate::loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use crate::task::panic::FirstPanic;

const IDLE: usize = 0;
const STORING: usize = 1;
const TAKING: usize = 2;

/// The wakers of one direction of a source.
pub(crate) struct WakerSlot {
    state: AtomicUsize,
    waker: UnsafeCell<Option<Waker>>,
    /// Wakers of other tasks waiting in this direction, pushed out of the slot by a
    /// newer one.
    others: Mutex<Vec<Waker>>,
    /// `others` is not empty (changed under its lock).
    has_others: AtomicBool,
}

// SAFETY: the cell is reached only by whoever moved the state out of `IDLE` (module docs),
// one thread at a time; `Waker` is `Send + Sync`.
unsafe impl Send for WakerSlot {}
// SAFETY: as above.
unsafe impl Sync for WakerSlot {}

impl WakerSlot {
    pub(crate) fn new() -> WakerSlot {
        WakerSlot {
            state: AtomicUsize::new(IDLE),
            waker: UnsafeCell::new(None),
            others: Mutex::new(Vec::new()),
            has_others: AtomicBool::new(false),
        }
    }

    /// Stores `waker` as one to wake next. A waker of another task that was there joins
    /// the others. If a wake comes meanwhile, or one is under way, `waker` is woken.
    ///
    /// No foreign code runs while the cell is ours: `will_wake` compares pointers, the
    /// clone of `waker` is made with the cell let go (cloning runs the waker's own code,
    /// which may panic), and a waker this store drops or wakes is dropped or woken after
    /// the state is back to `IDLE`.
    pub(crate) fn store(&self, waker: &Waker) {
        let mut fresh: Option<Waker> = None;
        loop {
            if self
                .state
                .compare_exchange(IDLE, STORING, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // A wake is under way, or another task is storing: this one is woken at
                // once and will look at the readiness again.
                waker.wake_by_ref();
                return;
            }
            // SAFETY: `STORING` makes the cell ours.
            let stored = self.waker.with_mut(|slot| unsafe {
                match &mut *slot {
                    Some(stored) if stored.will_wake(waker) => Stored::Kept,
                    slot => match fresh.take() {
                        Some(fresh) => Stored::Replaced(slot.replace(fresh)),
                        None => Stored::NeedsClone,
                    },
                }
            });
            // A replaced waker is pushed before the cell is let go: a wake that comes
            // next must find it.
            let (duplicate, done) = match stored {
                Stored::Kept => (None, true),
                Stored::Replaced(replaced) => (replaced.and_then(|r| self.push_other(r)), true),
                Stored::NeedsClone => (None, false),
            };
            self.let_go();
            drop(duplicate);
            if done {
                return;
            }
            fresh = Some(waker.clone());
        }
    }

    /// Moves the state from `STORING` back to `IDLE`; a wake that came meanwhile is ours
    /// to deliver, to the waker in the cell and to the others (the waker may not have
    /// seen them).
    fn let_go(&self) {
        if self
            .state
            .compare_exchange(STORING, IDLE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return;
        }
        // SAFETY: the state is `STORING | TAKING`: still ours.
        let ours = self.waker.with_mut(|slot| unsafe { (*slot).take() });
        // AcqRel: as the take's release of the cell, and the next owner's acquire of it.
        self.state.swap(IDLE, Ordering::AcqRel);
        self.deliver(ours);
    }

    /// Keeps `waker`, of a task pushed out of the slot, with the others; gives it back
    /// if that task's waker is there already, for the caller to drop once the cell is
    /// let go.
    #[cold]
    fn push_other(&self, waker: Waker) -> Option<Waker> {
        let mut others = self.others.lock();
        if others.iter().any(|other| other.will_wake(&waker)) {
            // The list is not empty, so `has_others` is set already.
            return Some(waker);
        }
        others.push(waker);
        // Relaxed: changed and read under the lock; the slot's state orders it for the
        // driver (module docs).
        self.has_others.store(true, Ordering::Relaxed);
        None
    }

    /// Wakes the stored waker and the others; if a waker is being stored, its storer
    /// wakes it (and the others).
    pub(crate) fn wake(&self) {
        if let Some(waker) = self.take() {
            self.deliver(waker);
        }
    }

    /// Wakes `waker` (taken out of the cell, which is let go) and every task pushed out
    /// of the slot, each whatever the others' wakers do: a waker's panic is resumed once
    /// all are woken (`wake_each`).
    fn deliver(&self, waker: Option<Waker>) {
        // Relaxed: a store of `true` that matters is ordered before this by the slot's
        // state (its storer's release, our acquire); a stale `true` costs one lock. A
        // task pushed out after the take stored its waker after the event was set, and
        // its own second look sees it.
        if !self.has_others.load(Ordering::Relaxed) {
            // The common case: one waker, and no other for its panic to skip.
            if let Some(waker) = waker {
                waker.wake();
            }
            return;
        }
        let others = {
            let mut others = self.others.lock();
            // Relaxed: under the lock.
            self.has_others.store(false, Ordering::Relaxed);
            std::mem::take(&mut *others)
        };
        wake_each(waker.into_iter().chain(others));
    }

    /// Takes the stored waker to wake it, or leaves the wake to a storer under way
    /// (`None`, and then the storer wakes the others too).
    fn take(&self) -> Option<Option<Waker>> {
        match self.state.fetch_or(TAKING, Ordering::AcqRel) {
            IDLE => {
                // SAFETY: `TAKING` from `IDLE` makes the cell ours.
                let waker = self.waker.with_mut(|slot| unsafe { (*slot).take() });
                // Release: the storer that next takes the slot sees it emptied.
                self.state.fetch_and(!TAKING, Ordering::Release);
                Some(waker)
            }
            // A store under way delivers it, or another take is.
            _ => None,
        }
    }

    /// Drops the stored wakers (the source is going away, perhaps in the `Drop` of a
    /// socket whose owner is unwinding: a waker's panic is then let go, as
    /// `FirstPanic::resume` lets it go).
    pub(crate) fn clear(&self) {
        // Every one dropped though one's drop panics: the first panic goes on after.
        let mut panic = FirstPanic::default();
        let stored = self.take();
        panic.catch(move || drop(stored));
        // Dropped outside the lock: a waker's drop is its owner's code. One at a time,
        // each caught (a second panic in one drop of the whole list would abort).
        let others = std::mem::take(&mut *self.others.lock());
        for waker in others {
            panic.catch(move || drop(waker));
        }
        panic.resume();
    }
}

/// What a store found in the cell.
enum Stored {
    /// The same task's waker: kept.
    Kept,
    /// Replaced by the fresh clone; the waker that was there, if any.
    Replaced(Option<Waker>),
    /// Another task's waker, or none, and no clone made yet.
    NeedsClone,
}

/// Wakes every one of `wakers`, whatever the others do: the first panic is resumed
/// once all are woken, unless the thread is unwinding already (`FirstPanic::resume`).
fn wake_each(wakers: impl IntoIterator<Item = Waker>) {
    let mut panic = FirstPanic::default();
    for waker in wakers {
        panic.catch(|| waker.wake());
    }
    panic.resume();
}

impl std::fmt::Debug for WakerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WakerSlot")
            .field("state", &self.state.load(Ordering::Relaxed))
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::sync::Arc;

    use super::*;
    use crate::task::test_wakers::{clone_panics, counting, drop_panics, panicking};

    #[test]
    fn clearing_drops_every_waker_though_drops_panic() {
        let slot = WakerSlot::new();
        let drops = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        // Two tasks' wakers: one stored, one pushed out to the others; the slot holds
        // the last clone of each.
        slot.store(&drop_panics(&drops));
        slot.store(&drop_panics(&drops));
        let payload = catch_unwind(AssertUnwindSafe(|| slot.clear()))
            .expect_err("the first drop's panic goes on");
        drop(payload);
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[test]
    fn the_stored_waker_is_woken_once() {
        let slot = WakerSlot::new();
        let (counter, waker) = counting();
        slot.store(&waker);
        slot.wake();
        slot.wake();
        assert_eq!(counter.wakes(), 1);
    }

    #[test]
    fn the_same_task_stores_its_waker_once() {
        let slot = WakerSlot::new();
        let (counter, waker) = counting();
        slot.store(&waker);
        slot.store(&waker.clone());
        assert_eq!(Arc::strong_count(&counter), 3, "one clone kept");
        slot.wake();
        assert_eq!(counter.wakes(), 1);
    }

    #[test]
    fn a_task_pushed_out_of_the_slot_is_woken_too() {
        let slot = WakerSlot::new();
        let (first, first_waker) = counting();
        let (second, second_waker) = counting();
        slot.store(&first_waker);
        slot.store(&second_waker);
        slot.store(&second_waker);
        slot.wake();
        assert_eq!((first.wakes(), second.wakes()), (1, 1));
        slot.wake();
        assert_eq!((first.wakes(), second.wakes()), (1, 1), "each once");
    }

    #[test]
    fn a_waker_that_panics_does_not_keep_the_others_asleep() {
        let slot = WakerSlot::new();
        let (counter, waker) = counting();
        slot.store(&waker);
        // Pushes `waker` out of the slot, to the others.
        slot.store(&panicking());
        let woke = catch_unwind(AssertUnwindSafe(|| slot.wake()));
        assert!(woke.is_err(), "the panic goes on once all are woken");
        assert_eq!(counter.wakes(), 1, "the task pushed out was woken too");
    }

    #[test]
    fn a_waker_whose_clone_panics_leaves_the_slot_working() {
        let slot = WakerSlot::new();
        let (counter, waker) = counting();
        slot.store(&waker);
        let stored = catch_unwind(AssertUnwindSafe(|| slot.store(&clone_panics())));
        assert!(stored.is_err());
        slot.wake();
        assert_eq!(counter.wakes(), 1, "the waker stored before is still woken");
        let (later, later_waker) = counting();
        slot.store(&later_waker);
        slot.wake();
        assert_eq!(later.wakes(), 1, "and a later one is stored and woken");
    }

    #[test]
    fn clear_drops_without_waking() {
        let slot = WakerSlot::new();
        let (counter, waker) = counting();
        slot.store(&waker);
        slot.clear();
        slot.wake();
        assert_eq!(counter.wakes(), 0);
        assert_eq!(Arc::strong_count(&counter), 2);
    }
}
