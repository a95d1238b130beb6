//! What the process layer needs to park a `JoinHandle`'s waker and cannot know itself
//! (which wakers are csp's own, what a blocked owner records): an interface declared
//! here, implemented by the waiting layer, and named by the runtime
//! ([`Scheduler::JoinWaiter`](crate::task::Scheduler)), so the process's vtable calls it
//! statically.

use std::task::Waker;

/// The waiting layer's part in `JoinHandle::poll`.
pub(crate) trait JoinWaiter {
    /// Records, for dumps and deadlock detection, that the owner of `waker` waits for
    /// process `process` of runtime `runtime`; `blocking` if that is a blocking-pool
    /// task (which completes outside csp's view).
    fn record(waker: &Waker, process: u64, runtime: u64, blocking: bool);

    /// True if waking `stored` wakes the owner of `waker`.
    fn same(stored: &Waker, waker: &Waker) -> bool;

    /// The clone of `waker` for the process to keep until it completes (an internal
    /// one, not counted as held outside csp, for csp's own wakers).
    fn keep(waker: &Waker) -> Waker;
}
