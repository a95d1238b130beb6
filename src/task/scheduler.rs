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
    fn schedule(this: &Arc<Self>, entry: Notified, how: Schedule);

    /// Process `task` completed: it leaves the registry of live processes. True if the
    /// registry held a reference to it, which passes to the caller.
    fn release(&self, task: RawTask) -> bool;

    /// The runtime's id (unique, never 0), for wait records and dumps.
    fn id(&self) -> u64;
}

/// A process's counted reference to its scheduler, of a type the header does not name:
/// an `Arc<S>` turned into a pointer, which only functions generic over the same `S`
/// (the process's vtable) turn back.
pub(crate) struct SchedulerRef(NonNull<()>);

// SAFETY: it stands for an `Arc<S>` with `S: Scheduler`, which is `Send + Sync`.
unsafe impl Send for SchedulerRef {}
// SAFETY: as above.
unsafe impl Sync for SchedulerRef {}

impl SchedulerRef {
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

    /// Calls `f` with the scheduler as the `Arc` it came from (for a caller that may
    /// need a reference of its own), without touching the count.
    ///
    /// # Safety
    /// As [`get`](Self::get).
    #[inline]
    pub(crate) unsafe fn with_arc<S: Scheduler, R>(&self, f: impl FnOnce(&Arc<S>) -> R) -> R {
        // SAFETY: per the caller, the pointer of an `Arc<S>` whose reference this holds;
        // `ManuallyDrop` borrows that reference rather than releasing it.
        let arc =
            ManuallyDrop::new(unsafe { Arc::from_raw(self.0.as_ptr().cast_const().cast::<S>()) });
        f(&arc)
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
