//! Property tests of the channels against a sequential model.
//!
//! A random channel (`channel()`, `bounded(n)` for n in 0..5, `unbounded()`) and a random
//! sequence of operations from one thread: `try_send`, `try_recv`, `send`/`recv`
//! futures polled once and then dropped (cancelled if pending), `close` from either end,
//! clones and drops of ends (down to none of one kind), and the inspections (`len`,
//! `is_empty`, `is_full`, `is_closed`, `capacity`, `sender_count`, `receiver_count`)
//! from every end held. The model is a `VecDeque` of values, the end counts and a closed
//! flag; every result, and the number of values dropped so far, must equal the model's.
//!
//! The rules modelled (API.md, "Channels"): a send is buffered if there is room (a
//! rendezvous channel has none, and with no receiver waiting a rendezvous send never
//! completes); a closed channel refuses sends, giving the value back, and still hands
//! out what it buffered, then reports closed; dropping the last sender closes it;
//! dropping the last receiver closes it and drops what it buffered; a cancelled send
//! drops its value undelivered.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll};

use csp::{Receiver, RecvError, SendError, Sender, TryRecvError, TrySendError};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

mod common;

use common::{Counter, Tracked, bounded};

#[derive(Debug, Clone, Copy)]
enum Kind {
    /// `csp::channel()`.
    Channel,
    Bounded(usize),
    Unbounded,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    TrySend(usize),
    TryRecv(usize),
    /// A `send` future polled once, then dropped.
    PollSend(usize),
    /// A `recv` future polled once, then dropped.
    PollRecv(usize),
    CloseFromSender(usize),
    CloseFromReceiver(usize),
    CloneSender(usize),
    CloneReceiver(usize),
    DropSender(usize),
    DropReceiver(usize),
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Channel),
        (0..5usize).prop_map(Kind::Bounded),
        Just(Kind::Unbounded),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let end = 0..4usize;
    prop_oneof![
        6 => end.clone().prop_map(Op::TrySend),
        6 => end.clone().prop_map(Op::TryRecv),
        2 => end.clone().prop_map(Op::PollSend),
        2 => end.clone().prop_map(Op::PollRecv),
        1 => end.clone().prop_map(Op::CloseFromSender),
        1 => end.clone().prop_map(Op::CloseFromReceiver),
        2 => end.clone().prop_map(Op::CloneSender),
        2 => end.clone().prop_map(Op::CloneReceiver),
        2 => end.clone().prop_map(Op::DropSender),
        2 => end.prop_map(Op::DropReceiver),
    ]
}

/// The sequential model of one channel.
#[derive(Debug)]
struct Model {
    cap: Option<usize>,
    buffer: VecDeque<u64>,
    senders: usize,
    receivers: usize,
    closed: bool,
    /// Values dropped so far (refused, received, cancelled, or dropped with the channel).
    dropped: usize,
}

impl Model {
    fn new(kind: Kind) -> Model {
        Model {
            cap: match kind {
                Kind::Channel => Some(0),
                Kind::Bounded(n) => Some(n),
                Kind::Unbounded => None,
            },
            buffer: VecDeque::new(),
            senders: 1,
            receivers: 1,
            closed: false,
            dropped: 0,
        }
    }

    fn has_room(&self) -> bool {
        self.cap.is_none_or(|cap| self.buffer.len() < cap)
    }

    fn is_full(&self) -> bool {
        self.cap.is_some_and(|cap| self.buffer.len() >= cap)
    }

    /// A send that does not wait: `Ok`, or refused as full or closed.
    fn send(&mut self, v: u64) -> Result<(), TrySendError<u64>> {
        if self.closed {
            Err(TrySendError::Closed(v))
        } else if self.has_room() {
            self.buffer.push_back(v);
            Ok(())
        } else {
            Err(TrySendError::Full(v))
        }
    }

    fn recv(&mut self) -> Result<u64, TryRecvError> {
        match self.buffer.pop_front() {
            Some(v) => Ok(v),
            None if self.closed => Err(TryRecvError::Closed),
            None => Err(TryRecvError::Empty),
        }
    }

    fn close(&mut self) -> bool {
        !std::mem::replace(&mut self.closed, true)
    }

    fn drop_sender(&mut self) {
        self.senders -= 1;
        if self.senders == 0 {
            self.closed = true;
        }
    }

    fn drop_receiver(&mut self) {
        self.receivers -= 1;
        if self.receivers == 0 {
            self.closed = true;
            self.dropped += self.buffer.len();
            self.buffer.clear();
        }
    }
}

/// Polls `future` once with a waker that does nothing, then drops it.
fn poll_once_and_drop<F: Future>(future: F) -> Poll<F::Output> {
    let waker = futures::task::noop_waker();
    pin!(future).poll(&mut Context::from_waker(&waker))
}

fn make(kind: Kind) -> (Sender<Tracked>, Receiver<Tracked>) {
    match kind {
        Kind::Channel => csp::channel(),
        Kind::Bounded(n) => csp::bounded(n),
        Kind::Unbounded => csp::unbounded(),
    }
}

/// Runs `ops` on a real channel and on the model side by side.
fn check(kind: Kind, ops: &[Op]) -> Result<(), TestCaseError> {
    let drops = Counter::new();
    let mut model = Model::new(kind);
    let (tx, rx) = make(kind);
    let mut txs = vec![tx];
    let mut rxs = vec![rx];
    let mut next = 0u64;
    for (step, &op) in ops.iter().enumerate() {
        let mut value = || {
            next += 1;
            Tracked::new(next, &drops)
        };
        match op {
            Op::TrySend(i) if !txs.is_empty() => {
                let v = value();
                let id = v.value;
                let real = txs[i % txs.len()].try_send(v).map_err(|e| match e {
                    TrySendError::Full(v) => TrySendError::Full(v.value),
                    TrySendError::Closed(v) => TrySendError::Closed(v.value),
                });
                let expected = model.send(id);
                if expected.is_err() {
                    model.dropped += 1; // the value came back, and is dropped
                }
                prop_assert_eq!(real, expected, "step {}: {:?}", step, op);
            }
            Op::TryRecv(i) if !rxs.is_empty() => {
                let real = rxs[i % rxs.len()].try_recv().map(|v| v.value);
                let expected = model.recv();
                if expected.is_ok() {
                    model.dropped += 1;
                }
                prop_assert_eq!(real, expected, "step {}: {:?}", step, op);
            }
            Op::PollSend(i) if !txs.is_empty() => {
                let v = value();
                let id = v.value;
                let real = match poll_once_and_drop(txs[i % txs.len()].send(v)) {
                    Poll::Ready(Ok(())) => Ok(()),
                    Poll::Ready(Err(SendError(v))) => Err(TrySendError::Closed(v.value)),
                    // Pending: dropped, the value with it.
                    Poll::Pending => Err(TrySendError::Full(id)),
                };
                let expected = model.send(id);
                if expected.is_err() {
                    model.dropped += 1;
                }
                prop_assert_eq!(real, expected, "step {}: {:?}", step, op);
            }
            Op::PollRecv(i) if !rxs.is_empty() => {
                let real = match poll_once_and_drop(rxs[i % rxs.len()].recv()) {
                    Poll::Ready(Ok(v)) => Ok(v.value),
                    Poll::Ready(Err(RecvError)) => Err(TryRecvError::Closed),
                    Poll::Pending => Err(TryRecvError::Empty),
                };
                let expected = model.recv();
                if expected.is_ok() {
                    model.dropped += 1;
                }
                prop_assert_eq!(real, expected, "step {}: {:?}", step, op);
            }
            Op::CloseFromSender(i) if !txs.is_empty() => {
                let real = txs[i % txs.len()].close();
                prop_assert_eq!(real, model.close(), "step {}: {:?}", step, op);
            }
            Op::CloseFromReceiver(i) if !rxs.is_empty() => {
                let real = rxs[i % rxs.len()].close();
                prop_assert_eq!(real, model.close(), "step {}: {:?}", step, op);
            }
            Op::CloneSender(i) if !txs.is_empty() => {
                let tx = txs[i % txs.len()].clone();
                txs.push(tx);
                model.senders += 1;
            }
            Op::CloneReceiver(i) if !rxs.is_empty() => {
                let rx = rxs[i % rxs.len()].clone();
                rxs.push(rx);
                model.receivers += 1;
            }
            Op::DropSender(i) if !txs.is_empty() => {
                let n = txs.len();
                drop(txs.swap_remove(i % n));
                model.drop_sender();
            }
            Op::DropReceiver(i) if !rxs.is_empty() => {
                let n = rxs.len();
                drop(rxs.swap_remove(i % n));
                model.drop_receiver();
            }
            // An operation on a kind of end none of which is left.
            _ => {}
        }
        prop_assert_eq!(drops.get(), model.dropped, "step {}: {:?}: drops", step, op);
        let inspect = |what: &str,
                       len: usize,
                       empty: bool,
                       full: bool,
                       closed: bool,
                       cap: Option<usize>,
                       senders: usize,
                       receivers: usize|
         -> Result<(), TestCaseError> {
            prop_assert_eq!(
                len,
                model.buffer.len(),
                "step {}: {:?}: {} len",
                step,
                op,
                what
            );
            prop_assert_eq!(
                empty,
                model.buffer.is_empty(),
                "step {}: {} is_empty",
                step,
                what
            );
            prop_assert_eq!(
                full,
                model.is_full(),
                "step {}: {:?}: {} is_full",
                step,
                op,
                what
            );
            prop_assert_eq!(
                closed,
                model.closed,
                "step {}: {:?}: {} is_closed",
                step,
                op,
                what
            );
            prop_assert_eq!(cap, model.cap, "step {}: {} capacity", step, what);
            prop_assert_eq!(
                senders,
                model.senders,
                "step {}: {} sender_count",
                step,
                what
            );
            prop_assert_eq!(
                receivers,
                model.receivers,
                "step {}: {} receiver_count",
                step,
                what
            );
            Ok(())
        };
        for tx in &txs {
            inspect(
                "sender",
                tx.len(),
                tx.is_empty(),
                tx.is_full(),
                tx.is_closed(),
                tx.capacity(),
                tx.sender_count(),
                tx.receiver_count(),
            )?;
        }
        for rx in &rxs {
            inspect(
                "receiver",
                rx.len(),
                rx.is_empty(),
                rx.is_full(),
                rx.is_closed(),
                rx.capacity(),
                rx.sender_count(),
                rx.receiver_count(),
            )?;
        }
    }
    // Every value ends dropped once: the ones still buffered go with the last receiver.
    let buffered = model.buffer.len();
    let had_receivers = !rxs.is_empty();
    drop(txs);
    drop(rxs);
    let expected = model.dropped + if had_receivers { buffered } else { 0 };
    prop_assert_eq!(drops.get(), expected, "drops once every end is gone");
    prop_assert_eq!(
        drops.get() as u64,
        next,
        "every value created was dropped once"
    );
    Ok(())
}

/// Random channels and sequences (512 of them, `PROPTEST_CASES` for more), each
/// compared with the model; a failure is shrunk to a minimal sequence and printed.
#[test]
fn channels_behave_as_the_sequential_model() {
    bounded(120, || {
        let cases = std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(512);
        let mut runner = TestRunner::new(ProptestConfig {
            cases,
            failure_persistence: None,
            ..ProptestConfig::default()
        });
        let strategy = (kind(), proptest::collection::vec(op(), 0..64));
        if let Err(e) = runner.run(&strategy, |(kind, ops)| check(kind, &ops)) {
            panic!("{e}");
        }
    });
}

/// The model's own rules on fixed sequences: if these fail, the model is wrong, not the
/// channel.
#[test]
fn the_model_follows_the_documented_rules() {
    let mut m = Model::new(Kind::Channel);
    assert_eq!(m.send(1), Err(TrySendError::Full(1)), "rendezvous: no room");
    assert!(m.is_full());
    let mut m = Model::new(Kind::Bounded(1));
    assert_eq!(m.send(1), Ok(()));
    assert_eq!(m.send(2), Err(TrySendError::Full(2)));
    m.drop_sender();
    assert!(m.closed);
    assert_eq!(m.recv(), Ok(1), "buffered values outlive the senders");
    assert_eq!(m.recv(), Err(TryRecvError::Closed));
    let mut m = Model::new(Kind::Unbounded);
    assert_eq!(m.send(1), Ok(()));
    m.drop_receiver();
    assert_eq!((m.dropped, m.send(2)), (1, Err(TrySendError::Closed(2))));
    assert!(!m.close(), "already closed");
    assert!(!m.is_full(), "an unbounded channel is never full");
}
