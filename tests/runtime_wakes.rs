//! Wakes of a process from everywhere, at every point of its poll.
//!
//! Every test runs under a watchdog (`common::bounded`), so a hang fails it with a
//! message rather than stalling the run.

use csp::{JoinHandle, ProcessState, Runtime};
use std::future::{Future, poll_fn};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, mpsc};
use std::task::{Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

mod common;

use common::signal::*;
use common::{
    Counter, CountingWaker, bounded, counted, poll_once, runtime, wait_for_state, wait_until,
};

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
/// waiting receiver), then keeps the worker busy until `ran` counts `enough` of them or
/// `busy` has passed; resolves to what `ran` counted by then.
async fn wake_all_then_spin(
    senders: Vec<csp::Sender<()>>,
    ran: Arc<AtomicUsize>,
    enough: usize,
    busy: Duration,
) -> usize {
    for tx in &senders {
        tx.try_send(()).expect("every receiver waits");
    }
    let until = Instant::now() + busy;
    while ran.load(Ordering::SeqCst) < enough && Instant::now() < until {
        std::hint::spin_loop();
    }
    ran.load(Ordering::SeqCst)
}

#[test]
fn processes_woken_in_a_poll_that_runs_long_are_taken_over_by_the_other_worker() {
    bounded(30, || {
        let rt = runtime(2, "held-back");
        let ran = Arc::new(AtomicUsize::new(0));
        let (senders, handles) = sleeping_receivers(&rt, 8, &ran);
        // Eight woken into this worker's slots (seven of them pushed out of the handoff
        // slot and held back for a batch), then a poll that spins until one has run:
        // once it has run past the take-over threshold (5 ms), the watchdog moves them
        // to where the idle worker takes them. Where the watchdog cannot run (no
        // `membarrier`), they wait for the poll: it gives up after 2 s.
        // (One of them may rest on the other worker, which runs it anyway: only the
        // take-over gets all eight out.)
        let waker = rt.spawn(wake_all_then_spin(
            senders,
            ran.clone(),
            8,
            Duration::from_secs(2),
        ));
        let ran_during = rt.block_on(waker).unwrap();
        if cfg!(target_os = "linux") {
            assert_eq!(
                ran_during, 8,
                "woken processes were held during a long poll"
            );
            assert!(rt.metrics().takeovers > 0, "{:?}", rt.metrics());
        }
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
            1,
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

/// On one worker, processes `then` and `first` sleep on channels of their own; one poll
/// wakes `then`, then `first` (which takes the handoff slot, pushing `then` out to the
/// queue), then puts `buffered` values in a channel's buffer, and ends. Returns the
/// order the two ran in.
fn order_after_a_wake_then_sends(buffered: usize) -> Vec<&'static str> {
    let rt = runtime(1, "stale-handoff");
    let log = Arc::new(Mutex::new(Vec::new()));
    let sleeper = |name: &'static str| {
        let (tx, rx) = csp::channel::<()>();
        let log = log.clone();
        let handle = rt.spawn(async move {
            rx.recv().await.expect("woken once");
            log.lock().unwrap().push(name);
        });
        wait_for_state(&rt, handle.id(), ProcessState::Sleeping);
        (tx, handle)
    };
    let (then, then_handle) = sleeper("then");
    let (first, first_handle) = sleeper("first");
    let waker = rt.spawn(async move {
        let (tx, _rx) = csp::bounded::<usize>(buffered.max(1));
        then.try_send(()).expect("`then` waits");
        first.try_send(()).expect("`first` waits");
        for value in 0..buffered {
            tx.try_send(value).expect("room for every value");
        }
    });
    for handle in [waker, then_handle, first_handle] {
        rt.block_on(handle).unwrap();
    }
    log.lock().unwrap().clone()
}

#[test]
fn a_process_woken_last_runs_next_when_the_poll_ends_soon_after() {
    bounded(20, || {
        assert_eq!(order_after_a_wake_then_sends(0), ["first", "then"]);
    });
}

#[test]
fn a_process_woken_early_in_a_poll_that_went_on_sending_waits_its_turn() {
    bounded(20, || {
        // Far more values than the slot's limit (`HANDOFF_STALE_SENDS`, 8): `first` goes
        // to the back of the queue, behind `then`.
        assert_eq!(order_after_a_wake_then_sends(64), ["then", "first"]);
    });
}
