//! Channels from the outside: API.md's "Channels" semantics (rendezvous, bounded,
//! unbounded; FIFO; `len` and friends; close).
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use csp::{Receiver, RecvError, SendError, Sender, TryRecvError, TrySendError};
use futures::FutureExt;
use futures::future::FusedFuture;
use std::fmt::Debug;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Poll, Waker};
use std::time::Duration;

mod common;

use common::channels::*;
use common::{Counter, CountingWaker, Tracked, bounded, runtime, wait_until};
use common::{poll_noop, poll_with};

// ---------------------------------------------------------------------------------------
// Semantics
// ---------------------------------------------------------------------------------------

#[test]
fn rendezvous_send_completes_only_after_a_receiver_took_the_value() {
    bounded(20, || {
        // By hand: the send stays pending (and is not woken) until a receiver takes.
        let (tx, rx) = csp::channel::<u32>();
        let (probe, waker) = CountingWaker::new();
        let mut send = pin!(tx.send(7));
        assert!(poll_with(send.as_mut(), &waker).is_pending());
        assert!(poll_with(send.as_mut(), &waker).is_pending());
        assert_eq!(tx.len(), 0, "a rendezvous channel buffers nothing");
        assert_eq!(probe.wakes(), 0);
        assert_eq!(
            rx.try_recv(),
            Ok(7),
            "try_recv takes a waiting sender's value"
        );
        assert!(probe.wakes() >= 1, "the receiver wakes the sender");
        assert_eq!(poll_with(send.as_mut(), &waker), Poll::Ready(Ok(())));
        assert!(send.is_terminated());
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));

        // Processes: each send completes only after the receiver took its value.
        let rt = runtime(2, "chan-rdv");
        let (tx, rx) = csp::channel::<usize>();
        let completed = Arc::new(AtomicUsize::new(0));
        let seen = completed.clone();
        let sender = rt.spawn(async move {
            for i in 0..3 {
                tx.send(i).await.unwrap();
                seen.store(i + 1, Ordering::SeqCst);
            }
        });
        for i in 0..3 {
            wait_sleeping_on(&rt, sender.id(), "send on channel #");
            // Give a wrongly completing send every chance to show.
            std::thread::sleep(Duration::from_millis(10));
            assert_eq!(
                completed.load(Ordering::SeqCst),
                i,
                "send #{i} completed before anyone received its value"
            );
            assert_eq!(rx.recv_blocking(), Ok(i));
            wait_until(10, "the sender's send completes", || {
                completed.load(Ordering::SeqCst) == i + 1
            });
        }
        rt.block_on(sender).unwrap();
    });
}

#[test]
fn rendezvous_try_send_succeeds_only_with_a_waiting_receiver() {
    bounded(20, || {
        let (tx, rx) = csp::channel::<u32>();
        let err = tx.try_send(1).unwrap_err();
        assert!(err.is_full() && !err.is_closed());
        assert_eq!(err, TrySendError::Full(1));
        assert_eq!(err.into_inner(), 1);

        // A waiting sender is not a receiver.
        let mut pending_send = pin!(tx.send(2));
        assert!(poll_noop(pending_send.as_mut()).is_pending());
        assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)));
        assert_eq!(rx.try_recv(), Ok(2));
        assert_eq!(poll_noop(pending_send.as_mut()), Poll::Ready(Ok(())));

        // A receiver that waits (a recv future polled once).
        let mut recv = pin!(rx.recv());
        assert!(poll_noop(recv.as_mut()).is_pending());
        assert_eq!(tx.try_send(4), Ok(()));
        assert_eq!(
            tx.try_send(5),
            Err(TrySendError::Full(5)),
            "only one waited"
        );
        assert_eq!(poll_noop(recv.as_mut()), Poll::Ready(Ok(4)));
        assert_eq!(tx.try_send(6), Err(TrySendError::Full(6)), "it completed");

        // A recv future dropped while waiting no longer counts as a receiver.
        {
            let mut gone = pin!(rx.recv());
            assert!(poll_noop(gone.as_mut()).is_pending());
        }
        assert_eq!(tx.try_send(7), Err(TrySendError::Full(7)));

        // A process blocked in recv.
        let rt = runtime(2, "chan-trysend");
        let rx2 = rx.clone();
        let receiver = rt.spawn(async move { rx2.recv().await });
        wait_sleeping_on(&rt, receiver.id(), "recv on channel #");
        assert_eq!(tx.try_send(8), Ok(()));
        assert_eq!(rt.block_on(receiver).unwrap(), Ok(8));

        rx.close();
        assert_eq!(tx.try_send(9), Err(TrySendError::Closed(9)));
        assert!(tx.try_send(9).unwrap_err().is_closed());
    });
}

#[test]
fn bounded_send_completes_once_the_value_is_buffered() {
    bounded(20, || {
        for cap in [1usize, 3, 16] {
            let (tx, rx) = csp::bounded::<usize>(cap);
            for i in 0..cap {
                assert_eq!(tx.len(), i);
                assert!(!tx.is_full());
                assert_eq!(
                    tx.send(i).now_or_never(),
                    Some(Ok(())),
                    "cap {cap}: send {i}"
                );
            }
            assert_eq!(rx.len(), cap);
            assert!(rx.is_full() && tx.is_full());
            assert_eq!(tx.try_send(cap), Err(TrySendError::Full(cap)));

            let (probe, waker) = CountingWaker::new();
            let mut send = pin!(tx.send(cap));
            assert!(poll_with(send.as_mut(), &waker).is_pending());
            assert_eq!(probe.wakes(), 0);
            assert_eq!(rx.try_recv(), Ok(0));
            assert!(probe.wakes() >= 1, "a freed slot wakes the waiting sender");
            assert_eq!(
                rx.len(),
                cap,
                "the waiting sender's value moved into the buffer"
            );
            assert_eq!(poll_with(send.as_mut(), &waker), Poll::Ready(Ok(())));
            for i in 1..=cap {
                assert_eq!(rx.try_recv(), Ok(i), "cap {cap}: FIFO");
            }
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        }

        // A process sending more than fits blocks once the buffer is full.
        let rt = runtime(2, "chan-bounded");
        let (tx, rx) = csp::bounded::<u32>(4);
        let sender = rt.spawn(async move {
            for i in 0..10 {
                tx.send(i).await.unwrap();
            }
        });
        wait_sleeping_on(&rt, sender.id(), "send on channel #");
        assert_eq!(rx.len(), 4);
        let all: Vec<u32> = rt.block_on(async {
            let mut all = Vec::new();
            while let Ok(v) = rx.recv().await {
                all.push(v);
            }
            all
        });
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        rt.block_on(sender).unwrap();
    });
}

/// Several senders, one or two receivers: each sender's values arrive in order.
#[test]
fn order_is_fifo_per_sender() {
    bounded(30, || {
        const SENDERS: usize = 4;
        const PER: usize = 500;
        let rt = runtime(2, "chan-fifo");
        for kind in KINDS {
            for receivers in [1usize, 2] {
                let (tx, rx) = make::<(usize, usize)>(kind);
                let senders: Vec<_> = (0..SENDERS)
                    .map(|s| {
                        let tx = tx.clone();
                        rt.spawn(async move {
                            for i in 0..PER {
                                tx.send((s, i)).await.unwrap();
                                if i % 7 == s {
                                    csp::yield_now().await;
                                }
                            }
                        })
                    })
                    .collect();
                drop(tx);
                let receiving: Vec<_> = (0..receivers)
                    .map(|_| {
                        let rx = rx.clone();
                        rt.spawn(async move {
                            let mut got = Vec::new();
                            while let Ok(v) = rx.recv().await {
                                got.push(v);
                            }
                            got
                        })
                    })
                    .collect();
                drop(rx);
                let mut counts = [0usize; SENDERS];
                for r in receiving {
                    let got = rt.block_on(r).unwrap();
                    let mut last = [None::<usize>; SENDERS];
                    for (s, i) in got {
                        assert!(
                            last[s].is_none_or(|l| l < i),
                            "{kind:?}, {receivers} receivers: sender {s}'s {i} after {:?}",
                            last[s]
                        );
                        last[s] = Some(i);
                        counts[s] += 1;
                    }
                }
                assert_eq!(counts, [PER; SENDERS], "{kind:?}");
                for s in senders {
                    rt.block_on(s).unwrap();
                }
            }
        }
    });
}

#[test]
fn len_is_empty_is_full_and_capacity_of_each_kind() {
    bounded(20, || {
        // Rendezvous: capacity 0, always full, never holds a value, even with a sender
        // waiting.
        let (tx, rx) = csp::channel::<u8>();
        assert_eq!((tx.capacity(), rx.capacity()), (Some(0), Some(0)));
        assert!(tx.is_full() && rx.is_full());
        assert!(tx.is_empty() && rx.is_empty());
        let mut send = pin!(tx.send(1));
        assert!(poll_noop(send.as_mut()).is_pending());
        assert_eq!((tx.len(), rx.len()), (0, 0));
        assert!(rx.is_empty());
        assert_eq!(
            csp::bounded::<u8>(0).0.capacity(),
            Some(0),
            "bounded(0) == channel()"
        );
        assert!(csp::bounded::<u8>(0).0.is_full());

        // Bounded.
        let (tx, rx) = csp::bounded::<u8>(3);
        assert_eq!((tx.capacity(), rx.capacity()), (Some(3), Some(3)));
        for n in 0..3 {
            assert_eq!((tx.len(), rx.len()), (n, n));
            assert_eq!(tx.is_empty(), n == 0);
            assert!(!tx.is_full() && !rx.is_full());
            tx.try_send(n as u8).unwrap();
        }
        assert_eq!(rx.len(), 3);
        assert!(tx.is_full() && rx.is_full() && !rx.is_empty());
        rx.try_recv().unwrap();
        assert!(!rx.is_full());
        assert_eq!(tx.len(), 2);
        // Closing keeps the values and their count.
        tx.close();
        assert_eq!(rx.len(), 2);

        // Unbounded: no capacity, never full.
        let (tx, rx) = csp::unbounded::<u8>();
        assert_eq!((tx.capacity(), rx.capacity()), (None, None));
        assert!(tx.is_empty() && !tx.is_full());
        for n in 0..1000 {
            tx.try_send((n % 256) as u8).unwrap();
        }
        assert_eq!((tx.len(), rx.len()), (1000, 1000));
        assert!(!tx.is_full() && !rx.is_empty());
        while rx.try_recv().is_ok() {}
        assert!(rx.is_empty());
    });
}

#[test]
fn close_returns_true_exactly_once() {
    bounded(30, || {
        for kind in KINDS {
            let (tx, rx) = make::<u8>(kind);
            assert!(!tx.is_closed() && !rx.is_closed());
            assert!(tx.close(), "{kind:?}");
            assert!(tx.is_closed() && rx.is_closed());
            assert!(!tx.close() && !rx.close() && !tx.clone().close());

            let (tx, rx) = make::<u8>(kind);
            assert!(rx.close());
            assert!(!tx.close());

            // Closed by dropping the senders: close() then reports it was already closed.
            let (tx, rx) = make::<u8>(kind);
            drop(tx);
            assert!(rx.is_closed());
            assert!(!rx.close());
        }
        // Racing closes from many threads: exactly one wins, every time.
        for _ in 0..200 {
            let (tx, rx) = csp::bounded::<u8>(1);
            let barrier = Barrier::new(6);
            let wins = AtomicUsize::new(0);
            std::thread::scope(|s| {
                for t in 0..6 {
                    let (tx, rx, barrier, wins) = (&tx, &rx, &barrier, &wins);
                    s.spawn(move || {
                        barrier.wait();
                        let won = if t % 2 == 0 { tx.close() } else { rx.close() };
                        if won {
                            wins.fetch_add(1, Ordering::SeqCst);
                        }
                    });
                }
            });
            assert_eq!(wins.load(Ordering::SeqCst), 1);
        }
    });
}

#[test]
fn after_close_buffered_values_are_received_then_recv_fails() {
    bounded(20, || {
        let drops = Counter::new();
        for kind in [Kind::Bounded(4), Kind::Unbounded] {
            let before = drops.get();
            let (tx, rx) = make::<Tracked>(kind);
            for v in 0..3 {
                tx.try_send(Tracked::new(v, &drops)).unwrap();
            }
            assert!(tx.close());

            // Sends fail at once, with the value back.
            match tx.try_send(Tracked::new(10, &drops)) {
                Err(TrySendError::Closed(v)) => assert_eq!(v.value, 10),
                other => panic!("{kind:?}: try_send after close: {other:?}"),
            }
            let mut send = pin!(tx.send(Tracked::new(11, &drops)));
            match poll_noop(send.as_mut()) {
                Poll::Ready(Err(SendError(v))) => assert_eq!(v.value, 11),
                other => panic!("{kind:?}: send after close: {other:?}"),
            }
            assert_eq!(
                drops.get(),
                before + 2,
                "the refused values were handed back"
            );

            assert_eq!(rx.len(), 3);
            assert_eq!(rx.try_recv().map(|v| v.value), Ok(0));
            assert_eq!(rx.recv_blocking().map(|v| v.value), Ok(1));
            assert_eq!(
                futures::executor::block_on(rx.recv()).map(|v| v.value),
                Ok(2)
            );
            assert_eq!(
                futures::executor::block_on(rx.recv()).unwrap_err(),
                RecvError
            );
            assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Closed);
            assert_eq!(rx.recv_blocking().unwrap_err(), RecvError);
            assert_eq!(drops.get(), before + 5);
        }
        // Rendezvous: nothing buffered; send fails at once.
        let (tx, rx) = csp::channel::<Tracked>();
        rx.close();
        let err = futures::executor::block_on(tx.send(Tracked::new(1, &drops))).unwrap_err();
        assert_eq!(err.into_inner().value, 1);
        assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Closed);
    });
}

#[test]
fn a_send_waiting_at_close_fails_even_if_space_frees_up_afterwards() {
    bounded(20, || {
        let drops = Counter::new();
        // Bounded(2), full, with two waiting senders.
        let (tx, rx) = csp::bounded::<Tracked>(2);
        tx.try_send(Tracked::new(0, &drops)).unwrap();
        tx.try_send(Tracked::new(1, &drops)).unwrap();
        let (probe, waker) = CountingWaker::new();
        let mut a = pin!(tx.send(Tracked::new(2, &drops)));
        let mut b = pin!(tx.send(Tracked::new(3, &drops)));
        assert!(poll_with(a.as_mut(), &waker).is_pending());
        assert!(poll_with(b.as_mut(), &waker).is_pending());
        assert!(rx.close());
        assert_eq!(probe.wakes(), 2, "the close wakes both waiting senders");
        // Space frees up before the senders look again.
        assert_eq!(rx.try_recv().map(|v| v.value), Ok(0));
        assert_eq!(rx.try_recv().map(|v| v.value), Ok(1));
        assert_eq!(
            rx.len(),
            0,
            "no waiting sender's value moved into the buffer"
        );
        match poll_noop(a.as_mut()) {
            Poll::Ready(Err(SendError(v))) => assert_eq!(v.value, 2),
            other => panic!("send a: {other:?}"),
        }
        match poll_noop(b.as_mut()) {
            Poll::Ready(Err(SendError(v))) => assert_eq!(v.value, 3),
            other => panic!("send b: {other:?}"),
        }
        assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Closed);
        assert_eq!(drops.get(), 4);

        // Rendezvous: a receiver arriving after the close does not take the value.
        let (tx, rx) = csp::channel::<Tracked>();
        let mut send = pin!(tx.send(Tracked::new(5, &drops)));
        assert!(poll_noop(send.as_mut()).is_pending());
        tx.close();
        assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Closed);
        match poll_noop(send.as_mut()) {
            Poll::Ready(Err(SendError(v))) => assert_eq!(v.value, 5),
            other => panic!("rendezvous send: {other:?}"),
        }

        // A process blocked in send; a receiver drains the buffer right after the close.
        let rt = runtime(2, "chan-close-send");
        let (tx, rx) = csp::bounded::<Tracked>(1);
        tx.try_send(Tracked::new(6, &drops)).unwrap();
        let d = drops.clone();
        let sender = rt.spawn(async move {
            tx.send(Tracked::new(7, &d))
                .await
                .map_err(|SendError(v)| v.value)
        });
        wait_sleeping_on(&rt, sender.id(), "send on channel #");
        rx.close();
        assert_eq!(rx.recv_blocking().map(|v| v.value), Ok(6));
        assert_eq!(rt.block_on(sender).unwrap(), Err(7));
        assert_eq!(rx.recv_blocking().unwrap_err(), RecvError);
        assert_eq!(drops.get(), 7);
    });
}

/// A close racing a receive that frees space for a waiting sender: either the sender's
/// value got into the buffer before the close (and is then received) or the send fails
/// with it; never lost, never both.
#[test]
fn close_racing_a_receive_never_loses_the_waiting_senders_value() {
    bounded(30, || {
        let drops = Counter::new();
        let mut outcomes = [0usize; 2];
        for _ in 0..300 {
            let before = drops.get();
            let (tx, rx) = csp::bounded::<Tracked>(1);
            tx.try_send(Tracked::new(0, &drops)).unwrap();
            let mut send = pin!(tx.send(Tracked::new(1, &drops)));
            assert!(poll_noop(send.as_mut()).is_pending());
            let barrier = Barrier::new(2);
            let first = std::thread::scope(|s| {
                s.spawn(|| {
                    barrier.wait();
                    rx.close();
                });
                s.spawn(|| {
                    barrier.wait();
                    rx.try_recv().map(|v| v.value)
                })
                .join()
                .unwrap()
            });
            assert_eq!(first, Ok(0), "a buffered value is received, closed or not");
            match poll_noop(send.as_mut()) {
                Poll::Ready(Ok(())) => {
                    outcomes[0] += 1;
                    assert_eq!(
                        rx.try_recv().map(|v| v.value),
                        Ok(1),
                        "sent Ok, so received"
                    );
                }
                Poll::Ready(Err(SendError(v))) => {
                    outcomes[1] += 1;
                    assert_eq!(v.value, 1);
                }
                Poll::Pending => panic!("a send is still pending on a closed channel"),
            }
            assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Closed);
            assert_eq!(drops.get(), before + 2);
        }
        eprintln!(
            "close vs recv: {} sent, {} refused",
            outcomes[0], outcomes[1]
        );
    });
}

#[test]
fn dropping_every_sender_closes_the_channel() {
    bounded(20, || {
        let rt = runtime(2, "chan-drop-tx");
        for kind in KINDS {
            let (tx, rx) = make::<u32>(kind);
            let tx2 = tx.clone();
            let tx3 = tx2.clone();
            assert_eq!(rx.sender_count(), 3);
            let rx2 = rx.clone();
            let receiver = rt.spawn(async move {
                let mut got = Vec::new();
                while let Ok(v) = rx2.recv().await {
                    got.push(v);
                }
                got
            });
            rt.block_on(async {
                tx.send(1).await.unwrap();
                drop(tx);
                tx2.send(2).await.unwrap();
                drop(tx2);
            });
            assert!(!rx.is_closed(), "{kind:?}: one sender is left");
            assert_eq!(rx.sender_count(), 1);
            wait_sleeping_on(&rt, receiver.id(), "recv on channel #");
            drop(tx3);
            assert!(rx.is_closed());
            assert_eq!(rx.sender_count(), 0);
            assert_eq!(rt.block_on(receiver).unwrap(), [1, 2], "{kind:?}");
            assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
        }
        // Buffered values outlive the senders.
        let (tx, rx) = csp::bounded::<u32>(2);
        tx.try_send(1).unwrap();
        drop(tx);
        assert_eq!(rx.recv_blocking(), Ok(1));
        assert_eq!(rx.recv_blocking(), Err(RecvError));
    });
}

#[test]
fn dropping_every_receiver_closes_the_channel_and_drops_what_it_held() {
    bounded(20, || {
        let drops = Counter::new();
        let (tx, rx) = csp::bounded::<Tracked>(4);
        for v in 0..4 {
            tx.try_send(Tracked::new(v, &drops)).unwrap();
        }
        let rx2 = rx.clone();
        assert_eq!(tx.receiver_count(), 2);
        drop(rx);
        assert!(!tx.is_closed());
        assert_eq!(drops.get(), 0, "a receiver is left: nothing dropped");
        drop(rx2);
        assert!(tx.is_closed());
        assert_eq!(tx.receiver_count(), 0);
        assert_eq!(
            drops.get(),
            4,
            "the last receiver drops the buffered values"
        );
        match tx.try_send(Tracked::new(9, &drops)) {
            Err(TrySendError::Closed(v)) => assert_eq!(v.value, 9),
            other => panic!("{other:?}"),
        }
        assert!(
            tx.send(Tracked::new(10, &drops))
                .now_or_never()
                .unwrap()
                .is_err()
        );
        assert_eq!(drops.get(), 6);

        // A sender waiting on a full channel gets its value back.
        let (tx, rx) = csp::bounded::<Tracked>(1);
        tx.try_send(Tracked::new(0, &drops)).unwrap();
        let mut send = pin!(tx.send(Tracked::new(1, &drops)));
        assert!(poll_noop(send.as_mut()).is_pending());
        drop(rx);
        assert_eq!(drops.get(), 7);
        match poll_noop(send.as_mut()) {
            Poll::Ready(Err(SendError(v))) => assert_eq!(v.value, 1),
            other => panic!("{other:?}"),
        }
        assert_eq!(drops.get(), 8);

        // A process blocked in a rendezvous send, the receiver dropped on another thread.
        let rt = runtime(2, "chan-drop-rx");
        let (tx, rx) = csp::channel::<Tracked>();
        let d = drops.clone();
        let sender = rt.spawn(async move {
            tx.send(Tracked::new(2, &d))
                .await
                .map_err(|SendError(v)| v.value)
        });
        wait_sleeping_on(&rt, sender.id(), "send on channel #");
        std::thread::spawn(move || drop(rx)).join().unwrap();
        assert_eq!(rt.block_on(sender).unwrap(), Err(2));
        assert_eq!(drops.get(), 9);
    });
}

#[test]
fn closed_future_completes_when_the_channel_closes() {
    bounded(20, || {
        // By hand: pending, then woken by the close.
        let (tx, rx) = csp::bounded::<u8>(1);
        let (probe, waker) = CountingWaker::new();
        let mut closed = pin!(tx.closed());
        assert!(poll_with(closed.as_mut(), &waker).is_pending());
        assert!(!closed.is_terminated());
        tx.try_send(1).unwrap();
        assert!(rx.try_recv().is_ok());
        assert_eq!(probe.wakes(), 0, "traffic does not wake a closed() future");
        assert!(rx.close());
        assert_eq!(probe.wakes(), 1);
        assert_eq!(poll_with(closed.as_mut(), &waker), Poll::Ready(()));
        assert!(closed.is_terminated());
        // Already closed: ready at once.
        assert_eq!(tx.closed().now_or_never(), Some(()));

        // A dropped closed() future does not get in the way.
        let (tx, rx) = csp::channel::<u8>();
        {
            let mut gone = pin!(tx.closed());
            assert!(poll_noop(gone.as_mut()).is_pending());
        }
        drop(rx);
        assert_eq!(tx.closed().now_or_never(), Some(()));

        // Processes awaiting closed(), woken by the last receiver dropped on a thread.
        let rt = runtime(2, "chan-closed");
        let (tx, rx) = csp::channel::<u8>();
        let rx2 = rx.clone();
        let watchers: Vec<_> = (0..8)
            .map(|_| {
                let tx = tx.clone();
                rt.spawn(async move {
                    tx.closed().await;
                    tx.is_closed()
                })
            })
            .collect();
        let ids: Vec<u64> = watchers.iter().map(|w| w.id()).collect();
        wait_all_sleeping_on(&rt, &ids, "close of channel #");
        drop(rx);
        std::thread::sleep(Duration::from_millis(10));
        assert!(
            watchers.iter().all(|w| !w.is_finished()),
            "a receiver is left"
        );
        std::thread::spawn(move || drop(rx2)).join().unwrap();
        for w in watchers {
            assert!(rt.block_on(w).unwrap());
        }
        // close() from a sender clone.
        let (tx, _rx) = csp::unbounded::<u8>();
        let tx2 = tx.clone();
        let watcher = rt.spawn(async move { tx2.closed().await });
        wait_sleeping_on(&rt, watcher.id(), "close of channel #");
        assert!(tx.close());
        rt.block_on(watcher).unwrap();
    });
}

#[derive(Debug, Clone, Copy)]
enum CloseBy {
    SenderClose,
    ReceiverClose,
    DroppingTheOtherEnds,
}

/// Many processes blocked in send and in recv, plus closed() watchers: one close wakes
/// them all, and every sender gets its own value back.
#[test]
fn close_wakes_every_blocked_peer() {
    bounded(30, || {
        const N: u64 = 16;
        let rt = runtime(2, "chan-close-all");
        for how in [
            CloseBy::SenderClose,
            CloseBy::ReceiverClose,
            CloseBy::DroppingTheOtherEnds,
        ] {
            let drops = Counter::new();
            // Senders blocked on a full bounded channel and on a rendezvous one.
            let (full_tx, full_rx) = csp::bounded::<Tracked>(1);
            full_tx.try_send(Tracked::new(1000, &drops)).unwrap();
            let (rdv_tx, rdv_rx) = csp::channel::<Tracked>();
            // Receivers blocked on an empty channel.
            let (empty_tx, empty_rx) = csp::bounded::<Tracked>(4);

            let mut senders = Vec::new();
            for i in 0..2 * N {
                let tx = if i % 2 == 0 {
                    full_tx.clone()
                } else {
                    rdv_tx.clone()
                };
                let d = drops.clone();
                senders.push(rt.spawn(async move {
                    tx.send(Tracked::new(i, &d))
                        .await
                        .map_err(|SendError(v)| v.value)
                }));
            }
            let receivers: Vec<_> = (0..N)
                .map(|_| {
                    let rx = empty_rx.clone();
                    rt.spawn(async move { rx.recv().await.map(|v| v.value) })
                })
                .collect();
            let watchers: Vec<_> = (0..4)
                .map(|_| {
                    let tx = full_tx.clone();
                    rt.spawn(async move { tx.closed().await })
                })
                .collect();
            wait_all_sleeping_on(&rt, &handle_ids(&senders), "send on channel #");
            wait_all_sleeping_on(&rt, &handle_ids(&receivers), "recv on channel #");
            wait_all_sleeping_on(&rt, &handle_ids(&watchers), "close of channel #");

            let mut leftover = None;
            match how {
                CloseBy::SenderClose => {
                    assert!(full_tx.close() && rdv_tx.close() && empty_tx.close());
                    leftover = Some(full_rx);
                }
                CloseBy::ReceiverClose => {
                    assert!(full_rx.close() && rdv_rx.close() && empty_rx.close());
                    leftover = Some(full_rx);
                }
                CloseBy::DroppingTheOtherEnds => {
                    drop(full_rx);
                    drop(rdv_rx);
                    drop(empty_tx);
                    assert!(full_tx.is_closed() && rdv_tx.is_closed() && empty_rx.is_closed());
                }
            }
            for (i, s) in senders.into_iter().enumerate() {
                assert_eq!(rt.block_on(s).unwrap(), Err(i as u64), "{how:?}");
            }
            for r in receivers {
                assert_eq!(rt.block_on(r).unwrap(), Err(RecvError), "{how:?}");
            }
            for w in watchers {
                rt.block_on(w).unwrap();
            }
            if let Some(rx) = leftover {
                assert_eq!(rx.try_recv().map(|v| v.value), Ok(1000), "{how:?}");
                assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Closed);
            }
            assert_eq!(drops.get(), 2 * N as usize + 1, "{how:?}");
        }
    });
}

#[test]
fn sender_and_receiver_counts() {
    bounded(20, || {
        for kind in KINDS {
            let (tx, rx) = make::<u8>(kind);
            assert_eq!((tx.sender_count(), tx.receiver_count()), (1, 1));
            let txs: Vec<_> = (0..5).map(|_| tx.clone()).collect();
            let rxs: Vec<_> = (0..3).map(|_| rx.clone()).collect();
            assert_eq!((rx.sender_count(), rx.receiver_count()), (6, 4));
            assert_eq!((txs[2].sender_count(), rxs[1].receiver_count()), (6, 4));
            // Clones made on other threads count too.
            let more: Vec<Sender<u8>> = std::thread::scope(|s| {
                (0..4)
                    .map(|_| s.spawn(|| tx.clone()))
                    .collect::<Vec<_>>()
                    .into_iter()
                    .map(|h| h.join().unwrap())
                    .collect()
            });
            assert_eq!(tx.sender_count(), 10);
            drop(more);
            drop(txs);
            assert_eq!(tx.sender_count(), 1);
            drop(rxs);
            assert_eq!(tx.receiver_count(), 1);
            // Closing does not change the counts.
            tx.close();
            assert_eq!((tx.sender_count(), rx.receiver_count()), (1, 1));
            drop(rx);
            assert_eq!(tx.receiver_count(), 0);
        }
    });
}

#[test]
fn same_channel_compares_channels_not_ends() {
    let (tx, rx) = csp::channel::<u8>();
    let (tx2, rx2) = csp::channel::<u8>();
    let (btx, brx) = csp::bounded::<u8>(1);
    assert!(tx.same_channel(&rx) && rx.same_channel(&tx));
    assert!(tx.same_channel(&tx) && rx.same_channel(&rx));
    assert!(tx.same_channel(&tx.clone()) && rx.clone().same_channel(&tx.clone()));
    assert!(!tx.same_channel(&tx2) && !tx.same_channel(&rx2) && !rx.same_channel(&rx2));
    assert!(!tx.same_channel(&btx) && !brx.same_channel(&rx) && btx.same_channel(&brx));
    // Moving an end through a channel keeps its identity.
    let (ctx, crx) = csp::unbounded::<Receiver<u8>>();
    ctx.try_send(rx.clone()).unwrap();
    assert!(crx.try_recv().unwrap().same_channel(&tx));
}

/// A waker that uses the channel when woken (and drops ends it holds when dropped): the
/// channel must wake and drop wakers with its lock released.
struct Reentrant {
    tx: Mutex<Option<Sender<u32>>>,
    rx: Mutex<Option<Receiver<u32>>>,
    wakes: AtomicUsize,
    try_send: Mutex<Vec<Result<(), TrySendError<u32>>>>,
}

impl Reentrant {
    fn new(tx: Option<Sender<u32>>, rx: Option<Receiver<u32>>) -> Arc<Reentrant> {
        Arc::new(Reentrant {
            tx: Mutex::new(tx),
            rx: Mutex::new(rx),
            wakes: AtomicUsize::new(0),
            try_send: Mutex::new(Vec::new()),
        })
    }
}

impl std::task::Wake for Reentrant {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        if let Some(rx) = self.rx.lock().unwrap().take() {
            let _ = (rx.len(), rx.is_full(), rx.is_closed());
        }
        if let Some(tx) = self.tx.lock().unwrap().take() {
            let result = tx.try_send(9);
            self.try_send.lock().unwrap().push(result);
        }
    }
}

#[test]
fn wakers_that_use_the_channel_do_not_deadlock() {
    bounded(20, || {
        // Woken by a hand-over: the waker sends on the same channel.
        let (tx, rx) = csp::channel::<u32>();
        let state = Reentrant::new(Some(tx.clone()), Some(rx.clone()));
        let waker = Waker::from(state.clone());
        let mut recv = pin!(rx.recv());
        assert!(poll_with(recv.as_mut(), &waker).is_pending());
        tx.try_send(1).unwrap();
        assert_eq!(state.wakes.load(Ordering::SeqCst), 1);
        assert_eq!(
            *state.try_send.lock().unwrap(),
            [Err(TrySendError::Full(9))],
            "the woken receiver was already served: nobody waits"
        );
        assert_eq!(poll_with(recv.as_mut(), &waker), Poll::Ready(Ok(1)));

        // Woken by a close: the waker finds the channel closed.
        let (tx, rx) = csp::bounded::<u32>(1);
        tx.try_send(0).unwrap();
        let state = Reentrant::new(Some(tx.clone()), Some(rx.clone()));
        let waker = Waker::from(state.clone());
        let mut send = pin!(tx.send(2));
        assert!(poll_with(send.as_mut(), &waker).is_pending());
        rx.close();
        assert_eq!(
            *state.try_send.lock().unwrap(),
            [Err(TrySendError::Closed(9))]
        );
        assert_eq!(
            poll_with(send.as_mut(), &waker),
            Poll::Ready(Err(SendError(2)))
        );

        // A replaced waker that holds the last Sender: dropping it closes the channel,
        // which wakes the new waker.
        let (tx, rx) = csp::channel::<u32>();
        let old = Waker::from(Reentrant::new(Some(tx), None));
        let (probe, new) = CountingWaker::new();
        let mut recv = pin!(rx.recv());
        assert!(poll_with(recv.as_mut(), &old).is_pending());
        drop(old); // the channel's clone is now the only one
        assert!(!rx.is_closed());
        assert!(poll_with(recv.as_mut(), &new).is_pending());
        assert!(
            rx.is_closed(),
            "the old waker, and its Sender, were dropped"
        );
        assert_eq!(probe.wakes(), 1);
        assert_eq!(poll_with(recv.as_mut(), &new), Poll::Ready(Err(RecvError)));
    });
}

#[test]
fn a_waiting_operation_wakes_only_its_latest_waker() {
    bounded(20, || {
        let (tx, rx) = csp::channel::<u32>();
        let (first, first_waker) = CountingWaker::new();
        let (second, second_waker) = CountingWaker::new();
        let mut send = pin!(tx.send(1));
        assert!(poll_with(send.as_mut(), &first_waker).is_pending());
        assert!(poll_with(send.as_mut(), &second_waker).is_pending());
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!((first.wakes(), second.wakes()), (0, 1));
        assert_eq!(poll_with(send.as_mut(), &second_waker), Poll::Ready(Ok(())));

        let mut recv = pin!(rx.recv());
        assert!(poll_with(recv.as_mut(), &first_waker).is_pending());
        assert!(poll_with(recv.as_mut(), &second_waker).is_pending());
        tx.try_send(2).unwrap();
        assert_eq!((first.wakes(), second.wakes()), (0, 2));
        assert_eq!(poll_with(recv.as_mut(), &first_waker), Poll::Ready(Ok(2)));
    });
}

#[test]
fn a_bounded_channel_of_any_capacity_can_be_made_and_fills_to_it() {
    // "No limit, in effect": the capacity is a bound, not an allocation made up front.
    for cap in [usize::MAX, 1 << 40] {
        let (tx, rx) = csp::bounded::<u64>(cap);
        assert_eq!(tx.capacity(), Some(cap));
        for v in 0..10_000 {
            tx.try_send(v).unwrap();
        }
        assert_eq!(rx.len(), 10_000);
        assert_eq!(rx.try_recv(), Ok(0));
    }
    // A capacity above the room made up front still bounds the channel.
    let (tx, _rx) = csp::bounded::<u8>(3000);
    for v in 0..3000 {
        tx.try_send((v % 256) as u8).unwrap();
    }
    assert!(matches!(tx.try_send(0), Err(TrySendError::Full(0))));
}
