//! Running a future to completion on the calling thread.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

use crate::runtime::{Handle, context};

/// Wakes the thread blocked in `block_on`. Built on std's `Arc` and thread parking
/// (`std::task::Wake` requires std's `Arc`); `block_on` is in no loom model.
struct ThreadWaker {
    thread: Thread,
    notified: AtomicBool,
}

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Release: publishes what the waker did before waking to the blocked thread.
        if !self.notified.swap(true, Ordering::Release) {
            self.thread.unpark();
        }
    }
}

impl ThreadWaker {
    fn wait(&self) {
        // Acquire: pairs with the Release in `wake_by_ref`.
        while !self.notified.swap(false, Ordering::Acquire) {
            thread::park();
        }
    }
}

/// `Runtime::block_on` and the free `csp::block_on`.
#[track_caller]
pub(crate) fn block_on<F: Future>(handle: &Handle, future: F) -> F::Output {
    context::assert_may_block("block_on");
    let _enter = context::enter(handle.clone());
    park_on(future)
}

/// Runs `future` to completion on this thread, parking between polls; marks csp as
/// polling meanwhile (so a nested blocking call panics instead of deadlocking).
pub(crate) fn park_on<F: Future>(future: F) -> F::Output {
    let thread_waker = Arc::new(ThreadWaker {
        thread: thread::current(),
        notified: AtomicBool::new(false),
    });
    let waker = Waker::from(thread_waker.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        let polled = {
            let _polling = context::polling();
            future.as_mut().poll(&mut cx)
        };
        if let Poll::Ready(output) = polled {
            return output;
        }
        thread_waker.wait();
    }
}
