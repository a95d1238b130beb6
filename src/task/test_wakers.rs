//! Wakers for unit tests: one that counts its wakes, and three that misbehave as a
//! foreign waker may (its wake panics, its clone does, or its last drop does).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{RawWaker, RawWakerVTable, Wake, Waker};

/// Counts the wakes of the wakers made from it ([`counting`]).
pub(crate) struct Counting(AtomicUsize);

impl Counting {
    /// Wakes so far.
    pub(crate) fn wakes(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A fresh counter, and a waker that counts into it.
pub(crate) fn counting() -> (Arc<Counting>, Waker) {
    let counter = Arc::new(Counting(AtomicUsize::new(0)));
    (counter.clone(), Waker::from(counter))
}

struct Panicking;

impl Wake for Panicking {
    fn wake(self: Arc<Self>) {
        panic!("this waker panics");
    }
}

/// A waker whose wake panics.
pub(crate) fn panicking() -> Waker {
    Waker::from(Arc::new(Panicking))
}

/// A waker whose clone panics (its wake and drop do nothing).
pub(crate) fn clone_panics() -> Waker {
    fn clone(_: *const ()) -> RawWaker {
        panic!("this waker's clone panics");
    }
    fn nothing(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, nothing, nothing, nothing);
    // SAFETY: the functions ignore the data pointer and touch nothing.
    unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) }
}

/// Counts its drop, then panics, as a foreign waker's drop may.
pub(crate) struct DropPanics(pub(crate) Arc<AtomicUsize>);

impl Wake for DropPanics {
    fn wake(self: Arc<Self>) {}
}

impl Drop for DropPanics {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("this waker's drop panics");
    }
}

/// A waker whose last clone's drop counts into `drops`, then panics.
pub(crate) fn drop_panics(drops: &Arc<AtomicUsize>) -> Waker {
    Waker::from(Arc::new(DropPanics(drops.clone())))
}
