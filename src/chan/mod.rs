//! Channels: rendezvous (the default), bounded and unbounded; any-to-any, cancel-safe,
//! with direct handoff from a sender to a waiting receiver.
//!
//! - `core.rs`: the buffer and wait lists under one lock (start reading here);
//! - `waiter.rs`: the entries waiting operations link into a channel;
//! - `ops.rs`: recv, send and closed as arms of a choice;
//! - `sender.rs`, `receiver.rs`, `end.rs`: the public ends and their futures;
//! - `sink.rs`: a sender as a `futures::Sink`;
//! - `lock.rs`, `error.rs`;
//! - `home.rs`: which runtime a channel belongs to, for deadlock detection;
//! - `site.rs`: a channel in the census of wait sites, for the wait graph, and who last
//!   used each of its sides.
//!
//! May use: `runtime` (which runtime polls, the blocking bridge), `wait` (claim flags,
//! owners, the operation interface), `task` and below. Timers (`time`), choice (`alt`),
//! `par` and `pipe` build on it; nothing below reaches into it.

pub(crate) mod core;
pub(crate) mod end;
mod error;
mod future;
mod home;
mod lock;
#[cfg(all(test, loom))]
mod loom_models;
pub(crate) mod ops;
mod receiver;
mod sender;
mod sink;
mod site;
pub(crate) mod waiter;

pub use end::ChannelEnd;
pub use error::{RecvError, SendError, TryRecvError, TrySendError};
pub use receiver::{Receiver, RecvFuture};
pub use sender::{Closed, SendFuture, Sender};
pub use sink::SendSink;

use crate::loom::sync::Arc;

#[track_caller]
fn pair<T>(cap: Option<usize>) -> (Sender<T>, Receiver<T>) {
    let chan = Arc::new(core::Chan::new(cap));
    (Sender::new(chan.clone()), Receiver::new(chan))
}

/// A rendezvous channel: a `send` completes only when a receiver has taken the value,
/// so sender and receiver synchronise, as in CSP and occam.
///
/// Deadlock reports and the wait graph name a channel by where it was made: the caller
/// of `channel`, [`bounded`] or [`unbounded`].
///
/// ```
/// # csp::block_on(async {
/// let (tx, rx) = csp::channel();
/// let producer = csp::spawn(async move {
///     for i in 0..3 {
///         tx.send(i).await.unwrap(); // waits for the receiver each time
///     }
/// });
/// for i in 0..3 {
///     assert_eq!(rx.recv().await, Ok(i));
/// }
/// producer.await.unwrap();
/// # });
/// ```
#[track_caller]
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    pair(Some(0))
}

/// A channel that buffers up to `cap` values; `bounded(0)` is [`channel()`].
///
/// ```
/// # csp::block_on(async {
/// let (tx, rx) = csp::bounded(2);
/// tx.send(1).await.unwrap();
/// tx.send(2).await.unwrap(); // both buffered: no receiver needed yet
/// assert_eq!(rx.len(), 2);
/// assert_eq!(rx.recv().await, Ok(1));
/// # });
/// ```
#[track_caller]
pub fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    pair(Some(cap))
}

/// A channel whose sends never wait.
///
/// ```
/// let (tx, rx) = csp::unbounded();
/// for i in 0..1000 {
///     tx.try_send(i).unwrap();
/// }
/// assert_eq!(rx.len(), 1000);
/// ```
#[track_caller]
pub fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
    pair(None)
}
