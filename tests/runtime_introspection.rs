//! What the runtime tells about itself: `processes()` and `metrics()`.
//!
//! Every test runs under a watchdog (`common::bounded`), so a hang fails it with a
//! message rather than stalling the run.

use csp::ProcessState;
use std::future::poll_fn;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::thread;
use std::time::Duration;

mod common;

use common::signal::*;
use common::{bounded, runtime, thread_name, wait_for_state, wait_until_no_process};

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
fn processes_names_timer_and_socket_waits_and_keeps_a_channel_wait_under_a_timeout() {
    bounded(20, || {
        let rt = runtime(2, "waits");
        let sleeper = rt.spawn(csp::sleep(Duration::from_secs(60)));
        let (_tx, rx) = csp::channel::<u8>();
        let timed = rt.spawn(async move { csp::timeout(Duration::from_secs(60), rx.recv()).await });
        let listener = rt.block_on(async { csp::net::TcpListener::bind("127.0.0.1:0").await });
        let listener = listener.unwrap();
        let acceptor = rt.spawn(async move { listener.accept().await.map(|_| ()) });
        let waiting_on = |id: u64| {
            rt.processes()
                .into_iter()
                .find(|p| p.id == id)
                .and_then(|p| p.waiting_on)
        };
        common::wait_until(10, "three waits recorded", || {
            [sleeper.id(), timed.id(), acceptor.id()]
                .iter()
                .all(|&id| waiting_on(id).is_some())
        });
        let timer = waiting_on(sleeper.id()).unwrap();
        assert!(
            timer.starts_with("timer of ") && timer.ends_with(" ms"),
            "{timer}"
        );
        let ms: u64 = timer["timer of ".len()..timer.len() - 3].parse().unwrap();
        assert!((59_000..=60_000).contains(&ms), "{timer}");
        let timed_wait = waiting_on(timed.id()).unwrap();
        assert!(timed_wait.starts_with("recv on channel #"), "{timed_wait}");
        let socket = waiting_on(acceptor.id()).unwrap();
        assert!(
            socket.starts_with("I/O readiness (registration #"),
            "{socket}"
        );
        sleeper.abort();
        timed.abort();
        acceptor.abort();
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

/// Spins, never yielding, until `started` counts two: only another worker can start
/// the other spinner. Returns the name of the thread it ran on.
async fn spinner(started: Arc<std::sync::atomic::AtomicUsize>) -> String {
    started.fetch_add(1, Ordering::SeqCst);
    while started.load(Ordering::SeqCst) < 2 {
        std::hint::spin_loop();
    }
    thread_name()
}

/// An idle worker leaves freshly queued processes to their owner for a moment, but no
/// longer: two processes that each spin until the other has started need a worker each,
/// so the second must be stolen from the queue of the worker busy with the first (a
/// thief that never found the queue old enough would leave them spinning forever).
#[test]
fn processes_queued_behind_a_long_poll_are_stolen() {
    bounded(30, || {
        let rt = runtime(2, "long-poll");
        let steals_before = rt.metrics().steals;
        let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (a, b) = rt
            .block_on(rt.spawn(async move {
                let a = csp::spawn(spinner(started.clone()));
                let b = csp::spawn(spinner(started));
                (a.await.unwrap(), b.await.unwrap())
            }))
            .unwrap();
        assert_ne!(a, b, "the two spinners ran on one worker thread");
        assert!(rt.metrics().steals > steals_before);
    });
}

/// The same, with the other worker asleep when the second spinner is queued: after a
/// busy poll of each length, it has either just parked (and is the watcher, which looks
/// again by itself) or slept long enough to have stopped watching (and must be woken).
/// Either way it must come and take the second spinner: nothing else runs while the
/// first one spins.
#[test]
fn processes_queued_behind_a_long_poll_reach_a_sleeping_worker() {
    bounded(30, || {
        let rt = runtime(2, "long-poll-asleep");
        for busy in [0, 100, 300, 1_000, 3_000, 20_000] {
            let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let (a, b) = rt
                .block_on(rt.spawn(async move {
                    // A poll that keeps its worker busy while the other one parks.
                    let until = std::time::Instant::now() + Duration::from_micros(busy);
                    while std::time::Instant::now() < until {
                        std::hint::spin_loop();
                    }
                    let a = csp::spawn(spinner(started.clone()));
                    let b = csp::spawn(spinner(started));
                    (a.await.unwrap(), b.await.unwrap())
                }))
                .unwrap();
            assert_ne!(a, b, "after {busy} µs busy: the spinners ran on one worker");
            // Let both workers park before the next round.
            thread::sleep(Duration::from_millis(5));
        }
    });
}

/// While one worker is busy, the idle one watches its queue for a while (waking every
/// few tens of microseconds), then sleeps until woken: a poll that runs for 200 ms costs
/// the idle worker a bounded number of wake-ups, not one per watch interval (some
/// 4,000). Slow machines only make the count smaller.
#[test]
fn a_long_poll_does_not_keep_the_idle_worker_waking() {
    bounded(30, || {
        let rt = runtime(2, "quiet");
        // Let both workers settle into sleep first.
        thread::sleep(Duration::from_millis(20));
        let parks_before = rt.metrics().parks;
        rt.block_on(rt.spawn(async {
            let until = std::time::Instant::now() + Duration::from_millis(200);
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
        }))
        .unwrap();
        let parks = rt.metrics().parks - parks_before;
        assert!(
            parks <= 40,
            "the idle worker parked {parks} times in 200 ms"
        );
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
