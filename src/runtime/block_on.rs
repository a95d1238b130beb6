//! Running a future to completion on the calling thread: `block_on`, and the blocking
//! channel calls (`send_blocking`, `recv_blocking`). The thread parks between polls on a
//! [`Parker`] (`wait/parker.rs`); deadlock detection (`deadlock.rs`) reads what its
//! future last recorded.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::runtime::{Handle, context};
use crate::wait::parker::Parker;
use crate::wait::record::blank_wait;

/// `Runtime::block_on` and the free `csp::block_on`: runs `future` as the runtime's main
/// future, reporting a deadlock (if the runtime detects them) when it and every process
/// of the runtime have been blocked on each other for the whole grace period.
#[track_caller]
pub(crate) fn block_on<F: Future>(handle: &Handle, future: F) -> F::Output {
    context::assert_may_block("block_on");
    let _enter = context::enter(handle.clone());
    let shared = &handle.shared;
    let _main = shared.main_future();
    let parker = Parker::new(shared.id());
    run(&parker, future, |parker| {
        let Some(grace) = shared.deadlock_grace else {
            return parker.park();
        };
        loop {
            // A wake already here: no park, and no activity to sample.
            if parker.take_notified() {
                return;
            }
            let activity = shared.activity();
            if parker.park_timeout(grace) {
                return;
            }
            if let Some(report) = shared.deadlock_report(Some(parker), activity) {
                panic!("{report}");
            }
        }
    })
}

/// Runs `future` to completion on this thread for a blocking call, parking between
/// polls; no runtime counts it as its own.
pub(crate) fn park_on<F: Future>(future: F) -> F::Output {
    run(&Parker::new(0), future, Parker::park)
}

/// Polls `future` until it is ready, calling `wait` after each `Pending`; marks csp as
/// polling meanwhile (so a nested blocking call panics instead of deadlocking), for the
/// parker's runtime.
fn run<F: Future>(parker: &Arc<Parker>, future: F, mut wait: impl FnMut(&Parker)) -> F::Output {
    // On a worker's thread (in a thread hook), outside the worker's loop.
    let _outside = context::outside_worker_loop();
    let waker = Parker::waker_ref(parker);
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        // Each poll records afresh what the future waits on, stamped with the foreign
        // epoch as the poll starts, as a process's poll is (`wait/record.rs`): a channel
        // that turns foreign during the poll leaves the wait it records stale, never
        // counted as one only csp could end.
        parker.record(blank_wait(parker.runtime()));
        let polled = {
            let _polling = context::polling(parker.runtime());
            future.as_mut().poll(&mut cx)
        };
        if let Poll::Ready(output) = polled {
            return output;
        }
        wait(parker);
    }
}
