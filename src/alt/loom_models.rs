//! loom models of choices over several channels, driving the real `Select`, choice
//! engine, claim flags and channel core.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::task::noop_waker;
use loom::future::block_on;
use loom::sync::Arc;
use loom::thread;

use crate::alt::Select;
use crate::chan::{TryRecvError, bounded, channel};
use crate::runtime::{Handle, Shared, context};

/// Two choices meet on both ends of two channels: one offers {send c1, recv c2}, the
/// other {recv c1, send c2}. Whatever the interleaving, exactly one transfer happens,
/// both choices complete, and neither pairs with itself.
#[test]
fn loom_alt_vs_alt_on_both_ends() {
    loom::model(|| {
        let (tx1, rx1) = channel::<u8>();
        let (tx2, rx2) = channel::<u8>();
        let (tx1, rx1, tx2, rx2) = (Arc::new(tx1), Arc::new(rx1), Arc::new(tx2), Arc::new(rx2));

        let left = {
            let (tx1, rx2) = (tx1.clone(), rx2.clone());
            thread::spawn(move || {
                let mut sel = Select::new_biased();
                let send = sel.send(&tx1, 1);
                sel.recv(&rx2);
                let op = block_on(sel.select());
                if op.index() == send {
                    assert_eq!(op.send(&tx1), Ok(()));
                    None
                } else {
                    Some(op.recv(&rx2).unwrap())
                }
            })
        };
        let mut sel = Select::new_biased();
        let recv = sel.recv(&rx1);
        sel.send(&tx2, 2);
        let op = block_on(sel.select());
        let right = if op.index() == recv {
            Some(op.recv(&rx1).unwrap())
        } else {
            assert_eq!(op.send(&tx2), Ok(()));
            None
        };
        drop(sel);
        let left = left.join().unwrap();
        match (left, right) {
            (None, Some(1)) | (Some(2), None) => {}
            other => panic!("exactly one transfer, got {other:?}"),
        }
    });
}

/// A waiting choice over two channels races a close of one and a send on the other:
/// exactly one arm fires, and a value the choice did not take goes back to its sender.
#[test]
fn loom_alt_vs_close() {
    loom::model(|| {
        let (tx1, rx1) = channel::<u8>();
        let (tx2, rx2) = channel::<u8>();
        let mut sel = Select::new_biased();
        let on_close = sel.recv(&rx1);
        let on_value = sel.recv(&rx2);
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut select = pin!(sel.select());
        assert!(select.as_mut().poll(&mut cx).is_pending());

        let closer = thread::spawn(move || drop(tx1));
        let sender = thread::spawn(move || tx2.try_send(7).is_ok());
        closer.join().unwrap();
        let sent = sender.join().unwrap();

        let Poll::Ready(op) = select.as_mut().poll(&mut cx) else {
            panic!("the close fires the choice if the send did not");
        };
        if op.index() == on_value {
            assert!(sent);
            assert_eq!(op.recv(&rx2), Ok(7));
        } else {
            assert_eq!(op.index(), on_close);
            assert!(op.recv(&rx1).is_err());
            assert!(!sent, "a value sent Ok went to the choice");
        }
    });
}

/// The quick pass of a choice skips, without locking, an arm whose channel's readiness
/// says it would fail (`chan/core.rs`). That hint must never hide a value sent before
/// the choice started: here a first choice turns the hint on, a thread fills the
/// channel, and once it is joined a choice that may not wait (`try_select`, the form
/// behind `alt!`'s `default`) must find the value.
#[test]
fn loom_readiness_hint_shows_a_value_sent_before() {
    loom::model(|| {
        let (tx, rx) = bounded::<u8>(1);
        let (_tx2, rx2) = bounded::<u8>(1);
        let mut sel = Select::new();
        sel.recv(&rx);
        sel.recv(&rx2);
        assert!(sel.try_select().is_none(), "nothing was sent yet");

        let sender = thread::spawn(move || tx.try_send(3).is_ok());
        assert!(sender.join().unwrap());

        let op = sel
            .try_select()
            .expect("a value sent before the choice is ready");
        assert_eq!(op.recv(&rx), Ok(3));
    });
}

/// A choice that may not wait races a send, both on a channel whose readiness is kept:
/// the value goes to the choice or stays in the channel, never lost and never taken
/// twice.
#[test]
fn loom_readiness_hint_racing_a_send() {
    loom::model(|| {
        let (tx, rx) = bounded::<u8>(1);
        let mut sel = Select::new();
        sel.recv(&rx);
        assert!(sel.try_select().is_none(), "nothing was sent yet");

        let sender = thread::spawn(move || tx.try_send(4).is_ok());
        let chosen = sel.try_select().map(|op| op.recv(&rx).unwrap());
        assert!(sender.join().unwrap());
        drop(sel);

        match (chosen, rx.try_recv()) {
            (Some(4), Err(TryRecvError::Closed)) | (None, Ok(4)) => {}
            other => panic!("the value must be received exactly once, got {other:?}"),
        }
    });
}

/// A waiting choice is dropped while a sender claims one of its arms: the value is
/// either refused (the sender gets it back) or handed over and then given back to the
/// channel by the drop. Never lost, never delivered twice.
#[test]
fn loom_alt_cancelled_while_a_sender_claims_it() {
    loom::model(|| {
        let (tx1, rx1) = channel::<u8>();
        let (_tx2, rx2) = channel::<u8>();
        let mut sel = Select::new_biased();
        sel.recv(&rx1);
        sel.recv(&rx2);
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut select = Box::pin(sel.select());
        assert!(select.as_mut().poll(&mut cx).is_pending());

        let sender = thread::spawn(move || tx1.try_send(5).is_ok());
        drop(select);
        let sent = sender.join().unwrap();
        drop(sel);

        match rx1.try_recv() {
            Ok(value) => {
                assert!(sent);
                assert_eq!(value, 5, "a value handed to the dropped choice comes back");
            }
            Err(TryRecvError::Closed) => assert!(!sent, "a value sent Ok was lost"),
            Err(TryRecvError::Empty) => unreachable!("the sender is gone"),
        }
    });
}

/// A waiting choice with a timeout races its timer's expiry and a sender: exactly one
/// of them wins. The timer never claims the flag; the choice, woken by it, withdraws,
/// so either the sender claimed first (the choice completes with the value) or the
/// withdrawal did (the timeout fires and the sender is refused).
#[test]
fn loom_alt_commit_vs_timeout() {
    loom::model(|| {
        // A runtime's shared state without its workers: the model advances the wheel.
        let (shared, _queues) = Shared::new(1, "loom".into(), None, Default::default());
        let _enter = context::enter(Handle {
            shared: shared.clone(),
        });
        let (tx, rx) = channel::<u8>();
        let mut sel = Select::new_biased();
        let on_value = sel.recv(&rx);
        sel.timeout(Duration::from_secs(3600));
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut select = pin!(sel.select());
        assert!(select.as_mut().poll(&mut cx).is_pending());

        // The sender races the choice's reaction to its expired timer.
        let sender = thread::spawn(move || tx.try_send(7).is_ok());
        // Far past the deadline, whatever the clock says.
        assert!(
            shared.timers().fire_all(u64::MAX - 1),
            "the timeout's timer fired"
        );
        let Poll::Ready(op) = select.as_mut().poll(&mut cx) else {
            panic!("an expired timeout completes the choice");
        };
        let sent = sender.join().unwrap();
        if op.index() == on_value {
            assert!(sent);
            assert_eq!(op.recv(&rx), Ok(7));
        } else {
            assert_eq!(op.index(), Select::TIMEOUT);
            assert!(!sent, "a value sent Ok went to a choice that timed out");
        }
    });
}

/// The future of a waiting `alt!` choice is leaked, and its arm dropped while a sender
/// claims it: the arm unlinks its own entry under the channel's lock, so the sender
/// either finds it (the value it handed over goes back to the channel) or does not (it
/// keeps the value). Never lost, never delivered twice, never a freed entry touched.
#[test]
fn loom_leaked_alt_arm_dropped_while_a_sender_claims_it() {
    use crate::alt::macro_support::{RecvArm, alt};

    loom::model(|| {
        let (tx, rx) = channel::<u8>();
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut arm = Box::pin(Some(RecvArm::new(&rx)));
        let mut future = Box::pin(alt::<1, _>((arm.as_mut().as_pin_mut(), ()), false, false));
        assert!(future.as_mut().poll(&mut cx).is_pending());
        std::mem::forget(future);

        let sender = thread::spawn(move || tx.try_send(5).is_ok());
        drop(arm);
        let sent = sender.join().unwrap();

        match rx.try_recv() {
            Ok(value) => {
                assert!(sent);
                assert_eq!(value, 5, "a value handed to the dropped arm comes back");
            }
            Err(TryRecvError::Closed) => assert!(!sent, "a value sent Ok was lost"),
            Err(TryRecvError::Empty) => unreachable!("the sender is gone"),
        }
    });
}

/// A choice that does not wait is linearizable: it fires an arm, or there was a moment
/// at which none could complete. Here one of two buffered channels always holds a value
/// (crossbeam-channel's `linearizable_try`, one round): the chooser puts a value in c1
/// and then tries c2 before c1 (a biased choice, so the order is fixed); the other side
/// puts a value in c2 and only then takes c1's. Tried one arm at a time, c2 can be found
/// empty and then c1 too, though one of them held a value at every moment.
#[test]
fn loom_try_select_is_linearizable() {
    loom::model(|| {
        let (tx1, rx1) = bounded::<u8>(1);
        let (tx2, rx2) = bounded::<u8>(1);
        let (rx1, rx2) = (Arc::new(rx1), Arc::new(rx2));
        let other = {
            let rx1 = rx1.clone();
            thread::spawn(move || {
                tx2.try_send(2).unwrap();
                let _ = rx1.try_recv();
            })
        };
        tx1.try_send(1).unwrap();
        let mut sel = Select::new_biased();
        let from_c2 = sel.recv(&rx2);
        let from_c1 = sel.recv(&rx1);
        let op = sel
            .try_select()
            .expect("one of the two channels held a value at every moment");
        if op.index() == from_c2 {
            assert_eq!(op.recv(&rx2), Ok(2));
        } else {
            assert_eq!(op.index(), from_c1);
            assert_eq!(op.recv(&rx1), Ok(1));
        }
        drop(sel);
        other.join().unwrap();
    });
}

/// A choice over a receive and a cancellation token (`cancelled(token)`, a `closed` arm
/// on the token's channel) registers its arms while another thread cancels the token:
/// whatever the interleaving, the cancellation is seen, by the choice's first try or by
/// a wake of its registered arm, and the choice completes with that arm. (`prialt!`, as
/// `alt!`'s random order would make the model's runs differ; the race of a send with a
/// close is `loom_alt_vs_close`'s.)
#[test]
fn loom_cancel_racing_its_alt_arms_registration() {
    loom::model(|| {
        let (_tx, rx) = bounded::<u8>(1);
        let token = crate::CancellationToken::new();
        let canceller = {
            let token = token.clone();
            thread::spawn(move || token.cancel())
        };
        let fired = block_on(async {
            crate::prialt! {
                recv(rx) -> msg => Some(msg),
                cancelled(token) => None,
            }
        });
        canceller.join().unwrap();
        assert_eq!(fired, None, "only the cancellation could fire");
        assert!(token.is_cancelled());
    });
}
