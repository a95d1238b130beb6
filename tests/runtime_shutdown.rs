//! Dropping a runtime: every process cancelled, queued or asleep.
//!
//! Every test runs under a watchdog (`common::bounded`), so a hang fails it with a
//! message rather than stalling the run.

use csp::{Handle, JoinHandle, ProcessState};
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

mod common;

use common::signal::*;
use common::{
    Counter, CountingWaker, bounded, counted, pending_counted, poll_once, runtime, thread_name,
    wait_for_state, wait_until,
};

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

#[test]
fn shutdown_timeout_on_its_own_blocking_pool_waits_for_the_other_threads_only() {
    // A closure on the pool shuts its runtime down with a long timeout: its own thread
    // cannot exit before the call returns, so waiting for every pool thread to exit
    // would always take the whole 60 s and trip the 20 s watchdog.
    bounded(20, || {
        let rt = runtime(2, "blk-shutdown");
        let handle = rt.handle();
        let (done, finished) = std::sync::mpsc::channel();
        let closure = handle.spawn_blocking(move || {
            rt.shutdown_timeout(Duration::from_secs(60));
            done.send(()).unwrap();
        });
        finished.recv().unwrap();
        match futures::executor::block_on(closure) {
            Ok(()) => {}
            Err(e) => assert!(e.is_cancelled(), "{e:?}"),
        }
    });
}
