//! Channels from the outside: the semantics of API.md's "Channels" section (rendezvous,
//! bounded, unbounded; close; cancellation), stress with random cancellation, what Go and
//! crossbeam users expect, process dumps, and channels shared with tokio and with another
//! csp runtime.
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use std::collections::HashSet;
use std::fmt::Debug;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use csp::{
    ProcessState, Receiver, RecvError, Runtime, SendError, Sender, TryRecvError, TrySendError,
};
use futures::future::{Either, FusedFuture};
use futures::stream::FusedStream;
use futures::{FutureExt, StreamExt};

mod common;

use common::{
    Counter, CountingWaker, PanickingWaker, Rng, Tracked, bounded, panic_message, runtime, scaled,
    wait_until,
};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// The three kinds of channel, with two sizes of bounded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rendezvous,
    Bounded(usize),
    Unbounded,
}

const KINDS: [Kind; 4] = [
    Kind::Rendezvous,
    Kind::Bounded(1),
    Kind::Bounded(8),
    Kind::Unbounded,
];

fn make<T>(kind: Kind) -> (Sender<T>, Receiver<T>) {
    match kind {
        Kind::Rendezvous => csp::channel(),
        Kind::Bounded(n) => csp::bounded(n),
        Kind::Unbounded => csp::unbounded(),
    }
}

/// Polls `future` once with a waker that does nothing.
fn poll_noop<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    let waker = futures::task::noop_waker();
    future.poll(&mut Context::from_waker(&waker))
}

/// Polls `future` once with `waker`.
fn poll_with<F: Future + ?Sized>(future: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(waker))
}

/// The channel number in an end's `Debug` output (`Receiver { channel: 7, .. }`), which
/// is the number process dumps use.
fn channel_id(end: &impl Debug) -> u64 {
    let text = format!("{end:?}");
    let digits: String = text
        .split("channel: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no channel number in the Debug output {text:?}"))
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no channel number in the Debug output {text:?}"))
}

/// Waits until process `id` is Sleeping with a `waiting_on` that starts with `prefix`,
/// and returns that `waiting_on`.
#[track_caller]
fn wait_sleeping_on(rt: &Runtime, id: u64, prefix: &str) -> String {
    let mut found = None;
    wait_until(10, &format!("process #{id} sleeps on {prefix}.."), || {
        found = rt
            .processes()
            .into_iter()
            .find(|p| p.id == id && p.state == ProcessState::Sleeping)
            .and_then(|p| p.waiting_on)
            .filter(|w| w.starts_with(prefix));
        found.is_some()
    });
    found.expect("found")
}

/// Waits until every process of `ids` is Sleeping on something starting with `prefix`.
#[track_caller]
fn wait_all_sleeping_on(rt: &Runtime, ids: &[u64], prefix: &str) {
    wait_until(
        10,
        &format!("{} processes sleep on {prefix}..", ids.len()),
        || {
            let dump = rt.processes();
            ids.iter().all(|id| {
                dump.iter().any(|p| {
                    p.id == *id
                        && p.state == ProcessState::Sleeping
                        && p.waiting_on
                            .as_deref()
                            .is_some_and(|w| w.starts_with(prefix))
                })
            })
        },
    );
}

fn handle_ids<T>(handles: &[csp::JoinHandle<T>]) -> Vec<u64> {
    handles.iter().map(|h| h.id()).collect()
}

/// A future that is pending `n` times (waking itself each time), then ready: racing it
/// against an operation cancels the operation after a chosen number of polls.
struct Polls(u32);

impl Future for Polls {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Runs `future` but drops it once `Polls(polls)` is ready. With `op_first` the
/// operation is polled before the canceller each time; otherwise the canceller goes
/// first, so the operation can be dropped after a counterpart completed it but before it
/// was polled again.
async fn cancel_after<F: Future>(polls: u32, op_first: bool, future: F) -> Option<F::Output> {
    if op_first {
        match futures::future::select(pin!(future), Polls(polls)).await {
            Either::Left((out, _)) => Some(out),
            Either::Right(((), _)) => None,
        }
    } else {
        match futures::future::select(Polls(polls), pin!(future)).await {
            Either::Left(((), _)) => None,
            Either::Right((out, _)) => Some(out),
        }
    }
}

/// Per-id drop counts, so a value dropped twice or never is named.
struct DropLog(Vec<AtomicU32>);

impl DropLog {
    fn new(n: usize) -> Arc<DropLog> {
        Arc::new(DropLog((0..n).map(|_| AtomicU32::new(0)).collect()))
    }

    fn item(self: &Arc<Self>, id: usize) -> Item {
        Item {
            id,
            log: self.clone(),
        }
    }

    fn drops(&self, id: usize) -> u32 {
        self.0[id].load(Ordering::SeqCst)
    }
}

/// A payload that records its drop in a `DropLog`.
struct Item {
    id: usize,
    log: Arc<DropLog>,
}

impl Debug for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Item({})", self.id)
    }
}

impl Drop for Item {
    fn drop(&mut self) {
        self.log.0[self.id].fetch_add(1, Ordering::SeqCst);
    }
}

fn values(items: Vec<Tracked>) -> Vec<u64> {
    items.iter().map(|t| t.value).collect()
}

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

// ---------------------------------------------------------------------------------------
// Process dumps
// ---------------------------------------------------------------------------------------

#[test]
fn a_process_blocked_in_recv_shows_in_the_dump() {
    bounded(20, || {
        let rt = runtime(2, "chan-dump-recv");
        for kind in KINDS {
            let (tx, rx) = make::<u8>(kind);
            let expected = format!("recv on channel #{}", channel_id(&rx));
            let receiver = rt.spawn(async move { rx.recv().await });
            let shown = wait_sleeping_on(&rt, receiver.id(), "recv on channel #");
            assert_eq!(shown, expected, "{kind:?}");
            tx.try_send(5).unwrap();
            assert_eq!(rt.block_on(receiver).unwrap(), Ok(5));
        }
    });
}

#[test]
fn a_process_blocked_in_send_shows_in_the_dump() {
    bounded(20, || {
        let rt = runtime(2, "chan-dump-send");
        for kind in [Kind::Rendezvous, Kind::Bounded(1)] {
            let (tx, rx) = make::<u8>(kind);
            let expected = format!("send on channel #{}", channel_id(&tx));
            let sender = rt.spawn(async move {
                for v in 0..2 {
                    tx.send(v).await.unwrap();
                }
            });
            let shown = wait_sleeping_on(&rt, sender.id(), "send on channel #");
            assert_eq!(shown, expected, "{kind:?}");
            assert_eq!(rx.recv_blocking(), Ok(0));
            assert_eq!(rx.recv_blocking(), Ok(1));
            let id = sender.id();
            rt.block_on(sender).unwrap();
            assert!(
                rt.processes().iter().all(|p| p.id != id),
                "finished: not live"
            );
        }
        // Two channels, two processes: each names its own channel.
        let (tx_a, _rx_a) = csp::channel::<u8>();
        let (_tx_b, rx_b) = csp::channel::<u8>();
        let (id_a, id_b) = (channel_id(&tx_a), channel_id(&rx_b));
        assert_ne!(id_a, id_b);
        let a = rt.spawn(async move { tx_a.send(1).await.is_ok() });
        let b = rt.spawn(async move { rx_b.recv().await.is_ok() });
        assert_eq!(
            wait_sleeping_on(&rt, a.id(), "send"),
            format!("send on channel #{id_a}")
        );
        assert_eq!(
            wait_sleeping_on(&rt, b.id(), "recv"),
            format!("recv on channel #{id_b}")
        );
        a.abort();
        b.abort();
        assert!(rt.block_on(a).unwrap_err().is_cancelled());
        assert!(rt.block_on(b).unwrap_err().is_cancelled());
    });
}

#[test]
fn a_process_awaiting_a_join_handle_shows_in_the_dump() {
    bounded(20, || {
        let rt = runtime(2, "chan-dump-join");
        let (tx, rx) = csp::channel::<u8>();
        let inner = rt.spawn(async move { rx.recv().await });
        let inner_id = inner.id();
        let outer = rt.spawn(inner); // a JoinHandle is a future: the process awaits it
        wait_sleeping_on(&rt, inner_id, "recv on channel #");
        let shown = wait_sleeping_on(&rt, outer.id(), "join of process #");
        assert_eq!(shown, format!("join of process #{inner_id}"));
        drop(tx);
        assert_eq!(rt.block_on(outer).unwrap().unwrap(), Err(RecvError));
        let ids: HashSet<u64> = rt.processes().iter().map(|p| p.id).collect();
        assert!(!ids.contains(&inner_id), "both finished: {ids:?}");
    });
}

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

// ---------------------------------------------------------------------------------------
// Foreign code that panics: wakers run with no entry of a freed future left linked, no
// value lost, and the rest of a batch still woken
// ---------------------------------------------------------------------------------------

/// A send starts waiting and wakes a `poll_recv` reader whose waker panics: the panic
/// unwinds through the send's poll, and the send future dropped afterwards must leave no
/// entry in the channel (the channel would reach into freed memory).
#[test]
fn a_send_whose_registration_wakes_a_panicking_reader_leaves_no_entry_behind() {
    bounded(10, || {
        let drops = Counter::new();
        let (tx, mut rx) = csp::channel::<Tracked>();
        let (reader, panicking) = PanickingWaker::new();
        assert!(
            rx.poll_recv(&mut Context::from_waker(&panicking))
                .is_pending()
        );

        let mut send = Box::pin(tx.send(Tracked::new(7, &drops)));
        let unwound = std::panic::catch_unwind(AssertUnwindSafe(|| poll_noop(send.as_mut())));
        let payload = unwound.expect_err("the reader's waker panics through the send's poll");
        assert_eq!(panic_message(&*payload).as_deref(), Some("waker panics"));
        assert_eq!(reader.wakes(), 1);
        drop(send);
        assert_eq!(
            drops.get(),
            1,
            "the unsent value drops with its future, once"
        );

        assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
        assert_eq!(
            drops.get(),
            1,
            "nothing was read from the dropped send's entry"
        );
    });
}

/// A receive takes a value from a waiting sender whose waker panics: the value the
/// receive took must not vanish with the unwinding poll. Dropped afterwards unread, the
/// receive gives it back to the channel, ahead of the others.
#[test]
fn a_receive_that_wakes_a_panicking_sender_loses_no_value() {
    bounded(10, || {
        let drops = Counter::new();
        let (tx, rx) = csp::channel::<Tracked>();
        let (sender, panicking) = PanickingWaker::new();
        let mut send = Box::pin(tx.send(Tracked::new(3, &drops)));
        assert!(poll_with(send.as_mut(), &panicking).is_pending());

        let mut recv = Box::pin(rx.recv());
        let unwound = std::panic::catch_unwind(AssertUnwindSafe(|| poll_noop(recv.as_mut())));
        assert!(
            unwound.is_err(),
            "the sender's waker panics through the receive's poll"
        );
        assert_eq!(sender.wakes(), 1);
        drop(recv);
        assert_eq!(
            drops.get(),
            0,
            "the received value was given back, not dropped"
        );

        assert!(matches!(poll_noop(send.as_mut()), Poll::Ready(Ok(()))));
        assert_eq!(rx.try_recv().map(|t| t.value), Ok(3));
        assert_eq!(drops.get(), 1);
    });
}

/// `try_recv` takes a waiting sender's value and that sender's waker panics: the value
/// goes back to the channel before the panic reaches the caller.
#[test]
fn a_try_recv_that_wakes_a_panicking_sender_loses_no_value() {
    bounded(10, || {
        let drops = Counter::new();
        let (tx, rx) = csp::channel::<Tracked>();
        let (_sender, panicking) = PanickingWaker::new();
        let mut send = Box::pin(tx.send(Tracked::new(4, &drops)));
        assert!(poll_with(send.as_mut(), &panicking).is_pending());

        let unwound = std::panic::catch_unwind(AssertUnwindSafe(|| rx.try_recv()));
        assert!(unwound.is_err());
        assert_eq!(drops.get(), 0);
        assert_eq!(rx.try_recv().map(|t| t.value), Ok(4));
        assert_eq!(drops.get(), 1);
    });
}

/// A close fires every waiting entry; the first one's waker panics. Every process
/// waiting behind it must still be woken (and the panic reach the closer).
#[test]
fn a_panicking_waker_in_a_close_still_wakes_every_other_waiter() {
    bounded(20, || {
        let rt = runtime(2, "close-panic");
        let (tx, rx) = csp::channel::<u32>();
        let (first, panicking) = PanickingWaker::new();
        let mut recv = Box::pin(rx.recv());
        assert!(poll_with(recv.as_mut(), &panicking).is_pending());
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let rx = rx.clone();
                rt.spawn(async move { rx.recv().await })
            })
            .collect();
        wait_all_sleeping_on(&rt, &handle_ids(&handles), "recv on channel");

        let closed = std::panic::catch_unwind(AssertUnwindSafe(move || drop(tx)));
        let payload = closed.expect_err("the panic of the first waker reaches the closer");
        assert_eq!(panic_message(&*payload).as_deref(), Some("waker panics"));
        assert_eq!(first.wakes(), 1);
        for handle in handles {
            assert_eq!(rt.block_on(handle).unwrap(), Err(RecvError));
        }
        assert!(matches!(
            poll_noop(recv.as_mut()),
            Poll::Ready(Err(RecvError))
        ));
    });
}
