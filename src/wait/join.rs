//! The handle that awaits a process's output: a wait on a process, which records what
//! its owner waits on and keeps csp's own wakers as internal references, as every other
//! wait of this layer does (the process layer's `JoinWaiter`).

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crate::task::JoinError;
use crate::task::join_waiter::JoinWaiter;
use crate::task::raw::RawTask;
use crate::task::state::Notify;
use crate::task::waker::{internal_waker, process_of};
use crate::wait::parker::{internal_waker_of, parker_of};
use crate::wait::record::record_join;

/// This layer's part in `JoinHandle::poll`, named by the runtime for its processes.
#[derive(Debug)]
pub(crate) struct JoinHooks;

impl JoinWaiter for JoinHooks {
    fn record(waker: &Waker, process: u64, runtime: u64, blocking: bool) {
        record_join(waker, process, runtime, blocking);
    }

    fn same(stored: &Waker, waker: &Waker) -> bool {
        wake_same(stored, waker)
    }

    fn keep(waker: &Waker) -> Waker {
        internal_clone(waker)
    }
}

/// True if waking `stored` wakes the owner of `waker` (an internal clone has another
/// vtable than the waker it was made from).
pub(crate) fn wake_same(stored: &Waker, waker: &Waker) -> bool {
    if stored.will_wake(waker) {
        return true;
    }
    match (process_of(stored), process_of(waker)) {
        (Some(a), Some(b)) => a == b,
        _ => match (parker_of(stored), parker_of(waker)) {
            (Some(a), Some(b)) => std::ptr::eq(a, b),
            _ => false,
        },
    }
}

/// A clone of `waker` for csp itself to keep: for a process's or a `block_on` future's
/// waker, one that does not count as held outside csp.
pub(crate) fn internal_clone(waker: &Waker) -> Waker {
    if let Some(raw) = process_of(waker) {
        return internal_waker(raw);
    }
    internal_waker_of(waker).unwrap_or_else(|| waker.clone())
}

/// An owned permission to await a process's output, returned by [`spawn`](crate::spawn).
///
/// A `JoinHandle` is a plain future, woken through its `Waker`, so it can be awaited from
/// any executor (tokio, `futures`' executor, [`block_on`](crate::block_on)), not only
/// inside csp. It resolves to `Ok(output)`, or to a [`JoinError`] if the process panicked
/// or was cancelled.
///
/// Dropping the handle detaches the process: it keeps running, and its output is dropped
/// when it finishes. That is why `csp::spawn(fut);` is the idiom for a detached process.
///
/// ```
/// # csp::block_on(async {
/// let handle = csp::spawn(async { 6 * 7 });
/// assert_eq!(handle.await.unwrap(), 42);
/// # });
/// ```
pub struct JoinHandle<T> {
    raw: RawTask,
    _output: PhantomData<T>,
}

// SAFETY: the handle reads the output (a `T`) on whatever thread awaits it, so it may
// move between threads when `T` may.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: `&JoinHandle` only allows `abort`, `is_finished` and `id`, which touch atomic
// state; the output is reached through `Pin<&mut Self>` only.
unsafe impl<T: Send> Sync for JoinHandle<T> {}

impl<T> Unpin for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    /// Takes over the `JoinHandle` reference of `raw`.
    ///
    /// # Safety
    /// `raw` must be a process whose output type is `T`, and the caller gives up the
    /// reference counted for the handle (with `JOIN_INTEREST` set).
    pub(crate) unsafe fn from_raw(raw: RawTask) -> JoinHandle<T> {
        JoinHandle {
            raw,
            _output: PhantomData,
        }
    }

    /// The id of the runtime the process belongs to.
    pub(crate) fn runtime_id(&self) -> u64 {
        self.raw.runtime_id()
    }

    /// Cancels the process: its future is dropped at the next opportunity (at once if
    /// it is asleep, after its current poll if it is running), and the handle resolves to
    /// a cancelled [`JoinError`]. No effect if it already finished.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let handle = csp::spawn(std::future::pending::<()>());
    /// handle.abort();
    /// assert!(handle.await.unwrap_err().is_cancelled());
    /// # });
    /// ```
    pub fn abort(&self) {
        if self.raw.state().transition_to_aborted() == Notify::Submit {
            // SAFETY: the transition added the reference the entry owns.
            unsafe { self.raw.submit() }
        }
    }

    /// True once the process has finished (completed, panicked or been cancelled), so
    /// awaiting the handle will not wait.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let handle = csp::spawn(async {});
    /// while !handle.is_finished() {
    ///     csp::yield_now().await;
    /// }
    /// # });
    /// ```
    pub fn is_finished(&self) -> bool {
        self.raw.state().load().is_complete()
    }

    /// The process's id, as in [`ProcessInfo::id`](crate::ProcessInfo::id).
    ///
    /// ```
    /// # csp::block_on(async {
    /// let a = csp::spawn(async {});
    /// let b = csp::spawn(async {});
    /// assert_ne!(a.id(), b.id());
    /// # });
    /// ```
    pub fn id(&self) -> u64 {
        self.raw.id()
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut output: Poll<Result<T, JoinError>> = Poll::Pending;
        // SAFETY: the handle's reference keeps the process alive, its output type is `T`
        // (type invariant), and `output` is the `Poll` the vtable entry expects.
        unsafe {
            (self.raw.header().vtable.try_read_output)(
                self.raw.as_ptr(),
                (&raw mut output).cast(),
                cx.waker(),
            )
        };
        output
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        // SAFETY: the handle's reference, given up here.
        unsafe { (self.raw.header().vtable.drop_join_handle)(self.raw.as_ptr()) }
    }
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id())
            .field("finished", &self.is_finished())
            .finish()
    }
}
