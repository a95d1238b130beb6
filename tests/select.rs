//! `csp::Select` from the outside: API.md's "alt! / prialt! — CSP choice" contract for the
//! run-time choice. Fairness and bias (also beyond the arms a choice keeps inline),
//! `try_select`, send arms that keep or spend their values, cancelling a pending select
//! (with and without a committed counterpart), closed channels, the matching of choices
//! on one shared channel (and a choice never pairing with itself), choice against choice
//! on both ends and in a mesh of overlapping channel sets, cancellation and abort storms
//! on the receive and the send side, `Stream` readers, misuse of `Selected`, `Send`,
//! process dumps, and a `Select` awaited from a tokio task.
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use std::collections::HashSet;
use std::future::{Future, poll_fn};
use std::panic::AssertUnwindSafe;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use csp::{ProcessState, Receiver, RecvError, Runtime, Select, Selected, SendError, Sender};
use csp::{TryRecvError, TrySendError};
use futures::future::{Either, join_all};

mod common;

use common::{
    Counter, CountingWaker, Rng, Tracked, bounded, panic_message, runtime, scaled, wait_until,
};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// Polls `future` once with a waker that does nothing.
fn poll_noop<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    let waker = futures::task::noop_waker();
    future.poll(&mut Context::from_waker(&waker))
}

/// Polls `future` once with `waker`.
fn poll_with<F: Future + ?Sized>(future: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(waker))
}

/// Waits until process `id` is Sleeping, and returns its `waiting_on`.
#[track_caller]
fn wait_sleeping(rt: &Runtime, id: u64) -> Option<String> {
    let mut found = None;
    wait_until(10, &format!("process #{id} sleeps"), || {
        found = rt
            .processes()
            .into_iter()
            .find(|p| p.id == id && p.state == ProcessState::Sleeping)
            .map(|p| p.waiting_on);
        found.is_some()
    });
    found.expect("found")
}

/// `sel.select()`, polled at most `polls` (>= 1) times, waking itself between polls (so
/// each poll follows a trip through the scheduler), then dropped if still pending.
async fn select_within<'s, 'a>(sel: &'s mut Select<'a>, polls: u64) -> Option<Selected<'s>> {
    let mut fut = pin!(sel.select());
    let mut left = polls.max(1);
    poll_fn(move |cx| match fut.as_mut().poll(cx) {
        Poll::Ready(op) => Poll::Ready(Some(op)),
        Poll::Pending if left <= 1 => Poll::Ready(None),
        Poll::Pending => {
            left -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}

/// `sel.select()` raced against `csp::yield_now()`; dropped if the yield wins.
async fn select_or_yield<'s, 'a>(sel: &'s mut Select<'a>) -> Option<Selected<'s>> {
    let fut = pin!(sel.select());
    let yielded = pin!(csp::yield_now());
    match futures::future::select(fut, yielded).await {
        Either::Left((op, _)) => Some(op),
        // The select future, pinned in this frame, is dropped (cancelled) on return.
        Either::Right(((), _pending)) => None,
    }
}

/// `sel.select()` polled once; if pending, left pending (but registered) for `yields`
/// trips through the scheduler, then dropped: a counterpart may commit to an arm
/// meanwhile, so the drop must undo or keep exactly that one operation.
async fn select_then_abandon<'s, 'a>(sel: &'s mut Select<'a>, yields: u64) -> Option<Selected<'s>> {
    let mut fut = pin!(sel.select());
    if let Poll::Ready(op) = poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await {
        return Some(op);
    }
    for _ in 0..yields {
        csp::yield_now().await;
    }
    None
}

/// One select, cancelled at random: awaited in full, polled a few times, raced with a
/// yield, or left pending a while and dropped. `None` if it was dropped pending.
async fn maybe_cancelled<'s, 'a>(sel: &'s mut Select<'a>, rng: &mut Rng) -> Option<Selected<'s>> {
    match rng.below(8) {
        0 | 1 => Some(sel.select().await),
        2 | 3 => {
            let polls = 1 + rng.below(4);
            select_within(sel, polls).await
        }
        4 | 5 => select_or_yield(sel).await,
        _ => {
            let yields = 1 + rng.below(3);
            select_then_abandon(sel, yields).await
        }
    }
}

/// Checks that `wins` (10_000 choices among 4 arms) gives each arm 20–30 %.
#[track_caller]
fn assert_fair(wins: &[usize; 4], what: &str) {
    let total: usize = wins.iter().sum();
    assert_eq!(total, 10_000, "{what}: {wins:?}");
    for (arm, &n) in wins.iter().enumerate() {
        assert!(
            (2_000..=3_000).contains(&n),
            "{what}: arm {arm} won {n} of 10000 choices among 4 always-ready arms \
             (expected 2000..=3000): {wins:?}"
        );
    }
}

/// A value that logs its id when dropped: each id must appear exactly once in the log.
#[derive(Debug)]
struct Logged {
    id: u64,
    log: Arc<Mutex<Vec<u64>>>,
}

impl Logged {
    fn new(id: u64, log: &Arc<Mutex<Vec<u64>>>) -> Logged {
        Logged {
            id,
            log: log.clone(),
        }
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        self.log.lock().unwrap().push(self.id);
    }
}

fn make<T>(kind: usize) -> (Sender<T>, Receiver<T>) {
    match kind {
        0 => csp::channel(),
        1 => csp::bounded(2),
        _ => csp::unbounded(),
    }
}

// ---------------------------------------------------------------------------------------
// Fairness and bias
// ---------------------------------------------------------------------------------------

#[test]
fn a_fair_select_spreads_its_choices_over_ready_arms() {
    bounded(60, || {
        let chans: Vec<(Sender<u64>, Receiver<u64>)> = (0..4).map(|_| csp::bounded(1)).collect();
        for (i, (tx, _)) in chans.iter().enumerate() {
            tx.try_send(i as u64).unwrap();
        }

        // One Select reused 10_000 times through try_select.
        let mut wins = [0usize; 4];
        {
            let mut sel = Select::new();
            for (i, (_, rx)) in chans.iter().enumerate() {
                assert_eq!(sel.recv(rx), i);
            }
            for _ in 0..10_000 {
                let op = sel.try_select().expect("every arm is ready");
                let i = op.index();
                assert_eq!(op.recv(&chans[i].1), Ok(i as u64));
                chans[i].0.try_send(i as u64).unwrap();
                wins[i] += 1;
            }
        }
        assert_fair(&wins, "try_select on a reused Select");

        // A fresh Select each time, awaited inside a runtime.
        let rt = runtime(1, "select-fair");
        let wins = rt.block_on(async {
            let mut wins = [0usize; 4];
            for _ in 0..10_000 {
                let mut sel = Select::new();
                for (_, rx) in &chans {
                    sel.recv(rx);
                }
                let op = sel.select().await;
                let i = op.index();
                assert_eq!(op.recv(&chans[i].1), Ok(i as u64));
                chans[i].0.try_send(i as u64).unwrap();
                wins[i] += 1;
            }
            wins
        });
        assert_fair(&wins, "select().await on fresh Selects");

        // Fair over send arms too: 4 unbounded channels, always ready.
        let outs: Vec<(Sender<u64>, Receiver<u64>)> = (0..4).map(|_| csp::unbounded()).collect();
        let mut wins = [0usize; 4];
        for k in 0..10_000u64 {
            let mut sel = Select::new();
            for (tx, _) in &outs {
                sel.send(tx, k);
            }
            let op = sel.try_select().expect("unbounded send arms are ready");
            let i = op.index();
            assert_eq!(op.send(&outs[i].0), Ok(()));
            wins[i] += 1;
        }
        assert_fair(&wins, "send arms");
        let delivered: usize = outs.iter().map(|(_, rx)| rx.len()).sum();
        assert_eq!(delivered, 10_000, "exactly one send arm fires per select");
    });
}

#[test]
fn a_biased_select_takes_the_first_ready_arm() {
    bounded(30, || {
        let chans: Vec<(Sender<u64>, Receiver<u64>)> = (0..4).map(|_| csp::bounded(1)).collect();
        for (i, (tx, _)) in chans.iter().enumerate() {
            tx.try_send(i as u64).unwrap();
        }
        let mut sel = Select::new_biased();
        for (_, rx) in &chans {
            sel.recv(rx);
        }
        // All ready: arm 0 every time.
        for _ in 0..1_000 {
            let op = sel.try_select().expect("all ready");
            assert_eq!(
                op.index(),
                0,
                "biased: the first arm wins while it is ready"
            );
            assert_eq!(op.recv(&chans[0].1), Ok(0));
            chans[0].0.try_send(0).unwrap();
        }
        // Arm 0 not ready: arm 1 every time.
        assert_eq!(chans[0].1.try_recv(), Ok(0));
        for _ in 0..1_000 {
            let op = sel.try_select().expect("arms 1..4 ready");
            assert_eq!(op.index(), 1, "biased: arm 0 is not ready, arm 1 is");
            assert_eq!(op.recv(&chans[1].1), Ok(1));
            chans[1].0.try_send(1).unwrap();
        }
        // Awaited, too.
        let rt = runtime(1, "select-biased");
        rt.block_on(async {
            for _ in 0..1_000 {
                let op = sel.select().await;
                assert_eq!(op.index(), 1);
                assert_eq!(op.recv(&chans[1].1), Ok(1));
                chans[1].0.try_send(1).unwrap();
            }
        });
        drop(sel);

        // Mixed arms: a send on a full channel (not ready), a ready recv, a ready send.
        let (full_tx, full_rx) = csp::bounded::<u64>(1);
        full_tx.try_send(100).unwrap();
        let (ready_tx, ready_rx) = csp::unbounded::<u64>();
        let (out_tx, out_rx) = csp::unbounded::<u64>();
        for k in 0..100 {
            ready_tx.try_send(k).unwrap();
            let mut sel = Select::new_biased();
            let blocked = sel.send(&full_tx, 1_000 + k);
            let recv = sel.recv(&ready_rx);
            let _send = sel.send(&out_tx, 2_000 + k);
            let op = sel.try_select().expect("arms 1 and 2 are ready");
            assert_ne!(op.index(), blocked);
            assert_eq!(op.index(), recv);
            assert_eq!(op.recv(&ready_rx), Ok(k));
        }
        assert_eq!(full_rx.len(), 1, "the unready send arm never sent");
        assert!(out_rx.is_empty(), "the later ready send arm never sent");
    });
}

#[test]
fn selects_with_many_arms_choose_correctly() {
    bounded(30, || {
        // More arms than a choice keeps inline (beyond 16), and back below.
        const N: usize = 40;
        let chans: Vec<(Sender<u64>, Receiver<u64>)> = (0..N).map(|_| csp::bounded(1)).collect();
        let mut sel = Select::new_biased();
        for (i, (_, rx)) in chans.iter().enumerate() {
            assert_eq!(sel.recv(rx), i);
        }
        assert!(sel.try_select().is_none());
        // Biased: the lowest ready index wins, wherever it is.
        for &ready in &[39usize, 17, 16, 15, 0, 25] {
            for (i, (tx, _)) in chans.iter().enumerate().skip(ready) {
                if i % 2 == ready % 2 {
                    tx.try_send(i as u64).unwrap();
                }
            }
            let op = sel.try_select().expect("ready");
            assert_eq!(op.index(), ready);
            assert_eq!(op.recv(&chans[ready].1), Ok(ready as u64));
            for (_, rx) in &chans {
                let _ = rx.try_recv();
            }
        }
        // Remove arms down to 10 (inline again): removed arms never fire.
        for i in 10..N {
            sel.remove(i);
        }
        for (i, (tx, _)) in chans.iter().enumerate().rev() {
            tx.try_send(i as u64).unwrap();
        }
        let op = sel.try_select().expect("ready");
        assert_eq!(op.index(), 0);
        assert_eq!(op.recv(&chans[0].1), Ok(0));
        for (expect, (_, rx)) in chans.iter().enumerate().take(10).skip(1) {
            let op = sel.try_select().expect("ready");
            assert_eq!(op.index(), expect);
            assert_eq!(op.recv(rx), Ok(expect as u64));
        }
        assert!(sel.try_select().is_none(), "arms 10.. were removed");
        for (i, (_, rx)) in chans.iter().enumerate().skip(10) {
            assert_eq!(rx.try_recv(), Ok(i as u64), "untouched by removed arms");
        }
        drop(sel);

        // Fair over 40 arms, all ready: every arm wins sometimes, none dominates.
        for (i, (tx, _)) in chans.iter().enumerate() {
            tx.try_send(i as u64).unwrap();
        }
        let mut sel = Select::new();
        for (_, rx) in &chans {
            sel.recv(rx);
        }
        let mut wins = [0usize; N];
        for _ in 0..8_000 {
            let op = sel.try_select().expect("all ready");
            let i = op.index();
            assert_eq!(op.recv(&chans[i].1), Ok(i as u64));
            chans[i].0.try_send(i as u64).unwrap();
            wins[i] += 1;
        }
        // 200 expected each; sd ~14.
        assert!(wins.iter().all(|&w| (120..=280).contains(&w)), "{wins:?}");
        drop(sel);

        // Waiting over 40 channels, woken by the last one, in a process.
        for (_, rx) in &chans {
            let _ = rx.try_recv();
        }
        let rt = runtime(1, "select-many");
        let rxs: Vec<Receiver<u64>> = chans.iter().map(|(_, rx)| rx.clone()).collect();
        let h = rt.spawn(async move {
            let mut sel = Select::new();
            for rx in &rxs {
                sel.recv(rx);
            }
            let op = sel.select().await;
            let i = op.index();
            (i, op.recv(&rxs[i]))
        });
        assert_eq!(
            wait_sleeping(&rt, h.id()).as_deref(),
            Some("alt over 40 channels")
        );
        chans[N - 1].0.try_send(99).unwrap();
        assert_eq!(rt.block_on(h).unwrap(), (N - 1, Ok(99)));
        for (_, rx) in &chans {
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        }
    });
}

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

// ---------------------------------------------------------------------------------------
// Choices meeting on one channel; a choice never pairs with itself
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Got {
    Sent(u64),
    Received(u64),
}

/// A process's choice on the shared channel: receive someone's id or send its own.
async fn match_one(id: u64, tx: Sender<Tracked>, rx: Receiver<Tracked>, drops: Counter) -> Got {
    let (mut sel, recv_first) = match id % 3 {
        0 => (Select::new_biased(), true),
        1 => (Select::new_biased(), false),
        _ => (Select::new(), id % 2 == 0),
    };
    let (r, s) = if recv_first {
        let r = sel.recv(&rx);
        (r, sel.send(&tx, Tracked::new(id, &drops)))
    } else {
        let s = sel.send(&tx, Tracked::new(id, &drops));
        (sel.recv(&rx), s)
    };
    // `op` is scoped to this block: see `selected_is_send`.
    let got = {
        let op = sel.select().await;
        match op.index() {
            i if i == r => Got::Received(op.recv(&rx).expect("the channel is open").value),
            i if i == s => {
                op.send(&tx).expect("the channel is open");
                Got::Sent(id)
            }
            i => panic!("no arm {i}"),
        }
    };
    if id % 4 == 0 {
        csp::yield_now().await;
    }
    got
}

#[test]
fn choices_on_one_shared_channel_pair_up_with_each_other() {
    bounded(60, || {
        const N: u64 = 44;
        let rt = runtime(2, "select-match");
        let drops = Counter::new();
        let (tx, rx) = csp::channel::<Tracked>();
        for round in 0..50u64 {
            let handles: Vec<_> = (0..N)
                .map(|i| {
                    let id = round * 1_000 + i;
                    rt.spawn(match_one(id, tx.clone(), rx.clone(), drops.clone()))
                })
                .collect();
            let results: Vec<Got> = rt
                .block_on(join_all(handles))
                .into_iter()
                .map(|r| r.expect("no process panics"))
                .collect();
            let sent: HashSet<u64> = results
                .iter()
                .filter_map(|g| match g {
                    Got::Sent(id) => Some(*id),
                    Got::Received(_) => None,
                })
                .collect();
            let mut received: Vec<u64> = results
                .iter()
                .filter_map(|g| match g {
                    Got::Received(id) => Some(*id),
                    Got::Sent(_) => None,
                })
                .collect();
            received.sort_unstable();
            let mut sent_sorted: Vec<u64> = sent.iter().copied().collect();
            sent_sorted.sort_unstable();
            assert_eq!(sent.len(), (N / 2) as usize, "round {round}: {results:?}");
            assert_eq!(
                received, sent_sorted,
                "round {round}: received ids == sent ids"
            );
            // Nobody received its own id (a choice never pairs with itself).
            for (i, g) in results.iter().enumerate() {
                assert_ne!(*g, Got::Received(round * 1_000 + i as u64), "self-pairing");
            }
            assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Empty);
            assert_eq!(
                drops.get(),
                ((round + 1) * N) as usize,
                "round {round}: every id dropped once (received or unsent)"
            );
        }
    });
}

#[test]
fn a_select_with_both_ends_of_one_channel_never_completes_alone() {
    bounded(30, || {
        let drops = Counter::new();
        let (tx, rx) = csp::channel::<Tracked>();

        for (round, biased) in [false, true].into_iter().enumerate() {
            let mut sel = if biased {
                Select::new_biased()
            } else {
                Select::new()
            };
            sel.recv(&rx);
            sel.send(&tx, Tracked::new(1, &drops));
            sel.recv(&rx);
            sel.send(&tx, Tracked::new(2, &drops));
            for _ in 0..200 {
                assert!(
                    sel.try_select().is_none(),
                    "paired with itself (biased: {biased})"
                );
            }
            // Awaited by hand: pending, never woken by itself.
            {
                let (probe, waker) = CountingWaker::new();
                let mut fut = pin!(sel.select());
                for _ in 0..50 {
                    assert!(poll_with(fut.as_mut(), &waker).is_pending());
                }
                assert_eq!(probe.wakes(), 0);
            }
            assert_eq!(
                drops.get(),
                2 * round,
                "no value dropped while the Select lives"
            );
        }
        assert_eq!(drops.get(), 4);
        assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Empty);

        // In a process: it sleeps on "alt over 1 channel", stays pending, and aborts.
        let rt = runtime(2, "select-self");
        let spawn_self = |id: u64| {
            let (tx, rx, d) = (tx.clone(), rx.clone(), drops.clone());
            rt.spawn(async move {
                let mut sel = Select::new();
                let s = sel.send(&tx, Tracked::new(id, &d));
                let r = sel.recv(&rx);
                let op = sel.select().await;
                if op.index() == s {
                    op.send(&tx).expect("open");
                    Got::Sent(id)
                } else {
                    assert_eq!(op.index(), r);
                    Got::Received(op.recv(&rx).expect("open").value)
                }
            })
        };
        let h = spawn_self(10);
        assert_eq!(
            wait_sleeping(&rt, h.id()).as_deref(),
            Some("alt over 1 channel")
        );
        std::thread::sleep(Duration::from_millis(200));
        assert!(!h.is_finished(), "the select completed with itself");
        assert_eq!(drops.get(), 4);
        h.abort();
        let err = rt.block_on(h).expect_err("aborted");
        assert!(err.is_cancelled());
        assert_eq!(
            drops.get(),
            5,
            "the unsent value went with the aborted process"
        );
        assert_eq!(
            rx.try_recv().unwrap_err(),
            TryRecvError::Empty,
            "no stale offer"
        );
        assert!(
            matches!(
                tx.try_send(Tracked::new(0, &drops)),
                Err(TrySendError::Full(_))
            ),
            "no stale receiver"
        );
        assert_eq!(drops.get(), 6);

        // With a third party, it pairs with exactly one of its arms.
        let h = spawn_self(20);
        wait_sleeping(&rt, h.id());
        let got = rt.block_on(async { rx.recv().await.expect("open") });
        assert_eq!(got.value, 20);
        drop(got);
        assert_eq!(rt.block_on(h).unwrap(), Got::Sent(20));
        assert_eq!(drops.get(), 7);

        let h = spawn_self(30);
        wait_sleeping(&rt, h.id());
        rt.block_on(async { tx.send(Tracked::new(31, &drops)).await.expect("open") });
        assert_eq!(rt.block_on(h).unwrap(), Got::Received(31));
        assert_eq!(
            drops.get(),
            9,
            "31 received and dropped, 30 unsent and dropped"
        );
        assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Empty);
    });
}

// ---------------------------------------------------------------------------------------
// Choice against choice on both ends
// ---------------------------------------------------------------------------------------

#[test]
fn select_against_select_on_both_ends_moves_one_value_per_round() {
    bounded(60, || {
        const PAIRS: u64 = 4;
        const ROUNDS: u64 = 1_000;
        let rt = runtime(2, "select-pairs");
        let drops = Counter::new();
        let mut keep = Vec::new();
        let mut handles = Vec::new();
        for pair in 0..PAIRS {
            let (tx1, rx1) = csp::channel::<Tracked>();
            let (tx2, rx2) = csp::channel::<Tracked>();
            keep.push((tx1.clone(), rx1.clone(), tx2.clone(), rx2.clone()));
            let d = drops.clone();
            // P: {send(c1, x), recv(c2)}.
            let p = rt.spawn(async move {
                let mut out = Vec::new();
                for k in 0..ROUNDS {
                    let x = pair * 1_000_000 + 2 * k;
                    let mut sel = if pair == 3 {
                        Select::new_biased()
                    } else {
                        Select::new()
                    };
                    let s = sel.send(&tx1, Tracked::new(x, &d));
                    let r = sel.recv(&rx2);
                    let op = sel.select().await;
                    out.push(if op.index() == s {
                        op.send(&tx1).expect("open");
                        Got::Sent(x)
                    } else {
                        assert_eq!(op.index(), r);
                        Got::Received(op.recv(&rx2).expect("open").value)
                    });
                }
                out
            });
            let d = drops.clone();
            // Q: {recv(c1), send(c2, y)}, arms in the other order for odd pairs.
            let q = rt.spawn(async move {
                let mut out = Vec::new();
                for k in 0..ROUNDS {
                    let y = pair * 1_000_000 + 2 * k + 1;
                    let mut sel = if pair == 3 {
                        Select::new_biased()
                    } else {
                        Select::new()
                    };
                    let (r, s) = if pair % 2 == 0 {
                        let r = sel.recv(&rx1);
                        (r, sel.send(&tx2, Tracked::new(y, &d)))
                    } else {
                        let s = sel.send(&tx2, Tracked::new(y, &d));
                        (sel.recv(&rx1), s)
                    };
                    let op = sel.select().await;
                    out.push(if op.index() == s {
                        op.send(&tx2).expect("open");
                        Got::Sent(y)
                    } else {
                        assert_eq!(op.index(), r);
                        Got::Received(op.recv(&rx1).expect("open").value)
                    });
                }
                out
            });
            handles.push((p, q));
        }
        let results = rt.block_on(async {
            let mut all = Vec::new();
            for (p, q) in handles {
                all.push((p.await.unwrap(), q.await.unwrap()));
            }
            all
        });
        for (pair, (ps, qs)) in results.iter().enumerate() {
            let pair = pair as u64;
            assert_eq!(ps.len() as u64, ROUNDS);
            assert_eq!(qs.len() as u64, ROUNDS);
            let mut forward = 0;
            for k in 0..ROUNDS {
                let x = pair * 1_000_000 + 2 * k;
                let y = x + 1;
                let (p, q) = (ps[k as usize], qs[k as usize]);
                match (p, q) {
                    (Got::Sent(a), Got::Received(b)) if a == x && b == x => forward += 1,
                    (Got::Received(a), Got::Sent(b)) if a == y && b == y => {}
                    _ => panic!("pair {pair} round {k}: P got {p:?}, Q got {q:?} (x = {x})"),
                }
            }
            if pair != 3 {
                // Fair choices: whoever arrives second picks either transfer.
                assert!(
                    forward > ROUNDS / 10 && forward < ROUNDS * 9 / 10,
                    "pair {pair}: {forward} of {ROUNDS} rounds went P -> Q"
                );
            }
        }
        for (_, rx1, _, rx2) in &keep {
            assert_eq!(rx1.try_recv().unwrap_err(), TryRecvError::Empty);
            assert_eq!(rx2.try_recv().unwrap_err(), TryRecvError::Empty);
        }
        drop(rt);
        assert_eq!(
            drops.get() as u64,
            2 * ROUNDS * PAIRS,
            "each round: one value received, the other dropped unsent"
        );
    });
}

/// A mesh of processes, each looping over a Select with random send and recv arms on
/// random channels in random order (so concurrent choices lock overlapping channel sets
/// reached in different orders), plus a send and a recv arm on a shared `hub` so two
/// waiting processes can always meet, plus a recv arm on `stop`.
#[test]
fn a_mesh_of_selects_over_overlapping_channels_conserves_every_value() {
    bounded(60, || {
        const PROCS: u64 = 8;
        let target: usize = scaled(40_000);
        let rt = runtime(2, "select-mesh");
        let log = Arc::new(Mutex::new(Vec::new()));
        let transfers = Counter::new();
        let chans: Vec<(Sender<Logged>, Receiver<Logged>)> = (0..6)
            .map(|i| match i % 3 {
                0 => csp::channel(),
                1 => csp::bounded(1),
                _ => csp::bounded(3),
            })
            .collect();
        let (hub_tx, hub_rx) = csp::channel::<Logged>();
        let (stop_tx, stop_rx) = csp::channel::<()>();
        let handles: Vec<_> = (0..PROCS)
            .map(|p| {
                let txs: Vec<Sender<Logged>> = chans.iter().map(|(tx, _)| tx.clone()).collect();
                let rxs: Vec<Receiver<Logged>> = chans.iter().map(|(_, rx)| rx.clone()).collect();
                let (hub_tx, hub_rx, stop_rx) = (hub_tx.clone(), hub_rx.clone(), stop_rx.clone());
                let (log, transfers) = (log.clone(), transfers.clone());
                rt.spawn(async move {
                    let mut rng = Rng::new(7_000 + p);
                    let (mut created, mut sent, mut received) =
                        (Vec::new(), Vec::new(), Vec::new());
                    for round in 0u64.. {
                        let mut sel = if rng.below(3) == 0 {
                            Select::new_biased()
                        } else {
                            Select::new()
                        };
                        // Per arm: (its index, is it a send, its channel; 6 = the hub).
                        let mut arms: Vec<(usize, bool, usize)> = Vec::new();
                        let mut next_id = 0u64;
                        let mut id = |created: &mut Vec<u64>| {
                            next_id += 1;
                            let id = (p << 48) | (round << 8) | next_id;
                            created.push(id);
                            id
                        };
                        let hub = 6;
                        let mut plan: Vec<(bool, usize)> = vec![(true, hub), (false, hub)];
                        for _ in 0..1 + rng.below(4) {
                            plan.push((rng.below(2) == 0, rng.below(6) as usize));
                        }
                        // Shuffle the arms' insertion order.
                        for i in (1..plan.len()).rev() {
                            plan.swap(i, rng.below(i as u64 + 1) as usize);
                        }
                        let stop_first = rng.below(2) == 0;
                        let mut stop = usize::MAX;
                        if stop_first {
                            stop = sel.recv(&stop_rx);
                        }
                        for &(is_send, ch) in &plan {
                            let i = match (is_send, ch == hub) {
                                (true, true) => {
                                    sel.send(&hub_tx, Logged::new(id(&mut created), &log))
                                }
                                (false, true) => sel.recv(&hub_rx),
                                (true, false) => {
                                    sel.send(&txs[ch], Logged::new(id(&mut created), &log))
                                }
                                (false, false) => sel.recv(&rxs[ch]),
                            };
                            arms.push((i, is_send, ch));
                        }
                        if !stop_first {
                            stop = sel.recv(&stop_rx);
                        }
                        {
                            let op = sel.select().await;
                            let fired = op.index();
                            if fired == stop {
                                assert_eq!(op.recv(&stop_rx), Err(RecvError));
                                break;
                            }
                            let &(_, is_send, ch) =
                                arms.iter().find(|a| a.0 == fired).expect("an arm");
                            let (tx, rx) = if ch == hub {
                                (&hub_tx, &hub_rx)
                            } else {
                                (&txs[ch], &rxs[ch])
                            };
                            if is_send {
                                op.send(tx).expect("open");
                                sent.push(fired_id(&created, &arms, fired, p, round));
                            } else {
                                received.push(op.recv(rx).expect("open").id);
                            }
                        }
                        transfers.incr();
                        if rng.below(8) == 0 {
                            csp::yield_now().await;
                        }
                    }
                    (created, sent, received)
                })
            })
            .collect();
        wait_until(30, "the mesh made enough transfers", || {
            transfers.get() >= target
        });
        drop(stop_tx);
        let mut created = Vec::new();
        let mut sent = Vec::new();
        let mut received = Vec::new();
        for r in rt.block_on(join_all(handles)) {
            let (c, s, r) = r.expect("no process panics");
            created.extend(c);
            sent.extend(s);
            received.extend(r);
        }
        // Whatever is still buffered counts as received.
        for (_, rx) in &chans {
            while let Ok(v) = rx.try_recv() {
                received.push(v.id);
            }
        }
        assert_eq!(hub_rx.try_recv().unwrap_err(), TryRecvError::Empty);
        drop(chans);
        drop((hub_tx, hub_rx, stop_rx));
        drop(rt);

        let mut sent_sorted = sent.clone();
        sent_sorted.sort_unstable();
        let mut received_sorted = received.clone();
        received_sorted.sort_unstable();
        let dup = received_sorted.windows(2).find(|w| w[0] == w[1]);
        assert!(dup.is_none(), "received twice: {dup:?}");
        assert_eq!(
            sent_sorted.len(),
            received_sorted.len(),
            "every fired send arm's value is received once, and nothing else is"
        );
        assert_eq!(sent_sorted, received_sorted);
        let mut dropped = log.lock().unwrap().clone();
        dropped.sort_unstable();
        created.sort_unstable();
        assert_eq!(
            dropped.len(),
            created.len(),
            "each created value dropped exactly once"
        );
        assert_eq!(dropped, created);
    });
}

/// The id of the value carried by send arm `fired` of the round's Select: ids were
/// made in arm order, one per send arm, and `created` ends with this round's.
fn fired_id(
    created: &[u64],
    arms: &[(usize, bool, usize)],
    fired: usize,
    p: u64,
    round: u64,
) -> u64 {
    let sends_before = arms
        .iter()
        .take_while(|a| a.0 != fired)
        .filter(|a| a.1)
        .count() as u64;
    let id = (p << 48) | (round << 8) | (sends_before + 1);
    assert!(
        created.iter().rev().take(8).any(|&c| c == id),
        "made this round"
    );
    id
}

// ---------------------------------------------------------------------------------------
// Cancellation storms
// ---------------------------------------------------------------------------------------

/// Loops over a Select on the three receivers, dropping selects at random, until every
/// channel is closed and drained. Returns the ids received and the number of cancels.
async fn cancelling_consumer<T: Send>(
    rxs: [Receiver<T>; 3],
    seed: u64,
    id_of: fn(&T) -> u64,
) -> (Vec<u64>, u64) {
    let mut rng = Rng::new(seed);
    let mut got = Vec::new();
    let mut cancels = 0;
    let mut sel = if seed % 2 == 0 {
        Select::new()
    } else {
        Select::new_biased()
    };
    for rx in &rxs {
        sel.recv(rx);
    }
    let mut open = 3;
    while open > 0 {
        let (i, outcome) = {
            let Some(op) = maybe_cancelled(&mut sel, &mut rng).await else {
                cancels += 1;
                continue;
            };
            let i = op.index();
            (i, op.recv(&rxs[i]))
        };
        match outcome {
            Ok(value) => {
                got.push(id_of(&value));
                drop(value);
            }
            Err(RecvError) => {
                sel.remove(i);
                open -= 1;
            }
        }
        if rng.below(8) == 0 {
            csp::yield_now().await;
        }
    }
    (got, cancels)
}

#[test]
fn cancelled_receiving_selects_lose_and_duplicate_nothing() {
    bounded(60, || {
        const PRODUCERS: u64 = 3;
        let per_producer: u64 = scaled(10_000);
        const CONSUMERS: u64 = 4;
        let rt = runtime(2, "select-storm");
        let drops = Counter::new();
        let chans: Vec<(Sender<Tracked>, Receiver<Tracked>)> = (0..3).map(make).collect();
        let rxs = || -> [Receiver<Tracked>; 3] {
            [chans[0].1.clone(), chans[1].1.clone(), chans[2].1.clone()]
        };
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|c| rt.spawn(cancelling_consumer(rxs(), 100 + c, |t: &Tracked| t.value)))
            .collect();
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let txs = [chans[0].0.clone(), chans[1].0.clone(), chans[2].0.clone()];
                let d = drops.clone();
                rt.spawn(async move {
                    let mut rng = Rng::new(p);
                    let mut sent = Vec::new();
                    for k in 0..per_producer {
                        let id = p * 1_000_000 + k;
                        let ch = rng.below(3) as usize;
                        txs[ch]
                            .send(Tracked::new(id, &d))
                            .await
                            .expect("receivers alive");
                        sent.push(id);
                        if rng.below(16) == 0 {
                            csp::yield_now().await;
                        }
                    }
                    sent
                })
            })
            .collect();
        let keep: Vec<Receiver<Tracked>> = chans.iter().map(|(_, rx)| rx.clone()).collect();
        drop(chans);

        let sent: Vec<u64> = rt
            .block_on(join_all(producers))
            .into_iter()
            .flat_map(|r| r.expect("producer"))
            .collect();
        let (mut received, mut cancels) = (Vec::new(), 0);
        for r in rt.block_on(join_all(consumers)) {
            let (got, c) = r.expect("consumer");
            received.extend(got);
            cancels += c;
        }
        assert_eq!(sent.len() as u64, PRODUCERS * per_producer);
        let mut sorted = received.clone();
        sorted.sort_unstable();
        let distinct: HashSet<u64> = sorted.iter().copied().collect();
        assert_eq!(distinct.len(), sorted.len(), "a value was received twice");
        let sent_set: HashSet<u64> = sent.iter().copied().collect();
        let lost: Vec<_> = sent_set.difference(&distinct).take(10).collect();
        assert!(
            lost.is_empty(),
            "values sent Ok but never received: {lost:?}"
        );
        assert_eq!(distinct, sent_set);
        assert!(cancels > 0, "the storm cancelled no select");
        for rx in &keep {
            assert_eq!(
                rx.try_recv().unwrap_err(),
                TryRecvError::Closed,
                "left over"
            );
        }
        drop(rt);
        assert_eq!(
            drops.get() as u64,
            PRODUCERS * per_producer,
            "each value dropped once"
        );
    });
}

#[test]
fn cancelled_sending_selects_deliver_each_value_at_most_once() {
    bounded(60, || {
        const SENDERS: u64 = 4;
        let rounds: u64 = scaled(4_000);
        const CONSUMERS: u64 = 3;
        let rt = runtime(2, "select-send-storm");
        let log = Arc::new(Mutex::new(Vec::new()));
        // Two rendezvous channels and a bounded(1) one: send arms really wait.
        let chans: Vec<(Sender<Logged>, Receiver<Logged>)> =
            vec![csp::channel(), csp::channel(), csp::bounded(1)];
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|c| {
                let rxs = [chans[0].1.clone(), chans[1].1.clone(), chans[2].1.clone()];
                rt.spawn(cancelling_consumer(rxs, 200 + c, |v: &Logged| v.id))
            })
            .collect();
        let senders: Vec<_> = (0..SENDERS)
            .map(|s| {
                let txs = [chans[0].0.clone(), chans[1].0.clone(), chans[2].0.clone()];
                let log = log.clone();
                rt.spawn(async move {
                    let mut rng = Rng::new(1_000 + s);
                    let (mut created, mut delivered, mut cancels) = (Vec::new(), Vec::new(), 0u64);
                    for round in 0..rounds {
                        let mut sel = if rng.below(2) == 0 {
                            Select::new()
                        } else {
                            Select::new_biased()
                        };
                        let mut ids = [0u64; 3];
                        for (i, tx) in txs.iter().enumerate() {
                            ids[i] = s * 1_000_000 + round * 3 + i as u64;
                            created.push(ids[i]);
                            assert_eq!(sel.send(tx, Logged::new(ids[i], &log)), i);
                        }
                        // At most 3 attempts: each spends at most one of the 3 arms.
                        for _ in 0..1 + rng.below(3) {
                            match maybe_cancelled(&mut sel, &mut rng).await {
                                Some(op) => {
                                    let i = op.index();
                                    op.send(&txs[i]).expect("receivers alive");
                                    delivered.push(ids[i]);
                                }
                                None => cancels += 1,
                            }
                        }
                        if rng.below(4) == 0 {
                            sel.remove(rng.below(3) as usize);
                        }
                        drop(sel);
                    }
                    (created, delivered, cancels)
                })
            })
            .collect();
        let keep: Vec<Receiver<Logged>> = chans.iter().map(|(_, rx)| rx.clone()).collect();
        drop(chans);

        let (mut created, mut delivered_ok, mut cancels) = (Vec::new(), Vec::new(), 0);
        for r in rt.block_on(join_all(senders)) {
            let (c, d, n) = r.expect("sender");
            created.extend(c);
            delivered_ok.extend(d);
            cancels += n;
        }
        let mut received = Vec::new();
        for r in rt.block_on(join_all(consumers)) {
            received.extend(r.expect("consumer").0);
        }
        for rx in &keep {
            assert_eq!(
                rx.try_recv().unwrap_err(),
                TryRecvError::Closed,
                "left over"
            );
        }
        drop(keep);
        drop(rt);

        assert!(cancels > 0, "the storm cancelled no select");
        let received_set: HashSet<u64> = received.iter().copied().collect();
        assert_eq!(
            received_set.len(),
            received.len(),
            "a value was received twice"
        );
        let created_set: HashSet<u64> = created.iter().copied().collect();
        assert!(received_set.is_subset(&created_set));
        let missing: Vec<_> = delivered_ok
            .iter()
            .filter(|id| !received_set.contains(id))
            .take(10)
            .collect();
        assert!(
            missing.is_empty(),
            "send arms that fired Ok but were never received: {missing:?}"
        );
        let mut dropped = log.lock().unwrap().clone();
        dropped.sort_unstable();
        let mut want = created.clone();
        want.sort_unstable();
        if dropped != want {
            let mut counts = std::collections::HashMap::new();
            for id in &dropped {
                *counts.entry(*id).or_insert(0u32) += 1;
            }
            let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).take(10).collect();
            let never: Vec<_> = want
                .iter()
                .filter(|id| !counts.contains_key(id))
                .take(10)
                .collect();
            panic!(
                "each value must be dropped exactly once: dropped twice {twice:?}, never {never:?}"
            );
        }
        // Selects abandoned while pending (`select_then_abandon`) leave room for a
        // receiver to commit to one of their arms first: those deliveries are received
        // but never reported by a Selected (about 10 % of them in practice).
        assert!(
            received.len() > delivered_ok.len(),
            "no send arm was delivered by a cancelled select ({} received, {} reported): \
             the storm did not exercise the committed-then-cancelled path",
            received.len(),
            delivered_ok.len()
        );
    });
}

/// A consumer that records each id as soon as it has it, so an abort loses no record.
async fn recording_consumer(rxs: [Receiver<Tracked>; 3], seed: u64, log: Arc<Mutex<Vec<u64>>>) {
    let mut rng = Rng::new(seed);
    let mut sel = Select::new();
    for rx in &rxs {
        sel.recv(rx);
    }
    let mut open = 3;
    while open > 0 {
        let (i, outcome) = {
            let op = sel.select().await;
            let i = op.index();
            (i, op.recv(&rxs[i]))
        };
        match outcome {
            Ok(value) => log.lock().unwrap().push(value.value),
            Err(RecvError) => {
                sel.remove(i);
                open -= 1;
            }
        }
        if rng.below(4) == 0 {
            csp::yield_now().await;
        }
    }
}

#[test]
fn aborting_processes_blocked_in_select_loses_nothing() {
    bounded(60, || {
        const PRODUCERS: u64 = 2;
        let per_producer: u64 = scaled(10_000);
        let rt = runtime(2, "select-abort");
        let drops = Counter::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let chans: Vec<(Sender<Tracked>, Receiver<Tracked>)> = (0..3).map(make).collect();
        let rxs = || -> [Receiver<Tracked>; 3] {
            [chans[0].1.clone(), chans[1].1.clone(), chans[2].1.clone()]
        };
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let txs = [chans[0].0.clone(), chans[1].0.clone(), chans[2].0.clone()];
                let d = drops.clone();
                rt.spawn(async move {
                    let mut rng = Rng::new(50 + p);
                    for k in 0..per_producer {
                        let ch = rng.below(3) as usize;
                        txs[ch]
                            .send(Tracked::new(p * 1_000_000 + k, &d))
                            .await
                            .expect("receivers alive");
                    }
                })
            })
            .collect();
        // Consumers that live a few hundred microseconds each, aborted wherever they are
        // (often blocked in a select, sometimes with a value just handed to them).
        let mut rng = Rng::new(99);
        let mut aborted = 0;
        let mut seed = 0;
        while producers.iter().any(|h| !h.is_finished()) {
            seed += 1;
            let hs: Vec<_> = (0..3)
                .map(|k| rt.spawn(recording_consumer(rxs(), seed * 3 + k, log.clone())))
                .collect();
            std::thread::sleep(Duration::from_micros(50 + rng.below(300)));
            for h in &hs {
                h.abort();
            }
            for h in hs {
                if rt.block_on(h).is_err_and(|e| e.is_cancelled()) {
                    aborted += 1;
                }
            }
        }
        for h in producers {
            rt.block_on(h).expect("producer");
        }
        drop(chans.iter().map(|(tx, _)| tx.clone()).collect::<Vec<_>>());
        let last = rt.spawn(recording_consumer(rxs(), 0, log.clone()));
        let keep = rxs();
        drop(chans);
        rt.block_on(last)
            .expect("the last consumer drains the channels");
        for rx in &keep {
            assert_eq!(
                rx.try_recv().unwrap_err(),
                TryRecvError::Closed,
                "left over"
            );
        }
        assert!(aborted > 0, "no consumer was aborted");
        let mut got = log.lock().unwrap().clone();
        got.sort_unstable();
        let mut want: Vec<u64> = (0..PRODUCERS)
            .flat_map(|p| (0..per_producer).map(move |k| p * 1_000_000 + k))
            .collect();
        want.sort_unstable();
        let dup = got.windows(2).find(|w| w[0] == w[1]);
        assert!(dup.is_none(), "received twice: {dup:?}");
        assert_eq!(got.len(), want.len(), "values lost to aborted selects");
        assert_eq!(got, want);
        drop(keep);
        drop(rt);
        assert_eq!(drops.get() as u64, PRODUCERS * per_producer);
    });
}

#[test]
fn select_arms_meet_stream_readers() {
    bounded(30, || {
        use futures::StreamExt;
        let rt = runtime(2, "select-stream");
        let drops = Counter::new();
        for kind in 0..3 {
            let (tx, mut rx) = make::<Tracked>(kind);
            let (_quiet_tx, quiet_rx) = csp::channel::<Tracked>();
            // The reader usually waits first (as a `poll_recv` reader, never handed a
            // value); each Select's send arm then offers to it.
            let reader = rt.spawn(async move {
                let mut got = Vec::new();
                while let Some(v) = rx.next().await {
                    got.push(v.value);
                }
                got
            });
            let d = drops.clone();
            let writer = rt.spawn(async move {
                for k in 0..300u64 {
                    let mut sel = Select::new();
                    let q = sel.recv(&quiet_rx);
                    let s = sel.send(&tx, Tracked::new(k, &d));
                    {
                        let op = sel.select().await;
                        assert_ne!(op.index(), q);
                        assert_eq!(op.index(), s);
                        assert!(op.send(&tx).is_ok());
                    }
                    if k % 7 == 0 {
                        csp::yield_now().await;
                    }
                }
            });
            rt.block_on(writer).expect("writer");
            let got = rt.block_on(reader).expect("reader");
            assert_eq!(got, (0..300).collect::<Vec<_>>(), "kind {kind}");
        }
        assert_eq!(drops.get(), 900);
    });
}

// ---------------------------------------------------------------------------------------
// Misuse of Selected; unread outcomes; no arm; timeout
// ---------------------------------------------------------------------------------------

#[test]
fn selected_read_with_another_channels_end_panics_and_drops_the_value() {
    bounded(30, || {
        let drops = Counter::new();
        let (tx, rx) = csp::bounded::<Tracked>(1);
        let (other_tx, other_rx) = csp::bounded::<Tracked>(1);
        let mut sel = Select::new();
        let r = sel.recv(&rx);

        tx.try_send(Tracked::new(1, &drops)).unwrap();
        let op = sel.try_select().expect("ready");
        assert_eq!(op.index(), r);
        let payload = std::panic::catch_unwind(AssertUnwindSafe(|| op.recv(&other_rx)))
            .expect_err("recv with another channel's end must panic");
        let msg = panic_message(&*payload).expect("a string message");
        assert!(
            msg.contains("index"),
            "the message should point at index(): {msg}"
        );
        assert_eq!(
            drops.get(),
            1,
            "the unread value was dropped with the Selected"
        );
        assert!(rx.is_empty(), "and not given back");

        // Right channel, wrong kind.
        tx.try_send(Tracked::new(2, &drops)).unwrap();
        let op = sel.try_select().expect("ready");
        let payload = std::panic::catch_unwind(AssertUnwindSafe(|| op.send(&tx)))
            .expect_err("send on a recv arm must panic");
        assert!(panic_message(&*payload).unwrap().contains("index"));
        assert_eq!(drops.get(), 2);

        // A send arm read as another channel's send.
        let mut sel2 = Select::new();
        sel2.send(&other_tx, Tracked::new(3, &drops));
        let op = sel2.try_select().expect("room");
        let payload = std::panic::catch_unwind(AssertUnwindSafe(|| op.send(&tx)))
            .expect_err("send with another channel's end must panic");
        assert!(panic_message(&*payload).unwrap().contains("index"));
        assert_eq!(other_rx.try_recv().unwrap().value, 3, "delivered anyway");
        assert_eq!(drops.get(), 3);
        drop(sel2);

        // The Select is still usable after the panics.
        tx.try_send(Tracked::new(4, &drops)).unwrap();
        let op = sel.try_select().expect("ready");
        assert_eq!(op.recv(&rx).unwrap().value, 4);
        assert_eq!(drops.get(), 4);

        // An unread Selected drops its received value (awaited, too).
        tx.try_send(Tracked::new(5, &drops)).unwrap();
        drop(sel.try_select().expect("ready"));
        assert_eq!(drops.get(), 5);
        assert!(rx.is_empty());
        tx.try_send(Tracked::new(6, &drops)).unwrap();
        let op = futures::executor::block_on(sel.select());
        assert_eq!(op.index(), r);
        drop(op);
        assert_eq!(drops.get(), 6);
        assert!(rx.is_empty());
        drop(sel);
        assert_eq!(drops.get(), 6);
    });
}

#[test]
fn select_with_no_arm_panics_unless_it_has_a_timeout() {
    bounded(30, || {
        let mut sel = Select::new();
        let payload = std::panic::catch_unwind(AssertUnwindSafe(|| {
            futures::executor::block_on(sel.select()).index()
        }))
        .expect_err("select() with no arm must panic");
        assert!(panic_message(&*payload).unwrap().contains("no arm"));

        // Every arm removed or spent.
        let (tx, rx) = csp::unbounded::<u8>();
        let mut sel = Select::new();
        let r = sel.recv(&rx);
        sel.send(&tx, 1);
        sel.remove(r);
        assert_eq!(sel.try_select().expect("unbounded").send(&tx), Ok(()));
        let payload = std::panic::catch_unwind(AssertUnwindSafe(|| {
            futures::executor::block_on(sel.select()).index()
        }))
        .expect_err("select() with every arm removed or spent must panic");
        assert!(panic_message(&*payload).unwrap().contains("no arm"));
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "sent once");

        // With a timeout, no arm means waiting for the deadline.
        let mut sel = Select::new();
        sel.timeout(Duration::from_millis(2));
        let op = futures::executor::block_on(sel.select());
        assert_eq!(op.index(), Select::TIMEOUT);
        assert_eq!(Select::TIMEOUT, usize::MAX);
        let (_tx, rx) = csp::channel::<u8>();
        let payload = std::panic::catch_unwind(AssertUnwindSafe(|| op.recv(&rx)))
            .expect_err("a timeout has no outcome to read");
        assert!(panic_message(&*payload).unwrap().contains("timeout"));

        let payload = std::panic::catch_unwind(|| {
            let mut sel = Select::new();
            sel.remove(0);
        })
        .expect_err("remove of an arm that does not exist");
        assert!(panic_message(&*payload).unwrap().contains("no arm 0"));
    });
}

/// A spawned process may hold a `Selected` across an await, as API.md's own pattern
/// does (`let op = sel.select().await; let v = match op.index() { .. }; x.await;`: the
/// compiler counts `op` as held until its scope ends), so `Selected` must be `Send`.
#[test]
fn selected_is_send_and_may_be_held_across_an_await() {
    fn assert_send<T: Send>() {}
    assert_send::<Selected<'static>>();
    bounded(10, || {
        let rt = runtime(2, "selected-send");
        let (tx, rx) = csp::bounded::<u8>(1);
        let (_tx2, rx2) = csp::bounded::<u8>(1);
        tx.try_send(4).unwrap();
        let got = rt.block_on(rt.spawn(async move {
            let mut sel = Select::new();
            let a = sel.recv(&rx);
            sel.recv(&rx2);
            let op = sel.select().await;
            let v = match op.index() {
                i if i == a => op.recv(&rx),
                _ => op.recv(&rx2),
            };
            csp::yield_now().await;
            v
        }));
        assert_eq!(got.unwrap(), Ok(4));
    });
}

#[test]
fn select_and_its_future_are_send() {
    bounded(10, || {
        fn assert_send<T: Send>(_: &T) {}
        let (tx, rx) = csp::channel::<Box<u8>>();
        let mut sel = Select::new();
        sel.recv(&rx);
        sel.send(&tx, Box::new(1));
        assert_send(&sel);
        {
            let fut = sel.select();
            assert_send(&fut);
        }
        assert!(format!("{sel:?}").contains("Select"));
    });
}

// ---------------------------------------------------------------------------------------
// Process dumps
// ---------------------------------------------------------------------------------------

#[test]
fn a_process_blocked_in_select_shows_the_channels_it_waits_on() {
    bounded(30, || {
        let rt = runtime(2, "select-dump");
        let (a_tx, a_rx) = csp::bounded::<u64>(1);
        let (b_tx, b_rx) = csp::channel::<u64>();
        let (a2, b2) = (a_rx.clone(), b_rx.clone());
        let h = rt.spawn(async move {
            let mut sel = Select::new();
            let a = sel.recv(&a2);
            let b = sel.recv(&b2);
            let op = sel.select().await;
            let i = op.index();
            assert!(i == a || i == b);
            if i == a {
                (i, op.recv(&a2))
            } else {
                (i, op.recv(&b2))
            }
        });
        assert_eq!(
            wait_sleeping(&rt, h.id()).as_deref(),
            Some("alt over 2 channels")
        );
        b_tx.send_blocking(7).unwrap();
        assert_eq!(rt.block_on(h).unwrap(), (1, Ok(7)));

        // Three arms over two channels (a recv and a send on b) count 2 channels.
        let (a3, b3, b_tx3) = (a_rx.clone(), b_rx.clone(), b_tx.clone());
        let h = rt.spawn(async move {
            let mut sel = Select::new();
            let s = sel.send(&b_tx3, 1);
            let r = sel.recv(&b3);
            let a = sel.recv(&a3);
            let op = sel.select().await;
            assert!(op.index() != s && op.index() != r, "paired with itself");
            assert_eq!(op.index(), a);
            op.recv(&a3)
        });
        assert_eq!(
            wait_sleeping(&rt, h.id()).as_deref(),
            Some("alt over 2 channels")
        );
        a_tx.try_send(5).unwrap();
        assert_eq!(rt.block_on(h).unwrap(), Ok(5));
        assert_eq!(b_rx.try_recv(), Err(TryRecvError::Empty));
        assert_eq!(a_rx.try_recv(), Err(TryRecvError::Empty));
    });
}

// ---------------------------------------------------------------------------------------
// Cross-executor
// ---------------------------------------------------------------------------------------

#[test]
fn a_select_in_a_tokio_task_is_woken_by_a_csp_process() {
    bounded(60, || {
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let rt = runtime(1, "select-tokio");
        let (a_tx, a_rx) = csp::channel::<u64>();
        let (b_tx, b_rx) = csp::bounded::<u64>(1);
        let (c_tx, c_rx) = csp::channel::<u64>(); // the tokio side sends on it
        let (go_tx, go_rx) = csp::unbounded::<u64>();
        let (back_tx, back_rx) = csp::unbounded::<u64>();
        let csp_side = rt.spawn(async move {
            while let Ok(k) = go_rx.recv().await {
                match k % 3 {
                    0 => a_tx.send(k).await.unwrap(),
                    1 => b_tx.send(k).await.unwrap(),
                    _ => {
                        let v = c_rx.recv().await.unwrap();
                        back_tx.send(v).await.unwrap();
                    }
                }
            }
        });
        const N: u64 = 300;
        let task = tokio_rt.spawn(async move {
            for k in 0..N {
                let mut sel = Select::new();
                let ia = sel.recv(&a_rx);
                let ib = sel.recv(&b_rx);
                let ic = sel.send(&c_tx, k);
                let mut fut = pin!(sel.select());
                let pending = poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx).is_pending())).await;
                assert!(
                    pending,
                    "round {k}: nothing is ready before the csp process acts"
                );
                go_tx.try_send(k).unwrap();
                {
                    let op = fut.await;
                    match k % 3 {
                        0 => {
                            assert_eq!(op.index(), ia);
                            assert_eq!(op.recv(&a_rx), Ok(k));
                        }
                        1 => {
                            assert_eq!(op.index(), ib);
                            assert_eq!(op.recv(&b_rx), Ok(k));
                        }
                        _ => {
                            assert_eq!(op.index(), ic);
                            assert_eq!(op.send(&c_tx), Ok(()));
                        }
                    }
                }
                if k % 3 == 2 {
                    assert_eq!(back_rx.recv().await, Ok(k));
                }
            }
            // Also with tokio's own timer in the race: a select that is never ready
            // loses to the sleep and is cancelled cleanly.
            let mut sel = Select::new();
            sel.recv(&a_rx);
            sel.send(&c_tx, 999);
            let lost = tokio::time::timeout(Duration::from_millis(20), sel.select()).await;
            assert!(lost.is_err(), "nothing was ready");
            drop(lost);
            drop(sel);
            assert_eq!(a_rx.try_recv(), Err(TryRecvError::Empty));
            N
        });
        assert_eq!(tokio_rt.block_on(task).unwrap(), N);
        rt.block_on(csp_side).unwrap();
    });
}

// ---------------------------------------------------------------------------------------
// Timeouts
// ---------------------------------------------------------------------------------------

#[test]
fn a_timeout_fires_when_no_arm_does_and_no_arm_takes_effect() {
    bounded(30, || {
        let rt = runtime(2, "select-timeout");
        rt.block_on(async {
            let (tx, rx) = csp::channel::<Tracked>();
            let (_keep, idle) = csp::channel::<u32>();
            let drops = Counter::new();
            let mut sel = Select::new();
            sel.recv(&idle);
            let send = sel.send(&tx, Tracked::new(1, &drops));
            sel.timeout(Duration::from_millis(3));
            let start = std::time::Instant::now();
            assert_eq!(sel.select().await.index(), Select::TIMEOUT);
            assert!(start.elapsed() >= Duration::from_millis(3));
            // The send arm kept its value: a later select delivers it.
            assert_eq!(drops.get(), 0);
            let receiver = csp::spawn(async move { rx.recv().await.map(|v| v.value) });
            let op = sel.select().await;
            assert_eq!(op.index(), send);
            assert_eq!(op.send(&tx).map_err(|_| ()), Ok(()));
            assert_eq!(receiver.await.unwrap(), Ok(1));
        });
        assert_eq!(rt.metrics().timers_armed, 0);
    });
}

#[test]
fn a_ready_arm_beats_an_expired_timeout() {
    bounded(30, || {
        let (tx, rx) = csp::bounded::<u32>(1);
        tx.try_send(5).unwrap();
        let mut sel = Select::new();
        let r = sel.recv(&rx);
        sel.timeout(Duration::ZERO);
        let op = futures::executor::block_on(sel.select());
        assert_eq!(op.index(), r);
        assert_eq!(op.recv(&rx), Ok(5));
    });
}

#[test]
fn timeouts_racing_senders_lose_no_value() {
    // A consumer selects with a timeout shorter than the producers' pauses, so
    // timeouts and deliveries race; every value sent is received exactly once.
    bounded(60, || {
        let rt = runtime(2, "select-timeout-race");
        let values = 2_000u32;
        let got = rt.block_on(async move {
            let (tx, rx) = csp::channel::<u32>();
            let producer = common::paused_producer(tx, values);
            let mut got = Vec::new();
            loop {
                let mut sel = Select::new();
                sel.recv(&rx);
                sel.timeout(Duration::from_micros(500));
                let op = sel.select().await;
                if op.index() == Select::TIMEOUT {
                    continue;
                }
                match op.recv(&rx) {
                    Ok(v) => got.push(v),
                    Err(_) => break,
                }
            }
            producer.await.unwrap();
            got
        });
        assert_eq!(got, (0..values).collect::<Vec<_>>());
    });
}

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
