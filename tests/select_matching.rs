//! Choices meeting on shared channels: on one channel (a choice never pairs with
//! itself), and choice against choice on both ends.
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use csp::{Receiver, RecvError, Select, Sender};
use csp::{TryRecvError, TrySendError};
use futures::future::join_all;
use std::collections::HashSet;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod common;

use common::poll_with;
use common::select::*;
use common::{Counter, CountingWaker, Rng, Tracked, bounded, runtime, scaled, wait_until};

// ---------------------------------------------------------------------------------------
// Choices meeting on one channel; a choice never pairs with itself
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Got {
    Sent(u64),
    Received(u64),
}

/// A process's choice on the shared channel: receive someone's id or send its own.
async fn match_one(id: u64, tx: Sender<Tracked>, rx: Receiver<Tracked>, drops: Counter) -> Got {
    let (mut sel, recv_first) = match id % 3 {
        0 => (Select::new_biased(), true),
        1 => (Select::new_biased(), false),
        _ => (Select::new(), id.is_multiple_of(2)),
    };
    let (r, s) = if recv_first {
        let r = sel.recv(&rx);
        (r, sel.send(&tx, Tracked::new(id, &drops)))
    } else {
        let s = sel.send(&tx, Tracked::new(id, &drops));
        (sel.recv(&rx), s)
    };
    // `op` is scoped to this block: see `selected_is_send`.
    let got = {
        let op = sel.select().await;
        match op.index() {
            i if i == r => Got::Received(op.recv(&rx).expect("the channel is open").value),
            i if i == s => {
                op.send(&tx).expect("the channel is open");
                Got::Sent(id)
            }
            i => panic!("no arm {i}"),
        }
    };
    if id.is_multiple_of(4) {
        csp::yield_now().await;
    }
    got
}

#[test]
fn choices_on_one_shared_channel_pair_up_with_each_other() {
    bounded(60, || {
        const N: u64 = 44;
        let rt = runtime(2, "select-match");
        let drops = Counter::new();
        let (tx, rx) = csp::channel::<Tracked>();
        for round in 0..50u64 {
            let handles: Vec<_> = (0..N)
                .map(|i| {
                    let id = round * 1_000 + i;
                    rt.spawn(match_one(id, tx.clone(), rx.clone(), drops.clone()))
                })
                .collect();
            let results: Vec<Got> = rt
                .block_on(join_all(handles))
                .into_iter()
                .map(|r| r.expect("no process panics"))
                .collect();
            let sent: HashSet<u64> = results
                .iter()
                .filter_map(|g| match g {
                    Got::Sent(id) => Some(*id),
                    Got::Received(_) => None,
                })
                .collect();
            let mut received: Vec<u64> = results
                .iter()
                .filter_map(|g| match g {
                    Got::Received(id) => Some(*id),
                    Got::Sent(_) => None,
                })
                .collect();
            received.sort_unstable();
            let mut sent_sorted: Vec<u64> = sent.iter().copied().collect();
            sent_sorted.sort_unstable();
            assert_eq!(sent.len(), (N / 2) as usize, "round {round}: {results:?}");
            assert_eq!(
                received, sent_sorted,
                "round {round}: received ids == sent ids"
            );
            // Nobody received its own id (a choice never pairs with itself).
            for (i, g) in results.iter().enumerate() {
                assert_ne!(*g, Got::Received(round * 1_000 + i as u64), "self-pairing");
            }
            assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Empty);
            assert_eq!(
                drops.get(),
                ((round + 1) * N) as usize,
                "round {round}: every id dropped once (received or unsent)"
            );
        }
    });
}

#[test]
fn a_select_with_both_ends_of_one_channel_never_completes_alone() {
    bounded(30, || {
        let drops = Counter::new();
        let (tx, rx) = csp::channel::<Tracked>();

        for (round, biased) in [false, true].into_iter().enumerate() {
            let mut sel = if biased {
                Select::new_biased()
            } else {
                Select::new()
            };
            sel.recv(&rx);
            sel.send(&tx, Tracked::new(1, &drops));
            sel.recv(&rx);
            sel.send(&tx, Tracked::new(2, &drops));
            for _ in 0..200 {
                assert!(
                    sel.try_select().is_none(),
                    "paired with itself (biased: {biased})"
                );
            }
            // Awaited by hand: pending, never woken by itself.
            {
                let (probe, waker) = CountingWaker::new();
                let mut fut = pin!(sel.select());
                for _ in 0..50 {
                    assert!(poll_with(fut.as_mut(), &waker).is_pending());
                }
                assert_eq!(probe.wakes(), 0);
            }
            assert_eq!(
                drops.get(),
                2 * round,
                "no value dropped while the Select lives"
            );
        }
        assert_eq!(drops.get(), 4);
        assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Empty);

        // In a process: it sleeps on "alt over 1 channel", stays pending, and aborts.
        let rt = runtime(2, "select-self");
        let spawn_self = |id: u64| {
            let (tx, rx, d) = (tx.clone(), rx.clone(), drops.clone());
            rt.spawn(async move {
                let mut sel = Select::new();
                let s = sel.send(&tx, Tracked::new(id, &d));
                let r = sel.recv(&rx);
                let op = sel.select().await;
                if op.index() == s {
                    op.send(&tx).expect("open");
                    Got::Sent(id)
                } else {
                    assert_eq!(op.index(), r);
                    Got::Received(op.recv(&rx).expect("open").value)
                }
            })
        };
        let h = spawn_self(10);
        assert_eq!(
            wait_sleeping(&rt, h.id()).as_deref(),
            Some("alt over 1 channel")
        );
        std::thread::sleep(Duration::from_millis(200));
        assert!(!h.is_finished(), "the select completed with itself");
        assert_eq!(drops.get(), 4);
        h.abort();
        let err = rt.block_on(h).expect_err("aborted");
        assert!(err.is_cancelled());
        assert_eq!(
            drops.get(),
            5,
            "the unsent value went with the aborted process"
        );
        assert_eq!(
            rx.try_recv().unwrap_err(),
            TryRecvError::Empty,
            "no stale offer"
        );
        assert!(
            matches!(
                tx.try_send(Tracked::new(0, &drops)),
                Err(TrySendError::Full(_))
            ),
            "no stale receiver"
        );
        assert_eq!(drops.get(), 6);

        // With a third party, it pairs with exactly one of its arms.
        let h = spawn_self(20);
        wait_sleeping(&rt, h.id());
        let got = rt.block_on(async { rx.recv().await.expect("open") });
        assert_eq!(got.value, 20);
        drop(got);
        assert_eq!(rt.block_on(h).unwrap(), Got::Sent(20));
        assert_eq!(drops.get(), 7);

        let h = spawn_self(30);
        wait_sleeping(&rt, h.id());
        rt.block_on(async { tx.send(Tracked::new(31, &drops)).await.expect("open") });
        assert_eq!(rt.block_on(h).unwrap(), Got::Received(31));
        assert_eq!(
            drops.get(),
            9,
            "31 received and dropped, 30 unsent and dropped"
        );
        assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Empty);
    });
}

// ---------------------------------------------------------------------------------------
// Choice against choice on both ends
// ---------------------------------------------------------------------------------------

#[test]
fn select_against_select_on_both_ends_moves_one_value_per_round() {
    bounded(60, || {
        const PAIRS: u64 = 4;
        const ROUNDS: u64 = 1_000;
        let rt = runtime(2, "select-pairs");
        let drops = Counter::new();
        let mut keep = Vec::new();
        let mut handles = Vec::new();
        for pair in 0..PAIRS {
            let (tx1, rx1) = csp::channel::<Tracked>();
            let (tx2, rx2) = csp::channel::<Tracked>();
            keep.push((tx1.clone(), rx1.clone(), tx2.clone(), rx2.clone()));
            let d = drops.clone();
            // P: {send(c1, x), recv(c2)}.
            let p = rt.spawn(async move {
                let mut out = Vec::new();
                for k in 0..ROUNDS {
                    let x = pair * 1_000_000 + 2 * k;
                    let mut sel = if pair == 3 {
                        Select::new_biased()
                    } else {
                        Select::new()
                    };
                    let s = sel.send(&tx1, Tracked::new(x, &d));
                    let r = sel.recv(&rx2);
                    let op = sel.select().await;
                    out.push(if op.index() == s {
                        op.send(&tx1).expect("open");
                        Got::Sent(x)
                    } else {
                        assert_eq!(op.index(), r);
                        Got::Received(op.recv(&rx2).expect("open").value)
                    });
                }
                out
            });
            let d = drops.clone();
            // Q: {recv(c1), send(c2, y)}, arms in the other order for odd pairs.
            let q = rt.spawn(async move {
                let mut out = Vec::new();
                for k in 0..ROUNDS {
                    let y = pair * 1_000_000 + 2 * k + 1;
                    let mut sel = if pair == 3 {
                        Select::new_biased()
                    } else {
                        Select::new()
                    };
                    let (r, s) = if pair % 2 == 0 {
                        let r = sel.recv(&rx1);
                        (r, sel.send(&tx2, Tracked::new(y, &d)))
                    } else {
                        let s = sel.send(&tx2, Tracked::new(y, &d));
                        (sel.recv(&rx1), s)
                    };
                    let op = sel.select().await;
                    out.push(if op.index() == s {
                        op.send(&tx2).expect("open");
                        Got::Sent(y)
                    } else {
                        assert_eq!(op.index(), r);
                        Got::Received(op.recv(&rx1).expect("open").value)
                    });
                }
                out
            });
            handles.push((p, q));
        }
        let results = rt.block_on(async {
            let mut all = Vec::new();
            for (p, q) in handles {
                all.push((p.await.unwrap(), q.await.unwrap()));
            }
            all
        });
        for (pair, (ps, qs)) in results.iter().enumerate() {
            let pair = pair as u64;
            assert_eq!(ps.len() as u64, ROUNDS);
            assert_eq!(qs.len() as u64, ROUNDS);
            let mut forward = 0;
            for k in 0..ROUNDS {
                let x = pair * 1_000_000 + 2 * k;
                let y = x + 1;
                let (p, q) = (ps[k as usize], qs[k as usize]);
                match (p, q) {
                    (Got::Sent(a), Got::Received(b)) if a == x && b == x => forward += 1,
                    (Got::Received(a), Got::Sent(b)) if a == y && b == y => {}
                    _ => panic!("pair {pair} round {k}: P got {p:?}, Q got {q:?} (x = {x})"),
                }
            }
            if pair != 3 {
                // Fair choices: whoever arrives second picks either transfer.
                assert!(
                    forward > ROUNDS / 10 && forward < ROUNDS * 9 / 10,
                    "pair {pair}: {forward} of {ROUNDS} rounds went P -> Q"
                );
            }
        }
        for (_, rx1, _, rx2) in &keep {
            assert_eq!(rx1.try_recv().unwrap_err(), TryRecvError::Empty);
            assert_eq!(rx2.try_recv().unwrap_err(), TryRecvError::Empty);
        }
        drop(rt);
        assert_eq!(
            drops.get() as u64,
            2 * ROUNDS * PAIRS,
            "each round: one value received, the other dropped unsent"
        );
    });
}

/// A mesh of processes, each looping over a Select with random send and recv arms on
/// random channels in random order (so concurrent choices lock overlapping channel sets
/// reached in different orders), plus a send and a recv arm on a shared `hub` so two
/// waiting processes can always meet, plus a recv arm on `stop`.
#[test]
fn a_mesh_of_selects_over_overlapping_channels_conserves_every_value() {
    bounded(60, || {
        const PROCS: u64 = 8;
        let target: usize = scaled(40_000);
        let rt = runtime(2, "select-mesh");
        let log = Arc::new(Mutex::new(Vec::new()));
        let transfers = Counter::new();
        let chans: Vec<(Sender<Logged>, Receiver<Logged>)> = (0..6)
            .map(|i| match i % 3 {
                0 => csp::channel(),
                1 => csp::bounded(1),
                _ => csp::bounded(3),
            })
            .collect();
        let (hub_tx, hub_rx) = csp::channel::<Logged>();
        let (stop_tx, stop_rx) = csp::channel::<()>();
        let handles: Vec<_> = (0..PROCS)
            .map(|p| {
                let txs: Vec<Sender<Logged>> = chans.iter().map(|(tx, _)| tx.clone()).collect();
                let rxs: Vec<Receiver<Logged>> = chans.iter().map(|(_, rx)| rx.clone()).collect();
                let (hub_tx, hub_rx, stop_rx) = (hub_tx.clone(), hub_rx.clone(), stop_rx.clone());
                let (log, transfers) = (log.clone(), transfers.clone());
                rt.spawn(async move {
                    let mut rng = Rng::new(7_000 + p);
                    let (mut created, mut sent, mut received) =
                        (Vec::new(), Vec::new(), Vec::new());
                    for round in 0u64.. {
                        let mut sel = if rng.below(3) == 0 {
                            Select::new_biased()
                        } else {
                            Select::new()
                        };
                        // Per arm: (its index, is it a send, its channel; 6 = the hub).
                        let mut arms: Vec<(usize, bool, usize)> = Vec::new();
                        let mut next_id = 0u64;
                        let mut id = |created: &mut Vec<u64>| {
                            next_id += 1;
                            let id = (p << 48) | (round << 8) | next_id;
                            created.push(id);
                            id
                        };
                        let hub = 6;
                        let mut plan: Vec<(bool, usize)> = vec![(true, hub), (false, hub)];
                        for _ in 0..1 + rng.below(4) {
                            plan.push((rng.below(2) == 0, rng.below(6) as usize));
                        }
                        // Shuffle the arms' insertion order.
                        for i in (1..plan.len()).rev() {
                            plan.swap(i, rng.below(i as u64 + 1) as usize);
                        }
                        let stop_first = rng.below(2) == 0;
                        let mut stop = usize::MAX;
                        if stop_first {
                            stop = sel.recv(&stop_rx);
                        }
                        for &(is_send, ch) in &plan {
                            let i = match (is_send, ch == hub) {
                                (true, true) => {
                                    sel.send(&hub_tx, Logged::new(id(&mut created), &log))
                                }
                                (false, true) => sel.recv(&hub_rx),
                                (true, false) => {
                                    sel.send(&txs[ch], Logged::new(id(&mut created), &log))
                                }
                                (false, false) => sel.recv(&rxs[ch]),
                            };
                            arms.push((i, is_send, ch));
                        }
                        if !stop_first {
                            stop = sel.recv(&stop_rx);
                        }
                        {
                            let op = sel.select().await;
                            let fired = op.index();
                            if fired == stop {
                                assert_eq!(op.recv(&stop_rx), Err(RecvError));
                                break;
                            }
                            let &(_, is_send, ch) =
                                arms.iter().find(|a| a.0 == fired).expect("an arm");
                            let (tx, rx) = if ch == hub {
                                (&hub_tx, &hub_rx)
                            } else {
                                (&txs[ch], &rxs[ch])
                            };
                            if is_send {
                                op.send(tx).expect("open");
                                sent.push(fired_id(&created, &arms, fired, p, round));
                            } else {
                                received.push(op.recv(rx).expect("open").id);
                            }
                        }
                        transfers.incr();
                        if rng.below(8) == 0 {
                            csp::yield_now().await;
                        }
                    }
                    (created, sent, received)
                })
            })
            .collect();
        wait_until(30, "the mesh made enough transfers", || {
            transfers.get() >= target
        });
        drop(stop_tx);
        let mut created = Vec::new();
        let mut sent = Vec::new();
        let mut received = Vec::new();
        for r in rt.block_on(join_all(handles)) {
            let (c, s, r) = r.expect("no process panics");
            created.extend(c);
            sent.extend(s);
            received.extend(r);
        }
        // Whatever is still buffered counts as received.
        for (_, rx) in &chans {
            while let Ok(v) = rx.try_recv() {
                received.push(v.id);
            }
        }
        assert_eq!(hub_rx.try_recv().unwrap_err(), TryRecvError::Empty);
        drop(chans);
        drop((hub_tx, hub_rx, stop_rx));
        drop(rt);

        let mut sent_sorted = sent.clone();
        sent_sorted.sort_unstable();
        let mut received_sorted = received.clone();
        received_sorted.sort_unstable();
        let dup = received_sorted.windows(2).find(|w| w[0] == w[1]);
        assert!(dup.is_none(), "received twice: {dup:?}");
        assert_eq!(
            sent_sorted.len(),
            received_sorted.len(),
            "every fired send arm's value is received once, and nothing else is"
        );
        assert_eq!(sent_sorted, received_sorted);
        let mut dropped = log.lock().unwrap().clone();
        dropped.sort_unstable();
        created.sort_unstable();
        assert_eq!(
            dropped.len(),
            created.len(),
            "each created value dropped exactly once"
        );
        assert_eq!(dropped, created);
    });
}

/// The id of the value carried by send arm `fired` of the round's Select: ids were
/// made in arm order, one per send arm, and `created` ends with this round's.
fn fired_id(
    created: &[u64],
    arms: &[(usize, bool, usize)],
    fired: usize,
    p: u64,
    round: u64,
) -> u64 {
    let sends_before = arms
        .iter()
        .take_while(|a| a.0 != fired)
        .filter(|a| a.1)
        .count() as u64;
    let id = (p << 48) | (round << 8) | (sends_before + 1);
    assert!(
        created.iter().rev().take(8).any(|&c| c == id),
        "made this round"
    );
    id
}
