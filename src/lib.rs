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
mod tuning;

pub use alt::{Select, SelectFuture, Selected};
pub use chan::{
    ChannelEnd, Closed, Receiver, RecvError, RecvFuture, SendError, SendFuture, Sender,
    TryRecvError, TrySendError, bounded, channel, unbounded,
};
pub use runtime::{
    Builder, Handle, Metrics, ProcessInfo, ProcessState, Runtime, block_on, spawn, spawn_blocking,
    yield_now,
};
pub use task::{JoinError, JoinHandle};
