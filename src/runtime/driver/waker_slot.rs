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
//! A waiting task stores its waker and then looks at the readiness word again; the driver
//! sets the readiness word and then wakes. Either the driver's take finds the waker, or
//! the task's store, ordered after the take, makes the task's second look see the
//! readiness (`scheduled_io.rs`).

use std::task::Waker;

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::Mutex;
use crate::loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

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
                if let Some(replaced) = replaced {
                    self.push_other(replaced);
                }
                if let Err(_taking) =
                    self.state
                        .compare_exchange(STORING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                {
                    // A wake came while we stored: it is ours to deliver, to our waker
                    // and to the others (the waker may not have seen them).
                    // SAFETY: the state is `STORING | TAKING`: still ours.
                    let ours = self.waker.with_mut(|slot| unsafe { (*slot).take() });
                    // AcqRel: as the take's release of the cell, and the next owner's
                    // acquire of it.
                    self.state.swap(IDLE, Ordering::AcqRel);
                    if let Some(ours) = ours {
                        ours.wake();
                    }
                    self.wake_others();
                }
            }
            // A wake is under way, or another task is storing: this one is woken at once
            // and will look at the readiness again.
            Err(_) => waker.wake_by_ref(),
        }
    }

    /// Keeps `waker`, of a task pushed out of the slot, with the others.
    #[cold]
    fn push_other(&self, waker: Waker) {
        let mut others = self.others.lock();
        if !others.iter().any(|other| other.will_wake(&waker)) {
            others.push(waker);
        }
        // Relaxed: changed and read under the lock; the slot's state orders it for the
        // driver (module docs).
        self.has_others.store(true, Ordering::Relaxed);
    }

    /// Wakes the stored waker and the others; if a waker is being stored, its storer
    /// wakes it (and the others).
    pub(crate) fn wake(&self) {
        if let Some(waker) = self.take() {
            if let Some(waker) = waker {
                waker.wake();
            }
            self.wake_others();
        }
    }

    /// Wakes every task pushed out of the slot, if any.
    #[inline]
    fn wake_others(&self) {
        // Relaxed: a store of `true` that matters is ordered before this by the slot's
        // state (its storer's release, our acquire); a stale `true` costs one lock.
        if self.has_others.load(Ordering::Relaxed) {
            self.wake_others_now();
        }
    }

    #[cold]
    fn wake_others_now(&self) {
        let others = {
            let mut others = self.others.lock();
            // Relaxed: under the lock.
            self.has_others.store(false, Ordering::Relaxed);
            std::mem::take(&mut *others)
        };
        for other in others {
            other.wake();
        }
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

    /// Drops the stored wakers (the source is going away).
    pub(crate) fn clear(&self) {
        drop(self.take());
        drop(std::mem::take(&mut *self.others.lock()));
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
    fn the_same_task_stores_its_waker_once() {
        let slot = WakerSlot::new();
        let (counter, waker) = counting();
        slot.store(&waker);
        slot.store(&waker.clone());
        assert_eq!(Arc::strong_count(&counter), 3, "one clone kept");
        slot.wake();
        assert_eq!(wakes(&counter), 1);
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
        assert_eq!((wakes(&first), wakes(&second)), (1, 1));
        slot.wake();
        assert_eq!((wakes(&first), wakes(&second)), (1, 1), "each once");
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
