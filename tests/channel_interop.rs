//! Channels shared with tokio, plain threads and another csp runtime.
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use csp::{ProcessState, RecvError};
use futures::StreamExt;

mod common;

use common::channels::*;
use common::{Counter, Tracked, bounded, runtime, wait_until};

// ---------------------------------------------------------------------------------------
// Across executors and runtimes
// ---------------------------------------------------------------------------------------

#[test]
fn a_channel_between_a_tokio_task_and_a_csp_process() {
    bounded(30, || {
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let rt = runtime(2, "chan-tokio");
        for kind in KINDS {
            // Ping-pong: tokio -> csp and csp -> tokio, one message at a time.
            let (to_csp, from_tokio) = make::<u64>(kind);
            let (to_tokio, from_csp) = make::<u64>(kind);
            let process = rt.spawn(async move {
                let mut sum = 0;
                while let Ok(v) = from_tokio.recv().await {
                    sum += v;
                    to_tokio.send(v * 2).await.unwrap();
                }
                sum
            });
            let task = tokio_rt.spawn(async move {
                let mut back = 0;
                for v in 0..300 {
                    to_csp.send(v).await.unwrap();
                    back += from_csp.recv().await.unwrap();
                }
                drop(to_csp);
                assert_eq!(from_csp.recv().await, Err(RecvError));
                back
            });
            assert_eq!(tokio_rt.block_on(task).unwrap(), 2 * 44850, "{kind:?}");
            assert_eq!(rt.block_on(process).unwrap(), 44850, "{kind:?}");

            // Streams in both directions at once, with drop-counted values.
            let drops = Counter::new();
            let (to_csp, from_tokio) = make::<Tracked>(kind);
            let (to_tokio, mut from_csp) = make::<Tracked>(kind);
            let d = drops.clone();
            let process = rt.spawn(async move {
                let sender = csp::spawn(async move {
                    for v in 0..500 {
                        to_tokio.send(Tracked::new(v, &d)).await.unwrap();
                    }
                });
                let mut n = 0;
                while let Ok(t) = from_tokio.recv().await {
                    assert_eq!(t.value, n);
                    n += 1;
                }
                sender.await.unwrap();
                n
            });
            let d = drops.clone();
            let task = tokio_rt.spawn(async move {
                let sender = tokio::spawn(async move {
                    for v in 0..500 {
                        to_csp.send(Tracked::new(v, &d)).await.unwrap();
                    }
                });
                let mut n = 0;
                while let Some(t) = from_csp.next().await {
                    assert_eq!(t.value, n);
                    n += 1;
                }
                sender.await.unwrap();
                n
            });
            assert_eq!(tokio_rt.block_on(task).unwrap(), 500, "{kind:?}");
            assert_eq!(rt.block_on(process).unwrap(), 500, "{kind:?}");
            assert_eq!(drops.get(), 1000, "{kind:?}");
        }
    });
}

/// Processes of two csp runtimes talk over channels; each keeps running on its own
/// runtime's threads when woken by the other's.
#[test]
fn a_channel_between_two_csp_runtimes() {
    bounded(30, || {
        let rt_a = runtime(2, "chan-rt-a");
        let rt_b = runtime(2, "chan-rt-b");
        let on = |prefix: &'static str| {
            move || {
                let name = common::thread_name();
                assert!(name.starts_with(prefix), "ran on {name}, not {prefix}*");
            }
        };
        for kind in KINDS {
            let (ping_tx, ping_rx) = make::<u64>(kind);
            let (pong_tx, pong_rx) = make::<u64>(kind);
            let check_a = on("chan-rt-a");
            let a = rt_a.spawn(async move {
                for v in 0..300 {
                    ping_tx.send(v).await.unwrap();
                    check_a();
                    assert_eq!(pong_rx.recv().await, Ok(v + 1));
                    check_a();
                }
            });
            let check_b = on("chan-rt-b");
            let b = rt_b.spawn(async move {
                let mut n = 0;
                while let Ok(v) = ping_rx.recv().await {
                    check_b();
                    pong_tx.send(v + 1).await.unwrap();
                    check_b();
                    n += 1;
                }
                n
            });
            rt_a.block_on(a).unwrap();
            assert_eq!(rt_b.block_on(b).unwrap(), 300, "{kind:?}");
        }
    });
}

/// A process polled again while still blocked (here by `join!`, once its first recv
/// completed) still reports what it waits on.
#[test]
fn waiting_on_survives_a_poll_that_leaves_the_process_blocked() {
    bounded(20, || {
        let rt = runtime(2, "repoll");
        let (tx1, rx1) = csp::channel::<u8>();
        let (tx2, rx2) = csp::channel::<u8>();
        let second = channel_id(&rx2);
        let handle = rt.spawn(async move {
            let (a, b) = futures::join!(rx1.recv(), rx2.recv());
            (a.unwrap(), b.unwrap())
        });
        let id = handle.id();
        let waits_on = |expected: &str| {
            rt.processes()
                .iter()
                .any(|p| p.id == id && p.waiting_on.as_deref() == Some(expected))
        };
        wait_until(10, "the process blocks on both channels", || {
            rt.processes()
                .iter()
                .any(|p| p.id == id && p.state == ProcessState::Sleeping && p.waiting_on.is_some())
        });
        tx1.send_blocking(1).unwrap();
        let expected = format!("recv on channel #{second}");
        wait_until(10, "the re-polled process still reports its wait", || {
            waits_on(&expected)
        });
        tx2.send_blocking(2).unwrap();
        assert_eq!(rt.block_on(handle).unwrap(), (1, 2));
    });
}
