//! # csp: communicating sequential processes for Rust
//!
//! Processes are plain Rust futures, run by a work-stealing executor. This version
//! provides the runtime: spawning, joining, aborting and inspecting processes, and the
//! blocking pool.
//!
//! ```
//! let rt = csp::Runtime::new().unwrap();
//! let total = rt.block_on(async {
//!     let workers: Vec<_> = (1..=4u64)
//!         .map(|i| csp::spawn(async move { i * 10 }))
//!         .collect();
//!     let mut total = 0;
//!     for w in workers {
//!         total += w.await.unwrap();
//!     }
//!     total
//! });
//! assert_eq!(total, 100);
//! ```
//!
//! Processes can be spawned from anywhere, including plain threads and other
//! executors, and their `JoinHandle`s awaited from anywhere:
//!
//! ```
//! let handle = std::thread::spawn(|| csp::spawn(async { "from a thread" }))
//!     .join()
//!     .unwrap();
//! assert_eq!(csp::block_on(handle).unwrap(), "from a thread");
//! ```

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

pub use chan::{
    ChannelEnd, Closed, Receiver, RecvError, RecvFuture, SendError, SendFuture, Sender,
    TryRecvError, TrySendError, bounded, channel, unbounded,
};
pub use runtime::{
    Builder, Handle, Metrics, ProcessInfo, ProcessState, Runtime, block_on, spawn, spawn_blocking,
    yield_now,
};
pub use task::{JoinError, JoinHandle};
