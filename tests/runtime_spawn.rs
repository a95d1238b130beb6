//! The runtime from the outside: spawning processes and joining them through their
//! `JoinHandle`.
//!
//! Every test runs under a watchdog (`common::bounded`), so a hang fails it with a
//! message rather than stalling the run.

use csp::JoinHandle;
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, mpsc};
use std::task::Poll;
use std::thread;
use std::time::Duration;

mod common;

use common::signal::*;
use common::{
    Counter, CountingWaker, Tracked, bounded, counted, poll_once, runtime, thread_name, wait_until,
    wait_until_no_process,
};

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
