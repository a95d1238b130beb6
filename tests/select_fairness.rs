//! `csp::Select` from the outside: fairness and bias, also beyond the arms a choice
//! keeps inline.
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use csp::TryRecvError;
use csp::{Receiver, Select, Sender};

mod common;

use common::select::*;
use common::{bounded, runtime};

// ---------------------------------------------------------------------------------------
// Fairness and bias
// ---------------------------------------------------------------------------------------

#[test]
fn a_fair_select_spreads_its_choices_over_ready_arms() {
    bounded(60, || {
        let chans: Vec<(Sender<u64>, Receiver<u64>)> = (0..4).map(|_| csp::bounded(1)).collect();
        for (i, (tx, _)) in chans.iter().enumerate() {
            tx.try_send(i as u64).unwrap();
        }

        // One Select reused 10_000 times through try_select.
        let mut wins = [0usize; 4];
        {
            let mut sel = Select::new();
            for (i, (_, rx)) in chans.iter().enumerate() {
                assert_eq!(sel.recv(rx), i);
            }
            for _ in 0..10_000 {
                let op = sel.try_select().expect("every arm is ready");
                let i = op.index();
                assert_eq!(op.recv(&chans[i].1), Ok(i as u64));
                chans[i].0.try_send(i as u64).unwrap();
                wins[i] += 1;
            }
        }
        assert_fair(&wins, "try_select on a reused Select");

        // A fresh Select each time, awaited inside a runtime.
        let rt = runtime(1, "select-fair");
        let wins = rt.block_on(async {
            let mut wins = [0usize; 4];
            for _ in 0..10_000 {
                let mut sel = Select::new();
                for (_, rx) in &chans {
                    sel.recv(rx);
                }
                let op = sel.select().await;
                let i = op.index();
                assert_eq!(op.recv(&chans[i].1), Ok(i as u64));
                chans[i].0.try_send(i as u64).unwrap();
                wins[i] += 1;
            }
            wins
        });
        assert_fair(&wins, "select().await on fresh Selects");

        // Fair over send arms too: 4 unbounded channels, always ready.
        let outs: Vec<(Sender<u64>, Receiver<u64>)> = (0..4).map(|_| csp::unbounded()).collect();
        let mut wins = [0usize; 4];
        for k in 0..10_000u64 {
            let mut sel = Select::new();
            for (tx, _) in &outs {
                sel.send(tx, k);
            }
            let op = sel.try_select().expect("unbounded send arms are ready");
            let i = op.index();
            assert_eq!(op.send(&outs[i].0), Ok(()));
            wins[i] += 1;
        }
        assert_fair(&wins, "send arms");
        let delivered: usize = outs.iter().map(|(_, rx)| rx.len()).sum();
        assert_eq!(delivered, 10_000, "exactly one send arm fires per select");
    });
}

#[test]
fn a_biased_select_takes_the_first_ready_arm() {
    bounded(30, || {
        let chans: Vec<(Sender<u64>, Receiver<u64>)> = (0..4).map(|_| csp::bounded(1)).collect();
        for (i, (tx, _)) in chans.iter().enumerate() {
            tx.try_send(i as u64).unwrap();
        }
        let mut sel = Select::new_biased();
        for (_, rx) in &chans {
            sel.recv(rx);
        }
        // All ready: arm 0 every time.
        for _ in 0..1_000 {
            let op = sel.try_select().expect("all ready");
            assert_eq!(
                op.index(),
                0,
                "biased: the first arm wins while it is ready"
            );
            assert_eq!(op.recv(&chans[0].1), Ok(0));
            chans[0].0.try_send(0).unwrap();
        }
        // Arm 0 not ready: arm 1 every time.
        assert_eq!(chans[0].1.try_recv(), Ok(0));
        for _ in 0..1_000 {
            let op = sel.try_select().expect("arms 1..4 ready");
            assert_eq!(op.index(), 1, "biased: arm 0 is not ready, arm 1 is");
            assert_eq!(op.recv(&chans[1].1), Ok(1));
            chans[1].0.try_send(1).unwrap();
        }
        // Awaited, too.
        let rt = runtime(1, "select-biased");
        rt.block_on(async {
            for _ in 0..1_000 {
                let op = sel.select().await;
                assert_eq!(op.index(), 1);
                assert_eq!(op.recv(&chans[1].1), Ok(1));
                chans[1].0.try_send(1).unwrap();
            }
        });
        drop(sel);

        // Mixed arms: a send on a full channel (not ready), a ready recv, a ready send.
        let (full_tx, full_rx) = csp::bounded::<u64>(1);
        full_tx.try_send(100).unwrap();
        let (ready_tx, ready_rx) = csp::unbounded::<u64>();
        let (out_tx, out_rx) = csp::unbounded::<u64>();
        for k in 0..100 {
            ready_tx.try_send(k).unwrap();
            let mut sel = Select::new_biased();
            let blocked = sel.send(&full_tx, 1_000 + k);
            let recv = sel.recv(&ready_rx);
            let _send = sel.send(&out_tx, 2_000 + k);
            let op = sel.try_select().expect("arms 1 and 2 are ready");
            assert_ne!(op.index(), blocked);
            assert_eq!(op.index(), recv);
            assert_eq!(op.recv(&ready_rx), Ok(k));
        }
        assert_eq!(full_rx.len(), 1, "the unready send arm never sent");
        assert!(out_rx.is_empty(), "the later ready send arm never sent");
    });
}

#[test]
fn selects_with_many_arms_choose_correctly() {
    bounded(30, || {
        // More arms than a choice keeps inline (beyond 16), and back below.
        const N: usize = 40;
        let chans: Vec<(Sender<u64>, Receiver<u64>)> = (0..N).map(|_| csp::bounded(1)).collect();
        let mut sel = Select::new_biased();
        for (i, (_, rx)) in chans.iter().enumerate() {
            assert_eq!(sel.recv(rx), i);
        }
        assert!(sel.try_select().is_none());
        // Biased: the lowest ready index wins, wherever it is.
        for &ready in &[39usize, 17, 16, 15, 0, 25] {
            for (i, (tx, _)) in chans.iter().enumerate().skip(ready) {
                if i % 2 == ready % 2 {
                    tx.try_send(i as u64).unwrap();
                }
            }
            let op = sel.try_select().expect("ready");
            assert_eq!(op.index(), ready);
            assert_eq!(op.recv(&chans[ready].1), Ok(ready as u64));
            for (_, rx) in &chans {
                let _ = rx.try_recv();
            }
        }
        // Remove arms down to 10 (inline again): removed arms never fire.
        for i in 10..N {
            sel.remove(i);
        }
        for (i, (tx, _)) in chans.iter().enumerate().rev() {
            tx.try_send(i as u64).unwrap();
        }
        let op = sel.try_select().expect("ready");
        assert_eq!(op.index(), 0);
        assert_eq!(op.recv(&chans[0].1), Ok(0));
        for (expect, (_, rx)) in chans.iter().enumerate().take(10).skip(1) {
            let op = sel.try_select().expect("ready");
            assert_eq!(op.index(), expect);
            assert_eq!(op.recv(rx), Ok(expect as u64));
        }
        assert!(sel.try_select().is_none(), "arms 10.. were removed");
        for (i, (_, rx)) in chans.iter().enumerate().skip(10) {
            assert_eq!(rx.try_recv(), Ok(i as u64), "untouched by removed arms");
        }
        drop(sel);

        // Fair over 40 arms, all ready: every arm wins sometimes, none dominates.
        for (i, (tx, _)) in chans.iter().enumerate() {
            tx.try_send(i as u64).unwrap();
        }
        let mut sel = Select::new();
        for (_, rx) in &chans {
            sel.recv(rx);
        }
        let mut wins = [0usize; N];
        for _ in 0..8_000 {
            let op = sel.try_select().expect("all ready");
            let i = op.index();
            assert_eq!(op.recv(&chans[i].1), Ok(i as u64));
            chans[i].0.try_send(i as u64).unwrap();
            wins[i] += 1;
        }
        // 200 expected each; sd ~14.
        assert!(wins.iter().all(|&w| (120..=280).contains(&w)), "{wins:?}");
        drop(sel);

        // Waiting over 40 channels, woken by the last one, in a process.
        for (_, rx) in &chans {
            let _ = rx.try_recv();
        }
        let rt = runtime(1, "select-many");
        let rxs: Vec<Receiver<u64>> = chans.iter().map(|(_, rx)| rx.clone()).collect();
        let h = rt.spawn(async move {
            let mut sel = Select::new();
            for rx in &rxs {
                sel.recv(rx);
            }
            let op = sel.select().await;
            let i = op.index();
            (i, op.recv(&rxs[i]))
        });
        assert_eq!(
            wait_sleeping(&rt, h.id()).as_deref(),
            Some("alt over 40 channels")
        );
        chans[N - 1].0.try_send(99).unwrap();
        assert_eq!(rt.block_on(h).unwrap(), (N - 1, Ok(99)));
        for (_, rx) in &chans {
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        }
    });
}
