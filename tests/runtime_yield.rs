//! `yield_now`: a process gives its worker to the others.
//!
//! Every test runs under a watchdog (`common::bounded`), so a hang fails it with a
//! message rather than stalling the run.

use std::sync::{Arc, Mutex};

mod common;

use common::{bounded, counted, runtime, wait_until};

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
