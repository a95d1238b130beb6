//! `JoinHandle::abort` in every state of a process.
//!
//! Every test runs under a watchdog (`common::bounded`), so a hang fails it with a
//! message rather than stalling the run.

use csp::ProcessState;
use std::future::poll_fn;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

mod common;

use common::signal::*;
use common::{
    Counter, CountingWaker, Tracked, bounded, counted, pending_counted, poll_once, runtime,
    wait_for_state, wait_until, wait_until_no_process,
};

// ---------------------------------------------------------------------------------------
// Abort
// ---------------------------------------------------------------------------------------

#[test]
fn abort_a_sleeping_process() {
    bounded(20, || {
        let rt = runtime(2, "abort-sleep");
        let (fut, polls, drops) = pending_counted();
        let mut handle = rt.spawn(fut);
        wait_for_state(&rt, handle.id(), ProcessState::Sleeping);
        assert_eq!(polls.get(), 1);
        let (probe, waker) = CountingWaker::new();
        assert!(poll_once(&mut handle, &waker).is_pending());
        handle.abort();
        handle.abort(); // twice is harmless
        let err = rt.block_on(&mut handle).unwrap_err();
        assert!(err.is_cancelled() && !err.is_panic(), "{err:?}");
        assert_eq!(drops.get(), 1, "the future is dropped exactly once");
        assert_eq!(polls.get(), 1, "an aborted process is not polled again");
        assert!(handle.is_finished());
        handle.abort(); // after completion: no effect
        assert!(!rt.processes().iter().any(|p| p.id == handle.id()));
        drop(handle);
        drop(rt);
        drop(waker);
        assert_eq!(drops.get(), 1);
        assert_eq!(Arc::strong_count(&probe), 1, "the process was freed");
    });
}

#[test]
fn abort_a_running_process_that_then_returns_pending() {
    bounded(20, || {
        let rt = runtime(2, "abort-run");
        let started = Arc::new(AtomicBool::new(false));
        let go = Arc::new(AtomicBool::new(false));
        let (s, g) = (started.clone(), go.clone());
        let (fut, polls, drops) = counted(poll_fn(move |cx| {
            s.store(true, Ordering::SeqCst);
            spin_until(&g);
            // Even a wake of itself does not bring it back once aborted.
            cx.waker().wake_by_ref();
            Poll::<u32>::Pending
        }));
        let handle = rt.spawn(fut);
        spin_until(&started);
        handle.abort();
        assert!(!handle.is_finished(), "still inside poll");
        assert_eq!(
            drops.get(),
            0,
            "a running future is not dropped under its poller"
        );
        go.store(true, Ordering::SeqCst);
        let err = rt.block_on(handle).unwrap_err();
        assert!(err.is_cancelled(), "{err:?}");
        assert_eq!(polls.get(), 1);
        assert_eq!(drops.get(), 1);
    });
}

#[test]
fn abort_a_running_process_that_then_completes_keeps_the_output() {
    bounded(20, || {
        let rt = runtime(2, "abort-run-ok");
        let started = Arc::new(AtomicBool::new(false));
        let go = Arc::new(AtomicBool::new(false));
        let (s, g) = (started.clone(), go.clone());
        let handle = rt.spawn(poll_fn(move |_| {
            s.store(true, Ordering::SeqCst);
            spin_until(&g);
            Poll::Ready(7u32)
        }));
        spin_until(&started);
        handle.abort();
        go.store(true, Ordering::SeqCst);
        // The output was made: it is delivered (abort cancels at the next opportunity,
        // and a finished process offers none).
        assert_eq!(rt.block_on(handle).unwrap(), 7);
    });
}

#[test]
fn abort_after_completion_has_no_effect() {
    bounded(20, || {
        let rt = runtime(2, "abort-done");
        let drops = Counter::new();
        let d = drops.clone();
        let handle = rt.spawn(async move { Tracked::new(42, &d) });
        wait_until(10, "the process finished", || handle.is_finished());
        handle.abort();
        let out = rt
            .block_on(handle)
            .expect("abort after completion has no effect");
        assert_eq!(out.value, 42);
        assert_eq!(drops.get(), 0);
        drop(out);
        assert_eq!(drops.get(), 1);
    });
}

#[test]
fn abort_racing_completion() {
    const ROUNDS: u64 = 2_000;
    bounded(60, || {
        let rt = runtime(2, "abort-race");
        let made = Counter::new();
        let outputs_dropped = Counter::new();
        let mut ok = 0u64;
        let mut cancelled = 0u64;
        for i in 0..ROUNDS {
            let (m, d) = (made.clone(), outputs_dropped.clone());
            let body_done = Arc::new(AtomicBool::new(false));
            let b = body_done.clone();
            let (fut, _, future_drops) = counted(async move {
                for _ in 0..(i % 3) {
                    csp::yield_now().await;
                }
                m.incr();
                b.store(true, Ordering::SeqCst);
                Tracked::new(i, &d)
            });
            let result = if i % 2 == 0 {
                // Aborted from this thread, racing the workers.
                let handle = rt.spawn(fut);
                for _ in 0..(i % 64) {
                    std::hint::spin_loop();
                }
                handle.abort();
                rt.block_on(handle)
            } else {
                // Aborted from another process, on a worker.
                rt.block_on(rt.spawn(async move {
                    let handle = csp::spawn(fut);
                    for _ in 0..(i % 4) {
                        csp::yield_now().await;
                    }
                    handle.abort();
                    handle.await
                }))
                .unwrap()
            };
            check_race(i, result, &body_done, &mut ok, &mut cancelled);
            wait_until(10, "the future was dropped", || future_drops.get() == 1);
        }
        assert_eq!(ok + cancelled, ROUNDS, "every handle resolved");
        assert_eq!(
            made.get() as u64,
            ok,
            "an output exists exactly for each Ok"
        );
        drop(rt);
        assert_eq!(
            outputs_dropped.get() as u64,
            ok,
            "each output dropped exactly once"
        );
        // Both outcomes happen (a plausible bug makes abort always or never win).
        assert!(cancelled > 0, "abort never won");
    });
}

fn check_race(
    i: u64,
    result: Result<Tracked, csp::JoinError>,
    body_done: &AtomicBool,
    ok: &mut u64,
    cancelled: &mut u64,
) {
    match result {
        Ok(t) => {
            assert_eq!(t.value, i);
            assert!(body_done.load(Ordering::SeqCst));
            *ok += 1;
        }
        Err(e) => {
            assert!(e.is_cancelled(), "round {i}: {e:?}");
            assert!(
                !body_done.load(Ordering::SeqCst),
                "round {i}: cancelled, yet the body ran to completion (its output lost)"
            );
            *cancelled += 1;
        }
    }
}

#[test]
fn abort_many_at_once() {
    bounded(30, || {
        let rt = runtime(2, "abort-many");
        for _ in 0..20 {
            let mut handles = Vec::new();
            let mut drop_counters = Vec::new();
            for i in 0..200u32 {
                let (fut, _, drops) = counted(async move {
                    if i % 2 == 0 {
                        std::future::pending::<()>().await;
                    }
                    csp::yield_now().await;
                    i
                });
                handles.push(rt.spawn(fut));
                drop_counters.push(drops);
            }
            for h in &handles {
                h.abort();
            }
            for (i, h) in handles.into_iter().enumerate() {
                match rt.block_on(h) {
                    Ok(v) => assert_eq!(v as usize, i),
                    Err(e) => assert!(e.is_cancelled()),
                }
            }
            for drops in &drop_counters {
                wait_until(10, "each future dropped", || drops.get() == 1);
            }
        }
        wait_until_no_process(&rt, 10);
    });
}

#[test]
fn dropping_a_polled_join_handle_races_completion() {
    const ROUNDS: u64 = 3_000;
    bounded(60, || {
        let rt = runtime(2, "drop-race");
        let made = Counter::new();
        let dropped = Counter::new();
        let (probe, probe_waker) = CountingWaker::new();
        for i in 0..ROUNDS {
            let (m, d) = (made.clone(), dropped.clone());
            let mut handle = rt.spawn(async move {
                if i % 3 == 0 {
                    csp::yield_now().await;
                }
                m.incr();
                Tracked::new(i, &d)
            });
            // The handle stores the probe as its waker (unless already finished), then is
            // dropped while the process completes on a worker.
            if let Poll::Ready(out) = poll_once(&mut handle, &probe_waker) {
                assert_eq!(out.unwrap().value, i);
            }
            for _ in 0..(i % 32) {
                std::hint::spin_loop();
            }
            drop(handle);
        }
        wait_until(20, "every detached process ran to completion", || {
            made.get() as u64 == ROUNDS
        });
        wait_until(10, "every output was dropped", || {
            dropped.get() as u64 == ROUNDS
        });
        drop(rt);
        assert_eq!(
            dropped.get() as u64,
            ROUNDS,
            "each output dropped exactly once"
        );
        drop(probe_waker);
        assert_eq!(
            Arc::strong_count(&probe),
            1,
            "a JoinHandle's waker leaked (or every process was not freed)"
        );
    });
}
