//! # csp: communicating sequential processes for Rust
//!
//! Processes are plain Rust futures, run by a work-stealing executor. They talk over
//! channels: rendezvous by default ([`channel`]: a send completes when a receiver has
//! taken the value), also [`bounded`] and [`unbounded`]. A send to a waiting receiver
//! hands over the value and the CPU: the receiver runs next on the same worker.
//!
//! ```
//! let rt = csp::Runtime::new().unwrap();
//! let total = rt.block_on(async {
//!     let (tx, rx) = csp::channel::<u64>();
//!     // Four workers, each sending its result over the same channel.
//!     for i in 1..=4u64 {
//!         let tx = tx.clone();
//!         csp::spawn(async move { tx.send(i * 10).await.unwrap() });
//!     }
//!     drop(tx); // the channel closes once every worker's Sender is gone
//!     let mut total = 0;
//!     while let Ok(v) = rx.recv().await {
//!         total += v;
//!     }
//!     total
//! });
//! assert_eq!(total, 100);
//! ```
//!
//! Processes can be spawned from anywhere, including plain threads and other executors,
//! and their [`JoinHandle`]s awaited from anywhere:
//!
//! ```
//! let handle = std::thread::spawn(|| csp::spawn(async { "from a thread" }))
//!     .join()
//!     .unwrap();
//! assert_eq!(csp::block_on(handle).unwrap(), "from a thread");
//! ```
//!
//! Where things are: the process state machine in `src/task/state.rs`, the scheduling
//! policy in `src/runtime/worker.rs`, the channel core in `src/chan/core.rs`, and the
//! claim flag every choice completes through in `src/alt/claim.rs`.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, missing_debug_implementations)]

/// The README's examples, run as doc tests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod alt;
mod chan;
mod id;
pub(crate) mod loom;
mod runtime;
mod task;
mod time;
mod tuning;

pub use alt::{Select, SelectFuture, Selected};
/// CSP choice: waits until one of several channel operations can complete, performs
/// exactly that one, and evaluates to its arm's body. Among arms ready at once, one is
/// picked uniformly at random ([`prialt!`] picks the first in written order).
///
/// ```
/// # csp::block_on(async {
/// let (tx, rx) = csp::bounded::<u32>(1);
/// let (out, out_rx) = csp::bounded::<&str>(1);
/// tx.try_send(7).unwrap();
/// let got = csp::alt! {
///     recv(rx) -> msg => msg.ok(),
///     send(out, "hello") -> res => { res.unwrap(); None }
/// };
/// // Either arm could fire (both were ready); exactly one did.
/// assert!(got == Some(7) || out_rx.try_recv() == Ok("hello"));
/// # });
/// ```
///
/// Arms, each optionally guarded by `if condition` (evaluated once, before waiting; a
/// false guard disables the arm and skips evaluating a send's value):
/// - `recv(rx) -> msg => ..`: `msg: Result<T, RecvError>`;
/// - `send(tx, value) -> res => ..`: `res: Result<(), SendError<T>>`; a send arm that
///   does not fire delivers nothing and its value is dropped;
/// - `recv_any(&rxs) -> (i, msg) => ..`: a receive on each receiver of a slice (or
///   array, or `Vec`) of receivers or of references to them; `i` is the position of the
///   one that fired; an empty set is a disabled arm;
/// - `closed(tx) => ..`: fires once the channel of `tx` is closed;
/// - `default => ..`: runs if no arm is ready right now (the alt does not wait).
///
/// Channel operands may be ends or references to ends; they are borrowed, never moved.
/// `return`, `?`, `break` and `continue` in a body act on the enclosing function or loop.
/// Dropping the future that contains a pending `alt!` has no effect on any channel
/// (except that an operation a counterpart already committed to still takes effect: a
/// value handed to a recv arm goes back to its channel). With every arm disabled and no
/// `default`, the alt panics.
///
/// ```
/// # csp::block_on(async {
/// let (tx, rx) = csp::channel::<u32>();
/// let nothing_yet = csp::alt! {
///     recv(rx) -> msg => Some(msg),
///     default => None,
/// };
/// assert_eq!(nothing_yet, None);
/// # drop(tx);
/// # });
/// ```
///
/// Not implemented in this version: `after(duration)` arms (they need csp's timers) and
/// `send_any` arms; either is a compile error that says so.
pub use csp_macros::alt;

/// As [`alt!`], but among arms ready at once, the first in written order fires.
///
/// ```
/// # csp::block_on(async {
/// let (tx1, rx1) = csp::bounded::<u8>(1);
/// let (tx2, rx2) = csp::bounded::<u8>(1);
/// tx1.try_send(1).unwrap();
/// tx2.try_send(2).unwrap();
/// let first = csp::prialt! {
///     recv(rx1) -> v => v.unwrap(),
///     recv(rx2) -> v => v.unwrap(),
/// };
/// assert_eq!(first, 1);
/// # });
/// ```
pub use csp_macros::prialt;

/// What the macros expand to; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::alt::macro_support::*;
}
pub use chan::{
    ChannelEnd, Closed, Receiver, RecvError, RecvFuture, SendError, SendFuture, Sender,
    TryRecvError, TrySendError, bounded, channel, unbounded,
};
pub use runtime::{
    Builder, Handle, Metrics, ProcessInfo, ProcessState, Runtime, block_on, spawn, spawn_blocking,
    yield_now,
};
pub use task::{JoinError, JoinHandle};
pub use time::{Elapsed, Sleep, Timeout, after, sleep, sleep_until, tick, timeout};
