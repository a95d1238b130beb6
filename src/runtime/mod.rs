//! The executor: a work-stealing pool of worker threads running processes.
//!
//! - `builder.rs`, `runtime.rs`, `handle.rs`, `default.rs`: configuring, owning and
//!   reaching a runtime;
//! - `worker.rs`: the worker loop and scheduling policy (start reading here);
//! - `queue.rs`, `idle.rs`, `idle_event.rs`: run queues, searching and parking workers,
//!   and what parked workers sleep on;
//! - `shared.rs`: what workers, handles and processes share;
//! - `registry.rs`: the live processes, for shutdown and dumps;
//! - `blocking.rs`: the `spawn_blocking` pool;
//! - `hooks.rs`: the user's thread start and stop hooks, run on every thread of a runtime,
//!   and `tokio_context.rs` (feature `tokio`): a tokio runtime's context entered there;
//! - `context.rs`: which runtime the current thread is in;
//! - `block_on.rs`, `spawn.rs`: the entry points, and `entry.rs`: what `#[csp::main]` runs;
//! - `metrics.rs`, `info.rs`, `groups.rs`: counters, process dumps, and the groups
//!   (`JoinSet`s) processes belong to;
//! - `deadlock.rs`, `deadlock_monitor.rs`: deadlock detection, and its reports for a
//!   runtime no `block_on` waits on;
//! - `wait_graph.rs`: who waits on what, as a Graphviz picture;
//! - `timer/`: the timer driver, one wheel per runtime, advanced by its workers;
//! - `driver/` (feature `io`): the I/O driver, one `mio::Poll` per runtime, which its
//!   parked workers sleep in.
//!
//! May use: `wait` (the parker of `block_on`, wait records), `task` (it implements the
//! process layer's `Scheduler`) and below. Knows no channel, choice or user-facing timer:
//! `chan`, `time`, `alt`, `par` and `pipe` build on it, and nothing below reaches into it.

pub(crate) mod block_on;
pub(crate) mod blocking;
mod builder;
pub(crate) mod context;
mod deadlock;
mod deadlock_monitor;
mod default;
#[cfg(feature = "io")]
pub(crate) mod driver;
pub(crate) mod entry;
pub(crate) mod groups;
mod handle;
pub(crate) mod held;
mod hooks;
mod idle;
mod idle_event;
mod info;
mod latch;
mod metrics;
#[cfg(all(test, loom))]
pub(crate) mod process_loom_models;
pub(crate) mod queue;
mod queue_age;
mod registry;
#[allow(clippy::module_inception)] // the file is named after the concept it holds
mod runtime;
pub(crate) mod services;
mod shared;
mod spawn;
pub(crate) mod sysmon;
pub(crate) mod timer;
#[cfg(feature = "tokio")]
mod tokio_context;
mod wait_graph;
pub(crate) mod worker;

pub use builder::Builder;
pub use handle::Handle;
pub use info::{ProcessInfo, ProcessState};
pub use metrics::Metrics;
pub use runtime::Runtime;
pub(crate) use shared::Shared;
pub use spawn::{block_on, spawn, spawn_blocking, yield_now};
