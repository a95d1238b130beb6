//! The thread parker of `block_on` and of the blocking channel calls (`send_blocking`,
//! `recv_blocking`): the thread parks between polls of its future, and its `Waker` has
//! vtables of its own, so that csp can tell it apart from a foreign waker, as it tells a
//! process's waker apart. csp's waits hold an internal reference to the parker
//! ([`Owner::Main`](crate::wait::claim::Owner)), while every clone of the waker counts
//! as held outside csp; with the wait its future last recorded, that is what deadlock
//! detection needs to know about a `block_on` future.
//!
//! Built on std's `Arc`, atomics and thread parking: the parker is in no loom model.

use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{RawWaker, RawWakerVTable, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

/// The thread blocked in `block_on` (or in a blocking channel call), and what its
/// future waits on.
pub(crate) struct Parker {
    thread: Thread,
    /// The runtime whose main future the thread runs (0: none, a blocking call).
    runtime: u64,
    notified: AtomicBool,
    /// Clones of its waker that exist outside csp.
    foreign_wakers: AtomicUsize,
    /// The wait its future recorded in its last poll (a wait word, `record.rs`).
    wait: AtomicU64,
}

static PARKER_VTABLE: RawWakerVTable =
    RawWakerVTable::new(clone_waker, wake_by_val, wake_by_ref, drop_waker);

/// The vtable of wakers csp itself keeps (a `JoinHandle`'s join-waker slot): their clones
/// and drops count nothing.
static INTERNAL_PARKER_VTABLE: RawWakerVTable =
    RawWakerVTable::new(clone_internal, wake_internal, wake_by_ref, drop_internal);

impl Parker {
    /// A parker for this thread, running the main future of runtime `runtime` (0: a
    /// future no runtime counts as its own).
    pub(crate) fn new(runtime: u64) -> Arc<Parker> {
        Arc::new(Parker {
            thread: thread::current(),
            runtime,
            notified: AtomicBool::new(false),
            foreign_wakers: AtomicUsize::new(0),
            wait: AtomicU64::new(0),
        })
    }

    /// The waker handed to `poll`, borrowing `this`'s reference (so it counts as no
    /// clone); it must not outlive `this`.
    pub(crate) fn waker_ref(this: &Arc<Parker>) -> ManuallyDrop<Waker> {
        let data = Arc::as_ptr(this).cast::<()>();
        // SAFETY: the vtable upholds the `RawWaker` contract for an `Arc<Parker>` pointer;
        // `ManuallyDrop` keeps this borrowed waker from releasing a reference.
        ManuallyDrop::new(unsafe { Waker::new(data, &PARKER_VTABLE) })
    }

    /// Unparks the thread (if it is not already notified).
    pub(crate) fn unpark(&self) {
        // Release: publishes what the waker did before waking to the blocked thread.
        if !self.notified.swap(true, Ordering::Release) {
            self.thread.unpark();
        }
    }

    /// Consumes a wake that arrived, if one did.
    pub(crate) fn take_notified(&self) -> bool {
        // Acquire: pairs with the Release in `unpark`.
        self.notified.swap(false, Ordering::Acquire)
    }

    /// Parks until unparked.
    pub(crate) fn park(&self) {
        while !self.take_notified() {
            thread::park();
        }
    }

    /// Parks until unparked (true) or for `timeout` (false). The caller has found no
    /// wake waiting.
    pub(crate) fn park_timeout(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            thread::park_timeout(deadline.saturating_duration_since(std::time::Instant::now()));
            if self.take_notified() {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
        }
    }

    /// True if a wake arrived that the thread has not consumed yet.
    pub(crate) fn is_notified(&self) -> bool {
        // Acquire: pairs with the Release in `unpark`.
        self.notified.load(Ordering::Acquire)
    }

    /// The runtime whose main future this thread runs (0: none).
    pub(crate) fn runtime(&self) -> u64 {
        self.runtime
    }

    /// Records what the future waits on (by its owner's poll).
    pub(crate) fn record(&self, wait: u64) {
        // Relaxed: read by deadlock detection only after a whole grace period in which
        // this thread stayed parked.
        self.wait.store(wait, Ordering::Relaxed);
    }

    /// The recorded wait word.
    pub(crate) fn wait_word(&self) -> u64 {
        // Relaxed: see `record`.
        self.wait.load(Ordering::Relaxed)
    }

    /// Clones of the waker held outside csp.
    pub(crate) fn foreign_wakers(&self) -> usize {
        // Relaxed: see `record`.
        self.foreign_wakers.load(Ordering::Relaxed)
    }
}

/// The parker behind `waker`, if it is a `block_on` (or blocking call) waker.
pub(crate) fn parker_of(waker: &Waker) -> Option<&Parker> {
    // By address, as `task::waker::process_of`: the tables are statics with private
    // functions.
    let vtable = waker.vtable();
    if !std::ptr::eq(vtable, &PARKER_VTABLE) && !std::ptr::eq(vtable, &INTERNAL_PARKER_VTABLE) {
        return None;
    }
    // SAFETY: such a waker's data is a live `Arc<Parker>` pointer, alive as long as the
    // waker (which the returned reference borrows).
    Some(unsafe { &*waker.data().cast::<Parker>() })
}

/// An internal (uncounted) reference to the parker behind `waker`, if any.
pub(crate) fn parker_arc_of(waker: &Waker) -> Option<Arc<Parker>> {
    let parker = parker_of(waker)?;
    let ptr = std::ptr::from_ref(parker);
    // SAFETY: `ptr` comes from `Arc::as_ptr` of a live `Arc<Parker>` (the waker holds or
    // borrows a reference); the count is raised before the new `Arc` takes it over.
    unsafe {
        Arc::increment_strong_count(ptr);
        Some(Arc::from_raw(ptr))
    }
}

/// A waker for the parker behind `waker` that csp itself keeps: it does not count as
/// held outside csp.
pub(crate) fn internal_waker_of(waker: &Waker) -> Option<Waker> {
    let parker = parker_arc_of(waker)?;
    let data = Arc::into_raw(parker).cast::<()>();
    // SAFETY: the vtable upholds the `RawWaker` contract for an `Arc<Parker>` pointer
    // owning one reference (the one just taken).
    Some(unsafe { Waker::new(data, &INTERNAL_PARKER_VTABLE) })
}

/// # Safety
/// `data` is a live `Arc<Parker>` pointer (the `RawWakerVTable` contract).
unsafe fn clone_internal(data: *const ()) -> RawWaker {
    // SAFETY: per the caller.
    unsafe { Arc::increment_strong_count(data.cast::<Parker>()) };
    RawWaker::new(data, &INTERNAL_PARKER_VTABLE)
}

/// # Safety
/// `data` is an internal waker's `Arc<Parker>` pointer, whose reference is consumed.
unsafe fn wake_internal(data: *const ()) {
    // SAFETY: per the caller.
    unsafe {
        wake_by_ref(data);
        drop_internal(data);
    }
}

/// # Safety
/// `data` is an internal waker's `Arc<Parker>` pointer, whose reference is released.
unsafe fn drop_internal(data: *const ()) {
    // SAFETY: per the caller.
    drop(unsafe { Arc::from_raw(data.cast::<Parker>()) });
}

/// # Safety
/// `data` is a live `Arc<Parker>` pointer (the `RawWakerVTable` contract).
unsafe fn clone_waker(data: *const ()) -> RawWaker {
    let ptr = data.cast::<Parker>();
    // SAFETY: per the caller.
    unsafe {
        Arc::increment_strong_count(ptr);
        // Relaxed: a count read long after, as the process's foreign waker count.
        (*ptr).foreign_wakers.fetch_add(1, Ordering::Relaxed);
    }
    RawWaker::new(data, &PARKER_VTABLE)
}

/// # Safety
/// `data` is a live, counted clone (made by `clone_waker`), consumed here.
unsafe fn wake_by_val(data: *const ()) {
    // SAFETY: per the caller.
    unsafe {
        wake_by_ref(data);
        drop_waker(data);
    }
}

/// # Safety
/// `data` is a live `Arc<Parker>` pointer.
unsafe fn wake_by_ref(data: *const ()) {
    // SAFETY: per the caller.
    unsafe { &*data.cast::<Parker>() }.unpark();
}

/// # Safety
/// `data` is a live, counted clone (made by `clone_waker`), released here.
unsafe fn drop_waker(data: *const ()) {
    let ptr = data.cast::<Parker>();
    // SAFETY: per the caller: the clone's reference is released once.
    unsafe {
        (*ptr).foreign_wakers.fetch_sub(1, Ordering::Relaxed);
        drop(Arc::from_raw(ptr));
    }
}
