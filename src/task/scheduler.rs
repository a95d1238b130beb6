//! How a process reaches the runtime that runs it without knowing it: the runtime
//! implements [`Scheduler`], and every process holds a counted reference to its
//! scheduler, type-erased in the header ([`SchedulerRef`]) and typed again by the
//! functions its vtable was made with (`raw::vtable::<F, S>`), as tokio's tasks reach
//! theirs through its `Schedule` trait.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use crate::loom::sync::Arc;
use crate::task::join_waiter::JoinWaiter;
use crate::task::raw::{Notified, RawTask};

/// Why a process is being put on a run queue; decides where it goes (the runtime's
/// worker loop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schedule {
    /// Newly spawned.
    Spawn,
    /// Woken by a waker or an abort.
    Wake,
    /// Woken during its own poll: goes to the back of the queue, never the handoff slot.
    Yield,
}

/// What the process layer needs of a runtime.
pub(crate) trait Scheduler: Send + Sync + Sized + 'static {
    /// How a `JoinHandle` of this runtime's processes parks its waker.
    type JoinWaiter: JoinWaiter;

    /// Puts `entry` on a run queue of `this`.
    ///
    /// `this` is the process's own reference, lent for the call: once `entry` is on a
    /// queue, another thread may run the process to completion and free it, and with it
    /// that reference. An implementation that still needs `this` after giving up
    /// `entry` takes a reference of its own first (`Arc::clone`).
    fn schedule(this: &Arc<Self>, entry: Notified, how: Schedule);

    /// Wakes `task`, consuming one of its references that the caller gives up: into
    /// the handoff slot of the worker of `this` that is polling a process on this
    /// thread, if any ([`RawTask::hand_off_by_val`]), else as
    /// [`RawTask::wake_by_val`] does. `this` is lent as in
    /// [`schedule`](Self::schedule).
    fn wake(this: &Arc<Self>, task: RawTask);

    /// Wakes `task` for a waker that keeps its reference (csp's own, the join-waker
    /// slot's): as [`RawTask::wake_by_ref`] does, except that the calling worker's
    /// resting process goes to its handoff slot. `this` is lent as in
    /// [`schedule`](Self::schedule).
    fn wake_by_ref(this: &Arc<Self>, task: RawTask);

    /// Process `task` completed: it leaves the registry of live processes. True if the
    /// registry held a reference to it, which passes to the caller.
    fn release(&self, task: RawTask) -> bool;

    /// The runtime's id (unique, never 0), for wait records and dumps.
    fn id(&self) -> u64;

    /// The wait word a poll of one of the runtime's processes starts from: no wait
    /// recorded yet, but stamped with what every wait the poll records carries whatever
    /// it waits on (`wait/record.rs`), so that recording one costs no look-up of the
    /// process's runtime.
    fn blank_wait(&self) -> u64;
}

/// A process's counted reference to its scheduler, of a type the header does not name:
/// an `Arc<S>` turned into a pointer, which only functions generic over the same `S`
/// (the process's vtable) turn back.
pub(crate) struct SchedulerRef(NonNull<()>);

// SAFETY: it stands for an `Arc<S>` with `S: Scheduler`, which is `Send + Sync`.
unsafe impl Send for SchedulerRef {}
// SAFETY: as above.
unsafe impl Sync for SchedulerRef {}

/// Schedules `entry` on the scheduler of type `S` at `scheduler` (a [`SchedulerRef`]'s
/// pointer, copied out of the header first: the process, header included, may be freed
/// as soon as the entry is queued, and nothing here refers to it after that).
///
/// # Safety
/// `scheduler` is the pointer of a `SchedulerRef` made for `S`, of the process `entry`
/// belongs to (whose reference, now the entry's, keeps it alive until the call).
#[inline(always)]
pub(crate) unsafe fn schedule<S: Scheduler>(
    scheduler: NonNull<()>,
    entry: Notified,
    how: Schedule,
) {
    // SAFETY: per the caller, the process's reference keeps the scheduler alive until
    // `entry` runs, and `Scheduler::schedule` takes its own before using it past the
    // hand-over.
    S::schedule(&*unsafe { lend::<S>(scheduler) }, entry, how);
}

/// The process's `Arc<S>` at `scheduler`, lent: `ManuallyDrop` borrows its reference
/// rather than releasing it.
///
/// # Safety
/// `scheduler` is the pointer of a `SchedulerRef` made for `S`, alive while the result
/// is used.
#[inline(always)]
unsafe fn lend<S: Scheduler>(scheduler: NonNull<()>) -> ManuallyDrop<Arc<S>> {
    // SAFETY: an `Arc<S>`'s pointer (`SchedulerRef`), per the caller alive meanwhile;
    // the count is never touched, as the `Arc` is never dropped.
    ManuallyDrop::new(unsafe { Arc::from_raw(scheduler.as_ptr().cast_const().cast::<S>()) })
}

/// Wakes `task` through the scheduler of type `S` at `scheduler`, as [`schedule`] does
/// for an entry.
///
/// # Safety
/// `scheduler` is the pointer of a `SchedulerRef` made for `S`, of `task`, whose
/// reference the caller gives up (and which keeps the process alive until the call).
#[inline(always)]
pub(crate) unsafe fn wake<S: Scheduler>(scheduler: NonNull<()>, task: RawTask) {
    // SAFETY: per the caller, the reference it gives up keeps the scheduler alive
    // until the wake hands it on, as in `schedule`.
    S::wake(&*unsafe { lend::<S>(scheduler) }, task);
}

/// Calls [`Scheduler::wake_by_ref`] through a type-erased scheduler pointer.
///
/// # Safety
/// `scheduler` is the pointer of a `SchedulerRef` made for `S`, of `task`, which the
/// caller keeps alive for the call.
#[inline(always)]
pub(crate) unsafe fn wake_by_ref<S: Scheduler>(scheduler: NonNull<()>, task: RawTask) {
    // SAFETY: per the caller, the process, and so the scheduler, lives for the call.
    S::wake_by_ref(&*unsafe { lend::<S>(scheduler) }, task);
}

impl SchedulerRef {
    /// The type-erased pointer, to copy out of the header before the process may go.
    #[inline]
    pub(crate) fn as_ptr(&self) -> NonNull<()> {
        self.0
    }

    /// Takes over `scheduler`'s reference.
    pub(crate) fn new<S: Scheduler>(scheduler: Arc<S>) -> SchedulerRef {
        let ptr = Arc::into_raw(scheduler).cast_mut().cast::<()>();
        SchedulerRef(NonNull::new(ptr).expect("an Arc's pointer is not null"))
    }

    /// The scheduler.
    ///
    /// # Safety
    /// `S` is the type this was made with ([`new`](Self::new)).
    #[inline]
    pub(crate) unsafe fn get<S: Scheduler>(&self) -> &S {
        // SAFETY: per the caller, the pointer `Arc::into_raw` gave for an `Arc<S>`
        // whose reference this holds: a live `S`.
        unsafe { self.0.cast::<S>().as_ref() }
    }

    /// Releases the reference.
    ///
    /// # Safety
    /// As [`get`](Self::get); called once, when the process is freed.
    pub(crate) unsafe fn release<S: Scheduler>(&self) {
        // SAFETY: per the caller, this is the pointer of an `Arc<S>` whose reference
        // this held.
        drop(unsafe { Arc::from_raw(self.0.as_ptr().cast_const().cast::<S>()) });
    }
}
