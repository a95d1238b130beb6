//! A slot holding the waker of the one task waiting in one direction of an I/O source,
//! which the driver takes and wakes from another thread, with no lock.
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
//! it: a wake is never lost, and a waker is woken (and dropped) outside the cell.
//!
//! A waiting task stores its waker and then looks at the readiness word again; the driver
//! sets the readiness word and then wakes. Either the driver's take finds the waker, or
//! the task's store, ordered after the take, makes the task's second look see the
//! readiness (`scheduled_io.rs`).

use std::task::Waker;

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicUsize, Ordering};

const IDLE: usize = 0;
const STORING: usize = 1;
const TAKING: usize = 2;

/// The waker slot of one direction of a source.
pub(crate) struct WakerSlot {
    state: AtomicUsize,
    waker: UnsafeCell<Option<Waker>>,
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
        }
    }

    /// Stores `waker` as the one to wake next (replacing, unless it wakes the same task,
    /// the one there). If a wake comes meanwhile, or one is under way, `waker` is woken.
    pub(crate) fn store(&self, waker: &Waker) {
        match self
            .state
            .compare_exchange(IDLE, STORING, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                // SAFETY: `STORING` makes the cell ours.
                let replaced = self.waker.with_mut(|slot| unsafe {
                    match &mut *slot {
                        Some(stored) if stored.will_wake(waker) => None,
                        slot => slot.replace(waker.clone()),
                    }
                });
                if let Err(_taking) =
                    self.state
                        .compare_exchange(STORING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                {
                    // A wake came while we stored: it is ours to deliver.
                    // SAFETY: the state is `STORING | TAKING`: still ours.
                    let ours = self.waker.with_mut(|slot| unsafe { (*slot).take() });
                    self.state.store(IDLE, Ordering::Release);
                    if let Some(ours) = ours {
                        ours.wake();
                    }
                }
                // Dropped outside the cell: foreign code.
                drop(replaced);
            }
            // A wake is under way, or another task is storing: this one is woken at once
            // and will look at the readiness again.
            Err(_) => waker.wake_by_ref(),
        }
    }

    /// Wakes the stored waker, if any; if a waker is being stored, its storer wakes it.
    pub(crate) fn wake(&self) {
        if let Some(waker) = self.take() {
            waker.wake();
        }
    }

    /// Takes the stored waker to wake it, or leaves the wake to a storer under way.
    fn take(&self) -> Option<Waker> {
        match self.state.fetch_or(TAKING, Ordering::AcqRel) {
            IDLE => {
                // SAFETY: `TAKING` from `IDLE` makes the cell ours.
                let waker = self.waker.with_mut(|slot| unsafe { (*slot).take() });
                // Release: the storer that next takes the slot sees it emptied.
                self.state.fetch_and(!TAKING, Ordering::Release);
                waker
            }
            // A store under way delivers it, or another take is.
            _ => None,
        }
    }

    /// Drops the stored waker (the source is going away).
    pub(crate) fn clear(&self) {
        drop(self.take());
    }
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
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize as Count;
    use std::task::Wake;

    use super::*;

    struct Counter(Count);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    fn counting() -> (Arc<Counter>, Waker) {
        let counter = Arc::new(Counter(Count::new(0)));
        (counter.clone(), Waker::from(counter))
    }

    fn wakes(counter: &Counter) -> usize {
        counter.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    #[test]
    fn the_stored_waker_is_woken_once() {
        let slot = WakerSlot::new();
        let (counter, waker) = counting();
        slot.store(&waker);
        slot.wake();
        slot.wake();
        assert_eq!(wakes(&counter), 1);
    }

    #[test]
    fn a_new_waker_replaces_the_old_one() {
        let slot = WakerSlot::new();
        let (old, old_waker) = counting();
        let (new, new_waker) = counting();
        slot.store(&old_waker);
        slot.store(&new_waker);
        slot.wake();
        assert_eq!((wakes(&old), wakes(&new)), (0, 1));
        assert_eq!(Arc::strong_count(&old), 2, "the replaced clone was dropped");
    }

    #[test]
    fn clear_drops_without_waking() {
        let slot = WakerSlot::new();
        let (counter, waker) = counting();
        slot.store(&waker);
        slot.clear();
        slot.wake();
        assert_eq!(wakes(&counter), 0);
        assert_eq!(Arc::strong_count(&counter), 2);
    }
}
