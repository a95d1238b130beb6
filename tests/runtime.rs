//! Integration tests of the runtime: spawning and joining, abort, panics, wakes,
//! shutdown, bad input, the blocking pool, thread names, process dumps, metrics and
//! `yield_now`. Every test runs under a watchdog (`common::bounded`), so a hang fails
//! it with a message rather than stalling the run.

use std::collections::HashSet;
use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, mpsc};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use csp::{Handle, JoinHandle, ProcessState, Runtime};
use futures::task::AtomicWaker;

mod common;

use common::{
    Counter, CountingWaker, PanicOnDrop, Tracked, bounded, counted, panic_message, pending_counted,
    poll_once, runtime, thread_name, wait_for_state, wait_until, wait_until_no_process,
};

/// A flag a process can wait on: set from anywhere, wakes the waiting process.
#[derive(Default)]
struct Signal {
    set: AtomicBool,
    waker: AtomicWaker,
}

impl Signal {
    fn new() -> Arc<Signal> {
        Arc::new(Signal::default())
    }

    fn set(&self) {
        self.set.store(true, Ordering::SeqCst);
        self.waker.wake();
    }

    /// Resolves once the flag is set (registers before checking: no lost wake). Keeps
    /// no waker once it has resolved.
    fn wait(self: &Arc<Self>) -> impl Future<Output = ()> + Send + 'static {
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
fn spin_until(flag: &AtomicBool) {
    while !flag.load(Ordering::SeqCst) {
        std::hint::spin_loop();
        thread::yield_now();
    }
}

// ---------------------------------------------------------------------------------------
// Spawning and joining
// ---------------------------------------------------------------------------------------

#[test]
fn spawn_and_await_from_block_on() {
    bounded(20, || {
        let rt = runtime(2, "spawn-bo");
        let sum = rt.block_on(async {
            let handles: Vec<_> = (0..100u64)
                .map(|i| csp::spawn(async move { i * 2 }))
                .collect();
            let mut sum = 0;
            for h in handles {
                sum += h.await.unwrap();
            }
            sum
        });
        assert_eq!(sum, 9900);
        // Runtime::spawn and Handle::spawn from the test thread, joined by block_on.
        let a = rt.spawn(async { String::from("runtime") });
        let b = rt.handle().spawn(async { String::from("handle") });
        assert_eq!(rt.block_on(a).unwrap(), "runtime");
        assert_eq!(rt.block_on(b).unwrap(), "handle");
        // Handle::spawn from a plain thread.
        let handle = rt.handle();
        let c = thread::spawn(move || handle.spawn(async { thread_name() }))
            .join()
            .unwrap();
        assert!(rt.block_on(c).unwrap().starts_with("spawn-bo-"));
        assert_eq!(rt.metrics().spawned, 103);
    });
}

#[test]
fn spawn_inside_block_on_goes_to_that_runtime() {
    bounded(20, || {
        let rt = runtime(1, "inside-bo");
        let name = rt.block_on(async { csp::spawn(async { thread_name() }).await.unwrap() });
        assert_eq!(name, "inside-bo-0");
        assert_eq!(rt.metrics().spawned, 1);
    });
}

/// A tree of processes: each spawns `fan` children down to `depth`, and returns the
/// number of processes in its subtree.
fn tree(depth: u32, fan: u32) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        assert!(
            thread_name().starts_with("tree-"),
            "children run on the same runtime"
        );
        if depth == 0 {
            return 1;
        }
        let children: Vec<JoinHandle<u64>> =
            (0..fan).map(|_| csp::spawn(tree(depth - 1, fan))).collect();
        let mut total = 1;
        for child in children {
            total += child.await.unwrap();
        }
        total
    })
}

#[test]
fn spawn_and_await_from_inside_processes() {
    bounded(20, || {
        let rt = runtime(2, "tree");
        // 1 + 4 + 16 + 64 + 256 processes.
        let total = rt.block_on(rt.spawn(tree(4, 4))).unwrap();
        assert_eq!(total, 341);
        assert_eq!(rt.metrics().spawned, 341);
    });
}

#[test]
fn a_million_processes_complete() {
    const N: usize = 1_000_000;
    bounded(120, || {
        let rt = runtime(2, "million");
        let ran = Counter::new();
        let ran2 = ran.clone();
        let done = rt
            .block_on(rt.spawn(async move {
                let mut handles = Vec::with_capacity(N);
                for _ in 0..N {
                    let ran = ran2.clone();
                    handles.push(csp::spawn(async move {
                        ran.incr();
                    }));
                }
                let mut done = 0usize;
                for h in handles {
                    h.await.unwrap();
                    done += 1;
                }
                done
            }))
            .unwrap();
        assert_eq!(done, N);
        assert_eq!(ran.get(), N);
        let m = rt.metrics();
        assert_eq!(m.spawned, N as u64 + 1);
        assert!(m.polls >= m.spawned);
        wait_until_no_process(&rt, 10);
    });
}

// ---------------------------------------------------------------------------------------
// JoinHandle
// ---------------------------------------------------------------------------------------

#[test]
fn join_delivers_the_output() {
    bounded(20, || {
        let rt = runtime(2, "join-out");
        let drops = Counter::new();
        let d = drops.clone();
        let out = rt
            .block_on(rt.spawn(async move { (vec![1, 2, 3], Tracked::new(9, &d)) }))
            .unwrap();
        assert_eq!(out.0, [1, 2, 3]);
        assert_eq!(out.1.value, 9);
        assert_eq!(drops.get(), 0, "the output is moved out, not dropped");
        drop(out);
        assert_eq!(drops.get(), 1);
    });
}

#[test]
fn awaiting_a_handle_whose_process_already_finished() {
    bounded(20, || {
        let rt = runtime(2, "join-late");
        let signal = Signal::new();
        let wait = signal.wait();
        let mut handle = rt.spawn(async move {
            wait.await;
            "late"
        });
        let (probe, waker) = CountingWaker::new();
        assert!(poll_once(&mut handle, &waker).is_pending());
        assert!(!handle.is_finished());
        thread::sleep(Duration::from_millis(20));
        assert!(!handle.is_finished(), "the process waits on the signal");
        signal.set();
        wait_until(10, "the process finished", || handle.is_finished());
        wait_until(10, "the JoinHandle's waker was woken", || {
            probe.wakes() >= 1
        });
        // Once is_finished() says so, a single poll is Ready.
        match poll_once(&mut handle, &waker) {
            Poll::Ready(Ok(v)) => assert_eq!(v, "late"),
            other => panic!("expected the output at once, got {other:?}"),
        }

        // And a handle never polled before completion.
        let handle = rt.spawn(async { 5u8 });
        wait_until(10, "the process finished", || handle.is_finished());
        assert_eq!(rt.block_on(handle).unwrap(), 5);
    });
}

#[test]
fn join_handle_wakes_only_its_latest_waker() {
    bounded(20, || {
        let rt = runtime(2, "join-waker");
        let signal = Signal::new();
        let wait = signal.wait();
        let mut handle = rt.spawn(wait);
        let (first, first_waker) = CountingWaker::new();
        let (second, second_waker) = CountingWaker::new();
        assert!(poll_once(&mut handle, &first_waker).is_pending());
        assert!(
            poll_once(&mut handle, &first_waker).is_pending(),
            "same waker again"
        );
        assert!(poll_once(&mut handle, &second_waker).is_pending());
        drop(first_waker);
        assert_eq!(
            Arc::strong_count(&first),
            1,
            "the replaced waker was released"
        );
        signal.set();
        wait_until(10, "the latest waker was woken", || second.wakes() == 1);
        assert!(poll_once(&mut handle, &second_waker).is_ready());
        assert_eq!(first.wakes(), 0, "the replaced waker is never woken");
        drop(handle);
        drop(rt);
        drop(second_waker);
        assert_eq!(Arc::strong_count(&second), 1, "the process was freed");
    });
}

#[test]
fn ids_are_unique() {
    bounded(30, || {
        let rt = runtime(2, "ids");
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let handle = rt.handle();
                thread::spawn(move || {
                    (0..2_000)
                        .map(|_| handle.spawn(async {}))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut handles: Vec<JoinHandle<()>> = Vec::new();
        for t in threads {
            handles.extend(t.join().unwrap());
        }
        // And from inside processes.
        handles.extend(rt.block_on(async {
            csp::spawn(async { (0..2_000).map(|_| csp::spawn(async {})).collect::<Vec<_>>() })
                .await
                .unwrap()
        }));
        let ids: HashSet<u64> = handles.iter().map(JoinHandle::id).collect();
        assert_eq!(ids.len(), handles.len());
        assert!(!ids.contains(&0));
        for h in handles {
            let id = h.id();
            rt.block_on(h).unwrap();
            assert!(!rt.processes().iter().any(|p| p.id == id));
        }
    });
}

#[test]
fn dropping_the_handle_detaches_the_process() {
    bounded(20, || {
        let rt = runtime(2, "detach");
        let signal = Signal::new();
        let wait = signal.wait();
        let (tx, rx) = mpsc::channel();
        let handle = rt.spawn(async move {
            wait.await;
            tx.send("ran to completion").unwrap();
        });
        drop(handle);
        signal.set();
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(10)).unwrap(),
            "ran to completion"
        );
        // Detaching a process that is queued or never polled also keeps it.
        let (tx, rx) = mpsc::channel();
        for i in 0..100 {
            let tx = tx.clone();
            drop(rt.spawn(async move {
                csp::yield_now().await;
                tx.send(i).unwrap();
            }));
        }
        let mut got: Vec<i32> = (0..100)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        got.sort_unstable();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
    });
}

#[test]
fn output_of_a_detached_process_is_dropped_exactly_once() {
    bounded(20, || {
        let rt = runtime(2, "detach-out");
        // Detached before completion: the runtime drops the output.
        let drops = Counter::new();
        let signal = Signal::new();
        let (wait, d) = (signal.wait(), drops.clone());
        let (fut, _, fut_drops) = counted(async move {
            wait.await;
            Tracked::new(1, &d)
        });
        drop(rt.spawn(fut));
        signal.set();
        wait_until(10, "the output was dropped", || drops.get() == 1);
        wait_until(10, "the future was dropped", || fut_drops.get() == 1);

        // Detached after completion: dropping the handle drops the stored output.
        let late = Counter::new();
        let d = late.clone();
        let handle = rt.spawn(async move { Tracked::new(2, &d) });
        wait_until(10, "the process finished", || handle.is_finished());
        assert_eq!(late.get(), 0, "the output waits in the handle");
        drop(handle);
        assert_eq!(late.get(), 1);

        // Many detached processes, detached before or after they complete.
        let many = Counter::new();
        let made = Counter::new();
        for i in 0..1_000u64 {
            let (d, m) = (many.clone(), made.clone());
            let handle = rt.spawn(async move {
                if i % 2 == 0 {
                    csp::yield_now().await;
                }
                m.incr();
                Tracked::new(i, &d)
            });
            if i % 3 == 0 {
                thread::yield_now();
            }
            drop(handle);
        }
        wait_until(10, "every detached output was dropped", || {
            many.get() == 1_000
        });
        drop(rt);
        assert_eq!(made.get(), 1_000);
        assert_eq!(many.get(), 1_000, "an output was dropped twice");
        assert_eq!(drops.get(), 1);
        assert_eq!(late.get(), 1);
        assert_eq!(fut_drops.get(), 1);
    });
}

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

// ---------------------------------------------------------------------------------------
// Panics
// ---------------------------------------------------------------------------------------

/// Checks that the single worker of `rt` is alive and well, and still named `name`.
fn worker_survives(rt: &Runtime, name: &str) {
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

/// A waker whose wake panics (a misbehaving foreign executor).
struct PanickingWaker;

impl std::task::Wake for PanickingWaker {
    fn wake(self: Arc<Self>) {
        panic!("the JoinHandle's waker panicked");
    }

    fn wake_by_ref(self: &Arc<Self>) {
        panic!("the JoinHandle's waker panicked");
    }
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
        let waker = Waker::from(Arc::new(PanickingWaker));
        assert!(poll_once(&mut handle, &waker).is_pending());
        signal.set();
        wait_until(5, "the process finished", || handle.is_finished());
        match poll_once(&mut handle, Waker::noop()) {
            Poll::Ready(Ok(v)) => assert_eq!(v, 1),
            other => panic!("the output was lost: {other:?}"),
        }
        worker_survives(&rt, "panic-waker-0");
        drop(rt);
    });
}

// ---------------------------------------------------------------------------------------
// Wakes
// ---------------------------------------------------------------------------------------

#[test]
fn a_wake_while_running_is_not_lost() {
    bounded(20, || {
        let rt = runtime(1, "wake-running");
        // By reference, K times in K polls: exactly K + 1 polls.
        const K: usize = 5;
        let n = Counter::new();
        let n2 = n.clone();
        let (fut, polls, _) = counted(poll_fn(move |cx| {
            if n2.incr() > K {
                return Poll::Ready(());
            }
            cx.waker().wake_by_ref();
            Poll::Pending
        }));
        rt.block_on(rt.spawn(fut)).unwrap();
        assert_eq!(polls.get(), K + 1);

        // By value, through clones, several in one poll: still one extra poll each time.
        let n = Counter::new();
        let n2 = n.clone();
        let (fut, polls, _) = counted(poll_fn(move |cx| {
            if n2.incr() > K {
                return Poll::Ready(());
            }
            for _ in 0..3 {
                let clone = cx.waker().clone();
                clone.wake();
            }
            Poll::Pending
        }));
        rt.block_on(rt.spawn(fut)).unwrap();
        assert_eq!(
            polls.get(),
            K + 1,
            "several wakes during one poll make one more poll"
        );

        // From another OS thread while the process is inside poll.
        let n = Counter::new();
        let n2 = n.clone();
        let (fut, polls, _) = counted(poll_fn(move |cx| {
            if n2.incr() > K {
                return Poll::Ready(());
            }
            let waker = cx.waker().clone();
            thread::spawn(move || waker.wake()).join().unwrap();
            Poll::Pending
        }));
        rt.block_on(rt.spawn(fut)).unwrap();
        assert_eq!(polls.get(), K + 1);
    });
}

#[test]
fn concurrent_wakes_of_a_sleeping_process() {
    const THREADS: usize = 4;
    const WAKES: usize = 2_000;
    bounded(60, || {
        let rt = runtime(2, "wake-storm");
        for round in 0..20 {
            let done = Arc::new(AtomicBool::new(false));
            let stash: Arc<Mutex<Option<Waker>>> = Arc::default();
            let (d, s) = (done.clone(), stash.clone());
            let (fut, polls, _) = counted(poll_fn(move |cx| {
                *s.lock().unwrap() = Some(cx.waker().clone());
                if d.load(Ordering::SeqCst) {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            }));
            let handle = rt.spawn(fut);
            wait_until(10, "the first poll stored a waker", || {
                stash.lock().unwrap().is_some()
            });
            let waker = stash.lock().unwrap().clone().unwrap();
            let start = Arc::new(Barrier::new(THREADS));
            let threads: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (waker, start) = (waker.clone(), start.clone());
                    thread::spawn(move || {
                        start.wait();
                        for i in 0..WAKES {
                            if (i + t) % 2 == 0 {
                                waker.wake_by_ref();
                            } else {
                                let clone = waker.clone();
                                clone.wake();
                            }
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            assert!(!handle.is_finished());
            // The final wake, after the condition is set, must never be lost.
            done.store(true, Ordering::SeqCst);
            let last = stash.lock().unwrap().clone().unwrap();
            last.wake();
            rt.block_on(handle).unwrap();
            let polls = polls.get();
            assert!(polls >= 2, "round {round}: polled {polls} times");
            assert!(
                polls <= 2 + THREADS * WAKES,
                "round {round}: polled {polls} times for {} wakes",
                THREADS * WAKES + 1
            );
            drop(waker);
        }
    });
}

#[test]
fn no_lost_wake_when_set_races_the_poll() {
    const ROUNDS: usize = 5_000;
    bounded(60, || {
        let rt = runtime(2, "wake-race");
        let (tx, rx) = mpsc::channel::<Arc<Signal>>();
        let setter = thread::spawn(move || {
            let mut i = 0u32;
            for signal in rx {
                for _ in 0..(i % 50) {
                    std::hint::spin_loop();
                }
                i = i.wrapping_add(7);
                signal.set();
            }
        });
        rt.block_on(async {
            for _ in 0..ROUNDS {
                let signal = Signal::new();
                let handle = csp::spawn(signal.wait());
                tx.send(signal).unwrap();
                handle.await.unwrap();
            }
        });
        drop(tx);
        setter.join().unwrap();
    });
}

#[test]
fn waker_clones_leak_nothing() {
    bounded(30, || {
        let rt = runtime(2, "waker-leak");
        let stash: Arc<Mutex<Vec<Waker>>> = Arc::default();
        let s = stash.clone();
        let n = Counter::new();
        let signal = Signal::new();
        let wait = signal.wait();
        let mut wait = Box::pin(wait);
        let (fut, polls, drops) = counted(poll_fn(move |cx| {
            let round = n.incr();
            if round <= 3 {
                for i in 0..10_000 {
                    let w = cx.waker().clone();
                    match i % 4 {
                        0 => drop(w),
                        1 => w.wake_by_ref(),
                        2 => s.lock().unwrap().push(w),
                        _ => drop(w.clone()),
                    }
                }
                return Poll::Pending; // woken above: polled again
            }
            wait.as_mut().poll(cx)
        }));
        let mut handle = rt.spawn(fut);
        let (probe, probe_waker) = CountingWaker::new();
        assert!(poll_once(&mut handle, &probe_waker).is_pending());
        wait_until(10, "the fourth poll", || polls.get() >= 4);
        wait_for_state(&rt, handle.id(), ProcessState::Sleeping);
        assert_eq!(
            polls.get(),
            4,
            "each poll woke itself once: exactly one more poll"
        );
        // Wake through the stashed clones, by value, from this thread and another.
        let mut stashed = std::mem::take(&mut *stash.lock().unwrap());
        assert_eq!(stashed.len(), 3 * 2_500);
        let other_half = stashed.split_off(stashed.len() / 2);
        let other = thread::spawn(move || other_half.into_iter().for_each(Waker::wake));
        stashed.into_iter().for_each(Waker::wake);
        other.join().unwrap();
        signal.set();
        wait_until(10, "the process finished", || probe.wakes() == 1);
        assert!(poll_once(&mut handle, &probe_waker).is_ready());
        assert_eq!(drops.get(), 1);
        drop(handle);
        drop(rt);
        drop(probe_waker);
        assert_eq!(stash.lock().unwrap().len(), 0);
        assert_eq!(
            Arc::strong_count(&probe),
            1,
            "the process's allocation was never freed: a waker reference leaked"
        );
    });
}

#[test]
fn a_waker_that_outlives_its_runtime_does_nothing() {
    bounded(20, || {
        let rt = runtime(2, "outlive");
        let stash: Arc<Mutex<Option<Waker>>> = Arc::default();
        let s = stash.clone();
        let (fut, polls, drops) = counted(poll_fn(move |cx| {
            *s.lock().unwrap() = Some(cx.waker().clone());
            Poll::<()>::Pending
        }));
        let mut handle = rt.spawn(fut);
        let (probe, probe_waker) = CountingWaker::new();
        assert!(poll_once(&mut handle, &probe_waker).is_pending());
        wait_for_state(&rt, handle.id(), ProcessState::Sleeping);
        drop(rt);
        assert_eq!(drops.get(), 1);
        assert!(probe.wakes() >= 1, "shutdown woke the JoinHandle");
        match poll_once(&mut handle, &probe_waker) {
            Poll::Ready(Err(e)) => assert!(e.is_cancelled()),
            other => panic!("expected a cancellation, got {other:?}"),
        }
        drop(handle);
        drop(probe_waker);
        let waker = stash.lock().unwrap().take().unwrap();
        assert_eq!(
            Arc::strong_count(&probe),
            2,
            "the stashed waker keeps the process allocated"
        );
        waker.wake_by_ref();
        let clone = waker.clone();
        clone.wake();
        assert!(waker.will_wake(&waker));
        waker.wake();
        assert_eq!(polls.get(), 1, "never polled again");
        assert_eq!(
            Arc::strong_count(&probe),
            1,
            "the last waker freed the process"
        );
    });
}

/// Starts `n` processes on `rt`, each waiting to receive once on a rendezvous channel of
/// its own and then counting in `ran`; returns the senders and handles once every one of
/// them is asleep on its channel.
fn sleeping_receivers(
    rt: &Runtime,
    n: usize,
    ran: &Arc<AtomicUsize>,
) -> (Vec<csp::Sender<()>>, Vec<JoinHandle<()>>) {
    let (senders, handles): (Vec<_>, Vec<_>) = (0..n)
        .map(|_| {
            let (tx, rx) = csp::channel::<()>();
            let ran = ran.clone();
            let handle = rt.spawn(async move {
                rx.recv().await.expect("the sender sends once");
                ran.fetch_add(1, Ordering::SeqCst);
            });
            (tx, handle)
        })
        .unzip();
    for handle in &handles {
        wait_for_state(rt, handle.id(), ProcessState::Sleeping);
    }
    (senders, handles)
}

/// Wakes every receiver of `senders` in one poll (each `try_send` hands its value to a
/// waiting receiver), then keeps the worker busy until `ran` counts one of them or
/// `busy` has passed; resolves to what `ran` counted by then.
async fn wake_all_then_spin(
    senders: Vec<csp::Sender<()>>,
    ran: Arc<AtomicUsize>,
    busy: Duration,
) -> usize {
    for tx in &senders {
        tx.try_send(()).expect("every receiver waits");
    }
    let until = Instant::now() + busy;
    while ran.load(Ordering::SeqCst) == 0 && Instant::now() < until {
        std::hint::spin_loop();
    }
    ran.load(Ordering::SeqCst)
}

#[test]
fn processes_woken_in_one_poll_wait_for_it_to_end() {
    bounded(30, || {
        let rt = runtime(2, "held-back");
        let ran = Arc::new(AtomicUsize::new(0));
        let (senders, handles) = sleeping_receivers(&rt, 8, &ran);
        // The other worker is idle for the 50 ms this poll spins, yet none of the eight
        // is published to it: they run on this worker once the poll ends.
        let waker = rt.spawn(wake_all_then_spin(
            senders,
            ran.clone(),
            Duration::from_millis(50),
        ));
        assert_eq!(
            rt.block_on(waker).unwrap(),
            0,
            "a woken process ran while the poll that woke it went on"
        );
        for handle in handles {
            rt.block_on(handle).unwrap();
        }
        assert_eq!(ran.load(Ordering::SeqCst), 8);
    });
}

#[test]
fn a_poll_that_wakes_many_hands_them_on_in_batches() {
    bounded(60, || {
        let rt = runtime(2, "batches");
        let ran = Arc::new(AtomicUsize::new(0));
        let (senders, handles) = sleeping_receivers(&rt, 200, &ran);
        // Far more than one batch: the first ones reach the idle worker, and run there,
        // while this poll still spins.
        let waker = rt.spawn(wake_all_then_spin(
            senders,
            ran.clone(),
            Duration::from_secs(20),
        ));
        assert!(
            rt.block_on(waker).unwrap() > 0,
            "no woken process ran during a long poll that woke 200 of them"
        );
        for handle in handles {
            rt.block_on(handle).unwrap();
        }
        assert_eq!(ran.load(Ordering::SeqCst), 200);
    });
}

// ---------------------------------------------------------------------------------------
// Shutdown
// ---------------------------------------------------------------------------------------

#[test]
fn dropping_the_runtime_cancels_sleeping_processes() {
    const N: usize = 100;
    bounded(30, || {
        let rt = runtime(2, "drop-sleep");
        let (probe, probe_waker) = CountingWaker::new();
        let mut handles = Vec::new();
        let mut counters = Vec::new();
        for _ in 0..N {
            let (fut, polls, drops) = pending_counted();
            let mut handle = rt.spawn(fut);
            assert!(poll_once(&mut handle, &probe_waker).is_pending());
            handles.push(handle);
            counters.push((polls, drops));
        }
        for h in &handles {
            wait_for_state(&rt, h.id(), ProcessState::Sleeping);
        }
        assert_eq!(rt.metrics().processes_alive, N as u64);
        drop(rt);
        for (polls, drops) in &counters {
            assert_eq!(polls.get(), 1);
            assert_eq!(drops.get(), 1, "Drop dropped every sleeping future, once");
        }
        assert_eq!(probe.wakes(), N, "every JoinHandle was woken");
        for h in handles {
            let err = futures::executor::block_on(h).unwrap_err();
            assert!(err.is_cancelled(), "{err:?}");
        }
        drop(probe_waker);
        assert_eq!(Arc::strong_count(&probe), 1, "every process was freed");
    });
}

#[test]
fn dropping_the_runtime_cancels_queued_processes() {
    const N: usize = 50;
    bounded(30, || {
        let rt = runtime(1, "drop-queued");
        let started = Arc::new(AtomicBool::new(false));
        let release = Arc::new(AtomicBool::new(false));
        let (s, r) = (started.clone(), release.clone());
        let (blocker, _, blocker_drops) = counted(poll_fn(move |_| {
            s.store(true, Ordering::SeqCst);
            spin_until(&r);
            Poll::<()>::Pending
        }));
        let blocker = rt.spawn(blocker);
        spin_until(&started);
        // The only worker is stuck: these stay queued.
        let mut queued = Vec::new();
        for _ in 0..N {
            let (fut, polls, drops) = pending_counted();
            queued.push((rt.spawn(fut), polls, drops));
        }
        for (h, _, _) in &queued {
            wait_for_state(&rt, h.id(), ProcessState::Queued);
        }
        let dropper = thread::spawn(move || drop(rt));
        // Drop cancels the queued processes at once, even while the worker is busy.
        for (_, _, drops) in &queued {
            wait_until(10, "a queued future was dropped by Drop", || {
                drops.get() == 1
            });
        }
        assert_eq!(blocker_drops.get(), 0, "not under its poller");
        release.store(true, Ordering::SeqCst);
        dropper.join().unwrap();
        assert_eq!(blocker_drops.get(), 1);
        assert!(
            futures::executor::block_on(blocker)
                .unwrap_err()
                .is_cancelled()
        );
        for (h, polls, drops) in queued {
            assert_eq!(polls.get(), 0, "never polled");
            assert_eq!(drops.get(), 1);
            assert!(futures::executor::block_on(h).unwrap_err().is_cancelled());
        }
    });
}

#[test]
fn shutdown_timeout_returns_despite_a_process_that_never_yields() {
    bounded(30, || {
        let rt = runtime(2, "stuck");
        let started = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (started.clone(), stop.clone());
        let (busy, busy_polls, busy_drops) = counted(poll_fn(move |_| {
            s.store(true, Ordering::SeqCst);
            spin_until(&st);
            Poll::<()>::Pending
        }));
        let busy = rt.spawn(busy);
        spin_until(&started);
        let (sleeper, _, sleeper_drops) = pending_counted();
        let sleeper = rt.spawn(sleeper);
        wait_for_state(&rt, sleeper.id(), ProcessState::Sleeping);

        let timeout = Duration::from_millis(300);
        let t0 = Instant::now();
        rt.shutdown_timeout(timeout);
        let waited = t0.elapsed();
        assert!(
            waited >= timeout,
            "returned after {waited:?}, before the timeout"
        );
        assert_eq!(sleeper_drops.get(), 1);
        assert!(
            futures::executor::block_on(sleeper)
                .unwrap_err()
                .is_cancelled()
        );
        // Free the stuck worker: its process is then cancelled.
        stop.store(true, Ordering::SeqCst);
        let err = futures::executor::block_on(busy).unwrap_err();
        assert!(err.is_cancelled(), "{err:?}");
        assert_eq!(busy_polls.get(), 1);
        wait_until(10, "the busy future was dropped", || busy_drops.get() == 1);
    });
}

#[test]
fn shutdown_timeout_of_an_idle_runtime_does_not_wait_for_the_timeout() {
    // Parked workers must be woken to exit: with a 60 s timeout, a shutdown that waits
    // for the timeout instead trips the 20 s watchdog.
    bounded(20, || {
        let rt = runtime(2, "idle-shutdown");
        let exited = Counter::new();
        let e = exited.clone();
        rt.block_on(async {
            csp::spawn(async move { install_exit_probe(&e) })
                .await
                .unwrap()
        });
        wait_until(10, "both workers parked", || rt.metrics().parks >= 2);
        rt.shutdown_timeout(Duration::from_secs(60));
        assert_eq!(exited.get(), 1, "a worker was still running");
    });
}

#[test]
fn spawn_onto_a_runtime_that_shut_down_is_cancelled() {
    bounded(20, || {
        let rt = runtime(2, "after-shutdown");
        let handle = rt.handle();
        rt.shutdown_timeout(Duration::from_secs(5));
        let (fut, polls, drops) = pending_counted();
        let join = handle.spawn(fut);
        assert_eq!(drops.get(), 1, "the rejected future is dropped at once");
        let err = futures::executor::block_on(join).unwrap_err();
        assert!(err.is_cancelled(), "{err:?}");
        assert_eq!(polls.get(), 0);

        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        let join = handle.spawn_blocking(move || r.store(true, Ordering::SeqCst));
        assert!(
            futures::executor::block_on(join)
                .unwrap_err()
                .is_cancelled()
        );
        assert!(!ran.load(Ordering::SeqCst));
    });
}

/// A process's JoinHandle with its future's poll and drop counters.
type Spawned = (JoinHandle<()>, Counter, Counter);

/// A pending future that, when dropped, spawns onto `handle` and stores the handle.
struct SpawnOnDrop {
    handle: Handle,
    spawned: Arc<Mutex<Vec<Spawned>>>,
}

impl Future for SpawnOnDrop {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        Poll::Pending
    }
}

impl Drop for SpawnOnDrop {
    fn drop(&mut self) {
        let (fut, polls, drops) = pending_counted();
        let join = self.handle.spawn(fut);
        self.spawned.lock().unwrap().push((join, polls, drops));
    }
}

#[test]
fn spawn_from_a_drop_during_shutdown_is_cancelled() {
    bounded(20, || {
        let rt = runtime(2, "drop-spawn");
        let spawned = Arc::default();
        let handles: Vec<_> = (0..10)
            .map(|_| {
                rt.spawn(SpawnOnDrop {
                    handle: rt.handle(),
                    spawned: Arc::clone(&spawned),
                })
            })
            .collect();
        for h in &handles {
            wait_for_state(&rt, h.id(), ProcessState::Sleeping);
        }
        drop(rt);
        for h in handles {
            assert!(futures::executor::block_on(h).unwrap_err().is_cancelled());
        }
        let spawned = std::mem::take(&mut *spawned.lock().unwrap());
        assert_eq!(spawned.len(), 10);
        for (join, polls, drops) in spawned {
            assert!(
                futures::executor::block_on(join)
                    .unwrap_err()
                    .is_cancelled()
            );
            assert_eq!(polls.get(), 0);
            assert_eq!(drops.get(), 1);
        }
    });
}

#[test]
fn spawn_racing_runtime_drop() {
    bounded(60, || {
        for round in 0..20 {
            let rt = runtime(2, "spawn-race");
            let stop = Arc::new(AtomicBool::new(false));
            let started = Arc::new(AtomicUsize::new(0));
            let spawners: Vec<_> = (0..2)
                .map(|_| {
                    let (handle, stop, started) = (rt.handle(), stop.clone(), started.clone());
                    thread::spawn(move || {
                        let mut spawned = Vec::new();
                        while !stop.load(Ordering::SeqCst) {
                            let (fut, _, drops) = counted(async { csp::yield_now().await });
                            spawned.push((handle.spawn(fut), drops));
                            if spawned.len() == 1 {
                                started.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        spawned
                    })
                })
                .collect();
            // Both spawners are spawning before the drop races them.
            wait_until(10, "both spawners started", || {
                started.load(Ordering::SeqCst) == 2
            });
            thread::sleep(Duration::from_millis(1 + round));
            drop(rt);
            stop.store(true, Ordering::SeqCst);
            let mut total = 0;
            for s in spawners {
                for (join, drops) in s.join().unwrap() {
                    total += 1;
                    match futures::executor::block_on(join) {
                        Ok(()) => {}
                        Err(e) => assert!(e.is_cancelled(), "{e:?}"),
                    }
                    assert_eq!(drops.get(), 1, "every future dropped exactly once");
                }
            }
            assert!(total > 0);
        }
    });
}

#[test]
fn a_runtime_dropped_on_its_own_worker() {
    bounded(20, || {
        let rt = runtime(2, "self-drop");
        let (sleeper, _, sleeper_drops) = pending_counted();
        let sleeper = rt.spawn(sleeper);
        wait_for_state(&rt, sleeper.id(), ProcessState::Sleeping);
        let handle = rt.handle();
        let slot = Arc::new(Mutex::new(Some(rt)));
        let s = slot.clone();
        let dropper = handle.spawn(async move {
            let rt = s.lock().unwrap().take().unwrap();
            drop(rt); // must not try to join the thread it runs on
            "dropped"
        });
        match futures::executor::block_on(dropper) {
            Ok(v) => assert_eq!(v, "dropped"),
            Err(e) => assert!(e.is_cancelled(), "{e:?}"),
        }
        assert!(slot.lock().unwrap().is_none());
        assert!(
            futures::executor::block_on(sleeper)
                .unwrap_err()
                .is_cancelled()
        );
        assert_eq!(sleeper_drops.get(), 1);
        let late = handle.spawn(async {});
        assert!(
            futures::executor::block_on(late)
                .unwrap_err()
                .is_cancelled()
        );
    });
}

/// Counts, slowly, the exit of the thread it is installed on: thread-local destructors
/// run before a thread counts as finished, so after a join the count is final.
struct ExitProbe(Counter);

impl Drop for ExitProbe {
    fn drop(&mut self) {
        thread::sleep(Duration::from_millis(30));
        self.0.incr();
    }
}

thread_local! {
    static EXIT_PROBE: std::cell::RefCell<Option<ExitProbe>> = const { std::cell::RefCell::new(None) };
}

fn install_exit_probe(exited: &Counter) {
    EXIT_PROBE.with(|probe| *probe.borrow_mut() = Some(ExitProbe(exited.clone())));
}

#[test]
fn drop_and_shutdown_timeout_join_the_workers() {
    bounded(30, || {
        for use_shutdown_timeout in [false, true] {
            let rt = runtime(2, "join-workers");
            let exited = Counter::new();
            let installed = Counter::new();
            // The first process holds its worker until the second one has run, so the two
            // run on different workers and both get a probe.
            let (e, i) = (exited.clone(), installed.clone());
            let first = rt.spawn(async move {
                install_exit_probe(&e);
                i.incr();
                while i.get() < 2 {
                    thread::yield_now();
                }
                thread_name()
            });
            wait_until(10, "the first process runs", || installed.get() == 1);
            let (e, i) = (exited.clone(), installed.clone());
            let second = rt.spawn(async move {
                install_exit_probe(&e);
                i.incr();
                thread_name()
            });
            let (a, b) = (rt.block_on(first).unwrap(), rt.block_on(second).unwrap());
            assert_ne!(a, b);
            assert_eq!(exited.get(), 0);
            if use_shutdown_timeout {
                rt.shutdown_timeout(Duration::from_secs(10));
            } else {
                drop(rt);
            }
            assert_eq!(
                exited.get(),
                2,
                "returned before its worker threads had finished (shutdown_timeout: \
                 {use_shutdown_timeout})"
            );
        }
    });
}

/// The names of this OS process's threads (Linux: /proc, cut to 15 bytes).
#[cfg(target_os = "linux")]
fn os_thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|comm| comm.trim_end().to_owned())
        .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn idle_blocking_threads_exit_at_shutdown() {
    bounded(30, || {
        // Keep the prefix short: /proc shows 15 bytes of a name.
        let rt = runtime(1, "bx");
        let handles: Vec<_> = (0..3)
            .map(|_| {
                rt.handle()
                    .spawn_blocking(|| thread::sleep(Duration::from_millis(20)))
            })
            .collect();
        for h in handles {
            rt.block_on(h).unwrap();
        }
        let blocking = || {
            os_thread_names()
                .iter()
                .filter(|n| n.starts_with("bx-blocking"))
                .count()
        };
        assert!(blocking() >= 1);
        drop(rt);
        // Idle pool threads are told to exit (not awaited by Drop): they go at once
        // rather than after their 10 s keep-alive.
        wait_until(5, "the idle blocking threads exited", || blocking() == 0);
    });
}

#[test]
fn a_runtime_dropped_on_its_blocking_pool() {
    bounded(20, || {
        let rt = runtime(2, "blk-drop");
        let (sleeper, _, drops) = pending_counted();
        let sleeper = rt.spawn(sleeper);
        let handle = rt.handle();
        let slot = Arc::new(Mutex::new(Some(rt)));
        let s = slot.clone();
        let dropper = handle.spawn_blocking(move || drop(s.lock().unwrap().take()));
        match futures::executor::block_on(dropper) {
            Ok(()) => {}
            Err(e) => assert!(e.is_cancelled(), "{e:?}"),
        }
        assert!(
            futures::executor::block_on(sleeper)
                .unwrap_err()
                .is_cancelled()
        );
        assert_eq!(drops.get(), 1);
    });
}

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

// ---------------------------------------------------------------------------------------
// spawn_blocking
// ---------------------------------------------------------------------------------------

#[test]
fn spawn_blocking_runs_off_the_workers() {
    bounded(20, || {
        let rt = runtime(1, "blk");
        let (name, in_runtime) = rt
            .block_on(csp::Handle::spawn_blocking(&rt.handle(), || {
                (thread_name(), Handle::try_current().is_some())
            }))
            .unwrap();
        assert!(name.contains("blocking"), "{name}");
        assert!(name.starts_with("blk-"), "{name}");
        assert_ne!(name, "blk-0");
        assert!(in_runtime);
        // The free function, from a process, uses the process's runtime's pool.
        let name = rt
            .block_on(rt.spawn(async { csp::spawn_blocking(thread_name).await.unwrap() }))
            .unwrap();
        assert!(
            name.starts_with("blk-") && name.contains("blocking"),
            "{name}"
        );
        // A blocking closure does not hold up the only worker: this one waits for a
        // message that a process sends.
        let (tx, rx) = mpsc::channel();
        let waiting = rt.handle().spawn_blocking(move || rx.recv().unwrap());
        let sender = rt.spawn(async move { tx.send(11).unwrap() });
        rt.block_on(sender).unwrap();
        assert_eq!(rt.block_on(waiting).unwrap(), 11);
    });
}

#[test]
fn spawn_blocking_closures_run_concurrently() {
    bounded(30, || {
        let rt = runtime(1, "blk-many");
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..64)
            .map(|i| {
                let (running, most) = (running.clone(), most.clone());
                rt.handle().spawn_blocking(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(50));
                    running.fetch_sub(1, Ordering::SeqCst);
                    i
                })
            })
            .collect();
        let results: Vec<i32> = handles
            .into_iter()
            .map(|h| rt.block_on(h).unwrap())
            .collect();
        assert_eq!(results, (0..64).collect::<Vec<_>>());
        let most = most.load(Ordering::SeqCst);
        assert!(most > 1, "at most {most} blocking closure(s) ran at a time");

        // Proof of concurrency: 8 closures that can only finish together.
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let barrier = barrier.clone();
                csp::Handle::spawn_blocking(&rt.handle(), move || barrier.wait().is_leader())
            })
            .collect();
        let leaders = handles
            .into_iter()
            .filter(|_| true)
            .map(|h| rt.block_on(h).unwrap())
            .filter(|&leader| leader)
            .count();
        assert_eq!(leaders, 1);
    });
}

#[test]
fn spawn_blocking_panics_are_delivered() {
    bounded(20, || {
        let rt = runtime(1, "blk-panic");
        let err = rt
            .block_on(
                rt.handle()
                    .spawn_blocking(|| -> u8 { panic!("blocking boom") }),
            )
            .unwrap_err();
        assert!(err.is_panic());
        assert_eq!(
            panic_message(err.into_panic().as_ref()).as_deref(),
            Some("blocking boom")
        );
        // The pool still works.
        assert_eq!(rt.block_on(rt.handle().spawn_blocking(|| 3)).unwrap(), 3);
    });
}

// ---------------------------------------------------------------------------------------
// Thread names
// ---------------------------------------------------------------------------------------

#[test]
fn default_runtime_workers_are_named_csp_worker_n() {
    bounded(20, || {
        // From a plain thread, csp::spawn goes to the default runtime.
        let handles: Vec<_> = (0..20)
            .map(|_| csp::spawn(async { thread_name() }))
            .collect();
        for h in handles {
            let name = futures::executor::block_on(h).unwrap();
            let n = name
                .strip_prefix("csp-worker-")
                .unwrap_or_else(|| panic!("a default worker named {name:?}"));
            assert!(n.parse::<usize>().is_ok(), "{name}");
        }
        let name = futures::executor::block_on(csp::spawn_blocking(thread_name)).unwrap();
        assert!(name.contains("blocking"), "{name}");
    });
}

#[test]
fn builder_thread_name_is_the_workers_prefix() {
    bounded(20, || {
        let rt = runtime(3, "my-pool");
        let names = rt.block_on(async {
            let handles: Vec<_> = (0..200)
                .map(|_| {
                    csp::spawn(async {
                        csp::yield_now().await;
                        thread_name()
                    })
                })
                .collect();
            let mut names = HashSet::new();
            for h in handles {
                names.insert(h.await.unwrap());
            }
            names
        });
        let allowed: HashSet<String> = (0..3).map(|i| format!("my-pool-{i}")).collect();
        assert!(names.is_subset(&allowed), "{names:?}");
    });
}

// ---------------------------------------------------------------------------------------
// processes()
// ---------------------------------------------------------------------------------------

#[test]
fn processes_reports_where_each_process_was_spawned() {
    bounded(20, || {
        let rt = runtime(2, "dump");
        let handle = rt.handle();
        let (a, line_a) = (rt.spawn(std::future::pending::<()>()), line!());
        let (b, line_b) = (handle.spawn(std::future::pending::<()>()), line!());
        let (c, line_c) =
            rt.block_on(async { (csp::spawn(std::future::pending::<()>()), line!()) });
        let done = rt.spawn(async {});
        let done_id = done.id();
        rt.block_on(done).unwrap();
        for (h, line) in [(&a, line_a), (&b, line_b), (&c, line_c)] {
            wait_for_state(&rt, h.id(), ProcessState::Sleeping);
            let dump = rt.processes();
            let info = dump.iter().find(|p| p.id == h.id()).unwrap();
            assert_eq!(info.state, ProcessState::Sleeping);
            assert_eq!(info.spawned_at.file(), file!(), "{info:?}");
            assert_eq!(info.spawned_at.line(), line, "{info:?}");
            assert_eq!(info.waiting_on, None);
        }
        let dump = rt.processes();
        assert!(
            !dump.iter().any(|p| p.id == done_id),
            "completed processes are absent"
        );
        let ids: Vec<u64> = dump.iter().map(|p| p.id).collect();
        assert_eq!(ids.len(), 3, "{dump:?}");
        for h in [a, b, c] {
            h.abort();
            rt.block_on(h).unwrap_err();
        }
        assert!(rt.processes().is_empty());
    });
}

#[test]
fn processes_shows_every_scheduling_state() {
    bounded(20, || {
        let rt = runtime(1, "states");
        let started = Arc::new(AtomicBool::new(false));
        let release = Arc::new(AtomicBool::new(false));
        let (s, r) = (started.clone(), release.clone());
        let mut polled = 0;
        // Wakes itself on its first poll, then blocks the worker until released.
        let yielding = rt.spawn(poll_fn(move |cx| {
            polled += 1;
            if polled > 1 {
                return Poll::Ready(());
            }
            cx.waker().wake_by_ref();
            s.store(true, Ordering::SeqCst);
            spin_until(&r);
            Poll::Pending
        }));
        spin_until(&started);
        let queued = rt.spawn(async {});
        let state_of = |id: u64| {
            rt.processes()
                .into_iter()
                .find(|p| p.id == id)
                .map(|p| p.state)
        };
        assert_eq!(state_of(yielding.id()), Some(ProcessState::Yielding));
        assert_eq!(state_of(queued.id()), Some(ProcessState::Queued));
        release.store(true, Ordering::SeqCst);
        rt.block_on(yielding).unwrap();
        rt.block_on(queued).unwrap();

        let started = Arc::new(AtomicBool::new(false));
        let release = Arc::new(AtomicBool::new(false));
        let (s, r) = (started.clone(), release.clone());
        let running = rt.spawn(poll_fn(move |_| {
            s.store(true, Ordering::SeqCst);
            spin_until(&r);
            Poll::Ready(())
        }));
        spin_until(&started);
        assert_eq!(state_of(running.id()), Some(ProcessState::Running));
        release.store(true, Ordering::SeqCst);
        rt.block_on(running).unwrap();

        let sleeping = rt.spawn(std::future::pending::<()>());
        wait_for_state(&rt, sleeping.id(), ProcessState::Sleeping);
        sleeping.abort();
        rt.block_on(sleeping).unwrap_err();
    });
}

// ---------------------------------------------------------------------------------------
// metrics()
// ---------------------------------------------------------------------------------------

#[test]
fn metrics_count_spawns_polls_and_live_processes() {
    bounded(30, || {
        let rt = runtime(3, "metrics");
        let m = rt.metrics();
        assert_eq!(m.workers, 3);
        assert_eq!(m.spawned, 0);
        assert_eq!(m.processes_alive, 0);

        // 10 remote spawns, each spawning 5 local ones.
        let handles: Vec<_> = (0..10)
            .map(|_| {
                rt.spawn(async {
                    let children: Vec<_> = (0..5).map(|_| csp::spawn(async {})).collect();
                    for c in children {
                        c.await.unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            rt.block_on(h).unwrap();
        }
        let m = rt.metrics();
        assert_eq!(m.spawned, 60);
        assert!(m.polls >= 60, "{m:?}");
        wait_until_no_process(&rt, 10);

        // Live processes are counted while they live.
        let pending: Vec<_> = (0..7)
            .map(|_| rt.spawn(std::future::pending::<()>()))
            .collect();
        assert_eq!(rt.metrics().processes_alive, 7);
        assert_eq!(rt.metrics().spawned, 67);
        for h in &pending {
            h.abort();
        }
        for h in pending {
            rt.block_on(h).unwrap_err();
        }
        wait_until_no_process(&rt, 10);
        // spawn_blocking closures are not processes.
        rt.block_on(rt.handle().spawn_blocking(|| ())).unwrap();
        assert_eq!(rt.metrics().spawned, 67);
        let m = rt.metrics();
        assert!(m.polls >= m.spawned);
        assert_eq!(m.workers, 3);
    });
}

#[test]
fn processes_alive_is_zero_once_every_handle_resolved() {
    // API.md: a process is live until its future completes or is dropped; an output
    // waiting in a JoinHandle is not a live process. So once its JoinHandle has
    // resolved, a process no longer counts in `processes_alive` (nor in `processes()`).
    bounded(30, || {
        let rt = runtime(2, "alive");
        let mut counted_alive = 0;
        for _ in 0..10_000 {
            let handle = rt.spawn(async {});
            let id = handle.id();
            rt.block_on(handle).unwrap();
            if rt.metrics().processes_alive != 0 {
                counted_alive += 1;
            }
            assert!(!rt.processes().iter().any(|p| p.id == id));
        }
        assert_eq!(
            counted_alive, 0,
            "in {counted_alive} of 10000 rounds, the process still counted in processes_alive \
             after its JoinHandle resolved"
        );
    });
}

#[test]
fn handoffs_after_a_ping_pong() {
    use futures::channel::mpsc as fmpsc;
    use futures::{SinkExt, StreamExt};
    bounded(20, || {
        let rt = runtime(2, "pingpong");
        let (mut ping_tx, mut ping_rx) = fmpsc::channel::<u32>(0);
        let (mut pong_tx, mut pong_rx) = fmpsc::channel::<u32>(0);
        let ponger = rt.spawn(async move {
            while let Some(v) = ping_rx.next().await {
                pong_tx.send(v + 1).await.unwrap();
            }
        });
        let pinger = rt.spawn(async move {
            let mut v = 0;
            for _ in 0..200 {
                ping_tx.send(v).await.unwrap();
                v = pong_rx.next().await.unwrap();
            }
            v
        });
        assert_eq!(rt.block_on(pinger).unwrap(), 200);
        rt.block_on(ponger).unwrap();
        let m = rt.metrics();
        assert!(m.handoffs > 0, "{m:?}");
        assert!(m.handoffs <= m.polls, "{m:?}");
    });
}

#[test]
fn a_spawn_burst_completes_under_stealing() {
    bounded(30, || {
        let rt = runtime(2, "burst");
        let sum = rt
            .block_on(rt.spawn(async {
                let handles: Vec<_> = (0..20_000u64)
                    .map(|i| {
                        csp::spawn(async move {
                            csp::yield_now().await;
                            i
                        })
                    })
                    .collect();
                let mut sum = 0;
                for h in handles {
                    sum += h.await.unwrap();
                }
                sum
            }))
            .unwrap();
        assert_eq!(sum, 20_000 * 19_999 / 2);
        let m = rt.metrics();
        assert_eq!(m.spawned, 20_001);
        // Each yields once: at least two polls each.
        assert!(m.polls >= 40_000, "{m:?}");
        assert!(m.steals <= m.polls, "{m:?}");
    });
}

#[test]
fn join_handles_across_runtimes() {
    bounded(20, || {
        let a = runtime(1, "rt-a");
        let b = runtime(1, "rt-b");
        let signal = Signal::new();
        let wait = signal.wait();
        let on_b = b.spawn(async move {
            wait.await;
            thread_name()
        });
        let on_a = a.spawn(async move { (thread_name(), on_b.await.unwrap()) });
        thread::sleep(Duration::from_millis(10));
        signal.set();
        let (name_a, name_b) = futures::executor::block_on(on_a).unwrap();
        assert_eq!((name_a.as_str(), name_b.as_str()), ("rt-a-0", "rt-b-0"));
        // A Handle spawns onto its own runtime, even from another runtime's process.
        let handle_b = b.handle();
        let name = a
            .block_on(a.spawn(async move { handle_b.spawn(async { thread_name() }).await }))
            .unwrap()
            .unwrap();
        assert_eq!(name, "rt-b-0");
        assert_eq!(b.metrics().spawned, 2);
        assert_eq!(a.metrics().spawned, 2);
    });
}

// ---------------------------------------------------------------------------------------
// yield_now
// ---------------------------------------------------------------------------------------

#[test]
fn yield_now_lets_other_processes_run() {
    const STEPS: usize = 50;
    bounded(20, || {
        let rt = runtime(1, "yield");
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        rt.block_on(rt.spawn(async move {
            let make = |who: char| {
                let log = l.clone();
                async move {
                    for _ in 0..STEPS {
                        log.lock().unwrap().push(who);
                        csp::yield_now().await;
                    }
                }
            };
            let a = csp::spawn(make('a'));
            let b = csp::spawn(make('b'));
            a.await.unwrap();
            b.await.unwrap();
        }))
        .unwrap();
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 2 * STEPS);
        // With one worker, each yield lets the other process run: no process runs more
        // than twice in a row (the first one may run before the second is queued).
        let longest_run = log
            .chunk_by(|x, y| x == y)
            .map(<[char]>::len)
            .max()
            .unwrap();
        let text: String = log.iter().collect();
        assert!(longest_run <= 2, "no interleaving: {text}");
    });
}

#[test]
fn yield_now_reschedules_exactly_once() {
    bounded(20, || {
        let rt = runtime(1, "yield-once");
        let (fut, polls, _) = counted(async {
            for _ in 0..10 {
                csp::yield_now().await;
            }
        });
        rt.block_on(rt.spawn(fut)).unwrap();
        assert_eq!(polls.get(), 11);
    });
}

/// A wake from outside the runtime (a plain thread's `send_blocking` completing a
/// process's recv) racing the runtime's drop: the waking thread must not touch the
/// runtime after handing over the process (under valgrind this would report a read of
/// freed memory).
#[test]
fn a_remote_wake_racing_the_runtime_drop() {
    bounded(60, || {
        for _ in 0..200 {
            let rt = runtime(1, "wake-vs-drop");
            let (tx, rx) = csp::channel::<u32>();
            let handle = rt.spawn(async move {
                let _ = rx.recv().await;
            });
            wait_until(10, "the process sleeps on its recv", || {
                rt.processes()
                    .iter()
                    .any(|p| p.state == csp::ProcessState::Sleeping)
            });
            let sender = std::thread::spawn(move || {
                let _ = tx.send_blocking(1);
            });
            drop(rt);
            sender.join().unwrap();
            drop(handle);
        }
    });
}

#[test]
fn processes_lists_every_live_process_with_every_field() {
    bounded(30, || {
        let rt = runtime(2, "dump-all");
        let (tx, rx) = csp::channel::<u8>();
        let (tx2, rx2) = csp::channel::<u8>();
        let (tx3, _rx3) = csp::channel::<u8>();
        let line = line!() + 1;
        let receiver = rt.spawn(async move { rx.recv().await });
        let sender = rt.spawn(async move { tx2.send(1).await });
        let alt = rt.spawn(async move {
            csp::alt! {
                closed(tx3) => {},
                recv(rx2) -> _v if false => {},
            }
        });
        let receiver_id = receiver.id();
        let joiner = rt.spawn(async move { receiver.await.unwrap() });
        let ids = [receiver_id, sender.id(), alt.id(), joiner.id()];
        wait_until(10, "every process asleep", || {
            rt.processes().len() == 4
                && rt
                    .processes()
                    .iter()
                    .all(|p| p.state == csp::ProcessState::Sleeping && p.waiting_on.is_some())
        });
        let dump = rt.processes();
        assert_eq!(
            dump.iter().map(|p| p.id).collect::<Vec<_>>(),
            ids,
            "sorted by id"
        );
        for (i, p) in dump.iter().enumerate() {
            assert_eq!(p.spawned_at.file(), file!());
            assert_eq!(p.spawned_at.line(), line + [0, 1, 2, 9][i], "{p:?}");
        }
        let waits: Vec<_> = dump.iter().map(|p| p.waiting_on.clone().unwrap()).collect();
        assert!(waits[0].starts_with("recv on channel #"), "{waits:?}");
        assert!(waits[1].starts_with("send on channel #"), "{waits:?}");
        assert_eq!(waits[2], "alt over 1 channel");
        assert_eq!(waits[3], format!("join of process #{receiver_id}"));
        assert_eq!(rt.metrics().processes_alive, 4);
        // The receiver's channel closes: it ends, and so does its joiner; the others
        // are cancelled with the runtime.
        drop(tx);
        assert!(rt.block_on(joiner).unwrap().is_err());
        assert_eq!(rt.metrics().processes_alive, 2);
    });
}

#[test]
fn metrics_after_a_known_workload() {
    bounded(30, || {
        let rt = runtime(2, "metrics-known");
        rt.block_on(async {
            let handles: Vec<_> = (0..1000u64).map(|i| csp::spawn(async move { i })).collect();
            let mut sum = 0;
            for h in handles {
                sum += h.await.unwrap();
            }
            assert_eq!(sum, 999 * 1000 / 2);
        });
        let m = rt.metrics();
        assert_eq!(m.spawned, 1000);
        assert_eq!(m.processes_alive, 0);
        assert!(m.polls >= 1000, "{m:?}");
        assert_eq!(m.timers_armed, 0);
        // A ping-pong between two processes runs each woken one next, on the same worker.
        let before = rt.metrics().handoffs;
        rt.block_on(rt.spawn(async {
            let (ping, ping_rx) = csp::channel::<u32>();
            let (pong, pong_rx) = csp::channel::<u32>();
            csp::spawn(async move {
                while let Ok(v) = ping_rx.recv().await {
                    pong.send(v + 1).await.unwrap();
                }
            });
            for i in 0..1000 {
                ping.send(i).await.unwrap();
                assert_eq!(pong_rx.recv().await, Ok(i + 1));
            }
        }))
        .unwrap();
        assert!(rt.metrics().handoffs > before + 100, "{:?}", rt.metrics());
    });
}
