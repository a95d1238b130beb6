//! Cancellation and abort storms on the receive and the send side of `Select`.
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use csp::TryRecvError;
use csp::{Receiver, RecvError, Select, Sender};
use futures::future::join_all;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod common;

use common::select::*;
use common::{Counter, Rng, Tracked, bounded, runtime, scaled};

// ---------------------------------------------------------------------------------------
// Cancellation storms
// ---------------------------------------------------------------------------------------

/// Loops over a Select on the three receivers, dropping selects at random, until every
/// channel is closed and drained. Returns the ids received and the number of cancels.
async fn cancelling_consumer<T: Send>(
    rxs: [Receiver<T>; 3],
    seed: u64,
    id_of: fn(&T) -> u64,
) -> (Vec<u64>, u64) {
    let mut rng = Rng::new(seed);
    let mut got = Vec::new();
    let mut cancels = 0;
    let mut sel = if seed.is_multiple_of(2) {
        Select::new()
    } else {
        Select::new_biased()
    };
    for rx in &rxs {
        sel.recv(rx);
    }
    let mut open = 3;
    while open > 0 {
        let (i, outcome) = {
            let Some(op) = maybe_cancelled(&mut sel, &mut rng).await else {
                cancels += 1;
                continue;
            };
            let i = op.index();
            (i, op.recv(&rxs[i]))
        };
        match outcome {
            Ok(value) => {
                got.push(id_of(&value));
                drop(value);
            }
            Err(RecvError) => {
                sel.remove(i);
                open -= 1;
            }
        }
        if rng.below(8) == 0 {
            csp::yield_now().await;
        }
    }
    (got, cancels)
}

#[test]
fn cancelled_receiving_selects_lose_and_duplicate_nothing() {
    bounded(60, || {
        const PRODUCERS: u64 = 3;
        let per_producer: u64 = scaled(10_000);
        const CONSUMERS: u64 = 4;
        let rt = runtime(2, "select-storm");
        let drops = Counter::new();
        let chans: Vec<(Sender<Tracked>, Receiver<Tracked>)> = (0..3).map(make).collect();
        let rxs = || -> [Receiver<Tracked>; 3] {
            [chans[0].1.clone(), chans[1].1.clone(), chans[2].1.clone()]
        };
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|c| rt.spawn(cancelling_consumer(rxs(), 100 + c, |t: &Tracked| t.value)))
            .collect();
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let txs = [chans[0].0.clone(), chans[1].0.clone(), chans[2].0.clone()];
                let d = drops.clone();
                rt.spawn(async move {
                    let mut rng = Rng::new(p);
                    let mut sent = Vec::new();
                    for k in 0..per_producer {
                        let id = p * 1_000_000 + k;
                        let ch = rng.below(3) as usize;
                        txs[ch]
                            .send(Tracked::new(id, &d))
                            .await
                            .expect("receivers alive");
                        sent.push(id);
                        if rng.below(16) == 0 {
                            csp::yield_now().await;
                        }
                    }
                    sent
                })
            })
            .collect();
        let keep: Vec<Receiver<Tracked>> = chans.iter().map(|(_, rx)| rx.clone()).collect();
        drop(chans);

        let sent: Vec<u64> = rt
            .block_on(join_all(producers))
            .into_iter()
            .flat_map(|r| r.expect("producer"))
            .collect();
        let (mut received, mut cancels) = (Vec::new(), 0);
        for r in rt.block_on(join_all(consumers)) {
            let (got, c) = r.expect("consumer");
            received.extend(got);
            cancels += c;
        }
        assert_eq!(sent.len() as u64, PRODUCERS * per_producer);
        let mut sorted = received.clone();
        sorted.sort_unstable();
        let distinct: HashSet<u64> = sorted.iter().copied().collect();
        assert_eq!(distinct.len(), sorted.len(), "a value was received twice");
        let sent_set: HashSet<u64> = sent.iter().copied().collect();
        let lost: Vec<_> = sent_set.difference(&distinct).take(10).collect();
        assert!(
            lost.is_empty(),
            "values sent Ok but never received: {lost:?}"
        );
        assert_eq!(distinct, sent_set);
        assert!(cancels > 0, "the storm cancelled no select");
        for rx in &keep {
            assert_eq!(
                rx.try_recv().unwrap_err(),
                TryRecvError::Closed,
                "left over"
            );
        }
        drop(rt);
        assert_eq!(
            drops.get() as u64,
            PRODUCERS * per_producer,
            "each value dropped once"
        );
    });
}

#[test]
fn cancelled_sending_selects_deliver_each_value_at_most_once() {
    bounded(60, || {
        const SENDERS: u64 = 4;
        let rounds: u64 = scaled(4_000);
        const CONSUMERS: u64 = 3;
        let rt = runtime(2, "select-send-storm");
        let log = Arc::new(Mutex::new(Vec::new()));
        // Two rendezvous channels and a bounded(1) one: send arms really wait.
        let chans: Vec<(Sender<Logged>, Receiver<Logged>)> =
            vec![csp::channel(), csp::channel(), csp::bounded(1)];
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|c| {
                let rxs = [chans[0].1.clone(), chans[1].1.clone(), chans[2].1.clone()];
                rt.spawn(cancelling_consumer(rxs, 200 + c, |v: &Logged| v.id))
            })
            .collect();
        let senders: Vec<_> = (0..SENDERS)
            .map(|s| {
                let txs = [chans[0].0.clone(), chans[1].0.clone(), chans[2].0.clone()];
                let log = log.clone();
                rt.spawn(async move {
                    let mut rng = Rng::new(1_000 + s);
                    let (mut created, mut delivered, mut cancels) = (Vec::new(), Vec::new(), 0u64);
                    for round in 0..rounds {
                        let mut sel = if rng.below(2) == 0 {
                            Select::new()
                        } else {
                            Select::new_biased()
                        };
                        let mut ids = [0u64; 3];
                        for (i, tx) in txs.iter().enumerate() {
                            ids[i] = s * 1_000_000 + round * 3 + i as u64;
                            created.push(ids[i]);
                            assert_eq!(sel.send(tx, Logged::new(ids[i], &log)), i);
                        }
                        // At most 3 attempts: each spends at most one of the 3 arms.
                        for _ in 0..1 + rng.below(3) {
                            match maybe_cancelled(&mut sel, &mut rng).await {
                                Some(op) => {
                                    let i = op.index();
                                    op.send(&txs[i]).expect("receivers alive");
                                    delivered.push(ids[i]);
                                }
                                None => cancels += 1,
                            }
                        }
                        if rng.below(4) == 0 {
                            sel.remove(rng.below(3) as usize);
                        }
                        drop(sel);
                    }
                    (created, delivered, cancels)
                })
            })
            .collect();
        let keep: Vec<Receiver<Logged>> = chans.iter().map(|(_, rx)| rx.clone()).collect();
        drop(chans);

        let (mut created, mut delivered_ok, mut cancels) = (Vec::new(), Vec::new(), 0);
        for r in rt.block_on(join_all(senders)) {
            let (c, d, n) = r.expect("sender");
            created.extend(c);
            delivered_ok.extend(d);
            cancels += n;
        }
        let mut received = Vec::new();
        for r in rt.block_on(join_all(consumers)) {
            received.extend(r.expect("consumer").0);
        }
        for rx in &keep {
            assert_eq!(
                rx.try_recv().unwrap_err(),
                TryRecvError::Closed,
                "left over"
            );
        }
        drop(keep);
        drop(rt);

        assert!(cancels > 0, "the storm cancelled no select");
        let received_set: HashSet<u64> = received.iter().copied().collect();
        assert_eq!(
            received_set.len(),
            received.len(),
            "a value was received twice"
        );
        let created_set: HashSet<u64> = created.iter().copied().collect();
        assert!(received_set.is_subset(&created_set));
        let missing: Vec<_> = delivered_ok
            .iter()
            .filter(|id| !received_set.contains(id))
            .take(10)
            .collect();
        assert!(
            missing.is_empty(),
            "send arms that fired Ok but were never received: {missing:?}"
        );
        let mut dropped = log.lock().unwrap().clone();
        dropped.sort_unstable();
        let mut want = created.clone();
        want.sort_unstable();
        if dropped != want {
            let mut counts = std::collections::HashMap::new();
            for id in &dropped {
                *counts.entry(*id).or_insert(0u32) += 1;
            }
            let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).take(10).collect();
            let never: Vec<_> = want
                .iter()
                .filter(|id| !counts.contains_key(id))
                .take(10)
                .collect();
            panic!(
                "each value must be dropped exactly once: dropped twice {twice:?}, never {never:?}"
            );
        }
        // Selects abandoned while pending (`select_then_abandon`) leave room for a
        // receiver to commit to one of their arms first: those deliveries are received
        // but never reported by a Selected (about 10 % of them in practice).
        assert!(
            received.len() > delivered_ok.len(),
            "no send arm was delivered by a cancelled select ({} received, {} reported): \
             the storm did not exercise the committed-then-cancelled path",
            received.len(),
            delivered_ok.len()
        );
    });
}

/// A consumer that records each id as soon as it has it, so an abort loses no record.
async fn recording_consumer(rxs: [Receiver<Tracked>; 3], seed: u64, log: Arc<Mutex<Vec<u64>>>) {
    let mut rng = Rng::new(seed);
    let mut sel = Select::new();
    for rx in &rxs {
        sel.recv(rx);
    }
    let mut open = 3;
    while open > 0 {
        let (i, outcome) = {
            let op = sel.select().await;
            let i = op.index();
            (i, op.recv(&rxs[i]))
        };
        match outcome {
            Ok(value) => log.lock().unwrap().push(value.value),
            Err(RecvError) => {
                sel.remove(i);
                open -= 1;
            }
        }
        if rng.below(4) == 0 {
            csp::yield_now().await;
        }
    }
}

#[test]
fn aborting_processes_blocked_in_select_loses_nothing() {
    bounded(60, || {
        const PRODUCERS: u64 = 2;
        let per_producer: u64 = scaled(10_000);
        let rt = runtime(2, "select-abort");
        let drops = Counter::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let chans: Vec<(Sender<Tracked>, Receiver<Tracked>)> = (0..3).map(make).collect();
        let rxs = || -> [Receiver<Tracked>; 3] {
            [chans[0].1.clone(), chans[1].1.clone(), chans[2].1.clone()]
        };
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let txs = [chans[0].0.clone(), chans[1].0.clone(), chans[2].0.clone()];
                let d = drops.clone();
                rt.spawn(async move {
                    let mut rng = Rng::new(50 + p);
                    for k in 0..per_producer {
                        let ch = rng.below(3) as usize;
                        txs[ch]
                            .send(Tracked::new(p * 1_000_000 + k, &d))
                            .await
                            .expect("receivers alive");
                    }
                })
            })
            .collect();
        // Consumers that live a few hundred microseconds each, aborted wherever they are
        // (often blocked in a select, sometimes with a value just handed to them).
        let mut rng = Rng::new(99);
        let mut aborted = 0;
        let mut seed = 0;
        while producers.iter().any(|h| !h.is_finished()) {
            seed += 1;
            let hs: Vec<_> = (0..3)
                .map(|k| rt.spawn(recording_consumer(rxs(), seed * 3 + k, log.clone())))
                .collect();
            std::thread::sleep(Duration::from_micros(50 + rng.below(300)));
            for h in &hs {
                h.abort();
            }
            for h in hs {
                if rt.block_on(h).is_err_and(|e| e.is_cancelled()) {
                    aborted += 1;
                }
            }
        }
        for h in producers {
            rt.block_on(h).expect("producer");
        }
        drop(chans.iter().map(|(tx, _)| tx.clone()).collect::<Vec<_>>());
        let last = rt.spawn(recording_consumer(rxs(), 0, log.clone()));
        let keep = rxs();
        drop(chans);
        rt.block_on(last)
            .expect("the last consumer drains the channels");
        for rx in &keep {
            assert_eq!(
                rx.try_recv().unwrap_err(),
                TryRecvError::Closed,
                "left over"
            );
        }
        assert!(aborted > 0, "no consumer was aborted");
        let mut got = log.lock().unwrap().clone();
        got.sort_unstable();
        let mut want: Vec<u64> = (0..PRODUCERS)
            .flat_map(|p| (0..per_producer).map(move |k| p * 1_000_000 + k))
            .collect();
        want.sort_unstable();
        let dup = got.windows(2).find(|w| w[0] == w[1]);
        assert!(dup.is_none(), "received twice: {dup:?}");
        assert_eq!(got.len(), want.len(), "values lost to aborted selects");
        assert_eq!(got, want);
        drop(keep);
        drop(rt);
        assert_eq!(drops.get() as u64, PRODUCERS * per_producer);
    });
}

#[test]
fn select_arms_meet_stream_readers() {
    bounded(30, || {
        use futures::StreamExt;
        let rt = runtime(2, "select-stream");
        let drops = Counter::new();
        for kind in 0..3 {
            let (tx, mut rx) = make::<Tracked>(kind);
            let (_quiet_tx, quiet_rx) = csp::channel::<Tracked>();
            // The reader usually waits first (as a `poll_recv` reader, never handed a
            // value); each Select's send arm then offers to it.
            let reader = rt.spawn(async move {
                let mut got = Vec::new();
                while let Some(v) = rx.next().await {
                    got.push(v.value);
                }
                got
            });
            let d = drops.clone();
            let writer = rt.spawn(async move {
                for k in 0..300u64 {
                    let mut sel = Select::new();
                    let q = sel.recv(&quiet_rx);
                    let s = sel.send(&tx, Tracked::new(k, &d));
                    {
                        let op = sel.select().await;
                        assert_ne!(op.index(), q);
                        assert_eq!(op.index(), s);
                        assert!(op.send(&tx).is_ok());
                    }
                    if k % 7 == 0 {
                        csp::yield_now().await;
                    }
                }
            });
            rt.block_on(writer).expect("writer");
            let got = rt.block_on(reader).expect("reader");
            assert_eq!(got, (0..300).collect::<Vec<_>>(), "kind {kind}");
        }
        assert_eq!(drops.get(), 900);
    });
}
