//! What the process layer needs to park a `JoinHandle`'s waker and cannot know itself
//! (which wakers are csp's own, what a blocked owner records): an interface declared
//! here and filled in by the waiting layer, whose `JoinHandle` hands it to the process's
//! vtable on every poll.

use std::task::Waker;

/// The waiting layer's part in `JoinHandle::poll`.
pub(crate) struct JoinWaiter {
    /// Records, for dumps and deadlock detection, that the owner of the waker waits for
    /// process `process` of runtime `runtime`; `blocking` if that is a blocking-pool
    /// task (which completes outside csp's view).
    pub(crate) record: fn(waker: &Waker, process: u64, runtime: u64, blocking: bool),
    /// True if waking `stored` wakes the owner of `waker`.
    pub(crate) same: fn(stored: &Waker, waker: &Waker) -> bool,
    /// The clone of `waker` for the process to keep until it completes (an internal
    /// one, not counted as held outside csp, for csp's own wakers).
    pub(crate) keep: fn(waker: &Waker) -> Waker,
}
