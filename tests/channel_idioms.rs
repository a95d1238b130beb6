//! What Go and crossbeam users expect of channels.
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use csp::{Receiver, RecvError, Sender, TryRecvError};
use futures::StreamExt;
use futures::stream::FusedStream;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

mod common;

use common::channels::*;
use common::poll_noop;
use common::{Counter, CountingWaker, Tracked, bounded, panic_message, runtime, scaled};

// ---------------------------------------------------------------------------------------
// What Go and crossbeam users expect
// ---------------------------------------------------------------------------------------

#[test]
fn many_consumers_share_the_values_each_once() {
    bounded(30, || {
        let total: u64 = scaled(10_000);
        let rt = runtime(2, "chan-sum");
        for kind in KINDS {
            let (tx, rx) = make::<u64>(kind);
            let consumers: Vec<_> = (0..8)
                .map(|_| {
                    let rx = rx.clone();
                    rt.spawn(async move {
                        let (mut sum, mut n) = (0u64, 0u64);
                        while let Ok(v) = rx.recv().await {
                            sum += v;
                            n += 1;
                        }
                        (sum, n)
                    })
                })
                .collect();
            drop(rx);
            // The producer is a plain thread.
            let producer = std::thread::spawn(move || {
                for v in 1..=total {
                    tx.send_blocking(v).unwrap();
                }
            });
            let (mut sum, mut n) = (0, 0);
            for c in consumers {
                let (s, k) = rt.block_on(c).unwrap();
                sum += s;
                n += k;
            }
            producer.join().unwrap();
            assert_eq!((sum, n), (total * (total + 1) / 2, total), "{kind:?}");
        }
    });
}

static ZST_DROPS: AtomicUsize = AtomicUsize::new(0);

/// A zero-sized payload that counts its drops.
struct Zst;

impl Drop for Zst {
    fn drop(&mut self) {
        ZST_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn zero_sized_values_through_every_kind() {
    bounded(20, || {
        let rt = runtime(2, "chan-zst");
        for kind in KINDS {
            let (tx, rx) = make::<()>(kind);
            let producer = rt.spawn(async move {
                for _ in 0..1000 {
                    tx.send(()).await.unwrap();
                }
            });
            let n = rt.block_on(async {
                let mut n = 0;
                while let Ok(()) = rx.recv().await {
                    n += 1;
                }
                n
            });
            assert_eq!(n, 1000, "{kind:?}");
            rt.block_on(producer).unwrap();
        }
        // Buffered ZSTs are counted and dropped one by one.
        let (tx, rx) = csp::unbounded::<Zst>();
        for _ in 0..1000 {
            tx.try_send(Zst).unwrap();
        }
        assert_eq!(rx.len(), 1000);
        for _ in 0..10 {
            rx.try_recv().unwrap();
        }
        assert_eq!(ZST_DROPS.load(Ordering::SeqCst), 10);
        drop(rx);
        assert_eq!(ZST_DROPS.load(Ordering::SeqCst), 1000);
        drop(tx);
        let (tx, rx) = csp::bounded::<Zst>(3);
        for _ in 0..3 {
            tx.try_send(Zst).unwrap();
        }
        assert!(tx.is_full());
        assert!(tx.try_send(Zst).unwrap_err().is_full());
        assert_eq!(ZST_DROPS.load(Ordering::SeqCst), 1001);
        drop((tx, rx));
        assert_eq!(ZST_DROPS.load(Ordering::SeqCst), 1004);
    });
}

/// Request/reply with a reply channel sent along with each request, and a Receiver
/// handed to another process through a channel.
#[test]
fn channels_sent_through_channels() {
    bounded(30, || {
        let rt = runtime(2, "chan-of-chan");
        let (req_tx, req_rx) = csp::channel::<(u64, Sender<u64>)>();
        let server = rt.spawn(async move {
            let mut served = 0;
            while let Ok((n, reply)) = req_rx.recv().await {
                reply.send(n * n).await.unwrap();
                served += 1;
            }
            served
        });
        let clients: Vec<_> = (0..8u64)
            .map(|c| {
                let req_tx = req_tx.clone();
                rt.spawn(async move {
                    for i in 0..50u64 {
                        let (reply_tx, reply_rx) = csp::channel();
                        let n = c * 100 + i;
                        req_tx.send((n, reply_tx)).await.unwrap();
                        assert_eq!(reply_rx.recv().await, Ok(n * n));
                        // The server dropped its reply end: closed.
                        assert_eq!(reply_rx.recv().await, Err(RecvError));
                    }
                })
            })
            .collect();
        drop(req_tx);
        for c in clients {
            rt.block_on(c).unwrap();
        }
        assert_eq!(rt.block_on(server).unwrap(), 400);

        // A Receiver handed over: the process receives on it what we send.
        let (handover_tx, handover_rx) = csp::bounded::<Receiver<u64>>(1);
        let (data_tx, data_rx) = csp::bounded::<u64>(4);
        let taker = rt.spawn(async move {
            let rx = handover_rx.recv().await.unwrap();
            let mut sum = 0;
            while let Ok(v) = rx.recv().await {
                sum += v;
            }
            sum
        });
        rt.block_on(async {
            handover_tx.send(data_rx).await.unwrap();
            for v in 1..=100 {
                data_tx.send(v).await.unwrap();
            }
        });
        drop(data_tx);
        assert_eq!(rt.block_on(taker).unwrap(), 5050);
    });
}

#[test]
fn dropping_a_full_channel_drops_every_value_once() {
    bounded(20, || {
        for cap in [1usize, 4, 64] {
            for receiver_first in [false, true] {
                let drops = Counter::new();
                let (tx, rx) = csp::bounded::<Tracked>(cap);
                // One value in the returned queue, `cap` in the buffer.
                let mut recv = Box::pin(rx.recv());
                assert!(poll_noop(recv.as_mut()).is_pending());
                tx.try_send(Tracked::new(0, &drops)).unwrap();
                for v in 1..=cap as u64 {
                    tx.try_send(Tracked::new(v, &drops)).unwrap();
                }
                drop(recv);
                assert_eq!(rx.len(), cap + 1);
                assert_eq!(drops.get(), 0);
                if receiver_first {
                    drop(rx);
                    assert_eq!(drops.get(), cap + 1, "cap {cap}");
                    drop(tx);
                } else {
                    drop(tx);
                    assert_eq!(drops.get(), 0, "receivable until the receiver goes");
                    drop(rx);
                }
                assert_eq!(
                    drops.get(),
                    cap + 1,
                    "cap {cap}, receiver first {receiver_first}"
                );
            }
        }
        // Unbounded with 1000 values, half received first.
        let drops = Counter::new();
        let (tx, rx) = csp::unbounded::<Tracked>();
        for v in 0..1000 {
            tx.try_send(Tracked::new(v, &drops)).unwrap();
        }
        for v in 0..500 {
            assert_eq!(rx.try_recv().map(|t| t.value), Ok(v));
        }
        assert_eq!(drops.get(), 500);
        drop(tx);
        drop(rx);
        assert_eq!(drops.get(), 1000);
    });
}

#[test]
fn the_stream_ends_when_closed_and_drained() {
    bounded(20, || {
        let rt = runtime(2, "chan-stream");
        for kind in KINDS {
            let (tx, mut rx) = make::<u64>(kind);
            let producer = rt.spawn(async move {
                for v in 0..100 {
                    tx.send(v).await.unwrap();
                }
            });
            let first_two = rt.block_on(async {
                let a = rx.next().await;
                let b = rx.next().await;
                (a, b)
            });
            assert_eq!(first_two, (Some(0), Some(1)));
            assert!(!rx.is_terminated());
            let rest: Vec<u64> = rt.block_on((&mut rx).collect());
            assert_eq!(rest, (2..100).collect::<Vec<_>>(), "{kind:?}");
            assert!(rx.is_terminated());
            assert_eq!(rt.block_on(rx.next()), None, "fused: None again");
            rt.block_on(producer).unwrap();
        }
        // collect() by value, several receivers streaming concurrently.
        let (tx, rx) = csp::bounded::<u64>(4);
        let collectors: Vec<_> = (0..4)
            .map(|_| {
                let rx = rx.clone();
                rt.spawn(async move { rx.collect::<Vec<u64>>().await })
            })
            .collect();
        drop(rx);
        rt.block_on(async {
            for v in 0..1000 {
                tx.send(v).await.unwrap();
            }
        });
        drop(tx);
        let mut all: Vec<u64> = collectors
            .into_iter()
            .flat_map(|c| rt.block_on(c).unwrap())
            .collect();
        all.sort_unstable();
        assert_eq!(all, (0..1000).collect::<Vec<_>>());
        // Closed with values buffered: the stream yields them, then ends.
        let (tx, rx) = csp::unbounded::<u8>();
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        tx.close();
        assert_eq!(futures::executor::block_on(rx.collect::<Vec<_>>()), [1, 2]);
    });
}

#[test]
fn poll_recv_through_poll_fn() {
    bounded(20, || {
        let (tx, mut rx) = csp::unbounded::<u32>();
        let (probe, waker) = CountingWaker::new();
        let mut cx = Context::from_waker(&waker);
        assert!(rx.poll_recv(&mut cx).is_pending());
        assert!(
            rx.poll_recv(&mut cx).is_pending(),
            "polled again while waiting"
        );
        tx.try_send(5).unwrap();
        assert!(probe.wakes() >= 1);
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(Ok(5)));
        tx.try_send(6).unwrap();
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(Ok(6)), "ready at once");

        let rt = runtime(2, "chan-poll-recv");
        for kind in KINDS {
            let (tx, mut rx) = make::<u32>(kind);
            let producer = rt.spawn(async move {
                for v in 0..200 {
                    tx.send(v).await.unwrap();
                }
            });
            let got = rt.block_on(async move {
                let mut got = Vec::new();
                while let Ok(v) = std::future::poll_fn(|cx| rx.poll_recv(cx)).await {
                    got.push(v);
                }
                assert_eq!(
                    std::future::poll_fn(|cx| rx.poll_recv(cx)).await,
                    Err(RecvError)
                );
                got
            });
            assert_eq!(got, (0..200).collect::<Vec<_>>(), "{kind:?}");
            rt.block_on(producer).unwrap();
        }
    });
}

#[test]
fn blocking_calls_between_a_thread_and_a_process() {
    bounded(30, || {
        let rt = runtime(2, "chan-blocking");
        for kind in KINDS {
            let (to_process, from_thread) = make::<u64>(kind);
            let (to_thread, from_process) = make::<u64>(kind);
            let process = rt.spawn(async move {
                let mut n = 0;
                while let Ok(v) = from_thread.recv().await {
                    to_thread.send(v + 1).await.unwrap();
                    n += 1;
                }
                n
            });
            let thread = std::thread::spawn(move || {
                for v in 0..500 {
                    to_process.send_blocking(v).unwrap();
                    assert_eq!(from_process.recv_blocking(), Ok(v + 1));
                }
                drop(to_process);
                assert_eq!(from_process.recv_blocking(), Err(RecvError));
            });
            thread.join().unwrap();
            assert_eq!(rt.block_on(process).unwrap(), 500, "{kind:?}");
        }
        // On the blocking pool they work too.
        let (tx, rx) = csp::channel::<u64>();
        let blocking = rt.handle().spawn_blocking(move || {
            for v in 0..100 {
                tx.send_blocking(v).unwrap();
            }
        });
        let sum = rt.block_on(async move {
            let mut sum = 0;
            while let Ok(v) = rx.recv().await {
                sum += v;
            }
            sum
        });
        assert_eq!(sum, 4950);
        rt.block_on(blocking).unwrap();
    });
}

#[test]
fn blocking_calls_inside_a_process_panic_and_say_to_await() {
    bounded(20, || {
        let rt = runtime(2, "chan-block-panic");
        let (tx, rx) = csp::bounded::<u8>(1);
        let sending = rt.spawn(async move { tx.send_blocking(1) });
        let err = rt.block_on(sending).unwrap_err();
        assert!(err.is_panic(), "{err:?}");
        let msg = panic_message(&*err.into_panic()).expect("a string panic");
        assert!(msg.contains(".await"), "{msg}");
        assert_eq!(
            rx.try_recv(),
            Err(TryRecvError::Closed),
            "nothing was sent, and the sender went with the process"
        );

        let (_tx, rx) = csp::bounded::<u8>(1);
        let receiving = rt.spawn(async move { rx.recv_blocking() });
        let err = rt.block_on(receiving).unwrap_err();
        assert!(err.is_panic());
        let msg = panic_message(&*err.into_panic()).expect("a string panic");
        assert!(msg.contains(".await"), "{msg}");

        // The workers survived.
        assert_eq!(rt.block_on(rt.spawn(async { 7 })).unwrap(), 7);
    });
}

#[test]
fn blocking_calls_inside_block_on_panic_and_say_to_await() {
    bounded(20, || {
        let rt = runtime(2, "chan-block-on-panic");
        let (tx, rx) = csp::bounded::<u8>(1);
        let payload = std::panic::catch_unwind(AssertUnwindSafe(|| {
            rt.block_on(async { rx.recv_blocking() })
        }))
        .expect_err("recv_blocking inside block_on must panic");
        let msg = panic_message(&*payload).expect("a string panic");
        assert!(msg.contains(".await"), "{msg}");

        let payload = std::panic::catch_unwind(AssertUnwindSafe(|| {
            csp::block_on(async { tx.send_blocking(1) })
        }))
        .expect_err("send_blocking inside csp::block_on must panic");
        let msg = panic_message(&*payload).expect("a string panic");
        assert!(msg.contains(".await"), "{msg}");
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "nothing was sent");

        // Both still work outside.
        tx.send_blocking(2).unwrap();
        assert_eq!(rx.recv_blocking(), Ok(2));
        assert_eq!(rt.block_on(async { 3 }), 3);
    });
}
