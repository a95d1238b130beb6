//! The process header: the first 64 bytes of every process allocation, and the registry
//! links right after it.

use std::panic::Location;
use std::ptr::NonNull;
use std::task::Waker;

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::AtomicU64;
use crate::task::raw::Vtable;
use crate::task::scheduler::SchedulerRef;
use crate::task::state::State;
#[cfg(feature = "console")]
use crate::task::stats::ProcessStats;

/// What every process allocation starts with. Wakers, run queue entries and the registry
/// point here; the vtable knows the rest of the allocation's layout.
///
/// Layout on 64-bit targets (asserted below): state 8 | vtable 8 | scheduler 8 |
/// join waker 16 | spawn location 8 | id 8 | wait descriptor 8 = 64 bytes.
#[repr(C)]
pub(crate) struct Header {
    /// The state word (see `state.rs`).
    pub(crate) state: State,
    /// Type-specific operations.
    pub(crate) vtable: &'static Vtable,
    /// The runtime this process belongs to (`scheduler.rs`): a counted reference, so a
    /// waker that outlives its runtime finds it shut down rather than freed. Its type is
    /// known to the vtable's functions only.
    pub(crate) scheduler: SchedulerRef,
    /// The `JoinHandle`'s waker; who may touch it is given by `JOIN_WAKER` (state.rs).
    pub(crate) join_waker: UnsafeCell<Option<Waker>>,
    /// Where the process was spawned, for dumps and deadlock reports.
    pub(crate) spawned_at: &'static Location<'static>,
    /// Unique, never reused.
    pub(crate) id: u64,
    /// What the process waits on, packed, written when it blocks on a csp operation
    /// (0: nothing recorded). Channels fill it in; until then it stays 0.
    pub(crate) wait: AtomicU64,
}

/// The registry's intrusive list links, right after the header. Read and written only
/// under the lock of the registry shard the process belongs to.
#[derive(Default)]
pub(crate) struct Links {
    pub(crate) prev: Option<NonNull<Header>>,
    pub(crate) next: Option<NonNull<Header>>,
}

/// The non-generic start of every process allocation: `Cell<F>` (cell.rs) begins with
/// exactly these two fields, `repr(C)`, so a `NonNull<Header>` is also a pointer to this.
#[repr(C)]
pub(crate) struct Prefix {
    pub(crate) header: Header,
    pub(crate) links: UnsafeCell<Links>,
    /// The console's figures (`stats.rs`), with the feature only.
    #[cfg(feature = "console")]
    pub(crate) stats: ProcessStats,
}

impl Header {
    /// The registry links of the process whose header `this` points to.
    ///
    /// # Safety
    /// `this` must point to a live process allocation.
    pub(crate) unsafe fn links<'a>(this: NonNull<Header>) -> &'a UnsafeCell<Links> {
        // SAFETY: every process allocation is a `Cell<F>`, which starts with the fields
        // of `Prefix` in the same `repr(C)` order; the caller keeps it alive.
        unsafe { &(*this.cast::<Prefix>().as_ptr()).links }
    }

    /// The console's figures of the process whose header `this` points to.
    ///
    /// # Safety
    /// `this` must point to a live process allocation.
    #[cfg(feature = "console")]
    pub(crate) unsafe fn stats<'a>(this: NonNull<Header>) -> &'a ProcessStats {
        // SAFETY: as in `links`: `Cell<F>` starts with `Prefix`'s fields, in order.
        unsafe { &(*this.cast::<Prefix>().as_ptr()).stats }
    }
}

// The header is one cache line of 64 bytes, the links 16 more (see the README's
// per-process overhead figures).
#[cfg(all(not(loom), target_pointer_width = "64"))]
const _: () = {
    assert!(std::mem::size_of::<Header>() == 64);
    #[cfg(not(feature = "console"))]
    assert!(std::mem::size_of::<Prefix>() == 80);
    #[cfg(feature = "console")]
    assert!(std::mem::size_of::<Prefix>() == 96);
};
