//! Channels under stress: many processes and threads, random cancellation.
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use csp::{Receiver, RecvError, SendError, Sender, TryRecvError, TrySendError};
use futures::{FutureExt, StreamExt};
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

mod common;

use common::channels::*;
use common::poll_noop;
use common::{Counter, Rng, Tracked, bounded, runtime, scaled};

// ---------------------------------------------------------------------------------------
// Stress
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
struct Stress {
    kind: Kind,
    producers: usize,
    consumers: usize,
    per_producer: usize,
    cancel_sends: bool,
    cancel_recvs: bool,
    /// A process closes the channel part-way through.
    close_mid_way: bool,
    /// Consumers stop (dropping their Receiver) after a random number of values.
    consumers_quit: bool,
    seed: u64,
}

enum Sent {
    Ok,
    Cancelled,
    Closed(Item),
}

enum Got {
    Value(Item),
    Nothing,
    Closed,
}

async fn plain_send(tx: &Sender<Item>, item: Item) -> Sent {
    match tx.send(item).await {
        Ok(()) => Sent::Ok,
        Err(SendError(item)) => Sent::Closed(item),
    }
}

async fn send_one(tx: &Sender<Item>, item: Item, rng: &mut Rng, cancel: bool) -> Sent {
    match rng.below(8) {
        3 => match tx.try_send(item) {
            Ok(()) => Sent::Ok,
            Err(TrySendError::Full(item)) => plain_send(tx, item).await,
            Err(TrySendError::Closed(item)) => Sent::Closed(item),
        },
        4 | 5 if cancel => {
            match cancel_after(rng.below(4) as u32, rng.below(2) == 0, tx.send(item)).await {
                Some(Ok(())) => Sent::Ok,
                Some(Err(SendError(item))) => Sent::Closed(item),
                None => Sent::Cancelled,
            }
        }
        6 if cancel => match tx.send(item).now_or_never() {
            Some(Ok(())) => Sent::Ok,
            Some(Err(SendError(item))) => Sent::Closed(item),
            None => {
                csp::yield_now().await;
                Sent::Cancelled
            }
        },
        7 => {
            csp::yield_now().await;
            plain_send(tx, item).await
        }
        _ => plain_send(tx, item).await,
    }
}

async fn recv_one(rx: &mut Receiver<Item>, rng: &mut Rng, cancel: bool) -> Got {
    match rng.below(10) {
        3 => match rx.try_recv() {
            Ok(item) => Got::Value(item),
            Err(TryRecvError::Empty) => {
                csp::yield_now().await;
                Got::Nothing
            }
            Err(TryRecvError::Closed) => Got::Closed,
        },
        4 | 5 if cancel => {
            match cancel_after(rng.below(4) as u32, rng.below(2) == 0, rx.recv()).await {
                Some(Ok(item)) => Got::Value(item),
                Some(Err(RecvError)) => Got::Closed,
                None => Got::Nothing,
            }
        }
        6 if cancel => match rx.recv().now_or_never() {
            Some(Ok(item)) => Got::Value(item),
            Some(Err(RecvError)) => Got::Closed,
            None => {
                csp::yield_now().await;
                Got::Nothing
            }
        },
        7 => match std::future::poll_fn(|cx| rx.poll_recv(cx)).await {
            Ok(item) => Got::Value(item),
            Err(RecvError) => Got::Closed,
        },
        8 => match rx.next().await {
            Some(item) => Got::Value(item),
            None => Got::Closed,
        },
        _ => match rx.recv().await {
            Ok(item) => Got::Value(item),
            Err(RecvError) => Got::Closed,
        },
    }
}

#[derive(Default, Debug)]
struct SendLog {
    ok: Vec<usize>,
    cancelled: Vec<usize>,
    refused: Vec<usize>,
}

fn stress(cfg: Stress) {
    let total = cfg.producers * cfg.per_producer;
    let log = DropLog::new(total);
    let rt = runtime(2, "chan-stress");
    let (tx, rx) = make::<Item>(cfg.kind);
    let progress = Arc::new(AtomicUsize::new(0));
    let producers_done = Arc::new(AtomicUsize::new(0));

    let producers: Vec<_> = (0..cfg.producers)
        .map(|p| {
            let tx = tx.clone();
            let log = log.clone();
            let done = producers_done.clone();
            rt.spawn(async move {
                let mut rng = Rng::new(cfg.seed ^ (p as u64 + 1).wrapping_mul(0x1234_5679));
                let mut out = SendLog::default();
                for i in 0..cfg.per_producer {
                    let id = p * cfg.per_producer + i;
                    match send_one(&tx, log.item(id), &mut rng, cfg.cancel_sends).await {
                        Sent::Ok => out.ok.push(id),
                        Sent::Cancelled => out.cancelled.push(id),
                        Sent::Closed(item) => {
                            assert_eq!(item.id, id, "a refused send gave back another value");
                            out.refused.push(id);
                            break;
                        }
                    }
                }
                done.fetch_add(1, Ordering::SeqCst);
                out
            })
        })
        .collect();
    let consumers: Vec<_> = (0..cfg.consumers)
        .map(|c| {
            let mut rx = rx.clone();
            let progress = progress.clone();
            rt.spawn(async move {
                let mut rng = Rng::new(cfg.seed ^ (c as u64 + 101).wrapping_mul(0x8765_4321));
                let quit_after = if cfg.consumers_quit {
                    rng.below(total as u64 / cfg.consumers as u64 + 1) as usize
                } else {
                    usize::MAX
                };
                let mut got = Vec::new();
                while got.len() < quit_after {
                    match recv_one(&mut rx, &mut rng, cfg.cancel_recvs).await {
                        Got::Value(item) => {
                            got.push(item.id);
                            progress.fetch_add(1, Ordering::SeqCst);
                        }
                        Got::Nothing => {}
                        Got::Closed => break,
                    }
                }
                got
            })
        })
        .collect();
    let closer = cfg.close_mid_way.then(|| {
        let end = rx.clone();
        let progress = progress.clone();
        let done = producers_done.clone();
        let target = Rng::new(cfg.seed ^ 0xC105E).below(total as u64 / 2 + 1) as usize;
        rt.spawn(async move {
            while progress.load(Ordering::SeqCst) < target
                && done.load(Ordering::SeqCst) < cfg.producers
            {
                csp::yield_now().await;
            }
            end.close();
        })
    });
    drop(tx);
    drop(rx);

    let (sends, recvs) = rt.block_on(async {
        let mut sends = Vec::new();
        for p in producers {
            sends.push(p.await.expect("a producer panicked"));
        }
        let mut recvs = Vec::new();
        for c in consumers {
            recvs.push(c.await.expect("a consumer panicked"));
        }
        if let Some(closer) = closer {
            closer.await.unwrap();
        }
        (sends, recvs)
    });
    drop(rt);

    // Each value received at most once, and only if its send was Ok or cancelled.
    let mut received = vec![0u32; total];
    for got in &recvs {
        for &id in got {
            received[id] += 1;
        }
    }
    let mut created = vec![false; total];
    let mut sent_ok = 0;
    for (p, s) in sends.iter().enumerate() {
        for &id in &s.ok {
            created[id] = true;
            sent_ok += 1;
            if !cfg.consumers_quit {
                assert_eq!(
                    received[id], 1,
                    "{cfg:?}: value {id} was sent Ok but received {} times",
                    received[id]
                );
            }
        }
        for &id in &s.cancelled {
            created[id] = true;
        }
        for &id in &s.refused {
            created[id] = true;
            assert_eq!(received[id], 0, "{cfg:?}: value {id} refused and received");
        }
        if !cfg.close_mid_way && !cfg.consumers_quit {
            assert!(s.refused.is_empty(), "{cfg:?}: producer {p} refused: {s:?}");
            assert_eq!(s.ok.len() + s.cancelled.len(), cfg.per_producer);
        }
    }
    for id in 0..total {
        assert!(
            received[id] <= 1,
            "{cfg:?}: value {id} received {} times",
            received[id]
        );
        if received[id] == 1 {
            assert!(created[id], "{cfg:?}: value {id} received but never sent");
        }
        let expected = u32::from(created[id]);
        assert_eq!(
            log.drops(id),
            expected,
            "{cfg:?}: value {id} dropped {} times (expected {expected})",
            log.drops(id)
        );
    }
    let received_total: usize = recvs.iter().map(Vec::len).sum();
    if !cfg.consumers_quit {
        assert!(received_total >= sent_ok, "{cfg:?}");
    }
    if !cfg.cancel_recvs {
        // Without recv cancellation every consumer sees each producer's values in order.
        for got in &recvs {
            let mut last = vec![None::<usize>; cfg.producers];
            for &id in got {
                let p = id / cfg.per_producer;
                assert!(
                    last[p].is_none_or(|l| l < id),
                    "{cfg:?}: producer {p}'s {id} after {:?}",
                    last[p]
                );
                last[p] = Some(id);
            }
        }
    }
}

/// How many times more stress rounds to run: `CSP_CHANNEL_STRESS=20` for a soak run.
fn stress_scale() -> usize {
    std::env::var("CSP_CHANNEL_STRESS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// The watchdog of a stress test, in seconds, grown with the scale.
fn stress_secs() -> u64 {
    60 * stress_scale() as u64
}

fn stress_kind(kind: Kind, seed: u64) {
    let modes = [(false, false), (true, false), (false, true), (true, true)];
    // (producers, consumers)
    let shapes = [(4, 3), (1, 4), (6, 1), (3, 3)];
    for round in 0..24 * stress_scale() {
        let (cancel_sends, cancel_recvs) = modes[round % 4];
        let (producers, consumers) = shapes[(round / 2) % 4];
        stress(Stress {
            kind,
            producers,
            consumers,
            per_producer: scaled(6000) / producers,
            cancel_sends,
            cancel_recvs,
            close_mid_way: false,
            consumers_quit: false,
            seed: seed + round as u64,
        });
    }
}

#[test]
fn stress_rendezvous_with_random_cancellation() {
    bounded(stress_secs(), || stress_kind(Kind::Rendezvous, 1));
}

#[test]
fn stress_bounded_1_with_random_cancellation() {
    bounded(stress_secs(), || stress_kind(Kind::Bounded(1), 100));
}

#[test]
fn stress_bounded_8_with_random_cancellation() {
    bounded(stress_secs(), || stress_kind(Kind::Bounded(8), 200));
}

#[test]
fn stress_unbounded_with_random_cancellation() {
    bounded(stress_secs(), || stress_kind(Kind::Unbounded, 300));
}

/// Close racing traffic: every value sent Ok is still received (buffered values survive
/// the close), a refused value is never also received.
#[test]
fn stress_close_mid_way() {
    bounded(stress_secs(), || stress_every_kind(1000, true, false));
}

/// Consumers drop their Receivers part-way: once the last is gone, sends fail with their
/// values, buffered values are dropped, and nothing is dropped twice.
#[test]
fn stress_receivers_quit_early() {
    bounded(stress_secs(), || stress_every_kind(2000, false, true));
}

/// Runs `stress` on every kind of channel over a range of seeds (from `base`), with
/// sends and receives cancelled in varying mixes.
fn stress_every_kind(base: u64, close_mid_way: bool, consumers_quit: bool) {
    for (i, kind) in KINDS.into_iter().enumerate() {
        for seed in 0..12 * stress_scale() as u64 {
            stress(Stress {
                kind,
                producers: 4,
                consumers: 3,
                per_producer: scaled(400),
                cancel_sends: seed % 3 != 0,
                cancel_recvs: seed % 3 == 2,
                close_mid_way,
                consumers_quit,
                seed: base + 10 * i as u64 + seed,
            });
        }
    }
}

/// A hand-over to a waiting receiver racing that receiver's cancellation, on two
/// threads: if `try_send` succeeded, the value is in the channel afterwards (given back);
/// if not, it came back to the sender. Dropped exactly once either way.
#[test]
fn race_hand_over_against_recv_cancellation() {
    bounded(30, || {
        const N: usize = 2000;
        let drops = Counter::new();
        let chans: Vec<_> = (0..N).map(|_| csp::channel::<Tracked>()).collect();
        let sent: Vec<AtomicBool> = (0..N).map(|_| AtomicBool::new(false)).collect();
        let barrier = Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                for (_, rx) in &chans {
                    let mut recv = Box::pin(rx.recv());
                    assert!(poll_noop(recv.as_mut()).is_pending());
                    barrier.wait();
                    drop(recv);
                    barrier.wait();
                }
            });
            s.spawn(|| {
                for (i, (tx, _)) in chans.iter().enumerate() {
                    barrier.wait();
                    match tx.try_send(Tracked::new(i as u64, &drops)) {
                        Ok(()) => sent[i].store(true, Ordering::SeqCst),
                        Err(TrySendError::Full(v)) => assert_eq!(v.value, i as u64),
                        Err(e) => panic!("{e:?}"),
                    }
                    barrier.wait();
                }
            });
        });
        let mut handed = 0;
        for (i, (_, rx)) in chans.iter().enumerate() {
            if sent[i].load(Ordering::SeqCst) {
                handed += 1;
                assert_eq!(
                    rx.try_recv().map(|v| v.value),
                    Ok(i as u64),
                    "sent Ok: given back"
                );
            }
            assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Empty);
        }
        assert_eq!(drops.get(), N);
        eprintln!("hand-over vs cancellation: {handed} of {N} handed over");
    });
}

/// A waiting send's cancellation racing a `try_recv` on two threads: the receiver gets
/// the value or the cancelled send drops it, never both, never neither.
#[test]
fn race_send_cancellation_against_try_recv() {
    bounded(30, || {
        const N: usize = 2000;
        for kind in [Kind::Rendezvous, Kind::Bounded(1)] {
            let drops = Counter::new();
            let chans: Vec<_> = (0..N).map(|_| make::<Tracked>(kind)).collect();
            if kind != Kind::Rendezvous {
                for (tx, _) in &chans {
                    tx.try_send(Tracked::new(u64::MAX, &drops)).unwrap();
                }
            }
            let barrier = Barrier::new(2);
            let got = std::thread::scope(|s| {
                s.spawn(|| {
                    for (i, (tx, _)) in chans.iter().enumerate() {
                        let mut send = Box::pin(tx.send(Tracked::new(i as u64, &drops)));
                        assert!(poll_noop(send.as_mut()).is_pending());
                        barrier.wait();
                        drop(send);
                        barrier.wait();
                    }
                });
                s.spawn(|| {
                    let mut got = Vec::new();
                    for (_, rx) in &chans {
                        barrier.wait();
                        got.push(rx.try_recv().ok().map(|v| v.value));
                        barrier.wait();
                    }
                    got
                })
                .join()
                .unwrap()
            });
            let mut delivered = 0;
            for (i, (_, rx)) in chans.iter().enumerate() {
                let rest: Vec<u64> = std::iter::from_fn(|| rx.try_recv().ok())
                    .map(|v| v.value)
                    .collect();
                match (kind, got[i]) {
                    (Kind::Rendezvous, Some(v)) => {
                        delivered += 1;
                        assert_eq!(v, i as u64);
                        assert!(rest.is_empty());
                    }
                    (Kind::Rendezvous, None) => assert!(rest.is_empty()),
                    (_, Some(v)) => {
                        // The buffered value; the waiting one moved in, or was cancelled.
                        assert_eq!(v, u64::MAX);
                        if !rest.is_empty() {
                            delivered += 1;
                            assert_eq!(rest, [i as u64]);
                        }
                    }
                    (_, None) => panic!("{kind:?}: the buffered value was not received"),
                }
            }
            let created = if kind == Kind::Rendezvous { N } else { 2 * N };
            assert_eq!(
                drops.get(),
                created,
                "{kind:?}: each value dropped exactly once"
            );
            eprintln!("{kind:?} send cancellation vs try_recv: {delivered} of {N} delivered");
        }
    });
}

/// One Sender and one Receiver shared by reference among threads (both are Sync).
#[test]
fn ends_shared_by_reference_across_threads() {
    bounded(30, || {
        for kind in KINDS {
            let (tx, rx) = make::<u64>(kind);
            let (sum, n) = std::thread::scope(|s| {
                for t in 0..3u64 {
                    let tx = &tx;
                    s.spawn(move || {
                        for v in 0..1000 {
                            tx.send_blocking(t * 1000 + v).unwrap();
                        }
                    });
                }
                let receivers: Vec<_> = (0..3)
                    .map(|_| {
                        let rx = &rx;
                        s.spawn(move || {
                            let (mut sum, mut n) = (0u64, 0u64);
                            for _ in 0..1000 {
                                sum += rx.recv_blocking().unwrap();
                                n += 1;
                            }
                            (sum, n)
                        })
                    })
                    .collect();
                receivers
                    .into_iter()
                    .map(|r| r.join().unwrap())
                    .fold((0, 0), |(s, n), (s2, n2)| (s + s2, n + n2))
            });
            assert_eq!((sum, n), ((0..3000).sum::<u64>(), 3000), "{kind:?}");
            assert!(rx.is_empty());
        }
    });
}
