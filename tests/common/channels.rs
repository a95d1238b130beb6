//! Helpers of the channel tests (`tests/channel_*.rs`): channel kinds, cancellation
//! probes, drop logs and dump readers.

use csp::{ProcessState, Receiver, Runtime, Sender};
use futures::future::Either;
use std::fmt::Debug;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};

use super::*;

/// The three kinds of channel, with two sizes of bounded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Rendezvous,
    Bounded(usize),
    Unbounded,
}

pub const KINDS: [Kind; 4] = [
    Kind::Rendezvous,
    Kind::Bounded(1),
    Kind::Bounded(8),
    Kind::Unbounded,
];

pub fn make<T>(kind: Kind) -> (Sender<T>, Receiver<T>) {
    match kind {
        Kind::Rendezvous => csp::channel(),
        Kind::Bounded(n) => csp::bounded(n),
        Kind::Unbounded => csp::unbounded(),
    }
}

/// The channel number in an end's `Debug` output (`Receiver { channel: 7, .. }`), which
/// is the number process dumps use.
pub fn channel_id(end: &impl Debug) -> u64 {
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
pub fn wait_sleeping_on(rt: &Runtime, id: u64, prefix: &str) -> String {
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
pub fn wait_all_sleeping_on(rt: &Runtime, ids: &[u64], prefix: &str) {
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

pub fn handle_ids<T>(handles: &[csp::JoinHandle<T>]) -> Vec<u64> {
    handles.iter().map(|h| h.id()).collect()
}

/// A future that is pending `n` times (waking itself each time), then ready: racing it
/// against an operation cancels the operation after a chosen number of polls.
pub struct Polls(pub u32);

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
pub async fn cancel_after<F: Future>(polls: u32, op_first: bool, future: F) -> Option<F::Output> {
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
pub struct DropLog(Vec<AtomicU32>);

impl DropLog {
    pub fn new(n: usize) -> Arc<DropLog> {
        Arc::new(DropLog((0..n).map(|_| AtomicU32::new(0)).collect()))
    }

    pub fn item(self: &Arc<Self>, id: usize) -> Item {
        Item {
            id,
            log: self.clone(),
        }
    }

    pub fn drops(&self, id: usize) -> u32 {
        self.0[id].load(Ordering::SeqCst)
    }
}

/// A payload that records its drop in a `DropLog`.
pub struct Item {
    pub id: usize,
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

pub fn values(items: Vec<Tracked>) -> Vec<u64> {
    items.iter().map(|t| t.value).collect()
}
