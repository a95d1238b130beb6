//! Helpers of the `Select` tests (`tests/select_*.rs`): bounded selects, fairness
//! checks, logged values and channel kinds.

use csp::{ProcessState, Receiver, Runtime, Select, Selected, Sender};
use futures::future::Either;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use super::*;

/// Waits until process `id` is Sleeping, and returns its `waiting_on`.
#[track_caller]
pub fn wait_sleeping(rt: &Runtime, id: u64) -> Option<String> {
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
pub async fn select_within<'s, 'a>(sel: &'s mut Select<'a>, polls: u64) -> Option<Selected<'s>> {
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
pub async fn select_or_yield<'s, 'a>(sel: &'s mut Select<'a>) -> Option<Selected<'s>> {
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
pub async fn select_then_abandon<'s, 'a>(
    sel: &'s mut Select<'a>,
    yields: u64,
) -> Option<Selected<'s>> {
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
pub async fn maybe_cancelled<'s, 'a>(
    sel: &'s mut Select<'a>,
    rng: &mut Rng,
) -> Option<Selected<'s>> {
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
pub fn assert_fair(wins: &[usize; 4], what: &str) {
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
pub struct Logged {
    pub id: u64,
    log: Arc<Mutex<Vec<u64>>>,
}

impl Logged {
    pub fn new(id: u64, log: &Arc<Mutex<Vec<u64>>>) -> Logged {
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

pub fn make<T>(kind: usize) -> (Sender<T>, Receiver<T>) {
    match kind {
        0 => csp::channel(),
        1 => csp::bounded(2),
        _ => csp::unbounded(),
    }
}
