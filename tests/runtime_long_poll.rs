//! A poll that blocks its worker strands no one: what it woke into its worker's handoff
//! slot (and what it pushed out of the slot) is taken over by the runtime's watchdog and
//! run by another worker while the poll still blocks (`src/runtime/held.rs`), and what
//! waits in the worker's own queue is stolen by a worker the watchdog wakes.
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
fn a_process_that_yielded_before_a_poll_that_blocks_runs_on_another_worker_meanwhile() {
    // A process that yielded rests on its worker, `Yielding`; once the next poll ends,
    // it goes to the back of that worker's queue, and nobody is woken for it (the
    // worker is busy with exactly this work). Should the poll after that block, it sat
    // there, stealable but with every other worker asleep, until the poll ended: the
    // watchdog now wakes a worker for a queue behind a long poll.
    bounded(60, || {
        let rt = runtime();
        for round in 0..5 {
            let (to_passer, passer_rx) = csp::channel::<()>();
            let (to_blocker, blocker_rx) = csp::channel::<()>();
            let (hold, held) = csp::channel::<()>();
            let (ran_tx, ran_rx) = mpsc::channel();
            let blocker = rt.spawn(async move {
                blocker_rx.recv().await.unwrap();
                // Runs right after the passer, on the same worker, and blocks it until
                // the yielder has run again.
                ran_rx.recv_timeout(PATIENCE)
            });
            let passer = rt.spawn(async move {
                passer_rx.recv().await.unwrap();
                to_blocker.send(()).await.unwrap();
                // Rests after this poll, so the yielder's put-off transition is made
                // as the poll ends.
                let _ = held.recv().await;
            });
            wait_until_waiting(&rt, blocker.id());
            wait_until_waiting(&rt, passer.id());
            let yielder = rt.spawn(async move {
                // Long enough for the other worker, woken for this spawn, to find no
                // more work and sleep again.
                thread::sleep(Duration::from_millis(50));
                to_passer.send(()).await.unwrap();
                csp::yield_now().await;
                ran_tx.send(()).unwrap();
            });
            let ran = rt.block_on(blocker).unwrap();
            assert!(
                ran.is_ok(),
                "round {round}: the process that yielded waited for the blocking poll"
            );
            rt.block_on(yielder).unwrap();
            drop(hold);
            rt.block_on(passer).unwrap();
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
