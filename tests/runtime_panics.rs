//! Panics of a process's future, of its drop and of its output's drop.
//!
//! Every test runs under a watchdog (`common::bounded`), so a hang fails it with a
//! message rather than stalling the run.

use csp::ProcessState;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

mod common;

use common::signal::*;
use common::{
    Counter, CountingWaker, PanicOnDrop, Tracked, bounded, panic_message, poll_once, runtime,
    wait_for_state, wait_until, wait_until_no_process,
};

// ---------------------------------------------------------------------------------------
// Panics
// ---------------------------------------------------------------------------------------

#[test]
fn a_panicking_process_reports_its_payload() {
    bounded(20, || {
        let rt = runtime(1, "panicky");
        let err = rt
            .block_on(rt.spawn(async { panic!("boom {}", 7) }))
            .unwrap_err();
        assert!(err.is_panic() && !err.is_cancelled());
        assert!(err.to_string().contains("boom 7"), "{err}");
        let payload = err.into_panic();
        assert_eq!(panic_message(payload.as_ref()).as_deref(), Some("boom 7"));
        let n = std::hint::black_box(8);
        let err = rt
            .block_on(rt.spawn(async move { panic!("boom {n}") }))
            .unwrap_err();
        assert_eq!(err.into_panic().downcast_ref::<String>().unwrap(), "boom 8");

        let err = rt
            .block_on(rt.spawn(async { std::panic::panic_any(17u32) }))
            .unwrap_err();
        let payload = err.try_into_panic().expect("a panic");
        assert_eq!(*payload.downcast::<u32>().unwrap(), 17);
        worker_survives(&rt, "panicky-0");

        // Panics after a few polls, from many processes at once.
        let errors = rt.block_on(async {
            let handles: Vec<_> = (0..100)
                .map(|i| {
                    csp::spawn(async move {
                        csp::yield_now().await;
                        if i % 2 == 0 {
                            panic!("even");
                        }
                        i
                    })
                })
                .collect();
            let mut errors = 0;
            for h in handles {
                if h.await.is_err() {
                    errors += 1;
                }
            }
            errors
        });
        assert_eq!(errors, 50);
        worker_survives(&rt, "panicky-0");
    });
}

#[test]
fn into_panic_of_a_cancellation_panics() {
    bounded(20, || {
        let rt = runtime(1, "into-panic");
        let handle = rt.spawn(std::future::pending::<()>());
        handle.abort();
        let err = rt.block_on(handle).unwrap_err();
        let err = err.try_into_panic().unwrap_err();
        assert!(err.is_cancelled());
        let caught = catch_unwind(AssertUnwindSafe(move || err.into_panic())).unwrap_err();
        assert!(panic_message(caught.as_ref()).is_some());
    });
}

/// A future that is Ready at once (or pending forever) and whose Drop panics.
struct DropPanics {
    ready: bool,
    drops: Counter,
    output: Option<Tracked>,
}

impl Future for DropPanics {
    type Output = Tracked;

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Tracked> {
        if self.ready {
            Poll::Ready(self.output.take().unwrap())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for DropPanics {
    fn drop(&mut self) {
        self.drops.incr();
        panic!("future drop panicked");
    }
}

#[test]
fn a_future_whose_drop_panics_after_ready() {
    bounded(20, || {
        let rt = runtime(1, "droppanic");
        let (drops, out_drops) = (Counter::new(), Counter::new());
        let handle = rt.spawn(DropPanics {
            ready: true,
            drops: drops.clone(),
            output: Some(Tracked::new(1, &out_drops)),
        });
        let err = rt.block_on(handle).unwrap_err();
        assert!(err.is_panic(), "{err:?}");
        assert_eq!(
            panic_message(err.into_panic().as_ref()).as_deref(),
            Some("future drop panicked")
        );
        assert_eq!(drops.get(), 1);
        assert_eq!(
            out_drops.get(),
            1,
            "the output made before the panic is dropped once"
        );
        worker_survives(&rt, "droppanic-0");
    });
}

#[test]
fn a_future_whose_drop_panics_when_aborted() {
    bounded(20, || {
        let rt = runtime(1, "droppanic-abort");
        let drops = Counter::new();
        let handle = rt.spawn(DropPanics {
            ready: false,
            drops: drops.clone(),
            output: None,
        });
        wait_for_state(&rt, handle.id(), ProcessState::Sleeping);
        handle.abort();
        let err = rt.block_on(handle).unwrap_err();
        assert!(err.is_panic(), "{err:?}");
        assert_eq!(drops.get(), 1);
        worker_survives(&rt, "droppanic-abort-0");
    });
}

#[test]
fn a_panicking_drop_of_an_output_nobody_joins_is_contained() {
    bounded(20, || {
        let rt = runtime(1, "outpanic");
        let drops = Counter::new();
        for _ in 0..10 {
            let d = drops.clone();
            drop(rt.spawn(async move {
                csp::yield_now().await;
                PanicOnDrop(d)
            }));
        }
        wait_until(10, "every output was dropped", || drops.get() == 10);
        worker_survives(&rt, "outpanic-0");
        // Dropping a JoinHandle that holds such an output does not panic the dropper.
        let d = drops.clone();
        let handle = rt.spawn(async move { PanicOnDrop(d) });
        wait_until(10, "the process finished", || handle.is_finished());
        drop(handle);
        assert_eq!(drops.get(), 11);
    });
}

#[test]
fn a_panicking_drop_at_shutdown_is_contained() {
    bounded(20, || {
        let rt = runtime(2, "shutpanic");
        let drops = Counter::new();
        let handles: Vec<_> = (0..20)
            .map(|_| {
                rt.spawn(DropPanics {
                    ready: false,
                    drops: drops.clone(),
                    output: None,
                })
            })
            .collect();
        for h in &handles {
            wait_for_state(&rt, h.id(), ProcessState::Sleeping);
        }
        drop(rt); // must not panic
        assert_eq!(drops.get(), 20);
        for h in handles {
            let err = futures::executor::block_on(h).unwrap_err();
            assert!(err.is_panic() || err.is_cancelled(), "{err:?}");
        }
    });
}

#[test]
fn a_panicking_join_handle_waker_does_not_kill_the_worker() {
    // The worker that completes a process wakes its JoinHandle's waker, which belongs to
    // whoever awaits the handle. A panic there must not unwind the worker thread (which
    // would strand every other process and make Runtime's Drop wait forever).
    bounded(10, || {
        let rt = runtime(1, "panic-waker");
        let signal = Signal::new();
        let wait = signal.wait();
        let mut handle = rt.spawn(async move {
            wait.await;
            1u8
        });
        // A misbehaving foreign executor's waker.
        let (probe, waker) = CountingWaker::panicking();
        assert!(poll_once(&mut handle, &waker).is_pending());
        signal.set();
        wait_until(5, "the process finished", || handle.is_finished());
        assert_eq!(probe.wakes(), 1);
        match poll_once(&mut handle, Waker::noop()) {
            Poll::Ready(Ok(v)) => assert_eq!(v, 1),
            other => panic!("the output was lost: {other:?}"),
        }
        worker_survives(&rt, "panic-waker-0");
        drop(rt);
    });
}

#[test]
fn a_join_handle_dropped_while_unwinding_survives_a_waker_whose_drop_panics() {
    // As below, but the handle is dropped by a scope that is panicking already: a second
    // panic out of the kept waker's drop would abort the process. The scope's own panic
    // comes out, and the handle's reference still goes.
    bounded(20, || {
        let rt = runtime(1, "unwinding-handle");
        let signal = Signal::new();
        let wait = signal.wait();
        let mut handle = rt.spawn(wait);
        let waker = common::waker_with_clone_hook(|| {});
        assert!(poll_once(&mut handle, &waker).is_pending());
        common::drop_while_unwinding(handle);
        signal.set();
        wait_until_no_process(&rt, 10);
        worker_survives(&rt, "unwinding-handle-0");
        drop(rt);
    });
}

#[test]
fn a_join_handle_dropped_with_a_waker_whose_drop_panics_frees_its_process() {
    // A handle polled from a foreign executor keeps a clone of its waker; dropping the
    // handle drops that clone, which panics here. The handle's reference must go all
    // the same: the process, and through it the runtime's state with the hook it holds,
    // are freed.
    bounded(20, || {
        let drops = Counter::new();
        let held = Tracked::new(0, &drops);
        let rt = csp::Runtime::builder()
            .worker_threads(1)
            .on_thread_start(move || {
                let _ = &held;
            })
            .build()
            .unwrap();
        let signal = Signal::new();
        let wait = signal.wait();
        let mut handle = rt.spawn(wait);
        let waker = common::waker_with_clone_hook(|| {});
        assert!(poll_once(&mut handle, &waker).is_pending());
        let dropped = catch_unwind(AssertUnwindSafe(move || drop(handle)));
        let payload = dropped.expect_err("the kept waker's drop panics");
        assert_eq!(
            panic_message(&*payload).as_deref(),
            Some("waker drop panics")
        );
        signal.set();
        drop(rt);
        wait_until(10, "the runtime's state, hooks included, is freed", || {
            drops.get() == 1
        });
    });
}
