//! Fault cases: what happens when things go wrong around csp, each counted exactly.
//!
//! - a process panics while it is registered in an `alt!`: the other processes and the
//!   channels keep working, and the values the alt would have taken are not lost;
//! - a message's `Drop` panics: buffered in a channel dropped with it, handed over in a
//!   rendezvous, dropped by a cancelled send (timed out, aborted, an unfired alt arm);
//! - wakers called after their runtime was dropped, while and after it drops;
//! - a runtime dropped while its processes block on channels that plain threads hold;
//! - the default runtime started and used from 16 plain threads at once;
//! - `shutdown_timeout` with a process that never yields: what it frees, what it cannot.
//!
//! Every test runs under the watchdog (`common::bounded`).

use std::collections::HashSet;
use std::future::poll_fn;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use csp::{JoinError, JoinHandle, ProcessState, SendError, TryRecvError, TrySendError};

mod common;

use common::{
    Counter, CountingWaker, PanicOnDrop, Tracked, bounded, counted, panic_message, pending_counted,
    poll_once, runtime, wait_for_state, wait_until,
};

/// The panic message of a JoinError that must be a panic.
#[track_caller]
fn panic_of(result: Result<impl std::fmt::Debug, JoinError>) -> String {
    match result {
        Err(e) if e.is_panic() => panic_message(&*e.into_panic()).unwrap_or_default(),
        other => panic!("expected a panic, got {other:?}"),
    }
}

/// Whether a JoinHandle's result is a cancellation.
fn cancelled<T>(result: Result<T, JoinError>) -> bool {
    matches!(result, Err(e) if e.is_cancelled())
}

/// A message that is either plain or panics when dropped.
enum Msg {
    Plain(Tracked),
    Bomb(#[allow(dead_code)] PanicOnDrop),
}

impl Msg {
    fn value(&self) -> Option<u64> {
        match self {
            Msg::Plain(t) => Some(t.value),
            Msg::Bomb(_) => None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// A panic in a process registered in an alt
// ---------------------------------------------------------------------------------------

/// The process waits in an `alt!` over two receives and a send when a second branch of
/// the same process panics: the alt's entries are unlinked with the process's future,
/// its unsent value is dropped (once, undelivered), and the channels keep serving the
/// other processes.
#[test]
fn a_panic_while_registered_in_an_alt_leaves_the_channels_working() {
    bounded(20, || {
        let rt = runtime(2, "alt-panic");
        let drops = Counter::new();
        let (a_tx, a_rx) = csp::bounded::<Tracked>(1);
        let (b_tx, b_rx) = csp::channel::<Tracked>();
        let (out_tx, out_rx) = csp::channel::<Tracked>();
        let (bomb_tx, bomb_rx) = csp::channel::<()>();
        let (a_rx2, b_rx2) = (a_rx.clone(), b_rx.clone());
        let offered = Tracked::new(99, &drops);
        let polls_after_alt = Counter::new();
        let p = rt.spawn({
            let polls_after_alt = polls_after_alt.clone();
            async move {
                let alt = async {
                    csp::alt! {
                        recv(a_rx) -> v => v.map(|t| t.value).ok(),
                        recv(b_rx) -> v => v.map(|t| t.value).ok(),
                        send(out_tx, offered) -> _ => None,
                    }
                };
                let bomb = async {
                    let _ = bomb_rx.recv().await;
                    panic!("boom inside an alt");
                };
                let fired = futures::join!(alt, bomb);
                polls_after_alt.incr();
                fired
            }
        });
        wait_for_state(&rt, p.id(), ProcessState::Sleeping);
        // Nothing was ready: the alt is registered on all three channels.
        assert_eq!(drops.get(), 0);
        rt.block_on(bomb_tx.send(())).unwrap();
        let message = panic_of(rt.block_on(p));
        assert_eq!(message, "boom inside an alt");
        assert_eq!(polls_after_alt.get(), 0);
        assert_eq!(drops.get(), 1, "the alt's unsent value was dropped, once");
        assert_eq!(
            out_rx.try_recv().map(|t| t.value),
            Err(TryRecvError::Closed),
            "nothing delivered; the alt's sender went with the process"
        );
        assert_eq!(a_tx.receiver_count(), 1, "the process's receiver is gone");
        assert!(!a_tx.is_closed() && !b_tx.is_closed());

        // The channels serve the other processes as before.
        a_tx.try_send(Tracked::new(1, &drops)).unwrap();
        assert_eq!(a_rx2.try_recv().map(|t| t.value), Ok(1));
        let sender = {
            let drops = drops.clone();
            rt.spawn(async move {
                for v in 10..20 {
                    b_tx.send(Tracked::new(v, &drops)).await.unwrap();
                }
            })
        };
        let got: Vec<u64> = rt.block_on(async {
            let mut got = Vec::new();
            while let Ok(t) = b_rx2.recv().await {
                got.push(t.value);
            }
            got
        });
        rt.block_on(sender).unwrap();
        assert_eq!(got, (10..20).collect::<Vec<_>>());
        assert_eq!(drops.get(), 12);
    });
}

/// A value is handed to the alt's receive arm (the arm fired), and in the same instant
/// the process's other branch is handed the value that makes it panic; the process is
/// polled once, the panicking branch first, so the alt never takes its value: dropped
/// with the process, the alt gives it back to its channel, where the other receiver
/// finds it. The alt's send arm, which did not fire, delivered nothing.
#[test]
fn a_value_handed_to_an_alt_whose_process_panics_goes_back_to_the_channel() {
    bounded(20, || {
        // One worker: while it runs the process that makes both hand-overs, the waiting
        // process cannot run in between.
        let rt = runtime(1, "alt-panic-give-back");
        let drops = Counter::new();
        let (a_tx, a_rx) = csp::channel::<Tracked>();
        let a_rx2 = a_rx.clone();
        let (out_tx, out_rx) = csp::channel::<Tracked>();
        let (bomb_tx, bomb_rx) = csp::channel::<()>();
        let offered = Tracked::new(99, &drops);
        let (alt_polls, bodies) = (Counter::new(), Counter::new());
        let p = rt.spawn({
            let (alt_polls, bodies) = (alt_polls.clone(), bodies.clone());
            async move {
                let bomb = async {
                    let _ = bomb_rx.recv().await;
                    panic!("boom after the handoff");
                };
                let alt = async {
                    let alt = counted_by(&alt_polls, async {
                        csp::alt! {
                            recv(a_rx) -> v => v.map(|t| t.value).ok(),
                            send(out_tx, offered) -> _ => None,
                        }
                    });
                    let fired = alt.await;
                    bodies.incr();
                    fired
                };
                futures::join!(bomb, alt)
            }
        });
        wait_for_state(&rt, p.id(), ProcessState::Sleeping);
        assert_eq!(alt_polls.get(), 1, "registered once");
        // Both hand-overs in one poll of another process, before the waiting one runs
        // again (a waiting receiver takes a rendezvous try_send).
        let handed = {
            let drops = drops.clone();
            rt.spawn(async move {
                let a = a_tx.try_send(Tracked::new(1, &drops)).is_ok();
                (a, bomb_tx.try_send(()).is_ok(), a_tx)
            })
        };
        let (a, bomb, _a_tx) = rt.block_on(handed).unwrap();
        assert!(a && bomb, "both receivers were waiting");
        assert_eq!(panic_of(rt.block_on(p)), "boom after the handoff");
        assert_eq!(
            alt_polls.get(),
            1,
            "the alt was not polled after its arm fired"
        );
        assert_eq!(bodies.get(), 0);
        assert_eq!(
            drops.get(),
            1,
            "only the unsent value of the send arm was dropped"
        );
        assert_eq!(a_rx2.len(), 1, "the handed value went back to the channel");
        assert_eq!(a_rx2.try_recv().map(|t| t.value), Ok(1));
        assert_eq!(out_rx.try_recv().err(), Some(TryRecvError::Closed));
        assert_eq!(drops.get(), 2);
    });
}

/// The counterpart of the give-back: a receiver takes the value of the alt's send arm
/// (the arm fired), then the process panics before the alt sees it. A send that fired
/// counts as delivered: the receiver keeps the value, nothing goes back, nothing is
/// dropped twice.
#[test]
fn a_send_arm_that_fired_before_its_process_panicked_counts_as_delivered() {
    bounded(20, || {
        // One worker: as above.
        let rt = runtime(1, "alt-panic-delivered");
        let drops = Counter::new();
        let (in_tx, in_rx) = csp::channel::<Tracked>();
        let (out_tx, out_rx) = csp::channel::<Tracked>();
        let (bomb_tx, bomb_rx) = csp::channel::<()>();
        let offered = Tracked::new(7, &drops);
        let p = rt.spawn(async move {
            let bomb = async {
                let _ = bomb_rx.recv().await;
                panic!("boom after the delivery");
            };
            let alt = async {
                csp::alt! {
                    recv(in_rx) -> v => v.map(|t| t.value).ok(),
                    send(out_tx, offered) -> r => r.ok().map(|()| 7),
                }
            };
            futures::join!(bomb, alt)
        });
        wait_for_state(&rt, p.id(), ProcessState::Sleeping);
        let making_both = rt.spawn(async move {
            let delivered = out_rx.try_recv().map(|t| t.value);
            (delivered, bomb_tx.try_send(()).is_ok(), out_rx)
        });
        let (delivered, bomb, out_rx) = rt.block_on(making_both).unwrap();
        assert!(bomb, "the other branch was waiting");
        assert_eq!(delivered, Ok(7), "a waiting send arm is taken by try_recv");
        assert_eq!(drops.get(), 1, "received, then dropped by the test");
        assert_eq!(panic_of(rt.block_on(p)), "boom after the delivery");
        assert_eq!(drops.get(), 1, "nothing dropped twice");
        assert_eq!(out_rx.try_recv().err(), Some(TryRecvError::Closed));
        assert_eq!(
            in_tx
                .try_send(Tracked::new(8, &drops))
                .err()
                .map(|e| e.is_closed()),
            Some(true)
        );
        assert_eq!(drops.get(), 2);
    });
}

/// Wraps `future`, counting its polls in `polls`.
fn counted_by<F: std::future::Future>(
    polls: &Counter,
    future: F,
) -> impl std::future::Future<Output = F::Output> {
    let polls = polls.clone();
    let mut future = Box::pin(future);
    poll_fn(move |cx| {
        polls.incr();
        future.as_mut().poll(cx)
    })
}

/// Rounds of a race: a process waits in an `alt!` over two receives while another
/// sends a value on each, and a third branch of the waiting process panics at the same
/// moment. Whatever the timing, each value sent `Ok` is received exactly once: by the
/// alt (which forwards it before the panic), or, if the alt was handed it but panicked
/// before taking it, by the channel's other receiver, to which it went back.
#[test]
fn a_panic_racing_a_handoff_to_an_alt_loses_and_duplicates_nothing() {
    const ROUNDS: u64 = 300;
    bounded(60, || {
        let rt = runtime(2, "alt-panic-race");
        let drops = Counter::new();
        let (mut by_alt, mut given_back) = (0, 0);
        for round in 0..ROUNDS {
            let (a_tx, a_rx) = csp::channel::<Tracked>();
            let (b_tx, b_rx) = csp::bounded::<Tracked>(1);
            let (a_rx2, b_rx2) = (a_rx.clone(), b_rx.clone());
            let (got_tx, got_rx) = csp::unbounded::<Tracked>();
            let (bomb_tx, bomb_rx) = csp::channel::<()>();
            let waiter = rt.spawn(async move {
                let alt = async {
                    let got = csp::alt! {
                        recv(a_rx) -> v => v,
                        recv(b_rx) -> v => v,
                    };
                    if let Ok(v) = got {
                        got_tx.send(v).await.unwrap();
                    }
                };
                let bomb = async {
                    let _ = bomb_rx.recv().await;
                    panic!("boom");
                };
                futures::join!(alt, bomb);
            });
            wait_for_state(&rt, waiter.id(), ProcessState::Sleeping);
            let base = round * 2;
            let sender = {
                let drops = drops.clone();
                async move {
                    let a = a_tx.send(Tracked::new(base, &drops)).await.is_ok();
                    let b = b_tx.send(Tracked::new(base + 1, &drops)).await.is_ok();
                    (a, b)
                }
            };
            let bomb = async move { bomb_tx.send(()).await.is_ok() };
            // The sender and the bomb run side by side on the two workers, started in
            // either order.
            let (sender, bomb) = if round % 2 == 0 {
                let sender = rt.spawn(sender);
                (sender, rt.spawn(bomb))
            } else {
                let bomb = rt.spawn(bomb);
                (rt.spawn(sender), bomb)
            };
            assert_eq!(panic_of(rt.block_on(waiter)), "boom");
            assert!(rt.block_on(bomb).unwrap());
            // Everything the alt forwarded, then what went back to the channels (the
            // sender closes both once its sends are done).
            let mut seen = Vec::new();
            while let Ok(v) = got_rx.try_recv() {
                seen.push(v.value);
                by_alt += 1;
            }
            let drained = rt.block_on(async move {
                let mut drained = Vec::new();
                while let Ok(v) = a_rx2.recv().await {
                    drained.push(v.value);
                }
                while let Ok(v) = b_rx2.recv().await {
                    drained.push(v.value);
                }
                drained
            });
            given_back += drained.len();
            seen.extend(drained);
            assert_eq!(
                rt.block_on(sender).unwrap(),
                (true, true),
                "round {round}: a receiver was always left, so both sends succeed"
            );
            seen.sort_unstable();
            assert_eq!(seen, [base, base + 1], "round {round}: each value once");
            assert_eq!(
                drops.get() as u64,
                base + 2,
                "round {round}: each value dropped once"
            );
        }
        eprintln!("{by_alt} values taken by the alt, {given_back} by the other receiver");
        assert_eq!(by_alt + given_back, 2 * ROUNDS as usize);
    });
}

// ---------------------------------------------------------------------------------------
// A message whose Drop panics
// ---------------------------------------------------------------------------------------

/// A message whose drop panics, buffered between plain ones, when the last receiver goes:
/// on a plain thread the panic comes out of that `drop`; in a process it is the
/// process's panic; at runtime shutdown it is the cancelled process's result. Either
/// way every other buffered value is dropped exactly once, the channel is closed, and
/// nothing else is affected.
#[test]
fn a_panicking_drop_of_a_buffered_message_when_the_channel_goes() {
    bounded(20, || {
        let fill = |tx: &csp::Sender<Msg>, drops: &Counter, bombs: &Counter| {
            tx.try_send(Msg::Plain(Tracked::new(0, drops))).unwrap();
            tx.try_send(Msg::Bomb(PanicOnDrop(bombs.clone()))).unwrap();
            tx.try_send(Msg::Plain(Tracked::new(1, drops))).unwrap();
        };

        // The last receiver dropped on a plain thread.
        let (drops, bombs) = (Counter::new(), Counter::new());
        let (tx, rx) = csp::bounded::<Msg>(4);
        fill(&tx, &drops, &bombs);
        let payload = catch_unwind(AssertUnwindSafe(|| drop(rx))).unwrap_err();
        assert_eq!(panic_message(&*payload).as_deref(), Some("panic in drop"));
        assert_eq!((drops.get(), bombs.get()), (2, 1));
        assert!(tx.is_closed());
        assert_eq!((tx.len(), tx.receiver_count()), (0, 0));
        match tx.try_send(Msg::Plain(Tracked::new(2, &drops))) {
            Err(TrySendError::Closed(Msg::Plain(t))) => assert_eq!(t.value, 2),
            _ => panic!("a closed channel refuses with the value"),
        }
        assert_eq!(drops.get(), 3);
        drop(tx);

        let rt = runtime(2, "bomb-buffered");
        // In a process: the receiver drops as the process ends.
        let (drops, bombs) = (Counter::new(), Counter::new());
        let (tx, rx) = csp::bounded::<Msg>(4);
        fill(&tx, &drops, &bombs);
        let first = rt.block_on(rt.spawn(async move {
            let first = rx.recv().await.ok().and_then(|m| m.value());
            drop(rx);
            first
        }));
        assert_eq!(panic_of(first), "panic in drop");
        assert_eq!((drops.get(), bombs.get()), (2, 1), "0 received, 1 dropped");
        assert!(tx.is_closed());

        // At shutdown: a process blocked elsewhere holds the last receiver.
        let (drops, bombs) = (Counter::new(), Counter::new());
        let (tx, rx) = csp::bounded::<Msg>(4);
        fill(&tx, &drops, &bombs);
        let (_hold, never) = csp::channel::<()>();
        let holder = rt.spawn(async move {
            let _rx = rx;
            let _ = never.recv().await;
        });
        let (other, other_polls, other_drops) = pending_counted();
        let other = rt.spawn(other);
        wait_for_state(&rt, holder.id(), ProcessState::Sleeping);
        wait_for_state(&rt, other.id(), ProcessState::Sleeping);
        drop(rt);
        assert_eq!((drops.get(), bombs.get()), (2, 1));
        assert!(tx.is_closed());
        assert_eq!(
            panic_of(futures::executor::block_on(holder)),
            "panic in drop"
        );
        assert!(cancelled(futures::executor::block_on(other)));
        assert_eq!((other_polls.get(), other_drops.get()), (1, 1));
    });
}

/// A message whose drop panics, handed from a sender to a receiver waiting on a
/// rendezvous channel: the send succeeds, the panic is the receiver's, and the channel
/// goes on carrying values between the others.
#[test]
fn a_panicking_drop_of_a_message_handed_over_in_a_rendezvous() {
    bounded(20, || {
        let rt = runtime(2, "bomb-rendezvous");
        let (drops, bombs) = (Counter::new(), Counter::new());
        let (tx, rx) = csp::channel::<Msg>();
        let rx2 = rx.clone();
        let receiver = rt.spawn(async move {
            let msg = rx.recv().await;
            drop(msg);
            "not reached"
        });
        wait_for_state(&rt, receiver.id(), ProcessState::Sleeping);
        let sender = {
            let (tx, drops, bombs) = (tx.clone(), drops.clone(), bombs.clone());
            rt.spawn(async move {
                tx.send(Msg::Bomb(PanicOnDrop(bombs))).await.is_ok()
                    && tx.send(Msg::Plain(Tracked::new(7, &drops))).await.is_ok()
            })
        };
        assert_eq!(panic_of(rt.block_on(receiver)), "panic in drop");
        assert_eq!(bombs.get(), 1);
        // The second value goes to the other receiver.
        let got = rt.block_on(rx2.recv()).ok().and_then(|m| m.value());
        assert_eq!(got, Some(7));
        assert!(rt.block_on(sender).unwrap(), "both sends succeeded");
        assert_eq!(drops.get(), 1);
        assert_eq!((tx.receiver_count(), tx.len()), (1, 0));
        assert!(!tx.is_closed());
        tx.try_send(Msg::Plain(Tracked::new(8, &drops)))
            .unwrap_err();
        drop(rx2);
        assert!(tx.is_closed());
        assert_eq!((drops.get(), bombs.get()), (2, 1));
    });
}

/// A message whose drop panics, dropped by a send that is cancelled: by a timeout, by an
/// abort, and as the unfired send arm of an `alt!` whose receive arm fired. Each time the
/// panic is the process's (an abort's too: the future's drop panicked), the value is
/// dropped once, the channel's wait lists are clean, and the fired arm's value is kept.
#[test]
fn a_panicking_drop_of_a_message_in_a_cancelled_send() {
    bounded(20, || {
        let rt = runtime(2, "bomb-cancelled");
        let (drops, bombs) = (Counter::new(), Counter::new());
        let (tx, rx) = csp::channel::<Msg>();

        // Timed out: nobody receives.
        let timed_out = {
            let (tx, bombs) = (tx.clone(), bombs.clone());
            rt.spawn(async move {
                let r = csp::timeout(
                    Duration::from_millis(2),
                    tx.send(Msg::Bomb(PanicOnDrop(bombs))),
                )
                .await;
                r.is_err()
            })
        };
        assert_eq!(panic_of(rt.block_on(timed_out)), "panic in drop");
        assert_eq!(bombs.get(), 1);
        assert_eq!(
            rx.try_recv().err(),
            Some(TryRecvError::Empty),
            "no entry left"
        );

        // Aborted while waiting.
        let waiting = {
            let (tx, bombs) = (tx.clone(), bombs.clone());
            rt.spawn(async move { tx.send(Msg::Bomb(PanicOnDrop(bombs))).await.is_ok() })
        };
        wait_for_state(&rt, waiting.id(), ProcessState::Sleeping);
        waiting.abort();
        let result = rt.block_on(waiting);
        assert_eq!(
            panic_of(result),
            "panic in drop",
            "the drop's panic, not a cancel"
        );
        assert_eq!(bombs.get(), 2);
        assert_eq!(
            rx.try_recv().err(),
            Some(TryRecvError::Empty),
            "no entry left"
        );

        // The unfired arm of an alt whose receive fired: its value is dropped as the alt
        // releases its arms, before the body runs. The received value was taken from
        // its channel, and the panic drops it (counted), never loses it.
        let (in_tx, in_rx) = csp::bounded::<Tracked>(1);
        let (kept_tx, kept_rx) = csp::unbounded::<u64>();
        in_tx.try_send(Tracked::new(5, &drops)).unwrap();
        let chooser = {
            let (tx, bombs) = (tx.clone(), bombs.clone());
            rt.spawn(async move {
                csp::prialt! {
                    recv(in_rx) -> v => kept_tx.try_send(v.unwrap().value).unwrap(),
                    send(tx, Msg::Bomb(PanicOnDrop(bombs))) -> _ => {}
                }
            })
        };
        assert_eq!(panic_of(rt.block_on(chooser)), "panic in drop");
        assert_eq!(bombs.get(), 3);
        assert!(
            kept_rx.try_recv().is_err(),
            "the body ran after the arms' drop panicked"
        );
        assert_eq!(drops.get(), 1, "the received value was dropped once");
        drop(in_tx);

        // The channel still pairs a sender with a receiver.
        let sender = {
            let (tx, drops) = (tx.clone(), drops.clone());
            rt.spawn(async move { tx.send(Msg::Plain(Tracked::new(6, &drops))).await.is_ok() })
        };
        assert_eq!(rt.block_on(rx.recv()).ok().and_then(|m| m.value()), Some(6));
        assert!(rt.block_on(sender).unwrap());
        assert_eq!((drops.get(), bombs.get()), (2, 3));
    });
}

// ---------------------------------------------------------------------------------------
// Wakers that outlive their runtime
// ---------------------------------------------------------------------------------------

/// A process's waker, kept outside csp, woken from plain threads before, while and after
/// its runtime drops, by reference and by value, cloned and dropped: nothing crashes, no
/// future is polled after the drop, each is dropped once, and once the last waker is
/// gone every process's allocation is freed (the probe waker each one holds is
/// released). A `block_on` future's waker and a blocked plain thread do the same.
#[test]
fn wakers_called_after_their_runtime_was_dropped() {
    const PROCESSES: usize = 64;
    const THREADS: usize = 4;
    bounded(30, || {
        let rt = runtime(2, "late-wakes");
        let stash: Arc<Mutex<Vec<Waker>>> = Arc::default();
        let (probe, probe_waker) = CountingWaker::new();
        let mut handles = Vec::new();
        let mut counters = Vec::new();
        for _ in 0..PROCESSES {
            let stash = stash.clone();
            let (future, polls, drops) = counted(poll_fn(move |cx: &mut Context<'_>| {
                stash.lock().unwrap().push(cx.waker().clone());
                Poll::<()>::Pending
            }));
            let mut handle = rt.spawn(future);
            assert!(poll_once(&mut handle, &probe_waker).is_pending());
            handles.push(handle);
            counters.push((polls, drops));
        }
        // A block_on future's waker too.
        rt.block_on(poll_fn(|cx| {
            stash.lock().unwrap().push(cx.waker().clone());
            Poll::Ready(())
        }));
        for h in &handles {
            wait_for_state(&rt, h.id(), ProcessState::Sleeping);
        }

        // Threads hammer clones of the wakers while the runtime drops, and after.
        let dropped = Arc::new(AtomicBool::new(false));
        let wakers: Vec<Waker> = stash.lock().unwrap().clone();
        let hammers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (wakers, dropped) = (wakers.clone(), dropped.clone());
                thread::spawn(move || {
                    let mut after = 0;
                    while after < 50 {
                        if dropped.load(Ordering::SeqCst) {
                            after += 1;
                        }
                        for (i, w) in wakers.iter().enumerate() {
                            match (i + t + after) % 3 {
                                0 => w.wake_by_ref(),
                                // A clone woken by value: the clone's own reference.
                                1 => {
                                    let clone = w.clone();
                                    clone.wake();
                                }
                                _ => drop(w.clone()),
                            }
                        }
                        thread::yield_now();
                    }
                    for w in wakers {
                        w.wake();
                    }
                })
            })
            .collect();
        drop(wakers);
        thread::sleep(Duration::from_millis(5));
        drop(rt);
        dropped.store(true, Ordering::SeqCst);
        let polls_at_drop: Vec<usize> = counters.iter().map(|(p, _)| p.get()).collect();
        for h in hammers {
            h.join().expect("a late wake crashed its thread");
        }
        for ((polls, drops), at_drop) in counters.iter().zip(&polls_at_drop) {
            assert_eq!(
                drops.get(),
                1,
                "each future dropped once, by the runtime's drop"
            );
            assert_eq!(polls.get(), *at_drop, "no poll after the runtime dropped");
        }
        for h in handles {
            assert!(cancelled(futures::executor::block_on(h)));
        }
        assert!(probe.wakes() >= PROCESSES, "each JoinHandle was woken");
        // The stash (and every process's own clones in it) are the last holders.
        let last: Vec<Waker> = std::mem::take(&mut *stash.lock().unwrap());
        for (i, w) in last.into_iter().enumerate() {
            if i % 2 == 0 {
                w.wake();
            } else {
                drop(w);
            }
        }
        drop(probe_waker);
        assert_eq!(
            Arc::strong_count(&probe),
            1,
            "every process's allocation was freed once its last waker went"
        );
    });
}

// ---------------------------------------------------------------------------------------
// A runtime dropped under plain threads
// ---------------------------------------------------------------------------------------

/// Plain threads blocked in `send_blocking`/`recv_blocking` on channels whose other ends
/// belong to processes, when the runtime drops: the processes' ends go with their
/// futures, so the threads see the channels closed (a send's value comes back, a
/// buffered value is still received first). A channel whose ends are also held by
/// threads keeps carrying their values, in order, across the drop.
#[test]
fn a_runtime_dropped_while_its_processes_block_on_channels_held_by_threads() {
    const VALUES: u64 = 2000;
    bounded(30, || {
        let rt = runtime(2, "drop-under-threads");
        let drops = Counter::new();
        let (_hold, never) = csp::channel::<()>();
        let never = Arc::new(never);

        // A thread waits to receive from a process that waits elsewhere.
        let (to_thread, from_process) = csp::channel::<Tracked>();
        // A thread waits to send to a process that waits elsewhere.
        let (to_process, from_thread) = csp::channel::<Tracked>();
        // A process waits to send into a full buffer that a thread drains later.
        let (buffered_tx, buffered_rx) = csp::bounded::<Tracked>(1);
        buffered_tx.try_send(Tracked::new(0, &drops)).unwrap();
        // Threads talk to each other; a process holds both ends too.
        let (shared_tx, shared_rx) = csp::bounded::<u64>(2);

        let mut processes = Vec::new();
        {
            let never = never.clone();
            processes.push(rt.spawn(async move {
                let _keep = to_thread;
                let _ = never.recv().await;
            }));
        }
        {
            let never = never.clone();
            processes.push(rt.spawn(async move {
                let _keep = from_thread;
                let _ = never.recv().await;
            }));
        }
        {
            let drops = drops.clone();
            processes.push(rt.spawn(async move {
                let _ = buffered_tx.send(Tracked::new(1, &drops)).await;
            }));
        }
        {
            let (tx, rx, never) = (shared_tx.clone(), shared_rx.clone(), never.clone());
            processes.push(rt.spawn(async move {
                let _keep = (tx, rx);
                let _ = never.recv().await;
            }));
        }
        for p in &processes {
            wait_for_state(&rt, p.id(), ProcessState::Sleeping);
        }

        let receiver = thread::spawn(move || from_process.recv_blocking().map(|t| t.value));
        let sender = {
            let drops = drops.clone();
            thread::spawn(
                move || match to_process.send_blocking(Tracked::new(2, &drops)) {
                    Err(SendError(t)) => Some(t.value),
                    Ok(()) => None,
                },
            )
        };
        let producer = thread::spawn(move || {
            for v in 0..VALUES {
                shared_tx
                    .send_blocking(v)
                    .expect("the consumer thread is there");
            }
        });
        let consumer = thread::spawn(move || {
            let mut next = 0;
            while let Ok(v) = shared_rx.recv_blocking() {
                assert_eq!(v, next, "in order");
                next += 1;
                if next == VALUES {
                    break;
                }
            }
            next
        });
        thread::sleep(Duration::from_millis(5));
        drop(rt);

        assert_eq!(receiver.join().unwrap(), Err(csp::RecvError));
        assert_eq!(sender.join().unwrap(), Some(2), "the value came back");
        // The buffered value, then the close.
        assert_eq!(buffered_rx.recv_blocking().map(|t| t.value), Ok(0));
        assert_eq!(
            buffered_rx.recv_blocking().map(|t| t.value),
            Err(csp::RecvError)
        );
        producer.join().unwrap();
        assert_eq!(consumer.join().unwrap(), VALUES);
        for p in processes {
            assert!(cancelled(futures::executor::block_on(p)));
        }
        // 0 received, 1 dropped with its cancelled send, 2 given back then dropped.
        assert_eq!(drops.get(), 3);
    });
}

// ---------------------------------------------------------------------------------------
// The default runtime from many threads
// ---------------------------------------------------------------------------------------

/// 16 plain threads start using the default runtime at the same moment: each spawns
/// processes and `block_on`s. One runtime starts (its worker threads are at most one
/// per core, all named `csp-worker-N`), every value crosses the shared channel once,
/// and timers work from every thread.
#[test]
fn the_default_runtime_from_sixteen_threads_at_once() {
    const THREADS: u64 = 16;
    const PER_THREAD: u64 = 20;
    bounded(60, || {
        let barrier = Arc::new(Barrier::new(THREADS as usize));
        let workers: Arc<Mutex<HashSet<(thread::ThreadId, String)>>> = Arc::default();
        let (tx, rx) = csp::channel::<u64>();
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (barrier, workers, tx, rx) =
                    (barrier.clone(), workers.clone(), tx.clone(), rx.clone());
                thread::spawn(move || {
                    assert!(csp::Handle::try_current().is_none());
                    barrier.wait();
                    let senders: Vec<JoinHandle<bool>> = (0..PER_THREAD)
                        .map(|i| {
                            let (tx, workers) = (tx.clone(), workers.clone());
                            csp::spawn(async move {
                                let me = thread::current();
                                let name = me.name().unwrap_or("").to_owned();
                                workers.lock().unwrap().insert((me.id(), name));
                                let in_runtime = csp::Handle::try_current().is_some();
                                in_runtime && tx.send(t * 1000 + i).await.is_ok()
                            })
                        })
                        .collect();
                    drop(tx);
                    csp::block_on(async move {
                        csp::sleep(Duration::from_millis(1)).await;
                        let mut sum = 0;
                        for _ in 0..PER_THREAD {
                            sum += rx.recv().await.expect("a sender is left");
                        }
                        for s in senders {
                            assert!(s.await.unwrap(), "sent from inside the runtime");
                        }
                        sum
                    })
                })
            })
            .collect();
        drop((tx, rx));
        let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        let expected: u64 = (0..THREADS)
            .flat_map(|t| (0..PER_THREAD).map(move |i| t * 1000 + i))
            .sum();
        assert_eq!(total, expected, "every value received once");
        let workers = workers.lock().unwrap();
        let cores = thread::available_parallelism().map_or(1, |n| n.get());
        assert!(
            !workers.is_empty() && workers.len() <= cores,
            "{} worker threads ran processes, for {cores} cores: more than one default \
             runtime started? {workers:?}",
            workers.len()
        );
        for (_, name) in workers.iter() {
            assert!(name.starts_with("csp-worker-"), "{name}");
        }
    });
}

// ---------------------------------------------------------------------------------------
// shutdown_timeout and a process that never yields
// ---------------------------------------------------------------------------------------

thread_local! {
    static EXIT_PROBE: std::cell::RefCell<Option<ExitProbe>> =
        const { std::cell::RefCell::new(None) };
}

/// Counts when its thread exits (thread-local destructors run then).
struct ExitProbe(Counter);

impl Drop for ExitProbe {
    fn drop(&mut self) {
        self.0.incr();
    }
}

/// `shutdown_timeout` while a process spins in its `poll` without ever awaiting:
/// it returns after the timeout, having cancelled every other process (their futures
/// dropped, their channels closed, their handles resolved). What it cannot free: the
/// spinning process's future (its worker is inside it), hence what that future holds
/// (here a receiver, so its channel stays open, and a counted value), its JoinHandle,
/// and the worker thread, left detached. Once the spin ends, the future returns
/// `Pending`, is dropped as cancelled, its values and allocation are freed, and the
/// worker thread exits.
#[test]
fn shutdown_timeout_with_a_process_that_never_yields() {
    bounded(30, || {
        let rt = runtime(2, "never-yields");
        let (drops, exited) = (Counter::new(), Counter::new());
        let (started, stop) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (spin_tx, spin_rx) = csp::channel::<u8>();
        let mut spinner = {
            let (started, stop, held, exited) = (
                started.clone(),
                stop.clone(),
                Tracked::new(1, &drops),
                exited.clone(),
            );
            rt.spawn(async move {
                let _held = (held, spin_rx);
                EXIT_PROBE.with(|p| *p.borrow_mut() = Some(ExitProbe(exited)));
                started.store(true, Ordering::SeqCst);
                while !stop.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
                std::future::pending::<()>().await;
            })
        };
        let (probe, probe_waker) = CountingWaker::new();
        assert!(poll_once(&mut spinner, &probe_waker).is_pending());
        wait_until(10, "the spinner started", || started.load(Ordering::SeqCst));

        // Others: waiting on a channel, sleeping on a timer, and never polled.
        let (wait_tx, wait_rx) = csp::channel::<u8>();
        let waiting = {
            let held = Tracked::new(2, &drops);
            rt.spawn(async move {
                let _held = held;
                wait_rx.recv().await.ok()
            })
        };
        let sleeping = {
            let held = Tracked::new(3, &drops);
            rt.spawn(async move {
                let _held = held;
                csp::sleep(Duration::from_secs(3600)).await;
            })
        };
        wait_for_state(&rt, waiting.id(), ProcessState::Sleeping);
        wait_for_state(&rt, sleeping.id(), ProcessState::Sleeping);

        rt.shutdown_timeout(Duration::from_millis(200));

        // Freed: every process not being polled.
        assert!(cancelled(futures::executor::block_on(waiting)));
        assert!(cancelled(futures::executor::block_on(sleeping)));
        assert_eq!(drops.get(), 2, "the two idle processes' values");
        assert!(
            wait_tx.is_closed(),
            "the waiting process's receiver was dropped"
        );
        // Not freed: the spinning process and what it holds.
        assert!(!spinner.is_finished());
        assert!(!spin_tx.is_closed() && spin_tx.receiver_count() == 1);
        assert!(poll_once(&mut spinner, &probe_waker).is_pending());
        assert_eq!(exited.get(), 0, "its worker thread is still inside it");

        stop.store(true, Ordering::SeqCst);
        assert!(cancelled(futures::executor::block_on(&mut spinner)));
        assert_eq!(drops.get(), 3, "the spinner's value, dropped once");
        assert!(spin_tx.is_closed(), "and its receiver");
        wait_until(10, "the detached worker thread exited", || {
            exited.get() == 1
        });
        drop(spinner);
        drop(probe_waker);
        assert_eq!(
            Arc::strong_count(&probe),
            1,
            "the process's allocation was freed"
        );
    });
}
