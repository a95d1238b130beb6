//! Channel futures dropped at every point of their life: API.md's cancellation
//! guarantees (no value lost or duplicated).
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use csp::{Receiver, RecvError, TryRecvError, TrySendError};
use futures::future::FusedFuture;
use futures::{FutureExt, StreamExt};
use std::pin::pin;
use std::task::{Context, Poll};

mod common;

use common::channels::*;
use common::poll_noop;
use common::{Counter, Tracked, bounded, runtime};

// ---------------------------------------------------------------------------------------
// Cancellation
// ---------------------------------------------------------------------------------------

#[test]
fn dropping_a_pending_send_drops_its_value_undelivered() {
    bounded(20, || {
        let drops = Counter::new();
        for kind in [Kind::Rendezvous, Kind::Bounded(1), Kind::Bounded(3)] {
            let before = drops.get();
            let (tx, rx) = make::<Tracked>(kind);
            let cap = match kind {
                Kind::Bounded(n) => n,
                _ => 0,
            };
            for v in 0..cap as u64 {
                tx.try_send(Tracked::new(v, &drops)).unwrap();
            }
            {
                let mut send = pin!(tx.send(Tracked::new(100, &drops)));
                assert!(poll_noop(send.as_mut()).is_pending());
                assert!(poll_noop(send.as_mut()).is_pending());
            }
            assert_eq!(
                drops.get(),
                before + 1,
                "{kind:?}: the value went with the future"
            );
            assert_eq!(rx.len(), cap);
            let mut got = Vec::new();
            while let Ok(v) = rx.try_recv() {
                got.push(v);
            }
            assert_eq!(values(got), (0..cap as u64).collect::<Vec<_>>(), "{kind:?}");
            // The cancelled send left nothing behind: a receiver now waits in vain.
            let mut recv = pin!(rx.recv());
            assert!(poll_noop(recv.as_mut()).is_pending(), "{kind:?}");
            assert_eq!(drops.get(), before + 1 + cap);
        }

        // A process blocked in send, aborted: its value is dropped, never received.
        let rt = runtime(2, "chan-cancel-send");
        let (tx, rx) = csp::channel::<Tracked>();
        let d = drops.clone();
        let before = drops.get();
        let sender = rt.spawn(async move { tx.send(Tracked::new(7, &d)).await.is_ok() });
        wait_sleeping_on(&rt, sender.id(), "send on channel #");
        sender.abort();
        let err = rt.block_on(sender).unwrap_err();
        assert!(err.is_cancelled());
        assert_eq!(drops.get(), before + 1);
        assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Closed);
    });
}

#[test]
fn dropping_a_send_whose_value_was_taken_counts_as_delivered() {
    bounded(20, || {
        let drops = Counter::new();
        // Rendezvous: a receiver took it; the future is dropped without a last poll.
        let (tx, rx) = csp::channel::<Tracked>();
        let mut send = Box::pin(tx.send(Tracked::new(1, &drops)));
        assert!(poll_noop(send.as_mut()).is_pending());
        let got = rx.try_recv().unwrap();
        drop(send);
        assert_eq!(
            drops.get(),
            0,
            "the delivered value is not dropped by the sender"
        );
        assert_eq!(got.value, 1);
        drop(got);
        assert_eq!(drops.get(), 1);

        // Bounded: the waiting value moved into the buffer when space freed.
        let (tx, rx) = csp::bounded::<Tracked>(1);
        tx.try_send(Tracked::new(2, &drops)).unwrap();
        let mut send = Box::pin(tx.send(Tracked::new(3, &drops)));
        assert!(poll_noop(send.as_mut()).is_pending());
        assert_eq!(rx.try_recv().map(|v| v.value), Ok(2));
        drop(send);
        assert_eq!(
            rx.try_recv().map(|v| v.value),
            Ok(3),
            "buffered, so still delivered"
        );
        assert_eq!(drops.get(), 3);

        // Refused by a close, dropped unread: the value is dropped exactly once.
        let (tx, rx) = csp::channel::<Tracked>();
        let mut send = Box::pin(tx.send(Tracked::new(4, &drops)));
        assert!(poll_noop(send.as_mut()).is_pending());
        rx.close();
        assert_eq!(drops.get(), 3);
        drop(send);
        assert_eq!(drops.get(), 4);
    });
}

/// API.md: a receiving future dropped after a sender handed it a value returns that value
/// to the channel ahead of all others (so `len()` may exceed `capacity()`).
#[test]
fn a_value_handed_to_a_dropped_recv_goes_back_ahead_of_all_others() {
    bounded(20, || {
        let drops = Counter::new();
        for kind in [
            Kind::Rendezvous,
            Kind::Bounded(1),
            Kind::Bounded(2),
            Kind::Unbounded,
        ] {
            let before = drops.get();
            let (tx, rx) = make::<Tracked>(kind);
            let mut recv = Box::pin(rx.recv());
            assert!(poll_noop(recv.as_mut()).is_pending());
            // A receiver waits, so even a rendezvous try_send succeeds: it hands over.
            tx.try_send(Tracked::new(0, &drops))
                .unwrap_or_else(|e| panic!("{kind:?}: {e:?}"));
            let cap = match kind {
                Kind::Rendezvous => 0,
                Kind::Bounded(n) => n,
                Kind::Unbounded => 2,
            };
            for v in 1..=cap as u64 {
                tx.try_send(Tracked::new(v, &drops)).unwrap();
            }
            // A sender waits behind them (an unbounded one buffers at once).
            let mut waiting = Box::pin(tx.send(Tracked::new(99, &drops)));
            let first_poll = poll_noop(waiting.as_mut());
            let buffered = if kind == Kind::Unbounded {
                assert_eq!(first_poll.map(|r| r.is_ok()), Poll::Ready(true));
                cap + 1
            } else {
                assert!(first_poll.is_pending(), "{kind:?}");
                cap
            };
            assert_eq!(rx.len(), buffered, "{kind:?}");

            drop(recv); // never polled after the hand-over
            assert_eq!(drops.get(), before, "{kind:?}: nothing dropped");
            assert_eq!(rx.len(), buffered + 1, "{kind:?}: the value is back");
            if kind != Kind::Unbounded {
                assert!(
                    rx.len() > rx.capacity().unwrap(),
                    "len() may exceed capacity()"
                );
                assert!(rx.is_full());
            }
            let mut got = Vec::new();
            while let Ok(v) = rx.try_recv() {
                got.push(v);
            }
            let mut expected: Vec<u64> = (0..=cap as u64).collect();
            expected.push(99);
            assert_eq!(
                values(got),
                expected,
                "{kind:?}: the returned value comes first"
            );
            if !waiting.is_terminated() {
                assert_eq!(
                    poll_noop(waiting.as_mut()).map(|r| r.is_ok()),
                    Poll::Ready(true)
                );
            }
            assert_eq!(drops.get(), before + cap + 2);
        }

        // Two waiting receivers: the value handed to the first goes to the second.
        let (tx, rx) = csp::channel::<Tracked>();
        let mut first = Box::pin(rx.recv());
        let mut second = Box::pin(rx.recv());
        assert!(poll_noop(first.as_mut()).is_pending());
        assert!(poll_noop(second.as_mut()).is_pending());
        tx.try_send(Tracked::new(10, &drops)).unwrap();
        drop(first);
        assert_eq!(rx.len(), 0, "handed straight to the waiting receiver");
        match poll_noop(second.as_mut()) {
            Poll::Ready(Ok(v)) => assert_eq!(v.value, 10),
            other => panic!("{other:?}"),
        }
        // Two values handed to two receivers; the first gives its value back.
        let mut first = Box::pin(rx.recv());
        let mut second = Box::pin(rx.recv());
        assert!(poll_noop(first.as_mut()).is_pending());
        assert!(poll_noop(second.as_mut()).is_pending());
        tx.try_send(Tracked::new(11, &drops)).unwrap();
        tx.try_send(Tracked::new(12, &drops)).unwrap();
        drop(first);
        match poll_noop(second.as_mut()) {
            Poll::Ready(Ok(v)) => assert_eq!(v.value, 12, "the second got its own value"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            rx.try_recv().map(|v| v.value),
            Ok(11),
            "the first's value came back"
        );

        // ...and to a process blocked in recv.
        let rt = runtime(2, "chan-giveback");
        let (tx, rx) = csp::channel::<Tracked>();
        let mut first = Box::pin(rx.recv());
        assert!(poll_noop(first.as_mut()).is_pending());
        let rx2 = rx.clone();
        let receiver = rt.spawn(async move { rx2.recv().await.map(|v| v.value) });
        wait_sleeping_on(&rt, receiver.id(), "recv on channel #");
        tx.try_send(Tracked::new(13, &drops)).unwrap();
        assert!(!receiver.is_finished());
        drop(first);
        assert_eq!(rt.block_on(receiver).unwrap(), Ok(13));

        // Handed over just before a close: the receiver still gets it, and if it is
        // dropped instead, the value is still receivable after the close.
        let (tx, rx) = csp::channel::<Tracked>();
        let mut recv = Box::pin(rx.recv());
        assert!(poll_noop(recv.as_mut()).is_pending());
        tx.try_send(Tracked::new(20, &drops)).unwrap();
        tx.close();
        match poll_noop(recv.as_mut()) {
            Poll::Ready(Ok(v)) => assert_eq!(v.value, 20),
            other => panic!("handed over before the close: {other:?}"),
        }
        let mut recv = Box::pin(rx.recv());
        assert!(matches!(
            poll_noop(recv.as_mut()),
            Poll::Ready(Err(RecvError))
        ));
        let (tx, rx) = csp::bounded::<Tracked>(1);
        let mut recv = Box::pin(rx.recv());
        assert!(poll_noop(recv.as_mut()).is_pending());
        tx.try_send(Tracked::new(21, &drops)).unwrap();
        rx.close();
        drop(recv);
        assert_eq!(
            rx.try_recv().map(|v| v.value),
            Ok(21),
            "given back after the close"
        );
        assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Closed);

        // A value given back and then the last receiver dropped: dropped exactly once.
        let before = drops.get();
        let (tx, rx) = csp::channel::<Tracked>();
        let mut recv = Box::pin(rx.recv());
        assert!(poll_noop(recv.as_mut()).is_pending());
        tx.try_send(Tracked::new(14, &drops)).unwrap();
        drop(recv);
        assert_eq!(drops.get(), before);
        drop(rx);
        assert_eq!(drops.get(), before + 1);
        assert!(tx.is_closed());
    });
}

/// The same for the entry `poll_recv` and the Stream keep in the Receiver: a value sent
/// while it waits stays in the channel when the Receiver is dropped. (Such an entry is
/// never handed a value: on a rendezvous channel, `try_send` does not count it as a
/// waiting receiver, and the value comes back as `Full`.)
#[test]
fn a_value_handed_to_a_dropped_receivers_poll_recv_goes_back() {
    bounded(20, || {
        let drops = Counter::new();
        for kind in [Kind::Rendezvous, Kind::Bounded(2), Kind::Unbounded] {
            let (tx, rx) = make::<Tracked>(kind);
            let mut rx2 = rx.clone();
            let waker = futures::task::noop_waker();
            assert!(rx2.poll_recv(&mut Context::from_waker(&waker)).is_pending());
            if kind == Kind::Rendezvous {
                let refused = tx.try_send(Tracked::new(1, &drops)).unwrap_err();
                assert!(
                    refused.is_full(),
                    "a poll_recv reader takes no value while idle"
                );
                assert_eq!(refused.into_inner().value, 1);
                drop(rx2);
                assert_eq!(rx.try_recv().map(|v| v.value), Err(TryRecvError::Empty));
            } else {
                tx.try_send(Tracked::new(1, &drops)).unwrap();
                tx.try_send(Tracked::new(2, &drops)).unwrap();
                drop(rx2);
                assert_eq!(rx.try_recv().map(|v| v.value), Ok(1), "{kind:?}");
                assert_eq!(rx.try_recv().map(|v| v.value), Ok(2), "{kind:?}");
                // The Stream: a pending `next()` then the receiver dropped.
                let mut rx3 = rx.clone();
                assert!(rx3.next().now_or_never().is_none());
                tx.try_send(Tracked::new(3, &drops)).unwrap();
                drop(rx3);
                assert_eq!(rx.try_recv().map(|v| v.value), Ok(3), "{kind:?}");
            }
        }
        assert_eq!(drops.get(), 1 + 3 + 3);
    });
}

/// `rx.next()` is a receiving future like `rx.recv()`: once it is dropped (here by
/// `now_or_never`; in practice by a `select!` whose other branch won), it must no longer
/// count as a waiting receiver, and a value a sender handed it must go back to the
/// channel for the other receivers (API.md, "Cancellation never loses ...").
#[test]
fn a_dropped_next_future_does_not_keep_a_value_from_other_receivers() {
    bounded(20, || {
        let (tx, rx) = csp::channel::<u32>();
        let mut idle = rx.clone();
        assert_eq!(idle.next().now_or_never(), None);
        match tx.try_send(1) {
            // No receiver waits: right for a rendezvous channel.
            Err(TrySendError::Full(_)) => {}
            Ok(()) => assert_eq!(
                rx.try_recv(),
                Ok(1),
                "try_send(1) succeeded by handing 1 to the dropped next() future of `idle`; \
                 the value must be back in the channel for `rx`"
            ),
            Err(e) => panic!("{e:?}"),
        }
        drop(idle);
    });
}

/// With a single Receiver: after an idle `next()` poll, a value whose send returned Ok
/// must not make `recv()` report "closed and empty" (RecvError) while the stream still
/// holds it.
#[test]
fn a_value_handed_to_an_idle_stream_poll_is_not_hidden_from_recv() {
    bounded(20, || {
        let (tx, mut rx) = csp::channel::<u32>();
        assert_eq!(rx.next().now_or_never(), None);
        if tx.try_send(1).is_ok() {
            drop(tx);
            let via_recv = futures::executor::block_on(rx.recv());
            let via_stream = rx.next().now_or_never();
            assert_eq!(
                via_recv,
                Ok(1),
                "try_send(1) returned Ok with this Receiver as the only one, yet recv() \
                 returned {via_recv:?}; the stream then yields {via_stream:?}"
            );
        }
    });
}

/// The same with `poll_recv` and `try_recv`: a value handed to the Receiver's idle
/// `poll_recv` entry is skipped by `try_recv`, which returns a later value first.
#[test]
fn a_value_handed_to_an_idle_poll_recv_is_not_skipped_by_try_recv() {
    bounded(20, || {
        let (tx, mut rx) = csp::bounded::<u32>(4);
        let waker = futures::task::noop_waker();
        assert!(rx.poll_recv(&mut Context::from_waker(&waker)).is_pending());
        tx.try_send(2).unwrap();
        tx.try_send(3).unwrap();
        assert_eq!(
            rx.try_recv(),
            Ok(2),
            "FIFO: 2 was sent first and rx is the only receiver"
        );
    });
}

/// `is_full` is documented as "true if a send would have to wait". A value given back
/// by a dropped receiver is not counted against the capacity (a send still buffers), so
/// it must not make `is_full` claim otherwise.
#[test]
fn is_full_means_a_send_would_wait_even_after_a_give_back() {
    bounded(20, || {
        let (tx, rx) = csp::bounded::<u32>(2);
        let mut recv = Box::pin(rx.recv());
        assert!(poll_noop(recv.as_mut()).is_pending());
        tx.try_send(1).unwrap();
        drop(recv); // 1 goes back: one value held, ahead of the (empty) buffer
        tx.try_send(2).unwrap();
        let full = tx.is_full();
        let sent = tx.try_send(3);
        assert!(
            !(full && sent.is_ok()),
            "is_full() said a send would wait, yet try_send(3) then buffered at once \
             (len {} of capacity 2)",
            rx.len()
        );
        assert_eq!(values_u32(&rx), [1, 2, 3]);
    });
}

fn values_u32(rx: &Receiver<u32>) -> Vec<u32> {
    std::iter::from_fn(|| rx.try_recv().ok()).collect()
}
