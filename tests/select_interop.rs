//! `Select` seen from outside csp: process dumps, and a select awaited from tokio.
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use csp::Select;
use csp::TryRecvError;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

mod common;

use common::select::*;
use common::{bounded, runtime};

// ---------------------------------------------------------------------------------------
// Process dumps
// ---------------------------------------------------------------------------------------

#[test]
fn a_process_blocked_in_select_shows_the_channels_it_waits_on() {
    bounded(30, || {
        let rt = runtime(2, "select-dump");
        let (a_tx, a_rx) = csp::bounded::<u64>(1);
        let (b_tx, b_rx) = csp::channel::<u64>();
        let (a2, b2) = (a_rx.clone(), b_rx.clone());
        let h = rt.spawn(async move {
            let mut sel = Select::new();
            let a = sel.recv(&a2);
            let b = sel.recv(&b2);
            let op = sel.select().await;
            let i = op.index();
            assert!(i == a || i == b);
            if i == a {
                (i, op.recv(&a2))
            } else {
                (i, op.recv(&b2))
            }
        });
        assert_eq!(
            wait_sleeping(&rt, h.id()).as_deref(),
            Some("alt over 2 channels")
        );
        b_tx.send_blocking(7).unwrap();
        assert_eq!(rt.block_on(h).unwrap(), (1, Ok(7)));

        // Three arms over two channels (a recv and a send on b) count 2 channels.
        let (a3, b3, b_tx3) = (a_rx.clone(), b_rx.clone(), b_tx.clone());
        let h = rt.spawn(async move {
            let mut sel = Select::new();
            let s = sel.send(&b_tx3, 1);
            let r = sel.recv(&b3);
            let a = sel.recv(&a3);
            let op = sel.select().await;
            assert!(op.index() != s && op.index() != r, "paired with itself");
            assert_eq!(op.index(), a);
            op.recv(&a3)
        });
        assert_eq!(
            wait_sleeping(&rt, h.id()).as_deref(),
            Some("alt over 2 channels")
        );
        a_tx.try_send(5).unwrap();
        assert_eq!(rt.block_on(h).unwrap(), Ok(5));
        assert_eq!(b_rx.try_recv(), Err(TryRecvError::Empty));
        assert_eq!(a_rx.try_recv(), Err(TryRecvError::Empty));
    });
}

// ---------------------------------------------------------------------------------------
// Cross-executor
// ---------------------------------------------------------------------------------------

#[test]
fn a_select_in_a_tokio_task_is_woken_by_a_csp_process() {
    bounded(60, || {
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let rt = runtime(1, "select-tokio");
        let (a_tx, a_rx) = csp::channel::<u64>();
        let (b_tx, b_rx) = csp::bounded::<u64>(1);
        let (c_tx, c_rx) = csp::channel::<u64>(); // the tokio side sends on it
        let (go_tx, go_rx) = csp::unbounded::<u64>();
        let (back_tx, back_rx) = csp::unbounded::<u64>();
        let csp_side = rt.spawn(async move {
            while let Ok(k) = go_rx.recv().await {
                match k % 3 {
                    0 => a_tx.send(k).await.unwrap(),
                    1 => b_tx.send(k).await.unwrap(),
                    _ => {
                        let v = c_rx.recv().await.unwrap();
                        back_tx.send(v).await.unwrap();
                    }
                }
            }
        });
        const N: u64 = 300;
        let task = tokio_rt.spawn(async move {
            for k in 0..N {
                let mut sel = Select::new();
                let ia = sel.recv(&a_rx);
                let ib = sel.recv(&b_rx);
                let ic = sel.send(&c_tx, k);
                let mut fut = pin!(sel.select());
                let pending = poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx).is_pending())).await;
                assert!(
                    pending,
                    "round {k}: nothing is ready before the csp process acts"
                );
                go_tx.try_send(k).unwrap();
                {
                    let op = fut.await;
                    match k % 3 {
                        0 => {
                            assert_eq!(op.index(), ia);
                            assert_eq!(op.recv(&a_rx), Ok(k));
                        }
                        1 => {
                            assert_eq!(op.index(), ib);
                            assert_eq!(op.recv(&b_rx), Ok(k));
                        }
                        _ => {
                            assert_eq!(op.index(), ic);
                            assert_eq!(op.send(&c_tx), Ok(()));
                        }
                    }
                }
                if k % 3 == 2 {
                    assert_eq!(back_rx.recv().await, Ok(k));
                }
            }
            // Also with tokio's own timer in the race: a select that is never ready
            // loses to the sleep and is cancelled cleanly.
            let mut sel = Select::new();
            sel.recv(&a_rx);
            sel.send(&c_tx, 999);
            let lost = tokio::time::timeout(Duration::from_millis(20), sel.select()).await;
            assert!(lost.is_err(), "nothing was ready");
            drop(lost);
            drop(sel);
            assert_eq!(a_rx.try_recv(), Err(TryRecvError::Empty));
            N
        });
        assert_eq!(tokio_rt.block_on(task).unwrap(), N);
        rt.block_on(csp_side).unwrap();
    });
}
