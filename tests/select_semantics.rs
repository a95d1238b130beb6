//! `csp::Select`'s semantics (API.md, "alt! / prialt!"): `try_select`, send arms
//! that keep or spend their values, closed channels.
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use csp::{RecvError, Select, SendError};
use csp::{TryRecvError, TrySendError};
use std::pin::pin;
use std::task::Poll;

mod common;

use common::{Counter, CountingWaker, Tracked, bounded};
use common::{poll_noop, poll_with};

// ---------------------------------------------------------------------------------------
// try_select and send arms
// ---------------------------------------------------------------------------------------

#[test]
fn try_select_fires_only_what_is_ready_now() {
    bounded(30, || {
        let drops = Counter::new();
        let (rv_tx, rv_rx) = csp::channel::<Tracked>();
        let (b_tx, b_rx) = csp::bounded::<Tracked>(1);
        let (full_tx, full_rx) = csp::bounded::<Tracked>(1);
        full_tx.try_send(Tracked::new(0, &drops)).unwrap();

        let mut sel = Select::new();
        let recv_rv = sel.recv(&rv_rx);
        let recv_b = sel.recv(&b_rx);
        let send_rv = sel.send(&rv_tx, Tracked::new(1, &drops));
        let send_full = sel.send(&full_tx, Tracked::new(2, &drops));
        assert_eq!([recv_rv, recv_b, send_rv, send_full], [0, 1, 2, 3]);

        // Nothing ready: a rendezvous send with no receiver, a full channel, empty ones.
        for _ in 0..100 {
            assert!(sel.try_select().is_none());
        }
        assert_eq!(
            drops.get(),
            0,
            "no value dropped by a try_select that fired nothing"
        );
        assert_eq!(full_rx.len(), 1);
        assert_eq!(rv_rx.try_recv().unwrap_err(), TryRecvError::Empty);
        assert_eq!(b_rx.len(), 0);

        // A value arrives on b: that arm fires, with that value.
        b_tx.try_send(Tracked::new(10, &drops)).unwrap();
        let op = sel.try_select().expect("b is ready");
        assert_eq!(op.index(), recv_b);
        let got = op.recv(&b_rx).expect("open");
        assert_eq!(got.value, 10);
        drop(got);
        assert_eq!(drops.get(), 1);
        assert!(sel.try_select().is_none(), "b is empty again");

        // The unfired send arms kept their values: room on `full` lets arm 3 send its 2.
        assert_eq!(full_rx.try_recv().unwrap().value, 0);
        assert_eq!(drops.get(), 2);
        let op = sel.try_select().expect("full has room");
        assert_eq!(op.index(), send_full);
        assert!(op.send(&full_tx).is_ok());
        assert_eq!(drops.get(), 2, "a delivered value is not dropped");
        // Spent: even with room again, arm 3 does not send a second time.
        let delivered = full_rx.try_recv().expect("the kept value was delivered");
        assert_eq!(delivered.value, 2);
        drop(delivered);
        assert_eq!(drops.get(), 3);
        for _ in 0..10 {
            assert!(sel.try_select().is_none(), "a fired send arm is spent");
        }
        assert!(full_rx.is_empty());

        // remove(i) drops the unsent value of arm 2 at once.
        sel.remove(send_rv);
        assert_eq!(drops.get(), 4, "remove drops the arm's unsent value");
        // Removing again (or a spent arm) is harmless and drops nothing more.
        sel.remove(send_rv);
        sel.remove(send_full);
        assert_eq!(drops.get(), 4);
        drop(sel);
        assert_eq!(drops.get(), 4);
        assert_eq!(rv_rx.try_recv().unwrap_err(), TryRecvError::Empty);

        // An unfired send arm's value is dropped with its Select, undelivered.
        let mut sel = Select::new();
        sel.send(&full_tx, Tracked::new(20, &drops));
        sel.send(&full_tx, Tracked::new(21, &drops));
        let op = sel.try_select().expect("full has room for one");
        let fired = op.index();
        assert!(op.send(&full_tx).is_ok());
        assert!(sel.try_select().is_none(), "full is full again");
        drop(sel);
        assert_eq!(drops.get(), 5, "the other arm's value went with the Select");
        assert_eq!(full_rx.try_recv().unwrap().value, 20 + fired as u64);
        assert_eq!(drops.get(), 6);

        // An unread Selected of a send arm: the value is delivered, the arm spent.
        let mut sel = Select::new();
        sel.send(&b_tx, Tracked::new(30, &drops));
        drop(sel.try_select().expect("b has room"));
        assert!(sel.try_select().is_none(), "spent");
        assert_eq!(b_rx.try_recv().unwrap().value, 30);
        assert_eq!(drops.get(), 7);

        // With no arm at all, try_select is None.
        let mut empty = Select::new();
        assert!(empty.try_select().is_none());
        let i = empty.recv(&b_rx);
        empty.remove(i);
        assert!(empty.try_select().is_none());

        // A rendezvous send arm fires once a receiver waits.
        let mut sel = Select::new();
        let s = sel.send(&rv_tx, Tracked::new(40, &drops));
        {
            let mut recv = pin!(rv_rx.recv());
            assert!(poll_noop(recv.as_mut()).is_pending());
            let op = sel.try_select().expect("a receiver waits");
            assert_eq!(op.index(), s);
            assert!(op.send(&rv_tx).is_ok());
            match poll_noop(recv.as_mut()) {
                Poll::Ready(Ok(v)) => assert_eq!(v.value, 40),
                other => panic!("the waiting receiver got {other:?}"),
            }
        }
        assert_eq!(drops.get(), 8);
        drop(sel);
        assert_eq!(drops.get(), 8);
        drop(full_tx);
        drop(full_rx);
        assert_eq!(drops.get(), 8, "nothing was left in the channels");
    });
}

#[test]
fn a_pending_select_dropped_has_no_effect_unless_an_arm_was_committed() {
    bounded(30, || {
        let drops = Counter::new();
        let (tx, rx) = csp::channel::<Tracked>();
        let (_quiet_tx, quiet_rx) = csp::channel::<Tracked>();

        // 1. No counterpart: dropping the pending select changes nothing; the send
        //    arm keeps its value and delivers it later.
        let mut sel = Select::new();
        let s = sel.send(&tx, Tracked::new(1, &drops));
        let q = sel.recv(&quiet_rx);
        {
            let mut fut = pin!(sel.select());
            assert!(poll_noop(fut.as_mut()).is_pending());
            assert!(poll_noop(fut.as_mut()).is_pending());
        }
        assert_eq!(drops.get(), 0);
        assert_eq!(
            rx.try_recv().unwrap_err(),
            TryRecvError::Empty,
            "a cancelled send arm left no offer behind"
        );
        {
            let mut recv = pin!(rx.recv());
            assert!(poll_noop(recv.as_mut()).is_pending());
            let op = sel.try_select().expect("a receiver waits");
            assert_eq!(op.index(), s);
            assert!(op.send(&tx).is_ok());
            match poll_noop(recv.as_mut()) {
                Poll::Ready(Ok(v)) => assert_eq!(v.value, 1),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(drops.get(), 1);

        // 2. A receiver took the send arm's value while the select waited: dropping
        //    the select leaves it delivered; the arm is spent and sends nothing more.
        sel.remove(q);
        let s = sel.send(&tx, Tracked::new(2, &drops));
        let _q = sel.recv(&quiet_rx);
        {
            let (probe, waker) = CountingWaker::new();
            let mut fut = pin!(sel.select());
            assert!(poll_with(fut.as_mut(), &waker).is_pending());
            let got = rx.try_recv().expect("the waiting send arm is an offer");
            assert_eq!(got.value, 2);
            drop(got);
            assert_eq!(probe.wakes(), 1, "the select's owner was woken");
            // dropped without reading the outcome
        }
        assert_eq!(drops.get(), 2, "delivered once, not dropped by the cancel");
        {
            let mut recv = pin!(rx.recv());
            assert!(poll_noop(recv.as_mut()).is_pending());
            assert!(
                sel.try_select().is_none(),
                "arm {s} already delivered its value and is spent"
            );
            assert!(poll_noop(recv.as_mut()).is_pending());
        }
        drop(sel);
        assert_eq!(drops.get(), 2);

        // 3. A sender handed a value to the waiting recv arm; the select is dropped:
        //    the value goes back to the channel, ahead of the others.
        let (btx, brx) = csp::bounded::<Tracked>(1);
        let mut sel = Select::new();
        sel.recv(&brx);
        sel.recv(&quiet_rx);
        {
            let mut fut = pin!(sel.select());
            assert!(poll_noop(fut.as_mut()).is_pending());
            btx.try_send(Tracked::new(3, &drops))
                .expect("handed to the waiting arm");
            assert_eq!(brx.len(), 0, "handed over, not buffered");
            btx.try_send(Tracked::new(4, &drops)).expect("buffered");
        }
        assert_eq!(
            drops.get(),
            2,
            "the handed value was not dropped by the cancel"
        );
        assert_eq!(
            brx.len(),
            2,
            "given back ahead of the buffer (len may exceed cap)"
        );
        assert_eq!(
            brx.try_recv().unwrap().value,
            3,
            "the given-back value comes first"
        );
        assert_eq!(brx.try_recv().unwrap().value, 4);
        assert_eq!(drops.get(), 4);

        // Same on a rendezvous channel; the next select of the same Select gets it.
        {
            let mut fut = pin!(sel.select());
            assert!(poll_noop(fut.as_mut()).is_pending());
            btx.try_send(Tracked::new(5, &drops))
                .expect("handed to the waiting arm");
        }
        let (rtx, rrx) = csp::channel::<Tracked>();
        let mut sel2 = Select::new();
        let r = sel2.recv(&rrx);
        {
            let mut fut = pin!(sel2.select());
            assert!(poll_noop(fut.as_mut()).is_pending());
            rtx.try_send(Tracked::new(6, &drops))
                .expect("a rendezvous try_send succeeds with a waiting receiver");
        }
        assert_eq!(rrx.len(), 1, "given back to a rendezvous channel");
        let op = sel2.try_select().expect("the given-back value is there");
        assert_eq!(op.index(), r);
        assert_eq!(op.recv(&rrx).unwrap().value, 6);
        assert_eq!(drops.get(), 5);
        drop(sel);
        assert_eq!(brx.try_recv().unwrap().value, 5);
        assert_eq!(drops.get(), 6);
    });
}

#[test]
fn a_repolled_select_wakes_only_its_latest_waker() {
    bounded(30, || {
        let (tx, rx) = csp::channel::<u64>();
        let (_quiet_tx, quiet_rx) = csp::channel::<u64>();
        let mut sel = Select::new();
        let r = sel.recv(&rx);
        sel.recv(&quiet_rx);
        let (first, first_waker) = CountingWaker::new();
        let (second, second_waker) = CountingWaker::new();
        let mut fut = pin!(sel.select());
        assert!(poll_with(fut.as_mut(), &first_waker).is_pending());
        assert!(poll_with(fut.as_mut(), &second_waker).is_pending());
        assert!(poll_with(fut.as_mut(), &second_waker).is_pending());
        tx.try_send(3).expect("the select waits on rx");
        assert_eq!(second.wakes(), 1, "the latest waker is woken");
        assert_eq!(first.wakes(), 0, "a replaced waker is not");
        match poll_with(fut.as_mut(), &second_waker) {
            Poll::Ready(op) => {
                assert_eq!(op.index(), r);
                assert_eq!(op.recv(&rx), Ok(3));
            }
            Poll::Pending => panic!("woken but not ready"),
        }
    });
}

#[test]
fn two_arms_on_one_channel_take_or_give_one_value() {
    bounded(30, || {
        let drops = Counter::new();
        // Two recv arms on one bounded channel: the first value goes to one of them,
        // the second is buffered, not taken by the other arm.
        let (tx, rx) = csp::bounded::<Tracked>(1);
        let mut sel = Select::new();
        let arms = [sel.recv(&rx), sel.recv(&rx)];
        {
            let mut fut = pin!(sel.select());
            assert!(poll_noop(fut.as_mut()).is_pending());
            tx.try_send(Tracked::new(1, &drops))
                .expect("handed to an arm");
            tx.try_send(Tracked::new(2, &drops)).expect("buffered");
            assert!(matches!(
                tx.try_send(Tracked::new(3, &drops)),
                Err(TrySendError::Full(_))
            ));
            match poll_noop(fut.as_mut()) {
                Poll::Ready(op) => {
                    assert!(arms.contains(&op.index()));
                    assert_eq!(op.recv(&rx).unwrap().value, 1);
                }
                Poll::Pending => panic!("not ready"),
            }
        }
        assert_eq!(rx.len(), 1);
        assert_eq!(rx.try_recv().unwrap().value, 2);
        assert_eq!(drops.get(), 3);

        // Two send arms on one rendezvous channel: a receiver takes exactly one; the
        // other keeps its value for the next select.
        let (tx, rx) = csp::channel::<Tracked>();
        let mut sel = Select::new();
        let a = sel.send(&tx, Tracked::new(10, &drops));
        let b = sel.send(&tx, Tracked::new(11, &drops));
        let first = {
            let mut fut = pin!(sel.select());
            assert!(poll_noop(fut.as_mut()).is_pending());
            let got = rx.try_recv().expect("an offer waits");
            assert!(rx.try_recv().is_err(), "only one arm may fire");
            match poll_noop(fut.as_mut()) {
                Poll::Ready(op) => {
                    let i = op.index();
                    assert!(op.send(&tx).is_ok());
                    assert_eq!(got.value, if i == a { 10 } else { 11 });
                    i
                }
                Poll::Pending => panic!("not ready"),
            }
        };
        assert_eq!(drops.get(), 4);
        {
            let mut recv = pin!(rx.recv());
            assert!(poll_noop(recv.as_mut()).is_pending());
            let op = sel.try_select().expect("the other arm still has its value");
            assert_eq!(op.index(), if first == a { b } else { a });
            assert!(op.send(&tx).is_ok());
            match poll_noop(recv.as_mut()) {
                Poll::Ready(Ok(v)) => assert_eq!(v.value, if first == a { 11 } else { 10 }),
                other => panic!("{other:?}"),
            }
        }
        assert!(sel.try_select().is_none());
        assert_eq!(drops.get(), 5);
        drop(sel);
        assert_eq!(drops.get(), 5);
    });
}

// ---------------------------------------------------------------------------------------
// Closed channels
// ---------------------------------------------------------------------------------------

#[test]
fn arms_on_closed_channels_fire_with_their_errors() {
    bounded(30, || {
        let drops = Counter::new();
        let (tx, rx) = csp::bounded::<Tracked>(4);
        tx.try_send(Tracked::new(1, &drops)).unwrap();
        tx.try_send(Tracked::new(2, &drops)).unwrap();
        assert!(tx.close());
        let (_open_tx, open_rx) = csp::channel::<Tracked>();

        let mut sel = Select::new();
        let open = sel.recv(&open_rx);
        let closed = sel.recv(&rx);
        for want in [1, 2] {
            let op = sel.try_select().expect("buffered values first");
            assert_eq!(op.index(), closed);
            assert_eq!(op.recv(&rx).expect("buffered").value, want);
        }
        for _ in 0..3 {
            let op = sel.try_select().expect("closed and empty is ready");
            assert_eq!(op.index(), closed);
            assert_eq!(op.recv(&rx).unwrap_err(), RecvError);
        }
        assert_ne!(open, closed);
        drop(sel);
        assert_eq!(drops.get(), 2);

        // A send arm on a closed channel returns its value.
        let (stx, srx) = csp::channel::<Tracked>();
        drop(srx);
        let mut sel = Select::new();
        let o = sel.recv(&open_rx);
        let s = sel.send(&stx, Tracked::new(7, &drops));
        let op = sel.try_select().expect("closed send arm is ready");
        assert_eq!(op.index(), s);
        let SendError(back) = op.send(&stx).unwrap_err();
        assert_eq!(back.value, 7);
        assert_eq!(drops.get(), 2, "the value came back, not dropped");
        drop(back);
        assert_eq!(drops.get(), 3);
        assert!(sel.try_select().is_none(), "the send arm is spent");
        sel.remove(o);
        drop(sel);

        // Closed while waiting: a recv arm fires with RecvError, a send arm with its
        // value; the waiting select is woken.
        let (wtx, wrx) = csp::channel::<Tracked>();
        let mut sel = Select::new();
        let _o = sel.recv(&open_rx);
        let w = sel.recv(&wrx);
        {
            let (probe, waker) = CountingWaker::new();
            let mut fut = pin!(sel.select());
            assert!(poll_with(fut.as_mut(), &waker).is_pending());
            drop(wtx);
            assert_eq!(probe.wakes(), 1, "the close woke the select");
            match poll_with(fut.as_mut(), &waker) {
                Poll::Ready(op) => {
                    assert_eq!(op.index(), w);
                    assert_eq!(op.recv(&wrx).unwrap_err(), RecvError);
                }
                Poll::Pending => panic!("a recv arm on a closed channel did not fire"),
            }
        }
        drop(sel);

        let (vtx, vrx) = csp::bounded::<Tracked>(1);
        vtx.try_send(Tracked::new(8, &drops)).unwrap();
        let mut sel = Select::new();
        let _o = sel.recv(&open_rx);
        let v = sel.send(&vtx, Tracked::new(9, &drops));
        {
            let (probe, waker) = CountingWaker::new();
            let mut fut = pin!(sel.select());
            assert!(poll_with(fut.as_mut(), &waker).is_pending());
            assert!(vrx.close());
            assert_eq!(probe.wakes(), 1);
            // Room frees up after the close: the send must still fail.
            assert_eq!(vrx.try_recv().unwrap().value, 8);
            match poll_with(fut.as_mut(), &waker) {
                Poll::Ready(op) => {
                    assert_eq!(op.index(), v);
                    let SendError(back) = op.send(&vtx).unwrap_err();
                    assert_eq!(back.value, 9);
                }
                Poll::Pending => panic!("a send arm on a closed channel did not fire"),
            }
        }
        assert_eq!(vrx.try_recv().unwrap_err(), TryRecvError::Closed);
        drop(sel);
        assert_eq!(drops.get(), 5);
    });
}
