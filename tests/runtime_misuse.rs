//! Bad input and misuse of the runtime: clear panics, no hangs.
//!
//! Every test runs under a watchdog (`common::bounded`), so a hang fails it with a
//! message rather than stalling the run.

use csp::{Handle, Runtime};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread;

mod common;

use common::signal::worker_survives;
use common::{bounded, panic_message, runtime, thread_name};

// ---------------------------------------------------------------------------------------
// Bad input and misuse
// ---------------------------------------------------------------------------------------

#[test]
fn zero_worker_threads_is_invalid_input() {
    let err = Runtime::builder().worker_threads(0).build().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(!err.to_string().is_empty());
}

#[test]
fn handle_current_outside_a_runtime_panics_clearly() {
    bounded(20, || {
        assert!(Handle::try_current().is_none());
        let payload = catch_unwind(Handle::current).unwrap_err();
        let message = panic_message(payload.as_ref()).unwrap();
        assert!(message.contains("outside a csp runtime"), "{message}");
    });
}

#[test]
fn block_on_inside_a_process_panics_with_advice() {
    bounded(20, || {
        let rt = Arc::new(runtime(1, "nested-bo"));
        let err = rt
            .block_on(rt.spawn(async { csp::block_on(async { 1 }) }))
            .unwrap_err();
        assert!(err.is_panic());
        let message = panic_message(err.into_panic().as_ref()).unwrap();
        assert!(message.contains(".await"), "{message}");

        let rt2 = rt.clone();
        let err = rt
            .block_on(rt.spawn(async move { rt2.block_on(async { 1 }) }))
            .unwrap_err();
        let message = panic_message(err.into_panic().as_ref()).unwrap();
        assert!(message.contains(".await"), "{message}");

        // Another runtime's block_on from inside a process: same.
        let other = runtime(1, "nested-bo-other");
        let err = rt
            .block_on(rt.spawn(async move { other.block_on(async { 1 }) }))
            .unwrap_err();
        let message = panic_message(err.into_panic().as_ref()).unwrap();
        assert!(message.contains(".await"), "{message}");
        worker_survives(&rt, "nested-bo-0");
    });
}

#[test]
fn nested_block_on_inside_a_block_on_future_panics() {
    bounded(20, || {
        let rt = runtime(1, "nested-bo2");
        let payload = catch_unwind(AssertUnwindSafe(|| {
            rt.block_on(async { rt.block_on(async { 1 }) })
        }))
        .unwrap_err();
        let message = panic_message(payload.as_ref()).unwrap();
        assert!(message.contains(".await"), "{message}");

        let payload = catch_unwind(AssertUnwindSafe(|| {
            rt.block_on(async { csp::block_on(async { 1 }) })
        }))
        .unwrap_err();
        let message = panic_message(payload.as_ref()).unwrap();
        assert!(message.contains(".await"), "{message}");

        let payload = catch_unwind(AssertUnwindSafe(|| {
            csp::block_on(async { rt.block_on(async { 1 }) })
        }))
        .unwrap_err();
        let message = panic_message(payload.as_ref()).unwrap();
        assert!(message.contains(".await"), "{message}");

        // The thread's context was restored by the unwinding.
        assert!(Handle::try_current().is_none());
        assert_eq!(
            rt.block_on(async { csp::spawn(async { 3 }).await.unwrap() }),
            3
        );
        assert!(Handle::try_current().is_none());
    });
}

/// Sends on a rendezvous channel nobody receives from when dropped, catching what that
/// does and reporting it: blocking there would stall the worker for good.
struct BlocksInDrop {
    tx: Option<csp::Sender<()>>,
    report: std::sync::mpsc::Sender<String>,
}

impl Drop for BlocksInDrop {
    fn drop(&mut self) {
        let tx = self.tx.take().unwrap();
        let outcome = catch_unwind(AssertUnwindSafe(|| tx.send_blocking(())));
        let report = match outcome {
            Ok(sent) => format!("send_blocking returned {sent:?}"),
            Err(payload) => panic_message(payload.as_ref()).unwrap_or_default(),
        };
        let _ = self.report.send(report);
    }
}

#[test]
fn blocking_in_the_drop_of_a_future_cancelled_while_it_rests_panics_with_advice() {
    // A process cancelled while it rests on its worker (its poll returned `Pending` and
    // the worker put off its transition to sleep) has its future dropped by the worker
    // after its next poll: that drop is user code on a worker, as a poll is.
    bounded(20, || {
        let rt = runtime(1, "drop-rests");
        let (report, reports) = std::sync::mpsc::channel();
        let cancelled = rt.block_on(rt.spawn(async move {
            let (tx, _rx) = csp::channel::<()>();
            let (_never_tx, never_rx) = csp::channel::<()>();
            let guard = BlocksInDrop {
                tx: Some(tx),
                report,
            };
            // Spawned from a poll on the worker, it runs right after it, and rests there.
            let victim = csp::spawn(async move {
                let _guard = guard;
                let _ = never_rx.recv().await;
            });
            csp::yield_now().await;
            // The victim has been polled once and rests: cancelled now, its future is
            // dropped when this poll ends.
            victim.abort();
            victim.await.unwrap_err()
        }));
        assert!(cancelled.unwrap().is_cancelled());
        let message = reports.recv().unwrap();
        assert!(
            message.contains("send_blocking") && message.contains(".await"),
            "{message}"
        );
        worker_survives(&rt, "drop-rests-0");
    });
}

#[test]
fn try_current_is_some_exactly_inside_a_runtime() {
    bounded(20, || {
        let rt = runtime(1, "try-current");
        assert!(Handle::try_current().is_none());
        // Each place's handle spawns onto this runtime: its process runs on our worker.
        let via = |handle: Handle| handle.spawn(async { thread_name() });
        let in_block_on = rt.block_on(async { via(Handle::current()).await.unwrap() });
        assert_eq!(in_block_on, "try-current-0");
        let in_process = rt
            .block_on(rt.spawn(async move { via(Handle::try_current().unwrap()).await.unwrap() }))
            .unwrap();
        assert_eq!(in_process, "try-current-0");
        let in_blocking = rt
            .block_on(
                rt.handle()
                    .spawn_blocking(move || via(Handle::try_current().unwrap())),
            )
            .unwrap();
        assert_eq!(rt.block_on(in_blocking).unwrap(), "try-current-0");
        // Another runtime's block_on on a blocking-pool thread enters that runtime for
        // its duration only.
        let other = Arc::new(runtime(1, "try-other"));
        let o = other.clone();
        let names = rt
            .block_on(rt.handle().spawn_blocking(move || {
                let inside = o.block_on(async { via(Handle::current()).await.unwrap() });
                let after = via(Handle::current());
                (inside, after)
            }))
            .unwrap();
        assert_eq!(names.0, "try-other-0");
        assert_eq!(rt.block_on(names.1).unwrap(), "try-current-0");
        assert!(Handle::try_current().is_none(), "block_on left the runtime");
        let plain = thread::spawn(|| Handle::try_current().is_none())
            .join()
            .unwrap();
        assert!(plain);
    });
}
