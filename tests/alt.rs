//! `alt!` and `prialt!`: fairness, order, guards, default, send and closed arms, the
//! matching case, control flow in bodies, cancellation and `Send`-ness.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Counter, Tracked, bounded, runtime};

/// How often each arm of a 4-arm `alt!` fires over 10,000 alts, with the arms in
/// `ready` kept ready (a value waiting) and the others empty.
fn wins_over_four_arms(ready: [bool; 4]) -> [usize; 4] {
    csp::block_on(async {
        let chans: Vec<_> = (0..4).map(|_| csp::bounded::<u8>(1)).collect();
        for ((tx, _), ready) in chans.iter().zip(ready) {
            if ready {
                tx.try_send(0).unwrap();
            }
        }
        let (r0, r1, r2, r3) = (&chans[0].1, &chans[1].1, &chans[2].1, &chans[3].1);
        let mut wins = [0usize; 4];
        for _ in 0..10_000 {
            let i = csp::alt! {
                recv(r0) -> _v => 0,
                recv(r1) -> _v => 1,
                recv(r2) -> _v => 2,
                recv(r3) -> _v => 3,
            };
            wins[i] += 1;
            chans[i].0.try_send(0).unwrap(); // keep the arm ready
        }
        wins
    })
}

#[test]
fn alt_is_fair_among_ready_arms() {
    bounded(30, || {
        let wins = wins_over_four_arms([true; 4]);
        for w in wins {
            assert!(
                (2_000..=3_000).contains(&w),
                "each arm wins 20-30%: {wins:?}"
            );
        }
    });
}

/// Fair among the ready arms only: with arms 1 and 3 of four ready, each wins about
/// half the time (an order drawn one arm at a time must not favour the arm after an
/// unready one, as a random starting point would: 3/4 against 1/4 here).
#[test]
fn alt_is_fair_among_the_ready_arms_when_some_are_not() {
    bounded(30, || {
        let wins = wins_over_four_arms([false, true, false, true]);
        assert_eq!(
            (wins[0], wins[2]),
            (0, 0),
            "unready arms never fire: {wins:?}"
        );
        // 10,000 fair coin flips: 5,000 give or take 50 (one standard deviation).
        for arm in [1, 3] {
            assert!((4_700..=5_300).contains(&wins[arm]), "{wins:?}");
        }
    });
}

#[test]
fn prialt_takes_the_first_ready_arm_in_written_order() {
    bounded(10, || {
        csp::block_on(async {
            let (tx1, rx1) = csp::bounded::<u8>(1);
            let (tx2, rx2) = csp::bounded::<u8>(1);
            for _ in 0..100 {
                tx1.try_send(1).unwrap();
                tx2.try_send(2).unwrap();
                let v = csp::prialt! {
                    recv(rx1) -> v => v.unwrap(),
                    recv(rx2) -> v => v.unwrap(),
                };
                assert_eq!(v, 1);
                // Only the second is ready now.
                let v = csp::prialt! {
                    recv(rx1) -> v => v.unwrap(),
                    recv(rx2) -> v => v.unwrap(),
                };
                assert_eq!(v, 2);
            }
        });
    });
}

#[test]
fn a_false_guard_disables_its_arm_and_skips_the_send_value() {
    bounded(10, || {
        csp::block_on(async {
            let (tx, rx) = csp::bounded::<u8>(1);
            tx.try_send(1).unwrap();
            let (out, out_rx) = csp::bounded::<u8>(1);
            let evaluated = AtomicUsize::new(0);
            let value = || {
                evaluated.fetch_add(1, Ordering::SeqCst);
                9
            };
            let ready = false;
            let r = csp::alt! {
                recv(rx) -> v if ready => v.unwrap(),
                send(out, value()) -> _res if ready => 0,
                default => 42,
            };
            assert_eq!(r, 42);
            assert_eq!(
                evaluated.load(Ordering::SeqCst),
                0,
                "guarded value not evaluated"
            );
            assert_eq!(rx.try_recv(), Ok(1), "the disabled recv took nothing");
            assert!(out_rx.try_recv().is_err());
        });
    });
}

/// An alt of receives only runs its quick pass on the receivers before building any arm:
/// a false guard keeps a ready receive out of it too, whether another arm or the
/// default then fires.
#[test]
fn a_false_guard_disables_a_ready_receive_in_an_alt_of_receives() {
    bounded(10, || {
        csp::block_on(async {
            let (tx0, rx0) = csp::bounded::<u8>(1);
            let (tx1, rx1) = csp::bounded::<u8>(1);
            tx0.try_send(0).unwrap();
            let ready = false;
            for _ in 0..100 {
                tx1.try_send(1).unwrap();
                let v = csp::alt! {
                    recv(rx0) -> v if ready => v.unwrap(),
                    recv(rx1) -> v => v.unwrap(),
                };
                assert_eq!(v, 1, "only the enabled arm fires");
                let v = csp::alt! {
                    recv(rx0) -> v if ready => v.unwrap(),
                    default => 42,
                };
                assert_eq!(v, 42, "a disabled arm leaves the default to fire");
            }
            assert_eq!(rx0.try_recv(), Ok(0), "the disabled arm took nothing");
            drop(tx0);
        });
    });
}

#[test]
fn default_runs_only_when_nothing_is_ready() {
    bounded(10, || {
        csp::block_on(async {
            let (tx, rx) = csp::channel::<u8>();
            let r = csp::alt! {
                recv(rx) -> v => Some(v),
                default => None,
            };
            assert_eq!(r, None);
            let (btx, brx) = csp::bounded::<u8>(1);
            btx.try_send(5).unwrap();
            let r = csp::alt! {
                recv(brx) -> v => Some(v),
                default => None,
            };
            assert_eq!(r, Some(Ok(5)));
            drop(tx);
        });
    });
}

/// A choice skips arms it can tell will fail without locking their channels; what it
/// tells must follow every change: a channel going from empty to ready and back, from
/// full to having room, and to closed, seen by `default` alts in turn.
#[test]
fn default_alts_follow_each_change_of_readiness() {
    bounded(10, || {
        csp::block_on(async {
            let (tx, rx) = csp::bounded::<u8>(1);
            macro_rules! try_recv {
                () => {
                    csp::alt! {
                        recv(rx) -> v => Some(v),
                        default => None,
                    }
                };
            }
            macro_rules! try_send {
                ($value:expr) => {
                    csp::alt! {
                        send(tx, $value) -> r => Some(r.is_ok()),
                        default => None,
                    }
                };
            }
            for round in 0..3 {
                assert_eq!(try_recv!(), None, "round {round}: empty");
                assert_eq!(try_send!(round), Some(true), "round {round}: room");
                assert_eq!(try_send!(9), None, "round {round}: full");
                assert_eq!(try_recv!(), Some(Ok(round)), "round {round}: a value");
            }
            // A value sent outside any alt is seen too.
            tx.try_send(7).unwrap();
            assert_eq!(try_recv!(), Some(Ok(7)));
            tx.close();
            assert_eq!(try_recv!(), Some(Err(csp::RecvError)), "closed");
            assert_eq!(try_send!(8), Some(false), "closed");
        });
    });
}

#[test]
fn send_arms_that_do_not_fire_deliver_nothing_and_drop_their_value() {
    bounded(10, || {
        csp::block_on(async {
            let drops = Counter::new();
            let (tx, rx) = csp::bounded::<u8>(1);
            tx.try_send(1).unwrap();
            let (out, out_rx) = csp::channel::<Tracked>(); // nobody receives: never ready
            let r = csp::prialt! {
                send(out, Tracked::new(7, &drops)) -> _res => "sent",
                recv(rx) -> _v => "received",
            };
            assert_eq!(r, "received");
            assert_eq!(drops.get(), 1, "the unsent value was dropped");
            assert!(out_rx.try_recv().is_err(), "and not delivered");
        });
    });
}

#[test]
fn send_and_closed_arms_report_a_closed_channel() {
    bounded(10, || {
        csp::block_on(async {
            let (tx, rx) = csp::bounded::<u8>(1);
            drop(rx);
            let r = csp::alt! {
                send(tx, 3) -> res => res.unwrap_err().into_inner(),
            };
            assert_eq!(r, 3);
            let (tx, rx) = csp::channel::<u8>();
            let closer = csp::spawn(async move { drop(rx) });
            let fired = csp::alt! {
                closed(tx) => true,
            };
            assert!(fired);
            closer.await.unwrap();
        });
    });
}

#[test]
fn recv_arm_on_a_closed_channel_drains_then_fails() {
    bounded(10, || {
        csp::block_on(async {
            let (tx, rx) = csp::bounded::<u8>(2);
            tx.try_send(1).unwrap();
            drop(tx);
            let first = csp::alt! { recv(rx) -> v => v };
            let second = csp::alt! { recv(rx) -> v => v };
            assert_eq!(first, Ok(1));
            assert_eq!(second, Err(csp::RecvError));
        });
    });
}

/// 44 processes each offer to receive or to send on one rendezvous channel: they pair
/// up, 22 senders and 22 receivers, and nothing is left over.
#[test]
fn the_matching_case() {
    bounded(30, || {
        let rt = runtime(2, "matching");
        let (tx, rx) = csp::channel::<usize>();
        let got: Vec<Option<usize>> = rt.block_on(async {
            let handles: Vec<_> = (0..44)
                .map(|id| {
                    let (tx, rx) = (tx.clone(), rx.clone());
                    csp::spawn(async move {
                        csp::alt! {
                            recv(rx) -> v => Some(v.unwrap()),
                            send(tx, id) -> res => { res.unwrap(); None }
                        }
                    })
                })
                .collect();
            let mut got = Vec::new();
            for h in handles {
                got.push(h.await.unwrap());
            }
            got
        });
        let received: Vec<usize> = got.iter().flatten().copied().collect();
        assert_eq!(received.len(), 22, "half received: {got:?}");
        let mut senders: Vec<usize> = (0..44).filter(|&i| got[i].is_none()).collect();
        let mut received = received;
        received.sort_unstable();
        senders.sort_unstable();
        assert_eq!(received, senders, "every sender's id was received once");
        assert!(rx.try_recv().is_err());
    });
}

/// An alt with a send and a recv arm on the same channel never pairs with itself.
#[test]
fn an_alt_never_pairs_with_itself() {
    bounded(10, || {
        let rt = runtime(1, "self-pair");
        let (tx, rx) = csp::channel::<u8>();
        let lonely = rt.spawn(async move {
            csp::alt! {
                recv(rx) -> _v => "received",
                send(tx, 1) -> _res => "sent",
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!lonely.is_finished(), "it paired with itself");
        lonely.abort();
        assert!(rt.block_on(lonely).unwrap_err().is_cancelled());
    });
}

#[test]
fn bodies_can_return_break_and_use_the_question_mark() {
    async fn first(rx: &csp::Receiver<u8>) -> Result<u8, csp::RecvError> {
        let v = csp::alt! {
            recv(rx) -> v => {
                let v = v?; // `?` returns from `first`
                if v == 0 {
                    return Ok(100); // `return` returns from `first`
                }
                v
            }
        };
        Ok(v + 1)
    }
    bounded(10, || {
        csp::block_on(async {
            let (tx, rx) = csp::bounded::<u8>(4);
            tx.try_send(1).unwrap();
            tx.try_send(0).unwrap();
            assert_eq!(first(&rx).await, Ok(2));
            assert_eq!(first(&rx).await, Ok(100));
            drop(tx);
            assert_eq!(first(&rx).await, Err(csp::RecvError));

            let (tx, rx) = csp::bounded::<u8>(4);
            for i in 0..3 {
                tx.try_send(i).unwrap();
            }
            drop(tx);
            let mut seen = Vec::new();
            loop {
                csp::alt! {
                    recv(rx) -> v => match v {
                        Ok(v) => seen.push(v),
                        Err(_) => break,
                    },
                }
            }
            assert_eq!(seen, [0, 1, 2]);
        });
    });
}

#[test]
#[should_panic(expected = "every arm disabled")]
fn every_arm_disabled_and_no_default_panics() {
    csp::block_on(async {
        let (_tx, rx) = csp::channel::<u8>();
        let off = false;
        csp::alt! { recv(rx) -> _v if off => () }
    });
}

/// A future holding a pending alt! is `Send` (it can be spawned), and dropping it while
/// pending leaves the channels as they were.
#[test]
fn a_pending_alt_is_send_and_dropping_it_has_no_effect() {
    bounded(10, || {
        let rt = runtime(2, "alt-drop");
        let drops = Counter::new();
        let (tx, rx) = csp::channel::<Tracked>();
        let (out, out_rx) = csp::channel::<Tracked>();
        let value = Tracked::new(5, &drops);
        let waiting = rt.spawn(async move {
            csp::alt! {
                recv(rx) -> _v => (),
                send(out, value) -> _r => (),
            }
        });
        common::wait_until(10, "the alt waits", || {
            rt.processes()
                .iter()
                .any(|p| p.waiting_on.as_deref() == Some("alt over 2 channels"))
        });
        waiting.abort();
        assert!(rt.block_on(waiting).unwrap_err().is_cancelled());
        assert_eq!(drops.get(), 1, "the unsent value dropped, undelivered");
        assert!(out_rx.try_recv().is_err());
        assert!(
            tx.try_send(Tracked::new(6, &drops)).is_err(),
            "no receiver left waiting"
        );
    });
}

/// Many alts on both ends of shared channels with random cancellation: every value
/// sent Ok is received exactly once.
#[test]
fn alt_storm_conserves_values() {
    bounded(60, || {
        let rt = runtime(2, "alt-storm");
        let received = Arc::new(AtomicUsize::new(0));
        let sent_ok = Arc::new(AtomicUsize::new(0));
        let (a_tx, a_rx) = csp::channel::<u64>();
        let (b_tx, b_rx) = csp::bounded::<u64>(2);
        rt.block_on(async {
            let mut producers = Vec::new();
            for p in 0..4u64 {
                let (a_tx, b_tx, sent_ok) = (a_tx.clone(), b_tx.clone(), sent_ok.clone());
                producers.push(csp::spawn(async move {
                    for i in 0..500u64 {
                        let v = p * 1_000 + i;
                        let ok = csp::alt! {
                            send(a_tx, v) -> r => r.is_ok(),
                            send(b_tx, v) -> r => r.is_ok(),
                        };
                        if ok {
                            sent_ok.fetch_add(1, Ordering::SeqCst);
                        }
                        if i % 7 == 0 {
                            csp::yield_now().await;
                        }
                    }
                }));
            }
            drop((a_tx, b_tx));
            let mut consumers = Vec::new();
            for _ in 0..3 {
                let (a_rx, b_rx, received) = (a_rx.clone(), b_rx.clone(), received.clone());
                consumers.push(csp::spawn(async move {
                    let mut seen = Vec::new();
                    // A channel closed and drained is left out; stop when both are.
                    let mut open = [true, true];
                    while open.contains(&true) {
                        let guard = open;
                        // Sometimes give up waiting (cancel the alt) and come back.
                        let attempt = async {
                            csp::alt! {
                                recv(a_rx) -> v if guard[0] => (0, v.ok()),
                                recv(b_rx) -> v if guard[1] => (1, v.ok()),
                            }
                        };
                        let raced =
                            futures::future::select(Box::pin(attempt), Box::pin(csp::yield_now()))
                                .await;
                        match raced {
                            futures::future::Either::Left(((_, Some(v)), _)) => {
                                received.fetch_add(1, Ordering::SeqCst);
                                seen.push(v);
                            }
                            futures::future::Either::Left(((channel, None), _)) => {
                                open[channel] = false;
                            }
                            futures::future::Either::Right(_) => {}
                        }
                    }
                    seen
                }));
            }
            for p in producers {
                p.await.unwrap();
            }
            let mut all = Vec::new();
            for c in consumers {
                all.extend(c.await.unwrap());
            }
            let count = all.len();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), count, "no value received twice");
        });
        assert_eq!(received.load(Ordering::SeqCst), 2_000);
        assert_eq!(sent_ok.load(Ordering::SeqCst), 2_000);
    });
}

/// Block bodies, with and without bindings, compile without warnings in the caller's
/// crate (this file denies them).
#[deny(warnings)]
#[test]
fn block_bodies_raise_no_warnings() {
    csp::block_on(async {
        let (tx, rx) = csp::bounded::<u8>(1);
        tx.try_send(1).unwrap();
        let a = csp::alt! {
            recv(rx) -> v => { v.unwrap() }
            closed(tx) => { 0 }
            default => { 9 }
        };
        assert_eq!(a, 1);
    });
}

/// `alt!` picks uniformly among its ready arms as written (API.md): a `recv_any` or
/// `send_any` arm over nine ready channels fires as often as a plain arm beside it, not
/// nine times as often, and each of its channels takes its turn.
#[test]
fn a_wide_arm_weighs_as_one_arm_in_a_fair_choice() {
    bounded(30, || {
        csp::block_on(async {
            let rounds = 10_000;
            let (tx, rx) = csp::bounded::<usize>(1);
            let wide: Vec<_> = (0..9).map(|_| csp::bounded::<usize>(1)).collect();
            let rxs: Vec<&csp::Receiver<usize>> = wide.iter().map(|(_, rx)| rx).collect();
            tx.try_send(0).unwrap();
            for (tx, _) in &wide {
                tx.try_send(0).unwrap();
            }
            let (mut plain, mut each) = (0, [0usize; 9]);
            for _ in 0..rounds {
                csp::alt! {
                    recv(rx) -> _v => {
                        plain += 1;
                        tx.try_send(0).unwrap();
                    },
                    recv_any(&rxs) -> (i, _v) => {
                        each[i] += 1;
                        wide[i].0.try_send(0).unwrap();
                    },
                }
            }
            // One draw in two for the plain arm: its share's standard deviation is 0.005.
            let share = plain as f64 / rounds as f64;
            assert!((share - 0.5).abs() < 0.05, "the plain arm fired {share}");
            for (i, &n) in each.iter().enumerate() {
                assert!(n > rounds / 36, "channel {i} of recv_any fired {n} times");
            }

            // Send arms: a plain one beside a `send_any` over nine, all with room.
            let (one, _keep) = csp::unbounded::<usize>();
            let many: Vec<_> = (0..9).map(|_| csp::unbounded::<usize>()).collect();
            let txs: Vec<&csp::Sender<usize>> = many.iter().map(|(tx, _)| tx).collect();
            let mut plain = 0;
            for k in 0..rounds {
                csp::alt! {
                    send(one, k) -> res => {
                        res.unwrap();
                        plain += 1;
                    },
                    send_any(&txs, k) -> (_i, res) => res.unwrap(),
                }
            }
            let share = plain as f64 / rounds as f64;
            assert!(
                (share - 0.5).abs() < 0.05,
                "the plain send arm fired {share}"
            );
        });
    });
}

/// `recv_any` receives from whichever of a run-time set of channels is ready and says
/// which; an empty set is a disabled arm.
#[test]
fn recv_any_reports_the_position_of_the_channel_that_fired() {
    bounded(10, || {
        csp::block_on(async {
            let chans: Vec<_> = (0..5).map(|_| csp::bounded::<usize>(1)).collect();
            let rxs: Vec<&csp::Receiver<usize>> = chans.iter().map(|(_, rx)| rx).collect();
            for k in [3, 0, 4] {
                chans[k].0.try_send(k * 10).unwrap();
                let (i, v) = csp::alt! {
                    recv_any(&rxs) -> (i, msg) => (i, msg.unwrap()),
                };
                assert_eq!((i, v), (k, k * 10));
            }
            // Beside a plain arm, with owned receivers in a Vec.
            let (tx, rx) = csp::bounded::<usize>(1);
            let owned: Vec<csp::Receiver<usize>> = chans.iter().map(|(_, rx)| rx.clone()).collect();
            tx.try_send(99).unwrap();
            let got = csp::alt! {
                recv_any(owned) -> (i, msg) => Err((i, msg)),
                recv(rx) -> msg => Ok(msg.unwrap()),
            };
            assert_eq!(got, Ok(99));
            // An empty set never fires.
            let none: Vec<csp::Receiver<usize>> = Vec::new();
            let r = csp::alt! {
                recv_any(none) -> (_i, _msg) => "fired",
                default => "default",
            };
            assert_eq!(r, "default");
        });
    });
}

// ---------------------------------------------------------------------------------------
// after arms
// ---------------------------------------------------------------------------------------

#[test]
fn after_fires_when_no_arm_is_ready_and_counts_from_the_start_of_the_alt() {
    bounded(30, || {
        let rt = runtime(2, "alt-after");
        rt.block_on(async {
            let (tx, rx) = csp::channel::<u32>();
            let (out, _out_rx) = csp::channel::<u32>();
            let start = Instant::now();
            let fired = csp::alt! {
                recv(rx) -> _msg => "recv",
                send(out, 1) -> _res => "send",
                after(Duration::from_millis(4)) => "after",
            };
            assert_eq!(fired, "after");
            assert!(start.elapsed() >= Duration::from_millis(4));
            // Nothing took effect: the channel still pairs a later sender and receiver.
            csp::spawn(async move { tx.send(2).await.unwrap() });
            assert_eq!(rx.recv().await, Ok(2));
        });
        assert_eq!(rt.metrics().timers_armed, 0);
    });
}

#[test]
fn a_ready_arm_beats_after_and_a_false_guard_disables_it() {
    bounded(30, || {
        let rt = runtime(1, "alt-after-guard");
        rt.block_on(async {
            let (tx, rx) = csp::bounded::<u32>(1);
            tx.try_send(3).unwrap();
            let got = csp::prialt! {
                recv(rx) -> msg => msg.unwrap(),
                after(Duration::ZERO) => 0,
            };
            assert_eq!(got, 3);
            // after(ZERO) with nothing ready: fires.
            let got = csp::alt! {
                recv(rx) -> msg => msg.unwrap(),
                after(Duration::ZERO) => 0,
            };
            assert_eq!(got, 0);
            // A false guard disables the after arm (its duration is not evaluated).
            let evaluated = std::cell::Cell::new(false);
            let later = csp::spawn(async move {
                csp::sleep(Duration::from_millis(2)).await;
                tx.send(4).await.unwrap();
            });
            let got = csp::alt! {
                recv(rx) -> msg => msg.unwrap(),
                after({ evaluated.set(true); Duration::ZERO }) if false => 0,
            };
            assert_eq!(got, 4);
            assert!(!evaluated.get());
            later.await.unwrap();
        });
    });
}

#[test]
fn an_alt_of_only_an_after_arm_waits_for_it() {
    bounded(30, || {
        let rt = runtime(1, "alt-only-after");
        rt.block_on(async {
            let (_tx, rx) = csp::channel::<u32>();
            let start = Instant::now();
            let got = csp::alt! {
                recv(rx) -> msg if false => msg.unwrap(),
                after(Duration::from_millis(3)) => 9,
            };
            assert_eq!(got, 9);
            assert!(start.elapsed() >= Duration::from_millis(3));
        });
    });
}

#[test]
fn after_arms_racing_senders_lose_no_value() {
    // Each alt waits a little less than the producers pause, so timeouts and deliveries
    // race at the claim flag: every value sent is received exactly once, in order.
    bounded(60, || {
        let rt = runtime(2, "alt-after-race");
        let values = 2_000u32;
        let got = rt.block_on(async move {
            let (tx, rx) = csp::channel::<u32>();
            let producer = common::paused_producer(tx, values);
            let mut got = Vec::new();
            loop {
                csp::alt! {
                    recv(rx) -> msg => match msg {
                        Ok(v) => got.push(v),
                        Err(_) => break,
                    },
                    after(Duration::from_micros(500)) => {}
                }
            }
            producer.await.unwrap();
            got
        });
        assert_eq!(got, (0..values).collect::<Vec<_>>());
    });
}

// ---------------------------------------------------------------------------------------
// send_any arms
// ---------------------------------------------------------------------------------------

#[test]
fn send_any_delivers_its_one_value_to_the_ready_channel() {
    bounded(30, || {
        let rt = runtime(2, "alt-send-any");
        rt.block_on(async {
            let (txs, rxs): (Vec<_>, Vec<_>) = (0..3).map(|_| csp::bounded::<u32>(1)).unzip();
            // Only the second channel has room.
            txs[0].try_send(0).unwrap();
            txs[2].try_send(0).unwrap();
            let (i, res) = csp::alt! {
                send_any(&txs, 42) -> (i, res) => (i, res),
            };
            assert_eq!((i, res), (1, Ok(())));
            assert_eq!(rxs[1].try_recv(), Ok(42));
            // Waiting: a receiver appearing on any channel takes it, once.
            let (ends, receivers): (Vec<_>, Vec<_>) = (0..3).map(|_| csp::channel::<u32>()).unzip();
            let receiver = csp::spawn(async move {
                let value = receivers[2].recv().await;
                (value, receivers)
            });
            let (i, res) = csp::alt! {
                send_any(&ends, 7) -> (i, res) => (i, res),
            };
            assert_eq!((i, res), (2, Ok(())));
            let (value, receivers) = receiver.await.unwrap();
            assert_eq!(value, Ok(7));
            assert!(
                receivers.iter().all(|rx| rx.try_recv().is_err()),
                "sent once"
            );
        });
    });
}

#[test]
fn send_any_on_a_closed_channel_gives_the_value_back_and_an_empty_set_is_disabled() {
    bounded(30, || {
        let rt = runtime(1, "alt-send-any-closed");
        rt.block_on(async {
            let (tx, rx) = csp::channel::<Tracked>();
            drop(rx);
            let drops = Counter::new();
            let (i, res) = csp::alt! {
                send_any(&[&tx], Tracked::new(5, &drops)) -> (i, res) => (i, res),
            };
            assert_eq!(i, 0);
            let csp::SendError(value) = res.unwrap_err();
            assert_eq!(value.value, 5);
            drop(value);
            assert_eq!(drops.get(), 1);
            let none: Vec<csp::Sender<Tracked>> = Vec::new();
            let got = csp::alt! {
                send_any(&none, Tracked::new(6, &drops)) -> (_i, _res) => "sent",
                default => "disabled",
            };
            assert_eq!(got, "disabled");
            assert_eq!(drops.get(), 2, "the unsent value was dropped");
        });
    });
}

#[test]
fn send_any_storm_delivers_every_value_exactly_once() {
    // Producers offer each value to every channel at once; consumers on each channel
    // come and go (cancelling receives at random). Every value arrives exactly once.
    bounded(60, || {
        let rt = runtime(2, "alt-send-any-storm");
        let values = 3_000u64;
        let received = rt.block_on(async move {
            let (txs, rxs): (Vec<_>, Vec<_>) = (0..3).map(|_| csp::channel::<u64>()).unzip();
            let producer = csp::spawn(async move {
                for v in 0..values {
                    let (_i, res) = csp::alt! {
                        send_any(&txs, v) -> (i, res) => (i, res),
                    };
                    res.unwrap();
                }
            });
            let consumers: Vec<_> = rxs
                .into_iter()
                .map(|rx| {
                    csp::spawn(async move {
                        let mut got = Vec::new();
                        let mut spin = 0u64;
                        loop {
                            spin += 1;
                            if spin.is_multiple_of(7) {
                                // A receive started and cancelled: takes nothing.
                                let mut recv = std::pin::pin!(rx.recv());
                                if let std::task::Poll::Ready(v) = futures::poll!(recv.as_mut()) {
                                    match v {
                                        Ok(v) => got.push(v),
                                        Err(_) => break,
                                    }
                                }
                                continue;
                            }
                            match rx.recv().await {
                                Ok(v) => got.push(v),
                                Err(_) => break,
                            }
                        }
                        got
                    })
                })
                .collect();
            producer.await.unwrap();
            let mut all = Vec::new();
            for c in consumers {
                all.extend(c.await.unwrap());
            }
            all
        });
        let mut received = received;
        received.sort_unstable();
        assert_eq!(received, (0..values).collect::<Vec<_>>());
    });
}

/// `alt!`'s support code (`csp::__private`) used by hand, as safe code may: a pending
/// choice's future leaked with `mem::forget`, then its arm dropped. The arm unlinks its
/// own entry (the channel would reach into freed memory), and an arm serves one choice.
#[test]
fn a_leaked_alt_future_leaves_no_entry_behind_when_its_arms_go() {
    use csp::__private::{RecvArm, alt};
    use std::future::Future;
    use std::task::Context;

    bounded(10, || {
        let (tx, rx) = csp::channel::<u32>();
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut arm = Box::pin(Some(RecvArm::new(&rx)));
        let mut future = Box::pin(alt::<1, _>((arm.as_mut().as_pin_mut(), ()), false, false));
        assert!(future.as_mut().poll(&mut cx).is_pending());
        common::forget_boxed(future);

        // The leaked future's arm cannot serve a second choice.
        let reused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            drop(alt::<1, _>((arm.as_mut().as_pin_mut(), ()), false, false))
        }));
        let message = common::panic_message(&*reused.unwrap_err()).unwrap();
        assert!(message.contains("serves one choice"), "{message}");

        drop(arm);
        assert_eq!(tx.try_send(7), Err(csp::TrySendError::Full(7)));
        assert_eq!(rx.try_recv(), Err(csp::TryRecvError::Empty));
    });
}

/// As above, with a value handed to the leaked choice's arm before the arm goes: it
/// goes back to the channel rather than vanish.
#[test]
fn a_leaked_alt_future_that_was_handed_a_value_gives_it_back() {
    use csp::__private::{RecvArm, alt};
    use std::future::Future;
    use std::task::Context;

    bounded(10, || {
        let drops = Counter::new();
        let (tx, rx) = csp::channel::<Tracked>();
        let waker = futures::task::noop_waker();
        let mut arm = Box::pin(Some(RecvArm::new(&rx)));
        let mut future = Box::pin(alt::<1, _>((arm.as_mut().as_pin_mut(), ()), false, false));
        assert!(
            future
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        common::forget_boxed(future);
        tx.try_send(Tracked::new(9, &drops)).unwrap();
        drop(arm);
        assert_eq!(drops.get(), 0);
        assert_eq!(rx.try_recv().map(|t| t.value).ok(), Some(9));
        assert_eq!(drops.get(), 1);
    });
}

#[test]
fn at_fires_at_its_instant_unless_an_arm_is_ready() {
    bounded(30, || {
        let rt = runtime(2, "alt-at");
        rt.block_on(async {
            let (tx, rx) = csp::bounded::<u32>(1);
            // Nothing ready: the deadline fires, never before it.
            let deadline = Instant::now() + Duration::from_millis(4);
            let fired = csp::alt! {
                recv(rx) -> _msg => "recv",
                at(deadline) => "at",
            };
            assert_eq!(fired, "at");
            assert!(Instant::now() >= deadline);
            // A deadline already past fires at once when no arm is ready...
            let fired = csp::alt! {
                recv(rx) -> _msg => "recv",
                at(deadline) => "at",
            };
            assert_eq!(fired, "at");
            // ...and loses to a ready arm, in alt! as in prialt! with it written first.
            tx.try_send(5).unwrap();
            let got = csp::alt! {
                at(deadline) => 0,
                recv(rx) -> msg => msg.unwrap(),
            };
            assert_eq!(got, 5);
            // A false guard disables it, its instant not evaluated.
            let later = csp::spawn(async move {
                csp::sleep(Duration::from_millis(2)).await;
                tx.send(6).await.unwrap();
            });
            let evaluated = std::cell::Cell::new(false);
            let got = csp::prialt! {
                at({ evaluated.set(true); deadline }) if false => 0,
                recv(rx) -> msg => msg.unwrap(),
            };
            assert_eq!(got, 6);
            assert!(!evaluated.get());
            later.await.unwrap();
        });
        assert_eq!(rt.metrics().timers_armed, 0, "the alts left a timer behind");
    });
}

#[test]
fn a_body_may_reassign_an_operand_another_arm_borrowed() {
    // Go's `timer = time.After(d)` in a select loop: each message resets the idle timer,
    // which fires only once the messages stop. The bodies assign to `idle`, an operand
    // of the other arm and of their own: every arm is dropped by then.
    bounded(30, || {
        let rt = runtime(2, "alt-reset");
        // Long enough that no handover between two messages takes as long, even under
        // valgrind.
        let idle_after = Duration::from_secs(common::scaled_secs(1));
        let (got, idled) = rt.block_on(async {
            let (tx, rx) = csp::channel::<u32>();
            let (go_on, resume) = csp::bounded::<()>(1);
            let producer = csp::spawn(async move {
                for i in 0..20 {
                    tx.send(i).await.unwrap();
                }
                // Quiet until the consumer has noticed; then more, and the end.
                resume.recv().await.unwrap();
                for i in 20..40 {
                    tx.send(i).await.unwrap();
                }
            });
            let mut idle = csp::after(idle_after);
            let mut got = Vec::new();
            let mut idled = 0;
            loop {
                csp::alt! {
                    recv(rx) -> msg => match msg {
                        Ok(v) => {
                            got.push(v);
                            idle = csp::after(idle_after);
                        }
                        Err(_) => break,
                    },
                    recv(idle) -> _fired => {
                        idled += 1;
                        idle = csp::after(Duration::from_secs(3600));
                        go_on.try_send(()).unwrap();
                    }
                }
            }
            producer.await.unwrap();
            (got, idled)
        });
        assert_eq!(got, (0..40).collect::<Vec<_>>());
        assert_eq!(idled, 1, "the idle timer fired while messages were coming");
    });
}

#[test]
fn the_chosen_arm_is_unlinked_before_its_body_runs() {
    // In the body of the arm that fired, the choice's entry on the other channel is gone
    // already: a sender there finds no receiver, and the body may drop that receiver.
    bounded(30, || {
        let rt = runtime(1, "alt-unlinked");
        rt.block_on(async {
            let (tx_a, rx_a) = csp::bounded::<u32>(1);
            let (tx_b, rx_b) = csp::channel::<u32>();
            let sender = csp::spawn(async move { tx_a.send(1).await.unwrap() });
            let got = csp::alt! {
                recv(rx_a) -> msg => {
                    assert_eq!(
                        tx_b.try_send(2),
                        Err(csp::TrySendError::Full(2)),
                        "a rendezvous send found the fired alt still waiting"
                    );
                    drop(rx_b);
                    msg.unwrap()
                }
                recv(rx_b) -> msg => msg.unwrap(),
            };
            assert_eq!(got, 1);
            sender.await.unwrap();
        });
    });
}

#[test]
fn a_cancelled_arm_fires_on_cancel_and_never_on_dropped_clones() {
    bounded(30, || {
        let rt = runtime(2, "alt-cancelled");
        rt.block_on(async {
            let token = csp::CancellationToken::new();
            let (tx, rx) = csp::channel::<u32>();
            // Every clone but the waiter's dropped: no cancellation.
            drop(token.clone());
            let fired = csp::alt! {
                recv(rx) -> _msg => "recv",
                cancelled(token) => "cancelled",
                after(Duration::from_millis(3)) => "after",
            };
            assert_eq!(fired, "after");
            let canceller = csp::spawn({
                let token = token.clone();
                async move {
                    csp::sleep(Duration::from_millis(2)).await;
                    token.cancel();
                }
            });
            let fired = csp::alt! {
                recv(rx) -> _msg => "recv",
                cancelled(token) => "cancelled",
            };
            assert_eq!(fired, "cancelled");
            canceller.await.unwrap();
            // Cancelled, it stays ready; a guard disables it.
            let fired = csp::alt! {
                cancelled(&token) if false => "cancelled",
                default => "default",
            };
            assert_eq!(fired, "default");
            let fired = csp::alt! {
                cancelled(&token) => "cancelled",
                default => "default",
            };
            assert_eq!(fired, "cancelled");
            drop(tx);
        });
    });
}
