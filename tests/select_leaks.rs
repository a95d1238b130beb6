//! `Select`'s futures and outcomes given to `mem::forget`: no freed entry stays
//! linked, no channel is wedged, no value lost.
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use csp::Select;
use csp::{TryRecvError, TrySendError};
use std::task::Poll;

mod common;

use common::poll_noop;
use common::{Counter, Tracked, bounded};

// ---------------------------------------------------------------------------------------
// Leaks: a SelectFuture or a Selected given to mem::forget
// ---------------------------------------------------------------------------------------

/// A pending `SelectFuture` leaked with `mem::forget`, then its `Select` dropped: the
/// arms' entries must not stay linked in the channel (it would reach into freed memory).
#[test]
fn a_leaked_pending_select_leaves_no_entry_behind_when_the_select_goes() {
    bounded(10, || {
        let (tx, rx) = csp::channel::<u32>();
        let mut sel = Select::new();
        sel.recv(&rx);
        let mut future = Box::pin(sel.select());
        assert!(poll_noop(future.as_mut()).is_pending());
        common::forget_boxed(future);
        drop(sel);
        assert_eq!(tx.try_send(7), Err(TrySendError::Full(7)));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    });
}

/// A leaked pending select that a sender completed before the `Select` was dropped:
/// the value it was handed goes back to the channel, as for a dropped select.
#[test]
fn a_leaked_select_that_was_handed_a_value_gives_it_back() {
    bounded(10, || {
        let drops = Counter::new();
        let (tx, rx) = csp::channel::<Tracked>();
        let mut sel = Select::new();
        sel.recv(&rx);
        let mut future = Box::pin(sel.select());
        assert!(poll_noop(future.as_mut()).is_pending());
        common::forget_boxed(future);
        tx.try_send(Tracked::new(5, &drops)).unwrap();
        drop(sel);
        assert_eq!(drops.get(), 0);
        assert_eq!(rx.try_recv().map(|t| t.value), Ok(5));
        assert_eq!(drops.get(), 1);
    });
}

/// The same `Select` used again after a pending future of it was leaked: each arm waits
/// once (its entry is not linked twice) and fires once.
#[test]
fn a_select_used_again_after_a_leaked_future_waits_once_per_arm() {
    bounded(10, || {
        let (tx, rx) = csp::channel::<u32>();
        let (_tx2, rx2) = csp::channel::<u32>();
        let mut sel = Select::new();
        let a = sel.recv(&rx);
        sel.recv(&rx2);
        let mut leaked = Box::pin(sel.select());
        assert!(poll_noop(leaked.as_mut()).is_pending());
        common::forget_boxed(leaked);

        let mut future = Box::pin(sel.select());
        assert!(poll_noop(future.as_mut()).is_pending());
        assert_eq!(tx.try_send(1), Ok(()));
        assert_eq!(
            tx.try_send(2),
            Err(TrySendError::Full(2)),
            "one receiver waited"
        );
        let Poll::Ready(op) = poll_noop(future.as_mut()) else {
            panic!("the select fired")
        };
        assert_eq!(op.index(), a);
        assert_eq!(op.recv(&rx), Ok(1));
        drop(future);
        assert_eq!(
            tx.try_send(3),
            Err(TrySendError::Full(3)),
            "nobody waits now"
        );
        drop(sel);
        assert_eq!(tx.try_send(4), Err(TrySendError::Full(4)));
    });
}

/// A `Selected` of a send arm given to `mem::forget`: the arm is spent all the same, so
/// the next `try_select` neither fires it again nor panics (under a channel lock, which
/// would wedge the channel), and the channel keeps working.
#[test]
fn a_forgotten_selected_send_spends_its_arm_and_wedges_nothing() {
    bounded(10, || {
        let (tx, rx) = csp::bounded::<u32>(4);
        let (_tx2, rx2) = csp::bounded::<u32>(4);
        let mut sel = Select::new();
        let s = sel.send(&tx, 1);
        sel.recv(&rx2);
        let selected = sel.try_select().expect("the send arm is ready");
        assert_eq!(selected.index(), s);
        std::mem::forget(selected);
        assert!(sel.try_select().is_none(), "the send arm is spent");
        drop(sel);
        assert_eq!(tx.try_send(2), Ok(()));
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(rx.try_recv(), Ok(2));
    });
}

/// A `Selected` of a receive arm given to `mem::forget`: its value is dropped by the
/// next select (as an unread `Selected` drops it), exactly once, and the arm is
/// usable again.
#[test]
fn a_forgotten_selected_receive_drops_its_value_once() {
    bounded(10, || {
        let drops = Counter::new();
        let (tx, rx) = csp::bounded::<Tracked>(4);
        let mut sel = Select::new();
        let r = sel.recv(&rx);
        tx.try_send(Tracked::new(1, &drops)).unwrap();
        tx.try_send(Tracked::new(2, &drops)).unwrap();
        let selected = sel.try_select().expect("a value is buffered");
        std::mem::forget(selected);
        assert_eq!(drops.get(), 0);
        let op = sel.try_select().expect("another value is buffered");
        assert_eq!(drops.get(), 1, "the forgotten outcome was dropped");
        assert_eq!(op.index(), r);
        assert_eq!(op.recv(&rx).map(|t| t.value), Ok(2));
        assert_eq!(drops.get(), 2);
    });
}
