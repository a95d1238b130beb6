//! Helpers of the runtime tests (`tests/runtime_*.rs`): a signal a process can wait on,
//! a spin, and a check that a worker survived.

use csp::Runtime;
use futures::task::AtomicWaker;
use std::collections::HashSet;
use std::future::{Future, poll_fn};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::thread;

use super::thread_name;

/// A flag a process can wait on: set from anywhere, wakes the waiting process.
#[derive(Default)]
pub struct Signal {
    set: AtomicBool,
    waker: AtomicWaker,
}

impl Signal {
    pub fn new() -> Arc<Signal> {
        Arc::new(Signal::default())
    }

    pub fn set(&self) {
        self.set.store(true, Ordering::SeqCst);
        self.waker.wake();
    }

    /// Resolves once the flag is set (registers before checking: no lost wake). Keeps
    /// no waker once it has resolved.
    pub fn wait(self: &Arc<Self>) -> impl Future<Output = ()> + Send + 'static {
        let this = self.clone();
        poll_fn(move |cx| {
            this.waker.register(cx.waker());
            if this.set.load(Ordering::SeqCst) {
                drop(this.waker.take());
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

/// Spins (blocking its thread) until `flag` is set.
pub fn spin_until(flag: &AtomicBool) {
    while !flag.load(Ordering::SeqCst) {
        std::hint::spin_loop();
        thread::yield_now();
    }
}

/// Checks that the single worker of `rt` is alive and well, and still named `name`.
pub fn worker_survives(rt: &Runtime, name: &str) {
    let names = rt.block_on(async {
        let handles: Vec<_> = (0..50)
            .map(|_| csp::spawn(async { thread_name() }))
            .collect();
        let mut names = HashSet::new();
        for h in handles {
            names.insert(h.await.unwrap());
        }
        names
    });
    assert_eq!(names, HashSet::from([name.to_owned()]));
}
