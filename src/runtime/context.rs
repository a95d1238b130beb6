//! Which runtime the current thread is in, and whether csp is polling on it.
//!
//! A thread is in runtime R while it is one of R's workers, inside `R.block_on`, or on
//! R's blocking pool (API.md).

use std::cell::{Cell, RefCell};
use std::ptr::NonNull;

use crate::runtime::Handle;
use crate::runtime::shared::Shared;
use crate::runtime::worker::Local;

/// Set inside `block_on` and on blocking-pool threads.
type Entered = RefCell<Option<Handle>>;

/// [`Thread::polling`]'s value while csp polls nothing on this thread.
const NOT_POLLING: u64 = u64::MAX;

/// What csp keeps on every thread besides [`ENTERED`]: plain cells with nothing to drop,
/// in one thread-local, so that reading any of them is one load, and a wake or a worker
/// round that reads several finds them all through one address.
struct Thread {
    /// The worker whose loop runs on this thread, for the loop's lifetime, save while
    /// a thread hook runs a `block_on` or a blocking call ([`outside_worker_loop`]).
    worker: Cell<Option<NonNull<Local>>>,
    /// The worker [`worker`](Thread::worker) would hold, set aside while a thread hook
    /// runs a `block_on` or a blocking call (then `worker` is `None`).
    set_aside: Cell<Option<NonNull<Local>>>,
    /// While csp polls a process or a `block_on` future (or a blocking call's) on this
    /// thread, the id of the runtime it belongs to (0: none); else [`NOT_POLLING`]. Read
    /// by every channel operation (`chan/home.rs`).
    polling: Cell<u64>,
    /// Values this thread put in channel buffers, wrapping: how much a poll sent on
    /// after it woke a process into the handoff slot (`worker.rs`).
    buffered: Cell<u32>,
    /// The timer shard of a thread that is no worker ([`timer_home`]): drawn at its
    /// first timer; [`NO_SHARD`] before.
    outside_shard: Cell<usize>,
    /// The id of the runtime whose blocking pool this thread serves (0: none), for its
    /// lifetime.
    pool_of: Cell<u64>,
}

/// [`Thread::outside_shard`] before the thread's first timer.
const NO_SHARD: usize = usize::MAX;

impl Thread {
    const fn new() -> Thread {
        Thread {
            worker: Cell::new(None),
            set_aside: Cell::new(None),
            polling: Cell::new(NOT_POLLING),
            buffered: Cell::new(0),
            outside_shard: Cell::new(NO_SHARD),
            pool_of: Cell::new(0),
        }
    }
}

#[cfg(not(loom))]
std::thread_local! {
    static ENTERED: Entered = const { RefCell::new(None) };
    /// Kept apart from [`ENTERED`], which has a destructor, so that reading it is one
    /// load.
    static THREAD: Thread = const { Thread::new() };
}

// loom's `thread_local!` has no `const` form.
#[cfg(loom)]
crate::loom::thread_local! {
    static ENTERED: Entered = RefCell::new(None);
    static THREAD: Thread = Thread::new();
}

/// Calls `f` with the worker running on this thread, if any.
#[inline]
pub(crate) fn with_worker<R>(f: impl FnOnce(Option<&Local>) -> R) -> R {
    // SAFETY: the pointer is valid now, on this thread (`worker_ptr`), and `f` runs now,
    // on this thread, with a borrow that cannot outlive the call.
    f(worker_ptr().map(|ptr| unsafe { ptr.as_ref() }))
}

/// The worker running on this thread, if any: valid on this thread until its worker
/// loop returns, which it cannot do while the caller runs inside it. For the hot paths
/// that must not go through a closure (`Shared::schedule`); else use [`with_worker`].
#[inline(always)]
pub(crate) fn worker_ptr() -> Option<NonNull<Local>> {
    // The pointer is set only while the worker's `Local` lives on this thread's stack
    // (see `WorkerGuard`), and `Local` is only used from this thread.
    THREAD.try_with(|thread| thread.worker.get()).ok().flatten()
}

/// True on a thread that runs a worker loop of the runtime `shared` belongs to, even
/// while a thread hook there runs a `block_on` or a blocking call.
pub(crate) fn is_worker_thread_of(shared: &Shared) -> bool {
    THREAD
        .try_with(|thread| thread.worker.get().or(thread.set_aside.get()))
        .ok()
        .flatten()
        // SAFETY: a worker on this thread's stack for as long as it is marked here
        // (`WorkerGuard`, inside whose life it is only ever set aside), used only
        // from this thread.
        .is_some_and(|local| unsafe { local.as_ref() }.belongs_to(shared))
}

/// Sets this thread's worker aside while the guard lives: made by a `block_on` or a
/// blocking call, which on a worker's thread runs only in a thread hook (inside a poll
/// they panic), outside the worker's loop. The thread is then a plain one, or in the
/// `block_on`'s runtime (API.md), whichever runtime that is: a spawn from there goes to
/// a queue, never to the worker's own, and a wake never to its handoff slot, which only
/// its loop empties (the hook may be waiting for that very process); a timer is armed
/// in a drawn shard of that runtime's wheels.
pub(crate) struct OutsideWorkerLoop {
    /// This guard set a worker aside ([`Thread::set_aside`]), to put back.
    set_aside: bool,
}

/// Sets this thread's worker, if it has one, aside until the guard drops
/// ([`OutsideWorkerLoop`]).
pub(crate) fn outside_worker_loop() -> OutsideWorkerLoop {
    let set_aside = THREAD
        .try_with(|thread| match thread.worker.take() {
            Some(worker) => {
                thread.set_aside.set(Some(worker));
                true
            }
            None => false,
        })
        .unwrap_or(false);
    OutsideWorkerLoop { set_aside }
}

impl Drop for OutsideWorkerLoop {
    fn drop(&mut self) {
        if self.set_aside {
            let _ = THREAD.try_with(|thread| thread.worker.set(thread.set_aside.take()));
        }
    }
}

/// The handle of the runtime this thread is in: a worker's, or that of the `block_on`
/// or blocking pool it is in (inside a thread hook, a `block_on`'s runtime wins).
pub(crate) fn current_handle() -> Option<Handle> {
    if let Some(handle) = with_worker(|local| local.map(Local::handle)) {
        return Some(handle);
    }
    entered()
}

/// The runtime of the `block_on` or blocking-pool thread this is, if it is one.
fn entered() -> Option<Handle> {
    ENTERED
        .try_with(|entered| entered.borrow().clone())
        .ok()
        .flatten()
}

/// For a timer armed on this thread, in one look at it: the runtime this thread is in
/// (as [`current_handle`]), and the timer shard (`runtime/timer/timers.rs`) to arm in:
/// a worker's own index, so that each worker arms in its own wheel; on any other thread
/// a number drawn once per thread, round the shards, so that plain threads and
/// `block_on` callers spread over them. The timers take it modulo their number of
/// shards.
pub(crate) fn timer_home() -> (Option<Handle>, usize) {
    if let Some((handle, index)) = with_worker(|local| local.map(|l| (l.handle(), l.index()))) {
        return (Some(handle), index);
    }
    (entered(), outside_shard())
}

/// [`timer_home`]'s shard on a thread that is no worker.
fn outside_shard() -> usize {
    // Std's atomic, not the facade's: a process-wide counter outside every model.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    THREAD
        .try_with(|thread| {
            if thread.outside_shard.get() == NO_SHARD {
                // Relaxed: only the spread matters. (Should it reach `NO_SHARD`, the
                // thread draws again at its next timer: harmless.)
                let drawn = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                thread.outside_shard.set(drawn);
            }
            thread.outside_shard.get()
        })
        .unwrap_or(0)
}

/// True while csp polls a process or a `block_on` future on this thread (on a worker:
/// while it runs a process, when the processes it wakes go to its handoff slot).
#[inline]
pub(crate) fn is_polling() -> bool {
    polling_word() != NOT_POLLING
}

/// The id of the runtime whose process or `block_on` future this thread is polling; 0
/// when it polls none (a plain thread, another executor, a blocking-pool closure).
#[inline]
pub(crate) fn polling_runtime() -> u64 {
    match polling_word() {
        NOT_POLLING => 0,
        runtime => runtime,
    }
}

/// [`Thread::polling`] as it is: the id of the runtime being polled, 0, or a value that
/// is neither while csp polls nothing. For a hot test that a value is the runtime being
/// polled (`chan/home.rs`) without mapping the last case to 0 first.
#[inline]
pub(crate) fn polling_word() -> u64 {
    THREAD
        .try_with(|thread| thread.polling.get())
        .unwrap_or(NOT_POLLING)
}

/// Counts a value this thread put in a channel's buffer ([`buffered`]).
#[inline]
pub(crate) fn count_buffered() {
    let _ = THREAD.try_with(|thread| thread.buffered.set(thread.buffered.get().wrapping_add(1)));
}

/// Values this thread has put in channel buffers so far, wrapping: the difference of
/// two readings is how many it put between them.
#[inline]
pub(crate) fn buffered() -> u32 {
    THREAD.try_with(|thread| thread.buffered.get()).unwrap_or(0)
}

/// Marks this thread, for good, as one of runtime `runtime`'s blocking-pool threads.
pub(crate) fn set_pool_thread(runtime: u64) {
    THREAD.with(|thread| thread.pool_of.set(runtime));
}

/// True on a thread of runtime `runtime`'s blocking pool.
pub(crate) fn is_pool_thread_of(runtime: u64) -> bool {
    THREAD
        .try_with(|thread| thread.pool_of.get() == runtime)
        .unwrap_or(false)
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
        THREAD.with(|thread| thread.worker.set(Some(NonNull::from(local))));
        WorkerGuard(())
    }
}

impl Drop for WorkerGuard {
    fn drop(&mut self) {
        let _ = THREAD.try_with(|thread| thread.worker.set(None));
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
    let previous = THREAD.with(|thread| thread.polling.replace(runtime));
    PollingGuard { previous }
}

impl Drop for PollingGuard {
    #[inline]
    fn drop(&mut self) {
        let _ = THREAD.try_with(|thread| thread.polling.set(self.previous));
    }
}
