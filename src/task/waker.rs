//! The `Waker` of a process: a pointer to its header and one reference.
//!
//! Two vtables: the one handed to `poll` counts every clone as held outside csp (the
//! state word's foreign waker count, for deadlock detection), and an internal one, for
//! csp's own holders of a process's waker (the join-waker slot), counts nothing extra.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::task::{RawWaker, RawWakerVTable, Waker};

use crate::task::header::Header;
use crate::task::loan;
use crate::task::raw::RawTask;

static WAKER_VTABLE: RawWakerVTable =
    RawWakerVTable::new(clone_waker, wake_foreign, wake_by_ref, drop_foreign);

static INTERNAL_WAKER_VTABLE: RawWakerVTable = RawWakerVTable::new(
    clone_internal,
    wake_by_val,
    wake_internal_by_ref,
    drop_waker,
);

/// A waker for the process at `ptr` that borrows the caller's reference instead of
/// holding one; it must not outlive that reference (the poll it is made for).
pub(crate) fn waker_ref(ptr: NonNull<Header>) -> ManuallyDrop<Waker> {
    // SAFETY: the vtable's functions uphold the `RawWaker` contract for a header
    // pointer; `ManuallyDrop` keeps this borrowed waker from releasing a reference.
    ManuallyDrop::new(unsafe { Waker::new(ptr.as_ptr().cast(), &WAKER_VTABLE) })
}

/// A waker for `raw` that csp itself keeps (it does not count as held outside csp),
/// holding a new reference (or the one a poll of `raw` on this thread lends, `loan.rs`).
pub(crate) fn internal_waker(raw: RawTask) -> Waker {
    let raw = loan::take_reference(raw);
    // SAFETY: the vtable's functions uphold the `RawWaker` contract for a header pointer
    // with one reference, taken above.
    unsafe { Waker::new(raw.as_ptr().as_ptr().cast(), &INTERNAL_WAKER_VTABLE) }
}

/// The process behind `waker`, if it is a csp process waker.
#[inline]
pub(crate) fn process_of(waker: &Waker) -> Option<RawTask> {
    // By address: the tables are statics, so a csp waker points at one of them, and
    // nothing else can (their functions are private). Comparing by value would compare
    // four function pointers for each.
    let vtable = waker.vtable();
    if !std::ptr::eq(vtable, &WAKER_VTABLE) && !std::ptr::eq(vtable, &INTERNAL_WAKER_VTABLE) {
        return None;
    }
    let ptr = NonNull::new(waker.data().cast_mut().cast::<Header>())?;
    // SAFETY: a csp waker's data is the header of a process it holds a reference to.
    Some(unsafe { RawTask::from_raw(ptr) })
}

/// # Safety
/// `data` is the header pointer of a csp waker holding (or borrowing) a reference.
unsafe fn raw_task(data: *const ()) -> RawTask {
    // SAFETY: per the caller, a live header pointer, never null.
    unsafe { RawTask::from_raw(NonNull::new_unchecked(data.cast_mut().cast())) }
}

/// A clone of the waker `poll` was given: made by code outside csp (csp's own waits
/// take internal references), so it counts as a foreign waker.
///
/// # Safety
/// `data` is the header pointer of a live csp waker (the `RawWakerVTable` contract).
unsafe fn clone_waker(data: *const ()) -> RawWaker {
    // SAFETY: called on a live csp waker.
    unsafe { raw_task(data) }.state().foreign_waker_inc();
    RawWaker::new(data, &WAKER_VTABLE)
}

/// # Safety
/// As `clone_waker`.
unsafe fn clone_internal(data: *const ()) -> RawWaker {
    // SAFETY: called on a live csp waker.
    unsafe { raw_task(data) }.ref_inc();
    RawWaker::new(data, &INTERNAL_WAKER_VTABLE)
}

/// # Safety
/// As `wake_by_val`.
unsafe fn wake_foreign(data: *const ()) {
    // SAFETY: called on a live csp waker, whose reference this call consumes.
    unsafe { raw_task(data) }.wake_foreign_by_val()
}

/// # Safety
/// As `drop_waker`.
unsafe fn drop_foreign(data: *const ()) {
    // SAFETY: called on a live csp waker, whose reference is released here.
    unsafe { raw_task(data).drop_foreign_reference() }
}

/// # Safety
/// `data` is the header pointer of a live csp waker, whose reference this consumes.
unsafe fn wake_by_val(data: *const ()) {
    // SAFETY: called on a live csp waker, whose reference this call consumes.
    unsafe { raw_task(data) }.wake_by_val()
}

/// # Safety
/// `data` is the header pointer of a live csp waker.
unsafe fn wake_by_ref(data: *const ()) {
    // SAFETY: called on a live csp waker.
    unsafe { raw_task(data) }.wake_by_ref()
}

/// # Safety
/// `data` is the header pointer of a live csp waker csp keeps.
unsafe fn wake_internal_by_ref(data: *const ()) {
    // SAFETY: called on a live csp waker, whose reference keeps the process alive.
    unsafe { raw_task(data).wake_internal_by_ref() }
}

/// # Safety
/// `data` is the header pointer of a live csp waker, whose reference this releases.
unsafe fn drop_waker(data: *const ()) {
    // SAFETY: called on a live csp waker, whose reference is released here.
    unsafe { raw_task(data).drop_reference() }
}
