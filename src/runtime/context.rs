//! Which runtime the current thread is in, and whether csp is polling on it.
//!
//! A thread is in runtime R while it is one of R's workers, inside `R.block_on`, or on
//! R's blocking pool (API.md).

use std::cell::{Cell, RefCell};
use std::ptr::NonNull;

use crate::runtime::Handle;
use crate::runtime::worker::Local;

/// Set inside `block_on` and on blocking-pool threads.
type Entered = RefCell<Option<Handle>>;

/// [`POLLING`]'s value while csp polls nothing on this thread.
const NOT_POLLING: u64 = u64::MAX;

#[cfg(not(loom))]
std::thread_local! {
    static ENTERED: Entered = const { RefCell::new(None) };
    /// The worker whose loop runs on this thread, for the loop's lifetime. Kept apart
    /// from [`ENTERED`], which has a destructor, so that reading it (every wake does)
    /// is one load.
    static WORKER: Cell<Option<NonNull<Local>>> = const { Cell::new(None) };
    /// While csp polls a process or a `block_on` future (or a blocking call's) on this
    /// thread, the id of the runtime it belongs to (0: none); else [`NOT_POLLING`]. A
    /// thread-local of its own with nothing to drop, so that reading it, as every
    /// channel operation does (`chan/home.rs`), is one load.
    static POLLING: Cell<u64> = const { Cell::new(NOT_POLLING) };
    /// Values this thread put in channel buffers, wrapping: how much a poll sent on
    /// after it woke a process into the handoff slot (`worker.rs`).
    static BUFFERED: Cell<u32> = const { Cell::new(0) };
}

// loom's `thread_local!` has no `const` form.
#[cfg(loom)]
crate::loom::thread_local! {
    static ENTERED: Entered = RefCell::new(None);
    static WORKER: Cell<Option<NonNull<Local>>> = Cell::new(None);
    static POLLING: Cell<u64> = Cell::new(NOT_POLLING);
    static BUFFERED: Cell<u32> = Cell::new(0);
}

/// Calls `f` with the worker running on this thread, if any.
#[inline]
pub(crate) fn with_worker<R>(f: impl FnOnce(Option<&Local>) -> R) -> R {
    let worker = WORKER.try_with(Cell::get).ok().flatten();
    // SAFETY: the pointer is set only while the worker's `Local` lives on this thread's
    // stack (see `WorkerGuard`), and `Local` is only used from this thread.
    f(worker.map(|ptr| unsafe { ptr.as_ref() }))
}

/// The handle of the runtime this thread is in.
pub(crate) fn current_handle() -> Option<Handle> {
    if let Some(handle) = with_worker(|local| local.map(Local::handle)) {
        return Some(handle);
    }
    ENTERED
        .try_with(|entered| entered.borrow().clone())
        .ok()
        .flatten()
}

/// True while csp polls a process or a `block_on` future on this thread (on a worker:
/// while it runs a process, when the processes it wakes go to its handoff slot).
#[inline]
pub(crate) fn is_polling() -> bool {
    POLLING
        .try_with(|polling| polling.get() != NOT_POLLING)
        .unwrap_or(false)
}

/// The id of the runtime whose process or `block_on` future this thread is polling; 0
/// when it polls none (a plain thread, another executor, a blocking-pool closure).
#[inline]
pub(crate) fn polling_runtime() -> u64 {
    match POLLING.try_with(Cell::get) {
        Ok(NOT_POLLING) | Err(_) => 0,
        Ok(runtime) => runtime,
    }
}

/// [`POLLING`] as it is: the id of the runtime being polled, 0, or a value that is
/// neither while csp polls nothing. For a hot test that a value is the runtime being
/// polled (`chan/home.rs`) without mapping the last case to 0 first.
#[inline]
pub(crate) fn polling_word() -> u64 {
    POLLING.try_with(Cell::get).unwrap_or(NOT_POLLING)
}

/// Counts a value this thread put in a channel's buffer ([`buffered`]).
#[inline]
pub(crate) fn count_buffered() {
    let _ = BUFFERED.try_with(|count| count.set(count.get().wrapping_add(1)));
}

/// Values this thread has put in channel buffers so far, wrapping: the difference of
/// two readings is how many it put between them.
#[inline]
pub(crate) fn buffered() -> u32 {
    BUFFERED.try_with(Cell::get).unwrap_or(0)
}

/// Panics with advice if csp is polling on this thread: blocking it would stall every
/// process queued behind.
#[track_caller]
pub(crate) fn assert_may_block(what: &str) {
    if is_polling() {
        panic!(
            "csp: {what} was called from inside a csp process or block_on future, where \
             blocking the thread would stall the runtime; .await the future instead"
        );
    }
}

/// Marks this thread as a worker while the guard lives.
pub(crate) struct WorkerGuard(());

impl WorkerGuard {
    /// # Safety
    /// `local` must outlive the guard and stay on this thread.
    pub(crate) unsafe fn new(local: &Local) -> WorkerGuard {
        WORKER.with(|worker| worker.set(Some(NonNull::from(local))));
        WorkerGuard(())
    }
}

impl Drop for WorkerGuard {
    fn drop(&mut self) {
        let _ = WORKER.try_with(|worker| worker.set(None));
    }
}

/// Puts this thread in a runtime while the guard lives.
pub(crate) struct EnterGuard {
    previous: Option<Handle>,
}

pub(crate) fn enter(handle: Handle) -> EnterGuard {
    let previous = ENTERED.with(|entered| entered.replace(Some(handle)));
    EnterGuard { previous }
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        let _ = ENTERED.try_with(|entered| entered.replace(previous));
    }
}

/// Marks csp as polling on this thread while the guard lives: a process or the
/// `block_on` future of runtime `runtime` (an id), or with 0, a future no runtime counts
/// as its own (a `send_blocking`).
pub(crate) struct PollingGuard {
    previous: u64,
}

#[inline]
pub(crate) fn polling(runtime: u64) -> PollingGuard {
    debug_assert_ne!(runtime, NOT_POLLING);
    let previous = POLLING.with(|polling| polling.replace(runtime));
    PollingGuard { previous }
}

impl Drop for PollingGuard {
    #[inline]
    fn drop(&mut self) {
        let _ = POLLING.try_with(|polling| polling.set(self.previous));
    }
}
