//! loom models of the channel core: the real futures, wait lists, claim flags and
//! lock, racing each other from loom threads. Every value carries a drop counter, so a
//! lost or duplicated value fails the model.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::task::noop_waker;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use crate::chan::{SendError, TryRecvError, TrySendError, bounded, channel};

/// A value whose drops are counted.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn poll_once<F: Future>(future: Pin<&mut F>) -> Poll<F::Output> {
    let waker = noop_waker();
    future.poll(&mut Context::from_waker(&waker))
}

/// A sender hands a value to a waiting receiver while that receiver's future is being
/// dropped: the value is either refused (no receiver left) or handed over and then given
/// back to the channel by the dropped future. Never lost, never twice.
#[test]
fn loom_rendezvous_handoff_racing_receiver_cancellation() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = channel::<Counted>();
        let mut recv = Box::pin(rx.recv());
        assert!(
            poll_once(recv.as_mut()).is_pending(),
            "registers as waiting"
        );

        let sender = {
            let drops = drops.clone();
            thread::spawn(move || match tx.try_send(Counted(drops)) {
                Ok(()) => true,
                Err(TrySendError::Full(value)) => {
                    drop(value);
                    false
                }
                Err(TrySendError::Closed(_)) => unreachable!("a receiver is alive"),
            })
        };
        drop(recv);
        let sent = sender.join().unwrap();

        if sent {
            let value = rx
                .try_recv()
                .ok()
                .expect("the handed value went back to the channel");
            assert_eq!(drops.load(Ordering::SeqCst), 0);
            drop(value);
        }
        assert_eq!(rx.try_recv().err(), Some(TryRecvError::Closed));
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "exactly one value, dropped once"
        );
    });
}

/// A send waiting on a full channel races a close and a receive that frees space: it
/// either got its value into the buffer before the close (and the value is still
/// received after it) or fails with its value given back; never both, never neither.
#[test]
fn loom_send_racing_close() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = bounded::<Counted>(1);
        tx.try_send(Counted(drops.clone())).ok().unwrap();
        let mut send = Box::pin(tx.send(Counted(drops.clone())));
        assert!(poll_once(send.as_mut()).is_pending(), "waits for room");

        let rx = Arc::new(rx);
        let closer = {
            let rx = rx.clone();
            thread::spawn(move || assert!(rx.close()))
        };
        let receiver = {
            let rx = rx.clone();
            thread::spawn(move || rx.try_recv().ok())
        };
        let first = receiver.join().unwrap();
        closer.join().unwrap();

        let outcome = match poll_once(send.as_mut()) {
            Poll::Ready(outcome) => outcome,
            Poll::Pending => panic!("a close fires every waiting send"),
        };
        let mut received = usize::from(first.is_some());
        drop(first);
        while let Ok(value) = rx.try_recv() {
            received += 1;
            drop(value);
        }
        match outcome {
            Ok(()) => assert_eq!(received, 2, "a send that returned Ok is received"),
            Err(SendError(value)) => {
                assert!(received <= 1);
                drop(value);
            }
        }
        drop(send);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            2,
            "both values dropped exactly once"
        );
    });
}

/// One sender, two waiting receivers, one of them dropped meanwhile (its entry is the
/// node a `Receiver` keeps for `poll_recv`): the value goes to exactly one receiver, or
/// back to the channel.
#[test]
fn loom_two_receivers_racing_one_sender() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = channel::<Counted>();
        let mut first = rx.clone();
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(first.poll_recv(&mut cx).is_pending());
        let mut second = Box::pin(rx.recv());
        assert!(poll_once(second.as_mut()).is_pending());

        let sender = {
            let drops = drops.clone();
            thread::spawn(move || tx.try_send(Counted(drops)).is_ok())
        };
        let canceller = thread::spawn(move || drop(first));
        let sent = sender.join().unwrap();
        canceller.join().unwrap();

        let mut received = 0;
        if let Poll::Ready(Ok(value)) = poll_once(second.as_mut()) {
            received += 1;
            drop(value);
        }
        drop(second);
        while let Ok(value) = rx.try_recv() {
            received += 1;
            drop(value);
        }
        assert_eq!(received, usize::from(sent), "sent once, received once");
        assert_eq!(drops.load(Ordering::SeqCst), usize::from(sent));
        assert!(matches!(rx.try_recv(), Err(TryRecvError::Closed)));
    });
}
