//! A poll that blocks its worker strands no one: what it woke into its worker's handoff
//! slot (and what it pushed out of the slot) is taken over by the runtime's watchdog and
//! run by another worker while the poll still blocks (`src/runtime/held.rs`).
//!
//! The blocking polls here end only when the processes they woke have run, or after a
//! timeout far beyond the watchdog's 5 ms: a process still held when the poll ends fails
//! the test, however slow the machine. The time each took is printed, not asserted.

mod common;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{bounded, wait_until, wait_until_waiting};

/// How long a blocking poll waits for the processes it woke, at most.
const PATIENCE: Duration = Duration::from_secs(10);

fn runtime() -> csp::Runtime {
    csp::Runtime::builder()
        .worker_threads(2)
        .build()
        .expect("a runtime of two workers")
}

#[test]
fn a_process_woken_by_a_poll_that_blocks_runs_on_another_worker_meanwhile() {
    bounded(60, || {
        let rt = runtime();
        for round in 0..20 {
            let (tx, rx) = csp::channel::<Instant>();
            let (ran_tx, ran_rx) = mpsc::channel();
            let receiver = rt.spawn(async move {
                let sent = rx.recv().await.unwrap();
                ran_tx
                    .send((sent.elapsed(), thread::current().id()))
                    .unwrap();
            });
            wait_until_waiting(&rt, receiver.id());
            let blocker = rt.spawn(async move {
                // Wakes the receiver into this worker's handoff slot, then blocks the
                // worker until the receiver has run.
                tx.send(Instant::now()).await.unwrap();
                let ran = ran_rx.recv_timeout(PATIENCE);
                (ran, thread::current().id())
            });
            let (ran, blocker_thread) = rt.block_on(blocker).unwrap();
            let (waited, receiver_thread) = ran.unwrap_or_else(|_| {
                panic!("round {round}: the woken process did not run while its waker blocked")
            });
            assert_ne!(receiver_thread, blocker_thread, "round {round}");
            rt.block_on(receiver).unwrap();
            if round == 0 {
                eprintln!("the woken process ran after {waited:?} on another worker");
            }
        }
        assert!(rt.metrics().takeovers >= 20, "{:?}", rt.metrics());
    });
}

#[test]
fn processes_pushed_out_of_the_slot_by_a_poll_that_blocks_run_meanwhile() {
    bounded(60, || {
        let rt = runtime();
        const WOKEN: usize = 8;
        let mut senders = Vec::new();
        let (ran_tx, ran_rx) = mpsc::channel();
        let mut receivers = Vec::new();
        for _ in 0..WOKEN {
            let (tx, rx) = csp::channel::<()>();
            let ran_tx = ran_tx.clone();
            receivers.push(rt.spawn(async move {
                rx.recv().await.unwrap();
                ran_tx.send(()).unwrap();
            }));
            senders.push(tx);
        }
        let ids: Vec<u64> = receivers.iter().map(|r| r.id()).collect();
        wait_until(10, "every receiver waits", || {
            let table = rt.processes();
            ids.iter()
                .all(|id| table.iter().any(|p| p.id == *id && p.waiting_on.is_some()))
        });
        let blocker = rt.spawn(async move {
            // Each send wakes a receiver into the slot, pushing the one before out.
            for tx in &senders {
                tx.send(()).await.unwrap();
            }
            (0..WOKEN).all(|_| ran_rx.recv_timeout(PATIENCE).is_ok())
        });
        assert!(
            rt.block_on(blocker).unwrap(),
            "a process the blocking poll woke did not run while it blocked"
        );
        for receiver in receivers {
            rt.block_on(receiver).unwrap();
        }
    });
}

#[test]
fn a_runtime_with_nothing_to_do_lets_its_watchdog_sleep_and_wakes_it_for_work() {
    bounded(60, || {
        let rt = runtime();
        // Idle for a while (the watchdog asleep), then a long poll at once.
        thread::sleep(Duration::from_millis(50));
        let (tx, rx) = csp::channel::<()>();
        let (ran_tx, ran_rx) = mpsc::channel();
        let receiver = rt.spawn(async move {
            rx.recv().await.unwrap();
            ran_tx.send(()).unwrap();
        });
        wait_until_waiting(&rt, receiver.id());
        thread::sleep(Duration::from_millis(50));
        let started = Instant::now();
        let blocker = rt.spawn(async move {
            tx.send(()).await.unwrap();
            ran_rx.recv_timeout(PATIENCE).is_ok()
        });
        assert!(
            rt.block_on(blocker).unwrap(),
            "the woken process was stranded"
        );
        eprintln!(
            "after an idle spell, the woken process ran within {:?}",
            started.elapsed()
        );
        rt.block_on(receiver).unwrap();
    });
}
